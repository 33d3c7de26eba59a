"""Instructions of one simulator run (valgrind cachegrind): steadier than CPU time on a shared machine.

Run:  .venv/bin/python bench/bench_sim_instr.py [--tree DIR] [--policies easy,fcfs,mf-classic]

DIR (default: this tree) is a folder holding a `fscontrol` package (a checkout, or
`git archive REV fscontrol | tar -x -C DIR`). The SDSC-BLUE log is read once with DIR's code and
pickled; then, under `valgrind --tool=cachegrind --cache-sim=no` with PYTHONHASHSEED=0, one process
loads the pickle and runs the engine (engine.simulate for the static policies, the Python
simulate_multifactor for mf-*), and one only loads it: the difference is the engine call's
instructions. Prints them and the start times' hash (as bench_sim_ab.py). Each run takes about 40x
its CPU time (a minute for EASY on the whole log).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PREP = r"""
import pickle, sys
from pathlib import Path
from fscontrol.sim import read_swf
log = Path(sys.argv[2]) / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"
pickle.dump(read_swf(log), open(sys.argv[1], "wb"), protocol=5)
"""

RUN = r"""
import hashlib, pickle, struct, sys
from fscontrol.sim import get_policy
from fscontrol.sim.engine import simulate
from fscontrol.sim.multifactor import simulate_multifactor
w = pickle.load(open(sys.argv[1], "rb"))
pol = get_policy(sys.argv[2])
if sys.argv[3] == "run":
    if pol.kind == "multifactor":
        r = simulate_multifactor(w, pol.priority, depth=pol.depth, backfill=pol.backfill == "easy")
    else:
        r = simulate(w, pol)
    print(hashlib.sha256(struct.pack(f"{len(r.start)}d", *r.start)).hexdigest()[:16])
"""


def instructions(tree: Path, pkl: Path, policy: str, what: str) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0", "FSCONTROL_SIM_ENGINE": "python"}
    p = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                        sys.executable, "-c", RUN, str(pkl), policy, what],
                       env=env, cwd=tree, capture_output=True, text=True, timeout=7200)  # (cwd: -c puts it first)
    m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"{tree}: {policy}: {(p.stderr.strip().splitlines() or ['valgrind failed'])[-1]}")
    return int(m.group(1).replace(",", "")), p.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, default=ROOT)
    ap.add_argument("--policies", default="easy,fcfs")
    a = ap.parse_args()
    tree = a.tree.resolve()
    with tempfile.TemporaryDirectory(prefix="fscontrol-instr-") as tmp:
        pkl = Path(tmp) / "w.pkl"
        subprocess.run([sys.executable, "-c", PREP, str(pkl), str(ROOT)], check=True, timeout=600, cwd=tree,
                       env={**os.environ, "PYTHONPATH": str(tree)})
        where = subprocess.run([sys.executable, "-c", "import fscontrol; print(fscontrol.__file__)"], cwd=tree,
                               env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
                               timeout=60).stdout.strip()  # (the package the runs import)
        base, _ = instructions(tree, pkl, "fcfs", "load")
        for policy in a.policies.split(","):
            total, sha = instructions(tree, pkl, policy, "run")
            print(f"{policy:<12} {(total - base) / 1e9:7.2f} G instructions of the engine call   start times {sha}"
                  f"   ({where})", flush=True)


if __name__ == "__main__":
    main()
