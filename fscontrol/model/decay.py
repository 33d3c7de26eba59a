"""Usage decay and charging: the decay factor, the continuous ODE, and sacct inflow (Slurm's
own step model, pass by pass, the tests' and the fit's reference: fscontrol.model.passes).

Pure and stdlib-only (forecast.py builds on it on the CLI's cold-start path).

Slurm 22.05 classic (verified against a real slurmctld, slurm-testbed README section 5):
every PriorityCalcPeriod a decay pass multiplies every association's usage by f^dt,
f = 1 - 0.693/T per second (T = PriorityDecayHalfLife in seconds, dt = seconds since the last
pass), then charges each running job dt_j * billing * UsageFactor * f^dt_j, with
dt_j = pass time - max(last pass, job start). With `limits` in AccountingStorageEnforce the job
end charges the tail the same way; without it the tail is lost.

Continuously this is du/dt = c(t) - lambda*u with lambda = -ln(1 - 0.693/T) (Yalim eq. 8).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the forecast imports this module and builds no Snapshot
    from fscontrol.records import JobRecord
    from fscontrol.snaprecords import QosRow, Snapshot

LN2 = math.log(2.0)


def decay_factor_per_second(half_life_s: float) -> float:
    """Slurm's per-second factor f = 1 - 0.693/T (1.0 when T = 0: no decay)."""
    if half_life_s == 0:
        return 1.0
    if half_life_s <= 0.693:
        raise ValueError(f"half-life must be 0 (no decay) or > 0.693 s, got {half_life_s!r}")
    return 1.0 - 0.693 / half_life_s


def next_pass(last_pass: float, period_s: float, after: float) -> float:
    """The first decay pass later than `after`. slurmctld's decay thread wakes every
    PriorityCalcPeriod from when it started (`abs.tv_sec += calc_period`), so the passes fall on
    last_pass + k * period."""
    if period_s <= 0:
        raise ValueError(f"PriorityCalcPeriod must be positive, got {period_s!r}")
    k = max(1, math.floor((after - last_pass) / period_s) + 1)
    return last_pass + k * period_s


def decay_lambda(half_life_s: float) -> float:
    """The decay rate Slurm really applies, per second: -ln(1 - 0.693/T); 0 for T = 0.

    Slurm's 0.693 for ln 2 makes the effective half-life ln2/lambda a little shorter than T
    (299.72 s for T = 300 s; 0.02% short for a week).
    """
    return -math.log(decay_factor_per_second(half_life_s))


def effective_half_life(half_life_s: float) -> float:
    """ln2 / decay_lambda(T): the half-life Slurm's decay actually has (inf for T = 0)."""
    lam = decay_lambda(half_life_s)
    return LN2 / lam if lam > 0 else math.inf


# ---------------------------------------------------------------------------- a pass's usage from a read
def usage_read_at_pass(read: float, read_at: float, pass_at: float, ended: Iterable[tuple[float, float, float]],
                       half_life_s: float) -> float:
    """The usage a decay pass at `pass_at` started from, given a read of it (`read`, taken at
    `read_at` before the pass): RawUsage moves between passes only when a job ends (with `limits`,
    its last stretch is charged at once), so the pass read `read` plus the tail of every job that
    ended in (read_at, pass_at]. `ended`: (charged_from, end, rate) each, charged_from the later
    of the job's start and the pass before, rate = billing x UsageFactor; the tail is charged as
    at a pass, (end - from) x rate x f^(end - from). Pure."""
    f = decay_factor_per_second(half_life_s)
    u = float(read)
    for start, end, rate in ended:
        if read_at < end <= pass_at and end > start:
            u += (end - start) * rate * f ** (end - start)
    return u


# ---------------------------------------------------------------------------- the ODE
def ode_step(u0: float, rate: float, lam: float, dt: float) -> float:
    """Exact solution of du/dt = rate - lam*u after dt (Yalim eq. 9); u0 + rate*dt if lam = 0."""
    if lam == 0:
        return u0 + rate * dt
    return rate / lam + (u0 - rate / lam) * math.exp(-lam * dt)


