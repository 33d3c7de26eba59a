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
        typer.Option("--target", help="Target halving usage u* in core-hours, for the model comparison."),
    ] = None,
) -> None:
    """Where fair-share stands: priority settings, total usage, halving usage, and a per-user table
    (RawUsage in core-hours, NormShares, EffectvUsage, F by fscontrol and by Slurm, implied
    halving u / -log2 F), from the latest snapshot in the history."""
    from . import pipeline, report, store

    try:
        database = _db(db, create=source is not None)
        if source is not None:
            pipeline.collect(_source(source, cluster), database)
        snap = store.load_snapshot(database, cluster=cluster)
        data = report.status_data(snap, target_core_hours=ustar)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(data, indent=2) if json_out else report.format_status(data))


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
