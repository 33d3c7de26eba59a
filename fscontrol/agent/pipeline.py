"""The one place the stages are composed, top to bottom:

    source -> parse -> model -> control / gate -> plan -> apply -> store -> report

`collect` reads and parses everything first and writes only when all of it parsed, in one
transaction: a failed or garbled command leaves the history as it was and records a failed tick.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import sqlite3
import math
import time
from collections.abc import Callable, Mapping

from fscontrol.act import executor
from fscontrol.agent import diagnose, fitting, publishing, quota
from fscontrol.slurm import parse
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.errors import (ConfigError, FscontrolError, InternalError, NotFoundError, ParseError, UnsafeActionError)
from fscontrol.store.connection import Database
from fscontrol.records import Snapshot
from fscontrol.slurm.source import RecordedSlurm, SlurmSource, last_decay_pass

FIRST_WINDOW_S = 3600.0  # sacct look-back for a cluster's first snapshot


def _record_failure(db: Database, cluster: str | None, stage: str, started: float, e: Exception,
                    tick_id: int | None = None) -> None:
    """A failed tick is recorded in its own transaction; nothing else of the tick was written."""
    try:
        with store.transaction(db):
            if tick_id is not None:  # the intent was committed: end that tick's row
                store.update_tick(db, tick_id, "failed", time.time(), str(e))
            else:
                store.record_tick(db, cluster, started, time.time(), "failed", error=str(e), stage=stage)
    except (FscontrolError, sqlite3.Error):
        pass  # the database itself is the problem: the original error says more


@dataclass(frozen=True, slots=True)
class CollectResult:
    snapshot_id: int
    snapshot: Snapshot


def read_snapshot(source: SlurmSource, window_start_of: Callable[[str], float | None] = lambda c: None) -> Snapshot:
    """Run every read command and parse it. Raises on the first failure; nothing is written.

    `window_start_of(cluster)` gives the start of the sacct window: the previous snapshot.
    The cyclic garbage collector is paused throughout (parse.gc_paused): the parsers make a record
    a row and no reference cycle, so each collection during the read only re-scanned them."""
    with parse.gc_paused():
        return _read_snapshot(source, window_start_of)


def _read_snapshot(source: SlurmSource, window_start_of: Callable[[str], float | None]) -> Snapshot:
    def whole(out):
        """Slurm's commands end their output with a newline: without it the output was cut short."""
        if out.stdout and not out.stdout.endswith("\n"):
            raise ParseError(" ".join(out.argv), "output does not end with a newline: cut short?")
        return out

    cfg_out = whole(source.config())
    config = parse.parse_config(cfg_out.stdout, " ".join(cfg_out.argv))
    if source.cluster and config.cluster and source.cluster != config.cluster:
        raise NotFoundError(f"{source.describe()} is cluster {config.cluster}, not {source.cluster} (-M)")
    cluster = source.cluster or config.cluster
    window_start = window_start_of(cluster)
    pass_file = _local_pass_record(source, config)
    pass_before = last_decay_pass(pass_file) if pass_file else None
    if hasattr(source, "sshare_spooled"):  # read from disk a block at a time (slurm.spool): no text held
        with source.sshare_spooled() as spooled:
            usage_at = usage_time(pass_before, last_decay_pass(pass_file) if pass_file else None,
                                  spooled.started_at, spooled.finished_at, config.calc_period_s)
            shares = spooled.shares()  # the whole-output checks first, then a row at a time
            sshare_cmd, taken_at = spooled.command, spooled.finished_at
    else:
        sshare_out = whole(source.sshare())
        usage_at = usage_time(pass_before, last_decay_pass(pass_file) if pass_file else None,
                              sshare_out.started_at, sshare_out.finished_at, config.calc_period_s)
        sshare_cmd, taken_at = " ".join(sshare_out.argv), sshare_out.finished_at
        shares = parse.parse_sshare(sshare_out.stdout, sshare_cmd)
        del sshare_out
    parse.check_share_tree(shares, sshare_cmd, fair_tree=config.mode == "fair_tree")
    if hasattr(source, "squeue_jobs"):  # read from disk a block at a time (slurm.spool): no text held
        queue, prio, sprio_cmd = source.squeue_jobs(), source.sprio_rows(), " ".join(parse.SPRIO_ARGS)
    else:
        squeue_out = whole(source.squeue())
        queue = parse.parse_squeue(squeue_out.stdout, " ".join(squeue_out.argv))
        sprio_out = whole(source.sprio())
        prio, sprio_cmd = parse.parse_sprio(sprio_out.stdout, " ".join(sprio_out.argv)), " ".join(sprio_out.argv)
    # sprio lists every pending job the scheduler may start (not a job held, nor one whose begin
    # time is still to come, though squeue gives that one a priority): one of those and no sprio line
    # means sprio's output was cut short
    waiting = sum(1 for q in queue if q.state == "PENDING" and q.priority > 0 and q.reason in ("Priority", "Resources"))
    if not prio and waiting:
        raise ParseError(sprio_cmd, f"printed no job while squeue lists {waiting} pending with a priority: cut short?")
    qos_out = whole(source.qos())
    qos = parse.parse_qos(qos_out.stdout, " ".join(qos_out.argv))
    if isinstance(source, RecordedSlurm):
        window = source.window
    elif window_start is not None and taken_at < window_start - CLOCK_SLACK_S:
        raise UnsafeActionError(f"the clock reads {window_start - taken_at:.0f} s before the last snapshot of {cluster}: "
                                "not acting on it (did the clock step back?); ticks resume once it has caught up")
    else:
        start = window_start if window_start is not None else taken_at - FIRST_WINDOW_S
        window = (start, taken_at)
    if hasattr(source, "sacct_jobs"):  # streamed from a file: memory stays flat as jobs grow
        jobs = source.sacct_jobs(*window)  # checked whole and parsed through once, as below
    else:
        sacct_out = whole(source.sacct(*window))
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
        usage_at=usage_at,
    )


