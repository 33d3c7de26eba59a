"""The console script: the typer app (fscontrol.cli.app), built for the one command it runs."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    from fscontrol.cli.app import app, only

    every = app.registered_commands, app.registered_groups
    only(args[0] if args else None)  # typer builds the command it runs, not all of them
    try:
        app(args=args, prog_name="fscontrol")
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
