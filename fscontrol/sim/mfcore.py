"""The multifactor engine: `simulate`, the loop behind `multifactor.simulate_multifactor` (see
multifactor.py for what it simulates and how).

This module is plain Python and is the reference. `fscontrol.sim.accel` can compile a copy of it
with mypyc (`python -m fscontrol.sim.accel build`); the copy is used only while it was built from
this very file (its SHA-256 is compiled in), and the tests run both on the same jobs.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left as _bisect_left
from bisect import insort as _insort
from bisect import bisect_right as _bisect_right
from collections.abc import Mapping, Sequence
from typing import Any, Final

from fscontrol.act import control
from fscontrol.model import fairshare
from fscontrol.model import fairtree
from fscontrol.model.decay import decay_factor_per_second
from ..errors import ConfigError
from fscontrol.model.fairshare import FS_LEVEL as _FS_LEVEL
from fscontrol.model.fairshare import FS_ROOT as _FS_ROOT
from ..records import ShareRow
from ..snaprecords import QueueJob
from .mfconfig import (
    DUMMY,
    ControlSpec,
    Disturbance,
    MFRun,
    PassRecord,
    PriorityConfig,
    ProgressFn,
    captured_tree,
    share_tree,
)
from .mfconfig import INF as _INF
from .ftrank import Ranker
from .slurmsched import backfill_starts as _backfill_starts
from .slurmsched import bf_first_cycle as _bf_first_cycle
from .slurmsched import bf_tested as _bf_tested
from .nodesched import backfill_nodes as _backfill_nodes
from .nodeplace import place as _place
# (one line: fscontrol.sim.accel compiles easycore's body in its place)
from .easycore import drop_started, easy_arrivals, easy_backfill, easy_fits, easy_search, gate_stall, gate_stop, gate_tick, general_pick
from .workload import Workload, billing_rates

# (Final: a compiled build reads these from C statics, not from the module's dict at every use)
INF: Final = _INF
FS_ROOT: Final = _FS_ROOT
FS_LEVEL: Final = _FS_LEVEL
bisect_left: Final = _bisect_left
insort: Final = _insort
bisect_right: Final = _bisect_right
heappush: Final = heapq.heappush
heappop: Final = heapq.heappop
backfill_starts: Final = _backfill_starts
backfill_nodes: Final = _backfill_nodes
bf_first_cycle: Final = _bf_first_cycle
bf_tested: Final = _bf_tested
place_nodes: Final = _place
# `pm` mode's backfill pick: at most this many candidates are keyed, more are found by walking the
# queue in order (a test sets it to 0 and to a large number: the same schedules either way). Keying
# them all was faster at every size measured (whole SDSC log, hybrid at x2: 31 s against 57 s with
# 2,048; mf-classic the same either way), so the walk is for queues beyond those
PM_ENUM = 1 << 16
# the `pm` mode itself (a test turns it off: the same schedules from the queue re-keyed at every pass),
# taken at a pass with at least PM_QUEUE_ON jobs queued, left at one with fewer than PM_QUEUE_OFF
# (a short queue is re-keyed and sorted faster than the associations' heap is built)
PM_ON = True
# lazy passes: a bound on an association's first key holds this many passes
LZ_W = 32
PM_QUEUE_ON = 96
PM_QUEUE_OFF = 48


def simulate(
    workload: Workload,
    prio: PriorityConfig,
    *,
    tree: Sequence[ShareRow] | None = None,
    control_spec: ControlSpec | None = None,
    disturbances: Sequence[Disturbance] = (),
    depth: int = 1,
    backfill: bool = True,
    first_pass: float | None = None,
    initial_usage: Mapping[tuple[str, str], float] | None = None,
    trace: bool = False,
    trace_keys: Sequence[tuple[str, str]] = (),
    record_passes: bool = True,
    gate: Any = None,
    gate_interval_s: float = 300.0,
    progress: ProgressFn | None = None,
    max_time: float | None = None,
    sched: Any = None,
    walk_pending: Sequence[tuple[int, str, str, float]] = (),
) -> MFRun:
    """Run the workload under priority/multifactor. `tree`: the associations (sshare rows; their
    RawUsage is the usage at the start unless `initial_usage` is given); default the workload's
    captured tree (captured_tree) if it has one, else share_tree().
    `first_pass`: the time of a pass (passes fall every PriorityCalcPeriod from it; default the
    first submission). `trace`: record RawUsage and F of `trace_keys` (default all users) at every
    pass, as sshare and sprio would show them just after it. `gate`: a `gate.GateOptions`: the
    agent's gate (`gate.plan_gate`, on the workload's allocations) every `gate_interval_s`; a hold
    takes the job out of the queue and its release makes it eligible anew (age from then, as
    Slurm without ACCRUE_ALWAYS); a nice is subtracted from the job's priority.
    `sched`: a `slurmsched.SlurmSched`: Slurm's own scheduler (the main scheduler on events and on
    its timer, stopping at the first job that does not fit; backfill on its own cycle with
    whole-node reservations) instead of EASY at every event; `depth` and `backfill` then do not apply.
    `walk_pending`: (position, account, user, pending since) of jobs the run never starts (a DOWN
    partition) that slurmctld's classic pass still walks: a pending job before the workload's job
    `position` in the job list, where the walk computes its user's EffectvUsage if it is the user's
    first pending job (multifactor.py); Fair Tree ranks after every charge, so they change nothing there."""

    jobs = workload.jobs
    # (the jobs' ids, users and accounts as given: read without the declared types, which a
    # compiled build would check; a test workload may number its jobs)
    anyjobs: Sequence[Any] = jobs
    n = len(jobs)
    cs = control_spec
    dummy = cs.dummy if cs is not None else None
    if tree is not None:
        rows = tuple(tree)
    elif workload.shares:  # a captured cluster: its own association tree and shares
        rows = captured_tree(workload, dummy=DUMMY if cs is not None else None)
    else:
        rows = share_tree(workload, dummy=DUMMY if cs is not None else None)
    t_tree = fairshare.build_tree(rows)
    keys = list(t_tree.order)
    kix = {k: i for i, k in enumerate(keys)}
    na = len(keys)
    parent_ix = [-1] + [kix[t_tree.parent[k]] for k in keys[1:]]
    fsp_ix = [-1] + [kix[t_tree.fs_parent[k]] for k in keys[1:]]
    rule = [(fairshare.FS_ROOT, 0.0)] + [fairshare.effective_usage_rule(t_tree, k) for k in keys[1:]]
    nshares = fairshare.norm_shares_of(t_tree)
    norm_s = [nshares[k] for k in keys]
    is_user = [bool(k[1]) for k in keys]
    shares_parent = [t_tree.rows[k].shares_parent for k in keys]
    chains: list[tuple[int, ...]] = []
    for i in range(na):
        ch = [i]
        while parent_ix[ch[-1]] >= 0:
            ch.append(parent_ix[ch[-1]])
        chains.append(tuple(ch))
    # a job's association: (account, user); a job whose pair is not in the tree is an error
    job_assoc = [0] * n
    for i, j in enumerate(anyjobs):
        k = (j.account or "default", j.user or "user")
        if k not in kix:
            raise ConfigError(f"job {j.job_id}: association {k[0]}/{k[1]} is not in the share tree")
        job_assoc[i] = kix[k]

    fair_tree = prio.fair_tree
    if fair_tree:
        # the ranks, redone only where the usage changed (ftrank: the same as fairtree.rank_users)
        ft_ranker = Ranker(t_tree, keys, fairtree.fair_tree_shares(t_tree), fairtree.children_lists(t_tree))

    # usage, scaled: true usage = S[a] * G
    S = [0.0] * na
    init = initial_usage if initial_usage is not None else {k: float(t_tree.rows[k].raw_usage) for k in keys}
    for k, v in init.items():
        if k in kix:
            S[kix[k]] = float(v)
    G = 1.0
    f1 = decay_factor_per_second(prio.half_life_s)
    P = prio.calc_period_s
    fP = math.pow(f1, P)  # (math.pow: the same libm pow as **, native in the compiled build)
    limits = prio.limits

    # copy-on-write snapshot of the non-user associations' usage at the start of the pass
    pass_no = 0
    snap_pass = [-1] * na
    snap_val = [0.0] * na

    ups = [tuple(c for c in chains[a] if not is_user[c]) for a in range(na)]  # the non-user ancestors
    mids = [tuple(c for c in u if c != 0) for u in ups]  # the same but root
    mid1 = [m[0] if len(m) == 1 else -1 for m in mids]  # the one, when there is one

    # Fair Tree: the associations charged since the ranker last saw the live usage (their
    # ancestors are implied): what it compares with its last values (ftrank.Ranker.update)
    ft_touched: set[int] = set()

    def charge(a: int, x: float) -> None:
        if fair_tree:
            ft_touched.add(a)
        xs = x / G
        if lz_pass[0] == pass_no and usp[a] != pass_no:  # (after a lazy pass's walk: lz_eval)
            usp[a] = pass_no
            usv[a] = S[a]
        for c in chains[a]:
            if not is_user[c] and snap_pass[c] != pass_no:
                snap_pass[c] = pass_no
                snap_val[c] = S[c]
            S[c] = S[c] + xs

    def at_pass_start(c: int) -> float:
        return snap_val[c] if snap_pass[c] == pass_no else S[c]

    # this pass's account UEs (a memo: ue_av[c] while ue_as[c] == pass_no) and users' UEs (ue_uv[a]
    # while ue_us[a] == pass_no), kept until the next pass: lists stamped with the pass, not dicts
    # emptied at every pass
    ue_av = [0.0] * na
    ue_as = [-1] * na
    ue_uv = [0.0] * na
    ue_us = [-1] * na

    def acct_ue(c: int) -> float:
        if c == 0:
            return 1.0
        if ue_as[c] == pass_no:
            return ue_av[c]
        root = at_pass_start(0)
        un = min(1.0, at_pass_start(c) / root) if root > 0 else 0.0
        fc = fsp_ix[c]
        ue_fs = 1.0 if fc == 0 else acct_ue(fc)
        # fairshare.effective_usage_step(rule[c], un, ue_fs), inlined (the same operations)
        kind, w = rule[c]
        v = un if kind == FS_ROOT else (un + (ue_fs - un) * w if kind == FS_LEVEL else ue_fs)
        ue_av[c] = v
        ue_as[c] = pass_no
        return v

    f_cache: dict[int, float] = {}  # F by association, until the next pass or a change of d

    def user_fs(a: int) -> float:
        """F of association a's jobs (classic): its own UE, or its fs parent's for FairShare=parent."""
        if a in f_cache:
            return f_cache[a]
        if lz_pass[0] == pass_no and pm_fcs[a] != pm_g[0]:  # a lazy pass: its F from what the walk saw
            uq = user_q[a]
            if uq and uq[0] < pm_b[0]:
                lz_eval(a)
                if a in f_cache:
                    return f_cache[a]
        if shares_parent[a]:
            fa = fsp_ix[a]
            f = fairshare.fairshare_factor(acct_ue(fa), norm_s[fa], damp[0])
        else:
            if ue_us[a] == pass_no:
                v = ue_uv[a]
            else:
                root = S[0]
                un = min(1.0, S[a] / root) if root > 0 else 0.0
                fa = fsp_ix[a]
                ue_fs = ue_av[fa] if ue_as[fa] == pass_no else acct_ue(fa)
                # fairshare.effective_usage_step(rule[a], un, ue_fs), inlined (the same operations)
                kind, w = rule[a]
                v = un if kind == FS_ROOT else (un + (ue_fs - un) * w if kind == FS_LEVEL else ue_fs)
                ue_uv[a] = v
                ue_us[a] = pass_no
            # fairshare.fairshare_factor(v, norm_s[a], damp[0]), inlined (the same operations)
            d_now = damp[0]
            if d_now <= 0:
                raise ValueError(f"damping factor must be > 0, got {d_now!r}")
            ns = norm_s[a]
            f = math.pow(2.0, -(v / ns) / d_now) if ns > 0 else 0.0
        f_cache[a] = f
        return f

    # A Fair Tree pass whose priorities are left lazy (nothing can start) keeps its usage here, and
    # the tree is ranked from it when an F is first read (by then the usage may have moved on: job
    # ends top it up), or never, when the next pass comes first: the same ranks from the same values.
    ft_due: list[list[float] | None] = [None]

    def fair_tree_rank(vals: list[float] | None = None) -> None:
        # the users whose F changed (f_cache holds every user's F, and only that, in Fair Tree).
        # A snapshot (vals) leaves the charged set as it is: the live usage may differ from it.
        if vals is None:
            changed = ft_ranker.update(S, ft_touched)
            ft_touched.clear()
        else:
            changed = ft_ranker.update(vals, ft_touched)
        if changed:
            f_cache.update(changed)
            if pm_on[0]:
                ft_drop(changed)

    def ft_settle() -> None:
        vals = ft_due[0]
        ft_due[0] = None
        fair_tree_rank(vals)

    def fs_of(a: int) -> float:
        if fair_tree:
            if ft_due[0] is not None:
                ft_settle()
            return f_cache.get(a, 0.0)
        return user_fs(a)

    # job attributes
    submit = [j.submit for j in jobs]
    run = [j.run for j in jobs]
    est = [j.estimate for j in jobs]
    size = [j.size for j in jobs]
    # the association and QOS limits on running jobs and CPUs (a capture's, history._limits; Slurm's
    # scheduler only): a job that would put one over is passed by in the main pass and gets no plan
    # in backfill (acct_policy.c; model/acctpolicy.py), its limits counted as jobs start and end
    alim: Any = None
    lmeta: Any = workload.meta.get("limits") if sched is not None else None
    if lmeta:
        from fscontrol.model.acctpolicy import Counts as _Counts

        capj_ = [INF if v is None else float(v) for v in lmeta["jobs"]]
        capc_ = [INF if v is None else float(v) for v in lmeta["cpus"]]
        alim = _Counts([tuple(getattr(j_, "limit_keys", ()) or ()) for j_ in anyjobs], list(size), capj_, capc_,
                       [0] * len(capj_), [0] * len(capj_), list(lmeta["kinds"]), list(lmeta.get("names") or []),
                       [tuple(getattr(j_, "limit_checks", ()) or ()) for j_ in anyjobs])
    bill = billing_rates(jobs)  # what a running job charges a second (AllocTRES billing, else its size)
    total = workload.nodes
    wa, wf, wj, wp, wq = prio.weight_age, prio.weight_fairshare, prio.weight_jobsize, prio.weight_partition, prio.weight_qos
    max_age = prio.max_age_s
    if wj:
        js = [(1.0 - min(1.0, s / total)) if prio.favor_small else min(1.0, s / total) for s in size]
    else:
        js = [0.0] * n
    static = [wj * x for x in js]
    if wp and prio.partition_factor:
        pf = dict(prio.partition_factor)
        pmax = max(pf.values()) or 1
        for i, j in enumerate(jobs):  # (a job of several partitions: its best, as the tier's)
            static[i] += wp * max([pf.get(p_, 0) for p_ in (getattr(j, "partition", "") or next(iter(pf))).split(",")]) / pmax
    if wq and prio.qos_priority:
        qf = dict(prio.qos_priority)
        qmax = max(qf.values()) or 1
        for i, j in enumerate(jobs):
            static[i] += wq * qf.get(getattr(j, "qos", "") or "normal", 0) / qmax
    tiers = workload.meta.get("partition_tiers") or {}  # PriorityTier: the queue's first key (sort_job_queue2),
    jt = [max([tiers[p] for p in (getattr(j, "partition", "") or "").split(",") if p in tiers] or [1]) for j in jobs]
    if len(set(jt)) > 1:  # its rank among the jobs' tiers x 2^32 above the priority (one tier: nothing added)
        rank = {x: k for k, x in enumerate(sorted(set(jt)))}
        static = [x + rank[jt[i]] * 4294967296.0 for i, x in enumerate(static)]
    eligible = list(submit)
    nice = [0] * n
    start = [INF] * n
    end = [INF] * n
    prio_of = [0] * n
    out = MFRun(start, end)
    order = out.order
    damp = [prio.damping]  # the runtime d (a list: closures set it)

    def priority(i: int, t: float) -> int:
        p = static[i]
        if wa:
            age = t - eligible[i]
            p += wa * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0)) if max_age > 0 else wa
        if wf:
            p += wf * fs_of(job_assoc[i])
        if nice[i]:
            p -= nice[i]
        return int(p) if p >= 1 else 1

    # queue: sorted keys -priority x QK + index (the order of (-priority, index): an int compares and
    # sorts faster than a tuple; index = key & QM); running: sorted (predicted end, index)
    QK = 1 << max(1, n.bit_length())
    QM = QK - 1
    qkeys: list[int] = []
    running: list[tuple[float, int]] = []
    run_set: set[int] = set()
    runs_l: list[int] = []  # the running jobs, in the list's order (the classic pass's walk)
    # the pending users by their first pending job in the list (no gate: a job leaves the queue
    # only by starting): keys first x PK + association (the order of (first, association)), sorted,
    # and each association's pending jobs in order
    track = gate is None
    PS = max(1, na.bit_length())
    PM = (1 << PS) - 1
    pend_l: list[int] = []
    user_q: list[list[int]] = [[] for _ in range(na)]
    # walk_pending's jobs, by association (only each one's first in the list counts): its pending
    # times in order and, by each, the smallest key (as pend_l's) of its jobs pending by then
    wp_by: dict[int, list[tuple[float, int]]] = {}
    for wpos, wacct, wuser, wsince in walk_pending:
        wk = (wacct or "default", wuser or "user")
        if wk in kix and 0 <= wpos < n and not fair_tree:
            wa_ = kix[wk]
            wp_by.setdefault(wa_, []).append((float(wsince), (int(wpos) << PS) | wa_))
    wp_lists: list[tuple[int, list[float], list[int]]] = []
    for wa_, wl_ in sorted(wp_by.items()):
        wl_.sort()
        wmins: list[int] = []
        for _, wkey in wl_:
            wmins.append(wkey if not wmins or wkey < wmins[-1] else wmins[-1])
        wp_lists.append((wa_, [x for x, _ in wl_], wmins))
    wp_keys = bool(wp_lists)

    def merge_walk(pend: list[int], t: float) -> list[int]:
        """The pass's keys (each pending association's first job, the end key last) with
        walk_pending's jobs pending at t: each association's first in the list."""
        first: dict[int, int] = {}
        for kp in pend[:-1]:
            first[kp & PM] = kp
        for a, sinces, mins in wp_lists:
            x = bisect_right(sinces, t)
            if x:
                kp = mins[x - 1]
                if a not in first or kp < first[a]:
                    first[a] = kp
        merged = sorted(first.values())
        merged.append(n << PS)
        return merged
    heap: list[tuple[float, int]] = []
    free = total
    # slurmctld's scheduler on nodes (sched.node_model, a machine of several nodes of node_cpus
    # CPUs): each node's free CPUs, each job's CPUs per node (nodeplace.place at its start, the
    # backfill's own nodes for a job it starts), backfill on nodes (nodesched.backfill_nodes). The
    # main scheduler's test stays the pool's (a job of one-CPU tasks fits iff the free CPUs add up)
    # Nodes of different sizes (a capture's nodes.txt: the workload's meta, "machine", "node_cpus_each":
    # each node's CPUs in its index order) when they add up to the machine; else nodes of node_cpus
    ncpu = int(sched.node_cpus) if sched is not None else 0
    caps: list[int] = []
    if sched is not None and str(sched.node_model) and ncpu > 0:
        each_: list[int] = [int(c_) for c_ in ((workload.meta.get("machine") or {}).get("node_cpus_each") or [])]
        if len(each_) > 1 and min(each_) > 0 and sum(each_) == total:
            caps = each_
        elif total > ncpu and total % ncpu == 0:
            caps = [ncpu] * (total // ncpu)
        elif total == ncpu:  # one node (its GPUs, below: run.py turns the model on for them)
            caps = [ncpu]
    node_model = str(sched.node_model) if caps else ""
    nodes_on = node_model != ""
    nfree: list[int] = list(caps)
    # GPUs (a capture's nodes.txt %G: the workload's meta, "machine", "node_gpus_each"; each job's
    # SimJob.gpus per node): a job that asks for g GPUs a node is placed and backfilled only on
    # nodes with g free (gres.py: select/cons_tres drops a node that cannot give them)
    gcaps: list[int] = []
    gper: list[int] = []
    gmin: list[int] = []  # a GPU job's -N (SimJob.gpu_nodes; 0: none)
    if nodes_on:
        ge_: list[int] = [int(g_) for g_ in ((workload.meta.get("machine") or {}).get("node_gpus_each") or [])]
        gj_: list[int] = [int(getattr(j_, "gpus", 0) or 0) for j_ in anyjobs]
        if len(ge_) == len(caps) and any(ge_) and any(gj_):
            gcaps = ge_
            gper = gj_
            gmin = [int(getattr(j_, "gpu_nodes", 0) or 0) for j_ in anyjobs]
    gpus_on = len(gcaps) > 0
    gfree: list[int] = list(gcaps)
    nalloc: list[list[int]] = [[] for _ in range(n)] if nodes_on else []
    bf_alloc: dict[int, list[int]] = {}  # the nodes backfill gave the jobs it starts
    # partitions over different nodes (a capture's nodes.txt: the workload's meta, "machine",
    # "partition_nodes": each partition's nodes by index): each job's nodes (bit k: node k; a job
    # of several partitions: one of them, below; one not listed: every node). Placed and backfilled there,
    # and the main pass stops per partition (job_scheduler.c `failed_parts`, below)
    every_n = (1 << len(nfree)) - 1

    def cpus_of(mask: int) -> int:
        """The CPUs of the nodes in `mask`."""
        return sum([caps[k_] for k_ in range(len(caps)) if (mask >> k_) & 1])

    def free_for(mask: int, g: int) -> list[int]:
        """Each node's free CPUs for a job on the nodes in `mask` that asks for g GPUs a node (0 on
        the others: a node that cannot give the GPUs drops out, as in cons_tres)."""
        return [nfree[k_] if (mask >> k_) & 1 and (g == 0 or gfree[k_] >= g) else 0 for k_ in range(len(nfree))]
    jmask: list[int] = []
    jpart1: list[str] = [str(getattr(pj_, "partition", "") or "").split(",")[0] for pj_ in anyjobs]  # (the one it runs in)
    parts_on = False
    if nodes_on:
        pnodes: dict[str, list[int]] = dict((workload.meta.get("machine") or {}).get("partition_nodes") or {})
        if pnodes:
            pm_of: dict[str, int] = {}
            for pn_, pks_ in pnodes.items():
                pb_ = 0
                for pk_ in pks_:
                    if 0 <= int(pk_) < len(nfree):
                        pb_ |= 1 << int(pk_)
                pm_of[str(pn_)] = pb_
            for pi_, pj_ in enumerate(anyjobs):
                # several partitions: the first listed whose nodes hold the job (slurmctld tries each
                # as a record of its own; a job never spans two), else the first known
                pb_ = 0
                pl_ = str(getattr(pj_, "partition", "") or "").split(",")
                for pn_ in pl_:
                    if pn_ in pm_of and (not pb_ or cpus_of(pm_of[pn_]) >= size[pi_] > cpus_of(pb_)):
                        pb_ = pm_of[pn_]
                        jpart1[pi_] = pn_
                    elif pn_ not in pm_of:
                        pb_ = every_n  # a partition nodes.txt does not list: its nodes unknown, every node
                        break
                jmask.append(pb_ if pb_ else every_n)
            parts_on = any(x != every_n for x in jmask)
            for pi_ in range(n):  # (one that never fits would wait for ever)
                if parts_on and size[pi_] > cpus_of(jmask[pi_]):
                    raise ConfigError(f"job {anyjobs[pi_].job_id}: {size[pi_]} CPUs, more than its partition's "
                                      f"nodes hold ({cpus_of(jmask[pi_])})")
    if gpus_on:
        for pi_ in range(n):  # (one that never fits would wait for ever; Slurm refuses it at submission)
            gm_ = jmask[pi_] if parts_on else every_n
            empty_ = [caps[k_] if (gm_ >> k_) & 1 and gcaps[k_] >= gper[pi_] else 0 for k_ in range(len(caps))]
            if place_nodes(empty_, size[pi_], version=node_model, min_nodes=max(1, gmin[pi_])) is None:
                raise ConfigError(f"job {anyjobs[pi_].job_id}: {size[pi_]} CPUs with {gper[pi_]} GPUs a node"
                                  + (f" on {gmin[pi_]} nodes" if gmin[pi_] > 1 else "") + ", more than the nodes with "
                                  f"that many GPUs hold ({sum(empty_)} CPUs)")
    main_mask = [0]  # (the main pass's nodes for the job it starts: its partition's, less the failed ones')
    cheap_i: list[tuple[float, int]] = []  # (when its CPUs are free, index) of the completing jobs (nodes_on)
    # the queued jobs' sizes: a count per size and the smallest (q_none when the queue is empty):
    # while free < q_min nothing can start, whatever the order
    q_none = (max(size) if n else 0) + 1
    q_cnt = [0] * (q_none + 1)
    q_min = q_none

    # EASY without the gate or slurmctld's scheduler, in `pm` mode (below): the queued jobs' time
    # limits by size, each list sorted (order-free): whether any queued job could backfill is
    # answered without the queue's order (bf_any), so a pass that would start nothing stops there
    probe_ok = track and sched is None and depth == 1
    # (each entry a job's est key, ekey: its limit's rank among the jobs' limits x QK + index, so
    # the entries sort as (limit, index) do; the limit is est[entry & QM])
    est_sz: list[list[int]] = [[] for _ in range(q_none + 1)] if probe_ok else []

    def bf_any(t: float, f: int, shadow: float, extra: int) -> bool:
        """Whether a queued job of at most f nodes fits under the shadow (t + limit <= shadow) or
        in the extra nodes: what pass_easy's scan looks for (the head, larger than f, never counts)."""
        if q_min > f:
            return False
        if q_min <= extra:
            return True
        top = f if f < q_none else q_none - 1
        for s in range(q_min, top + 1):
            es = est_sz[s]
            if es and easy_fits(s, est[es[0] & QM], f, t, shadow, extra):  # (its shortest limit)
                return True
        return False

    # The queue in order without its keys (`pm`: EASY, the presets' priorities, no gate; classic or Fair Tree):
    # at a pass every pending job's priority changes, but within an association its jobs keep their
    # order (the same F, an age that falls with the index, a static part the same for all: the
    # integer priority does not rise with the index, ties go by index). The queue is then the merge
    # of the associations' pending jobs, each in index order: those queued at the pass (index <
    # pm_b) keyed as reprioritise() would key them at the pass (pm_key), on demand; the arrivals
    # since (`tail`, sorted) with their own keys. A heap holds each association's first such job;
    # EASY reads the order from it and the tail (pm_top), and finds the first job that can backfill
    # from the queued jobs' sizes and limits (pm_first_fit), so no pass sorts the whole queue. In
    # this mode qkeys holds one entry a queued job (its length and truth are read; not its order).
    pm = PM_ON and probe_ok and bool(wa) and max_age > 0 and bool(wf) and not wp_keys
    if pm:
        s0 = static[0] if n else 0.0
        pm = all(x == s0 for x in static) and all(submit[i] <= submit[i + 1] for i in range(n - 1))
    pm_enum = PM_ENUM
    pm_q_on = PM_QUEUE_ON
    pm_q_off = PM_QUEUE_OFF
    pm_on = [False]  # the mode, chosen at each pass from the queue's length (pm: whether it may be)
    pm_t = [0.0]  # the pass's time
    # the pass's F by association (its copy; pm_fcv[a] holds while pm_fcs[a] == pm_g[0]) and wf x F
    # (a memo, pm_wfv, while pm_wfs[a] == pm_g[0]): lists stamped with the pass's number, not dicts
    # emptied at each pass (a boxed key and a hash table refilled at every pass, under overload)
    pm_g = [1]
    pm_fcv = [0.0] * na
    pm_fcs = [0] * na
    pm_wfv = [0.0] * na
    pm_wfs = [0] * na
    ff_seen = [0] * na  # pm_first_fit: associations seen at its call ff_g[0]
    ff_g = [0]
    pm_b = [0]  # jobs of index < pm_b[0] were queued at the pass; the others arrived since
    pm_heap: list[int] = []  # the associations' first keys (stale ones: the job started)
    tail: list[int] = []
    # est_sz holds, of each class of an association's queued jobs with the same size and limit, only
    # the first (the least index: whenever another of the class fits, it fits too and comes before it
    # in the order), and the arrivals since the pass (their keys are their own); cls_l: each class's
    # jobs, by the class's number (cls_of: a job's, -1 until the job first enters the mode; ekey:
    # its est_sz entry, set then)
    cls_l: list[list[int]] = []
    cls_id: dict[tuple[int, int, float], int] = {}
    cls_of = [-1] * n if probe_ok else []
    ekey = [0] * n if probe_ok else []
    est_rank: dict[float, int] = {}
    in_es = [False] * n

    def cls_new(i: int) -> int:
        """Job i's class number (numbered at its first sight) and est key."""
        if not est_rank:
            for r, v in enumerate(sorted(set(est))):
                est_rank[v] = r
        ck = (job_assoc[i], size[i], est[i])
        c = cls_id.get(ck)
        if c is None:
            c = len(cls_l)
            cls_id[ck] = c
            cls_l.append([])
        cls_of[i] = c
        ekey[i] = est_rank[est[i]] * QK + i
        return c
    # Lazy passes (`pm`): the walk only charges, and records root after each running job's charge
    # and each charged user's usage after it (lz_root, lz_ap, lz_av); a pending user's F at the pass is computed when first read
    # (lz_eval: the same operations on the same values as the walk's). The heap of the associations'
    # first keys is filled on demand from lz_bh, a heap of lower bounds on those keys: each
    # evaluated association's bound holds for the next LZ_W passes (F can rise only as root's usage
    # grows: UE >= UE_then x root0_then / root's most by then; that most from the largest charge a
    # pass can bring, bill_cap + the padding; the age from the window's end); an association not
    # evaluated since it queued, or whose bound ran out, is bounded by the largest priority (umax_k).
    usp = [-1] * na  # the pass at which usv[a] was taken: association a's usage as the walk began
    usv = [0.0] * na
    lz_pass = [-1]  # the pass whose F are lazy (pass_no when the last pass was one)
    lz_runs: list[int] = []
    lz_root: list[float] = []
    # each association's usage after each of its charges in the walk (as the walk left S[a]), for
    # the pass lz_as[a]: by the walk's position q (index in lz_runs), the charged association's
    # usage after it (lz_rv[q]) and the position of that association's charge before it (lz_rp[q],
    # -1: none); lz_lq[a], a's last position. (Two flat lists a pass, not two per association
    # charged, cleared and refilled: lz_eval walks back from lz_lq[a], past the jobs after its own)
    lz_as = [-1] * na
    lz_lq = [-1] * na
    lz_rv: list[float] = []
    lz_rp: list[int] = []
    lz_d = [prio.damping]  # d at the pass
    fc_gen = [0]  # f_cache's clears since the start (d changed); lz_gen: at the lazy pass
    lz_gen = [0]
    lz_inval = [True]  # every bound dropped at the next lazy pass
    lz_bh: list[int] = []
    lz_cur = [0] * na  # the bound of association a now in lz_bh (0: none)
    lz_new: list[int] = []  # associations queued since the last lazy pass
    lz_evald: list[int] = []  # evaluated at this pass: their bounds (lz_next, to pass lz_nexp) for the next
    lz_next = [0] * na
    lz_nexp = [0] * na
    # the bounds in lz_bh by their last pass (a bound formed at pass p lasts to p + LZ_W): those of
    # the passes before lz_exc[0] are dropped already
    lz_exb: dict[int, list[int]] = {}
    lz_exc = [0]
    # the bound on F behind each association's bound (pm_first_fit's, for any of its jobs), good
    # through pass lz_fbx[a] while no pass dropped every bound since (lz_fbg[a] == lz_igen[0]) and,
    # Fair Tree, no ranking changed its F (ft_drop). (Those two checks are belt and braces: a
    # dropped bound is replaced by the largest priority, and pm_top, which runs before any pick at
    # a pass, keys every such association first, so it is keyed at the pass when a pick reads it.)
    lz_fb = [1.0] * na
    lz_fbx = [-1] * na
    lz_fbg = [0] * na
    lz_igen = [0]
    lz_cm = [0.0]  # the charge a second the bounds allow for (the most so far; a larger one: dropped)
    lz_dref = [0]  # the least d they were formed with (a larger d: dropped)
    lz_rho = [0.0]  # this pass's bounds: UE >= UE now x lz_rho over the window
    lz_tw = [0.0]  # ... the window's end (ages)
    lz_last = [0.0, 0.0]  # the last lazy pass's time and number (passes every P between)
    lz_w = LZ_W
    lz_gw = math.pow(fP * (1.0 - 1e-12), lz_w)  # G falls at most by this over the window
    bill_cap = 0.0  # the most that running jobs bill a second (their sizes add up to at most total)
    for i in range(n):
        if size[i] > 0:
            if bill[i] / size[i] * total > bill_cap:
                bill_cap = bill[i] / size[i] * total
        else:
            bill_cap = sum(bill)
            break
    umax_k = -((int(max(static) + wa + wf if n else 0.0) + 2) * QK)  # -(the largest priority + 1) x QK

    def lz_eval(a: int) -> float:
        """Association a's F at the last pass (a lazy one), as the walk would have computed it when it
        met a's first pending job (root then from lz_root; a's usage as the walk began plus its
        charges before that job); kept for the pass (pm_fcv, ue_uv, f_cache unless d changed since),
        and a bound on a's first key for the next passes (lz_next). Fair Tree: a's F from the
        ranker (ranked first if the pass left it due), and a bound that holds while that F does
        (a ranking that changes it drops the bound: ft_drop)."""
        if fair_tree:
            if ft_due[0] is not None:
                ft_settle()
            p = user_q[a][0]
            f = f_cache.get(a, 0.0)
            pm_fcv[a] = f
            pm_fcs[a] = pm_g[0]
            age = lz_tw[0] - eligible[p]
            pb = static[p] + wa * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0)) + wf * f
            lz_next[a] = p - (int(pb * (1.0 + 1e-9) + 1e-6) + 1) * QK
            lz_nexp[a] = pass_no + lz_w
            lz_evald.append(a)
            lz_fb[a] = f
            lz_fbx[a] = pass_no + lz_w
            lz_fbg[a] = lz_igen[0]
            return f
        d_p = lz_d[0]
        p = user_q[a][0]
        if shares_parent[a]:
            fa = fsp_ix[a]
            v = acct_ue(fa)
            ns = norm_s[fa]
            f = fairshare.fairshare_factor(v, ns, d_p)
        else:
            # (bisect_left(lz_runs, p), inline: a call to the bisect
            # module from the compiled engine costs about 1,000 instructions, the loop a few dozen)
            lr = lz_runs
            j = 0
            hi = len(lr)
            while j < hi:
                mid = (j + hi) >> 1
                if lr[mid] < p:
                    j = mid + 1
                else:
                    hi = mid
            root = lz_root[j]
            if usp[a] == pass_no:
                x = usv[a]
                if lz_as[a] == pass_no:  # (its usage after its last charge before that job)
                    m = lz_lq[a]
                    while m >= j:
                        m = lz_rp[m]
                    if m >= 0:
                        x = lz_rv[m]
            else:
                x = S[a]
            ue_fs = acct_ue(fsp_ix[a])
            if root > 0:
                un = x / root
                if not un < 1.0:
                    un = 1.0
            else:
                un = 0.0
            kind, w = rule[a]
            v = un if kind == FS_ROOT else (un + (ue_fs - un) * w if kind == FS_LEVEL else ue_fs)
            ue_uv[a] = v
            ue_us[a] = pass_no
            ns = norm_s[a]
            f = math.pow(2.0, -(v / ns) / d_p) if ns > 0 else 0.0
        pm_fcv[a] = f
        pm_fcs[a] = pm_g[0]
        if fc_gen[0] == lz_gen[0]:
            f_cache[a] = f
        fb = math.pow(2.0, -((v * lz_rho[0]) / ns) / d_p) if ns > 0 else 0.0
        lz_fb[a] = fb
        lz_fbx[a] = pass_no + lz_w
        lz_fbg[a] = lz_igen[0]
        age = lz_tw[0] - eligible[p]
        pb = static[p] + wa * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0)) + wf * fb
        lz_next[a] = p - (int(pb * (1.0 + 1e-9) + 1e-6) + 1) * QK
        lz_nexp[a] = pass_no + lz_w
        lz_evald.append(a)
        return f

    def ft_drop(changed: Mapping[int, float]) -> None:
        """Fair Tree, `pm` mode: the associations whose F a ranking changed lose their bounds
        (now, if this pass's bounds are set; else when they are: ft_chg)."""
        for a in changed:
            lz_fbx[a] = -1
        if lz_pass[0] != pass_no:
            ft_chg.extend(changed)
            return
        b = pm_b[0]
        bh = lz_bh
        for a in changed:
            if lz_cur[a] != 0:
                uq = user_q[a]
                if uq and uq[0] < b:
                    lb = umax_k + uq[0]
                    lz_cur[a] = lb
                    heappush(bh, lb)
                else:
                    lz_cur[a] = 0

    ft_chg: list[int] = []  # Fair Tree: associations whose F changed before this pass's bounds were set

    def lz_setup(t: float) -> None:
        """A lazy pass (after its walk): the bounds of the pending associations' first keys."""
        lz_pass[0] = pass_no
        lz_gen[0] = fc_gen[0]
        inval = lz_inval[0]
        lz_inval[0] = False
        cm = bill_cap + pad_rate + pulse_rate
        if fair_tree:  # (F from the ranks: neither d nor the charges bound it; ft_drop)
            pass
        elif cm > lz_cm[0]:  # (a bound holds while the charge a second is at most the one it allowed for)
            inval = True
            lz_cm[0] = cm * 2.0
        elif cm * 4.0 < lz_cm[0]:  # (the bounds from here on allow for less: the least of them counts)
            lz_cm[0] = cm * 2.0
        if damp[0] > lz_dref[0] and not fair_tree:  # (a bound holds while d is at most the d it was formed with)
            inval = True
        lz_dref[0] = damp[0]  # (the least d of the bounds from here on)
        if t - lz_last[0] > (pass_no - lz_last[1]) * P + 1e-6:  # (passes skipped: an idle machine)
            inval = True
        lz_last[0] = t
        lz_last[1] = float(pass_no)
        if not fair_tree:
            den = G * lz_gw  # (0 when it underflows: no bound on root's growth, none from usage)
            rmax = (lz_root[-1] + lz_cm[0] * P * lz_w / den) * (1.0 + 1e-9) if den > 0 else INF
            lz_rho[0] = snap_val[0] / rmax * (1.0 - 1e-9) if 0 < rmax < INF else 0.0
        lz_tw[0] = t + lz_w * P
        bh = lz_bh
        b = pm_b[0]
        if inval:
            lz_igen[0] += 1
            del bh[:]
            lz_exb.clear()
            lz_exc[0] = pass_no
            del lz_evald[:]
            del lz_new[:]
            del ft_chg[:]
            for kp in pend_l:  # (in index order: a heap already)
                lb = umax_k + (kp >> PS)
                lz_cur[kp & PM] = lb
                bh.append(lb)
            return
        if len(bh) > 2 * len(pend_l) + 64:  # (the bounds since replaced, dropped)
            bh[:] = [lb for lb in bh if lz_cur[job_assoc[lb & QM]] == lb]
            heapq.heapify(bh)
        exb = lz_exb
        for a in lz_evald:
            uq = user_q[a]
            if uq and uq[0] < b:
                lb = lz_next[a]
                lz_cur[a] = lb
                heappush(bh, lb)
                xp = lz_nexp[a]
                xl = exb.get(xp)
                if xl is None:
                    exb[xp] = [lb]
                else:
                    xl.append(lb)
        del lz_evald[:]
        for a in lz_new:
            uq = user_q[a]
            if uq and uq[0] < b:
                lb = umax_k + uq[0]
                lz_cur[a] = lb
                heappush(bh, lb)
        del lz_new[:]
        for a in ft_chg:  # (Fair Tree: F changed by this pass's ranking, after those bounds were formed)
            uq = user_q[a]
            if uq and uq[0] < b:
                lb = umax_k + uq[0]
                lz_cur[a] = lb
                heappush(bh, lb)
            else:
                lz_cur[a] = 0
        del ft_chg[:]
        if exb:
            for xp in range(lz_exc[0], pass_no):  # (the bounds that ran out: in any order, the same)
                xl = exb.pop(xp, None)
                if xl is None:
                    continue
                for lb in xl:
                    a = job_assoc[lb & QM]
                    if lz_cur[a] == lb:
                        uq = user_q[a]
                        if uq and uq[0] < b:
                            lb = umax_k + uq[0]
                            lz_cur[a] = lb
                            heappush(bh, lb)
                        else:
                            lz_cur[a] = 0
        lz_exc[0] = pass_no

    def pm_key(i: int) -> int:
        """Job i's queue key at the pass: preset_keys' operations."""
        a = job_assoc[i]
        g = pm_g[0]
        if pm_wfs[a] == g:
            x = pm_wfv[a]
        else:
            x = wf * (pm_fcv[a] if pm_fcs[a] == g else lz_eval(a))
            pm_wfv[a] = x
            pm_wfs[a] = g
        age = pm_t[0] - eligible[i]
        p = static[i] + wa * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0)) + x
        return i - (int(p) if p >= 1 else 1) * QK

    def pm_top() -> int:
        """The first queue key (0: the queue is empty)."""
        h = pm_heap
        bh = lz_bh
        while True:
            while h and start[h[0] & QM] != INF:
                heappop(h)
            if bh and (not h or bh[0] < h[0]):
                # an association whose first key may come first: its key now (lz_eval)
                lb = heappop(bh)
                a = job_assoc[lb & QM]
                if lz_cur[a] == lb:
                    lz_cur[a] = 0
                    uq = user_q[a]
                    if uq and uq[0] < pm_b[0]:
                        heappush(h, pm_key(uq[0]))
                continue
            break
        x = h[0] if h else 0
        if tail and (x == 0 or tail[0] < x):
            x = tail[0]
        return x

    def pm_top_before(fresh: set[int]) -> int:
        """The first queue key not in `fresh` (this event's arrivals)."""
        pm_top()
        x = pm_heap[0] if pm_heap else 0
        for kq in tail:
            if kq not in fresh:
                if x == 0 or kq < x:
                    x = kq
                break
        return x

    def pm_key_of(i: int) -> int:
        return pm_key(i) if i < pm_b[0] else i - prio_of[i] * QK

    def pm_first_fit(t: float, f: int, shadow: float, extra: int) -> int:
        """The first queued job in the order that passes easy_fits with f free nodes (-1: none, as
        bf_any tells without the order), as pass_easy's scan finds it."""
        if not bf_any(t, f, shadow, extra):
            return -1
        top = f if f < q_none else q_none - 1
        cands: list[int] = []  # the est keys of every job that fits, by size
        for s in range(q_min, top + 1):
            es = est_sz[s]
            if not es:
                continue
            if s <= extra:
                cands += es
            else:  # the jobs with t + limit <= shadow: a prefix (t + limit rises with the limit)
                lo = 0
                hi = len(es)
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if t + est[es[mid] & QM] <= shadow:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo:
                    cands += es[:lo]
        b = pm_b[0]
        cnt = len(cands)
        if cnt <= pm_enum:
            # not too many: the least key among them (an association's first candidate, the least
            # index, has its least key: only those are keyed; an arrival's key is its own)
            idx = sorted([k & QM for k in cands])
            nb = bisect_left(idx, b)  # (idx[nb:]: the arrivals since the pass)
            best = 0
            for k in range(nb, cnt):
                i = idx[k]
                kq = i - prio_of[i] * QK
                if best == 0 or kq < best:
                    best = kq
            ff_g[0] += 1
            fg = ff_g[0]
            pg = pm_g[0]
            # an association keyed at this pass: its candidate's key; another: a lower bound on it,
            # from its bound on F (lz_fb, else F <= 1) and the job's age now, keyed only while its
            # bound comes before the least key so far (in the order of the bounds)
            lbs: list[int] = []
            tp = pm_t[0]
            for k in range(nb):  # (each association's least index: its first in idx)
                i = idx[k]
                a = job_assoc[i]
                if ff_seen[a] == fg:
                    continue
                ff_seen[a] = fg
                if pm_wfs[a] == pg:
                    kq = pm_key(i)
                    if best == 0 or kq < best:
                        best = kq
                else:
                    fb = lz_fb[a] if lz_fbx[a] >= pass_no and lz_fbg[a] == lz_igen[0] else 1.0
                    age = tp - eligible[i]
                    pb = static[i] + wa * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0)) + wf * fb
                    lb = i - (int(pb * (1.0 + 1e-9) + 1e-6) + 1) * QK
                    if best == 0 or lb < best:
                        lbs.append(lb)
            if lbs:
                lbs.sort()
                for lb in lbs:
                    if best != 0 and lb > best:
                        break
                    kq = pm_key(lb & QM)
                    if best == 0 or kq < best:
                        best = kq
            return best & QM
        # many: the queue in order (the associations' pending jobs merged, and the tail) until one fits
        while lz_bh:  # (every association's first key now)
            lb = heappop(lz_bh)
            a = job_assoc[lb & QM]
            if lz_cur[a] == lb:
                lz_cur[a] = 0
                uq = user_q[a]
                if uq and uq[0] < b:
                    heappush(pm_heap, pm_key(uq[0]))
        mh: list[tuple[int, int, int]] = []
        for kq in pm_heap:
            i = kq & QM
            if start[i] == INF:
                mh.append((kq, job_assoc[i], 0))
        heapq.heapify(mh)
        ti = 0
        nt = len(tail)
        while True:
            if mh and (ti >= nt or mh[0][0] < tail[ti]):
                kq, a, pos = mh[0]
                i = kq & QM
                uq = user_q[a]
                if pos + 1 < len(uq) and uq[pos + 1] < b:
                    heapq.heapreplace(mh, (pm_key(uq[pos + 1]), a, pos + 1))
                else:
                    heappop(mh)
            else:
                i = tail[ti] & QM
                ti += 1
            if easy_fits(size[i], est[i], f, t, shadow, extra):
                return i

    def q_drop(s: int) -> None:
        nonlocal q_min
        c = q_cnt[s] = q_cnt[s] - 1
        if c == 0 and s == q_min:
            m = s + 1
            while m < q_none and not q_cnt[m]:
                m += 1
            q_min = m

    def q_add(s: int) -> None:
        nonlocal q_min
        q_cnt[s] = q_cnt[s] + 1
        if s < q_min:
            q_min = s

    last_pass = submit[0] if n else 0.0
    if first_pass is not None:
        last_pass = first_pass

    def start_job(i: int, t: float) -> None:
        nonlocal free, q_min
        bf_dirty[0] = True
        bf_t[0] = t
        start[i] = t
        order.append(i)
        if alim is not None:
            alim.add(i)
        e = t + run[i]
        end[i] = e
        s = size[i]
        free -= s
        if nodes_on:
            na_ = bf_alloc.pop(i, None)
            if na_ is None and (parts_on or gpus_on):
                mm_ = main_mask[0] if main_mask[0] else (jmask[i] if parts_on else every_n)
                na_ = place_nodes(free_for(mm_, gper[i] if gpus_on else 0), s, version=node_model,
                                  min_nodes=max(1, gmin[i]) if gpus_on else 1)
                main_mask[0] = 0
                if na_ is None:  # (cannot happen: the caller saw s CPUs free there)
                    raise RuntimeError(f"job {i}: {s} CPUs do not fit on its partition's nodes {nfree}")
            elif na_ is None:
                na_ = place_nodes(nfree, s, version=node_model)
                if na_ is None:  # (cannot happen: the caller saw s CPUs free)
                    raise RuntimeError(f"job {i}: {s} CPUs do not fit on nodes {nfree}")
            for nk_ in range(len(na_)):
                nfree[nk_] -= na_[nk_]
            if gpus_on and gper[i]:
                for nk_ in range(len(na_)):
                    if na_[nk_]:
                        gfree[nk_] -= gper[i]
            nalloc[i] = na_
        c = q_cnt[s] = q_cnt[s] - 1  # q_drop(s), inlined
        if c == 0 and s == q_min:
            m = s + 1
            while m < q_none and not q_cnt[m]:
                m += 1
            q_min = m
        if pm_on[0]:
            es = est_sz[s]
            del es[bisect_left(es, ekey[i])]
            in_es[i] = False
            cl = cls_l[cls_of[i]]
            if cl[0] == i:
                del cl[0]
                if cl:
                    m = cl[0]  # (the class's next, unless it is there already: an arrival since the pass)
                    if not in_es[m]:
                        insort(es, ekey[m])
                        in_es[m] = True
            else:
                del cl[bisect_left(cl, i)]
            qkeys.pop()
            if i >= pm_b[0]:
                del tail[bisect_left(tail, i - prio_of[i] * QK)]
        heappush(heap, (e, i))
        insort(running, (t + est[i], i))
        run_set.add(i)
        insort(runs_l, i)
        if track:
            a = job_assoc[i]
            uq = user_q[a]
            if uq[0] == i:
                del uq[0]
                del pend_l[bisect_left(pend_l, (i << PS) | a)]
                if uq:
                    insort(pend_l, (uq[0] << PS) | a)
                    if pm_on[0] and uq[0] < pm_b[0]:
                        heappush(pm_heap, pm_key(uq[0]))
            else:
                del uq[bisect_left(uq, i)]

    easy_valid = False
    easy_stale = False  # skipped (nothing could start): the state is that of the queue before the next arrivals
    easy_shadow = 0.0
    easy_extra = 0
    easy_head = 0
    no_skip: set[int] = set()

    def pm_pass(t: float) -> None:
        """pass_easy on the queue in `pm` mode (the same starts, in the same order)."""
        nonlocal easy_valid, easy_shadow, easy_extra, easy_head, easy_stale
        easy_stale = False
        while True:
            h = pm_top()
            if h == 0:
                easy_valid = False
                return
            if size[h & QM] > free:
                break
            start_job(h & QM, t)
        if not backfill:
            easy_valid = True
            easy_head = h
            easy_shadow, easy_extra = -INF, -1
            return
        f = free
        if f < q_min:
            easy_valid = False
            easy_stale = True
            return
        easy_shadow, easy_extra = easy_search(h & QM, size, est, t, free, running, pm_first_fit, start_job)
        easy_valid = True
        easy_head = h


    def pass_easy(t: float) -> None:
        nonlocal easy_valid, easy_shadow, easy_extra, easy_head, easy_stale
        if pm_on[0]:
            pm_pass(t)
            return
        easy_stale = False
        q = qkeys
        nq = len(q)
        k = 0
        while k < nq and size[q[k] & QM] <= free:  # the head run
            start_job(q[k] & QM, t)
            k += 1
        if k == nq:
            del qkeys[:]
            easy_valid = False
            return
        if k:
            del q[:k]
        if not backfill:
            easy_valid = True
            easy_head = qkeys[0]
            easy_shadow, easy_extra = -INF, -1
            return
        if free < q_min:  # nothing else fits: the head's shadow is found when a job can next start
            easy_valid = False
            easy_stale = True
            return
        # (q_min: the smallest job still queued; at most the one after a start, so a pick it lets
        # through starts nothing when the one after would stop it below)
        started, shadow, extra = easy_backfill(q, QM, size, est, t, free, q_min, running)
        if started:
            for kq in started:
                start_job(kq & QM, t)
            drop_started(q, started)
        easy_valid = True
        easy_shadow, easy_extra = shadow, extra
        easy_head = q[0]

    def arrivals_easy(t: float, new: list[int]) -> bool:
        """Check only the new entries against the kept EASY state; False: a full pass is needed."""
        nonlocal easy_extra
        picked = easy_arrivals(new, None, easy_head, QM, size, est, t, free, easy_shadow, easy_extra)
        if picked is None:
            return False
        started, easy_extra = picked
        if not pm_on[0]:
            drop_started(qkeys, started)
        for kq in started:
            start_job(kq & QM, t)
        return True

    def pass_general(t: float) -> None:
        started = general_pick(qkeys, QM, size, est, t, free, running, depth, backfill, no_skip)
        for kq in started:
            start_job(kq & QM, t)
        drop_started(qkeys, started)

    def main_pass(t: float, lim: int) -> None:
        """Slurm's main scheduler: the jobs in priority order (at most `lim`: an event's pass tests
        default_queue_depth + 1, job_scheduler.c's `job_depth++ > def_job_limit`), each started while
        it fits; the first that does not stops the pass (one partition)."""
        if not main_on:
            return  # sched_interval=-1: slurmctld's `_schedule` returns at once
        if lazy[0] is not None:
            materialise()
        if parts_on or pdepth or gpus_on or mn_on or alim is not None:
            main_pass_parts(t, lim)
            return
        q = qkeys
        nq = len(q)
        k = 0
        if smax_main and smax_main < lim:
            lim2 = smax_main  # sched_max_job_start: the pass ends once it started that many
        else:
            lim2 = lim
        while k < nq and k < lim2 and size[q[k] & QM] <= free:
            start_job(q[k] & QM, t)
            k += 1
        if k < lim2 and k + 1 < nq and k + 1 < lim:
            # the jobs it passes behind the first that does not fit get Reason=Priority, and
            # last_job_update = now (job_scheduler.c, the partition's failed test): a change
            bf_dirty[0] = True
            bf_t[0] = t
        if k:
            del q[:k]

    def main_pass_parts(t: float, lim: int) -> None:
        """The main scheduler over partitions on different nodes (job_scheduler.c `_schedule`):
        a job that does not fit on its partition's nodes still available fails its partition (the
        partition and its nodes are taken out of the pass: `failed_parts`, `avail_node_bitmap`),
        and the pass goes on with the jobs of the other partitions, each counted towards `lim`
        (default_queue_depth + 1), a failed partition's too; a job passed by behind a failure
        (Reason=Priority) is a change for backfill. partition_job_depth: a partition's jobs past
        that many in the pass are passed by, counted towards no limit (`max_jobs_per_part`, checked
        before `job_depth++`; in the pool, its partitions over one machine: a failure ends the pass)."""
        q = qkeys
        nq = len(q)
        nn = len(nfree)
        avail = every_n
        failed: set[int] = set()
        got: set[int] = set()
        ngot = 0
        after_fail = False
        seen_p: dict[str, int] = {}
        tested_ = 0
        pool_failed = False
        for k in range(nq):
            if smax_main and ngot >= smax_main:
                break
            kq = q[k]
            i = kq & QM
            if pdepth:
                pc_ = seen_p.get(jpart1[i], 0)
                seen_p[jpart1[i]] = pc_ + 1
                if pc_ >= pdepth:
                    continue  # (its Reason=Priority: a change only for a job no scheduler looked at, which its submission already was)
            if tested_ >= lim:
                break
            tested_ += 1
            if not parts_on and not gpus_on:  # the pool: one machine; after the first that does not fit none starts
                if pool_failed:
                    after_fail = True  # a job passed by behind it (Reason=Priority): a change
                    break
                if alim is not None and alim.over(i):
                    continue  # held by a limit: passed by, the partition open (job_scheduler.c)
                if size[i] > free:
                    if not (mn_on and no_fail(kq, t)):
                        pool_failed = True
                    continue
                start_job(i, t)
                got.add(kq)
                ngot += 1
                continue
            m = jmask[i] if parts_on else every_n
            if failed:
                after_fail = True
            if m in failed:
                continue
            if alim is not None and alim.over(i):
                continue  # held by a limit: passed by, the partition open (job_scheduler.c)
            mm = m & avail
            f = 0
            gi = gper[i] if gpus_on else 0
            for b in range(nn):
                if (mm >> b) & 1 and (gi == 0 or gfree[b] >= gi):
                    f += nfree[b]
            if size[i] <= f and gpus_on and gmin[i] > 1:  # -N: on that many nodes too
                if place_nodes(free_for(mm, gi), size[i], version=node_model, min_nodes=gmin[i]) is None:
                    f = -1
            if size[i] <= f:
                main_mask[0] = mm
                start_job(i, t)
                got.add(kq)
                ngot += 1
            elif not (mn_on and no_fail(kq, t)):
                failed.add(m)
                avail &= ~m
        if after_fail:
            bf_dirty[0] = True
            bf_t[0] = t
        if got:
            q[:] = [x for x in q if x not in got]

    # a job arrived, started or ended, the priorities changed or a main pass passed jobs by, since
    # the last cycle began (in its second: slurmctld's `last_job_update >= last_backfill_time`)
    bf_dirty = [True]
    bf_t = [-INF]  # when last
    # SchedulerParameters' per-user, -association and -partition limits on the jobs a cycle tests
    # (slurmsched.bf_tested): each job's user, account and partition
    bf_lim = sched is not None and bool(sched.bf_limited)
    j_user: list[str] = [str(j.user or "user") for j in anyjobs] if bf_lim else []
    j_acct: list[str] = [str(j.account or "default") for j in anyjobs] if bf_lim else []
    j_part: list[str] = jpart1 if bf_lim else []
    smax_main = int(sched.sched_max_job_start) if sched is not None else 0
    pdepth = int(sched.partition_job_depth) if sched is not None else 0
    # bf_min_age_reserve / bf_min_prio_reserve: a cycle makes no plan for a job pending (since it was
    # eligible) less than min_age, or whose priority (its key's, the last pass's; less the tier's
    # rank x 2^32) is below min_prio: it starts now or not at all (slurmsched.backfill_starts' no_reserve)
    nr_age = float(sched.bf_min_age_reserve_s) if sched is not None else 0.0
    nr_prio = int(sched.bf_min_prio_reserve) if sched is not None else 0
    QKB = QK.bit_length() - 1
    # the same in the main pass (job_scheduler.c, `fail_by_part = false`): a job that does not fit
    # fails its partition only if it has waited main_min_age_s and its priority is not below its
    # threshold; else the pass goes on to the next jobs (SlurmSched.main_min_age_s, main_min_prio)
    mn_age = float(sched.main_min_age_s) if sched is not None else 0.0
    mn_prio = int(sched.main_min_prio) if sched is not None else 0
    # a QOS's MinPrioThreshold (SimJob.prio_thresh: a capture's qos.txt and partitions.txt, with
    # AccountingStorageEnforce=limits): the job's threshold instead of bf_min_prio_reserve, in both
    # schedulers (acct_policy_get_prio_thresh)
    qthr: list[int] = [int(getattr(j_, "prio_thresh", 0) or 0) for j_ in anyjobs]
    if not any(qthr):
        qthr = []
    mn_on = sched is not None and (mn_age > 0 or mn_prio > 0 or len(qthr) > 0)

    def no_fail(kq: int, t: float) -> bool:
        """Whether the job of key kq, not fitting, leaves its partition open in the main pass."""
        i = kq & QM
        if mn_age > 0 and t - eligible[i] < mn_age:
            return True
        thr_ = qthr[i] if qthr and qthr[i] else mn_prio
        return thr_ > 0 and (-(kq >> QKB)) % 4294967296 < thr_
    main_on = bool(sched.main_sched) if sched is not None else True
    if sched is not None and not main_on and not sched.backfill and n:
        raise ConfigError("sched_interval=-1 with no backfill (bf_interval=-1 or sched/builtin): slurmctld starts no job")

    def bf_pass(t: float) -> None:
        """A backfill cycle (slurmsched.backfill_starts). One with nothing changed since the last
        is skipped (backfill.c `_more_work`), though a later now may move bf_window's end and the
        rounding; a change at this very time, before the cycle, still counts for the next (slurmctld
        compares whole seconds with >=)."""
        bf_dirty[0] = bf_t[0] >= t
        if lazy[0] is not None:
            materialise()
        src: list[int] = qkeys
        more: Any = None
        if alim is not None:  # held by a limit on running jobs: passed by before bf_max_job_test counts it
            src = []
            pos_ = 0
            for kq in qkeys:
                pos_ += 1
                if not alim.count_blocked(kq & QM):
                    src.append(kq)
                    if not bf_lim and len(src) >= sched.bf_max_job_test:
                        break
            if not bf_lim:  # (one a start of this cycle puts under a limit: passed by uncounted, the next tested)
                more = (kq for kq in qkeys[pos_:] if not alim.count_blocked(kq & QM))
        tested = bf_tested(src, sched, j_user, j_acct, j_part, QM) if bf_lim else src
        nores: set[int] = set()
        if nr_age > 0 or nr_prio > 0 or qthr:
            for kq in tested[:sched.bf_max_job_test]:
                pr_ = qthr[kq & QM] if qthr and qthr[kq & QM] else nr_prio
                if (pr_ > 0 and (-(kq >> QKB)) % 4294967296 < pr_) or (nr_age > 0 and t - eligible[kq & QM] < nr_age):
                    nores.add(kq & QM)
        if nodes_on:
            busy = [(e, nalloc[j]) for e, j in running] + [(e, nalloc[j]) for e, j in cheap_i]
            bgpu: list[int] | None = None
            if gpus_on:
                bgpu = [gper[j] for _, j in running] + [gper[j] for _, j in cheap_i]
            got = backfill_nodes(t, tested, nfree, busy, size, est, sched, QM, q_min, node_model,
                                 jmask if parts_on else None, nores, gfree if gpus_on else None,
                                 gper if gpus_on else None, bgpu, gmin if gpus_on else None, alim, more)
            starts = [j for j, _ in got]
            for j, a in got:
                bf_alloc[j] = a
        else:
            starts = backfill_starts(t, tested, free, running, size, est, total, sched, QM, q_min, cheap, (), True, None, nores,
                                     alim, more)
        if starts:
            st = set(starts)
            qkeys[:] = [kq for kq in qkeys if (kq & QM) not in st]
            for i in starts:
                if alim is not None:
                    alim.add(i, -1)  # (counted by the cycle: start_job counts it)
                start_job(i, t)

    def schedule(t: float, ended: bool, new: list[int], reordered: bool) -> None:
        nonlocal easy_valid, easy_stale, easy_head, easy_shadow, easy_extra
        if not qkeys:
            return
        if sched is not None:
            if free >= q_min:
                main_pass(t, sched.default_queue_depth + 1)
            return
        if depth > 1:
            pass_general(t)
        elif free < q_min or free <= 0:
            # nothing fits in the free nodes (a full machine, or every queued job too large): nothing
            # starts, whatever the order. EASY's pass would only note the head and its shadow; that
            # state is formed when a job can next start (`easy_stale`)
            easy_valid = False
            easy_stale = True
        else:
            if lazy[0] is not None:
                materialise()
            if ended or reordered:
                pass_easy(t)
            elif easy_valid:
                if not arrivals_easy(t, new):
                    pass_easy(t)
            elif easy_stale:
                # the state the skipped passes would have left (they start nothing: every job queued
                # before these arrivals is larger than the free nodes): the head is the first of those
                # in the order, with its shadow; then the arrivals are tried against it as they would
                # have been (in arrival order)
                fresh = set(new)
                if pm_on[0]:  # the first of the associations' queued jobs and the earlier arrivals
                    kq = pm_top_before(fresh)
                else:
                    for kq in qkeys:
                        if kq not in fresh:
                            break
                easy_head = kq
                if backfill:
                    # (kq alone: it does not fit, as no job queued before these arrivals does)
                    _, easy_shadow, easy_extra = easy_backfill([kq], QM, size, est, t, free, 0, running)
                else:
                    easy_shadow, easy_extra = -INF, -1
                easy_valid = True
                easy_stale = False
                if not arrivals_easy(t, new):
                    pass_easy(t)
            else:
                pass_easy(t)

    # ------------------------------------------------------------ the controller
    pad_rate = 0.0  # the steady padding job: billing 1 x UsageFactor k, charged at every pass
    pulse_end = -INF
    pulse_rate = 0.0
    pulse_start = 0.0
    dummy_ix = kix.get(dummy) if dummy is not None else None
    if cs is not None and cs.method in ("padding", "hybrid") and dummy_ix is None:
        dm = dummy if dummy is not None else ("?", "?")
        raise ConfigError(f"padding needs the dummy association {dm[0]}/{dm[1]} in the share tree")
    s_ref = None
    d_conf = prio.damping  # what slurm.conf says (a reconfigure puts it back)
    d_last: int | None = None
    qjob_cache: dict[int, QueueJob] = {}
    if cs is not None:
        s_ref, _ = fairshare.choose_reference_share(rows, prio.damping, dummy, cs.reference)
        out.s_ref = s_ref

    last_read: list[float | None] = [None]

    def root_row(u: float) -> ShareRow:
        return ShareRow("root", "", "", 0, None, False, 1.0, int(u), None, 1.0, None)

    def control_tick(t: float) -> None:
        nonlocal pad_rate, pulse_end, pulse_rate, pulse_start, d_last
        assert cs is not None  # (ticks are scheduled only with a ControlSpec)
        out.control_ticks += 1
        u_tot = S[0] * G
        last_read[0] = float(int(u_tot))
        w = S[dummy_ix] * G if dummy_ix is not None else 0.0
        snap = [root_row(u_tot)]
        if dummy is not None:
            snap.append(ShareRow(dummy[0], dummy[1], dummy[0], 2, 1, False, None, int(w), None, None, None))
        real = []
        for i in run_set:
            q = qjob_cache.get(i)
            if q is None:
                j = anyjobs[i]
                q = qjob_cache[i] = QueueJob(j.job_id, j.user, j.account, "sim", "normal", "RUNNING", size[i],
                                             size[i], 0, 0, "None", submit[i], start[i], int(est[i]))
            real.append(q)
        dec = control.plan_control(
            snap, method=cs.method, u_star=cs.u_star, d_now=damp[0], d_last=d_last, half_life_s=prio.half_life_s,
            calc_period_s=P, dummy=dummy, s_ref=s_ref, running_real=real, usage_factors={},
            billings={anyjobs[i].job_id: bill[i] for i in run_set},
            hysteresis=cs.hysteresis, padding_mode=cs.padding_mode, padding_threshold=cs.padding_threshold,
        )
        if dec.advise_only:
            return
        if dec.d_target != damp[0]:
            damp[0] = dec.d_target
            if not fair_tree:
                f_cache.clear()
                fc_gen[0] += 1
            out.d_changes += 1
        d_last = dec.d_target
        if cs.padding_mode == "steady":
            if dec.usage_factor is not None:
                set_pad_rate(dec.usage_factor)
        elif dec.pulse_usage_factor is not None and t >= pulse_end:
            # the pulse job: 1 CPU for one PriorityCalcPeriod at the pulse UsageFactor (actions.submit_dummy)
            pulse_start, pulse_end, pulse_rate = t, t + P, dec.pulse_usage_factor
            out.pulses += 1

    def set_pad_rate(k: float) -> None:
        nonlocal pad_rate
        pad_rate = k

    def dummy_charges(t: float) -> None:
        """The padding jobs' charge at a pass at t (steady: the dummy job runs all along; Slurm
        reads its QOS's UsageFactor at the pass)."""
        if dummy_ix is None:
            return
        if pad_rate > 0:
            d = t - last_pass
            if d > 0:
                charge(dummy_ix, d * pad_rate * f1**d)
        if pulse_rate > 0 and pulse_start < t < pulse_end:
            d = t - max(last_pass, pulse_start)
            if d > 0:
                charge(dummy_ix, d * pulse_rate * f1**d)

    # ------------------------------------------------------------ the gate
    held: set[int] = set()
    ledger: set[int] = set()
    id_ix = {j.job_id: i for i, j in enumerate(anyjobs)} if gate is not None else {}  # (read by the gate only)
    ids = [j.job_id for j in anyjobs] if gate is not None else []
    allocs = workload.allocations

    def _qjob(i: int, state: str, reason: str, prio: int) -> QueueJob:
        j = anyjobs[i]
        return QueueJob(j.job_id, j.user, j.account, "sim", "normal", state, size[i], size[i], prio, nice[i], reason,
                        submit[i], start[i] if state == "RUNNING" else None, int(est[i]))

    def _prio(i: int) -> int:
        return prio_of[i]

    def requeue(i: int, t: float) -> None:
        pr = priority(i, t)
        prio_of[i] = pr
        insort(qkeys, i - pr * QK)
        q_add(size[i])

    def unqueue(i: int) -> None:
        del qkeys[bisect_left(qkeys, i - prio_of[i] * QK)]
        q_drop(size[i])

    def gate_now(t: float) -> bool:
        """A gate tick at t (easycore's): True when it acted."""
        plan = gate_tick(t, list(run_set), [kq & QM for kq in qkeys], _prio, _qjob, allocs, gate, ids, id_ix, held,
                         ledger, eligible, nice, unqueue, requeue, out)
        return bool(plan.actions)

    # ------------------------------------------------------------ passes
    trace_ix = [kix[k] for k in trace_keys] if trace_keys else [i for i in range(na) if is_user[i]]

    def do_pass(t: float, quiet: bool = False) -> None:
        nonlocal G, last_pass, pass_no, pulse_rate, easy_valid
        easy_valid = False
        if record_passes and cs is not None:
            out.records.append(PassRecord(t - t0, damp[0], S[0] * G, S[dummy_ix] * G if dummy_ix is not None else 0.0,
                                          last_read[0]))
        pass_no += 1
        if not fair_tree:
            f_cache.clear()
        dt = t - last_pass
        f_dt = fP if dt == P else math.pow(f1, dt)
        if dt > 0:
            G *= f_dt
            if G < 1e-200:  # renormalise before it underflows (long runs, short half-lives)
                for a in range(na):
                    S[a] = S[a] * G
                G = 1.0
                lz_inval[0] = True
                if fair_tree:
                    ft_touched.update(range(na))
        root0 = S[0]  # root's usage as the pass starts (at_pass_start(0) until the walk charges it)
        if dummy_ix is not None:
            dummy_charges(t)
        if fair_tree:
            for i in run_set:
                d = t - (last_pass if start[i] < last_pass else start[i])
                charge(job_assoc[i], d * bill[i] * f1**d)
            last_pass = t
            if qkeys or trace:  # (Slurm ranks at every pass; only pending jobs read it)
                if not trace and lazy_ok and free < q_min:  # (reprioritise_at_pass's lazy case)
                    ft_due[0] = S[:]
                else:
                    ft_due[0] = None
                    fair_tree_rank()
            else:
                # nothing pending: the ranks are read by the jobs that arrive before the next pass
                # (ranked then, from this pass's usage; they read older ranks before: issue #32)
                ft_due[0] = S[:]
            if qkeys:
                reprioritise_at_pass(t)
        else:
            # each pending user's first pending job in the list: where the walk computes their UE
            # (a dict from the indices in decreasing order keeps each association's smallest)
            ja = job_assoc
            # (keys as pend_l's; the last, n x PK, ends the walk)
            if quiet:  # (nothing reads this pass's F: the walk only charges)
                pend = [n << PS]
            elif track:
                pend = pend_l + [n << PS]
            elif qkeys:
                idx = sorted([kq & QM for kq in qkeys], reverse=True)
                first = dict(zip(map(ja.__getitem__, idx), idx))
                pend = sorted([(p << PS) | a for a, p in first.items()])
                pend.append(n << PS)
            else:
                pend = [n << PS]
            runs = runs_l
            lp = last_pass
            # in `pm` mode after this pass: the pending users' F only when read (lz_eval), from
            # what the walk records (root after each running job's charge, each charge)
            lz_walk = not quiet and pm_after()
            if lz_walk:
                pend = [n << PS]
            elif wp_keys and not quiet:
                pend = merge_walk(pend, t)
            d_full = dt
            f_full = f_dt  # f1**d_full
            d_now = damp[0]
            # root is charged by every job: its sum is kept in `root` through the walk (the same
            # additions in the same order); its value as the pass started is snapshot first
            if snap_pass[0] != pass_no:
                snap_pass[0] = pass_no
                snap_val[0] = S[0]
            root = S[0]
            k = 0
            nr = len(runs)
            if lz_walk:
                lz_runs[:] = runs
                lrt = lz_root
                del lrt[:]
                lrt.append(root)
                del lz_rv[:]
                del lz_rp[:]
                q = 0
                for r in runs:
                    st = start[r]
                    if st < lp:  # (a full interval)
                        xs = d_full * bill[r] * f_full / G
                    else:
                        d = t - st
                        xs = d * bill[r] * math.pow(f1, d) / G
                    b = ja[r]
                    if usp[b] != pass_no:  # (its usage as the walk began: lz_eval)
                        usp[b] = pass_no
                        usv[b] = S[b]
                    sb = S[b] + xs
                    S[b] = sb
                    if lz_as[b] != pass_no:
                        lz_as[b] = pass_no
                        lz_rp.append(-1)
                    else:
                        lz_rp.append(lz_lq[b])
                    lz_lq[b] = q
                    lz_rv.append(sb)
                    q += 1
                    c = mid1[b]
                    if c >= 0:
                        if snap_pass[c] != pass_no:
                            snap_pass[c] = pass_no
                            snap_val[c] = S[c]
                        S[c] = S[c] + xs
                    else:
                        for c in mids[b]:
                            if snap_pass[c] != pass_no:
                                snap_pass[c] = pass_no
                                snap_val[c] = S[c]
                            S[c] = S[c] + xs
                    root += xs
                    lrt.append(root)
                k = nr
                lz_d[0] = d_now
            for kp in pend:
                p = kp >> PS
                a = kp & PM
                # charge(job_assoc[r], ...) for the running jobs before p in the list (all of them
                # for the last key, p = n), inlined: the hot loop of the pass (a job's association
                # is a user's)
                while k < nr:
                    r = runs[k]
                    if r >= p:
                        break
                    k += 1
                    st = start[r]
                    if st < lp:  # (a full interval)
                        xs = d_full * bill[r] * f_full / G
                    else:
                        d = t - st
                        xs = d * bill[r] * math.pow(f1, d) / G
                    b = ja[r]
                    S[b] = S[b] + xs
                    c = mid1[b]
                    if c >= 0:  # the user's one account below root
                        if snap_pass[c] != pass_no:
                            snap_pass[c] = pass_no
                            snap_val[c] = S[c]
                        S[c] = S[c] + xs
                    else:
                        for c in mids[b]:
                            if snap_pass[c] != pass_no:
                                snap_pass[c] = pass_no
                                snap_val[c] = S[c]
                            S[c] = S[c] + xs
                    root += xs
                if p >= n:
                    break
                # the pending user's UE from the usage now: user_fs(a), inlined for a user of its
                # own FairShare (the same operations)
                if shares_parent[a]:
                    S[0] = root
                    user_fs(a)
                else:
                    fa = fsp_ix[a]
                    if ue_as[fa] == pass_no:
                        ue_fs = ue_av[fa]
                    else:
                        if fa == 0:
                            ue_fs = 1.0
                        elif fsp_ix[fa] == 0:  # a first-tier account: acct_ue(fa), inlined
                            x = snap_val[fa] if snap_pass[fa] == pass_no else S[fa]
                            if root0 > 0:
                                un = x / root0
                                if not un < 1.0:
                                    un = 1.0
                            else:
                                un = 0.0
                            kind, w = rule[fa]
                            ue_fs = un if kind == FS_ROOT else (un + (1.0 - un) * w if kind == FS_LEVEL else 1.0)
                            ue_av[fa] = ue_fs
                            ue_as[fa] = pass_no
                        else:
                            ue_fs = acct_ue(fa)
                    if root > 0:
                        un = S[a] / root
                        if not un < 1.0:
                            un = 1.0
                    else:
                        un = 0.0
                    kind, w = rule[a]
                    v = un if kind == FS_ROOT else (un + (ue_fs - un) * w if kind == FS_LEVEL else ue_fs)
                    ue_uv[a] = v
                    ue_us[a] = pass_no
                    ns = norm_s[a]
                    f_cache[a] = math.pow(2.0, -(v / ns) / d_now) if ns > 0 else 0.0
            S[0] = root
            last_pass = t
            if qkeys and not quiet:
                reprioritise_at_pass(t)
        if trace:
            out.trace.append((t - t0, {keys[a]: S[a] * G for a in trace_ix},
                              {keys[a]: fs_of(a) for a in trace_ix}))

    # A pass where nothing can start (EASY, no gate; free < the smallest queued job: a full machine,
    # or only jobs too large for the free nodes): the priorities it sets are read only when a job
    # can start (after a job's end or a small job's arrival), or replaced by the next pass; they are
    # computed then, from the pass's time and F (`lazy`: the pass's time, classic F by association
    # (None for Fair Tree: its F stays until the next pass), how many queue entries are the pass's;
    # later arrivals are appended with their own priority and sorted in then).
    lazy_ok = (depth == 1 or sched is not None) and gate is None and bool(wa) and max_age > 0 and bool(wf) and not wp_keys
    lazy: list[Any] = [None, None, 0]

    def pm_after() -> bool:
        """Whether the queue is in `pm` mode after a pass now (reprioritise_at_pass's choice)."""
        if not pm:
            return False
        if pm_on[0]:
            return len(qkeys) >= pm_q_off
        return len(qkeys) >= pm_q_on

    def reprioritise_at_pass(t: float) -> None:
        if pm and pm_on[0] and len(qkeys) < pm_q_off:
            # a short queue: back to the keyed list (every pending job, each association's in order;
            # their keys are set below, as at any pass)
            pm_on[0] = False
            qkeys[:] = [i for kp in pend_l for i in user_q[kp & PM]]
            for es in est_sz:
                for ei in es:
                    in_es[ei & QM] = False
                es.clear()
            for i in qkeys:  # (every job of a class is queued)
                del cls_l[cls_of[i]][:]
            del tail[:]
        elif pm and not pm_on[0] and len(qkeys) >= pm_q_on:
            pm_on[0] = True
            lz_inval[0] = True
            lazy[0] = None
            for kp in pend_l:
                a = kp & PM
                for i in user_q[a]:  # (in index order: each class's first is its least)
                    c = cls_of[i]
                    if c < 0:
                        c = cls_new(i)
                    cl = cls_l[c]
                    if not cl:
                        est_sz[size[i]].append(ekey[i])
                        in_es[i] = True
                    cl.append(i)
            for es in est_sz:
                es.sort()
        if pm_on[0]:  # (the keys on demand; the arrivals since the last pass join their associations)
            pm_t[0] = t
            pm_g[0] += 1
            for kq in tail:  # the arrivals since the last pass: now keyed at this pass, as their classes
                j = kq & QM
                if cls_l[cls_of[j]][0] != j:
                    es = est_sz[size[j]]
                    del es[bisect_left(es, ekey[j])]
                    in_es[j] = False
            pm_b[0] = ai  # (the next arrival)
            del tail[:]
            del pm_heap[:]
            lz_setup(t)
            return
        if lazy_ok and free < q_min:
            # Fair Tree's F, every user's, stays until the next pass: read at the first look; classic:
            # F may change before the priorities are computed: this pass's F, kept (wf x F is formed
            # only if they are: most such passes are followed by another before anything can start)
            lazy[0], lazy[1], lazy[2] = t, None if fair_tree else f_cache.copy(), len(qkeys)
        else:
            lazy[0] = None
            reprioritise(t)

    def materialise() -> None:
        """The last pass's priorities (reprioritise() at its time and F) for the jobs queued then,
        the later arrivals with theirs, in order."""
        t, fc, m = lazy
        lazy[0] = None
        new = preset_keys(t, qkeys[:m], {} if fc is None else fc)
        new += qkeys[m:]
        new.sort()
        qkeys[:] = new

    def preset_keys(t: float, ks: list[int], fc: dict[int, float]) -> list[int]:
        """The queue keys of the jobs keyed in `ks` with the presets' priorities at t: static + wa x
        age factor + wf x F, floored at 1 and truncated (priority(), inlined: this runs at every
        pass; nice is only ever set by the gate). F: `fc`'s (the pass's), else fs_of at the first
        look; wf x F is formed once per association (the same product)."""
        ja = job_assoc
        wfx: dict[int, float] = {}
        keys_: list[int] = []
        for kq in ks:
            i = kq & QM
            a = ja[i]
            if a in wfx:
                x = wfx[a]
            else:
                x = wf * (fc[a] if a in fc else fs_of(a))
                wfx[a] = x
            age = t - eligible[i]
            p = static[i] + wa * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0)) + x
            keys_.append(i - (int(p) if p >= 1 else 1) * QK)
        return keys_

    def reprioritise(t: float) -> None:
        """Every pending job's priority at a pass (priority(), inlined: this runs at every pass)."""
        ja = job_assoc
        if wa and max_age > 0 and wf and gate is None:
            # the presets' case (Fair Tree's F, every user's, at the first look; classic: the pending
            # users' F the pass computed) (prio_of, read by the gate only, is not kept: no gate here)
            new = preset_keys(t, qkeys, {} if fair_tree else f_cache)
            new.sort()
            qkeys[:] = new
            return
        # wf x F per association, once per pass (the same product priority() forms per job)
        wfd: dict[int, float] = {}
        new = []
        append = new.append
        age_on = wa and max_age > 0
        for kq in qkeys:
            i = kq & QM
            pr = static[i]
            if age_on:
                age = t - eligible[i]
                pr += wa * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0))
            elif wa:
                pr += wa
            if wf:
                a = ja[i]
                x = wfd.get(a)
                if x is None:
                    x = wfd[a] = wf * fs_of(a)
                pr += x
            if nice[i]:
                pr -= nice[i]
            ipr = int(pr) if pr >= 1 else 1
            prio_of[i] = ipr
            append(i - ipr * QK)
        new.sort()
        qkeys[:] = new

    def nonlocal_easy_invalidate() -> None:
        nonlocal easy_valid
        easy_valid = False

    # ------------------------------------------------------------ main loop
    t0 = out.t0 = submit[0] if n else 0.0
    horizon = INF if max_time is None else t0 + max_time
    next_pass = last_pass + P
    while next_pass <= t0:
        next_pass += P
    lead = cs.lead_s if cs is not None else 0.0
    next_ctl = INF
    if cs is not None:
        next_ctl = (next_pass - lead) if cs.interval_s is None else last_pass + cs.interval_phase_s
        while next_ctl < t0:
            next_ctl += P if cs.interval_s is None else cs.interval_s
    down: list[tuple[float, float]] = []
    reconf: list[float] = []
    for dist in disturbances:
        if dist.kind == "agent_down":
            down.append((t0 + dist.at_s, t0 + dist.at_s + dist.duration_s))
        else:
            reconf.append(t0 + dist.at_s)
    reconf.sort()
    next_gate = t0 if gate is not None else INF
    stall = 0
    ai = 0
    done = 0
    events = 0
    arr_fast = bool(wa) and max_age > 0 and bool(wf) and gate is None
    # no controller, gate or disturbance: the only timed events are arrivals, ends and passes
    plain = cs is None and gate is None and not reconf and not down
    quiet_ok = plain and lazy_ok and not fair_tree and not trace
    # Slurm's scheduler's timers (sched): the main pass over the whole queue every sched_interval,
    # backfill every bf_interval, both from the first submission; a timer when nothing can start
    # (no queue, or no queued job fits in the free CPUs) is skipped: it would start nothing
    sched_on = sched is not None
    si = float(sched.sched_interval_s) if sched_on else INF
    bi = float(sched.bf_interval_s) if sched_on and sched.backfill else INF
    # a job's CPUs are free `complete_s` after its end (slurmctld: COMPLETING until the epilog is
    # done): (free at, CPUs), while its end is charged at the end itself
    lag = float(sched.complete_s) if sched_on else 0.0
    cheap: list[tuple[float, int]] = []
    km = 1  # the timers' next ticks: t0 + km x si, bf0 + kb x bi
    kb = 1
    # backfill's cycles: every bf_interval from the first submission, or, with jobs pending before
    # it (walk_pending), from the first cycle of the backfill agent's chain that falls at or after
    # it (slurmsched.bf_first_cycle: a decay pass is a change while a job is pending)
    bf0 = t0
    if sched_on and bi < INF and walk_pending:
        bf1 = bf_first_cycle(t0, bi, [float(w[3]) for w in walk_pending], last_pass, P)
        if bf1 > t0:
            bf0 = bf1 - bi
    # A submission does not run the main scheduler: it queues a request (queue_job_scheduler) that
    # slurmctld's background loop serves once batch_sched_delay has passed since the loop's last
    # scheduling, its timer's full pass or a request served (controller.c `_slurmctld_background`;
    # a batch job never starts in its submission RPC: job_allocate with allocate=0 is test_only).
    # A job's end (epilog complete) runs the main scheduler at once (proc_req.c
    # `_slurm_rpc_epilog_complete`: schedule(false)), over every pending job, the new ones too.
    bd = float(sched.batch_sched_delay_s) if sched_on else 0.0
    bg_last = -INF  # the background loop's last scheduling (a full pass or a request served)
    batch_req = INF  # when the pending request was made (INF: none)
    batch_due = INF  # when the loop serves it

    def last_tick(x: float) -> float:
        """The timer's last full pass at or before x (t0 + k x si, k >= 1), or -INF."""
        k = math.floor((x - t0) / si) if si < INF else 0
        return t0 + k * si if k >= 1 else -INF
    while True:
        t = submit[ai] if ai < n else INF
        if heap and heap[0][0] < t:
            t = heap[0][0]
        if cheap and cheap[0][0] < t:
            t = cheap[0][0]
        if plain:
            if next_pass < t and (ai < n or heap or qkeys or cheap):
                t = next_pass
        elif ai < n or heap or qkeys or held:
            if next_gate < t:
                t = next_gate
            if next_pass < t:
                t = next_pass
            if next_ctl < t:
                t = next_ctl
            if reconf and reconf[0] < t:
                t = reconf[0]
            if pulse_rate > 0 and pulse_end < t:
                t = pulse_end
        if sched_on and qkeys and free >= q_min:
            if batch_due < t:
                t = batch_due
            if t0 + km * si < t:
                t = t0 + km * si
            if bf0 + kb * bi < t and bf_dirty[0]:
                t = bf0 + kb * bi
        if t == INF or t > horizon:
            break
        events += 1
        ended = False
        while heap and heap[0][0] <= t:
            e, i = heappop(heap)
            if lag > 0:  # its CPUs stay busy until the job has completed (epilog)
                heappush(cheap, (e + lag, size[i]))
                if nodes_on:
                    heappush(cheap_i, (e + lag, i))
                bf_dirty[0] = True  # (COMPLETING: a change for backfill)
                bf_t[0] = t
            else:
                free += size[i]
                if nodes_on:
                    na_ = nalloc[i]
                    for nk_ in range(len(na_)):
                        nfree[nk_] += na_[nk_]
                    if gpus_on and gper[i]:
                        for nk_ in range(len(na_)):
                            if na_[nk_]:
                                gfree[nk_] += gper[i]
                ended = True
            del running[bisect_left(running, (start[i] + est[i], i))]
            run_set.discard(i)
            if alim is not None:
                alim.add(i, -1)  # (at its end: acct_policy_job_fini, before the epilog)
            del runs_l[bisect_left(runs_l, i)]
            qjob_cache.pop(i, None)
            if limits:
                d = e - (last_pass if start[i] < last_pass else start[i])
                if d > 0:  # charge(job_assoc[i], d * bill[i] * f1**d), inlined (a user's association)
                    xs = d * bill[i] * math.pow(f1, d) / G
                    b = job_assoc[i]
                    if usp[b] != pass_no:  # (lz_eval reads the usage the pass's walk saw)
                        usp[b] = pass_no
                        usv[b] = S[b]
                    if fair_tree:
                        ft_touched.add(b)
                    S[b] = S[b] + xs
                    for c in ups[b]:
                        if snap_pass[c] != pass_no:
                            snap_pass[c] = pass_no
                            snap_val[c] = S[c]
                        S[c] = S[c] + xs
            done += 1
        while cheap and cheap[0][0] <= t:
            free += heappop(cheap)[1]
            ended = True
        while cheap_i and cheap_i[0][0] <= t:
            ci_ = heappop(cheap_i)[1]
            na_ = nalloc[ci_]
            for nk_ in range(len(na_)):
                nfree[nk_] += na_[nk_]
            if gpus_on and gper[ci_]:
                for nk_ in range(len(na_)):
                    if na_[nk_]:
                        gfree[nk_] += gper[ci_]
        if pulse_rate > 0 and pulse_end <= t:  # the pulse job ends: its last stretch is charged now
            d = pulse_end - max(last_pass, pulse_start)
            if limits and d > 0 and dummy_ix is not None:  # (a pulse runs only with the dummy)
                charge(dummy_ix, d * pulse_rate * f1**d)
            pulse_rate = 0.0
        new: list[int] = []
        while ai < n and submit[ai] <= t:
            if arr_fast:  # priority(ai, t), inlined for the presets' case (the same operations)
                if ft_due[0] is not None:
                    ft_settle()
                a = job_assoc[ai]
                f = f_cache.get(a)
                if f is None:
                    f = 0.0 if fair_tree else user_fs(a)
                age = t - eligible[ai]
                p = static[ai] + wa * (1.0 if age >= max_age else (age / max_age if age > 0 else 0.0)) + wf * f
                pr = int(p) if p >= 1 else 1
            else:
                pr = priority(ai, t)
            prio_of[ai] = pr
            kq = ai - pr * QK
            s = size[ai]
            q_cnt[s] = q_cnt[s] + 1  # q_add(s), inlined
            if s < q_min:
                q_min = s
            if track:
                uq = user_q[job_assoc[ai]]
                if not uq:
                    pend_l.append((ai << PS) | job_assoc[ai])  # (the largest index so far)
                    lz_new.append(job_assoc[ai])
                uq.append(ai)
            if pm_on[0]:
                c = cls_of[ai]
                if c < 0:
                    c = cls_new(ai)
                insort(est_sz[s], ekey[ai])
                in_es[ai] = True
                cls_l[c].append(ai)
                qkeys.append(kq)  # (a count)
                insort(tail, kq)
            elif lazy[0] is None:
                insort(qkeys, kq)
            else:
                qkeys.append(kq)  # (sorted in with the pass's priorities)
            new.append(kq)
            ai += 1
        while reconf and reconf[0] <= t:
            reconf.pop(0)
            if damp[0] != d_conf:
                out.notes.append(f"reconfigure at {(t - t0) / 3600:.1f} h: d {damp[0]} -> {d_conf} (slurm.conf)")
            damp[0] = d_conf
            if not fair_tree:
                f_cache.clear()
                fc_gen[0] += 1
        if next_ctl <= t:
            if not any(a <= t < b for a, b in down):
                control_tick(t)
            next_ctl += P if cs is None or cs.interval_s is None else cs.interval_s
        gated = False
        if next_gate <= t:
            gated = gate_now(t)
            next_gate = t + gate_interval_s
            # a gate that holds everything on an empty machine would never end: stop it
            stall = gate_stall(stall, bool(heap), ai < n, bool(qkeys or held or ledger), gated or ended or bool(new))
            if gate_stop(stall, t - t0, out.notes):
                break
        reordered = gated
        if next_pass <= t:
            # a quiet pass (classic, plain, nothing can start): when nothing happens before the next
            # pass, which replaces its F and priorities before anything reads them, it only charges
            # the usage (the same charges)
            do_pass(t, quiet_ok and (free < q_min or not qkeys) and
                    (submit[ai] if ai < n else INF) > next_pass + P and (heap[0][0] if heap else INF) > next_pass + P)
            next_pass += P
            reordered = True
        if sched_on:
            if batch_req < INF:
                # a request served while nothing could start (skipped: it started nothing): by the
                # timer's first full pass at or after it, if that fell first, else at its time
                tk = t0 + max(1, math.ceil((batch_req - t0) / si)) * si if si < INF else INF
                if tk < t and tk <= batch_due:
                    bg_last = max(bg_last, tk)
                    batch_req = batch_due = INF
                elif batch_due < t:
                    bg_last = max(bg_last, batch_due)
                    batch_req = batch_due = INF
            # the ticks that passed while nothing could start (skipped: they would start nothing)
            if t0 + km * si < t:
                km = max(km, int((t - t0) // si))
                while t0 + km * si < t:
                    km += 1
            if bf0 + kb * bi < t:
                kb = max(kb, int((t - bf0) // bi))
                while bf0 + kb * bi < t:
                    kb += 1
            if ended or new or gated or reordered:
                bf_dirty[0] = True
                bf_t[0] = t
            if new and batch_req == INF:
                batch_req = t
                batch_due = max(t, max(bg_last, last_tick(t)) + bd)
            if ended or gated:
                schedule(t, ended, new, gated)
            if t0 + km * si <= t:  # (a tick at t: the full pass serves a pending request too)
                km += 1
                bg_last = t
                batch_req = batch_due = INF
                if qkeys and free >= q_min:
                    main_pass(t, n)
            elif batch_due <= t:
                bg_last = t
                batch_req = batch_due = INF
                if qkeys and free >= q_min:
                    main_pass(t, sched.default_queue_depth + 1)
            if bf0 + kb * bi <= t:
                kb += 1
                if qkeys and free >= q_min and bf_dirty[0]:
                    bf_pass(t)
        elif ended or new or reordered:
            schedule(t, ended, new, reordered)
        if progress is not None and events % 4096 == 0:
            progress(done, n)
    out.events = events
    out.passes = pass_no  # (one a pass)
    out.unfinished = sum(1 for x in end if x == INF)
    out.final_usage = {k: S[i] * G for i, k in enumerate(keys)}
    if nodes_on:
        out.nodes = nalloc
    if progress is not None:
        progress(done, n)
    return out
