"""Bad input an outside tester found (each failed on 7bb8882): a config that is not UTF-8, a port out
of range, a Ctrl-C while the modules import, -j naming a job that is not the caller's pending job
(and held jobs as the default), and the planner's numbers (fractions, 5000 digits, non-ASCII
digits, an empty --plan). Each is one line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_cli_conventions import terminal_sigint

from fscontrol.cli.main import exit_code

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "testbed-basic"


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    """`fscontrol ARGV` in this process: its exit code and the non-empty lines of its stderr."""
    rc = exit_code(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return rc, [ln for ln in err.splitlines() if ln.strip()]


# ---------------------------------------------------------------------------- 1. a config not in UTF-8
@pytest.mark.parametrize("command", [["config", "check"], ["tick", "--source", str(SAMPLE), "--db", "h.db"]])
def test_a_config_that_is_not_utf8_is_one_line_naming_the_file_and_offset(tmp_path, capsys, monkeypatch, command):
    cfg = tmp_path / "x.toml"
    cfg.write_bytes(b"# Z\xfcrich cluster\n[clusters.tbcluster]\ntarget_core_hours = 10000\n")
    monkeypatch.chdir(tmp_path)
    rc, lines = run(capsys, *command, "--config", str(cfg))
    assert rc == 2 and len(lines) == 1, lines
    assert str(cfg) in lines[0] and "not UTF-8" in lines[0] and "offset 3" in lines[0] and "0xfc" in lines[0]
    assert not (tmp_path / "h.db").exists()  # nothing written


# ---------------------------------------------------------------------------- 2. --port out of range
@pytest.mark.parametrize("port", ["70000", "-1", "65536"])
def test_web_port_out_of_range_is_refused_at_the_option(capsys, port):
    rc, lines = run(capsys, "web", "--port", port)
    assert rc == 2
    assert [ln for ln in lines if ln.startswith("Error:")] == [
        f"Error: Invalid value for '--port': {port} is not in the range 0<=x<=65535."], lines


# ---------------------------------------------------------------------------- 3. Ctrl-C while importing
@pytest.mark.parametrize("delay", [0.0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15])
def test_an_early_ctrl_c_is_one_line_and_exit_130(delay):
    """SIGINT while fscontrol's modules import (before the app's own handler) was a
    KeyboardInterrupt traceback and rc 1 or -2; now the same line as later, rc 130. The child runs
    what the console script runs (`from fscontrol.cli.main import main; sys.exit(main())`); an
    audit hook prints a marker when main starts importing the app (fscontrol.cli.app), and the
    delays count from there, so they land in the imports, then in the command. (Before main runs
    -- the interpreter's start-up, importing fscontrol.cli.main itself, ~3 ms: `python -X
    importtime -c 'import fscontrol.cli.main'` -- no fscontrol code runs yet to catch it.)"""
    code = ("import sys\n"
            "def hook(event, args, seen=[]):\n"
            "    if event == 'import' and args[0] == 'fscontrol.cli.app' and not seen:\n"
            "        seen.append(1); sys.stdout.write('started\\n'); sys.stdout.flush()\n"
            "sys.addaudithook(hook)\n"
            "from fscontrol.cli.main import main\n"
            "sys.exit(main())\n")
    p = subprocess.Popen([sys.executable, "-c", code, "forecast", "--source", str(SAMPLE)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=terminal_sigint)
    try:
        assert p.stdout.readline() == "started\n"
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "Traceback" not in err, err
    assert p.returncode == 130, (p.returncode, err)
    assert err.strip().splitlines() == ["fscontrol: interrupted: `fscontrol forecast` stopped before it finished"], err


# ---------------------------------------------------------------------------- 4. -j and held jobs
SQUEUE = ("5|chem|JobHeldAdmin\n"   # held by an admin: waits for a release, not for its priority
          "7|chem|Priority\n"
          "9|bio|Resources\n"
          "12_[1-4]|chem|Priority\n"
          "3|bio|JobHeldUser\n")


def test_the_default_pending_job_skips_held_jobs():
    from fscontrol.forecast import service as uf

    assert uf.parse_own_pending(SQUEUE) == {"chem": 7, "bio": 9}
    assert uf.parse_own_pending("5|chem\n7|chem\n") == {"chem": 5}  # the two-field form: nothing held


def test_j_must_name_one_of_the_callers_own_pending_jobs():
    from fscontrol.errors import NotFoundError
    from fscontrol.forecast import service as uf
    from fscontrol.forecast.request import _named_job

    jobs = uf.own_pending_jobs(SQUEUE)
    assert _named_job(7, "chem", "carol", jobs) == {"chem": 7}
    assert _named_job(9, None, "carol", jobs) == {"bio": 9}
    assert _named_job(12, "chem", "carol", jobs) == {"chem": 12}  # an array by its id
    for job, account, words in [(999999, "chem", "no pending job 999999"), (13, "chem", "no pending job 13"),
                                (9, "chem", "is in account bio, not chem"), (5, "chem", "is held")]:
        with pytest.raises(NotFoundError, match=words) as e:
            _named_job(job, account, "carol", jobs)
        assert e.value.exit_code == 6


@pytest.mark.parametrize("job", ["-1", "0"])
def test_j_that_is_not_a_job_id_is_one_line_and_exit_2(capsys, job):
    rc, lines = run(capsys, "forecast", "--source", str(SAMPLE), "-j", job, "--plan", "4cpus:1h")
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("fscontrol: error: --job must be a job id"), lines


# ---------------------------------------------------------------------------- 5. the planner's numbers
@pytest.mark.parametrize("values,message", [
    ({"runs": "2.5"}, "runs must be a whole number (digits 0-9), got '2.5'"),
    ({"cpus": "４"}, "CPUs per run must be a number (digits 0-9), got '４'"),
    ({"cpus": "٤"}, "CPUs per run must be a number (digits 0-9), got '٤'"),
    ({"length": "１"}, "the length of a run must be a number (digits 0-9), got '１'"),
    ({"cpus": "9" * 5000}, "CPUs per run is too large, got 99999999999999999999... (5,000 characters)"),
    ({"cpus": "x" * 5000}, f"CPUs per run must be a number, got {'x' * 20!r}... (5,000 characters)"),
])
def test_planner_numbers_are_ascii_whole_where_counted_and_echoed_short(values, message):
    from fscontrol.web.userpage import plan_from

    with pytest.raises(ValueError) as e:
        plan_from(values)
    assert str(e.value) == message and len(str(e.value)) < 200


def test_planner_bad_number_is_a_400_over_http(tmp_path):
    import webfixtures as wf
    from fscontrol.web.app import make_app

    pub = wf.publish(SAMPLE, tmp_path)
    app = make_app(published=str(pub), source=str(SAMPLE), identity="remote_user")
    seen = {}
    env = {"PATH_INFO": "/api/forecast", "QUERY_STRING": "cpus=%EF%BC%94", "REQUEST_METHOD": "GET", "REMOTE_USER": "carol"}
    body = b"".join(app(env, lambda status, headers: seen.setdefault("status", status)))
    assert seen["status"] == "400 Bad Request"
    assert json.loads(body) == {"error": "CPUs per run must be a number (digits 0-9), got '４'"}


@pytest.mark.parametrize("plan", ["", ",", "٤cpus:١d", "4cpus:١d", "４cpus:1d"])
def test_cli_plan_empty_or_with_non_ascii_digits_is_one_line_and_exit_2(capsys, plan):
    rc, lines = run(capsys, "forecast", "--source", str(SAMPLE), "--plan", plan)
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("fscontrol: error:"), lines
    assert ("empty plan" in lines[0]) if plan.strip(",") == "" else ("cannot read plan part 1" in lines[0])


def test_ascii_plans_still_read():
    from fscontrol.forecast import classic as fc

    assert [s.duration_s for s in fc.parse_plan("4cpus:1d,idle:90,2cpus:1-12:30")] == [86400, 5400, 131400]


def test_an_interrupt_while_typer_parses_the_options_is_one_line_too(monkeypatch, capsys):
    """typer's own main turns a KeyboardInterrupt outside the group's invoke (while it parses the
    options, or leaves the context) into exit 130 with nothing said: the clean-clone CI's
    `test_an_early_ctrl_c_is_one_line_and_exit_130[0.04]` caught that window once under load."""
    from fscontrol.cli import app as app_mod
    from fscontrol.cli.main import exit_code

    def interrupted(self, *a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(app_mod.Group, "make_context", interrupted)
    assert exit_code(["status", "--db", "/nonexistent/h.db"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["fscontrol: interrupted: `fscontrol status` stopped before it finished"]
