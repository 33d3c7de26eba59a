"""The commands as one library call each (issue #29: the command line holds no orchestration):
`collect`, `status`, `history`, `fit`, `decisions`, `metrics`, `publish`, `capture`, `doctor`,
`config check` and the agent's `control`, `tick` and `gate` take their options as plain values (paths, names, numbers)
and do the whole of the work: the config, the history, the source, the snapshot and the report's
data, and for the agent's commands the exit code their outcome gives and the errors to say
(Result). fscontrol.cli calls one of them and prints what it returns.

They sit here, in the agent's layer, because they read the agent's config (fscontrol.agent.config)
and `status --source` collects (fscontrol.agent.pipeline); the reports' data and text are
fscontrol.report's, the history fscontrol.store's. Errors are fscontrol.errors' named ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fscontrol.agent import config
from fscontrol.errors import FscontrolError


@dataclass(frozen=True, slots=True)
class Result:
    """What a command prints and how it ends, as the library decides it: `data` (what its report
    functions take), `exit_code` (0, or what the outcome gives: 3 an action failed or its outcome
    is unknown, the doctor's 8 and 9) and `errors` (where, error): outcomes that are errors, each
    said on its own line, the first's exit code the command's (fscontrol.cli.common._finish)."""

    data: Any
    exit_code: int = 0
    errors: tuple[tuple[str, FscontrolError], ...] = ()


def history_db(cfg, db: Path | str | None, *, create: bool = True, readonly: bool | None = None):
    """The history the commands read (config.history_path); a report that creates nothing reads without
    writing (no migration, no new file)."""
    from fscontrol.store import history as store

    return store.open_db(config.history_path(cfg, db), create=create, readonly=not create if readonly is None else readonly)


def collect(config_path: Path | None, db: Path | None, source: str = "live", cluster: str | None = None) -> dict:
    """`fscontrol collect`: one snapshot of the cluster into the history, as report.collect's data.
    Everything is read and parsed before anything is written."""
    from fscontrol.agent import pipeline
    from fscontrol.report import collect as rcollect
    from fscontrol.slurm.source import from_spec

    cfg = config.load(config_path)
    return rcollect.collect_data(pipeline.collect(from_spec(source, cluster, cfg.slurm_timeout_s), history_db(cfg, db)))


def status(config_path: Path | None, db: Path | None, *, source: str | None = None, cluster: str | None = None,
           target: float | None = None, users: list[str] = (), accounts: list[str] = (), tree: bool = False) -> dict:
    """`fscontrol status`: the latest snapshot's report (report.status.status_of, read a column at a
    time), with what the agent's own record adds (its recent decisions, its holds, `control off`, the
    d it read back); `source` collects a snapshot first. `target` (u* in core-hours) overrides the
    config's."""
    from fscontrol.report import status as rstatus
    from fscontrol.store import history as store

    cfg = config.load(config_path)
    database = history_db(cfg, db, create=source is not None)
    if source is not None:
        from fscontrol.agent import pipeline
        from fscontrol.slurm.source import from_spec

        pipeline.collect(from_spec(source, cluster), database)
    # no running job, and sprio's factors only where the stored basis does not hold them
    snap = store.load_snapshot(database, cluster=cluster, running=False, prio=False)
    return rstatus.status_of(
        database, snap, cfg.cluster(snap.cluster), target_core_hours=target,
        only_users=list(users),
        only_accounts=list(accounts),
        tree=tree,
        columns=True,  # read a column at a time; --json makes its rows one at a time (report.table.json_chunks)
    )


def history(config_path: Path | None, db: Path | None, *, cluster: str | None = None, since: str = "7d",
            timeline: bool = False, png: Path | None = None, html: Path | None = None, now: float | None = None) -> dict:
    """`fscontrol history`: the agent's record since `since` (a duration or a POSIX time), with the
    `timeline` the charts draw when asked for it or for a chart, drawn into `png` and `html`
    (report.historychart.history_report). The output files are checked before the history is opened."""
    import time

    from fscontrol.report import historychart

    for path, opt in ((png, "--png"), (html, "--html")):
        if path is not None:
            historychart.check_output(path, opt)
    cfg = config.load(config_path)
    database = history_db(cfg, db, create=False)
    return historychart.history_report(database, cluster, since, time.time() if now is None else now,
                                       with_timeline=timeline, png=png, html=html)


