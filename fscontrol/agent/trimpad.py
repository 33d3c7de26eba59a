"""The loop's damping steps around a decay pass: its reconfigure watch (`watch_damping`), its trim
just before the pass (`trim_damping`) and what a control tick records of its read for them and
for the halving the pass used (`pass_read`, agent_state PASS_READ); and hybrid's padding into the
pass's own read (padding_mode = "trim", issue 30, docs/control.md).

On a busy cluster the usage a pass will read is known only at the trim, the agent's root read
just before the pass. Padding planned a pass ahead misses by what jobs charge in between (~1.4%
of all usage on the testbed), more than d's step it is meant to correct. Here d and the padding
are chosen together at the trim, on that read, and the padding lands in the same pass's read:

  after a pass   the padding QOS's UsageFactor goes to 0 and a 1-CPU dummy job starts (start_pad);
  control tick   d = floor of the ideal (the decision), and this module records the padding jobs
                 running and the pass before (record_control);
  the trim       root's RawUsage U read; d = floor(u* / (S_ref U)), x = u* / (S_ref d) - U; the
                 QOS's UsageFactor set to k = x / (b Delta f^Delta), then the job cancelled: Slurm
                 charges its stretch since the last pass at once, at that UsageFactor
                 (control.trim_padding). sacctmgr returns once slurmctld has the new factor
                 (measured on 22.05: a cancel 5 ms after it was charged at the new one, 3 of 3).

Every command goes through the one executor (recorded with its reason before it runs); the
padding jobs are the dummy association's own, the QOS the agent's padding QOS, whose UsageFactor
before the agent first changed it is recorded for `control off`.
"""

from __future__ import annotations

import math
import time

from fscontrol.act import executor
from fscontrol.snaprecords import Snapshot
from fscontrol.slurm import parse
from fscontrol.slurm.source import SlurmSource
from fscontrol.store.connection import Database
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger

TRIM_PAD = "trim_pad"  # agent_state: the padding jobs and the pass before, from the control tick
PASS_READ = "pass_read"  # agent_state: the agent's last read of root's usage before a decay pass
TOP_ACCOUNTS = 20  # the trim reads root's usage and that of the 20 largest top-level accounts (one sshare)
CANCEL_LATENCY_S = 0.3  # the trim's read to the cancel: sacctmgr's round trip (0.27 s on the testbed)
LATE_MARGIN_S = 0.1  # a cancel expected closer to the pass than this is not tried


def active(cc) -> bool:
    return cc.method == "hybrid" and cc.padding_mode == "trim"


def record_control(db, snap, cc) -> None:
    """At the control tick (inside its intent transaction): the padding jobs running and when
    each started, their billing, the pass the snapshot's usage is from; and the padding QOS's
    UsageFactor before the agent first changes it (for `control off`)."""
    dummy = cc.dummy_key
    bill = {j.job_id: float(j.billing) for j in snap.jobs if j.billing}
    jobs = [[q.job_id, q.start, bill.get(q.job_id, 1.0) or 1.0] for q in snap.queue
            if (q.account, q.user) == dummy and q.state == "RUNNING" and q.start is not None]
    uf = {q.name: q.usage_factor for q in snap.qos}.get(cc.padding_qos)
    if uf is not None:
        store_ledger.record_original(db, snap.cluster, f"usage_factor:{cc.padding_qos}", uf, snap.taken_at)
    store_ledger.set_state(db, snap.cluster, TRIM_PAD, {
        "at": snap.taken_at, "last_pass": snap.usage_at, "jobs": jobs, "half_life": snap.config.half_life_s,
        "period": snap.config.calc_period_s, "qos": cc.padding_qos}, snap.taken_at)


