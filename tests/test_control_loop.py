"""The hybrid controller in a closed loop against slurmctld's decay passes (classic), as the
multifactor simulator models them (fscontrol.sim.multifactor: one model of the pass for the
simulator and this test).

The pass follows priority_multifactor.c's `_decay_thread`: it computes the factors from the
usage as it stands when the pass starts, with the d in force then, and only after that decays
all usage and charges the running jobs (`run_delta * f^run_delta * billing * UsageFactor`); a job
that ends between passes has its last stretch charged when it ends. The agent's control
(`control.plan_control`, on root's and the dummy's RawUsage as sshare's integers and the running
jobs) runs `lead` seconds before each pass (the loop's pass-aligned job, agent.pass_lead), or
every 15 s (`lead=None`: a tick at an arbitrary phase, as cron's).

What this pins down (the busy-cluster issue's bounds, on a load like the testbed's): settled, H
is exact; a burst that fills the machine costs at most d's rounding (0.5 / d_ideal) at each pass
while it is being charged, and nothing once it has ended.
"""

from __future__ import annotations

import random

from fscontrol.records import ShareRow
from fscontrol.sim.multifactor import ControlSpec, PriorityConfig, simulate_multifactor
from fscontrol.sim.workload import SimJob, Workload

HL, P = 300.0, 60.0
DUMMY = ("fsadmin", "fsdummy")
S_REF = 0.05
TREE = (
    ShareRow("root", "", "", 0, None, False, 1.0, 0, None, 1.0, None),
    ShareRow("a", "", "root", 1, 1, False, None, 0, None, None, None),
    ShareRow("a", "u", "a", 2, 1, False, None, 0, None, None, None),
    ShareRow("fsadmin", "", "root", 1, 1, False, None, 0, None, None, None),
    ShareRow("fsadmin", "fsdummy", "fsadmin", 2, 1, False, None, 0, None, None, None),
)


def run(u_star_ch: float, seed: int, minutes: int = 60, bursts=(20, 40), lead: float | None = 1.5):
    """Arrivals every half second with probability 0.03 (about 40 CPUs busy, jobs of 60-300 s),
    bursts (4 x 32 CPUs for 90 s), on a machine that never fills (every job starts at once), passes
    every minute from t = 0, and the agent. Returns, at every pass: (minute, H/u* - 1, d_ideal on
    the usage the pass read, H/u* - 1 on the usage the agent read last)."""
    rng = random.Random(seed)
    jobs: list[SimJob] = []
    for step in range(1, minutes * 120):  # half-second steps
        t = step / 2
        if rng.random() < 0.03:
            jobs.append(SimJob(str(len(jobs)), t, rng.uniform(60, 300), 10**6, rng.choice([1, 2, 4, 8]), "u", "a"))
        if t in {b * 60 for b in bursts}:
            jobs.extend(SimJob(str(len(jobs) + k), t, 90, 90, 32, "u", "a") for k in range(4))
    w = Workload("loop", 10**6, jobs)
    prio = PriorityConfig(weight_fairshare=1000, calc_period_s=P, half_life_s=HL, fair_tree=False)
    cs = ControlSpec("hybrid", u_star=u_star_ch * 3600, lead_s=lead or 0.0, interval_s=None if lead is not None else 15.0,
                     interval_phase_s=7.5, reference=S_REF, dummy=DUMMY)
    r = simulate_multifactor(w, prio, tree=TREE, control_spec=cs, first_pass=0.0, max_time=minutes * 60 - jobs[0].submit)
    u = u_star_ch * 3600
    return [((p.t + r.t0) / 60, S_REF * p.d * p.u_total / u - 1, u / (S_REF * p.u_total),
             S_REF * p.d * (p.u_read or 0.0) / u - 1) for p in r.records if p.u_total > 0]


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
