"""The user's fair-share forecast: F now and why, recovery, budgets, a planned campaign.

Pure (no Slurm, no clock, no files): `forecast_data` takes the published snapshot (see
publish.py), the invoking user's own sshare rows, `now`, a plan and a target, and returns
plain data for --json; `format_forecast` turns it into text with a terminal chart.

Maths (Yalim, PEARC'20 section 3; fscontrol.forecast.classic): F = 2^(-(UE/S)/d) with UE and S from
the user's sshare row and d the controller's (from the published snapshot, NOT sshare's
FairShare column, which uses the client's slurm.conf d). Written as F = 2^(-u/H_u) with
u = UE x U the user's effective usage and H_u = S x d x U the usage that halves the user's F,
U being the cluster's total decayed usage. With H held fixed by control, u follows
du/dt = c(t) - lambda u. This is exact when the user's effective usage is all their own
(EffectvUsage = NormUsage: fair-share parent root, or alone in their account); otherwise the
rest of the account's usage is assumed to decay without new charges, an approximation.

Standard library only: this is on the `fscontrol forecast` cold-start path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone
from fscontrol.errors import ConfigError, NotFoundError, UnsafeActionError
from fscontrol.forecast.classic import Segment, idle_time_to_fairshare, total_held, trajectory, usage_to_fairshare
from fscontrol.forecast.ownsshare import parse_own_sshare  # noqa: F401 (service.parse_own_sshare: the user's rows of sshare)
from fscontrol.records import ShareRow
from fscontrol.export.html import duration_text

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: ~5 ms of the forecast's start)
if TYPE_CHECKING:
    from typing import Any

HOUR = 3600.0
DAY = 86400.0
STALE_ERROR_S = DAY  # older than this (or than max_age, if larger): refuse unless stale_ok
POINTS = 60


class StaleSnapshotError(NotFoundError):
    """The published snapshot is too old to forecast from (exit 6; --stale-ok overrides)."""


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def age_text(seconds: float) -> str:
    """'45 s', '12 min', '3.5 h', '2.1 days'."""
    s = max(0.0, seconds)
    if s < 120:
        return f"{s:.0f} s"
    if s < 2 * HOUR:
        return f"{s / 60:.0f} min"
    if s < 2 * DAY:
        return f"{s / HOUR:.1f} h"
    return f"{s / DAY:.1f} days"


def _finite(x: float | None) -> float | None:
    return None if x is None or math.isinf(x) or math.isnan(x) else x


# ---------------------------------------------------------------------------- sshare rows
def rows_from_published(published: dict[str, Any], user: str) -> tuple[ShareRow, ...]:
    """The user's rows from a published snapshot that carries per-association rows."""
    if not published.get("per_association"):
        raise NotFoundError(
            "the published snapshot has no per-user rows (PrivateData=usage): use --source live "
            "(your own sshare row)"
        )
    return tuple(
        ShareRow(
            account=a["account"],
            user=a["user"],
            parent=a["parent"],
            depth=a["depth"],
            raw_shares=a["raw_shares"],
            shares_parent=a["shares_parent"],
            norm_shares=a["norm_shares"],
            raw_usage=a["raw_usage"],
            norm_usage=a["norm_usage"],
            effective_usage=a["effective_usage"],
            fairshare=None,
        )
        for a in published.get("associations", [])
        if a["user"] in (user, "")  # the user's rows and the accounts (the path of its EffectvUsage)
    )


# ---------------------------------------------------------------------------- access
def check_access(user: str, requester: str, is_admin: bool) -> None:
    """Only an admin may ask for another user's forecast (UnsafeActionError, exit 7)."""
    if user != requester and not is_admin:
        raise UnsafeActionError(
            f"refused: you ({requester}) may only ask for your own forecast; "
            f"--user {user} needs root or an fscontrol admin"
        )


def is_admin(requester: str, uid: int, published: dict[str, Any] | None, trusted: bool, own: dict[str, Any] | None = None) -> bool:
    """root, or a requester whose own file (privacy.read_own: readable by them alone) holds a
    token listed in the published snapshot's `admins_hmac`, when that file is trusted (owned by
    root: a user could write any list into a file of their own). The tokens are HMACs under the
    site secret only root can read: the file names no admin, and no one can make a token."""
    if uid == 0:
        return True
    if not (trusted and published and own and own.get("user") == requester):
        return False
    tok = own.get("admin_token")
    return isinstance(tok, str) and tok in (published.get("admins_hmac") or [])


