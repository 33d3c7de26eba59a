"""The console script: the typer app (fscontrol.cli.app), built for the one command it runs.

Only `sys`, fscontrol.cli.interrupt and fscontrol.cli.startgc (the standard library alone) are
imported here: a Ctrl-C that lands while the app's modules still import (the first ~0.1 s of
every command) ends the command with the same one line and exit code 130 as one that lands while
it runs (fscontrol.cli.app.Group), not a traceback. The garbage collector is off while the
command starts (fscontrol.cli.startgc)."""

from __future__ import annotations

import sys

from fscontrol.cli import startgc
from fscontrol.cli.interrupt import interrupted_line


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    if argv is None:  # the console script's own process (not in-process: tests, exit_code)
        startgc.off()
    try:
        _run(args)
    except KeyboardInterrupt:  # before the app's own handler is in place (imports), or after it
        import signal

        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the line short
        except ValueError:  # not the main thread (called in-process)
            pass
        command = args[0] if args and not args[0].startswith("-") else None
        try:
            sys.stderr.write(interrupted_line(command) + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        raise SystemExit(130) from None


def _run(args: list[str]) -> None:
    from fscontrol.cli.app import app, only

    every = app.registered_commands, app.registered_groups
    only(args[0] if args else None)  # typer builds the command it runs, not all of them
    from fscontrol.cli.interrupt import SAID

    del SAID[:]
    try:
        app(args=args, prog_name="fscontrol")
    except SystemExit as e:
        # typer turns an interrupt outside the group's invoke (parsing the options, leaving the
        # context) into exit 130 with nothing said: say it here
        if e.code == 130 and not SAID:
            raise KeyboardInterrupt from None
        raise
    finally:  # called in-process (tests, exit_code): the app keeps all its commands
        app.registered_commands, app.registered_groups = every


def exit_code(argv: list[str]) -> int:
    """`fscontrol ARGV` in this process (tests, scripts); returns the exit code instead of exiting."""
    try:
        main(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


if __name__ == "__main__":
    main()
