"""The discrete-event core: a heap of job ends, a sorted pending queue, one pass per event time.

Event order at one time t: job ends, then arrivals, then (gate policy) the gate tick, then one
scheduling pass. The queue is a list sorted by a static key (submit time for FCFS; for linear
priority ``P = a*age_h + s*nodes - nice`` the order of P does not change with time, so the key
``a*eligible_h - s*nodes + nice`` is fixed until the gate holds, releases or re-nices a job).

Fast path (depth 1, no SFS pass): EASY needs only the head job's shadow time and extra nodes,
and when only arrivals happened since the last pass (no end, no gate action) and the new job
sorts behind the blocked head, only the new job needs checking: everything already queued
failed the same test (free nodes, shadow and extra are unchanged, and "ends before the
shadow" only gets harder as time passes). Otherwise a general pass runs with an availability
profile (reservations for the top ``depth`` blocked jobs).

Overload (issue #15): when arrivals outpace the machine the queue grows without bound, and a
backfill pass that walks the whole queue makes the cost per job grow with it. When the queue
order is static for the whole run (FCFS/EASY, and linear priority without a gate: no hold,
release or nice ever re-keys a job), the fast path keeps the pending jobs in a segment tree over
their rank in that order, each node holding the smallest size and the smallest time limit below
it. A backfill pass then descends only into subtrees that can hold a job that fits now (size <=
free nodes) and either ends before the shadow time (t + limit <= shadow) or fits in the extra
nodes; the test at a leaf is the old test itself, so the schedule is the same (checked against a
verbatim copy of the former engine, ``tests/sim_engine_reference.py``).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass, field

from fscontrol.act.gate import GateOptions
from ..snaprecords import QueueJob
from .easycore import easy_arrivals, easy_backfill, easy_fits, easy_search, gate_stall, gate_stop, gate_tick, general_pick
from .policies import Policy
from .workload import Workload

INF = math.inf
TREE_ON = 128  # the indexed fast path keeps more pending jobs than this in its segment tree ...
TREE_OFF = 32  # ... and goes back to a sorted list below this many
ProgressFn = Callable[[int, int], None]


@dataclass
class RawRun:
    """What the engine produces: per-job start/end (index-aligned with ``workload.jobs``)."""

    start: list[float]
    end: list[float]
    order: list[int] = field(default_factory=list)  # job indices in the order they started
    holds: int = 0
    releases: int = 0
    nices: int = 0
    unnices: int = 0
    gate_ticks: int = 0
    passes: int = 0
    events: int = 0
    unfinished: int = 0
    notes: list[str] = field(default_factory=list)
    reservation: list[float] = field(default_factory=list)  # conservative: each job's reservation at arrival
    ran: list[float] | None = None  # run times as simulated, when the engine cut some (else the workload's)


def _size_class(s: int) -> int:
    """1..8 -> 0..7 (one size each); 9-15 -> 8; 16-31 -> 9; ...; class c >= 8 starts at 2^(c-5)."""
    return s - 1 if s <= 8 else s.bit_length() + 4


def simulate(
    workload: Workload,
    policy: Policy,
    *,
    progress: ProgressFn | None = None,
    max_time: float | None = None,
) -> RawRun:
    jobs = workload.jobs
    n = len(jobs)
    total = workload.nodes
    submit = [j.submit for j in jobs]
    run = [j.run for j in jobs]
    est = [j.estimate for j in jobs]
    size = [j.size for j in jobs]
    start = [INF] * n
    end = [INF] * n
    eligible = list(submit)  # age counts from here (reset on release)
    nice = [0] * n
    held: set[int] = set()

    kind = policy.kind
    use_prio = kind != "fcfs"
    aw = policy.age_weight / 3600.0
    sw = policy.size_weight
    depth = policy.depth
    backfill = policy.backfill == "easy"
    fast = depth == 1 and kind != "sfs"

    # accounts (for SFS pass 1 and the gate)
    acct_names = sorted({j.account for j in jobs})
    acct_ix = {a: i for i, a in enumerate(acct_names)}
    acct = [acct_ix[j.account] for j in jobs]
    occ = [0] * len(acct_names)
    allocs = workload.allocations
    target = [allocs[a].target if a in allocs else -INF for a in acct_names]

    if use_prio:
        def key_of(i: int) -> tuple:
            return (aw * eligible[i] - sw * size[i] + nice[i], eligible[i], i)
    else:
        def key_of(i: int) -> tuple:  # (one function per order, no test per call: FCFS calls it per arrival)
            return (submit[i], i)

    queue: list[int] = []
    qkeys: list[tuple] = []

    # the indexed fast path: static queue order -> a segment tree over ranks (see the module doc)
    # (without backfill the old pass looks only at the head: nothing to index)
    indexed = fast and backfill and kind in ("fcfs", "linear") and n > 0
    if indexed:
        if kind == "fcfs" and all(submit[k] <= submit[k + 1] for k in range(n - 1)):
            at_rank = list(range(n))  # key (submit, i) is the index order (jobs sorted by submit)
            rank = at_rank
        else:
            at_rank = sorted(range(n), key=key_of)
            rank = [0] * n
            for r_, i_ in enumerate(at_rank):
                rank[i_] = r_
        NL = 1 << max(1, (n - 1).bit_length())
        ms: list[float] = [INF] * (2 * NL)  # smallest size of a pending job below the node
        # smallest time limit below the node, one array per size class (1, 2, ..., 8 nodes one
        # each, then [9, 15], [16, 31], ...): a backfill test "size <= f and ends before the
        # shadow" looks only at the classes that start at or below f, exactly so for f <= 8
        meb: list[list[float]] = [[INF] * (2 * NL) for _ in range(_size_class(max(size, default=1)) + 1)]
    else:  # pragma: no branch
        at_rank = rank = []
        NL = 0
        ms = []
        meb = []
    qn = 0  # pending jobs in the tree
    cls = [_size_class(s_) for s_ in size] if indexed else []  # size class of each job

    def ix_add(r: int, s: int, e: float, b: int) -> None:
        """Job of rank r (size s, limit e, size class b) joins: the minima above it can only drop."""
        me = meb[b]
        p = r + NL
        ms[p] = s
        me[p] = e
        p >>= 1
        while p:
            if s < ms[p]:
                ms[p] = s
                if e < me[p]:
                    me[p] = e
            elif e < me[p]:
                me[p] = e
            else:
                break
            p >>= 1

    def ix_del(r: int, b: int) -> None:
        """Job of rank r (size class b) leaves: recompute the minima above it, while they change."""
        me = meb[b]
        p = r + NL
        ms[p] = INF
        me[p] = INF
        while p > 1:
            q = p ^ 1
            x = ms[p]
            y = ms[q]
            v = x if x < y else y
            x = me[p]
            y = me[q]
            w = x if x < y else y
            p >>= 1
            if ms[p] == v and me[p] == w:
                break
            ms[p] = v
            me[p] = w

    def ix_first() -> int:
        """The rank of the first pending job, -1 when none."""
        if ms[1] == INF:
            return -1
        p = 1
        while p < NL:
            p <<= 1
            if ms[p] == INF:
                p += 1
        return p - NL

    def ix_next(t: float, f: int, shadow: float, extra: int) -> int:
        """The first pending job in rank order that passes easy_fits (fits now, size <= f, and
        either fits in the extra nodes or ends before the shadow time); -1 when none. Searched from the root: every
        pending job before the one a backfill pass looks for fails this test (the head does not
        fit, the others failed it with at least as many free and extra nodes), so no lower bound
        is needed, and a pass that can start nothing costs one look at the root. A subtree is
        entered only if its smallest size fits in min(f, extra) (then it holds such a job) or
        one of the size classes that start at or below f has a limit short enough; the test at
        a leaf is exact."""
        p = 1
        nb = f if f <= 8 else f.bit_length() + 5  # the classes whose smallest size is <= f
        if nb > len(meb):
            nb = len(meb)
        # internal nodes only prune, so they may use a bound that is looser than the exact test
        # t + limit <= shadow: limit <= lim, lim a hair above shadow - t (rounding either way)
        d = shadow - t
        lim = d + 1e-9 * (abs(d) + abs(t) + 1.0)
        # f <= 8: the classes are single sizes, so a node passes exactly when a job below it
        # passes (up to the hair in lim): descend without backtracking, one look a level (a
        # passing node whose left child fails has a passing right child). If the leaf reached
        # fails the exact test (that hair), the general search below decides.
        if nb == 1:  # f == 1, the usual case when the machine is full: size-1 jobs only
            # a size-1 job fits in the extra nodes (extra >= 1): any will do; else a short one
            arr, bound = (ms, 1) if extra >= 1 else (meb[0], lim)
            if arr[1] > bound:
                return -1
            while p < NL:
                p <<= 1
                if arr[p] > bound:
                    p += 1
        elif nb <= 3:  # f = 2 or 3
            m0 = meb[0]
            m1 = meb[1]
            m2 = meb[2] if nb == 3 else m1
            x = ms[1]
            if not (x <= f and (x <= extra or m0[1] <= lim or m1[1] <= lim or m2[1] <= lim)):
                return -1
            while p < NL:
                p <<= 1
                x = ms[p]
                if not (x <= f and (x <= extra or m0[p] <= lim or m1[p] <= lim or m2[p] <= lim)):
                    p += 1
        elif nb <= 8 and f <= 8:  # f = 4..8: still one size a class, unrolled (missing ones repeat class 0)
            m0, m1, m2, m3 = meb[0], meb[1], meb[2], meb[3]
            m4 = meb[4] if nb > 4 else m0
            m5 = meb[5] if nb > 5 else m0
            m6 = meb[6] if nb > 6 else m0
            m7 = meb[7] if nb > 7 else m0
            x = ms[1]
            if not (x <= f and (x <= extra or m0[1] <= lim or m1[1] <= lim or m2[1] <= lim or m3[1] <= lim
                                or m4[1] <= lim or m5[1] <= lim or m6[1] <= lim or m7[1] <= lim)):
                return -1
            while p < NL:
                p <<= 1
                x = ms[p]
                if not (x <= f and (x <= extra or m0[p] <= lim or m1[p] <= lim or m2[p] <= lim or m3[p] <= lim
                                    or m4[p] <= lim or m5[p] <= lim or m6[p] <= lim or m7[p] <= lim)):
                    p += 1
        if p >= NL:
            i = at_rank[p - NL]
            if easy_fits(size[i], est[i], f, t, shadow, extra):
                return i
            p = 1  # pragma: no cover - the hair: search again, with backtracking
        classes = meb[:nb]
        while True:
            x = ms[p]
            ok = False
            if x <= f:
                if x <= extra:
                    ok = True
                else:
                    for me in classes:
                        if me[p] <= lim:
                            ok = True
                            break
            if ok:
                if p < NL:
                    p <<= 1
                    continue
                i = at_rank[p - NL]
                if easy_fits(size[i], est[i], f, t, shadow, extra):
                    return i
            while p & 1:
                p >>= 1
            if p == 0:
                return -1
            p += 1

    running: list[tuple[float, int]] = []  # sorted (predicted end, idx)
    heap: list[tuple[float, int]] = []  # (actual end, idx)
    free = total
    out = RawRun(start, end)
    order = out.order

    def start_job(i: int, t: float) -> None:
        nonlocal free
        start[i] = t
        order.append(i)
        e = t + run[i]
        end[i] = e
        free -= size[i]
        occ[acct[i]] += size[i]
        heapq.heappush(heap, (e, i))
        insort(running, (t + est[i], i))

    def enqueue(i: int) -> int:
        k = key_of(i)
        pos = bisect_left(qkeys, k)
        qkeys.insert(pos, k)
        queue.insert(pos, i)
        return pos

    def dequeue(i: int) -> None:
        k = key_of(i)
        pos = bisect_left(qkeys, k)
        del qkeys[pos]
        del queue[pos]

    rank_of = rank.__getitem__ if indexed else None  # (bound once: easy_arrivals's key on the indexed path)

    # EASY state kept between passes for the arrival-only fast path
    easy_valid = False
    easy_shadow = 0.0
    easy_extra = 0
    easy_headkey: tuple = ()
    easy_headrank = -1

    def pass_fast(t: float) -> None:
        nonlocal easy_valid, easy_shadow, easy_extra, easy_headkey
        k = 0  # the head run: the jobs in queue order while they fit
        for i in queue:
            if size[i] > free:
                break
            start_job(i, t)
            k += 1
        if k:
            del queue[:k], qkeys[:k]
            if not queue:
                easy_valid = False
                return
        easy_valid = True
        easy_headkey = qkeys[0]
        if not backfill or free == 0:
            # free == 0: nothing can start before the next end, and an end brings a full pass
            easy_shadow, easy_extra = -INF, -1
            return
        started, easy_shadow, easy_extra = easy_backfill(queue, -1, size, est, t, free, 1, running)
        for i in started:
            dequeue(i)
            start_job(i, t)

    # Short queues stay in a sorted list scanned as before (the tree's upkeep costs more than a
    # short scan); past TREE_ON pending jobs they move into the tree, and back below TREE_OFF. Its
    # entries are keys (rank << RS) | index (the rank's order; the job is key & RM, as mfcore's
    # queue); where the rank is the index (FCFS on a log sorted by submit) the key is the index
    # itself (RS 0: ints of one digit, the cheapest to compare and mask)
    small: list[int] = []
    RS = 0 if rank is at_rank else max(1, n.bit_length())
    RM = (1 << RS) - 1 if RS else -1  # -1: the entry is the index (easycore's convention: no mask op)
    use_tree = False
    first_hint = -1  # in the tree: the first pending rank when known (nothing pending before it)

    def ix_after(r: int) -> int:
        """The first pending rank after r, when r was the first pending one (so nothing before
        r is pending): a few leaves to the right in a dense queue, else a descent."""
        if ms[1] == INF:
            return -1
        lim = r + 17
        if lim > NL:
            lim = NL
        p = NL + r + 1
        e = NL + lim
        while p < e:
            if ms[p] != INF:
                return p - NL
            p += 1
        return ix_first()

    def ix_next_pending(lo: int) -> int:
        """The first pending rank > lo, -1 when none."""
        p = lo + 1 + NL
        if p >= 2 * NL:
            return -1
        while True:
            if ms[p] != INF:
                if p >= NL:
                    return p - NL
                p <<= 1
                continue
            while p & 1:
                p >>= 1
            if p == 0:
                return -1
            p += 1

    def q_add(i: int) -> None:
        nonlocal qn, use_tree, first_hint
        qn += 1
        r = rank[i]
        if r < first_hint:
            first_hint = -1  # no longer the first pending job (linear priority: a new job sorts first)
        if use_tree:
            ix_add(r, size[i], est[i], cls[i])
            return
        kr = (r << RS) | i if RS else i
        if not small or kr > small[-1]:
            small.append(kr)
        else:
            insort(small, kr)
        if qn > TREE_ON:
            for kr in small:
                j = kr & RM if RS else kr
                ix_add(kr >> RS, size[j], est[j], cls[j])
            small.clear()
            use_tree = True

    def tree_off() -> None:
        nonlocal use_tree
        r = ix_next_pending(-1)
        while r >= 0:
            small.append((r << RS) | at_rank[r] if RS else r)
            r = ix_next_pending(r)
        for kr in small:
            ix_del(kr >> RS, cls[kr & RM if RS else kr])
        use_tree = False

    def pass_fast_ix(t: float) -> None:
        """pass_fast on ranks: the same jobs start, in the same order (see the module doc)."""
        nonlocal qn, easy_valid, easy_shadow, easy_extra, easy_headrank, first_hint
        if not use_tree:
            k = 0  # the head run
            for kr in small:
                i = kr & RM if RS else kr
                if size[i] > free:
                    break
                start_job(i, t)
                k += 1
            if k:
                del small[:k]
                qn -= k
                if not qn:
                    easy_valid = False
                    return
            easy_valid = True
            easy_headrank = small[0] >> RS
            if free == 0:  # (as in the tree below)
                easy_shadow, easy_extra = -INF, -1
                return
            started, easy_shadow, easy_extra = easy_backfill(small, RM, size, est, t, free, 1, running)
            for kr in started:
                start_job(kr & RM if RS else kr, t)
                del small[bisect_left(small, kr)]
            qn -= len(started)
            return
        r = first_hint if first_hint >= 0 and ms[NL + first_hint] != INF else ix_first()
        while r >= 0 and size[at_rank[r]] <= free:
            start_job(at_rank[r], t)
            ix_del(r, cls[at_rank[r]])
            qn -= 1
            r = ix_after(r)
        if r < 0:
            easy_valid = False
            tree_off()
            return
        easy_valid = True
        easy_headrank = first_hint = r
        if not backfill or free == 0:
            # free == 0: nothing can start before the next end, and an end brings a full pass
            easy_shadow, easy_extra = -INF, -1
        else:
            easy_shadow, easy_extra = easy_search(at_rank[r], size, est, t, free, running, ix_next, start_ix)
        if qn < TREE_OFF:
            tree_off()

    def start_ix(i: int, t: float) -> None:
        """Start job i of the tree (easy_search's pick)."""
        nonlocal qn
        start_job(i, t)
        ix_del(rank[i], cls[i])
        qn -= 1

    def start_arrivals_ix(t: float, started: list[int]) -> None:
        """Start the arrivals easy_arrivals picked (the indexed queue's)."""
        nonlocal qn
        for i in started:
            r = rank[i]
            if use_tree:
                ix_del(r, cls[i])
            else:
                del small[bisect_left(small, (r << RS) | i if RS else i)]
            qn -= 1
            start_job(i, t)

    def pass_general(t: float) -> None:
        started = set()
        if kind == "sfs":
            for i in queue:
                if free == 0:
                    break
                a = acct[i]
                if occ[a] <= target[a] and size[i] <= free:
                    start_job(i, t)  # occ re-checked at the next job (placement updates it)
                    started.add(i)
        picked = general_pick(queue, -1, size, est, t, free, running, depth, backfill, started)
        for i in picked:
            start_job(i, t)
        for i in (*started, *picked):  # (SFS: its first loop's starts too)
            dequeue(i)

    # gate
    ledger: set[int] = set()
    gate_opts = None
    if kind == "gate":
        gate_opts = GateOptions(
            action=policy.gate_action,
            nice_value=policy.gate_nice,
            max_actions=policy.gate_max_actions,
        )
    job_ids = [j.job_id for j in jobs]
    id_ix = {jid: i for i, jid in enumerate(job_ids)}
    users = [j.user for j in jobs]

    def gate_now(t: float) -> tuple[bool, bool]:
        """A gate tick at t (easycore's): (it acted, it deferred actions)."""
        def prio(i: int) -> int:
            return int(aw * (t - eligible[i]) + sw * size[i] - nice[i])

        assert gate_opts is not None  # (a gate tick only under the gate policy)
        plan = gate_tick(t, [i for _, i in running], queue, prio, _qjob, allocs, gate_opts, job_ids, id_ix, held,
                         ledger, eligible, nice, dequeue, rejoin, out)
        return bool(plan.actions), bool(plan.deferred)

    def rejoin(i: int, t: float) -> None:
        enqueue(i)

    def _qjob(i: int, state: str, reason: str, prio: int) -> QueueJob:
        return QueueJob(
            job_id=job_ids[i],
            user=users[i],
            account=acct_names[acct[i]],
            partition="sim",
            qos="normal",
            state=state,
            nodes=size[i],
            cpus=size[i],
            priority=prio,
            nice=nice[i],
            reason=reason,
            submit=submit[i],
            start=start[i] if state == "RUNNING" else None,
            time_limit_s=int(est[i]),
        )

    # main loop
    ai = 0
    done = 0
    t0 = submit[0] if n else 0.0
    sched_iv = policy.schedule_interval_s
    gate_iv = policy.gate_interval_s
    next_gate = t0 if kind == "gate" else INF
    next_sched = INF
    events = 0
    tick_every = 4096
    horizon = INF if max_time is None else t0 + max_time
    stall_ticks = 0
    gate_dirty = True
    while True:
        t = INF
        if ai < n:
            t = submit[ai]
        if heap and heap[0][0] < t:
            t = heap[0][0]
        if next_sched < t:  # noqa: PLR1730 - once per event: no min() call
            t = next_sched
        if next_gate < t and (ai < n or heap or queue or ledger):
            t = next_gate
        if t == INF or t > horizon:
            break
        events += 1
        ended = False
        while heap and heap[0][0] <= t:
            _, i = heapq.heappop(heap)
            free += size[i]
            occ[acct[i]] -= size[i]
            k = bisect_left(running, (start[i] + est[i], i))
            del running[k]
            ended = True
            done += 1
        new: list[int] = []
        if indexed:
            while ai < n and submit[ai] <= t:
                q_add(ai)
                new.append(ai)
                ai += 1
        else:
            while ai < n and submit[ai] <= t:
                enqueue(ai)
                new.append(ai)
                ai += 1
        acted = False
        ticked = next_gate <= t
        if ticked:
            if gate_dirty or new or ended:
                acted, deferred = gate_now(t)
                gate_dirty = acted or deferred
            else:
                out.gate_ticks += 1
            next_gate = t + gate_iv
        changed = ended or acted or bool(new)
        if changed:
            gate_dirty = True
        if sched_iv > 0:
            if changed and next_sched == INF:
                next_sched = t0 + math.ceil((t - t0) / sched_iv) * sched_iv
            run_pass = t >= next_sched
            if run_pass:
                next_sched = INF
        else:
            run_pass = changed
        if not (qn if indexed else queue):
            easy_valid = False
        elif run_pass:
            out.passes += 1
            # arrivals alone with a kept EASY state: the arrivals step (easycore), called from here
            # (a closure around it cost FCFS 3% of its run: one more call at every arrival)
            if not fast:
                pass_general(t)
            elif ended or acted or sched_iv > 0 or not easy_valid:
                (pass_fast_ix if indexed else pass_fast)(t)
            elif free == 0:
                pass  # nothing starts, and the kept state is read again only after an end's full pass
            elif indexed:
                picked = easy_arrivals(new, rank_of, easy_headrank, -1, size, est, t, free, easy_shadow,
                                       easy_extra)
                if picked is None:
                    pass_fast_ix(t)
                else:
                    started, easy_extra = picked
                    if started:
                        start_arrivals_ix(t, started)
            else:
                picked = easy_arrivals(new, key_of, easy_headkey, -1, size, est, t, free, easy_shadow, easy_extra)
                if picked is None:
                    pass_fast(t)
                else:
                    started, easy_extra = picked
                    for i in started:
                        dequeue(i)
                        start_job(i, t)
        # a gate that holds everything with an empty machine would never end: stop it (the rule: easycore)
        if ticked:  # (no call at the other events, nor for the other policies)
            stall_ticks = gate_stall(stall_ticks, bool(heap), ai < n, bool(queue or held or ledger), changed)
            if gate_stop(stall_ticks, t - t0, out.notes):
                break
        if progress is not None and events % tick_every == 0:
            progress(done, n)
    out.events = events
    out.unfinished = sum(1 for x in end if x == INF)
    if progress is not None:
        progress(done, n)
    return out

