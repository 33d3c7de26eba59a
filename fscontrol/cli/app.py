"""The command line: each command reads its options, calls one library function, prints.

One framework, typer (pinned below 0.29 in pyproject.toml: 0.29 coerces every option through
pydantic, about 70 ms a start; docs/cli.md). The options several commands share are defined once
(fscontrol.cli.options); one module per command group: the agent's commands (control, tick, run,
gate) in cli.agent, the simulator's in cli.simulate, `forecast` and `collect` in their own, the
reports and the rest here; cli.common holds what they share. The console script
(fscontrol.cli.main) builds only the command it runs (`only` below), and each command imports
what it needs inside its function, so a command pays start-up only for what it uses.

This is the only place where errors become messages and exit codes:
  0 ok · 1 error · 2 bad configuration or usage · 3 Slurm command failed or unreadable ·
  4 history database locked/unreadable · 5 another tick is running · 6 not found (no snapshot,
  unknown user) · 7 refused as unsafe · 130 interrupted (Ctrl-C), one line saying what;
  `doctor` (and `config check`) add 8 (a warning) and 9 (a fatal finding): fscontrol.report.doctor.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from typer.models import CommandInfo

from fscontrol.cli import startgc
from fscontrol.cli.common import _fail, _print_lines, _source
from fscontrol.cli.options import (
    ClusterOpt,
    ConfigOpt,
    DbOpt,
    JsonOpt,
    PublishedOpt,
    VersionOpt,
)
from fscontrol.errors import ConfigError, FscontrolError

from fscontrol.cli.interrupt import ACTING, SAID, interrupted_line  # noqa: E402,F401  (the console entry prints it too)


class _Lazy(CommandInfo):
    """A command of one of the command-group modules (cli.agent, cli.collect, cli.doctor,
    cli.forecast, cli.simulate), registered by name and imported when typer builds it (its
    callback read): a process builds only the command it runs (`only`), so `forecast` does not
    import the agent's or the simulator's command modules (issue #31: start-up paid only for what
    a command uses). `epilog`: the module's EPILOG."""

    def __init__(self, name: str, module: str, attr: str, epilog: bool = False, **kw) -> None:
        self._where, self._with_epilog = (module, attr), epilog
        super().__init__(name, **kw)

    def _module(self):
        import importlib

        return importlib.import_module(f"fscontrol.cli.{self._where[0]}")

    @property
    def callback(self):
        return getattr(self._module(), self._where[1])

    @callback.setter
    def callback(self, value) -> None:  # (CommandInfo.__init__ sets None)
        pass

    @property
    def epilog(self):
        return self._module().EPILOG if self._with_epilog else None

    @epilog.setter
    def epilog(self, value) -> None:
        pass


def _lazy(group: typer.Typer, name: str, module: str, attr: str | None = None, epilog: bool = False, **kw) -> None:
    group.registered_commands.append(_Lazy(name, module, attr or name.replace("-", "_"), epilog, **kw))


class Group(TyperGroup):
    """The app's click group (typer's documented `cls=`): an interrupt (Ctrl-C, SIGINT) in any
    command ends it with one line on stderr and exit code 130, not a traceback nor silence."""

    def invoke(self, ctx):
        startgc.done()  # the collector on again (fscontrol.cli.startgc)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            typer.echo(interrupted_line(ctx.invoked_subcommand), err=True)
            SAID.append(1)
            raise typer.Exit(130) from None


def _json(data, indent: int | None = 2) -> str:
    """A command's --json text (json imported here: a command that prints none does not import it)."""
    import json

    return json.dumps(data, indent=indent)


app = typer.Typer(
    name="fscontrol",
    cls=Group,
    help=(
        "Fair-share control agent for Slurm clusters that run classic fair-share "
        "(PriorityFlags=NO_FAIR_TREE).\n\n"
        "Reads sshare, sacct, squeue, sprio and `scontrol show config`, keeps a history in SQLite, "
        "and reports where fair-share stands. Nothing here changes the cluster unless a command "
        "is given --apply."
    ),
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # docstrings wrap as paragraphs instead of keeping their line breaks
)


@app.callback()
def _main(
    version: VersionOpt = False,
) -> None:
    """Fair-share control agent for Slurm clusters."""


_lazy(app, "collect", "collect", epilog=True)


