"""Reports: plain data first (for --json), then text (tabulate). Pure: no Slurm, no clock."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from datetime import datetime, timezone

from tabulate import tabulate

from . import fairshare, slurm_versions
from .fairshare import UNDERFLOW
from .store import StoredSnapshot

HOUR = 3600.0


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_data(
    snap: StoredSnapshot,
    target_core_hours: float | None = None,
    dummy: tuple[str, str] | None = None,
    reference: str | float = "median",
    control_history: list[dict] | None = None,
    only_users: Sequence[str] = (),
    only_accounts: Sequence[str] = (),
) -> dict:
    """Everything `fscontrol status` shows, as plain data. `only_users`/`only_accounts` (-u/-A,
    as sshare's) keep those rows of the table (an account: its whole subtree); the cluster-wide
    figures stay the cluster's.

    F is Slurm's classic factor from the EffectvUsage and NormShares Slurm holds (they lag
    RawUsage by one decay pass, exactly as the factor slurmctld schedules with) and the d in
    force in slurmctld. The dummy (padding) association is shown but not counted as a user."""
    cfg = snap.config
    d = cfg.damping_factor
    root = next((r for r in snap.shares if r.depth == 0), None)
    total = float(root.raw_usage) if root else 0.0
    keys = {r.key for r in snap.shares}
    dummy = dummy if dummy in keys else None
    dummy_usage = float(next(r.raw_usage for r in snap.shares if r.key == dummy)) if dummy else 0.0
    users = [r for r in snap.shares if r.is_user and r.user != "root"]
    real_users = [u for u in users if u.key != dummy]
    active = [u for u in real_users if u.raw_usage > 0]
    s_ref, rule = fairshare.choose_reference_share(snap.shares, d, dummy, reference)
    halving = s_ref * d * total if s_ref is not None else None
    # NormShares recomputed from RawShares: sshare prints 6 decimals (0.000400 for 1/2501), which
    # alone moves F by up to 1e-3 on a 2,500-user cluster; EffectvUsage is Slurm's own (it lags
    # RawUsage by one pass exactly as the factor slurmctld schedules with)
    try:
        exact = fairshare.norm_shares(snap.shares)
    except fairshare.TreeError:
        exact = {}
    kids: dict[str, int] = {}
    first_tier: set[str] = set()
    for r in snap.shares:
        if r.depth == 0:
            continue
        kids[r.account if r.user else r.parent] = kids.get(r.account if r.user else r.parent, 0) + 1
        if not r.user and r.parent == "root":
            first_tier.add(r.account)
    shown = users
    if only_users or only_accounts:
        from .errors import NotFoundError

        parent = {r.account: r.parent for r in snap.shares if not r.user}

        def under(account: str) -> bool:
            a, hops = account, 0
            while a and hops < 64:
                if a in only_accounts:
                    return True
                a, hops = parent.get(a, ""), hops + 1
            return False

        known_users = {u.user for u in users}
        unknown = [x for x in only_users if x not in known_users] + [a for a in only_accounts if a not in parent]
        if unknown:
            raise NotFoundError(f"not in the snapshot of {snap.cluster}: {', '.join(unknown)}")
        shown = [u for u in users if (not only_users or u.user in only_users) and (not only_accounts or under(u.account))]
    rows = []
    for u in shown:
        s_u = exact.get(u.key, u.norm_shares)
        f = fairshare.fairshare_factor(u.effective_usage, s_u, d) if u.effective_usage is not None and s_u is not None else None
        # Yalim's u / -log2 F is the halving usage only where UE = u/U: a user alone in a
        # first-tier account; everywhere else the account's usage and the siblings' shares count
        alone = u.account in first_tier and kids.get(u.account) == 1
        ih = fairshare.implied_halving(float(u.raw_usage), f) if f is not None and alone else None
        to_halve = (fairshare.usage_to_halve(u.effective_usage, s_u, d, total)
                    if u.effective_usage is not None and s_u is not None else None)
        rows.append(
            {
                "user": u.user,
                "account": u.account,
                "raw_usage": u.raw_usage,
                "usage_core_hours": u.raw_usage / HOUR,
                "norm_shares": s_u,
                "effective_usage": u.effective_usage,
                "fairshare": f,
                "fairshare_sshare": u.fairshare,
                "fairshare_sprio": snap.prio_fairshare.get(u.key),
                "usage_to_halve_core_hours": to_halve / HOUR if to_halve is not None else None,
                "alone_at_first_tier": alone,
                "implied_halving_core_hours": ih / HOUR if ih is not None else None,
                "underflow": f is not None and f < UNDERFLOW,
                "dummy": u.key == dummy,
            }
        )
    warnings = []
    if cfg.mode == "fair_tree":
        warnings.append("Fair Tree is in use: it never reads FairShareDampeningFactor, so fscontrol can only advise.")
    elif cfg.mode != "classic":
        warnings.append(f"priority mode {cfg.mode}: fscontrol's classic maths are an approximation here.")
    if "limits" not in cfg.enforce:
        warnings.append(
            "AccountingStorageEnforce lacks 'limits': Slurm (22.05 and 24.11 alike) then never charges the end of a job, "
            "so usage (and control) is under-counted."
        )
    untested = slurm_versions.untested_warning(cfg.slurm_version)
    if untested:
        warnings.append(untested)
    if cfg.private_data and "usage" in cfg.private_data:
        warnings.append("PrivateData=usage: users see only their own rows; publish a snapshot for `forecast`.")
    return {
        "cluster": snap.cluster,
        "snapshot_id": snap.id,
        "taken_at": _iso(snap.taken_at),
        "source": snap.source,
        "slurm_version": cfg.slurm_version,
        "priority_mode": cfg.mode,
        "priority_flags": list(cfg.priority_flags),
        "damping_factor": d,
        "half_life_s": cfg.half_life_s,
        "calc_period_s": cfg.calc_period_s,
        "total_usage_core_hours": total / HOUR,
        "users": len(real_users),
        "active_users": len(active),
        "dummy": "/".join(dummy) if dummy else None,
        "dummy_usage_core_hours": dummy_usage / HOUR,
        "real_usage_core_hours": (total - dummy_usage) / HOUR,
        "reference_share": s_ref,
        "reference_share_rule": rule,
        "halving_core_hours": halving / HOUR if halving is not None else None,
        "target_core_hours": target_core_hours,
        "halving_error": (halving / HOUR / target_core_hours - 1) if halving is not None and target_core_hours else None,
        "model_comparison": _comparison(snap, d, target_core_hours, dummy, s_ref),
        "underflow_users": [f"{r['user']}@{r['account']}" for r in rows if r["underflow"] and not r["dummy"]],
        "warnings": warnings,
        "table": rows,
        "control": _control_history(control_history or []),
    }


def _comparison(snap: StoredSnapshot, d: int, target_core_hours, dummy, s_ref) -> list[dict] | None:
    """Yalim figure 2 on this snapshot: underflows and F <= 0.5 under several choices of d."""
    if not target_core_hours or s_ref is None:
        return None
    root = next((r for r in snap.shares if r.depth == 0), None)
    if root is None or root.raw_usage <= 0:
        return None
    mc = fairshare.model_comparison(snap.shares, d, target_core_hours * HOUR, exclude=[dummy] if dummy else (), s_ref=s_ref)
    return [
        {"model": m.name, "damping": m.damping, "underflow": m.n_underflow, "f_le_half": m.n_half, "users": mc.n_users}
        for m in mc.models
    ]


def _control_history(rows: list[dict]) -> list[dict]:
    """The controller's record: halving achieved vs target over time, d and padding."""
    out = []
    for r in rows:
        h = r["h_now"]
        out.append(
            {
                "time": _iso(r["taken_at"]),
                "method": r["method"],
                "damping": r["d_now"],
                "padding_core_hours": (r["w_now"] or 0.0) / HOUR,
                "halving_core_hours": None if h is None else h / HOUR,
                "target_core_hours": (r["u_star"] or 0.0) / HOUR,
                "error": None if h is None or not r["u_star"] else h / r["u_star"] - 1,
                # the halving Slurm's priorities used at the next decay pass (none seen: None)
                "halving_slurm_core_hours": None if r.get("h_slurm") is None else r["h_slurm"] / HOUR,
                "error_slurm": None if r.get("h_slurm") is None or not r["u_star"] else r["h_slurm"] / r["u_star"] - 1,
                "applied": bool(r["apply"]),
            }
        )
    return out


SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """A one-line chart: each value as one of eight block heights between the min and the max."""
    vals = [v for v in values if v is not None]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    span = hi - lo or 1.0
    return "".join(" " if v is None else SPARK[min(7, int((v - lo) / span * 7.999))] for v in values)


def _fmt(v, spec: str) -> str:
    if v is None:
        return "-"
    return format(v, spec)


def _duration(s: float) -> str:
    if s % 86400 == 0:
        return f"{s / 86400:g} d"
    if s % 3600 == 0:
        return f"{s / 3600:g} h"
    return f"{s / 60:g} min"


def format_status(data: dict) -> str:
    head = [
        ("cluster", f"{data['cluster']} (Slurm {data['slurm_version']}), snapshot {data['snapshot_id']} at {data['taken_at']}"),
        ("priority", f"{data['priority_mode']} ({','.join(data['priority_flags']) or 'no flags'}), "
         f"damping factor d={data['damping_factor']}, half-life {_duration(data['half_life_s'])}, "
         f"decay every {_duration(data['calc_period_s'])}"),
        ("total decayed usage", f"{data['total_usage_core_hours']:,.2f} core-hours"),
        ("users", f"N={data['users']}, active M={data['active_users']}"),
        ("reference share", f"S_ref={_fmt(data['reference_share'], '.6f')} ({data['reference_share_rule']})"),
        ("fair-share halves every", f"{_fmt(data['halving_core_hours'], ',.2f')} core-hours (H = S_ref x d x total usage)"),
    ]
    if data.get("target_core_hours"):
        head.append(("target u*", f"{data['target_core_hours']:,.2f} core-hours "
                     f"(halving error {data['halving_error']:+.2%})" if data["halving_error"] is not None else ""))
    if data.get("dummy"):
        head.append(("padding (dummy)", f"{data['dummy']}: {data['dummy_usage_core_hours']:,.2f} core-hours "
                     f"(real usage {data['real_usage_core_hours']:,.2f})"))
    lines = [f"{k + ':':<25}{v}" for k, v in head]
    table = [
        [
            r["user"],
            r["account"],
            _fmt(r["usage_core_hours"], ",.3f"),
            _fmt(r["norm_shares"], ".6f"),
            _fmt(r["effective_usage"], ".6f"),
            _fmt(r["fairshare"], ".6f"),
            _fmt(r["fairshare_sshare"], ".6f"),
            _fmt(r["fairshare_sprio"], ".6f"),
            _fmt(r["usage_to_halve_core_hours"], ",.3f"),
            _fmt(r["implied_halving_core_hours"], ",.3f"),
        ]
        for r in data["table"]
    ]
    lines.append("")
    lines.append(
        tabulate(
            table,
            headers=["user", "account", "usage (core-h)", "NormShares", "EffectvUsage", "F", "F sshare", "F sprio",
                     "halves after +(core-h)", "u/-log2 F"],
            disable_numparse=True,
            colalign=("left", "left", "right", "right", "right", "right", "right", "right", "right", "right"),
        )
    )
    lines.append("")
    lines.append("F = 2^(-(EffectvUsage/NormShares)/d) with the controller's d; F sprio from pending jobs;")
    lines.append("halves after +: the extra usage of this user alone that halves its F, exact for shared accounts")
    lines.append("(d S U / (1 - EffectvUsage - d S)); u/-log2 F (Yalim) only for a user alone in a first-tier account.")
    hist = data.get("control") or []
    if hist:
        errs = [h["error"] for h in hist]
        last = hist[-1]
        known = [abs(e) for e in errs if e is not None]
        lines.append("")
        lines.append(
            f"control ({last['method']}, last {len(hist)} ticks): halving {_fmt(last['halving_core_hours'], ',.2f')} "
            f"vs target {last['target_core_hours']:,.2f} core-hours, error now "
            f"{'-' if last['error'] is None else format(last['error'], '+.2%')}, worst "
            f"{'-' if not known else format(max(known), '.2%')}; d={last['damping']}, padding "
            f"{last['padding_core_hours']:,.2f} core-hours"
        )
        lines.append(f"  error over time  {sparkline(errs)}  ({hist[0]['time']} .. {last['time']})")
    if data.get("model_comparison"):
        lines.append("")
        lines.append("model comparison (Yalim fig. 2): users with F < 1e-6 (underflow) and F <= 0.5")
        lines.append(
            tabulate(
                [[m["model"], f"{m['damping']:.4g}", m["underflow"], m["f_le_half"]] for m in data["model_comparison"]],
                headers=["model", "d", "underflow", "F <= 0.5"],
                disable_numparse=True,
            )
        )
    under = data["underflow_users"]
    lines.append(f"underflow (F < 1e-6): {', '.join(under) if under else 'none'}")
    for w in data["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def control_data(res) -> dict:
    d = res.decision
    h = lambda v: None if v is None else v / HOUR  # noqa: E731
    return {
        "cluster": res.cluster,
        "snapshot_id": res.snapshot_id,
        "decision_id": res.decision_id,
        "method": d.method,
        "mode": "apply" if res.applied else "dry-run",
        "advise_only": d.advise_only,
        "target_core_hours": h(d.u_star),
        "reference_share": d.s_ref,
        "real_usage_core_hours": h(d.u_real),
        "real_usage_next_core_hours": h(d.u_real_next),
        "padding_core_hours": h(d.w_now),
        "padding_target_core_hours": h(d.w_target),
        "damping_now": d.d_now,
        "damping_target": d.d_target,
        "damping_ideal": d.d_ideal,
        "usage_factor": d.usage_factor,
        "pulse_usage_factor": d.pulse_usage_factor,
        "halving_now_core_hours": h(d.h_now),
        "halving_planned_core_hours": h(d.h_planned),
        "error_now": d.error_now,
        "error_planned": d.error_planned,
        "rounding_bound": d.bound,
        "verified_damping": res.verified_damping,
        "notes": list(d.notes),
        "actions": [
            {"kind": a.kind, "command": list(a.argv), "reason": a.reason, "status": a.status, "output": a.output}
            for a in res.actions
        ],
    }


def format_control(data: dict) -> str:
    pct = lambda v: "-" if v is None else f"{v:+.2%}"  # noqa: E731
    lines = [
        f"{data['cluster']}: method {data['method']} ({data['mode']}{', advice only' if data['advise_only'] else ''}), "
        f"target u* = {_fmt(data['target_core_hours'], ',.2f')} core-hours, S_ref = {_fmt(data['reference_share'], '.6f')}",
        f"real usage {_fmt(data['real_usage_core_hours'], ',.2f')} core-hours "
        f"(after the next pass ~{_fmt(data['real_usage_next_core_hours'], ',.2f')}), "
        f"padding {_fmt(data['padding_core_hours'], ',.2f')} -> {_fmt(data['padding_target_core_hours'], ',.2f')} core-hours",
        f"damping factor {data['damping_now']} -> {data['damping_target']} (ideal {_fmt(data['damping_ideal'], '.3f')})",
        f"halving now {_fmt(data['halving_now_core_hours'], ',.2f')} core-hours ({pct(data['error_now'])} vs u*), "
        f"planned {_fmt(data['halving_planned_core_hours'], ',.2f')} ({pct(data['error_planned'])})"
        + (f", integer-d bound ±{data['rounding_bound']:.2%}" if data.get("rounding_bound") else ""),
    ]
    advice = [n for n in data["notes"] if n.startswith("advice only: ")]
    if advice:  # first, so nobody reads the figures above as a plan: nothing will be done
        lines.insert(0, f"ADVICE ONLY, nothing can be done here: {advice[0][len('advice only: '):]}")
    for n in data["notes"]:
        if n not in advice:
            lines.append(f"note: {n}")
    if not data["actions"]:
        lines.append("plan: none (advice only)" if data["advise_only"] else "plan: nothing to do")
    else:
        lines.append("")
        lines.append(
            tabulate(
                [[a["status"], shlex.join(a["command"]), a["reason"]] for a in data["actions"]],
                headers=["status", "command", "reason"],
                disable_numparse=True,
                maxcolwidths=[None, 60, 60],  # a terminal's width, not 350 columns
            )
        )
        if data["mode"] == "dry-run":
            lines.append("(dry run: nothing was changed; --apply carries the plan out)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- tick
def tick_data(outcomes) -> dict:
    """A tick over the agent's clusters (agent.ClusterOutcome list), as plain data."""
    out = []
    for o in outcomes:
        row: dict = {"cluster": o.cluster, "ok": o.error is None,
                     "error": str(o.error) if o.error else None, "exit_code": o.error.exit_code if o.error else 0}
        r = o.result
        if r is not None:
            row["snapshot_id"] = r.snapshot_id
            row["control"] = control_data(r.control) if r.control is not None else None
            row["fit"] = ({"half_life_s": r.fit.half_life_s, "half_life_se_s": r.fit.half_life_se_s, "drifted": r.fit.drifted}
                          if r.fit is not None else None)
            row["gate"] = ({"actions": [{"job_id": a.job_id, "kind": a.kind, "status": a.status} for a in r.gate.actions],
                            "mode": "apply" if r.gate.applied else "dry-run"} if r.gate is not None else None)
            row["published"] = r.published
            row["settled"] = [{"what": w, "from": a, "to": b, "why": why} for w, a, b, why in r.reconciled]
        out.append(row)
    return {"ok": all(r["ok"] for r in out), "clusters": out}


def format_tick(data: dict) -> str:
    lines = []
    for c in data["clusters"]:
        if not c["ok"]:
            continue  # errors go to stderr, one line each (cli)
        if c["control"] is not None:
            lines.append(format_control(c["control"]))
        else:
            lines.append(f"{c['cluster']}: collected snapshot {c['snapshot_id']} (control not due)")
        if c["fit"] is not None:
            f = c["fit"]
            lines.append(f"  fit: half-life {_fmt(f['half_life_s'], ',.1f')} s ± {_fmt(f['half_life_se_s'], '.1f')}"
                         + (" (drifted from Slurm's setting)" if f["drifted"] else ""))
        if c["gate"] is not None:
            g = c["gate"]
            done = sum(a["status"] == "ok" for a in g["actions"])
            lines.append(f"  gate ({g['mode']}): {len(g['actions'])} action(s) planned, {done} done")
        if c["published"]:
            lines.append(f"  published {c['published']}")
        for x in c.get("settled", []):  # what an earlier tick left open, settled against Slurm
            lines.append(f"  settled {x['what']}: {x['from']} -> {x['to'] or 'dropped'} ({x['why']})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- control off
def off_data(tick) -> dict:
    """`fscontrol control off`: what it undoes (or did undo), command by command."""
    acts = list(tick.control.actions if tick.control else ()) + list(tick.gate.actions if tick.gate else ())
    applied = bool(tick.control and tick.control.applied)
    return {
        "cluster": tick.cluster,
        "mode": "apply" if applied else "dry-run",
        "acting": not applied,
        "actions": [{"kind": a.kind, "argv": list(a.argv), "reason": a.reason, "status": a.status, "output": a.output}
                    for a in acts],
    }


def format_off(data: dict) -> str:
    lines = [f"{data['cluster']}: control off ({data['mode']})"]
    if not data["actions"]:
        lines.append("  nothing to undo: Slurm holds what it held before the agent first acted")
    for a in data["actions"]:
        lines.append(f"  {a['status']:9} {' '.join(a['argv'])}  ({a['reason']})")
    lines.append("  the agent no longer acts on this cluster; `fscontrol control on` resumes"
                 if data["mode"] == "apply" else "  (dry run: nothing was changed; --apply carries it out)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- history
def history_data(cluster: str, since: float, until: float, rec: dict) -> dict:
    """`fscontrol history`: the agent's record over a period, as plain data (store.history)."""
    decisions = []
    for d in rec["decisions"]:
        u = d["u_star"] or None
        decisions.append({
            "time": _iso(d["decided_at"]), "method": d["method"], "applied": bool(d["apply"]), "advice_only": bool(d["advise_only"]),
            "damping_now": d["d_now"], "damping_target": d["d_target"],
            "padding_core_hours": None if d["w_now"] is None else d["w_now"] / HOUR,
            "halving_core_hours": None if d["h_now"] is None else d["h_now"] / HOUR,
            "halving_slurm_core_hours": None if d["h_slurm"] is None else d["h_slurm"] / HOUR,
            "target_core_hours": None if u is None else u / HOUR,
            "error": None if d["h_now"] is None or not u else d["h_now"] / u - 1,
            "error_slurm": None if d["h_slurm"] is None or not u else d["h_slurm"] / u - 1,
        })
    errs = [abs(x["error_slurm"]) for x in decisions if x["error_slurm"] is not None]
    return {
        "cluster": cluster, "since": _iso(since), "until": _iso(until), "decisions": decisions,
        "worst_error_slurm": max(errs) if errs else None,
        "actions": rec["actions"], "failed_actions": [dict(a, planned_at=_iso(a["planned_at"])) for a in rec["failed_actions"]],
        "ticks": rec["ticks"], "failed_ticks": [dict(t, started_at=_iso(t["started_at"])) for t in rec["failed_ticks"]],
    }


def format_history(data: dict, width: int = 72) -> str:
    def thin(values: list) -> list:  # one character per bucket: the chart fits a terminal
        if len(values) <= width:
            return values
        step = len(values) / width
        return [values[int(i * step)] for i in range(width)]

    dec = data["decisions"]
    lines = [f"{data['cluster']}: the agent's record from {data['since']} to {data['until']}"]
    if dec:
        def row(label: str, values: list, fmt: str) -> str:
            vals = [v for v in values if v is not None]
            rng = f"{format(min(vals), fmt)} .. {format(max(vals), fmt)}" if vals else "-"
            return f"  {label:<26}{sparkline(thin(values))}  {rng}"

        lines += [f"{len(dec)} decisions ({dec[0]['time']} .. {dec[-1]['time']}), method {dec[-1]['method']}",
                  row("halving / u* - 1 (Slurm)", [d["error_slurm"] for d in dec], "+.2%"),
                  row("halving / u* - 1 (agent)", [d["error"] for d in dec], "+.2%"),
                  row("damping factor d", [d["damping_target"] for d in dec], "d"),
                  row("padding (core-hours)", [d["padding_core_hours"] for d in dec], ",.2f")]
        if data["worst_error_slurm"] is not None:
            lines.append(f"  worst |halving / u* - 1| as Slurm used it: {data['worst_error_slurm']:.2%}")
    else:
        lines.append("no control decisions in this period")
    if data["ticks"]:
        lines.append("ticks: " + ", ".join(f"{t['stage']} {t['status']} {t['n']}" for t in data["ticks"]))
    if data["actions"]:
        lines.append("actions: " + ", ".join(f"{a['stage']}/{a['kind']} {a['status']} {a['n']}" for a in data["actions"]))
    for t in data["failed_ticks"][-10:]:
        lines.append(f"  failed tick {t['started_at']} {t['stage']}: {t['error']}")
    for a in data["failed_actions"][-10:]:
        lines.append(f"  {a['status']} action {a['planned_at']} {a['stage']}/{a['kind']}: {a['output'] or a['reason']}")
    return "\n".join(lines)
