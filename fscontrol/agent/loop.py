"""The agent around the pipeline: a tick over every cluster it serves (cron), and the APScheduler
3.x loop (`fscontrol run`). Both call pipeline.run_tick for each cluster; this module only adds
the lock, the per-cluster isolation (one cluster's failure never stops another's tick), the
metrics file, and a clean stop.

A cluster's work happens under the agent lock, so a cron tick and the loop never overlap: the
loop skips a run whose lock is held (and says so), cron's second tick exits 5.
"""

from __future__ import annotations

from dataclasses import dataclass
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

from fscontrol.agent import pipeline, publishing, trimpad
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.errors import FscontrolError, InternalError, LockedError
from fscontrol.act import lock
from fscontrol.act.lock import agent_lock
from fscontrol.slurm.source import SlurmSource


PAD_AFTER_PASS_S = 1.0  # padding_mode = "trim": the next padding job this long after the pass


class _Log:
    """The agent's logger, made when the service first logs (cron's tick never does: no logging import)."""

    def __getattr__(self, name: str):
        import logging

        return getattr(logging.getLogger("fscontrol.agent.loop"), name)


log = _Log()

SourceFactory = Callable[[str | None], SlurmSource]


@dataclass(frozen=True, slots=True)
class ClusterOutcome:
    cluster: str | None
    result: pipeline.TickResult | None = None
    error: FscontrolError | None = None


def clusters_to_serve(cfg, cluster: str | None, live: bool) -> list[str | None]:
    """-M NAME: that cluster. Several clusters in the config (live): each of them, by -M.
    Otherwise the one cluster the Slurm commands reach by default (no -M)."""
    if cluster:
        return [cluster]
    if live and len(cfg.clusters) > 1:
        return sorted(cfg.clusters)
    return [None]


def setup(config_path: Path | None, db: Path | None, source: str, cluster: str | None, defaults: bool | None = None):
    """The agent commands' options as what they run on: the config, the history's path, the
    clusters to serve and a source per cluster (its --source, each Slurm command within the
    config's slurm_timeout). `defaults` (tick and run: their --defaults): without a config file
    (--config or $FSCONTROL_CONFIG) the agent refuses to start unless it is True; None (control,
    gate): the defaults are fine."""
    from fscontrol.agent import config
    from fscontrol.errors import ConfigError
    from fscontrol.slurm.source import from_spec

    if defaults is False and config_path is None:
        raise ConfigError("no config file: give --config FILE (or set $FSCONTROL_CONFIG), or --defaults to run on the "
                          "built-in defaults (`fscontrol config check --json` lists them)")
    if defaults and config_path is not None:
        raise ConfigError(f"--defaults runs without a config file, and {config_path} is given (--config or "
                          "$FSCONTROL_CONFIG): give one of them")
    cfg = config.load(config_path)
    clusters = clusters_to_serve(cfg, cluster, source == "live")
    return cfg, config.history_path(cfg, db), clusters, (lambda name: from_spec(source, name, cfg.slurm_timeout_s))


@dataclass(frozen=True, slots=True)
class ControlRun:
    """What `fscontrol control` did: the cluster, its tick (None for `control on`), and whether it
    was asked to act (the command's --apply or, except for `control off`, the config's agent.apply);
    for `control on`, whether the agent was off (and now acts again) or was not (nothing changed)."""

    cluster: str | None
    tick: pipeline.TickResult | None
    apply: bool
    was_off: bool | None = None


def control(cfg, make_source: SourceFactory, db_path: Path, name: str | None, *, switch: str | None,
            apply: bool) -> ControlRun:
    """`fscontrol control [off|on]`. No switch: one tick that plans the control and acts when
    `apply` (the command's --apply) or the config's agent.apply says so. "off": one tick that
    undoes what the agent did and stops it acting, carried out only with `apply`: the config's
    agent.apply is for the agent's ticks, `control off` always plans unless told --apply on its
    own command line (issue #30). "on": the agent acts again from its next tick (set_acting), or,
    when it was not off, nothing changes (was_off False)."""
    if switch == "on":
        cluster, was_off = set_acting(cfg, db_path, name, by=None)
        return ControlRun(cluster, None, False, was_off=was_off)
    if switch == "off":
        stages, acts = pipeline.Stages(off="control off"), apply
    else:
        stages, acts = pipeline.Stages(control=True), apply or cfg.apply
    tick = one_tick(cfg, make_source, db_path, name, apply=acts, stages=stages, metrics=False)
    return ControlRun(tick.cluster, tick, acts)


