"""Steffen (2019) section 9: the qualitative result, on a few seeds (docs/simulator.md has 20).

Regenerate the full table: .venv/bin/python -m fscontrol.sim.experiment --seeds 20
"""

from __future__ import annotations

import statistics

import pytest

from fscontrol.sim import Section9Params, run_simulation, section9_workload
from fscontrol.sim.experiment import format_section9, main, run_section9

DAY = 86400.0
SEEDS = range(3)


def test_generator_follows_the_paper():
    w = section9_workload(0)
    p = Section9Params()
    assert w.nodes == 1400
    by = {}
    for j in w.jobs:
        by.setdefault(j.account, []).append(j)
    assert len(by["alice"]) == 7 * 12 and {j.size for j in by["alice"]} == {250}
    assert len(by["bob"]) == 7 * 6 and {j.size for j in by["bob"]} == {65}
    assert len(by["chris"]) == 1 and by["chris"][0].size == 750 and by["chris"][0].submit == 6 * DAY
    assert all(0.70 * p.request_s <= j.run <= 0.95 * p.request_s for j in w.jobs)
    assert {j.submit for j in by["alice"]} == {d * DAY for d in range(7)}
    # seeded: same seed, same jobs; another seed, other run times
    assert [j.run for j in section9_workload(0).jobs] == [j.run for j in w.jobs]
    assert [j.run for j in section9_workload(1).jobs] != [j.run for j in w.jobs]
    assert w.allocations["bob"].target == pytest.approx(260)


@pytest.fixture(scope="module")
def table():
    return {r["preset"]: r for r in run_section9(SEEDS, backfill=False)}


def mean_days(xs):
    return statistics.fmean(xs) / DAY


def test_linear_eligible_time_dominant_matches_the_paper(table):
    r = table["linear-eligible"]
    assert 1.2 <= mean_days(r["bob_first"]) <= 1.9  # paper: "about 1 1/2 days"
    assert 6.0 <= mean_days(r["chris_first"]) <= 7.6  # paper: "almost 7 days" / 6-7 days


def test_linear_node_count_dominant_matches_the_paper(table):
    r = table["linear-size"]
    assert mean_days(r["bob_first"]) >= 2.5  # paper: "more than 2 1/2 days"
    assert mean_days(r["chris_first"]) < 1.0  # paper: "less than a day"


def test_sfs_and_the_gate_serve_bob_at_once(table):
    linear = table["linear-eligible"]
    for preset in ("sfs-eligible", "sfs-size", "gate-hold-eligible", "gate-nice-eligible", "gate-hold-size",
                   "gate-nice-size"):
        r = table[preset]
        assert max(r["bob_first"]) <= 600.0, preset  # immediate (the gate: its 5-minute tick)
        assert mean_days(r["bob_wait"]) < 0.2 * mean_days(linear["bob_wait"]), preset
    # SFS does not help Chris under eligible-time dominance (paper 9.3.3) ...
    assert mean_days(table["sfs-eligible"]["chris_first"]) > 5.0
    # ... node-count dominance does, though less than in the paper (docs/simulator.md)
    assert mean_days(table["sfs-size"]["chris_first"]) < 2.5
    # The hold gate takes the over-target jobs out of the queue: Chris becomes the head job.
    assert mean_days(table["gate-hold-eligible"]["chris_first"]) < 1.0


def test_with_backfill_bob_slips_into_the_hole_even_under_linear():
    # 1400 = 5 x 250 + 150: two 65-node jobs always fit beside Alice's; any backfill starts them.
    rows = run_section9(range(1), backfill=True, configs=[("linear", "linear-eligible", "", "")])
    assert rows[0]["bob_first"] == [0.0]
    assert mean_days(rows[0]["bob_wait"]) > 2.0  # but most of Bob's jobs still wait days


def test_formatting_and_command_line(capsys, table):
    text = format_section9(list(table.values()))
    assert "Bob first start" in text and "~1.5 d" in text
    assert main(["--seeds", "1", "--format", "simple"]) == 0
    out = capsys.readouterr().out
    assert "SFS, eligible-time dominant" in out and "gate hold" in out


def test_gate_run_has_no_stall_and_all_jobs_finish():
    r = run_simulation(section9_workload(2), "gate-hold-eligible")
    assert r.stats["unfinished"] == 0 and not r.stats["notes"]
    assert r.stats["holds"] > 0 and r.stats["releases"] > 0