@app.command()
def status(
    source: Annotated[
        Optional[str],
        typer.Option("--source", "-s", help="Collect from this source first ('live' or a sample folder)."),
    ] = None,
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    json_out: JsonOpt = False,
    ustar: Annotated[
        Optional[float],
        typer.Option("--target", help="Target halving usage u* in core-hours (overrides the config); adds the model comparison."),
    ] = None,
    config_path: ConfigOpt = None,
    users: Annotated[Optional[str], typer.Option("--users", "-u", help="Only these users' rows (comma-separated, as sshare -u).")] = None,
    accounts: Annotated[Optional[str], typer.Option("--accounts", "-A", help="Only the rows under these accounts (comma-separated, as sshare -A).")] = None,
    tree: Annotated[bool, typer.Option("--tree", help="The account tree, as sshare shows it: account rows, indented one space a level, "
                                       "with their users under them.")] = False,
    parsable: Annotated[bool, typer.Option("--parsable", "-P", help="The table alone, every field delimited by '|', no padding "
                                           "(as sshare -P); warnings go to stderr.")] = False,
    noheader: Annotated[bool, typer.Option("--noheader", "-n", help="The table's rows alone, no header lines (as sshare -n).")] = False,
    fields: Annotated[Optional[str], typer.Option("--format", "-o", help="The table's fields, comma-separated, in any case (as sshare -o; "
                                                  "--helpformat lists them).")] = None,
    long: Annotated[bool, typer.Option("--long", "-l", help="More fields: RawShares, RawUsage, NormUsage (as sshare -l).")] = False,
    helpformat: Annotated[bool, typer.Option("--helpformat", help="List the fields -o takes, and exit.")] = False,
) -> None:
    """Where fair-share stands: priority settings, total usage, halving usage, and a per-user table
    (RawUsage in core-hours, NormShares, EffectvUsage, F by fscontrol and by Slurm, implied
    halving u / -log2 F), from the latest snapshot in the history.

    Slurm's conventions for the table: -P pipe-separated, -n no header, -o the fields, -l more
    of them, --tree the account tree. -P and -n print the table alone (what scripts read);
    --json prints everything, whatever the table's options."""
    import math

    from fscontrol.agent import commands
    from fscontrol.report import status as rstatus
    from fscontrol.report import table as rtable
    from fscontrol.slurm.parse import gc_paused

    if helpformat:
        typer.echo(rstatus.format_fields_help())
        return
    if ustar is not None and not (math.isfinite(ustar) and ustar > 0):
        raise _fail(ConfigError(f"--target must be a number of core-hours > 0, got {ustar:g}"))
    # the snapshot, the table and the output make ~2 million objects and none is part of a cycle: a
    # collection meanwhile only re-scans them (0.1 s of `status --json`'s 1.0 at 100,000 associations)
    with gc_paused():
        try:
            columns = rstatus.status_fields(fields, long=long, tree=tree)
            data = commands.status(config_path, db, source=source, cluster=cluster, target=ustar,
                                   users=[x for x in (users or "").split(",") if x],
                                   accounts=[x for x in (accounts or "").split(",") if x], tree=tree)
        except FscontrolError as e:
            raise _fail(e) from None
        if data["priority_mode"] == "fair_tree":  # Fair Tree's columns: rank and LevelFS, no halving
            columns = rstatus.status_fields(fields, long=long, tree=tree, fair_tree=True)
        if json_out:
            out = sys.stdout
            for chunk in rtable.json_chunks(data):
                out.write(chunk)
            out.write("\n")
            out.flush()
        elif parsable or noheader:
            for w in data["warnings"]:
                typer.echo(f"fscontrol: warning: {w}", err=True)
            _print_lines(rtable.table_lines(data["table"], columns, parsable=parsable, header=not noheader, tree=tree))
        else:
            _print_lines(rstatus.status_lines(data, columns))


