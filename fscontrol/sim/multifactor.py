"""Slurm's priority/multifactor in the simulator: decay passes, fair-share, and the controller.

The engine in engine.py keeps a static priority order. Here priorities are recomputed at every
decay pass (every PriorityCalcPeriod), as slurmctld's decay thread does (`_decay_thread`,
priority_multifactor.c, 22.05 and 24.11):

* **A pass** at time t (classic, PriorityFlags=NO_FAIR_TREE): the accounts' EffectvUsage from the
  usage as it stands; then every usage decays by f^(t - last pass), f = 1 - 0.693/half-life; then,
  walking slurmctld's job list in creation order (here: the workload's order), each running job
  is charged `dt * billing * UsageFactor * f^dt` (dt = t - max(last pass, its start)) and each
  pending job's priority recomputed. A user's own EffectvUsage is computed at their first pending
  job in that walk, from the usage then (so running jobs earlier in the list are in it), and
  kept until the next pass. Pending jobs the replay never starts (a DOWN partition: a capture's
  `walk_pending`) are in that walk too, at their place in the list by job id: a user's EffectvUsage
  is computed at them when they come first (the charges of this pass's running jobs after them
  not yet in it: the sprio of issue #32's probe jobs). Under Fair Tree the pass decays, charges every running job, then
  ranks the whole tree (fscontrol.model.fairtree) and sets every pending job's priority.
* **A job's end** charges its last stretch at once (`priority_p_job_end`, with `limits` in
  AccountingStorageEnforce): `dt * billing * f^dt`, dt = end - max(last pass, start).
* **A new job** gets its priority at submission: age 0, F from its user's EffectvUsage (the one
  the last pass computed, else computed now from the usage as it stands).
* **Priority** = w_age * min(1, age/PriorityMaxAge) + w_fs * F + w_js * JS + w_part * part/max
  + w_qos * qos/max - nice, floored at 1 and truncated to an integer (`_get_priority_internal`,
  `set_priority_factors`). JS favours large jobs (size / machine) or, with PriorityFavorSmall,
  small ones (1 - size / machine); the simulator's unit (node or CPU) is both Slurm's node and
  CPU count, so its two halves are equal.

Fair-share comes from the project's own model, the one the agent uses: classic EffectvUsage by
`fairshare.effective_usage_step` on the tree `fairshare.build_tree` builds, F by
`fairshare.fairshare_factor`; Fair Tree by `fairtree.level_values` and `fairtree.rank_users`.

Usage is held scaled by the decay so far (`G`): a pass's decay is one multiplication, and only
the running jobs are touched. Scheduling between passes is EASY backfill (or a depth-N
reservation pass) over the queue in priority order; priorities only change at a pass.

The controller: `ControlSpec` runs `control.plan_control`, the function the agent's tick calls,
`lead_s` before each pass (the agent's pass-aligned job) on the snapshot the agent would read
(root's and the dummy's RawUsage as sshare's integers, the running jobs), and carries the
decision out as the agent's commands do: the runtime d (in force at once), the padding QOS's
UsageFactor for the steady dummy job, or a pulse job of one PriorityCalcPeriod. Disturbances: a
reconfigure puts slurm.conf's d back; the agent down for a while (no ticks; the steady padding
job keeps its last UsageFactor).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..records import ShareRow
from .workload import Workload

from .mfconfig import (  # noqa: F401 - the engine's types, named here too for the callers
    INF,
    DUMMY,
    ProgressFn,
    PriorityConfig,
    priority_config_from_slurm_conf,
    METHODS,
    ControlSpec,
    Disturbance,
    share_tree,
    captured_tree,
    PassRecord,
    MFRun,
)


def simulate_multifactor(
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
) -> MFRun:
    """Run the workload under priority/multifactor (the engine: `mfcore.simulate`, compiled when
    `fscontrol.sim.accel` has built it). `tree`: the associations (sshare rows; their RawUsage is
    the usage at the start unless `initial_usage` is given); default the workload's captured tree
    (captured_tree) if it has one, else share_tree().
    `first_pass`: the time of a pass (passes fall every PriorityCalcPeriod from it; default the
    first submission). `trace`: record RawUsage and F of `trace_keys` (default all users) at every
    pass, as sshare and sprio would show them just after it. `gate`: a `gate.GateOptions`: the
    agent's gate (`gate.plan_gate`, on the workload's allocations) every `gate_interval_s`; a hold
    takes the job out of the queue and its release makes it eligible anew (age from then, as
    Slurm without ACCRUE_ALWAYS); a nice is subtracted from the job's priority. `sched`: a
    `slurmsched.SlurmSched`: Slurm's own scheduler instead of EASY (mfcore.simulate)."""
    from .accel import engine

    extra: dict[str, Any] = {} if sched is None else {"sched": sched}
    factors = workload.meta.get("partition_factors")
    if factors and not prio.partition_factor:  # a capture's partitions.txt (scontrol show config has none)
        prio = replace(prio, partition_factor=tuple(factors.items()))
    walk = walk_positions(workload)
    if walk:
        extra["walk_pending"] = walk
    return engine().simulate(
        workload, prio, tree=tree, control_spec=control_spec, disturbances=disturbances, depth=depth,
        backfill=backfill, first_pass=first_pass, initial_usage=initial_usage, trace=trace, trace_keys=trace_keys,
        record_passes=record_passes, gate=gate, gate_interval_s=gate_interval_s, progress=progress, max_time=max_time,
        **extra)


