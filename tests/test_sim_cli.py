"""`fscontrol simulate`: golden report, JSON, SWF reading options, errors (regenerate golden files:
FSCONTROL_REGEN_GOLDEN=1)."""

from __future__ import annotations

import gzip
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


def test_simulate_a_bad_swf_field_or_a_corrupt_gz_is_one_line_naming_it_and_exit_2(tmp_path):
    """An outside tester: a `nan` run time was accepted (RuntimeWarning, "mean response nan", exit
    0), negative processors said "its SWF has no job lines", a corrupt .swf.gz printed `Aborted!`
    and exited 1."""
    good = "1 0 -1 100 8 -1 -1 8 200 -1 1 7 -1 -1 3 -1 -1 -1\n"
    cases = [
        ("nan.swf", good + "2 10 -1 nan 8 -1 -1 8 200 -1 1 7 -1 -1 3 -1 -1 -1\n",
         "line 2: field 4 (run time) is 'nan'"),
        ("neg.swf", good + "2 10 -1 100 -8 -1 -1 -8 200 -1 1 7 -1 -1 3 -1 -1 -1\n",
         "line 2: field 5 (processors) is '-8'"),
        ("inf.swf", "1 inf -1 100 8 -1 -1 8 200 -1 1 7 -1 -1 3 -1 -1 -1\n", "line 1: field 2 (submit time) is 'inf'"),
    ]
    for name, text, msg in cases:
        (tmp_path / name).write_text(text)
    gz = tmp_path / "cut.swf.gz"
    gz.write_bytes(gzip.compress((good * 2000).encode())[:300])  # truncated: EOFError inside gzip
    junk = tmp_path / "junk.swf.gz"
    junk.write_bytes(b"not gzip at all\n" * 10)
    cases += [("cut.swf.gz", None, "not a readable gzip file"), ("junk.swf.gz", None, "not a readable gzip file")]
    for name, _, msg in cases:
        r = _run(str(tmp_path / name))
        assert r.exit_code == 2, (name, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fscontrol: error:") and msg in lines[0], (name, r.output)
    # every line's processors unknown (-1): said so, not "no job lines"
    (tmp_path / "unknown.swf").write_text("1 0 -1 100 -1 -1 -1 -1 200 -1 1 7 -1 -1 3 -1 -1 -1\n")
    r = _run(str(tmp_path / "unknown.swf"))
    assert r.exit_code == 2 and "its 1 job line(s) all lack a run time or processor count (-1)" in r.output, r.output
