"""padding_mode = "trim" (issue 30): d and the padding chosen together at the trim, so that
S_ref x d x (U + x) = u* on the usage the pass reads. The arithmetic, worked by hand."""

import pytest

from fscontrol.act import actions as act
from fscontrol.act import control
from fscontrol.agent import config


def test_trim_padding_hand_worked():
    # u* = 12 core-hours = 43,200 billing-seconds, S_ref = 0.1, root's RawUsage at the trim 13,000:
    # ideal d = 43,200 / (0.1 x 13,000) = 33.2308; d = 33 (the floor: padding >= 0);
    # x = 43,200 / (0.1 x 33) - 13,000 = 13,090.909 - 13,000 = 90.909.
    # One padding job billing 2 that ran 50 s since the last pass, half-life 693 s: f = 1 - 0.693/693
    # = 0.999, 0.999^50 = 0.951206, so its end charges 2 x 50 x 0.951206 x k = 95.1206 k: k = 0.955725.
    pad = control.trim_padding(43200.0, 0.1, 13000.0, jobs=[(2.0, 50)], half_life_s=693.0)
    assert pad.d == 33
    assert pad.d_ideal == pytest.approx(33.230769, abs=1e-6)
    assert pad.x == pytest.approx(90.909091, abs=1e-6)
    assert pad.stretch == pytest.approx(95.120563, abs=1e-6)
    assert pad.k == pytest.approx(0.955725, abs=1e-6)
    # the check that matters: with that d and that padding, the pass's halving is u* exactly
    assert 0.1 * pad.d * (13000.0 + pad.k * pad.stretch) == pytest.approx(43200.0, rel=1e-12)


def test_trim_padding_without_decay_and_two_jobs():
    # no decay (half-life 0): two jobs of billing 1, 30 s and 70 s: stretch 100, k = x / 100
    pad = control.trim_padding(43200.0, 0.1, 13000.0, jobs=[(1.0, 30), (1.0, 70)], half_life_s=0)
    assert (pad.d, pad.stretch) == (33, 100.0)
    assert pad.k == pytest.approx(0.909091, abs=1e-6)


def test_trim_padding_exact_ideal_needs_none_and_short_stretch_pads_nothing():
    # U = 14,400: the ideal d is exactly 30, no padding
    pad = control.trim_padding(43200.0, 0.1, 14400.0, jobs=[(1.0, 58)], half_life_s=300.0)
    assert (pad.d, pad.x, pad.k) == (30, 0.0, 0.0)
    # a job started 3 s before the trim (a whole second's error would be a third of x), or none
    # (pending on a full cluster): no padding, the nearest d. U = 12,800: ideal 33.75, floor 33, nearest 34
    for jobs in ([(1.0, 3)], []):
        pad = control.trim_padding(43200.0, 0.1, 12800.0, jobs=jobs, half_life_s=300.0)
        assert (pad.d, pad.x, pad.k) == (34, 0.0, None) and pad.d_ideal == pytest.approx(33.75)
    assert control.trim_padding(43200.0, 0.1, 12800.0, jobs=[(1.0, 58)], half_life_s=0).d == 33


def test_trim_padding_bounds():
    # below d = 1: no padding can sharpen it
    assert control.trim_padding(100.0, 0.1, 13000.0, jobs=[(1.0, 58)], half_life_s=300.0).k is None
    # a cold start: d held at max_damping, the padding's factor capped
    pad = control.trim_padding(43200.0, 0.1, 1.0, jobs=[(1.0, 58)], half_life_s=0, d_max=1000)
    assert pad.d == 1000 and pad.x == pytest.approx(431.0) and pad.k == pytest.approx(431.0 / 58)
    pad = control.trim_padding(43200.0, 0.1, 1.0, jobs=[(1.0, 58)], half_life_s=0, d_max=1000, k_max=2.0)
    assert pad.k == 2.0 and "capped" in pad.note


def test_control_tick_in_trim_mode_sets_the_floor_and_plans_no_padding():
    from fscontrol.records import ShareRow

    shares = [ShareRow("root", "", "", 0, None, False, 1.0, 13000, None, 1.0, 0.5),
              ShareRow("a", "u", "root", 1, 1, False, 0.1, 13000, 1.0, 1.0, 0.5)]
    dec = control.plan_control(shares, method="hybrid", u_star=43200.0, d_now=20, half_life_s=300, calc_period_s=60,
                               dummy=("fsadmin", "fsdummy"), s_ref=0.1, padding_mode="trim")
    assert dec.d_target == 33 and dec.w_target == 0.0 and dec.usage_factor is None and dec.pulse_usage_factor is None
    plan = act.control_plan(dec, dummy=("fsadmin", "fsdummy"), dummy_partition="fsadmin", padding_qos="fspad",
                            padding_mode="trim", dummy_jobs=[], calc_period_s=60, usage_factor_now=1.0)
    # d, then (no padding job running) the QOS to 0 and a padding job with a three-pass limit
    assert [a.kind for a in plan] == ["set_damping", "set_usage_factor", "submit_dummy"]
    assert plan[1].argv[-1] == "usagefactor=0.000000"
    assert "-t" in plan[2].argv and plan[2].argv[plan[2].argv.index("-t") + 1] == "3"
    assert act.TRIM_JOB_NAME in plan[2].argv


def test_config_trim_goes_with_hybrid():
    cfg = config.from_dict({"clusters": {"c": {"target_core_hours": 12, "method": "hybrid", "padding_mode": "trim"}}})
    assert cfg.cluster("c").padding_mode == "trim"
    with pytest.raises(config.ConfigError, match="goes with method"):
        config.from_dict({"clusters": {"c": {"target_core_hours": 12, "method": "damping", "padding_mode": "trim"}}})
