"""When will my job start: every pending job's start estimated from the live queue (issue #32 item 4).

The estimate plays the queue forward through Slurm's own scheduler model (sim/slurmsched.py: the main scheduler
on each job end and every `sched_interval`, stopping at the first job that does not fit; backfill every
`bf_interval` planning with time limits, whole-node reservations at `bf_resolution` within `bf_window`, at most
`bf_max_job_test` jobs, SchedulerParameters' per-user, -association and -partition limits and
bf_max_job_start; the main pass's sched_max_job_start), parameters from `scontrol show config`'s
SchedulerParameters:

* running jobs end at start + each user's typical fraction of the limit (the median of ElapsedRaw / TimelimitRaw
  over their jobs ended in sacct's window), pending jobs run that long too; a user with no history runs to the
  limit. The scheduler itself plans with the limits, as slurmctld's backfill does.
* the range: that run and the same run with every job running to its limit (what `squeue --start` assumes).
* pending jobs in the order of the priorities squeue shows now, re-sorted at each priority pass within bf_window as
  the age term grows and fair-share is charged (startfs.py: classic or Fair Tree). One pool of CPUs (startparts.py
  plays partitions on separate nodes apart); a job's GPUs count as their share of the CPUs; advance reservations.
* a job pending on a dependency on running jobs is played from the moment it is met (startdeps.py); the association
  and QOS limits on running jobs and CPUs hold jobs back as slurmctld does (startlimits.py); a job that cannot
  start for another reason than resources and priority (held, another limit, ...) gets that reason.
* PrivateData=jobs (a user who is not an operator): squeue shows that user's jobs alone. The estimate then uses
  only those and treats the CPUs others use now (sinfo's allocated count) as busy through the horizon: a job that
  needs them gets no estimate ("depends on jobs PrivateData hides"), so nothing about hidden jobs is revealed.

Pure: no Slurm, no clock (`now` is given); `read_live` runs the commands.
"""

from __future__ import annotations

import heapq
import math
import os
from bisect import bisect_left, insort
from itertools import filterfalse, islice
from collections.abc import Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field, replace

from fscontrol.errors import EstimateTooCostly, ParseError, SlurmCommandError
from fscontrol.forecast import resvplan, startdeps, startfs, startlimits, startparts
from fscontrol.forecast.startqueue import (  # noqa: F401  (start.X: the readers, re-exported)
    SACCT_FRACTION_ARGS, SINFO_CPUS_ARGS, SINFO_GPU_ARGS, SQUEUE_GPU_ARGS, SQUEUE_START_ARGS, WAITING, StartJob, gpu_count,
    selection,
    age_params, parse_fractions, parse_job_gpus, parse_queue, parse_sinfo, parse_sinfo_gpus, pending_row, read_prio_thresh)
from fscontrol.sim.slurmsched import SlurmSched, backfill_starts, bf_tested
from fscontrol.slurm import jobid

HORIZON_S = 7 * 86400.0


@dataclass(slots=True)
class Estimate:
    job_id: str
    user: str
    start: float | None = None
    early: float | None = None
    late: float | None = None
    reason: str = ""  # why no estimate, when start is None
    squeue_start: float | None = None
    extra: dict = field(default_factory=dict)