def _id_key(job_id: str) -> int:
    head = job_id.split("_")[0].split("+")[0]
    return int(head) if head.isdigit() else 1 << 62


def walk_positions(workload: Workload) -> list[tuple[int, str, str, float]]:
    """The capture's jobs that the replay never starts but slurmctld's pass walks
    (`meta["walk_pending"]`, history.py: pending in a DOWN partition, on a dependency never
    satisfied, without a time limit), each as the engine's `walk_pending` entry: its place in the
    engine's job list, account, user, and pending since (its submit). slurmctld's list is in
    creation order; the engine's is the workload's (by arrival), so a job's place is among the
    workload's jobs by submission: after those that arrived before it (by job id at the same second)."""
    rows = workload.meta.get("walk_pending") or ()
    if not rows:
        return []
    from bisect import bisect_left

    arr = [(j.submit, _id_key(j.job_id)) for j in workload.jobs]  # (the workload is sorted by arrival)
    return [(bisect_left(arr, (float(r["since"]), _id_key(r["job_id"]))), r["account"], r["user"], float(r["since"]))
            for r in rows]


# --------------------------------------------------------------------------- summaries
SIZE_CLASSES = ("1", "2-4", "5-16", "17-64", "65+")


def size_class(size: int) -> str:
    """The job's size class in the simulator's unit (nodes): 1, 2-4, 5-16, 17-64, 65 and more."""
    if size <= 1:
        return "1"
    if size <= 4:
        return "2-4"
    if size <= 16:
        return "5-16"
    if size <= 64:
        return "17-64"
    return "65+"


def halving_errors(run: MFRun, u_star: float) -> list[tuple[float, float]]:
    """(seconds from the first submission, H/u* - 1) at every pass with usage: H = S_ref x the d
    the pass used x root's RawUsage as the pass started (the usage its EffectvUsage came from)."""
    if not run.s_ref or u_star <= 0:
        return []
    k = run.s_ref / u_star
    return [(p.t, k * p.d * p.u_total - 1.0) for p in run.records if p.u_total > 0]


def halving_summary(run: MFRun, u_star: float, *, warmup_s: float | None = None, tol: float = 0.01) -> dict[str, Any]:
    """The halving H against u*: the error's distribution after the warm-up (default: the first
    tenth of the run, at least one day... or none for runs under 10 days), and the time to settle:
    from the first pass to the first pass after which |H/u* - 1| stays <= `tol` (None if it never does)."""
    errs = halving_errors(run, u_star)
    out: dict[str, Any] = {"u_star": u_star, "s_ref": run.s_ref, "tol": tol, "passes": len(errs)}
    if not errs:
        return out
    span = errs[-1][0] - errs[0][0]
    if warmup_s is None:
        warmup_s = max(86400.0, span / 10) if span > 10 * 86400 else 0.0
    settled = [abs(e) for t, e in errs if t >= errs[0][0] + warmup_s]
    settle_s = None
    for k in range(len(errs) - 1, -1, -1):
        if abs(errs[k][1]) > tol:
            settle_s = errs[k + 1][0] - errs[0][0] if k + 1 < len(errs) else None
            break
    else:
        settle_s = 0.0
    a = sorted(settled)
    signed = [e for t, e in errs if t >= errs[0][0] + warmup_s]

    def q(p: float) -> float:
        return a[min(len(a) - 1, int(p * len(a)))]

    ds = [p.d for p in run.records]
    out.update(
        warmup_s=warmup_s,
        settled_passes=len(a),
        mean_error=sum(signed) / len(signed) if signed else None,
        median_abs_error=q(0.5) if a else None,
        p95_abs_error=q(0.95) if a else None,
        p99_abs_error=q(0.99) if a else None,
        max_abs_error=a[-1] if a else None,
        within_1pct=sum(1 for x in a if x <= 0.01) / len(a) if a else None,
        within_2pct=sum(1 for x in a if x <= 0.02) / len(a) if a else None,
        passes_over_5pct=sum(1 for x in a if x > 0.05),
        settle_s=settle_s,
        d_min=min(ds),
        d_max=max(ds),
        d_changes=run.d_changes,
        pulses=run.pulses,
    )
    return out
