"""The command line: each command reads its options, calls one library function, prints.

One framework, typer (pinned below 0.29 in pyproject.toml: 0.29 coerces every option through
pydantic, about 70 ms a start; docs/cli.md). The options several commands share are defined once
(fscontrol.cli.options); `forecast` and `collect` live in their own modules. The console script
(fscontrol.cli.main) builds only the command it runs (`only` below), and each command imports
what it needs inside its function, so a command pays start-up only for what it uses.

This is the only place where errors become messages and exit codes:
  0 ok · 1 error · 2 bad configuration or usage · 3 Slurm command failed or unreadable ·
  4 history database locked/unreadable · 5 another tick is running · 6 not found (no snapshot,
  unknown user) · 7 refused as unsafe · 130 interrupted (Ctrl-C), one line saying what.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from fscontrol.cli import collect as collect_cmd
from fscontrol.cli import forecast as forecast_cmd
from fscontrol.cli.options import (
    ClusterOpt,
    ConfigOpt,
    DbOpt,
    DefaultsOpt,
    FieldsOpt,
    HelpFormatOpt,
    JsonOpt,
    NoHeaderOpt,
    ParsableOpt,
    PublishedOpt,
    SourceOpt,
)
from fscontrol.errors import ConfigError, FscontrolError, NotFoundError

# what an interrupt leaves behind, said in the one line it prints (the rest: "stopped")
ACTING = ("tick", "control", "gate")


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


class Group(TyperGroup):
    """The app's click group (typer's documented `cls=`): an interrupt (Ctrl-C, SIGINT) in any
    command ends it with one line on stderr and exit code 130, not a traceback nor silence."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            typer.echo(interrupted_line(ctx.invoked_subcommand), err=True)
            raise typer.Exit(130) from None


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


def _version(value: bool) -> None:
    if value:
        from fscontrol import __version__

        typer.echo(f"fscontrol {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print fscontrol's version and exit.")] = False,
) -> None:
    """Fair-share control agent for Slurm clusters."""


def _table_alone(rows, fields, parsable: bool, noheader: bool, notes=()) -> None:
    """-P/-n: the table alone on stdout (what scripts read), the report's other lines on stderr."""
    from fscontrol.report import admin as report

    for n in notes:
        typer.echo(f"fscontrol: note: {n}", err=True)
    _print_lines(report.table_lines(rows, fields, parsable=parsable, header=not noheader))


AgentApplyOpt = Annotated[bool, typer.Option("--apply", help="Act (default: plan only, as in the config's agent.apply).")]


def _fail(e: FscontrolError) -> typer.Exit:
    typer.echo(f"fscontrol: error: {e}", err=True)
    return typer.Exit(e.exit_code)


def _source(spec: str, cluster: str | None, timeout_s: float = 60.0):
    from fscontrol.slurm.source import from_spec

    return from_spec(spec, cluster, timeout_s)


def _db(path: Path | None, create: bool = True, readonly: bool | None = None):
    from fscontrol.store import history as store

    # a report that creates nothing reads without writing: no migration, no new file
    return store.open_db(path or store.default_db_path(), create=create, readonly=not create if readonly is None else readonly)


app.command(epilog=collect_cmd.EPILOG)(collect_cmd.collect)


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

    from fscontrol.agent import config
    from fscontrol.report import admin as report
    from fscontrol.store import history as store

    if helpformat:
        typer.echo(report.format_fields_help())
        return
    if ustar is not None and not (math.isfinite(ustar) and ustar > 0):
        raise _fail(ConfigError(f"--target must be a number of core-hours > 0, got {ustar:g}"))
    try:
        columns = report.status_fields(fields, long=long, tree=tree)
        cfg = config.load(config_path)
        database = _db(db or (Path(cfg.db) if cfg.db else None), create=source is not None)
        if source is not None:
            from fscontrol.agent import pipeline

            pipeline.collect(_source(source, cluster), database)
        snap = store.load_snapshot(database, cluster=cluster)
        cc = cfg.cluster(snap.cluster)
        data = report.status_data(
            snap,
            target_core_hours=ustar if ustar is not None else cc.target_core_hours,
            dummy=cc.dummy_key,
            reference=cc.reference_share,
            control_history=store.decision_history(database, snap.cluster, 60),
            only_users=[x for x in (users or "").split(",") if x],
            only_accounts=[x for x in (accounts or "").split(",") if x],
            tree=tree,
            columns=not json_out,  # the text reads the table a column at a time; --json prints its rows
        )
    except FscontrolError as e:
        raise _fail(e) from None
    if data["priority_mode"] == "fair_tree":  # Fair Tree's columns: rank and LevelFS, no halving
        columns = report.status_fields(fields, long=long, tree=tree, fair_tree=True)
    if json_out:
        typer.echo(json.dumps(data, indent=2))
    elif parsable or noheader:
        for w in data["warnings"]:
            typer.echo(f"fscontrol: warning: {w}", err=True)
        _print_lines(report.table_lines(data["table"], columns, parsable=parsable, header=not noheader, tree=tree))
    else:
        _print_lines(report.status_lines(data, columns))


