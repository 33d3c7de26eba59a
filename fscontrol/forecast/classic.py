"""Forecast a user's usage and fair-share: idle recovery, planned campaigns, usage budgets.

On the `fscontrol` user command's cold-start path: standard library only (no numpy/scipy).

Model (Yalim section 3): du/dt = c(t) - lambda*u with c piecewise constant, and with the
halving usage H held fixed by control, F(t) = 2^(-u(t)/H). Exact for an association whose fs
parent is root; for deeper associations pass the snapshot's UE-based numbers and treat the
answer as an approximation (see fairshare.AssocFairShare). Usage is in RawUsage units
(billing-seconds); rates in billing-seconds per second (1 CPU at billing 1 = 1.0).
"""

from __future__ import annotations

import math
import re
from collections import namedtuple
from collections.abc import Iterable, Sequence

from fscontrol.model.decay import ode_step, piecewise_usage
from fscontrol.errors import PlanError

UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


Segment = namedtuple("Segment", ("duration_s", "rate", "tres"), defaults=(None,), module=__name__)
Segment.__doc__ = """A plan's step: `duration_s` seconds at `rate` billing-seconds per second (0 = idle). `tres`: what
    the step's job asks for (plan_tres: cpu, gres/gpu, node), where the plan said; the caps read it.
    A named tuple, not a frozen record (fscontrol.records): every forecast parses a plan, and the
    record's class, built at import, was ~5 M instructions of each forecast's start (issue #31
    item 5). Two steps are equal when all three fields are."""


ForecastPoint = namedtuple("ForecastPoint", ("t", "usage", "fairshare"), module=__name__)
ForecastPoint.__doc__ = """A point of a trajectory: `t` seconds since the forecast's start, the usage then (billing-seconds)
    and its fair-share. A named tuple, not a frozen record (fscontrol.records): a forecast makes
    hundreds of them, and building the record's class at import was ~4 M instructions of every
    forecast's start (issue #31 item 5)."""


def fairshare_at(usage: float, halving: float) -> float:
    """F = 2^(-u/H)."""
    if halving <= 0:
        raise ValueError(f"halving usage must be > 0, got {halving!r}")
    return 2.0 ** (-usage / halving)


def usage_for_fairshare(target: float, halving: float) -> float:
    """The usage at which F = target: u = -H log2(target)."""
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target fair-share must be in (0, 1], got {target!r}")
    return -halving * math.log2(target)


def rate_from_cores(cores: float, billing_per_core: float = 1.0, usage_factor: float = 1.0) -> float:
    """Rate in billing-seconds per second of `cores` cores running (x billing weight x QOS factor)."""
    if cores < 0:
        raise ValueError(f"negative core count {cores!r}")
    return cores * billing_per_core * usage_factor


def campaign_segment(cores: float, duration_s: float, billing_per_core: float = 1.0, usage_factor: float = 1.0) -> Segment:
    """`cores` cores for `duration_s` seconds as a plan segment (0 cores = idle)."""
    if duration_s < 0:
        raise ValueError(f"negative duration {duration_s!r}")
    return Segment(float(duration_s), rate_from_cores(cores, billing_per_core, usage_factor))


def trajectory(
    u0: float,
    halving: float,
    lam: float,
    plan: Sequence[Segment | tuple[float, float]],
    times: Iterable[float],
    resets: Sequence[float] = (),
) -> list[ForecastPoint]:
    """u and F at `times` (seconds from now) for a campaign `plan` started now from usage u0.

    The plan is consecutive (duration_s, rate) segments; after it ends the usage only decays.
    `resets` (seconds from now, PriorityUsageResetPeriod: model.usagereset): slurmctld sets the
    usage to 0 there, and it grows from 0 again with what of the plan is left.
    """
    segs = [(s.duration_s, s.rate) if isinstance(s, Segment) else (float(s[0]), float(s[1])) for s in plan]
    ts = list(times)
    cuts = sorted(r for r in resets if r > 0)
    if not cuts:
        us = piecewise_usage(u0, segs, lam, ts)
        return [ForecastPoint(t, u, fairshare_at(u, halving)) for t, u in zip(ts, us)]
    out = []
    for t in ts:
        r = max((c for c in cuts if c <= t), default=None)
        if r is None:
            u = piecewise_usage(u0, segs, lam, [t])[0]
        else:
            u = piecewise_usage(0.0, _after(segs, r), lam, [t - r])[0]
        out.append(ForecastPoint(t, u, fairshare_at(u, halving)))
    return out


