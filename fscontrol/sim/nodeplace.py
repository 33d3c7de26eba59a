"""Where select/cons_tres puts a job of tasks on nodes, and the nodes backfill reserves for it.

A model of Slurm 22.05's node selection for the jobs the simulator replays: `sbatch -n N`
(one CPU per task, no -N, no --exclusive, no GRES, no -w) under SelectType=select/cons_tres,
SelectTypeParameters=CR_CPU, nodes of one weight, no topology, SchedulerParameters without
bf_busy_nodes / pack_serial_at_end (cons_common.c), partition without LLN. The engine places
jobs with `place` and backfills with nodesched.backfill_nodes, whose starts are `backfill_cycle`'s
(issue #32 item 1; docs/simulator-fidelity.md, "Where a job of tasks lands").

The rule (Slurm 22.05.8's source, src/plugins/select/):

* **Which nodes** (cons_tres/job_test.c `_eval_nodes`, reached from `choose_nodes` through
  cons_common/job_test.c `_select_nodes` <- `_job_test`, "Step 1: seek idle CPUs"). A node's
  available CPUs are its free CPUs (`_select_cores`: avail_res->avail_cpus); nodes with none are
  dropped from the node map (`choose_nodes`, `_select_nodes`). The nodes left are cut into
  *sets of consecutive nodes* (by node index; a node not in the map, or of another
  sched_weight, ends a set). For `-n N` the job has min_nodes = req_nodes = 1 and
  rem_cpus = N. Until N CPUs are taken, the best set is chosen among those left: the first
  that is *sufficient* (its CPUs >= the CPUs still wanted) and among sufficient ones the one
  with the fewest CPUs; while none is sufficient, the one with the most CPUs (ties: the lowest
  index). In that set, since rem_nodes <= 1 for a job without -N: the single node with the
  fewest free CPUs that still holds all the CPUs wanted (first by index on a tie; "best fit
  single node"), and if there is one, only it; else its nodes in index order, each giving
  min(its free CPUs, the CPUs still wanted) (`_cpus_to_use`). A set used up without enough:
  the next best set, the same way.
* **How many CPUs on each**: cons_tres/dist_tasks.c `dist_tasks_compute_c_b` (the default
  distribution, block for nodes, cyclic for tasks) gives each chosen node one task, then deals
  the rest one at a time across them, each node capped by the CPUs `_eval_nodes` gave it. Those
  caps sum to N, so each node gets exactly its cap: the allocation is the one above.
* `choose_nodes` caps max_nodes at the task count; with one CPU per task it never binds on a
  job that fits. Its retry with small nodes removed ("knapsack") runs only after `_eval_nodes`
  failed, which for such a job means the free CPUs are fewer than N: it fails too.
* **Backfill's plan at a later time** (cons_common/job_test.c `_will_run_test`, called by
  sched/backfill/backfill.c `_attempt_backfill` through `_try_sched` in SELECT_MODE_WILL_RUN):
  backfill first drops every node its map (node_space) holds for jobs planned earlier in the
  cycle over [start, start + limit] (`bit_and(avail_bitmap, node_space[j].avail_bitmap)`); the
  select plugin then tries the job now, and else takes the running jobs off the machine in
  order of their end (start + time limit) in batches: the first batch is every job ending by
  E + 30 s, where E is the first end rounded up to the next multiple of 30 s (strictly up),
  and before each later batch the window doubles (30, 60, 120 s...) until it reaches the next
  job's end; after each batch the same `_job_test` (so `_eval_nodes`) runs on the CPUs freed so
  far. The first batch where the job fits gives its start (the end of the **last** job of the
  batch) and its nodes. Backfill then reserves those nodes, whole, in node_space
  (`_add_reservation(start_time, end_reserve, avail_bitmap, ...)` after `bit_not`), and
  `squeue --start` shows them (job_ptr->sched_nodes, SchedNodeList).
* **The cycle** (`backfill_cycle`; backfill.c `_attempt_backfill`, `_add_reservation`,
  `_test_resv_overlap`): per job in priority order, the nodes usable from `start_res` (now at
  first) over its limit, `later_start` the first point where the map gives a node back; a
  will-run start before start_res moves to it; a start now starts the job; one after
  later_start, or on nodes the map holds within the plan's rounded window, tries again from
  later_start (TRY_LATER); else its nodes are held from the start to start + limit, both
  rounded down to bf_resolution.

Checked against slurmctld 22.05.8, 24.11.5 and 26.05.5 on 4 nodes x 32 CPUs (tests/test_nodeplace.py,
tests/data/captures/nodeplace-4x32*/, recorded by scripts/record-nodeplace.py).

GPUs (gres.py): a job asking for g GPUs a node gets no CPUs on a node with fewer than g free (the
filter `_select_nodes` applies before `_eval_nodes`); backfill holds a planned job's nodes whole,
GPUs with them. Not modelled: node weights, features, other GRES, memory, -N / --ntasks-per-node / -c > 1 /
--exclusive / -w, a node COMPLETING (the main scheduler skips a node in cg_node_bitmap;
node_scheduler.c `_pick_best_nodes`), the will-run test's 2-second time limit.
"""

