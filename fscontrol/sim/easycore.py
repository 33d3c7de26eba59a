"""The scheduling steps both event loops run, written once: EASY's shadow and backfill pick (at a
pass and for the arrivals alone), the general pass with an availability profile, and the gate's
stall rule.

`engine` (FCFS, EASY, linear priority, SFS, the gate) and `mfcore` (priority/multifactor) keep
their own queues: the static engine a list of job indices (or rank keys), the multifactor engine
sorted integer keys. A queue entry `kq` names job `kq & mask` (mask -1: the entry is the index).
Each loop starts its head run itself (the jobs in order while they fit: its own queue's walk, a
few lines, with no call where nothing fits), then, when a job behind the head could start, makes
one call here. These functions only decide: they return which entries start, in queue order, and
the caller starts them (the same jobs in the same order as a loop that started each as it went:
nothing the decision reads changes when a job starts but the free nodes, tracked here). In the
plain engines a call costs about what a short queue's pick does (docs/benchmarks.md), hence one
call a pass and none on the paths where nothing can start.

Plain Python, and compiled with mfcore: `fscontrol.sim.accel` builds the compiled engine from
mfcore.py with this file's body in place of mfcore's import of it, so the compiled loop calls these
natively (hence: no name of its own at module level but these functions, and only imports mfcore
may repeat).
"""

from __future__ import annotations

import bisect
import math

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
        hsize = size[q[0] & mask]
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
            s = size[kq & mask]
            if s <= free:
                i = kq & mask
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
