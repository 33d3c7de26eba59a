"""The user's own forecast page: the same data as `fscontrol forecast --json`, as HTML.

`render_page` builds the whole page from two forecasts (the CLI's, without a plan, and the
planner's); `render_plan` the planner's result panel, which the page's script swaps in from the
JSON endpoint (fscontrol.web.app) when an input changes. Pure: data in, text out."""

from __future__ import annotations

import re

from collections.abc import Mapping

from fscontrol.export.html import DAY, HOUR, chart_svg, duration_text, esc, num, page, table_of, val

PLAN_DEFAULTS = {"cpus": "16", "gpus": "0", "length": "7", "gap": "3", "unit": "d", "runs": "2", "target": "0.5"}
UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def _unit(horizon_s: float) -> tuple[str, float]:
    if horizon_s >= 3 * DAY:
        return "days", DAY
    if horizon_s >= 3 * HOUR:
        return "hours", HOUR
    return "minutes", 60.0


def _when(days: float | None) -> str:
    if days is None:
        return "never (no decay)"
    if days == 0:
        return "already there"
    return "in " + duration_text(days * DAY)


def _header(data: Mapping) -> str:
    mode = "Fair Tree" if data.get("priority_mode") == "fair_tree" else "classic fair-share"
    age = data.get("snapshot_age_s") or 0.0
    admin = "" if data["user"] == data["requester"] else f' (asked by {esc(data["requester"])}, an admin)'
    warn = "".join(f'<p class="warn" role="note">Warning: {esc(w)}</p>' for w in data.get("warnings", ()))
    return (
        f'<h1>Fair-share of <span id="who">{esc(data["user"])}</span> on {esc(data["cluster"])}</h1>'
        f'<p class="sub">{esc(mode)}{admin}; published snapshot taken {esc(data["snapshot_taken_at"])}, '
        f'{esc(duration_text(age))} before {esc(data["now"])}.</p>{warn}'
    )


# ---------------------------------------------------------------------------- classic
def _classic_summary(data: Mapping, a: Mapping, i: int) -> str:
    d = data["damping_factor"]
    target = data["target"]
    parts = [f'<section class="card" aria-labelledby="acct{i}"><h2 id="acct{i}">Account {esc(a["account"])}</h2>',
             '<div class="grid"><div><div class="sr">F now</div>'
             f'<div class="big" aria-label="F now">{val("fairshare", a["fairshare"], ".4f")}</div>'
             '<p>your fair-share factor F now (1 = unused share, 0.5 = one halving used)</p></div>']
    kv = []
    if a["halving_core_hours"] is not None:
        kv += [
            ("Core-hours until F halves", val("core_hours_to_halve", a["core_hours_to_halve"]) + " (from now, without decay)"
             if a["core_hours_to_halve"] is not None else esc(a.get("cannot_halve") or "-")),
            (f"Idle until F ≥ {target:g}", f'<span data-k="idle_days_to_target" data-v="{esc(a["idle_days_to_target"])}">'
             f'{esc(a.get("idle_to_target_text") or _when(a["idle_days_to_target"]))}</span>'),
            (f"Core-hours until F = {target:g}", val("core_hours_to_target", a["core_hours_to_target"])),
            ("Your effective usage", val("effective_usage_core_hours", a["effective_usage_core_hours"]) + " core-hours"),
        ]
    kv.append(("Your share S", val("norm_shares", a["norm_shares"], ".6f")))
    parts.append('<dl class="kv">' + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in kv) + "</dl></div>")
    if a["halving_core_hours"] is not None:
        parts.append(
            f'<p><strong>Why:</strong> your effective usage is {val("effective_usage_core_hours", a["effective_usage_core_hours"])} '
            f'core-hours (your own decayed usage {val("usage_core_hours", a["usage_core_hours"])}) and your share is '
            f'S = {num(a["norm_shares"], ".6f")}. F = 2<sup>−usage / {val("halving_core_hours", a["halving_core_hours"])}</sup>: '
            f'it halves every {num(a["halving_core_hours"])} core-hours you use (H = S × d × U, d = {esc(d)}, '
            f'U = {num(data["total_usage_core_hours"])} core-hours on the cluster).</p>')
    fs = a.get("fairshare_sshare")
    if fs is not None and abs(fs - a["fairshare"]) > 5e-6:
        parts.append(f"<p>sshare shows {fs:.4f}: computed with the d in the login node's slurm.conf; slurmctld uses d = {esc(d)}.</p>")
    if a["note"]:
        parts.append(f'<p class="warn" role="note">{esc(a["note"])}</p>')
    if a["trajectory"]:
        pts = [(p["days"] * DAY, p["fairshare"]) for p in a["trajectory"]]
        unit, scale = _unit(pts[-1][0])
        load = " at the cluster's current load" if a.get("model") == "current load" else ", everyone else stopped"
        parts.append(f'<h3>Recovery if you stop now{esc(load)}</h3>')
        parts.append(chart_svg(pts, x_unit=unit, x_scale=scale, target=target, chart_id=f"recovery{i}",
                               title=f"F over the next {duration_text(pts[-1][0])} if you run nothing{load}",
                               desc=f"F goes from {a['fairshare']:.3f} to {pts[-1][1]:.3f}; "
                                    f"F >= {target:g}: {a.get('idle_to_target_text') or _when(a['idle_days_to_target'])}."))
        if a.get("assumed"):
            parts.append(f'<p class="sub">Assumed: {esc(a["assumed"])}.</p>')
        parts.append(table_of(pts, unit, scale, every=6))
    parts.append("</section>")
    return "".join(parts)