def _print_lines(lines, chunk: int = 4096) -> None:
    """Write a report line by line in chunks (100,000 rows are never one string); a reader that
    stops early (`| head`) ends the output quietly, as it does for sshare."""
    import itertools
    import os

    out = sys.stdout
    try:
        it = iter(lines)
        while block := list(itertools.islice(it, chunk)):
            out.write("\n".join(block))
            out.write("\n")
        out.flush()
    except BrokenPipeError:
        try:  # the interpreter's own flush at exit would fail again: point stdout at /dev/null
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        except (OSError, ValueError):
            pass
        raise typer.Exit(0) from None


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
    typer.echo(json.dumps(data, indent=2) if json_out else whymod.format_all(data))


@app.command()
def history(
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    since: Annotated[str, typer.Option("--since", "-S", help="How far back: a duration (7d, 12h, 90m) or a POSIX time.")] = "7d",
    json_out: JsonOpt = False,
    config_path: ConfigOpt = None,
    png: Annotated[Optional[Path], typer.Option("--png", help="Also draw the record over time into this PNG (needs the 'plot' extra: matplotlib).")] = None,
    html_out: Annotated[Optional[Path], typer.Option("--html", help="Also draw it into this self-contained HTML page (inline SVG, no external request).")] = None,
) -> None:
    """The agent's record over a period: the halving against u* at each decision (as the agent
    saw it and as Slurm used it at the next pass), d and the padding over time, the actions by
    kind and outcome, failed ticks with their errors; --json adds the ticks and the gate's holds
    per time bucket (the `timeline` that --png and --html draw)."""
    import time

    from fscontrol.agent import config
    from fscontrol.report import historychart
    from fscontrol.report import admin as report
    from fscontrol.store import history as store
    from fscontrol.model.allocations import parse_period

    try:
        for path, opt in ((png, "--png"), (html_out, "--html")):
            if path is not None:
                historychart.check_output(path, opt)
        cfg = config.load(config_path)
        database = _db(db or (Path(cfg.db) if cfg.db else None), create=False)
        now = time.time()
        try:
            start = float(since)  # a POSIX time; a small number is a duration in seconds
        except ValueError:
            start = None
        if start is None or start < 1e9:
            start = now - parse_period(since, where="--since")
        name = cluster or _only_cluster(database)
        data = report.history_data(name, start, now, store.history(database, name, start, now))
        if json_out or png or html_out:
            data["timeline"] = historychart.timeline(database, name, start, now)
        if png is not None:
            historychart.plot_png(data, png)
        if html_out is not None:
            historychart.write_html(data, html_out)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(data, indent=2) if json_out else report.format_history(data))


def _only_cluster(database) -> str:
    from fscontrol.store import history as store
    from fscontrol.errors import NotFoundError

    names = store.clusters(database)
    if len(names) != 1:
        raise NotFoundError("no history yet" if not names else f"several clusters in the history, pick one with -M: {', '.join(names)}")
    return names[0]


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
    from fscontrol.agent import config, pipeline

    try:
        from fscontrol.store import history as store

        cfg = config.load(config_path)
        path = db or (Path(cfg.db) if cfg.db else None) or store.default_db_path()
        rw = not Path(path).exists() or store.writable(path)  # a read-only history: fitted, shown, not stored
        name, n_snap, r = pipeline.fit_history(_db(path, create=False, readonly=not rw), cluster, last=last, record_fit=rw)
    except FscontrolError as e:
        raise _fail(e) from None
    data = {
        "cluster": name,
        "snapshots": n_snap,
        "half_life_s": r.half_life_s,
        "half_life_se_s": r.half_life_se_s,
        "configured_half_life_s": r.configured_half_life_s,
        "expected_half_life_s": r.expected_half_life_s,
        "drift": r.drift,
        "drifted": r.drifted,
        "residuals": r.n_residuals,
        "breaks": r.n_breaks,
        "outliers": r.n_outliers,
        "converged": r.converged,
        "stored": rw,
    }
    if json_out:
        typer.echo(json.dumps(data, indent=2))
        return
    drift = "-" if r.drift is None else f"{r.drift:+.2%}"
    typer.echo(
        f"{name}: fitted half-life {r.half_life_s:,.1f} s ± {r.half_life_se_s:,.1f} s "
        f"(configured {r.configured_half_life_s:,.0f} s, Slurm's 1-0.693/T gives {r.expected_half_life_s:,.1f} s; "
        f"drift {drift}{', DRIFTED' if r.drifted else ''})\n"
        f"from {r.n_residuals} snapshot pairs over {n_snap} snapshots; {r.n_breaks} breaks (resets), {r.n_outliers} outliers left out"
        + ("" if rw else "\nnot stored: the history is read-only to you")
    )


