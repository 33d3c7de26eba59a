#!/usr/bin/env python3
"""Soak: `fscontrol run --apply` on the project's real testbed for a while (default 20 min) with
jobs coming and going, then check that nothing leaked and nothing was lost. Not part of CI.

    sudo .venv/bin/python scripts/soak.py [--minutes 20] [--testbed-dir /tmp/fscontrol-testbed] [--out soak.json]

What it does: starts (or reuses) the testbed, writes a config (hybrid control, u* = 10
core-hours, steady padding; the SFS gate on with awards of 20 core-hours per hour for the flat and science accounts (target 40 CPUs), hold
mode, release_on_stop), starts the agent loop (schedule: collect, control and fit every minute,
the gate every minute), and submits random jobs (1-32 CPUs, 30-240 s; about 110 of the 128 CPUs busy on average, so
the queue backs up at times) as the testbed's users
every 5-25 s. Every 30 s it samples the agent's RSS and open file descriptors. At the end it
stops the agent with SIGTERM and checks:

  * the agent exited 0 and every tick was ok (no failed tick);
  * history complete: one ok tick per cluster per minute (no gap longer than 1.5 intervals) and
    every tick's snapshot stored;
  * no growth: open fds at the end equal those after the first ticks; RSS over the second half
    grows by less than 5 MiB (the first 3 minutes are warm-up: imports, first fit);
  * the agent's holds are all released (its ledger is empty; no job held by it remains).

Exit 0 when every check passes, 1 otherwise; the figures go to stdout (and --out as JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
USERS = [("alice", "flat"), ("bob", "flat"), ("carol", "flat"), ("dave", "flat"), ("alice", "physics"), ("bob", "physics"),
         ("carol", "chem")]
INTERVAL_S = 60.0


def _run(argv: list[str], env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _proc(pid: int) -> tuple[int, int]:
    """(RSS in KiB, open file descriptors) of a live process."""
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS:"))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--testbed-dir", default=os.environ.get("FSCONTROL_TESTBED_DIR", "/tmp/fscontrol-testbed"))
    ap.add_argument("--out", type=Path, help="Also write the figures as JSON here.")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: needs root (it starts the testbed and submits jobs as its users)")
    tb = Path(args.testbed_dir)
    p = _run([str(ROOT / "scripts" / "testbed.sh"), "start", str(tb)], dict(os.environ), timeout=300)
    if p.returncode != 0:
        sys.exit(f"soak: testbed did not start: {p.stderr.strip()[-500:]}")
    env = dict(os.environ, SLURM_CONF=str(tb / "etc" / "slurm.conf"))
    work = Path(tempfile.mkdtemp(prefix="fscontrol-soak-"))
    (work / "public").mkdir()  # publish_dir: the agent writes into a folder that exists, it makes none
    db = work / "history.db"
    cfg = work / "fscontrol.toml"
    cfg.write_text(f"""[agent]
db = "{db}"
metrics = "{work / 'fscontrol.prom'}"
publish_dir = "{work / 'public'}"
release_on_stop = true

[schedule]
collect = "1m"
control = "1m"
fit = "1m"
gate = "1m"

[clusters.tbcluster]
target_core_hours = 10
method = "hybrid"
padding_mode = "steady"

[clusters.tbcluster.gate]
enabled = true
action = "hold"

[clusters.tbcluster.allocations.flat]
award = 20
period = "1h"