def render_plan(data: Mapping) -> str:
    """The planner's result: for each account, F at the plan's end, the lowest F, the idle time
    after it, and F over the plan and the recovery after it."""
    if data.get("priority_mode") == "fair_tree":
        return ""
    tgt = "" if data["target"] == 0.5 else f" --target {data['target']:g}"
    asked = (data.get("billing") or {}).get("asked_partition")
    tgt += f" -p {asked}" if asked else ""
    out = [f'<p>As a command: <code id="plan-cmd">fscontrol forecast --plan {esc(data["plan_text"] or "(none)")}'
           f"{tgt}</code></p>"]
    total_ch = sum(s["core_hours"] for s in data["plan"])
    out.append(f'<p>{val("plan_core_hours", total_ch, ",.0f")} core-hours over {esc(duration_text(data["plan_days"] * DAY))}.</p>')
    for line in (data.get("billing") or {}).get("lines") or ():
        out.append(f'<p class="sub" data-k="billing">{esc(line)}</p>')
    if data.get("usage_reset"):
        out.append(f'<p class="sub" data-k="usage_reset">{esc(data["usage_reset"]["text"])}</p>')
    target = data["target"]
    for i, a in enumerate(data["associations"]):
        ap = a.get("after_plan")
        out.append(f'<div class="card"><h3>Account {esc(a["account"])}</h3>')
        if not ap:
            out.append(f"<p>{esc(a['note'] or 'nothing to forecast')}</p></div>")
            continue
        low_when = "now" if ap["lowest_at_days"] == 0 else f"after {duration_text(ap['lowest_at_days'] * DAY)}"
        kv = [("F at the plan's end", val("after_fairshare", ap["fairshare"], ".4f")),
              ("Lowest F", val("lowest_fairshare", ap["lowest_fairshare"], ".4f") + f" ({esc(low_when)})"),
              (f"Then idle until F ≥ {target:g}", f'<span data-k="after_idle_days_to_target" '
               f'data-v="{esc(ap["idle_days_to_target"])}">'
               f'{esc(ap.get("idle_to_target_text") or _when(ap["idle_days_to_target"]))}</span>')]
        if ap.get("fairshare_if_everyone_stopped") is not None:
            kv.append(("If everyone else stopped now", val("fairshare_if_everyone_stopped", ap["fairshare_if_everyone_stopped"], ".4f")))
        out.append('<dl class="kv grid">' + "".join(f"<div><dt>{esc(k)}</dt><dd>{v}</dd></div>" for k, v in kv) + "</dl>")
        if a.get("assumed"):
            out.append(f'<p class="sub">Assumed: {esc(a["assumed"])}.</p>')
        pts = [(p["days"] * DAY, p["fairshare"]) for p in a["trajectory"]]
        if pts:
            runs, t0 = [], 0.0
            for s in data["plan"]:
                t1 = t0 + s["days"] * DAY
                if s["kind"] == "run":
                    runs.append((t0, t1, f"{s['cores']:g} CPUs"))
                t0 = t1
            unit, scale = _unit(pts[-1][0])
            out.append(chart_svg(pts, x_unit=unit, x_scale=scale, target=target, runs=runs, chart_id=f"plan{i}",
                                 title=f"F over the plan ({data['plan_text']}) and the recovery after it"
                                       + (" at the cluster's current load" if a.get("model") == "current load" else ""),
                                 desc=f"F goes from {a['fairshare']:.3f} to {ap['fairshare']:.3f} at the plan's end "
                                      f"(lowest {ap['lowest_fairshare']:.3f}), then recovers to {pts[-1][1]:.3f}."))
            out.append(table_of(pts, unit, scale, every=6))
        out.append("</div>")
    return "".join(out)


