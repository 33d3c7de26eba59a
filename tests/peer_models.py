"""Reference schedulers for the simulator's tests: a naive EASY, and replicas of what peer
simulators actually do under the name "EASY backfilling".

The naive EASY checks the engine's fast path start for start. The replicas explain, by
measurement, why peers report a lower mean wait on the SDSC Blue Horizon log than our EASY does
(docs/simulator.md, "Check 1"); they model other tools' behaviour, not policies of ours.
"""

from __future__ import annotations

import heapq
import math

from fscontrol.sim.metrics import group_metrics
from fscontrol.sim.workload import SimJob, Workload


def schedule_metrics(w: Workload, starts: list[float], lo: int = 1, hi: int = 10**9) -> dict:
    """The simulator's own metrics (fscontrol.sim.metrics) of a schedule, for jobs of lo..hi nodes."""
    jobs = w.jobs
    idx = [i for i, j in enumerate(jobs) if lo <= j.size <= hi]
    run = [j.run for j in jobs]
    end = [s + r for s, r in zip(starts, run)]
    return group_metrics(idx, [j.submit for j in jobs], starts, end, run, [j.size for j in jobs])


def naive_easy(jobs, nodes, *, by_run_time=False):
    """A slow, obvious EASY: scan everything at every event time (reference for the fast engine).

    by_run_time: decide backfill by each candidate's actual run time instead of its request,
    as CQSim does (see :func:`cqsim_easy`); running jobs' ends are still predicted from requests.
    """
    pending = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, i))
    start = [math.inf] * len(jobs)
    running = []  # (end, predicted end, size)
    queue = []
    free = nodes
    k = 0
    while k < len(pending) or queue or running:
        times = [e for e, _, _ in running]
        if k < len(pending):
            times.append(jobs[pending[k]].submit)
        t = min(times)
        for r in [r for r in running if r[0] <= t]:
            running.remove(r)
            free += r[2]
        while k < len(pending) and jobs[pending[k]].submit <= t:
            queue.append(pending[k])
            k += 1

        def go(i, t=t):
            nonlocal free
            j = jobs[i]
            start[i] = t
            running.append((t + j.run, t + j.estimate, j.size))
            free -= j.size
            queue.remove(i)

        while queue and jobs[queue[0]].size <= free:
            go(queue[0])
        if not queue:
            continue
        head = jobs[queue[0]]
        avail = free
        shadow, extra = math.inf, 0
        for pe, _, s in sorted((r[1], i, r[2]) for i, r in enumerate(running)):
            avail += s
            if avail >= head.size:
                shadow = pe
                break
        # extra: what is free at the shadow time, every job predicted to end by then counted
        extra = free + sum(s for _, pe, s in running if pe <= shadow) - head.size
        for i in list(queue[1:]):
            j = jobs[i]
            if j.size <= free:
                if t + (j.run if by_run_time else j.estimate) <= shadow:
                    go(i)
                elif j.size <= extra:
                    extra -= j.size
                    go(i)
    return start


class _Machine:
    """Event bookkeeping for a replica: arrivals in submit order, ends, free nodes."""

    def __init__(self, jobs: list[SimJob], nodes: int):
        self.jobs = jobs
        self.order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, i))
        self.start = [math.inf] * len(jobs)
        self.ends: list[tuple[float, int]] = []  # (actual end, job)
        self.running: dict[int, tuple[float, int]] = {}  # job -> (estimated end, size)
        self.queue: list[int] = []  # waiting jobs in submit order
        self.free = nodes
        self.k = 0

    def busy(self) -> bool:
        return self.k < len(self.order) or bool(self.ends)

    def advance(self) -> float:
        """Move to the next event time: finish the jobs that end, queue the ones that arrive."""
        jobs, order = self.jobs, self.order
        t = min(jobs[order[self.k]].submit if self.k < len(order) else math.inf, self.ends[0][0] if self.ends else math.inf)
        while self.ends and self.ends[0][0] <= t:
            _, i = heapq.heappop(self.ends)
            self.free += self.running.pop(i)[1]
        while self.k < len(order) and jobs[order[self.k]].submit <= t:
            self.queue.append(order[self.k])
            self.k += 1
        return t

    def launch(self, i: int, t: float) -> None:
        j = self.jobs[i]
        self.free -= j.size
        self.start[i] = t
        self.running[i] = (t + j.estimate, j.size)
        heapq.heappush(self.ends, (t + j.run, i))