def usage_reset_warning(period: str | None) -> str | None:
    """PriorityUsageResetPeriod other than NONE: slurmctld sets every association's usage to 0 at
    each reset (DAILY, WEEKLY, MONTHLY, QUARTERLY, YEARLY; NOW once), which the forecast's decay
    does not model: its numbers hold only until the next reset."""
    p = (period or "NONE").strip().upper()
    if p in ("NONE", ""):
        return None
    return (f"PriorityUsageResetPeriod={p}: Slurm sets all usage to 0 at each reset, and F jumps to 1 there; this "
            "forecast decays usage only, so it holds until the next reset")


def check_fresh(published: dict[str, Any], now: float, max_age_s: float, stale_ok: bool) -> tuple[float, str | None]:
    """The snapshot's age and a warning when older than max_age_s; StaleSnapshotError when
    older than a day (or max_age_s, if larger) unless stale_ok."""
    age = now - float(published["taken_at"])
    if age <= max_age_s:
        return age, None
    limit = max(STALE_ERROR_S, max_age_s)
    where = f"the published snapshot of {published.get('cluster')} is {age_text(age)} old (taken {published.get('taken_at_iso')})"
    if age > limit and not stale_ok:
        # no option named here: the web page's users have none (the CLI adds its --stale-ok: cli.forecast)
        raise StaleSnapshotError(
            f"{where}: too old to forecast from (limit {age_text(limit)}); is the agent's publish job "
            "running? Ask your admin"
        )
    return age, f"{where}, older than {age_text(max_age_s)}: the cluster's numbers may have moved"


# ---------------------------------------------------------------------------- the forecast
def plan_summary(plan: Sequence[Segment]) -> list[dict]:
    return [
        {
            "kind": "idle" if s.rate == 0 else "run",
            "cores": s.rate,
            "days": s.duration_s / DAY,
            "core_hours": s.rate * s.duration_s / HOUR,
        }
        for s in plan
    ]


def plan_text(plan: Sequence[Segment]) -> str:
    def dur(s: float) -> str:
        return f"{s / DAY:g}d" if s >= DAY else (f"{s / HOUR:g}h" if s >= HOUR else f"{s / 60:g}m")

    def what(s: Segment) -> str:
        t = getattr(s, "tres", None)
        if not t:
            return f"{s.rate:g}cpus"  # in billing units, as before (--billing-per-core folded in)
        return (f"{t['cpu']:g}cpus" + (f"+{t['gres/gpu']:g}gpus" if t.get("gres/gpu") else "")
                + (f"+{t['node']:g}nodes" if t.get("node", 1.0) != 1.0 else ""))  # as the user wrote it

    return ",".join(f"idle:{dur(s.duration_s)}" if s.rate == 0 and not getattr(s, "tres", None)
                    else f"{what(s)}:{dur(s.duration_s)}" for s in plan)


