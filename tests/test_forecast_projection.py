"""forecast.projection (closed form between events, O(jobs log jobs)) against the step-by-step
walk it replaced (tests/forecast_reference.py), to 1e-9, on random clusters, plans and inflows."""

from __future__ import annotations

import math

import pytest
from forecast_reference import project_running as walk
from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.forecast.classic import Segment
from fscontrol.forecast.projection import Projection

P_CHOICES = (60.0, 300.0)
left = st.one_of(st.none(), st.floats(0.0, 4000.0), st.sampled_from([0.0, 60.0, 120.0, 300.0, 600.0]))
rate = st.floats(0.0, 64.0)
weighted = st.lists(st.tuples(left, rate, st.floats(0.0, 1.0)), max_size=12)
plain = st.lists(st.tuples(left, rate), max_size=12)
signed = st.lists(st.tuples(left, st.floats(-32.0, 32.0)), max_size=6)
plan = st.lists(st.builds(Segment, st.one_of(st.floats(0.0, 3000.0), st.sampled_from([60.0, 300.0, 90.0])),
                          st.sampled_from([0.0, 1.0, 8.0, 32.5])), max_size=5)


@settings(max_examples=300, deadline=None)
@given(u0=st.floats(0.0, 1e6), total0=st.floats(1.0, 1e7), P=st.sampled_from(P_CHOICES),
       hl=st.sampled_from([300.0, 3600.0, 7 * 86400.0]), wj=weighted, cj=st.one_of(st.none(), plain), pl=plan,
       ws=st.floats(0.0, 0.9), own_jobs=plain, early=plain, inflow=st.floats(0.0, 40.0), ij=signed,
       tin=st.floats(0.0, 80.0), tij=signed, passes=st.integers(1, 80))