def _local_pass_record(source: SlurmSource, config) -> str | None:
    """The StateSaveLocation whose priority_last_decay_ran is this cluster's: only for a live
    cluster read without -M (another cluster's StateSaveLocation names a path on its own
    controller, which may exist here for the local one) under priority/multifactor."""
    if isinstance(source, RecordedSlurm) or getattr(source, "cluster", None):
        return None
    if config.priority_type != "priority/multifactor" or config.calc_period_s <= 0:
        return None
    return config.raw.get("StateSaveLocation")


def usage_time(before: float | None, after: float | None, started_at: float, finished_at: float,
               calc_period_s: float, margin_s: float = 2.0) -> float | None:
    """When the decay pass whose RawUsage sshare printed ran, from slurmctld's record of its last
    pass read just before and just after sshare (`source.last_decay_pass`), or None when that is
    in doubt: unreadable, changed during the read (a pass ran meanwhile), or a pass due (the
    passes fall every PriorityCalcPeriod from the last, decay.next_pass) before sshare finished,
    `margin_s` allowing for the pass's own start and for its record being written at its end.
    Pure."""
    if before is None or after != before or before > started_at:
        return None
    if finished_at >= before + calc_period_s - margin_s:
        return None
    return before


def collect(source: SlurmSource, db: Database, name: str | None = None, now: float | None = None) -> CollectResult:
    """One snapshot into the history (a tick with no stage that acts)."""
    res = run_tick(source, db, None, apply=False, stages=Stages(), now=now, name=name)
    return res.collected


# ---------------------------------------------------------------------------- control
@dataclass(frozen=True, slots=True)
class ControlResult:
    cluster: str
    snapshot_id: int
    decision_id: int
    decision: object  # control.Decision
    actions: tuple  # actions.Action, with their status after apply
    applied: bool
    verified_damping: int | None  # d read back from `scontrol show config` after applying
    priority_mode: str = "classic"  # the cluster's algorithm (SlurmConfig.mode); default classic
    user_associations: int = 0  # N, the user associations (Fair Tree's advice names it); default 0


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


def control_tick(source: SlurmSource, db: Database, cfg, *, apply: bool, now: float | None = None,
                 name: str | None = None) -> ControlResult:
    """A tick that runs control (`fscontrol control`)."""
    return run_tick(source, db, cfg, apply=apply, stages=Stages(control=True), now=now, name=name).control


def gate_tick(source: SlurmSource, db: Database, cfg, *, apply: bool, release_all: bool = False,
              name: str | None = None, now: float | None = None) -> GateResult:
    """A tick that runs the SFS gate, or undoes every hold of the agent (`fscontrol gate`)."""
    return run_tick(source, db, cfg, apply=apply, stages=Stages(gate=True, release_all=release_all), now=now, name=name).gate


# ---------------------------------------------------------------------------- the tick
DUE_SLACK = 0.9  # a stage is due at 90% of its interval, so cron's jitter never skips a run
CLOCK_SLACK_S = 60.0  # a snapshot this far before the last one means the clock stepped back


