"""The forecast under PriorityUsageResetPeriod: slurmctld sets every association's usage to 0 at each
reset (model.usagereset says when), so the projection's usage drops to 0 there and grows again from
what of the plan is left.

What is modelled: the user's own effective usage is 0 at each reset time within the horizon and
then charged by the rest of the plan (decayed as before), against the halving the agent holds
now; F jumps to 1 there. The reset takes effect at slurmctld's first decay pass at or after the
time (within one PriorityCalcPeriod). Not modelled: the cluster's other jobs after a reset (the
whole cluster restarts from 0, and the agent's padding with it)."""

from __future__ import annotations

import datetime as dt
from typing import Any

DAY = 86400.0
HOUR = 3600.0
REACH_S = 366 * DAY  # the farthest a forecast's chart reaches (export.limits.HARD_MAX_HORIZON_S)


def reset_times(period: str | None, now: float, tz: dt.tzinfo | None = None) -> list[float]:
    """The resets to come within a forecast's reach, as seconds from `now` (pure)."""
    from fscontrol.errors import ConfigError
    from fscontrol.model.usagereset import resets_between

    try:
        return [t - now for t in resets_between(now, now + REACH_S, period, tz)]
    except ConfigError:
        return []  # a period the agent did not know: the warning stands alone


def when_text(t: float, tz: dt.tzinfo | None = None) -> str:
    local = dt.datetime.fromtimestamp(t, tz) if tz is not None else dt.datetime.fromtimestamp(t)
    return local.strftime("%Y-%m-%d %H:%M")


def reset_line(period: str, now: float, resets: list[float], horizon_s: float, tz: dt.tzinfo | None = None) -> str | None:
    """'usage resets to 0 at 2026-12-01 00:00 (PriorityUsageResetPeriod=MONTHLY)' for the resets
    within the horizon; None when none falls in it."""
    within = [r for r in resets if r <= horizon_s]
    if not within:
        return None
    shown = ", ".join(when_text(now + r, tz) for r in within[:3]) + (f" and {len(within) - 3} more" if len(within) > 3 else "")
    return f"usage resets to 0 at {shown} (PriorityUsageResetPeriod={period.strip().upper()})"


def apply(a: dict[str, Any], resets: list[float], plan: list, lam: float) -> None:
    """Association `a` (service._one's dict, after forecast.loaded) with the resets within its
    chart: each trajectory point at or after a reset is the user's usage since that reset, the
    plan's end (where a reset falls inside the plan) likewise."""
    from fscontrol.forecast.classic import trajectory

    if not resets or a.get("halving_core_hours") is None or not a.get("trajectory"):
        return
    h = a["halving_core_hours"] * HOUR
    u0 = (a.get("effective_usage_core_hours") or 0.0) * HOUR
    horizon = a["trajectory"][-1]["days"] * DAY
    within = [r for r in resets if r <= horizon]
    if not within:
        return
    first = within[0]
    for p in a["trajectory"]:
        t = p["days"] * DAY
        if t >= first:
            q = trajectory(u0, h, lam, plan, [t], resets=within)[0]
            p["effective_usage_core_hours"] = round(q.usage / HOUR, 3)
            p["fairshare"] = round(q.fairshare, 6)
    ap = a.get("after_plan")
    plan_end = sum(s.duration_s for s in plan)
    if ap and plan and first <= plan_end:
        end = trajectory(u0, h, lam, plan, [plan_end], resets=resets)[0]
        ap["fairshare"] = end.fairshare
        ap["effective_usage_core_hours"] = end.usage / HOUR
        ap["after_reset"] = True
    _recovery_by_reset(a, resets, plan_end if plan else None)
    a["resets_days"] = [r / DAY for r in within]


def _recovery_by_reset(a: dict[str, Any], resets: list[float], plan_end: float | None) -> None:
    """The recovery statements agree with the chart: a reset sets every usage to 0, so F is back at
    the target by the first reset at the latest (idle from now, or after the plan's end). The
    projection's own time stands where it comes first."""
    from fscontrol.forecast.loaded import when_text as in_words

    def by(days: float | None, start_s: float) -> float | None:
        nxt = next((r for r in resets if r >= start_s), None)
        if nxt is None:
            return None
        at = (nxt - start_s) / DAY
        return at if days is None or at < days else None

    at = by(a.get("idle_days_to_target"), 0.0)
    if at is not None:
        a["idle_days_to_target"] = at
        a["idle_to_target_text"] = f"{in_words(at)}, at the usage reset"
        if isinstance(a.get("recovery"), dict):
            a["recovery"] = dict(a["recovery"], reachable=True, by_reset=True)
    ap = a.get("after_plan")
    if ap and plan_end is not None:
        at = by(ap.get("idle_days_to_target"), plan_end)
        if at is not None:
            ap["idle_days_to_target"] = at
            ap["idle_to_target_text"] = f"{in_words(at)}, at the usage reset"
