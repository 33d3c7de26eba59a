"""SWF reading, and EASY backfill on the full SDSC Blue Horizon log (243,306 records)."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from fscontrol.errors import ConfigError
from fscontrol.sim import (
    load_scenario,
    parse_swf,
    read_swf,
    run_simulation,
    scenario_from_dict,
)

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
# Published and peer simulations of this log under EASY give a mean wait of about 100-115 min
# and a mean bounded slowdown (10 s) of about 27-37. Ours, deterministic: 132.1 min and 36.57
# (user estimates as given, estimate raised to the run time for the 10% of jobs that overran
# it); with overrunning jobs killed at their request instead: 125.0 min and 34.22; with submit
# times shaken by +-30 s (8 seeds): 126.5-132.9 min, 34.6-38.5. The band below is the peers'
# range widened to cover our modelling variants and that shaking spread (docs/simulator.md):
# wait 95-140 min, bounded slowdown 27-40. A broken backfill is far outside it (plain FCFS:
# 6,006 min, 3,281). The golden figures catch any silent change of the engine's decisions.

WAIT_BAND_MIN = (95.0, 140.0)
BSLD_BAND = (27.0, 40.0)
GOLDEN = (132.1, 36.57)  # overrun="extend" (the default); "kill" gives 125.0 min, 34.22


@pytest.fixture(scope="module")
def full_log():
    t0 = time.process_time()  # CPU time: not inflated by other processes on a shared machine
    w = read_swf(FULL)
    return w, time.process_time() - t0


def test_full_log_reads_every_record(full_log):
    w, _ = full_log
    s = w.meta["stats"]
    assert s["records"] == 243_306
    assert s["skipped_no_runtime"] == 10_744
    assert len(w.jobs) == 232_562 and w.nodes == 144
    assert s["overrun"] == 23_434


def test_easy_on_the_full_sdsc_blue_log(full_log):
    w, read_s = full_log
    t0 = time.process_time()
    r = run_simulation(w, "easy", per_user=False)
    sim_s = time.process_time() - t0
    wait_min = r.overall["mean_wait_s"] / 60.0
    bsld = r.overall["mean_bsld"]
    assert r.overall["finished"] == len(w.jobs)
    assert WAIT_BAND_MIN[0] <= wait_min <= WAIT_BAND_MIN[1]
    assert BSLD_BAND[0] <= bsld <= BSLD_BAND[1]
    assert wait_min == pytest.approx(GOLDEN[0], abs=0.1)
    assert bsld == pytest.approx(GOLDEN[1], abs=0.01)
    assert 0.74 < r.overall["utilization"] < 0.80  # the header's offered load ~0.77
    # speed: the whole log well under 20 s of CPU (measured ~1.5 s read + ~2.5 s simulate)
    assert read_s + sim_s < 20.0, f"read {read_s:.1f} s + simulate {sim_s:.1f} s (CPU)"



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