from __future__ import annotations

import math
from typing import Collection, Sequence

__all__ = ["VERSIONS", "place", "will_run", "reservation_nodes", "backfill_cycle"]


def _sets(free: Sequence[int]) -> list[list[int]]:
    """The sets of consecutive nodes with free CPUs (node indices), as _eval_nodes builds them."""
    sets: list[list[int]] = []
    cur: list[int] = []
    for i, f in enumerate(free):
        if f > 0:
            cur.append(i)
        elif cur:
            sets.append(cur)
            cur = []
    if cur:
        sets.append(cur)
    return sets


def place(free: Sequence[int], n: int, *, max_nodes: int | None = None, version: str = "22.05",
          min_nodes: int = 1) -> list[int] | None:
    """The CPUs a job of `n` one-CPU tasks takes on each node, given each node's free CPUs
    (`free`, in node index order; 0 or less: not usable), or None if it does not fit now.

    cons_tres/job_test.c `_eval_nodes` (the best set of consecutive nodes, then the best-fit
    single node or the nodes in order, `_cpus_to_use`) and dist_tasks.c
    `dist_tasks_compute_c_b` (which leaves each chosen node the CPUs it was given).
    `max_nodes`: the partition's node limit (default: every node); `choose_nodes` caps it at n.
    `version` "26.05" (not "25.11": the commits are in no 25.11 release): a job of ONE task goes to the first node (equal weights: by index) with a
    free CPU, not to the best-fit node (SchedMD 496893603b, "Set max_nodes from num_tasks when not
    explicitly set": max_nodes = 1, and 295100b5f6's `_get_one_res` for one-node jobs; seen on
    the testbed: 8 of 8 such jobs, tests/test_nodeplace.py).
    `min_nodes` (> 1: `-N min_nodes`, the replay's GPU jobs of several nodes; max_nodes then
    min_nodes too unless given): a set is sufficient only with that many nodes, the nodes are
    taken in its order with no best-fit single node, each giving min(its free CPUs, the CPUs
    still wanted less one for each node still wanted) (`_cpus_to_use`'s resv_cpus), and the job
    fits only on that many nodes."""
    if n < 1:
        raise ValueError("a job has at least one task")
    if n == 1 and version == "26.05" and min_nodes <= 1:
        return next(([int(i == k) for i in range(len(free))] for k, f in enumerate(free) if f > 0), None)
    nnodes = len(free)
    if min_nodes > 1:
        max_n = min_nodes if max_nodes is None else max_nodes
    else:
        max_n = min(nnodes if max_nodes is None else max_nodes, n)
    avail = [max(0, int(f)) for f in free]
    if sum(avail) < n or (min_nodes > 1 and (n < min_nodes or sum(1 for a in avail if a > 0) < min_nodes)):
        return None
    sets = _sets(avail)
    set_cpus = [sum(avail[i] for i in s) for s in sets]
    used = [False] * len(sets)
    alloc = [0] * nnodes
    rem = n  # rem_cpus (and rem_max_cpus: the two move together here)
    rem_nodes = max(1, min_nodes)  # max(min_nodes, req_nodes): 1 for a job without -N
    while max_n > 0:
        best = -1
        best_cpus = 0
        best_suff = False
        for k in range(len(sets)):
            if used[k]:
                continue
            c = set_cpus[k]
            suff = c >= rem and len(sets[k]) >= rem_nodes  # (_enough_nodes)
            if best < 0:
                new = True
            else:  # equal weights
                new = (suff and not best_suff) or (suff and c < best_cpus) or (not suff and c > best_cpus)
            if new:
                best, best_cpus, best_suff = k, c, suff
        if best < 0:
            break
        nodes = sets[best]
        take = list(nodes)
        if rem_nodes <= 1:  # best fit single node
            fit = -1
            for i in nodes:
                if alloc[i] or avail[i] < rem:
                    continue
                if fit < 0 or avail[i] < avail[fit]:
                    fit = i
                    if avail[i] == rem:
                        break
            if fit >= 0:
                take = [fit]
        for i in take:
            if max_n == 0 or (rem_nodes <= 0 and rem <= 0):
                break
            if alloc[i] or avail[i] <= 0:
                continue
            if max_n == 1 and avail[i] < rem:
                continue  # the job may take one more node only, and this one is too small
            c = min(avail[i], max(rem - max(rem_nodes - 1, 0), 1))  # (_cpus_to_use: one for each node still wanted)
            alloc[i] = c
            rem -= c
            rem_nodes -= 1
            max_n -= 1
        if rem <= 0 and rem_nodes <= 0:
            return alloc
        used[best] = True
    return None


