"""Issue 30, the pure parts: the usage a decay pass started from, rebuilt from a read before it
and the tails of the jobs that ended in between; the usage the pass after the coming one reads,
planned job by job. Checked against Slurm's own step model (passes.slurm_pass), run second by
second where a job ends between passes."""

from __future__ import annotations

import pytest

from fscontrol.act import control
from fscontrol.model import decay, passes
from fscontrol.snaprecords import QueueJob

T = 300.0  # the testbed's half-life
F = decay.decay_factor_per_second(T)


def job(job_id: str, cpus: int, start: float, limit: float | None = 3600.0, qos: str = "normal") -> QueueJob:
    return QueueJob(job_id, "u", "a", "p", qos, "RUNNING", 1, cpus, 1, 0, "", start - 5, start, limit)


def test_the_usage_a_pass_read_is_the_read_plus_the_tails_charged_after_it():
    # the last pass at 0; the agent reads 10,000 at 55 s; a 32-CPU job running since -20 s ends at
    # 57 s (charged 57 s x 32 at once, pre-decayed as at a pass), one of 8 CPUs at 52 s (before
    # the read: already in it), and one ends at 61 s, after the pass at 60 s (not in what it read)
    ended = [(0.0, 57.0, 32.0), (0.0, 52.0, 8.0), (0.0, 61.0, 4.0)]
    got = decay.usage_read_at_pass(10_000.0, 55.0, 60.0, ended, T)
    assert got == pytest.approx(10_000.0 + 57 * 32 * F ** 57, rel=1e-12)
    assert decay.usage_read_at_pass(10_000.0, 55.0, 60.0, [], T) == 10_000.0


def test_the_plan_charges_each_running_job_from_its_start_not_a_whole_period():
    """Against Slurm's pass (passes.slurm_pass): usage 5,000 at the pass at 0, the coming pass at
    60; a 16-CPU job running since -100 s (charged 60 s) and an 8-CPU one since 20 s (charged 40 s,
    where predict_real_usage charges a whole period); no time limits: no tails."""
    running = [job("1", 16, -100.0, limit=None), job("2", 8, 20.0, limit=None)]
    want = passes.slurm_pass(5_000.0, 60.0, [(60.0, 16.0), (40.0, 8.0)], T)
    got, tails = control.predict_read_at_next_pass(5_000.0, running, now=57.0, last_pass=0.0, pass_at=60.0,
                                                   next_pass_at=120.0, half_life_s=T, usage_factors={})
    assert got == pytest.approx(want, rel=1e-12) and tails == 0.0
    whole = control.predict_real_usage(5_000.0, running, 60.0, T, {})
    assert whole - want == pytest.approx(8 * (60 * F**60 - 40 * F**40), rel=1e-9)  # the old plan charged 60 s, not 40


def test_a_job_whose_limit_falls_between_the_passes_brings_its_tail_to_the_next_read():
    # no job seen to end yet: it runs to its limit, 90 s, a tail of 30 s x 8 CPUs in the read at 120
    j = job("1", 8, 0.0, limit=90.0)
    tail = control.expected_tail(8.0, 57.0, 90.0 - 57.0, 60.0, 120.0, None, 1.0)
    assert tail == pytest.approx(8.0 * 30, rel=1e-12)
    _, tails = control.predict_read_at_next_pass(0.0, [j], now=57.0, last_pass=0.0, pass_at=60.0, next_pass_at=120.0,
                                                 half_life_s=0.0, usage_factors={})
    assert tails == pytest.approx(tail)
    # the same, ending on average at a third of the time left: uniform on [0, 22] s from 57
    assert control.expected_tail(8.0, 57.0, 33.0, 60.0, 120.0, 1 / 3, 1.0) == pytest.approx(8.0 * 19 ** 2 / (2 * 22))
    assert control.expected_tail(8.0, 57.0, 1000.0, 60.0, 120.0, None, 1.0) == 0.0  # its limit is beyond the read
    assert control.expected_tail(8.0, 57.0, 1000.0, 60.0, 120.0, 0.5, 1.0) > 0  # but it may end before it
    assert control.expected_tail(8.0, 57.0, None, 60.0, 120.0, 0.5, 1.0) == 0.0
    assert control.expected_tail(8.0, 57.0, 2.0, 60.0, 120.0, 0.5, 1.0) == 0.0  # ends before the coming pass


@pytest.mark.parametrize("q", [0.2, 0.5, 0.8])
def test_the_expected_tail_is_the_mean_over_the_jobs_end(q):
    """expected_tail's closed form against the mean over the end time's distribution (its mean q of
    the time to the limit) on a fine grid."""
    now, a, b = 50.0, 60.0, 120.0
    n = 100_000
    for to_limit in (30.0, 65.0, 200.0):
        if q <= 0.5:
            parts = [(1.0, 2 * q * to_limit)]
        else:
            parts = [(2 * (1 - q), to_limit)]
        mean = 0.0
        for w, m in parts:
            mean += w * sum(max(0.0, now + (i + 0.5) * m / n - a) if now + (i + 0.5) * m / n <= b else 0.0
                            for i in range(n)) / n
        if q > 0.5 and a < now + to_limit <= b:
            mean += (1 - 2 * (1 - q)) * (now + to_limit - a)
        got = control.expected_tail(1.0, now, to_limit, a, b, q, 1.0)
        assert got == pytest.approx(mean, rel=1e-3, abs=1e-6), (q, to_limit)
