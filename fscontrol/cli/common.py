"""What the command modules share: an error as its one line and exit code, a source and a
history from the shared options, and printing a long report (fscontrol.cli.app, agent, simulate)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from fscontrol.errors import FscontrolError


def _fail(e: FscontrolError, hint: str = "") -> typer.Exit:
    """The one way an error leaves a command: `fscontrol: error: ...` on stderr (with the command's
    `hint`, e.g. the option that overrides it) and the error's exit code (fscontrol.cli.app)."""
    typer.echo(f"fscontrol: error: {e}{hint}", err=True)
    return typer.Exit(e.exit_code)


def _source(spec: str, cluster: str | None, timeout_s: float = 60.0):
    from fscontrol.slurm.source import from_spec

    return from_spec(spec, cluster, timeout_s)


def _db(path: Path | None, create: bool = True, readonly: bool | None = None):
    from fscontrol.store import history as store

    # a report that creates nothing reads without writing: no migration, no new file
    return store.open_db(path or store.default_db_path(), create=create, readonly=not create if readonly is None else readonly)


def _table_alone(rows, fields, parsable: bool, noheader: bool, notes=()) -> None:
    """-P/-n: the table alone on stdout (what scripts read), the report's other lines on stderr."""
    from fscontrol.report import table as rtable

    for n in notes:
        typer.echo(f"fscontrol: note: {n}", err=True)
    _print_lines(rtable.table_lines(rows, fields, parsable=parsable, header=not noheader))


def _print_lines(lines, chunk: int = 4096) -> None:
    """Write a report line by line in chunks (100,000 rows are never one string); a reader that
    stops early (`| head`) ends the output quietly, as it does for sshare."""
    import itertools
    import os

    out = sys.stdout
    try:
        it = iter(lines)
        while block := list(itertools.islice(it, chunk)):
            out.write("\n".join(block))
            out.write("\n")
        out.flush()
    except BrokenPipeError:
        try:  # the interpreter's own flush at exit would fail again: point stdout at /dev/null
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        except (OSError, ValueError):
            pass
        raise typer.Exit(0) from None