VERSIONS = ("22.05", "24.11", "25.11", "26.05")


def will_run(n: int, free: Sequence[int], running: Sequence[tuple[float, Sequence[int]]], now: float,
             usable: Sequence[bool] | None = None, *, max_nodes: int | None = None, kill_wait: float = 30.0,
             start: float | None = None, until: float | None = None, version: str = "22.05",
             gpus: int = 0, gfree: Sequence[int] | None = None, running_gpus: Sequence[int] | None = None,
             min_nodes: int = 1) -> tuple[float, list[int]] | None:
    """When and where backfill's will-run test plans a job of `n` tasks: (start, CPUs per node)
    or None (it never fits on the usable nodes).

    `free`: each node's free CPUs now; `running`: (end = start + time limit, CPUs per node) of
    each running job; `usable`: the nodes backfill's map leaves it over [start, start + limit]
    (False: held whole by a job planned earlier in the cycle; default all).

    cons_common/job_test.c `_will_run_test`: the job placed now if it fits; else the running jobs
    taken off in order of end, in batches, and the job placed after each batch. The first batch
    ends at the first job whose next one ends after E + 30 s, E the first end rounded up to the
    next multiple of 30 s (strictly: an end on a multiple moves 30 s on); then the window doubles
    (60, 120... s) at least once and until it reaches the next job's end, and the next batch
    takes every job ending by E + window. A job on no usable node is passed over. The start is
    the end of the batch's last job (one that ended by now: its end + KillWait, at least now + 1,
    `_guess_job_end` with OverTimeLimit=0).

    `version` "24.11" (select/cons_tres/job_test.c `_will_run_test`, `_future_run_test`): backfill
    passes its `start` (start_res) and `until` (later_start, None: none): from a start after now
    the test now is skipped; the jobs ending before `start` are taken off first and the job tried
    there (success: "now", which backfill moves to its start_res); the batches stop at the first
    job ending after `until`. 22.05 ignores both. "25.11" and "26.05" as 24.11, but the start is the end of the
    last job taken off in the batches that ran on one of the nodes chosen (`_future_run_test`,
    `_get_last_relevant_job`), not of the batch's last job.

    `gpus`: the job's GPUs a node; `gfree`: each node's free GPUs now; `running_gpus`: each running
    job's GPUs a node (`running`'s order). A node with fewer GPUs free than the job asks for gives
    it no CPUs (cons_tres drops it from the node map before `_eval_nodes`). `min_nodes`: as `place`."""
    if version not in VERSIONS:
        raise ValueError(f"version {version!r}: one of {', '.join(VERSIONS)}")
    mask = [True] * len(free) if usable is None else list(usable)
    if len(mask) != len(free):
        raise ValueError("usable and free must list the same nodes")
    cur = [f if ok else 0 for f, ok in zip(free, mask)]
    gcur = [int(x) for x in gfree] if gfree is not None else [0] * len(free)
    rgpu = list(running_gpus) if running_gpus is not None else [0] * len(running)

    def fit() -> list[int] | None:
        return place([c if not gpus or g >= gpus else 0 for c, g in zip(cur, gcur)], n, max_nodes=max_nodes,
                     version=version, min_nodes=min_nodes)

    newer = version != "22.05"
    if newer and start is None:
        start = now
    if not (newer and start is not None and start > now):
        got = fit()
        if got is not None:
            return now, got
    jobs = sorted(((float(e), list(a), int(g)) for (e, a), g in zip(running, rgpu)), key=lambda x: x[0])
    if newer and start:
        gone = [j for j in jobs if j[0] < start]
        jobs = [j for j in jobs if not j[0] < start]
        for _, a, g in gone:
            for i, c in enumerate(a):
                if mask[i]:
                    cur[i] += c
                    if c:
                        gcur[i] += g
        got = fit()
        if got is not None:
            return now, got
    window = 30.0
    end_time: float | None = None
    removed: list[tuple[float, list[int]]] = []
    k = 0
    more = True
    while more:
        last: float | None = None
        nxt: float | None = None
        while True:
            if k >= len(jobs) or (newer and until and jobs[k][0] > until):
                more = False
                break
            e, a, g = jobs[k]
            k += 1
            if not any(c and ok for c, ok in zip(a, mask)):
                continue  # no usable node: skipped
            if end_time is None:
                end_time = e + (window - math.fmod(e, window))
            last = e
            removed.append((e, a))
            for i, c in enumerate(a):
                if mask[i]:
                    cur[i] += c
                    if c:
                        gcur[i] += g
            if k >= len(jobs):
                more = False
                break
            nxt = jobs[k][0]
            if nxt > end_time + window:
                break
        if last is None or end_time is None:
            break
        while True:
            window *= 2
            if nxt is None or not nxt > end_time + window:
                break
        got = fit()
        if got is not None:
            if version in ("25.11", "26.05"):  # _get_last_relevant_job: the last end on the nodes chosen
                last = max((e for e, a in removed if any(c and g for c, g in zip(a, got))), default=last)
            if last <= now:
                last = last + kill_wait if last + kill_wait > now else now + 1
            return last, got
    return None


