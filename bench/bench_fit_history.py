"""Benchmark `fscontrol fit` end to end (the command, a fresh process) on a stored history.

Data: SYNTHETIC, generated here. The usage matrix and the charges are bench_fit.py's
(`synthetic_history`: 2,500 users x 2,000 snapshots 15 minutes apart, jobs switching on and off
inside the intervals, noise, integer truncation, 0.2% missing snapshots, 25 resets); they are
written into a history database with fscontrol's own schema (store.open_db) the way `collect`
stores them: change-only `assoc_samples` (a tombstone where a snapshot is missing, the value
again at the next), one `job_usage` row per user and interval with a charge (billing x elapsed =
the interval's charge; 10% of the users on a QOS with UsageFactor 0.5 whose charge is stored
doubled), 50 accounts under root. PriorityCalcPeriod 5 minutes, PriorityDecayHalfLife 7 days.

Each measurement is a fresh child process, timed wall clock, with its own peak RSS (os.wait4's
ru_maxrss, the kernel's high-water mark, interpreter and imports included):

* read:     the baseline: a child that reads every byte of the database file (after the
            generation, so from the page cache) and does nothing with them;
* startup:  `python -m fscontrol --help` (the floor of any command of the typer app);
* fit:      `python -m fscontrol fit --db FILE --json` with this tree's fscontrol;
* fit@REV:  the same with fscontrol as of git revision REV (`--before REV[,REV...]`, exported
            with `git archive` into a temporary folder put first on PYTHONPATH): before/after in
            one run.

Besides wall time and peak RSS, each child's CPU time (user + system; the fit reads on two
threads, so it can exceed the wall time): on a machine shared with other work, wall times of
one child can double between rounds while CPU times move much less.

The rounds interleave the children; the table gives each one's median and the ratios to the
read baseline. Both fits must print the same JSON (same half-life, breaks, residuals).

Run:  .venv/bin/python bench/bench_fit_history.py [--before REV] [--repeat N] [--keep FILE] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_fit  # noqa: E402  (the synthetic history of the fit benchmark)

N_ACCOUNTS = 50
CALC_PERIOD_S = 300
LOW_QOS_FACTOR = 0.5


def build_history(path: Path, n_users: int, n_snap: int, seed: int = 1) -> dict:
    """Write the synthetic history into a new fscontrol database at `path`."""
    import dataclasses

    from fscontrol.slurm import parse
    from fscontrol.store import history as store

    bench_fit.N_USERS, bench_fit.N_SNAP = n_users, n_snap
    times, observed, inflow, lam = bench_fit.synthetic_history(seed)
    t0 = 1_795_287_815.0 - times[-1]
    times = times + t0
    rng = np.random.default_rng([seed, 7])
    low = rng.random(n_users) < 0.10  # users on the QOS with UsageFactor 0.5
    cores = np.ceil(rng.choice([1, 4, 16, 28], size=n_users)).astype(int)

    cfg = parse.parse_config((ROOT / "samples" / "testbed-basic" / "config.txt").read_text())
    cfg = dataclasses.replace(cfg, cluster="synth", half_life_s=int(bench_fit.HALF_LIFE_S), calc_period_s=CALC_PERIOD_S)
    cfg_json = json.dumps({"config": store._config_json(cfg), "qos": {"normal": 1.0, "low": LOW_QOS_FACTOR}})

    for p in path.parent.glob(path.name + "*"):
        p.unlink()
    db = store.open_db(path)
    conn = db.conn
    with store.transaction(db):
        conn.executemany(
            "INSERT INTO snapshots (id, cluster, taken_at, half_life_s, calc_period_s, damping_factor, priority_mode, "
            "source, config_json) VALUES (?,?,?,?,?,?,?,?,?)",
            [(k + 1, "synth", float(t), cfg.half_life_s, CALC_PERIOD_S, cfg.damping_factor, cfg.mode, "bench", cfg_json)
             for k, t in enumerate(times)],
        )
        acc = [f"acct{a:02d}" for a in range(N_ACCOUNTS)]
        rows = [("synth", "root", "", "", 0, "root")]
        rows += [("synth", a, "", "root", 1, f"root/{a}") for a in acc]
        user_acc = [acc[i % N_ACCOUNTS] for i in range(n_users)]
        rows += [("synth", user_acc[i], f"user{i:05d}", user_acc[i], 2, f"root/{user_acc[i]}/user{i:05d}") for i in range(n_users)]
        conn.executemany("INSERT INTO assocs (cluster, account, user, parent, depth, path) VALUES (?,?,?,?,?,?)", rows)
        first_user_id = 2 + N_ACCOUNTS  # ids 1 (root), 2..51 accounts, then the users

        def samples():
            for i in range(n_users):
                aid = first_user_id + i
                prev = object()
                for k in range(n_snap):
                    v = observed[i, k]
                    cur = None if np.isnan(v) else int(v)
                    if cur != prev:
                        if cur is None:
                            yield (aid, k + 1, 0, None, None, None, None, None, None, None, None)
                        else:
                            yield (aid, k + 1, 1, 1, 0, 1.0 / n_users, cur, None, None, 0.5, 0)
                        prev = cur
            # the accounts and root: one sample each at the first snapshot (fit reads user rows only)
            for aid in range(1, first_user_id):
                yield (aid, 1, 1, 1, 0, 1.0, 0, None, None, 0.5, 0)

        conn.executemany("INSERT INTO assoc_samples (assoc_id, snapshot_id, present, raw_shares, shares_parent, norm_shares, "
                         "raw_usage, norm_usage, effective_usage, fairshare, billing_run_mins) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                         samples())

        def jobs():
            for k in range(1, n_snap):
                col = inflow[:, k]
                for i in np.flatnonzero(col > 0):
                    charge = float(col[i]) * (1 / LOW_QOS_FACTOR if low[i] else 1.0)
                    b = int(cores[i])
                    yield (k + 1, f"{k}{i:05d}", first_user_id + int(i), f"user{i:05d}", user_acc[i], "serial",
                           "low" if low[i] else "normal", "RUNNING", b, b, 1, None, None, charge / b)

        conn.executemany("INSERT INTO job_usage VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", jobs())
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    info = {
        "users": n_users,
        "snapshots": n_snap,
        "assoc_samples": db.execute("SELECT count(*) FROM assoc_samples").fetchone()[0],
        "job_usage": db.execute("SELECT count(*) FROM job_usage").fetchone()[0],
        "bytes": path.stat().st_size,
    }
    db.conn.close()
    return info


# ---------------------------------------------------------------------------- children
READ_CHILD = "import sys\nwith open(sys.argv[1], 'rb') as f:\n    while f.read(1 << 20): pass\n"


def measured(argv: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[float, float, str]:
    """Like run_child, but with the child's own peak RSS: GNU time's %M (KiB) via /usr/bin/time if
    present, else a wrapper that reports resource.getrusage(RUSAGE_CHILDREN) of its single child."""
    wrapper = ("import resource, subprocess, sys, time\n"
               "t = time.perf_counter(); r = subprocess.run(sys.argv[1:], capture_output=True)\n"
               "w = time.perf_counter() - t\n"
               "sys.stderr.buffer.write(r.stderr)\n"
               "sys.stdout.buffer.write(r.stdout)\n"
               "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "print(f'\\n@@{w} {u.ru_maxrss} {u.ru_utime + u.ru_stime}')\n"
               "sys.exit(r.returncode)\n")
    # cwd: not the source tree, whose fscontrol `python -m` would import before PYTHONPATH's
    p = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True, env=env, cwd=cwd)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    text = p.stdout.decode()
    body, _, tail = text.rpartition("\n@@")
    wall, kib, cpu = tail.split()
    CPU[tuple(argv)] = CPU.get(tuple(argv), []) + [float(cpu)]
    return float(wall), int(kib) / 1024.0, body


CPU: dict[tuple, list[float]] = {}  # CPU seconds (user + system) of each child, by command line


def export_rev(rev: str, into: Path) -> Path:
    """fscontrol as of `rev`, exported (git archive) into `into`; returns the folder for PYTHONPATH."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "fscontrol"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="also time fscontrol as of these git revisions (comma-separated, e.g. a21e7f3,c01d118)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="database file to reuse (generated if missing)")
    ap.add_argument("--quick", action="store_true", help="500 users x 400 snapshots")
    a = ap.parse_args()
    n_users, n_snap = (500, 400) if a.quick else (bench_fit.N_USERS, bench_fit.N_SNAP)
    tmp = Path(tempfile.mkdtemp(prefix="bench-fit-history-"))
    try:
        db = a.keep or tmp / "history.db"
        if not db.exists():
            t = time.perf_counter()
            info = build_history(db, n_users, n_snap)
            print(f"synthetic history: {info['users']:,} users x {info['snapshots']:,} snapshots, "
                  f"{info['assoc_samples']:,} assoc_samples rows, {info['job_usage']:,} job_usage rows, "
                  f"{info['bytes'] / 2**20:.1f} MiB, generated in {time.perf_counter() - t:.1f} s")
        else:
            print(f"history {db}: {db.stat().st_size / 2**20:.1f} MiB (reused)")
        py = sys.executable
        fit_argv = [py, "-m", "fscontrol", "fit", "--db", str(db), "--json"]
        env_now = {**os.environ, "PYTHONPATH": str(ROOT)}
        cases = {"read": ([py, "-c", READ_CHILD, str(db)], env_now),
                 "startup": ([py, "-m", "fscontrol", "--help"], env_now),
                 "fit": (fit_argv, env_now)}
        for rev in (a.before or "").split(",") if a.before else []:
            old = export_rev(rev, tmp / f"before-{rev}")
            cases[f"fit@{rev}"] = (fit_argv, {**os.environ, "PYTHONPATH": str(old)})
        res: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
        cpu: dict[str, list[float]] = {k: [] for k in cases}
        outputs: dict[str, str] = {}
        for r in range(a.repeat):
            for name, (argv, env) in cases.items():
                wall, rss, out = measured(argv, env, cwd=tmp)
                res[name].append((wall, rss))
                cpu[name].append(CPU[tuple(argv)][-1])
                if name.startswith("fit"):
                    outputs[name] = out
                print(f"  round {r + 1} {name}: {wall:.2f} s, CPU {cpu[name][-1]:.2f} s, {rss:.0f} MiB", flush=True)
        base = statistics.median(w for w, _ in res["read"])
        print(f"\n{'run':<16} {'wall (median)':>14} {'/ read':>8} {'best':>7} {'CPU (median)':>13} {'peak RSS':>10}   all walls")
        for name, vals in res.items():
            med = statistics.median(w for w, _ in vals)
            rss = max(m for _, m in vals)
            print(f"{name:<16} {med:>12.2f} s {med / base:>7.1f}x {min(w for w, _ in vals):>6.2f}s "
                  f"{statistics.median(cpu[name]):>11.2f} s {rss:>7.0f} MiB   " + ", ".join(f"{w:.2f}" for w, _ in vals))
        for rev in (a.before or "").split(",") if a.before else []:
            ref = f"fit@{rev}"
            print(f"fit / {ref}: wall (median) {statistics.median(w for w, _ in res['fit']) / statistics.median(w for w, _ in res[ref]):.2f}, "
                  f"best {min(w for w, _ in res['fit']) / min(w for w, _ in res[ref]):.2f}, "
                  f"CPU {statistics.median(cpu['fit']) / statistics.median(cpu[ref]):.2f}")
        fits = {k: json.loads(v) for k, v in outputs.items()}
        for k, v in fits.items():
            print(f"{k}: half-life {v['half_life_s'] / 86400:.6f} d +- {v['half_life_se_s'] / 86400:.6f}, "
                  f"residuals {v['residuals']:,}, breaks {v['breaks']}, outliers {v['outliers']}, snapshots {v['snapshots']}")
        if len(fits) > 1:
            same = len({json.dumps(v, sort_keys=True) for v in fits.values()}) == 1
            print("fits identical (every field of the JSON):", same)
            for name in (k for k in fits if k != "fit" and not same):
                # the Gauss-Newton fit against MINPACK's: counts equal, numbers to rounding
                print(f"fit against {name}:")
                ref = fits[name]
                now = fits["fit"]
                diff = {k: (abs(now[k] - ref[k]) / abs(ref[k]) if ref[k] else abs(now[k]))
                        for k in now if isinstance(now[k], float) and isinstance(ref[k], float)}
                exact = {k: now[k] == ref[k] for k in now if not isinstance(now[k], float)}
                print("  fields that are not floats equal:", all(exact.values()), {k for k, v in exact.items() if not v} or "")
                print("  largest relative difference of the floats:",
                      ", ".join(f"{k} {v:.1e}" for k, v in sorted(diff.items(), key=lambda kv: -kv[1])[:4]))
                assert all(exact.values()) and diff["half_life_s"] <= 1e-9, "the fit changed"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
