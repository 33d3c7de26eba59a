"""The start estimate's planner as it was before the cost work (issue #32 item 4, main at ff430af):
`backfill_starts` (fscontrol/sim/slurmsched.py) and `_plan` (fscontrol/forecast/start.py), verbatim,
kept here as the reference the faster planner is compared with (tests/test_start_equivalence.py).
Not part of the package."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
import math
from bisect import bisect_left, insort

from fscontrol.sim.slurmsched import SlurmSched, whole_nodes


def ref_backfill_starts(t: float, queue: list[int], free: int, running: list[tuple[float, int]], size: list[int],
                    est: list[float], total: int, sc: SlurmSched, mask: int = -1, smallest: int = 0,
                    completing: list[tuple[float, int]] | None = None) -> list[int]:
    """One backfill cycle at t: the jobs it starts now (indices, in the order it starts them).
    `queue`: the pending jobs in priority order (their indices, or keys whose `mask` bits are the
    index); `running`: (end = start + time limit, index) of the running jobs, sorted; `free`: the
    CPUs free now; `smallest`: no pending job is smaller (the cycle ends once fewer CPUs are free);
    `completing`: (when its CPUs are free, CPUs) of the jobs ended but not yet completed.

    As backfill.c does it: a job may start at the earliest time T >= now when the running jobs
    (ending at their limits, the select plugin's will-run test) leave its CPUs free and no
    reservation of this cycle holds its nodes in [T, T + limit] (both ends included). T = now:
    it starts (and runs on as a running job). Later, within bf_window: its nodes are reserved
    from T to T + limit, both rounded DOWN to a multiple of bf_resolution (from the epoch),
    the start no earlier than now and the reservation at least one bf_resolution long."""
    res = sc.bf_resolution_s
    horizon = t + sc.bf_window_s
    busy: list[tuple[float, int]] | None = None  # (end, size), sorted: running, and started by this cycle
    cum: list[int] = []  # the CPUs free once busy[0..m] have ended, by m
    resv: list[tuple[float, float, int]] = []  # (begin, end, CPUs held)
    out: list[int] = []
    nc = sc.node_cpus
    nq = min(len(queue), sc.bf_max_job_test)
    for k in range(nq):
        if free < smallest:
            break  # nothing more starts in this cycle
        i = queue[k] & mask
        s = size[i]
        d = est[i]
        # the earliest time the jobs running (to their limits) leave s CPUs free: the end of the
        # first of them (by end) after which the CPUs freed are enough (jobs ending together: the
        # same time)
        T = t
        if free < s:
            if busy is None:
                busy = [(e, size[j]) for e, j in running]
                if completing:
                    busy = sorted(busy + completing)
            if not cum:
                f = free
                for _, sz in busy:
                    f += sz
                    cum.append(f)
            m = bisect_left(cum, s)
            if m == len(cum):
                continue
            T = busy[m][0]
        # no reservation may hold its nodes in [T, T + d]: past the ones that do
        while resv:
            held = 0
            nxt = math.inf
            for b, e, w in resv:
                if e > T and b <= T + d:
                    held += w
                    if e < nxt:
                        nxt = e
            if total - held >= s:
                break
            T = nxt
        if T <= t:
            out.append(i)
            free -= s
            if busy is None:
                busy = [(e, size[j]) for e, j in running]
                if completing:
                    busy = sorted(busy + completing)
            insort(busy, (t + d, s))
            cum = []
            continue
        if T > horizon:
            continue  # too far in the future: no reservation
        b = max(t, math.floor(T / res) * res)
        e = math.floor((T + d) / res) * res
        if e < b + res:
            e = b + res
        resv.append((b, e, whole_nodes(s, nc, total)))
    return out


def ref_plan(now: float, running: Sequence[tuple[float, float, int]], pending: Sequence[tuple[float, float, int, float]],
          total: int, sc: SlurmSched, blocked: int, stop_after: set[int] | None, horizon: float) -> dict[int, float]:
    """Start times of the pending jobs (by index): `running` (real end, end at its limit, CPUs),
    `pending` in priority order (run time, limit, CPUs, not before), `blocked` CPUs never free.
    Stops once every job of `stop_after` has started (or at the horizon). Backfill cycles run
    within `bf_window` of now; past it every job that fits starts (first fit, a cheap stand-in
    for backfill without reservations; the cost: docs/start.md)."""
    n = len(pending)
    size = [p[2] for p in pending]
    limit = [p[1] for p in pending]
    est = limit
    psize = size[:]  # by key: pending jobs 0..n-1, then the running ones
    live: dict[int, float] = {}  # running key -> its end at the limit (what backfill plans with)
    ends: list[tuple[float, int]] = []  # (real end, key)
    free = total - blocked
    for e, le, c in running:
        k = len(psize)
        psize.append(c)
        live[k] = max(le, e, now)
        ends.append((max(now, e), k))
        free -= c
    heapq.heapify(ends)
    started: dict[int, float] = {}
    waiting = list(range(n))
    need = set(stop_after) if stop_after is not None else None
    t = now
    next_bf = now + sc.bf_interval_s / 2  # the cycle's phase is not known: half an interval on average
    next_main = now + sc.sched_interval_s / 2
    bf_until = now + sc.bf_window_s
    changed = True
    endt = now + horizon
    begins = any(p[3] > now for p in pending)
    smallest = min(size) if size else 0

    def start(i: int, at: float) -> None:
        nonlocal free
        started[i] = at
        free -= size[i]
        heapq.heappush(ends, (at + pending[i][0], i))
        live[i] = at + limit[i]

    while waiting and t <= endt and (need is None or need):
        got = 0
        depth = 0
        for i in waiting:  # the main scheduler: the prefix that fits
            if (depth > sc.default_queue_depth and t < bf_until) or free < smallest:
                break
            if i in started or pending[i][3] > t:
                continue  # (a job whose begin is ahead is not in the queue)
            depth += 1
            if size[i] > free:
                if t < bf_until:
                    break
                continue  # past bf_window: every job that fits starts (first fit; no backfill cycle)
            start(i, t)
            got += 1
        if t >= next_bf and t < bf_until:
            if changed and sc.backfill and free >= smallest:
                elig = []
                for i in waiting:
                    if i not in started and pending[i][3] <= t:
                        elig.append(i)
                        if len(elig) >= sc.bf_max_job_test:
                            break
                small = min((size[i] for i in elig), default=free + 1)
                # a cycle's reservations are dropped at its end: one that can start nothing is skipped
                run = sorted((max(e, t), k) for k, e in live.items()) if free >= small else []
                for i in (ref_backfill_starts(t, elig, free, run, psize, est, total - blocked, sc, smallest=small)
                          if free >= small else ()):
                    start(i, t)
                    got += 1
            changed = False
            next_bf = t + sc.bf_interval_s
        if got:
            if len(started) * 4 > len(waiting) or waiting[0] in started:
                waiting = [i for i in waiting if i not in started]
            changed = True
            if need is not None:
                need.difference_update(started.keys() & need)
        if not waiting or (need is not None and not need):
            break
        nxt = min(next_bf if t < bf_until else math.inf, next_main, ends[0][0] if ends else math.inf)
        nb = math.inf
        if begins:
            for i in waiting[:50]:
                if pending[i][3] > t:
                    nb = min(nb, pending[i][3])
            nxt = min(nxt, nb)
        if nxt == math.inf:
            break
        t = max(nxt, t)
        if nb <= t:
            changed = True  # a begin time passed (2026-11-27, as start._plan: the next backfill cycle runs)
        while ends and ends[0][0] <= t:
            _, k = heapq.heappop(ends)
            free += psize[k]
            live.pop(k, None)
            changed = True
        if t >= next_main:
            next_main = t + sc.sched_interval_s
    return started