def reservation_nodes(free_at_start: Sequence[int], n: int, usable: Sequence[bool] | None = None,
                      *, max_nodes: int | None = None) -> frozenset[int] | None:
    """The nodes a backfill reservation of a job of `n` tasks holds, whole (node indices), given
    each node's free CPUs at its planned start (as the will-run test computes them) and the
    nodes backfill's map leaves it; None if it does not fit there."""
    mask = [True] * len(free_at_start) if usable is None else list(usable)
    got = place([f if ok else 0 for f, ok in zip(free_at_start, mask)], n, max_nodes=max_nodes)
    if got is None:
        return None
    return frozenset(i for i, c in enumerate(got) if c)


def _add_reservation(space: list[list], begin: float, end: float, nodes: frozenset[int], res: float) -> None:
    """backfill.c `_add_reservation`: the map's records (begin, end, usable nodes), split at the
    reservation's begin and end, lose its nodes in between."""
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
            rec[2] = rec[2] - nodes


def backfill_cycle(now: float, queue: Sequence[tuple[int, float]], free: Sequence[int],
                   running: Sequence[tuple[float, Sequence[int]]], *, resolution: float = 60.0,
                   window: float = 1440 * 60.0, version: str = "22.05",
                   nodes_of: Sequence[Sequence[int]] | None = None,
                   no_reserve: Collection[int] = (), gpus: Sequence[int] | None = None,
                   gfree: Sequence[int] | None = None,
                   running_gpus: Sequence[int] | None = None,
                   min_nodes: Sequence[int] | None = None) -> list[tuple[str, float, list[int]] | None]:
    """One backfill cycle on nodes: for each pending job of `queue` ((tasks, time limit in s), in
    priority order) ("start", now, CPUs per node) if it starts now, ("plan", start, CPUs per
    node) if it is planned (its nodes then held whole from the start to the start + limit, both
    rounded down to `resolution`), or None. `free`, `running`: as `will_run`; a job the cycle
    starts runs to now + limit.

    backfill.c `_attempt_backfill`, per job: `start_res` from now; the nodes usable are those no
    record of the map (node_space) overlapping [start_res, start_res + limit] holds; on the way,
    `later_start` is the end of the first record after which a node comes back; the will-run
    test (`will_run`) on the usable nodes gives a start and nodes; a start before start_res
    moves to start_res; a start after later_start, or nodes a record of the plan's rounded
    window holds (`_test_resv_overlap`), tries again from later_start (TRY_LATER). No advance
    reservations, licenses, QOS or per-user limits; the map's equal neighbours are not merged
    (a speed-up in Slurm that changes no answer).

    `version` "24.11" (backfill.c `_set_slot_time`, `_attempt_backfill`): the will-run test gets
    start_res and later_start (`will_run`); a hold ends at start + limit rounded **up** to
    `resolution`; the overlap with the map is tested before the later_start check.

    `nodes_of`: each job's partition's nodes (indices; default every node): its usable nodes start
    from them (backfill.c: `bit_and(avail_bitmap, part_ptr->node_bitmap)`), and a node comes back
    for later_start only if it is one of them (the next record's nodes are taken within the
    partition's: `next_bitmap` is a copy of the job's first avail_bitmap).

    `no_reserve`: the jobs (positions in `queue`) backfill makes no plan for (bf_min_age_reserve,
    bf_min_prio_reserve: `job_no_reserve = TEST_NOW_ONLY`, with which the select plugin's will-run
    test only tries the nodes as they are now, cons_common/job_test.c `_will_run_test`): each
    starts if `place` fits it now on the nodes no record over [now, now + limit] holds, else None.

    `gpus`: each job's GPUs a node (`queue`'s order); `gfree`, `running_gpus`: as `will_run`;
    `min_nodes`: each job's (`place`; 0 or 1: none)."""
    if version not in VERSIONS:
        raise ValueError(f"version {version!r}: one of {', '.join(VERSIONS)}")
    newer = version != "22.05"
    nn = len(free)
    every = frozenset(range(nn))
    begin0 = math.floor(now / resolution) * resolution
    window_end = math.floor((now + window) / resolution) * resolution
    space: list[list] = [[begin0, window_end, every]]
    cur = list(free)
    run = [(float(e), list(a)) for e, a in running]
    gcur = [int(x) for x in gfree] if gfree is not None else [0] * nn
    rgpu = [int(x) for x in running_gpus] if running_gpus is not None else [0] * len(run)
    out: list[tuple[str, float, list[int]] | None] = []
    for jn, (n, limit) in enumerate(queue):
        mine = frozenset(nodes_of[jn]) & every if nodes_of is not None else every
        later = now
        result: tuple[str, float, list[int]] | None = None
        gj = int(gpus[jn]) if gpus is not None else 0
        mn = max(1, int(min_nodes[jn])) if min_nodes is not None else 1
        if jn in no_reserve:
            held = [rec[2] for rec in space if rec[1] > now and rec[0] <= now + limit]
            usable = set(mine).intersection(*held)
            alloc = place([c if i in usable and (not gj or gcur[i] >= gj) else 0 for i, c in enumerate(cur)], n,
                          version=version, min_nodes=mn)
            if alloc is not None:
                cur = [f - a for f, a in zip(cur, alloc)]
                gcur = [g - gj if a else g for g, a in zip(gcur, alloc)]
                run.append((now + limit, alloc))
                rgpu.append(gj)
                result = ("start", now, alloc)
            out.append(result)
            continue
        for _ in range(2 * len(space) + 4):  # TRY_LATER (each try moves on to a later record)
            start_res, later = later, 0.0
            end_time = start_res + limit if start_res > now else now + limit
            avail = set(mine)
            for k, (b, e, av) in enumerate(space):
                if e > start_res and k + 1 < len(space) and not later:
                    if not ((space[k + 1][2] & mine) <= (avail & av)):
                        later = e
                if e <= start_res:
                    continue
                if b <= end_time:
                    avail &= av
                else:
                    break
            got = will_run(n, cur, run, now, [i in avail for i in range(nn)], start=start_res, until=later or None,
                           version=version, gpus=gj, gfree=gcur, running_gpus=rgpu, min_nodes=mn) if avail else None
            if got is None:
                if later:
                    continue
                break
            start, alloc = got
            start = max(start, start_res)
            nodes = frozenset(i for i, c in enumerate(alloc) if c)
            b = math.floor(start / resolution) * resolution
            if newer:
                e = math.floor((start + limit + resolution - 1) / resolution) * resolution
            else:
                e = math.floor((start + limit) / resolution) * resolution
            overlap = start > now and any(rb < e and re_ > b and not nodes <= av for rb, re_, av in space)
            if newer and overlap:
                later = start  # _test_resv_overlap: try again from its start
                continue
            if start <= now:
                result = ("start", now, alloc)
                break
            if later and start > later:
                continue
            if start > now + window:
                break
            if overlap:
                later = start
                continue
            _add_reservation(space, b, e, nodes, resolution)
            result = ("plan", start, alloc)
            break
        if result is not None and result[0] == "start":
            cur = [f - a for f, a in zip(cur, result[2])]
            gcur = [g - gj if a else g for g, a in zip(gcur, result[2])]
            run.append((now + limit, result[2]))
            rgpu.append(gj)
        out.append(result)
    return out
