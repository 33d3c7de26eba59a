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
    finally:  # called in-process (tests, forecast_cmd.main): the app keeps all its commands
        app.registered_commands, app.registered_groups = every


if __name__ == "__main__":
    main()
