"""`fscontrol forecast`: the command users type (registered on the app in fscontrol.cli.app).

The function imports the forecast's modules when it runs: the console script builds only this
command, so a user's forecast pays for typer, its options and the forecast itself; no scipy,
numpy or sqlite_utils on this path (a test checks). The options become a ForecastRequest and the
forecast itself is fscontrol.forecast.request.forecast, which the web page calls too.

No `from __future__ import annotations` here: typer reads the options from the annotations, and
as strings it evaluates each twice (inspect.signature and get_type_hints, each a compile) when
the command is built: 21 M instructions of a forecast's start (296 M -> 275 M, `forecast --version`).
"""

from pathlib import Path
from typing import Annotated, Optional

import typer

from fscontrol.cli.options import ClusterOpt, ConfigOpt, DbOpt, JsonOpt, PublishedOpt, VersionOpt

EPILOG = (
    "\b\nexamples:\n"
    "  fscontrol forecast                                  F now, recovery time, budget to halve\n"
    "  fscontrol forecast --run 56cpus:14d --idle 3d --run 28cpus:7d\n"
    "  fscontrol forecast --plan 56cpus:14d,idle:3d --target 0.8 --json\n\n"
    "\b\nexit codes: 0 ok, 2 bad option or plan, 3 sshare failed, 6 no snapshot / unknown user,\n"
    "7 asked for another user's data without being an admin, 130 interrupted"
)


def forecast(
    user: Annotated[Optional[str], typer.Option("--user", "-u", help="Whose forecast (default: yours). Another user's needs "
                                                "root or an fscontrol admin.")] = None,
    account: Annotated[Optional[str], typer.Option("--account", "-A", help="Only this account (default: every account you "
                                                   "have).")] = None,
    plan: Annotated[Optional[str], typer.Option(
        "--plan", help="A campaign, in order: comma-separated '<N>cpus:<duration>' (GPUs: '<N>cpus+<M>gpus:<duration>', billed under the partition's weights) and 'idle:<duration>' parts, durations "
        "in s, m, h, d, w, e.g. '56cpus:14d,idle:3d,28cpus:7d'. The canonical form.")] = None,
    steps: Annotated[Optional[list[str]], typer.Option(
        "--run", "--idle", metavar="STEP",
        help="One campaign step, repeatable, kept in command-line order: --run 56cpus:14d (56 cores for 14 days), "
        "--idle 3d (nothing for 3 days). Same as --plan; do not mix the two.")] = None,
    job: Annotated[Optional[int], typer.Option(
        "--job", "-j",
        help="The pending job whose priority to forecast (default: your earliest pending job in the account, from "
        "squeue; with none, a job you submit now). It matters on small half-lives: a decay pass charges the jobs "
        "listed before yours before it computes your fair-share.")] = None,
    target: Annotated[float, typer.Option("--target", help="The fair-share to recover to (0 < F < 1).")] = 0.5,
    published: PublishedOpt = None,
    source: Annotated[str, typer.Option(
        "--source", "-s",
        help="Where your own sshare row comes from: 'live' (runs `sshare -l -P`), 'published' (the "
        "published file's rows, when PrivateData allows), or a recorded sample folder.")] = "live",
    cluster: ClusterOpt = None,
    db: DbOpt = None,
    config_path: ConfigOpt = None,
    max_age: Annotated[str, typer.Option("--max-age", help="Warn when the published snapshot is older than this (s, m, h, "
                                         "d); older than a day is an error.")] = "1h",
    stale_ok: Annotated[bool, typer.Option("--stale-ok", help="Forecast from a snapshot older than a day anyway.")] = False,
    horizon: Annotated[Optional[str], typer.Option("--horizon", help="How far the chart and trajectory reach, e.g. 60d "
                                                   "(default: plan + recovery).")] = None,
    billing_per_core: Annotated[Optional[float], typer.Option(
        "--billing-per-core", help="Bill a CPU plan at this per core (its TRESBillingWeights x the QOS UsageFactor) "
        "instead of the published partition weights.")] = None,
    partition: Annotated[Optional[str], typer.Option(
        "--partition", "-p", help="Bill the plan under this partition's TRESBillingWeights (default: the cluster's "
        "Default=YES partition), e.g. --plan 4cpus+2gpus:10h -p gpu.")] = None,
    qos: Annotated[Optional[str], typer.Option(
        "--qos", "-q", help="Bill the plan at this QOS's UsageFactor (default: the QOS Slurm gives your job "
        "without --qos: the association's DefaultQOS, for -A or your default account, else normal).")] = None,
    json_out: JsonOpt = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Also draw F over time into this PNG (needs the 'plot' "
                                                 "extra: matplotlib).")] = None,
    now: Annotated[Optional[float], typer.Option("--now", hidden=True, help="Pretend it is this POSIX time (tests).")] = None,
    version: VersionOpt = False,
) -> None:
    """Your fair-share: F now and why (usage, share, the usage that halves it), when it is back at
    --target if you stop, how many core-hours halve it again, and what a planned campaign does to
    it, with a chart. Reads the snapshot the agent publishes and your own sshare row; shows
    nobody else's data. With nothing published, it forecasts from a recorded sample (--source
    FOLDER) or from the history --db, the config's agent.db or $FSCONTROL_DB names."""
    args = _arguments(dict(locals()))  # first: the options, as typer converted them
    from fscontrol.cli.common import _fail
    from fscontrol.errors import FscontrolError

    from fscontrol.forecast import request

    try:
        data = request.forecast(args)
    except FscontrolError as e:
        from fscontrol.forecast.service import StaleSnapshotError

        raise _fail(e, " (--stale-ok forecasts anyway)" if isinstance(e, StaleSnapshotError) else "") from None
    if json_out:
        import json

        typer.echo(json.dumps(data, indent=2, allow_nan=False))
        for w in data["warnings"]:
            typer.echo(f"fscontrol: warning: {w}", err=True)
    else:
        typer.echo(request.format_forecast(data))


def _arguments(params: dict):
    """The forecast's options as a ForecastRequest (the service reads it, and sets `now` for a
    recording). The text builds only the projections whose answers it says (`said_only`, as the
    web page): "if your account's other users stopped" where the recovery does not come; --json
    has every field."""
    from fscontrol.forecast.request import ForecastRequest

    return ForecastRequest(**{k: v for k, v in params.items() if k not in ("version", "json_out")},
                           said_only=not params["json_out"])
