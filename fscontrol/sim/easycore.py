"""The scheduling steps both event loops run, written once: EASY's head, shadow and backfill pick
(at a pass and for the arrivals alone), the general pass with an availability profile, and the
gate's stall rule.

`engine` (FCFS, EASY, linear priority, SFS, the gate) and `mfcore` (priority/multifactor) keep
their own queues: the static engine a list of job indices (or rank keys), the multifactor engine
sorted integer keys. A queue entry `kq` names job `kq & mask` (mask -1: the entry is the index).
These functions only decide: they return which entries start, in queue order, and the caller
starts them (the same jobs in the same order as a loop that started each as it went: nothing the
decision reads changes when a job starts but the free nodes, tracked here, and the running jobs,
which the shadow takes the head run's jobs into). EASY's whole pass is one call (`easy_pass`): in
the plain engines a call costs about what a short queue's pick does (docs/benchmarks.md).

Plain Python, and compiled with mfcore: `fscontrol.sim.accel` builds the compiled engine from
mfcore.py with this file's body in place of mfcore's import of it, so the compiled loop calls these
natively (hence: no name of its own at module level but these functions, and only imports mfcore
may repeat).
"""

from __future__ import annotations

import bisect
import math

from .availability import Profile


def easy_pass(q: list[int], mask: int, size: list[int], est: list[float], t: float, free: int, smin: int,
              running: list[tuple[float, int]] | None,
              shadow: float = -math.inf, extra: int = -1) -> tuple[int, list[int], float, int]:
    """EASY at one pass, in one call: `(k, started, shadow, extra)`.

    With `running` (the sorted (predicted end, index) of the running jobs): the first `k` entries
    of `q` start in order, each in the nodes the ones before it left; the first that does not fit
    is the head. Its shadow time is the first predicted end by which enough nodes are free, every
    job predicted to end then included (leaving the ties out undercounts the extra nodes: 2.8 min
    of mean wait on the SDSC log), and `extra` the nodes it leaves spare then. Then the backfill
    pick: the entries behind the head (`started`, in queue order) whose job fits in the free nodes
    and ends by the shadow time or fits in the extra nodes, `extra` what is left of those. The
    walk stops once fewer than `smin` nodes are free (no queued job is smaller); with fewer than
    `smin` free after the head run (or no head) neither shadow nor pick is made: `(k, [], -inf,
    -1)` (no backfill: a `smin` above the machine's size). A lone job that does not fit as `q`
    (with `smin` 0) gives its shadow and extra.

    With `running` None, the arrival-only pass: `q` the new entries in queue order, all behind a
    kept head, picked against its kept `shadow` and `extra` (`k` is 0).

    Only decides: the caller starts the head run and then `started` (the same jobs in the same
    order as a loop that started each as it went: nothing here reads what a start changes but
    the free nodes, tracked here)."""
    k = 0
    lo = 0
    started: list[int] = []
    if running is not None:
        for kq in q:
            s = size[kq & mask]
            if s > free:
                break
            free -= s
            k += 1
        if k == len(q) or free < smin:
            return k, started, -math.inf, -1
        if k:  # the head run's jobs run too, from now to their predicted ends (as the caller will put them)
            running = running[:]
            for kq in q[:k]:
                bisect.insort(running, (t + est[kq & mask], kq & mask))
        hsize = size[q[k] & mask]
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
        lo = k + 1
    if free > 0:
        for kq in (q[lo:] if lo else q):  # (entries, not positions: a position costs a lookup a job)
            i = kq & mask
            s = size[i]
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
    return k, started, shadow, extra


def drop_started(q: list[int], started: list[int], k: int) -> None:
    """Take the started entries out of a queue sorted by entry: the entries `started` (all behind
    the first `k`) and the first `k`."""
    for kq in started:
        del q[bisect.bisect_left(q, kq)]
    del q[:k]


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
        i = kq & mask
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


def gate_stall(stuck: bool, stall: int) -> int:
    """The gate's stall count after a gate tick: a gate that holds everything on an empty machine
    would never end, so a run stops once this passes 3 (four stuck ticks in a row)."""
    return stall + 1 if stuck else 0
