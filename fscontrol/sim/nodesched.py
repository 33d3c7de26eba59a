"""Backfill on nodes, for the engine: `nodeplace.backfill_cycle`'s starts, pruned.

The multifactor engine (mfcore.py) on a machine of several nodes with a node rule
(`SlurmSched.node_rule`, set from a capture's Slurm version by run.py `_node_sched`) keeps each
node's free CPUs and each running job's CPUs per node (`nodeplace.place` at its start), and runs
this backfill cycle instead of `slurmsched.backfill_starts`' pooled one. It starts the jobs
`nodeplace.backfill_cycle` starts, in the same order on the same nodes (tests/test_nodesched.py
checks it on random machines and queues), at a fraction of the cost:

* **the early stop**: a job starts in a cycle only at its first try (start_res = now), and only if
  the free CPUs of the nodes the cycle's map leaves it over [now, now + limit] add up to its
  tasks (`place` fits a job of one-CPU tasks iff they do). The map only gains holds and the free
  CPUs only drop during a cycle, so once no job left in the queue passes that test, nothing more
  starts: the cycle stops (the reservations of the jobs after are never used);
* **the will-run test resumed, not replayed**: for a given set of usable nodes (and, 24.11 on,
  start_res and later_start) the batches of running jobs taken off, and the free CPUs after each,
  are the same for every job: computed once per cycle and set (until a job starts), and a job's
  plan is the first batch where the usable free CPUs add up to its tasks (a bisect), `place`
  run there once.

Node sets are bit masks (node i: bit i)."""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any, Collection, Sequence

from .nodeplace import VERSIONS, place

__all__ = ["node_rule", "backfill_nodes"]


# the first release of each rule: 26.05's (cons_tres/job_test.c `_get_last_relevant_job`) came in
# 25.11 (SchedMD commit 977bb2ee4f: in slurm-25-11-0-1, not in 25-05-0-1)
_RULE_FROM = ((22, 5, "22.05"), (24, 11, "24.11"), (25, 11, "25.11"), (26, 5, "26.05"))


def version_known(slurm_version: str | None) -> bool:
    """Whether a capture's Slurm version reads as MAJOR.MINOR[.x]."""
    parts = (slurm_version or "").split(".")
    return len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit()


def node_rule(slurm_version: str | None) -> str:
    """The backfill rule (`nodeplace.VERSIONS`) of a Slurm version ("22.05.8" -> "22.05", "25.11.2"
    -> "25.11": 26.05's backfill, 24.11's placement of a one-task job): the rule of the last release at or before it that changed it (before 22.05, or a
    version that does not read: 22.05's; the report says so)."""
    if not version_known(slurm_version):
        return "22.05"
    parts = (slurm_version or "").split(".")
    v = (int(parts[0]), int(parts[1]))
    rule = _RULE_FROM[0][2]
    for a, b, r in _RULE_FROM:
        if (a, b) <= v:
            rule = r
    return rule


class _Batches:
    """nodeplace.will_run's states for the usable nodes `m`, made as far as a job needs them and
    resumed for the next (the will-run test resumed, not replayed): `states` (start: None for now;
    the CPUs free per node on the usable nodes; how many jobs of `run` were taken off so far), in
    the order the test tries them, `sums` their free CPUs in all (non-decreasing)."""

    __slots__ = ("run", "sparse", "m", "newer", "until", "c", "k", "window", "end_time", "more", "sums", "states", "gone")

    def __init__(self, cur: list[int], run: list[tuple[float, list[int]]], sparse: list[list[tuple[int, int]]],
                 m: int, now: float, start: float | None, until: float | None, newer: bool) -> None:
        nn = len(cur)
        c = [cur[i] if (m >> i) & 1 else 0 for i in range(nn)]
        self.run, self.sparse, self.m, self.newer, self.until = run, sparse, m, newer, until
        self.sums: list[int] = []
        self.states: list[tuple[float | None, list[int], int]] = []
        if newer and start is None:
            start = now
        if not (newer and start is not None and start > now):
            self._add(None, c, 0)
        k = 0
        if newer and start:
            while k < len(run) and run[k][0] < start:
                for i, x in sparse[k]:
                    if (m >> i) & 1:
                        c[i] += x
                k += 1
            self._add(None, c, k)
        self.c, self.k, self.gone = c, k, k  # (the jobs ending before start: taken off, not in a batch)
        self.window = 30.0
        self.end_time: float | None = None
        self.more = True

    def _add(self, when: float | None, c: list[int], k: int) -> None:
        self.states.append((when, list(c), k))
        self.sums.append(sum(c))

    def extend(self) -> bool:
        """The next batch (False: none left)."""
        if not self.more:
            return False
        jobs, sparse, m, c, k = self.run, self.sparse, self.m, self.c, self.k
        newer, until, window = self.newer, self.until, self.window
        end_time = self.end_time
        last: float | None = None
        nxt: float | None = None
        while True:
            if k >= len(jobs) or (newer and until and jobs[k][0] > until):
                self.more = False
                break
            e = jobs[k][0]
            sp = sparse[k]
            k += 1
            on = False
            for i, x in sp:
                if (m >> i) & 1:
                    c[i] += x
                    on = True
            if not on:
                continue  # no usable node: passed over
            if end_time is None:
                end_time = e + (window - math.fmod(e, window))
            last = e
            if k >= len(jobs):
                self.more = False
                break
            nxt = jobs[k][0]
            if nxt > end_time + window:
                break
        self.k, self.end_time = k, end_time
        if last is None or end_time is None:
            self.more = False
            return False
        while True:
            window *= 2
            if nxt is None or not nxt > end_time + window:
                break
        self.window = window
        self._add(last, c, k)
        return True