@dataclass(frozen=True, slots=True)
class Stages:
    """What one tick does beyond reading and storing a snapshot."""

    control: bool = False
    gate: bool = False
    release_all: bool = False  # with gate: undo every hold and demotion of the agent
    fit: bool = False
    publish: bool = False
    off: str | None = None  # `control off` ("control off") or the loop's stop ("on_stop"): undo all, stop acting
    gate_off: str | None = None  # with gate: the gate is turned off (why): release the agent's own ledgered holds
    gate_off_unnamed: bool = False  # agent_tick knew no cluster name: gate_off is decided on the snapshot's (run_tick)

    @property
    def label(self) -> str:  # the ticks table's `stage`
        if self.off:
            return "off"
        return "+".join(n for n, on in (("control", self.control), ("gate", self.gate)) if on) or "collect"


@dataclass(frozen=True, slots=True)
class TickResult:
    cluster: str
    tick_id: int
    collected: CollectResult
    control: ControlResult | None  # None: control was not run this tick
    fit: object | None  # fit.Fit when a fit was due and there was enough history
    gate: GateResult | None
    published: str | None  # path of the published snapshot
    reconciled: tuple = ()  # (what, old, new, why) settled against Slurm at the start of the tick; default ()

    @property
    def snapshot_id(self) -> int:
        return self.collected.snapshot_id


def due(db: Database, cluster: str, stage: str, every_s: float, now: float) -> bool:
    last = store.last_ok(db, cluster, stage)
    return last is None or now - last >= every_s * DUE_SLACK


def fit_due(db: Database, cluster: str, every_s: float, now: float) -> bool:
    """A fit is due once `every_s` has passed since the last fit or the last attempt that found too
    little history (so a young history does not load numpy at every tick)."""
    row = db.execute("SELECT max(fitted_at) FROM fits WHERE cluster = ?", [cluster]).fetchone()
    tried = (store_ledger.get_state(db, cluster, "fit_attempt") or {}).get("at")
    times = [t for t in (row[0], tried) if t is not None]
    return not times or now - max(times) >= every_s * DUE_SLACK


def agent_tick(source: SlurmSource, db: Database, cfg, *, apply: bool, now: float | None = None,
               force_control: bool = True, gate: bool = True, control: bool = True,
               deadline: float | None = None) -> TickResult:
    """The agent's cycle for one cluster (cron's `fscontrol tick`, the loop's job): which stages
    are due, then the one tick. `force_control` (cron) runs control at every tick; the loop passes
    False and lets schedule.control pace it, and runs the gate as its own job (`gate=False`);
    `control=False` when the loop runs control just before each decay pass instead."""
    t = time.time() if now is None else now
    cc = cfg.cluster(source.cluster)
    name = source.cluster or cc.name or None
    do_control = control and (force_control or not name or due(db, name, "control", cfg.schedule["control"], t))
    gate_on = bool(cc.gate.enabled and cc.allocations)
    do_gate = bool(gate and name and gate_on and due(db, name, "gate", cfg.schedule["gate"], t))
    gate_off = gate_off_reason(db, name, cc) if name and not gate_on else None
    stages = Stages(control=do_control, gate=do_gate or bool(gate_off), release_all=bool(gate_off), fit=True,
                    publish=bool(cfg.publish_dir), gate_off=gate_off, gate_off_unnamed=not name)
    return run_tick(source, db, cfg, apply=apply, stages=stages, now=now, name=name, deadline=deadline)


def gate_off_reason(db: Database, cluster: str, cc) -> str | None:
    """Why the gate stage is off while the ledger still holds jobs of the agent, or None (no such
    hold). The tick then releases them (`Stages.gate_off`): the gate is the only stage that would."""
    if not any(e.state in ("holding", "held", "releasing") for e in store_ledger.ledger_entries(db, cluster).values()):
        return None
    if not cc.gate.enabled:
        return f"[clusters.{cluster}.gate] enabled = false"
    return f"no allocations configured for {cluster}"


def _gate_off_named(db: Database, stages: Stages, cluster: str, cc) -> Stages:
    """agent_tick without a cluster name (no -M, no [clusters.X]): the gate-off release decided on
    the cluster the snapshot names, as agent_tick decides it for a named one."""
    if not stages.gate_off_unnamed or stages.gate or stages.off or cc is None or (cc.gate.enabled and cc.allocations):
        return stages
    why = gate_off_reason(db, cluster, cc)
    return replace(stages, gate=True, release_all=True, gate_off=why) if why else stages


