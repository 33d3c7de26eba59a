"""`fscontrol simulate` as a library call: the options checked, the runs built and run, the charts
written, and the report as text or JSON. The command line only gathers the options
(`SimulateOptions`), calls `simulate`, and prints `render(...)`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, OutputError


@dataclass
class SimulateOptions:
    workload: str
    policy: list[str] | None = None
    procs_per_node: int | None = None
    overrun: str = "extend"
    processors: str = "allocated"
    limit: int | None = None
    unit: str = "cpus"
    machine: int | None = None
    by: str = "account"
    gantt: bool = False
    png: Path | None = None
    sweep: Path | None = None
    jobs: int = 1
    chart: Path | None = None
    sbatch: Path | None = None
    progress: bool = True
    slurm_conf: Path | None = None
    control: list[str] | None = None
    u_star: float | None = None
    half_life: str | None = None
    calc_period: str | None = None
    damping: int | None = None
    fairshare: str | None = None
    reconfigure_at: list[float] | None = None
    agent_down: list[str] | None = None
    gate: str | None = None
    halving_png: Path | None = None
    sigma: float = 0.0
    rf: float = 1.0
    lf: float = 1.0
    avg_par: str = "machine"
    xfactor: float = 2.0
    estimates: str = "user"
    mold_backfill: str = "best"
    share_over: str = "system"
    categories_png: Path | None = None
    start_blocked: bool = False


@dataclass
class SimulateOutput:
    """What a simulate call made: the array script (--sbatch), the sweep's rows, or the runs."""

    opts: SimulateOptions
    sbatch_script: Path | None = None
    n_specs: int = 0
    sweep: list[dict[str, Any]] | None = None
    results: list = field(default_factory=list)
    molds: list = field(default_factory=list)
    controlled: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # printed first: where the settings came from


def check(o: SimulateOptions) -> None:
    """The option values that make no sense, one line each (ConfigError)."""
    if o.limit is not None and o.limit < 1:
        raise ConfigError(f"--limit must be at least 1 job, got {o.limit}")
    if o.by not in ("account", "user"):
        raise ConfigError(f"--by must be 'account' or 'user', got {o.by!r}")
    if o.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {o.jobs}")
    if o.fairshare not in (None, "classic", "fairtree"):
        raise ConfigError(f"--fairshare must be 'classic' or 'fairtree', got {o.fairshare!r}")


def _sweeping(o: SimulateOptions) -> bool:
    return o.sweep is not None or o.jobs > 1 or o.chart is not None or o.sbatch is not None


def simulate(o: SimulateOptions) -> SimulateOutput:
    """Run what the options ask for (or write the job array, --sbatch), write the charts they
    name, and return the results for `render`. A workload or option the simulator cannot read
    (ValueError or OSError from the readers) is a ConfigError: a usage error (exit 2)."""
    try:
        return _simulate(o)
    except (ValueError, OSError) as e:
        from fscontrol.errors import ConfigError, FscontrolError

        if isinstance(e, FscontrolError):  # (a named error that is also a ValueError keeps its name)
            raise
        raise ConfigError(str(e)) from None


