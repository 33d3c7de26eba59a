#!/usr/bin/env python3
"""Conservative backfilling against EASY on the whole KTH-SP2 and SDSC-BLUE logs (docs/simulator.md,
"Conservative backfilling"): the lecture's metrics for each policy, and the guarantee checked on
every job (none starts later than the reservation it got at arrival).

    .venv/bin/python scripts/conservative-check.py            # ~1-2 minutes
    .venv/bin/python scripts/conservative-check.py --json

Deterministic. Times in the table: minutes (wait, response), hours (makespan).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fscontrol.sim import read_swf, run_simulation  # noqa: E402

LOGS = [ROOT / "samples" / "traces" / n for n in ("KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-BLUE-2000-4.2-cln.swf.gz")]
POLICIES = ["easy", "conservative", "conservative-linear-eligible", "conservative-linear-size"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    rows = []
    for log in LOGS:
        w = read_swf(log)
        for p in POLICIES:
            r = run_simulation(w, p, per_user=False)
            o = r.overall
            row = {
                "log": log.name.split("-cln")[0],
                "policy": p,
                "jobs": o["finished"],
                "mean wait_min": round(o["mean_wait_s"] / 60, 2),
                "mean response_min": round(o["mean_response_s"] / 60, 2),
                "max wait_h": round(o["max_wait_s"] / 3600, 1),
                "mean slowdown": round(o["mean_slowdown"], 2),
                "mean bsld": round(o["mean_bsld"], 2),
                "utilization": round(o["utilization"], 4),
                "makespan_h": round(o["makespan_s"] / 3600, 1),
                "engine_s": round(r.wall_s, 1),
            }
            if r.reservation:
                row["after reservation"] = sum(1 for s, f in zip(r.start, r.reservation) if s > f)
                row["before reservation"] = sum(1 for s, f in zip(r.start, r.reservation) if s < f)
            rows.append(row)
            print(f"{row['log']} {p}: done in {r.wall_s:.1f} s", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(tabulate(rows, headers="keys", tablefmt="github"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
