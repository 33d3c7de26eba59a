"""metrics_by_group (numpy, every group at once, what run_simulation reports) and group_metrics (one
group, through it) give the same values, bit for bit, as a plain loop over each group's jobs (the
reference below: the engine's metrics before numpy), including unfinished jobs, empty groups, equal
waits and runs under the floors of the slowdowns."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.sim.metrics import HOUR, group_metrics, metrics_by_group


def _loop_metrics(
    idx: Sequence[int],
    submit: Sequence[float],
    start: Sequence[float],
    end: Sequence[float],
    run: Sequence[float],
    size: Sequence[int],
    *,
    tau: float = 10.0,
) -> dict[str, Any]:
    n = len(idx)
    waits: list[float] = []
    sw = sd = bsd = sr = 0.0
    node_s = 0.0
    first_submit = math.inf
    first_start = math.inf
    last_end = -math.inf
    for i in idx:
        s0 = submit[i]
        if s0 < first_submit:  # noqa: PLR1730
            first_submit = s0
        st = start[i]
        if st == math.inf:
            continue
        w = st - s0
        r = run[i]
        waits.append(w)
        sw += w
        sr += w + r
        sd += (w + r) / (r if r > 1.0 else 1.0)  # noqa: FURB136
        b = (w + r) / (r if r > tau else tau)  # noqa: FURB136
        bsd += b if b > 1.0 else 1.0  # noqa: FURB136
        node_s += r * size[i]
        if st < first_start:  # noqa: PLR1730
            first_start = st
        e = end[i]
        if e > last_end:  # noqa: PLR1730
            last_end = e
    done = len(waits)
    out: dict[str, Any] = {"jobs": n, "finished": done}
    if not done:
        out.update(mean_wait_s=None, median_wait_s=None, max_wait_s=None, mean_response_s=None, mean_slowdown=None,
                   mean_bsld=None, first_start_latency_s=None, node_hours=0.0, throughput_per_h=None)
        return out
    waits.sort()
    mid = done // 2
    median = waits[mid] if done % 2 else (waits[mid - 1] + waits[mid]) / 2
    span = last_end - first_submit
    out.update(
        mean_wait_s=sw / done,
        median_wait_s=median,
        max_wait_s=waits[-1],
        mean_response_s=sr / done,
        mean_slowdown=sd / done,
        mean_bsld=bsd / done,
        first_start_latency_s=first_start - first_submit,
        node_hours=node_s / 3600.0,
        throughput_per_h=done / (span / HOUR) if span / HOUR > 0 else None,
    )
    return out


_job = st.tuples(
    st.integers(0, 3),  # group
    st.floats(0, 1e7, allow_nan=False),  # submit
    st.one_of(st.none(), st.floats(0, 1e5, allow_nan=False)),  # wait (None: never started)
    st.floats(0, 5e4, allow_nan=False),  # run (under 1 s and under tau included)
    st.integers(1, 1024),  # size
)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b)


@settings(max_examples=300, deadline=None)
@given(st.lists(_job, max_size=60))
def test_metrics_by_group_and_group_metrics_equal_a_plain_loop_on_each_group(jobs):
    groups = 4
    codes = [j[0] for j in jobs]
    submit = [j[1] for j in jobs]
    start = [math.inf if j[2] is None else j[1] + j[2] for j in jobs]
    run = [j[3] for j in jobs]
    end = [math.inf if s == math.inf else s + r for s, r in zip(start, run)]
    size = [j[4] for j in jobs]
    got = metrics_by_group(codes, groups, submit, start, end, run, size)
    assert len(got) == groups
    for k in range(groups):
        idx = [i for i, c in enumerate(codes) if c == k]
        want = _loop_metrics(idx, submit, start, end, run, size)
        one = group_metrics(idx, submit, start, end, run, size)
        assert want.keys() == got[k].keys() == one.keys()
        for key in want:
            assert _same(want[key], got[k][key]), (k, key, want[key], got[k][key])
            assert _same(want[key], one[key]), (k, key, want[key], one[key])


def test_a_hand_worked_group():
    # two jobs of group 0 (one waits 10 s, one 0 s; runs 100 s and 5 s, under tau), one unfinished
    # job of group 1
    got = metrics_by_group([0, 0, 1], 2, [0.0, 20.0, 5.0], [10.0, 20.0, math.inf], [110.0, 25.0, math.inf],
                           [100.0, 5.0, 50.0], [4, 2, 1])
    g0, g1 = got
    assert g0["jobs"] == 2 and g0["finished"] == 2
    assert g0["mean_wait_s"] == 5.0 and g0["median_wait_s"] == 5.0 and g0["max_wait_s"] == 10.0
    assert g0["mean_response_s"] == (110.0 + 5.0) / 2
    assert g0["mean_slowdown"] == (110 / 100 + 5 / 5) / 2
    assert g0["mean_bsld"] == (1.1 + 1.0) / 2  # (5 s under tau = 10 s: 5/10, floored at 1)
    assert g0["node_hours"] == (400 + 10) / 3600
    assert g0["first_start_latency_s"] == 10.0
    assert g0["throughput_per_h"] == 2 / (110 / 3600)
    assert g1 == {"jobs": 1, "finished": 0, "mean_wait_s": None, "median_wait_s": None, "max_wait_s": None,
                  "mean_response_s": None, "mean_slowdown": None, "mean_bsld": None,
                  "first_start_latency_s": None, "node_hours": 0.0, "throughput_per_h": None}


def test_utilization_hand_worked():
    from fscontrol.sim.metrics import utilization

    # 4 nodes; jobs: 100 s x 2 nodes and 50 s x 4 nodes finish, one never starts; span 0 .. 200 s
    u = utilization([0.0, 10.0, 20.0], [100.0, 200.0, math.inf], [100.0, 50.0, 30.0], [2, 4, 1], 4)
    assert u == (200 + 200) / (4 * 200)
    assert utilization([], [], [], [], 4) is None
    assert utilization([5.0], [math.inf], [10.0], [1], 4) is None


def test_a_span_of_a_few_ulps_has_no_throughput():
    """Found by hypothesis: a job that runs for 5e-324 s spans a positive time that divides to 0 h."""
    from fscontrol.sim.metrics import metrics_by_group

    (g,) = metrics_by_group([0], 1, [0.0], [0.0], [5e-324], [5e-324], [1])
    assert g["throughput_per_h"] is None and g["finished"] == 1