def _gate_off_note(stages: Stages, rec, acts, apply: bool) -> str | None:
    """The tick's one line when the gate is off and the agent's holds are released (or why not)."""
    if not stages.gate_off:
        return None
    releases = [a for a in acts if a.kind in ("release", "unnice")]
    orphans = len(rec.orphans) if rec is not None else 0
    if not apply:
        line = f"{len(releases)} agent hold(s) to release; nothing done (dry run: --apply or agent.apply = true)"
    else:
        ok = sum(a.status == "ok" for a in releases)
        line = f"released {ok} of {len(releases)} agent hold(s)" + (
            "" if ok == len(releases) else "; the others stay held and marked, tried again at the next tick")
    if orphans:
        line += (f"; {orphans} job(s) carry the agent's mark with no ledger row, left held "
                 "(`fscontrol gate --release-all --apply` releases them)")
    return f"the gate is off ({stages.gate_off}): {line}"


def run_tick(source: SlurmSource, db: Database, cfg, *, apply: bool, stages: Stages,
             now: float | None = None, name: str | None = None, deadline: float | None = None) -> TickResult:
    """One tick for one cluster; every command of fscontrol that reads Slurm comes through here.

    1. read every Slurm command once and parse it (a failure: a failed tick, nothing else written);
    2. settle what earlier ticks left open against what Slurm shows (holds by their marks,
       actions whose outcome was unknown);
    3. decide (control, gate: pure functions of the snapshot);
    4. write the snapshot, the settlement, the decision and every planned command (the intent,
       with the ledger rows of the holds about to be placed) in one transaction;
    5. apply when asked, recording each command's outcome as soon as it is known, all under one
       deadline (agent.tick_deadline): what is not run by then is recorded as skipped;
    6. the tick's outcome; then the fit and the published file when asked.
    A kill at any point leaves the history consistent, and the next tick settles the rest."""
    started = time.time() if now is None else now
    if deadline is None:  # time.monotonic() past which no command starts (several clusters share one)
        deadline = time.monotonic() + (cfg.tick_deadline_s if cfg is not None else 300.0)
    cluster = source.cluster or name
    run = getattr(source, "run", None)
    acting = bool(stages.control or stages.gate or stages.off)
    if apply and acting and run is None:
        raise UnsafeActionError(f"cannot apply to {source.describe()}: only a live cluster can be changed")
    if hasattr(source, "deadline"):
        source.deadline = deadline
    tick_id = None
    try:
        snap = read_snapshot(source, lambda c: store.previous_snapshot_time(db, c))
        cluster = snap.cluster
        limits_read = quota.read_limits(source, source.cluster)  # a separate read: None when it fails
        if run is not None or not apply:  # (an --apply on a recorded sample stays a read)
            stages = _gate_off_named(db, stages, cluster, cfg.cluster(cluster) if cfg is not None else None)
            acting = bool(stages.control or stages.gate or stages.off)
        if acting and cfg is not None and cfg.clusters and cluster not in cfg.clusters:
            raise ConfigError(f"the config names cluster(s) {', '.join(sorted(cfg.clusters))}, but Slurm's ClusterName is "
                              f"{cluster}: name the table [clusters.{cluster}] (nothing was done)")
        cc = cfg.cluster(cluster) if cfg is not None else None
        if cc is not None and store.previous_snapshot_time(db, cluster) is None:
            diagnose.first_tick_findings(snap, cc)  # the agent's first tick here, whatever its stages: logged
        # only a tick that may act settles (under the agent lock: never beside a tick in flight)
        settled = executor.settle(db, snap) if acting else executor.NOTHING_SETTLED
        off = store_ledger.get_state(db, cluster, "acting_off") if acting else None
        if stages.off:
            ctl = _decide_off(db, snap, cc)
            gplan = _decide_gate(snap, cc, settled.ledger, True)
        else:
            ctl = _decide_control(db, snap, cc, off) if stages.control else None
            gplan = (_decide_gate(snap, cc, settled.ledger, stages.release_all or off is not None, gate_off=stages.gate_off)
                     if stages.gate else None)
        # the previous snapshot's usage, for the halving Slurm used (_halving_slurm_used): read from
        # assoc_current before this snapshot's values replace them (used only if it is the
        # snapshot of the previous decision, which the transaction below reads)
        latest_usage = store.latest_usage_values(db, snap.cluster) if ctl is not None and ctl[0] is not None else None
        with store.transaction(db):
            sid = store.write_snapshot(db, snap, source=source.describe())
            quota.record(db, cluster, sid, limits_read)
            if acting:  # a tick killed mid-run left its row 'running': it ended without an outcome
                db.execute("UPDATE ticks SET status = 'failed', error = 'ended without recording its outcome (killed?)' "
                           "WHERE cluster = ? AND status = 'running'", [cluster])
            tick_id = store.record_tick(db, cluster, started, None, "running", snapshot_id=sid, stage=stages.label)
            executor.write_settlement(db, cluster, settled, snap.taken_at)
            did = None
            c_ids: list[int] = []
            if ctl is not None:
                dec, c_plan = ctl
                if dec is not None:
                    previous = store_ledger.last_decision(db, cluster)
                    if previous is not None:
                        store_ledger.set_measured_effect(db, previous["id"], dec.h_now,
                                                *_halving_slurm_used(db, previous, snap, latest_usage))
                    did = store_ledger.write_decision(db, cluster, sid, snap.taken_at, dec, apply)
                    store_ledger.set_state(db, cluster, PASS_READ, _pass_read(snap, sid), snap.taken_at)
                    if cc is not None and cc.padding_mode == "trim":
                        from fscontrol.agent import trimpad

                        if trimpad.active(cc):
                            trimpad.record_control(db, snap, cc)
                c_ids = executor.write_plan(db, cluster, did, "off" if stages.off else "control", c_plan,
                                            apply_it=apply, at=snap.taken_at, tick_id=tick_id)
                if apply:
                    executor.record_originals(db, cluster, snap, c_plan)
            if apply and stages.off:  # from now on this cluster's ticks act on nothing until `control on`
                store_ledger.set_state(db, cluster, "acting_off", {"by": stages.off, "at": snap.taken_at}, snap.taken_at)
            g_ids: list[int] = []
            if gplan is not None:
                g_ids = executor.write_plan(db, cluster, None, "gate", gplan[1], apply_it=apply, at=snap.taken_at,
                                            tick_id=tick_id)
                if gplan[0].accounts:  # a gate decision (not a release-all): its table, for `why` on a held job
                    store_ledger.set_state(db, cluster, "gate_table", gate_table(gplan[0]), snap.taken_at)
                if apply:
                    store_ledger.write_ledger(db, cluster, executor.ledger_intent(settled.ledger, gplan[0], snap), gplan[2],
                                       snap.taken_at)
    except FscontrolError as e:
        _record_failure(db, cluster, stages.label, started, e, tick_id)
        raise
    except Exception as e:  # a bug must not stop the other clusters or leave a tick 'running'
        err = InternalError(f"internal error in the {stages.label} tick of {cluster or 'the cluster'}: {type(e).__name__}: {e}")
        _record_failure(db, cluster, stages.label, started, err, tick_id)
        raise err from e

    control_res = gate_res = None
    error: FscontrolError | None = None
    try:
        if ctl is not None:
            dec, c_plan = ctl
            done, verified = tuple(c_plan), None
            if apply and c_plan:
                done = tuple(executor.apply(db, run, c_plan, c_ids, deadline, dependent=not stages.off))
            if apply and stages.off and not any(a.kind == "restore_conf_damping" and a.status in ("failed", "unknown", "skipped")
                                                for a in done):
                with store.transaction(db):  # slurm.conf holds no line of the agent's now (put back, or not its own)
                    store_ledger.forget_original(db, cluster, "slurm_conf_damping")
                    store_ledger.set_state(db, cluster, "persist_written", None, snap.taken_at)
            if apply and dec is not None:  # (persist: slurm.conf when a restart would start too far off, even
                # at a tick that leaves d as it is: an earlier write may have waited for persist_interval)
                done, verified = executor.persist_and_verify(db, source, run, cc, dec, did, done, tick_id,
                                                             conf_path=snap.config.raw.get("SLURM_CONF"), now=snap.taken_at,
                                                             deadline=deadline)
            if apply and verified is None and any(a.kind == "set_damping" and a.status == "ok" for a in done):
                verified = parse.parse_config(source.config().stdout).damping_factor  # (control off: d put back)
            if verified is not None:  # the d this tick left in slurmctld: what publish says (not the snapshot's)
                with store.transaction(db):
                    store_ledger.set_state(db, cluster, "damping_in_force", {"d": verified, "at": snap.taken_at}, snap.taken_at)
            control_res = ControlResult(cluster, sid, did, dec, done, apply, verified, snap.config.mode,
                                        sum(1 for r in snap.shares if r.is_user))
        if gplan is not None:
            plan, g_acts, _ = gplan
            done = tuple(g_acts)
            if apply and g_acts:
                done = tuple(executor.apply(db, run, g_acts, g_ids, deadline, dependent=False, cluster=cluster))
            gate_res = GateResult(cluster, sid, plan, done, apply, _gate_off_note(stages, settled.ledger, done, apply))
    except FscontrolError as e:
        error = e
    except Exception as e:
        error = InternalError(f"internal error applying the {stages.label} tick of {cluster}: {type(e).__name__}: {e}")
    failed = error is not None or any(a.status in ("failed", "unknown") for r in (control_res, gate_res) if r for a in r.actions)
    with store.transaction(db):
        store.update_tick(db, tick_id, "failed" if failed else "ok", time.time(),
                          str(error) if error else ("an action failed or timed out" if failed else None))
    if error is not None:
        raise error

    fitted = None
    if stages.fit and cfg is not None and fit_due(db, cluster, cfg.schedule["fit"], started):
        try:
            _, _, fitted = fitting.fit_history(db, cluster, now=started)
        except NotFoundError:
            fitted = None  # not enough history yet: not a failed tick; tried again in schedule.fit
            with store.transaction(db):
                store_ledger.set_state(db, cluster, "fit_attempt", {"at": started}, started)
    published = None
    if stages.publish and cfg is not None and cfg.publish_dir:
        published = str(publishing.publish_latest(db, cfg, cluster, source=source,
                                                  damping=control_res.verified_damping if control_res else None)[0])
    return TickResult(cluster, tick_id, CollectResult(sid, snap), control_res, fitted, gate_res, published,
                      settled.changes)


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
    padding_mode = "trim": d and the padding together (agent/trimpad.py); `pass_at`, the coming
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
        # the last read before the pass: the halving Slurm used is recorded from it (_halving_slurm_used)
        accounts = parse.parse_account_usage(out.stdout, " ".join(out.argv))
        read.update(at=out.finished_at, mid=(out.started_at + out.finished_at) / 2, raw=float(total), by="trim",
                    control_at=read.get("control_at", read["at"]), control_raw=read.get("control_raw", read["raw"]),
                    top_raw={a: float(accounts[a]) for a in read.get("top") or () if a in accounts})
        with store.transaction(db):
            store_ledger.set_state(db, cluster, PASS_READ, read, out.finished_at)
    if total <= 0:
        return None
    from fscontrol.agent import trimpad

    if trimpad.active(cc):  # d and the padding into this pass's own read, together
        return trimpad.trim(source, db, cc, cluster, last, d_last, float(total), started, apply, cfg.slurm_timeout_s,
                            pass_at=pass_at)
    ideal = cc.target_usage / (float(last["s_ref"]) * total)
    d = control.clamp_d(round(ideal)) if cc.method == "hybrid" else control.choose_damping(ideal, d_last, cc.hysteresis)
    d = min(d, cc.max_damping)  # never above the config's bound (as the control tick)
    if d == d_last:
        return None
    a = act.set_damping(d, f"trim before the pass: root's RawUsage {total} ({total / 3600:,.2f} core-hours), ideal d {ideal:.2f} "
                           f"(the control tick had set {d_last})")
    return executor.one_action_tick(db, source.run, cluster, "trim", a, apply, started, cfg.slurm_timeout_s)