@app.command()
def why(
    job_id: Annotated[str, typer.Argument(help="The pending job's id (as squeue shows it).", metavar="JOBID")],
    cluster: ClusterOpt = None,
    json_out: JsonOpt = False,
    published: PublishedOpt = None,
) -> None:
    """Why is my job waiting? The reason in plain words (every Slurm reason: Priority, Resources,
    Dependency, limits such as AssocGrpCpuLimit, ...; an unknown one verbatim); whose hold it is:
    fscontrol's fair-share gate (its mark in AdminComment; the account over its target, its
    occupancy against the target, when the gate lifts it), an admin's or your own; its place in
    the queue, ties included and how Slurm breaks them (partition PriorityTier, then priority,
    then submit time, then job id); jobs of higher-tier partitions on its nodes, the agent's
    padding job included, and what the admin's padding_reservation would change; and its
    priority term by term (sprio). Any user may run it. --json: the same as data; its "category"
    says the kind of wait (priority, resources, fscontrol_hold, admin_hold, user_hold, limit,
    dependency, begin_time, partition, nodes, never, other, unknown...). Exit codes: 0 the job is
    pending and explained; 2 not a job id; 3 a Slurm command failed; 6 the job is not pending
    (running, finished, or unknown: one line on stderr saying which)."""
    from fscontrol.forecast import why as whymod

    try:
        data = whymod.why_job(_source("live", cluster), job_id, None if published is None else str(published))
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(_json(data) if json_out else whymod.format_all(data))


