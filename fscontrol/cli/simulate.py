"""The simulator's commands: `simulate`, `simulate-merge` and the array task `simulate-task`
(registered on the app in fscontrol.cli.app); the orchestration is fscontrol.sim.command's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from fscontrol.cli.common import _fail
from fscontrol.cli.options import JsonOpt
from fscontrol.errors import FscontrolError, NotFoundError

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
    start_blocked: Annotated[bool, typer.Option("--start-blocked", help="Captured folder: also replay the jobs held or "
                                                "in a DOWN partition at the capture, as if released at once (default: "
                                                "not started, as Slurm would not).")] = False,
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
        categories_png, start_blocked=start_blocked)
    try:
        out = simcmd.simulate(opts)
    except FscontrolError as e:
        raise _fail(e) from None
    typer.echo(simcmd.render(out, json_out=json_out))


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
