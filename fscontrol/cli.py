"""The command line: each command reads its options, calls one library function, prints.

This is the only place where errors become messages and exit codes:
  0 ok · 1 error · 2 bad configuration or usage · 3 Slurm command failed or unreadable ·
  4 history database locked/unreadable · 5 another tick is running · 6 not found (no snapshot,
  unknown user) · 7 refused as unsafe.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import FscontrolError

app = typer.Typer(
    name="fscontrol",
    help=(
        "Fair-share control agent for Slurm clusters that run classic fair-share "
        "(PriorityFlags=NO_FAIR_TREE).\n\n"
        "Reads sshare, sacct, squeue, sprio and `scontrol show config`, keeps a history in SQLite, "
        "and reports where fair-share stands. Nothing here changes the cluster unless a command "
        "is given --apply."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SourceOpt = Annotated[
    str,
    typer.Option(
        "--source",
        "-s",
        help="Where to read Slurm from: 'live' (run the Slurm commands) or a recorded sample folder "
        "(e.g. samples/testbed-basic).",
    ),
]
DbOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--db",
        help="History database. Default: $FSCONTROL_DB, else /var/lib/fscontrol/history.db for root, "
        "~/.local/state/fscontrol/history.db for other users.",
    ),
]
ClusterOpt = Annotated[
    Optional[str], typer.Option("--cluster", "-M", help="Slurm cluster name (passed to Slurm as -M).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
ConfigOpt = Annotated[
    Optional[Path],
    typer.Option("--config", "-c", help="The agent's TOML config (target u*, method, dummy, allocations...).", envvar="FSCONTROL_CONFIG"),
]


def _fail(e: FscontrolError) -> typer.Exit:
    typer.echo(f"fscontrol: error: {e}", err=True)
    return typer.Exit(e.exit_code)


def _source(spec: str, cluster: str | None):
    from .source import LiveSlurm, RecordedSlurm

    if spec == "live":
        return LiveSlurm(cluster=cluster)
    return RecordedSlurm(Path(spec), cluster=cluster)


def _db(path: Path | None, create: bool = True):
    from . import store

    return store.open_db(path or store.default_db_path(), create=create)


@app.command()
def collect(source: SourceOpt = "live", db: DbOpt = None, cluster: ClusterOpt = None, json_out: JsonOpt = False) -> None:
    """Take one snapshot of the cluster (sshare, sacct, squeue, sprio, config) into the history.

    Everything is read and parsed before anything is written; a failed Slurm command writes
    nothing but a failed-tick record, and exits 3."""
    from . import pipeline

    try:
        res = pipeline.collect(_source(source, cluster), _db(db))
    except FscontrolError as e:
        raise _fail(e) from None
    snap = res.snapshot
    info = {
        "snapshot_id": res.snapshot_id,
        "cluster": snap.cluster,
        "taken_at": snap.taken_at,
        "associations": len(snap.shares),
        "users": len(snap.users),
        "jobs_in_window": len(snap.jobs),
        "queued_jobs": len(snap.queue),
    }
    if json_out:
        typer.echo(json.dumps(info))
    else:
        typer.echo(
            f"snapshot {res.snapshot_id} of {snap.cluster}: {info['associations']} associations "
            f"({info['users']} users), {info['jobs_in_window']} jobs in the sacct window, "
            f"{info['queued_jobs']} in the queue"
        )


@app.command()
def status(
    source: Annotated[
        Optional[str],
        typer.Option("--source", "-s", help="Collect from this source first ('live' or a sample folder)."),
    ] = None,
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    json_out: JsonOpt = False,
    ustar: Annotated[
        Optional[float],
        typer.Option("--target", help="Target halving usage u* in core-hours (overrides the config); adds the model comparison."),
    ] = None,
    config_path: ConfigOpt = None,
) -> None:
    """Where fair-share stands: priority settings, total usage, halving usage, and a per-user table
    (RawUsage in core-hours, NormShares, EffectvUsage, F by fscontrol and by Slurm, implied
    halving u / -log2 F), from the latest snapshot in the history."""
    from . import config, pipeline, report, store

    try:
        cfg = config.load(config_path)
        database = _db(db or (Path(cfg.db) if cfg.db else None), create=source is not None)
        if source is not None:
            pipeline.collect(_source(source, cluster), database)
        snap = store.load_snapshot(database, cluster=cluster)
        cc = cfg.cluster(snap.cluster)
        data = report.status_data(
            snap,
            target_core_hours=ustar if ustar is not None else cc.target_core_hours,
            dummy=cc.dummy_key,
            reference=cc.reference_share,
            control_history=store.decision_history(database, snap.cluster, 60),
        )
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(data, indent=2) if json_out else report.format_status(data))


@app.command()
def fit(
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    last: Annotated[Optional[int], typer.Option(help="Use only the last N snapshots.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Fit the usage decay rate to the stored history (least squares, scipy) and compare the
    effective half-life with the configured PriorityDecayHalfLife. The fit is stored.

    Resets (RawUsage=0) and usage lost in a slurmctld crash are breaks, not data. Collect at an
    interval that is a multiple of PriorityCalcPeriod: usage moves only at decay passes."""
    from . import pipeline

    try:
        name, n_snap, r = pipeline.fit_history(_db(db, create=False), cluster, last=last)
    except FscontrolError as e:
        raise _fail(e) from None
    data = {
        "cluster": name,
        "snapshots": n_snap,
        "half_life_s": r.half_life_s,
        "half_life_se_s": r.half_life_se_s,
        "configured_half_life_s": r.configured_half_life_s,
        "expected_half_life_s": r.expected_half_life_s,
        "drift": r.drift,
        "drifted": r.drifted,
        "residuals": r.n_residuals,
        "breaks": r.n_breaks,
        "outliers": r.n_outliers,
        "converged": r.converged,
    }
    if json_out:
        typer.echo(json.dumps(data, indent=2))
        return
    drift = "-" if r.drift is None else f"{r.drift:+.2%}"
    typer.echo(
        f"{name}: fitted half-life {r.half_life_s:,.1f} s ± {r.half_life_se_s:,.1f} s "
        f"(configured {r.configured_half_life_s:,.0f} s, Slurm's 1-0.693/T gives {r.expected_half_life_s:,.1f} s; "
        f"drift {drift}{', DRIFTED' if r.drifted else ''})\n"
        f"from {r.n_residuals} snapshot pairs over {n_snap} snapshots; {r.n_breaks} breaks (resets), {r.n_outliers} outliers left out"
    )


