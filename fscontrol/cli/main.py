"""The console script. `fscontrol forecast` (the command every user types) and `fscontrol collect`
are dispatched before typer is imported (forecast_cmd, collect_cmd: argparse); everything else goes
to the typer app."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["forecast"]:
        from fscontrol.cli.forecast import main as forecast

        sys.exit(forecast(args[1:]))
    if args[:1] == ["collect"]:
        from fscontrol.cli.collect import main as collect

        sys.exit(collect(args[1:]))
    from fscontrol.cli.app import app, only

    only(args[0] if args else None)  # typer builds the command it runs, not all of them
    app(args=args, prog_name="fscontrol")


if __name__ == "__main__":
    main()