def piecewise_usage(
    u0: float, segments: Sequence[tuple[float, float]], lam: float, times: Iterable[float]
) -> list[float]:
    """u(t) for du/dt = c(t) - lam*u with c piecewise constant.

    `segments` are consecutive (duration_s, rate) pieces starting at t = 0; after the last
    one the rate is 0. `times` are seconds since t = 0 (>= 0), in any order.
    """
    bounds = [0.0]
    start_u = [u0]
    for dur, rate in segments:
        if dur < 0:
            raise ValueError(f"negative segment duration {dur!r}")
        start_u.append(ode_step(start_u[-1], rate, lam, dur))
        bounds.append(bounds[-1] + dur)
    out = []
    for t in times:
        if t < 0:
            raise ValueError(f"time before the start of the plan: {t!r}")
        i = 0
        while i < len(segments) and t >= bounds[i + 1]:
            i += 1
        rate = segments[i][1] if i < len(segments) else 0.0
        out.append(ode_step(start_u[i], rate, lam, t - bounds[i]))
    return out


def decayed_charge(rate: float, start: float, end: float, at: float, lam: float) -> float:
    """What a charge of `rate` over [start, end) is worth at time `at` >= end after decay:
    rate * (e^{-lam (at-end)} - e^{-lam (at-start)}) / lam."""
    if end <= start:
        return 0.0
    if lam == 0:
        return rate * (end - start)
    return rate * (math.exp(-lam * (at - end)) - math.exp(-lam * (at - start))) / lam


# ---------------------------------------------------------------------------- sacct inflow
def job_charge(job: JobRecord, usage_factor: float = 1.0, window: tuple[float, float] | None = None) -> float:
    """billing x elapsed x UsageFactor for one allocation, undecayed.

    Without `window` the elapsed time is the record's own (sacct -T already clipped it to its
    query window). With `window` the job's start/end are clipped to it; a job still running
    (no end) runs to the window's end.
    """
    if window is None:
        elapsed = max(0.0, job.elapsed_s)
    elif job.start is None:
        elapsed = 0.0
    else:
        t1, t2 = window
        end = t2 if job.end is None else min(job.end, t2)
        elapsed = max(0.0, end - max(job.start, t1))
    return job.billing * elapsed * usage_factor


def usage_factors(qos: Iterable[QosRow]) -> dict[str, float]:
    """QOS name -> UsageFactor, from `sacctmgr show qos` rows."""
    return {q.name: q.usage_factor for q in qos}


def inflow(
    jobs: Iterable[JobRecord],
    usage_factors: Mapping[str, float],
    window: tuple[float, float] | None = None,
    default_factor: float = 1.0,
) -> dict[tuple[str, str], float]:
    """Per (account, user): billing x clipped elapsed x QOS UsageFactor, summed (undecayed).

    A QOS missing from `usage_factors` counts with `default_factor` (Slurm's default 1.0).
    Only user associations are keyed; the ancestors' inflow is the sum of their users'.
    """
    out: dict[tuple[str, str], float] = {}
    for j in jobs:
        c = job_charge(j, usage_factors.get(j.qos, default_factor), window)
        if c:
            k = (j.account, j.user)
            out[k] = out.get(k, 0.0) + c
    return out


