"""Moldable jobs (issue #16 part 2): Downey's model against hand-computed values, the range and
fair-share formulas, and hand-worked 3-4 job cases for each strategy's choice of size."""

from __future__ import annotations

import math

import pytest

from fscontrol.errors import ConfigError
from fscontrol.sim.moldable import (
    MoldParams,
    Strategy,
    candidate_sizes,
    category_labels,
    category_of,
    downey_speedup,
    get_strategy,
    scaled_time,
    size_range,
    sqrt_limit,
    wpfs_limit,
)
from fscontrol.sim.moldable_sched import simulate_moldable
from fscontrol.sim.workload import SimJob, Workload

# --------------------------------------------------------------------------- Downey


@pytest.mark.parametrize(
    ("n", "A", "sigma", "expected"),
    [
        # sigma = 0: S(n) = min(n, A)
        (5, 10, 0.0, 5.0),
        (10, 10, 0.0, 10.0),
        (20, 10, 0.0, 10.0),
        # sigma = 0.5, n <= A: 10*5 / (10 + 0.5*4/2) = 50/11
        (5, 10, 0.5, 50 / 11),
        # A <= n <= 2A-1: 10*15 / (0.5*9.5 + 15*0.75) = 150/16
        (15, 10, 0.5, 9.375),
        (19, 10, 0.5, 10.0),  # 190 / (4.75 + 14.25): meets the plateau
        (25, 10, 0.5, 10.0),
        # sigma = 2, n <= A + A*sigma - sigma = 28: 4*10*3 / (2*13 + 10) = 120/36
        (4, 10, 2.0, 120 / 36),
        (28, 10, 2.0, 10.0),  # 840 / 84
        (40, 10, 2.0, 10.0),
        # sigma = 1 from the low-variance form: 10*5/(10+2) and 150/(9.5+7.5)
        (5, 10, 1.0, 50 / 12),
        (15, 10, 1.0, 150 / 17),
    ],
)
def test_downey_speedup_hand_computed(n, A, sigma, expected):
    assert downey_speedup(n, A, sigma) == pytest.approx(expected, rel=1e-12)


def test_downey_forms_agree_at_sigma_one_and_s1_is_one():
    for n in (1, 3, 7, 10, 15, 19, 30):
        lo = downey_speedup(n, 10, 1.0)
        hi = downey_speedup(n, 10, 1.0 + 1e-12)  # the high-variance form
        assert lo == pytest.approx(hi, rel=1e-9)
        # high-variance form at sigma = 1, by hand: 2*10*n / (n + 9 + 10) below 19, 10 after
        assert lo == pytest.approx(20 * n / (n + 19) if n <= 19 else 10.0)
    for sigma in (0.0, 0.3, 1.0, 2.5):
        assert downey_speedup(1, 37, sigma) == pytest.approx(1.0)


def test_downey_is_monotone_and_bounded():
    for sigma in (0.0, 0.5, 1.0, 3.0):
        prev = 0.0
        for n in range(1, 200):
            s = downey_speedup(n, 64, sigma)
            assert prev - 1e-12 <= s <= min(n, 64) + 1e-12
            prev = s


def test_scaled_time_uses_the_speedup_ratio():
    # 100 s on 2 nodes, A = 4, sigma = 0: S(2)/S(4) = 1/2
    assert scaled_time(100.0, 2, 4, 4, 0.0) == pytest.approx(50.0)
    # sigma = 1, A = 10: S(5)/S(15) = (50/12) / (150/17)
    assert scaled_time(60.0, 5, 15, 10, 1.0) == pytest.approx(60.0 * (50 / 12) / (150 / 17))


def test_downey_rejects_bad_input():
    for args in ((0, 4, 0.0), (2, 0.5, 0.0), (2, 4, -1.0)):
        with pytest.raises(ConfigError):
            downey_speedup(*args)


# --------------------------------------------------------------------------- range, candidates, limits


