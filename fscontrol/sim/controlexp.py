"""The controller on a simulated cluster: the halving H against u* over time, and what each way of
keeping it there does to waits, per account and per job size, side by side.

    .venv/bin/python -m fscontrol.sim.controlexp --days 365 --u-star 1344 --json out.json --png docs/x.png

Runs the multifactor simulator (classic fair-share, a one-week half-life, 5-minute passes by
default) on the SDSC Blue Horizon log for: a static d = 1; the static d an admin would set once
(u* over S_ref times the mean usage of the d = 1 run, rounded); and each control method (damping,
padding steady and pulse, hybrid) with `control.plan_control` 3 s before every pass. Prints the
halving's error distribution after the warm-up, the time to settle, d's range, and mean wait and
bounded slowdown overall, per size class and for the busiest accounts against the static d.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, Optional

import typer

from . import cmdline
from .multifactor import SIZE_CLASSES, ControlSpec, Disturbance, PriorityConfig, halving_errors
from .policies import Policy
from .run import SimResult, run_simulation
from .workload import Workload

HOUR = 3600.0
CONTROLS = ("damping", "padding-steady", "padding-pulse", "hybrid")


def control_spec(name: str, u_star: float, **kw: Any) -> ControlSpec:
    """'damping', 'padding' / 'padding-steady', 'padding-pulse', 'hybrid' (steady) or 'hybrid-pulse'."""
    method, _, mode = name.partition("-")
    return ControlSpec(method=method, u_star=u_star, padding_mode=mode or "steady", **kw)


def policy(prio: PriorityConfig, *, label: str, control: ControlSpec | None = None,
           disturbances: Sequence[Disturbance] = ()) -> Policy:
    return Policy("multifactor", priority=prio, control=control, disturbances=tuple(disturbances), name=label)


def mean_usage(result: SimResult) -> float | None:
    recs = result.mf.records if result.mf is not None else []
    u = [p.u_total - p.w for p in recs if p.u_total > 0]
    return sum(u) / len(u) if u else None


def run_configs(workload: Workload, prio: PriorityConfig, u_stars: Sequence[float], controls: Sequence[str],
                *, static: bool = True, disturbances: Sequence[Disturbance] = (), progress: bool = False) -> list[SimResult]:
    """Static d = 1 (measured against each u*), the admin's static d for each u*, and each control
    method for each u*. u* in the workload's usage units (node-seconds)."""
    out: list[SimResult] = []
    base = None
    if static:
        # the static runs are measured too: a 'none' controller records H at every pass and acts on nothing
        base = run_simulation(workload, policy(prio, label="static d=1", control=ControlSpec("none", u_star=u_stars[0])),
                              progress=progress)
        out.append(base)
        u_bar = mean_usage(base)
        for us in u_stars:
            if base.mf.s_ref and u_bar:
                d = max(1, min(65535, round(us / (base.mf.s_ref * u_bar))))
                p = replace(prio, damping=d)
                label = f"static d={d} (u*={us / HOUR:,.0f})"
                out.append(run_simulation(workload, policy(p, label=label, control=ControlSpec("none", u_star=us)),
                                          progress=progress))
    for us in u_stars:
        for c in controls:
            cs = control_spec(c, us)
            out.append(run_simulation(workload, policy(prio, label=f"{c} (u*={us / HOUR:,.0f})", control=cs,
                                                       disturbances=disturbances), progress=progress))
    return out


def _pct(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x * 100:.{nd}f}%"


def _h(x: float | None) -> str:
    return "-" if x is None else f"{x / HOUR:,.2f}"