def _after(segs: list[tuple[float, float]], start: float) -> list[tuple[float, float]]:
    """The plan's segments from `start` seconds on."""
    out, t = [], 0.0
    for dur, rate in segs:
        if t + dur > start:
            out.append((t + dur - max(t, start), rate))
        t += dur
    return out


def idle_time_to_fairshare(u0: float, halving: float, lam: float, target: float) -> float:
    """Seconds of idling (u = u0 e^{-lam t}) until F reaches `target`; 0 if it already has.

    inf if it never does (no decay)."""
    u_target = usage_for_fairshare(target, halving)
    if u0 <= u_target:
        return 0.0
    if lam <= 0 or u_target <= 0:
        return math.inf  # F = 1 needs u = 0: only reached in the limit
    return math.log(u0 / u_target) / lam


def total_held(published: dict, d: float) -> bool:
    """Whether the agent holds the halving (S_ref d U) as usage grows, by the published snapshot:
    it controls the cluster (a method and a target), acts (not a dry run, not turned off by
    `control off`; a file from before that was published: assumed so), and d is not at its floor
    (1: a growing load is beyond its reach and the total moves; seen on the testbed, seed 1)."""
    method = published.get("control_method")
    if method == "none" or not (published.get("target_core_hours") or method is None):
        return False
    if method in ("damping", "hybrid") and d <= 1:
        return False
    control = published.get("control")
    if not isinstance(control, dict):
        return True
    return bool(control.get("applying")) and not control.get("off")


def usage_to_fairshare(u0: float, halving: float, target: float) -> float:
    """Usage, with no decay, that lowers F from its current value to `target`; 0 if already
    at or below it."""
    return max(0.0, usage_for_fairshare(target, halving) - u0)


def run_time_to_fairshare(u0: float, halving: float, lam: float, rate: float, target: float) -> float:
    """Seconds of running at `rate` (with decay) until F falls to `target`: 0 if it already
    has, inf if the steady state rate/lam never gets there."""
    u_target = usage_for_fairshare(target, halving)
    if u0 >= u_target:
        return 0.0
    if rate <= 0:
        return math.inf
    if lam == 0:
        return (u_target - u0) / rate
    steady = rate / lam
    if steady <= u_target:
        return math.inf
    return math.log((steady - u0) / (steady - u_target)) / lam


def steady_usage(rate: float, lam: float) -> float:
    """The usage a constant rate settles at, c/lambda (Yalim: the stable solution)."""
    return math.inf if lam == 0 else rate / lam


def usage_after(u0: float, rate: float, lam: float, dt: float) -> float:
    """u after dt seconds at a constant rate (closed form)."""
    return ode_step(u0, rate, lam, dt)


# ---------------------------------------------------------------------------- plan strings
# _WHAT, _GPUS and _SLURM_TIME are patterns, compiled by `re` (and cached) when an error message or
# a duration in Slurm's format first needs them: a plan such as 8cpus:1h reads none of them, and
# the three compiled at import cost the forecast's start 2.5 M instructions (callgrind)
_WHAT = r"^(?:(?P<idle>idle)|(?P<n>\d+(?:\.\d+)?)(?:cpus?|cores?))$"  # ASCII digits only (re.ASCII)
# one term of what a job asks for, Slurm's words: 4cpus, 2gpus (or 2gres/gpu), 1node; joined with '+'
_TERM = r"^(?P<n>\d+(?:\.\d+)?)(?P<what>cpus?|cores?|gpus?|gres/gpu|nodes?)$"  # re.IGNORECASE | re.ASCII: compiled on first use
_TRES_OF = {"cpu": "cpu", "cpus": "cpu", "core": "cpu", "cores": "cpu", "gpu": "gres/gpu", "gpus": "gres/gpu",
            "gres/gpu": "gres/gpu", "node": "node", "nodes": "node"}