def forecast_data(
    published: dict[str, Any],
    rows: Sequence[ShareRow],
    *,
    user: str,
    now: float,
    plan: Sequence[Segment] = (),
    target: float = 0.5,
    account: str | None = None,
    requester: str | None = None,
    is_admin: bool = False,
    max_age_s: float = HOUR,
    stale_ok: bool = False,
    horizon_s: float | None = None,
    points: int = POINTS,
    pending: dict[str, int] | None = None,
    rows_from: str = "sshare",
    said_only: bool = False,
    tz=None,
) -> dict[str, Any]:
    """Everything `fscontrol forecast` shows, as plain data.

    `tz`: slurmctld's time zone, where PriorityUsageResetPeriod resets usage at midnight (None:
    this process's local time); forecast.resets models the resets within the chart.

    `said_only` (the web page's): the "if your account's other users stopped" projection is built
    only where its answer is said (forecast.loaded.apply); recovery.if_others_stopped_days is None
    elsewhere.

    `rows_from`: where `rows` came from ("sshare", or "published": the published file's rows),
    for the message when the user has none.

    `pending`: by account, the user's earliest pending job (the one whose priority is forecast;
    where none is given, a job submitted now).

    `rows` are sshare rows (as the user sees them, or a whole tree: only `user`'s rows are
    used, nobody else's is ever read into the result). `requester`/`is_admin` say who asks:
    a non-admin asking for another user is refused (UnsafeActionError) before anything else."""
    check_access(user, requester if requester is not None else user, is_admin)
    if not 0.0 < target < 1.0:
        raise ConfigError(f"--target must be a fair-share strictly between 0 and 1, got {target:g}")
    age, stale_warning = check_fresh(published, now, max_age_s, stale_ok)
    cfg = published["config"]
    d = float(cfg["damping_factor"])
    lam = float(published["decay_lambda"])
    total = float(published["total_usage"])

    mine = [r for r in rows if r.is_user and r.user == user]
    if not mine:
        where = "the published file has no association" if rows_from == "published" else "sshare shows no association"
        raise NotFoundError(f"unknown user {user!r}: {where} for them on {published.get('cluster')}")
    if account is not None:
        chosen = [r for r in mine if r.account == account]
        if not chosen:
            have = ", ".join(sorted(r.account for r in mine))
            raise NotFoundError(f"user {user!r} has no association in account {account!r} (has: {have})")
        mine = chosen

    mode = cfg.get("priority_mode")
    if rows_from == "sshare" and mode != "fair_tree":
        mine = _own_rows_refined(mine, published, d)
    warnings = []
    if stale_warning:
        warnings.append(stale_warning)
    if mode == "fair_tree":
        warnings.append("the cluster runs Fair Tree, not classic fair-share: these numbers do not describe its priorities")
    elif mode not in ("classic", None):
        warnings.append(f"priority mode {mode}: the classic fair-share maths here are an approximation")
    if total <= 0:
        warnings.append("the cluster has no recorded usage yet: everyone's F is 1 and there is nothing to forecast")
    from fscontrol.forecast import resets as usage_resets

    period = cfg.get("usage_reset_period")
    reset_at = usage_resets.reset_times(period, now, tz) if mode != "fair_tree" else []
    reset = None if reset_at else usage_reset_warning(period)
    if reset:
        warnings.append(reset)

    plan = list(plan)
    plan_end = sum(s.duration_s for s in plan)
    assocs = []
    held = total_held(published, d)
    for r in mine:
        a = _one(r, d, lam, total, plan, plan_end, target, horizon_s, points, held)
        _at_current_load(a, r, rows, published, plan, plan_end, d, total, target, horizon_s, points,
                         (pending or {}).get(r.account), said_only)
        usage_resets.apply(a, reset_at, plan, lam)
        assocs.append(a)
    reach = max((a["trajectory"][-1]["days"] * DAY for a in assocs if a.get("trajectory")), default=horizon_s or 0.0)
    reset_text = usage_resets.reset_line(period, now, reset_at, reach, tz) if reset_at else None
    return {
        "user": user,
        "requester": requester if requester is not None else user,
        "cluster": published.get("cluster"),
        "now": _iso(now),
        "snapshot_taken_at": published.get("taken_at_iso"),
        "snapshot_age_s": age,
        "damping_factor": cfg["damping_factor"],
        "half_life_s": cfg["half_life_s"],
        "decay_lambda": lam,
        "priority_mode": mode,
        "total_usage_core_hours": total / HOUR,
        "reference_share": published.get("reference_share"),
        "cluster_halving_core_hours": published.get("halving_core_hours"),
        "target_core_hours": published.get("target_core_hours"),
        "target": target,
        "plan": plan_summary(plan),
        "plan_text": plan_text(plan),
        "plan_days": plan_end / DAY,
        "warnings": warnings,
        "associations": assocs,
    } | ({} if reset_text is None else {"usage_reset": {
        "period": str(period).upper(), "text": reset_text, "at": [_iso(now + t) for t in reset_at if t <= reach]}})


