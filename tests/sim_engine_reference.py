"""REFERENCE COPY of fscontrol/sim/engine.py as it was before the size/estimate index (issue #15),
kept verbatim so tests can check the new engine gives the same schedule. Do not edit (one
change since: simultaneous arrivals tried in queue order, the engine's bug fixed in both, review
#29 item 4).

The discrete-event core: a heap of job ends, a sorted pending queue, one pass per event time.

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
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable
from dataclasses import dataclass, field

from fscontrol.act.gate import GateOptions, plan_gate
from fscontrol.snaprecords import QueueJob
from fscontrol.sim.policies import Policy
from fscontrol.sim.workload import Workload

INF = math.inf
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


class _Profile:
    """Free nodes over time: F[k] on [T[k], T[k+1]), the last step lasting forever."""

    __slots__ = ("F", "T")

    def __init__(self, now: float, free: int, ends: list[tuple[float, int]]):
        T = [now]
        F = [free]
        for e, s in ends:  # (predicted end, size), sorted
            if e <= T[-1]:
                F[-1] += s
            else:
                T.append(e)
                F.append(F[-1] + s)
        self.T, self.F = T, F

    def _split(self, t: float) -> int:
        T = self.T
        k = bisect_left(T, t)
        if k < len(T) and T[k] == t:
            return k
        T.insert(k, t)
        self.F.insert(k, self.F[k - 1])
        return k

    def min_free(self, a: float, b: float) -> int:
        T, F = self.T, self.F
        k = bisect_right(T, a) - 1
        m = F[k]
        k += 1
        n = len(T)
        while k < n and T[k] < b:
            if F[k] < m:  # noqa: PLR1730 - hot loop: a comparison is cheaper than a min() call
                m = F[k]
            k += 1
        return m

    def reserve(self, a: float, b: float, s: int) -> None:
        i = self._split(a)
        j = self._split(b) if b != INF else len(self.T)
        F = self.F
        for k in range(i, j):
            F[k] -= s

    def earliest(self, s: int, dur: float) -> float:
        for t in self.T:
            if self.min_free(t, t + dur) >= s:
                return t
        return INF  # pragma: no cover - the last step is the whole machine


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
    held = [False] * n

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

    def key_of(i: int) -> tuple:
        if use_prio:
            return (aw * eligible[i] - sw * size[i] + nice[i], eligible[i], i)
        return (submit[i], i)

    queue: list[int] = []
    qkeys: list[tuple] = []
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

    def remove_positions(pos: list[int]) -> None:
        for p in reversed(pos):
            del queue[p]
            del qkeys[p]

    # EASY state kept between passes for the arrival-only fast path
    easy_valid = False
    easy_shadow = 0.0
    easy_extra = 0
    easy_headkey: tuple = ()

    def shadow_of(hsize: int) -> tuple[float, int]:
        """The head job's shadow time and the nodes it leaves spare then ("extra")."""
        avail = free
        n = len(running)
        for k, (e, i) in enumerate(running):
            avail += size[i]
            if avail >= hsize:
                # every job predicted to end at the shadow time frees its nodes then: leaving
                # the ties out undercounts the extra nodes (2.8 min of mean wait on the SDSC log)
                k += 1
                while k < n and running[k][0] == e:
                    avail += size[running[k][1]]
                    k += 1
                return e, avail - hsize
        return INF, 0  # pragma: no cover

    def pass_fast(t: float) -> None:
        nonlocal free, easy_valid, easy_shadow, easy_extra, easy_headkey
        q = queue
        nq = len(q)
        k = 0
        while k < nq and size[q[k]] <= free:
            start_job(q[k], t)
            k += 1
        if k == nq:
            del queue[:], qkeys[:]
            easy_valid = False
            return
        head = q[k]
        if not backfill:
            del queue[:k], qkeys[:k]
            easy_valid = True
            easy_headkey = qkeys[0]
            easy_shadow, easy_extra = -INF, -1
            return
        shadow, extra = shadow_of(size[head])
        started: list[int] = []
        f = free
        if f > 0:
            for p in range(k + 1, nq):
                i = q[p]
                s = size[i]
                if s <= f:
                    if t + est[i] <= shadow:
                        pass
                    elif s <= extra:
                        extra -= s
                    else:
                        continue
                    start_job(i, t)
                    f -= s
                    started.append(p)
                    if f == 0:
                        break
        if started:
            remove_positions(started)
        del queue[:k], qkeys[:k]
        easy_valid = True
        easy_shadow, easy_extra = shadow, extra
        easy_headkey = qkeys[0]

    def arrivals_fast(t: float, new: list[int]) -> bool:
        """Check only the new jobs against the kept EASY state; False: a full pass is needed."""
        nonlocal easy_extra
        for i in new:
            if key_of(i) < easy_headkey:
                return False
        # in queue order, as a full pass (the one change to the verbatim copy: it tried them in
        # the workload's list order, a bug the engine had too, review #29 item 4)
        for i in sorted(new, key=key_of):
            s = size[i]
            if s <= free:
                if t + est[i] <= easy_shadow:
                    pass
                elif s <= easy_extra:
                    easy_extra -= s
                else:
                    continue
                dequeue(i)
                start_job(i, t)
        return True

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
        prof = _Profile(t, free, [(e, size[i]) for e, i in running])
        reserved = 0
        for i in queue:
            if i in started:
                continue
            s = size[i]
            d = est[i]
            if s <= free and prof.min_free(t, t + d) >= s:
                start_job(i, t)
                prof.reserve(t, t + d, s)
                started.add(i)
                continue
            if reserved < depth:
                r = prof.earliest(s, d)
                prof.reserve(r, r + d, s)
                reserved += 1
                if reserved == depth and not backfill:
                    break  # the primary loop ends at the depth-th job that does not fit
            elif free == 0:
                break
        if started:
            remove_positions([p for p, i in enumerate(queue) if i in started])

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

    def gate_tick(t: float) -> tuple[bool, bool]:
        qj: list[QueueJob] = []
        for _, i in running:
            qj.append(_qjob(i, "RUNNING", "None", t))
        for i in queue:
            qj.append(_qjob(i, "PENDING", "Priority", t))
        for i in ledger:
            if held[i]:
                qj.append(_qjob(i, "PENDING", "JobHeldAdmin", t))
        plan = plan_gate(qj, allocs, {job_ids[i]: 0 for i in ledger}, gate_opts, now=t)
        out.gate_ticks += 1
        for jid in plan.stale_ledger:
            ledger.discard(id_ix[jid])
        for a in plan.actions:
            i = id_ix[a.job_id]
            if a.kind == "hold":
                dequeue(i)
                held[i] = True
                ledger.add(i)
                out.holds += 1
            elif a.kind == "release":
                held[i] = False
                eligible[i] = t  # accrue time restarts (no ACCRUE_ALWAYS)
                ledger.discard(i)
                enqueue(i)
                out.releases += 1
            elif a.kind == "nice":
                dequeue(i)
                nice[i] = policy.gate_nice
                enqueue(i)
                ledger.add(i)
                out.nices += 1
            else:
                dequeue(i)
                nice[i] = 0
                enqueue(i)
                ledger.discard(i)
                out.unnices += 1
        return bool(plan.actions), bool(plan.deferred)

    def _qjob(i: int, state: str, reason: str, t: float) -> QueueJob:
        prio = int(aw * (t - eligible[i]) + sw * size[i] - nice[i]) if state == "PENDING" else 0
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
        while ai < n and submit[ai] <= t:
            enqueue(ai)
            new.append(ai)
            ai += 1
        acted = False
        if next_gate <= t:
            if gate_dirty or new or ended:
                acted, deferred = gate_tick(t)
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
        if not queue:
            easy_valid = False
        elif run_pass:
            out.passes += 1
            if not fast:
                pass_general(t)
            elif ended or acted or sched_iv > 0 or not easy_valid or not arrivals_fast(t, new):
                pass_fast(t)
        # a gate that holds everything with an empty machine would never end: stop it
        if kind == "gate" and not heap and ai >= n and (queue or ledger) and not acted and not new:
            stall_ticks += 1
            if stall_ticks > 3:
                out.notes.append(f"stopped at t={t:.0f}: nothing runs and the gate does not act")
                break
        else:
            stall_ticks = 0
        if progress is not None and events % tick_every == 0:
            progress(done, n)
    out.events = events
    out.unfinished = sum(1 for x in end if x == INF)
    if progress is not None:
        progress(done, n)
    return out