def lock_path(cfg, db_path: Path, name: str | None = None) -> Path:
    """The cluster's lock (act/lock.py): keyed to the cluster (lock.lock_key), beside the agent's history."""
    return lock.cluster_lock_path(cfg, db_path, name)


def _locked(cfg, db_path: Path, name: str | None, *, apply: bool = False, source: SlurmSource | None = None,
            doing: str = "--apply"):
    """The cluster's agent lock, taken only once the history's folder is known to exist (the lock
    sits beside the history: taking it first would make the folder of a mistyped --db). With
    `apply` on a live source, only the agent's own history may act (lock.check_agent_history;
    `doing` names the command in its refusal). The cluster is -M's, else the source's (a recorded
    sample names its own)."""
    key = lock_path(cfg, db_path, name or getattr(source, "cluster", None))  # which cluster? before anything is made
    store.ensure_db_folder(db_path)
    if apply and (source is None or getattr(source, "run", None) is not None):
        lock.check_agent_history(cfg, db_path, doing)
    return agent_lock(key)


def tick(cfg, make_source: SourceFactory, db_path: Path, clusters: list[str | None], *, apply: bool,
         force_control: bool = True, gate: bool = True, control: bool = True) -> list[ClusterOutcome]:
    """One tick of every cluster, each under its cluster's lock (LockedError when another tick
    holds the only cluster's; with several, that cluster's outcome); each cluster's failure is
    recorded and reported, the others go on; then the metrics file."""
    outcomes = []
    deadline = time.monotonic() + cfg.tick_deadline_s  # one budget for the whole tick, every cluster
    for name in clusters:
        source = make_source(name)
        with ExitStack() as held:
            try:  # the lock and the history: with one cluster, their error is the tick's (cron exits 5 on a held lock)
                held.enter_context(_locked(cfg, db_path, name, apply=apply, source=source))
                db = store.open_db(db_path)
                held.callback(db.close)
            except FscontrolError as e:
                if len(clusters) == 1:
                    raise
                outcomes.append(ClusterOutcome(name, error=e))
                continue
            try:
                res = pipeline.agent_tick(source, db, cfg, apply=apply, force_control=force_control, gate=gate,
                                          control=control, deadline=deadline)
                outcomes.append(ClusterOutcome(res.cluster, result=res))
            except FscontrolError as e:  # run_tick turns every other exception into InternalError
                outcomes.append(ClusterOutcome(name, error=e))
            except Exception as e:  # noqa: BLE001 - a bug in one cluster's tick never stops the others
                outcomes.append(ClusterOutcome(name, error=InternalError(f"internal error: {type(e).__name__}: {e}")))
    try:
        if cfg.metrics:  # after every cluster, outside their locks (the textfile is replaced atomically)
            db = store.open_db(db_path)
            try:
                publishing.write_metrics(db, cfg)
            finally:
                db.close()
    except FscontrolError as e:
        outcomes.append(ClusterOutcome(None, error=e))
    except Exception as e:  # noqa: BLE001
        outcomes.append(ClusterOutcome(None, error=InternalError(f"internal error writing the metrics: {type(e).__name__}: {e}")))
    return outcomes


def one_tick(cfg, make_source: SourceFactory, db_path: Path, name: str | None, *, apply: bool,
             stages: pipeline.Stages, metrics: bool = True) -> pipeline.TickResult:
    """One tick of one cluster with the given stages, under the agent lock (`fscontrol control`,
    `fscontrol gate`, the loop's gate job and the stop-time release)."""
    source = make_source(name)
    with _locked(cfg, db_path, name, apply=apply, source=source):
        db = store.open_db(db_path)
        try:
            res = pipeline.run_tick(source, db, cfg, apply=apply, stages=stages, name=name)
            if metrics:
                publishing.write_metrics(db, cfg)
            return res
        finally:
            db.close()