def test_size_range_rf_1_and_2():
    assert size_range(9, 129, 1) == (1, 129)
    assert size_range(9, 129, 2) == ((9 + 1) // 2, (9 + 129) // 2)  # (5, 69), the slide's formula
    assert size_range(8, 128, 2) == (5, 68)  # 4.5 rounded up, 68
    assert size_range(1, 144, 2) == (1, 72)
    assert size_range(144, 144, 4) == (109, 144)  # 144 - 143/4 = 108.25, rounded up
    with pytest.raises(ConfigError):
        size_range(5, 4, 1)
    with pytest.raises(ConfigError):
        size_range(2, 4, 0.5)


def test_candidate_sizes_powers_of_two_ends_and_trace_size():
    assert candidate_sizes(1, 144, 3) == (1, 2, 3, 4, 8, 16, 32, 64, 128, 144)
    assert candidate_sizes(5, 68, 8) == (5, 8, 16, 32, 64, 68)


def test_fair_share_limits_by_hand():
    # WPFS: N w_i / sum w, capped at 0.9 N, floored, at least 1
    assert wpfs_limit(1.0, 4.0, 100) == 25
    assert wpfs_limit(1.0, 1.0, 100) == 90  # alone: the 0.9 N cap
    assert wpfs_limit(1.0, 1000.0, 100) == 1
    # sqrt: weights 1, 4, 9 -> roots 1, 2, 3 (sum 6)
    assert sqrt_limit(9.0, 6.0, 100) == 50
    assert sqrt_limit(1.0, 6.0, 100) == 16  # 16.67
    assert sqrt_limit(4.0, 2.0, 100) == 90


def test_categories_are_decades_of_processor_seconds():
    assert [category_of(x) for x in (999, 1000, 5e4, 9.9e6, 1e7, 3e9)] == [0, 1, 2, 4, 5, 5]
    assert category_labels() == ["<1e3", "1e3-1e4", "1e4-1e5", "1e5-1e6", "1e6-1e7", ">=1e7"]


def test_params_and_strategy_errors_are_config_errors():
    for kw in ({"sigma": -1}, {"rf": 0.5}, {"lf": 0}, {"avg_par": "wide"}, {"xfactor": 1}, {"estimates": "x"}, {"backfill": "x"}, {"share_over": "x"}):
        with pytest.raises(ConfigError):
            MoldParams(**kw)
    assert MoldParams(avg_par="16").A_for(4, 144) == 16.0
    with pytest.raises(ConfigError, match="unknown moldable strategy"):
        get_strategy("mold-nosuch")
    assert get_strategy("mold-greedy") is get_strategy("greedy")


# --------------------------------------------------------------------------- hand-worked schedules


def _w(nodes: int, jobs: list[tuple[float, int, float]]) -> Workload:
    """(submit, trace size, run = request) per job."""
    return Workload("hand", nodes, [SimJob(f"j{k}", s, r, r, n, "u", "a") for k, (s, n, r) in enumerate(jobs)])


P0 = MoldParams(sigma=0.0)  # A = the machine: S(n) = n


def test_greedy_takes_the_earliest_completion():
    # 4 nodes. j0 (t=0, 2 nodes, 100 s): on 4 nodes it ends at 50 (on 2 at 100) -> 4.
    # j1 (t=10, 1 node, 40 s): machine busy to 50; 1 node ends 90, 2 nodes 70, 4 nodes 60 -> 4 at 50.
    w = _w(4, [(0, 2, 100), (10, 1, 40)])
    r = simulate_moldable(w, get_strategy("greedy"), P0)
    assert r.size == [4, 4]
    assert r.start == [0, 50] and r.end == [50, 60]


def test_rigid_conservative_keeps_trace_sizes_and_backfills():
    w = _w(4, [(0, 2, 100), (10, 1, 40)])
    r = simulate_moldable(w, get_strategy("rigid-cons"), P0)
    assert r.size == [2, 1] and r.start == [0, 10] and r.end == [100, 50]


def test_wpfs_conservative_limit_by_hand():
    # j0 alone: weight 2*100 = 200 = the sum -> min(0.9*4, 4) = 3.6 -> 3 nodes, 200/3 s.
    # j1 at 10: weight 40, sum 240 -> 4*40/240 = 0.67 -> 1 node; 1 node free until 66.7: starts now.
    w = _w(4, [(0, 2, 100), (10, 1, 40)])
    r = simulate_moldable(w, get_strategy("wpfs-cons"), P0)
    assert r.size == [3, 1]
    assert r.start == [0, 10]
    assert r.end[0] == pytest.approx(200 / 3) and r.end[1] == pytest.approx(50)


def test_schedule_time_sqrt_vs_wpfs_limits_by_hand():
    # 10 nodes, every job 1 node in the trace, request = run, A = 10 (S(n) = n).
    # j0 (t=0, 100 s, weight 100) alone: limit min(9, 10) = 9 -> 9 nodes, ends 100/9 = 11.1.
    # j1 (t=1, 400 s, weight 400), j2 (t=1, 100 s, weight 100); 1 node free until 11.1.
    # sqrt-FS at t=1 (roots 10 + 20 + 10 = 40): j1 limit 5, best 5 nodes from 11.1 (91.1; 1 node
    #   now ends 401): the head's reservation. j2 limit 2.5 -> 2: 1 node now ends 101, 2 from
    #   11.1 end 61.1: not now, no reservation: it waits. At 11.1 j0 has left (roots 20 + 10):
    #   j1 limit 6.67 -> 6 nodes now (ends 11.1 + 66.7), j2 3.33 -> 3 nodes now (11.1 + 33.3).
    # WPFS at t=1 (100 + 400 + 100): j1 limit 6.67 -> 6 from 11.1 (the head); j2 limit 1.67 -> 1:
    #   1 node now (ends 101) is its best and touches no reservation: it starts. At 11.1 (400 +
    #   100): j1 limit 8, 9 nodes free: 8 nodes, ends 11.1 + 50.
    w = _w(10, [(0, 1, 100), (1, 1, 400), (1, 1, 100)])
    t1 = 100 / 9
    r = simulate_moldable(w, get_strategy("sqrtfs"), P0)
    assert r.size == [9, 6, 3]
    assert r.start == [0, pytest.approx(t1), pytest.approx(t1)]
    assert r.end[1:] == [pytest.approx(t1 + 400 / 6), pytest.approx(t1 + 100 / 3)]
    r = simulate_moldable(w, get_strategy("wpfs"), P0)
    assert r.size == [9, 8, 1]
    assert r.start == [0, pytest.approx(t1), 1]
    assert r.end[1:] == [pytest.approx(t1 + 50), 101]


def test_share_over_the_queue_only_by_hand():
    # The case above with the sums over the waiting jobs only: at t=1 j0 runs and does not count
    # (roots 20 + 10): j1 6 nodes from 11.1 (reserved), j2 3 -> waits. At 11.1 j1 starts on 6 and
    # leaves the sum: j2 alone, limit 9, 4 nodes free now (25 s) beats 8 after j1 (77.8 + 12.5).
    w = _w(10, [(0, 1, 100), (1, 1, 400), (1, 1, 100)])
    r = simulate_moldable(w, get_strategy("sqrtfs"), MoldParams(share_over="queue"))
    assert r.size == [9, 6, 4]
    assert r.end[2] == pytest.approx(100 / 9 + 25)


def test_backfill_best_waits_for_its_size_backfill_now_takes_what_fits():
    # 4 nodes, A = the trace size (no gain beyond it). j0 (2 nodes, 100 s) runs [0, 100); j1
    # (3 nodes, 300 s; on the 2 free nodes now it would end at 451) is the head, reserved on 3
    # nodes [100, 400), 1 node spare. j2 (2 nodes, 500 s): 2 nodes cannot start before 400 (ends
    # 900); 1 node fits now beside j1's reservation (1000 s, ends 1002).
    w = _w(4, [(0, 2, 100), (1, 3, 300), (2, 2, 500)])
    best = simulate_moldable(w, Strategy("b", "schedule"), MoldParams(avg_par="trace"))
    assert best.size == [2, 3, 2] and best.start == [0, 100, 400] and best.end[2] == 900
    now = simulate_moldable(w, Strategy("n", "schedule"), MoldParams(avg_par="trace", backfill="now"))
    assert now.size == [2, 3, 1] and now.start == [0, 100, 2] and now.end[2] == 1002


def _blocking_case() -> Workload:
    """4 nodes, rigid. j0 (t=0, 2 nodes, 100 s); j1 (t=1, 3 nodes, 100 s): the head, reserved at
    [100, 200) with 1 node spare; j2 (t=2, 4 nodes, 1000 s, weight 4000: category 1e3-1e4);
    j3 (t=3, 1 node, 500 s, weight 500: category <1e3 like j1). With a reservation only for the
    head, j3 starts at 3 (2 nodes free to 100, 1 spare beside j1, then free) and holds a node to
    503, so j2 starts at 503. If j2 also holds a reservation ([200, 1200)), j3 cannot start
    before 1200 and j2 starts at 200."""
    return _w(4, [(0, 2, 100), (1, 3, 100), (2, 4, 1000), (3, 1, 500)])


def test_category_reservation_protects_the_first_job_of_each_category():
    w = _blocking_case()
    head_only = simulate_moldable(w, Strategy("h", "schedule", moldable=False), P0)
    assert head_only.start == [0, 100, 503, 3]
    cat = simulate_moldable(w, Strategy("c", "schedule", moldable=False, category=True), P0)
    assert cat.start == [0, 100, 200, 1200]


def test_xfactor_reservation_over_the_threshold_only():
    w = _blocking_case()
    # j2's ESRT = 1000 s * S(4) = 4000 s; at t = 3 its Xfactor is (4000 + 1) / 4000
    lenient = simulate_moldable(w, Strategy("x", "schedule", moldable=False, xfactor=True), MoldParams(xfactor=2.0))
    assert lenient.start == [0, 100, 503, 3]
    strict = simulate_moldable(w, Strategy("x", "schedule", moldable=False, xfactor=True), MoldParams(xfactor=1.0001))
    assert strict.start == [0, 100, 200, 1200]


def test_conservative_compression_when_a_job_ends_early():
    # 4 nodes, rigid. j0 (t=0, 4 nodes, runs 10 s of a 100 s request); j1 (t=1, 4 nodes, 10 s)
    # reserved at 100, moved to 10 when j0 ends.
    w = Workload("hand", 4, [SimJob("a", 0, 10, 100, 4), SimJob("b", 1, 10, 10, 4)])
    r = simulate_moldable(w, get_strategy("rigid-cons"), P0)
    assert r.start == [0, 10] and r.end == [10, 20]


def test_imperfect_scalability_moves_the_greedy_choice():
    # 4 nodes, one job of 2 nodes x 100 s, A = 2 (trace), sigma = 0: S(4) = S(2) -> no gain from 4
    # nodes: greedy keeps the smallest size with the earliest completion (2), ties to the smaller.
    w = _w(4, [(0, 2, 100)])
    r = simulate_moldable(w, get_strategy("greedy"), MoldParams(avg_par="trace"))
    assert r.size == [2] and r.end == [100]
    # A = 4, sigma = 1: S(2) = 4*2/(4+0.5) = 1.78, S(4) = 16/5.5 = 2.91: 4 nodes, 100*1.78/2.91 s
    r = simulate_moldable(w, get_strategy("greedy"), MoldParams(sigma=1.0))
    assert r.size == [4] and r.end[0] == pytest.approx(100 * (8 / 4.5) / (16 / 5.5))


def test_load_factor_and_range_factor():
    w = _w(4, [(0, 2, 100)])
    r = simulate_moldable(w, get_strategy("greedy"), MoldParams(lf=1.25, rf=2))
    # RF 2: sizes (2+1)/2 -> 2 .. (2+4)/2 = 3; the run 125 s on 2 nodes -> 250/3 on 3
    assert r.size == [3] and r.end[0] == pytest.approx(250 / 3)


def test_every_strategy_runs_the_excerpt_and_keeps_the_machine():
    from pathlib import Path

    from fscontrol.sim.moldable import STRATEGIES
    from fscontrol.sim.workload import read_swf

    w = read_swf(Path(__file__).resolve().parent.parent / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln-first2000.swf", limit=400)
    for name, st in STRATEGIES.items():
        r = simulate_moldable(w, st, MoldParams(sigma=1.0))
        assert all(e < math.inf for e in r.end), name
        # no instant uses more than the machine (the ends sorted against the starts)
        ev = sorted([(s, r.size[i]) for i, s in enumerate(r.start)] + [(e, -r.size[i]) for i, e in enumerate(r.end)],
                    key=lambda x: (x[0], x[1]))
        used = peak = 0
        for _, d in ev:
            used += d
            peak = max(peak, used)
        assert peak <= w.nodes, name
        lo_hi = [size_range(j.size, w.nodes, 1) for j in w.jobs]
        assert all(lo <= s <= hi for s, (lo, hi) in zip(r.size, lo_hi)), name
        if not st.moldable:
            assert r.size == [j.size for j in w.jobs], name


# --------------------------------------------------------------------------- against the engine, the CLI

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
EXCERPT = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln-first2000.swf"


def test_rigid_schedule_time_is_the_engines_easy():
    """Independent check of the schedule-time pass: with trace sizes and a reservation for the
    head only it must be EASY; the engine's EASY (fast path, checked against a naive EASY in
    test_sim_swf) gives the same start for every job of the excerpt (also 28,426 of 28,426 on
    the first 30,000 records of the log, measured)."""
    from fscontrol.sim import read_swf, run_simulation

    w = read_swf(EXCERPT)
    easy = run_simulation(w, "easy", per_user=False)
    mine = simulate_moldable(w, get_strategy("rigid-easy"), MoldParams())
    assert mine.start == easy.start


def test_rigid_submit_time_is_the_engines_conservative_backfilling():
    """Independent check of the submit-time path: with trace sizes it is conservative
    backfilling (reservation at arrival, compression in arrival order after an early end), which
    fscontrol.sim.conservative implements separately: the same start for every job of the
    excerpt (also 28,426 of 28,426 on the first 30,000 records of the log, measured)."""
    from fscontrol.sim import read_swf, run_simulation

    w = read_swf(EXCERPT)
    cons = run_simulation(w, "conservative", per_user=False)
    mine = simulate_moldable(w, get_strategy("rigid-cons"), MoldParams())
    assert mine.start == cons.start


def test_run_simulation_dispatches_mold_presets_and_json_has_categories():
    import json

    from fscontrol.sim import read_swf, run_simulation

    w = read_swf(EXCERPT, limit=300)
    r = run_simulation(w, "mold-sqrtfs-cat-xf", mold=MoldParams(sigma=1.0))
    d = json.loads(json.dumps(r.to_dict()))
    m = d["stats"]["moldable"]
    assert m["strategy"]["name"] == "sqrtfs-cat-xf" and m["params"]["sigma"] == 1.0
    assert sum(c["jobs"] for c in m["categories"]) == len(w.jobs)
    assert d["overall"]["finished"] == len(w.jobs)
    # the molded workload: sizes are the chosen ones
    assert [j.size for j in r.workload.jobs] != [j.size for j in w.jobs]


def test_cli_moldable_table_json_and_errors(tmp_path):
    import json

    from typer.testing import CliRunner

    from fscontrol.cli.app import app

    def run(*args):
        return CliRunner().invoke(app, ["simulate", str(EXCERPT), "--limit", "300", "--no-progress", *args])

    r = run("-p", "mold-rigid-cons", "-p", "mold-greedy", "--sigma", "1")
    assert r.exit_code == 0, r.output
    assert "per category of trace processor-seconds" in r.output and "greedy" in r.output
    r = run("-p", "mold-greedy", "--json", "--rf", "2", "--lf", "1.25")
    assert r.exit_code == 0, r.output
    (d,) = json.loads(r.output)
    assert d["stats"]["moldable"]["params"]["rf"] == 2 and d["stats"]["moldable"]["params"]["lf"] == 1.25
    for args, msg in [
        (["-p", "mold-greedy", "--sigma", "-1"], "sigma must be a number >= 0"),
        (["-p", "mold-nosuch"], "unknown moldable strategy"),
        (["-p", "mold-greedy", "--rf", "0.5"], "range factor must be a number >= 1"),
        (["-p", "easy", "--categories-png", str(tmp_path / "c.png")], "needs at least one mold-* policy"),
        (["-p", "mold-greedy", "--jobs", "2"], "mold-* policies run on their own"),
    ]:
        r = run(*args)
        assert r.exit_code == 2, (args, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fscontrol: error:") and msg in lines[0], r.output


def _category_runs():
    from fscontrol.sim import read_swf
    from fscontrol.sim.moldable_report import run_moldable

    w = read_swf(EXCERPT, limit=300)
    return [run_moldable(w, s) for s in ("rigid-cons", "greedy")]


def test_category_text_chart_and_table():
    from fscontrol.sim.moldable_report import format_categories, render_categories_text

    rs = _category_runs()
    txt = render_categories_text(rs)
    assert txt.splitlines()[0].startswith("change of mean turnaround against rigid-cons")
    assert "greedy" in txt
    table = format_categories(rs)
    assert "rigid-cons (h)" in table and "| all" in table


@pytest.mark.plot
def test_category_png(tmp_path):
    from fscontrol.sim.moldable_report import render_categories_png

    p = render_categories_png(_category_runs(), tmp_path / "c.png")
    assert p.stat().st_size > 1000


def test_experiment_json_and_redraw(tmp_path, capsys):
    from fscontrol.sim.moldable_experiment import main

    js = tmp_path / "r.json"
    assert main(["--log", str(EXCERPT), "--limit", "200", "--strategies", "rigid-cons,greedy", "--json", str(js)]) == 0
    first = capsys.readouterr().out
    assert main(["--from-json", str(js), "--only", "rigid-cons,greedy"]) == 0
    again = capsys.readouterr().out
    # the same table, from the stored numbers
    table = [ln for ln in first.splitlines() if ln.startswith("| ")]
    assert table and table == [ln for ln in again.splitlines() if ln.startswith("| ")]
    assert main(["--from-json", str(js), "--only", "nosuch"]) == 2
    assert main(["--log", str(EXCERPT), "--sigma", "-1"]) == 2
