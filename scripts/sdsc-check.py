#!/usr/bin/env python3
"""Reproduce docs/simulator.md "Check 1": EASY on the full SDSC Blue Horizon log, its variants,
and replicas of the two peer simulators whose figures the issue quotes (tests/peer_models.py).

    .venv/bin/python scripts/sdsc-check.py            # ~1 minute
    .venv/bin/python scripts/sdsc-check.py --json

Deterministic except the shaken rows (seeded). Prints mean wait, mean bounded slowdown (10 s),
utilization, the widest jobs' wait and the longest wait for each row.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import replace
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from peer_models import accasim_ebf, cqsim_easy, schedule_metrics  # noqa: E402

from fscontrol.sim import read_swf, run_simulation  # noqa: E402
from fscontrol.sim.metrics import utilization  # noqa: E402
from fscontrol.sim.workload import Workload  # noqa: E402

LOG = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"


def row(name: str, w: Workload, starts: list[float]) -> dict:
    m = schedule_metrics(w, starts)
    run = [j.run for j in w.jobs]
    util = utilization([j.submit for j in w.jobs], [s + r for s, r in zip(starts, run)], run, [j.size for j in w.jobs], w.nodes)
    return {
        "variant": name,
        "mean_wait_min": round(m["mean_wait_s"] / 60, 2),
        "mean_bsld": round(m["mean_bsld"], 2),
        "utilization": round(util or 0.0, 3),
        "1-node jobs wait_min": round(schedule_metrics(w, starts, hi=1)["mean_wait_s"] / 60, 1),
        ">64-node jobs wait_min": round(schedule_metrics(w, starts, lo=65)["mean_wait_s"] / 60, 1),
        "longest wait_h": round(m["max_wait_s"] / 3600, 1),
    }


def shaken(w: Workload, seed: int, jitter: float = 30.0) -> Workload:
    rng = random.Random(seed)
    jobs = [replace(j, submit=max(0.0, j.submit + rng.uniform(-jitter, jitter))) for j in w.jobs]
    return Workload(f"{w.name} shaken {seed}", w.nodes, jobs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--seeds", type=int, default=8, help="shaken runs (submit times +-30 s)")
    args = ap.parse_args()

    base = read_swf(LOG)
    rows = [row("EASY (ours, default: overrun extend, field 5)", base, run_simulation(base, "easy", per_user=False).start)]
    kill = read_swf(LOG, overrun="kill")
    rows.append(row("EASY, overrunning jobs killed at their request", kill, run_simulation(kill, "easy", per_user=False).start))
    req = read_swf(LOG, processors="requested")
    rows.append(row("EASY, processors from field 8 (AccaSim's reading)", req, run_simulation(req, "easy", per_user=False).start))
    for seed in range(args.seeds):
        s = shaken(base, seed)
        rows.append(row(f"EASY, submit times shaken +-30 s, seed {seed}", s, run_simulation(s, "easy", per_user=False).start))
    rows.append(row("FCFS, no backfill (for scale)", base, run_simulation(base, "fcfs", per_user=False).start))
    rows.append(row("replica of AccaSim 1.1.3 EASYBackfilling", base, accasim_ebf(base.jobs, base.nodes)))
    rows.append(row("replica of AccaSim, field 8", req, accasim_ebf(req.jobs, req.nodes)))
    rows.append(row("replica of CQSim EASY (backfill by actual run time)", base, cqsim_easy(base.jobs, base.nodes)))
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(tabulate(rows, headers="keys", tablefmt="github"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