def halving_table(results: Sequence[SimResult]) -> str:
    rows = []
    for r in results:
        h = r.halving or {}
        rows.append([
            r.policy.label, h.get("passes", "-"), _pct(h.get("mean_error")), _pct(h.get("median_abs_error")),
            _pct(h.get("p95_abs_error")), _pct(h.get("max_abs_error")), _pct(h.get("within_1pct"), 1),
            _pct(h.get("within_2pct"), 1), "-" if h.get("settle_s") is None else f"{h['settle_s'] / 86400:.1f}",
            f"{h.get('d_min', '-')}-{h.get('d_max', '-')}", h.get("pulses", 0),
        ])
    from tabulate import tabulate  # here: only the text tables need it
    return tabulate(rows, headers=["configuration", "passes", "mean H/u*-1", "median |err|", "p95 |err|", "max |err|",
                                   "within 1%", "within 2%", "settled after (d)", "d range", "pulses"],
                    tablefmt="github", disable_numparse=True)


def waits_table(results: Sequence[SimResult]) -> str:
    rows = []
    for r in results:
        o = r.overall
        row = [r.policy.label, _h(o["mean_wait_s"]), f"{o['mean_bsld']:.2f}", _pct(o.get("utilization"), 1)]
        for c in SIZE_CLASSES:
            g = r.by_size.get(c)
            row.append("-" if not g or g["mean_wait_s"] is None else f"{g['mean_wait_s'] / HOUR:.2f} / {g['mean_bsld']:.1f}")
        rows.append(row)
    from tabulate import tabulate  # here: only the text tables need it
    return tabulate(rows, headers=["configuration", "mean wait (h)", "mean bsld", "utilization",
                                   *(f"{c} nodes: wait (h) / bsld" for c in SIZE_CLASSES)],
                    tablefmt="github", disable_numparse=True)


def accounts_table(results: Sequence[SimResult], base: SimResult, top: int = 10) -> str:
    """Mean wait and bounded slowdown of the busiest accounts (node-hours), each run against `base`."""
    busiest = sorted(base.by_account, key=lambda a: -base.by_account[a]["node_hours"])[:top]
    rows = []
    for a in busiest:
        b = base.by_account[a]
        row = [a, f"{b['node_hours']:,.0f}", f"{b['mean_wait_s'] / HOUR:.2f} / {b['mean_bsld']:.1f}"]
        for r in results:
            if r is base:
                continue
            g = r.by_account[a]
            dw = g["mean_wait_s"] / b["mean_wait_s"] - 1 if b["mean_wait_s"] else math.nan
            row.append(f"{g['mean_wait_s'] / HOUR:.2f} ({dw * 100:+.0f}%) / {g['mean_bsld']:.1f}")
        rows.append(row)
    from tabulate import tabulate  # here: only the text tables need it
    return tabulate(rows, headers=["account", "node-hours", f"{base.policy.label}: wait (h) / bsld",
                                   *(r.policy.label for r in results if r is not base)],
                    tablefmt="github", disable_numparse=True)


# --------------------------------------------------------------------------- charts
def _series(r: SimResult, every_s: float) -> list[tuple[float, float]]:
    """H/u* - 1 sampled every `every_s` (the pass at or after each step)."""
    errs = halving_errors(r.mf, r.policy.control.u_star) if r.mf is not None and r.policy.control else []
    out, nxt = [], -math.inf
    for t, e in errs:
        if t >= nxt:
            out.append((t, e))
            nxt = t + every_s
    return out


def render_halving_text(results: Sequence[SimResult], *, width: int = 72, height: int = 15, clip: float = 0.1) -> str:
    """H/u* - 1 over time as text: one letter per configuration (A, B, ...), the y axis clipped to +-clip."""
    series = [(r.policy.label, _series(r, 3600.0)) for r in results]
    t_end = max((s[-1][0] for _, s in series if s), default=0.0)
    if t_end <= 0:
        return "(no halving to chart: no controller recorded any pass)"
    grid = [[" "] * width for _ in range(height)]
    for k, (_, s) in enumerate(series):
        ch = chr(ord("A") + k % 26)
        for t, e in s:
            x = min(width - 1, int(t / t_end * (width - 1)))
            y = min(height - 1, max(0, int(round((clip - max(-clip, min(clip, e))) / (2 * clip) * (height - 1)))))
            grid[y][x] = ch
    lines = []
    for y, row in enumerate(grid):
        v = clip - y * 2 * clip / (height - 1)
        lines.append(f"{v * 100:+6.1f}% |" + "".join(row))
    lines.append(" " * 8 + "+" + "-" * width)
    lines.append(" " * 9 + f"0 d{' ' * (width - 12)}{t_end / 86400:.0f} d")
    lines.append("H/u* - 1 at the passes (hourly samples), clipped to +-{:.0f}%: ".format(clip * 100)
                 + "; ".join(f"{chr(ord('A') + k % 26)} = {label}" for k, (label, _) in enumerate(series)))
    return "\n".join(lines)


