#!/usr/bin/env python3
"""`fscontrol start`'s estimates against the real starts, beside `squeue --start`, on the 22.05
testbed under a busy load (issue #32 item 4; figures in docs/start.md).

1. History: a warm-up workload (seed + 1000, bench/sim_fidelity.py's generator) runs to its end,
   so sacct holds each user's typical fraction of the time limit, as a live cluster's would.
2. The measured workload (seed) is submitted; every `--every` seconds while jobs pend, the
   estimate (fscontrol.forecast.start.read_live, as root: every job visible) and
   `squeue --start` are taken at the same moment.
3. Once all have started, the real starts come from sacct. Per snapshot and pending job:
   |estimate - real start| for ours (and our limits-as-run-times end of the range), and for
   squeue --start where it gives a time. "fairshare_held": the same, from the estimate taken at the
   same moment with fair-share held at its present value (`read_live(..., fairshare=False)`).

    FSCONTROL_TESTBED_DIR=/tmp/tb-x FSCONTROL_TESTBED_PORT_OFFSET=N \\
        .venv/bin/python bench/start_fidelity.py --seed 31 --out /tmp/start31.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from sim_fidelity import AGE, workload  # noqa: E402

from fscontrol.forecast import start as startmod  # noqa: E402
from fscontrol.slurm.parse import parse_time  # noqa: E402


def submit_all(tb, jobs, snap=None, every: float = 30.0) -> tuple[list[str], list[dict]]:
    t0 = time.time()
    ids: list[str] = []
    snaps: list[dict] = []
    next_snap = t0 + every
    k = 0
    while True:
        now = time.time()
        while k < len(jobs) and t0 + jobs[k][0] <= now:
            _, u, a, cpus, secs = jobs[k]
            ids.append(tb.submit(u, a, cpus, secs))
            k += 1
        pending = tb.run("squeue", "-h", "-t", "PD", "-p", "normal", "-o", "%i").split()
        if k == len(jobs) and not pending:
            break
        if snap is not None and now >= next_snap and pending:
            snaps.append(snap(tb))
            next_snap = now + every
        nxt = min(next_snap, t0 + jobs[k][0] if k < len(jobs) else next_snap)
        time.sleep(max(0.2, min(2.0, nxt - time.time())))
    return ids, snaps


def snapshot(tb) -> dict:
    now = time.time()
    t = time.process_time()
    ours = startmod.read_live(tb.source(), now=now)
    cpu = time.process_time() - t
    # the same queue with fair-share held at its present value (before forecast/startfs.py)
    held = startmod.read_live(tb.source(), now=now, fairshare=False)
    sq = {}
    for line in tb.run("squeue", "--start", "-h", "-o", "%i|%S").splitlines():
        i, _, s = line.partition("|")
        sq[i.strip()] = parse_time(s.strip()) if s.strip() not in ("N/A", "") else None
    return {"now": now, "cpu_s": cpu, "ours": ours["jobs"], "held": held["jobs"], "squeue": sq, "notes": ours["notes"]}


def real_starts(tb, ids: list[str]) -> dict[str, float]:
    out = {}
    text = tb.run("sacct", "-X", "-n", "-P", "-j", ",".join(ids), "-o", "JobID,Start")
    for line in text.splitlines():
        i, _, s = line.partition("|")
        t = parse_time(s) if s not in ("Unknown", "None", "") else None
        if t is not None:
            out[i] = t
    return out


def figures(snaps: list[dict], real: dict[str, float], which: str = "ours") -> dict:
    ours, late, sq, both_o, both_s = [], [], [], [], []
    n = n_est = n_sq = 0
    for s in snaps:
        for e in s[which]:
            r = real.get(e["job_id"])
            if r is None:
                continue
            n += 1
            q = s["squeue"].get(e["job_id"])
            n_sq += q is not None
            if e["start"] is not None:
                n_est += 1
                ours.append(abs(e["start"] - r))
                if e["late"] is not None:
                    late.append(abs(e["late"] - r))
                if q is not None:
                    both_o.append(abs(e["start"] - r))
                    both_s.append(abs(q - r))
    med = (lambda v: round(statistics.median(v), 1) if v else None)
    return {"snapshots": len(snaps), "pending_job_snapshots": n, "estimated_share": round(n_est / n, 4) if n else None,
            "squeue_share": round(n_sq / n, 4) if n else None, "median_abs_err_ours_all": med(ours),
            "median_abs_err_limits_all": med(late), "both": len(both_o), "median_abs_err_ours_both": med(both_o),
            "median_abs_err_squeue_both": med(both_s),
            "ratio": round(statistics.median(both_o) / statistics.median(both_s), 3) if both_o and statistics.median(both_s) else None,
            "cpu_s_max": round(max(s["cpu_s"] for s in snaps), 3) if snaps else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--jobs", type=int, default=45)
    ap.add_argument("--every", type=float, default=30.0)
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    from testbed import ensure_testbed, stop_testbed

    tb = ensure_testbed()
    try:
        tb.cancel_all()
        tb.set_priority_flags("NO_FAIR_TREE")
        tb.set_conf(**AGE)
        tb.reset_usage()
        if not a.no_warmup:
            print(f"warm-up workload (seed {a.seed + 1000}) for sacct's history", flush=True)
            submit_all(tb, workload(a.seed + 1000, jobs=30, span_s=60.0))
            while tb.run("squeue", "-h", "-p", "normal", "-o", "%A").strip():
                time.sleep(3)
        print(f"measured workload (seed {a.seed}, {a.jobs} jobs)", flush=True)
        ids, snaps = submit_all(tb, workload(a.seed, jobs=a.jobs), snapshot, a.every)
        real = real_starts(tb, ids)
        f = figures(snaps, real)
        f["seed"] = a.seed
        # beside it: the same snapshots' estimates with fair-share held (not charged through the horizon)
        f["fairshare_held"] = figures(snaps, real, "held") if snaps and "held" in snaps[0] else None
        print(json.dumps(f, indent=1), flush=True)
        if a.out:
            a.out.write_text(json.dumps({"figures": f, "snapshots": snaps, "real": real}, indent=1) + "\n")
    finally:
        tb.cancel_all()
        tb.set_conf(PriorityWeightAge="0", PriorityMaxAge="")
        if tb.started_here:
            stop_testbed(tb)


if __name__ == "__main__":
    main()