PASS_READ = "pass_read"  # agent_state: the agent's last read of root's usage before a decay pass


def _pass_read(snap: Snapshot, sid: int) -> dict:
    """What a control tick read before the coming pass, for the halving that pass used
    (_halving_slurm_used): root's RawUsage and when, the pass before it, and when each running job
    started (a job that ends before the pass charges its tail from the later of its start and
    that pass). The trim (trim_damping) replaces `raw`/`at` with its later read."""
    root = snap.root
    top = sorted((r for r in snap.shares if r.depth == 1 and not r.user and not r.shares_parent),
                 key=lambda r: -r.raw_usage)[:TOP_ACCOUNTS]
    return {"snapshot_id": sid, "at": snap.taken_at, "raw": float(root.raw_usage) if root else None,
            "pass_before": snap.usage_at, "by": "control", "top": [r.account for r in top if r.raw_usage > 0],
            "running": {q.job_id: q.start for q in snap.queue if q.state == "RUNNING" and q.start is not None}}


TOP_ACCOUNTS = 20  # the trim reads root's usage and that of the 20 largest top-level accounts (one sshare)


def _halving_slurm_used(db: Database, previous: dict, snap: Snapshot,
                        latest_usage: tuple[int | None, list[tuple]] | None = None) -> tuple[float | None, float | None]:
    """The halving Slurm's priorities used at the decay pass between the previous decision and
    this snapshot, if one ran: S_ref x the d in force now x the total usage that pass started
    from (EffectvUsage is computed from the usage the pass before left). A pass shows as any
    user's EffectvUsage moving. (None, None) when no pass ran in between, or when more than one
    did (a restart's start-up pass and a regular one: what the first read is not known).

    The usage the pass started from (issue 30): the agent's last read before the pass (the
    control tick's, or the trim's if it read later and finished before the pass), plus the tail
    every job that ended between that read and the pass was charged at its end
    (decay.usage_read_at_pass, from the jobs sacct shows in the snapshots since). Where the pass's
    time cannot be read (slurmctld's record not readable here) the control tick's read alone.
    `latest_usage`: store.latest_usage_values read before this snapshot was written (used when
    the previous decision's snapshot is that one, as at every tick after a tick)."""
    from fscontrol.model import decay

    if latest_usage is not None and latest_usage[0] == previous["snapshot_id"]:
        before = latest_usage[1]
    else:
        row = db.execute("SELECT cluster FROM snapshots WHERE id = ?", [previous["snapshot_id"]]).fetchone()
        if row is None:
            return None, None
        before = store.usage_values(db, row[0], previous["snapshot_id"])  # (account, user, depth, raw_usage, effective_usage)
    ue_before = {(a, u): eff for a, u, _, _, eff in before if u}
    ue_now = {r.key: r.effective_usage for r in snap.shares if r.user}
    if ue_before == ue_now or previous.get("s_ref") is None:
        return None, None
    root = next((r for r in before if r[2] == 0), None)  # one root a cluster (parse_sshare: depth 0 is root alone)
    if root is None:
        return None, None
    used = float(root[3])
    read = store_ledger.get_state(db, snap.cluster, PASS_READ)
    pass_at = snap.usage_at
    if read and read.get("snapshot_id") == previous["snapshot_id"] and read.get("raw") is not None and pass_at is not None:
        period = snap.config.calc_period_s
        control_at = float(read.get("control_at", read["at"]))
        p_before = read.get("pass_before")
        if pass_at - control_at > period + 1.0 or (p_before is not None and pass_at - float(p_before) > period + 1.5):
            # more than one pass since the pass before the read (a restart's start-up pass and a
            # regular one): which one read what is not known
            return None, None
        read_at, raw = float(read["at"]), float(read["raw"])
        if read_at > pass_at:  # the trim's read finished after the pass: the control tick's
            read_at, raw = control_at, float(read.get("control_raw", raw))
        p0 = read.get("pass_before")
        p0 = float(p0) if p0 is not None else pass_at - period
        started = read.get("running") or {}
        by_control = read_at == control_at
        mid = float(read.get("mid", read_at)) if not by_control else read_at
        uf = {q.name: q.usage_factor for q in snap.qos}
        ended = {}
        for job_id, qos, billing, cpus, start, end in db.execute(
                "SELECT j.job_id, j.qos, j.billing, j.alloc_cpus, j.start, j.end FROM job_usage j "
                "JOIN snapshots s ON s.id = j.snapshot_id WHERE s.cluster = ? AND j.snapshot_id > ? "
                "AND j.state != 'RUNNING' AND j.end >= ? AND j.end < ?",
                [snap.cluster, previous["snapshot_id"], math.floor(read_at) - 1, pass_at]):
            t0 = started.get(job_id, start)
            if t0 is None:
                continue
            # sacct's End is a whole second (the job ended within the second after it). A job that
            # ended in the pass's own second ended after the pass began (seen on the testbed: 6 of 6
            # such jobs in a busy run were not in what the pass read). A job the
            # control tick's squeue (run after its sshare) still saw running ended after that read;
            # otherwise it ended after a read that ran before End + 0.5 s (mid: the read's midpoint)
            if not ((by_control and job_id in started) or float(end) + 0.5 >= mid):
                continue
            ended[job_id] = (max(float(t0), p0), float(end), float(billing or cpus or 0) * uf.get(qos, 1.0))
        used = decay.usage_read_at_pass(raw, -math.inf, pass_at, ended.values(), snap.config.half_life_s)
        trim_top = read.get("top_raw") if not by_control else None
        if trim_top and len(trim_top) >= 2:
            # the trim read the top-level accounts a second before the pass: one of them no job
            # touched in that second gives root's usage at the pass exactly (no job's end time needed)
            by_accounts = _root_used_by_accounts(trim_top, snap)
            if by_accounts is not None:
                return previous["s_ref"] * _damping_at_pass(db, previous, snap, pass_at) * by_accounts, snap.taken_at
    by_accounts = _root_used_by_accounts({a: float(raw) for a, u, depth, raw, _ in before if not u and depth == 1}, snap)
    if by_accounts is not None and by_accounts > used:
        used = by_accounts  # a job ended after the last read but before the pass (in the pass's own second)
    return previous["s_ref"] * _damping_at_pass(db, previous, snap, pass_at) * used, snap.taken_at


