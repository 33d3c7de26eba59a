"""The simulator's command lines: `fscontrol simulate` and `simulate-merge` as one library call
each, their errors named (`simulate`, `merge`: fscontrol.cli.simulate calls them); and the
research runners (`python -m fscontrol.sim.experiment`, `.controlexp`, `.moldable_experiment`) on
typer, the framework of the fscontrol command: a runner's options are its command function's
signature; `run` gives it -h/--help and turns a bad option or value into one line on stderr (exit
2) and an interrupt into one line (exit 130), never a traceback. A runner is not a fscontrol
command: it sits below fscontrol.cli (the layers: a sim module may not import the cli, so it cannot
use cli.common._fail) and its only errors are typer's usage errors, hence its own two lines
(docs/architecture.md, the cli paragraph).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import typer


def simulate(opts):
    """`fscontrol simulate` (sim.command.simulate on `opts`, a SimulateOptions): its output for
    sim.command.render. A workload or option the simulator cannot read (its ValueError, OSError) is
    a ConfigError (a usage error, exit 2)."""
    from fscontrol.errors import ConfigError
    from fscontrol.sim import command as simcmd

    try:
        return simcmd.simulate(opts)
    except (ValueError, OSError) as e:
        raise ConfigError(str(e)) from None


def merge(folder, *, partial: bool = False, chart=None) -> list[dict]:
    """`fscontrol simulate-merge`: the results of a sweep run as a Slurm job array (sim.sweep's),
    its comparison chart drawn into `chart`; none yet is a NotFoundError."""
    from fscontrol.errors import NotFoundError
    from fscontrol.sim import sweep as sw

    res = sw.merge_results(folder, partial=partial)
    if not res:
        raise NotFoundError(f"no run of the sweep in {folder} has a result yet")
    if chart is not None:
        sw.write_chart(res, chart)
    return res


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
