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
below 1e-3 whatever the interval. Where the collect could read when the pass it saw ran (as
root or SlurmUser on the controller's host: snapshots.usage_at), at_the_passes times each
snapshot by its pass and moves the charge running jobs made after it to the next window: then
late or jittery collects (a loaded machine) no longer bias the fit (tests/test_fit.py, under
Slurm's own step model: within 2% in every run where snapshot times missed by more in most).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from fscontrol.model.decay import decay_lambda, effective_half_life

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
    if y > 700:  # e^y overflows a float; q and q' are below 1e-300 there (a wild Gauss-Newton step)
        return 0.0, 0.0
    em = math.expm1(y)
    return y / em, (em - y * math.exp(y)) / (em * em)


def predict(pairs: Pairs, lam: float, calc_period_s: float = 0.0) -> np.ndarray:
    """Modelled u2 for every pair at decay rate `lam`."""
    e, g, _ = _g(lam * pairs.dt)
    q, _ = _q(lam * calc_period_s)
    return pairs.u1 * e + pairs.c * g * q


def at_the_passes(times: np.ndarray, usage_at: np.ndarray, charge: np.ndarray, tail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A history's times and windows moved to the decay passes whose RawUsage the snapshots hold.

    RawUsage moves only at passes: a snapshot taken s seconds after its pass (usage_at, NaN where
    unknown) holds no decay of those s seconds and none of the charge running jobs made in them
    (`tail`, per association and snapshot: Slurm adds it at the next pass). So the time becomes
    the pass's and the tail moves to the next window. (n_snap,) times and usage_at, (n_rows,
    n_snap) charge and tail (each column the window ending at that snapshot); new arrays out."""
    charge = charge - tail
    charge[:, 1:] += tail[:, :-1]
    return np.where(np.isnan(usage_at), times, usage_at), charge


# ---------------------------------------------------------------------------- the fit
def find_breaks(pairs: Pairs, lam_max: float, abs_noise: float = 1.0, margin: float = 0.05) -> np.ndarray:
    """True for pairs that drop further than decay at `lam_max` allows (inflow only adds),
    by more than a relative `margin` (noise) and `abs_noise` (truncation)."""
    return _breaks(pairs.u1, pairs.u2, np.exp(-lam_max * pairs.dt), abs_noise, margin)


def _breaks(u1: np.ndarray, u2: np.ndarray, decay: np.ndarray, abs_noise: float, margin: float) -> np.ndarray:
    floor = u1 * decay * (1.0 - margin) - abs_noise
    return (u2 < floor) | ((u2 <= 0) & (u1 > abs_noise))


# Pairs are visited in blocks of about this many: the temporaries of one block stay in the CPU's
# cache and the fit never holds more than a few arrays the size of the pairs (issue #14).
BLOCK_PAIRS = 1 << 15


@dataclass(frozen=True, slots=True)
class _Block:
    """Some pairs, as arrays of one shape (u1, u2, c) and dt broadcastable to it; `slots` is
    where they sit in the fit's flat per-pair arrays (weights, mask, residuals)."""

    slots: slice
    u1: np.ndarray
    u2: np.ndarray
    c: np.ndarray
    dt: np.ndarray


class _PairSource:
    """The pairs of a fit, visited block by block (several times: once a Gauss-Newton step)."""

    n_slots: int

    def blocks(self) -> Iterable[_Block]:  # pragma: no cover - interface
        raise NotImplementedError


class _FlatSource(_PairSource):
    """Explicit 1-D pair arrays (Pairs): blocks are slices, no copy."""

    def __init__(self, pairs: Pairs) -> None:
        self.pairs = pairs
        self.n_slots = len(pairs)

    def blocks(self) -> Iterable[_Block]:
        p = self.pairs
        for a in range(0, self.n_slots, BLOCK_PAIRS):
            s = slice(a, min(a + BLOCK_PAIRS, self.n_slots))
            yield _Block(s, p.u1[s], p.u2[s], p.c[s], p.dt[s])


class _MatrixSource(_PairSource):
    """The pairs of an (n_assoc, n_snap) history without building them: the consecutive
    snapshots of a block of rows are views into the matrices (u[:, :-1], u[:, 1:], c[:, 1:]),
    their dt one row of differences when the times are shared; a consecutive pair touching a
    missing snapshot or an unknown inflow (NaN) is no pair (its slot stays unused). The pairs that
    join snapshots across a gap (few) follow as one more explicit block."""

    def __init__(self, times: np.ndarray, u: np.ndarray, c: np.ndarray) -> None:
        self.u, self.c = u, c
        n_rows, n_snap = u.shape
        self.shared = times.ndim == 1
        self.t = times
        self.dt_row = np.diff(times) if self.shared else None
        self.n_cols = n_snap - 1
        self.n_cells = n_rows * self.n_cols
        self.rows_per_block = max(1, BLOCK_PAIRS // max(self.n_cols, 1))
        self.bridges = self._bridges()
        self.n_slots = self.n_cells + len(self.bridges)

    def _bridges(self) -> Pairs:
        """Pairs across runs of missing snapshots (p last valid before, q first valid after, in one
        row), with the inflow summed over (p, q]; dropped if any of it is unknown."""
        u, n_snap = self.u, self.u.shape[1]
        empty = np.empty(0)
        if n_snap < 3:
            return Pairs(empty, empty, empty, empty)
        nan_at = np.flatnonzero(np.isnan(u).ravel())
        if not nan_at.size:
            return Pairs(empty, empty, empty, empty)
        new_run = np.ones(nan_at.size, dtype=bool)
        new_run[1:] = nan_at[1:] != nan_at[:-1] + 1
        starts = nan_at[new_run]
        ends = nan_at[np.append(np.flatnonzero(new_run)[1:] - 1, nan_at.size - 1)]
        # runs cut where a row ends: a run spanning rows is split at each row boundary
        row_s, row_e = starts // n_snap, ends // n_snap
        if (row_s != row_e).any():
            pieces_s, pieces_e = [], []
            for s, e in zip(starts.tolist(), ends.tolist()):
                while s // n_snap != e // n_snap:
                    end_row = (s // n_snap + 1) * n_snap - 1
                    pieces_s.append(s)
                    pieces_e.append(end_row)
                    s = end_row + 1
                pieces_s.append(s)
                pieces_e.append(e)
            starts, ends = np.array(pieces_s, dtype=np.int64), np.array(pieces_e, dtype=np.int64)
        p, q = starts - 1, ends + 1
        inside = (starts % n_snap != 0) & (ends % n_snap != n_snap - 1)  # valid neighbours both sides
        p, q = p[inside], q[inside]
        row, pc, qc = p // n_snap, p % n_snap, q % n_snap  # (no ravel: the matrices may be views)
        length = qc - pc
        flow = self.c[row, pc + 1]
        for off in range(2, int(length.max()) + 1 if length.size else 0):
            more = length >= off
            flow[more] += self.c[row[more], pc[more] + off]
        if self.shared:
            tp, tq = self.t[pc], self.t[qc]
        else:
            tp, tq = self.t[row, pc], self.t[row, qc]
        return Pairs(self.u[row, pc], self.u[row, qc], tq - tp, flow)  # NaN flow: unknown inflow, never used

    def blocks(self) -> Iterable[_Block]:
        n_rows = self.u.shape[0]
        step = self.rows_per_block
        for a in range(0, n_rows if self.n_cols > 0 else 0, step):
            b = min(a + step, n_rows)
            ub, cb = self.u[a:b], self.c[a:b]
            if self.shared:
                dt = self.dt_row
            else:
                tb = self.t[a:b]
                dt = tb[:, 1:] - tb[:, :-1]
            yield _Block(slice(a * self.n_cols, b * self.n_cols), ub[:, :-1], ub[:, 1:], cb[:, 1:], dt)
        if len(self.bridges):
            br = self.bridges
            yield _Block(slice(self.n_cells, self.n_slots), br.u1, br.u2, br.c, br.dt)


class _Memo:
    """f(dt) computed once per distinct dt array (the shared row of a matrix: once a pass)."""

    def __init__(self, f) -> None:
        self.f, self.key, self.val = f, None, None

    def __call__(self, dt: np.ndarray):
        if self.key is not dt:
            self.key, self.val = dt, self.f(dt)
        return self.val


def _evaluate(src: _PairSource, w: np.ndarray, use: np.ndarray, r_out: np.ndarray, theta: float, scale: float,
              calc_period_s: float) -> tuple[float, float, float]:
    """One pass over the pairs at theta = lambda / scale: the weighted residuals
    r = w (u2 - u1 e - c g q) into r_out (0 for slots not in `use`) and r.r, J.r, J.J."""
    lam = theta * scale
    q, dq = _q(lam * calc_period_s)
    pq = dq * calc_period_s

    def per_dt(dt: np.ndarray):  # e, g q, dr/dtheta's factors of u1 and c (per column of a matrix)
        e, g, dg = _g(lam * dt)
        with np.errstate(divide="ignore", invalid="ignore"):
            b = (dg * q + g * (pq / dt)) if calc_period_s else dg * q
        return e, g * q, e * dt * scale, b * dt * scale

    terms = _Memo(per_dt)
    rr = jr = jj = 0.0
    for blk in src.blocks():
        e, gq, a, b = terms(blk.dt)
        shape = blk.u1.shape
        wb, off = w[blk.slots].reshape(shape), ~use[blk.slots].reshape(shape)
        r = blk.u1 * e
        np.subtract(blk.u2, r, out=r)
        t = blk.c * gq
        r -= t
        r *= wb
        np.copyto(r, 0.0, where=off)  # (a missing snapshot's NaN times a weight of 0 is NaN)
        jac = blk.u1 * a
        np.multiply(blk.c, b, out=t)
        jac -= t
        jac *= wb
        np.copyto(jac, 0.0, where=off)
        rf, jf = r.reshape(-1), jac.reshape(-1)
        r_out[blk.slots] = rf
        rr += float(rf @ rf)
        jr += float(jf @ rf)
        jj += float(jf @ jf)
    return rr, jr, jj


def _solve(src: _PairSource, w: np.ndarray, use: np.ndarray, r_out: np.ndarray, x0: float, scale: float,
           calc_period_s: float) -> tuple[float, float, float, bool, int]:
    """Gauss-Newton on theta = lambda / scale, minimising the sum of squared weighted residuals
    over the pairs in `use`; block by block (_evaluate), so the Jacobian (m x 1) is never held
    whole: each pass adds up r.r, J.r and J.J. A step that does not lower r.r is halved. Stops
    when the step is below 1e-10 of theta (or no step of at most 1e-8 of theta lowers the sum).
    Leaves the residuals at the returned theta in r_out (0 for unused slots). Returns theta,
    r.r and J.J there, converged, passes."""

    def evaluate(theta: float) -> tuple[float, float, float]:
        return _evaluate(src, w, use, r_out, theta, scale, calc_period_s)

    theta = float(x0)
    rr, jr, jj = evaluate(theta)
    passes, converged = 1, False
    for _ in range(100):
        if not (jj > 0 and math.isfinite(jr)):
            break
        step = -jr / jj
        if abs(step) <= 1e-10 * abs(theta):  # the sums' rounding moves it about 1e-12
            converged = True
            break
        for _halve in range(60):
            cand = theta + step
            rr2, jr2, jj2 = evaluate(cand)
            passes += 1
            if rr2 < rr or not math.isfinite(rr):
                break
            if abs(step) <= 1e-8 * abs(theta):  # no lower sum this close: at the minimum
                converged = True
                break
            step /= 2
        if converged:  # r_out holds the rejected trial: back to theta
            rr, jr, jj = evaluate(theta)
            passes += 1
            break
        theta, rr, jr, jj = cand, rr2, jr2, jj2
    return theta, rr, jj, converged, passes


def _fit(
    src: _PairSource,
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
    lam_cfg = decay_lambda(configured_half_life_s) if configured_half_life_s else 0.0
    scale = lam_cfg or _DEFAULT_LAMBDA
    lam_max = break_speedup * scale
    n = src.n_slots
    use = np.zeros(n, dtype=bool)
    w = np.zeros(n)
    n_all = n_breaks = 0
    decays = _Memo(lambda dt: (np.exp(-lam_max * dt), np.exp(-scale * dt)))
    for blk in src.blocks():  # one pass: which pairs, their weights
        shape = blk.u1.shape
        valid = ~(np.isnan(blk.u1) | np.isnan(blk.u2) | np.isnan(blk.c))
        d_max, d_scale = decays(blk.dt)
        with np.errstate(invalid="ignore"):
            brk = _breaks(blk.u1, blk.u2, d_max, abs_noise, break_margin) & valid
            informative = ((blk.u1 > 0) | (blk.c > 0) | (blk.u2 > 0)) & np.broadcast_to(blk.dt > 0, shape)
            size = np.maximum(blk.u1 * d_scale + blk.c, blk.u2)
        n_all += int(np.count_nonzero(valid))
        n_breaks += int(np.count_nonzero(brk))
        ok = valid & ~brk & informative
        use[blk.slots] = ok.ravel()
        size *= rel_noise
        size *= size
        size += abs_noise**2
        np.sqrt(size, out=size)
        np.divide(1.0, size, out=size)
        size[~ok] = 0.0
        w[blk.slots] = size.ravel()
    n_use = int(np.count_nonzero(use))
    if n_use < 2:
        raise ValueError(f"too few usable snapshot pairs to fit ({n_use} of {n_all})")

    r = np.zeros(n)

    def solve(x0: float):
        out = _solve(src, w, use, r, x0, scale, calc_period_s)
        if not out[0] > 0:
            raise ValueError(f"the fit found no decay (lambda = {out[0] * scale:.3g}/s): is usage being reset?")
        return out

    theta, rr, jj, converged, _ = solve(1.0)
    # second pass: drop gross outliers (robust scale), count the drops among them as breaks
    # the robust scale from the used residuals, packed into the front of r (a block at a time:
    # writes never pass reads), so no second array of them is needed; they are reordered by the
    # medians, so r is filled again (one more pass) only if some residual is beyond the limit
    at, big = 0, 0.0
    for a in range(0, n, BLOCK_PAIRS):
        part = r[a:a + BLOCK_PAIRS][use[a:a + BLOCK_PAIRS]]
        if part.size:
            big = max(big, float(np.max(np.abs(part))))
        r[at:at + part.size] = part
        at += part.size
    ru = r[:n_use]
    med = float(np.median(ru, overwrite_input=True))
    ru -= med
    np.abs(ru, out=ru)
    mad = float(np.median(ru, overwrite_input=True)) * 1.4826
    del ru
    n_outliers = 0
    # never below the assumed noise: a weighted residual of 1 is one assumed sigma
    limit = outlier_z * max(mad, 1.0)
    bad = np.zeros(n, dtype=bool)
    if big > limit:
        _evaluate(src, w, use, r, theta, scale, calc_period_s)
        for a in range(0, n, BLOCK_PAIRS):
            s = slice(a, a + BLOCK_PAIRS)
            np.greater(np.abs(r[s]), limit, out=bad[s])
            bad[s] &= use[s]
    n_bad = int(np.count_nonzero(bad))
    if n_bad and n_use - n_bad >= 2:
        drops = int(np.count_nonzero(bad & (r < 0)))
        n_breaks += drops
        n_outliers = n_bad - drops
        use &= ~bad
        w[bad] = 0.0
        theta, rr, jj, converged, _ = solve(theta)
    del bad

    n = int(np.count_nonzero(use))
    lam = theta * scale
    s2 = rr / max(n - 1, 1)
    lam_se = math.sqrt(s2 / jj) * scale if jj > 0 else math.inf
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
        rms_weighted=math.sqrt(rr / max(n, 1)),
        converged=converged,
    )


def fit_decay(pairs: Pairs, configured_half_life_s: float, **kw: float) -> FitResult:
    """Least-squares lambda over all pairs (Gauss-Newton on the one parameter, block by block);
    see module doc. Keywords: calc_period_s, rel_noise, abs_noise, break_speedup, break_margin,
    outlier_z, drift_threshold, drift_sigmas."""
    return _fit(_FlatSource(pairs), configured_half_life_s, **kw)


def fit_decay_matrix(
    times: Sequence[float] | np.ndarray, usage: np.ndarray, inflow: np.ndarray, configured_half_life_s: float, **kw: float
) -> FitResult:
    """fit_decay on an (n_assoc, n_snap) history (the pairs of pairs_from_matrix), read from
    the matrices in blocks without building the pairs: besides the matrices the fit holds two
    float and one bool array per pair (weights, residuals, which pairs)."""
    u = np.asarray(usage, dtype=float)
    if u.ndim != 2:
        raise ValueError(f"usage must be (n_assoc, n_snap), got shape {u.shape}")
    c = np.asarray(inflow, dtype=float)
    if c.shape != u.shape:
        c = np.ascontiguousarray(np.broadcast_to(c, u.shape))
    t = np.asarray(times, dtype=float)
    if t.ndim != 1 and t.shape != u.shape:
        t = np.ascontiguousarray(np.broadcast_to(t, u.shape))
    if t.ndim == 1 and t.shape != (u.shape[1],):
        raise ValueError(f"times must be ({u.shape[1]},) or {u.shape}, got {t.shape}")
    return _fit(_MatrixSource(t, u, c), configured_half_life_s, **kw)


def fit_decay_series(
    series: Iterable[tuple[Sequence[float], Sequence[float], Sequence[float]]], configured_half_life_s: float, **kw: float
) -> FitResult:
    """fit_decay on per-association (times, usage, inflow) series (see pairs_from_series)."""
    return fit_decay(pairs_from_series(series), configured_half_life_s, **kw)
