"""Moldable runs as :class:`SimResult`, and the paper's per-category report (table and chart).

``run_moldable`` runs a strategy and returns a SimResult whose workload is the *molded* one
(each job with the size the scheduler chose and its run time and request moved there), so the
simulator's usual metrics, report and JSON apply unchanged; ``stats["moldable"]`` adds the
strategy, the parameters and the per-category figures.

Categories: the trace job's processor-seconds (trace processors x trace run time x LF), the
same for every strategy, in decade bins (``moldable.CATEGORY_EDGES``). Per category: jobs,
mean turnaround (end - submit), mean wait, and the chosen sizes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any


from .metrics import group_metrics, utilization
from .moldable import CATEGORY_EDGES, MoldParams, Strategy, category_labels, category_of, get_strategy
from .moldable_sched import MoldRun, simulate_moldable
from .result import SimResult
from .workload import Workload

HOUR = 3600.0


def procs_per_node(w: Workload) -> int:
    return int(w.meta.get("procs_per_node", 1) or 1)


def job_categories(w: Workload, params: MoldParams, edges: tuple[float, ...] = CATEGORY_EDGES) -> list[int]:
    """Each job's category: trace processor-seconds (x LF), decade bins."""
    ppn = procs_per_node(w)
    return [category_of(j.run * params.lf * j.size * ppn, edges) for j in w.jobs]


def category_stats(w: Workload, r: MoldRun, cats: list[int], edges: tuple[float, ...] = CATEGORY_EDGES) -> list[dict[str, Any]]:
    labels = category_labels(edges)
    rows = []
    for k, lab in enumerate(labels):
        ix = [i for i, c in enumerate(cats) if c == k]
        done = [i for i in ix if r.end[i] != math.inf]
        row: dict[str, Any] = {"category": k, "label": lab, "jobs": len(ix), "finished": len(done)}
        if done:
            row["mean_turnaround_s"] = sum(r.end[i] - w.jobs[i].submit for i in done) / len(done)
            row["mean_wait_s"] = sum(r.start[i] - w.jobs[i].submit for i in done) / len(done)
            row["mean_size"] = sum(r.size[i] for i in done) / len(done)
            row["mean_trace_size"] = sum(w.jobs[i].size for i in done) / len(done)
        else:
            row.update(mean_turnaround_s=None, mean_wait_s=None, mean_size=None, mean_trace_size=None)
        rows.append(row)
    return rows


def run_moldable(workload: Workload, strategy: Strategy | str, params: MoldParams | None = None) -> SimResult:
    """Simulate a moldable (or rigid) strategy; see the module docstring."""
    st = get_strategy(strategy) if isinstance(strategy, str) else strategy
    params = params or MoldParams()
    raw = simulate_moldable(workload, st, params)
    molded = Workload(
        name=workload.name,
        nodes=workload.nodes,
        jobs=[replace(j, size=raw.size[i], run=raw.run[i] if raw.start[i] != math.inf else j.run,
                      estimate=raw.estimate[i] if raw.start[i] != math.inf else j.estimate)
              for i, j in enumerate(workload.jobs)],
        allocations=workload.allocations,
        meta={**workload.meta, "moldable": True},
    )
    jobs = molded.jobs
    submit = [j.submit for j in jobs]
    run = [j.run for j in jobs]
    size = [j.size for j in jobs]
    overall = group_metrics(range(len(jobs)), submit, raw.start, raw.end, run, size)
    overall["utilization"] = utilization(submit, raw.end, run, size, molded.nodes)
    ends = [e for e in raw.end if e != math.inf]
    overall["makespan_s"] = (max(ends) - min(submit)) if ends else None
    done = [i for i in range(len(jobs)) if raw.end[i] != math.inf]
    overall["mean_turnaround_s"] = sum(raw.end[i] - submit[i] for i in done) / len(done) if done else None
    groups: dict[str, list[int]] = {}
    for i, j in enumerate(jobs):
        groups.setdefault(j.account, []).append(i)
    by_account = {g: group_metrics(ix, submit, raw.start, raw.end, run, size) for g, ix in sorted(groups.items())}
    cats = job_categories(workload, params)
    from .policies import Policy

    pol = Policy("fcfs", backfill="easy" if st.when == "schedule" else "none", name="mold-" + st.name)
    stats = {
        "events": raw.events,
        "passes": raw.passes,
        "unfinished": len(jobs) - len(done),
        "notes": [],
        "moldable": {
            "strategy": st.to_dict(),
            "params": params.to_dict(),
            "category_edges_proc_s": list(CATEGORY_EDGES),
            "categories": category_stats(workload, raw, cats),
        },
    }
    return SimResult(molded, pol, raw.start, raw.end, overall, by_account, {}, raw.wall_s, stats,
                     sorted(done, key=lambda i: (raw.start[i], i)))


