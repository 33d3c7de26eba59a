"""The fit computed block by block (issue #14): fit_decay_matrix reads the pairs from the matrices
without building them, Gauss-Newton adds up r.r, J.r and J.J per block. It must give what the
former fit gave (scipy's least_squares, MINPACK, on the whole residual vector and Jacobian): the
same pairs, breaks and outliers, and lambda to 1e-9 relative. `reference_fit` below is that
former code (commit c01d118, fscontrol/model/fit.py fit_decay), kept here as the oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import least_squares

from fscontrol.model import fit as fitmod
from fscontrol.model.decay import decay_lambda
from fscontrol.model.fit import Pairs, _g, _q, find_breaks, fit_decay, fit_decay_matrix, pairs_from_matrix

from test_fit import history


def reference_fit(pairs: Pairs, configured_half_life_s: float, *, calc_period_s: float = 0.0, rel_noise: float = 1e-3,
                  abs_noise: float = 1.0, break_speedup: float = 3.0, break_margin: float = 0.05,
                  outlier_z: float = 10.0) -> dict:
    lam_cfg = decay_lambda(configured_half_life_s) if configured_half_life_s else 0.0
    scale = lam_cfg or fitmod._DEFAULT_LAMBDA
    brk = find_breaks(pairs, break_speedup * scale, abs_noise, break_margin)
    informative = ((pairs.u1 > 0) | (pairs.c > 0) | (pairs.u2 > 0)) & (pairs.dt > 0)
    use = ~brk & informative
    n_breaks = int(brk.sum())

    def solve(p: Pairs, x0: float):
        size = np.maximum(p.u1 * np.exp(-scale * p.dt) + p.c, p.u2)
        w = 1.0 / np.sqrt((rel_noise * size) ** 2 + abs_noise**2)
        wu1, wu2, wc, dt = w * p.u1, w * p.u2, w * p.c, p.dt

        def resid(th):
            lam = float(th[0]) * scale
            e, g, _ = _g(lam * dt)
            q, _ = _q(lam * calc_period_s)
            return wu2 - wu1 * e - wc * (g * q)

        def jac(th):
            lam = float(th[0]) * scale
            e, g, dg = _g(lam * dt)
            q, dq = _q(lam * calc_period_s)
            return ((wu1 * e - wc * (dg * q + g * (dq * calc_period_s / dt))) * dt * scale)[:, None]

        return least_squares(resid, [x0], jac=jac, method="lm", x_scale=[1.0])

    def subset(m):
        return Pairs(pairs.u1[m], pairs.u2[m], pairs.dt[m], pairs.c[m])

    sol = solve(subset(use), 1.0)
    r = sol.fun
    mad = float(np.median(np.abs(r - np.median(r)))) * 1.4826
    n_outliers = 0
    bad = np.abs(r) > outlier_z * max(mad, 1.0)
    if bad.any() and int(use.sum()) - int(bad.sum()) >= 2:
        idx = np.flatnonzero(use)[bad]
        drops = r[bad] < 0
        n_breaks += int(drops.sum())
        n_outliers = int((~drops).sum())
        use[idx] = False
        sol = solve(subset(use), float(sol.x[0]))
    n = int(use.sum())
    jt = sol.jac[:, 0]
    s2 = float(sol.fun @ sol.fun) / max(n - 1, 1)
    return {"lam": float(sol.x[0]) * scale, "lam_se": math.sqrt(s2 / float(jt @ jt)) * scale, "n_residuals": n,
            "n_breaks": n_breaks, "n_outliers": n_outliers, "rms": math.sqrt(float(sol.fun @ sol.fun) / max(n, 1))}


def assert_matches(res, ref, rel=1e-9):
    assert (res.n_residuals, res.n_breaks, res.n_outliers) == (ref["n_residuals"], ref["n_breaks"], ref["n_outliers"])
    assert res.lam == pytest.approx(ref["lam"], rel=rel)
    assert res.lam_se == pytest.approx(ref["lam_se"], rel=1e-6)
    assert res.rms_weighted == pytest.approx(ref["rms"], rel=1e-6)
    assert res.converged


CASES = [  # seed, n_assoc, n_snap, step, half-life / step, resets, gaps, misconfigured, calc period
    (1, 40, 300, 900.0, 50.0, 3, 0.02, 1.0, 300.0),
    (2, 17, 120, 300.0, 4.0, 5, 0.1, 1.1, 60.0),
    (3, 25, 200, 60.0, 100.0, 0, 0.0, 0.9, 0.0),
    (4, 9, 61, 3600.0, 10.0, 2, 0.1, 1.0, 300.0),
    (5, 60, 150, 900.0, 20.0, 4, 0.02, 0.95, 0.0),
]


@pytest.mark.parametrize("case", CASES)
def test_blocked_fit_equals_minpack_fit(case, monkeypatch):
    seed, n_assoc, n_snap, step, hl, resets, gaps, mis, period = case
    lam = math.log(2) / (hl * step)
    times, usage, flow = history(seed, n_assoc, n_snap, step, lam, resets, gaps, noise=1e-3)
    rng = np.random.default_rng(seed)
    usage[rng.integers(n_assoc), rng.integers(1, n_snap)] *= 1.5  # an outlier that is no drop
    flow[rng.integers(n_assoc), rng.integers(1, n_snap)] = np.nan  # an unknown inflow
    cfg = mis * math.log(2) / lam
    ref = reference_fit(pairs_from_matrix(times, usage, flow), cfg, calc_period_s=period)
    monkeypatch.setattr(fitmod, "BLOCK_PAIRS", 97)  # many blocks, gaps across their edges
    res = fit_decay_matrix(times, usage, flow, cfg, calc_period_s=period)
    assert_matches(res, ref)
    # the pairs built explicitly, in blocks too; and per-association times
    assert_matches(fit_decay(pairs_from_matrix(times, usage, flow), cfg, calc_period_s=period), ref)
    t2 = np.broadcast_to(times, usage.shape) + rng.uniform(0, 1, usage.shape)
    ref2 = reference_fit(pairs_from_matrix(t2, usage, flow), cfg, calc_period_s=period)
    assert_matches(fit_decay_matrix(t2, usage, flow, cfg, calc_period_s=period), ref2)


def test_gaps_at_row_edges_and_empty_rows_give_the_pairs_of_pairs_from_matrix(monkeypatch):
    lam = math.log(2) / (20 * 900.0)
    times, usage, flow = history(11, 12, 40, 900.0, lam, 0, 0.05, noise=1e-3)
    usage[0, :3] = np.nan  # a row starting with a gap
    usage[1, -4:] = np.nan  # one ending with a gap, the next starting with one: a run across rows
    usage[2, :2] = np.nan
    usage[5, :] = np.nan  # an association absent throughout
    usage[7, 1::2] = np.nan  # every other snapshot missing
    flow[8, 10] = np.nan  # unknown inflow inside a gap-joined pair
    usage[8, 9] = np.nan
    monkeypatch.setattr(fitmod, "BLOCK_PAIRS", 50)
    ref = reference_fit(pairs_from_matrix(times, usage, flow), 20 * 900.0)
    assert_matches(fit_decay_matrix(times, usage, flow, 20 * 900.0), ref)


def test_too_few_pairs_and_no_decay_still_raise():
    with pytest.raises(ValueError, match="too few usable"):
        fit_decay_matrix([0.0, 300.0], np.array([[np.nan, 5.0]]), np.zeros((1, 2)), 300)
    t = np.arange(20) * 300.0
    usage = np.vstack([np.arange(20) * 1000.0 + 1e6, np.arange(20) * 500.0 + 1e6])  # grows with no inflow
    with pytest.raises(ValueError, match="no decay"):
        fit_decay_matrix(t, usage, np.zeros_like(usage), 86400)