def set_acting(cfg, db_path: Path, name: str | None, *, by: str | None) -> tuple[str, bool]:
    """`fscontrol control on` (by=None) clears the cluster's "acting off" switch; the loop's start
    clears only the one its own stop set (by="on_stop"). Returns the cluster's name and whether a
    switch was cleared (False: the agent was not off, or off by another's hand, and nothing changed). `control on`
    switches only the agent's own history (lock.check_agent_history): on another it would make a
    history and a lock of its own, say the agent acts again, and leave the agent off."""
    with _locked(cfg, db_path, name, apply=by is None, doing="control on"):
        db = store.open_db(db_path)
        try:
            names = [name] if name else (sorted(cfg.clusters) or store.clusters(db))
            if len(names) != 1:
                from fscontrol.errors import NotFoundError

                raise NotFoundError(f"which cluster? pick one with -M: {', '.join(names) or 'none known'}")
            cluster = names[0]
            if by is None:  # `control on`: from now on acting commands on the cluster take this lock
                lock.check_lock_key(db, cluster, time.time(), reset=True)
            state = store_ledger.get_state(db, cluster, "acting_off")
            cleared = state is not None and (by is None or state.get("by") == by)
            if cleared:
                with store.transaction(db):
                    store_ledger.set_state(db, cluster, "acting_off", None, time.time())
                    written = store_ledger.get_state(db, cluster, "persist_written")
                    if written and written.get("at") is not None:  # off/on resets persist_interval: the
                        # first tick after `control on` persists a changed d at once (issue #30)
                        store_ledger.set_state(db, cluster, "persist_written", dict(written, at=None), time.time())
            return cluster, cleared
        finally:
            db.close()


def gate_only(cfg, make_source: SourceFactory, db_path: Path, name: str | None, *, apply: bool, release_all: bool = False,
              metrics: bool = True):
    """The loop's gate job (and the stop-time release), and `fscontrol gate` (no metrics file):
    one gate tick under the lock."""
    return one_tick(cfg, make_source, db_path, name, apply=apply, stages=pipeline.Stages(gate=True, release_all=release_all),
                    metrics=metrics).gate