def _plan(now: float, running: Sequence[tuple[float, float, int]], pending: Sequence[tuple[float, float, int, float]],
          total: int, sc: SlurmSched, blocked: int, stop_after: set[int] | None, horizon: float,
          owners: tuple[Sequence[str], Sequence[str], Sequence[str]] | None = None, wins: Sequence = (), pmember: Sequence[int] | None = None,
          rmember: Sequence[int] | None = None, why: dict[int, int] | None = None,
          aging: tuple[float, float, float, Sequence[float], Sequence[float]] | None = None,
          fs: startfs.Bound | None = None,
          reserve: tuple[Sequence[float], Sequence[float], Sequence[int]] | None = None,
          limits: startlimits.Counts | None = None) -> dict[int, float]:
    """Start times of the pending jobs (by index): `running` (real end, end at its limit, CPUs),
    `pending` in priority order (run time, limit, CPUs, not before), `blocked` CPUs never free.
    Stops once every job of `stop_after` has started (or at the horizon). Backfill cycles run
    within `bf_window` of now; past it every job that fits starts (first fit, a cheap stand-in
    for backfill without reservations; the cost: docs/start.md). `owners`: each pending job's
    user, account and partition (three lists), for SchedulerParameters' per-user, -association and
    -partition limits (slurmsched.bf_tested: a user's jobs past bf_max_job_user in a cycle are
    skipped, and do not count towards `bf_max_job_test`). `wins`: the advance reservations (resvplan.Window),
    `pmember` / `rmember` the window each pending / running job is in (-1: none); `why` gets, for
    a job a reservation kept from starting when CPUs were free, that window's index. `aging`:
    (PriorityWeightAge, PriorityMaxAge s, PriorityCalcPeriod s, each pending job's priority now,
    its eligible time): at each priority pass within bf_window the age term grows and the queue is
    re-sorted (only where that can change the order: some job at the maximum age, some not). `fs`:
    classic fair-share charged and decayed at those passes too (startfs.Passes). `reserve`: each
    pending job's eligible time, priority now and MinPrioThreshold (its QOS's, 0 for none), for
    bf_min_age_reserve and bf_min_prio_reserve (a job's own threshold in place of the latter, as
    acct_policy_get_prio_thresh's value is read): backfill makes no plan for a job younger or below
    (it starts now or not at all), and the main pass does not stop at one that does not fit
    (job_scheduler.c `fail_by_part = false`); the priority is squeue's of now, not as the age term
    grows. partition_job_depth: a main pass tests
    at most that many jobs of one partition (`owners`' third list). `limits`: the association and QOS
    limits on running jobs and CPUs (startlimits.Counts, pending keys then `running`'s, nothing in
    use): a job that would put one over is passed by in the main pass and in backfill (no plan), and
    past bf_window waits for a job of that limit to end."""
    n = len(pending)
    size = [p[2] for p in pending]
    limit = [p[1] for p in pending]
    est = limit
    psize = size[:]  # by key: pending jobs 0..n-1, then the running ones
    live: dict[int, float] = {}  # running key -> its end at the limit (what backfill plans with)
    runs: list[tuple[float, int]] = []  # (live end, key), sorted: kept as jobs start and end
    ends: list[tuple[float, int]] = []  # (real end, key)
    free = total - blocked
    kmember = list(pmember) if pmember is not None else [-1] * n
    gate = startlimits.Gate(limits) if limits is not None else None
    ghx, ghd, gdowns = (gate.hx, gate.hd, gate.downs) if gate is not None else ([], [], [])
    holds = resvplan.Holds(wins, total - blocked, live, psize, kmember) if wins else None
    # the begins of the reservations with pending jobs in them: slurmctld starts those jobs as a
    # reservation begins (seen on the testbed: at its StartTime to the second)
    wbegins = sorted({wins[m].begin for m in kmember[:n] if m >= 0}) if wins else []
    for no, (e, le, c) in enumerate(running):
        k = len(psize)
        psize.append(c)
        kmember.append(rmember[no] if rmember is not None else -1)
        if gate is not None:
            gate.add(k)
        if not c:  # no CPUs here (startparts: another pool's job, charged by fair-share alone): its end frees nothing
            if gate is not None:
                ends.append((max(now, e), k))  # (but counts towards its limits until then)
            continue
        if holds is not None:
            holds.started(k, c)
        live[k] = max(le, e, now)
        runs.append((live[k], k))
        ends.append((max(now, e), k))
        free -= c
    heapq.heapify(ends)
    runs.sort()
    rbusy = [(e, psize[k]) for e, k in runs]  # (live end, CPUs) of each of runs, in its order
    started: dict[int, float] = {}
    waiting: MutableSequence[int] = list(range(n))  # a priority pass may set it to an array
    need = set(stop_after) if stop_after is not None else None
    t = now
    next_bf = now + sc.bf_interval_s / 2  # the cycle's phase is not known: half an interval on average
    next_main = now + sc.sched_interval_s / 2
    bf_until = now + sc.bf_window_s
    changed = True
    endt = now + horizon
    begins = any(p[3] > now for p in pending)
    # with begin times, waiting is cleaned of started jobs only virtually (the same list the copy
    # made at each start of its head would give, docs/start.md "Cost"): `seq` each started job's
    # start order, those before `cut_seq` out of it; `rin` of them still in the list, which holds
    # every job started from `since` on; `h` the first entry not out
    seq: dict[int, int] = {}
    cut_seq = rin = since = h = 0
    smallest = min(size) if size else 0

    reordered = False  # waiting is no longer in index order (a priority pass re-sorted it)
    sorts = 0  # how many times
    stale = 0  # then: started jobs left in waiting
    by_rank: list[int] = []  # past bf_window after a re-sort: the tree's leaves' jobs, and their ranks
    rank_of: dict[int, int] = {}
    passes = None  # the priority passes (startfs.Passes): the age term, fair-share
    if aging is not None or fs is not None:
        w_age, max_age, calc_p, prio0, elig_t = aging if aging is not None else (0.0, 0.0, 0.0, [], [])
        if w_age <= 0 or max_age <= 0 or calc_p <= 0 or now - max(elig_t, default=now) >= max_age:
            aging = None  # no age term, or every job at its maximum now: the order never changes by age
        if aging is not None or fs is not None:
            passes = startfs.Passes(now, bf_until, n, None if aging is None else aging[:3], fs, prio0, elig_t,
                                    [max(now, e) for e, _, _ in running])
    pdepth = sc.partition_job_depth
    nr_age, nr_prio = sc.bf_min_age_reserve_s, sc.bf_min_prio_reserve
    mn_age, mn_prio = sc.main_min_age_s, sc.main_min_prio
    thr = reserve[2] if reserve is not None and any(reserve[2]) else None  # the QOSes' MinPrioThreshold
    mn_on = reserve is not None and bool(mn_age or mn_prio or thr)

    def no_fail(i: int, at: float) -> bool:
        """Whether pending job i, not fitting, leaves the main pass going (bf_min_age_reserve,
        its MinPrioThreshold or else bf_min_prio_reserve, as job_scheduler.c reads them)."""
        assert reserve is not None
        p = (thr[i] if thr else 0) or mn_prio
        return bool((mn_age and at - reserve[0][i] < mn_age) or (p and reserve[1][i] < p))

    def no_plan(i: int, at: float) -> bool:
        """Whether backfill makes no plan for pending job i (backfill.c TEST_NOW_ONLY): below its
        MinPrioThreshold or else bf_min_prio_reserve, or younger than bf_min_age_reserve."""
        assert reserve is not None
        p = (thr[i] if thr else 0) or nr_prio
        return bool((p and reserve[1][i] < p) or (nr_age and at - reserve[0][i] < nr_age))

    fresh: list[int] = []  # started since the last event's bookkeeping
    tree: list[float] = []  # past bf_window: a min-tree of the sizes of the jobs that may start (first fit)
    leaves = 1
    later: list[tuple[float, int]] = []  # past bf_window: (begin, job) of the jobs not yet begun
    parked: list[tuple[float, int]] = []  # past bf_window: (when, job) of the jobs a reservation keeps out

    def start(i: int, at: float, counted: bool = False) -> None:
        nonlocal free
        if gate is not None and not counted:
            gate.add(i)
        if begins:
            seq[i] = len(started)
        started[i] = at
        free -= size[i]
        heapq.heappush(ends, (at + pending[i][0], i))
        live[i] = at + limit[i]
        insort(runs, (live[i], i))
        rbusy.insert(bisect_left(runs, (live[i], i)), (live[i], size[i]))  # beside it, in runs' order
        fresh.append(i)
        if passes is not None:
            passes.started(i, at, at + pending[i][0])
        if holds is not None:
            holds.started(i, size[i])
        if tree:
            set_leaf(i, math.inf)

    def set_leaf(i: int, v: float) -> None:
        j = (rank_of[i] if reordered else i) + leaves
        tree[j] = v
        j >>= 1
        while j:
            a, b = tree[2 * j], tree[2 * j + 1]
            m = a if a < b else b
            if tree[j] == m:
                break
            tree[j] = m
            j >>= 1

    def first_fit(pos: int, cap: int) -> int:
        """The first job from `pos` on (in priority order) of at most `cap` CPUs that may start, or -1."""
        j = pos + leaves
        while True:
            if tree[j] <= cap:
                while j < leaves:
                    j = 2 * j if tree[2 * j] <= cap else 2 * j + 1
                return j - leaves
            while j & 1:
                j >>= 1
            if j == 0:
                return -1
            j += 1

    while len(waiting) > rin and t <= endt and (need is None or need):
        got = depth = 0
        if t >= bf_until:
            # past bf_window every job that fits starts, in priority order (first fit; no backfill
            # cycle): the next one is found in a min-tree of sizes, not by a scan of the queue
            if not tree:
                while leaves < max(1, n):
                    leaves *= 2
                tree = [math.inf] * (2 * leaves)
                if reordered:  # the leaves in the queue's order: job by rank
                    by_rank = [i for i in waiting if i not in started]
                    rank_of = {i: r for r, i in enumerate(by_rank)}
                for i in waiting:
                    if i in started:
                        continue
                    if pending[i][3] > t:
                        later.append((pending[i][3], i))
                    else:
                        tree[leaves + (rank_of[i] if reordered else i)] = size[i]
                for j in range(leaves - 1, 0, -1):
                    a, b = tree[2 * j], tree[2 * j + 1]
                    tree[j] = a if a < b else b
                later.sort(reverse=True)
                if gate is not None:  # (the held jobs are in the tree: each is parked again when met)
                    if reordered:
                        gate.reorder(rank_of.__getitem__)
                    gate.opened.clear()
            while later and later[-1][0] <= t:
                _, i = later.pop()
                set_leaf(i, size[i])
            while parked and parked[0][0] <= t:
                _, i = heapq.heappop(parked)
                if i not in started:
                    set_leaf(i, size[i])
            pos = 0
            cands = gate.candidates() if gate is not None and gate.opened and free >= smallest else None
            while free >= smallest:
                rk = first_fit(pos, free)
                if cands:
                    # a job a limit held, that a job's end let go, ranked before the tree's: tried first
                    c_ = gate.next_free(cands, rk if rk >= 0 else math.inf)
                    if c_ >= 0:
                        if size[c_] > free:
                            set_leaf(c_, size[c_])  # (no limit holds it: the tree's from now on)
                            continue
                        i, rk = c_, (rank_of[c_] if reordered else c_) - 1
                    elif rk < 0:
                        break
                    else:
                        i = by_rank[rk] if reordered else rk
                elif rk < 0:
                    break
                else:
                    i = by_rank[rk] if reordered else rk
                if gate is not None and gate.over(i):
                    set_leaf(i, math.inf)  # held by a limit: parked until a job of it ends
                elif holds is None:
                    start(i, t)
                    got += 1
                else:
                    a, r = holds.avail(i, limit[i], t, free)
                    if size[i] <= a:
                        start(i, t)
                        got += 1
                    else:
                        # kept out by a reservation: it waits for that reservation's end (for its
                        # begin, one in it), not tried at every event (the cost at 10,000 jobs)
                        w = holds.w[r]
                        set_leaf(i, math.inf)
                        heapq.heappush(parked, (w.begin if (kmember[i] >= 0 and t < w.begin) else w.end, i))
                        if why is not None and kmember[i] < 0:
                            why[i] = r
                pos = rk + 1
                if pos >= leaves:
                    break
            if cands:  # (the loop ended before their turn: offered again at the next event)
                gate.opened.update(x for _, x, *_ in cands)
        else:
            failed = False  # with reservations: a job not in one did not fit (job_scheduler.c's failed
            failed_w: set[int] = set()  # partition), and the windows whose job did not (its failed_resv)
            smax, got0 = sc.sched_max_job_start, got
            per: dict[str, int] = {}
            for i in (islice(waiting, h, None) if h else waiting) if sc.main_sched else ():  # the prefix that fits
                if depth > sc.default_queue_depth or free < smallest or (smax and got - got0 >= smax):  # (depth + 1 jobs)
                    break
                if i in started or pending[i][3] > t:
                    continue  # (a job whose begin is ahead is not in slurmctld's queue: job_independent)
                if pdepth and owners is not None:  # partition_job_depth: passed by, counted towards nothing
                    pc = per.get(owners[2][i], 0)
                    per[owners[2][i]] = pc + 1
                    if pc >= pdepth:
                        continue
                depth += 1
                if gate is not None and ((ghx[i] >= 0 and gdowns[ghx[i]] == ghd[i]) or gate.over(i)):
                    continue  # held by a limit: passed by (job_scheduler.c, acct_policy_job_runnable_*; Gate.over's first test here)
                if holds is not None:
                    m = kmember[i]
                    if (failed and m < 0) or m in failed_w:
                        continue
                    a, r = holds.avail(i, limit[i], t, free)
                    if size[i] > a:
                        if m >= 0:
                            failed_w.add(m)  # waits for its reservation; holds no one outside it back
                            continue
                        if why is not None and size[i] <= free:
                            why[i] = r
                        if not (mn_on and no_fail(i, t)):
                            failed = True  # the jobs in reservations behind it are still tried
                        continue
                elif size[i] > free:
                    if mn_on and no_fail(i, t):
                        continue  # young or below the threshold: the partition stays open
                    break
                start(i, t)
                got += 1
        if t >= next_bf and t < bf_until:
            if changed and sc.backfill and free >= smallest:
                limited = sc.bf_limited and owners is not None
                if not begins and holds is None:  # the first jobs not started, in C
                    cand = filterfalse(started.__contains__, waiting if gate is None else
                                       gate.active(waiting, started, sorts))
                else:  # (a job in a reservation: the main scheduler's)
                    cand = (i for i in (islice(waiting, h, None) if h else waiting) if i not in started
                            and pending[i][3] <= t and not (holds is not None and kmember[i] >= 0))
                if gate is not None:  # held by a limit on running jobs: passed by before bf_max_job_test counts it
                    cand = filterfalse(gate.pre, filterfalse(gate.cheld.__contains__, cand))
                elig = (bf_tested(cand, sc, *owners) if limited and owners is not None
                        else list(islice(cand, sc.bf_max_job_test)))
                # (a job a start of this cycle puts under a limit is passed by uncounted: the next of cand)
                more = cand if gate is not None and not (limited and owners is not None) else None
                small = min(map(size.__getitem__, elig), default=free + 1)
                # a cycle's reservations are dropped at its end: one that can start nothing is skipped
                if free < small:
                    run = []
                elif not runs or runs[0][0] > t:
                    run = runs  # every live end is after t: max(end, t) is the end
                else:
                    run = sorted((max(e, t), k) for k, e in live.items())
                fixed = holds.fixed(t) if holds is not None else ()
                nores = ({i for i in elig if no_plan(i, t)}
                         if reserve is not None and (nr_prio or nr_age or thr) else ())
                for i in (backfill_starts(t, elig, free, run, psize, est, total - blocked, sc,
                                          smallest=small if more is None else min(small, smallest),
                                          fixed=fixed, busy0=rbusy if run is runs else None, no_reserve=nores,
                                          limits=gate, more=more)
                          if free >= small else ()):
                    start(i, t, counted=True)
                    got += 1
                if holds is not None and why is not None:
                    for i in (elig if need is None else [i for i in elig if i in need]):
                        if i not in started and size[i] <= free:
                            a, r = holds.avail(i, limit[i], t, free)
                            if size[i] > a:
                                why[i] = r
            changed = False
            next_bf = t + sc.bf_interval_s
        if got:
            if begins:
                # the jobs with a begin time are looked for in waiting[:50]: its content kept as the
                # copy `[i for i in waiting if i not in started]` made it whenever `len(started) * 4 >
                # len(waiting) or waiting[0] in started` (the copy itself cost O(queue) at each start
                # of its head: 1.5 s of 2.9 at 10,000 pending); here done virtually, the list rebuilt
                # when an eighth of it is before `h` or half of it out (amortised)
                while h < len(waiting) and seq.get(waiting[h], cut_seq) < cut_seq:
                    h += 1
                if len(started) * 4 > len(waiting) - rin or (h < len(waiting) and waiting[h] in started):
                    rin += len(started) - max(cut_seq, since)
                    cut_seq = len(started)
                    while h < len(waiting) and seq.get(waiting[h], cut_seq) < cut_seq:
                        h += 1
                    if rin * 2 > len(waiting) or h * 8 > len(waiting):
                        waiting = [i for i in waiting if seq.get(i, cut_seq) >= cut_seq]
                        rin = h = 0
                        since = cut_seq
            elif reordered:
                # not in index order: no bisect; the started stay (skipped) until they are 1/16
                stale += len(fresh)
                if stale * 16 > len(waiting):
                    waiting = [i for i in waiting if i not in started]
                    stale = 0
            elif len(fresh) * 64 > len(waiting):
                waiting = [i for i in waiting if i not in started]
            else:
                for i in sorted(fresh, reverse=True):  # waiting is in index order
                    k = bisect_left(waiting, i)
                    if k < len(waiting) and waiting[k] == i:
                        del waiting[k]
            changed = True
            if need is not None:
                need.difference_update(fresh)
            fresh.clear()
        if len(waiting) <= rin or (need is not None and not need):
            break
        tick = next_main if (t < bf_until or begins or holds is not None) else math.inf  # docs/start.md, "Cost"
        nxt = min(next_bf if t < bf_until else math.inf, tick, ends[0][0] if ends else math.inf)
        while wbegins and wbegins[0] <= t:
            wbegins.pop(0)
        if wbegins:
            nxt = min(nxt, wbegins[0])
        nb = math.inf
        if begins:
            k, cnt, lw = h, 0, len(waiting)
            while k < lw and cnt < 50:  # (waiting[:50] of the list as cleaned)
                i = waiting[k]
                k += 1
                if i in seq and seq[i] < cut_seq:
                    continue
                cnt += 1
                if pending[i][3] > t:
                    nb = min(nb, pending[i][3])
            if k - h - cnt > 64:  # more than 64 out within it: rebuilt (each rebuild follows 64 starts)
                waiting = [i for i in waiting if seq.get(i, cut_seq) >= cut_seq]
                rin = h = 0
                since = cut_seq
            nxt = min(nxt, nb)
        if nxt == math.inf:
            break
        t = max(nxt, t)
        if nb <= t:
            # a begin time passed: the main scheduler's job_independent() clears the job's BeginTime
            # reason and marks the queue changed (last_job_update), so the next backfill cycle runs
            changed = True
        while ends and ends[0][0] <= t:
            _, k = heapq.heappop(ends)
            free += psize[k]
            if gate is not None:
                gate.ended(k)
            if holds is not None:
                holds.started(k, -psize[k])
            le = live.pop(k, None)
            if le is not None:
                j = bisect_left(runs, (le, k))
                del runs[j]
                del rbusy[j]
            changed = True
        if t >= next_main:
            next_main = t + sc.sched_interval_s
        if passes is not None and passes.due(t):
            # a priority pass: the age term grows, fair-share is charged (startfs); re-sorted only
            # where the order changes
            new = passes.run(t, len(waiting) - rin)
            if new is not None:
                waiting = new  # (every pending job not started)
                rin = h = 0
                since = cut_seq = len(started)
                reordered = True
                sorts += 1
                changed = True
                stale = 0
    return started


