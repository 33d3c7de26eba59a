"""Conservative backfilling (fscontrol.sim.conservative): a hand-worked case, the guarantee (no job
starts later than the reservation it got at arrival) as a property on random workloads, and
start-for-start agreement with a naive reference (tests/peer_models.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.errors import ConfigError
from fscontrol.sim import Policy, SimJob, Workload, get_policy, read_swf, run_simulation
from fscontrol.sim.conservative import simulate_conservative
from peer_models import cqsim_conservative, naive_conservative

EXCERPT = Path(__file__).resolve().parents[1] / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln-first2000.swf"
# linear priority with an exact binary key: age weight 3600/h = 1 point per second, 1 per node
LINEAR_EXACT = Policy("linear", backfill="conservative", age_weight=3600.0, size_weight=1.0)


def W(nodes, *jobs):
    """jobs: (id, submit, run, estimate, size)"""
    return Workload("t", nodes, [SimJob(j[0], j[1], j[2], j[3], j[4], "u", "a") for j in jobs])


def by_id(r):
    return {j.job_id: r.start[i] for i, j in enumerate(r.workload.jobs)}


def test_the_hand_worked_case_differs_from_easy_where_it_should():
    # 4 nodes. A (2 nodes, limit 10) runs; B (3 nodes) must wait for A: reserved [10, 15);
    # C (4 nodes) reserved [15, 20); D (1 node, 30 s) fits now, but [0, 30) crosses C's
    # reservation, where no node is free: conservative holds D until C is done (20). EASY
    # protects only the head (B): D starts at 0 in the one node B leaves spare, and C waits for D.
    w = W(4, ("A", 0, 10, 10, 2), ("B", 1, 5, 5, 3), ("C", 2, 5, 5, 4), ("D", 3, 30, 30, 1))
    r = run_simulation(w, "conservative")
    assert by_id(r) == {"A": 0, "B": 10, "C": 15, "D": 20}
    assert dict(zip("ABCD", r.reservation)) == {"A": 0, "B": 10, "C": 15, "D": 20}
    assert by_id(run_simulation(w, "easy")) == {"A": 0, "B": 10, "C": 33, "D": 3}


def test_an_early_end_compresses_the_schedule():
    # Same, but A ends at 4 (limit 10): B moves to 4, C to 9, D to 14 (it needs [14, 44) clear).
    w = W(4, ("A", 0, 4, 10, 2), ("B", 1, 5, 5, 3), ("C", 2, 5, 5, 4), ("D", 3, 30, 30, 1))
    r = run_simulation(w, "conservative")
    assert by_id(r) == {"A": 0, "B": 4, "C": 9, "D": 14}
    assert dict(zip("ABCD", r.reservation)) == {"A": 0, "B": 10, "C": 15, "D": 20}
    assert r.overall["makespan_s"] == 44
    assert r.overall["mean_response_s"] == pytest.approx((4 + 8 + 12 + 41) / 4)


def test_jobs_past_their_limit_are_killed_and_too_wide_ones_never_start():
    w = W(4, ("A", 0, 50, 10, 2), ("B", 0, 5, 5, 8), ("C", 1, 5, 5, 4))
    r = run_simulation(w, "conservative")
    assert by_id(r) == {"A": 0, "B": math.inf, "C": 10}
    assert r.end[0] == 10 and r.stats["unfinished"] == 1
    assert any("killed" in s for s in r.stats["notes"]) and any("wider" in s for s in r.stats["notes"])


def test_presets_and_what_conservative_refuses():
    assert get_policy("conservative").backfill == "conservative"
    assert get_policy("linear-size+cons").kind == "linear"
    assert get_policy("conservative-linear-eligible").label == "conservative-linear-eligible"
    with pytest.raises(ConfigError, match="priority order"):
        get_policy("sfs-eligible+cons")
    with pytest.raises(ConfigError, match="priority order"):
        get_policy("gate-hold-size", backfill="conservative")
    with pytest.raises(ConfigError, match="every event"):
        get_policy("conservative", schedule_interval_s=300.0)


def test_the_sdsc_excerpt_matches_the_naive_reference_start_for_start():
    w = read_swf(EXCERPT)
    r = run_simulation(w, "conservative")
    ref, first = naive_conservative(w.jobs, w.nodes)
    assert r.start == ref and r.reservation == first
    assert all(s <= f for s, f in zip(r.start, r.reservation))
    assert r.stats["unfinished"] == 0


def test_the_kth_log_start_matches_the_naive_reference_and_linear_order_too():
    kth = read_swf(EXCERPT.parent / "KTH-SP2-1996-2.1-cln.swf.gz", limit=2000)
    assert kth.nodes == 100 and kth.meta["procs_per_node"] == 1
    r = run_simulation(kth, "conservative", per_user=False)
    assert (r.start, r.reservation) == naive_conservative(kth.jobs, kth.nodes)
    sdsc = read_swf(EXCERPT)
    r = simulate_conservative(sdsc, LINEAR_EXACT)
    key = lambda i: (sdsc.jobs[i].submit - sdsc.jobs[i].size, sdsc.jobs[i].submit, i)  # noqa: E731
    assert (r.start, r.reservation) == naive_conservative(sdsc.jobs, sdsc.nodes, key=key)
    assert r.start != run_simulation(sdsc, "conservative").start  # the order mattered


def test_cqsims_conservative_places_waiting_jobs_by_their_actual_run_time():
    # 4 nodes. A (2 nodes) runs to 10; B (4 nodes) is reserved [10, 20). C (2 nodes) asks for 100 s
    # and runs 5: by its request it crosses B's reservation and waits for B (20); CQSim's
    # conservative mode places it by the 5 s it will really run and starts it at once.
    w = W(4, ("A", 0, 10, 10, 2), ("B", 1, 10, 10, 4), ("C", 2, 5, 100, 2))
    assert by_id(run_simulation(w, "conservative")) == {"A": 0, "B": 10, "C": 20}
    assert cqsim_conservative(w.jobs, w.nodes) == [0, 10, 2]
    assert cqsim_conservative(w.jobs, w.nodes, by_run_time=False) == [0, 10, 20]


jobs_st = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 30), st.integers(0, 30), st.integers(1, 8)),
    min_size=1,
    max_size=25,
)


# jobs of a few shapes (size, limit), as real logs have (users resubmit the same job): the
# compression's shortcut for a shape that already found nothing earlier gets exercised
shaped_st = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from([(1, 10), (2, 10), (2, 20), (4, 20), (1, 40)]), st.integers(0, 40)),
    min_size=1,
    max_size=30,
)


def workload(nodes, raw):
    # (submit, run, extra limit beyond the run, size); a few sizes above the machine are clipped; a
    # limit is at least 1 s, as every job's is (Slurm's least is a minute): a 0-s limit books nothing,
    # and the naive reference then started a 2-node job a second after the reservation it promised
    # (found by hypothesis: nodes=2, [(0,0,1,1),(0,1,0,1),(0,0,0,2),(0,1,0,1)])
    return W(nodes, *[(f"j{k}", s, r, max(1, r + x), min(z, nodes)) for k, (s, r, x, z) in enumerate(raw)])


def check_schedule(w, start, end):
    """Every job started, not before its submission, and the machine was never over-full."""
    assert all(s != math.inf for s in start)
    assert all(s >= j.submit for s, j in zip(start, w.jobs))
    events = sorted([(e, -j.size) for e, j in zip(end, w.jobs)] + [(s, j.size) for s, j in zip(start, w.jobs)])
    used = 0
    for _, d in events:  # ends before starts at the same instant
        used += d
        assert used <= w.nodes


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), jobs_st, st.booleans())
def test_no_job_starts_later_than_its_reservation_at_arrival(nodes, raw, linear):
    w = workload(nodes, raw)
    pol = LINEAR_EXACT if linear else get_policy("conservative")
    raw_run = simulate_conservative(w, pol)
    start, first = raw_run.start, raw_run.reservation
    assert all(s <= f for s, f in zip(start, first))  # the guarantee
    check_schedule(w, start, raw_run.end)
    if linear:
        key = lambda i: (w.jobs[i].submit - w.jobs[i].size, w.jobs[i].submit, i)  # noqa: E731 - P = age_s + nodes
        ref = naive_conservative(w.jobs, w.nodes, key=key)
    else:
        ref = naive_conservative(w.jobs, w.nodes)
    assert (start, first) == ref


def test_max_time_stops_early_and_progress_reports():
    w = read_swf(EXCERPT)
    seen = []
    r = run_simulation(w, "conservative", max_time=86400.0, progress=lambda done, total: seen.append((done, total)))
    t0 = w.jobs[0].submit
    assert all(s <= t0 + 86400.0 for s in r.start if s != math.inf)
    assert 0 < r.stats["unfinished"] < len(w.jobs)
    assert seen and seen[-1][1] == len(w.jobs) and seen[-1][0] < len(w.jobs)


@settings(max_examples=200, deadline=None)
@given(st.integers(4, 6), shaped_st, st.booleans())
def test_the_guarantee_and_the_reference_with_jobs_of_a_few_shapes(nodes, raw, linear):
    # (submit, (size, limit), run as a percentage of the limit)
    w = W(nodes, *[(f"j{k}", sub, lim * pct // 40, lim, min(z, nodes)) for k, (sub, (z, lim), pct) in enumerate(raw)])
    pol = LINEAR_EXACT if linear else get_policy("conservative")
    r = simulate_conservative(w, pol)
    assert all(s <= f for s, f in zip(r.start, r.reservation))
    check_schedule(w, r.start, r.end)
    key = (lambda i: (w.jobs[i].submit - w.jobs[i].size, w.jobs[i].submit, i)) if linear else None
    assert (r.start, r.reservation) == naive_conservative(w.jobs, w.nodes, key=key)
