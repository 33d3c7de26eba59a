"""Steffen (2019) section 5: the worked example of one SFS time slice."""

from __future__ import annotations

from pathlib import Path

import pytest

from fscontrol.sim import get_policy, load_scenario, run_simulation, scenario_from_dict

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "sim" / "sfs-section5.toml"

ALICE = ["A", "B", "C", "D", "E", "F", "G", "H", "J", "K"]
BOB = ["M", "N", "P", "Q", "R", "S", "U", "V", "W", "X"]


def example():
    return scenario_from_dict(
        {
            "name": "s5",
            "nodes": 1000,
            "allocations": {
                "alice": {"award": 144, "period": "1h", "unit": "nodes"},  # target 288
                "bob": {"award": 29, "period": "1h", "unit": "nodes"},  # target 58
            },
            "batches": [
                {"ids": ALICE, "account": "alice", "nodes": 200, "run": "1h"},
                {"ids": BOB, "account": "bob", "nodes": 50, "run": "1h"},
            ],
        }
    )


def first_slice(result):
    jobs = result.workload.jobs
    return [jobs[i].job_id for i in result.start_order if result.start[i] == 0.0]


@pytest.mark.parametrize("load", [example, lambda: load_scenario(SAMPLE)], ids=["dict", "toml-sample"])
def test_sfs_first_slice_is_ABMNCDPQ(load):
    w = load()
    assert w.allocations["alice"].target == pytest.approx(288)
    assert w.allocations["bob"].target == pytest.approx(58)
    # size-favouring priority (Alice's 200-node jobs first), reservation depth 2, then backfill
    r = run_simulation(w, get_policy("sfs-size", depth=2))
    # pass 1: A, B (Alice 400 > 288 stops her), M, N (Bob 100 > 58 stops him);
    # pass 2: C, D; E and F get the two reservations; backfill: P, Q.
    assert first_slice(r) == ["A", "B", "M", "N", "C", "D", "P", "Q"]
    assert r.stats["unfinished"] == 0


def test_linear_priority_alone_starves_bob_in_the_first_slice():
    r = run_simulation(example(), "linear-size")
    assert first_slice(r) == ["A", "B", "C", "D", "E"]


def test_sfs_without_backfill_stops_at_the_reservation_depth():
    r = run_simulation(example(), get_policy("sfs-size", backfill="none"))
    assert first_slice(r) == ["A", "B", "M", "N", "C", "D"]


def test_gate_reaches_the_same_first_slice_one_tick_later():
    # The gate sees the queue only at its ticks: at t=0 nobody is over target, so the linear
    # order starts A..E; at the next tick Alice is over target while Bob waits: her pending
    # jobs are held, and Bob's jobs start as soon as nodes free up.
    r = run_simulation(example(), get_policy("gate-hold-size", gate_interval_s=60.0))
    assert first_slice(r) == ["A", "B", "C", "D", "E"]
    assert r.stats["holds"] >= 5
    bob_first = min(r.start[i] for i, j in enumerate(r.workload.jobs) if j.account == "bob")
    assert bob_first == pytest.approx(3600.0)  # the first ends: Bob goes before Alice's F..K
