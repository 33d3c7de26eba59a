"""The agent's commands: `control`, `tick`, `run` and `gate` (registered on the app in
fscontrol.cli.app). Each reads its options, calls the agent's library (fscontrol.agent), prints."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from fscontrol.cli.common import _fail, _finish, _print_lines, _table_alone
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
    SourceOpt,
)
from fscontrol.errors import ConfigError, FscontrolError

AgentApplyOpt = Annotated[bool, typer.Option("--apply", help="Act (default: plan only, as in the config's agent.apply).")]



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

    `control off` prints what it would undo, whatever the config's agent.apply says;
    `control off --apply` turns it all back: cancels the padding jobs, puts the padding QOS's
    UsageFactor, slurm.conf's d line and the runtime d back to what they were before the agent
    first changed them (from the history), releases the agent's holds, and keeps the agent from
    acting on the cluster (control and gate) until `control on`.

    Slurm's conventions for the table of commands: -P pipe-separated, -n no header, -o the
    fields (--helpformat lists them); -P and -n print the table alone, the decision's notes go to
    stderr; --json prints everything."""
    from fscontrol.agent import commands
    from fscontrol.report import control as rcontrol
    from fscontrol.report import status as rstatus
    from fscontrol.report import table as rtable

    if helpformat:
        typer.echo(rstatus.format_fields_help(rcontrol.CONTROL_FIELDS))
        return
    if switch not in (None, "off", "on"):
        raise _fail(ConfigError(f"`fscontrol control {switch}`: the only words after control are off and on"))
    try:
        columns = rtable.pick_fields(fields, rcontrol.CONTROL_FIELDS, rcontrol.CONTROL_DEFAULT_FIELDS)
        if switch is not None and (parsable or noheader or fields):
            raise ConfigError(f"-P, -n and -o are for the plan's table; `control {switch}` has none (--json for scripts)")
        res = commands.control(config_path, db, source, cluster, switch=switch, apply=apply)
    except FscontrolError as e:
        raise _fail(e) from None
    data = res.data
    if json_out:
        typer.echo(json.dumps(data) if switch == "on" else json.dumps(data, indent=2))
    elif switch == "on":
        typer.echo(rcontrol.format_on(data))
    elif switch == "off":
        typer.echo(rcontrol.format_off(data))
    elif parsable or noheader:
        _table_alone(rcontrol.control_rows(data), columns, parsable, noheader, rcontrol.control_notes(data))
    else:
        typer.echo(rcontrol.format_control(data, columns))
    _finish(res)


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
    from fscontrol.agent import commands
    from fscontrol.report import ticks as rticks

    try:
        res = commands.tick(config_path, db, source, cluster, apply=apply, defaults=defaults)
    except FscontrolError as e:
        raise _fail(e) from None
    text = json.dumps(res.data, indent=2) if json_out else rticks.format_tick(res.data)
    if text:
        typer.echo(text)
    _finish(res)


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
        cfg, path, clusters, make_source = agent.setup(config_path, db, source, cluster, defaults)
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
    from fscontrol.agent import commands
    from fscontrol.report import gate as rgate
    from fscontrol.report import status as rstatus
    from fscontrol.report import table as rtable

    if helpformat:
        typer.echo("accounts table:\n" + rstatus.format_fields_help(rgate.GATE_FIELDS) + "\n\nwith --actions:\n"
                   + rstatus.format_fields_help(rgate.GATE_ACTION_FIELDS))
        return
    try:
        if actions_table and not (parsable or noheader or fields):
            raise ConfigError("--actions picks the table -P, -n or -o print; give one of them (the plain report shows both)")
        rtable.pick_fields(fields, rgate.GATE_ACTION_FIELDS if actions_table else rgate.GATE_FIELDS,
                           rgate.GATE_ACTION_DEFAULT_FIELDS if actions_table else rgate.GATE_DEFAULT_FIELDS)  # before any tick
        res = commands.gate(config_path, db, source, cluster, apply=apply, release_all=release_all)
    except FscontrolError as e:
        raise _fail(e) from None
    plan = res.data.plan
    if json_out:
        typer.echo(json.dumps(rgate.gate_data(res.data), indent=2))
    elif parsable or noheader:
        _table_alone(rgate.gate_rows(plan, actions_table), rgate.gate_fields(plan, fields, actions_table), parsable,
                     noheader, rgate.gate_table_notes(res.data, actions_table))
    else:
        _print_lines(rgate.gate_lines(res.data, fields, actions_table))
    _finish(res)
