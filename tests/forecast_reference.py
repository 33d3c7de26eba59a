"""The slow reference for forecast.projection: Slurm's passes walked one at a time, every
running job at every pass (the forecast's projection before issue #31, plus the inflow terms).
Kept here, independent of the fast closed form, so the tests hold that one to 1e-9."""

from __future__ import annotations

from collections.abc import Sequence

from fscontrol.forecast.classic import Segment


def _overlap(a0: float, a1: float, b0: float, b1: float | None) -> float:
    hi = a1 if b1 is None else min(a1, b1)
    return max(0.0, hi - max(a0, b0))


def project_running(u0: float, total0: float, *, passes: int, period_s: float, half_life_s: float,
                    weighted_jobs: Sequence[tuple[float | None, float, float]],
                    cluster_jobs: Sequence[tuple[float | None, float]] | None,
                    plan: Sequence[Segment] = (),
                    self_weight: float = 0.0, own0: float | None = None,
                    own_early: Sequence[tuple[float | None, float]] = (),
                    own_jobs: Sequence[tuple[float | None, float]] = (),
                    early_jobs: Sequence[tuple[float | None, float]] = (), inflow: float = 0.0,
                    inflow_jobs: Sequence = (), total_inflow: float = 0.0,
                    total_inflow_jobs: Sequence = ()) -> list[tuple[float, float]]:
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
    hundredths of a percent of the usage; on a 5-minute half-life it is several percent."""
    from fscontrol.model.decay import decay_factor_per_second

    f = decay_factor_per_second(half_life_s)
    fp = f**period_s
    bounds = [0.0]
    for seg in plan:
        bounds.append(bounds[-1] + seg.duration_s)

    def charge(jobs, k: int, weighted: bool = False) -> float:
        a0, a1 = (k - 1) * period_s, k * period_s
        c = 0.0
        for job in jobs:
            left, rate = job[0], job[1]
            ov = _overlap(a0, a1, a0 if k == 0 else 0.0, left)
            c += (job[2] if weighted else 1.0) * rate * ov * f ** (a1 - max(a0, 0.0 if k else a0))
        return c

    def plan_charge(k: int) -> float:
        a0, a1 = (k - 1) * period_s, k * period_s
        c = 0.0
        for seg, b0 in zip(plan, bounds):
            ov = _overlap(a0, a1, b0, b0 + seg.duration_s)
            if ov > 0 and seg.rate > 0:
                c += seg.rate * ov * f ** (a1 - max(a0, b0))
        return c

    u, total, out = u0, total0, []
    own = own0
    if self_weight and own0 is not None and total0 > 0:
        # sshare's EffectvUsage is the one the snapshot's pass computed, mid-pass: take that pass's
        # early charges out of its own term, so `u` is the lagged weighted sum the passes advance
        own_prev = (own0 - charge(own_jobs, 0)) / fp
        mid0 = (own_prev * fp + charge(own_early, 0)) / (total0 * fp + charge(early_jobs, 0))
        u = u0 - self_weight * (mid0 - own_prev / total0) * total0
    for k in range(passes):
        pc = plan_charge(k)
        grow = charge(weighted_jobs, k, weighted=True) + pc
        grow_total = charge(cluster_jobs or (), k) + pc
        if k >= 1:  # the submissions that keep coming: from now on, never in the pass just past
            grow += inflow * period_s * fp + charge(inflow_jobs, k)
            grow_total += total_inflow * period_s * fp + charge(total_inflow_jobs, k)
        u = u * fp + grow
        if k > 0 and own is not None:
            own = own * fp + charge(own_jobs, k) + pc
        total_prev = total
        total = total if cluster_jobs is None else total * fp + grow_total
        u_out = u
        if self_weight and own is not None and total_prev > 0:
            # the user's own term as the pass computes it: this pass's early charges already in
            ue_self_lag = own / total
            mid = (own * fp + charge(own_early, k + 1)) / (total * fp + charge(early_jobs, k + 1))
            u_out = u + self_weight * (mid - ue_self_lag) * total
        out.append((u_out, total))
    return out
