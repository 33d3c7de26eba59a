"""What the pages share (the users' page in web/, the public page here): the stylesheet, escaping, number formats and the SVG chart.

Everything here is inline in the page: no CDN, no font, no image file. Colours keep a contrast
ratio of at least 4.5:1 against their background (WCAG AA), in the light and the dark scheme."""

from __future__ import annotations

import math
from collections.abc import Sequence

DAY = 86400.0
HOUR = 3600.0

CSS = """
:root{--bg:#fff;--fg:#1b1b1b;--muted:#4a4a4a;--card:#f4f6f8;--line:#0b57d0;--plan:#9a4a00;--grid:#c9ced6;
--accent:#0b57d0;--warn-bg:#fff4d6;--warn-fg:#5c3b00;--err-bg:#fde8e8;--err-fg:#8a1111;--focus:#c2410c}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--fg:#eceff3;--muted:#b9c0c9;--card:#1d2127;--line:#7cb3ff;
--plan:#ffb86b;--grid:#3b424c;--accent:#8ab8ff;--warn-bg:#3a2f10;--warn-fg:#ffe29a;--err-bg:#3d1717;--err-fg:#ffb4b4;--focus:#ffb86b}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:60rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.2rem;margin:1.2rem 0 .4rem}h3{font-size:1.05rem;margin:.8rem 0 .3rem}
p.sub{color:var(--muted);margin:.2rem 0 1rem}
a{color:var(--accent)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.card{background:var(--card);border-radius:.5rem;padding:.8rem 1rem;margin:.8rem 0}
.big{font-size:2.4rem;font-weight:700;line-height:1.1}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(13rem,1fr));gap:.6rem 1rem}
dl.kv{margin:0}dl.kv dt{color:var(--muted);font-size:.9rem}dl.kv dd{margin:0 0 .5rem 0;font-weight:600}
.warn{background:var(--warn-bg);color:var(--warn-fg);padding:.5rem .8rem;border-radius:.4rem;margin:.5rem 0}
.error{background:var(--err-bg);color:var(--err-fg);padding:.5rem .8rem;border-radius:.4rem;margin:.5rem 0}
svg.chart{width:100%;height:auto;display:block}
svg.chart text{fill:var(--fg);font-size:12px}
svg.chart .grid{stroke:var(--grid);stroke-width:1}
svg.chart .curve{fill:none;stroke:var(--line);stroke-width:2.5}
svg.chart .target{stroke:var(--muted);stroke-width:1.5;stroke-dasharray:6 4}
svg.chart .run{fill:var(--plan);fill-opacity:.18}
svg.chart .runlabel{fill:var(--plan);font-weight:600}
form.planner{display:grid;grid-template-columns:repeat(auto-fit,minmax(9.5rem,1fr));gap:.6rem 1rem;align-items:end}
form.planner label{display:block;font-size:.9rem;color:var(--muted)}
form.planner input,form.planner select{width:100%;font:inherit;padding:.45rem;border:1px solid var(--muted);border-radius:.3rem;
background:var(--bg);color:var(--fg);min-height:2.6rem}
button{font:inherit;padding:.5rem 1rem;border-radius:.3rem;border:1px solid var(--accent);background:var(--accent);color:var(--bg);min-height:2.6rem}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--grid)}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto}
details{margin:.4rem 0}summary{cursor:pointer;color:var(--accent)}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
footer{color:var(--muted);font-size:.85rem;margin:2rem 0 1rem}
@media (max-width:40rem){svg.chart text{font-size:22px}main{padding:.6rem}.big{font-size:2rem}}
"""


def esc(x: object) -> str:
    """html.escape(str(x), quote=True), written out: the forecast imports this module (duration_text)
    and the html package brings html.entities, a table of 2,000 names it never uses."""
    return (str(x).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("'", "&#x27;"))


def num(v: float | None, spec: str = ",.1f", none: str = "-") -> str:
    """`spec`; core-hours (",.1f") below 10 keep 3 significant digits (a testbed's 0.23, not 0.2)."""
    if v is None:
        return none
    if spec == ",.1f" and v != 0 and abs(v) < 10:
        return format(v, ".3g")
    return format(v, spec)


def val(key: str, v: float | int | None, spec: str = ",.1f", none: str = "-") -> str:
    """A number shown as text, with its exact value in data-v (what tests and scripts read)."""
    raw = "" if v is None else repr(float(v)) if isinstance(v, float) else str(v)
    return f'<span data-k="{esc(key)}" data-v="{esc(raw)}">{esc(num(v, spec, none))}</span>'


def duration_text(seconds: float) -> str:
    """'45 min', '3.5 hours', '12.3 days' (the forecast's wording, on the command line and the pages)."""
    if seconds < 2 * HOUR:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * DAY:
        return f"{seconds / HOUR:.1f} hours"
    return f"{seconds / DAY:.1f} days"


