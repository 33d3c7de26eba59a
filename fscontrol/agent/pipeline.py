"""The one place the stages are composed, top to bottom:

    source -> parse -> model -> control / gate -> plan -> apply -> store -> report

`collect` reads and parses everything first and writes only when all of it parsed, in one
transaction: a failed or garbled command leaves the history as it was and records a failed tick.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import sqlite3
import time
from collections.abc import Callable

from fscontrol.act import executor, lock
from fscontrol.agent import decide, diagnose, fitting, publishing, quota, trimpad
from fscontrol.agent.decide import advise_reason, gate_table, running_billings  # noqa: F401 - their names here too
from fscontrol.agent.decide import decide_off as _decide_off  # noqa: F401 - (tests' name)
from fscontrol.agent.trimpad import trim_damping, watch_damping  # noqa: F401 - the loop's steps, named here too
from fscontrol.model import decay
from fscontrol.slurm import parse
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.store import loaders as store_loaders
from fscontrol.errors import (ConfigError, FscontrolError, InternalError, NotFoundError, ParseError, StoreError,
                              UnsafeActionError)
from fscontrol.store.connection import Database
from fscontrol.snaprecords import Snapshot
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
    fit: object | None  # model.fit.FitResult when a fit was due and there was enough history
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
    tried = (store_ledger.get_state(db, cluster, "fit_attempt") or {}).get("at")
    times = [t for t in (store.last_fit_time(db, cluster), tried) if t is not None]
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
        if apply and acting and run is not None:  # one lock per cluster, whatever config or -M (act/lock.py)
            lock.check_lock_key(db, cluster, snap.taken_at)
        cc = cfg.cluster(cluster) if cfg is not None else None
        if cc is not None and store.previous_snapshot_time(db, cluster) is None:
            diagnose.first_tick_findings(snap, cc)  # the agent's first tick here, whatever its stages: logged
        # only a tick that may act settles (under the agent lock: never beside a tick in flight)
        settled = executor.settle(db, snap) if acting else executor.NOTHING_SETTLED
        off = store_ledger.get_state(db, cluster, "acting_off") if acting else None
        if stages.off:
            ctl = decide.decide_off(db, snap, cc)
            gplan = decide.decide_gate(snap, cc, settled.ledger, True)
        else:
            ctl = decide.decide_control(db, snap, cc, off) if stages.control else None
            gplan = (decide.decide_gate(snap, cc, settled.ledger, stages.release_all or off is not None, gate_off=stages.gate_off)
                     if stages.gate else None)
        # the previous snapshot's usage, for the halving Slurm used (halving_slurm_used): read from
        # assoc_current before this snapshot's values replace them (used only if it is the
        # snapshot of the previous decision, which the transaction below reads)
        latest_usage = store.latest_usage_values(db, snap.cluster) if ctl is not None and ctl[0] is not None else None
        with store.transaction(db):
            sid = store.write_snapshot(db, snap, source=source.describe())
            quota.record(db, cluster, sid, limits_read)
            if acting:  # a tick killed mid-run left its row 'running': it ended without an outcome
                store.fail_running_ticks(db, cluster, "ended without recording its outcome (killed?)")
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
                                                *halving_slurm_used(db, previous, snap, latest_usage))
                    did = store_ledger.write_decision(db, cluster, sid, snap.taken_at, dec, apply)
                    store_ledger.set_state(db, cluster, trimpad.PASS_READ, trimpad.pass_read(snap, sid), snap.taken_at)
                    if cc is not None and trimpad.active(cc):
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

    _keep_status_basis(db, sid, snap)
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


def halving_slurm_used(db: Database, previous: dict, snap: Snapshot,
                       latest_usage: tuple[int | None, list[tuple]] | None = None) -> tuple[float | None, float | None]:
    """The halving Slurm's priorities used at the decay pass between the previous decision and
    this snapshot (decay.halving_used: the rule), from what the history holds: the previous
    decision's snapshot's usage, the agent's last read before the pass (trimpad.PASS_READ) and the
    jobs sacct showed end since. `latest_usage`: store.latest_usage_values read before this
    snapshot was written (used when the previous decision's snapshot is that one, as at every
    tick after a tick)."""
    if latest_usage is not None and latest_usage[0] == previous["snapshot_id"]:
        before = latest_usage[1]
    else:
        cluster = store_loaders.snapshot_cluster(db, previous["snapshot_id"])
        if cluster is None:
            return None, None
        before = store.usage_values(db, cluster, previous["snapshot_id"])  # (account, user, depth, raw_usage, effective_usage)

    def ended_since(start: float, end: float) -> list[tuple]:
        return store_loaders.ended_jobs(db, snap.cluster, previous["snapshot_id"], start, end)

    return decay.halving_used(previous, snap, before, store_ledger.get_state(db, snap.cluster, trimpad.PASS_READ),
                              ended_since, lambda pass_at: _damping_at_pass(db, previous, snap, pass_at))


# ---------------------------------------------------------------------------- the SFS gate
@dataclass(frozen=True, slots=True)
class GateResult:
    cluster: str
    snapshot_id: int
    plan: object  # gate.GatePlan
    actions: tuple  # actions.Action with statuses
    applied: bool
    note: str | None = None  # one line for the tick's report (the gate turned off: what was released, or why not)



def _keep_status_basis(db: Database, sid: int, snap: Snapshot) -> None:
    """What classic `status` computes from the snapshot's rows alone (report.status.classic_basis)
    at the d status will use (the snapshot's, or the one this tick read back after acting),
    computed once, from the rows the tick holds in the order the history reads them back, and
    kept with the snapshot (store.history.save_status_basis): at 100,000 associations a quarter
    of `status --json`, and of the metrics' and publish's (issue #31). Fair Tree's status has its
    own maths."""
    if snap.config.mode == "fair_tree":
        return
    from fscontrol.report import status as rstatus
    from fscontrol.report.control import damping_after

    d = damping_after(store_ledger.control_state(db, snap.cluster), snap.taken_at) or snap.config.damping_factor
    try:
        with store.transaction(db):
            store.save_status_basis(db, snap.cluster, sid, snap.shares, lambda rows, prio: rstatus.classic_basis(rows, prio, d))
    except StoreError:  # the history busy past its timeout, or a table of another shape: the tick's work is
        pass  # done and kept; status computes the basis itself
