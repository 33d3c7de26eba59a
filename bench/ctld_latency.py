#!/usr/bin/env python3
"""The completion latency as slurmctld ran it, per capture: from a capture's slurmctld.log (the
testbed's, SlurmctldDebug=info: `_job_complete ... done` and `sched: Allocate` in ms) the main
scheduler's delay after a job end, the ends' sub-second phases and each job's latency in whole
seconds (fscontrol.sim.ctldlog); from every capture's sacct (jobs.txt) the end-to-next-start
gaps whose median the replay takes (history.completion_lag). docs/simulator-fidelity.md.

    .venv/bin/python bench/ctld_latency.py samples/fidelity/*/
"""

from __future__ import annotations

import sys
from pathlib import Path

from fscontrol.sim.ctldlog import summary
from fscontrol.sim.history import completion_gaps, completion_lag


def main(argv: list[str]) -> int:
    for a in argv:
        d = Path(a)
        g = completion_gaps(d / "jobs.txt") or []
        hist = " ".join(f"{s}s:{sum(1 for x in g if min(x, 4) == s)}" for s in range(5))
        print(f"{d.name}: sacct gaps (4 = 4 s or more) {hist}; median (the replay's) {completion_lag(d / 'jobs.txt')}")
        if (d / "slurmctld.log").is_file():
            s = summary((d / "slurmctld.log").read_text(encoding="utf-8", errors="replace"))
            print(f"  slurmctld.log: {s['ends']} ends; {s['after_an_end']} of {s['allocations']} main-scheduler "
                  f"allocations within 1 s after an end, {s['in_the_end_second']} of them in the end's second, "
                  f"delay min/median/max {s['delay_ms']} ms")
            print(f"  ends' sub-second phase by tenth: {s['end_phase_tenths']}; per-job latency (s: jobs) {s['lags']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
