"""`fscontrol simulate`: golden report, JSON, SWF reading options, errors (regenerate golden files:
FSCONTROL_REGEN_GOLDEN=1)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.sim import read_swf, run_simulation

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
SECTION5 = ROOT / "samples" / "sim" / "sfs-section5.toml"
EXCERPT = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln-first2000.swf"


def _run(*args: str):
    return CliRunner().invoke(app, ["simulate", *args, "--no-progress"])


def test_simulate_report_golden():
    r = _run(str(SECTION5), "-p", "sfs-size", "-p", "linear-size")
    assert r.exit_code == 0, r.output
    got = re.sub(r"simulated in [0-9.]+ s \([0-9,]+ jobs/s\)", "simulated in T s (R jobs/s)", r.output)
    path = GOLDEN / "simulate_section5.txt"
    if os.environ.get("FSCONTROL_REGEN_GOLDEN") == "1":
        path.write_text(got)
    assert got == path.read_text()


def test_simulate_json_passes_the_swf_reading_options():
    r = _run(str(EXCERPT), "--json", "--overrun", "kill", "--processors", "requested")
    assert r.exit_code == 0, r.output
    (d,) = json.loads(r.output)
    assert d["workload"]["meta"]["overrun"] == "kill" and d["workload"]["meta"]["processors"] == "requested"
    same = run_simulation(read_swf(EXCERPT, overrun="kill", processors="requested"), "easy", per_user=False)
    assert d["overall"]["mean_wait_s"] == same.overall["mean_wait_s"]
    default = run_simulation(read_swf(EXCERPT), "easy", per_user=False)
    assert d["overall"]["mean_wait_s"] != default.overall["mean_wait_s"]  # the options did something


def test_simulate_errors_are_one_line_and_exit_2(tmp_path):
    for args, msg in [
        ([str(EXCERPT), "--processors", "both"], "SWF processors must be 'allocated' or 'requested', not 'both'"),
        ([str(EXCERPT), "--overrun", "maybe"], "SWF overrun handling must be 'extend' or 'kill', not 'maybe'"),
        ([str(tmp_path / "none.swf")], "no such file"),
        ([str(SECTION5), "-p", "nosuch"], "nosuch"),
        ([str(SECTION5), "-p", "sfs-size+cons"], "conservative backfilling takes a priority order (fcfs or linear), not 'sfs'"),
        ([str(SECTION5), "-p", "easy+nosuch"], "unknown policy suffix 'nosuch' (use +nobf, +bf or +cons)"),
    ]:
        r = _run(*args)
        assert r.exit_code == 2, (args, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fscontrol: error:") and msg in lines[0], r.output


def test_simulate_conservative_json_and_the_kth_log_read_with_one_processor_per_node():
    kth = ROOT / "samples" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
    r = _run(str(kth), "--limit", "300", "-p", "conservative", "-p", "easy", "--json")
    assert r.exit_code == 0, r.output
    cons, easy = json.loads(r.output)
    assert cons["policy"]["backfill"] == "conservative" and cons["policy"]["label"] == "conservative"
    assert cons["workload"]["nodes"] == 100 and cons["workload"]["meta"]["procs_per_node"] == 1  # MaxProcs / MaxNodes
    same = run_simulation(read_swf(kth, limit=300), "conservative", per_user=False)
    for k in ("mean_wait_s", "mean_response_s", "mean_bsld", "makespan_s"):
        assert cons["overall"][k] == same.overall[k], k
    o = cons["overall"]
    assert o["mean_response_s"] > o["mean_wait_s"] > 0 and o["makespan_s"] > 0
    assert easy["policy"]["backfill"] == "easy"


def test_simulate_an_empty_swf_is_one_line_and_exit_2(tmp_path):
    """Issue 28: an SWF with no job lines printed an empty table and exited 0; with --control it
    was a traceback (sim/controlexp.py:107). An empty file, and one of comments only."""
    import subprocess
    import sys

    for name, text in (("empty.swf", ""), ("comments.swf", "; Version: 2.2\n; Computer: none\n")):
        f = tmp_path / name
        f.write_text(text)
        for extra in ((), ("--control", "damping", "--u-star", "10")):
            r = subprocess.run([sys.executable, "-m", "fscontrol", "simulate", str(f), "--no-progress", *extra],
                               capture_output=True, text=True, timeout=120, cwd=ROOT)
            assert r.returncode == 2, (extra, r.stdout, r.stderr)
            assert r.stdout == "" and "Traceback" not in r.stderr
            assert r.stderr.strip().splitlines() == [
                f"fscontrol: error: workload {str(f)!r} has no jobs to simulate: its SWF has no job lines"]
