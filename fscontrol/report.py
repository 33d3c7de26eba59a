"""Reports: plain data first (for --json), then text (tabulate). Pure: no Slurm, no clock."""

from __future__ import annotations

import math
import statistics
from datetime import datetime, timezone

from tabulate import tabulate

from .records import ShareRow
from .store import StoredSnapshot

UNDERFLOW = 1e-6  # sshare prints F below this as 0.000000
HOUR = 3600.0


def classic_f(effective_usage: float | None, norm_shares: float | None, d: int) -> float | None:
    """Slurm's classic factor F = 2^(-(UE/S)/d), from the UE and S Slurm itself holds."""
    if effective_usage is None or not norm_shares:
        return None
    return 2.0 ** (-(effective_usage / norm_shares) / d)


def implied_halving(usage: float, f: float | None) -> float | None:
    """Usage at which F halves, as seen from one user: u / -log2 F (Yalim table 2)."""
    if f is None or f <= 0 or f >= 1 or usage <= 0:
        return None
    return usage / -math.log2(f)


def reference_share(users: list[ShareRow]) -> float | None:
    """S_ref by default: the median NormShares of the real users (a typical user's share)."""
    shares = [u.norm_shares for u in users if u.norm_shares]
    return statistics.median(shares) if shares else None


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_data(snap: StoredSnapshot, target_core_hours: float | None = None) -> dict:
    """Everything `fscontrol status` shows, as plain data."""
    cfg = snap.config
    d = cfg.damping_factor
    root = next((r for r in snap.shares if r.depth == 0), None)
    total = float(root.raw_usage) if root else 0.0
    users = [r for r in snap.shares if r.is_user and r.user != "root"]
    active = [u for u in users if u.raw_usage > 0]
    s_ref = reference_share(users)
    halving = s_ref * d * total if s_ref is not None else None
    rows = []
    for u in users:
        f = classic_f(u.effective_usage, u.norm_shares, d)
        ih = implied_halving(float(u.raw_usage), f)
        rows.append(
            {
                "user": u.user,
                "account": u.account,
                "raw_usage": u.raw_usage,
                "usage_core_hours": u.raw_usage / HOUR,
                "norm_shares": u.norm_shares,
                "effective_usage": u.effective_usage,
                "fairshare": f,
                "fairshare_sshare": u.fairshare,
                "fairshare_sprio": snap.prio_fairshare.get(u.key),
                "implied_halving_core_hours": ih / HOUR if ih is not None else None,
                "underflow": f is not None and f < UNDERFLOW,
            }
        )
    warnings = []
    if cfg.mode == "fair_tree":
        warnings.append("Fair Tree is in use: it never reads FairShareDampeningFactor, so fscontrol can only advise.")
    elif cfg.mode != "classic":
        warnings.append(f"priority mode {cfg.mode}: fscontrol's classic maths are an approximation here.")
    if "limits" not in cfg.enforce:
        warnings.append(
            "AccountingStorageEnforce lacks 'limits': Slurm 22.05 then never charges the end of a job, "
            "so usage (and control) is under-counted."
        )
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
        "users": len(users),
        "active_users": len(active),
        "reference_share": s_ref,
        "reference_share_rule": "median NormShares of user associations",
        "halving_core_hours": halving / HOUR if halving is not None else None,
        "target_core_hours": target_core_hours,
        "underflow_users": [f"{r['user']}@{r['account']}" for r in rows if r["underflow"]],
        "warnings": warnings,
        "table": rows,
    }


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
        head.append(("target u*", f"{data['target_core_hours']:,.2f} core-hours"))
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
            _fmt(r["implied_halving_core_hours"], ",.3f"),
        ]
        for r in data["table"]
    ]
    lines.append("")
    lines.append(
        tabulate(
            table,
            headers=["user", "account", "usage (core-h)", "NormShares", "EffectvUsage", "F", "F sshare", "F sprio", "halving (core-h)"],
            disable_numparse=True,
            colalign=("left", "left", "right", "right", "right", "right", "right", "right", "right"),
        )
    )
    lines.append("")
    lines.append("F = 2^(-(EffectvUsage/NormShares)/d) with the controller's d; F sprio from pending jobs;")
    lines.append("halving = usage / -log2 F: the usage at which this user's F halves.")
    under = data["underflow_users"]
    lines.append(f"underflow (F < 1e-6): {', '.join(under) if under else 'none'}")
    for w in data["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
