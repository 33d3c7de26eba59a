"""Fit the decay rate lambda, shared by all associations, to a history of RawUsage snapshots.

Pure: plain sequences or numpy arrays in, a frozen FitResult out; no database, no clock.

Each consecutive pair of snapshots (t1, u1), (t2, u2) of one association, with the charge c
(billing-seconds from sacct, undecayed) made between them, is one residual

    r = u2 - [u1 * e^{-lambda dt} + c * g(lambda dt)],   g(x) = (1 - e^{-x}) / x,

i.e. the exact ODE solution when the charge is spread evenly over the interval (exact for a job
running through it; a job starting or ending inside it is off by at most a fraction
lambda*dt of its charge). With `calc_period_s` = P the charge is also multiplied by
y / (e^y - 1), y = lambda*P: Slurm pre-decays each pass's charge by f^P (decay.py).

Residuals are weighted by 1 / sqrt((rel_noise * u)^2 + abs_noise^2): relative noise (snapshot
timing against the decay passes, inflow errors) dominates large usages, sshare's integer
truncation (abs_noise = 1) small ones.

Breaks are not data: a pair whose u2 is below what decay at `break_speedup` times the
configured rate allows (a reset to 0, `sacctmgr ... set RawUsage=0`, a slurmctld restart that
lost usage) is excluded and counted; after a first fit, residuals beyond `outlier_z` robust
standard deviations are excluded too (drops count as breaks) and the fit is redone. Gaps
(missing snapshots, NaN) join the neighbouring snapshots into one longer pair with the summed
inflow; a pair whose inflow is unknown (NaN) is dropped.

Slurm's usage is a staircase that moves only at decay passes. A pair is only unbiased when it
spans a whole number of passes: take snapshots at an interval that is a multiple of
PriorityCalcPeriod, or long against it. On the testbed (5-minute half-life, 1-minute passes)
10-second snapshots bias the fitted half-life by about +6%; one snapshot per pass fits
299.5 s against Slurm's 299.72 s. With a week's half-life and 5-minute passes the bias is
below 1e-3 whatever the interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from fscontrol.decay import decay_lambda, effective_half_life

LN2 = math.log(2.0)
_DEFAULT_LAMBDA = LN2 / (7 * 86400.0)  # starting scale when the configured half-life is 0


@dataclass(frozen=True, slots=True)
class Pairs:
    """Consecutive snapshot pairs, flattened over associations (1-D float arrays)."""

    u1: np.ndarray
    u2: np.ndarray
    dt: np.ndarray
    c: np.ndarray

    def __len__(self) -> int:
        return int(self.u1.size)


@dataclass(frozen=True, slots=True)
class FitResult:
    lam: float  # fitted decay rate, per second
    lam_se: float  # its standard error (from the Jacobian)
    half_life_s: float  # ln2 / lam: the effective half-life
    half_life_se_s: float
    configured_half_life_s: float  # PriorityDecayHalfLife (0 = no decay)
    expected_half_life_s: float  # what Slurm's 1 - 0.693/T really gives (inf for T = 0)
    drift: float | None  # (half_life - expected) / expected; None without a configured decay
    drift_sigma: float | None  # |drift| in standard errors
    drifted: bool  # |drift| > drift_threshold and > drift_sigmas standard errors
    n_residuals: int  # pairs used in the final fit
    n_breaks: int  # pairs excluded as step drops (resets, lost usage)
    n_outliers: int  # pairs excluded as outliers that were not drops
    rms_weighted: float  # root mean square of the weighted residuals
    converged: bool


# ---------------------------------------------------------------------------- building pairs
def pairs_from_matrix(times: Sequence[float] | np.ndarray, usage: np.ndarray, inflow: np.ndarray) -> Pairs:
    """Pairs from an (n_assoc, n_snap) history; NaN marks a missing snapshot.

    `times` is (n_snap,) for snapshots shared by all associations, or (n_assoc, n_snap).
    `inflow[i, k]` is association i's charge during (times[k-1], times[k]]; column 0 is
    ignored; NaN = unknown (the pair spanning it is dropped).
    """
    u = np.asarray(usage, dtype=float)
    if u.ndim != 2:
        raise ValueError(f"usage must be (n_assoc, n_snap), got shape {u.shape}")
    n_snap = u.shape[1]
    t = np.broadcast_to(np.asarray(times, dtype=float), u.shape)
    c = np.broadcast_to(np.asarray(inflow, dtype=float), u.shape)
    if n_snap < 2:
        empty = np.empty(0)
        return Pairs(empty, empty, empty, empty)

    valid = ~np.isnan(u)
    if valid.all() and not np.isnan(c[:, 1:]).any():  # fast path: no gaps
        return Pairs(
            u[:, :-1].ravel(), u[:, 1:].ravel(), (t[:, 1:] - t[:, :-1]).ravel(), np.ascontiguousarray(c[:, 1:]).ravel()
        )
    c_unknown = np.isnan(c)
    c_cum = np.cumsum(np.where(c_unknown, 0.0, c), axis=1).ravel()
    unknown_cum = np.cumsum(c_unknown, axis=1).ravel()
    idx = np.flatnonzero(valid.ravel())
    p, q = idx[:-1], idx[1:]
    keep = (p // n_snap) == (q // n_snap)  # same association
    keep &= (unknown_cum[q] - unknown_cum[p]) == 0
    p, q = p[keep], q[keep]
    uf, tf = u.ravel(), np.ascontiguousarray(t).ravel()
    return Pairs(uf[p], uf[q], tf[q] - tf[p], c_cum[q] - c_cum[p])


def pairs_from_series(series: Iterable[tuple[Sequence[float], Sequence[float], Sequence[float]]]) -> Pairs:
    """Pairs from per-association series (times, raw_usage, inflow), each 1-D and equally long;
    inflow[k] is the charge during (times[k-1], times[k]] (inflow[0] is ignored). NaN usage =
    missing snapshot."""
    parts = []
    for times, usage, flow in series:
        t = np.asarray(times, dtype=float)
        if not (t.shape == np.shape(usage) == np.shape(flow)):
            raise ValueError("times, usage and inflow of one series must have the same length")
        if np.any(np.diff(t) <= 0):
            raise ValueError("snapshot times of a series must increase")
        parts.append(pairs_from_matrix(t, np.asarray(usage, dtype=float)[None, :], np.asarray(flow, dtype=float)[None, :]))
    if not parts:
        empty = np.empty(0)
        return Pairs(empty, empty, empty, empty)
    return Pairs(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("u1", "u2", "dt", "c")))


# ---------------------------------------------------------------------------- the model
def _g(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """e^{-x}, g(x) = (1 - e^{-x})/x and g'(x); one transcendental per element, series near 0."""
    em = -np.expm1(-x)  # 1 - e^{-x}, exact for small x
    e = 1.0 - em
    with np.errstate(divide="ignore", invalid="ignore"):
        g = em / x
        dg = (x * e - em) / (x * x)
    small = x < 1e-4
    if small.any():  # cancellation in g' (and 0/0 at x = 0): Taylor terms instead
        xs = x[small]
        g[small] = 1.0 - xs / 2 + xs * xs / 6
        dg[small] = -0.5 + xs / 3 - xs * xs / 8
    return e, g, dg


