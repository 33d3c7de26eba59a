"""What the command modules share: an error as its one line and exit code (and a library
Result's end), a source from the shared options, and printing a long report (fscontrol.cli.app, agent, simulate)."""

from __future__ import annotations

import sys

import typer

from fscontrol.errors import FscontrolError


def _fail(e: FscontrolError, hint: str = "", where: str = "") -> typer.Exit:
    """The one way an error leaves a command: `fscontrol: error: ...` on stderr (after `where`,
    e.g. the cluster of a tick over several; with the command's `hint`, e.g. the option that
    overrides it) and the error's exit code (fscontrol.cli.app)."""
    typer.echo(f"fscontrol: error: {where}{e}{hint}", err=True)
    return typer.Exit(e.exit_code)


def _finish(res) -> None:
    """How a command whose library call returned a Result (fscontrol.agent.commands.Result) ends,
    once its report is printed: each of its errors said by _fail, the first's exit code; else its
    exit code when not 0."""
    exits = [_fail(e, where=where) for where, e in res.errors]
    if exits:
        raise exits[0]
    if res.exit_code:
        raise typer.Exit(res.exit_code)


def _source(spec: str, cluster: str | None, timeout_s: float = 60.0):
    from fscontrol.slurm.source import from_spec

    return from_spec(spec, cluster, timeout_s)


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
