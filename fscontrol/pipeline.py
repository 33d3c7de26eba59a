"""The one place the stages are composed, top to bottom:

    source -> parse -> model -> control / gate -> plan -> apply -> store -> report

`collect` reads and parses everything first and writes only when all of it parsed, in one
transaction: a failed or garbled command leaves the history as it was and records a failed tick.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import sqlite_utils

from . import parse, store
from .errors import FscontrolError, NotFoundError, SlurmCommandError, StoreError, UnsafeActionError
from .records import Snapshot
from .source import RecordedSlurm, SlurmSource

FIRST_WINDOW_S = 3600.0  # sacct look-back for a cluster's first snapshot


def _record_failure(db: sqlite_utils.Database, cluster: str | None, stage: str, started: float, e: Exception) -> None:
    """A failed tick is recorded in its own transaction; nothing else of the tick was written."""
    try:
        with store.transaction(db):
            store.record_tick(db, cluster, started, time.time(), "failed", error=str(e), stage=stage)
    except FscontrolError:
        pass  # the database itself is the problem: the original error says more


@dataclass(frozen=True)
class CollectResult:
    snapshot_id: int
    snapshot: Snapshot


def read_snapshot(source: SlurmSource, window_start_of: Callable[[str], float | None] = lambda c: None) -> Snapshot:
    """Run every read command and parse it. Raises on the first failure; nothing is written.

    `window_start_of(cluster)` gives the start of the sacct window: the previous snapshot."""
    cfg_out = source.config()
    config = parse.parse_config(cfg_out.stdout, " ".join(cfg_out.argv))
    cluster = source.cluster or config.cluster
    window_start = window_start_of(cluster)
    sshare_out = source.sshare()
    shares = parse.parse_sshare(sshare_out.stdout, " ".join(sshare_out.argv))
    taken_at = sshare_out.finished_at
    squeue_out = source.squeue()
    queue = parse.parse_squeue(squeue_out.stdout, " ".join(squeue_out.argv))
    sprio_out = source.sprio()
    prio = parse.parse_sprio(sprio_out.stdout, " ".join(sprio_out.argv))
    qos_out = source.qos()
    qos = parse.parse_qos(qos_out.stdout, " ".join(qos_out.argv))
    if isinstance(source, RecordedSlurm):
        window = source.window
    else:
        start = window_start if window_start is not None else taken_at - FIRST_WINDOW_S
        window = (start, taken_at)
    sacct_out = source.sacct(*window)
    jobs = parse.parse_sacct(sacct_out.stdout, " ".join(sacct_out.argv))
    return Snapshot(
        cluster=cluster,
        taken_at=taken_at,
        config=config,
        shares=shares,
        jobs=jobs,
        window=window,
        queue=queue,
        prio=prio,
        qos=qos,
    )


def collect(source: SlurmSource, db: sqlite_utils.Database, name: str | None = None) -> CollectResult:
    """One snapshot into the history, in one transaction; a failure is recorded as a failed tick
    (of `name`, the cluster the config knows, when the failure came before Slurm said which)."""
    started = time.time()
    cluster = source.cluster or name
    try:
        snap = read_snapshot(source, lambda c: store.previous_snapshot_time(db, c))
        cluster = snap.cluster
        with store.transaction(db):
            sid = store.write_snapshot(db, snap, source=source.describe())
            store.record_tick(db, cluster, started, time.time(), "ok", snapshot_id=sid, stage="collect")
    except FscontrolError as e:
        _record_failure(db, cluster, "collect", started, e)
        raise
    return CollectResult(snapshot_id=sid, snapshot=snap)


def thin_to_period(times: list[float], period_s: float) -> list[int]:
    """Indices of snapshots at least one PriorityCalcPeriod apart (greedy from the first).

    RawUsage moves only at decay passes: a pair of snapshots closer than one pass says nothing
    about decay, and pairs should span whole passes (see fit.py)."""
    keep: list[int] = []
    for i, t in enumerate(times):
        if not keep or t - times[keep[-1]] >= period_s * 0.98:
            keep.append(i)
    return keep


def fit_history(db: sqlite_utils.Database, cluster: str | None, *, last: int | None = None, now: float | None = None):
    """Fit the decay rate to the stored history of a cluster and record the fit.

    Uses user associations only (account rows are sums of them) and the sacct charge between
    snapshots; snapshots are thinned to one per decay pass at most."""
    import math

    import numpy as np

    from . import fit as fitmod

    if cluster is None:
        names = store.clusters(db)
        if len(names) != 1:
            raise NotFoundError("no history yet" if not names else f"several clusters in the history, pick one with -M: {', '.join(names)}")
        cluster = names[0]
    latest = store.load_snapshot(db, cluster=cluster)
    times, series = store.usage_series(db, cluster)
    ids = store.snapshot_ids(db, cluster)
    if last:
        times, ids = times[-last:], ids[-last:]
        series = {k: v[-last:] for k, v in series.items()}
    keep = thin_to_period(times, max(latest.config.calc_period_s, 1))
    inflow = store.inflow_series(db, cluster)
    keys = [k for k in series if k[1]]  # user associations
    usage = np.array([[series[k][i] if series[k][i] is not None else math.nan for i in keep] for k in keys], dtype=float)
    flow = np.zeros_like(usage)
    for r, k in enumerate(keys):
        per = inflow.get(k, {})
        # the charge between two kept snapshots is the sum of the windows ending after the first
        for c in range(1, len(keep)):
            flow[r, c] = sum(per.get(ids[i], 0.0) for i in range(keep[c - 1] + 1, keep[c] + 1))
    kept_times = [times[i] for i in keep]
    try:
        result = fitmod.fit_decay_matrix(
            kept_times, usage, flow, latest.config.half_life_s, calc_period_s=latest.config.calc_period_s
        )
    except ValueError as e:
        raise NotFoundError(f"cannot fit the decay of {cluster} yet: {e}") from None
    with store.transaction(db):
        store.write_fit(db, cluster, now if now is not None else time.time(), ids[keep[0]], ids[keep[-1]], result)
    return cluster, len(keep), result


# ---------------------------------------------------------------------------- control
@dataclass(frozen=True)
class ControlResult:
    cluster: str
    snapshot_id: int
    decision_id: int
    decision: object  # control.Decision
    actions: tuple  # actions.Action, with their status after apply
    applied: bool
    verified_damping: int | None  # d read back from `scontrol show config` after applying


def advise_reason(snap: Snapshot, method: str, dummy: tuple[str, str], padding_qos: str) -> str | None:
    """Why the controller may only advise on this cluster, or None when it may act."""
    cfg = snap.config
    if cfg.mode == "fair_tree":
        return "Fair Tree (the default since Slurm 19.05) never reads FairShareDampeningFactor; set PriorityFlags=NO_FAIR_TREE"
    if cfg.mode != "classic":
        return f"priority mode {cfg.mode}: the classic maths do not hold"
    if method in ("padding", "hybrid"):
        rows = {r.key: r for r in snap.shares}
        account, user = dummy
        if dummy not in rows:
            return f"dummy association {account}/{user} does not exist (see README: padding setup)"
        acct = rows.get((account, ""))
        if acct is None or acct.parent != "root":
            return f"dummy account {account} must be a top-level account (child of root)"
        others = [r for r in snap.shares if r.parent == account and r.key != dummy]
        if others:
            return f"dummy account {account} must hold only {user}: classic fair-share charges siblings a share of it"
        if padding_qos not in {q.name for q in snap.qos}:
            return f"padding QOS {padding_qos} does not exist (sacctmgr add qos {padding_qos})"
    return None


def control_tick(source: SlurmSource, db: sqlite_utils.Database, cfg, *, apply: bool, now: float | None = None,
                 name: str | None = None) -> ControlResult:
    """Collect, decide, store (one transaction), then apply if asked and record the outcome."""
    from . import actions as act
    from . import control, fairshare

    started = time.time() if now is None else now
    cluster = source.cluster or name
    run = getattr(source, "run", None)
    if apply and run is None:
        raise UnsafeActionError(f"cannot apply to {source.describe()}: only a live cluster can be changed")
    try:
        snap = read_snapshot(source, lambda c: store.previous_snapshot_time(db, c))
        cluster = snap.cluster
        cc = cfg.cluster(cluster)
        d_now = snap.config.damping_factor
        d_last = store.last_applied_damping(db, cluster)
        s_ref, _ = fairshare.choose_reference_share(snap.shares, d_now, cc.dummy_key, cc.reference_share)
        dummy_jobs = [q for q in snap.queue if (q.account, q.user) == cc.dummy_key]
        real_running = [q for q in snap.queue if q.state == "RUNNING" and (q.account, q.user) != cc.dummy_key]
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
            hysteresis=cc.hysteresis,
            padding_mode=cc.padding_mode,
            padding_threshold=cc.padding_threshold,
            advise_reason=advise_reason(snap, cc.method, cc.dummy_key, cc.padding_qos),
        )
        plan = act.control_plan(
            dec,
            dummy=cc.dummy_key,
            dummy_partition=cc.dummy_partition,
            padding_qos=cc.padding_qos,
            padding_mode=cc.padding_mode,
            dummy_jobs=dummy_jobs,
            calc_period_s=snap.config.calc_period_s,
        )
        with store.transaction(db):
            previous = store.last_decision(db, cluster)
            sid = store.write_snapshot(db, snap, source=source.describe())
            if previous is not None:
                store.set_measured_effect(db, previous["id"], dec.h_now)
            did = store.write_decision(db, cluster, sid, snap.taken_at, dec, apply)
            aids = store.write_actions(db, cluster, did, "control", plan, snap.taken_at)
            store.record_tick(db, cluster, started, time.time(), "ok", snapshot_id=sid, stage="control")
    except FscontrolError as e:
        _record_failure(db, cluster, "control", started, e)
        raise
    verified = None
    done = tuple(plan)
    if apply and plan:
        done = tuple(act.apply_plan(plan, lambda argv: run(argv).stdout))
        with store.transaction(db):
            for aid, a in zip(aids, done):
                store.update_action(db, aid, a.status, a.output, a.job_id, time.time())
        if cc.persist and any(a.kind == "set_damping" and a.status == "ok" for a in done):
            # opt-in: slurm.conf too, so a reconfigure or restart keeps d
            p_act = act.Action(
                "persist_damping",
                ("edit", cc.slurm_conf, f"FairShareDampeningFactor={dec.d_target}", "scontrol reconfigure"),
                "persist = true: keep d across reconfigure and restart",
            )
            try:
                backup = act.persist_damping(cc.slurm_conf, dec.d_target, lambda argv: run(argv).stdout,
                                             time.strftime("%Y%m%dT%H%M%S"))
                p_act = replace(p_act, status="ok", output=f"backup {backup}")
            except (FscontrolError, OSError) as e:
                p_act = replace(p_act, status="failed", output=str(e))
            done = done + (p_act,)
            with store.transaction(db):
                store.write_actions(db, cluster, did, "control", [p_act], time.time())
        if any(a.kind == "set_damping" and a.status == "ok" for a in done):
            verified = parse.parse_config(source.config().stdout).damping_factor
            if verified != dec.d_target:
                raise SlurmCommandError(
                    f"scontrol fsdampeningfactor {dec.d_target} ran, but slurmctld reports FairShareDampeningFactor={verified}"
                )
    return ControlResult(cluster, sid, did, dec, done, apply, verified)


# ---------------------------------------------------------------------------- the tick
DUE_SLACK = 0.9  # a stage is due at 90% of its interval, so cron's jitter never skips a run


@dataclass(frozen=True)
class TickResult:
    cluster: str
    control: ControlResult | None  # None: control was not due, the tick only collected
    collected: CollectResult | None
    fit: object | None  # fit.Fit when a fit was due and there was enough history
    gate: GateResult | None
    published: str | None  # path of the published snapshot

    @property
    def snapshot_id(self) -> int:
        return self.control.snapshot_id if self.control is not None else self.collected.snapshot_id


def due(db: sqlite_utils.Database, cluster: str, stage: str, every_s: float, now: float) -> bool:
    last = store.last_ok(db, cluster, stage)
    return last is None or now - last >= every_s * DUE_SLACK


def fit_due(db: sqlite_utils.Database, cluster: str, every_s: float, now: float) -> bool:
    row = db.execute("SELECT max(fitted_at) FROM fits WHERE cluster = ?", [cluster]).fetchone()
    return row[0] is None or now - row[0] >= every_s * DUE_SLACK


def run_tick(source: SlurmSource, db: sqlite_utils.Database, cfg, *, apply: bool, now: float | None = None,
             force_control: bool = True, gate: bool = True) -> TickResult:
    """One full cycle for one cluster, as cron and the APScheduler loop run it, top to bottom:
    collect + control when due (one transaction; apply when asked), else collect only; the decay
    fit when due; the SFS gate when enabled and due; publish the snapshot for `forecast`.

    `force_control` (cron's `fscontrol tick`) runs control at every tick; the loop passes False
    and lets schedule.control pace it, and runs the gate as its own job (`gate=False` here). A failure raises after recording a failed tick: what the
    earlier stages committed stays, and no later stage acts on the failed read."""
    t = time.time() if now is None else now
    cc = cfg.cluster(source.cluster)
    name = source.cluster or cc.name or None
    control_res = collected = None
    if force_control or not name or due(db, name, "control", cfg.schedule["control"], t):
        control_res = control_tick(source, db, cfg, apply=apply, now=now, name=name)
        cluster = control_res.cluster
    else:
        collected = collect(source, db, name)
        cluster = collected.snapshot.cluster
    cc = cfg.cluster(cluster)
    fitted = None
    if fit_due(db, cluster, cfg.schedule["fit"], t):
        try:
            _, _, fitted = fit_history(db, cluster, now=t)
        except NotFoundError:
            fitted = None  # not enough history yet: not a failed tick
    gated = None
    if gate and cc.gate.enabled and cc.allocations and due(db, cluster, "gate", cfg.schedule["gate"], t):
        gated = gate_tick(source, db, cfg, apply=apply, name=cluster)
    published = None
    if cfg.publish_dir:
        published = str(publish_latest(db, cfg, cluster)[0])
    return TickResult(cluster, control_res, collected, fitted, gated, published)


def publish_latest(db: sqlite_utils.Database, cfg, cluster: str | None, out=None, admins=(), now: float | None = None):
    """Write the latest snapshot of the cluster for `fscontrol forecast` (world-readable, atomic).
    Returns (path, what was written)."""
    from . import publish as pub

    snap = store.load_snapshot(db, cluster=cluster)
    cc = cfg.cluster(snap.cluster)
    data = pub.build_published(
        snap,
        reference=cc.reference_share,
        dummy=cc.dummy_key,
        target_core_hours=cc.target_core_hours,
        admins=tuple(admins) or tuple(cfg.admins),
        published_at=time.time() if now is None else now,
    )
    try:
        return pub.write_published(data, out or pub.default_path(snap.cluster, cfg.publish_dir)), data
    except OSError as e:
        raise StoreError(f"cannot write the published snapshot: {e}") from None


def metrics_text(db: sqlite_utils.Database, cfg, clusters: list[str] | None = None) -> str:
    """The Prometheus textfile for every cluster in the history (or the named ones)."""
    from . import metrics, report

    names = clusters or [r[0] for r in db.execute("SELECT DISTINCT cluster FROM snapshots ORDER BY 1")]
    state = {}
    for name in names:
        try:
            snap = store.load_snapshot(db, cluster=name)
        except NotFoundError:
            continue
        cc = cfg.cluster(name)
        status = report.status_data(snap, target_core_hours=cc.target_core_hours, dummy=cc.dummy_key, reference=cc.reference_share)
        state[name] = {"status": status, "taken_at": snap.taken_at, "decision": store.last_decision(db, name),
                       "holds": len(store.gate_ledger(db, name))}
    return metrics.render(metrics.families(state, store.tick_stats(db)))


def write_metrics(db: sqlite_utils.Database, cfg, path=None) -> str | None:
    from . import metrics

    target = path or cfg.metrics
    if not target:
        return None
    try:
        return str(metrics.write_textfile(target, metrics_text(db, cfg)))
    except OSError as e:
        raise StoreError(f"cannot write the metrics file {target}: {e}") from None


# ---------------------------------------------------------------------------- the SFS gate
@dataclass(frozen=True)
class GateResult:
    cluster: str
    snapshot_id: int
    plan: object  # gate.GatePlan
    actions: tuple  # actions.Action with statuses
    applied: bool


def gate_tick(source: SlurmSource, db: sqlite_utils.Database, cfg, *, apply: bool, release_all: bool = False,
              name: str | None = None) -> GateResult:
    """Collect, plan the holds (or demotions) and releases, store, apply if asked.

    The ledger of the agent's own holds lives in SQLite; only those are ever released."""
    from . import actions as act
    from . import gate

    run = getattr(source, "run", None)
    if apply and run is None:
        raise UnsafeActionError(f"cannot apply to {source.describe()}: only a live cluster can be changed")
    started = time.time()
    try:
        snap = read_snapshot(source, lambda c: store.previous_snapshot_time(db, c))
    except FscontrolError as e:
        _record_failure(db, source.cluster or name or cfg.cluster(None).name or None, "gate", started, e)
        raise
    cc = cfg.cluster(snap.cluster)
    if not cc.allocations and not release_all:
        raise NotFoundError(f"no allocations configured for cluster {snap.cluster}: add [clusters.{snap.cluster}.allocations.ACCOUNT]")
    ledger = store.gate_ledger(db, snap.cluster)
    options = gate.GateOptions(action=cc.gate.action, nice_value=cc.gate.nice, max_actions=cc.gate.max_actions, node_cpus=cc.gate.node_cpus)
    if release_all:
        queued = {q.job_id for q in snap.queue}
        acts = tuple(
            gate.GateAction("release" if n == 0 else "unnice", j, "", "release-all: undo every hold the agent placed", nice=n or None)
            for j, n in sorted(ledger.items())
            if j in queued
        )
        plan = gate.GatePlan(now=snap.taken_at, action=options.action, unit="cpus", accounts=(), actions=acts,
                             stale_ledger=tuple(j for j in ledger if j not in queued))
    else:
        plan = gate.plan_gate(snap.queue, cc.allocations, ledger, options, now=snap.taken_at)
    planned = [act.Action(a.kind, a.argv, a.reason, job_id=a.job_id) for a in plan.actions]
    with store.transaction(db):
        sid = store.write_snapshot(db, snap, source=source.describe())
        aids = store.write_actions(db, snap.cluster, None, "gate", planned, snap.taken_at)
        store.record_tick(db, snap.cluster, started, time.time(), "ok", snapshot_id=sid, stage="gate")
    done = tuple(planned)
    if apply:
        results = []
        for a in planned:  # each job on its own: one failure (job ended meanwhile) stops nothing else
            results.extend(act.apply_plan([a], lambda argv: run(argv).stdout))
        done = tuple(results)
        ok = {a.job_id for a in done if a.status == "ok"}
        new_ledger = gate.apply_to_ledger(ledger, plan, done=ok)
        kinds = {a.job_id: (a.kind, a.reason) for a in plan.actions}
        with store.transaction(db):
            for aid, a in zip(aids, done):
                store.update_action(db, aid, a.status, a.output, a.job_id, time.time())
            store.set_gate_ledger(db, snap.cluster, new_ledger, kinds, time.time())
    return GateResult(snap.cluster, sid, plan, done, apply)
