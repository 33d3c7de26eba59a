"""Text reports for simulation results (tabulate). Pure: formats what it is given.

Units: every duration (wait, first-start latency, makespan) is in hours, throughput in jobs per
hour, usage in node-hours; each header names its unit. The JSON (``SimResult.to_dict``) keeps
seconds, named ``*_s``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tabulate import tabulate

from .result import SimResult


def _h(x: float | None, nd: int = 2) -> str:
    """Seconds as hours."""
    return "-" if x is None else f"{x / 3600.0:,.{nd}f}"


def _f(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def format_report(result: SimResult, *, by: str = "account", top: int | None = 20) -> str:
    """Overall metrics, then one line per account (or user), busiest first when truncated."""
    w, o = result.workload, result.overall
    cpus = w.meta.get("unit") == "cpus"  # a cluster's history replayed in CPUs (fscontrol.sim.history)
    lines = [
        f"workload {w.name}: {len(w.jobs):,} jobs on {w.nodes:,} {'CPUs' if cpus else 'nodes'}; policy {result.policy.label}",
        (
            f"simulated in {result.wall_s:.2f} s ({result.jobs_per_second:,.0f} jobs/s), "
            f"{result.stats.get('events', 0):,} event times, {result.stats.get('passes', 0):,} passes"
        ),
    ]
    if result.stats.get("gate_ticks"):
        s = result.stats
        lines.append(
            f"gate: {s['gate_ticks']:,} ticks, {s['holds']:,} holds, {s['releases']:,} releases, "
            f"{s['nices']:,} nices, {s['unnices']:,} un-nices"
        )
    hs = w.meta.get("stats", {}) if w.meta.get("source") == "slurm" else {}
    if hs.get("held") or hs.get("partition_down"):
        lines.append(f"not started: held {hs.get('held', 0):,}, partition down {hs.get('partition_down', 0):,} "
                     "(pending at the capture; assumed to stay so)")
    if hs.get("dependency_ignored"):
        lines.append(f"replayed without their dependency: {hs['dependency_ignored']:,} jobs (the capture does not "
                     "record which job each waits for)")
    for note in result.stats.get("notes", []):
        lines.append(f"note: {note}")
    overall = [
        ["jobs finished", f"{o['finished']:,} / {o['jobs']:,}"],
        ["mean wait (h)", _h(o["mean_wait_s"])],
        ["median wait (h)", _h(o["median_wait_s"])],
        ["max wait (h)", _h(o["max_wait_s"])],
        ["mean response (h)", _h(o.get("mean_response_s"))],
        ["mean slowdown", _f(o["mean_slowdown"])],
        ["mean bounded slowdown (10 s)", _f(o["mean_bsld"])],
        ["utilization", "-" if o.get("utilization") is None else f"{o['utilization'] * 100:.1f}%"],
        ["throughput (jobs/h)", _f(o["throughput_per_h"])],
        ["makespan (h)", _h(o.get("makespan_s"))],
    ]
    lines.append("")
    lines.append(tabulate(overall, tablefmt="simple", disable_numparse=True))
    groups = result.by_account if by == "account" else result.by_user
    if groups:
        items = sorted(groups.items(), key=lambda kv: (-kv[1]["node_hours"], kv[0]))
        shown = items if top is None else items[:top]
        rows = [
            [
                g,
                m["jobs"],
                _h(m["mean_wait_s"]),
                _h(m["first_start_latency_s"]),
                _f(m["mean_bsld"]),
                _f(m["node_hours"], 0),
            ]
            for g, m in sorted(shown, key=lambda kv: kv[0])
        ]
        lines.append("")
        lines.append(
            tabulate(
                rows,
                headers=[by, "jobs", "mean wait (h)", "first start (h)", "mean bsld", "CPU-hours" if cpus else "node-hours"],
                tablefmt="simple",
                disable_numparse=True,
            )
        )
        if top is not None and len(items) > top:
            lines.append(f"({len(items) - top} more {by}s not shown)")
    return "\n".join(lines)


def comparison_rows(results: Iterable[SimResult], groups: Sequence[str] = ()) -> list[dict[str, Any]]:
    rows = []
    for r in results:
        row: dict[str, Any] = {
            "policy": r.policy.label,
            "mean_wait_s": r.overall["mean_wait_s"],
            "mean_bsld": r.overall["mean_bsld"],
            "utilization": r.overall.get("utilization"),
        }
        for g in groups:
            m = r.by_account.get(g) or r.by_user.get(g) or {}
            row[f"{g}_first_start_s"] = m.get("first_start_latency_s")
            row[f"{g}_mean_wait_s"] = m.get("mean_wait_s")
        rows.append(row)
    return rows


def format_comparison(results: Iterable[SimResult], groups: Sequence[str] = ()) -> str:
    """One line per run: overall wait/bsld/utilization and, per named group, first start and wait (hours)."""
    rows = comparison_rows(results, groups)
    headers = ["policy", "mean wait (h)", "mean bsld", "utilization"]
    for g in groups:
        headers += [f"{g} first start (h)", f"{g} mean wait (h)"]
    table = []
    for row in rows:
        line = [row["policy"], _h(row["mean_wait_s"]), _f(row["mean_bsld"]),
                "-" if row["utilization"] is None else f"{row['utilization'] * 100:.1f}%"]
        for g in groups:
            line += [_h(row[f"{g}_first_start_s"]), _h(row[f"{g}_mean_wait_s"])]
        table.append(line)
    return tabulate(table, headers=headers, tablefmt="simple", disable_numparse=True)