def _planner(values: Mapping[str, str], plan_html: str, error: str | None) -> str:
    v = {**PLAN_DEFAULTS, **{k: x for k, x in values.items() if k in PLAN_DEFAULTS}}

    def field(name: str, label: str, attrs: str) -> str:
        return (f'<div><label for="f-{name}">{esc(label)}</label>'
                f'<input id="f-{name}" name="{name}" type="number" inputmode="decimal" value="{esc(v[name])}" {attrs}></div>')

    err = f'<p class="error" role="alert">{esc(error)}</p>' if error else ""
    return (
        '<section aria-labelledby="planner-h"><h2 id="planner-h">Plan a campaign</h2>'
        '<p>How many CPUs, for how long, how many runs with idle gaps between them: the forecast redraws as you type '
        '(the same numbers as <code>fscontrol forecast --plan</code>).</p>'
        '<form class="planner" id="planner" method="get" action="">'
        + field("cpus", "CPUs per run", 'min="1" step="1" required')
        + field("gpus", "GPUs per run", 'min="0" step="1"')
        + ('<div><label for="f-partition">Partition (its billing weights)</label><input id="f-partition" name="partition" '
           f'type="text" maxlength="64" placeholder="the default" value="{esc(values.get("partition") or "")}"></div>')
        + field("length", "Length of a run", 'min="0.01" step="any" required')
        + field("runs", "Runs", 'min="1" max="20" step="1" required')
        + field("gap", "Idle between runs", 'min="0" step="any" required')
        + '<div><label for="f-unit">Lengths in</label><select id="f-unit" name="unit">'
        + "".join(f'<option value="{k}"{" selected" if v["unit"] == k else ""}>{n}</option>' for k, n in UNITS.items())
        + "</select></div>"
        + field("target", "Target F", 'min="0.01" max="0.99" step="0.01" required')
        + '<div><button type="submit">Forecast</button></div></form>'
        f'<div id="plan-status" role="status" aria-live="polite">{err}</div>'
        f'<div id="plan-result" aria-live="polite">{plan_html}</div></section>'
    )