def arrival_inflow(visits: Iterable[tuple[str, str, float, float, float, float | None]], first: float, last: float,
                   tick: float, q: float | None = None
                   ) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]]:
    """The submissions' inflow over a window of snapshots from `first` to `last` (`tick` apart),
    per (account, user): the work the jobs that started in it bring, per second (billing-seconds
    per second, the c of du/dt = c - lambda u), and the variance of that rate. `visits`: each job
    seen running as (account, user, rate, first seen, last seen, seconds to its limit when last
    seen or None). A job started in the window if it was not running at its first snapshot; it
    started half a tick before it was first seen, it ended half a tick after it was last seen (if
    it is not running at the last), else it runs on for q x its time to its limit (its typical
    end; q = 1 when not known, 0 without a limit). Jobs arrive independently (a Poisson stream):
    the variance is the sum of the squares of their parts. Counting arrivals, not what runs, reads
    a load that grows where it has grown to."""
    rates: dict[tuple[str, str], float] = {}
    variances: dict[tuple[str, str], float] = {}
    span = last - first
    if span <= 0:
        return rates, variances
    q = 1.0 if q is None else q
    for account, user, rate, seen0, seen1, to_limit in visits:
        if seen0 <= first:
            continue  # running before the window: its work came earlier
        start = seen0 - tick / 2
        end = seen1 + tick / 2 if seen1 < last else last + (0.0 if to_limit is None else q * to_limit)
        x = float(rate) * max(0.0, end - start) / span
        rates[(account, user)] = rates.get((account, user), 0.0) + x
        variances[(account, user)] = variances.get((account, user), 0.0) + x * x
    return rates, variances


def left_ratio(pairs: Iterable[tuple[float, float]]) -> float | None:
    """How much of the time to its limit a running job typically still runs: from (time to its
    limit, time it actually ran on) of jobs seen running that have ended since, the ratio of the
    sums (the long stretches weigh most). None without such a job. Jobs still running are left
    out (their end is not known yet): a window shorter than the jobs reads the short ones only."""
    lim = ran = 0.0
    for to_limit, ran_on in pairs:
        if to_limit > 0:
            lim += to_limit
            ran += min(max(ran_on, 0.0), to_limit)
    return None if lim <= 0 else ran / lim


def root_used_by_accounts(raw_before: Mapping[str, float], snap: Snapshot, min_effective: float = 0.01) -> float | None:
    """Root's usage as the pass used it, read from the top-level accounts (issue 30 item 2): a
    classic pass sets each account's EffectvUsage to its RawUsage over root's, both as they stand
    when the pass starts (priority_multifactor.c: _set_children_usage_efctv runs before the decay
    and the running jobs' charges). So an account's RawUsage at the last read before the pass over
    its EffectvUsage after it is root's usage at the pass exactly when no job of that account
    ended in between, and less when one did (its tail is charged at its end). The largest over the
    top-level accounts (not FairShare=parent; EffectvUsage >= `min_effective`, where sshare's six
    decimals are within 0.005 points) is a lower bound that is exact as soon as one account had no
    job ending in those seconds; it needs no job's end time, whose whole second cannot tell a job
    that ended just before the pass from one that ended just after. `raw_before`: each top-level
    account's RawUsage at that read (the trim's, or the control tick's snapshot). None under Fair Tree or depth
    oblivious (another EffectvUsage), or without such an account."""
    if snap.config.mode != "classic":
        return None
    best = None
    for r in snap.shares:
        if r.depth != 1 or r.user or r.shares_parent or r.effective_usage is None or r.effective_usage < min_effective:
            continue
        raw = raw_before.get(r.account)
        if raw:
            u = raw / r.effective_usage
            best = u if best is None else max(best, u)
    return best