def _will_run(n: int, memo: dict, cur: list[int], run: list[tuple[float, list[int]]],
              sparse: list[list[tuple[int, int]]], m: int, now: float, start: float, until: float | None,
              version: str, kill_wait: float = 30.0) -> tuple[float, list[int]] | None:
    """nodeplace.will_run(n, cur, run, now, usable=m, start=, until=, version=), from the memo."""
    newer = version != "22.05"
    key = (m, start, until) if newer else m
    bt = memo.get(key)
    if bt is None:
        bt = memo[key] = _Batches(cur, run, sparse, m, now, start if newer else None, until if newer else None, newer)
    sums = bt.sums
    while not sums or sums[-1] < n:
        if not bt.extend():
            break
    k = bisect_left(sums, n)
    if k == len(sums):
        return None
    when, c, taken = bt.states[k]
    alloc = place(c, n, version=version)
    if alloc is None:  # (cannot happen: one-CPU tasks fit wherever the CPUs add up)
        return None
    if when is None:
        return now, alloc
    last = when
    if version in ("25.11", "26.05"):  # _get_last_relevant_job: the last end on the nodes chosen
        last = max((run[j][0] for j in range(bt.gone, taken) if any((m >> i) & 1 and alloc[i] for i, _ in sparse[j])),
                   default=last)
    if last <= now:
        last = last + kill_wait if last + kill_wait > now else now + 1
    return last, alloc


