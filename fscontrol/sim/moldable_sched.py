"""The moldable scheduler: submit-time (conservative) and schedule-time (aggressive) strategies
over the availability profile (:class:`fscontrol.sim.profile.Profile`).

Every decision uses the scheduler's knowledge only: the user's request (the estimate) moved to
the chosen size by Downey's model; the job then runs its actual trace run time moved the same
way. Sizes are nodes.

Submit-time (``Strategy.when == "submit"``; rigid-cons, greedy, wpfs-cons). At its arrival a job
tries each candidate size (at most its fair-share limit) against the profile (running jobs to
their estimated ends, and every waiting job's reservation), takes the size with the earliest
estimated completion (ties: the smaller size) and keeps that reservation: conservative backfill.
When a job ends before its estimate, its nodes are released and the waiting jobs, in arrival
order, each move to the earliest start the profile now allows (never later: "compression";
sizes stay frozen). A job starts when its reservation comes.

Schedule-time (``when == "schedule"``; rigid-easy, wpfs, sqrtfs*). At every event time one pass
walks the waiting jobs in arrival order. For each job: its limit from the jobs in the system
now, its best size and start (earliest completion) against the profile of running jobs plus the
reservations made earlier in this pass. Best start now: it starts. Otherwise, if it is entitled
to a reservation (the first waiting job: ``head``; the first of its weight category:
``category``; Xfactor over the threshold: ``xfactor``), the profile keeps that reservation for
the rest of the pass; else it waits. The pass's reservations are dropped at its end (they are
recomputed at the next event: sizes are chosen at start time).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any

from .moldable import (
    CATEGORY_EDGES,
    MoldParams,
    Strategy,
    candidate_sizes,
    category_of,
    downey_speedup,
    size_range,
    sqrt_limit,
    wpfs_limit,
)
from .profile import Profile
from .workload import Workload

INF = math.inf


@dataclass
class MoldRun:
    """Per job (aligned with ``workload.jobs``): chosen size, start, end, actual and estimated run."""

    size: list[int]
    start: list[float]
    end: list[float]
    run: list[float]
    estimate: list[float]
    events: int = 0
    passes: int = 0
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class _Jobs:
    """The moldable view of a workload's jobs (columns)."""

    def __init__(self, w: Workload, params: MoldParams, strategy: Strategy) -> None:
        N = w.nodes
        self.N = N
        jobs = w.jobs
        n = len(jobs)
        lf = params.lf
        self.submit = [j.submit for j in jobs]
        self.n0 = [j.size for j in jobs]
        self.run0 = [j.run * lf for j in jobs]
        self.est0 = [(j.estimate if params.estimates == "user" else j.run) * lf for j in jobs]
        self.A = [params.A_for(j.size, N) for j in jobs]
        self.sigma = params.sigma
        if strategy.moldable:
            rng = [size_range(j.size, N, params.rf) for j in jobs]
        else:
            rng = [(j.size, j.size) for j in jobs]
        self.lo = [r[0] for r in rng]
        self.hi = [r[1] for r in rng]
        self.cands = [candidate_sizes(lo, hi, n0) for (lo, hi), n0 in zip(rng, self.n0)]
        # the scheduler's weight: requested processor(node)-seconds at the trace size
        self.weight = [e * s for e, s in zip(self.est0, self.n0)]
        self.sqrtw = [math.sqrt(x) for x in self.weight]
        self.parallel = [s > 1 for s in self.n0]
        # expected sequential run time (from the request): est0 * S(n0) / S(1)
        self.esrt = [e * downey_speedup(s, a, self.sigma) for e, s, a in zip(self.est0, self.n0, self.A)]
        # reservation categories: the requested processor-seconds, in the report's decade bins
        ppn = int(w.meta.get("procs_per_node", 1) or 1)
        self.wcat = [category_of(x * ppn) for x in self.weight]
        self._sp: dict[tuple[float, int], float] = {}
        self.n = n

    def S(self, i: int, n: int) -> float:
        key = (self.A[i], n)
        v = self._sp.get(key)
        if v is None:
            v = self._sp[key] = downey_speedup(n, self.A[i], self.sigma)
        return v

    def est_at(self, i: int, n: int) -> float:
        n0 = self.n0[i]
        return self.est0[i] if n == n0 else self.est0[i] * self.S(i, n0) / self.S(i, n)

    def run_at(self, i: int, n: int) -> float:
        n0 = self.n0[i]
        return self.run0[i] if n == n0 else self.run0[i] * self.S(i, n0) / self.S(i, n)


