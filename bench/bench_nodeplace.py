#!/usr/bin/env python3
"""Time of one backfill cycle on nodes: the reference (fscontrol.sim.nodeplace.backfill_cycle)
and the engine's (fscontrol.sim.nodesched.backfill_nodes: the same starts, pruned), against the
engine's pooled cycle (fscontrol.sim.slurmsched.backfill_starts) on the same synthetic machine
and queue, and the ratios (docs/simulator-fidelity.md, "Where a job of tasks lands").

From a seed: `--nodes` nodes of 32 CPUs filled with running jobs of 1-16 CPUs (placed by
`nodeplace.place`, limits 1-60 minutes from now) until one no longer fits; `--pending` pending
jobs of 1-64 CPUs, limits 10, 30 or 60 minutes. Median of `--repeat`.

    .venv/bin/python bench/bench_nodeplace.py --nodes 4 32 --pending 100 300
"""

from __future__ import annotations

import argparse
from functools import partial
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fscontrol.sim.nodeplace import backfill_cycle, place  # noqa: E402
from fscontrol.sim.nodesched import backfill_nodes  # noqa: E402
from fscontrol.sim.slurmsched import SlurmSched, backfill_starts  # noqa: E402

CPUS = 32


def machine(seed: int, nodes: int, pending: int):
    rng = random.Random(seed)
    free = [CPUS] * nodes
    running: list[tuple[float, list[int]]] = []
    while True:
        n = rng.randint(1, 16)
        a = place(free, n)
        if a is None:
            break
        free = [f - x for f, x in zip(free, a)]
        running.append((float(rng.randint(1, 60) * 60), a))
    queue = [(rng.randint(1, 64), float(rng.choice([600, 1800, 3600]))) for _ in range(pending)]
    return free, running, queue


def timed(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[4, 32])
    ap.add_argument("--pending", type=int, nargs="+", default=[100, 300])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    for nodes in a.nodes:
        for pending in a.pending:
            free, running, queue = machine(a.seed, nodes, pending)
            size = [sum(r[1]) for r in running] + [n for n, _ in queue]
            est = [r[0] for r in running] + [lim for _, lim in queue]
            run_idx = sorted((e, k) for k, (e, _) in enumerate(running))
            q = list(range(len(running), len(running) + len(queue)))
            sc = SlurmSched(node_cpus=CPUS)
            t_nodes = timed(partial(backfill_cycle, 0.0, queue, free, running), a.repeat)
            t_pool = timed(partial(backfill_starts, 0.0, q, sum(free), run_idx, size, est, CPUS * nodes, sc), a.repeat)
            busy = [(e, list(al)) for e, al in running]
            t_eng = timed(partial(backfill_nodes, 0.0, q, free, busy, size, est, sc), a.repeat)
            print(f"{nodes} nodes, {len(running)} running, {pending} pending: reference {t_nodes * 1e3:.1f} ms, "
                  f"engine's {t_eng * 1e3:.2f} ms, pool {t_pool * 1e3:.2f} ms; reference / pool {t_nodes / t_pool:.0f}x, "
                  f"engine's / pool {t_eng / t_pool:.1f}x")


if __name__ == "__main__":
    main()
