"""`fscontrol history --png / --html`: the agent's record over a period drawn over time.

Five panels on one time axis: the halving usage against the target u* (as the agent saw it and
as Slurm used it), the damping factor d (in force and wanted), the padding, the gate's holds and
releases, and the ticks (ok and failed). The data are `history --json`'s own: the decisions of
`report.ticks.history_data` and the `timeline` computed here (ticks and gate actions per time bucket).

The PNG needs matplotlib (the optional extra 'plot'); the HTML needs nothing: one file with
inline CSS and SVG, no script, no external request, a table of the plotted values under each
panel (screen readers, and the tests check it against --json).
"""

from __future__ import annotations

import html
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fscontrol.errors import ConfigError, OutputError
from fscontrol.store import ledger as store_ledger

BUCKETS = 96  # time buckets of the tick and gate bars: a week in 105-minute bars
HTML_POINTS = 400  # decisions drawn (and tabled) per line in the HTML at most: the file stays small
HOLD_KINDS = ("hold", "nice")  # the gate's actions that place a hold or a demotion
RELEASE_KINDS = ("release", "unnice")


def timeline(db: Any, cluster: str, since: float, until: float, buckets: int = BUCKETS) -> dict:
    """Ticks (ok / failed) and the gate's holds placed and released per time bucket over
    [since, until]: `buckets` equal buckets, at least a minute each. Actions count when they
    were carried out or may have been (status ok, pending, unknown)."""
    width = max(60.0, (until - since) / buckets)
    n = max(1, math.ceil((until - since) / width))
    rows = [{"start": _iso(since + i * width), "ticks_ok": 0, "ticks_failed": 0, "holds": 0, "releases": 0}
            for i in range(n)]

    def put(i: int, key: str, count: int) -> None:
        rows[min(max(int(i), 0), n - 1)][key] += count

    kinds = HOLD_KINDS + RELEASE_KINDS
    ticks, actions, held = store_ledger.activity_counts(db, cluster, since, until, width, kinds)
    for b, status, count in ticks:
        put(b, "ticks_ok" if status == "ok" else "ticks_failed", count)
    for b, kind, count in actions:
        put(b, "holds" if kind in HOLD_KINDS else "releases", count)
    return {"bucket_seconds": width, "buckets": rows, "holds_now": held}


def history_report(db: Any, cluster: str | None, since: str, now: float, *, with_timeline: bool = False,
                   png: Path | None = None, html: Path | None = None) -> dict:
    """`fscontrol history`'s data: the record (report.ticks.history_data) of `cluster` (None: the
    history's only one) from `since` (a duration, 7d, 12h, 90m, or a POSIX time) to `now`; with
    `with_timeline` or a chart, the ticks and holds per bucket too, drawn into `png` and `html`."""
    from fscontrol.report.decisions import period_start, pick_cluster
    from fscontrol.report.ticks import history_data
    from fscontrol.store import history as store

    start = period_start(since, now)
    name = pick_cluster(db, cluster)
    data = history_data(name, start, now, store.history(db, name, start, now))
    if with_timeline or png or html:
        data["timeline"] = timeline(db, name, start, now)
    if png is not None:
        plot_png(data, png)
    if html is not None:
        write_html(data, html)
    return data


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _t(iso: str) -> float:
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def check_output(path: Path, option: str) -> None:
    """Fail before any work when the output's folder is missing (never made: a typo would make
    folders as root)."""
    if not path.parent.is_dir():
        raise OutputError(f"cannot write the {option} file {path}: folder {path.parent} does not exist")


def series(data: dict) -> dict[str, list[tuple[float, float | None]]]:
    """The decision lines: name -> [(POSIX time, value)], in decision order."""
    dec = [(_t(d["time"]), d) for d in data["decisions"]]
    keys = ("halving_core_hours", "halving_slurm_core_hours", "target_core_hours", "damping_now", "damping_target",
            "padding_core_hours")
    return {k: [(t, d[k]) for t, d in dec] for k in keys}