@app.command()
def control(
    config_path: ConfigOpt = None,
    source: SourceOpt = "live",
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Carry the plan out (default: dry run, nothing in Slurm changes).")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Plan (and with --apply, carry out) what keeps fair-share halving at the target u*:
    the damping factor (scontrol fsdampeningfactor), padding by the dummy association's jobs,
    or both, as the config's `method` says. Every decision and command is recorded with its
    reason. Without --apply (or agent.apply = true in the config) nothing in Slurm changes."""
    from . import config, pipeline, report

    try:
        cfg = config.load(config_path)
        database = _db(db or (Path(cfg.db) if cfg.db else None))
        res = pipeline.control_tick(_source(source, cluster), database, cfg, apply=apply or cfg.apply)
    except FscontrolError as e:
        raise _fail(e) from None
    data = report.control_data(res)
    typer.echo(json.dumps(data, indent=2) if json_out else report.format_control(data))
    if any(a["status"] == "failed" for a in data["actions"]):
        raise typer.Exit(3)


@app.command()
def tick(
    config_path: ConfigOpt = None,
    source: SourceOpt = "live",
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    apply: Annotated[bool, typer.Option("--apply", help="Act (default: plan only, as in the config's agent.apply).")] = False,
    json_out: JsonOpt = False,
) -> None:
    """One full agent cycle for cron: collect, control (plan, or act with --apply), fit when due.
    A file lock keeps two ticks from overlapping (the second exits 5)."""
    from . import config, pipeline, report
    from .lock import agent_lock

    try:
        cfg = config.load(config_path)
        db_path = db or (Path(cfg.db) if cfg.db else None)
        from . import store

        path = db_path or store.default_db_path()
        with agent_lock(cfg.lock or str(Path(path).with_suffix(".lock"))):
            res = pipeline.run_tick(_source(source, cluster), _db(path), cfg, apply=apply or cfg.apply)
    except FscontrolError as e:
        raise _fail(e) from None
    data = report.control_data(res.control)
    if res.fit is not None:
        data["fit"] = {"half_life_s": res.fit.half_life_s, "half_life_se_s": res.fit.half_life_se_s, "drifted": res.fit.drifted}
    typer.echo(json.dumps(data, indent=2) if json_out else report.format_control(data))
    if any(a["status"] == "failed" for a in data["actions"]):
        raise typer.Exit(3)


config_app = typer.Typer(help="The agent's configuration file.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("check")
def config_check(config_path: ConfigOpt = None, json_out: JsonOpt = False) -> None:
    """Validate the config file and print the effective settings (defaults filled in)."""
    from . import config

    try:
        eff = config.effective(config.load(config_path))
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(eff, indent=2))


@app.command()
def capture(
    folder: Annotated[Path, typer.Argument(help="Folder to write the sample into (created).")],
    cluster: ClusterOpt = None,
    window: Annotated[float, typer.Option(help="sacct look-back in seconds.")] = 3600.0,
    note: Annotated[str, typer.Option(help="A line saying what the cluster was doing.")] = "",
) -> None:
    """Record a live cluster into a sample folder (outputs, exact commands, Slurm version, time),
    which --source can replay without Slurm."""
    from .source import LiveSlurm, capture as do_capture

    try:
        meta = do_capture(LiveSlurm(cluster=cluster), folder, window_s=window, note=note)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(f"recorded {meta['cluster']} (Slurm {meta['slurm_version']}) at {meta['captured_at']} into {folder}")


def main() -> None:  # pragma: no cover - console entry for `python -m fscontrol`
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
