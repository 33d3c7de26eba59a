"""The tick's decisions (agent/pipeline.py composes them): whether the controller may act on a
cluster (`advise_reason`), the control decision and its commands (`decide_control`), `control
off`'s commands (`decide_off`), the gate's plan and its commands (`decide_gate`), and what a gate
tick records of its decision for `fscontrol why` (`gate_table`). Functions of the snapshot, the
config and what the history recorded (read through store/), writing nothing.
"""

from __future__ import annotations

from dataclasses import replace

from fscontrol.agent import diagnose
from fscontrol.errors import ConfigError, UnsafeActionError
from fscontrol.snaprecords import Snapshot
from fscontrol.store import ledger as store_ledger
from fscontrol.store.connection import Database


def advise_reason(snap: Snapshot, method: str, dummy: tuple[str, str], padding_qos: str) -> str | None:
    """Why the controller may only advise on this cluster, or None when it may act."""
    cfg = snap.config
    if cfg.mode == "fair_tree":
        return ("Fair Tree (the default since Slurm 19.05) ranks users: it has no halving usage and never reads "
                "FairShareDampeningFactor")
    if cfg.mode != "classic":
        return f"priority mode {cfg.mode}: the classic maths do not hold"
    if method in ("padding", "hybrid"):
        rows = {r.key: r for r in snap.shares}
        account, user = dummy
        if dummy not in rows:
            return f"dummy association {account}/{user} does not exist (see docs/deploy.md: padding setup)"
        acct = rows.get((account, ""))
        if acct is None or acct.parent != "root":
            return f"dummy account {account} must be a top-level account (child of root)"
        others = [r for r in snap.shares if r.parent == account and r.key != dummy]
        if others:
            return f"dummy account {account} must hold only {user}: classic fair-share charges siblings a share of it"
        if padding_qos not in {q.name for q in snap.qos}:
            return f"padding QOS {padding_qos} does not exist (sacctmgr add qos {padding_qos})"
    return None


def decide_off(db: Database, snap: Snapshot, cc):
    """`control off`: the commands that put back what the agent changed (no decision)."""
    from fscontrol.act import actions as act
    from fscontrol.act import slurmconf

    conf_value = None
    orig = store_ledger.originals(db, snap.cluster)
    if orig.get("slurm_conf_damping"):
        try:
            with open(orig["slurm_conf_damping"]["path"]) as fh:
                conf_value = slurmconf.conf_damping_value(fh.read())
        except (OSError, UnicodeDecodeError) as e:
            raise UnsafeActionError(f"cannot read {orig['slurm_conf_damping']['path']} to restore its d line: {e}") from None
    plan = act.off_plan(snap.queue, d_now=snap.config.damping_factor, usage_factors={q.name: q.usage_factor for q in snap.qos},
                        originals=orig, dummy=cc.dummy_key, conf_value=conf_value, reconfigure=cc.persist_reconfigure,
                        conf_written=store_ledger.get_state(db, snap.cluster, "persist_written"))
    return None, plan


def pass_plan(db: Database, snap: Snapshot, method: str) -> dict:
    """Where slurmctld's pass times are known (the snapshot's usage_at: the pass its RawUsage is
    from), what plan_control needs to plan the usage the pass after the coming one reads job by
    job: (now, that pass, the coming pass), and how much of its time to the limit a running job
    typically still runs, from the jobs the history saw end (store_loaders.window_inflow)."""
    from fscontrol.model.decay import next_pass
    from fscontrol.store import loaders as store_loaders

    if snap.usage_at is None or not snap.config.calc_period_s or method not in ("padding", "hybrid"):
        return {}
    coming = next_pass(snap.usage_at, snap.config.calc_period_s, snap.taken_at)
    window = min(86400.0, max(5 * snap.config.calc_period_s, 3 * float(snap.config.half_life_s or 0)))
    ratio = store_loaders.window_inflow(db, snap.cluster, snap.taken_at - window, snap.taken_at)[4]
    return {"passes": (snap.taken_at, snap.usage_at, coming), "left_ratio": ratio}


def running_billings(snap: Snapshot, dummy: tuple[str, str] | None) -> tuple[dict[str, float], float]:
    """The running jobs' billing by job id from the snapshot's sacct (AllocTRES `billing=`: what
    RawUsage is charged a second under the partitions' TRESBillingWeights, GPUs included), and the
    padding job's (1.0 where none of the dummy's jobs shows one: its partition bills CPU=1.0)."""
    bills: dict[str, float] = {}
    pad = None
    for j in snap.jobs:
        if j.state != "RUNNING" or j.billing is None or j.billing <= 0:
            continue
        if dummy is not None and (j.account, j.user) == dummy:
            pad = float(j.billing) / max(1, j.alloc_cpus or 1) if pad is None else pad
        else:
            bills[j.job_id] = float(j.billing)
    return bills, (pad if pad is not None else 1.0)


