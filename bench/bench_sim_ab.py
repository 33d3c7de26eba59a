"""The simulator's engines at a git revision and now, side by side: CPU time and start times.

Run:  .venv/bin/python bench/bench_sim_ab.py --before main [--repeat 5] [--jobs 0] [--compiled]
      [--policies easy,fcfs,mf-classic,mf-fairtree]

The revision is checked out in a scratch git worktree; each run is a child process (the tree at
REV or this one on PYTHONPATH) that reads the SDSC-BLUE log and times the engine call alone
(engine.simulate for the static policies, simulate_multifactor for mf-*) in CPU time
(time.process_time), the two trees' runs interleaved, best of --repeat each. With --compiled the
multifactor rows run mypyc's build (`python -m fscontrol.sim.accel build` in both trees first);
without it FSCONTROL_SIM_ENGINE=python. Prints the CPU ratio of the bests (before / now: above 1 is
faster now), the spread of the rounds' ratios, and whether every job's start time is the same to
the bit (a hash of the list of floats).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import hashlib, json, struct, sys, time
from pathlib import Path
import fscontrol
from fscontrol.sim import get_policy, read_swf
from fscontrol.sim.workload import Workload
root = Path(fscontrol.__file__).resolve().parents[1]
w = read_swf(root / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz")
n = int(sys.argv[2])
if n:
    w = Workload(w.name, w.nodes, list(w.jobs[:n]), meta=w.meta)
pol = get_policy(sys.argv[1])
if pol.kind == "multifactor":
    from fscontrol.sim import accel
    from fscontrol.sim.multifactor import simulate_multifactor
    why = accel.status()
    c0 = time.process_time()
    r = simulate_multifactor(w, pol.priority, depth=pol.depth, backfill=pol.backfill == "easy")
else:
    from fscontrol.sim.engine import simulate
    why = "static"
    c0 = time.process_time()
    r = simulate(w, pol)
cpu = time.process_time() - c0
h = hashlib.sha256(struct.pack(f"{len(r.start)}d", *r.start)).hexdigest()[:16]
print(json.dumps({"cpu": cpu, "sha": h, "engine": why, "jobs": len(w.jobs)}))
"""


def run(tree: Path, policy: str, jobs: int, compiled: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if not compiled:
        env["FSCONTROL_SIM_ENGINE"] = "python"
    p = subprocess.run([sys.executable, "-c", CHILD, policy, str(jobs)], cwd=tree, env=env,
                       capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"{tree}: {policy}: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, metavar="REV")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=0, help="the first N jobs of the log (0: all)")
    ap.add_argument("--compiled", action="store_true", help="the multifactor rows on mypyc's build, in both trees")
    ap.add_argument("--policies", default="easy,fcfs,mf-classic,mf-fairtree")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fscontrol-ab-") as tmp:
        old = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), a.before],
                       check=True, capture_output=True, timeout=300)
        try:
            trees = (("before", old), ("now", ROOT))
            if a.compiled:
                for _, tree in trees:
                    subprocess.run([sys.executable, "-m", "fscontrol.sim.accel", "build"], cwd=tree,
                                   env={**os.environ, "PYTHONPATH": str(tree)}, check=True, timeout=3600)
            for policy in a.policies.split(","):
                cpus: dict[str, list[float]] = {"before": [], "now": []}
                res = {}
                for _ in range(a.repeat):
                    for name, tree in trees:
                        res[name] = run(tree, policy, a.jobs, a.compiled)
                        cpus[name].append(res[name]["cpu"])
                best = {name: min(v) for name, v in cpus.items()}
                # the spread: each round's ratio (the two runs of a round run back to back)
                ratios = sorted(b / n for b, n in zip(cpus["before"], cpus["now"]))
                same = "the same" if res["before"]["sha"] == res["now"]["sha"] else "DIFFER"
                print(f"{policy:<12} {res['now']['jobs']:>7,} jobs  CPU {best['before']:7.3f} s at {a.before} -> "
                      f"{best['now']:7.3f} s now: {best['before'] / best['now']:5.3f}x   start times {same} "
                      f"({res['now']['sha']})   [{res['now']['engine']}]   rounds {ratios[0]:.3f}-{ratios[-1]:.3f}x", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           capture_output=True, timeout=300)


if __name__ == "__main__":
    main()
