"""Forecasts: closed forms against a numerical ODE, round trips, plan strings, cold start."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from fscontrol.errors import ConfigError, PlanError
from fscontrol.forecast.classic import (
    PlanError,
    Segment,
    campaign_segment,
    fairshare_at,
    idle_time_to_fairshare,
    parse_duration,
    parse_plan,
    rate_from_cores,
    run_time_to_fairshare,
    steady_usage,
    trajectory,
    usage_after,
    usage_for_fairshare,
    usage_to_fairshare,
)

DAY = 86400.0
LAM = math.log(2) / (7 * DAY)
H = 3.6e7  # 10,000 core-hours in core-seconds


def test_cold_start_imports_neither_numpy_nor_scipy():
    code = "import sys, fscontrol.forecast.classic; bad = {'numpy', 'scipy'} & set(sys.modules); assert not bad, bad"
    subprocess.run([sys.executable, "-c", code], check=True)


@settings(max_examples=30, deadline=None)
@given(
    st.floats(0, 1e8),
    st.lists(st.tuples(st.floats(0.0, 20 * DAY), st.floats(0.0, 256.0)), min_size=1, max_size=4),
    st.floats(0.5 * DAY, 60 * DAY),
)
def test_trajectory_agrees_with_numerical_ode(u0, plan, half_life):
    lam = math.log(2) / half_life
    total = sum(d for d, _ in plan) + 5 * DAY
    times = sorted({min(total, total * i / 5) for i in range(6)})
    points = trajectory(u0, H, lam, plan, times)
    numeric: dict[float, float] = {}
    start, u = 0.0, u0
    for dur, rate in [*plan, (5 * DAY, 0.0)]:
        end = start + dur
        inside = [t for t in times if start <= t <= end and t not in numeric]
        if dur > 0:
            sol = solve_ivp(lambda t, y, r=rate: [r - lam * y[0]], (start, end), [u], rtol=1e-11, atol=1e-6, dense_output=True)
            numeric.update({t: float(sol.sol(t)[0]) for t in inside})
            u = float(sol.y[0][-1])
        else:
            numeric.update({t: u for t in inside})
        start = end
    for p in points:
        assert p.usage == pytest.approx(numeric[p.t], rel=1e-6, abs=1e-2)
        assert 0.0 <= p.fairshare <= 1.0
        assert p.fairshare == pytest.approx(2 ** (-p.usage / H), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 5e8), st.floats(0.01, 0.999))
def test_idle_time_round_trip(u0, target):
    t = idle_time_to_fairshare(u0, H, LAM, target)
    if fairshare_at(u0, H) >= target:
        assert t == 0.0
    else:
        assert fairshare_at(u0 * math.exp(-LAM * t), H) == pytest.approx(target, rel=1e-9)


def test_idle_time_edge_cases():
    assert idle_time_to_fairshare(1e6, H, 0.0, 0.99) == math.inf  # no decay: never recovers
    assert idle_time_to_fairshare(1.0, H, LAM, 1.0) == math.inf  # F = 1 only in the limit
    assert idle_time_to_fairshare(0.0, H, LAM, 1.0) == 0.0
    with pytest.raises(ValueError):
        idle_time_to_fairshare(1.0, H, LAM, 0.0)


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 1e9), st.floats(0.001, 1.0))
def test_usage_budgets(u0, target):
    f0 = fairshare_at(u0, H)
    assert fairshare_at(u0 + H, H) == pytest.approx(f0 / 2, rel=1e-9)  # F halves every H of usage at a fixed H
    du = usage_to_fairshare(u0, H, target)
    if f0 <= target:
        assert du == 0.0
    else:
        assert fairshare_at(u0 + du, H) == pytest.approx(target, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 1e8), st.floats(0.5, 512.0), st.floats(0.05, 0.99))
def test_run_time_round_trip(u0, cores, target):
    rate = rate_from_cores(cores)
    t = run_time_to_fairshare(u0, H, LAM, rate, target)
    if fairshare_at(u0, H) <= target:
        assert t == 0.0
    elif steady_usage(rate, LAM) <= usage_for_fairshare(target, H):
        assert t == math.inf
    else:
        assert fairshare_at(usage_after(u0, rate, LAM, t), H) == pytest.approx(target, rel=1e-6)


def test_rate_from_cores():
    assert campaign_segment(56, 14 * DAY) == Segment(14 * DAY, 56.0)
    assert rate_from_cores(28) == 28.0
    assert rate_from_cores(4, billing_per_core=2.5, usage_factor=0.5) == 5.0
    with pytest.raises(ValueError):
        rate_from_cores(-1)


# ---------------------------------------------------------------------------- plan strings
@pytest.mark.parametrize(
    "text,expected",
    [
        ("56cpus:14d", [Segment(14 * DAY, 56.0, {"cpu": 56.0, "node": 1.0})]),
        ("idle:3d", [Segment(3 * DAY, 0.0)]),
        ("1cpu:90s", [Segment(90.0, 1.0, {"cpu": 1.0, "node": 1.0})]),
        ("28cores:2w, idle:12h,84CPUS : 30m", [Segment(14 * DAY, 28.0, {"cpu": 28.0, "node": 1.0}), Segment(12 * 3600.0, 0.0),
                                               Segment(1800.0, 84.0, {"cpu": 84.0, "node": 1.0})]),
        ("2.5cpus:1.5h", [Segment(5400.0, 2.5, {"cpu": 2.5, "node": 1.0})]),
        ("4cpus+2gpus:1h", None),  # GPUs are refused without billing weights (test_billing_plans)
    ],
)
def test_parse_plan(text, expected):
    # a step is equal to another when its duration, rate and what its job asks for (tres) are
    if expected is None:
        with pytest.raises(PlanError):
            parse_plan(text)
        return
    assert parse_plan(text) == expected
    assert parse_plan(text, rate_of=lambda tres, what: 2.0 * tres["cpu"])[0].tres == expected[0].tres


@pytest.mark.parametrize(
    "text,part",
    [
        ("", "empty"),
        ("56cpus", "part 1 '56cpus' (no single ':'"),
        ("56cpus:14y", "part 1 '56cpus:14y' (duration '14y'"),
        ("idle:3d,lots:2d", "part 2 'lots:2d' ('lots' is neither"),
        ("-4cpus:1d", "part 1"),
    ],
)
def test_parse_plan_errors_say_which_part(text, part):
    with pytest.raises(PlanError) as err:
        parse_plan(text)
    assert part in str(err.value)
    assert "cpus:<duration>" in str(err.value)  # the expected form
    assert isinstance(err.value, ValueError) and isinstance(err.value, ConfigError)


def test_parse_duration():
    assert parse_duration("2w") == 14 * DAY and parse_duration(" 90 m ") == 5400.0
    with pytest.raises(PlanError):
        parse_duration("3 days")


def test_project_running_reads_a_pass_as_slurmctld_does_job_by_job():
    """A hand-built pass by pass reference, written from priority_multifactor.c's `_decay_thread`:
    account X's EffectvUsage as the pass starts; user A's own NormUsage when the pass reaches A's
    pending job, after the running jobs listed before it are charged. Two users share X (shares
    1:3, so A's weights are 0.75 own and 0.25 X's); A runs 2 CPUs (listed before A's pending job),
    B runs 8 (listed before), another account runs 4 (listed after); padding listed last holds
    the total. project_running must follow it to 1e-9 over 10 passes."""
    from fscontrol.model.decay import decay_factor_per_second

    P, HL = 60.0, 300.0
    f = decay_factor_per_second(HL)
    fp = f**P
    c = P * f**P  # one pass's charge of a 1-CPU job running the whole pass
    a, b, other = 4000.0, 9000.0, 5000.0  # before the snapshot's pass
    total = 30000.0  # held by the padding
    s_self = 0.25  # A's share of X's
    # the snapshot's pass, as sshare then shows it (A has a pending job: its value from mid-pass)
    ue0 = (1 - s_self) * (a * fp + 2 * c) / (total * fp + 10 * c) + s_self * (a + b) / total
    a, b, other = a * fp + 2 * c, b * fp + 8 * c, other * fp + 4 * c
    own0 = a
    ref = []
    for _ in range(10):
        # the pass: X's usage as it starts; A's when its pending job comes up
        ue_x = (a + b) / total
        ua = (a * fp + 2 * c) / (total * fp + 10 * c)
        ref.append((1 - s_self) * ua + s_self * ue_x)
        a, b, other = a * fp + 2 * c, b * fp + 8 * c, other * fp + 4 * c
    from fscontrol.forecast.classic import project_running

    got = project_running(
        ue0 * 30000.0, 30000.0, passes=10, period_s=P, half_life_s=HL,
        weighted_jobs=[(None, 2.0, 1.0), (None, 8.0, s_self)], cluster_jobs=None,
        self_weight=1 - s_self, own0=own0, own_jobs=[(None, 2.0)], own_early=[(None, 2.0)],
        early_jobs=[(None, 2.0), (None, 8.0)],
    )
    for (u, t), want in zip(got, ref):
        assert abs(u / t - want) < 1e-9, (u / t, want)


def test_durations_in_slurms_time_format():
    from fscontrol.forecast.classic import parse_duration, parse_plan

    assert parse_duration("14-0") == 14 * 86400  # days-hours, as sbatch -t
    assert parse_duration("1-12:30") == 86400 + 12 * 3600 + 30 * 60
    assert parse_duration("1-0:0:30") == 86400 + 30
    assert parse_duration("1:00:00") == 3600  # hours:minutes:seconds
    assert parse_duration("90") == 5400  # minutes
    assert parse_duration("5:30") == 330  # minutes:seconds
    assert parse_duration("14d") == 14 * 86400
    assert [s.duration_s for s in parse_plan("56cpus:14-0,idle:3-0,8cpus:1:00:00")] == [14 * 86400, 3 * 86400, 3600]