def test_closed_form_is_the_walk_to_1e9(u0, total0, P, hl, wj, cj, pl, ws, own_jobs, early, inflow, ij, tin, tij, passes):
    own0 = u0 * 0.3 + 10.0
    kw = dict(period_s=P, half_life_s=hl, weighted_jobs=wj, cluster_jobs=cj, plan=pl, self_weight=ws, own0=own0,
              own_jobs=own_jobs, own_early=own_jobs[: len(own_jobs) // 2], early_jobs=early + own_jobs,
              inflow=inflow, inflow_jobs=ij, total_inflow=tin, total_inflow_jobs=tij)
    ref = walk(u0, total0, passes=passes, **kw)
    fast = Projection(u0, total0, **kw)
    for k, (u, t) in enumerate(ref):
        fu, ft = fast.at(k)
        assert fu == pytest.approx(u, rel=1e-9, abs=1e-9 * (abs(u0) + total0 + 1)), (k, fu, u)
        assert ft == pytest.approx(t, rel=1e-9, abs=1e-9 * total0), (k, ft, t)


@settings(max_examples=100, deadline=None)
@given(u0=st.floats(0.0, 1e6), P=st.sampled_from(P_CHOICES), wj=weighted, pl=plan, inflow=st.floats(0.0, 40.0),
       x=st.floats(0.001, 0.5))
def test_peak_and_first_crossing_are_the_walks(u0, P, wj, pl, inflow, x):
    """Held total: the highest share over a span and the first pass at or below a share, as the
    walk finds them pass by pass."""
    total0 = 2e6
    kw = dict(period_s=P, half_life_s=300.0, weighted_jobs=wj, cluster_jobs=None, plan=pl, inflow=inflow)
    n = 200
    ref = [u / t for u, t in walk(u0, total0, passes=n, **kw)]
    fast = Projection(u0, total0, **kw)
    k1 = n // 2
    _, hi = fast.peak(0, k1)
    assert hi == pytest.approx(max(ref[: k1 + 1]), rel=1e-9, abs=1e-15)
    got = fast.first_at_or_below(x, 0, k_max=n - 1)
    want = next((k for k, s in enumerate(ref) if s <= x), None)
    if want is None:
        assert got is None or ref[got] <= x * (1 + 1e-9)
    else:
        assert got is not None and abs(ref[got] - ref[want]) <= 1e-9 * max(1e-12, x) + (0 if got == want else
                                                                                       abs(ref[got] - x) + 1e-12)
        assert got == want or abs(ref[want] - x) <= 1e-9 * x  # a tie at the threshold may round either way


def test_limit_is_the_walks_settled_value():
    """Running jobs without a limit and a steady inflow: the walk settles where limit() says."""
    kw = dict(period_s=60.0, half_life_s=300.0, weighted_jobs=[(None, 4.0, 0.5), (120.0, 8.0, 1.0)], cluster_jobs=None,
              inflow=3.0)
    ref = walk(5e4, 1e6, passes=3000, **kw)
    assert Projection(5e4, 1e6, **kw).limit() == pytest.approx(ref[-1][0] / ref[-1][1], rel=1e-9)


def test_cost_does_not_grow_with_the_horizon():
    """A year of 5-minute passes costs what an hour does: the state after pass k is read from
    its segment, not walked to."""
    import time

    jobs = [(float(60 * (i % 500)), 1.0 + i % 7, 0.25) for i in range(2000)]
    p = Projection(1e5, 1e7, period_s=300.0, half_life_s=7 * 86400.0, weighted_jobs=jobs, cluster_jobs=None, inflow=5.0)
    t = time.perf_counter()
    for k in range(0, 105120, 1752):  # 60 points over a year
        p.at(k)
    far = time.perf_counter() - t
    t = time.perf_counter()
    for k in range(60):
        p.at(k)
    near = time.perf_counter() - t
    assert far < 20 * near + 0.01, (far, near)
    assert math.isfinite(p.limit())


def test_every_users_projection_on_one_snapshot_shares_the_totals_track_and_answers_as_alone():
    """Issue #31 item 2: the cluster's total (thousands of running jobs) is stepped once per snapshot
    and plan, not once per user: a second user's projection reuses the first one's total track, and
    each answers exactly what it answers with the caches empty (the same object is never mistaken
    for another: a changed plan or start gets a track of its own)."""
    from fscontrol.forecast import projection as pj

    cluster = tuple((float(60 * (i % 300)), 1.0 + i % 5) for i in range(3000))
    early = tuple(cluster[: len(cluster) // 2])
    plan_a = [Segment(3 * 86400.0, 16.0), Segment(86400.0, 0.0)]

    def make(user_jobs, plan, total0=4e7, cache=None):
        return Projection(2e5, total0, period_s=300.0, half_life_s=7 * 86400.0, weighted_jobs=user_jobs,
                          cluster_jobs=cluster, plan=plan, self_weight=0.4, own0=5e4, own_jobs=[(600.0, 2.0)],
                          own_early=[(600.0, 2.0)], early_jobs=early, inflow=2.0, total_inflow=30.0, cache=cache)

    users = [[(120.0 * (u + 1), 4.0, 0.5), (None, 1.0, 0.2)] for u in range(3)]
    ks = [0, 1, 5, 288, 2016, 10000]
    alone = []
    for uj in users:  # each with its own empty cache, and with none
        p = make(uj, plan_a, cache=pj.Cache())
        alone.append(([p.at(k) for k in ks], p.limit(), p.peak(0, 2000)))
        q = make(uj, plan_a)
        assert ([q.at(k) for k in ks], q.limit(), q.peak(0, 2000)) == alone[-1]
    cache = pj.Cache()
    shared = [make(uj, plan_a, cache=cache) for uj in users]
    assert shared[0].tt is shared[1].tt is shared[2].tt
    assert make(users[0], plan_a).tt is not shared[0].tt  # no cache: nothing shared
    for p, (ats, lim, pk) in zip(shared, alone):
        assert [p.at(k) for k in ks] == ats and p.limit() == lim and p.peak(0, 2000) == pk
    assert make(users[0], [], cache=cache).tt is not shared[0].tt  # another plan: another total
    assert make(users[0], plan_a, total0=5e7, cache=cache).tt is not shared[0].tt  # another start: another total