def gaps(times: list[float]) -> list[tuple[float, float]]:
    """The holes in the record (no decision for over 3 times the usual interval: the agent or
    Slurm was down), as (last time before, first time after): the lines break there."""
    if len(times) < 3:
        return []
    steps = sorted(b - a for a, b in zip(times, times[1:]))
    usual = steps[len(steps) // 2]
    return [(a, b) for a, b in zip(times, times[1:]) if b - a > 3 * usual and b - a > 60]


def _broken(points: list[tuple[float, float | None]], holes: list[tuple[float, float]]) -> list[tuple[float, float | None]]:
    """The points with a (t, None) inserted across every hole."""
    if not holes:
        return points
    out: list[tuple[float, float | None]] = []
    for i, p in enumerate(points):
        if i and any(points[i - 1][0] <= a and b <= p[0] for a, b in holes):
            out.append((points[i - 1][0] + 1.0, None))  # just after the last point: a step line stops there
        out.append(p)
    return out


# ------------------------------------------------------------------------------------ PNG
def plot_png(data: dict, path: str | Path) -> None:
    """The five panels into a PNG of a fixed size (10 x 11 inches at 100 dpi: 1000 x 1100 px)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(
            "--png needs matplotlib, which is not installed: install matplotlib into fscontrol's environment "
            "(.venv/bin/pip install matplotlib, or pip install '.[plot]' in the checkout; a site install: scripts/install-site.sh "
            "without --no-plot) (or use --html / --json)") from None
    s = series(data)
    tl = data["timeline"]

    def dt(t: float) -> datetime:
        return datetime.fromtimestamp(t, tz=timezone.utc)

    holes = gaps([t for t, _ in s["target_core_hours"]])

    def line(ax, key: str, **kw) -> None:
        pts = [(dt(t), math.nan if v is None else v) for t, v in _broken(s[key], holes)]
        if any(not math.isnan(v) for _, v in pts):  # NaN: a break in the line
            ax.plot([p[0] for p in pts], [p[1] for p in pts], **kw)

    def legend(ax) -> None:  # a panel with nothing in the period (no decision yet): no empty legend
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper left", fontsize=8)

    fig, axes = plt.subplots(5, 1, figsize=(10, 11), sharex=True, gridspec_kw={"height_ratios": [3, 2, 2, 1.6, 1.6]})
    ax = axes[0]
    line(ax, "target_core_hours", color="black", linestyle="--", linewidth=1.2, label="target u*", drawstyle="steps-post")
    line(ax, "halving_slurm_core_hours", color="tab:blue", linewidth=1.4, label="halving as Slurm used it")
    line(ax, "halving_core_hours", color="tab:orange", linewidth=1, alpha=0.8, label="halving the agent saw (S_ref d U)")
    ax.set_ylabel("core-hours")
    ax.set_title("halving usage against u*")
    legend(ax)
    ax = axes[1]
    line(ax, "damping_now", color="tab:green", linewidth=1.4, label="d in force", drawstyle="steps-post")
    line(ax, "damping_target", color="tab:olive", linestyle="--", linewidth=1, label="d wanted", drawstyle="steps-post")
    ax.set_ylabel("d")
    ax.set_title("FairShareDampeningFactor d")
    legend(ax)
    ax = axes[2]
    line(ax, "padding_core_hours", color="tab:purple", linewidth=1.4, label="padding (dummy's decayed usage)")
    ax.set_ylabel("core-hours")
    ax.set_title("padding")
    legend(ax)
    width_days = tl["bucket_seconds"] / 86400
    starts = [dt(_t(b["start"])) for b in tl["buckets"]]
    ax = axes[3]
    ax.bar(starts, [b["holds"] for b in tl["buckets"]], width=width_days, align="edge", color="tab:red", label="holds placed")
    ax.bar(starts, [-b["releases"] for b in tl["buckets"]], width=width_days, align="edge", color="tab:cyan", label="released")
    ax.axhline(0, color="grey", linewidth=0.6)
    ax.set_ylabel("jobs")
    ax.set_title(f"the gate's holds per {_duration(tl['bucket_seconds'])} (in force now: {tl['holds_now']})")
    legend(ax)
    ax = axes[4]
    ok = [b["ticks_ok"] for b in tl["buckets"]]
    ax.bar(starts, ok, width=width_days, align="edge", color="tab:gray", label="ticks ok")
    ax.bar(starts, [b["ticks_failed"] for b in tl["buckets"]], width=width_days, align="edge", bottom=ok, color="tab:red",
           label="ticks failed")
    ax.set_ylabel("ticks")
    ax.set_title(f"ticks per {_duration(tl['bucket_seconds'])}")
    legend(ax)
    ax.set_xlim(dt(_t(data["since"])), dt(_t(data["until"])))
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    ax.set_xlabel("time (UTC)")
    for a in axes:
        a.grid(alpha=0.3)
    fig.suptitle(f"fscontrol history of {data['cluster']}, {data['since']} .. {data['until']}")
    fig.tight_layout()
    try:
        check_output(Path(path), "--png")
        fig.savefig(path, dpi=100)
    except OSError as e:
        raise OutputError(f"cannot write the --png file {path}: {e}") from None
    finally:
        plt.close(fig)


def _duration(s: float) -> str:
    if s % 86400 == 0:
        return f"{s / 86400:g} d"
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    return f"{s / 60:.3g} min"


# ----------------------------------------------------------------------------------- HTML
W, H, ML, MR, MT, MB = 900, 170, 70, 16, 12, 26  # one panel's SVG box and margins


def _thin(points: list, limit: int) -> list:
    """At most `limit` points, evenly spaced, the first and last kept."""
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _nice_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        return f"{v:.3g}"
    return f"{v:,.4g}" if a < 1000 else f"{v:,.0f}"


def _panel(title: str, t0: float, t1: float, lines: list[dict], bars: list[dict] | None = None, unit: str = "") -> str:
    """One SVG panel: lines [{label, cls, points [(t, v)], dash, step}] and/or bars
    [{label, cls, points [(t, width, v)], base {t: value the bar sits on}}]."""
    vals = [v for ln in lines for _, v in ln["points"] if v is not None]
    for b in bars or []:
        base = b.get("base", {})
        vals += [base.get(t, 0) + v for t, _, v in b["points"]] + [0]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - (abs(lo) * 0.05 or 1), hi + (abs(hi) * 0.05 or 1)
    else:
        pad = (hi - lo) * 0.08
        lo, hi = (lo - pad if lo < 0 or not bars else lo), hi + pad
    span = max(t1 - t0, 1.0)

    def x(t: float) -> float:
        return ML + (t - t0) / span * (W - ML - MR)

    def y(v: float) -> float:
        return MT + (hi - v) / (hi - lo) * (H - MT - MB)

    out = [f'<svg viewBox="0 0 {W} {H}" role="img" aria-label="{html.escape(title)}" preserveAspectRatio="none">',
           f'<rect class="frame" x="{ML}" y="{MT}" width="{W - ML - MR}" height="{H - MT - MB}"/>']
    for v in _nice_ticks(lo, hi):
        out.append(f'<line class="grid" x1="{ML}" x2="{W - MR}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
                   f'<text class="ytick" x="{ML - 6}" y="{y(v) + 4:.1f}">{_fmt(v)}</text>')
    for t in _time_ticks(t0, t1):
        out.append(f'<line class="grid" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{MT}" y2="{H - MB}"/>'
                   f'<text class="xtick" x="{x(t):.1f}" y="{H - 8}">{_time_label(t, t1 - t0)}</text>')
    for b in bars or []:
        base = b.get("base", {})  # stacked: the bar sits on this value
        for t, w, v in b["points"]:
            if not v:
                continue
            b0 = base.get(t, 0)
            top, bottom = (b0 + v, b0) if v > 0 else (b0, b0 + v)
            out.append(f'<rect class="{b["cls"]}" x="{x(t):.1f}" width="{max(x(t + w) - x(t) - 0.5, 0.8):.1f}" '
                       f'y="{y(top):.1f}" height="{max(y(bottom) - y(top), 0.5):.1f}"/>')
    for ln in lines:
        segments: list[list[tuple[float, float]]] = [[]]  # a None (unknown, or a hole) breaks the line
        for t, v in ln["points"]:
            if v is None:
                if segments[-1]:
                    segments.append([])
            else:
                segments[-1].append((t, v))
        for pts in segments:
            if pts:
                out.append(_polyline(ln, pts, x, y))
    out.append("</svg>")
    legend = "".join(f'<span class="key {s["cls"]}">{html.escape(s["label"])}</span>' for s in [*lines, *(bars or [])])
    return f'<figure><figcaption>{html.escape(title)}{" (" + unit + ")" if unit else ""}</figcaption>' \
           f'<div class="legend">{legend}</div>{"".join(out)}</figure>'


def _polyline(ln: dict, pts: list[tuple[float, float]], x, y) -> str:
    out = []
    if ln.get("step"):
        coords = []
        for i, (t, v) in enumerate(pts):
            if i:
                coords.append(f"{x(t):.1f},{y(pts[i - 1][1]):.1f}")
            coords.append(f"{x(t):.1f},{y(v):.1f}")
    else:
        coords = [f"{x(t):.1f},{y(v):.1f}" for t, v in pts]
    if len(pts) == 1:
        out.append(f'<circle class="{ln["cls"]} dot" cx="{x(pts[0][0]):.1f}" cy="{y(pts[0][1]):.1f}" r="3"/>')
    out.append(f'<polyline class="{ln["cls"]}{" dash" if ln.get("dash") else ""}" points="{" ".join(coords)}"/>')
    return "".join(out)


def _time_ticks(t0: float, t1: float) -> list[float]:
    span = t1 - t0
    step = next((s for s in (60, 300, 900, 3600, 3 * 3600, 6 * 3600, 86400, 2 * 86400, 7 * 86400, 30 * 86400)
                 if span / s <= 8), 90 * 86400)
    first = math.ceil(t0 / step) * step
    return [first + i * step for i in range(int((t1 - first) / step) + 1)]


def _time_label(t: float, span: float) -> str:
    d = datetime.fromtimestamp(t, tz=timezone.utc)
    return d.strftime("%m-%d") if span > 3 * 86400 else d.strftime("%m-%d %H:%M") if span > 86400 else d.strftime("%H:%M")


def _attr(v: Any) -> str:
    """A value as the data-value attribute: exact (repr of a float reads back to the same float)."""
    return "" if v is None else html.escape(v if isinstance(v, str) else repr(v), quote=True)


def _table(caption: str, columns: list[tuple[str, str]], rows: list[dict], tid: str) -> str:
    head = "".join(f"<th scope=\"col\">{html.escape(label)}</th>" for _, label in columns)
    body = "".join(
        "<tr>" + "".join(f'<td data-key="{k}" data-value="{_attr(r[k])}">'
                         f'{"-" if r[k] is None else html.escape(str(r[k]) if isinstance(r[k], str) else _fmt(r[k]))}</td>'
                         for k, _ in columns) + "</tr>" for r in rows)
    return (f'<details><summary>{html.escape(caption)}</summary><table id="{tid}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></details>")


CSS = """
:root { color-scheme: light; --fg: #1a1a1a; --muted: #555; --bg: #fff; }
body { font: 15px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 1rem auto; max-width: 960px; padding: 0 0.75rem; }
h1 { font-size: 1.3rem; margin: 0.2rem 0; } p.sub { color: var(--muted); margin: 0 0 1rem; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; margin: 0 0 1rem; }
dl.summary dt { font-weight: 600; } dl.summary dd { margin: 0; }
figure { margin: 0 0 0.6rem; } figcaption { font-weight: 600; }
svg { width: 100%; height: auto; display: block; }
.frame { fill: none; stroke: #888; stroke-width: 1; } .grid { stroke: #e3e3e3; stroke-width: 1; }
.ytick { font-size: 11px; text-anchor: end; fill: var(--muted); } .xtick { font-size: 11px; text-anchor: middle; fill: var(--muted); }
polyline { fill: none; stroke-width: 1.8; vector-effect: non-scaling-stroke; } .dash { stroke-dasharray: 6 4; }
.target { stroke: #000; } .slurm { stroke: #1f5fbf; } .agent { stroke: #c4580a; }
.dnow { stroke: #1b7a2e; } .dwant { stroke: #6b6b00; } .pad { stroke: #6a3d9a; }
rect.hold { fill: #b3261e; } rect.release { fill: #0b7c8c; } rect.tok { fill: #767676; } rect.tfail { fill: #b3261e; }
circle.dot { stroke: none; } circle.target { fill: #000; } circle.slurm { fill: #1f5fbf; } circle.agent { fill: #c4580a; }
circle.dnow { fill: #1b7a2e; } circle.dwant { fill: #6b6b00; } circle.pad { fill: #6a3d9a; }
.legend { font-size: 13px; } .key { margin-right: 1rem; white-space: nowrap; }
.key::before { content: ""; display: inline-block; width: 1.4em; height: 0.3em; vertical-align: middle; margin-right: 0.3em; background: currentColor; }
.key.target { color: #000; } .key.slurm { color: #1f5fbf; } .key.agent { color: #c4580a; } .key.dnow { color: #1b7a2e; }
.key.dwant { color: #6b6b00; } .key.pad { color: #6a3d9a; } .key.hold, .key.tfail { color: #b3261e; } .key.release { color: #0b7c8c; }
.key.tok { color: #666; }
details { margin: 0.2rem 0 1rem; } summary { cursor: pointer; color: #1f4f99; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ddd; padding: 0.1rem 0.6rem; text-align: right; } th:first-child, td:first-child { text-align: left; }
ul.failed { font-size: 13px; }
"""


def render_html(data: dict) -> str:
    """The five panels as one self-contained HTML page (inline CSS and SVG, no script)."""
    t0, t1 = _t(data["since"]), _t(data["until"])
    s = series(data)
    tl = data["timeline"]
    picked = _thin(list(range(len(data["decisions"]))), HTML_POINTS)
    dec = [data["decisions"][i] for i in picked]

    holes = gaps([t for t, _ in s["target_core_hours"]])

    def pts(key: str) -> list[tuple[float, float | None]]:
        return _broken([s[key][i] for i in picked], holes)

    w = tl["bucket_seconds"]
    bt = [(_t(b["start"]), b) for b in tl["buckets"]]
    panels = [
        _panel("Halving usage against the target u*", t0, t1, [
            {"label": "target u*", "cls": "target", "points": pts("target_core_hours"), "dash": True, "step": True},
            {"label": "halving as Slurm used it", "cls": "slurm", "points": pts("halving_slurm_core_hours")},
            {"label": "halving the agent saw (S_ref d U)", "cls": "agent", "points": pts("halving_core_hours")},
        ], unit="core-hours"),
        _panel("FairShareDampeningFactor d", t0, t1, [
            {"label": "d in force", "cls": "dnow", "points": pts("damping_now"), "step": True},
            {"label": "d wanted", "cls": "dwant", "points": pts("damping_target"), "dash": True, "step": True},
        ]),
        _panel("Padding (the dummy's decayed usage)", t0, t1, [
            {"label": "padding", "cls": "pad", "points": pts("padding_core_hours")},
        ], unit="core-hours"),
        _panel(f"The gate's holds per {_duration(w)} (in force now: {tl['holds_now']})", t0, t1, [], [
            {"label": "holds placed", "cls": "hold", "points": [(t, w, b["holds"]) for t, b in bt]},
            {"label": "released (below 0)", "cls": "release", "points": [(t, w, -b["releases"]) for t, b in bt]},
        ], unit="jobs"),
        _stacked_ticks(t0, t1, w, bt),
    ]
    last = data["decisions"][-1] if data["decisions"] else None
    n_failed = sum(b["ticks_failed"] for b in tl["buckets"])
    summary = [("cluster", data["cluster"]), ("period", f"{data['since']} .. {data['until']} (UTC)"),
               ("decisions", f"{len(data['decisions'])}" + (f" (drawn: {len(dec)})" if len(dec) < len(data["decisions"]) else ""))]
    if last:
        summary += [("latest decision", f"{last['time']}, method {last['method']}"),
                    ("target u*", "-" if last["target_core_hours"] is None else f"{_fmt(last['target_core_hours'])} core-hours"),
                    ("d in force / wanted", f"{last['damping_now']} / {last['damping_target']}")]
    if data.get("worst_error_slurm") is not None:
        summary.append(("worst |halving / u* - 1| as Slurm used it", f"{data['worst_error_slurm']:.2%}"))
    summary += [("failed ticks", str(n_failed)), ("agent holds in force now", str(tl["holds_now"]))]
    cols = [("time", "time (UTC)"), ("target_core_hours", "u* (core-hours)"), ("halving_slurm_core_hours", "halving, Slurm"),
            ("halving_core_hours", "halving, agent"), ("damping_now", "d in force"), ("damping_target", "d wanted"),
            ("padding_core_hours", "padding (core-hours)")]
    failed = "".join(f"<li>{html.escape(t['started_at'])} {html.escape(t['stage'])}: {html.escape(str(t['error']))}</li>"
                     for t in data["failed_ticks"][-20:])
    body = [
        f"<h1>fscontrol history of {html.escape(data['cluster'])}</h1>",
        '<p class="sub">The agent\'s record: the halving against u*, d and the padding at each decision; '
        "the gate's holds and the ticks per time bucket.</p>",
        '<dl class="summary">' + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in summary) + "</dl>",
        *panels[:3],
        _table(f"The {len(dec)} decisions drawn, as a table", cols, dec, "decisions"),
        *panels[3:],
        _table("Holds and ticks per time bucket, as a table",
               [("start", "bucket start (UTC)"), ("holds", "holds placed"), ("releases", "released"), ("ticks_ok", "ticks ok"),
                ("ticks_failed", "ticks failed")], tl["buckets"], "buckets"),
    ]
    if failed:
        body.append(f'<h2>Failed ticks (the last {min(20, len(data["failed_ticks"]))})</h2><ul class="failed">{failed}</ul>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>fscontrol history: {html.escape(data['cluster'])}</title><style>{CSS}</style></head>"
            f"<body><main>{''.join(body)}</main></body></html>\n")


def _stacked_ticks(t0: float, t1: float, w: float, bt: list) -> str:
    """Ticks per bucket: ok in grey, failed stacked on top in red."""
    return _panel(f"Ticks per {_duration(w)}", t0, t1, [], [
        {"label": "ticks ok", "cls": "tok", "points": [(t, w, b["ticks_ok"]) for t, b in bt]},
        {"label": "ticks failed (on top)", "cls": "tfail", "points": [(t, w, b["ticks_failed"]) for t, b in bt],
         "base": {t: b["ticks_ok"] for t, b in bt}},
    ], unit="ticks")


def write_html(data: dict, path: str | Path) -> Path:
    from fscontrol.atomic import write_text

    try:
        check_output(Path(path), "--html")
        return write_text(path, render_html(data))
    except OSError as e:
        raise OutputError(f"cannot write the --html file {path}: {e}") from None