# --------------------------------------------------------------------------- the per-category table

Summary = dict[str, Any]  # {"strategy": label, "overall": {...}, "categories": [...]}


def summarize(r: SimResult | Summary) -> Summary:
    """What the tables and charts need from a run (also what the experiment's --json stores,
    so they can be redrawn from it)."""
    if isinstance(r, dict):
        return r
    return {"strategy": r.policy.label.removeprefix("mold-"), "overall": r.overall,
            "categories": r.stats["moldable"]["categories"]}



def format_categories(results: list[SimResult] | list[Summary], *, baseline: int = 0, fmt: str = "github") -> str:
    """Mean turnaround (h) per category for each result, and its change against ``results[baseline]`` (%)."""
    if not results:
        return ""
    results = [summarize(r) for r in results]
    cats0 = results[0]["categories"]
    base = results[baseline]["categories"]
    headers = ["category (proc-s)", "jobs"]
    for k, r in enumerate(results):
        headers.append(r["strategy"] + (" (h)" if k == baseline else ""))
    rows = []
    for c, row0 in enumerate(cats0):
        line = [row0["label"], f"{row0['jobs']:,}"]
        b = base[c]["mean_turnaround_s"]
        for k, r in enumerate(results):
            x = r["categories"][c]["mean_turnaround_s"]
            if x is None:
                line.append("-")
            elif k == baseline:
                line.append(f"{x / HOUR:,.2f}")
            else:
                line.append(f"{x / HOUR:,.2f} ({_pct(x, b)})")
        rows.append(line)
    line = ["all", f"{results[0]['overall']['jobs']:,}"]
    b = results[baseline]["overall"]["mean_turnaround_s"]
    for k, r in enumerate(results):
        x = r["overall"]["mean_turnaround_s"]
        line.append(f"{x / HOUR:,.2f}" if k == baseline else f"{x / HOUR:,.2f} ({_pct(x, b)})")
    rows.append(line)
    from tabulate import tabulate  # here: only the text tables need it
    return tabulate(rows, headers=headers, tablefmt=fmt, disable_numparse=True)


def _pct(x: float, b: float | None) -> str:
    if b is None or b == 0:
        return "-"
    return f"{(x - b) / b * 100:+.0f}%"


def improvement_table(results: list[SimResult] | list[Summary], *, baseline: int = 0) -> dict[str, list[float | None]]:
    """Per strategy (label): per category, the relative change of mean turnaround against the
    baseline (negative = better), as fractions."""
    results = [summarize(r) for r in results]
    base = results[baseline]["categories"]
    out: dict[str, list[float | None]] = {}
    for r in results:
        vals: list[float | None] = []
        for c, row in enumerate(r["categories"]):
            x, b = row["mean_turnaround_s"], base[c]["mean_turnaround_s"]
            vals.append(None if x is None or not b else (x - b) / b)
        out[r["strategy"]] = vals
    return out


