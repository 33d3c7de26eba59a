"""The scheduling steps both event loops run, written once: EASY's shadow and backfill pick (at a
pass and for the arrivals alone, `easy_arrivals` the whole step at arrivals), the general pass
with an availability profile, and the gate's steps: its tick (its view of the queue, its plan,
the plan applied to the queue) and its stall rule and stop. The large queues' fast paths search their
own structures for the next job to backfill, with `easy_fits`'s test, under `easy_search`.

`engine` (FCFS, EASY, linear priority, SFS, the gate) and `mfcore` (priority/multifactor) keep
their own queues: the static engine a list of job indices (or rank keys), the multifactor engine
sorted integer keys. A queue entry `kq` names job `kq & mask` (mask -1: the entry is the index).
Each loop starts its head run itself (the jobs in order while they fit: its own queue's walk, a
few lines, with no call where nothing fits), then, when a job behind the head could start, makes
one call here. The walks (easy_backfill, general_pick) only decide: they return which entries
start, in queue order, and the caller starts them (the same jobs in the same order as a loop that
started each as it went: nothing the decision reads changes when a job starts but the free nodes,
tracked here). easy_search and gate_tick (gate_apply) act, but on the caller's queue only through the
functions it passes (start a job; take one out of the queue, put it back). In the
plain engines a call costs about what a short queue's pick does (docs/benchmarks.md), hence one
call a pass and none on the paths where nothing can start.

Plain Python, and compiled with mfcore: `fscontrol.sim.accel` builds the compiled engine from
mfcore.py with this file's body in place of mfcore's import of it, so the compiled loop calls these
natively (hence: no name of its own at module level but these functions and its imports, none of
them a name mfcore gives another meaning).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import Any

from fscontrol.act.gate import AGENT_HOLD_REASON, GateOptions, GatePlan, plan_gate
from ..snaprecords import QueueJob
from .availability import Profile


def easy_backfill(q: list[int], mask: int, size: list[int], est: list[float], t: float, free: int, smin: int,
                  running: list[tuple[float, int]] | None,
                  shadow: float = -math.inf, extra: int = -1) -> tuple[list[int], float, int]:
    """EASY's backfill, in one call: `(started, shadow, extra)`.

    With `running` (the sorted (predicted end, index) of every running job, the head run's
    included: the caller has started it): `q[0]` is the head, the first entry that does not fit in
    the `free` nodes. Its shadow time is the first predicted end by which enough nodes are free,
    every job predicted to end then included (leaving the ties out undercounts the extra nodes:
    2.8 min of mean wait on the SDSC log), and `extra` the nodes it leaves spare then. Then the
    pick: the entries behind the head (`started`, in queue order) whose job fits in the free nodes
    and ends by the shadow time or fits in the extra nodes, `extra` what is left of those. The walk
    stops once fewer than `smin` nodes are free (no queued job is smaller). `q` the head alone
    gives its shadow and extra.

    With `running` None, the arrival-only pick: `q` the new entries in queue order, all behind a
    kept head, picked against its kept `shadow` and `extra`.

    A queue entry `kq` names job `kq & mask`. Only decides: the caller starts `started` in order
    (the same jobs in the same order as a loop that started each as it went: nothing here reads
    what a start changes but the free nodes, tracked here)."""
    started: list[int] = []
    if running is not None:
        hsize = size[q[0] if mask == -1 else q[0] & mask]
        avail = free
        m = len(running)
        shadow, extra = math.inf, 0  # (never kept: the head fits once every running job ended)
        for j, (e, i) in enumerate(running):
            avail += size[i]
            if avail >= hsize:
                j += 1
                while j < m and running[j][0] == e:
                    avail += size[running[j][1]]
                    j += 1
                shadow, extra = e, avail - hsize
                break
    if free > 0:
        # the whole queue, entries not positions (the head does not fit: the size test passes it
        # over), the job named again only where it fits: the cheapest walk (most entries fail)
        for kq in q:
            i = kq if mask == -1 else kq & mask  # (no mask op where entries are indices: in plain
            s = size[i]                           # Python each op makes an int, 0.4 G of EASY's run)
            if s <= free:
                if t + est[i] <= shadow:
                    pass
                elif s <= extra:
                    extra -= s
                else:
                    continue
                free -= s
                started.append(kq)
                if free < smin:
                    break
    return started, shadow, extra


def easy_arrivals(new: list[int], key: Callable[[int], Any] | None, head: Any, mask: int, size: list[int],
                  est: list[float], t: float, free: int, shadow: float, extra: int) -> tuple[list[int], int] | None:
    """EASY's step at arrivals alone (no job ended, the queue's order unchanged since the last
    pass): `(started, extra)`, or None when a full pass is needed.

    `new`: the entries that arrived at t, in any order; `key`: an entry's queue key (the order the
    queue sorts by; None where entries are their own keys), `head` the kept head's. When one
    sorts before the kept head the head changes: None. Else the new entries, put in queue order
    (simultaneous arrivals are tried as a full pass would try them, whatever order they came in:
    a later one may sort first), are picked against the kept `shadow` and `extra`
    (easy_backfill's arrival-only pick); `started` in queue order, `extra` what is left. Only
    decides: the caller takes `started` out of its queue and starts them in order. (A key
    function, not a list of keys: this runs at every arrival, and building the list cost FCFS 7%
    of its whole run.) Where no node is free the step starts nothing and only a changed head
    would differ, which nothing reads before the next job end (a full pass): a caller may skip
    the call then (the static engine does: 0.2 G of EASY's 12 G instructions on the SDSC log)."""
    if key is None:
        for k in new:
            if k < head:
                return None
    else:
        for i in new:
            if key(i) < head:
                return None
    # nothing starts (the usual case): the kept state starts nothing behind the head (extra -1: no
    # backfill, or no node free at the pass; a kept shadow's extra is never below 0), no node is
    # free, or the one new job does not fit
    if extra < 0 or free <= 0:
        return _NOTHING, extra
    if len(new) == 1:  # one arrival (the usual case): easy_fits's test, as easy_search takes it (no walk)
        kq = new[0]
        i = kq if mask == -1 else kq & mask
        if not easy_fits(size[i], est[i], free, t, shadow, extra):
            return _NOTHING, extra
        return [kq], (extra if t + est[i] <= shadow else extra - size[i])
    nq = sorted(new) if key is None else sorted(new, key=lambda i: (key(i), i))
    started, _, extra = easy_backfill(nq, mask, size, est, t, free, 0, None, shadow, extra)
    return started, extra


_NOTHING: list[int] = []  # (never written: the callers only read `started`)


def easy_fits(s: int, limit: float, f: int, t: float, shadow: float, extra: int) -> bool:
    """EASY's backfill test for one queued job behind the head (s nodes, time limit `limit`): it fits
    in the f free nodes and ends by the shadow time or fits in the extra nodes (easy_backfill's walk
    makes this test inline, entry by entry)."""
    return s <= f and (t + limit <= shadow or s <= extra)


def easy_search(head: int, size: list[int], est: list[float], t: float, free: int,
                running: list[tuple[float, int]], first: Callable[[float, int, float, int], int],
                start: Callable[[int, float], None]) -> tuple[float, int]:
    """EASY's backfill where the queue is searched, not walked (the large queues' fast paths: the
    static engine's rank tree, mfcore's merged per-association queue): `(shadow, extra)`.

    Job `head` (the first queued job, larger than the `free` nodes) gives the shadow time and the
    extra nodes (easy_backfill's). Then, while nodes are free, `first(t, f, shadow, extra)` names
    the first queued job in queue order that passes `easy_fits` with f free nodes (-1: none), and
    `start(i, t)` starts it (out of the caller's queue); a job that ends after the shadow takes its
    nodes from the extra ones. The same jobs in the same order as easy_backfill's walk (each job
    it starts is the first one left that passes, with the free and extra nodes as they then are)."""
    _, shadow, extra = easy_backfill([head], -1, size, est, t, free, 0, running)
    f = free
    while f > 0:
        i = first(t, f, shadow, extra)
        if i < 0:
            break
        s = size[i]
        if t + est[i] > shadow:
            extra -= s  # (it passed easy_fits on its size: s <= extra)
        start(i, t)
        f -= s
    return shadow, extra


def drop_started(q: list[int], started: list[int]) -> None:
    """Take the started entries out of a queue sorted by entry."""
    for kq in started:
        del q[bisect.bisect_left(q, kq)]


def general_pick(q: list[int], mask: int, size: list[int], est: list[float], t: float, free: int,
                 running: list[tuple[float, int]], depth: int, backfill: bool, skip: set[int]) -> list[int]:
    """A pass with an availability profile: reservations for the first `depth` jobs that cannot
    start, EASY-style backfill around them (none with `backfill` False: the pass ends at the
    depth-th such job). The entries that start now, in queue order; jobs in `skip` (already started
    by the caller) are passed over."""
    prof = Profile(t, free, [(e, size[i]) for e, i in running])
    reserved = 0
    started: list[int] = []
    for kq in q:
        i = kq if mask == -1 else kq & mask
        if skip and i in skip:
            continue
        s = size[i]
        d = est[i]
        if s <= free and prof.min_free(t, t + d) >= s:
            prof.reserve(t, t + d, s)
            free -= s
            started.append(kq)
            continue
        if reserved < depth:
            r = prof.earliest(s, d)
            prof.reserve(r, r + d, s)
            reserved += 1
            if reserved == depth and not backfill:
                break  # the primary loop ends at the depth-th job that does not fit
        elif free == 0:
            break
    return started


def gate_queue(running: list[int], queued: list[int], held: list[int], prio: Callable[[int], int],
               job: Callable[[int, str, str, int], QueueJob]) -> list[QueueJob]:
    """The queue as the gate sees it at a tick (squeue's view, in one rule for both engines): the
    running jobs (RUNNING, no reason, priority 0), the queued ones (PENDING, reason Priority,
    priority `prio(i)`: the one they are queued by) and the held ones (PENDING, the agent's hold
    reason, priority 0: Slurm gives a held job priority 0, so the gate releases them oldest
    first). `job(i, state, reason, priority)` makes job i's record."""
    qj = [job(i, "RUNNING", "None", 0) for i in running]
    qj += [job(i, "PENDING", "Priority", prio(i)) for i in queued]
    qj += [job(i, "PENDING", AGENT_HOLD_REASON, 0) for i in held]
    return qj


def gate_apply(plan: Any, id_ix: dict[str, int], t: float, nice_value: int, held: set[int], ledger: set[int],
               eligible: list[float], nice: list[int], leave: Callable[[int], None],
               join: Callable[[int, float], None], tally: Any) -> None:
    """The gate's plan (`fscontrol.act.gate.plan_gate`'s) applied to a simulated queue at time t,
    each action counted in the run's record `tally` (its holds, releases, nices and unnices).

    The ledger first loses the entries the plan calls stale. Then each action in order: a hold
    takes the job out of the queue (`leave(i)`) and holds it; a release restarts its age
    (`eligible[i] = t`: no ACCRUE_ALWAYS) and queues it again (`join(i, t)`); a nice or an un-nice
    takes it out, sets its nice (`nice_value`, or 0) and queues it again, its key made anew. The
    ledger gains the held and niced jobs and loses the released and un-niced ones. An "unmark"
    (each release's follow-up: the agent's AdminComment cleared) is nothing the scheduler sees.
    `leave` runs before the job's age or nice changes (the queue finds the job by its old key),
    `join` after. `id_ix`: job id -> job index; `held`, `ledger`: job indices."""
    for jid in plan.stale_ledger:
        ledger.discard(id_ix[jid])
    holds = releases = nices = unnices = 0
    for a in plan.actions:
        kind = a.kind
        i = id_ix[a.job_id]
        if kind == "hold":
            leave(i)
            held.add(i)
            ledger.add(i)
            holds += 1
        elif kind == "release":
            held.discard(i)
            ledger.discard(i)
            eligible[i] = t
            join(i, t)
            releases += 1
        elif kind == "nice":
            leave(i)
            nice[i] = nice_value
            ledger.add(i)
            join(i, t)
            nices += 1
        elif kind == "unnice":
            leave(i)
            nice[i] = 0
            ledger.discard(i)
            join(i, t)
            unnices += 1
    tally.holds += holds
    tally.releases += releases
    tally.nices += nices
    tally.unnices += unnices


def gate_tick(t: float, running: list[int], queued: list[int], prio: Callable[[int], int],
              job: Callable[[int, str, str, int], QueueJob], allocs: Any, opts: GateOptions, ids: list[str],
              id_ix: dict[str, int], held: set[int], ledger: set[int], eligible: list[float], nice: list[int],
              leave: Callable[[int], None], join: Callable[[int, float], None], tally: Any) -> GatePlan:
    """One tick of the agent's gate on a simulated queue at time t: the queue as the gate sees it
    (gate_queue: `running`, `queued` in queue order, the held jobs), `plan_gate`'s plan for it (on
    the workload's allocations `allocs`, the ledger's jobs each to be restored to Nice 0), applied
    (gate_apply), the tick counted in the run's record (`tally.gate_ticks`). The plan (its actions
    and what it deferred). `ids`: job index -> job id."""
    qj = gate_queue(running, queued, list(held), prio, job)
    plan = plan_gate(qj, allocs, {ids[i]: 0 for i in ledger}, opts, now=t)
    tally.gate_ticks += 1
    gate_apply(plan, id_ix, t, opts.nice_value, held, ledger, eligible, nice, leave, join, tally)
    return plan


def gate_stall(stall: int, running: bool, arriving: bool, waiting: bool, changed: bool) -> int:
    """The gate's stall count after a gate tick: `stall + 1` when the tick is stuck, else 0. A run
    stops once the count passes 3 (four stuck ticks in a row).

    A tick is stuck when the queue can make no progress without the gate: no job runs (`running`
    False) and none is left to arrive (`arriving` False), jobs wait (`waiting`: queued, held or in
    the gate's ledger), and nothing happened at the tick (`changed` False: no end, no arrival, no
    gate action). Then the last pass, on an empty machine, started none of the queued jobs: every
    one is larger than the machine or queued behind one that is; nothing ends or arrives to change
    that, so only the gate could (a release, a nice), and it does not act."""
    return stall + 1 if not running and not arriving and waiting and not changed else 0


def gate_stop(stall: int, elapsed: float, notes: list[str]) -> bool:
    """True when the run stops: the gate's stall count (gate_stall's) passed 3, four stuck ticks in
    a row; then the run's `notes` say when (`elapsed`: seconds since the run's first arrival, the
    time base of the engines' other notes)."""
    if stall > 3:
        notes.append(f"stopped at t={elapsed:.0f} s: nothing runs and the gate does not act")
        return True
    return False