def _damping_at_pass(db: Database, previous: dict, snap: Snapshot, pass_at: float | None) -> int:
    """The d slurmctld held at the pass: the d this snapshot read after it, unless the agent
    itself changed d between the pass and this read (`control off` putting d back, a tick of the
    loop after it): then the d its last change before the pass left, else the d the previous
    decision read. An outside tester saw `control off` 56 s after a pass make the record use
    the restored d=1 where Slurm had used 11 (-90.91% for -0.1%)."""
    d = snap.config.damping_factor
    if pass_at is None:
        return d
    sets = store_ledger.damping_sets(db, snap.cluster, float(previous["decided_at"]), snap.taken_at)
    if not any(at > pass_at for at, _, _ in sets):
        return d
    before = [x for at, _, x in sets if at <= pass_at]
    if before:
        return before[-1] if before[-1] is not None else int(previous["d_now"] or d)
    return int(previous["d_now"] or d)


def _root_used_by_accounts(raw_before: Mapping[str, float], snap: Snapshot, min_effective: float = 0.01) -> float | None:
    """Root's usage as the pass used it, read from the top-level accounts (issue 30 item 2): a
    classic pass sets each account's EffectvUsage to its RawUsage over root's, both as they stand
    when the pass starts (priority_multifactor.c: _set_children_usage_efctv runs before the decay
    and the running jobs' charges). So an account's RawUsage at the last read before the pass over
    its EffectvUsage after it is root's usage at the pass exactly when no job of that account
    ended in between, and less when one did (its tail is charged at its end). The largest over the
    top-level accounts (not FairShare=parent; EffectvUsage >= `min_effective`, where sshare's six
    decimals are within 0.005 points) is a lower bound that is exact as soon as one account had no
    job ending in those seconds; it needs no job's end time, whose whole second cannot tell a job
    that ended just before the pass from one that ended just after. `raw_before`: each top-level
    account's RawUsage at that read (the trim's, or the control tick's snapshot). None under Fair Tree or depth
    oblivious (another EffectvUsage), or without such an account."""
    if snap.config.mode != "classic":
        return None
    best = None
    for r in snap.shares:
        if r.depth != 1 or r.user or r.shares_parent or r.effective_usage is None or r.effective_usage < min_effective:
            continue
        raw = raw_before.get(r.account)
        if raw:
            u = raw / r.effective_usage
            best = u if best is None else max(best, u)
    return best