def render_categories_text(results: list[SimResult] | list[Summary], *, baseline: int = 0, width: int = 30) -> str:
    """The chart as text: one bar per category and strategy, the change of mean turnaround
    against the baseline ('<' better, '>' worse; one mark per 10 %, capped at ``width``)."""
    imp = improvement_table(results, baseline=baseline)
    labels = [row["label"] for row in summarize(results[0])["categories"]]
    names = [n for k, n in enumerate(imp) if k != baseline]
    base_name = list(imp)[baseline]
    w = max(len(n) for n in names) if names else 0
    lines = [f"change of mean turnaround against {base_name} ('<' 10% better, '>' 10% worse)"]
    for c, lab in enumerate(labels):
        lines.append(f"{lab}:")
        for nm in names:
            v = imp[nm][c]
            if v is None:
                lines.append(f"  {nm:<{w}} -")
                continue
            marks = min(width, round(abs(v) * 10))
            bar = ("<" if v < 0 else ">") * marks
            lines.append(f"  {nm:<{w}} {v * 100:+6.0f}% {bar}")
    return "\n".join(lines)


def render_categories_png(results: list[SimResult] | list[Summary], path: str | Path, *, baseline: int = 0, title: str = "") -> Path:
    """A grouped bar chart (PNG): per category, each strategy's mean turnaround divided by the
    baseline's, on a log axis (0.5 and 2 equally far from 1), one bar per strategy (matplotlib,
    the ``plot`` extra, imported here)."""
    from fscontrol.plotting import pyplot, save

    plt = pyplot("the PNG chart")
    imp = improvement_table(results, baseline=baseline)
    labels = [row["label"] for row in summarize(results[0])["categories"]]
    names = [n for k, n in enumerate(imp) if k != baseline]
    base_name = list(imp)[baseline]
    fig, ax = plt.subplots(figsize=(12, 5.5), dpi=110)
    nb = max(1, len(names))
    width = 0.8 / nb
    for k, nm in enumerate(names):
        xs = [c + (k - (nb - 1) / 2) * width for c in range(len(labels))]
        ys = [(1.0 + v if v is not None else 1.0) for v in imp[nm]]
        ax.bar(xs, [y - 1.0 for y in ys], bottom=1.0, width=width, label=nm)
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    ticks = [x for x in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0) if lo <= x <= hi]
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"{x:g}x" for x in ticks])
    ax.minorticks_off()
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_xlabel("category (processor-seconds of the trace job)")
    ax.set_ylabel(f"mean turnaround / {base_name}'s (log scale; below 1 is better)")
    import textwrap

    ax.set_title("\n".join(textwrap.wrap(title or f"moldable strategies against {base_name}", 110)), fontsize=10)
    if names:
        ax.legend(fontsize=8, ncol=2)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    return save(fig, path, "the chart")


def size_profile(results: list[SimResult]) -> str:
    """The share of jobs per partition size (nodes, power-of-two bins) under each strategy: the
    paper's "job profile" slide (rigid vs greedy on CTC)."""
    if not results:
        return ""
    N = results[0].workload.nodes
    edges = [1]
    while edges[-1] < N:
        edges.append(min(N, edges[-1] * 2))
    labels = ["1"] + [f"{a + 1}-{b}" if b > a + 1 else f"{b}" for a, b in zip(edges, edges[1:])]

    def col(r: SimResult) -> list[str]:
        counts = [0] * len(edges)
        for j in r.workload.jobs:
            k = 0
            while edges[k] < j.size:
                k += 1
            counts[k] += 1
        n = len(r.workload.jobs) or 1
        return [f"{c / n * 100:.2f}" for c in counts]

    cols = [col(r) for r in results]
    rows = [[lab, *(c[k] for c in cols)] for k, lab in enumerate(labels)]
    heads = ["size (nodes)"] + [f"% jobs, {r.policy.label.removeprefix('mold-')}" for r in results]
    from tabulate import tabulate  # here: only the text tables need it
    return tabulate(rows, headers=heads, tablefmt="github", disable_numparse=True)