def _own_rows_refined(mine: list[ShareRow], published: dict[str, Any], d: float) -> list[ShareRow]:
    """The user's own sshare rows with slurmctld's NormShares (the published tree's exact ones,
    where the file has the row with the same RawShares; sshare prints 6 decimals: 0.000005 for a
    share of 5.4e-6) and EffectvUsage as its printed EffectvUsage and FairShare pin it
    (model/effusage.own_effective_usage): on a large tree F from the printed pair alone is off by
    several percent (issue #33)."""
    from fscontrol.model.fsfactor import own_effective_usage

    exact = {(a["account"], a["user"]): a for a in published.get("associations", []) if a.get("user") in {r.user for r in mine}}
    d_s = published.get("config", {}).get("sshare_damping") or d  # sshare's FairShare: its slurm.conf's d
    out = []
    for r in mine:
        a = exact.get((r.account, r.user))
        s = a["norm_shares"] if a is not None and a.get("raw_shares") == r.raw_shares and a.get("norm_shares") else None
        out.append(r._replace(norm_shares=s if s is not None else r.norm_shares,
                              effective_usage=own_effective_usage(r, s, d_s)))
    return out


def _at_current_load(a: dict, r: ShareRow, rows: Sequence[ShareRow], published: dict, plan: list, plan_end: float,
                     d: float, total: float, target: float, horizon_s: float | None, points: int,
                     pending_job: int | None = None, said_only: bool = False) -> None:
    """Every statement from one projection at the cluster's current load (forecast.loaded): the
    running jobs go on, the account-mates keep submitting. Where it cannot be built (no running
    jobs published, the account rows hidden) the everyone-stopped model stands, and says so.
    `said_only`: forecast_data's."""
    from fscontrol.forecast import loaded

    if a["halving_core_hours"] is None:
        return
    half_life = float(published["config"].get("half_life_s") or 0)
    idle = loaded.build(r, rows, published, (), d, total, pending_job)
    if isinstance(idle, str):
        a["model"] = "everyone else stopped"
        a["assumed"] = f"everyone else stops now ({idle})"
        a["idle_to_target_text"] = loaded.when_text(a["idle_days_to_target"]) if a["idle_days_to_target"] is not None \
            else "never (no decay)"
        if a.get("after_plan"):
            ap = a["after_plan"]
            ap["idle_to_target_text"] = "never (no decay)" if ap["idle_days_to_target"] is None else \
                loaded.when_text(ap["idle_days_to_target"])
        return
    planned = loaded.build(r, rows, published, plan, d, total, pending_job) if plan else None
    # "if your account's other users stopped": they stop, the user's own running jobs go on
    def stopped() -> loaded.Loaded | None:
        got = loaded.build(r, rows, published, (), d, total, pending_job, others_stopped=True)
        return None if isinstance(got, str) else got

    loaded.apply(a, idle, planned, plan_end, target, half_life, horizon_s, points, stopped if said_only else stopped())


PENDING_ARGS = ("-h", "-t", "PD", "-o", "%i|%a|%r")  # squeue -u USER + these: parse_own_pending reads it


def own_pending_jobs(text: str) -> list[tuple[int, str, bool]]:
    """`squeue -h -u USER -t PD -o %i|%a|%r`: each pending job as (its place in slurmctld's job
    list, account, held). Job ids that are not numbers (array tasks pending as 12_[1-9]) count by
    their array's id; a job held by an admin or its user (reason JobHeldAdmin, JobHeldUser) is
    held: it waits for a release, not for its priority."""
    from fscontrol.slurm.jobid import job_order

    out = []
    for line in text.splitlines():
        job, _, rest = line.strip().partition("|")
        account, _, reason = rest.partition("|")
        order = job_order(job.split("_", 1)[0])
        if order is not None and account:
            out.append((order, account, reason.strip().startswith("JobHeld")))
    return out


def parse_own_pending(text: str) -> dict[str, int]:
    """By account, the earliest pending job that is not held (own_pending_jobs reads squeue's lines;
    the older two-field form `%i|%a` reads as no job held)."""
    out: dict[str, int] = {}
    for order, account, held in own_pending_jobs(text):
        if not held:
            out[account] = min(order, out.get(account, order))
    return out


def _exact(r: ShareRow) -> bool:
    """EffectvUsage = NormUsage (sshare prints 6 decimals): the user's effective usage is all
    their own, so F = 2^(-u/H_u) holds for the user's future usage exactly."""
    if r.norm_usage is None or r.effective_usage is None:
        return r.depth <= 1
    return abs(r.effective_usage - r.norm_usage) <= 1.5e-6 + 1e-4 * r.norm_usage


