"""The one line a Ctrl-C prints (exit code 130). Only the standard library: the console entry
(fscontrol.cli.main) prints it even when the interrupt lands while the app still imports, and the
app's group (fscontrol.cli.app) when it lands in a command."""

from __future__ import annotations

# what an interrupt leaves behind, said in the one line it prints (the rest: "stopped")
ACTING = ("tick", "control", "gate")
SAID = []  # the app's group said the line already (typer itself turns an interrupt outside it into a silent 130)


def interrupted_line(command: str | None) -> str:
    """The one line a Ctrl-C prints: what was interrupted and, for the commands that act, that
    every Slurm command they had started is in the history and the next tick settles it."""
    what = f"`fscontrol {command}`" if command else "fscontrol"
    if command in ACTING:
        return (f"fscontrol: interrupted: {what} stopped before it finished; every Slurm command it had started is "
                "recorded in the history, and the next tick settles it")
    if command in ("web", "run"):
        return f"fscontrol: interrupted: {what} stopped"
    return f"fscontrol: interrupted: {what} stopped before it finished"
