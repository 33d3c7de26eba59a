"""The history's commands as one library call each (issue #29: the command line holds no
orchestration): `collect`, `status`, `history` and `fit` take their options as plain values
(paths, names, numbers) and do the whole of the work: the config, the history, the source, the
snapshot and the report's data. fscontrol.cli calls one of them and prints what it returns.

They sit here, in the agent's layer, because they read the agent's config (fscontrol.agent.config)
and `status --source` collects (fscontrol.agent.pipeline); the reports' data and text are
fscontrol.report's, the history fscontrol.store's. Errors are fscontrol.errors' named ones.
"""

from __future__ import annotations

from pathlib import Path

from fscontrol.agent import config


def history_db(cfg, db: Path | str | None, *, create: bool = True, readonly: bool | None = None):
    """The history the commands read: --db, else the config's agent.db, else store.default_db_path();
    a report that creates nothing reads without writing (no migration, no new file)."""
    from fscontrol.store import history as store

    path = db or (Path(cfg.db) if cfg.db else None) or store.default_db_path()
    return store.open_db(path, create=create, readonly=not create if readonly is None else readonly)


def collect(config_path: Path | None, db: Path | None, source: str = "live", cluster: str | None = None):
    """`fscontrol collect`: one snapshot of the cluster into the history (pipeline.CollectResult).
    Everything is read and parsed before anything is written."""
    from fscontrol.agent import pipeline
    from fscontrol.slurm.source import from_spec
    from fscontrol.store import history as store

    cfg = config.load(config_path)
    database = store.open_db(db or (cfg.db if cfg.db else None) or store.default_db_path())
    return pipeline.collect(from_spec(source, cluster, cfg.slurm_timeout_s), database)


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
    snap = store.load_snapshot(database, cluster=cluster, running=False)  # status reads no running job
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


def fit(config_path: Path | None, db: Path | None, cluster: str | None = None, last: int | None = None):
    """`fscontrol fit`: the decay rate fitted to the history (fitting.fit_history), stored unless
    the history is read-only to the caller. Returns (cluster, snapshots, fit, stored)."""
    from fscontrol.agent import fitting
    from fscontrol.store import history as store

    cfg = config.load(config_path)
    path = db or (Path(cfg.db) if cfg.db else None) or store.default_db_path()
    rw = not Path(path).exists() or store.writable(path)  # a read-only history: fitted, shown, not stored
    name, n_snap, r = fitting.fit_history(history_db(cfg, path, create=False, readonly=not rw), cluster, last=last,
                                          record_fit=rw)
    return name, n_snap, r, rw