_GPUS = r"^\d+(?:\.\d+)?\s*(?:gpus?|gres/gpu)$"  # refused with how to bill them (_why)
PLAN_FORM = ("'<N>cpus:<duration>' or 'idle:<duration>' (GPUs: '<N>cpus+<M>gpus:<duration>'), a duration with a unit s, m, h, d, w or in Slurm's time "
             "format (e.g. '56cpus:14d,idle:3d' or '56cpus:14-0,idle:3-0')")
# Slurm's time formats (sbatch -t): minutes, minutes:seconds, hours:minutes:seconds, days-hours,
# days-hours:minutes, days-hours:minutes:seconds
_SLURM_TIME = r"^(?:(?P<d>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?|(?P<a>\d+)(?::(?P<b>\d+)(?::(?P<c>\d+))?)?)$"


def parse_duration(text: str) -> float:
    """'14d' -> seconds (units s, m, h, d, w), or Slurm's time format: '14-0' (days-hours),
    '1:00:00' (hours:minutes:seconds), '90' (minutes), '1-12:30' (days-hours:minutes)."""
    t = text.strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhdwSMHDW])", t, re.ASCII)
    if m:
        return float(m.group(1)) * UNITS_S[m.group(2).lower()]
    m = re.fullmatch(_SLURM_TIME, t, re.ASCII)
    if m:
        if m.group("d") is not None:
            return (int(m.group("d")) * 86400 + int(m.group("dh")) * 3600 + int(m.group("dm") or 0) * 60
                    + int(m.group("ds") or 0))
        a, b, c = m.group("a"), m.group("b"), m.group("c")
        if c is not None:  # hours:minutes:seconds
            return int(a) * 3600 + int(b) * 60 + int(c)
        if b is not None:  # minutes:seconds
            return int(a) * 60 + int(b)
        return int(a) * 60.0  # minutes
    raise PlanError(f"cannot read duration {text!r}: expected a number with a unit s, m, h, d or w, or Slurm's "
                    "time format (minutes, hours:minutes:seconds, days-hours[:minutes[:seconds]])")


def plan_tres(what: str) -> dict[str, float] | None:
    """What one plan step's job asks for, in Slurm's TRES names: '4cpus+2gpus' -> {cpu: 4,
    gres/gpu: 2, node: 1} (one node unless '<N>nodes' says), '16cpus' -> {cpu: 16, node: 1}.
    None when `what` is not such a list (PlanError when a term repeats)."""
    out: dict[str, float] = {}
    for term in what.split("+"):
        m = re.match(_TERM, term.strip(), re.IGNORECASE | re.ASCII)
        if m is None:
            return None
        tres = _TRES_OF[m.group("what").lower()]
        if tres in out:
            raise PlanError(f"{what!r} names {tres} twice: write each of cpus, gpus, nodes once")
        out[tres] = float(m.group("n"))
    out.setdefault("node", 1.0)
    return out


