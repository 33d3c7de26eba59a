"""SWF reading, and EASY backfill on the full SDSC Blue Horizon log (243,306 records)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from fscontrol.errors import ConfigError
from fscontrol.sim.workload import DAY
from fscontrol.sim import (
    load_scenario,
    parse_swf,
    read_swf,
    run_simulation,
    scenario_from_dict,
)

from peer_models import accasim_ebf, cqsim_easy, naive_easy, schedule_metrics

TRACES = Path(__file__).resolve().parents[1] / "samples" / "traces"
FULL = TRACES / "SDSC-BLUE-2000-4.2-cln.swf.gz"
EXCERPT = TRACES / "SDSC-BLUE-2000-4.2-cln-first2000.swf"

HEADER = "; MaxNodes: 4\n; MaxProcs: 32\n"


def line(job, submit, run, alloc, req_procs, req_time, user=7, group=-1, status=1):
    f = [job, submit, 0, run, alloc, -1, -1, req_procs, req_time, -1, status, user, group, -1, 3, -1, -1, -1]
    return " ".join(str(x) for x in f) + "\n"


def test_parse_swf_fields_and_quirks():
    text = HEADER + "".join(
        [
            line(1, 0, 100, 16, 16, 200),  # 2 nodes
            line(2, 5, 100, -1, 24, 200),  # alloc unknown: requested procs -> 3 nodes
            line(3, 6, -1, 8, 8, 200, status=5),  # never ran: skipped
            line(4, 7, 300, 8, 8, 200),  # overran its request
            line(5, 8, 10, 12, 12, -1),  # 12 procs -> 2 nodes; no request: estimate = run
            line(6, 9, 10, 64, 64, 100),  # bigger than the machine: dropped
        ]
    )
    w = parse_swf(text.splitlines(keepends=True), procs_per_node=8)
    assert w.nodes == 4
    assert [(j.job_id, j.size, j.run, j.estimate) for j in w.jobs] == [
        ("1", 2, 100, 200), ("2", 3, 100, 200), ("4", 1, 300, 300), ("5", 2, 10, 10)]
    assert w.jobs[0].user == "7" and w.jobs[0].account == "7"  # group -1: account = user
    stats = w.meta["stats"]
    assert stats["records"] == 6 and stats["skipped_no_runtime"] == 1 and stats["overrun"] == 1
    assert stats["skipped_too_big"] == 1
    killed = parse_swf(text.splitlines(keepends=True), overrun="kill")
    assert [(j.run, j.estimate) for j in killed.jobs if j.job_id == "4"] == [(200, 200)]
    assert len(parse_swf(text.splitlines(keepends=True), limit=2).jobs) == 2


def test_parse_swf_errors():
    with pytest.raises(ConfigError, match="line 2"):
        parse_swf(HEADER.splitlines(keepends=True)[:1] + ["1 2 3\n"])
    with pytest.raises(ConfigError):
        parse_swf([HEADER], overrun="maybe")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        read_swf(EXCERPT, overrun="maybe")


def test_read_plain_and_gz_agree(tmp_path):
    gz = tmp_path / "x.swf.gz"
    with open(EXCERPT, "rb") as src, gzip.open(gz, "wb") as dst:
        dst.write(src.read())
    a, b = read_swf(EXCERPT), read_swf(gz)
    assert a.nodes == b.nodes == 144
    assert [(j.submit, j.size) for j in a.jobs] == [(j.submit, j.size) for j in b.jobs]
    assert a.meta["header"]["Installation"] == "SDSC Blue Horizon"


def test_scenario_errors(tmp_path):
    with pytest.raises(ConfigError, match="nodes"):
        scenario_from_dict({"jobs": []})
    with pytest.raises(ConfigError, match="outside"):
        scenario_from_dict({"nodes": 4, "jobs": [{"nodes": 5, "run": 1}]})
    with pytest.raises(ConfigError, match="run"):
        scenario_from_dict({"nodes": 4, "jobs": [{"nodes": 1}]})
    with pytest.raises(ConfigError, match="duplicate"):
        scenario_from_dict({"nodes": 4, "jobs": [{"id": "a", "nodes": 1, "run": 1}, {"id": "a", "nodes": 1, "run": 1}]})
    with pytest.raises(ConfigError, match="unit 'nodes'"):
        scenario_from_dict({"nodes": 4, "allocations": {"x": {"award": 1, "period": 3600}}})
    p = tmp_path / "s.json"
    p.write_text('{"nodes": 2, "batches": [{"count": 3, "prefix": "j", "account": "a", "nodes": 1, "run": "1m"}]}')
    w = load_scenario(p)
    assert [j.job_id for j in w.jobs] == ["j1", "j2", "j3"] and w.jobs[0].run == 60
    bad = tmp_path / "bad.toml"
    bad.write_text("nodes = [")
    with pytest.raises(ConfigError):
        load_scenario(bad)
    with pytest.raises(ConfigError):
        load_scenario(tmp_path / "missing.toml")


# ------------------------------------------------------------------ the full log
#
# Our EASY (user estimates as given, the estimate raised to the run time for the 10% of jobs
# that overran it), deterministic: mean wait 129.28 min, mean bounded slowdown (10 s) 36.24.
# The "100-115 min, 27-37" are the two peers: CQSim 100.6 min / 27.0 and AccaSim 1.1.3
# 114.1 / 36.3, both run on this machine on this log. Neither is EASY with user estimates:
# CQSim decides backfill by each job's actual run time, AccaSim never keeps the head job's
# nodes free. Replicas of both (tests/peer_models.py) reproduce their figures from our reading
# of the log; the tests below pin that, and how AccaSim's figure comes about (docs/simulator.md,
# "Check 1"; scripts/sdsc-check.py prints the whole table). Plain FCFS: 6,322 min.

GOLDEN = (129.28, 36.24)  # overrun="extend" (the default); "kill" gives 129.88, 37.64
ACCASIM_REPLICA = (115.35, 37.23)  # AccaSim measured: 114.13, 36.32 (field 8, raw estimates)
CQSIM_REPLICA = (101.31, 27.38)  # CQSim measured: 100.63, 27.02


@pytest.fixture(scope="module")
def full_log():
    return read_swf(FULL)


@pytest.fixture(scope="module")
def full_easy(full_log):
    return run_simulation(full_log, "easy", per_user=False)


def test_full_log_reads_every_record(full_log):
    s = full_log.meta["stats"]
    assert s["records"] == 243_306
    assert s["skipped_no_runtime"] == 10_744
    assert len(full_log.jobs) == 232_562 and full_log.nodes == 144
    assert s["overrun"] == 23_434
    requested = read_swf(FULL, processors="requested")
    differ = sum(a.size != b.size for a, b in zip(full_log.jobs, requested.jobs))
    assert len(requested.jobs) == len(full_log.jobs) and differ == 710


def test_easy_on_the_full_sdsc_blue_log(full_easy):
    r = full_easy
    assert r.overall["finished"] == len(r.workload.jobs)
    assert r.overall["mean_wait_s"] / 60.0 == pytest.approx(GOLDEN[0], abs=0.01)
    assert r.overall["mean_bsld"] == pytest.approx(GOLDEN[1], abs=0.01)
    assert 0.74 < r.overall["utilization"] < 0.80  # the header's offered load ~0.77


def test_easy_matches_the_naive_reference_on_the_whole_log(full_log, full_easy):
    # the fast path's shortcuts (kept shadow and extra, arrivals checked alone) change nothing
    assert full_easy.start == naive_easy(full_log.jobs, full_log.nodes)


def test_peers_lower_mean_wait_is_accasims_unprotected_backfill(full_log, full_easy):
    peer, ours = accasim_ebf(full_log.jobs, full_log.nodes), full_easy.start
    m = schedule_metrics(full_log, peer)
    # the peer figure, reproduced from the same jobs by AccaSim's algorithm
    assert m["mean_wait_s"] / 60.0 == pytest.approx(ACCASIM_REPLICA[0], abs=0.01)
    assert m["mean_bsld"] == pytest.approx(ACCASIM_REPLICA[1], abs=0.01)
    assert m["mean_wait_s"] < 0.9 * full_easy.overall["mean_wait_s"]
    # how: narrow jobs gain, the widest starve (EASY never lets a backfilled job delay the head)
    one = schedule_metrics(full_log, peer, hi=1), schedule_metrics(full_log, ours, hi=1)
    wide = schedule_metrics(full_log, peer, lo=65), schedule_metrics(full_log, ours, lo=65)
    assert one[0]["mean_wait_s"] < 0.5 * one[1]["mean_wait_s"]
    assert wide[0]["mean_wait_s"] > 5 * wide[1]["mean_wait_s"]
    assert m["max_wait_s"] > 100 * DAY and full_easy.overall["max_wait_s"] < 5 * DAY


def test_peers_lowest_mean_wait_is_cqsims_backfill_by_actual_run_time(full_log, full_easy):
    m = schedule_metrics(full_log, cqsim_easy(full_log.jobs, full_log.nodes))
    assert m["mean_wait_s"] / 60.0 == pytest.approx(CQSIM_REPLICA[0], abs=0.01)
    assert m["mean_bsld"] == pytest.approx(CQSIM_REPLICA[1], abs=0.01)
    # the same EASY deciding by the estimates (the scheduler's only knowledge) is ours
    assert m["mean_wait_s"] < 0.8 * full_easy.overall["mean_wait_s"]


def _easy_and_peer(peer, nodes, *jobs):
    """Start times under our EASY and under a peer replica; jobs: (id, submit, run, limit, nodes)."""
    keys = ("id", "submit", "run", "limit", "nodes")
    w = scenario_from_dict({"nodes": nodes, "jobs": [dict(zip(keys, j)) for j in jobs]})
    ids = [j.job_id for j in w.jobs]
    return dict(zip(ids, run_simulation(w, "easy").start)), dict(zip(ids, peer(w.jobs, w.nodes)))


def test_cqsim_replica_backfills_by_actual_run_time():
    # "liar" asked for 1000 s and runs 10: by its request it would delay the head (EASY: waits);
    # by its run time it ends before the shadow, so CQSim backfills it.
    easy, peer = _easy_and_peer(cqsim_easy, 4, ("a", 0, 100, 100, 3), ("head", 1, 10, 10, 4), ("liar", 2, 10, 1000, 1))
    assert easy == {"a": 0, "head": 100, "liar": 110}
    assert peer == {"a": 0, "head": 100, "liar": 2}


def test_accasim_replica_lets_backfill_delay_the_head_job():
    # A runs 50 s of its 100 s estimate; H (whole machine) is blocked behind it; S (1 node, 200 s)
    # arrives next. EASY starts H when A ends and S after H. AccaSim only retries H at its
    # reservation time (100), so at 50 S backfills onto the free node and H waits for S.
    easy, peer = _easy_and_peer(accasim_ebf, 10, ("A", 0, 50, 100, 10), ("H", 1, 10, 10, 10), ("S", 2, 200, 200, 1))
    assert easy == {"A": 0, "H": 50, "S": 60}
    assert peer == {"A": 0, "S": 50, "H": 250}


def test_load_workload_specs(tmp_path):
    from fscontrol.sim import load_workload

    assert load_workload("section9:2").meta["seed"] == 2
    assert load_workload("section9").meta["seed"] == 0
    assert load_workload(EXCERPT, limit=10).nodes == 144
    assert load_workload(TRACES.parent / "sim" / "sfs-section5.toml").nodes == 1000
    for bad in ("section9:x", str(tmp_path / "nope.swf")):
        with pytest.raises(ConfigError):
            load_workload(bad)
    other = tmp_path / "w.csv"
    other.write_text("x")
    with pytest.raises(ConfigError, match="expected"):
        load_workload(other)