[clusters.tbcluster.allocations.science]
award = 20
period = "1h"
""")
    for ids in [_run(["squeue", "-h", "-o", "%A"], env).stdout.split()]:
        if ids:
            _run(["scancel", *ids], env)
    agent = subprocess.Popen([str(ROOT / ".venv" / "bin" / "fscontrol"), "run", "-c", str(cfg), "--apply"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()
    rng = random.Random(args.seed)
    submitted = []

    def jobs() -> None:
        while not stop.wait(rng.uniform(5, 25)):
            user, account = rng.choice(USERS)
            secs = rng.randint(30, 240)
            r = _run(["runuser", "-u", user, "--", "sbatch", "--parsable", "-A", account, "-p", "normal",
                      "-n", str(rng.choice([1, 4, 8, 16, 32])), "-t", str(secs // 60 + 2), "-o", "/dev/null",
                      f"--chdir={tb / 'jobs'}", "--wrap", f"sleep {secs}"], env)
            if r.returncode == 0:
                submitted.append(r.stdout.strip())

    gen = threading.Thread(target=jobs, daemon=True)
    gen.start()
    samples = []
    t0 = time.time()
    end = t0 + args.minutes * 60
    while time.time() < end and agent.poll() is None:
        try:
            rss, fds = _proc(agent.pid)
            samples.append((time.time() - t0, rss, fds))
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            break
        time.sleep(30)
    stop.set()
    agent.send_signal(signal.SIGTERM)
    try:
        _, err = agent.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        agent.kill()
        _, err = agent.communicate()
    elapsed = time.time() - t0

    con = sqlite3.connect(db)
    ticks = con.execute("SELECT stage, status, started_at FROM ticks ORDER BY started_at").fetchall()
    cycle = [t for s, st, t in ticks if s in ("control", "collect") and st == "ok"]
    gaps = [b - a for a, b in zip(cycle, cycle[1:])]
    failed = [(s, t) for s, st, t in ticks if st != "ok"]
    missing_snapshots = con.execute(
        "SELECT count(*) FROM ticks t WHERE t.status = 'ok' AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.id = t.snapshot_id)"
    ).fetchone()[0]
    ledger = con.execute("SELECT count(*) FROM gate_ledger").fetchone()[0]
    holds = con.execute("SELECT count(*) FROM actions WHERE stage = 'gate' AND kind = 'hold' AND status = 'ok'").fetchone()[0]
    releases = con.execute("SELECT count(*) FROM actions WHERE stage = 'gate' AND kind = 'release' AND status = 'ok'").fetchone()[0]
    con.close()
    still_held = [ln for ln in _run(["squeue", "-h", "-o", "%A %r"], env).stdout.splitlines() if "JobHeldAdmin" in ln]

    warm = [s for s in samples if s[0] >= 180]
    half = warm[len(warm) // 2:] if warm else []
    rss_growth_kib = (half[-1][1] - half[0][1]) if len(half) >= 2 else None
    fds_first, fds_last = (warm[0][2], warm[-1][2]) if warm else (None, None)
    expected = int(args.minutes * 60 / INTERVAL_S)
    checks = {
        "agent exited 0": agent.returncode == 0,
        "no failed tick": not failed,
        f"ticks >= {expected - 1} (one a minute)": len(cycle) >= expected - 1,
        "no gap > 1.5 intervals": all(g <= 1.5 * INTERVAL_S for g in gaps),
        "every ok tick has its snapshot": missing_snapshots == 0,
        "open fds constant": fds_first == fds_last,
        "RSS growth over the second half < 5 MiB": rss_growth_kib is not None and rss_growth_kib < 5 * 1024,
        "agent holds all released": ledger == 0 and not still_held,
    }
    figures = {
        "minutes": elapsed / 60, "jobs_submitted": len(submitted), "ticks_ok": len(cycle), "ticks_failed": len(failed),
        "max_gap_s": max(gaps) if gaps else None, "holds_placed": holds, "releases": releases,
        "rss_kib_first_last": [warm[0][1], warm[-1][1]] if warm else None, "rss_growth_second_half_kib": rss_growth_kib,
        "fds_first_last": [fds_first, fds_last], "samples": samples, "checks": checks, "agent_last_line": err.strip().splitlines()[-1:],
        "workdir": str(work),
    }
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    print(json.dumps({k: v for k, v in figures.items() if k != "samples"}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    ids = _run(["squeue", "-h", "-o", "%A"], env).stdout.split()
    if ids:
        _run(["scancel", *ids], env)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
