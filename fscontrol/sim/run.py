"""The simulator's entry point: ``run_simulation(workload, policy) -> SimResult``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from .conservative import simulate_conservative
from .engine import simulate
from .metrics import metrics_by_group, utilization
from .policies import Policy, get_policy
from .progress import TextProgress
from .result import SimResult
from .workload import Workload

ProgressArg = bool | Callable[[int, int], None] | None


def _first_pass(pol: Policy, workload: Workload) -> float | None:
    """A decay pass's time at or before the first submission, in the phase of `pol.first_pass`
    (slurmctld's record of a pass, which a capture takes at its end), or None (the first submission)."""
    fp = pol.first_pass
    if fp is None and pol.slurm_sched is not None:  # the run replays the capture's own slurmctld
        fp = workload.meta.get("last_decay_pass")
    if fp is None or not workload.jobs:
        return None
    t0 = min(j.submit for j in workload.jobs)
    p = pol.priority.calc_period_s
    return fp - math.ceil((fp - t0) / p) * p if fp > t0 else fp


def _node_sched(sc: Any, workload: Workload) -> Any:
    """The Slurm scheduler's settings with the workload's node size (a capture's nodes.txt: its
    CPUs over its nodes, when the workload counts CPUs and has more than one node) and the
    completion latency the capture shows (history.completion_lag). Nodes of one size, or of
    different sizes the capture names one by one (machine "node_cpus_each"): the node model (each
    job's CPUs per node, backfill on nodes) by the capture's Slurm version's rule
    (nodesched.node_rule); else the pool of node_cpus-CPU nodes. GPUs (machine "node_gpus_each",
    jobs that ask for them): the node model, on one node too."""
    from dataclasses import replace

    if sc is None:
        return sc
    lag = workload.meta.get("completion_lag_s")
    if not sc.complete_s and lag:
        sc = replace(sc, complete_s=float(lag))
    if sc.node_cpus:
        return sc
    m = workload.meta.get("machine") or {}
    gpus = bool(m.get("node_gpus_each")) and any(j.gpus for j in workload.jobs)  # (one node too: its GPUs)
    if workload.meta.get("unit", "cpus") == "cpus" and (m.get("nodes", 0) > 1 or gpus) and m.get("cpus"):
        nodes, cpus = int(m["nodes"]), int(m["cpus"])
        each = m.get("node_cpus_each") or []
        one = m.get("node_cpus") == [cpus // nodes]
        if cpus == workload.nodes and (one or (len(each) == nodes and sum(each) == cpus and min(each) > 0)):
            from .nodesched import node_rule  # (nodes of different sizes: mfcore reads each one's CPUs)

            return replace(sc, node_cpus=cpus // nodes if one else max(each),
                           node_model=node_rule(workload.meta.get("slurm_version")))
        return replace(sc, node_cpus=max(1, cpus // nodes))
    return sc


MAX_ORDER_ROUNDS = 20  # replays of a workload with dependencies until no job starts before those it waits for


def ordered(workload: Workload, once: Callable[[Workload], Any]) -> Any:
    """`once(workload)` (an engine's run) with the jobs' dependencies kept (SimJob.after: job ids
    it waits for to end): a job that started before one it waits for has ended arrives again at
    that end, and the workload is replayed, until none does (each round moves arrivals only
    later; MAX_ORDER_ROUNDS at most, then a note says which jobs still break their order). The
    run's per-job lists are the workload's order; its submit times stay the recorded ones (the
    wait for a dependency counts as waiting). Without dependencies: `once(workload)` itself."""
    from dataclasses import replace

    jobs = workload.jobs
    ix = {j.job_id: i for i, j in enumerate(jobs)}
    deps = [(i, [ix[x] for x in j.after if x in ix and ix[x] != i]) for i, j in enumerate(jobs) if j.after]
    deps = [(i, ks) for i, ks in deps if ks]
    if not deps:
        return once(workload)
    arrive = [j.submit for j in jobs]
    for _ in range(MAX_ORDER_ROUNDS):
        moved = [replace(j, submit=a) for j, a in zip(jobs, arrive)]
        wl = replace(workload, jobs=list(moved))  # (sorted by the new arrivals)
        raw = once(wl)
        pos = {id(j): k for k, j in enumerate(wl.jobs)}
        back = [pos[id(j)] for j in moved]  # workload index -> index in this run
        start, end = [raw.start[back[i]] for i in range(len(jobs))], [raw.end[back[i]] for i in range(len(jobs))]
        late = [(i, max(end[k] for k in ks)) for i, ks in deps if start[i] < max(end[k] for k in ks)]
        for i, need in late:
            arrive[i] = max(arrive[i], need)
        if not late:
            break
    else:
        raw.notes.append(f"{len(late)} job(s) still start before a job they depend on ends after "
                         f"{MAX_ORDER_ROUNDS} replays (e.g. job {jobs[late[0][0]].job_id})")
    fwd = {b: i for i, b in enumerate(back)}
    raw.start, raw.end = start, end
    raw.order = [fwd[k] for k in raw.order]
    if raw.ran is not None:
        raw.ran = [raw.ran[back[i]] for i in range(len(jobs))]
    if getattr(raw, "reservation", None):
        raw.reservation = [raw.reservation[back[i]] for i in range(len(jobs))]
    if getattr(raw, "nodes", None):
        raw.nodes = [raw.nodes[back[i]] for i in range(len(jobs))]
    return raw


def run_simulation(
    workload: Workload,
    policy: Policy | str,
    *,
    progress: ProgressArg = None,
    max_time: float | None = None,
    per_user: bool = True,
    mold: Any = None,
) -> SimResult:
    """Simulate ``workload`` under ``policy`` (a Policy or a preset name, see ``policies.PRESETS``).

    progress: None/False (quiet), True (a bar on stderr when it is a terminal), or a callable
      ``f(done_jobs, total_jobs)``.
    max_time: stop after this much simulated time (seconds from the first submission).
    per_user: also compute per-user metrics (the SWF log has hundreds of users).
    mold: a :class:`fscontrol.sim.moldable.MoldParams` for the moldable presets ``mold-*``
      (``moldable.STRATEGIES``: the scheduler picks each job's size; see docs/moldable.md).
    """
    if isinstance(policy, str) and policy.startswith("mold-"):
        from .moldable_report import run_moldable

        return run_moldable(workload, policy, mold)
    pol = get_policy(policy) if isinstance(policy, str) else policy
    bar: TextProgress | None = None
    cb: Callable[[int, int], None] | None
    if progress is True:
        bar = TextProgress(f"{pol.label}")
        cb = bar if bar.enabled else None
    elif callable(progress):
        cb = progress
    else:
        cb = None
    t0 = time.perf_counter()
    mf = None
    try:
        if pol.kind == "multifactor":
            from .multifactor import simulate_multifactor

            gate = None
            if pol.gate:
                from fscontrol.act.gate import GateOptions

                gate = GateOptions(action=pol.gate_action, nice_value=pol.gate_nice, max_actions=pol.gate_max_actions)
            raw = mf = ordered(workload, lambda wl: simulate_multifactor(
                wl, pol.priority, control_spec=pol.control, disturbances=pol.disturbances, depth=pol.depth,
                backfill=pol.backfill == "easy", gate=gate, gate_interval_s=pol.gate_interval_s, progress=cb,
                max_time=max_time, sched=_node_sched(pol.slurm_sched, wl), first_pass=_first_pass(pol, wl)))
        else:
            engine = simulate_conservative if pol.backfill == "conservative" else simulate
            raw = ordered(workload, lambda wl: engine(wl, pol, progress=cb, max_time=max_time))
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0
    import numpy as np

    jobs = workload.jobs
    # (as arrays once: every metric reads them)
    submit = np.array([j.submit for j in jobs], dtype=float)
    run = np.array(raw.ran if raw.ran is not None else [j.run for j in jobs], dtype=float)
    size = np.array([j.size for j in jobs], dtype=float)
    start, end = np.array(raw.start, dtype=float), np.array(raw.end, dtype=float)

    def metrics_by(labels: list[Any], names: Any = None) -> dict[str, dict[str, Any]]:
        """The metrics per group of jobs (labels[i]: job i's group), the groups in `names`' order
        (default: sorted); a group of `names` with no job is left out."""
        present = set(labels)
        ordered = sorted(present) if names is None else [x for x in names if x in present]
        code = {x: k for k, x in enumerate(ordered)}
        rows = metrics_by_group([code[x] for x in labels], len(ordered), submit, start, end, run, size)
        return dict(zip(ordered, rows))

    overall = metrics_by_group(np.zeros(len(jobs), dtype=np.intp), 1, submit, start, end, run, size)[0]
    overall["utilization"] = utilization(submit, end, run, size, workload.nodes)
    ended = end[end != math.inf]
    overall["makespan_s"] = (float(ended.max()) if len(ended) else math.nan) - float(submit.min()) if jobs else None

    by_account = metrics_by([j.account for j in jobs])
    by_user = metrics_by([j.user for j in jobs]) if per_user else {}
    stats = {
        "events": raw.events,
        "passes": raw.passes,
        "unfinished": raw.unfinished,
        "gate_ticks": raw.gate_ticks,
        "holds": raw.holds,
        "releases": raw.releases,
        "nices": raw.nices,
        "unnices": raw.unnices,
        "notes": raw.notes,
    }
    res = SimResult(workload, pol, raw.start, raw.end, overall, by_account, by_user, wall, stats, raw.order,
                    raw.reservation if mf is None else [])
    if pol.kind == "multifactor" and pol.slurm_sched is not None:
        res.scheduler = _node_sched(pol.slurm_sched, workload)
    if mf is not None:
        from .multifactor import SIZE_CLASSES, halving_summary, size_class

        sizes = [j.size for j in jobs]
        cls = {x: size_class(x) for x in set(sizes)}  # (once per distinct size)
        res.by_size = metrics_by([cls[x] for x in sizes], SIZE_CLASSES)
        stats.update(passes=mf.passes, control_ticks=mf.control_ticks, d_changes=mf.d_changes, pulses=mf.pulses)
        if pol.control is not None and pol.control.u_star > 0:
            res.halving = halving_summary(mf, pol.control.u_star)
        res.mf = mf
    return res