def _simulate(o: SimulateOptions) -> SimulateOutput:
    from . import sweep as sw
    from .load import load_workload
    from .moldable import MoldParams, get_strategy
    from .run import run_simulation

    check(o)
    mf_asked = any(x is not None for x in (o.slurm_conf, o.control, o.u_star, o.half_life, o.calc_period, o.damping,
                                            o.fairshare, o.reconfigure_at, o.agent_down, o.halving_png, o.gate))
    sweeping = _sweeping(o)
    if sweeping and (o.gantt or o.png is not None or o.halving_png is not None):
        raise ConfigError("--gantt and --png draw one run, --halving-png the runs here: not with --sweep, --jobs, --chart or --sbatch")
    options: dict[str, Any] = {"procs_per_node": o.procs_per_node, "overrun": o.overrun, "processors": o.processors,
                               "limit": o.limit}
    if Path(o.workload).is_dir():
        options["history"] = {"unit": o.unit, "machine": o.machine, "start_blocked": o.start_blocked}
    out = SimulateOutput(o)
    if o.chart is not None and not o.chart.parent.is_dir():
        raise OutputError(f"cannot write the chart {o.chart}: folder {o.chart.parent} does not exist")
    cap_conf = Path(o.workload) / "config.txt"
    captured = Path(o.workload).is_dir() and cap_conf.is_file()
    if not o.policy and o.sweep is None and captured and not mf_asked:
        # a capture without -p: its own slurmctld replayed (its config below); -p easy etc. to compare
        mf_asked = True
        out.notes.append("no -p: the capture's own slurmctld replayed (its priority settings and scheduler); "
                         "-p easy, fcfs, ... run other policies on its jobs")
    names = o.policy or ([] if o.sweep is not None or mf_asked else ["easy"])
    mold_names = [p for p in names if p.startswith("mold-")]
    mold = MoldParams(sigma=o.sigma, rf=o.rf, lf=o.lf, avg_par=o.avg_par, xfactor=o.xfactor, estimates=o.estimates,
                      backfill=o.mold_backfill, share_over=o.share_over)
    for p in mold_names:
        get_strategy(p)  # a bad mold-* fails here too
    if mold_names and (sweeping or mf_asked):
        raise ConfigError("mold-* policies run on their own: not with --sweep, --jobs, --chart, --sbatch or the multifactor options")
    if o.categories_png is not None and not mold_names:
        raise ConfigError("--categories-png needs at least one mold-* policy")
    mf_presets = [p for p in names if p.startswith("mf-")]
    if captured and o.slurm_conf is None and mf_presets:
        # a capture's own config wins over a preset: `-p mf-classic` on a capture replays its slurmctld
        # (the preset's settings only with --slurm-conf or the options, named below)
        names = [p for p in names if not p.startswith("mf-")]
        out.notes.append(f"settings from {cap_conf} (the capture's own slurmctld), not preset(s) "
                         f"{', '.join(mf_presets)}: a capture's config wins over a preset")
        mf_asked = True
    specs = [sw.RunSpec(p) for p in names if not p.startswith("mold-")]
    slurm_conf = o.slurm_conf
    if mf_asked and slurm_conf is None and captured:
        slurm_conf = cap_conf  # a captured cluster: its own `scontrol show config`
    if mf_asked and slurm_conf is not None:
        given = [f"{flag} {v}" for flag, v in (("--fairshare", o.fairshare), ("--damping", o.damping),
                                               ("--half-life", o.half_life), ("--calc-period", o.calc_period))
                 if v is not None]
        if given:
            out.notes.append(f"mixed settings: {slurm_conf} with {', '.join(given)} over it")
        elif not any("settings from" in n for n in out.notes):
            out.notes.append(f"settings from {slurm_conf}")
    if mf_asked:  # one run per control method, each a spec the sweep, its processes and --sbatch can carry
        specs += sw.multifactor_specs(
            slurm_conf=slurm_conf, fair_tree=None if o.fairshare is None else o.fairshare == "fairtree", damping=o.damping,
            half_life=o.half_life, calc_period=o.calc_period, u_star_node_hours=o.u_star, controls=o.control or (),
            reconfigure_at_h=o.reconfigure_at or (), agent_down=o.agent_down or (), gate=o.gate)
    if o.sweep is not None:
        specs += sw.load_sweep(o.sweep)
    for s_ in specs:
        s_.policy()  # a bad -p fails here, before the workload is read
    wspec = sw.WorkloadSpec(o.workload, options)
    wl = load_workload(o.workload, **options)
    resv = wl.meta.get("reservations") or []
    if resv:
        rnames = ", ".join(r["name"] for r in resv[:3]) + (f" and {len(resv) - 3} more" if len(resv) > 3 else "")
        out.notes.append(f"the capture holds {len(resv)} advance reservation(s) ({rnames}): the replay does not "
                         "model them, so jobs they delayed may start earlier here than slurmctld started them")
    per_user = o.by == "user"
    if o.sbatch is not None:
        out.sbatch_script = sw.write_sbatch(o.sbatch, wspec, specs, per_user=per_user)
        out.n_specs = len(specs)
        return out
    if sweeping:
        out.sweep = sw.run_sweep(wspec, specs, jobs=o.jobs, per_user=per_user, progress=o.progress, workload=wl)
        if o.chart is not None:
            sw.write_chart(out.sweep, o.chart)
        return out
    if mold_names:  # in -p order; no sweep or multifactor specs with them (refused above)
        results = [
            run_simulation(wl, p, progress=o.progress, per_user=per_user, mold=mold) if p.startswith("mold-")
            else run_simulation(wl, sw.RunSpec(p).policy(), progress=o.progress, per_user=per_user)
            for p in names
        ]
    else:
        results = [run_simulation(wl, s_.policy(), progress=o.progress, per_user=per_user) for s_ in specs]
    out.results = results
    out.molds = [r for r in results if "moldable" in r.stats]
    if o.categories_png is not None:
        from .moldable_report import render_categories_png

        render_categories_png(out.molds, o.categories_png)
    if o.png is not None:
        from .gantt import render_gantt_png

        render_gantt_png(results[0], o.png)
    out.controlled = [r for r in results if r.halving is not None]
    if o.halving_png is not None:
        from .controlexp import render_halving_png

        render_halving_png(out.controlled or results, o.halving_png)
    return out


def render(out: SimulateOutput, *, json_out: bool = False) -> str:
    """The report `fscontrol simulate` prints for `out`."""
    o = out.opts
    if out.sbatch_script is not None:
        script = out.sbatch_script
        return (f"wrote {script} ({out.n_specs} array tasks, one per run)\n"
                f"submit:  sbatch {script}\nthen:    fscontrol simulate-merge {script.parent}")
    if out.sweep is not None:
        from . import sweep as sw

        return json.dumps(out.sweep, indent=2) if json_out else sw.format_sweep(out.sweep)
    results = out.results
    if json_out:
        from .controlexp import summary

        return json.dumps([summary([r])[0] if r.mf is not None else r.to_dict() for r in results], indent=2)
    from .report import format_comparison, format_report

    parts: list[str] = [f"note: {n}" for n in out.notes]
    for r in results:
        parts += [format_report(r, by=o.by), ""]
    if len(results) > 1:
        parts.append(format_comparison(results))
    if out.molds:
        from .moldable_report import format_categories

        parts += ["", f"mean turnaround (h) per category of trace processor-seconds; change against {out.molds[0].policy.label}",
                  format_categories(out.molds, fmt="simple")]
    if out.controlled:
        from .controlexp import halving_table, render_halving_text, waits_table

        parts += ["", halving_table(out.controlled), "", waits_table(results), "", render_halving_text(out.controlled)]
    if o.gantt:
        from .gantt import render_gantt_text

        parts.append(render_gantt_text(results[0]))
    return "\n".join(parts)
