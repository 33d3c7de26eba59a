"""Gantt charts of a run: time across, nodes up, one colour (or letter) per account.

The simulator counts nodes, it does not place jobs on named nodes; for the chart each job is
given concrete node numbers afterwards (lowest free nodes first, in start order), which is
always possible because the counts never exceed the machine.

``render_gantt_text`` always works; ``render_gantt_png`` needs matplotlib (the ``plot`` extra),
imported only when called.
"""

from __future__ import annotations

import heapq
import math
from pathlib import Path

from ..errors import ConfigError
from .run import SimResult

MAX_CHART_JOBS = 50_000
_SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _window(result: SimResult, t0: float | None, t1: float | None) -> tuple[float, float, list[int]]:
    jobs = result.workload.jobs
    started = [i for i in range(len(jobs)) if result.start[i] != math.inf]
    if not started:
        return 0.0, 1.0, []
    lo = min(jobs[i].submit for i in range(len(jobs))) if t0 is None else t0
    hi = max(result.end[i] for i in started) if t1 is None else t1
    if hi <= lo:
        hi = lo + 1.0
    shown = [i for i in started if result.start[i] < hi and result.end[i] > lo]
    if len(shown) > MAX_CHART_JOBS:
        raise ConfigError(
            f"{len(shown):,} jobs in the chart window: choose a shorter window (at most {MAX_CHART_JOBS:,} jobs)"
        )
    return lo, hi, shown


def assign_nodes(result: SimResult, idx: list[int]) -> dict[int, list[int]]:
    """Concrete node numbers for the jobs ``idx``: lowest free first, in start order.

    Jobs running before the window are included so the placement is consistent.
    """
    jobs = result.workload.jobs
    order = sorted(idx, key=lambda i: (result.start[i], result.end[i], i))
    free = list(range(result.workload.nodes))  # a heap of free node numbers
    heapq.heapify(free)
    ends: list[tuple[float, int]] = []
    nodes_of: dict[int, list[int]] = {}
    for i in order:
        st = result.start[i]
        while ends and ends[0][0] <= st:
            _, k = heapq.heappop(ends)
            for nd in nodes_of[k]:
                heapq.heappush(free, nd)
        take = [heapq.heappop(free) for _ in range(min(jobs[i].size, len(free)))]
        nodes_of[i] = take
        heapq.heappush(ends, (result.end[i], i))
    return nodes_of


def _symbols(accounts: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    used: set[str] = set()
    for a in accounts:
        for c in (a[:1].upper(), a[:1].lower(), *_SYMBOLS):
            if c and c not in used and c.isalnum():
                out[a] = c
                used.add(c)
                break
        else:
            out[a] = "?"
    return out


def render_gantt_text(
    result: SimResult,
    *,
    width: int = 100,
    height: int = 20,
    t0: float | None = None,
    t1: float | None = None,
) -> str:
    """The chart as text: ``height`` rows of node bands, ``width`` columns of time.

    A cell shows the account that used most of it (its letter, see the legend), or '.' when
    less than half of it was busy.
    """
    lo, hi, shown = _window(result, t0, t1)
    jobs = result.workload.jobs
    total = result.workload.nodes
    if not shown:
        return "(no job ran in the window)"
    nodes_of = assign_nodes(result, shown)
    accounts = sorted({jobs[i].account for i in shown})
    sym = _symbols(accounts)
    cell_t = (hi - lo) / width
    band = total / height
    cells: list[list[dict[str, float]]] = [[{} for _ in range(width)] for _ in range(height)]
    for i in shown:
        a = jobs[i].account
        rows: dict[int, int] = {}
        for nd in nodes_of[i]:
            r = min(height - 1, int(nd / band))
            rows[r] = rows.get(r, 0) + 1
        s, e = max(result.start[i], lo), min(result.end[i], hi)
        c0, c1 = int((s - lo) / cell_t), min(width - 1, int((e - lo) / cell_t))
        for c in range(c0, c1 + 1):
            cs, ce = lo + c * cell_t, lo + (c + 1) * cell_t
            frac = (min(e, ce) - max(s, cs)) / cell_t
            if frac <= 0:
                continue
            for r, cnt in rows.items():
                d = cells[r][c]
                d[a] = d.get(a, 0.0) + cnt * frac
    out = []
    cap = band
    for r in range(height - 1, -1, -1):
        line = []
        for c in range(width):
            d = cells[r][c]
            if not d or sum(d.values()) < 0.5 * cap:
                line.append(".")
            else:
                line.append(sym[max(d.items(), key=lambda kv: (kv[1], kv[0]))[0]])
        label = f"{int((r + 1) * band):>6} |"
        out.append(label + "".join(line))
    span_days = (hi - lo) / 86400.0
    out.append("       +" + "-" * width)
    out.append(f"        t = 0 .. {span_days:.2f} days ({cell_t / 3600:.2f} h per column); rows: nodes")
    out.append("        " + "  ".join(f"{sym[a]}={a}" for a in accounts) + "  .=idle")
    return "\n".join(out)


def render_gantt_png(
    result: SimResult,
    path: str | Path,
    *,
    t0: float | None = None,
    t1: float | None = None,
    title: str | None = None,
) -> Path:
    """Draw the chart to a PNG (needs matplotlib: ``pip install 'fscontrol[plot]'``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.collections import PolyCollection
    except ImportError as e:
        raise ConfigError("the PNG Gantt chart needs matplotlib: install matplotlib into fscontrol's environment (.venv/bin/pip install matplotlib, or pip install '.[plot]' in the checkout)") from e
    lo, hi, shown = _window(result, t0, t1)
    jobs = result.workload.jobs
    nodes_of = assign_nodes(result, shown)
    accounts = sorted({jobs[i].account for i in shown})
    cmap = plt.get_cmap("tab10" if len(accounts) <= 10 else "tab20")
    colour = {a: cmap(k % cmap.N) for k, a in enumerate(accounts)}
    day = 86400.0
    verts, colours = [], []
    for i in shown:
        x0, x1 = (max(result.start[i], lo) - lo) / day, (min(result.end[i], hi) - lo) / day
        for a, b in _runs(sorted(nodes_of[i])):
            verts.append([(x0, a), (x1, a), (x1, b + 1), (x0, b + 1)])
            colours.append(colour[jobs[i].account])
    fig, ax = plt.subplots(figsize=(12, 5))
    ax.add_collection(PolyCollection(verts, facecolors=colours, edgecolors="black", linewidths=0.2))
    ax.set_xlim(0, (hi - lo) / day)
    ax.set_ylim(0, result.workload.nodes)
    ax.set_xlabel("days")
    ax.set_ylabel("nodes")
    ax.set_title(title or f"{result.workload.name}: {result.policy.label}")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=colour[a], label=a) for a in accounts], loc="upper right")
    out = Path(path)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out


def _runs(nodes: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs [a, b] of sorted node numbers."""
    runs: list[tuple[int, int]] = []
    for nd in nodes:
        if runs and nd == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], nd)
        else:
            runs.append((nd, nd))
    return runs