def _q(y: float) -> tuple[float, float]:
    """Slurm's pre-decay of a pass's charge: q(y) = y/(e^y - 1), and q'(y)."""
    if y < 1e-6:
        return 1.0 - y / 2, -0.5 + y / 6
    em = math.expm1(y)
    return y / em, (em - y * math.exp(y)) / (em * em)


def predict(pairs: Pairs, lam: float, calc_period_s: float = 0.0) -> np.ndarray:
    """Modelled u2 for every pair at decay rate `lam`."""
    e, g, _ = _g(lam * pairs.dt)
    q, _ = _q(lam * calc_period_s)
    return pairs.u1 * e + pairs.c * g * q


# ---------------------------------------------------------------------------- the fit
def find_breaks(pairs: Pairs, lam_max: float, abs_noise: float = 1.0, margin: float = 0.05) -> np.ndarray:
    """True for pairs that drop further than decay at `lam_max` allows (inflow only adds),
    by more than a relative `margin` (noise) and `abs_noise` (truncation)."""
    floor = pairs.u1 * np.exp(-lam_max * pairs.dt) * (1.0 - margin) - abs_noise
    return (pairs.u2 < floor) | ((pairs.u2 <= 0) & (pairs.u1 > abs_noise))


def fit_decay(
    pairs: Pairs,
    configured_half_life_s: float,
    *,
    calc_period_s: float = 0.0,
    rel_noise: float = 1e-3,
    abs_noise: float = 1.0,
    break_speedup: float = 3.0,
    break_margin: float = 0.05,
    outlier_z: float = 10.0,
    drift_threshold: float = 0.02,
    drift_sigmas: float = 3.0,
) -> FitResult:
    """Least-squares lambda (scipy.optimize.least_squares) over all pairs; see module doc."""
    lam_cfg = decay_lambda(configured_half_life_s) if configured_half_life_s else 0.0
    scale = lam_cfg or _DEFAULT_LAMBDA
    n_all = len(pairs)
    brk = find_breaks(pairs, break_speedup * scale, abs_noise, break_margin)
    informative = ((pairs.u1 > 0) | (pairs.c > 0) | (pairs.u2 > 0)) & (pairs.dt > 0)
    use = ~brk & informative
    n_breaks = int(brk.sum())
    if int(use.sum()) < 2:
        raise ValueError(f"too few usable snapshot pairs to fit ({int(use.sum())} of {n_all})")

    def solve(p: Pairs, x0: float):
        size = np.maximum(p.u1 * np.exp(-scale * p.dt) + p.c, p.u2)
        w = 1.0 / np.sqrt((rel_noise * size) ** 2 + abs_noise**2)
        wu1, wu2, wc, dt = w * p.u1, w * p.u2, w * p.c, p.dt
        cache: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

        def terms(th: np.ndarray):  # resid and jac are asked at the same point: compute once
            key = float(th[0])
            if key not in cache:
                cache.clear()
                cache[key] = _g(key * scale * dt)
            return key * scale, cache[key]

        def resid(th: np.ndarray) -> np.ndarray:
            lam, (e, g, _) = terms(th)
            q, _ = _q(lam * calc_period_s)
            return wu2 - wu1 * e - wc * (g * q)

        def jac(th: np.ndarray) -> np.ndarray:
            lam, (e, g, dg) = terms(th)
            q, dq = _q(lam * calc_period_s)
            d = (wu1 * e - wc * (dg * q + g * (dq * calc_period_s / dt))) * dt
            return (d * scale)[:, None]

        # one parameter, lambda / scale; 'lm' (MINPACK) has the least overhead per iteration
        sol = least_squares(resid, [x0], jac=jac, method="lm", x_scale=[1.0])
        if not sol.x[0] > 0:
            raise ValueError(f"the fit found no decay (lambda = {sol.x[0] * scale:.3g}/s): is usage being reset?")
        return sol

    def subset(m: np.ndarray) -> Pairs:
        return Pairs(pairs.u1[m], pairs.u2[m], pairs.dt[m], pairs.c[m])

    sol = solve(subset(use), 1.0)
    # second pass: drop gross outliers (robust scale), count the drops among them as breaks
    r = sol.fun
    mad = float(np.median(np.abs(r - np.median(r)))) * 1.4826
    n_outliers = 0
    if r.size:
        # never below the assumed noise: a weighted residual of 1 is one assumed sigma
        bad = np.abs(r) > outlier_z * max(mad, 1.0)
        if bad.any() and int(use.sum()) - int(bad.sum()) >= 2:
            idx = np.flatnonzero(use)[bad]
            drops = r[bad] < 0
            n_breaks += int(drops.sum())
            n_outliers = int((~drops).sum())
            use[idx] = False
            sol = solve(subset(use), float(sol.x[0]))

    n = int(use.sum())
    lam = float(sol.x[0]) * scale
    jt = sol.jac[:, 0]
    jtj = float(jt @ jt)
    s2 = float(sol.fun @ sol.fun) / max(n - 1, 1)
    lam_se = math.sqrt(s2 / jtj) * scale if jtj > 0 else math.inf
    h = LN2 / lam
    h_se = LN2 / lam**2 * lam_se
    expected = effective_half_life(configured_half_life_s) if configured_half_life_s else math.inf
    if math.isfinite(expected):
        drift = (h - expected) / expected
        rel_se = h_se / expected
        drift_sigma = abs(drift) / rel_se if rel_se > 0 else math.inf
        drifted = abs(drift) > drift_threshold and drift_sigma > drift_sigmas
    else:
        drift, drift_sigma, drifted = None, None, False
    return FitResult(
        lam=lam,
        lam_se=lam_se,
        half_life_s=h,
        half_life_se_s=h_se,
        configured_half_life_s=float(configured_half_life_s),
        expected_half_life_s=expected,
        drift=drift,
        drift_sigma=drift_sigma,
        drifted=drifted,
        n_residuals=n,
        n_breaks=n_breaks,
        n_outliers=n_outliers,
        rms_weighted=math.sqrt(float(sol.fun @ sol.fun) / max(n, 1)),
        converged=bool(sol.success),
    )


def fit_decay_matrix(
    times: Sequence[float] | np.ndarray, usage: np.ndarray, inflow: np.ndarray, configured_half_life_s: float, **kw: float
) -> FitResult:
    """fit_decay on an (n_assoc, n_snap) history (see pairs_from_matrix)."""
    return fit_decay(pairs_from_matrix(times, usage, inflow), configured_half_life_s, **kw)


def fit_decay_series(
    series: Iterable[tuple[Sequence[float], Sequence[float], Sequence[float]]], configured_half_life_s: float, **kw: float
) -> FitResult:
    """fit_decay on per-association (times, usage, inflow) series (see pairs_from_series)."""
    return fit_decay(pairs_from_series(series), configured_half_life_s, **kw)
