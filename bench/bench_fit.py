"""Benchmark fscontrol.model.fit on a synthetic history: 2,500 users x 2,000 snapshots.

The history is SYNTHETIC, generated here: each user switches jobs on and off at random
instants inside the 15-minute snapshot intervals (so the model's "charge spread evenly" is
only approximate), usage follows the exact decay solution between those instants, snapshots
get 0.1% multiplicative noise and sshare-style integer truncation, 0.2% of snapshots are
missing and a few users are reset to 0 (breaks).

Run:  .venv/bin/python bench/bench_fit.py
It prints the data-generation time, the baseline (one numpy pass over the same pair arrays:
the model evaluated once) and the fit's wall time, their ratio, and the fitted half-life; then
fit_decay_matrix on the same history (what `fscontrol fit` runs: no pair arrays built).
"""

from __future__ import annotations

import math
import time

import numpy as np

from fscontrol.model.decay import decay_lambda
from fscontrol.model.fit import fit_decay, fit_decay_matrix, pairs_from_matrix

N_USERS, N_SNAP, STEP_S = 2500, 2000, 900.0
HALF_LIFE_S = 7 * 86400


def synthetic_history(seed: int = 1, true_lam: float | None = None):
    rng = np.random.default_rng(seed)
    lam = decay_lambda(HALF_LIFE_S) if true_lam is None else true_lam
    times = np.arange(N_SNAP) * STEP_S
    cores = rng.choice([1, 4, 16, 28, 56, 128], size=N_USERS) * rng.uniform(0.5, 2.0, N_USERS)
    p_on = rng.uniform(0.002, 0.05, N_USERS)  # chance a user's job starts within an interval
    p_off = rng.uniform(0.005, 0.1, N_USERS)
    running = rng.random(N_USERS) < 0.3
    u = rng.uniform(0, 5e6, N_USERS) * (rng.random(N_USERS) < 0.7)
    usage = np.empty((N_USERS, N_SNAP))
    inflow = np.zeros((N_USERS, N_SNAP))
    usage[:, 0] = u
    for k in range(1, N_SNAP):
        # switch at a random instant s inside the interval: exact ODE on [0, s) and [s, STEP)
        switch = np.where(running, rng.random(N_USERS) < p_off, rng.random(N_USERS) < p_on)
        s = np.where(switch, rng.uniform(0, STEP_S, N_USERS), STEP_S)
        r1 = np.where(running, cores, 0.0)
        running = running ^ switch
        r2 = np.where(running, cores, 0.0)
        u = r1 / lam + (u - r1 / lam) * np.exp(-lam * s)
        rest = STEP_S - s
        u = r2 / lam + (u - r2 / lam) * np.exp(-lam * rest)
        inflow[:, k] = r1 * s + r2 * rest
        usage[:, k] = u
    observed = np.floor(usage * (1 + 1e-3 * rng.standard_normal(usage.shape)))
    resets = rng.choice(N_USERS, size=N_USERS // 100, replace=False)
    for i in resets:  # an admin reset: usage is 0 from a random snapshot on, then grows again
        k0 = int(rng.integers(1, N_SNAP - 1))
        t_rel = times[k0:] - times[k0]
        decayed = np.concatenate([[0.0], np.cumsum(inflow[i, k0 + 1:] * np.exp(lam * t_rel[1:]))]) * np.exp(-lam * t_rel)
        observed[i, k0:] = np.floor(decayed)
    observed[rng.random(observed.shape) < 0.002] = np.nan
    return times, observed, inflow, lam


def main() -> None:
    t0 = time.perf_counter()
    times, usage, inflow, lam_true = synthetic_history()
    t_gen = time.perf_counter() - t0

    t0 = time.perf_counter()
    pairs = pairs_from_matrix(times, usage, inflow)
    t_pairs = time.perf_counter() - t0

    t0 = time.perf_counter()  # baseline: one numpy pass of the model over the same arrays
    _ = pairs.u2 - (pairs.u1 * np.exp(-lam_true * pairs.dt) + pairs.c)
    t_base = time.perf_counter() - t0

    t0 = time.perf_counter()
    res = fit_decay(pairs, HALF_LIFE_S)
    t_fit = time.perf_counter() - t0

    n_pairs = len(pairs)
    del pairs
    t0 = time.perf_counter()  # what `fscontrol fit` runs: the pairs read from the matrices in blocks
    res_m = fit_decay_matrix(times, usage, inflow, HALF_LIFE_S)
    t_matrix = time.perf_counter() - t0

    h_true = math.log(2) / lam_true
    print(f"synthetic history: {N_USERS} users x {N_SNAP} snapshots ({n_pairs:,} pairs), generated in {t_gen:.2f} s")
    print(f"pairs_from_matrix (gaps joined): {t_pairs:.3f} s")
    print(f"baseline, one numpy pass of the model: {t_base * 1000:.1f} ms")
    print(f"fit_decay: {t_fit:.2f} s wall  (= {t_fit / t_base:.0f} x baseline; pairs + fit {t_pairs + t_fit:.2f} s)")
    print(f"fit_decay_matrix (no pairs built, e^-lambda dt per column): {t_matrix:.2f} s wall  (= {t_matrix / t_base:.0f} x baseline);"
          f" half-life {res_m.half_life_s / 86400:.6f} d against fit_decay's {res.half_life_s / 86400:.6f} d "
          f"(relative difference {abs(res_m.half_life_s / res.half_life_s - 1):.1e})")
    print(
        f"half-life fitted {res.half_life_s / 86400:.4f} d +- {res.half_life_se_s / 86400:.4f} d, true {h_true / 86400:.4f} d,"
        f" error {100 * (res.half_life_s / h_true - 1):+.3f}%; residuals {res.n_residuals:,}, breaks {res.n_breaks},"
        f" outliers {res.n_outliers}, drifted {res.drifted}"
    )


if __name__ == "__main__":
    main()