def _decide_off(db: Database, snap: Snapshot, cc):
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


def _pass_plan(db: Database, snap: Snapshot, method: str) -> dict:
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


def _decide_control(db: Database, snap: Snapshot, cc, off=None):
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
        **_pass_plan(db, snap, cc.method),
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


def _decide_gate(snap: Snapshot, cc, rec, release_all: bool, gate_off: str | None = None):
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
                              parents={r.account: r.parent for r in snap.shares if not r.user and r.parent})
        if rec.cleanup:
            plan = replace(plan, actions=tuple(rec.cleanup) + plan.actions)
    acts = [act.Action(a.kind, a.argv, a.reason, job_id=a.job_id) for a in plan.actions]
    return plan, acts, {a.job_id: a.reason for a in plan.actions}


def gate_table(plan) -> dict:
    """What a gate tick records of its decision for `fscontrol why` (agent_state 'gate_table')."""
    return {"decided_at": plan.now, "action": plan.action, "unit": plan.unit, "under_waiting": len(plan.under_waiting),
            "accounts": {a.account: [a.occupancy, a.target, a.state] for a in plan.accounts if a.target is not None}}


# ---------------------------------------------------------------------------- the SFS gate
@dataclass(frozen=True, slots=True)
class GateResult:
    cluster: str
    snapshot_id: int
    plan: object  # gate.GatePlan
    actions: tuple  # actions.Action with statuses
    applied: bool
    note: str | None = None  # one line for the tick's report (the gate turned off: what was released, or why not)