def _one(
    r: ShareRow,
    d: float,
    lam: float,
    total: float,
    plan: list[Segment],
    plan_end: float,
    target: float,
    horizon_s: float | None,
    points: int,
    held: bool = True,
) -> dict[str, Any]:
    from fscontrol.model.fsfactor import damping_to_halve, fairshare_factor, usage_to_halve

    s = r.norm_shares or 0.0
    ue = r.effective_usage or 0.0
    f_now = fairshare_factor(ue, s, d)
    exact = _exact(r)
    out: dict[str, Any] = {
        "account": r.account,
        "usage_core_hours": r.raw_usage / HOUR,
        "norm_shares": s,
        "norm_usage": r.norm_usage,
        "effective_usage": ue,
        "fairshare": f_now,
        "fairshare_sshare": r.fairshare,
        "exact": exact,
        "note": None
        if exact
        else "an approximation: your account's other usage counts in your EffectvUsage "
        "(you are below the first tier); it is assumed to decay without new charges",
        "effective_usage_core_hours": None,
        "halving_core_hours": None,
        "core_hours_to_halve": None,
        "core_hours_to_target": None,
        "idle_days_to_target": None,
        "after_plan": None,
        "trajectory": [],
    }
    if s <= 0:
        out["note"] = "this association has no shares: its fair-share is 0 whatever it uses"
        return out
    if total <= 0:
        return out
    h = s * d * total  # H_u
    u0 = ue * total
    # the one halving formula, status's too (fairshare.usage_to_halve): H while the agent holds the
    # total; at a d that stays put, own usage raises the total as well
    x = usage_to_halve(ue, s, d, total, total_held=held)
    if x is None:
        out["cannot_halve"] = (f"F cannot halve at d = {d:g} from your usage alone: d S = {d * s:.4f} >= "
                               f"1 - EffectvUsage = {1 - ue:.4f} (it halves again at d < {damping_to_halve(ue, s):,.2f}; "
                               "the agent does not hold the total)")
    out.update(
        effective_usage_core_hours=u0 / HOUR,
        halving_core_hours=h / HOUR,
        core_hours_to_halve=None if x is None else x / HOUR,
        core_hours_to_target=usage_to_fairshare(u0, h, target) / HOUR,
        idle_days_to_target=_finite(idle_time_to_fairshare(u0, h, lam, target) / DAY),
    )
    if plan:
        bounds = [0.0]
        for seg in plan:
            bounds.append(bounds[-1] + seg.duration_s)
        at_bounds = trajectory(u0, h, lam, plan, bounds)
        low = min(at_bounds, key=lambda p: p.fairshare)  # u peaks at a segment boundary
        end = at_bounds[-1]
        out["after_plan"] = {
            "fairshare": end.fairshare,
            "effective_usage_core_hours": end.usage / HOUR,
            "lowest_fairshare": low.fairshare,
            "lowest_at_days": low.t / DAY,
            "idle_days_to_target": _finite(idle_time_to_fairshare(end.usage, h, lam, target) / DAY),
        }
        u_ref = end.usage
    else:
        u_ref = u0
    if horizon_s is None:
        rec = idle_time_to_fairshare(u_ref, h, lam, target)
        half_life = math.log(2) / lam if lam > 0 else 7 * DAY
        tail = max(rec * 1.2 if math.isfinite(rec) else 0.0, half_life)
        horizon_s = plan_end + tail
    n = max(2, points)
    times = [horizon_s * i / (n - 1) for i in range(n)]
    out["trajectory"] = [
        {"days": round(p.t / DAY, 6), "effective_usage_core_hours": round(p.usage / HOUR, 3), "fairshare": round(p.fairshare, 6)}
        for p in trajectory(u0, h, lam, plan, times)
    ]
    out["horizon_days"] = horizon_s / DAY
    return out


# ---------------------------------------------------------------------------- text
def _num(v: float | None, spec: str = ",.1f") -> str:
    return "-" if v is None else format(v, spec)


def _when(days: float | None, never: str = "never (no decay)") -> str:
    if days is None:
        return never
    if days == 0:
        return "already there"
    return "in " + duration_text(days * DAY)