def cqsim_easy(jobs: list[SimJob], nodes: int) -> list[float]:
    """EASY as CQSim (SPEAR-UIC/CQSim, master) decides backfill; returns start times.

    CQSim predicts running jobs' ends from their requests, but its backfill tests each
    candidate with its *actual* run time (``Cqsim_sim.backfill`` passes ``'run'``, SWF field
    4, to ``Backfill.backfill_EASY``): a job that asked for 10 hours and ran 5 minutes
    backfills as a 5-minute job. That is an oracle no scheduler has. Otherwise plain EASY
    (FCFS, one reservation, extra nodes at the shadow time). CQSim's own event handling (one
    pass per event, not per time) is not replicated.
    """
    return naive_easy(jobs, nodes, by_run_time=True)


def accasim_ebf(jobs: list[SimJob], nodes: int) -> list[float]:
    """AccaSim 1.1.3 ``EASYBackfilling`` + ``FirstFit``, step for step; returns start times.

    What it does differently from EASY (accasim/base/scheduler_class.py, 1.1.3):
    - the blocked head job gets a reservation time from the running jobs' estimated ends, but
      the backfill call passes ``reserved_nodes=[]``, so no node is ever kept for it: every
      later job that fits now starts, however long it runs;
    - the head job is tried again only once that reservation time has come (not when nodes
      free up earlier), and the reservation is never recomputed after it passed.
    Narrow jobs flow past a wide head job that waits until, at one event, enough nodes happen
    to be free before the backfill takes them.

    Nodes are counted, not placed: AccaSim places processors anywhere (first fit), and every
    processor count in the SDSC log is a multiple of 8, so a node count is the same model.
    """
    m = _Machine(jobs, nodes)
    blocked: int | None = None
    res_time: float | None = None

    def reservation_time(size: int) -> float:
        avail = m.free
        for est_end, s in sorted(m.running.values()):
            avail += s
            if avail >= size:
                return est_end
        raise AssertionError("the machine is smaller than a job")

    while m.busy():
        t = m.advance()
        if not m.queue:
            continue
        q = m.queue
        started: set[int] = set()
        time_reached = False
        if res_time is not None and res_time <= t:  # the head job's turn has come
            time_reached = True
            head, q = q[0], q[1:]
            if jobs[head].size <= m.free:
                m.launch(head, t)
                started.add(head)
                blocked = res_time = None
        to_fill: list[int] = []
        if blocked is None and q:
            for n, i in enumerate(q):  # FIFO until the first job that does not fit
                if jobs[i].size <= m.free:
                    m.launch(i, t)
                    started.add(i)
                else:
                    blocked = i
                    if res_time is None:
                        res_time = reservation_time(jobs[i].size)
                    to_fill = q[n + 1 :]
                    break
        else:
            to_fill = q if time_reached else q[1:]
        for i in to_fill:  # backfill: reserved_nodes=[], so only "fits now" is tested
            if jobs[i].size <= m.free:
                m.launch(i, t)
                started.add(i)
        if started:
            m.queue = [i for i in m.queue if i not in started]
    return m.start


