"""The options several commands share, each defined once: every command that reads the history
takes the same --db, every one that reads the agent's config the same --config (and
$FSCONTROL_CONFIG), every one that talks to Slurm the same -M, every one that reads the agent's published snapshot
(forecast, why, web) the same --published; --source, --json and the table
options (-P, -n, -o, --helpformat) are Slurm's and sshare's conventions, the same everywhere.

Only typer and the standard library are imported here: the console script loads this module for
every command (fscontrol.cli.app), before the one command it runs imports what it needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

SOURCE_HELP = ("Where to read Slurm from: 'live' (run the Slurm commands) or a recorded sample folder "
               "(e.g. samples/testbed-basic).")
DB_HELP = ("History database. Default: the config's agent.db, else $FSCONTROL_DB, else /var/lib/fscontrol/history.db "
           "for root, ~/.local/state/fscontrol/history.db for other users.")
CONFIG_HELP = ("The agent's TOML config (target u*, method, dummy, allocations, agent.db...). "
               "Default: $FSCONTROL_CONFIG; without either, the built-in defaults.")
CLUSTER_HELP = "Slurm cluster name (passed to Slurm as -M)."
JSON_HELP = "Print JSON for scripts instead of a table."
PUBLISHED_HELP = ("The agent's published snapshot (file, or its folder). Default: $FSCONTROL_PUBLISHED, else "
                  "/var/lib/fscontrol/public/<cluster>.json.")

SourceOpt = Annotated[str, typer.Option("--source", "-s", help=SOURCE_HELP)]
DbOpt = Annotated[Optional[Path], typer.Option("--db", help=DB_HELP)]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", "-c", help=CONFIG_HELP, envvar="FSCONTROL_CONFIG")]
ClusterOpt = Annotated[Optional[str], typer.Option("--cluster", "-M", help=CLUSTER_HELP)]
JsonOpt = Annotated[bool, typer.Option("--json", help=JSON_HELP)]
PublishedOpt = Annotated[Optional[Path], typer.Option("--published", help=PUBLISHED_HELP)]


def _version(value: bool) -> None:
    if value:
        from fscontrol import __version__

        typer.echo(f"fscontrol {__version__}")
        raise typer.Exit()


# the app's and the forecast's -V (a forecast's users type `fscontrol forecast -V`); a name, not the
# Annotated text, in the commands' (string) annotations: typer evaluates those as it builds the command
VersionOpt = Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print fscontrol's version and exit.")]

ParsableOpt = Annotated[bool, typer.Option("--parsable", "-P", help="The table alone, every field delimited by '|', no padding "
                                           "(as sshare -P); the rest of the report goes to stderr.")]
NoHeaderOpt = Annotated[bool, typer.Option("--noheader", "-n", help="The table's rows alone, no header lines (as sshare -n).")]
FieldsOpt = Annotated[Optional[str], typer.Option("--format", "-o", help="The table's fields, comma-separated, in any case "
                                                 "(as sshare -o; --helpformat lists them).")]
HelpFormatOpt = Annotated[bool, typer.Option("--helpformat", help="List the fields -o takes, and exit.")]

DefaultsOpt = Annotated[bool, typer.Option("--defaults", help="Run without a config file, on the built-in defaults "
                                           "(`fscontrol config check --json` prints them). Without it, and without "
                                           "--config or $FSCONTROL_CONFIG, the agent refuses to start.")]