def _unit(horizon_s: float) -> tuple[str, float, tuple[float, ...]]:
    """The x axis unit for a horizon: name, seconds, nice tick steps."""
    if horizon_s < 3 * HOUR:
        return "min", 60.0, (5, 10, 15, 30, 60)
    if horizon_s < 3 * DAY:
        return "hours", HOUR, (1, 2, 3, 6, 12, 24)
    return "days", DAY, (1, 2, 3.5, 7, 14, 28, 56, 91, 182, 365, 730)


def chart(points: Sequence[dict], target: float, plan: Sequence[dict], height: int = 11) -> list[str]:
    """F over time as a text plot: one column per trajectory point, F from 1 (top) to 0, the
    target as a dashed line, time on the x axis, and the plan's runs (cores) underneath."""
    if len(points) < 2:
        return []
    width = len(points)
    horizon_s = points[-1]["days"] * DAY or 1.0
    rows = [[" "] * width for _ in range(height)]
    t_row = round((1.0 - target) * (height - 1))
    for j in range(0, width, 2):
        rows[t_row][j] = "-"
    for j, p in enumerate(points):
        rows[round((1.0 - p["fairshare"]) * (height - 1))][j] = "*"
    lines = []
    for i, row in enumerate(rows):
        label = f"{1.0 - i / (height - 1):4.1f}" if i % 2 == 0 else "    "
        body = "".join(row)
        lines.append(f"  {label} |{body}  target {target:.2f}" if i == t_row else f"  {label} |{body.rstrip()}")
    name, unit, steps = _unit(horizon_s)
    span = horizon_s / unit
    step = next((x for x in steps if span / x <= 6), span / 6)
    axis = ["-"] * width
    labels = [" "] * (width + 8)
    k = 0
    while k * step <= span + 1e-9:
        j = round(k * step / span * (width - 1))
        if j:
            axis[j] = "+"
        text = f"{k * step:g}"
        if all(c == " " for c in labels[max(0, j - 1): j + len(text) + 1]):
            labels[j: j + len(text)] = list(text)
        k += 1
    lines.append("       +" + "".join(axis))
    lines.append("        " + "".join(labels).rstrip() + f"  {name} from now")
    if any(s["kind"] == "run" for s in plan):
        runs = [" "] * width
        t0 = 0.0
        for s in plan:
            t1 = t0 + s["days"] * DAY
            j0 = round(t0 / horizon_s * (width - 1))
            j1 = min(width, round(t1 / horizon_s * (width - 1)))
            if s["kind"] == "run" and j1 > j0:
                runs[j0:j1] = ["="] * (j1 - j0)
                text = f"{s['cores']:g}"
                if j1 - j0 >= len(text):
                    runs[j0: j0 + len(text)] = list(text)
            t0 = t1
        lines.append("  cores " + "".join(runs).rstrip())
    return lines