def plan_from(values: Mapping[str, str]) -> tuple[str, float]:
    """The planner's fields as the CLI's --plan text and target. ValueError with one line on bad input."""
    v = {**PLAN_DEFAULTS, **{k: x for k, x in values.items() if k in PLAN_DEFAULTS and x != ""}}

    def number(name: str, label: str, low: float, high: float | None = None, whole: bool = False) -> float:
        text = str(v[name]).strip()
        form = _WHOLE if whole else _DECIMAL  # ASCII digits only: float() would take '４' or '٤'
        if not form.fullmatch(text):
            raise ValueError(f"{label} must be a {'whole number' if whole else 'number'} (digits 0-9), got {_echo(text)}"
                             if _DECIMAL.fullmatch(text) or any(c.isdigit() for c in text) else
                             f"{label} must be a number, got {_echo(text)}")
        x = float(text)
        if x == float("inf"):  # more digits than a float holds
            raise ValueError(f"{label} is too large, got {_echo(text, quote=False)}")
        if not (x >= low and (high is None or x <= high)) or x != x or x in (float("inf"),):
            raise ValueError(f"{label} must be at least {low:g}" + (f" and at most {high:g}" if high is not None else "")
                             + f", got {_echo(text, quote=False)}")
        return x

    from fscontrol.forecast.classic import plan_cpus

    cpus = plan_cpus(_plain(number("cpus", "CPUs per run", 0)))  # the field read as a number, then --plan's rule (at least 1)
    gpus = number("gpus", "GPUs per run", 0)
    what = f"{_plain(cpus)}cpus" + (f"+{_plain(gpus)}gpus" if gpus else "")  # billed under the default partition's weights
    if v["unit"] not in UNITS:
        raise ValueError(f"lengths are in m, h or d, not {v['unit']!r}")
    u = v["unit"]
    days = number("length", "the length of a run", 0.01)
    runs = int(number("runs", "runs", 1, 20, whole=True))
    gap = number("gap", "the idle time between runs", 0)
    target = number("target", "target F", 0.01, 0.99)
    steps = []
    for k in range(runs):
        if k and gap > 0:
            steps.append(f"idle:{gap:g}{u}")
        steps.append(f"{what}:{days:g}{u}")
    return ",".join(steps), target


_DECIMAL = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_WHOLE = re.compile(r"[0-9]+", re.ASCII)
ECHO_CHARS = 20  # the most of a bad value an error message repeats


def _echo(text: str, quote: bool = True) -> str:
    """A bad value as an error repeats it: (quoted) whole, or its first ECHO_CHARS characters and its length."""
    if len(text) <= ECHO_CHARS:
        return repr(text) if quote else text
    head = repr(text[:ECHO_CHARS]) if quote else text[:ECHO_CHARS]
    return f"{head}... ({len(text):,} characters)"


def _plain(x: float) -> str:
    """A number without an exponent (1e+30 -> '1000...'), so --plan reads it and its cap refuses it."""
    return format(x, "f").rstrip("0").rstrip(".") if x >= 1e5 else f"{x:g}"


# ---------------------------------------------------------------------------- Fair Tree
def _place(x: Mapping) -> str:
    """Fair Tree's place in words ("10th of 10 (lowest)"); Slurm's rank where the data has none."""
    return x.get("place_text") or f"rank {x['rank']}"


def _lf(x: float | None) -> str:
    return "∞ (no usage)" if x is None else f"{x:.6f}"