def render_halving_png(results: Sequence[SimResult], path: str | Path, *, clip: float = 0.1) -> None:
    """H/u* - 1 over time, one line per configuration (matplotlib: the `plot` extra, imported here)."""
    from ..errors import ConfigError

    from fscontrol.plotting import pyplot, save

    plt = pyplot("--halving-png")
    n = max(1, len(results))
    cols = 2 if n > 3 else 1
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(12, 1.9 * rows + 0.8), dpi=120, sharex=True, sharey=True, squeeze=False)
    for k, r in enumerate(results):
        ax = axes[k % rows][k // rows]
        s = _series(r, 3600.0)
        if s:
            ax.plot([t / 86400 for t, _ in s], [max(-clip, min(clip, e)) * 100 for _, e in s], lw=0.6)
        ax.axhline(0, color="black", lw=0.5)
        for y in (-2, 2):
            ax.axhline(y, color="grey", lw=0.5, ls="--")
        ax.set_title(r.policy.label, fontsize=9)
        ax.set_ylim(-6, 6)
    for ax in axes[-1]:
        ax.set_xlabel("days from the first submission")
    for row in axes:
        row[0].set_ylabel("H/u* - 1 (%)")
    fig.suptitle("The halving S_ref x d x U each decay pass used, against u* (hourly samples; +-2% dashed; axis +-6%)",
                 fontsize=10)
    fig.tight_layout()
    save(fig, path, "the halving chart")


def summary(results: Sequence[SimResult]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        d = r.to_dict()
        d["by_size"] = r.by_size
        d["halving_hourly"] = [[round(t), e] for t, e in _series(r, 3600.0)]
        out.append(d)
    return out


# the methods --control takes (repeat)
ControlName = Enum("ControlName", {n: n for n in (*CONTROLS, "hybrid-pulse", "padding")}, type=str)


def main(argv: Sequence[str] | None = None) -> int:
    return cmdline.run(controlexp, argv, "python -m fscontrol.sim.controlexp", __doc__.split("\n\n")[0])


def controlexp(
    ctx: typer.Context,
    swf: Annotated[str, typer.Option("--swf")] = str(Path(__file__).resolve().parents[2] / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"),
    days: Annotated[float, typer.Option("--days", help="the first N days of the log")] = 365.0,
    u_star: Annotated[Optional[list[float]], typer.Option("--u-star", help="u* in node-hours (repeat); default 1344 "
                                                          "(a week of 8 nodes)")] = None,
    control: Annotated[Optional[list[ControlName]], typer.Option("--control", help="methods (repeat); default all four")] = None,
    half_life_days: Annotated[float, typer.Option("--half-life-days")] = 7.0,
    calc_period_min: Annotated[float, typer.Option("--calc-period-min")] = 5.0,
    no_static: Annotated[bool, typer.Option("--no-static")] = False,
    reconfigure_every_days: Annotated[Optional[float], typer.Option("--reconfigure-every-days", help="a reconfigure "
                                                                    "(slurm.conf's d back) every N days")] = None,
    down_every_days: Annotated[Optional[str], typer.Option("--down-every-days", help="DAYS:HOURS: the agent down for "
                                                           "HOURS every DAYS")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="write the results here")] = None,
    png: Annotated[Optional[str], typer.Option("--png", help="write the halving chart here")] = None,
) -> int:
    from .load import load_workload

    a = SimpleNamespace(swf=swf, days=days, u_star=u_star or None, control=[c.value for c in control] if control else None,
                        half_life_days=half_life_days, calc_period_min=calc_period_min, no_static=no_static,
                        reconfigure_every_days=reconfigure_every_days, down_every_days=down_every_days, json=json_out, png=png)
    w = load_workload(a.swf)
    t0 = w.jobs[0].submit
    w = Workload(w.name, w.nodes, [j for j in w.jobs if j.submit < t0 + a.days * 86400], meta=w.meta)
    prio = PriorityConfig(weight_age=1000, weight_fairshare=10000, fair_tree=False, half_life_s=a.half_life_days * 86400,
                          calc_period_s=a.calc_period_min * 60)
    u_stars = [u * HOUR for u in (a.u_star or [1344.0])]
    dist: list[Disturbance] = []
    span = a.days * 86400
    if a.reconfigure_every_days:
        k = 1
        while k * a.reconfigure_every_days * 86400 < span:
            # at an arbitrary phase of the 5-minute pass cycle: 1 h 12 min 17 s into the day
            dist.append(Disturbance("reconfigure", k * a.reconfigure_every_days * 86400 + 4337.0))
            k += 1
    if a.down_every_days:
        every, _, hours = a.down_every_days.partition(":")
        k = 1
        while k * float(every) * 86400 < span:
            dist.append(Disturbance("agent_down", k * float(every) * 86400, float(hours) * HOUR))
            k += 1
    res = run_configs(w, prio, u_stars, a.control or list(CONTROLS), static=not a.no_static, progress=True,
                      disturbances=dist)
    cmd = "python -m fscontrol.sim.controlexp " + " ".join(ctx.obj)
    print(f"{cmd}\n{w.name}: {len(w.jobs):,} jobs over {a.days:g} days, {w.nodes} nodes; classic fair-share, "
          f"half-life {a.half_life_days:g} d, passes every {a.calc_period_min:g} min, S_ref = {res[0].mf.s_ref:.6f}")
    for r in res:
        for note in r.stats.get("notes", [])[:3]:
            print(f"{r.policy.label}: {note}")
    if not a.no_static:
        print(f"mean real usage (static d=1): {mean_usage(res[0]) / HOUR:,.0f} node-hours")
    if dist:
        print(f"disturbances: {sum(d.kind == 'reconfigure' for d in dist)} reconfigures, "
              f"{sum(d.kind == 'agent_down' for d in dist)} agent outages")
    print()
    print(halving_table(res) + "\n")
    print(waits_table(res) + "\n")
    if a.no_static:
        print(accounts_table(res, res[0]) + "\n")
    else:
        for k, us in enumerate(u_stars):  # each u*'s controllers against the admin's static d for it
            tag = f"(u*={us / HOUR:,.0f})"
            group = [r for r in res if r.policy.label.endswith(tag)]
            base = next(r for r in group if r.policy.label.startswith("static"))
            print(f"The busiest accounts at u* = {us / HOUR:,.0f} node-hours: mean wait (h) (change against "
                  f"{base.policy.label}) / mean bounded slowdown")
            print(accounts_table([res[0], *group], base) + "\n")
    print(render_halving_text([r for r in res if r.policy.control and r.policy.control.method != "none"] or res))
    for r in res:
        print(f"{r.policy.label}: simulated in {r.wall_s:.1f} s ({r.jobs_per_second:,.0f} jobs/s)")
    if a.json:
        Path(a.json).write_text(json.dumps(summary(res), indent=1))
    if a.png:
        render_halving_png([r for r in res if r.policy.control and r.policy.control.method != "none"] or res, a.png)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# --------------------------------------------------------------------------- for `fscontrol simulate`
def multifactor_policies(*, slurm_conf_text: str | None = None, fair_tree: bool | None = None, damping: int | None = None,
                         half_life: str | None = None, calc_period: str | None = None, u_star_node_hours: float | None = None,
                         controls: Sequence[str] = (), reconfigure_at_h: Sequence[float] = (),
                         agent_down: Sequence[str] = (), gate: str | None = None) -> list[Policy]:
    """The multifactor runs `fscontrol simulate` asks for: slurm.conf's priority settings (or the
    mf-classic preset's), overridden by the options, one run per control method ('none' = static
    d). Raises ConfigError with one line on bad input."""
    from ..errors import ConfigError
    from fscontrol.slurm.parse import parse_duration
    from .multifactor import priority_config_from_slurm_conf
    from .policies import PRESETS
    from .slurmsched import sched_from_config

    def dur(name: str, v: str | None) -> float | None:
        if v is None:
            return None
        try:
            s = parse_duration(v)
        except ValueError:
            raise ConfigError(f"{name} {v!r} is not a Slurm time ([D-]HH:MM:SS, D-HH, or minutes)") from None
        return float(s or 0)

    over: dict[str, Any] = {"damping": damping, "half_life_s": dur("--half-life", half_life),
                            "calc_period_s": dur("--calc-period", calc_period)}
    if fair_tree is not None:
        over["fair_tree"] = fair_tree
    if slurm_conf_text is not None:
        prio = priority_config_from_slurm_conf(slurm_conf_text, **over)
        sched = sched_from_config(slurm_conf_text)  # slurmctld's own scheduler, with its SchedulerParameters
    else:
        sched = None
        prio = replace(PRESETS["mf-classic"].priority, **{k: v for k, v in over.items() if v is not None})
    dist = [Disturbance("reconfigure", h * HOUR) for h in reconfigure_at_h]
    for spec in agent_down:
        a, sep, b = spec.partition(":")
        try:
            start_h, dur_h = float(a), float(b)
        except ValueError:
            raise ConfigError(f"--agent-down {spec!r}: give START_HOURS:DURATION_HOURS, e.g. 48:6") from None
        if not sep or dur_h <= 0 or start_h < 0:
            raise ConfigError(f"--agent-down {spec!r}: give START_HOURS:DURATION_HOURS, e.g. 48:6")
        dist.append(Disturbance("agent_down", start_h * HOUR, dur_h * HOUR))
    names = list(controls) or ["none"]
    if any(c != "none" for c in names) and not u_star_node_hours:
        raise ConfigError("--control needs --u-star (node-hours that halve a reference user's fair-share factor)")
    if u_star_node_hours is not None and u_star_node_hours <= 0:
        raise ConfigError("--u-star must be > 0 node-hours")
    us = (u_star_node_hours or 0.0) * HOUR
    if gate not in (None, "hold", "nice"):
        raise ConfigError(f"--gate must be 'hold' or 'nice', not {gate!r}")
    out = []
    algo = "fairtree" if prio.fair_tree else "classic"
    for c in names:
        if c not in ("none", *CONTROLS, "padding", "hybrid-pulse"):
            raise ConfigError(f"--control {c!r}: choose none, damping, padding, padding-pulse, hybrid or hybrid-pulse")
        if prio.fair_tree and c != "none":
            raise ConfigError("control acts on classic fair-share's damping factor: use PriorityFlags=NO_FAIR_TREE (--classic)")
        cs = control_spec(c, us) if c != "none" else (ControlSpec("none", u_star=us) if us else None)
        label = f"mf-{algo} d={prio.damping}" if c == "none" else f"mf-{algo} {c} u*={u_star_node_hours:g}"
        p = policy(prio, label=label, control=cs, disturbances=dist if c != "none" else ())
        if sched is not None:
            p = replace(p, slurm_sched=sched)
        if gate is not None:
            p = replace(p, gate=True, gate_action=gate, name=f"{label} gate-{gate}")
        out.append(p)
    return out
