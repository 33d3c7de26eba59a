"""Text reports for simulation results (tabulate). Pure: formats what it is given.

Units: every duration (wait, first-start latency, makespan) is in a unit that fits the run
(`time_unit`: seconds for a run under an hour, minutes under three hours, else hours), throughput in
jobs per hour, usage in node-hours; each header names its unit. The JSON (``SimResult.to_dict``) keeps
seconds, named ``*_s``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .result import SimResult


# (name, seconds, decimals): the unit durations are printed in
UNITS = (("s", 1.0, 0), ("min", 60.0, 1), ("h", 3600.0, 2))


def time_unit(results: Iterable[SimResult]) -> tuple[str, float, int]:
    """The unit that fits the runs: seconds when the longest makespan is under an hour, minutes
    under three hours, else hours (a 30-minute replay is not printed as 0.00-0.13 hours)."""
    span = max((r.overall.get("makespan_s") or 0.0 for r in results), default=0.0)
    if span != span:  # (nan: nothing ended)
        span = 0.0
    return UNITS[0] if span < 3600 else UNITS[1] if span < 3 * 3600 else UNITS[2]


def _u(x: float | None, unit: tuple[str, float, int]) -> str:
    """Seconds in `unit`."""
    return "-" if x is None else f"{x / unit[1]:,.{unit[2]}f}"


def _f(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def format_report(result: SimResult, *, by: str = "account", top: int | None = 20) -> str:
    """Overall metrics, then one line per account (or user), busiest first when truncated."""
    from tabulate import tabulate  # here: `simulate --json` and the library's callers print no table

    w, o = result.workload, result.overall
    un = time_unit([result])
    u = un[0]
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
    if hs.get("too_big"):
        lines.append(f"left out: {hs['too_big']:,} jobs bigger than the machine or their partition's nodes")
    if hs.get("never_start_limits"):
        nv = (w.meta.get("limits") or {}).get("never") or {}
        lines.append(f"left out: {hs['never_start_limits']:,} jobs that can never start under their limits (slurmctld "
                     "keeps them pending): " + "; ".join(f"{k}: {v}" for k, v in list(nv.items())[:3])
                     + ("; ..." if len(nv) > 3 else ""))
    if hs.get("gpus_too_many"):
        lines.append(f"left out: {hs['gpus_too_many']:,} jobs asking for more GPUs a node than their nodes give with "
                     "their CPUs (a job's --gpus=N spread over nodes is not modelled)")
    if hs.get("dependency_ignored"):
        lines.append(f"replayed without their dependency: {hs['dependency_ignored']:,} jobs (the capture does not "
                     "record which job each waits for, or only an after:/singleton one or on jobs outside the replay)")
    if hs.get("dependency_ordered"):
        lines.append(f"replayed after the jobs they depend on: {hs['dependency_ordered']:,} jobs (none starts before "
                     "those end)")
    sc = getattr(result.policy, "slurm_sched", None)
    if sc is not None:
        bf = (f"backfill every {sc.bf_interval_s:g} s (window {sc.bf_window_s / 60:g} min, resolution "
              f"{sc.bf_resolution_s:g} s, {sc.bf_max_job_test} jobs)" if sc.backfill else "no backfill")
        lim = sc.limits_text() if hasattr(sc, "limits_text") else ""
        main = (f"main on events ({sc.default_queue_depth + 1} jobs) and every {sc.sched_interval_s:g} s"
                if getattr(sc, "main_sched", True) else "no main scheduler (sched_interval=-1)")
        lines.append(f"scheduler: slurmctld's: {main}, {bf}" + (f", limits {lim}" if lim else "") + f"; {sc.source}")
        if getattr(sc, "unmodelled", ()):
            lines.append(f"note: SchedulerParameters the replay does not model: {', '.join(sc.unmodelled)}")
        from .run import _node_sched

        on = _node_sched(sc, w)
        if on is not None and on.node_model and on.node_cpus and w.nodes > on.node_cpus:
            from .nodesched import version_known

            ver = w.meta.get("slurm_version")
            each = (w.meta.get("machine") or {}).get("node_cpus_each") or []
            kinds = {c: each.count(c) for c in sorted(set(each), reverse=True)}
            many = (f"{len(each)} ({', '.join(f'{n} of {c}' for c, n in kinds.items())} CPUs)" if on.node_cpus == max(each or [0])
                    else f"{w.nodes // on.node_cpus} of {on.node_cpus} CPUs")
            lines.append(f"nodes: {many}, each job placed on them "
                         f"(select/cons_tres) and backfill holding whole nodes, by Slurm {on.node_model}'s rule"
                         + ("" if version_known(ver) else f" (the capture's Slurm version {ver!r} does not read: "
                            "22.05's assumed)"))
        else:
            m = w.meta.get("machine") or {}
            if m.get("nodes", 0) > 1 and w.meta.get("unit", "cpus") == "cpus":
                sizes = sorted(set(m.get("node_cpus") or []))
                why = (f"nodes of {', '.join(map(str, sizes))} CPUs" if len(sizes) > 1
                       else f"a machine of {w.nodes:,} CPUs, not the {m.get('cpus', 0):,} of its {m['nodes']} nodes")
                pn = m.get("partition_nodes") or {}
                apart = len({tuple(v) for v in pn.values()}) > 1
                lines.append(f"nodes: pooled ({why}): a job's CPUs are not placed on nodes, and a backfill "
                             f"reservation holds ceil(CPUs / {on.node_cpus}) x {on.node_cpus} CPUs"
                             + ("; partitions over different nodes are not told apart" if apart else ""))
        ge = (w.meta.get("machine") or {}).get("node_gpus_each") or []
        gj = sum(1 for j in w.jobs if getattr(j, "gpus", 0))
        if ge and not gj and (w.meta.get("machine") or {}).get("gpus_unaccounted"):
            lines.append("note: the nodes have GPUs, but the capture's AccountingStorageTRES does not record gres/gpu: "
                         "sacct gives no job's GPUs, so the replay makes no job wait for GPUs")
        if gj and not ge:
            lines.append(f"note: {gj:,} jobs ask for GPUs, and nodes.txt gives no node GPUs (a capture made before "
                         "sinfo's %G, or nodes without GRES): the GPUs are not modelled")
        if ge and gj:
            gk = {g: ge.count(g) for g in sorted(set(ge), reverse=True)}
            have = ", ".join((f"{n} node{'s' if n > 1 else ''} of {g}" if g else f"{n} without")
                             for g, n in gk.items())
            if on is not None and on.node_model:
                lines.append(f"GPUs: {have}; {gj:,} jobs ask for GPUs, each placed and backfilled only on nodes "
                             "with its GPUs a node free (select/cons_tres)")
            else:
                lines.append(f"note: {gj:,} jobs ask for GPUs ({have}), not modelled: the CPUs are pooled")
        pn = (w.meta.get("machine") or {}).get("partition_nodes") or {}
        unknown = sorted({x for j in w.jobs if j.partition for x in j.partition.split(",") if x not in pn})
        if pn and unknown:
            lines.append(f"note: jobs in partitions nodes.txt does not list ({', '.join(unknown[:5])}): each may run "
                         "on every node")
        if pn and w.meta.get("unit") == "nodes" and len({tuple(v) for v in pn.values()}) > 1:
            lines.append("note: --unit nodes: partitions over different nodes are not told apart (--unit cpus places "
                         "each job on its partition's nodes)")
        multi = sum(1 for j in w.jobs if "," in (j.partition or ""))
        if multi and (sc.bf_limited or pn):
            lines.append(f"note: {multi:,} jobs of several partitions: each runs in the first listed that holds it and "
                         "counts once towards the count limits (slurmctld tries, and counts, each partition's record)")
        down = w.meta.get("nodes_down") or []
        if down:
            lines.append(f"note: {len(down)} node(s) down or drained at the capture ({', '.join(down[:5])}"
                         f"{', ...' if len(down) > 5 else ''}), replayed as up: the capture does not say since when")
        off = (w.meta.get("machine") or {}).get("powered_down") or []
        if off:
            lines.append(f"note: {len(off)} node(s) powered down at the capture ({', '.join(off[:5])}"
                         f"{', ...' if len(off) > 5 else ''}; power saving), replayed as up from the start: slurmctld "
                         "boots such a node for a job (ResumeTimeout), and a capture does not say when each was down")
        lim = w.meta.get("limits")
        if lim:
            held = sum(1 for j in w.jobs if getattr(j, "limit_keys", ()))
            kinds = sorted(set(lim.get("kinds") or ()))
            lines.append(f"limits: {len(lim.get('jobs') or ())} association and QOS limit(s) on running jobs and CPUs "
                         f"({', '.join(kinds)}) over {held:,} jobs, as slurmctld applies them (a held job is passed by, "
                         "with no backfill plan; a partition's QOS's too); other limits (memory, GPUs, TRES-minutes) are not")
        lag = w.meta.get("completion_lag_s")
        if lag:
            lines.append(f"a job's CPUs free {lag:g} s after its end (its completion, as the capture's starts show)")
    for note in result.stats.get("notes", []):
        lines.append(f"note: {note}")
    overall = [
        ["jobs finished", f"{o['finished']:,} / {o['jobs']:,}"],
        [f"mean wait ({u})", _u(o["mean_wait_s"], un)],
        [f"median wait ({u})", _u(o["median_wait_s"], un)],
        [f"max wait ({u})", _u(o["max_wait_s"], un)],
        [f"mean response ({u})", _u(o.get("mean_response_s"), un)],
        ["mean slowdown", _f(o["mean_slowdown"])],
        ["mean bounded slowdown (10 s)", _f(o["mean_bsld"])],
        ["utilization", "-" if o.get("utilization") is None else f"{o['utilization'] * 100:.1f}%"],
        ["throughput (jobs/h)", _f(o["throughput_per_h"])],
        [f"makespan ({u})", _u(o.get("makespan_s"), un)],
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
                _u(m["mean_wait_s"], un),
                _u(m["first_start_latency_s"], un),
                _f(m["mean_bsld"]),
                _f(m["node_hours"], 0),
            ]
            for g, m in sorted(shown, key=lambda kv: kv[0])
        ]
        lines.append("")
        lines.append(
            tabulate(
                rows,
                headers=[by, "jobs", f"mean wait ({u})", f"first start ({u})", "mean bsld", "CPU-hours" if cpus else "node-hours"],
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
    """One line per run: overall wait/bsld/utilization and, per named group, first start and wait (time_unit)."""
    results = list(results)
    un = time_unit(results)
    u = un[0]
    from tabulate import tabulate

    rows = comparison_rows(results, groups)
    headers = ["policy", f"mean wait ({u})", "mean bsld", "utilization"]
    for g in groups:
        headers += [f"{g} first start ({u})", f"{g} mean wait ({u})"]
    table = []
    for row in rows:
        line = [row["policy"], _u(row["mean_wait_s"], un), _f(row["mean_bsld"]),
                "-" if row["utilization"] is None else f"{row['utilization'] * 100:.1f}%"]
        for g in groups:
            line += [_u(row[f"{g}_first_start_s"], un), _u(row[f"{g}_mean_wait_s"], un)]
        table.append(line)
    return tabulate(table, headers=headers, tablefmt="simple", disable_numparse=True)