def fit(config_path: Path | None, db: Path | None, cluster: str | None = None, last: int | None = None) -> dict:
    """`fscontrol fit`: the decay rate fitted to the history (fitting.fit_history), stored unless
    the history is read-only to the caller; report.fit's data."""
    from fscontrol.agent import fitting
    from fscontrol.report import fit as rfit
    from fscontrol.store import history as store

    cfg = config.load(config_path)
    path = config.history_path(cfg, db)
    rw = not path.exists() or store.writable(path)  # a read-only history: fitted, shown, not stored
    name, n_snap, r = fitting.fit_history(history_db(cfg, path, create=False, readonly=not rw), cluster, last=last,
                                          record_fit=rw)
    return rfit.fit_data(name, n_snap, r, rw)


def decisions(config_path: Path | None, db: Path | None, cluster: str | None, since: str, now: float | None = None) -> dict:
    """`fscontrol decisions`: the control decisions since `since` (report.decisions' data)."""
    import time

    from fscontrol.report import decisions as rdecisions

    cfg = config.load(config_path)
    return rdecisions.decisions_data(history_db(cfg, db, create=False), cluster, since, time.time() if now is None else now)


def metrics(config_path: Path | None, db: Path | None, out: Path | None = None) -> dict:
    """`fscontrol metrics`: the Prometheus text ({"text"}), or with `out` the file written
    atomically ({"wrote": its path})."""
    from fscontrol.agent import publishing

    cfg = config.load(config_path)
    database = history_db(cfg, db, create=False)
    if out is not None:
        return {"wrote": str(publishing.write_metrics(database, cfg, out))}
    return {"text": publishing.metrics_text(database, cfg)}


def publish(config_path: Path | None, db: Path | None, cluster: str | None, out: Path | None = None,
            admins=()) -> dict:
    """`fscontrol publish`: the latest snapshot published for `forecast` (publishing.publish_latest);
    what was written: path, cluster, snapshot_id, per_association."""
    from fscontrol.agent import publishing

    cfg = config.load(config_path)
    path, data = publishing.publish_latest(history_db(cfg, db, create=False), cfg, cluster, out=out, admins=admins,
                                           live=True)
    return {"path": str(path), "cluster": data["cluster"], "snapshot_id": data["snapshot_id"],
            "per_association": data["per_association"]}


def capture(folder: Path, cluster: str | None, *, window_s: float = 3600.0, note: str = "", since: float | None = None,
            history: str | None = None, force: bool = False) -> dict:
    """`fscontrol capture`: the live cluster recorded into `folder` (slurm.source.capture; its
    meta). `history`: a period (e.g. 30d) the simulator can replay. A folder the system refuses is
    an OutputError naming it."""
    from fscontrol.errors import OutputError
    from fscontrol.model.allocations import parse_period
    from fscontrol.slurm.source import capture as do_capture
    from fscontrol.slurm.source import from_spec

    history_s = None if history is None else parse_period(history, where="--history")
    try:
        return do_capture(from_spec("live", cluster), folder, window_s=window_s, note=note, since=since,
                          history_s=history_s, force=force)
    except OSError as e:
        raise OutputError(f"{folder}: {e.strerror or e}") from None


def doctor(config_path: str | Path | None, source: str = "live", db: str | Path | None = None, cluster: str | None = None,
           slurm_conf: str | Path | None = None):
    """`fscontrol doctor`: the config, the cluster `source` serves (each Slurm command within the
    config's slurm_timeout), diagnosed; report.doctor's data, its exit code the findings' (Result)."""
    from fscontrol.agent.diagnose import diagnose
    from fscontrol.report import doctor as rdoctor
    from fscontrol.slurm.source import from_spec

    cfg = config.load(config_path)
    s, findings = diagnose(from_spec(source, cluster, cfg.slurm_timeout_s), cfg, db_path=db,
                           slurm_conf=str(slurm_conf) if slurm_conf else None)
    data = rdoctor.report(s, findings)
    return Result(data, data["exit_code"])