def estimate(jobs: Sequence[StartJob], *, now: float, total_cpus: int, sched: SlurmSched,
             fractions: Mapping[str, float] | None = None, hidden_cpus: int = 0,
             users: set[str] | None = None, job_ids: set[str] | None = None,
             horizon_s: float = HORIZON_S, total_gpus: int = 0, windows: Sequence[resvplan.Window] = (),
             skipped: Mapping[str, str] | None = None, age: tuple[float, float, float] | None = None,
             fairshare: tuple[startfs.FairShareModel, Mapping[str, float]] | None = None,
             prio_thresh: Mapping[str, int] | None = None,
             deps: Mapping[str, startdeps.Dep] | None = None,
             limits: tuple[startlimits.Limits, Mapping[str, str], bool] | None = None) -> list[Estimate]:
    """An Estimate for each pending job (those of `users` / `job_ids` when given; the others are
    still played, they hold the queue). `hidden_cpus`: CPUs in use by jobs the caller cannot see
    (PrivateData), busy through the horizon. `total_gpus`: the cluster's GPUs; a job that asks for
    GPUs takes the larger of its CPUs and its GPUs' share of the CPUs (g x CPUs / GPUs): a GPU-bound
    job waits for the GPUs, a CPU-bound one for the CPUs; conservative where both mix on a node.
    `windows`: the advance reservations modelled (resvplan); `skipped`: {name: why} of those that
    are not, whose jobs get that reason. `age`: (PriorityWeightAge, PriorityMaxAge s,
    PriorityCalcPeriod s): the age term grows through the horizon and re-sorts the queue (each
    job eligible since its submission, or its begin time). `fairshare`: (startfs.fairshare_model,
    each job's billing): classic fair-share charged by the running and the started jobs at each
    pass (startfs), else held. `prio_thresh`: job id -> its MinPrioThreshold
    (acctpolicy.job_prio_thresh), for the jobs that have one. `deps`: job id -> what the job waits
    for (startdeps: squeue's %E), for the jobs pending with reason Dependency: each waiting for running jobs is played
    from the moment its dependency is met (their ends or starts; its age from then); the others get
    a reason (startdeps). `limits`: (startlimits.Limits, job id -> its QOS, PrivateData=jobs): the
    association and QOS limits on running jobs and CPUs hold jobs back through the plan; a job squeue
    shows held by one is played when they hold it now, else it keeps its reason."""
    fr = dict(fractions or {})

    def size(j: StartJob) -> int:
        if j.gpus and total_gpus:
            return max(j.cpus, min(total_cpus, math.ceil(j.gpus * total_cpus / total_gpus)))
        return j.cpus

    run_jobs = [j for j in jobs if j.state in ("RUNNING", "COMPLETING")]
    pend = [j for j in jobs if j.state == "PENDING"]
    pend.sort(key=lambda j: (-j.priority, int(j.job_id.split("_")[0]) if j.job_id.split("_")[0].isdigit() else 0))
    out: dict[str, Estimate] = {}
    playable: list[StartJob] = []
    widx: dict[str, int] = {}  # a job in a repeating reservation: its first occurrence
    for k, w in enumerate(windows):
        widx.setdefault(w.name, k)
    skipped = skipped or {}
    for j in pend:
        waiting = startdeps.played(j, windows, deps, limits is not None)
        e = Estimate(j.job_id, j.user, squeue_start=j.start if waiting else None)
        out[j.job_id] = e
        if j.reservation in skipped:
            e.reason = f"runs in reservation {j.reservation}, not modelled: {skipped[j.reservation]}"
        elif j.reservation and j.reservation not in widx:
            e.reason = f"runs in reservation {j.reservation}, which holds no CPUs from now on"
        elif j.reservation and j.cpus > windows[widx[j.reservation]].cpus:
            e.reason = (f"needs {j.cpus} CPUs, more than the {windows[widx[j.reservation]].cpus} of "
                        f"reservation {j.reservation}")
        elif j.reason == "Dependency" and deps and j.job_id in deps and deps[j.job_id].why:
            e.reason = deps[j.job_id].why
        elif not waiting:
            e.reason = f"waits for {j.reason}, not only for CPUs and priority"
        elif j.limit_s is None:
            e.reason = "no time limit: the jobs behind it cannot be planned"
        elif j.gpus > total_gpus:
            e.reason = f"needs {j.gpus} GPUs, more than the {total_gpus} there are"
        elif j.cpus > total_cpus - hidden_cpus:
            e.reason = ("needs CPUs that jobs hidden from you by PrivateData hold" if hidden_cpus
                        else f"needs {j.cpus} CPUs, more than the {total_cpus} there are")
        else:
            playable.append(j)
    if limits is not None:  # a job squeue shows held by a limit the limits read do not hold now: its reason
        _, held = startlimits.bind(limits[0], limits[1], playable, run_jobs, limits[2])
        held.update({j.job_id: limits[3][j.job_id] for j in playable if len(limits) > 3 and j.job_id in limits[3]})
        reason_of = {j.job_id: j.reason for j in playable}
        for x, why_ in held.items():
            out[x].reason = why_ if why_.startswith("never") else f"waits for {reason_of[x]}: {why_}"
        playable = [j for j in playable if j.job_id not in held]
    if not sched.main_sched and not sched.backfill:  # sched_interval=-1 and no backfill: nothing starts
        for j in playable:
            out[j.job_id].reason = "slurmctld starts no job: sched_interval=-1 and no backfill"
        playable = []
    dep_of: dict[int, tuple[bool, list]] = {}
    if deps:
        res, dep_why = startdeps.resolve(dict(deps), playable, run_jobs, {j.job_id for j in pend})
        for x, why_ in dep_why.items():  # (a job that waits for one not played: its reason, and out)
            out[x].reason = why_
        playable = [j for j in playable if j.job_id not in dep_why]
        dep_of = {i: res[j.job_id] for i, j in enumerate(playable) if j.job_id in res}
    want = [i for i, j in enumerate(playable)
            if (users is None or j.user in users) and (job_ids is None or j.job_id in job_ids)]
    stop = set(want)
    thr = [int(prio_thresh.get(j.job_id, 0)) for j in playable] if prio_thresh else []
    any_thr = any(thr)
    # (with limits read, a job asked about that a limit may hold lets the jobs behind it start ahead,
    # and those may take its limit's room: unless none asked about counts towards a limit)
    limited = limits is not None and any(limits[0].of.get((playable[i].account, playable[i].user,
                                                          limits[1].get(playable[i].job_id, ""))) for i in want)
    cut = not limited and not (sched.bf_min_age_reserve_s or sched.bf_min_prio_reserve or sched.main_min_age_s or sched.main_min_prio
               or sched.partition_job_depth or any_thr  # (with these, a job behind may start ahead in the main pass)
               # (and one behind may take the CPUs before a job ahead of it is eligible: a dependency, a begin time)
               or any(i in dep_of or (j.reason == "BeginTime" and (j.start or 0) > now)
                      for i, j in enumerate(playable[: max(stop) + 1] if stop else ())))
    if want and cut and (users is not None or job_ids is not None):
        # jobs behind the last one asked about only backfill, which delays no reservation made
        # ahead of them (Slurm's rule): they are not played (the cost at 10,000 jobs)
        playable = playable[: max(stop) + 1]
        thr = thr[: len(playable)]
        dep_of = {i: v for i, v in dep_of.items() if i < len(playable)}
    counts = startlimits.bind(limits[0], limits[1], playable, run_jobs, limits[2])[0] if limits is not None else None
    runs = {}
    pmember = [widx.get(j.reservation, -1) for j in playable] if windows else None
    rmember = [widx.get(j.reservation, -1) for j in run_jobs] if windows else None
    why: dict[int, int] = {}
    aging = None
    if (age is not None and age[0] > 0) or fairshare is not None:
        elig = [max(j.submit if j.submit is not None else now, j.start if (j.reason == "BeginTime" and j.start) else 0.0)
                for j in playable]
        aging = (*(age if age is not None and age[0] > 0 else (0.0, 0.0, 0.0)), [j.priority for j in playable], elig)
    fsb = startfs.bind(fairshare[0], playable, run_jobs, fairshare[1], now) if fairshare is not None else None
    reserve = None  # bf_min_age_reserve / bf_min_prio_reserve / MinPrioThreshold: each job's eligible time, priority now, threshold
    if sched.bf_min_age_reserve_s or sched.bf_min_prio_reserve or sched.main_min_age_s or sched.main_min_prio or any_thr:
        reserve = ([max(j.submit if j.submit is not None else now, j.start if (j.reason == "BeginTime" and j.start) else 0.0)
                    for j in playable], [j.priority for j in playable], thr if any_thr else [0] * len(playable))
    for name, use_fr in (("typical", True), ("limits", False)):
        running = []
        for j in run_jobs:
            lim = j.limit_s if j.limit_s is not None else horizon_s
            st = j.start if j.start is not None else now
            f = fr.get(j.user, 1.0) if use_fr else 1.0
            running.append((st + f * lim, st + lim, size(j)))
        pending = []
        for j in playable:
            f = fr.get(j.user, 1.0) if use_fr else 1.0
            nb = j.start if (j.reason == "BeginTime" and j.start) else now
            pending.append((f * j.limit_s, j.limit_s, size(j), nb))
        owners = ([j.user for j in playable], [j.account for j in playable], [j.partition.split(",")[0] for j in playable])
        pend, ag, rs = pending, aging, reserve
        if dep_of:  # eligible (its age from then: slurmctld sets its begin time) when its dependency is met
            met = startdeps.releases(dep_of, [j.start if j.start is not None else now for j in run_jobs],
                                     [now if j.state == "COMPLETING" else max(now, r[0]) for j, r in zip(run_jobs, running)])
            pend = [(p[0], p[1], p[2], max(p[3], met[i])) if i in met else p for i, p in enumerate(pending)]
            if aging is not None:
                ag = (*aging[:4], [max(x, met[i]) if i in met else x for i, x in enumerate(aging[4])])
            if reserve is not None:
                rs = ([max(x, met[i]) if i in met else x for i, x in enumerate(reserve[0])], reserve[1], reserve[2])
        runs[name] = _plan(now, running, pend, total_cpus, sched, hidden_cpus, stop, horizon_s, owners,
                           windows, pmember, rmember, why if use_fr else None, ag, fsb, rs, counts)
    for i in want:
        j = playable[i]
        e = out[j.job_id]
        a, b = runs["typical"].get(i), runs["limits"].get(i)
        if a is None and b is None:
            e.reason = f"does not start within the {horizon_s / 86400:g}-day horizon"
            continue
        if i in dep_of:
            e.extra["dependency"] = deps[j.job_id].text if deps else ""
        e.start = a if a is not None else b
        vals = [v for v in (a, b) if v is not None]
        e.early, e.late = min(vals), max(vals) if b is not None else None
        e.extra["fraction"] = fr.get(j.user)
        if pmember is not None and pmember[i] >= 0:
            e.extra["reservation"], e.extra["reservation_role"] = j.reservation, "in"
        elif i in why:
            e.extra["reservation"], e.extra["reservation_role"] = windows[why[i]].name, "delayed by"
    sel = [e for e in out.values() if (users is None or e.user in users) and (job_ids is None or e.job_id in job_ids)]
    return sel


