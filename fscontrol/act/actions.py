"""Plans and their application. A plan is a list of commands, each with its reason; building it
is pure, applying it is separate and happens only when the admin asks (--apply).

Every command is an argument list run with a timeout, never through a shell. The commands are
run, recorded and settled by act/executor.py alone; slurm.conf is edited by act/slurmconf.py alone.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from collections.abc import Sequence

from fscontrol.act.control import D_MAX, Decision
from fscontrol.errors import UnsafeActionError
from fscontrol.snaprecords import QueueJob

DUMMY_JOB_NAME = "fscontrol-padding"
PADDING_LIMIT_S = 86400  # the steady padding job's time limit: renewed at half, never UNLIMITED
# (an unlimited job shows billions of TRESRunMins on root and the dummy account, which would trip
# any GrpTRESRunMins limit there; a day shows 1,440)
PULSE_JOB_NAME = "fscontrol-pulse"
TRIM_JOB_NAME = "fscontrol-trimpad"  # padding_mode = "trim": cancelled by the trim before every pass, started after it


def trim_pad_limit_s(calc_period_s: float) -> int:
    """The trim's padding job's time limit: three passes (it is cancelled before each; if the agent
    stops, a job left running is charged at most until then), at least 2 minutes."""
    return int(max(120, 60 * math.ceil(3 * calc_period_s / 60)))


@dataclass(frozen=True, slots=True)
class Action:
    kind: str  # set_damping | set_usage_factor | submit_dummy | cancel_dummy | hold | release | nice
    argv: tuple[str, ...]
    reason: str
    job_id: str | None = None
    status: str = "planned"  # planned | ok | failed | skipped | refused (not run: unsafe, said in output)
    # | held (persist's slurm.conf write held back by persist_interval: said at the tick, never recorded)
    output: str = ""


def set_damping(d: int, reason: str) -> Action:
    if not isinstance(d, int) or not 1 <= d <= D_MAX:
        # Slurm wraps values over 65535 and divides by zero on 0: never send either
        raise UnsafeActionError(f"refusing FairShareDampeningFactor={d!r}: must be an integer in 1..{D_MAX}")
    return Action("set_damping", ("scontrol", "fsdampeningfactor", str(d)), reason)


def set_usage_factor(qos: str, k: float, reason: str) -> Action:
    if not (k >= 0 and math.isfinite(k)):
        raise UnsafeActionError(f"refusing UsageFactor={k!r} for QOS {qos}")
    return Action(
        "set_usage_factor",
        ("sacctmgr", "-i", "modify", "qos", "where", f"name={qos}", "set", f"usagefactor={k:.6f}"),
        reason,
    )


def submit_dummy(user: str, account: str, partition: str, qos: str, seconds: int | None, name: str, reason: str,
                 reservation: str | None = None) -> Action:
    """A 1-CPU job of the dummy user (root submits it with --uid/--gid); in `reservation` when the
    admin keeps a core for it (a full cluster would otherwise leave it pending)."""
    time_arg = "UNLIMITED" if seconds is None else str(max(1, math.ceil(seconds / 60)))
    script = "exec sleep infinity" if seconds is None or name == DUMMY_JOB_NAME else f"exec sleep {int(seconds)}"
    return Action(
        "submit_dummy",
        (
            "sbatch", "--parsable", f"--uid={user}", f"--gid={user}", "-A", account, "-p", partition,
            "--qos", qos, "-n", "1", "-t", time_arg, "-J", name, "-o", "/dev/null", "--chdir=/tmp",
            *((f"--reservation={reservation}",) if reservation else ()), "--wrap", script,
        ),
        reason,
    )


def control_plan(
    dec: Decision,
    *,
    dummy: tuple[str, str],
    dummy_partition: str,
    padding_qos: str,
    padding_mode: str,
    dummy_jobs: Sequence[QueueJob],
    calc_period_s: float,
    now: float | None = None,
    reservation: str | None = None,
    usage_factor_now: float | None = None,
) -> list[Action]:
    """The commands that carry a decision out, each with its reason. `now` (the snapshot's time)
    renews the steady padding job's time limit once less than half of it is left; `reservation`
    (config padding_reservation) is where the padding jobs run. `usage_factor_now`: the padding
    QOS's UsageFactor in the snapshot (padding_mode = "trim": 0 whenever no trim is about to cancel)."""
    if dec.advise_only:
        return []
    plan: list[Action] = []
    if dec.d_target != dec.d_now:
        total = dec.u_real + dec.w_now  # the usage the coming pass reads, the one a bounded d is chosen on
        ideal_now = dec.u_star / (dec.s_ref * total) if dec.s_ref and total > 0 else None
        if dec.d_ideal is None:
            why = f"{dec.method}: d {dec.d_now} -> {dec.d_target}"
        elif ideal_now is not None and ideal_now > dec.d_target and any("d would be" in n for n in dec.notes):
            # bounded (a cold start): one ideal (the coming pass's, as the note), the bound, the d chosen (issue #30)
            cap = "Slurm's maximum" if dec.d_target == D_MAX else "max_damping"
            why = (f"{dec.method}: ideal d = {ideal_now:,.0f} for u* = {dec.u_star / 3600:,.2f} core-hours, "
                   f"S_ref = {dec.s_ref:.6f}, usage {total / 3600:,.2f} core-hours; above {cap} {dec.d_target}: "
                   f"d = {dec.d_target}")
        else:
            why = (f"{dec.method}: ideal d = {dec.d_ideal:.3f} for u* = {dec.u_star / 3600:,.2f} core-hours, "
                   f"S_ref = {dec.s_ref:.6f}, real usage {dec.u_real_next / 3600:,.2f} core-hours")
        plan.append(set_damping(dec.d_target, why))
    account, user = dummy
    running = [j for j in dummy_jobs if j.state in ("RUNNING", "PENDING") and j.account == account and j.user == user]
    if dec.usage_factor is not None and padding_mode == "steady":
        plan.append(
            set_usage_factor(
                padding_qos,
                dec.usage_factor,
                f"steady padding: w {dec.w_now / 3600:,.2f} -> target {dec.w_target / 3600:,.2f} core-hours after the next pass",
            )
        )
        if not running:
            plan.append(
                submit_dummy(user, account, dummy_partition, padding_qos, PADDING_LIMIT_S, DUMMY_JOB_NAME,
                             "steady padding needs its long-running 1-CPU dummy job", reservation)
            )
        elif now is not None:
            for j in running:
                if j.state == "RUNNING" and j.start is not None and j.time_limit_s is not None:
                    left = j.start + j.time_limit_s - now
                    if left < PADDING_LIMIT_S / 2:
                        minutes = math.ceil((now - j.start + PADDING_LIMIT_S) / 60)
                        plan.append(Action("extend_dummy", ("scontrol", "update", f"JobId={j.job_id}", f"TimeLimit={minutes}"),
                                           f"steady padding job {j.job_id} has {left / 3600:.1f} h left: a day more",
                                           job_id=j.job_id))
    if padding_mode == "trim" and dec.method == "hybrid" and not running:
        # normally started just after each pass (agent/trimpad.py); this one is the fallback (the
        # first tick, a pass the loop missed). At UsageFactor 0 it charges nothing until a trim sets it.
        if usage_factor_now is None or abs(usage_factor_now) > 1e-9:
            plan.append(set_usage_factor(padding_qos, 0.0, "trim padding: the QOS charges nothing until the trim "
                                                           "sets it just before a pass"))
        plan.append(submit_dummy(user, account, dummy_partition, padding_qos, trim_pad_limit_s(calc_period_s),
                                 TRIM_JOB_NAME, "trim padding needs its 1-CPU dummy job (cancelled by the trim before "
                                 "each pass, its stretch since the pass charged at once)", reservation))
    if dec.pulse_usage_factor is not None and padding_mode == "pulse" and not running:
        plan.append(
            set_usage_factor(padding_qos, dec.pulse_usage_factor,
                             f"pulse: deliver {max(0.0, dec.w_target - dec.w_now) / 3600:,.2f} core-hours of padding")
        )
        plan.append(
            submit_dummy(user, account, dummy_partition, padding_qos, int(calc_period_s), PULSE_JOB_NAME,
                         f"pulse: padding {dec.w_now / 3600:,.2f} fell below target {dec.w_target / 3600:,.2f} core-hours")
        )
    return plan


def off_plan(queue: Sequence[QueueJob], *, d_now: int, usage_factors: dict[str, float], originals: dict,
             dummy: tuple[str, str], conf_value: str | None, reconfigure: bool = False,
             conf_written: dict | None = None) -> list[Action]:
    """`fscontrol control off`: undo what control did, from what Slurm held before the agent
    first changed it (`originals`). Pure. The gate's holds are released by the same tick.

    Order: the padding jobs go first (no more padding charged), then the QOS UsageFactor, then
    slurm.conf's d line (for slurmctld's next start; with `reconfigure` (persist_reconfigure) a
    `scontrol reconfigure` follows and resets the runtime d to it), then the runtime d.

    slurm.conf's line is put back only where the agent wrote it (`conf_written`: {"path", "d"}
    of its last write, None when it never wrote) and the file still says the agent's d; a line
    that changed since is left alone: the plan says so in one line (status "refused") and the
    rest is undone all the same."""
    plan: list[Action] = []
    account, user = dummy
    for j in queue:
        if (j.account, j.user) == (account, user) and j.state in ("RUNNING", "PENDING"):
            plan.append(Action("cancel_dummy", ("scancel", j.job_id), "control off: the padding job goes", job_id=j.job_id))
    for what, value in sorted(originals.items()):
        if what.startswith("usage_factor:") and value is not None:
            qos = what.split(":", 1)[1]
            if abs(usage_factors.get(qos, value) - value) > 1e-9:
                plan.append(set_usage_factor(qos, float(value), f"control off: QOS {qos} UsageFactor back to {value:g}, "
                                                                 "as before the agent first changed it"))
    conf = originals.get("slurm_conf_damping")
    reconfigured_to = None
    mine = None if not conf_written or not conf or conf_written.get("path") != conf.get("path") else str(conf_written["d"])
    if mine is not None and conf.get("value") != conf_value:
        from fscontrol.act import slurmconf

        want = conf.get("value")
        line = f"FairShareDampeningFactor={want}" if want is not None else "no FairShareDampeningFactor line"
        argv = ("edit", conf["path"], line, slurmconf.ONLY_IF + mine) + (("scontrol reconfigure",) if reconfigure else ())
        why = "control off: slurm.conf's d line back as before the agent's own edit"
        if conf_value != mine:
            plan.append(Action("restore_conf_damping", argv, why, status="refused",
                               output=slurmconf.refused_restore(conf["path"], conf_value, mine)))
        else:
            plan.append(Action("restore_conf_damping", argv, why))
            if reconfigure:
                reconfigured_to = int(want) if want is not None else 1
    d_orig = originals.get("damping")
    if d_orig is not None and (reconfigured_to if reconfigured_to is not None else d_now) != int(d_orig):
        plan.append(set_damping(int(d_orig), f"control off: d back to {d_orig}, as before the agent first changed it"))
    return plan
