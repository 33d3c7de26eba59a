"""Conservative backfilling (Mu'alem & Feitelson 2001; Srinivasan et al. 2002) on an availability profile.

Every job gets a reservation when it arrives: the earliest start at which its size fits for its
whole time limit in the profile of free nodes (running jobs until their *limits*, and every
reservation already made). A job starts when its reservation comes; a later job can therefore
start ahead of an earlier one ("backfill") only where it violates no reservation.

When a job ends before its limit, the nodes it leaves free until its limit let waiting jobs move
up. This engine *compresses* the schedule then: it goes over the waiting jobs in priority order
(the policy's queue order: submit time for FCFS, the linear key otherwise) and moves each one to
the earliest start its own reservation allows once given back, never later than the one it
holds (:meth:`Profile.improve`). One pass per early end, as in the papers; a job moved later in
the pass may free room an earlier one could have used: that room waits for the next early end.

Order at one time t: job ends (early ends give their unused time back), then the compression,
then arrivals (each gets its reservation, in priority order), then every job whose reservation
is t starts. Reservation start times are events of their own, so a job always starts exactly at
its reservation, which is never later than the one it got at arrival (the guarantee the
property test checks, ``tests/test_sim_conservative.py``).

Jobs that run past their limit are killed at it: a reservation cannot stretch without pushing
others back (SWF logs read with ``overrun="extend"``, the default, have none). Jobs wider than the
machine never start (counted as unfinished, with a note).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left

from ..errors import ConfigError
from .engine import ProgressFn, RawRun
from .policies import Policy
from .profile import Profile
from .workload import Workload

INF = math.inf


def simulate_conservative(
    workload: Workload,
    policy: Policy,
    *,
    progress: ProgressFn | None = None,
    max_time: float | None = None,
) -> RawRun:
    """Run ``workload`` under conservative backfilling with ``policy``'s priority order."""
    if policy.kind not in ("fcfs", "linear"):
        raise ConfigError(
            f"conservative backfilling takes a priority order (fcfs or linear), not {policy.kind!r}: "
            "SFS's first pass and the gate's holds start or stop jobs outside the reservations"
        )
    if policy.schedule_interval_s:
        raise ConfigError("conservative backfilling decides at every event: schedule_interval_s must be 0")
    jobs = workload.jobs
    n = len(jobs)
    total = workload.nodes
    submit = [j.submit for j in jobs]
    est = [j.estimate for j in jobs]
    size = [j.size for j in jobs]
    run = [j.run if j.run <= j.estimate else j.estimate for j in jobs]
    start = [INF] * n
    end = [INF] * n
    res = [INF] * n  # the reservation each waiting job holds now
    first = [INF] * n  # the reservation it got at arrival (the guarantee)
    out = RawRun(start, end)
    out.reservation = first
    out.ran = run
    order = out.order
    killed = sum(1 for j in jobs if j.run > j.estimate)
    if killed:
        out.notes.append(f"{killed} jobs ran past their limit: killed at it (a reservation cannot stretch)")
    too_wide = [i for i in range(n) if size[i] > total]
    if too_wide:
        out.notes.append(f"{len(too_wide)} jobs are wider than the machine ({total} nodes): never started")

    aw = policy.age_weight / 3600.0
    sw = policy.size_weight
    if policy.kind == "fcfs":
        keys = [(submit[i], i) for i in range(n)]
    else:  # P = a*age_h + s*nodes: the order of P never changes with time (no PriorityMaxAge)
        keys = [(aw * submit[i] - sw * size[i], submit[i], i) for i in range(n)]

    t0 = submit[0] if n else 0.0
    prof = Profile(total, t0)
    queue: list[int] = []  # waiting jobs in priority order
    qkeys: list[tuple] = []
    ends: list[tuple[float, int]] = []  # heap (actual end, job)
    starts: list[tuple[float, int]] = []  # heap (reservation, job); stale entries skipped
    horizon = INF if max_time is None else t0 + max_time
    ai = 0
    done = 0
    events = 0
    compressions = 0
    moves = 0
    tick_every = 4096
    reserve = prof.reserve
    release = prof.release
    improve = prof.improve
    move = prof.move
    skipped = 0
    earliest = prof.earliest
    heappush, heappop = heapq.heappush, heapq.heappop

    while True:
        t = submit[ai] if ai < n else INF
        if ends and ends[0][0] < t:
            t = ends[0][0]
        while starts and (res[starts[0][1]] != starts[0][0]):
            heappop(starts)
        if starts and starts[0][0] < t:
            t = starts[0][0]
        if t == INF or t > horizon:
            break
        events += 1
        prof.advance(t)
        gained = False
        while ends and ends[0][0] <= t:
            _, i = heappop(ends)
            done += 1
            limit = start[i] + est[i]
            if limit > t:  # ended early: its unused time is free again
                release(t, limit, size[i])
                gained = True
        if gained and queue:
            compressions += 1
            # failed[(size, limit)] = h: a job of that shape holding h found nothing earlier, so
            # one holding h or later cannot start before h either (its window covers the other's
            # test window, and the profile there is the same): its search starts at h. A move
            # frees room from its old start on, so the entries past it are dropped.
            failed: dict[tuple[int, float], float] = {}
            for i in queue:
                r = res[i]
                if r <= t:
                    continue
                s = size[i]
                d = est[i]
                after = t
                if failed:
                    f = failed.get((s, d))
                    if f is not None and f <= r:
                        if f == r:
                            skipped += 1
                            continue
                        after = f
                nr = improve(s, d, r, after)
                if nr < r:
                    move(r, nr, d, s)
                    res[i] = nr
                    heappush(starts, (nr, i))
                    moves += 1
                    if failed:
                        failed = {k: v for k, v in failed.items() if v <= r}
                else:
                    f = failed.get((s, d))
                    if f is None or r > f:
                        failed[(s, d)] = r
        a0 = ai
        while ai < n and submit[ai] <= t:
            ai += 1
        new = range(a0, ai) if ai - a0 < 2 else sorted(range(a0, ai), key=keys.__getitem__)
        for i in new:  # in priority order
            s = size[i]
            if s > total:
                continue
            d = est[i]
            r = earliest(s, d, t)
            reserve(r, r + d, s)
            res[i] = first[i] = r
            k = keys[i]
            p = bisect_left(qkeys, k)
            qkeys.insert(p, k)
            queue.insert(p, i)
            heappush(starts, (r, i))
        while starts and starts[0][0] <= t:
            r, i = heappop(starts)
            if res[i] != r:
                continue  # moved since (an earlier entry of its own is in the heap)
            res[i] = -INF  # started: no entry of its own is valid any more
            start[i] = t
            order.append(i)
            e = t + run[i]
            end[i] = e
            heappush(ends, (e, i))
            p = bisect_left(qkeys, keys[i])
            del qkeys[p], queue[p]
        if progress is not None and events % tick_every == 0:
            progress(done, n)
    out.events = events
    out.passes = compressions
    out.unfinished = sum(1 for x in end if x == INF)
    out.notes.append(
        f"{compressions:,} compressions moved {moves:,} reservations earlier "
        f"({skipped:,} looks skipped: a job of the same shape holding the same start found nothing earlier)"
    )
    if progress is not None:
        progress(done, n)
    return out