def run_loop(cfg, make_source: SourceFactory, db_path: Path, clusters: list[str | None], *, apply: bool,
             stop: threading.Event, on_tick: Callable[[str, list[ClusterOutcome]], None] | None = None) -> dict:
    """Run until `stop` is set (the CLI sets it on SIGTERM/SIGINT): per cluster one job every
    schedule.collect (collect; control, fit when due; publish) and, where the gate is enabled, one
    every schedule.gate. One worker thread: jobs never overlap, a late job is coalesced, not
    stacked. On stop the running job finishes; with release_on_stop the agent's holds are
    released. Returns counts of ok / failed / skipped runs."""
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.background import BackgroundScheduler

    counts = {"ok": 0, "failed": 0, "skipped": 0}
    count_lock = threading.Lock()

    # the name slurmctld reports for each cluster served (None: the one the commands reach by
    # default, no -M), learnt from each tick's snapshot: the log names the cluster (issue #30:
    # "control None ok" for a named cluster)
    reported: dict[str | None, str] = {}

    def called(name: str | None) -> str:
        # before a tick has read slurmctld's name: the config's one cluster, if it names one
        return name or reported.get(name) or cfg.cluster(None).name or "(default cluster)"

    def note(stage: str, outcomes: list[ClusterOutcome], name: str | None = None) -> None:
        with count_lock:
            for o in outcomes:
                counts["failed" if o.error else "ok"] += 1
                if o.result is not None and o.result.cluster:
                    reported[name] = o.result.cluster
        for o in outcomes:
            who = o.cluster or (o.result.cluster if o.result is not None else None) or called(name)
            if o.error:
                log.error("%s %s failed: %s", stage, who, o.error)
            else:
                log.info("%s %s ok", stage, who)
            ctl = o.result.control if o.result is not None else None
            for a in (ctl.actions if ctl is not None else ()):  # persist impossible: every tick says so
                if a.status == "refused":
                    log.warning("%s %s: %s refused: %s", stage, who, a.kind, a.output)
                elif a.status == "held":  # slurm.conf lags the runtime d until persist_interval ends
                    log.info("%s %s: %s %s", stage, who, a.kind, a.output)
        if on_tick:
            on_tick(stage, outcomes)

    aligned: dict[str | None, bool] = {}  # clusters whose control runs just before each decay pass
    # APScheduler 3's shutdown(wait=True) holds the job stores' lock while it waits for the running
    # job; a job that then schedules its successor (pass_job) would wait on that lock for ever. So
    # once the stop begins no job adds a job (the guard makes "check, then add" one step), and a
    # job queued behind the running one does not start.
    guard = threading.Lock()
    closing = threading.Event()

    def later(fn, run_date: datetime, job_id: str, name: str | None, **kw) -> None:
        with guard:
            if not closing.is_set():
                sched.add_job(fn, "date", run_date=run_date, args=[name], id=job_id, replace_existing=True, **kw)

    def unless_closing(fn):
        def job(name: str | None) -> None:
            if not closing.is_set():
                fn(name)
        job.__name__ = fn.__name__
        return job

    @unless_closing
    def cycle_job(name: str | None) -> None:
        try:
            note("tick", tick(cfg, make_source, db_path, [name], apply=apply, force_control=False, gate=False,
                              control=not aligned.get(name)), name)
        except LockedError as e:
            with count_lock:
                counts["skipped"] += 1
            log.warning("tick %s skipped: %s", called(name), e)
        except FscontrolError as e:  # the lock or the database itself
            note("tick", [ClusterOutcome(name, error=e)], name)

    def d_job(stage: str, fn, name: str | None) -> None:
        """The watch and the trim: one command on d, under the lock (a tick holding it sets d itself)."""
        try:
            source = make_source(name)
            with _locked(cfg, db_path, name, apply=apply, source=source):
                db = store.open_db(db_path)
                try:
                    done = fn(source, db, cfg, apply=apply, name=name)
                finally:
                    db.close()
            if done is not None:
                note(stage, [ClusterOutcome(name)], name)
                # a reverted d is news; a trim before a pass is routine (logging.WARNING, logging.INFO)
                log.log(30 if stage == "watch" else 20, "%s %s: %s (%s)", stage,
                        called(name), done.reason, done.status)
        except LockedError:
            pass
        except FscontrolError as e:
            note(stage, [ClusterOutcome(name, error=e)], name)

    @unless_closing
    def watch_job(name: str | None) -> None:
        d_job("watch", trimpad.watch_damping, name)

    passes_at: dict = {}  # the coming decay pass by cluster, for the trim (padding_mode = "trim": too late to pad?)

    @unless_closing
    def trim_job(name: str | None) -> None:
        d_job("trim", lambda *a, **kw: trimpad.trim_damping(*a, pass_at=passes_at.get(name), **kw), name)

    @unless_closing
    def pad_job(name: str | None) -> None:
        d_job("pad", trimpad.start_pad, name)

    @unless_closing
    def pass_job(name: str | None) -> None:
        """Control just before each decay pass (agent.pass_lead ahead of it): d is chosen on the
        usage that pass will read, and the padding the pass charges is planned with every running
        job's charge known. Reschedules itself for the next pass; where slurmctld's record of its
        passes cannot be read, control goes back to schedule.control."""
        if aligned.get(name):
            try:
                note("control", [ClusterOutcome(name, result=one_tick(cfg, make_source, db_path, name, apply=apply,
                                                                         stages=pipeline.Stages(control=True)))], name)
            except LockedError:
                log.warning("control %s before the pass skipped: another tick holds the lock", called(name))
            except FscontrolError as e:
                note("control", [ClusterOutcome(name, error=e)], name)
        try:
            nxt = publishing.next_decay_pass(make_source(name))  # the coming pass (the one just prepared for)
        except FscontrolError as e:
            nxt = None
            log.warning("control %s: when is the next decay pass? %s", called(name), e)
        if nxt is None:
            if aligned.get(name, True):
                log.warning("control %s runs every %gs: slurmctld's record of its decay passes (StateSaveLocation/"
                            "priority_last_decay_ran) is not readable here", called(name), cfg.schedule["control"])
            aligned[name] = False
            later(pass_job, datetime.fromtimestamp(time.time() + cfg.schedule["control"], timezone.utc), f"pass:{name}", name)
            return
        aligned[name] = True
        coming, period = nxt
        now = time.time()
        passes_at[name] = coming
        trim_at = coming - cfg.pass_trim_s
        if cfg.pass_trim_s > 0 and now < trim_at <= now + cfg.pass_lead_s + 1.0:
            # the last word on d before the coming pass, in this same job: the scheduler runs one job
            # at a time, and a collect tick queued behind the control tick started the trim up to
            # 0.9 s late, after the pass at times (measured, issue 30 busy run with padding_mode = trim)
            if not closing.wait(max(0.0, trim_at - time.time())):
                trim_job(name)
        elif cfg.pass_trim_s > 0 and trim_at > now:
            later(trim_job, datetime.fromtimestamp(trim_at, timezone.utc), f"trim:{name}", name,
                  misfire_grace_time=max(1, int(cfg.pass_trim_s)))  # late is after the pass: drop it
        if cfg.pass_trim_s > 0 and trimpad.active(cfg.cluster(name)):  # the next padding job, just after the pass
            later(pad_job, datetime.fromtimestamp(coming + PAD_AFTER_PASS_S, timezone.utc), f"pad:{name}", name,
                  misfire_grace_time=30)
        # control again before the next pass: the coming one if there is still time (the loop's
        # start), else the one after it
        at = coming - cfg.pass_lead_s if coming - cfg.pass_lead_s > now + 0.5 else coming + period - cfg.pass_lead_s
        later(pass_job, datetime.fromtimestamp(at, timezone.utc), f"pass:{name}", name, misfire_grace_time=None)

    @unless_closing
    def gate_job(name: str | None) -> None:
        try:
            gate_only(cfg, make_source, db_path, name, apply=apply)
            note("gate", [ClusterOutcome(name)], name)
        except LockedError as e:
            with count_lock:
                counts["skipped"] += 1
            log.warning("gate %s skipped: %s", called(name), e)
        except FscontrolError as e:
            note("gate", [ClusterOutcome(name, error=e)], name)

    if cfg.on_stop == "restore":  # what the last stop undid, the loop takes up again
        for name in clusters:
            try:
                set_acting(cfg, db_path, name, by="on_stop")
            except FscontrolError as e:
                log.error("could not resume control on %s: %s", called(name), e)
    sched = BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(1)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": int(cfg.schedule["collect"])},
        timezone="UTC",
    )
    first = datetime.now(timezone.utc)  # every job runs once at start, then on its interval
    for name in clusters:
        cc = cfg.cluster(name)
        sched.add_job(cycle_job, "interval", seconds=cfg.schedule["collect"], args=[name], id=f"tick:{name}", next_run_time=first)
        if cc.gate.enabled and cc.allocations:
            sched.add_job(gate_job, "interval", seconds=cfg.schedule["gate"], args=[name], id=f"gate:{name}", next_run_time=first)
        # with persist too: slurm.conf holds a d within persist_tolerance of the agent's (written at
        # most every persist_interval), so a restart starts close, and the watch puts the exact d back
        if cc.method in ("damping", "hybrid"):
            sched.add_job(watch_job, "interval", seconds=cfg.schedule["watch"], args=[name], id=f"watch:{name}")
        if cc.method in ("damping", "hybrid", "padding") and cfg.pass_lead_s > 0:
            sched.add_job(pass_job, "date", run_date=first, args=[name], id=f"pass:{name}")
    sched.start()
    log.info("fscontrol run: %d cluster(s), collect every %gs, gate every %gs, apply=%s",
             len(clusters), cfg.schedule["collect"], cfg.schedule["gate"], apply)
    stop.wait()
    log.info("stopping: letting the running job finish")
    with guard:
        closing.set()
    sched.shutdown(wait=True)
    if cfg.on_stop == "restore":  # control off for every cluster (it releases the holds too)
        for name in clusters:
            try:
                res = one_tick(cfg, make_source, db_path, name, apply=apply, stages=pipeline.Stages(off="on_stop"))
                log.info("on_stop = restore: %d action(s) on %s", len(res.control.actions) + len(res.gate.actions),
                         called(name))
            except FscontrolError as e:
                log.error("restoring %s on stop failed: %s", called(name), e)
    elif cfg.release_on_stop:
        for name in clusters:
            if cfg.cluster(name).gate.enabled:
                try:
                    res = _release_when_free(cfg, make_source, db_path, name, apply)
                    log.info("released %d agent hold(s) on %s", len(res.actions), called(name))
                except FscontrolError as e:
                    log.error("release of the agent's holds on %s failed: %s", called(name), e)
    return counts


def _release_when_free(cfg, make_source: SourceFactory, db_path: Path, name: str | None, apply: bool, wait_s: float = 60.0):
    """On stop, the lock may be held by a cron tick for a moment: wait for it, then release."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return gate_only(cfg, make_source, db_path, name, apply=apply, release_all=True)
        except LockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)