@app.command("start")
def start_cmd(
    user: Annotated[Optional[str], typer.Option("--user", "-u", help="Only these users' jobs (comma-separated), as squeue -u.")] = None,
    jobs: Annotated[Optional[str], typer.Option("--jobs", "-j", help="Only these pending jobs (comma-separated ids), as squeue -j.")] = None,
    cluster: ClusterOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """When will my job start? Every pending job's estimated start (your own first), played
    forward from the live queue through Slurm's scheduler model (main scheduler and backfill, as
    SchedulerParameters set them): running and pending jobs run each user's typical fraction of
    their time limit (sacct, 14 days; the limit when unknown), the range reaches to limits as run
    times, priorities are as now but for the age term and fair-share, recomputed at each priority
    pass; squeue --start's answer beside it. A job pending on a
    dependency (afterok, afterany, after) starts in the plan once the job it waits for has ended
    (or started). A job held by an association or QOS limit on running jobs or CPUs (MaxJobs,
    GrpJobs, GrpTRES=cpu, MaxJobsPU, MaxTRESPU=cpu, ...; its QOS's and its partition's QOS's)
    starts in the plan when the limit lets it.
    A job that waits for something else (held, another limit) gets that reason instead. Under PrivateData=jobs
    only the jobs squeue shows you are used (docs/start.md). Exit codes: 0 ok; 2 a bad -u/-j;
    3 a Slurm command failed; 6 a -j job is not pending."""
    import getpass
    import time

    from fscontrol.forecast import start as startmod, startview

    try:
        data = startmod.read_asked(_source("live", cluster), user, jobs, now=time.time(), me=getpass.getuser())
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(_json(data) if json_out else startview.render(data))


@app.command()
def history(
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    since: Annotated[str, typer.Option("--since", "-S", help="How far back: a duration (7d, 12h, 90m), a date (2026-11-23, 2026-11-23T13:15, as sacct -S) or a POSIX time.")] = "7d",
    json_out: JsonOpt = False,
    config_path: ConfigOpt = None,
    png: Annotated[Optional[Path], typer.Option("--png", help="Also draw the record over time into this PNG (needs the 'plot' extra: matplotlib).")] = None,
    html_out: Annotated[Optional[Path], typer.Option("--html", help="Also draw it into this self-contained HTML page (inline SVG, no external request).")] = None,
) -> None:
    """The agent's record over a period: the halving against u* at each decision (as the agent
    saw it and as Slurm used it at the next pass), d and the padding over time, the actions by
    kind and outcome, failed ticks with their errors; --json adds the ticks and the gate's holds
    per time bucket (the `timeline` that --png and --html draw)."""
    from fscontrol.agent import commands
    from fscontrol.report import ticks as rticks

    try:
        data = commands.history(config_path, db, cluster=cluster, since=since, timeline=json_out, png=png, html=html_out)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(_json(data) if json_out else rticks.format_history(data))


@app.command()
def decisions(
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    since: Annotated[str, typer.Option("--since", "-S", help="How far back: a duration (7d, 12h, 90m), a date (2026-11-23, 2026-11-23T13:15, as sacct -S) or a POSIX time.")] = "1d",
    json_out: JsonOpt = False,
    config_path: ConfigOpt = None,
    parsable: Annotated[bool, typer.Option("--parsable", "-P", help="The table alone, every field delimited by '|' (as sacct -P).")] = False,
    noheader: Annotated[bool, typer.Option("--noheader", "-n", help="The table's rows alone, no header lines (as sacct -n).")] = False,
    fields: Annotated[Optional[str], typer.Option("--format", "-o", help="The table's fields, comma-separated, in any case "
                                                  "(--helpformat lists them).")] = None,
    helpformat: Annotated[bool, typer.Option("--helpformat", help="List the fields -o takes, and exit.")] = False,
) -> None:
    """The control decisions one by one, oldest first: d before and after, the padding, the
    halving error the decision read (before acting) and the one it expected at the next decay
    pass, then that pass's time (slurmctld's own) and the halving Slurm's priorities used at it,
    with its error against u*, and the actions the decision planned with their outcome. A
    summary line counts the passes within 1% of u*. -P, -n and -o as sacct's; --json everything."""
    from fscontrol.agent import commands
    from fscontrol.report import decisions as rdecisions
    from fscontrol.report.status import format_fields_help

    if helpformat:
        typer.echo(format_fields_help(rdecisions.FIELDS))
        return
    try:
        cols = rdecisions.fields(fields)
        data = commands.decisions(config_path, db, cluster, since)
    except FscontrolError as e:
        raise _fail(e) from None
    if json_out:
        typer.echo(_json(data))
    else:
        _print_lines(rdecisions.decisions_lines(data, cols, parsable=parsable, header=not noheader))


@app.command()
def fit(
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    last: Annotated[Optional[int], typer.Option(help="Use only the last N snapshots.")] = None,
    config_path: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fit the usage decay rate to the stored history (weighted least squares) and compare the
    effective half-life with the configured PriorityDecayHalfLife. The fit is stored.

    Resets (RawUsage=0) and usage lost in a slurmctld crash are breaks, not data. Collect at an
    interval that is a multiple of PriorityCalcPeriod: usage moves only at decay passes."""
    from fscontrol.agent import commands
    from fscontrol.report import fit as rfit

    try:
        data = commands.fit(config_path, db, cluster, last=last)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(_json(data) if json_out else rfit.format_fit(data))


_lazy(app, "control", "agent")
_lazy(app, "tick", "agent")
_lazy(app, "run", "agent")


@app.command()
def metrics(
    config_path: ConfigOpt = None,
    db: DbOpt = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the file atomically (default: print; the config's agent.metrics is what tick and run write).")] = None,
) -> None:
    """Prometheus text exposition of the history (usage, d, halving vs target, padding, per-user F
    and implied halving, agent holds, tick durations and failures), for node_exporter's textfile
    collector. `tick` and `run` write it after every tick when agent.metrics is set."""
    from fscontrol.agent import commands

    try:
        res = commands.metrics(config_path, db, out)
    except FscontrolError as e:
        raise _fail(e) from None
    if "wrote" in res:
        typer.echo(f"wrote {res['wrote']}")
    else:
        typer.echo(res["text"], nl=False)


config_app = typer.Typer(help="The agent's configuration file.", no_args_is_help=True)
app.add_typer(config_app, name="config")


_lazy(config_app, "check", "doctor", "config_check")


@app.command()
def capture(
    folder: Annotated[Path, typer.Argument(help="Folder to write the sample into (created).")],
    cluster: ClusterOpt = None,
    window: Annotated[float, typer.Option(help="sacct look-back in seconds.")] = 3600.0,
    note: Annotated[str, typer.Option(help="A line saying what the cluster was doing.")] = "",
    since: Annotated[Optional[float], typer.Option(help="sacct from this POSIX time instead (a series of captures: "
                                                     "the previous one's end, so their windows tile).")] = None,
    history: Annotated[Optional[str], typer.Option(
        "--history", help="Also record what `fscontrol simulate FOLDER` needs to replay this long a period "
        "(e.g. 30d): the jobs with their eligible times, limits, CPUs and nodes, and the nodes.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FOLDER when it holds an earlier capture (a "
                                        "non-empty folder that is not a capture is always refused).")] = False,
) -> None:
    """Record a live cluster into a sample folder (outputs, exact commands, Slurm version, time),
    which --source can replay without Slurm; with --history, a period the simulator can replay.
    The folder is private (0700, files 0600)."""
    from fscontrol.agent import commands

    try:
        meta = commands.capture(folder, cluster, window_s=window, note=note, since=since, history=history, force=force)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(f"recorded {meta['cluster']} (Slurm {meta['slurm_version']}) at {meta['captured_at']} into {folder}")


_lazy(app, "forecast", "forecast", epilog=True)
_lazy(app, "doctor", "doctor", epilog=True)


@app.command()
def publish(
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    out: Annotated[
        Optional[Path],
        typer.Option("--out", help="File to write. Default: <publish_dir>/<cluster>.json ($FSCONTROL_PUBLISHED, the config's agent.publish_dir, or /var/lib/fscontrol/public)."),
    ] = None,
    admin: Annotated[
        Optional[list[str]], typer.Option("--admin", help="A user who may ask `forecast --user` for anyone (repeatable; root always may).")
    ] = None,
    config_path: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Publish the latest snapshot for `fscontrol forecast` (run as root, e.g. from cron after each
    collect): cluster-wide numbers (U, d, half-life, S_ref, H, lambda) in a world-readable JSON
    file, written atomically. With PrivateData=usage it holds no per-user (or per-account) rows."""
    from fscontrol.agent import commands

    try:
        data = commands.publish(config_path, db, cluster, out=out, admins=admin or ())
    except FscontrolError as e:
        raise _fail(e) from None
    if json_out:
        typer.echo(_json(data, None))
    else:
        rows = "per-association rows" if data["per_association"] else "no per-user rows (PrivateData=usage)"
        typer.echo(f"published snapshot {data['snapshot_id']} of {data['cluster']} to {data['path']} ({rows})")


@app.command()
def web(
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port, 0 to 65535 (0: any free one).")] = 8080,
    host: Annotated[str, typer.Option("--host", help="Address to listen on. Default loopback only.")] = "127.0.0.1",
    published: PublishedOpt = None,
    source: Annotated[str, typer.Option("--source", "-s", help="As `fscontrol forecast --source`: live, published, or a sample folder.")] = "live",
    cluster: ClusterOpt = None,
    no_token: Annotated[bool, typer.Option("--no-token", help="Serve without the secret ?token= (anyone who can reach the port sees your page).")] = False,
    workers: Annotated[int, typer.Option("--workers", min=1, max=64, help="Processes serving the page (each with its own threads); 2 on a busy site's login node.")] = 1,
) -> None:
    """Your fair-share forecast as a web page, served as you (loopback only by default): F now and why,
    the recovery curve, and a campaign planner. Prints the address to open (with a secret token, so other
    users of a shared login node cannot read it). Sites mount fscontrol.web.wsgi or run it in Open OnDemand."""
    import secrets

    from fscontrol.web.app import serve

    try:
        serve(host, port, published=str(published) if published else None, source=source, cluster=cluster,
              token=None if no_token else secrets.token_urlsafe(18), ready=lambda url: typer.echo(f"serving {url}", err=True),
              workers=workers)
    except FscontrolError as e:
        raise _fail(e) from None


_lazy(app, "gate", "agent")
_lazy(app, "simulate", "simulate")
_lazy(app, "simulate-merge", "simulate")
_lazy(app, "simulate-task", "simulate", hidden=True)


def only(name: str | None) -> None:
    """Keep only the command (or group) `name` in the app, when it is one: typer turns every
    registered command into a click command (signature, options, help) before it runs any, about
    10 ms a process at fscontrol's size, for the one the console script is asked. `--version` (or
    -V) first keeps none: it prints and exits before any is read. Anything else (no argument,
    --help, an unknown or mistyped name) keeps the whole app, so help and errors list every
    command as before."""
    def command_name(c) -> str:
        return c.name or c.callback.__name__.lower().replace("_", "-")

    if name in ("--version", "-V"):  # the app's own option, eager: it prints and exits before any command
        app.registered_commands, app.registered_groups = [], []
        return
    commands = [c for c in app.registered_commands if command_name(c) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if commands or groups:
        app.registered_commands = commands
        app.registered_groups = groups


def main() -> None:  # pragma: no cover - console entry for `python -m fscontrol`
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