def _best(J: _Jobs, i: int, cap: int, prof: Profile, t: float) -> tuple[float, int, float]:
    """(start, size, estimated duration) with the earliest estimated completion among the
    candidate sizes up to ``cap`` (at least the range's minimum); ties go to the smaller size."""
    best_c = INF
    best = (INF, J.lo[i], 0.0)
    lo = J.lo[i]
    if cap < lo:
        cap = lo
    sizes = [s for s in J.cands[i] if s <= cap]
    if cap <= J.hi[i] and cap not in J.cands[i]:
        sizes.append(cap)
    for s in sizes:
        d = J.est_at(i, s)
        by = best_c - d  # a start from here on cannot beat the best so far (``earliest`` returns it unchecked)
        st = prof.earliest(s, d, t, by)
        if st < by:
            best_c = st + d
            best = (st, s, d)
    return best


def _fit_now(J: _Jobs, i: int, cap: int, free_now: int, prof: Profile, t: float) -> tuple[float, int, float]:
    """A backfill candidate: the largest size (candidates, plus the most that is free or allowed)
    that fits now without touching a reservation: (t, size, duration), or (inf, ..) if none."""
    lo = J.lo[i]
    if cap < lo:
        cap = lo
    m = min(cap, free_now, J.hi[i])
    if m < lo:
        return INF, lo, 0.0
    sizes = [s for s in J.cands[i] if s <= m]
    if not sizes or sizes[-1] != m:
        sizes.append(m)
    for s in reversed(sizes):
        d = J.est_at(i, s)
        if prof.min_free(t, t + d) >= s:
            return t, s, d
    return INF, lo, 0.0


