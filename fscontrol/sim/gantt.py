"""Gantt charts of a run: time across, nodes up, one colour (or letter) per account.

The simulator counts nodes, it does not place jobs on named nodes; for the chart each job is
given concrete node numbers afterwards (lowest free nodes first, in start order), which is
always possible because the counts never exceed the machine.

``render_gantt_text`` always works; ``render_gantt_png`` needs matplotlib (the ``plot`` extra),
imported only when called. Both name the busiest accounts (``TOP_ACCOUNTS``) and draw the rest
as one "others" group; the PNG has a fixed size (``png_layout``).
"""

from __future__ import annotations

import heapq
import math
from pathlib import Path

from ..errors import ConfigError, OutputError
from .result import SimResult

MAX_CHART_JOBS = 50_000
TOP_ACCOUNTS = 15  # accounts named in a chart's legend; the rest are drawn as "others"
OTHERS = "others"
PNG_FIGSIZE = (12.0, 6.0)  # inches: fixed, whatever the number of accounts
PNG_DPI = 120  # so 1440 x 720 pixels
HOUR = 3600.0
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


def rank_accounts(result: SimResult, shown: list[int], lo: float, hi: float, top: int = TOP_ACCOUNTS) -> tuple[list[str], dict[str, float], list[str]]:
    """The accounts of the window, busiest first (node-seconds inside [lo, hi]).

    Returns (the ``top`` busiest, node-seconds of every account, the rest). A chart names the
    first list and draws the rest as one "others" group, so its legend has at most top + 1 lines
    whatever the number of accounts.
    """
    jobs = result.workload.jobs
    used: dict[str, float] = {}
    for i in shown:
        a = jobs[i].account
        used[a] = used.get(a, 0.0) + jobs[i].size * max(0.0, min(result.end[i], hi) - max(result.start[i], lo))
    order = sorted(used, key=lambda a: (-used[a], a))
    if len(order) <= top + 1:  # one "others" line would name a single account: name it instead
        return order, used, []
    return order[:top], used, order[top:]


def png_layout(n_accounts: int, top: int = TOP_ACCOUNTS) -> dict[str, object]:
    """The PNG's geometry: a fixed figure (the legend is a panel beside the chart, not below it),
    whatever the number of accounts; the legend has at most ``top`` + 1 entries ("others")."""
    return {
        "figsize": PNG_FIGSIZE,
        "dpi": PNG_DPI,
        "pixels": (int(PNG_FIGSIZE[0] * PNG_DPI), int(PNG_FIGSIZE[1] * PNG_DPI)),
        "legend_entries": n_accounts if n_accounts <= top + 1 else top + 1,
    }


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
    top: int = TOP_ACCOUNTS,
) -> str:
    """The chart as text: ``height`` rows of node bands, ``width`` columns of time (hours).

    A cell shows the account that used most of it (its letter, see the legend; '+' for the
    accounts beyond the ``top`` busiest, counted together), or '.' when less than half of it
    was busy.
    """
    lo, hi, shown = _window(result, t0, t1)
    jobs = result.workload.jobs
    total = result.workload.nodes
    if not shown:
        return "(no job ran in the window)"
    nodes_of = assign_nodes(result, shown)
    named, _, rest = rank_accounts(result, shown, lo, hi, top)
    sym = _symbols(named)
    group = {a: a for a in named} | {a: OTHERS for a in rest}
    if rest:
        sym[OTHERS] = "+"
    cell_t = (hi - lo) / width
    band = total / height
    cells: list[list[dict[str, float]]] = [[{} for _ in range(width)] for _ in range(height)]
    for i in shown:
        a = group[jobs[i].account]
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
    out.append("       +" + "-" * width)
    out.append(
        f"        t = 0 .. {(hi - lo) / HOUR:,.1f} h from the first submission ({cell_t / HOUR:.2f} h per column); rows: nodes"
    )
    legend = [f"{sym[a]}={a}" for a in named]
    if rest:
        legend.append(f"+={len(rest)} other accounts")
    out.append("        " + "  ".join(legend) + "  .=idle")
    return "\n".join(out)


