"""The simulator's research runners (`python -m fscontrol.sim.experiment`, `.controlexp`,
`.moldable_experiment`) on typer, the framework of the fscontrol command: a runner's options are
its command function's signature; `run` gives it -h/--help and turns a bad option or value into
one line on stderr (exit 2) and an interrupt into one line (exit 130), never a traceback.

A runner is not a fscontrol command, so it writes those two lines itself rather than through
fscontrol.cli.common._fail: a sim module sits below fscontrol.cli (the layers: it may not import
the cli), its errors are typer's usage errors, not fscontrol's named ones, and its exit codes are
the runner's (docs/architecture.md, the cli paragraph).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import typer


def run(command: Callable[..., int | None], argv: Sequence[str] | None, prog: str, help: str | None = None) -> int:
    """Run `command` (a typer command function) on `argv` (default: sys.argv[1:]); its exit code.
    The command finds the arguments as given in its typer.Context's `obj` (a runner that echoes
    its own command line)."""
    app = typer.Typer(
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.command(help=help)(command)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = app(args=args, prog_name=prog, standalone_mode=False, obj=tuple(args))
    except typer.TyperException as e:  # a usage error: a bad option or value
        sys.stderr.write(f"{prog}: error: {e.format_message()} (-h lists the options)\n")
        return int(getattr(e, "exit_code", 2) or 2)
    except typer.Exit as e:
        return int(e.exit_code)
    except typer.Abort:  # Ctrl-C (the framework turns KeyboardInterrupt into Abort)
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130
    return rv if isinstance(rv, int) else 0
