#!/usr/bin/env python3
"""A replay of a GPU-bound capture, with its GPUs and without them (issue #32 item 1): CPU time.

Run:  .venv/bin/python bench/bench_sim_gpus.py [--jobs 3000] [--seed 900] [--span 20000] [--repeat 1]

Generated data (not recorded from a Slurm): the testbed's GPU capture
(tests/data/captures/gpus/22.05: its config, tree and QOS) with its nodes.txt replaced by 8 nodes
(CPUs:GPUs 24:4, 8:4, 16:0, 32:2, 24:4, 24:4, 8:0, 16:2) and its jobs.txt by --jobs random jobs
over --span seconds (1-3 nodes, 1-8 CPUs a node, 0/1/2/4 GPUs a node, 5-200 s, limits 1-6 min;
an outside tester's generator, 2026-11-29). `fscontrol simulate` of it is timed (CPU, best of
--repeat) with the GPUs and with nodes.txt's %G column removed (the same jobs on the same nodes,
no job waiting for GPUs: the baseline, in the same run), the compiled engine if built."""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fscontrol.sim import accel  # noqa: E402
from fscontrol.sim.command import SimulateOptions, simulate  # noqa: E402

NODES = [(24, 4), (8, 4), (16, 0), (32, 2), (24, 4), (24, 4), (8, 0), (16, 2)]


def make(d: Path, jobs: int, seed: int, span: int) -> None:
    shutil.copytree(ROOT / "tests" / "data" / "captures" / "gpus" / "22.05", d)
    rng = random.Random(seed)
    with open(d / "nodes.txt", "w") as f:
        for k, (c, g) in enumerate(NODES):
            for p in ("normal*", "fsadmin", "parked"):
                f.write(f"n{k + 1}|{p}|{c}|idle|{'gpu:%d' % g if g else '(null)'}\n")
    t0 = 1795944562
    rows = [(d / "jobs.txt").read_text().splitlines()[0]]
    for i in range(1, jobs + 1):
        sub = t0 + rng.randint(0, span)
        el = rng.randint(5, 200)
        lim = rng.randint(el // 60 + 1, 6)
        nn = rng.choice([1, 1, 1, 2, 2, 3])
        g = rng.choice([0, 0, 1, 2, 4])
        cpus = rng.choice([1, 2, 4, 8]) * nn
        gt = f"gres/gpu={g * nn}," if g else ""
        user = rng.choice(["alice", "bob", "carol", "dave"])
        rows.append(f"{i}|{user}|flat|normal|normal|COMPLETED|{sub}|{sub}|{sub + 1}|{sub + 1 + el}|{el}|{lim}|{cpus}|"
                    f"{cpus}|{nn}|{nn}|billing={cpus},cpu={cpus},{gt}node={nn}|n1|billing={cpus},cpu={cpus},{gt}node={nn}")
    (d / "jobs.txt").write_text("\n".join(rows) + "\n")


def timed(d: Path, repeat: int) -> tuple[float, float]:
    best = float("inf")
    wait = 0.0
    for _ in range(repeat):
        t = time.process_time()
        (r,) = simulate(SimulateOptions(str(d), policy=["mf-classic"], progress=False)).results
        best = min(best, time.process_time() - t)
        wait = r.overall["mean_wait_s"]
    return best, wait


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=900)
    ap.add_argument("--span", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        gpus, blind = Path(tmp) / "gpus", Path(tmp) / "blind"
        make(gpus, a.jobs, a.seed, a.span)
        shutil.copytree(gpus, blind)
        text = (gpus / "nodes.txt").read_text()
        (blind / "nodes.txt").write_text("".join(ln.rsplit("|", 1)[0] + "\n" for ln in text.splitlines()))
        print(f"{a.jobs:,} jobs (seed {a.seed}) on 8 nodes of {sum(c for c, _ in NODES)} CPUs, "
              f"{sum(g for _, g in NODES)} GPUs; engine {accel.status()}")
        tb, wb = timed(blind, a.repeat)
        tg, wg = timed(gpus, a.repeat)
        print(f"  without the GPUs   {tb:6.2f} s CPU  (mean wait {wb / 3600:.2f} h)")
        print(f"  with the GPUs      {tg:6.2f} s CPU  (mean wait {wg / 3600:.2f} h)")
        print(f"  with / without: {tg / tb:.1f}x")


if __name__ == "__main__":
    main()