def _fairtree_summary(data: Mapping, a: Mapping, i: int) -> str:
    parts = [f'<section class="card" aria-labelledby="acct{i}"><h2 id="acct{i}">Account {esc(a["account"])}</h2>',
             '<div class="grid"><div>'
             f'<div class="big" aria-label="F now">{val("fairshare", a["fairshare"], ".4f")}</div>'
             f'<p><strong>{esc(a.get("place_text") or "")}</strong> of the user associations (Slurm\'s rank '
             f'{val("rank", a["rank"], "d")} of {val("of", a["of"], "d")}: rank N is the first): F = rank / N</p></div>'
             '<dl class="kv">']
    if a["budget_core_hours"] is not None:
        parts.append(f'<dt>Your budget before anyone below passes you</dt><dd>{val("budget_core_hours", a["budget_core_hours"], ",.2f")} core-hours</dd>')
    ab, be = a["above"], a["below"]
    if ab is not None:
        x = ab["usage_core_hours"]
        parts.append(f'<dt>Next above you ({esc(_place(ab))})</dt><dd>{esc(ab["user"])}@{esc(ab["account"])}: you pass them once '
                     f'{esc(ab["theirs"])} has used ' + (val("above_usage_core_hours", x, ",.2f") + " core-hours more" if x is not None
                                                       else "more (never by usage alone)") + "</dd>")
    else:
        parts.append("<dt>Next above you</dt><dd>nobody: you rank first</dd>")
    if be is not None:
        parts.append(f'<dt>Next below you ({esc(_place(be))})</dt><dd>{esc(be["user"])}@{esc(be["account"])}</dd>')
    parts.append("</dl></div>")
    rows = "".join(
        f'<tr><td>{esc(s["level_of"])}</td><td>{"you" if s["is_user"] else esc(s["name"])}</td>'
        f'<td class="n">{esc(_lf(s["level_fs"]))}</td><td class="n">{s["place"]} of {s["siblings"]}</td></tr>'
        for s in a["path"])
    parts.append('<h3>Why: your path, level by level</h3><p>At each level your account (or you) is compared with its '
                 'siblings by LevelFS = share of the level\'s shares / share of the parent\'s usage. Idle time alone '
                 'changes no rank: everyone\'s usage decays alike.</p>'
                 '<div class="scroll"><table class="path"><thead><tr><th scope="col">under</th><th scope="col">node</th>'
                 f'<th class="n" scope="col">LevelFS</th><th class="n" scope="col">place</th></tr></thead><tbody>{rows}</tbody></table></div>')
    if a["projection"]:
        pts = [(0.0, a["fairshare"])] + [(max(0.0, p["in_s"]), p["fairshare"]) for p in a["projection"]]
        horizon = pts[-1][0]
        unit, scale = _unit(horizon)
        from fscontrol.forecast.fairtree import ago_text, split_changes

        passed, ch = split_changes(a)  # a change before now (a stale snapshot) is past, never "in 0 min"
        summary = (f"{_place(ch[0])} in {ago_text(max(0.0, ch[0]['in_s']))}" if ch
                   else f"{_place(passed[-1] if passed else a)} throughout")
        if passed:
            summary = (f"{_place(passed[-1])} since {ago_text(-passed[-1]['in_s'])} ago (projected from the snapshot, "
                       f"already passed); " + (summary if ch else "no further change"))
        parts.append("<h3>Projection: the jobs running now go on, nobody starts another</h3>")
        parts.append(chart_svg(pts, x_unit=unit, x_scale=scale, step=True, chart_id=f"proj{i}",
                               title="F = rank / N after each coming decay pass", desc=f"F now {a['fairshare']:.3f}; {summary}."))
        parts.append(f'<p>{esc(summary[0].upper() + summary[1:])}.</p>' + table_of(pts, unit, scale))
    parts.append("</section>")
    return "".join(parts)


# ---------------------------------------------------------------------------- the page
SCRIPT = r"""
(function(){
var form=document.getElementById('planner'); if(!form) return;
var api=form.getAttribute('data-api'), out=document.getElementById('plan-result'), st=document.getElementById('plan-status');
var timer=null, seq=0;
function run(){
  if(!form.checkValidity()){st.innerHTML='<p class="error" role="alert">Check the highlighted field.</p>';return;}
  var q=new URLSearchParams(new FormData(form)); var acct=form.getAttribute('data-account'); if(acct) q.set('account',acct);
  var mine=++seq; st.textContent='Updating…';
  fetch(api+'?'+q.toString(),{credentials:'same-origin',headers:{'Accept':'application/json'}})
   .then(function(r){return r.json().then(function(j){return [r.ok,j];});})
   .then(function(x){ if(mine!==seq) return;
     if(!x[0]){st.innerHTML='';var p=document.createElement('p');p.className='error';p.setAttribute('role','alert');p.textContent=x[1].error;st.appendChild(p);return;}
     out.innerHTML=x[1].html; st.textContent='Updated: '+x[1].forecast.plan_text;
     if(history.replaceState) history.replaceState(null,'','?'+q.toString());})
   .catch(function(e){ if(mine===seq) st.textContent='Could not update: '+e; });
}
form.addEventListener('input',function(){clearTimeout(timer);timer=setTimeout(run,250);});
form.addEventListener('submit',function(e){e.preventDefault();clearTimeout(timer);run();});
})();
"""


