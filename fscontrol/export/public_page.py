"""The public page `fscontrol publish` writes next to the published JSON (<cluster>.html): the
cluster's halving and how it is held, the decay half-life, the algorithm, and, only where the
snapshot carries per-association rows (publish.is_private: no PrivateData hiding usage, users or
accounts), the table. Built from the published dict alone, so it never shows more than the JSON
next to it. Static: no script at all, a CSP that allows no request."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .html import duration_text, esc, num, page, val

METHODS = {
    "damping": "by the damping factor d: the agent sets FairShareDampeningFactor so the halving stays at the target",
    "padding": "by padding: the agent charges a padding association so the cluster's total usage keeps the halving at the target",
    "hybrid": "by the damping factor d and padding together",
    "none": "not held: the agent only reports (no control method configured)",
}


def html_path(json_path: Path | str) -> Path:
    p = Path(json_path)
    return p.with_suffix(".html") if p.suffix != ".html" else p.with_name(p.name + ".html")


def render_public(data: Mapping[str, Any]) -> str:
    return "".join(public_chunks(data))


def public_chunks(data: Mapping[str, Any]) -> Iterator[str]:
    """The page's text in pieces (the table's rows a few hundred at a time: at 100,000
    associations the page is ~19 MB, never held whole; issue #31)."""
    cfg = data["config"]
    ft = cfg.get("priority_mode") == "fair_tree"
    cluster = data["cluster"]
    body = [f'<h1>Fair-share on {esc(cluster)}</h1>',
            f'<p class="sub">Published by fscontrol from the snapshot taken {esc(data["taken_at_iso"])} '
            f'(Slurm {esc(cfg.get("slurm_version") or "?")}). The same numbers as <code>{esc(cluster)}.json</code> next to this page.</p>']
    kv: list[tuple[str, str]] = []
    if ft:
        kv.append(("Algorithm", "Fair Tree: F = rank / N, users ranked level by level by LevelFS "
                                "(share of the level's shares / share of the parent's usage)"))
    else:
        kv.append(("Algorithm", f"classic fair-share: F = 2<sup>−(effective usage / share) / d</sup>, "
                                f"damping factor d = {val('damping_factor', cfg['damping_factor'], 'g')}"))
    kv.append(("Usage half-life", f'<span data-k="half_life_s" data-v="{esc(cfg["half_life_s"])}">'
                                  f'{esc(duration_text(float(cfg["half_life_s"])))}</span>: past usage counts half after this long'))
    kv.append(("Cluster's total decayed usage U", val("total_usage_core_hours", data["total_usage_core_hours"]) + " core-hours"))
    if not ft:
        h = data.get("halving_core_hours")
        kv.append(("A typical user's F halves every",
                   (val("halving_core_hours", h) + " core-hours they use") if h is not None else "- (no usage yet)"))
        if data.get("reference_share") is not None:
            kv.append(("Typical user's share S<sub>ref</sub>", f'{val("reference_share", data["reference_share"], ".6f")} '
                                                              f'({esc(data.get("reference_share_rule") or "")}); H = S<sub>ref</sub> × d × U'))
        tgt = data.get("target_core_hours")
        kv.append(("Halving target u*", (val("target_core_hours", tgt) + " core-hours") if tgt else "none set"))
    method = data.get("control_method") or "none"
    kv.append(("How it is held", f'<span data-k="control_method" data-v="{esc(method)}">'
                                 f'{esc(METHODS.get(method, method))}</span>'))
    priv = cfg.get("private_data") or []
    kv.append(("PrivateData", esc(", ".join(priv) or "none")))
    body.append('<section class="card"><dl class="kv">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in kv) + "</dl></section>")
    table = bool(data.get("per_association"))
    if not table:
        body.append('<section class="card"><h2>Associations</h2><p id="private">Not published: this cluster\'s PrivateData '
                    'hides usage or names from other users, so this page shows no user and no account.</p></section>')
    tail = ['<section class="card"><h2>Your own fair-share</h2><p>Run <code>fscontrol forecast</code> on a login node, '
                "or open the fscontrol app in Open OnDemand: F now and why, when it recovers, and what a campaign does to it.</p></section>",
            f"<footer>fscontrol, published {esc(_iso(data.get('published_at')))}.</footer>"]
    before, after = page(f"Fair-share on {cluster}", _BODY, csp_meta=True).rsplit(_BODY, 1)
    yield before + "".join(body)
    if table:
        yield from _table(data, ft)
    yield "".join(tail) + after


_BODY = "\x00body\x00"  # where the body goes in html.page's text (no escaped title holds a NUL)


def _iso(t: float | None) -> str:
    from datetime import datetime, timezone

    return "?" if t is None else datetime.fromtimestamp(float(t), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _table(data: Mapping[str, Any], ft: bool) -> Iterator[str]:
    head = ("<th scope='col'>user / account</th><th scope='col'>in</th><th class='n' scope='col'>share</th>"
            "<th class='n' scope='col'>decayed usage (core-h)</th><th class='n' scope='col'>effective usage</th>"
            f"<th class='n' scope='col'>F{' = rank / N' if ft else ''}</th>" + ("" if ft else "<th class='n' scope='col'>halves every (core-h)</th>"))
    yield ('<section class="card"><h2>Associations</h2><p>What <code>sshare -a -l</code> shows anyone on this cluster, '
           'with F as the scheduler computes it.</p><div class="scroll"><table id="associations"><thead><tr>'
           f'{head}</tr></thead><tbody>')
    rows = []
    for a in data["associations"]:
        if a["depth"] == 0:
            continue
        name = esc(a["user"]) if a["user"] else f"<strong>{esc(a['account'])}</strong>"
        pad = f' style="padding-left:{0.5 + 1.0 * max(0, a["depth"] - 1):.1f}rem"'
        flag = " (padding)" if a.get("dummy") else ""
        rows.append(
            f'<tr><td{pad}>{name}{esc(flag)}</td><td>{esc(a["account"] if a["user"] else a["parent"])}</td>'
            f'<td class="n">{num(a["norm_shares"], ".4f")}</td><td class="n">{num(a["usage_core_hours"])}</td>'
            f'<td class="n">{num(a["effective_usage"], ".4f")}</td><td class="n">{num(a["fairshare"], ".4f")}</td>'
            + ("" if ft else f'<td class="n">{num(a.get("halving_core_hours"))}</td>') + "</tr>")
        if len(rows) >= 512:
            yield "".join(rows)
            rows = []
    yield "".join(rows) + "</tbody></table></div></section>"


def write_public(data: Mapping[str, Any], json_path: Path | str) -> Path:
    """Write <cluster>.html next to the JSON, atomically and world-readable like it."""
    from ..atomic import write_chunks

    return write_chunks(html_path(json_path), public_chunks(data))


