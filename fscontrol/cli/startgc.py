"""The garbage collector off while a command starts, on again once it runs.

A command's start (typer, the app, the command's modules) allocates ~100,000 objects that live
as long as the process and hold no garbage; with the collector on, its passes over them cost
~15% of a short command's instructions (36 M of `import typer`'s 238 M; issue #31 item 5). The
console script (fscontrol.cli.main) turns it off before it imports the app, in its own process
only (not when called in-process: tests, exit_code), and the app's group turns it back on as the
command starts (fscontrol.cli.app.Group.invoke), after freezing what the start made (gc.freeze:
later passes skip those objects, so a long-running command, the agent's loop or the page, pays
nothing for them either). Standard library only: imported before anything else.
"""

from __future__ import annotations

import gc

_OFF: list[int] = []  # off() turned the collector off, and done() has not turned it on yet


def off() -> None:
    """The collector off for the start, if it is on."""
    if gc.isenabled():
        gc.disable()
        _OFF.append(1)


def done() -> None:
    """The start is over: what it made frozen, the collector on again (if off() turned it off)."""
    if _OFF:
        del _OFF[:]
        gc.freeze()
        gc.enable()