def _limits_card(limits: Mapping | None) -> str:
    """"How much can I still run?": each of Slurm's limits on the user, in the forecast's plain words."""
    if not limits or not limits.get("entries"):
        return ""
    items = "".join(f'<li class="limit" data-limit="{esc(e["limit"])}" data-tres="{esc(e["tres"])}">{esc(e["text"])}</li>'
                    for e in limits["entries"] if e.get("text"))
    return ('<section class="card" id="limits"><h2>How much can I still run?</h2>'
            f'<p>Slurm\'s limits on you and your accounts, and how much of each is used:</p><ul>{items}</ul></section>')


def _starts_card(starts: Mapping | None) -> str:
    """"When do my jobs start?": `fscontrol start`'s estimates of the user's pending jobs (its dict),
    or why there are none here (its "error")."""
    if not starts:
        return ""
    from fscontrol.forecast.startview import hm as _hm

    head = '<section class="card" id="starts"><h2>When do my pending jobs start?</h2>'
    if starts.get("error"):
        return head + f'<p class="note">{esc(starts["error"])}</p></section>'
    now = starts["now"]
    jobs = starts.get("jobs") or []
    if not jobs:
        return head + "<p>You have no pending job.</p></section>"
    rows = []
    for e in jobs:
        sq = esc(_hm(e.get("squeue_start"), now))
        if e.get("start") is None:
            rows.append(f'<tr data-job="{esc(e["job_id"])}"><td>{esc(e["job_id"])}</td><td data-k="start" data-v="">-</td>'
                        f'<td></td><td>{sq}</td><td>{esc(e.get("reason") or "")}</td></tr>')
            continue
        late = esc(_hm(e["late"], now)) if e.get("late") is not None else "?"
        rv = esc(f'{e["reservation_role"]} reservation {e["reservation"]}') if e.get("reservation") else ""
        rows.append(f'<tr data-job="{esc(e["job_id"])}"><td>{esc(e["job_id"])}</td>'
                    f'<td data-k="start" data-v="{esc(e["start"])}">{esc(_hm(e["start"], now))}</td>'
                    f'<td>{esc(_hm(e["early"], now))} .. {late}</td><td>{sq}</td><td>{rv}</td></tr>')
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in starts.get("notes") or ())
    return (head + f'<p class="sub">{esc(starts.get("model", ""))} (the same as <code>fscontrol start</code>).</p>'
            '<table><thead><tr><th>job</th><th>estimate</th><th>range</th><th>squeue --start</th><th>why none / reservation</th></tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table>{notes}</section>')


def render_page(data: Mapping, plan_data: Mapping | None, values: Mapping[str, str], *, api_url: str,
                plan_error: str | None = None, starts: Mapping | None = None) -> str:
    """The whole page: the CLI forecast `data` (no plan), the planner with `plan_data`, and where
    the page runs as the user on a live cluster, `starts` (fscontrol start's estimates)."""
    ft = data.get("priority_mode") == "fair_tree"
    body = [_header(data)]
    for i, a in enumerate(data["associations"]):
        body.append(_fairtree_summary(data, a, i) if ft else _classic_summary(data, a, i))
    body.append(_starts_card(starts))
    body.append(_limits_card(data.get("tres_limits")))
    if ft:
        body.append('<section class="card"><h2>Campaigns under Fair Tree</h2><p>Under Fair Tree your factor is your rank: '
                    'a campaign moves it only as it changes how your usage compares with your neighbours\'. '
                    'The budget above is what you can run before anyone now below you passes you.</p></section>')
        script = ""
    else:
        planner = _planner(values, render_plan(plan_data) if plan_data else "", plan_error)
        body.append(planner.replace('<form class="planner" id="planner"',
                                    f'<form class="planner" id="planner" data-api="{esc(api_url)}"'
                                    + (f' data-account="{esc(values["account"])}"' if values.get("account") else ""), 1))
        script = SCRIPT
    body.append("<footer>fscontrol: the same numbers as <code>fscontrol forecast</code> in a terminal. "
                "Only your own associations are shown.</footer>")
    return page(f"Fair-share: {data['user']} on {data['cluster']}", "".join(body), script=script)


def render_error(message: str, status: str) -> str:
    return page("fscontrol: error", f'<h1>Fair-share forecast</h1><p class="error" role="alert">{esc(message)}</p>'
                f'<p class="sub">{esc(status)}</p>')
