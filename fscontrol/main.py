"""The console script. `fscontrol forecast` is the command every user types, so it is dispatched
before typer is imported (see forecast_cmd); everything else goes to the typer app."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["forecast"]:
        from .forecast_cmd import main as forecast

        sys.exit(forecast(args[1:]))
    from .cli import app, only

    only(args[0] if args else None)  # typer builds the command it runs, not all of them
    app(args=args, prog_name="fscontrol")


if __name__ == "__main__":
    main()
