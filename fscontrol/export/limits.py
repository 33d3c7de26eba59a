"""The caps on what one forecast request may ask for: bounded work for every plain user.

A user's `fscontrol forecast --plan/--run/--idle/--horizon` and the web planner run on a shared
login node (or the site's web server). Unbounded, one request could ask for a 38-year plan (the
projection walks every decay pass: gigabytes) or 10^30 CPUs (a 34-digit core-hour figure). The
caps:

* CPUs per plan step: at most the cluster's size (its total CPUs, published by the agent from
  `sinfo`, or the config's `[forecast] max_cpus`); FALLBACK_MAX_CPUS when neither is known;
* GPUs per plan step ('4cpus+2gpus'): at most the partition's GPUs (published with its billing
  weights: export.publish.billing_published);
* the plan's length: at most `[forecast] max_horizon` (default 60 days: the projection walks every
  decay pass of the plan); the chart's --horizon at most a year (it costs a fixed number of points);
* plan steps: at most `[forecast] max_plan_steps` (default 40; the web planner makes at most 39).

The agent publishes them (the published snapshot's "limits"); the user side reads them from
there, with these defaults where an older file has none. Beyond a cap: PlanError (exit 2, one
line; the web page answers 400 with the same line).

Standard library only: on the `fscontrol forecast` cold-start path.
"""

from __future__ import annotations

import math

from fscontrol.errors import PlanError

DAY = 86400.0
DEFAULT_MAX_HORIZON_S = 60 * DAY  # the paper's 46-day campaign (Yalim, PEARC'20) fits
DEFAULT_MAX_PLAN_STEPS = 40
MAX_PLAN_CHARS = 4000  # a plan string longer than this is refused before it is read
FALLBACK_MAX_CPUS = 100_000  # the cluster's size is known neither from the snapshot nor from sinfo
FALLBACK_MAX_GPUS = 100_000  # the same for GPUs (a plan with GPUs is billed only where the partitions are published)
HARD_MAX_HORIZON_S = 366 * DAY  # the most the config may allow: a year of 5-minute passes
HARD_MAX_PLAN_STEPS = 1000


def from_published(published: dict) -> dict:
    """The caps in force for a published snapshot: its "limits", defaults for what it lacks."""
    lim = published.get("limits") or {}
    return {
        "max_cpus": _pos(lim.get("max_cpus")),
        "cluster_cpus": _pos(lim.get("cluster_cpus")),
        "max_horizon_s": _pos(lim.get("max_horizon_s")) or DEFAULT_MAX_HORIZON_S,
        "max_plan_steps": int(_pos(lim.get("max_plan_steps")) or DEFAULT_MAX_PLAN_STEPS),
    }


def _pos(x) -> float | None:
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0 else None


def published_limits(cluster_cpus: int | None, max_cpus: int | None = None,
                     max_horizon_s: float = DEFAULT_MAX_HORIZON_S,
                     max_plan_steps: int = DEFAULT_MAX_PLAN_STEPS) -> dict:
    """What the agent publishes: the cluster's size (None: unknown) and the config's caps."""
    return {"cluster_cpus": cluster_cpus, "max_cpus": max_cpus or cluster_cpus, "max_horizon_s": float(max_horizon_s),
            "max_plan_steps": int(max_plan_steps)}


def check_plan_text(text: str, limits: dict, what: str = "--plan") -> None:
    """Refuse a plan string too long to read or with more steps than allowed, before parsing it."""
    if len(text) > MAX_PLAN_CHARS:
        raise PlanError(f"{what} is {len(text):,} characters long: at most {MAX_PLAN_CHARS:,} are read")
    steps = len(text.replace(",", " ").split())
    if steps > limits["max_plan_steps"]:
        raise PlanError(f"{what} has {steps} steps: at most {limits['max_plan_steps']} are forecast in one request")


def check(segments: list, horizon_s: float | None, limits: dict, billing_per_core: float = 1.0,
          max_gpus: float | None = None, gpus_where: str | None = None) -> None:
    """PlanError (one line, exit 2) when the plan or the horizon is beyond the caps. A step that
    says what it asks for (Segment.tres) is capped by its CPUs and its GPUs (at `max_gpus`, the
    partition's GPUs, as CPUs at the cluster's: `gpus_where` names it); else its rate in CPUs."""
    n = len(segments)
    if n > limits["max_plan_steps"]:
        raise PlanError(f"the plan has {n} steps: at most {limits['max_plan_steps']} are forecast in one request")
    cap = limits.get("max_cpus") or FALLBACK_MAX_CPUS
    whose = ("the cluster's size" if limits.get("max_cpus") and limits.get("max_cpus") == limits.get("cluster_cpus")
             else "the site's limit" if limits.get("max_cpus") else "the limit (the cluster's size is not published)")
    for i, s in enumerate(segments, 1):
        tres = getattr(s, "tres", None)
        cpus = tres["cpu"] if tres and "cpu" in tres else s.rate / billing_per_core
        if not math.isfinite(cpus) or cpus > cap:
            raise PlanError(f"plan step {i} asks for {_cpus(cpus)} CPUs: more than {whose}, {cap:,.0f} CPUs")
        gpus = (tres or {}).get("gres/gpu", 0.0)
        if gpus and (not math.isfinite(gpus) or gpus > (max_gpus if max_gpus is not None else FALLBACK_MAX_GPUS)):
            g = max_gpus if max_gpus is not None else FALLBACK_MAX_GPUS
            raise PlanError(f"plan step {i} asks for {_cpus(gpus)} GPUs: more than {gpus_where or 'the limit'}, {g:,.0f} GPUs")
        if not math.isfinite(s.duration_s):
            raise PlanError(f"plan step {i} has no finite length")
    total = sum(s.duration_s for s in segments)
    hmax = limits["max_horizon_s"]
    if total > hmax:
        raise PlanError(f"the plan lasts {_days(total)}: at most {_days(hmax)} are forecast "
                        "(the site's [forecast] max_horizon)")
    # the chart's reach costs nothing per day (a fixed number of points, of Fair Tree rankings): a year
    if horizon_s is not None and not (0 < horizon_s <= HARD_MAX_HORIZON_S):
        raise PlanError(f"--horizon {_days(horizon_s)}: it must be more than 0 and at most {_days(HARD_MAX_HORIZON_S)}")


def _days(s: float) -> str:
    if s >= 10 * DAY:
        return f"{s / DAY:,.0f} days"
    return f"{s / DAY:.3g} days" if s >= DAY else f"{s / 3600:.3g} hours"


def _cpus(x: float) -> str:
    return f"{x:,.0f}" if math.isfinite(x) and x < 1e12 else f"{x:.3g}"