def order_own_first(ests: Sequence[Estimate], me: str | None) -> list[Estimate]:
    return sorted(ests, key=lambda e: (e.user != me, math.inf if e.start is None else e.start, e.job_id))


def to_dict(ests: Sequence[Estimate], *, now: float, sched: SlurmSched, notes: list[str]) -> dict:
    import datetime as _dt

    return {"now": now, "now_iso": _dt.datetime.fromtimestamp(now, _dt.timezone.utc).isoformat(timespec="seconds"),
            "model": "Slurm's scheduler model, " + sched.source + "; runs: each user's typical fraction of the limit "
                     "(sacct, 14 days), range up to limits as run times; priorities as now, but the age term "
                     "grows and classic fair-share is charged at each priority pass (notes)",
            "notes": notes,
            "jobs": [{"job_id": e.job_id, "user": e.user, "start": e.start, "early": e.early, "late": e.late,
                      "reason": e.reason, "squeue_start": e.squeue_start, "fraction": e.extra.get("fraction"),
                      "reservation": e.extra.get("reservation"), "reservation_role": e.extra.get("reservation_role"),
                      "partition": e.extra.get("partition"), "pool": e.extra.get("pool"),
                      "dependency": e.extra.get("dependency")}
                     for e in ests]}


def read_asked(source, user: str | None, jobs: str | None, *, now: float, me: str | None = None) -> dict:
    """`fscontrol start`: its -u and -j checked (startqueue.selection), then read_live."""
    users, ids = selection(user, jobs)
    return read_live(source, now=now, users=users, job_ids=ids, me=me)