@app.command()
def control(
    switch: Annotated[Optional[str], typer.Argument(
        metavar="[off|on]",
        help="off: undo what the agent did on the cluster and stop acting there (plan; --apply does it); "
             "on: let the agent act again.")] = None,
    config_path: ConfigOpt = None,
    source: SourceOpt = "live",
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Carry the plan out (default: dry run, nothing in Slurm changes).")
    ] = False,
    json_out: JsonOpt = False,
    parsable: ParsableOpt = False,
    noheader: NoHeaderOpt = False,
    fields: FieldsOpt = None,
    helpformat: HelpFormatOpt = False,
) -> None:
    """Plan (and with --apply, carry out) what keeps fair-share halving at the target u*:
    the damping factor (scontrol fsdampeningfactor), padding by the dummy association's jobs,
    or both, as the config's `method` says. Every decision and command is recorded with its
    reason. Without --apply (or agent.apply = true in the config) nothing in Slurm changes.

    `control off --apply` turns it all back: cancels the padding jobs, puts the padding QOS's
    UsageFactor, slurm.conf's d line and the runtime d back to what they were before the agent
    first changed them (from the history), releases the agent's holds, and keeps the agent from
    acting on the cluster (control and gate) until `control on`.

    Slurm's conventions for the table of commands: -P pipe-separated, -n no header, -o the
    fields (--helpformat lists them); -P and -n print the table alone, the decision's notes go to
    stderr; --json prints everything."""
    from fscontrol.agent import loop as agent
    from fscontrol.agent import pipeline
    from fscontrol.report import admin as report

    if helpformat:
        typer.echo(report.format_fields_help(report.CONTROL_FIELDS))
        return
    if switch not in (None, "off", "on"):
        raise _fail(ConfigError(f"`fscontrol control {switch}`: the only words after control are off and on"))
    try:
        columns = report.pick_fields(fields, report.CONTROL_FIELDS, report.CONTROL_DEFAULT_FIELDS)
        if switch is not None and (parsable or noheader or fields):
            raise ConfigError(f"-P, -n and -o are for the plan's table; `control {switch}` has none (--json for scripts)")
        cfg, path, _, make_source = _agent_setup(config_path, db, source, cluster)
        if switch == "on":
            name = agent.set_acting(cfg, path, cluster, by=None)
            typer.echo(json.dumps({"cluster": name, "acting": True}) if json_out else
                       f"{name}: the agent acts again from its next tick (control and gate, as configured)")
            return
        stages = pipeline.Stages(off="control off") if switch == "off" else pipeline.Stages(control=True)
        tick = agent.one_tick(cfg, make_source, path, cluster, apply=apply or cfg.apply, stages=stages, metrics=False)
    except FscontrolError as e:
        raise _fail(e) from None
    if switch == "off":
        data = report.off_data(tick)
        typer.echo(json.dumps(data, indent=2) if json_out else report.format_off(data))
        if any(a["status"] in ("failed", "unknown") for a in data["actions"]):
            raise typer.Exit(3)
        return
    data = report.control_data(tick.control)
    if json_out:
        typer.echo(json.dumps(data, indent=2))
    elif parsable or noheader:
        _table_alone(report.control_rows(data), columns, parsable, noheader, report.control_notes(data))
    else:
        typer.echo(report.format_control(data, columns))
    if any(a["status"] in ("failed", "unknown") for a in data["actions"]):
        raise typer.Exit(3)
    if data["advise_only"] and (apply or cfg.apply):  # asked to act, and it cannot: say so to scripts too
        from fscontrol.errors import UnsafeActionError

        reason = next((n for n in data["notes"] if n.startswith("advice only: ")), "advice only")
        raise _fail(UnsafeActionError(f"--apply: nothing was done, {reason}"))


def _agent_setup(config_path, db, source, cluster, defaults: bool | None = None):
    """The config, the history path and a source per cluster, as tick and run share them.
    `defaults` (tick and run: their --defaults): without a config file (--config or
    $FSCONTROL_CONFIG) the agent refuses to start unless it is True; None: the defaults are fine."""
    from fscontrol.agent import loop as agent
    from fscontrol.agent import config
    from fscontrol.store import history as store

    if defaults is False and config_path is None:
        raise ConfigError("no config file: give --config FILE (or set $FSCONTROL_CONFIG), or --defaults to run on the "
                          "built-in defaults (`fscontrol config check --json` lists them)")
    if defaults and config_path is not None:
        raise ConfigError(f"--defaults runs without a config file, and {config_path} is given (--config or "
                          "$FSCONTROL_CONFIG): give one of them")
    cfg = config.load(config_path)
    path = db or (Path(cfg.db) if cfg.db else store.default_db_path())
    live = source == "live"
    clusters = agent.clusters_to_serve(cfg, cluster, live)
    return cfg, Path(path), clusters, (lambda name: _source(source, name, cfg.slurm_timeout_s))