def decide_control(db: Database, snap: Snapshot, cc, off=None):
    """The control decision and the commands that carry it out (pure given the snapshot)."""
    from fscontrol.act import actions as act
    from fscontrol.act import control
    from fscontrol.model import fairshare

    d_now = snap.config.damping_factor
    d_last = store_ledger.last_applied_damping(db, snap.cluster)
    dummy = cc.dummy_key  # (a property: computed once, not once a queued job)
    s_ref, _ = fairshare.choose_reference_share(snap.shares, d_now, dummy, cc.reference_share)
    dummy_jobs = [q for q in snap.queue if (q.account, q.user) == dummy]
    real_running = [q for q in snap.queue if q.state == "RUNNING" and (q.account, q.user) != dummy]
    billings, dummy_billing = running_billings(snap, dummy)
    dec = control.plan_control(
        snap.shares,
        method=cc.method,
        u_star=cc.target_usage or 0.0,
        d_now=d_now,
        d_last=d_last,
        half_life_s=snap.config.half_life_s,
        calc_period_s=snap.config.calc_period_s,
        dummy=cc.dummy_key,
        s_ref=s_ref,
        running_real=real_running,
        usage_factors={q.name: q.usage_factor for q in snap.qos},
        billings=billings,
        dummy_billing=dummy_billing,
        hysteresis=cc.hysteresis,
        padding_mode=cc.padding_mode,
        padding_threshold=cc.padding_threshold,
        d_max=cc.max_damping,
        advise_reason=(f"control is off (`fscontrol control off`, {off.get('by')}): `fscontrol control on` resumes it"
                       if off else (advise_reason(snap, cc.method, cc.dummy_key, cc.padding_qos)
                                    or diagnose.control_stop(snap, cc))),
        **pass_plan(db, snap, cc.method),
    )
    stuck = [q for q in dummy_jobs if q.state == "PENDING"]
    if stuck and dec.method in ("padding", "hybrid"):
        dec = replace(dec, notes=dec.notes + (
            f"the padding job {stuck[0].job_id} is pending ({stuck[0].reason or 'no reason given'}): no padding is "
            "charged while it waits; on a full cluster keep a core for it (padding_reservation, docs/control.md)",))
    plan = act.control_plan(
        dec,
        dummy=cc.dummy_key,
        dummy_partition=cc.dummy_partition,
        padding_qos=cc.padding_qos,
        padding_mode=cc.padding_mode,
        dummy_jobs=dummy_jobs,
        calc_period_s=snap.config.calc_period_s,
        now=snap.taken_at,
        reservation=cc.padding_reservation,
        usage_factor_now={q.name: q.usage_factor for q in snap.qos}.get(cc.padding_qos),
    )
    return dec, plan


def decide_gate(snap: Snapshot, cc, rec, release_all: bool, gate_off: str | None = None):
    """(gate plan, its commands as actions, reasons by job) from the snapshot and the settled ledger.
    `gate_off`: the gate is turned off (why); only the holds whose ledger row, mark and hold agree
    are released (no mark-only job: the gate's own release-all takes those)."""
    from fscontrol.act import actions as act
    from fscontrol.act import gate

    if rec is None:
        rec = gate.Reconciled({}, (), (), ())
    known = {r.account for r in snap.shares if not r.user}
    missing = sorted(a for a in cc.allocations if known and a not in known)
    if missing and not release_all:
        raise ConfigError(f"allocations for account(s) Slurm does not have on {snap.cluster}: {', '.join(missing)}")
    if gate_off:
        plan = gate.plan_release_all(snap.queue, rec, now=snap.taken_at, mode=cc.gate.action, orphans=False,
                                     why=f"the gate is off ({gate_off}): the agent's hold comes off")
    elif release_all:
        plan = gate.plan_release_all(snap.queue, rec, now=snap.taken_at, mode=cc.gate.action)
    else:
        if not cc.allocations:  # nothing to gate: no failure (issue 28)
            plan = gate.unconfigured_plan(snap.cluster, snap.taken_at, cc.gate.action, len(rec.held))
            if rec.cleanup:
                plan = replace(plan, actions=tuple(rec.cleanup))
            acts = [act.Action(a.kind, a.argv, a.reason, job_id=a.job_id) for a in plan.actions]
            return plan, acts, {a.job_id: a.reason for a in plan.actions}
        options = gate.GateOptions(action=cc.gate.action, nice_value=cc.gate.nice, max_actions=cc.gate.max_actions,
                                   node_cpus=cc.gate.node_cpus)
        plan = gate.plan_gate(snap.queue, cc.allocations, rec.held, options, now=snap.taken_at, hands_off=rec.hands_off,
                              parents={r.account: r.parent for r in snap.shares if not r.user and r.parent},
                              kinds={j: rec.ledger[j].kind for j in rec.held})
        if rec.cleanup:
            plan = replace(plan, actions=tuple(rec.cleanup) + plan.actions)
    acts = [act.Action(a.kind, a.argv, a.reason, job_id=a.job_id) for a in plan.actions]
    return plan, acts, {a.job_id: a.reason for a in plan.actions}


def gate_table(plan) -> dict:
    """What a gate tick records of its decision for `fscontrol why` (agent_state 'gate_table')."""
    return {"decided_at": plan.now, "action": plan.action, "unit": plan.unit, "under_waiting": len(plan.under_waiting),
            "accounts": {a.account: [a.occupancy, a.target, a.state] for a in plan.accounts if a.target is not None}}
