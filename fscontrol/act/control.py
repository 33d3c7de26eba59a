"""Keep fair-share halving at the admin's target u* (Yalim, PEARC'20, section 2). Pure.

For a user of share S the factor halves every H = S * d * U of usage, U being root's RawUsage
(real usage plus the dummy's padding w). The admin states u* for a reference share S_ref; the
controller picks d and/or w so that S_ref * d * (U_real + w) = u*:

* damping: d = round(u* / (S_ref * U_real)) in 1..65535, with hysteresis (d moves only when the
  ideal is more than 0.5 + hysteresis steps away), so H misses u* by at most (0.5 + h) / d_ideal;
* padding: w = u* / (S_ref * d) - U_real at the d in force (w >= 0: padding can only soften);
* hybrid: d = floor of the ideal (so w >= 0) for the coarse step, padding for the rest: exact.

When each part of a decision takes effect (classic, slurmctld's decay thread, read from
priority_multifactor.c): a pass computes the factors from the usage as it stands when the pass
starts (the accounts' EffectvUsage first; a user's at their first pending job, a ratio that decay
leaves alone) and the d in force at that moment, then decays and charges the running jobs. So:

* d set now acts at the coming pass, on the usage there is now (U_now: real + padding, all known):
  d is chosen for U_now, and a burst that has just been charged costs only d's rounding,
  at most 0.5 / d_ideal, at its first pass;
* padding charged at the coming pass is in the usage the pass after it reads: it is planned for
  the usage after the next pass (real usage decays by f^P, running jobs add P * billing * f^P;
  decay.py) and for the d that pass will want (`d_next`).

Padding is delivered by real jobs of the dummy association (RawUsage can only be reset to 0):
* steady: one long 1-CPU dummy job in a QOS whose UsageFactor k is set each tick so that the
  next pass brings w to its target: w_next = w f^P + P b k f^P (closed loop on the measured w);
* pulse (Yalim): when w has decayed more than a threshold below target, a short dummy job whose
  UsageFactor delivers the deficit in about one pass.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from collections.abc import Iterable, Sequence

from fscontrol.model.decay import decay_factor_per_second
from fscontrol.records import ShareRow
from fscontrol.snaprecords import QueueJob

D_MAX = 65535  # FairShareDampeningFactor is a uint16 in Slurm


@dataclass(frozen=True, slots=True)
class Decision:
    """What the controller wants, why, and what it expects."""

    method: str
    u_star: float  # billing-seconds
    s_ref: float | None
    u_real: float  # root RawUsage minus the dummy's
    u_real_next: float  # predicted after the next decay pass
    w_now: float  # the dummy's RawUsage
    d_now: int  # in force in slurmctld
    d_target: int
    d_ideal: float | None
    w_target: float  # padding wanted after the next pass
    usage_factor: float | None  # steady: QOS UsageFactor for the dummy job
    pulse_usage_factor: float | None  # pulse: UsageFactor for a short dummy job, None = no pulse
    h_now: float | None  # S_ref * d_now * (U_real + w_now)
    h_planned: float | None  # S_ref * d_target * (U_real_next + w_target)
    bound: float | None  # damping: the relative error integer d (and hysteresis) may leave
    advise_only: bool
    notes: tuple[str, ...] = ()
    d_next: int | None = None  # the d the padding is planned for (the pass after the coming one)

    @property
    def error_now(self) -> float | None:
        return None if self.h_now is None or not self.u_star else self.h_now / self.u_star - 1

    @property
    def h_next(self) -> float | None:
        """The halving the coming pass will use once d_target is set: S_ref x d_target x the usage
        read (the coming pass reads it, plus what jobs ending before it charge)."""
        return None if not self.s_ref else self.s_ref * self.d_target * (self.u_real + self.w_now)

    @property
    def error_next(self) -> float | None:
        return None if self.h_next is None or not self.u_star else self.h_next / self.u_star - 1

    @property
    def error_planned(self) -> float | None:
        return None if self.h_planned is None or not self.u_star else self.h_planned / self.u_star - 1


def clamp_d(d: float) -> int:
    return int(min(D_MAX, max(1, d)))


def choose_damping(d_ideal: float, d_now: int, hysteresis: float) -> int:
    """Nearest integer d, kept at d_now while the ideal stays within 0.5 + hysteresis of it."""
    if abs(d_now - d_ideal) <= 0.5 + hysteresis and 1 <= d_now <= D_MAX:
        return d_now
    return clamp_d(round(d_ideal))


def choose_hybrid_damping(d_ideal: float, d_now: int, d_seamless: int) -> int:
    """Hybrid's integer d for the pass the padding is planned for: the largest d at which padding
    can still make H exact, `d_seamless` (the largest d at which the padding left after the next
    pass's decay is not more than that d needs), and never above the floor of the ideal (padding
    >= 0). Padding cannot be taken back, it only decays: a d above d_seamless leaves surplus
    padding and H above u* for as long as the surplus takes to decay (measured on the testbed:
    100% over u*, still 27% five passes later, when d stepped up past it; +5.6% when real usage
    grew faster than the padding decayed and d stepped down only to the floor of its ideal, issue
    30). So d rises when real usage grows into the padding, falls as far as the padding left
    requires, and otherwise padding keeps making up the rest, exactly. (`d_now`: kept for the
    callers; the choice no longer depends on it.)"""
    return clamp_d(min(math.floor(d_ideal), d_seamless))


def job_rate(j: QueueJob, usage_factors: dict[str, float], billings: dict[str, float] | None = None) -> float:
    """What a running job adds to RawUsage a second: its billing (sacct's AllocTRES `billing=`,
    `billings` by job id: TRESBillingWeights, GPUs) times its QOS UsageFactor; its CPUs where the
    billing is not known (no TRESBillingWeights: billing is the CPUs)."""
    bill = billings.get(j.job_id) if billings else None
    return (j.cpus if bill is None else bill) * usage_factors.get(j.qos, 1.0)


def predict_real_usage(u_real: float, running: Iterable[QueueJob], period_s: float, half_life_s: float, usage_factors: dict[str, float],
                       billings: dict[str, float] | None = None) -> float:
    """Real usage after the next pass: decay, plus each running job's charge for one period
    (job_rate: its billing where known, else its CPUs)."""
    if half_life_s <= 0 or period_s <= 0:
        return u_real
    fp = decay_factor_per_second(half_life_s) ** period_s
    charge = sum(job_rate(j, usage_factors, billings) for j in running) * period_s * fp
    return u_real * fp + charge


def expected_tail(rate: float, now: float, to_limit: float | None, pass_at: float, next_pass_at: float,
                  left_ratio: float | None, f: float = 1.0) -> float:
    """The charge a running job is expected to bring to the usage the pass at `next_pass_at`
    reads by ending between `pass_at` and it (with `limits`, a job's end charges its tail since
    the last pass at once; a job still running at `next_pass_at` is charged by that pass, after
    its read). The time R it still runs has the history's mean, `left_ratio` q of the time to its
    limit t_L: uniform on [0, 2 q t_L] for q <= 1/2; for q > 1/2 uniform on [0, t_L] with weight
    2 (1 - q) and at the limit with the rest; at the limit when q is not known (no job seen to end:
    the jobs run to their limits, as the forecast takes them). Its tail is decayed as at a pass
    (f^tail at the tail's mean). No limit: 0."""
    if to_limit is None or to_limit <= 0 or rate <= 0:
        return 0.0
    a, b = pass_at - now, next_pass_at - now
    if a < 0:  # (the pass is already past: not a case the controller plans for)
        return 0.0
    q = 1.0 if left_ratio is None else min(1.0, max(0.0, left_ratio))
    if q <= 0.5:
        w_uniform, m = 1.0, max(2.0 * q * to_limit, 1e-9)
    else:
        w_uniform, m = 2.0 * (1.0 - q), to_limit
    tail = 0.0
    hi = min(b, m)
    if w_uniform > 0 and hi > a:
        tail += w_uniform * (hi - a) ** 2 / (2.0 * m) * f ** ((hi - a) / 2.0)
    if w_uniform < 1 and a < to_limit <= b:  # ends at its limit
        tail += (1.0 - w_uniform) * (to_limit - a) * f ** (to_limit - a)
    return rate * tail


def predict_read_at_next_pass(u_real: float, running: Iterable[QueueJob], *, now: float, last_pass: float, pass_at: float,
                              next_pass_at: float, half_life_s: float, usage_factors: dict[str, float],
                              left_ratio: float | None = None, billings: dict[str, float] | None = None) -> tuple[float, float]:
    """The real usage the pass after the coming one (at `next_pass_at`) will read, planned from the
    jobs running `now` (issue 30): the usage decayed at the coming pass (`pass_at`, the pass before
    it at `last_pass`), each running job charged there for what it ran since the later of its
    start and `last_pass` (not a whole period: a job that started a few seconds ago is charged a
    few seconds), plus the expected tail of the jobs that end between the two passes
    (expected_tail). Returns (that usage, the expected tails alone). Each job at job_rate (its
    billing where `billings` has it, else its CPUs)."""
    f = decay_factor_per_second(half_life_s) if half_life_s > 0 else 1.0
    u = u_real * f ** max(0.0, pass_at - last_pass)
    tails = 0.0
    for j in running:
        rate = job_rate(j, usage_factors, billings)
        ran = pass_at - max(last_pass, j.start if j.start is not None else last_pass)
        if ran > 0:
            u += rate * ran * f ** ran
        to_limit = None if j.time_limit_s is None or j.start is None else j.start + j.time_limit_s - now
        tails += expected_tail(rate, now, to_limit, pass_at, next_pass_at, left_ratio, f)
    return u + tails, tails


def plan_control(
    shares: Sequence[ShareRow],
    *,
    method: str,
    u_star: float,
    d_now: int,
    d_last: int | None = None,
    half_life_s: float,
    calc_period_s: float,
    dummy: tuple[str, str] | None,
    s_ref: float | None,
    running_real: Sequence[QueueJob] = (),
    usage_factors: dict[str, float] | None = None,
    hysteresis: float = 0.25,
    padding_mode: str = "steady",
    padding_threshold: float = 0.02,
    dummy_billing: float = 1.0,
    advise_reason: str | None = None,
    d_max: int = D_MAX,
    passes: tuple[float, float, float] | None = None,
    left_ratio: float | None = None,
    billings: dict[str, float] | None = None,
) -> Decision:
    """The controller: from one snapshot, the d and padding that keep S_ref * d * U at u*.

    `d_now` is the d slurmctld holds; `d_last` the d the agent set last (hysteresis is kept
    around it, and a d_now that differs from it was reverted by a reconfigure or restart).
    `d_max` (config max_damping) bounds the d it sets: on a cold cluster (little usage yet) the
    ideal d is huge (24,815 at the testbed's first tick), and a d that large is what a restart,
    a stopped agent or slurm.conf (persist) would keep. Below it, damping's H falls short of u*
    (fair-share stronger than asked) until usage grows to u* / (S_ref d_max); padding and hybrid
    make up the rest with padding.
    `passes`: (now, the last pass, the coming pass) where slurmctld's pass times are known: the
    usage the pass after the coming one reads is then planned job by job
    (predict_read_at_next_pass, with `left_ratio` for the jobs that end before it); else one
    whole period of every running job (predict_real_usage). `billings`: the running jobs' billing
    by job id (job_rate); `dummy_billing`: what the padding job bills a second."""
    notes: list[str] = []
    d_hold = d_last if d_last is not None else d_now
    if d_last is not None and d_last != d_now:
        notes.append(f"d in slurmctld is {d_now}, the agent had set {d_last}: reverted (reconfigure or restart?)")
    root = next((r for r in shares if r.depth == 0), None)
    total = float(root.raw_usage) if root else 0.0
    w_now = float(next((r.raw_usage for r in shares if r.key == dummy), 0.0)) if dummy else 0.0
    u_real = max(0.0, total - w_now)
    uf = usage_factors or {}
    tails = 0.0
    if passes is not None and calc_period_s > 0 and passes[1] < passes[0] < passes[2]:
        now_t, last_pass, coming = passes
        u_next, tails = predict_read_at_next_pass(u_real, running_real, now=now_t, last_pass=last_pass, pass_at=coming,
                                                  next_pass_at=coming + calc_period_s, half_life_s=half_life_s,
                                                  usage_factors=uf, left_ratio=left_ratio, billings=billings)
    else:
        u_next = predict_real_usage(u_real, running_real, calc_period_s, half_life_s, uf, billings)
    h_now = s_ref * d_now * total if s_ref else None

    def decision(**kw) -> Decision:
        base = dict(
            method=method, u_star=u_star, s_ref=s_ref, u_real=u_real, u_real_next=u_next, w_now=w_now,
            d_now=d_now, d_target=d_now, d_ideal=None, w_target=0.0, usage_factor=None, pulse_usage_factor=None,
            h_now=h_now, h_planned=h_now, bound=None, advise_only=advise_reason is not None, notes=tuple(notes),
        )
        base.update(kw)
        return Decision(**base)

    if advise_reason:
        notes.append(f"advice only: {advise_reason}")
    if method == "none":
        notes.append("method = none: reporting only")
        return decision()
    if not s_ref:
        notes.append("no reference share (no user with shares): nothing to control")
        return decision(advise_only=True)
    if u_next <= 0:
        notes.append("no real usage yet: H = S_ref * d * U is 0 whatever d is; waiting for usage")
        return decision(w_target=0.0)

    d_ideal = u_star / (s_ref * u_next)  # for the usage after the coming pass: what padding plans for
    d_ideal_now = u_star / (s_ref * total) if total > 0 else d_ideal  # for the coming pass
    d_max = max(1, min(int(d_max), D_MAX))
    capped = d_ideal_now > d_max
    if capped:
        cap = "Slurm's maximum" if d_max == D_MAX else "max_damping"
        notes.append(f"d would be {d_ideal_now:,.0f}, above {cap} {d_max} (a cold start: little usage yet): d = {d_max}"
                     + (", padding makes up the rest" if method in ("padding", "hybrid") else
                        f"; H is {d_max / d_ideal_now:.0%} of u* until usage reaches "
                        f"{u_star / (s_ref * d_max) / 3600:,.2f} core-hours"))
        d_ideal_now = float(d_max)
    d_ideal_unbounded = d_ideal  # what the Decision reports (the plan's reason, history)
    d_ideal = min(d_ideal, float(d_max))
    if d_ideal < 1:
        notes.append(
            f"u* is below what d=1 allows (H at d=1, no padding = {s_ref * u_next / 3600:,.2f} core-hours): "
            "padding cannot sharpen fair-share; d=1, no padding"
        )

    d_next = None
    if method == "damping":
        d = min(choose_damping(d_ideal_now, d_hold, hysteresis), d_max)
        w_target = 0.0
        bound = (0.5 + hysteresis) / d_ideal_now if d_ideal_now >= 1 and not capped else None
    elif method == "padding":
        d = d_hold
        w_target = u_star / (s_ref * d) - u_next
        bound = None
    elif method == "hybrid" and padding_mode == "trim":
        # the padding lands in the coming pass's own read, chosen at the trim (trim_padding), with d
        # the floor of the ideal on its later read; here the nearest d, what the pass gets if no trim runs
        d = clamp_d(round(d_ideal_now)) if d_ideal_now >= 1 else 1
        if d != d_hold:
            notes.append(f"d for the coming pass: {d} (ideal {d_ideal_now:.2f} on the usage there is now); the trim "
                         "sets the floor of its ideal and pads the rest into the same pass's read")
        w_target = 0.0
        bound = 0.5 / d_ideal_now if d_ideal_now >= 1 else None
    elif method == "hybrid":
        fp = decay_factor_per_second(half_life_s) ** calc_period_s if half_life_s > 0 else 1.0
        left = u_next + w_now * fp  # the padding there now, after the next pass's decay
        d_seamless = clamp_d(math.floor(u_star / (s_ref * left))) if left > 0 else D_MAX
        # the coming pass reads the usage there is now: the nearest d (padding cannot change it any more)
        d = clamp_d(round(d_ideal_now)) if d_ideal_now >= 1 else 1
        # the pass after it: the d the padding is planned for (never above the ideal, so padding >= 0)
        d_next = choose_hybrid_damping(d_ideal, d, d_seamless) if d_ideal >= 1 else 1
        if d != d_hold:
            notes.append(f"d for the coming pass: {d} (ideal {d_ideal_now:.2f} on the usage there is now); "
                         f"padding planned for d = {d_next} after it")
        w_target = u_star / (s_ref * d_next) - u_next
        bound = 0.5 / d_ideal_now if d_ideal_now >= 1 else None
    else:
        raise ValueError(f"unknown control method {method!r}")
    if w_target < 0:
        if method != "damping" and d_ideal >= 1:
            notes.append("padding would have to be negative: real usage alone already exceeds u*/(S_ref d)")
        w_target = 0.0

    k = None
    pulse_k = None
    if method in ("padding", "hybrid") and padding_mode != "trim":
        fp = decay_factor_per_second(half_life_s) ** calc_period_s if half_life_s > 0 else 1.0
        needed = w_target - w_now * fp  # what the next pass must add
        if padding_mode == "steady":
            k = max(0.0, needed / (calc_period_s * dummy_billing * fp)) if calc_period_s > 0 else 0.0
            if needed < 0:
                notes.append("padding above target: the dummy job idles (UsageFactor 0) while it decays")
        elif w_now < w_target * (1 - padding_threshold):
            pulse_k = max(0.0, needed / (calc_period_s * dummy_billing * fp)) if calc_period_s > 0 else None
    h_planned = s_ref * (d_next or d) * (u_next + w_target)
    return decision(
        d_target=d, d_ideal=d_ideal_unbounded, w_target=w_target, usage_factor=k, pulse_usage_factor=pulse_k,
        h_planned=h_planned, bound=bound, d_next=d_next,
    )


TRIM_K_MAX = 10000.0  # the trim's UsageFactor never above this (a cold start's padding takes passes, not one)
TRIM_MIN_STRETCH_S = 10.0  # below this many billing-seconds of stretch a whole second's error is too large: no padding


@dataclass(frozen=True, slots=True)
class TrimPad:
    """The trim's last word before a pass (padding_mode = "trim", issue 30): d and the padding that
    land in the same pass's read."""

    d: int
    d_ideal: float | None
    x: float  # padding wanted in the pass's read: u* / (S_ref d) - U (billing-seconds, >= 0)
    stretch: float  # what UsageFactor 1 would charge: sum of billing x Delta x f^Delta over the padding jobs
    k: float | None  # the QOS UsageFactor that makes the jobs' end charge x; None = no padding this pass
    note: str = ""


def trim_padding(u_star: float, s_ref: float, total: float, *, jobs: Sequence[tuple[float, float]],
                 half_life_s: float, d_max: int = D_MAX, k_max: float = TRIM_K_MAX) -> TrimPad:
    """d and the padding chosen together so that S_ref x d x (U + x) = u* on the usage the pass
    will read (hybrid, padding_mode = "trim"). Pure.

    U is root's RawUsage read at the trim, just before the pass; d is the floor of the ideal
    u* / (S_ref U) (so x >= 0) and x = u* / (S_ref d) - U, at most one step of d. x is delivered by
    cancelling the padding jobs just before the pass: Slurm 22.05 charges a job's end at once
    (priority_multifactor.c priority_p_job_end -> _apply_new_usage from the last pass to now, with
    `limits`) as Delta x billing x UsageFactor x f^Delta, Delta in whole seconds since the later of
    the job's start and the last pass, f = 1 - 0.693 / half-life, at the UsageFactor its QOS has
    then. `jobs`: (billing, Delta) of each padding job to be cancelled. So k = x / sum(b Delta f^Delta).
    Without a padding job that ran long enough (TRIM_MIN_STRETCH_S: a whole second's error would
    be too large a share), no padding and the nearest d: d's rounding alone, as damping."""
    f = decay_factor_per_second(half_life_s) if half_life_s > 0 else 1.0
    stretch = sum(b * dt * f ** dt for b, dt in jobs if b > 0 and dt > 0)
    if total <= 0 or not s_ref or u_star <= 0:
        return TrimPad(1, None, 0.0, stretch, None, "no usage yet")
    ideal = u_star / (s_ref * total)
    d_cap = max(1, min(int(d_max), D_MAX))
    if ideal < 1:
        return TrimPad(1, ideal, 0.0, stretch, None, "u* below what d = 1 allows: no padding")
    if stretch < TRIM_MIN_STRETCH_S:  # no padding this pass (no job, or pending on a full cluster): d's rounding alone
        return TrimPad(min(clamp_d(round(ideal)), d_cap), ideal, 0.0, stretch, None,
                       f"the padding job has run {stretch:.0f} s since the last pass: too short to pad, the nearest d")
    d = min(clamp_d(math.floor(ideal)), d_cap)
    x = max(0.0, u_star / (s_ref * d) - total)
    k = x / stretch
    note = ""
    if k > k_max:
        note = f"UsageFactor {k:,.1f} capped at {k_max:,.0f}"
        k = k_max
    return TrimPad(d, ideal, x, stretch, k, note)