def format_forecast(data: dict[str, Any]) -> str:
    d = data["damping_factor"]
    lines = [
        (f"fair-share forecast for {data['user']} on {data['cluster']} "
        f"(damping factor d={d}, usage half-life {duration_text(data['half_life_s'])})"),
        (f"published snapshot taken {data['snapshot_taken_at']} ({age_text(data['snapshot_age_s'])} before {data['now']}); "
        f"cluster's total decayed usage U = {_num(data['total_usage_core_hours'])} core-hours"),
    ]
    if data.get("cluster_halving_core_hours") is not None:
        tgt = data.get("target_core_hours")
        lines.append(
            f"a typical user's F halves every {_num(data['cluster_halving_core_hours'])} core-hours"
            + (f" (the admins' target u* = {_num(tgt)})" if tgt else "")
        )
    for w in data["warnings"]:
        lines.append(f"warning: {w}")
    for line in (data.get("billing") or {}).get("lines") or ():
        lines.append(line)
    if data.get("usage_reset"):
        lines.append(data["usage_reset"]["text"])
    target = data["target"]
    for a in data["associations"]:
        lines.append("")
        lines.append(f"account {a['account']}")
        rows: list[tuple[str, str]] = [("F now", f"{a['fairshare']:.4f}")]
        fs = a.get("fairshare_sshare")
        if fs is not None and abs(fs - a["fairshare"]) > 5e-6:
            rows.append(
                ("sshare shows", f"{fs:.4f}: computed with the d in this machine's slurm.conf; slurmctld uses d={d}")
            )
        if a["halving_core_hours"] is not None:
            rows.append(
                (
                    "why",
                    (f"your effective usage {_num(a['effective_usage_core_hours'])} core-hours "
                    f"(own decayed usage {_num(a['usage_core_hours'])}), share S = {a['norm_shares']:.6f};"),
                )
            )
            rows.append(
                (
                    "",
                    (f"F = 2^-(usage / {_num(a['halving_core_hours'])}): it halves every "
                    f"{_num(a['halving_core_hours'])} core-hours you use (H = S x d x U)"),
                )
            )
            rows.append((f"idle until F >= {target:.2f}", a.get("idle_to_target_text") or _when(a["idle_days_to_target"])))
            rows.append(("core-hours until F halves", f"{_num(a['core_hours_to_halve'])} (from now, without decay)"
                         if a["core_hours_to_halve"] is not None else (a.get("cannot_halve") or "-")))
            if a["core_hours_to_target"]:
                rows.append((f"core-hours until F = {target:.2f}", _num(a["core_hours_to_target"])))
        if a["note"]:
            rows.append(("note", a["note"]))
        ap = a.get("after_plan")
        if ap:
            total_ch = sum(s["core_hours"] for s in data["plan"])
            rows.append(("plan", f"{data['plan_text']} ({duration_text(data['plan_days'] * DAY)}, {total_ch:,.0f} core-hours)"))
            rows.append(("  F at its end", f"{ap['fairshare']:.4f} (after {duration_text(data['plan_days'] * DAY)})"))
            low_when = "now" if ap["lowest_at_days"] == 0 else f"after {duration_text(ap['lowest_at_days'] * DAY)}"
            rows.append(("  lowest F", f"{ap['lowest_fairshare']:.4f} ({low_when})"))
            rows.append((f"  then idle until F >= {target:.2f}", ap.get("idle_to_target_text") or _when(ap["idle_days_to_target"])))
        if a.get("assumed"):
            rows.append(("assumed", a["assumed"]))
        width = max(len(k) for k, _ in rows) + 2
        lines.extend(f"  {k:<{width}}{v}" for k, v in rows)
        if a["trajectory"]:
            lines.append("")
            load = ", at the current load" if a.get("model") == "current load" else ", everyone else stopped"
            lines.append(f"  F over the next {duration_text(a['horizon_days'] * DAY)}" + (" (plan, then idle" if data["plan"] else " (idle")
                         + load + ")")
            lines.extend(chart(a["trajectory"], target, data["plan"]))
    return "\n".join(lines)


def plot_png(data: dict[str, Any], path: str) -> None:
    """F over time per account into a PNG (matplotlib, the optional extra `plot`)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for a in data["associations"]:
        tr = a["trajectory"]
        if tr:
            ax.plot([p["days"] for p in tr], [p["fairshare"] for p in tr], label=f"{data['user']} @ {a['account']}")
    ax.axhline(data["target"], linestyle="--", color="grey", linewidth=1, label=f"target {data['target']:.2f}")
    t0 = 0.0
    for s in data["plan"]:
        if s["kind"] == "run":
            ax.axvspan(t0, t0 + s["days"], alpha=0.08 + 0.2 * min(1.0, s["cores"] / max(x["cores"] for x in data["plan"])), color="tab:orange")
        t0 += s["days"]
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("days from now")
    ax.set_ylabel("fair-share factor F")
    ax.set_title(f"fair-share forecast, {data['cluster']} (d={data['damping_factor']})")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    save_plot(fig, path)


def pyplot():
    """matplotlib's pyplot for --plot (fscontrol.plotting)."""
    from fscontrol.plotting import pyplot as _pyplot

    return _pyplot("--plot", instead="the text chart / --json")


def save_plot(fig, path: str) -> None:
    """Write the --plot PNG (never making its folder) and close the figure."""
    from fscontrol.plotting import save

    fig.tight_layout()
    save(fig, path, "the --plot file", dpi=120)


def invoker() -> tuple[str, int]:
    """Who runs the command: (user name, uid) from the real uid (never from the environment)."""
    import os
    import pwd

    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name, uid
    except KeyError:
        return str(uid), uid
