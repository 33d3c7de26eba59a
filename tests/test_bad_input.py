"""Bad input from a newcomer's first hour (the newcomer issue, reproduced on ec6b9eb): each gets one
clear line and a non-zero exit, nothing written where it should not be, no action on doubtful
data. Every case here crashed, or passed silently, before."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.model.allocations import parse_allocations
from fscontrol.cli.app import app
from fscontrol.cli.main import exit_code


def forecast_main(argv):
    return exit_code(["forecast", *argv])
from fscontrol.act.gate import plan_gate
from fscontrol.snaprecords import QueueJob

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line_error(r, code: int, *words: str) -> None:
    assert r.exit_code == code, (r.exit_code, r.output)
    err = [ln for ln in r.output.splitlines() if ln.startswith("fscontrol: error:")]
    assert len(err) == 1 and "Traceback" not in r.output, r.output
    for w in words:
        assert w in err[0], (w, err[0])


@pytest.fixture()
def history(tmp_path):
    db = tmp_path / "h.db"
    assert invoke("collect", "--source", str(SAMPLE), "--db", str(db)).exit_code == 0
    return db


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "0"])
def test_status_target_must_be_positive_core_hours(history, value):
    one_line_error(invoke("status", "--db", str(history), "--target", value), 2, "--target")


def test_a_typo_in_db_starts_no_history_anywhere(tmp_path):
    db = tmp_path / "no" / "such" / "h.db"
    one_line_error(invoke("collect", "--source", str(SAMPLE), "--db", str(db)), 6, "does not exist")
    assert not (tmp_path / "no").exists()


def test_metrics_and_publish_out_never_make_folders(history, tmp_path):
    one_line_error(invoke("metrics", "--db", str(history), "--out", str(tmp_path / "nodir" / "x.prom")), 1, "does not exist")
    one_line_error(invoke("publish", "--db", str(history), "--out", str(tmp_path / "nodir" / "x.json")), 1, "published")
    assert not (tmp_path / "nodir").exists()


def test_a_sample_is_not_relabelled_as_another_cluster(tmp_path):
    r = invoke("collect", "--source", str(SAMPLE), "-M", "othercluster", "--db", str(tmp_path / "h.db"))
    one_line_error(r, 6, "tbcluster", "othercluster")


def test_a_config_for_another_cluster_does_nothing_and_says_so(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.mycluster]\ntarget_core_hours = 10\nmethod = "hybrid"\n')
    r = invoke("tick", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db"))
    one_line_error(r, 2, "mycluster", "tbcluster")


def test_hybrid_without_its_dummy_says_advice_only_first(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.tbcluster]\ntarget_core_hours = 10\nmethod = "hybrid"\ndummy = "nosuch/dummy"\n')
    r = invoke("control", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db"))
    assert r.exit_code == 0
    first = r.output.splitlines()[0]
    assert first.startswith("ADVICE ONLY") and "nosuch/dummy does not exist" in first, r.output
    assert "plan: none (advice only)" in r.output


def test_allocations_for_an_account_slurm_lacks_are_refused(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.tbcluster.gate]\nenabled = true\n[clusters.tbcluster.allocations.nosuch]\naward = 10\n'
                   'period = "1h"\n')
    r = invoke("gate", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db"))
    one_line_error(r, 2, "nosuch")


@pytest.mark.parametrize("args,word", [(["--limit", "0"], "--limit"), (["--limit", "-5"], "--limit"),
                                       (["--by", "nothing"], "--by")])
def test_simulate_options_out_of_range(args, word):
    one_line_error(invoke("simulate", "section9", *args), 2, word)


@pytest.mark.parametrize("value", ["-2", "0", "nan"])
def test_forecast_billing_per_core_must_be_positive(value, capsys, tmp_path):
    code = forecast_main(["--published", str(tmp_path), "--source", str(SAMPLE), "--plan", "8cpus:1d",
                          "--billing-per-core", value])
    err = capsys.readouterr().err
    assert code == 2 and "--billing-per-core" in err and "Traceback" not in err, err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "-1"])
def test_forecast_now_must_be_a_posix_time(value, capsys, tmp_path):
    """An outside tester's: --now nan/inf/1e300 ended in datetime's traceback."""
    code = forecast_main(["--published", str(tmp_path), "--source", str(SAMPLE), "--now", value])
    err = capsys.readouterr().err
    assert code == 2 and "--now must be a POSIX time" in err and "Traceback" not in err and len(err.splitlines()) == 1, err


def _job(job_id, account, state, cpus):
    return QueueJob(str(job_id), "u", account, "batch", "normal", state, 1, cpus, 100, 0,
                    "Priority" if state == "PENDING" else "None", 0.0, 0.0 if state == "RUNNING" else None, 3600)


def test_an_allocation_on_a_parent_account_counts_its_sub_accounts_jobs():
    allocs = parse_allocations({"science": {"award": 4, "period": "1h", "factor": 1}, "flat": {"award": 100, "period": "1h"}})
    parents = {"physics": "science", "chem": "science", "science": "root", "flat": "root"}
    queue = [_job(1, "physics", "RUNNING", 8), _job(2, "chem", "RUNNING", 4), _job(3, "chem", "PENDING", 2),
             _job(4, "flat", "PENDING", 1)]
    plan = plan_gate(queue, allocs, now=0.0, parents=parents)
    science = next(a for a in plan.accounts if a.account == "science")
    assert science.occupancy == 12 and science.state == "over" and science.running_jobs == 2
    assert [(a.kind, a.job_id) for a in plan.actions] == [("hold", "3")]  # the sub-account's job is gated
    # before: the parent's occupancy was 0 and nothing was held
    blind = plan_gate(queue, allocs, now=0.0)
    assert next(a for a in blind.accounts if a.account == "science").occupancy == 0


def test_version_on_every_entry_point(capsys):
    from fscontrol import __version__

    r = invoke("--version")
    assert r.exit_code == 0 and r.output.strip() == f"fscontrol {__version__}"
    assert forecast_main(["--version"]) == 0 and capsys.readouterr().out.strip() == f"fscontrol {__version__}"


def test_status_filters_rows_like_sshare(history):
    import json

    r = invoke("status", "--db", str(history), "-u", "carol", "--json")
    assert r.exit_code == 0 and {row["user"] for row in json.loads(r.output)["table"]} == {"carol"}
    r = invoke("status", "--db", str(history), "-A", "science", "--json")
    assert {row["account"] for row in json.loads(r.output)["table"]} == {"physics", "chem"}  # the subtree
    one_line_error(invoke("status", "--db", str(history), "-u", "nobody"), 6, "nobody")


def test_dash_h_and_a_control_table_that_fits_a_terminal(tmp_path):
    assert invoke("status", "-h").exit_code == 0 and "--target" in invoke("status", "-h").output
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.tbcluster]\ntarget_core_hours = 10\nmethod = "hybrid"\npadding_mode = "steady"\n')
    r = invoke("control", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db"))
    assert r.exit_code == 0 and "fsdampeningfactor" in r.output
    assert max(len(ln) for ln in r.output.splitlines()) <= 160, max(len(ln) for ln in r.output.splitlines())


@pytest.mark.parametrize("command", ["tick", "control", "collect"])
def test_the_agents_lock_makes_no_folder_for_a_mistyped_db(tmp_path, command):
    """The lock sits beside the history: tick and control took it first and so made the folder of a
    mistyped --db (and an empty history in it) that collect refuses."""
    db = tmp_path / "no" / "such" / "h.db"
    defaults = ["--defaults"] if command == "tick" else []
    one_line_error(invoke(command, *defaults, "--source", str(SAMPLE), "--db", str(db)), 6, "does not exist")
    assert not (tmp_path / "no").exists()


def test_gate_command_counts_a_parent_accounts_sub_accounts_on_the_sample(tmp_path):
    """The same through `fscontrol gate` on the bundled sample: science's jobs run in physics (48
    CPUs) and chem (8), none in science itself."""
    import json

    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.tbcluster.gate]\nenabled = true\n[clusters.tbcluster.allocations.science]\naward = 1\n'
                   'period = "1h"\n')
    r = invoke("gate", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db"), "--json")
    assert r.exit_code == 0, r.output
    science = next(a for a in json.loads(r.output)["accounts"] if a["account"] == "science")
    assert science["account"] == "science" and science["occupancy"] == 56 and science["running_jobs"] == 2
    assert science["state"] == "over"


@pytest.mark.parametrize("value", ["nan", "inf"])
@pytest.mark.parametrize("command", [["config", "check"], ["tick", "--source", str(SAMPLE)]])
def test_a_config_target_that_is_nan_or_inf_fails_config_check_and_tick(tmp_path, value, command):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[clusters.tbcluster]\ntarget_core_hours = {value}\nmethod = "hybrid"\n')
    r = invoke(*command, "--config", str(cfg), *(["--db", str(tmp_path / "h.db")] if command[0] == "tick" else []))
    one_line_error(r, 2, "target_core_hours", value)


@pytest.mark.plot
def test_png_outputs_in_a_missing_folder_are_one_line_and_make_no_folder(tmp_path, capsys):
    """simulate --png and forecast --plot into a missing folder: a traceback (forecast) or a raw
    errno line with the usage exit code (simulate) before; now one line, exit 1, like publish -o."""
    one_line_error(invoke("simulate", "section9", "--no-progress", "--png", str(tmp_path / "no" / "g.png")), 1,
                   "Gantt chart", "does not exist")
    db = tmp_path / "h.db"
    assert invoke("collect", "--source", str(SAMPLE), "--db", str(db)).exit_code == 0
    assert invoke("publish", "--db", str(db), "--out", str(tmp_path / "tbcluster.json")).exit_code == 0
    code = forecast_main(["--published", str(tmp_path), "--source", str(SAMPLE), "-u", "carol", "-A", "chem",
                          "--plan", "8cpus:1h", "--plot", str(tmp_path / "no" / "f.png")])
    err = capsys.readouterr().err
    assert code == 1 and "--plot" in err and "does not exist" in err and "Traceback" not in err, err
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", ["collect", "status", "fit", "control", "tick", "run", "gate", "publish", "metrics",
                                     "simulate", "capture", "history", "config check", "forecast", ""])
def test_dash_h_on_every_command(command):
    r = invoke(*command.split(), "-h")
    assert r.exit_code == 0 and "usage:" in r.output.lower() and "--help" in r.output, (command, r.output)
