"""The hybrid controller in a closed loop against a model of slurmctld's decay pass (classic).

The model follows priority_multifactor.c's `_decay_thread`: a pass computes the factors from the
usage as it stands when the pass starts, with the d in force then, and only after that decays
all usage and charges the running jobs (`run_delta * f^run_delta * billing * UsageFactor`); a job
that ends between passes has its last stretch charged when it ends. The agent's control runs
`lead` seconds before each pass (the loop's pass-aligned job, agent.pass_lead), or every 15 s
(`lead=None`: a tick at an arbitrary phase, as cron's).

What this pins down (the busy-cluster issue's bounds, on a load like the testbed's): settled, H
is exact; a burst that fills the machine costs at most d's rounding (0.5 / d_ideal) at each pass
while it is being charged, and nothing once it has ended.
"""

from __future__ import annotations

import random

from fscontrol import control
from fscontrol.decay import decay_factor_per_second
from fscontrol.records import QueueJob, ShareRow

HL, P = 300.0, 60.0
DUMMY = ("fsadmin", "fsdummy")
S_REF = 0.05


def rows(u_total: float, w: float) -> tuple[ShareRow, ...]:
    root = ShareRow("root", "", "", 0, None, False, 1.0, int(u_total), None, 1.0, 0.5)
    dummy = ShareRow("fsadmin", "fsdummy", "fsadmin", 2, 1, False, 0.01, int(w), None, 0.0, 1.0)
    return (root, dummy)


def run(u_star_ch: float, seed: int, minutes: int = 60, bursts=(20, 40), lead: float | None = 1.5):
    """Half-second by half-second: arrivals (about 40 CPUs busy, jobs of 60-300 s), bursts (128 CPUs for
    90 s), the passes, and the agent. Returns, at every pass: (minute, H/u* - 1, d_ideal on the
    usage the pass read, H/u* - 1 on the usage the agent read last)."""
    rng = random.Random(seed)
    df = 1 - 0.693 / HL  # slurmctld's per-second decay factor (its first-order series)
    f = decay_factor_per_second(HL) ** P
    jobs: list[list[float]] = []  # [start, end, cpus]
    u_real, w, d, k, u_read = 0.0, 0.0, 1, 0.0, 0.0
    last_pass = 0.0
    out = []
    for step in range(1, minutes * 120):  # half-second steps
        t = step / 2
        if rng.random() < 0.03:
            jobs.append([t, t + rng.uniform(60, 300), rng.choice([1, 2, 4, 8])])
        if t in {b * 60 for b in bursts}:
            jobs.extend([[t, t + 90, 32] for _ in range(4)])
        for j in [j for j in jobs if j[1] <= t]:  # ended: the stretch since the last pass is charged now
            run_s = j[1] - max(j[0], last_pass)
            u_real += max(0.0, run_s) * df ** max(0.0, run_s) * j[2]
            jobs.remove(j)
        if t % P == 0:
            # the pass: factors from the usage as it stands, with the d in force; then decay, charge
            u_pre = u_real + w
            if u_pre > 0:
                out.append((t / 60, S_REF * d * u_pre / (u_star_ch * 3600) - 1, u_star_ch * 3600 / (S_REF * u_pre),
                            S_REF * d * u_read / (u_star_ch * 3600) - 1))
            u_real *= f
            w *= f
            for j in jobs:
                run_s = t - max(j[0], last_pass)
                u_real += run_s * df**run_s * j[2]
            w += P * df**P * k  # the 1-CPU padding job at UsageFactor k
            last_pass = t
        if (t + lead) % P == 0 if lead is not None else t % 15 == 7.5:
            running = [QueueJob(str(i), "u", "a", "p", "normal", "RUNNING", 1, int(j[2]), 0, 0, "", None, j[0], None)
                       for i, j in enumerate(jobs)]
            dec = control.plan_control(rows(u_real + w, w), method="hybrid", u_star=u_star_ch * 3600, d_now=d, d_last=d,
                                       half_life_s=HL, calc_period_s=P, dummy=DUMMY, s_ref=S_REF, running_real=running)
            d, k, u_read = dec.d_target, dec.usage_factor or 0.0, u_real + w
    return out


def test_hybrid_before_each_pass_errs_only_by_rounding_and_what_ends_after_its_read():
    """u* = 24 core-hours (ideal d about 100 on the steady load, 40 in a burst), control 1.5 s
    before each pass (as scripts/busy.py runs the agent on the testbed). On the usage the agent read, every pass after the warm-up is within d's
    rounding (0.5 / d_ideal); what the pass read beyond that is the last stretch of jobs that
    ended in those seconds (up to 3% on this load, where one 8-CPU job's minute is 3% of all usage;
    on a production half-life, a hundredth of that). Settled the mean error is under 0.5%, and a
    burst costs at most 5% at its first pass."""
    for seed in range(4):
        out = run(24.0, seed)
        after_warmup = [(m, e, di, er) for m, e, di, er in out if m >= 15]
        # d_ideal on the usage the agent read: di * (u_pre / u_read)
        # (+2e-4: sshare prints RawUsage as an integer, which the agent reads)
        assert all(abs(er) <= 0.5 / (di * (1 + e) / (1 + er)) + 2e-4 for _, e, di, er in after_warmup), seed
        settled = [e for m, e, _, _ in after_warmup if not any(0 <= m - b <= 4 for b in (20, 40))]
        assert abs(sum(settled) / len(settled)) < 0.005, seed  # biased up: ends only add usage
        assert sum(abs(e) > 0.01 for e in settled) <= 0.15 * len(settled), seed  # the passes a job's end just missed
        for b in (20, 40):
            first = next(e for m, e, _, _ in out if m > b)
            assert abs(first) <= 0.05, (seed, b, first)  # the issue: <= 5% at its first pass


def test_control_at_any_phase_misses_more_than_control_just_before_the_pass():
    """The same load with control every 15 s at an arbitrary phase (cron's or a fixed interval):
    the usage charged between the last read and the pass is up to 15 s of job ends, not 1.5."""
    def mean_abs(lead):
        errs = [abs(e) for seed in range(4) for m, e, _, _ in run(24.0, seed, lead=lead) if m >= 15]
        return sum(errs) / len(errs)

    aligned, any_phase = mean_abs(1.5), mean_abs(None)
    assert aligned < 0.6 * any_phase, (aligned, any_phase)