def trim(source, db, cc, cluster: str, last: dict, d_last: int, total: float, started: float, apply: bool,
         budget_s: float, pass_at: float | None = None):
    """The trim's padding: d and k chosen on root's usage `total` just read, then the QOS's
    UsageFactor, the cancel of the padding jobs, and d (commands in that order: the factor must
    be in slurmctld before the cancel, and the cancel before the pass). `pass_at`: the coming
    pass, where known: a trim run so late that the cancel could land after it pads nothing (the
    nearest d; the job runs on through the pass at UsageFactor 0). Returns the last action run,
    or None when nothing was to be done."""
    from fscontrol.act import actions as act
    from fscontrol.act import control

    st = store_ledger.get_state(db, cluster, TRIM_PAD) or {}
    s_ref = float(last["s_ref"])
    at_cancel = math.floor(time.time() + CANCEL_LATENCY_S)
    last_pass = st.get("last_pass")
    if pass_at is not None and time.time() > pass_at:
        return None  # the pass has run: what this trim read is not what it read
    late = pass_at is not None and time.time() + CANCEL_LATENCY_S + LATE_MARGIN_S > pass_at
    jobs = [] if late or last_pass is None or started - float(st.get("at") or 0) > 120 else [
        (job_id, b, at_cancel - max(math.floor(float(start)), math.floor(float(last_pass)))) for job_id, start, b in st["jobs"]]
    pad = control.trim_padding(cc.target_usage, s_ref, total, jobs=[(b, dt) for _, b, dt in jobs],
                               half_life_s=float(st.get("half_life") or 0), d_max=cc.max_damping)
    plan = []
    if pad.k is not None and pad.x > 0:
        plan.append(act.set_usage_factor(
            cc.padding_qos, pad.k,
            f"trim padding: {pad.x:,.1f} billing-seconds into the coming pass's read (root's RawUsage {total:,.0f}, "
            f"d {pad.d} = floor of {pad.d_ideal:.3f}: u*/(S_ref d) - U), over {pad.stretch:,.1f} s of padding job"
            + (f"; {pad.note}" if pad.note else "")))
        for job_id, _, dt in jobs:
            plan.append(act.Action("cancel_dummy", ("scancel", str(job_id)),
                                   f"trim padding: job {job_id}'s {dt} s since the last pass charged at once, "
                                   f"at UsageFactor {pad.k:.6f}", job_id=str(job_id)))
    if pad.d != d_last:
        plan.append(act.set_damping(pad.d, f"trim before the pass: root's RawUsage {total} ({total / 3600:,.2f} "
                                           f"core-hours), ideal d {pad.d_ideal or 0:.2f}, floor {pad.d} with "
                                           f"{pad.x:,.1f} of padding (the control tick had set {d_last})"))
    if not plan:
        return None
    if any(a.kind == "cancel_dummy" for a in plan):
        st["cancelled"] = [job_id for job_id, _, _ in jobs]
        with store.transaction(db):
            store_ledger.set_state(db, cluster, TRIM_PAD, st, started)
    done = executor.actions_tick(db, source.run, cluster, "trim", plan, apply, started, budget_s)
    cancels = [a for a in done if a.kind == "cancel_dummy"]
    if apply and cancels and all(a.status == "ok" for a in done if a.kind in ("set_usage_factor", "cancel_dummy")):
        # the record of the halving Slurm used (pipeline.halving_slurm_used) starts from the trim's
        # read: the padding charged at the cancel is in what the pass read (the QOS is back at 0 by
        # the next snapshot, so the ended job's own charge is not counted again there)
        read = store_ledger.get_state(db, cluster, PASS_READ)
        if read and read.get("by") == "trim" and read.get("raw") is not None:
            read.update(raw=float(read["raw"]) + pad.k * pad.stretch, padded=pad.k * pad.stretch)
            with store.transaction(db):
                store_ledger.set_state(db, cluster, PASS_READ, read, started)
    return done[-1]


def start_pad(source, db, cfg, *, apply: bool, name: str | None = None):
    """Just after a pass: the padding QOS back to UsageFactor 0 and the next padding job (when the
    trim cancelled the last one). Recorded like any action. Returns the last action, or None."""
    from fscontrol.act import actions as act

    started = time.time()
    cc = cfg.cluster(source.cluster or name)
    cluster = source.cluster or name or cc.name
    if not active(cc) or not cluster or store_ledger.get_state(db, cluster, "acting_off"):
        return None
    st = store_ledger.get_state(db, cluster, TRIM_PAD)
    if not st or not st.get("cancelled"):
        return None
    account, user = cc.dummy_key
    period = float(st.get("period") or 60)
    plan = [act.set_usage_factor(cc.padding_qos, 0.0, "trim padding: the pass has read the padding; the QOS charges "
                                                       "nothing until the next trim"),
            act.submit_dummy(user, account, cc.dummy_partition, cc.padding_qos, act.trim_pad_limit_s(period),
                             act.TRIM_JOB_NAME, "trim padding: the next padding job, started just after the pass "
                             "(its stretch to the next trim is the next pass's padding)", cc.padding_reservation)]
    st["cancelled"] = None
    with store.transaction(db):
        store_ledger.set_state(db, cluster, TRIM_PAD, st, started)
    done = executor.actions_tick(db, source.run, cluster, "pad", plan, apply, started, cfg.slurm_timeout_s)
    return done[-1]


def watch_damping(source: SlurmSource, db: Database, cfg, *, apply: bool, name: str | None = None):
    """The loop's cheap reconfigure watch: one RPC (`scontrol show config`). When slurmctld's d is
    not the one the agent last set (a reconfigure or a restart put slurm.conf's back), set it
    again at once, recorded like any action (intent first). Returns the action, or None when
    there is nothing to do. Bound: a decay pass uses the wrong d only when it falls within one
    watch interval of the revert (with persist = true, on slurm.conf's d, within persist_tolerance of
    the agent's unless persist_interval held the write back)."""
    from fscontrol.act import actions as act

    started = time.time()
    conf_out = source.config()
    conf = parse.parse_config(conf_out.stdout, " ".join(conf_out.argv))
    cluster = source.cluster or name or conf.cluster
    cc = cfg.cluster(cluster)
    if cc.method not in ("damping", "hybrid") or conf.mode != "classic" or store_ledger.get_state(db, cluster, "acting_off"):
        return None
    d_last = store_ledger.last_applied_damping(db, cluster)
    if d_last is None or d_last == conf.damping_factor:
        return None
    a = act.set_damping(d_last, f"watch: slurmctld's d is {conf.damping_factor} (a reconfigure or a restart?), "
                                f"the agent holds {d_last}")
    return executor.one_action_tick(db, source.run, cluster, "watch", a, apply, started, cfg.tick_deadline_s)


