"""Sweeps (issue #15): several configurations side by side, in processes or as a Slurm job array
(the array itself runs on the testbed: tests/test_integration_simsweep.py)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.errors import ConfigError, NotFoundError, OutputError
from fscontrol.sim import get_policy, read_swf, run_simulation
from fscontrol.sim import sweep as sw

ROOT = Path(__file__).resolve().parent.parent
EXCERPT = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln-first2000.swf"
SWEEP = """
[[runs]]
preset = "easy"
[[runs]]
preset = "linear-size"
name = "linear-size depth 1"
depth = 1
[[runs]]
preset = "fcfs"
"""


def numbers(res: dict) -> dict:
    """What a run computed (not how long it took, nor where)."""
    return {k: v for k, v in res.items() if k not in ("wall_s", "jobs_per_second", "task")}


def test_sweep_file_runs_presets_with_overrides(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(SWEEP)
    specs = sw.load_sweep(f)
    assert [s.label for s in specs] == ["easy", "linear-size depth 1", "fcfs"]
    assert specs[1].policy() == get_policy("linear-size", depth=1, name="linear-size depth 1")


@pytest.mark.parametrize("text, msg", [
    ("", "needs a list of runs"),
    ("[[runs]]\nname = 'x'", "runs[0] needs a preset"),
    ("[[runs]]\npreset = 'nope'", "unknown policy 'nope'"),
    ("[[runs]]\npreset = 'easy'\ndepht = 3", "runs[0]"),
    ("[[runs]]\npreset = 'easy'\ndepth = 0", "reservation depth"),
    ("runs = 1", "needs a list of runs"),
    ("x = 1\n[[runs]]\npreset = 'easy'", "unknown key(s) x"),
    ("[[runs", "sweep file"),
])
def test_bad_sweep_files_say_what_is_wrong(tmp_path, text, msg):
    f = tmp_path / "s.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        sw.load_sweep(f)


def test_same_label_twice_is_refused():
    with pytest.raises(ConfigError, match="both labelled 'easy'"):
        sw.run_sweep(sw.WorkloadSpec(str(EXCERPT)), [sw.RunSpec("easy"), sw.RunSpec("easy")], progress=False)


def test_processes_give_the_numbers_of_one_process_and_of_run_simulation(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(SWEEP)
    specs = sw.load_sweep(f)
    ws = sw.WorkloadSpec(str(EXCERPT))
    one = sw.run_sweep(ws, specs, jobs=1, progress=False)
    two = sw.run_sweep(ws, specs, jobs=2, progress=False)
    assert [numbers(r) for r in one] == [numbers(r) for r in two]
    w = read_swf(EXCERPT)
    for spec, r in zip(specs, two):  # the independent check: run_simulation itself, here
        direct = run_simulation(w, spec.policy(), per_user=False).to_dict()
        assert r["overall"] == direct["overall"] and r["by_account"] == direct["by_account"]
        assert r["run"] == spec.to_dict()
    assert sw.format_sweep(one) == sw.format_sweep(two)
    rows = sw.sweep_rows(two)
    assert [x["run"] for x in rows] == ["easy", "linear-size depth 1", "fcfs"]
    assert rows[2]["mean_wait_s"] > rows[0]["mean_wait_s"]  # FCFS without backfill waits longer than EASY


def test_sweep_progress_bar_counts_runs(tmp_path):
    import io

    out = io.StringIO()
    bar = sw.SweepProgress(2, 10, enabled=True, stream=out)
    bar.update(0, 5)
    bar.run_done(0)
    bar.update(1, 10)
    bar.run_done(1)
    bar.close()
    text = out.getvalue()
    assert "sweep, 2/2 runs done," in text and "100.0%" in text and "20/20 jobs" in text


def test_sbatch_folder_task_and_merge_in_process(tmp_path):
    """The array's pieces without Slurm: the script, one task run by hand, the merge's refusals.
    (On the testbed, sbatch runs the script itself.)"""
    d = tmp_path / "sweep"
    specs = [sw.RunSpec("easy"), sw.RunSpec("fcfs")]
    script = sw.write_sbatch(d, sw.WorkloadSpec(os.path.relpath(EXCERPT)), specs)  # made absolute for the tasks
    text = script.read_text()
    assert "#SBATCH --array=0-1" in text and "simulate-task" in text and '"$SLURM_ARRAY_TASK_ID"' in text
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o600
    sweep = json.loads((d / "sweep.json").read_text())
    assert Path(sweep["workload"]["spec"]).is_absolute() and sweep["labels"] == ["easy", "fcfs"]
    with pytest.raises(NotFoundError, match="2 of 2 runs have no result"):
        sw.merge_results(d)
    r = CliRunner().invoke(app, ["simulate-task", str(d), "1"])
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE(os.stat(d / "results" / "1.json").st_mode) == 0o600
    assert [x["policy"]["label"] for x in sw.merge_results(d, partial=True)] == ["fcfs"]
    r = CliRunner().invoke(app, ["simulate-merge", str(d)])
    assert r.exit_code == 6 and "1 of 2 runs have no result yet (tasks 0)" in r.output
    sw.run_task(d, 0)
    merged = sw.merge_results(d)
    here = sw.run_sweep(sw.WorkloadSpec(str(EXCERPT)), specs, progress=False)
    assert [numbers(x) for x in merged] == [numbers(x) for x in here]
    with pytest.raises(ConfigError, match="has runs 0..1"):
        sw.run_task(d, 2)
    with pytest.raises(OutputError, match="not empty"):
        sw.write_sbatch(d, sw.WorkloadSpec(str(EXCERPT)), specs)


def test_cli_sweep_jobs_json_and_chart(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(SWEEP)
    r = CliRunner().invoke(app, ["simulate", str(EXCERPT), "-p", "sfs-size", "--sweep", str(f), "-j", "2", "--json", "--no-progress"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert [d["policy"]["label"] for d in data] == ["sfs-size", "easy", "linear-size depth 1", "fcfs"]
    r = CliRunner().invoke(app, ["simulate", str(EXCERPT), "--sweep", str(f), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "3 runs" in r.output and "linear-size depth 1" in r.output


@pytest.mark.plot
def test_cli_sweep_chart(tmp_path):
    png = tmp_path / "c.png"
    r = CliRunner().invoke(app, ["simulate", str(EXCERPT), "-p", "easy", "-p", "fcfs", "--chart", str(png), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, msg", [
    (["-j", "0"], "--jobs must be at least 1"),
    (["--sweep", "/nonexistent/s.toml"], "cannot read sweep file"),
    (["-p", "easy", "-p", "easy", "-j", "2"], "both labelled 'easy'"),
    (["--sweep", "S", "--gantt"], "--gantt and --png draw one run"),
    (["-p", "easy", "-p", "fcfs", "--chart", "/nonexistent/c.png"], "folder /nonexistent does not exist"),
])
def test_cli_bad_sweep_input_one_line(tmp_path, args, msg):
    f = tmp_path / "s.toml"
    f.write_text(SWEEP)
    args = [str(f) if a == "S" else a for a in args]
    r = CliRunner().invoke(app, ["simulate", str(EXCERPT), *args, "--no-progress"])
    assert r.exit_code != 0
    assert msg in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_merge_of_a_folder_that_is_no_sweep(tmp_path):
    r = CliRunner().invoke(app, ["simulate-merge", str(tmp_path)])
    assert r.exit_code == 6 and "is not a sweep folder" in r.output


MF_SWEEP = """
[[runs]]
preset = "mf-classic"
name = "hybrid"
multifactor = {controls = ["hybrid"], u_star_node_hours = 2000, half_life = "1-0", damping = 1}
[[runs]]
preset = "mf-classic"
name = "static"
multifactor = {damping = 1, half_life = "1-0"}
"""


def test_multifactor_runs_with_the_agent_in_the_loop_sweep_like_any_preset(tmp_path):
    """The controller's runs are plain JSON specs: processes and --sbatch carry them, and each gives
    what controlexp.multifactor_policies + run_simulation give in this process."""
    from fscontrol.sim.controlexp import multifactor_policies

    f = tmp_path / "mf.toml"
    f.write_text(MF_SWEEP)
    specs = sw.load_sweep(f)
    assert [sw.RunSpec.from_dict(json.loads(json.dumps(s.to_dict()))) for s in specs] == specs
    ws = sw.WorkloadSpec(str(EXCERPT), {"limit": 600})
    two = sw.run_sweep(ws, specs, jobs=2, progress=False)
    w = ws.load()
    (direct,) = multifactor_policies(controls=["hybrid"], u_star_node_hours=2000, half_life="1-0", damping=1)
    ref = run_simulation(w, direct, per_user=False).to_dict()
    assert two[0]["overall"] == ref["overall"] and two[0]["halving"] == ref["halving"]
    rows = sw.sweep_rows(two)
    assert rows[0]["halving_p95_error"] is not None and rows[1]["halving_p95_error"] is None
    assert "|H/u*-1| p95" in sw.format_sweep(two)
    with pytest.raises(ConfigError, match="mf-\\* preset"):
        sw.RunSpec("easy", {"multifactor": {"damping": 2}}).policy()
    with pytest.raises(ConfigError, match="multifactor takes"):
        sw.RunSpec("mf-classic", {"multifactor": {"dampnig": 2}}).policy()