def read_live(source, *, now: float, users: set[str] | None = None, job_ids: set[str] | None = None,
              me: str | None = None, private_jobs: bool | None = None, max_pending: int | None = None,
              fairshare: bool = True) -> dict:
    """Run squeue, sinfo, sacct and scontrol show config on `source` (LiveSlurm) and estimate.
    `max_pending`: with more jobs pending than that, EstimateTooCostly (before any estimate).
    `fairshare`: False holds fair-share at its present value (the bench's comparison)."""
    from fscontrol.slurm import privatedata  # what PrivateData hides
    from fscontrol.sim.slurmsched import sched_from_config
    from fscontrol.slurm.parse import parse_config_pairs

    conf_text = source.run(("scontrol", "show", "config")).stdout
    jobs = parse_queue(source.run(SQUEUE_START_ARGS).stdout)
    if max_pending is not None:
        pending = sum(1 for j in jobs if j.state == "PENDING")
        if pending > max_pending:
            raise EstimateTooCostly(f"{pending:,} jobs pending, over the {max_pending:,} estimated here "
                                    "(`fscontrol start` estimates them, at more cost)")
    total, node_cpus, alloc = parse_sinfo(source.run(SINFO_CPUS_ARGS).stdout)
    sc = sched_from_config(conf_text, node_cpus=node_cpus)
    pairs = parse_config_pairs(conf_text)
    notes = []
    fr_read = True
    try:
        fr = parse_fractions(source.run(SACCT_FRACTION_ARGS).stdout)
    except (SlurmCommandError, ParseError) as e:  # (slurmdbd out of reach: the limits as run times, said)
        fr, fr_read = {}, False
        notes.append(f"each user's typical run not read ({str(e).splitlines()[0][:160]}): every job is taken to run "
                     "to its time limit (the estimates are late ones)")
    named: dict[str, list[str]] = {}  # the queue's row -> the ids asked for that are it
    if job_ids is not None:
        for x in sorted(job_ids):
            named.setdefault(pending_row(source, jobs, x), []).append(x)
        job_ids = set(named)
    hidden = 0
    if private_jobs is None:
        private_jobs = privatedata.jobs_hidden(pairs.get("PrivateData", "")) and os.geteuid() != 0
    if private_jobs:
        seen = sum(j.cpus for j in jobs if j.state in ("RUNNING", "COMPLETING"))
        hidden = max(0, alloc - seen)
        notes.append("PrivateData=jobs: squeue shows you your own jobs alone; the estimate uses them, and the "
                     f"{hidden} CPUs others use now are counted busy throughout (their queue is not seen)")
    unknown = sorted({j.user for j in jobs if j.state == "PENDING" and j.user not in fr})
    if unknown and fr_read:
        notes.append("no ended jobs in sacct (14 days) for " + ", ".join(unknown[:5])
                     + ("..." if len(unknown) > 5 else "") + ": their jobs are taken to run to their limits")
    total_gpus = 0
    gpus = parse_job_gpus(source.run(SQUEUE_GPU_ARGS).stdout)
    if gpus:
        jobs = [replace(j, gpus=gpus[j.job_id]) if j.job_id in gpus else j for j in jobs]
        total_gpus = parse_sinfo_gpus(source.run(SINFO_GPU_ARGS).stdout)
        notes.append(f"GPUs: {total_gpus} on the cluster; a job with GPUs counts as the larger of its CPUs and its "
                     "GPUs' share of the CPUs (GPUs x CPUs / GPUs), so it waits for the GPUs it needs")
    from fscontrol.slurm.resv import RESV_ARGS, parse_reservations

    resvs = parse_reservations(source.run(RESV_ARGS).stdout)
    wins, skipped, rnotes = resvplan.windows(resvs, now)
    notes += rnotes
    if privatedata.reservations_hidden(pairs.get("PrivateData", "")) and os.geteuid() != 0:
        notes.append("PrivateData=reservations: scontrol shows you only the reservations you are in; "
                     "others' may delay your jobs beyond these estimates")
    age = age_params(pairs)
    if age is not None:
        notes.append(f"age: PriorityWeightAge {age[0]:g} over PriorityMaxAge {age[1] / 3600:g} h, a priority pass every "
                     f"{age[2]:g} s: the queue is re-sorted at each pass within bf_window as the jobs age")
    deps = None  # what each job pending on a dependency waits for (squeue's %E), read only where one is
    if any(j.state == "PENDING" and j.reason == "Dependency" for j in jobs):
        from fscontrol.slurm.parse import DEPS_ARGS

        deps = startdeps.parse_deps(source.run(DEPS_ARGS).stdout)
        rows = startdeps.Rows([j.job_id for j in jobs if j.state == "PENDING"])
        chained = sum(1 for d in deps.values() if any(startdeps.members(r, rows) for _, r, _ in d.refs))
        if chained:
            notes.append(f"{chained} job(s) wait on a dependency on jobs themselves pending: not estimated, and left "
                         "out of the plan (when released they may start ahead of the jobs behind them, whose "
                         "estimates may then be early)")
    arrays = [n for j in jobs if j.state == "PENDING" and (n := jobid.array_tasks(j.job_id)) > 1]
    if arrays:  # (an outside tester's finding: 87_[1-3] estimated at +14 s, its tasks started at +16, +36, +57 s)
        notes.append(f"{len(arrays):,} pending job array(s) of {sum(arrays):,} tasks in all (squeue's 123_[1-5]) each played "
                     "as one job: Slurm starts their tasks one by one, so their later tasks, and the jobs behind them, "
                     "may start later than estimated (-j 123_4 is given its array's time)")
    thresh, tnote = read_prio_thresh(source, pairs, jobs)
    if tnote:
        notes.append(tnote)
    lim, jqos, lnote, apart = startlimits.read(source, pairs, jobs)  # (only where a pending job is held by one)
    limits = (lim, jqos, bool(private_jobs), apart) if lim is not None else None
    if lnote:
        notes.append(lnote)
    elif lim is not None:
        held = sum(1 for j in jobs if j.state == "PENDING" and j.reason in startlimits.REASONS)
        notes.append(f"association and QOS limits (sacctmgr): {held:,} pending job(s) held by one now; the limits on "
                     "running jobs and CPUs (MaxJobs, GrpJobs, GrpTRES=cpu; the QOS's GrpJobs, GrpTRES=cpu, MaxJobsPU, "
                     "MaxTRESPU=cpu, MaxJobsPA, MaxTRESPA=cpu, of the job's QOS and its partition's) hold jobs back through the "
                     "plan; other limits are not modelled" + (" (PrivateData=jobs: only your own)" if private_jobs else ""))
    fairshare, fs_note = (startfs.read_live(source, pairs, sum(j.state == "PENDING" for j in jobs)) if fairshare
                          else (None, "fair-share held at its present value"))
    notes += [fs_note]
    ests, pnotes = startparts.read_live(source, jobs, estimate, now=now, total_cpus=total, sched=sc, fractions=fr,
                                        hidden_cpus=hidden, private=private_jobs, users=users, job_ids=job_ids,
                                        total_gpus=total_gpus, resvs=resvs, windows=wins, skipped=skipped, age=age,
                                        fairshare=fairshare, prio_thresh=thresh, deps=deps, limits=limits)
    if any(x.startswith("fair-share held") for x in pnotes):  # the pools held it after all: their note says why
        notes.remove(fs_note)
    notes += pnotes
    if named:  # each under the id it was asked by (an array task 123_4, a component 123+1), as `why` says it
        ests = [replace(e, job_id=x) for e in ests for x in named.get(e.job_id, [e.job_id])]
    return to_dict(order_own_first(ests, me), now=now, sched=sc, notes=notes)