@app.command()
def tick(
    config_path: ConfigOpt = None,
    source: SourceOpt = "live",
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    apply: AgentApplyOpt = False,
    defaults: DefaultsOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """One full agent cycle for cron, for every cluster the config names (or -M one): collect,
    control (plan, or act with --apply), fit when due, the SFS gate when enabled and due, publish
    the snapshot for `forecast`, write the metrics file. A file lock keeps two ticks from
    overlapping (the second exits 5). One cluster's failure does not stop the others; the exit
    code is the first failure's.

    What it may touch with --apply: `scontrol fsdampeningfactor`, the padding QOS's UsageFactor,
    the dummy user's padding jobs, slurm.conf's FairShareDampeningFactor line (persist = true)
    and, with the gate on, the holds it marks (see `fscontrol gate --help`). Every command is
    recorded with its reason before it runs; the next tick settles any whose outcome a kill or a
    timeout left unknown. The whole tick runs within agent.tick_deadline."""
    from fscontrol.agent import loop as agent
    from fscontrol.report import admin as report

    try:
        cfg, path, clusters, make_source = _agent_setup(config_path, db, source, cluster, defaults)
        outcomes = agent.tick(cfg, make_source, path, clusters, apply=apply or cfg.apply)
    except FscontrolError as e:
        raise _fail(e) from None
    data = report.tick_data(outcomes)
    text = json.dumps(data, indent=2) if json_out else report.format_tick(data)
    if text:
        typer.echo(text)
    for o in outcomes:
        if o.error is not None:
            where = f"cluster {o.cluster}: " if o.cluster and len(clusters) > 1 else ""
            typer.echo(f"fscontrol: error: {where}{o.error}", err=True)
    codes = [o.error.exit_code for o in outcomes if o.error is not None]
    if codes:
        raise typer.Exit(codes[0])
    if any(a["status"] in ("failed", "unknown") for c in data["clusters"] for stage in ("control", "gate") if c.get(stage)
           for a in c[stage]["actions"]):
        raise typer.Exit(3)


@app.command()
def run(
    config_path: ConfigOpt = None,
    source: SourceOpt = "live",
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    apply: AgentApplyOpt = False,
    duration: Annotated[
        Optional[str], typer.Option("--for", help="Stop by itself after this long (e.g. 20m; for soak runs). Default: until SIGTERM.")
    ] = None,
    defaults: DefaultsOpt = False,
) -> None:
    """The agent as a service (APScheduler): per cluster, a tick every schedule.collect (control
    and fit when due, publish, metrics) and the SFS gate every schedule.gate. Logs to stderr.
    SIGTERM or Ctrl-C ends it cleanly after the running job; with agent.release_on_stop it then
    releases every hold it placed. Shares the tick lock with cron's `fscontrol tick`."""
    import logging
    import signal
    import threading

    from fscontrol.agent import loop as agent
    from fscontrol.model.allocations import parse_period

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # its per-run lines would drown ours
    stop = threading.Event()
    try:
        cfg, path, clusters, make_source = _agent_setup(config_path, db, source, cluster, defaults)
        limit = parse_period(duration, where="--for") if duration else None
    except FscontrolError as e:
        raise _fail(e) from None
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    if limit is not None:
        timer = threading.Timer(limit, stop.set)
        timer.daemon = True
        timer.start()
    counts = agent.run_loop(cfg, make_source, path, clusters, apply=apply or cfg.apply, stop=stop)
    typer.echo(f"fscontrol run: stopped; {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped (lock held)", err=True)


@app.command()
def metrics(
    config_path: ConfigOpt = None,
    db: DbOpt = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the file atomically (default: print; the config's agent.metrics is what tick and run write).")] = None,
) -> None:
    """Prometheus text exposition of the history (usage, d, halving vs target, padding, per-user F
    and implied halving, agent holds, tick durations and failures), for node_exporter's textfile
    collector. `tick` and `run` write it after every tick when agent.metrics is set."""
    from fscontrol.agent import config
    from fscontrol.agent import pipeline

    try:
        cfg = config.load(config_path)
        database = _db(db or (Path(cfg.db) if cfg.db else None), create=False)
        if out is not None:
            typer.echo(f"wrote {pipeline.write_metrics(database, cfg, out)}")
        else:
            typer.echo(pipeline.metrics_text(database, cfg), nl=False)
    except FscontrolError as e:
        raise _fail(e) from None


config_app = typer.Typer(help="The agent's configuration file.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("check")
def config_check(config_path: ConfigOpt = None, json_out: JsonOpt = False) -> None:
    """Validate the config file and print the effective settings (defaults filled in)."""
    from fscontrol.agent import config

    try:
        cfg = config.load(config_path)
    except FscontrolError as e:
        raise _fail(e) from None
    eff = config.effective(cfg)
    if json_out:
        typer.echo(json.dumps(eff, indent=2))
        return
    typer.echo(f"{config_path or 'no config file'}: valid. apply = {str(cfg.apply).lower()}, "
               f"history {cfg.db or '(default)'}, collect every {cfg.schedule['collect']:g} s")
    for name, cc in sorted(cfg.clusters.items()):
        target = "-" if cc.target_core_hours is None else f"{cc.target_core_hours:g} core-hours"
        gate = f", gate {cc.gate.action} over {len(cc.allocations)} allocation(s)" if cc.gate.enabled else ""
        typer.echo(f"  cluster {name}: method {cc.method}, u* {target}, reference share {cc.reference_share}{gate}")
    typer.echo("(--json prints every setting, defaults filled in)")


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
) -> None:
    """Record a live cluster into a sample folder (outputs, exact commands, Slurm version, time),
    which --source can replay without Slurm; with --history, a period the simulator can replay.
    The folder is private (0700, files 0600)."""
    from fscontrol.model.allocations import parse_period
    from fscontrol.slurm.source import LiveSlurm, capture as do_capture

    try:
        history_s = None if history is None else parse_period(history, where="--history")
        meta = do_capture(LiveSlurm(cluster=cluster), folder, window_s=window, note=note, since=since, history_s=history_s)
    except FscontrolError as e:
        raise _fail(e) from None
    except OSError as e:
        typer.echo(f"fscontrol: error: {folder}: {e.strerror or e}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"recorded {meta['cluster']} (Slurm {meta['slurm_version']}) at {meta['captured_at']} into {folder}")


app.command(epilog=forecast_cmd.EPILOG)(forecast_cmd.forecast)


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

    from fscontrol.agent import config
    from fscontrol.agent import pipeline

    try:
        cfg = config.load(config_path)
        database = _db(db or (Path(cfg.db) if cfg.db else None), create=False)
        path, data = pipeline.publish_latest(database, cfg, cluster, out=out, admins=admin or ())
    except FscontrolError as e:
        raise _fail(e) from None
    if json_out:
        typer.echo(json.dumps({"path": str(path), "cluster": data["cluster"], "snapshot_id": data["snapshot_id"], "per_association": data["per_association"]}))
    else:
        rows = "per-association rows" if data["per_association"] else "no per-user rows (PrivateData=usage)"
        typer.echo(f"published snapshot {data['snapshot_id']} of {data['cluster']} to {path} ({rows})")


@app.command()
def web(
    port: Annotated[int, typer.Option("--port", help="TCP port (0: any free one).")] = 8080,
    host: Annotated[str, typer.Option("--host", help="Address to listen on. Default loopback only.")] = "127.0.0.1",
    published: PublishedOpt = None,
    source: Annotated[str, typer.Option("--source", "-s", help="As `fscontrol forecast --source`: live, published, or a sample folder.")] = "live",
    cluster: ClusterOpt = None,
    no_token: Annotated[bool, typer.Option("--no-token", help="Serve without the secret ?token= (anyone who can reach the port sees your page).")] = False,
) -> None:
    """Your fair-share forecast as a web page, served as you (loopback only by default): F now and why,
    the recovery curve, and a campaign planner. Prints the address to open (with a secret token, so other
    users of a shared login node cannot read it). Sites mount fscontrol.web.wsgi or run it in Open OnDemand."""
    import secrets

    from fscontrol.web.app import serve

    try:
        serve(host, port, published=str(published) if published else None, source=source, cluster=cluster,
              token=None if no_token else secrets.token_urlsafe(18), ready=lambda url: typer.echo(f"serving {url}", err=True))
    except OSError as e:
        raise _fail(FscontrolError(f"cannot serve on {host}:{port}: {e.strerror or e}")) from None


@app.command()
def gate(
    config_path: ConfigOpt = None,
    source: SourceOpt = "live",
    db: DbOpt = None,
    cluster: ClusterOpt = None,
    apply: Annotated[bool, typer.Option("--apply", help="Hold/release (or nice) for real (default: dry run).")] = False,
    release_all: Annotated[bool, typer.Option("--release-all", help="Undo every hold the agent placed (and only those).")] = False,
    json_out: JsonOpt = False,
    parsable: ParsableOpt = False,
    noheader: NoHeaderOpt = False,
    fields: FieldsOpt = None,
    helpformat: HelpFormatOpt = False,
    actions_table: Annotated[bool, typer.Option("--actions", help="With -P/-n/-o: the table of planned actions instead "
                                                "of the accounts'.")] = False,
) -> None:
    """Simultaneous Fair-Share gate: per account, occupancy now vs target (factor x award/period);
    hold (or demote by nice) the pending jobs of accounts over target while accounts at or under
    target have jobs waiting; release the agent's own holds when that stops. Dry run unless --apply.

    What it may touch: a held job gets `scontrol update JobId=N Priority=0
    AdminComment=fscontrol:hold` (the mark in the same RPC); a release is `scontrol release N`
    and clearing that mark. It releases only jobs whose ledger row, mark and hold all agree; jobs
    held by users or admins, and jobs with anyone's AdminComment, are never touched. See the
    marks with `squeue -O JobID,Reason,admin_comment`; docs/agent.md has the whole list.

    Slurm's conventions for the accounts table (--actions: the actions'): -P pipe-separated, -n
    no header, -o the fields (--helpformat lists them); -P and -n print the table alone, the
    rest of the report goes to stderr; --json prints everything."""
    from fscontrol.agent import loop as agent
    from fscontrol.agent import pipeline
    from fscontrol.report import admin as report
    from fscontrol.act.gate import format_gate_plan, gate_notes

    if helpformat:
        typer.echo("accounts table:\n" + report.format_fields_help(report.GATE_FIELDS) + "\n\nwith --actions:\n"
                   + report.format_fields_help(report.GATE_ACTION_FIELDS))
        return
    try:
        if actions_table and not (parsable or noheader or fields):
            raise ConfigError("--actions picks the table -P, -n or -o print; give one of them (the plain report shows both)")
        report.pick_fields(fields, report.GATE_ACTION_FIELDS if actions_table else report.GATE_FIELDS,
                           report.GATE_ACTION_DEFAULT_FIELDS if actions_table else report.GATE_DEFAULT_FIELDS)  # before any tick
        cfg, path, _, make_source = _agent_setup(config_path, db, source, cluster)
        res = agent.one_tick(cfg, make_source, path, cluster, apply=apply or cfg.apply,
                             stages=pipeline.Stages(gate=True, release_all=release_all), metrics=False).gate
    except FscontrolError as e:
        raise _fail(e) from None
    if json_out:
        data = res.plan.to_dict()
        data["mode"] = "apply" if res.applied else "dry-run"
        data["results"] = [{"job_id": a.job_id, "kind": a.kind, "status": a.status, "output": a.output} for a in res.actions]
        typer.echo(json.dumps(data, indent=2))
    elif parsable or noheader:
        plan = res.plan
        notes = ([] if actions_table else [f"{len(plan.actions)} action(s) planned (--actions lists them)"]) + gate_notes(plan)
        if res.applied:
            notes += [f"{a.status} {' '.join(a.argv)}  {a.output}" for a in res.actions]
        elif res.actions:
            notes.append("dry run: nothing was changed; --apply carries the plan out")
        _table_alone(report.gate_rows(plan, actions_table), report.gate_fields(plan, fields, actions_table), parsable,
                     noheader, notes)
    else:
        if actions_table:  # -o with --actions: the actions table alone, padded
            _print_lines(report.table_lines(report.gate_rows(res.plan, True), report.gate_fields(res.plan, fields, True)))
        else:
            typer.echo(format_gate_plan(res.plan) if fields is None else report.format_gate(res.plan, report.gate_fields(res.plan, fields)))
        if res.applied:
            for a in res.actions:
                typer.echo(f"{a.status:8} {' '.join(a.argv)}  {a.output}")
        elif res.actions:
            typer.echo("(dry run: nothing was changed; --apply carries the plan out)")
    if any(a.status in ("failed", "unknown") for a in res.actions):
        raise typer.Exit(3)


@app.command()
def simulate(
    workload: Annotated[
        str,
        typer.Argument(help="An SWF log (.swf, .swf.gz), a scenario (.toml, .json), section9[:SEED] (Steffen's experiment), "
                       "or a folder recorded by `fscontrol capture --history` (your own cluster's jobs)."),
    ],
    policy: Annotated[
        Optional[list[str]],
        typer.Option("--policy", "-p", help="fcfs, easy, linear-{eligible,size}, sfs-{eligible,size}, gate-{hold,nice}-{eligible,size}, "
                     "conservative, conservative-linear-{eligible,size}, mf-classic, mf-fairtree; +nobf turns backfill off, +cons "
                     "makes it conservative (fcfs and linear orders); moldable jobs: mold-{rigid-cons,rigid-easy,greedy,wpfs-cons,"
                     "wpfs,wpfs-cat-xf,sqrtfs,sqrtfs-par,sqrtfs-cat,sqrtfs-xf,sqrtfs-cat-xf} (docs/moldable.md). Repeat to compare. "
                     "Default: easy, or the multifactor runs the options below ask for."),
    ] = None,
    procs_per_node: Annotated[
        Optional[int],
        typer.Option(help="SWF: processors per node (nodes = processors / this); default MaxProcs / MaxNodes from the log's header, else 8."),
    ] = None,
    overrun: Annotated[
        str,
        typer.Option(help="SWF: jobs that ran past their request: 'extend' the request to the run time, or 'kill' "
                     "them at the request (as a Slurm time limit would)."),
    ] = "extend",
    processors: Annotated[
        str,
        typer.Option(help="SWF: processor count from field 5 'allocated' (field 8 when unknown) or field 8 'requested'."),
    ] = "allocated",
    limit: Annotated[Optional[int], typer.Option(help="Only the first N jobs.")] = None,
    unit: Annotated[str, typer.Option(help="Captured folder: schedule 'cpus' (the machine = the nodes' CPUs) or 'nodes'.")] = "cpus",
    machine: Annotated[Optional[int], typer.Option(help="Captured folder: the machine's size in --unit (default: from its nodes.txt).")] = None,
    by: Annotated[str, typer.Option(help="Report per 'account' or 'user'.")] = "account",
    gantt: Annotated[bool, typer.Option("--gantt", help="Print a Gantt chart of the first policy's schedule.")] = False,
    png: Annotated[Optional[Path], typer.Option("--png", help="Write the Gantt chart as PNG (needs matplotlib: the 'plot' extra).")] = None,
    sweep: Annotated[Optional[Path], typer.Option("--sweep", help="A sweep file (TOML: [[runs]], each a preset plus overrides), "
                                                  "run beside the -p ones; prints one comparison line per run.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Run the configurations in this many processes side by side.")] = 1,
    chart: Annotated[Optional[Path], typer.Option("--chart", help="Draw the runs' comparison into this PNG (needs matplotlib).")] = None,
    sbatch: Annotated[Optional[Path], typer.Option("--sbatch", help="Do not run: write a Slurm job array into this new folder "
                                                   "(one task per configuration); `fscontrol simulate-merge DIR` reads the results.")] = None,
    progress: Annotated[bool, typer.Option(help="A progress bar on stderr (only on a terminal).")] = True,
    slurm_conf: Annotated[Optional[Path], typer.Option("--slurm-conf", help="Slurm's priority/multifactor with this slurm.conf's "
                          "Priority* settings (weights, PriorityMaxAge, half-life, PriorityCalcPeriod, d, PriorityFlags); `scontrol show "
                          "config` output too. Default for a captured folder: its own config.txt.")] = None,
    control: Annotated[Optional[list[str]], typer.Option("--control", help="The agent's controller in the loop: none (static d), "
                       "damping, padding, padding-pulse, hybrid, hybrid-pulse. Repeat to compare. Multifactor, classic.")] = None,
    u_star: Annotated[Optional[float], typer.Option("--u-star", help="u*: the node-hours that halve a reference user's F.")] = None,
    half_life: Annotated[Optional[str], typer.Option("--half-life", help="PriorityDecayHalfLife, e.g. 7-0 (overrides slurm.conf).")] = None,
    calc_period: Annotated[Optional[str], typer.Option("--calc-period", help="PriorityCalcPeriod, e.g. 5 (minutes).")] = None,
    damping: Annotated[Optional[int], typer.Option("--damping", help="FairShareDampeningFactor d (static, or where control starts).")] = None,
    fairshare: Annotated[Optional[str], typer.Option("--fairshare", help="classic or fairtree (overrides PriorityFlags).")] = None,
    reconfigure_at: Annotated[Optional[list[float]], typer.Option("--reconfigure-at", help="Hours from the start: a reconfigure "
                              "puts slurm.conf's d back. Repeat.")] = None,
    agent_down: Annotated[Optional[list[str]], typer.Option("--agent-down", help="START_H:HOURS: the agent is down (no control). Repeat.")] = None,
    gate: Annotated[Optional[str], typer.Option("--gate", help="Multifactor runs with the agent's gate on top: hold or nice "
                    "(needs the workload's allocations: a scenario file or section9).")] = None,
    halving_png: Annotated[Optional[Path], typer.Option("--halving-png", help="Write H/u* over time as PNG (matplotlib: the 'plot' extra).")] = None,
    sigma: Annotated[float, typer.Option(help="mold-*: Downey's sigma (0: perfect scalability).")] = 0.0,
    rf: Annotated[float, typer.Option("--rf", help="mold-*: range factor (1: any size 1..N; 2: half the range around the trace size).")] = 1.0,
    lf: Annotated[float, typer.Option("--lf", help="mold-*: load factor (run times x LF; 1.25 = LF 125%).")] = 1.0,
    avg_par: Annotated[str, typer.Option(help="mold-*: Downey's A: 'machine', 'trace' (the job's size) or a number.")] = "machine",
    xfactor: Annotated[float, typer.Option(help="mold-*: Xfactor reservation threshold, (ESRT + wait) / ESRT.")] = 2.0,
    estimates: Annotated[str, typer.Option(help="mold-*: plan with the log's 'user' requests or 'exact' run times.")] = "user",
    mold_backfill: Annotated[
        str, typer.Option(help="mold-* schedule-time: a job without reservation starts if its 'best' size starts now, or on any size that fits 'now'.")
    ] = "best",
    share_over: Annotated[
        str, typer.Option(help="mold-*: a fair-share limit's sum runs over the 'system' (waiting and running jobs) or the 'queue'.")
    ] = "system",
    categories_png: Annotated[
        Optional[Path], typer.Option("--categories-png", help="mold-*: write the per-category chart (needs matplotlib).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Simulate a scheduler on a workload: EASY or conservative backfill, multifactor linear
    priority with a reservation depth, Simultaneous Fair-Share's two passes, linear priority
    gated by fscontrol's SFS gate (hold or nice), or Slurm's priority/multifactor with fair-share,
    decay passes and the agent's controller in the loop. Reports wait, response, first-start
    latency, slowdown, throughput, utilization and makespan per account or user; under control,
    the halving H against u*. Several configurations (--sweep, --jobs, --chart, --sbatch) print
    one comparison line each. The mold-* policies let the scheduler pick each job's size
    (Srinivasan et al.'s moldable strategies) and add a per-category table (processor-seconds)
    against the first mold-* policy; they run on their own (not in a sweep)."""
    from fscontrol.sim import command as simcmd

    opts = simcmd.SimulateOptions(
        workload, policy, procs_per_node, overrun, processors, limit, unit, machine, by, gantt, png, sweep, jobs, chart,
        sbatch, progress, slurm_conf, control, u_star, half_life, calc_period, damping, fairshare, reconfigure_at,
        agent_down, gate, halving_png, sigma, rf, lf, avg_par, xfactor, estimates, mold_backfill, share_over,
        categories_png)
    try:
        out = simcmd.simulate(opts)
    except FscontrolError as e:
        raise _fail(e) from None
    except (ValueError, OSError) as e:
        typer.echo(f"fscontrol: error: {e}", err=True)
        raise typer.Exit(2) from None
    typer.echo(simcmd.render(out, json_out=json_out))


@app.command("simulate-merge")
def simulate_merge(
    folder: Annotated[Path, typer.Argument(help="The folder `fscontrol simulate ... --sbatch DIR` wrote.")],
    chart: Annotated[Optional[Path], typer.Option("--chart", help="Draw the runs' comparison into this PNG (needs matplotlib).")] = None,
    partial: Annotated[bool, typer.Option("--partial", help="Show the runs that have a result, leave the others out.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """The results of a sweep run as a Slurm job array (`simulate --sbatch`): the same table,
    --json and chart as the sweep run here."""
    from fscontrol.sim import sweep as sw

    try:
        res = sw.merge_results(folder, partial=partial)
        if not res:
            raise NotFoundError(f"no run of the sweep in {folder} has a result yet")
        if chart is not None:
            sw.write_chart(res, chart)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(json.dumps(res, indent=2) if json_out else sw.format_sweep(res))


@app.command("simulate-task", hidden=True)
def simulate_task(
    folder: Annotated[Path, typer.Argument(help="The sweep folder.")],
    index: Annotated[int, typer.Argument(help="The run's index ($SLURM_ARRAY_TASK_ID).")],
) -> None:
    """One array task of `simulate --sbatch`: run one configuration, write results/INDEX.json."""
    from fscontrol.sim import sweep as sw

    try:
        path = sw.run_task(folder, index)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(f"wrote {path}")


def only(name: str | None) -> None:
    """Keep only the command (or group) `name` in the app, when it is one: typer turns every
    registered command into a click command (signature, options, help) before it runs any, about
    10 ms a process at fscontrol's size, for the one the console script is asked. Anything else
    (no argument, --help, an unknown or mistyped name) keeps the whole app, so help and errors
    list every command as before."""
    def command_name(c) -> str:
        return c.name or c.callback.__name__.lower().replace("_", "-")

    commands = [c for c in app.registered_commands if command_name(c) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if commands or groups:
        app.registered_commands = commands
        app.registered_groups = groups


def main() -> None:  # pragma: no cover - console entry for `python -m fscontrol`
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
