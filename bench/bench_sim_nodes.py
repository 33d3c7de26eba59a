#!/usr/bin/env python3
"""The engine under slurmctld's scheduler, pooled and on nodes (issue #32 item 1): CPU time.

Run:  .venv/bin/python bench/bench_sim_nodes.py [--jobs 20000] [--node-cpus 8] [--repeat 1] [--limits K=V,...]

The SDSC-BLUE log's first --jobs jobs, mf-classic under SlurmSched (complete_s 1 s), its machine
cut into nodes of --node-cpus: the pool (node_model "", free CPUs as one count) and the node model
(node_model "22.05": each job placed on nodes, backfill on nodes, nodesched.backfill_nodes), each
timed in CPU time (best of --repeat), the compiled engine if built (accel.engine()). Prints the
times, the ratio, the backfill cycles' share (a profile is not taken: the node run's time over the
pool's is the cost), and how many jobs start at a different time. `--limits bf_max_job_user=2`:
the same with SchedulerParameters' count limits (slurmsched.bf_tested), beside the runs without.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fscontrol.sim import accel, get_policy, read_swf  # noqa: E402
from fscontrol.sim.slurmsched import SlurmSched  # noqa: E402
from fscontrol.sim.workload import Workload  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--node-cpus", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--limits", default="", help="count limits, e.g. bf_max_job_user=2,bf_max_job_start=5")
    a = ap.parse_args()
    lim = {k: int(v) for k, _, v in (x.partition("=") for x in a.limits.split(",") if x)}
    whole = read_swf(ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz")
    w = Workload(whole.name, whole.nodes, list(whole.jobs[:a.jobs] if a.jobs else whole.jobs), meta=whole.meta)
    eng = accel.engine()
    print(f"{len(w.jobs):,} jobs on {w.nodes} CPUs = {w.nodes // a.node_cpus} nodes of {a.node_cpus}; "
          f"engine {accel.status()}", flush=True)
    prio = get_policy("mf-classic").priority
    runs = {}
    for model in ("", "22.05") + (("L", "22.05L") if lim else ()):
        sc = SlurmSched(node_cpus=a.node_cpus, complete_s=1.0, node_model=model.rstrip("L"),
                        **(lim if model.endswith("L") else {}))
        best = None
        for _ in range(a.repeat):
            t0 = time.process_time()
            r = eng.simulate(w, prio, sched=sc)
            dt = time.process_time() - t0
            best = dt if best is None else min(best, dt)
        runs[model] = r
        label = ("nodes (22.05 rule)" if model.rstrip("L") else "pool") + (f", {a.limits}" if model.endswith("L") else "")
        print(f"  {label:<20} {best:7.2f} s CPU", flush=True)
        runs[model + "t"] = best
    diff = sum(1 for x, y in zip(runs[""].start, runs["22.05"].start) if x != y)
    print(f"  nodes / pool: {runs['22.05t'] / runs['t']:.2f}x; jobs starting at another time: {diff:,}")
    if lim:
        print(f"  with the limits / without: pool {runs['Lt'] / runs['t']:.2f}x, nodes {runs['22.05Lt'] / runs['22.05t']:.2f}x; "
              f"jobs starting at another time: pool {sum(1 for x, y in zip(runs[''].start, runs['L'].start) if x != y):,}")


if __name__ == "__main__":
    main()
