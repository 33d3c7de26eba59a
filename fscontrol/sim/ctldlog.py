"""What a capture's slurmctld.log (the testbed's, SlurmctldDebug=info) says about each job's
completion: the millisecond its end was logged and the second its CPUs took the next job.

slurmctld marks a batch job complete in `_slurm_rpc_complete_batch_script` (`_job_complete:
JobId=N done`, the End sacct shows, in whole seconds); the node's EPILOG_COMPLETE then runs the
main scheduler at once (proc_req.c `_slurm_rpc_epilog_complete`: `schedule(false)`, 22.05.8), so
a job waiting for those CPUs is allocated (`sched: Allocate JobId=M`) 9-290 ms after the end
(seed 46's log). Whether it starts in the end's second or the next is the end's sub-second phase:
an end at t.496 starts the next job at t.505 (0 s in sacct), one at t.997 a second later. A
capture-wide median (history.completion_lag) cannot tell them apart; this reads it per job.

The replay does not use it (docs/simulator-fidelity.md, "The completion latency per job": on its
own it changes no target, with the main pass's timer on the decay grid it fixes seed 46 but not
the captures without a log); bench/ctld_latency.py prints what it measures."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from statistics import median

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\] (.*)$")
_DONE = re.compile(r"^_job_complete: JobId=(\d+) done")
_ALLOC = re.compile(r"^sched: Allocate JobId=(\d+) ")

# a main-pass allocation at most this long after an end is that end's pass (the log's: 9-290 ms)
PASS_WINDOW_S = 1.0


def _stamp(s: str, tz: timezone) -> float:
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in s else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(s, fmt).replace(tzinfo=tz).timestamp()


def ends_and_allocations(text: str, tz: timezone = timezone.utc) -> tuple[dict[str, float], list[tuple[float, str]]]:
    """(job id -> the time its `_job_complete ... done` was logged, the main scheduler's
    allocations as (time, job id) in the log's order). The log's timestamps carry no zone:
    `tz` is the controller's (the testbed's is UTC)."""
    ends: dict[str, float] = {}
    allocs: list[tuple[float, str]] = []
    for ln in text.splitlines():
        m = _LINE.match(ln)
        if m is None:
            continue
        msg = m.group(2)
        d = _DONE.match(msg)
        if d is not None:
            ends[d.group(1)] = _stamp(m.group(1), tz)
            continue
        a = _ALLOC.match(msg)
        if a is not None:
            allocs.append((_stamp(m.group(1), tz), a.group(1)))
    return ends, allocs


def pass_delays(ends: dict[str, float], allocs: list[tuple[float, str]]) -> list[float]:
    """For each allocation within PASS_WINDOW_S after a job's end (the last end before it), the
    delay from that end: the main scheduler's pass on the completion, measured."""
    order = sorted(ends.values())
    from bisect import bisect_right

    out = []
    for t, _ in allocs:
        k = bisect_right(order, t)
        if k and t - order[k - 1] <= PASS_WINDOW_S:
            out.append(t - order[k - 1])
    return out


def completion_lags(text: str, tz: timezone = timezone.utc) -> dict[str, float]:
    """job id -> how many whole seconds after its (sacct) End its CPUs start the next job: the
    second of the main scheduler's first allocation within PASS_WINDOW_S after its end, less the
    end's second, where slurmctld allocated one; else the end's second against that of the end
    plus the median delay of such allocations in the log (0 s for most ends, 1 s for an end in the
    last tenths of its second). {} when the log has no job end."""
    ends, allocs = ends_and_allocations(text, tz)
    if not ends:
        return {}
    ds = pass_delays(ends, allocs)
    d = median(ds) if ds else 0.0
    at = sorted(allocs)
    order = sorted(ends.values())
    from bisect import bisect_left, bisect_right

    out: dict[str, float] = {}
    for j, e in ends.items():
        k = bisect_left(at, (e, ""))
        # the first allocation after this end that is this end's pass (no later end before it)
        nxt = at[k][0] if k < len(at) else math.inf
        r = bisect_right(order, e)
        if nxt - e <= PASS_WINDOW_S and not (r < len(order) and order[r] < nxt):
            out[j] = float(math.floor(nxt) - math.floor(e))
        else:
            out[j] = float(math.floor(e + d) - math.floor(e))
    return out


def summary(text: str, tz: timezone = timezone.utc) -> dict[str, object]:
    """What the log shows of the completion latency: its job ends, the main scheduler's
    allocations within PASS_WINDOW_S after an end (their delays in ms: min, median, max; how many
    fell in the end's second), the ends' sub-second phases by tenth, and the per-job latencies
    (completion_lags) counted by value."""
    ends, allocs = ends_and_allocations(text, tz)
    ds = pass_delays(ends, allocs)
    order = sorted(ends.values())
    from bisect import bisect_right

    same = 0
    for t, _ in allocs:
        k = bisect_right(order, t)
        if k and t - order[k - 1] <= PASS_WINDOW_S and math.floor(t) == math.floor(order[k - 1]):
            same += 1
    phases = [0] * 10
    for e in ends.values():
        phases[min(9, int((e % 1) * 10))] += 1
    lags: dict[float, int] = {}
    for v in completion_lags(text, tz).values():
        lags[v] = lags.get(v, 0) + 1
    return {
        "ends": len(ends),
        "allocations": len(allocs),
        "after_an_end": len(ds),
        "in_the_end_second": same,
        "delay_ms": (round(min(ds) * 1e3), round(median(ds) * 1e3), round(max(ds) * 1e3)) if ds else None,
        "end_phase_tenths": phases,
        "lags": dict(sorted(lags.items())),
    }