def parse_plan(text: str, billing_per_core: float = 1.0, usage_factor: float = 1.0,
               rate_of=None) -> list[Segment]:
    """Read a campaign plan: segments separated by commas (or spaces), each
    '<N>cpus:<duration>', '<N>cpus+<M>gpus:<duration>' or 'idle:<duration>', e.g. '56cpus:14d,idle:3d'.

    `rate_of(tres, what)`: the step's rate in billing units a second for the job `tres`
    (plan_tres; forecast.billingplan bills it under the partition's TRESBillingWeights and the QOS's
    UsageFactor). Without it a plan is in CPUs x `billing_per_core` x `usage_factor`, and a GPU is
    refused (no weights to bill it under)."""
    parts = re.sub(r"\s*:\s*", ":", text).replace(",", " ").split()
    if not parts:
        raise PlanError(f"empty plan: expected {PLAN_FORM}")
    out = []
    for i, part in enumerate(parts, 1):
        what, colon, dur_text = part.partition(":")  # the first ':' (Slurm's times have more)
        idle = colon and what.lower() == "idle"
        tres = plan_tres(what) if colon and not idle else None
        if tres is not None and rate_of is None and "cpu" in tres and set(tres) - {"cpu", "node"}:
            raise PlanError(f"plan part {i} {part!r}: GPUs and nodes are billed under the partition's TRESBillingWeights, "
                            "which this forecast does not have (the agent publishes them: an older agent's file, or "
                            "PrivateData=partitions): write the job's billing as cpus, e.g. 4 CPUs + 2 GPUs under "
                            "TRESBillingWeights=CPU=1.0,GRES/gpu=8.0 bill '20cpus' (docs/billing.md)")
        ok = idle or (tres is not None and "cpu" in tres)
        try:
            dur = parse_duration(dur_text) if ok else None
        except PlanError:
            dur = None
        if not ok or dur is None:
            raise PlanError(f"cannot read plan part {i} {part!r}{_why(part)}: expected {PLAN_FORM}")
        if not dur > 0:
            raise PlanError(f"plan part {i} {part!r} lasts no time: a step lasts more than 0")
        if idle:
            rate = 0.0
        else:
            where = f"plan part {i} {part!r}: "
            if "cpu" in tres:
                tres["cpu"] = plan_cpus(_cpu_text(what), where)  # the text as written: its digits in the message
            for name, label in (("gres/gpu", "GPUs"), ("node", "nodes")):
                if name in tres and not (math.isfinite(tres[name]) and tres[name] >= (1 if name == "node" else 0)):
                    raise PlanError(f"{where}{label} per run must be a number of at least {1 if name == 'node' else 0}")
            if rate_of is None:
                rate = rate_from_cores(tres["cpu"], billing_per_core, usage_factor)
            else:
                try:
                    rate = float(rate_of(tres, what))
                except PlanError as e:
                    raise PlanError(f"{where}{e}") from None
        out.append(Segment(dur, rate, None if idle else tres))
    return out


def _cpu_text(what: str) -> str:
    """The CPUs' number as the plan wrote it ('4' of '4cpus+2gpus')."""
    for term in what.split("+"):
        m = re.match(_TERM, term.strip(), re.IGNORECASE | re.ASCII)
        if m and _TRES_OF[m.group("what").lower()] == "cpu":
            return m.group("n")
    return ""


def plan_cpus(text: str, where: str = "") -> float:
    """The CPUs of one run in a plan: a number of at least 1 (an average, e.g. 2.5, is one; no
    CPUs is 'idle:<duration>'). The one rule for the CLI's --plan/--run and the web's planner
    (web.userpage.plan_from); PlanError (exit 2, the web's 400) otherwise."""
    t = str(text).strip()
    if not re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", t, re.ASCII) or float(t) < 1:
        shown = t if len(t) <= 20 else f"{t[:20]}... ({len(t):,} characters)"
        raise PlanError(f"{where}CPUs per run must be at least 1 (idle:<duration> for none), got {shown!r}")
    return float(t)


def plan_tres_safe(what: str) -> dict | None:
    try:
        return plan_tres(what)
    except PlanError:
        return None


def _why(part: str) -> str:
    """Which side of one plan part is wrong, for the error message."""
    if ":" not in part:
        return " (no single ':' between what runs and for how long)"
    what, _, dur = part.partition(":")
    if re.match(_GPUS, what, re.IGNORECASE | re.ASCII):
        return (f" ({what!r} names no CPUs: write them too, e.g. '4cpus+{what}', billed under the partition's "
                "TRESBillingWeights; where the forecast has none, write the job's billing as cpus: 4 CPUs + 2 GPUs under "
                "TRESBillingWeights=CPU=1.0,GRES/gpu=8.0 bill '20cpus', or '16cpus' under PriorityFlags=MAX_TRES; "
                "docs/billing.md)")
    if not re.match(_WHAT, what, re.IGNORECASE | re.ASCII) and what.lower() != "idle" and plan_tres_safe(what) is None:
        return f" ({what!r} is neither '<N>cpus' nor 'idle')"
    if plan_tres_safe(what) is not None and "cpu" not in plan_tres_safe(what):
        return f" ({what!r} names no CPUs: write them too, e.g. '4cpus+{what}')"
    try:
        parse_duration(dur)
    except PlanError:
        return f" (duration {dur!r} is neither a number with a unit s, m, h, d or w nor Slurm's time format)"
    return ""