def render_gantt_png(
    result: SimResult,
    path: str | Path,
    *,
    t0: float | None = None,
    t1: float | None = None,
    title: str | None = None,
    top: int = TOP_ACCOUNTS,
) -> Path:
    """Draw the chart to a PNG (needs matplotlib), always ``png_layout()['pixels']`` in size.

    Time across in hours from the first submission, nodes up; the ``top`` busiest accounts of the
    window in their own colour, the rest in grey as "others"; the legend (each account's share of
    the node-hours in the window) is a panel to the right of the chart.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Patch
    except ImportError as e:
        raise ConfigError("the PNG Gantt chart needs matplotlib: install matplotlib into fscontrol's environment (.venv/bin/pip install matplotlib, or pip install '.[plot]' in the checkout)") from e
    lo, hi, shown = _window(result, t0, t1)
    jobs = result.workload.jobs
    nodes_of = assign_nodes(result, shown)
    named, used, rest = rank_accounts(result, shown, lo, hi, top)
    # Qualitative colours without their greys: grey is "others".
    if len(named) <= 9:
        palette = [c for k, c in enumerate(plt.get_cmap("tab10").colors) if k != 7]
    else:
        palette = [c for k, c in enumerate(plt.get_cmap("tab20").colors) if k not in (14, 15)]
    colour = {a: palette[k % len(palette)] for k, a in enumerate(named)}
    grey = (0.78, 0.78, 0.78, 1.0)
    for a in rest:
        colour[a] = grey
    verts, colours = [], []
    for i in shown:
        x0, x1 = (max(result.start[i], lo) - lo) / HOUR, (min(result.end[i], hi) - lo) / HOUR
        for a, b in _runs(sorted(nodes_of[i])):
            verts.append([(x0, a), (x1, a), (x1, b + 1), (x0, b + 1)])
            colours.append(colour[jobs[i].account])
    fig = plt.figure(figsize=PNG_FIGSIZE, dpi=PNG_DPI)
    grid = fig.add_gridspec(1, 2, width_ratios=(4.6, 1.0), wspace=0.02, left=0.06, right=0.995, bottom=0.09, top=0.93)
    ax = fig.add_subplot(grid[0])
    # Edges separate a few big jobs; with thousands they would paint the chart black.
    thin = len(verts) <= 2000
    ax.add_collection(PolyCollection(verts, facecolors=colours, edgecolors="white" if thin else "none",
                                     linewidths=0.3 if thin else 0.0))
    ax.set_xlim(0, (hi - lo) / HOUR)
    ax.set_ylim(0, result.workload.nodes)
    ax.set_xlabel("hours from the first submission")
    ax.set_ylabel("nodes")
    ax.set_title(title or f"{result.workload.name}: {result.policy.label}", fontsize=11)
    total = sum(used.values()) or 1.0
    handles = [Patch(color=colour[a], label=f"{_short(a)}  {_share(used[a] / total)}") for a in named]
    if rest:
        handles.append(Patch(color=grey, label=f"{len(rest)} others  {_share(sum(used[a] for a in rest) / total)}"))
    lax = fig.add_subplot(grid[1])
    lax.axis("off")
    lax.legend(handles=handles, loc="upper left", frameon=False, fontsize=9, title="account: share of\nthe node-hours",
               title_fontsize=9, borderaxespad=0.0)
    out = Path(path)
    try:
        if not out.parent.is_dir():
            raise FileNotFoundError(f"folder {out.parent} does not exist")
        fig.savefig(out, dpi=PNG_DPI)  # no bbox_inches="tight": the size stays PNG_FIGSIZE x PNG_DPI
    except OSError as e:
        raise OutputError(f"cannot write the Gantt chart {out}: {e}") from None
    finally:
        plt.close(fig)
    return out


def _share(x: float) -> str:
    return "<1%" if 0 < x < 0.005 else f"{x:.0%}"


def _short(name: str, n: int = 18) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def _runs(nodes: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs [a, b] of sorted node numbers."""
    runs: list[tuple[int, int]] = []
    for nd in nodes:
        if runs and nd == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], nd)
        else:
            runs.append((nd, nd))
    return runs