def _ticks(span: float, steps: Sequence[float]) -> float:
    return next((x for x in steps if span / x <= 7), span / 7 or 1.0)


def chart_svg(
    points: Sequence[tuple[float, float]],
    *,
    x_unit: str,
    x_scale: float,
    title: str,
    desc: str,
    target: float | None = None,
    runs: Sequence[tuple[float, float, str]] = (),
    step: bool = False,
    chart_id: str = "chart",
) -> str:
    """F (0..1) over time as an inline SVG. `points` are (seconds from now, F); `x_scale` the
    seconds of one `x_unit`; `runs` (start s, end s, label) are shaded; `step` draws steps."""
    w, h, left, right, top, bottom = 640, 300, 48, 16, 14, 40
    pw, ph = w - left - right, h - top - bottom
    horizon = max((p[0] for p in points), default=0.0) or 1.0
    span = horizon / x_scale

    def x(t: float) -> float:
        return left + pw * max(0.0, t) / horizon

    def y(f: float) -> float:
        return top + ph * (1.0 - max(0.0, min(1.0, f)))

    out = [
        f'<svg class="chart" id="{esc(chart_id)}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-labelledby="{esc(chart_id)}-t {esc(chart_id)}-d" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{esc(chart_id)}-t">{esc(title)}</title><desc id="{esc(chart_id)}-d">{esc(desc)}</desc>',
    ]
    for t0, t1, label in runs:
        out.append(f'<rect class="run" x="{x(t0):.1f}" y="{top}" width="{max(0.5, x(t1) - x(t0)):.1f}" height="{ph}"/>')
        if x(t1) - x(t0) > 8 * len(label):
            out.append(f'<text class="runlabel" x="{x(t0) + 4:.1f}" y="{top + 14}">{esc(label)}</text>')
    for f in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line class="grid" x1="{left}" x2="{w - right}" y1="{y(f):.1f}" y2="{y(f):.1f}"/>')
        out.append(f'<text x="{left - 6}" y="{y(f) + 4:.1f}" text-anchor="end">{f:g}</text>')
    stepx = _ticks(span, (1 / 60, 5 / 60, 0.25, 0.5, 1, 2, 3.5, 5, 7, 10, 14, 15, 28, 30, 56, 60, 91, 120, 182, 365, 730))
    k = 0
    while k * stepx <= span + 1e-9 and k < 50:
        tx = x(k * stepx * x_scale)
        out.append(f'<line class="grid" x1="{tx:.1f}" x2="{tx:.1f}" y1="{top + ph}" y2="{top + ph + 5}"/>')
        out.append(f'<text x="{tx:.1f}" y="{top + ph + 18}" text-anchor="middle">{k * stepx:g}</text>')
        k += 1
    out.append(f'<text x="{left + pw / 2:.1f}" y="{h - 4}" text-anchor="middle">{esc(x_unit)} from now</text>')
    if target is not None:
        out.append(f'<line class="target" x1="{left}" x2="{w - right}" y1="{y(target):.1f}" y2="{y(target):.1f}"/>')
        out.append(f'<text x="{w - right - 4}" y="{y(target) - 5:.1f}" text-anchor="end">target {target:g}</text>')
    if points:
        coords = []
        prev = None
        for t, f in points:
            if step and prev is not None:
                coords.append(f"{x(t):.2f},{y(prev):.2f}")
            coords.append(f"{x(t):.2f},{y(f):.2f}")
            prev = f
        out.append(f'<polyline class="curve" points="{" ".join(coords)}"/>')
    out.append("</svg>")
    return "".join(out)


def table_of(points: Sequence[tuple[float, float]], x_unit: str, x_scale: float, every: int = 1) -> str:
    """The chart's points as a table (for screen readers, and to read exact values)."""
    rows = "".join(
        f'<tr><td class="n">{t / x_scale:,.2f}</td><td class="n">{f:.4f}</td></tr>'
        for i, (t, f) in enumerate(points) if i % every == 0 or i == len(points) - 1
    )
    return (f'<details><summary>The curve as a table</summary><div class="scroll"><table><thead><tr>'
            f'<th class="n" scope="col">{esc(x_unit)} from now</th><th class="n" scope="col">F</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div></details>")


def page(title: str, body: str, *, script: str = "", csp_meta: bool = False) -> str:
    meta = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
            'img-src data:; base-uri \'none\'; form-action \'none\'">') if csp_meta else ""
    js = f"<script>{script}</script>" if script else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'{meta}<link rel="icon" href="data:,"><title>{esc(title)}</title><style>{CSS}</style></head>'
        f"<body><main>{body}</main>{js}</body></html>\n"
    )


def is_finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