def config_check(config_path: str | Path | None, source: str = "live", doctor: bool = True):
    """`fscontrol config check`: the config validated, its settings in force (defaults filled in)
    and, with `doctor`, config_doctor's run on each cluster it names; report.doctor.config_check_data
    (Result: exit 9 when a run found a fatal reason)."""
    from fscontrol.agent.diagnose import config_doctor
    from fscontrol.report import doctor as rdoctor

    cfg = config.load(config_path)
    data = rdoctor.config_check_data(config_path, cfg, config.effective(cfg), config.effective_lines(cfg),
                                     config_doctor(cfg, source) if doctor else None)
    return Result(data, data["exit_code"])


# ---------------------------------------------------------------------------- the agent's commands
def _failed(statuses) -> int:
    """3 when an action failed or its outcome is unknown, else 0."""
    return 3 if any(s in ("failed", "unknown") for s in statuses) else 0


def control(config_path: Path | None, db: Path | None, source: str, cluster: str | None, *, switch: str | None,
            apply: bool) -> Result:
    """`fscontrol control [off|on]` (agent.loop.control on the agent's setup), as report.control's
    data: {"switch": ..., "data": ...}. Exit 3 when an action failed or its outcome is unknown (for
    `control off` a refused one too: a slurm.conf line no longer the agent's, left for the admin);
    asked to act and the decision only advises: an UnsafeActionError saying why."""
    from fscontrol.agent import loop
    from fscontrol.errors import UnsafeActionError
    from fscontrol.report import control as rcontrol

    cfg, path, _, make_source = loop.setup(config_path, db, source, cluster)
    ctl = loop.control(cfg, make_source, path, cluster, switch=switch, apply=apply)
    if switch == "on":
        return Result(rcontrol.on_data(ctl.cluster, was_off=bool(ctl.was_off)))
    if switch == "off":
        data = rcontrol.off_data(ctl.tick)
        return Result(data, 3 if any(a["status"] in ("failed", "unknown", "refused") for a in data["actions"]) else 0)
    data = rcontrol.control_data(ctl.tick.control)
    code = _failed(a["status"] for a in data["actions"])
    if code or not (data["advise_only"] and ctl.apply):
        return Result(data, code)
    # asked to act, and it cannot: say so to scripts too
    reason = next((n for n in data["notes"] if n.startswith("advice only: ")), "advice only")
    return Result(data, errors=(("", UnsafeActionError(f"--apply: nothing was done, {reason}")),))


def tick(config_path: Path | None, db: Path | None, source: str, cluster: str | None, *, apply: bool,
         defaults: bool) -> Result:
    """`fscontrol tick` (agent.loop.tick over the clusters the setup names) as report.ticks' data.
    Each cluster's error is one of `errors` (named by its cluster when the tick serves several);
    without one, exit 3 when an action of a control or gate stage failed or its outcome is unknown."""
    from fscontrol.agent import loop
    from fscontrol.report import ticks as rticks

    cfg, path, clusters, make_source = loop.setup(config_path, db, source, cluster, defaults)
    outcomes = loop.tick(cfg, make_source, path, clusters, apply=apply or cfg.apply)
    data = rticks.tick_data(outcomes)
    errors = tuple((f"cluster {o.cluster}: " if o.cluster and len(clusters) > 1 else "", o.error)
                   for o in outcomes if o.error is not None)
    code = 0 if errors else _failed(a["status"] for c in data["clusters"] for stage in ("control", "gate")
                                    if c.get(stage) for a in c[stage]["actions"])
    return Result(data, code, errors)


def gate(config_path: Path | None, db: Path | None, source: str, cluster: str | None, *, apply: bool,
         release_all: bool = False) -> Result:
    """`fscontrol gate`: one gate tick under the lock (agent.loop.gate_only, no metrics file); its
    result (pipeline's gate result: the plan, the actions, applied). Exit 3 when an action failed or
    its outcome is unknown."""
    from fscontrol.agent import loop

    cfg, path, _, make_source = loop.setup(config_path, db, source, cluster)
    res = loop.gate_only(cfg, make_source, path, cluster, apply=apply or cfg.apply, release_all=release_all,
                         metrics=False)
    return Result(res, _failed(a.status for a in res.actions))
