"""Where a `collect` of the 2,500-user sample spends its CPU, step by step: each Slurm output's
parse (scontrol show config, sshare + the tree check, squeue, sprio, sacct as collect reads it)
and write_snapshot into a history that already holds one snapshot of it (the same values
again: no association sample changes), with the usage of every association that has any moved
(~1,000 changed samples, as after a decay pass), and into an empty history (a first collect). time.process_time in a
fresh process, best of --runs; --compare DIR times another checkout's code the same way in the
same run (e.g. `git archive COMMIT fscontrol | tar -x -C DIR`).

Data: samples/synthetic-agave (SYNTHETIC: 2,671 associations, 5,000 jobs, 1,848 queued).

Run:  .venv/bin/python bench/bench_collect_parts.py [--runs 7] [--compare DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "synthetic-agave"
CHILD = """
import sys, time
from pathlib import Path
T = time.process_time
from fscontrol.slurm import parse
from fscontrol.agent import pipeline
from fscontrol.store import history as store
from fscontrol.slurm.source import RecordedSlurm
src = RecordedSlurm(Path(sys.argv[1]))
db = store.open_db(sys.argv[2])
runs = int(sys.argv[3])
steps = {}
def best(name, f):
    out = None
    for _ in range(runs):
        t = T(); out = f(); d = T() - t
        steps[name] = min(steps.get(name, 9e9), d)
    return out
best("config", lambda: parse.parse_config(src.config().stdout))
shares = best("sshare", lambda: parse.parse_sshare(src.sshare().stdout))
best("tree check", lambda: parse.check_share_tree(shares))
best("squeue", lambda: parse.parse_squeue(src.squeue().stdout))
best("sprio", lambda: parse.parse_sprio(src.sprio().stdout))
best("sacct", lambda: len(src.sacct_jobs(*src.window)))
snap = pipeline.read_snapshot(src)
def write():
    with store.transaction(db):
        store.write_snapshot(db, snap, source=src.describe())
best("write_snapshot", write)
# the same snapshot with every association that has usage moved (RawUsage + 1, as after a decay
# pass), written alternately with the sample's own: each write stores ~1,000 changed samples
import dataclasses
moved = dataclasses.replace(snap, shares=tuple(dataclasses.replace(r, raw_usage=r.raw_usage + 1) if r.raw_usage else r
                                               for r in snap.shares))
flip = [snap, moved]
def write_moved():
    flip.reverse()
    with store.transaction(db):
        store.write_snapshot(db, flip[0], source=src.describe())
best("write_usage_moved", write_moved)
# the first collect into an empty history: every association and sample is new
fresh = [0]
def write_empty():
    fresh[0] += 1
    d = store.open_db(f"{sys.argv[2]}.empty{fresh[0]}")
    t = T()
    with store.transaction(d):
        store.write_snapshot(d, snap, source=src.describe())
    return T() - t
steps["write_empty_history"] = min(write_empty() for _ in range(runs))
print(" ".join(f"{k}={v}" for k, v in steps.items()).replace(" check", "_check"))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--compare", type=Path)
    args = ap.parse_args()
    trees = {"this checkout": ROOT} | ({"compare": args.compare.resolve()} if args.compare else {})
    tmp = Path(tempfile.mkdtemp(prefix="bench-collect-parts-"))
    try:
        results = {}
        for name, tree in trees.items():
            env = dict(os.environ, PYTHONPATH=str(tree))
            db = tmp / f"{len(results)}.db"
            subprocess.run([sys.executable, "-m", "fscontrol", "collect", "--source", str(SAMPLE), "--db", str(db)], cwd=tree,
                           env=env, check=True, stdout=subprocess.DEVNULL)
            out = subprocess.run([sys.executable, "-c", CHILD, str(SAMPLE), str(db), str(args.runs)], cwd=tree, env=env,
                                 capture_output=True, text=True, check=True).stdout.split()
            results[name] = {k: float(v) for k, v in (x.split("=") for x in out)}
        steps = list(next(iter(results.values())))
        print(f"CPU (process_time) of each step, best of {args.runs}; load average {os.getloadavg()[0]:.2f}")
        print(f"{'step':<22}" + "".join(f"{n:>16}" for n in results))
        for step in steps:
            print(f"{step.replace('_', ' '):<22}" + "".join(f"{r[step] * 1000:>14.1f}ms" for r in results.values()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