def backfill_nodes(now: float, queue: Sequence[int], free: Sequence[int], running: Sequence[tuple[float, list[int]]],
                   size: Sequence[int], est: Sequence[float], sc: Any, mask: int = -1, smallest: int = 0,
                   version: str = "22.05", masks: Sequence[int] | None = None,
                   no_reserve: Collection[int] = ()) -> list[tuple[int, list[int]]]:
    """One backfill cycle on nodes at `now`: the jobs it starts, in order, with their CPUs per node.
    `queue`: pending jobs in priority order (indices, or keys whose `mask` bits are the index);
    `free`: each node's free CPUs; `running`: (end = start + limit, or when a completing job's CPUs
    are free; CPUs per node); `sc`: a slurmsched.SlurmSched (bf_max_job_test, bf_resolution_s,
    bf_window_s); `smallest`: no pending job is smaller. The starts of
    `nodeplace.backfill_cycle(now, [(size, est) ...], free, running, resolution=, window=,
    version=, nodes_of=)`, up to the point where no job left can start. `masks`: each job's
    partition's nodes (bit k: node k; by index, default every node). `no_reserve`: the jobs
    (indices) that get no plan (bf_min_age_reserve, bf_min_prio_reserve; backfill.c's
    TEST_NOW_ONLY): each starts if it fits now on the nodes the map leaves it, else nothing."""
    if version not in VERSIONS:
        raise ValueError(f"version {version!r}: one of {', '.join(VERSIONS)}")
    nq = min(len(queue), sc.bf_max_job_test)
    out: list[tuple[int, list[int]]] = []
    if nq <= 0:
        return out
    keys = [queue[k] & mask for k in range(nq)] if mask != -1 else list(queue[:nq])
    res = float(sc.bf_resolution_s)
    window = float(sc.bf_window_s)
    smax = getattr(sc, "bf_max_job_start", 0)
    newer = version != "22.05"
    nn = len(free)
    every = (1 << nn) - 1
    begin0 = math.floor(now / res) * res
    window_end = math.floor((now + window) / res) * res
    space: list[list[Any]] = [[begin0, window_end, every]]
    cur = list(free)
    tfree = sum(cur)
    run = sorted(((float(e), list(a)) for e, a in running), key=lambda x: x[0])
    sparse = [[(i, x) for i, x in enumerate(a) if x] for _, a in run]  # each one's nodes and CPUs there
    memo: dict = {}
    ufree: dict[int, int] = {}  # the free CPUs on a set of nodes (until a job starts)
    fit_pos = [k for k in range(nq) if size[keys[k]] <= tfree]
    last = len(fit_pos) - 1
    dirty = True

    def usable_now(d: float) -> int:
        """The nodes the map leaves a job over [now, now + d]."""
        avail = every
        end_time = now + d
        for b, e, av in space:
            if e <= now:
                continue
            if b <= end_time:
                avail &= av
            else:
                break
        return avail

    for k in range(nq):
        if tfree < smallest:
            break
        if dirty:  # the last job of the queue that may still start now
            while last >= 0:
                j = fit_pos[last]
                if j < k:
                    last = -1
                    break
                ij = keys[j]
                if size[ij] <= tfree:
                    av = usable_now(est[ij])
                    if masks is not None:
                        av &= masks[ij]
                    elif av == every:
                        break
                    uf = ufree.get(av)
                    if uf is None:
                        uf = ufree[av] = sum(cur[i] for i in range(nn) if (av >> i) & 1)
                    if uf >= size[ij]:
                        break
                last -= 1
            if last < 0:
                break
            dirty = False
        ji = keys[k]
        n = size[ji]
        limit = est[ji]
        mine = masks[ji] & every if masks is not None else every
        later = now
        result: tuple[str, float, list[int]] | None = None
        for _ in range(2 * len(space) + 4):  # TRY_LATER (as nodeplace.backfill_cycle)
            start_res, later = later, 0.0
            end_time = start_res + limit if start_res > now else now + limit
            avail = mine
            for q, (b, e, av) in enumerate(space):
                if e > start_res and q + 1 < len(space) and not later:
                    if space[q + 1][2] & mine & ~(avail & av):
                        later = e
                if e <= start_res:
                    continue
                if b <= end_time:
                    avail &= av
                else:
                    break
            got = _will_run(n, memo, cur, run, sparse, avail, now, start_res, later or None, version) if avail else None
            if no_reserve and ji in no_reserve:  # now or not at all (the select plugin's first test)
                if got is not None and got[0] <= now:
                    result = ("start", now, got[1])
                break
            if got is None:
                if later:
                    continue
                break
            st, alloc = got
            st = max(st, start_res)
            nodes = 0
            for i, c in enumerate(alloc):
                if c:
                    nodes |= 1 << i
            b = math.floor(st / res) * res
            if newer:
                e = math.floor((st + limit + res - 1) / res) * res
            else:
                e = math.floor((st + limit) / res) * res
            overlap = st > now and any(rb < e and re_ > b and nodes & ~av for rb, re_, av in space)
            if newer and overlap:
                later = st
                continue
            if st <= now:
                result = ("start", now, alloc)
                break
            if later and st > later:
                continue
            if st > now + window:
                break
            if overlap:
                later = st
                continue
            _add_reservation(space, b, e, nodes, res)
            dirty = True
            result = ("plan", st, alloc)
            break
        if result is not None and result[0] == "start":
            a = result[2]
            cur = [f - x for f, x in zip(cur, a)]
            tfree -= n
            end_at = now + limit
            p = bisect_left([r[0] for r in run], end_at)
            while p < len(run) and run[p][0] <= end_at:
                p += 1  # (after the ends equal to it: a stable sort's place)
            run.insert(p, (end_at, a))
            sparse.insert(p, [(i, x) for i, x in enumerate(a) if x])
            memo.clear()
            ufree.clear()
            dirty = True
            out.append((ji, a))
            if len(out) == smax:
                break  # bf_max_job_start: the cycle ends
    return out


def _add_reservation(space: list[list[Any]], begin: float, end: float, nodes: int, res: float) -> None:
    """nodeplace._add_reservation on bit masks."""
    begin = max(begin, space[0][0])
    if end < begin + res:
        end = begin + res
    for cut in (begin, end):
        for k, (b, e, av) in enumerate(space):
            if b < cut < e:
                space[k:k + 1] = [[b, cut, av], [cut, e, av]]
                break
    for rec in space:
        if rec[0] >= begin and rec[1] <= end:
            rec[2] = rec[2] & ~nodes