def halving_used(previous: Mapping[str, Any], snap: Snapshot, before: Sequence[tuple], read: Mapping[str, Any] | None,
                 ended_since: Callable[[float, float], Iterable[tuple]],
                 damping_at: Callable[[float | None], int]) -> tuple[float | None, float | None]:
    """The halving Slurm's priorities used at the decay pass between the previous decision and
    this snapshot, if one ran: S_ref x the d in force now x the total usage that pass started
    from (EffectvUsage is computed from the usage the pass before left). A pass shows as any
    user's EffectvUsage moving. (None, None) when no pass ran in between, or when more than one
    did (a restart's start-up pass and a regular one: what the first read is not known).

    The usage the pass started from (issue 30): the agent's last read before the pass (`read`,
    agent_state pass_read: the control tick's, or the trim's if it read later and finished before
    the pass), plus the tail every job that ended between that read and the pass was charged at
    its end (usage_read_at_pass, from the jobs sacct shows in the snapshots since:
    `ended_since(from, to)`, each (job id, qos, billing, cpus, start, end) ended in [from, to)).
    Where the pass's time cannot be read (slurmctld's record not readable here) the control
    tick's read alone. `previous`: the previous decision (its snapshot_id, s_ref); `before`: the
    usage rows of its snapshot, (account, user, depth, raw_usage, effective_usage); `damping_at(pass
    time)`: the d slurmctld held at the pass (None: its time not known)."""
    ue_before = {(a, u): eff for a, u, _, _, eff in before if u}
    ue_now = {r.key: r.effective_usage for r in snap.shares if r.user}
    if ue_before == ue_now or previous.get("s_ref") is None:
        return None, None
    root = next((r for r in before if r[2] == 0), None)  # one root a cluster (parse_sshare: depth 0 is root alone)
    if root is None:
        return None, None
    used = float(root[3])
    pass_at = snap.usage_at
    if read and read.get("snapshot_id") == previous["snapshot_id"] and read.get("raw") is not None and pass_at is not None:
        period = snap.config.calc_period_s
        control_at = float(read.get("control_at", read["at"]))
        p_before = read.get("pass_before")
        if pass_at - control_at > period + 1.0 or (p_before is not None and pass_at - float(p_before) > period + 1.5):
            # more than one pass since the pass before the read (a restart's start-up pass and a
            # regular one): which one read what is not known
            return None, None
        read_at, raw = float(read["at"]), float(read["raw"])
        if read_at > pass_at:  # the trim's read finished after the pass: the control tick's
            read_at, raw = control_at, float(read.get("control_raw", raw))
        p0 = read.get("pass_before")
        p0 = float(p0) if p0 is not None else pass_at - period
        started = read.get("running") or {}
        by_control = read_at == control_at
        mid = float(read.get("mid", read_at)) if not by_control else read_at
        uf = {q.name: q.usage_factor for q in snap.qos}
        ended = {}
        for job_id, qos, billing, cpus, start, end in ended_since(math.floor(read_at) - 1, pass_at):
            t0 = started.get(job_id, start)
            if t0 is None:
                continue
            # sacct's End is a whole second (the job ended within the second after it). A job that
            # ended in the pass's own second ended after the pass began (seen on the testbed: 6 of 6
            # such jobs in a busy run were not in what the pass read). A job the
            # control tick's squeue (run after its sshare) still saw running ended after that read;
            # otherwise it ended after a read that ran before End + 0.5 s (mid: the read's midpoint)
            if not ((by_control and job_id in started) or float(end) + 0.5 >= mid):
                continue
            ended[job_id] = (max(float(t0), p0), float(end), float(billing or cpus or 0) * uf.get(qos, 1.0))
        used = usage_read_at_pass(raw, -math.inf, pass_at, ended.values(), snap.config.half_life_s)
        trim_top = read.get("top_raw") if not by_control else None
        if trim_top and len(trim_top) >= 2:
            # the trim read the top-level accounts a second before the pass: one of them no job
            # touched in that second gives root's usage at the pass exactly (no job's end time needed)
            by_accounts = root_used_by_accounts(trim_top, snap)
            if by_accounts is not None:
                return previous["s_ref"] * damping_at(pass_at) * by_accounts, snap.taken_at
    by_accounts = root_used_by_accounts({a: float(raw) for a, u, depth, raw, _ in before if not u and depth == 1}, snap)
    if by_accounts is not None and by_accounts > used:
        used = by_accounts  # a job ended after the last read but before the pass (in the pass's own second)
    return previous["s_ref"] * damping_at(pass_at) * used, snap.taken_at