def trim_damping(source: SlurmSource, db: Database, cfg, *, apply: bool, name: str | None = None,
                 pass_at: float | None = None):
    """The loop's last word before a decay pass (agent.pass_trim ahead of it): d for the usage the
    pass will read, from root's RawUsage alone (one small RPC), with the last decision's S_ref
    and u*. Jobs that end between the control tick (agent.pass_lead ahead) and the pass charge
    their last stretch at once; this catches all but the last fraction of a second of them.
    Recorded like any action (intent first). Returns the action, or None when d stays. Only d:
    the padding for the pass was set by the control tick; with persist = true the next control
    tick writes slurm.conf if a restart would start too far off (persist_tolerance, persist_interval).
    padding_mode = "trim": d and the padding together (`trim`, above); `pass_at`, the coming
    pass where the loop knows it: no padding when the cancel could land after it."""
    from fscontrol.act import actions as act
    from fscontrol.act import control

    started = time.time()
    cc = cfg.cluster(source.cluster or name)
    cluster = source.cluster or name or cc.name
    if cc.method not in ("damping", "hybrid") or not cc.target_usage or not cluster or store_ledger.get_state(db, cluster, "acting_off"):
        return None
    last = store_ledger.last_decision(db, cluster)
    d_last = store_ledger.last_applied_damping(db, cluster)
    if (last is None or not last.get("s_ref") or last.get("advise_only") or d_last is None
            or started - float(last.get("decided_at") or 0) > 120):
        return None  # no fresh decision to trim (the control tick did not run just now)
    read = store_ledger.get_state(db, cluster, PASS_READ)
    fresh = bool(read and read.get("raw") is not None and read.get("snapshot_id") == last.get("snapshot_id"))
    # with root, the largest top-level accounts (the record of the pass reads root's usage from them)
    out = source.root_usage(tuple(read.get("top") or ()) if fresh else ())
    total = parse.parse_root_usage(out.stdout, " ".join(out.argv))
    if fresh:
        # the last read before the pass: the halving Slurm used is recorded from it (pipeline.halving_slurm_used)
        accounts = parse.parse_account_usage(out.stdout, " ".join(out.argv))
        read.update(at=out.finished_at, mid=(out.started_at + out.finished_at) / 2, raw=float(total), by="trim",
                    control_at=read.get("control_at", read["at"]), control_raw=read.get("control_raw", read["raw"]),
                    top_raw={a: float(accounts[a]) for a in read.get("top") or () if a in accounts})
        with store.transaction(db):
            store_ledger.set_state(db, cluster, PASS_READ, read, out.finished_at)
    if total <= 0:
        return None
    if active(cc):  # d and the padding into this pass's own read, together
        return trim(source, db, cc, cluster, last, d_last, float(total), started, apply, cfg.slurm_timeout_s,
                    pass_at=pass_at)
    ideal = cc.target_usage / (float(last["s_ref"]) * total)
    d = control.clamp_d(round(ideal)) if cc.method == "hybrid" else control.choose_damping(ideal, d_last, cc.hysteresis)
    d = min(d, cc.max_damping)  # never above the config's bound (as the control tick)
    if d == d_last:
        return None
    a = act.set_damping(d, f"trim before the pass: root's RawUsage {total} ({total / 3600:,.2f} core-hours), ideal d {ideal:.2f} "
                           f"(the control tick had set {d_last})")
    return executor.one_action_tick(db, source.run, cluster, "trim", a, apply, started, cfg.slurm_timeout_s)


def pass_read(snap: Snapshot, sid: int) -> dict:
    """What a control tick read before the coming pass, for the halving that pass used
    (pipeline.halving_slurm_used): root's RawUsage and when, the pass before it, and when each running job
    started (a job that ends before the pass charges its tail from the later of its start and
    that pass). The trim (trim_damping) replaces `raw`/`at` with its later read."""
    root = snap.root
    top = sorted((r for r in snap.shares if r.depth == 1 and not r.user and not r.shares_parent),
                 key=lambda r: -r.raw_usage)[:TOP_ACCOUNTS]
    return {"snapshot_id": sid, "at": snap.taken_at, "raw": float(root.raw_usage) if root else None,
            "pass_before": snap.usage_at, "by": "control", "top": [r.account for r in top if r.raw_usage > 0],
            "running": {q.job_id: q.start for q in snap.queue if q.state == "RUNNING" and q.start is not None}}

