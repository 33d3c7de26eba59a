"""Metrics of a simulated run, per group (account or user) and overall.

wait = start - submit; response = end - submit (wait + run); slowdown = (wait + run) / run (run floored at 1 s); bounded slowdown
(Feitelson) = max(1, (wait + run) / max(run, tau)) with tau = 10 s; first-start latency = the
group's first start - the group's first submission; throughput = finished jobs per hour over the
span from the first submission to the last end; utilization = node-seconds used / (nodes x the
same span).

Units of the returned fields, named in each: durations in seconds (``*_s``), ``node_hours``,
``throughput_per_h`` (jobs per hour), ``utilization`` a fraction (0..1). The text report shows
durations in hours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

BSLD_TAU = 10.0
HOUR = 3600.0


def group_metrics(
    idx: Sequence[int],
    submit: Sequence[float],
    start: Sequence[float],
    end: Sequence[float],
    run: Sequence[float],
    size: Sequence[int],
    *,
    tau: float = BSLD_TAU,
) -> dict[str, Any]:
    """The metrics of one group of jobs, given by their indices (metrics_by_group on them)."""
    ix = list(idx)
    return metrics_by_group([0] * len(ix), 1, [submit[i] for i in ix], [start[i] for i in ix],
                            [end[i] for i in ix], [run[i] for i in ix], [size[i] for i in ix], tau=tau)[0]


def utilization(
    submit: Sequence[float], end: Sequence[float], run: Sequence[float], size: Sequence[int], nodes: int
) -> float | None:
    """Node-seconds used by the finished jobs / (nodes x the span from the first submission to the
    last end); None for no span. (In numpy: the used node-seconds summed in job order, as a loop would.)"""
    import numpy as np

    s0 = np.asarray(submit, dtype=float)
    e = np.asarray(end, dtype=float)
    if not len(s0):
        return None
    fin = e != math.inf
    if not fin.any():
        return None
    r = np.asarray(run, dtype=float)[fin]
    used = float(np.bincount(np.zeros(len(r), dtype=np.intp), weights=r * np.asarray(size, dtype=float)[fin])[0])
    first = float(s0.min())
    last = float(e[fin].max())
    if last <= first:
        return None
    return used / (nodes * (last - first))


def metrics_by_group(
    codes: Sequence[int],
    groups: int,
    submit: Sequence[float],
    start: Sequence[float],
    end: Sequence[float],
    run: Sequence[float],
    size: Sequence[int],
    *,
    tau: float = BSLD_TAU,
) -> list[dict[str, Any]]:
    """The metrics of every group at once: job i is in group codes[i] (0 .. groups-1); returns the
    groups' dicts in order (fields: the module's docstring). In numpy, bit for bit what a plain loop
    over each group's jobs in increasing order gives: the same operations on each job, summed in the
    same order (np.bincount adds its weights in index order); tests/test_sim_metrics.py checks it
    against such a loop."""
    import numpy as np

    g = np.asarray(codes, dtype=np.intp)
    s0 = np.asarray(submit, dtype=float)
    st = np.asarray(start, dtype=float)
    e = np.asarray(end, dtype=float)
    r = np.asarray(run, dtype=float)
    sz = np.asarray(size, dtype=float)
    n_jobs = np.bincount(g, minlength=groups)
    first_submit = np.full(groups, math.inf)
    np.minimum.at(first_submit, g, s0)
    fin = st != math.inf
    g, s0, st, e, r, sz = g[fin], s0[fin], st[fin], e[fin], r[fin], sz[fin]
    w = st - s0
    resp = w + r
    done = np.bincount(g, minlength=groups)

    def total(x: Any) -> Any:
        return np.bincount(g, weights=x, minlength=groups)

    sw, sr = total(w), total(resp)
    sd = total(resp / np.where(r > 1.0, r, 1.0))
    b = resp / np.where(r > tau, r, tau)
    bsd = total(np.where(b > 1.0, b, 1.0))
    node_s = total(r * sz)
    first_start = np.full(groups, math.inf)
    np.minimum.at(first_start, g, st)
    last_end = np.full(groups, -math.inf)
    np.maximum.at(last_end, g, e)
    order = np.lexsort((w, g))  # each group's waits, sorted, one group after the other
    ws = w[order].tolist()
    at = np.concatenate(([0], np.cumsum(done)))
    out: list[dict[str, Any]] = []
    for k in range(groups):
        m = int(done[k])
        d: dict[str, Any] = {"jobs": int(n_jobs[k]), "finished": m}
        out.append(d)
        if not m:
            d.update(mean_wait_s=None, median_wait_s=None, max_wait_s=None, mean_response_s=None, mean_slowdown=None,
                     mean_bsld=None, first_start_latency_s=None, node_hours=0.0, throughput_per_h=None)
            continue
        lo = int(at[k])
        mid = m // 2
        median = ws[lo + mid] if m % 2 else (ws[lo + mid - 1] + ws[lo + mid]) / 2
        fs = float(first_submit[k])
        span = float(last_end[k]) - fs
        d.update(
            mean_wait_s=float(sw[k]) / m,
            median_wait_s=median,
            max_wait_s=ws[lo + m - 1],
            mean_response_s=float(sr[k]) / m,
            mean_slowdown=float(sd[k]) / m,
            mean_bsld=float(bsd[k]) / m,
            first_start_latency_s=float(first_start[k]) - fs,
            node_hours=float(node_s[k]) / 3600.0,
            throughput_per_h=m / (span / HOUR) if span / HOUR > 0 else None,  # (a span of a few ulps divides to 0)
        )
    return out