# ---------------------------------------------------------------------------- a cluster that keeps running
def path_weights(rows: Sequence, key: tuple[str, str]) -> dict[tuple[str, str], float] | None:
    """Classic EffectvUsage of association `key` as a weighted sum of the NormUsages on its path:
    UE = sum_j w_j UA_j, the weights adding up to 1 (UE = UA + (UE_parent - UA) c, c = s/S_siblings
    = NormShares / the fs parent's NormShares, down from the first tier where UE = UA). `rows`:
    the association and its ancestors' rows (a user's own sshare shows them). None when a row on
    the path is missing."""
    by = {(r.account, r.user): r for r in rows}
    if key not in by:
        return None

    def up(k: tuple[str, str]) -> tuple[str, str] | None:
        r = by[k]
        return (r.account, "") if r.user else ((r.parent, "") if r.parent else None)

    def fs_parent(k):
        p = up(k)
        while p is not None and p in by and by[p].shares_parent:
            p = up(p)
        return p

    weights: dict[tuple[str, str], float] = {}
    carry, k = 1.0, key
    while by[k].shares_parent:  # UE = the fs parent's UE
        k = fs_parent(k)
        if k is None or k not in by:
            return None
    while True:
        p = fs_parent(k)
        if p is None or p not in by:
            return None
        if by[p].depth == 0:  # k is at the first tier: UE = UA
            weights[k] = weights.get(k, 0.0) + carry
            return weights
        s_k, s_p = by[k].norm_shares, by[p].norm_shares
        if not s_k or not s_p:
            return None
        c = s_k / s_p
        weights[k] = weights.get(k, 0.0) + carry * (1 - c)
        carry *= c
        k = p


def project_running(u0: float, total0: float, *, passes: int, period_s: float, half_life_s: float,
                    weighted_jobs: Sequence[tuple[float | None, float, float]],
                    cluster_jobs: Sequence[tuple[float | None, float]] | None,
                    plan: Sequence[Segment] = (), **kw) -> list[tuple[float, float]]:
    """(effective usage, total usage) after each of the next `passes` decay passes, Slurm's way
    (passes.slurm_pass): the forecast starts right after a pass; each pass decays everything by
    f^P and charges each job rate x overlap x f^(pass time - overlap start).

    weighted_jobs: (seconds to the job's limit or None, rate, weight on this user's effective
    usage); cluster_jobs: the same for every running job, to move the total; None holds the total
    (the controller keeps S_ref d U at u*). The user's plan charges both with weight 1. The first
    pass charges the jobs for the interval just past (they were running then too) -- the
    EffectvUsage sshare shows lags RawUsage by that one pass.

    Inside a pass (priority_multifactor.c, `_decay_thread`): the accounts' EffectvUsage is
    computed as the pass starts, but a user's own term (weight `self_weight`) only when the pass
    reaches the user's pending job in slurmctld's job list, after the running jobs listed before
    it (older jobs) have been charged. So that term reads this pass's charges of those jobs:
    `own_early` (the user's own, among `own_jobs`, the user's running jobs) in its numerator, and
    `early_jobs` (every job listed before it, on the whole cluster) in the total below it; `own0` is
    the user's RawUsage at the snapshot. On a production half-life one pass's charge is a few
    hundredths of a percent of the usage; on a 5-minute half-life it is several percent.

    Computed by forecast.projection.Projection in closed form between events (O(jobs log jobs),
    whatever `passes`); the step-by-step walk it replaced is the tests' reference
    (tests/forecast_reference.py)."""
    from fscontrol.forecast.projection import Projection

    p = Projection(u0, total0, period_s=period_s, half_life_s=half_life_s, weighted_jobs=weighted_jobs,
                   cluster_jobs=cluster_jobs, plan=plan, **kw)
    return [p.at(k) for k in range(passes)]