def simulate_moldable(workload: Workload, strategy: Strategy, params: MoldParams | None = None) -> MoldRun:
    """Run ``strategy`` on ``workload`` (jobs sorted by submit time) and return the per-job outcome."""
    params = params or MoldParams()
    t_wall = time.perf_counter()
    J = _Jobs(workload, params, strategy)
    n = J.n
    N = J.N
    size = list(J.n0)
    start = [INF] * n
    end = [INF] * n
    run = [0.0] * n
    est = [0.0] * n
    out = MoldRun(size, start, end, run, est)
    if n == 0:
        return out
    t0 = J.submit[0]
    prof = Profile(N, t0)
    heap: list[tuple[float, int]] = []  # (actual end, job)
    queue: list[int] = []  # waiting jobs, arrival order
    limit_kind = strategy.limit
    # sums over the jobs in the system (waiting and running) for the fair-share limits
    # (weights, their roots, the roots of the parallel jobs) over the jobs the limits count: in the
    # system (waiting and running: params.share_over == "system") or waiting only ("queue")
    sums = [0.0, 0.0, 0.0]
    leave_at_start = params.share_over == "queue"

    def count(i: int, sign: float) -> None:
        sums[0] += sign * J.weight[i]
        sums[1] += sign * J.sqrtw[i]
        if J.parallel[i]:
            sums[2] += sign * J.sqrtw[i]

    def limit_of(i: int) -> int:
        if limit_kind == "none":
            return J.hi[i]
        if limit_kind == "wpfs":
            return wpfs_limit(J.weight[i], sums[0], N)
        if limit_kind == "sqrt":
            return sqrt_limit(J.weight[i], sums[1], N)
        # parallel jobs only in the sum; a serial job is counted with them for its own limit
        return sqrt_limit(J.weight[i], sums[2] if J.parallel[i] else sums[2] + J.sqrtw[i], N)

    def begin(i: int, t: float, s: int, d: float, reserved: bool) -> None:
        """Start job i at t on s nodes; ``reserved``: its [t, t+d) is already taken in the profile."""
        size[i] = s
        start[i] = t
        r = J.run_at(i, s)  # <= d: the workload's run never exceeds its request, both scale alike
        run[i] = r
        est[i] = d
        end[i] = t + r
        if not reserved:
            prof.reserve(t, t + d, s)
        heapq.heappush(heap, (t + r, i))
        if leave_at_start:
            count(i, -1.0)

    ai = 0
    events = passes = 0
    submit = J.submit
    if strategy.when == "submit":
        res_start = [INF] * n  # reservation start of a waiting job
        res_dur = [0.0] * n
        while ai < n or heap or queue:
            t = INF
            if ai < n:
                t = submit[ai]
            if heap and heap[0][0] < t:
                t = heap[0][0]
            if queue:
                w = min(res_start[i] for i in queue)
                if w < t:
                    t = w
            if t == INF:  # pragma: no cover - a waiting job always has a finite reservation
                break
            events += 1
            ended = False
            while heap and heap[0][0] <= t:
                e, i = heapq.heappop(heap)
                if e < start[i] + est[i]:  # ended early: its unused time is free again
                    prof.release(e, start[i] + est[i], size[i])
                    ended = True
                if not leave_at_start:
                    count(i, -1.0)
            prof.advance(t)
            if ended and queue:  # compression after an early end, in arrival order
                passes += 1
                for i in queue:
                    s, d, r0 = size[i], res_dur[i], res_start[i]
                    prof.release(r0, r0 + d, s)
                    r1 = prof.earliest(s, d, t, r0)
                    prof.reserve(r1, r1 + d, s)
                    res_start[i] = r1
            # arrivals
            while ai < n and submit[ai] <= t:
                i = ai
                ai += 1
                count(i, 1.0)
                cap = limit_of(i) if limit_kind != "none" else J.hi[i]
                st, s, d = _best(J, i, cap, prof, t)
                size[i] = s
                res_start[i] = st
                res_dur[i] = d
                prof.reserve(st, st + d, s)
                queue.append(i)
            # starts
            if queue:
                keep = []
                for i in queue:
                    if res_start[i] <= t:
                        begin(i, t, size[i], res_dur[i], True)
                    else:
                        keep.append(i)
                queue = keep
    else:
        head, use_cat, use_xf = strategy.head, strategy.category, strategy.xfactor
        thr = params.xfactor
        backfill_now = params.backfill == "now"
        esrt = J.esrt
        wcat = J.wcat
        while ai < n or heap:
            t = INF
            if ai < n:
                t = submit[ai]
            if heap and heap[0][0] < t:
                t = heap[0][0]
            events += 1
            while heap and heap[0][0] <= t:
                e, i = heapq.heappop(heap)
                if e < start[i] + est[i]:
                    prof.release(e, start[i] + est[i], size[i])
                if not leave_at_start:
                    count(i, -1.0)
            prof.advance(t)
            while ai < n and submit[ai] <= t:
                i = ai
                ai += 1
                queue.append(i)
                count(i, 1.0)
            if not queue:
                continue
            passes += 1
            temp: list[tuple[float, float, int]] = []
            started: set[int] = set()
            seen_cat: set[int] = set()
            head_used = not head
            free_now = prof.free_at(t)
            for i in queue:
                if free_now == 0:
                    break  # nothing starts now: this pass's reservations would protect nothing
                c = wcat[i]
                entitled = (not head_used) or (use_cat and c not in seen_cat) or (
                    use_xf and (esrt[i] + (t - submit[i])) > thr * esrt[i]
                )
                if not entitled and J.lo[i] > free_now:
                    continue
                cap = limit_of(i)
                if entitled or not backfill_now:
                    st, s, d = _best(J, i, cap, prof, t)
                else:
                    st, s, d = _fit_now(J, i, cap, free_now, prof, t)
                if st <= t:
                    begin(i, t, s, d, False)
                    started.add(i)
                    free_now = prof.free_at(t)
                    continue
                if entitled and st < INF:
                    prof.reserve(st, st + d, s)
                    temp.append((st, st + d, s))
                head_used = True  # the head (of the queue, of a category) is the first job that waits
                seen_cat.add(c)
            for a, b, s in temp:
                prof.release(a, b, s)
            if started:
                queue = [i for i in queue if i not in started]
    out.events, out.passes = events, passes
    out.wall_s = time.perf_counter() - t_wall
    out.extra = {"categories": list(CATEGORY_EDGES)}
    return out

