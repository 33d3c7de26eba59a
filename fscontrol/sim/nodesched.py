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

from fscontrol.model.acctpolicy import one_more

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
    the CPUs free per node on the usable nodes; how many jobs of `run` were taken off so far; the
    GPUs free per node, or None), in the order the test tries them, `sums` their free CPUs in all
    (non-decreasing), `gsums[g]` those on the nodes with g GPUs free (non-decreasing too: CPUs and
    GPUs only come back)."""

    __slots__ = ("run", "sparse", "m", "newer", "until", "c", "k", "window", "end_time", "more", "sums", "states",
                 "gone", "gc", "rg", "gsums")

    def __init__(self, cur: list[int], run: list[tuple[float, list[int]]], sparse: list[list[tuple[int, int]]],
                 m: int, now: float, start: float | None, until: float | None, newer: bool,
                 gcur: list[int] | None = None, rg: list[int] | None = None) -> None:
        nn = len(cur)
        c = [cur[i] if (m >> i) & 1 else 0 for i in range(nn)]
        gc = [gcur[i] if (m >> i) & 1 else 0 for i in range(nn)] if gcur is not None else None
        self.run, self.sparse, self.m, self.newer, self.until = run, sparse, m, newer, until
        self.gc, self.rg = gc, rg
        self.gsums: dict[int, list[int]] = {}
        self.sums: list[int] = []
        self.states: list[tuple[float | None, list[int], int, list[int] | None]] = []
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
                        if gc is not None and rg is not None:
                            gc[i] += rg[k]
                k += 1
            self._add(None, c, k)
        self.c, self.k, self.gone = c, k, k  # (the jobs ending before start: taken off, not in a batch)
        self.window = 30.0
        self.end_time: float | None = None
        self.more = True

    def _add(self, when: float | None, c: list[int], k: int) -> None:
        self.states.append((when, list(c), k, list(self.gc) if self.gc is not None else None))
        self.sums.append(sum(c))

    def gpu_sums(self, g: int) -> list[int]:
        """The free CPUs of each state on the nodes with at least g GPUs free."""
        gs = self.gsums.setdefault(g, [])
        for _, c, _, gc in self.states[len(gs):]:
            gs.append(sum(x for x, y in zip(c, gc or ()) if y >= g))
        return gs

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
            gk = self.rg[k] if self.gc is not None and self.rg is not None else 0
            k += 1
            on = False
            for i, x in sp:
                if (m >> i) & 1:
                    c[i] += x
                    if gk:
                        self.gc[i] += gk  # type: ignore[index]
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
              version: str, kill_wait: float = 30.0, g: int = 0, gcur: list[int] | None = None,
              rg: list[int] | None = None, mn: int = 1) -> tuple[float, list[int]] | None:
    """nodeplace.will_run(n, cur, run, now, usable=m, start=, until=, version=, gpus=g, gfree=gcur,
    running's GPUs rg), from the memo."""
    newer = version != "22.05"
    key = (m, start, until) if newer else m
    bt = memo.get(key)
    if bt is None:
        bt = memo[key] = _Batches(cur, run, sparse, m, now, start if newer else None, until if newer else None, newer,
                                  gcur, rg)
    g = g if gcur is not None else 0
    sums = bt.gpu_sums(g) if g else bt.sums
    while not sums or sums[-1] < n:
        if not bt.extend():
            break
        if g:
            sums = bt.gpu_sums(g)
    k = bisect_left(sums, n)
    if k == len(sums):
        return None
    while True:
        when, c, taken, gc = bt.states[k]
        if g and gc is not None:
            c = [x if y >= g else 0 for x, y in zip(c, gc)]
        alloc = place(c, n, version=version, min_nodes=mn)
        if alloc is not None or mn <= 1:  # (one-CPU tasks on any nodes fit wherever the CPUs add up)
            break
        k += 1  # -N: the first later state with the nodes too (each only gains CPUs and GPUs)
        while k >= len(bt.states):
            if not bt.extend():
                return None
    if alloc is None:
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
                   no_reserve: Collection[int] = (), gfree: Sequence[int] | None = None,
                   gpus: Sequence[int] | None = None,
                   running_gpus: Sequence[int] | None = None,
                   min_nodes: Sequence[int] | None = None, limits: Any = None,
                   more: Any = None) -> list[tuple[int, list[int]]]:
    """One backfill cycle on nodes at `now`: the jobs it starts, in order, with their CPUs per node.
    `queue`: pending jobs in priority order (indices, or keys whose `mask` bits are the index);
    `free`: each node's free CPUs; `running`: (end = start + limit, or when a completing job's CPUs
    are free; CPUs per node); `sc`: a slurmsched.SlurmSched (bf_max_job_test, bf_resolution_s,
    bf_window_s); `smallest`: no pending job is smaller. The starts of
    `nodeplace.backfill_cycle(now, [(size, est) ...], free, running, resolution=, window=,
    version=, nodes_of=)`, up to the point where no job left can start. `masks`: each job's
    partition's nodes (bit k: node k; by index, default every node). `no_reserve`: the jobs
    (indices) that get no plan (bf_min_age_reserve, bf_min_prio_reserve; backfill.c's
    TEST_NOW_ONLY): each starts if it fits now on the nodes the map leaves it, else nothing.
    `gfree`: each node's free GPUs, `gpus`: each job's GPUs a node (by index), `running_gpus`: each
    running job's (`running`'s order): a job is placed only on nodes with its GPUs free. `min_nodes`:
    each job's -N (by index; 0 or 1: none; nodeplace.place). `limits`: the association and QOS limits
    (model/acctpolicy.Counts, by index): a job that would put one over is passed by with no plan; a
    job the cycle starts is added to them; one a limit on running jobs holds does not count towards
    bf_max_job_test: for each, the next of `more` (as slurmsched.backfill_starts)."""
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
    gon = gfree is not None and gpus is not None
    gcur = list(gfree) if gon and gfree is not None else None
    rorder = sorted(range(len(running)), key=lambda r: float(running[r][0]))
    run = [(float(running[r][0]), list(running[r][1])) for r in rorder]
    rg: list[int] | None = [int(running_gpus[r]) if running_gpus is not None else 0 for r in rorder] if gon else None
    sparse = [[(i, x) for i, x in enumerate(a) if x] for _, a in run]  # each one's nodes and CPUs there
    memo: dict = {}
    ufree: dict[tuple[int, int], int] = {}  # the free CPUs on a set of nodes with g GPUs free (until a job starts)
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

    k = -1
    while k + 1 < nq:
        k += 1
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
                    gj = int(gpus[ij]) if gon and gpus is not None and gcur is not None else 0
                    if masks is not None:
                        av &= masks[ij]
                    elif av == every and not gj:
                        break
                    uf = ufree.get((av, gj))
                    if uf is None:  # (GPUs: the nodes with the job's GPUs free only)
                        uf = ufree[(av, gj)] = sum(cur[i] for i in range(nn) if (av >> i) & 1
                                                   and (not gj or (gcur is not None and gcur[i] >= gj)))
                    if uf >= size[ij]:
                        break
                last -= 1
            if last < 0:
                break
            dirty = False
        ji = keys[k]
        if limits is not None and limits.over(ji):
            if one_more(limits, ji, more, keys, mask):
                nq += 1
                if size[keys[-1]] <= tfree:
                    fit_pos.append(nq - 1)
                    last = len(fit_pos) - 1
                    dirty = True
            continue  # held by a limit: no start, no plan
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
            got = _will_run(n, memo, cur, run, sparse, avail, now, start_res, later or None, version, 30.0,
                            int(gpus[ji]) if gon and gpus is not None else 0, gcur, rg,
                            max(1, int(min_nodes[ji])) if min_nodes is not None else 1) if avail else None
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
            if gcur is not None and rg is not None and gpus is not None:
                gj = int(gpus[ji])
                if gj:
                    gcur = [y - gj if x else y for x, y in zip(a, gcur)]
                rg.insert(p, gj)
            sparse.insert(p, [(i, x) for i, x in enumerate(a) if x])
            memo.clear()
            ufree.clear()
            dirty = True
            out.append((ji, a))
            if limits is not None:
                limits.add(ji)
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