def naive_conservative(jobs: list[SimJob], nodes: int, key=None) -> tuple[list[float], list[float]]:
    """A slow, obvious conservative backfilling (reference for fscontrol.sim.conservative).

    The reservations are a plain list of (start, end, size); free nodes at an instant are counted
    by summing over it; the earliest start is tried at every point where something ends. Same
    rules as the engine: at each event time, ends (an early end gives back the rest of its
    limit), then one compression in priority order if anything ended early (each waiting job
    drops its reservation and takes the earliest start from now, which is never later), then
    arrivals in priority order get the earliest start, then every job whose reservation is now
    starts. Jobs run at most their limit. key(i): priority order (default: submit time).
    Returns (start times, reservations at arrival).
    """
    n = len(jobs)
    key = key or (lambda i: (jobs[i].submit, i))
    run = [min(j.run, j.estimate) for j in jobs]
    start = [math.inf] * n
    first = [math.inf] * n
    booked: dict[int, tuple[float, float, int]] = {}  # job -> (start, end, size): running or reserved
    waiting: list[int] = []
    arrivals = sorted(range(n), key=lambda i: (jobs[i].submit, i))
    a = 0
    ended: set[int] = set()

    def free_at(t, skip=None):
        return nodes - sum(s for j, (b, e, s) in booked.items() if j != skip and b <= t < e)

    def earliest(i, t):
        j = jobs[i]
        points = sorted({t} | {e for b, e, _ in booked.values() if e > t} | {b for b, _, _ in booked.values() if b > t})
        for c in points:
            inside = [c] + [p for p in points if c < p < c + j.estimate]
            if all(free_at(p, skip=i) >= j.size for p in inside):
                return c
        raise AssertionError("no start found")

    while True:
        cands = [jobs[arrivals[a]].submit] if a < n else []
        cands += [start[i] + run[i] for i in booked if start[i] != math.inf and i not in ended]
        cands += [booked[i][0] for i in waiting]
        if not cands:
            break
        t = min(cands)
        early = False
        for i in [i for i in booked if start[i] != math.inf and i not in ended and start[i] + run[i] <= t]:
            ended.add(i)
            del booked[i]
            early |= start[i] + jobs[i].estimate > t
        if early:
            for i in sorted(waiting, key=key):
                b = earliest(i, t)
                booked[i] = (b, b + jobs[i].estimate, jobs[i].size)
        new = []
        while a < n and jobs[arrivals[a]].submit <= t:
            new.append(arrivals[a])
            a += 1
        for i in sorted(new, key=key):
            if jobs[i].size > nodes:
                continue
            b = earliest(i, t)
            booked[i] = (b, b + jobs[i].estimate, jobs[i].size)
            first[i] = b
            waiting.append(i)
        for i in [i for i in waiting if booked[i][0] <= t]:
            assert booked[i][0] == t
            start[i] = t
            waiting.remove(i)
    return start, first


def cqsim_conservative(jobs: list[SimJob], nodes: int, *, by_run_time: bool = True) -> list[float]:
    """Conservative backfilling as CQSim (SPEAR-UIC/CQSim master, ``-b 2``) decides it; returns start times.

    ``Backfill.backfill_cons``: at every scheduling pass, once the queue's head does not fit, the
    profile is rebuilt from the running jobs (their ends predicted from their requests) and every
    waiting job, in queue order (FCFS), gets a reservation at the earliest time it fits; a job
    that fits from now on starts now. Two differences from conservative backfilling as the
    papers define it (and as fscontrol.sim.conservative does it): the waiting jobs are placed by
    their *actual* run time (SWF field 4, ``'run'``), an oracle, as in CQSim's EASY; and nothing
    is kept between passes, so a job has no reservation to hold: each pass re-plans from scratch
    in queue order (which can put a job later than the previous pass did). CQSim's per-event
    (rather than per-instant) passes are not replicated. by_run_time=False: the same passes with
    the requests (to tell the two differences apart).
    """
    from fscontrol.sim.profile import Profile

    m = _Machine(jobs, nodes)
    while m.busy():
        t = m.advance()
        q = m.queue
        started: set[int] = set()
        k = 0
        while k < len(q) and jobs[q[k]].size <= m.free:
            m.launch(q[k], t)
            started.add(q[k])
            k += 1
        if k < len(q):
            prof = Profile(nodes, t)
            for est_end, s in m.running.values():  # the ones just started too
                prof.reserve(t, est_end, s)
            for n, i in enumerate(q[k:]):
                j = jobs[i]
                d = j.run if by_run_time else j.estimate
                r = prof.earliest(j.size, d, t)
                prof.reserve(r, r + d, j.size)
                if n and r == t:
                    m.launch(i, t)
                    started.add(i)
        if started:
            m.queue = [i for i in m.queue if i not in started]
    return m.start
