"""The recovery search's bounds (issue #31 item 5): Projection.share_floor and Loaded.share_floor
are lower bounds of the share over a span of passes, and first_at_or_below, which skips the spans
whose bound clears the target, finds the pass the plain search over every event finds, on random
clusters, plans, inflows, own terms and blends (tests/test_forecast_projection.py's strategies)."""

from __future__ import annotations

import math
from contextlib import contextmanager

from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_forecast_projection import P_CHOICES, plain, plan, signed, weighted

from fscontrol.forecast import projection as proj_mod
from fscontrol.forecast.classic import Segment
from fscontrol.forecast.loaded import Loaded
from fscontrol.forecast.projection import Projection

projections = st.fixed_dictionaries(dict(
    u0=st.floats(0.0, 1e6), total0=st.floats(1.0, 1e7), P=st.sampled_from(P_CHOICES),
    hl=st.sampled_from([300.0, 3600.0, 7 * 86400.0]), wj=weighted, cj=st.one_of(st.none(), plain), pl=plan,
    ws=st.floats(0.0, 0.9), own_jobs=plain, early=plain, inflow=st.floats(0.0, 40.0), ij=signed,
    tin=st.floats(0.0, 80.0), tij=signed))


def _projection(p: dict) -> Projection:
    own0 = p["u0"] * 0.3 + 10.0
    return Projection(p["u0"], p["total0"], period_s=p["P"], half_life_s=p["hl"], weighted_jobs=p["wj"],
                      cluster_jobs=p["cj"], plan=p["pl"], self_weight=p["ws"], own0=own0, own_jobs=p["own_jobs"],
                      own_early=p["own_jobs"][: len(p["own_jobs"]) // 2], early_jobs=p["early"] + p["own_jobs"],
                      inflow=p["inflow"], inflow_jobs=p["ij"], total_inflow=p["tin"], total_inflow_jobs=p["tij"])


def _loaded(proj: Projection, p: dict, sigma: float, share_now: float | None) -> Loaded:
    return Loaded(proj, p["P"], 0.01, 1.0, 0.5, "", 1.0, 0.0, sigma=sigma, share_now=share_now)


@settings(max_examples=300, deadline=None)
@given(p=projections, a=st.integers(0, 60), n=st.integers(0, 60), sigma=st.sampled_from([0.0, 0.5, 30.0]),
       share_now=st.floats(0.0, 2.0))
@example(p=dict(u0=1e4, total0=1e6, P=60.0, hl=3600.0, wj=[], cj=None, pl=[Segment(1200.0, 0.0), Segment(1200.0, 64.0)],
                ws=0.0, own_jobs=[], early=[], inflow=0.0, ij=[], tin=0.0, tij=[]), a=0, n=60, sigma=0.0,
         share_now=0.5)  # the usage decays, then the plan charges it: its lowest is inside the span, not at an end
def test_the_floor_is_below_every_share_of_its_span(p, a, n, sigma, share_now):
    proj = _projection(p)
    ks = list(range(a, a + n + 1))
    exact = proj.shares(ks)
    assert proj.share_floor(a, a + n) <= min(exact)
    blend = _loaded(proj, p, sigma, share_now)
    assert blend.share_floor(a, a + n) <= min(blend.shares(ks))


def _plain_search(load: Loaded, x: float, k0: int, k_max: int) -> int | None:
    """first_at_or_below without the bounds: every event read, 256 at a time (the search before)."""
    return load.proj.first_at_or_below(x, k0, k_max=k_max, share=load.share, shares=load.shares)


@settings(max_examples=300, deadline=None)
@given(p=projections, x=st.floats(1e-6, 2.0), k0=st.integers(0, 30), sigma=st.sampled_from([0.0, 0.5, 30.0]),
       share_now=st.floats(0.0, 2.0), block=st.sampled_from([2, 4, 256]), read=st.sampled_from([1, 2, 16]))
@example(p=dict(u0=5e5, total0=1e6, P=60.0, hl=3600.0, wj=[(3000.0, 32.0, 1.0), (None, 1.0, 0.2)], cj=[(4000.0, 64.0)] * 3,
                pl=[Segment(600.0, 8.0)], ws=0.5, own_jobs=[(1200.0, 8.0)], early=[(60.0, 4.0)], inflow=1.0, ij=[],
                tin=10.0, tij=[]), x=0.05, k0=0, sigma=0.0, share_now=0.5, block=4, read=1)
def test_the_search_with_bounds_finds_the_plain_searchs_pass(p, x, k0, sigma, share_now, block, read):
    with _sizes(block, read):
        _same_pass(p, x, k0, sigma, share_now)


@contextmanager
def _sizes(block: int, read: int):
    """The search's span sizes set (small ones split and read the spans at every depth)."""
    was = proj_mod._BLOCK, proj_mod._READ
    proj_mod._BLOCK, proj_mod._READ = block, read
    try:
        yield
    finally:
        proj_mod._BLOCK, proj_mod._READ = was


def _same_pass(p, x, k0, sigma, share_now):
    proj = _projection(p)
    load = _loaded(proj, p, sigma, share_now)
    k_max = k0 + 400
    want = _plain_search(load, x, k0, k_max)
    got = proj.first_at_or_below(x, k0, k_max=k_max, share=load.share, shares=load.shares, floor=load.share_floor)
    assert got == want
    assert proj.first_at_or_below(x, k0, k_max=k_max) == proj.first_at_or_below(
        x, k0, k_max=k_max, share=proj.share, shares=proj.shares)


def test_a_user_far_above_the_target_reads_few_events():
    """The story's user: a heavy one recovering for weeks behind thousands of the cluster's job
    ends reads the shares of a few dozen events, not of each (the bounds clear the rest), and
    finds the same pass."""
    cluster = [(60.0 * (i % 3000) + 30.0, 1.0 + i % 7) for i in range(6000)]
    kw = dict(period_s=60.0, half_life_s=7 * 86400.0, weighted_jobs=[(3600.0, 64.0, 1.0)], cluster_jobs=cluster,
              self_weight=0.3, own0=5e6, own_jobs=[(3600.0, 64.0)], early_jobs=cluster[:100])
    proj = Projection(5e7, 2e8, **kw)
    load = _loaded(proj, dict(P=60.0), 0.0, None)
    read: list[int] = []
    real_shares = load.shares
    load.shares = lambda ks: read.extend(ks) or real_shares(ks)  # type: ignore[method-assign]
    x = proj.share(0) / 4
    got = proj.first_at_or_below(x, 0, k_max=10**6, share=load.share, shares=load.shares, floor=load.share_floor)
    n_events = len(proj.events(0))
    assert n_events > 2500 and len(read) < 100, (n_events, len(read))
    load.shares = real_shares  # type: ignore[method-assign]
    assert got is not None and got == _plain_search(load, x, 0, 10**6)
    assert proj.share(got) <= x < proj.share(got - 1) and math.isfinite(proj.share(got))
