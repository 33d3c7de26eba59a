"""The command line's conventions (issues #28 and #29, item 6): one framework (typer) with no
patch of any library's private modules; the same --db / --config / -M wherever a command reads
the history, the config or Slurm; `tick` and `run` refuse to start on defaults they were not
asked for; an interrupt is one line and exit code 130.

Every test here fails on ef8da55 (argparse beside typer and a patch of typer's private modules;
`forecast --db` and `fit --config` rejected; `tick` silently on defaults; Ctrl-C silent)."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "testbed-basic"
SERIES = sorted(p for p in (ROOT / "samples" / "testbed-series").iterdir() if p.is_dir())


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env=env)


def one_line_error(r, code: int, *words: str) -> str:
    assert r.exit_code == code, (r.exit_code, r.output)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("fscontrol: error:") and "Traceback" not in r.output, r.output
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


# ---------------------------------------------------------------------------- one framework
def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


# The one exception: the standard library's C accelerator of json, which json.loads itself runs
# (fscontrol/jsontext.py: the forecast's start without the json package's six regular expressions;
# json.loads takes over wherever it is absent or does not apply, tests/test_jsontext.py)
STDLIB_ACCELERATORS = {("jsontext.py", "_json")}


def test_one_command_line_framework_and_no_private_module_of_a_library():
    """The `fscontrol` command (fscontrol/cli, and the web page that shares the forecast's options)
    has no argparse beside typer and no click of its own, and the simulator's research runners
    (`python -m fscontrol.sim.experiment` and the like, fscontrol.sim.cmdline) are on typer too: no
    argparse anywhere; nothing in fscontrol imports a library's private module (a name starting
    with '_' in the dotted path)."""
    for path in (ROOT / "fscontrol").rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in ("fscontrol", "__future__"):
                continue
            assert top not in ("argparse", "optparse"), (path, name)
            if path.parent.name in ("cli", "web"):
                assert top != "click", (path, name)
            if (path.name, top) in STDLIB_ACCELERATORS:
                continue
            assert not any(part.startswith("_") for part in name.split(".")), (path, name)


def test_typer_is_bounded_where_its_behaviour_changes():
    """The app relies on typer converting options without pydantic (0.26-0.28); 0.29 moved every
    conversion to pydantic (~70 ms a start), so the dependency carries an upper bound."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("typer"))
    assert "<0.29" in spec, spec
    import importlib.metadata

    major, minor = (int(x) for x in importlib.metadata.version("typer").split(".")[:2])
    assert (major, minor) < (0, 29)
    assert "pydantic" not in {r.split()[0].split(">")[0].split("<")[0].split("=")[0].split(";")[0]
                              for r in importlib.metadata.requires("typer") or ()}


# ---------------------------------------------------------------------------- common options
COMMON = {  # command: the common options it takes (where they make sense)
    "collect": {"--db", "--config", "-M"},
    "status": {"--db", "--config", "-M"},
    "history": {"--db", "--config", "-M"},
    "fit": {"--db", "--config", "-M"},
    "control": {"--db", "--config", "-M"},
    "tick": {"--db", "--config", "-M"},
    "run": {"--db", "--config", "-M"},
    "gate": {"--db", "--config", "-M"},
    "publish": {"--db", "--config", "-M"},
    "metrics": {"--db", "--config"},
    "forecast": {"--db", "--config", "-M", "--published"},
    "why": {"-M", "--published"},
    "capture": {"-M"},
    "web": {"-M", "--published"},
}


def _option(command: str, opt: str):
    from typer.main import get_command  # typer's public API for the click object

    cmd = get_command(app).commands[command]
    return next((p for p in cmd.params if opt in p.opts), None)


@pytest.mark.parametrize("opt", ["--db", "--config", "-M", "--published"])
def test_the_common_options_are_the_same_on_every_command(opt):
    """Each common option is one definition: on every command where it makes sense, with the same
    names, help and (--config) environment variable."""
    seen = {}
    for command, opts in sorted(COMMON.items()):
        if opt in opts:
            p = _option(command, opt)
            assert p is not None, f"`fscontrol {command}` has no {opt}"
            seen[command] = (tuple(sorted(p.opts)), p.help, p.envvar)
    assert len(set(seen.values())) == 1, seen
    names, _, envvar = next(iter(seen.values()))
    assert names == {"--db": ("--db",), "--config": ("--config", "-c"), "-M": ("--cluster", "-M"), "--published": ("--published",)}[opt]
    assert envvar == ("FSCONTROL_CONFIG" if opt == "--config" else None)


@pytest.fixture()
def series_history(tmp_path):
    db = tmp_path / "h.db"
    for snap in SERIES:
        r = invoke("collect", "--source", str(snap), "--db", str(db))
        assert r.exit_code == 0, r.output
    return db


def test_forecast_takes_db(series_history, tmp_path, monkeypatch):
    """`forecast --db HISTORY` forecasts from the history's latest snapshot (before: 'No such option')."""
    monkeypatch.delenv("FSCONTROL_PUBLISHED", raising=False)
    monkeypatch.delenv("FSCONTROL_DB", raising=False)
    r = invoke("forecast", "--db", str(series_history), "-u", "carol", "-A", "chem", "--source", "published", "--json",
               "--stale-ok")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["user"] == "carol" and data["associations"][0]["account"] == "chem"
    one_line_error(invoke("forecast", "--db", str(tmp_path / "none.db"), "-u", "carol", "--source", "published"), 6,
                   "none.db")


def test_forecast_takes_config_for_its_history(series_history, tmp_path, monkeypatch):
    """The config's agent.db names the history the forecast reads when nothing is published."""
    monkeypatch.delenv("FSCONTROL_PUBLISHED", raising=False)
    monkeypatch.delenv("FSCONTROL_DB", raising=False)
    monkeypatch.setattr("fscontrol.export.publish.DEFAULT_DIR", str(tmp_path / "public"))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[agent]\ndb = "{series_history}"\n')
    r = invoke("forecast", "--config", str(cfg), "-u", "carol", "-A", "chem", "--source", "published", "--json",
               "--stale-ok")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["associations"][0]["account"] == "chem"


def test_fit_takes_config(series_history, tmp_path):
    """`fit --config FILE` fits the history the config's agent.db names (before: 'No such option')."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[agent]\ndb = "{series_history}"\n')
    r = invoke("fit", "--config", str(cfg), "--json")
    assert r.exit_code == 0, r.output
    by_db = invoke("fit", "--db", str(series_history), "--json")
    keep = ("cluster", "snapshots", "half_life_s", "configured_half_life_s")
    assert {k: json.loads(r.output)[k] for k in keep} == {k: json.loads(by_db.output)[k] for k in keep}
    cfg.write_text(f'[agent]\ndb = "{tmp_path / "elsewhere.db"}"\n')
    one_line_error(invoke("fit", "--config", str(cfg)), 6, "elsewhere.db")


def test_collect_takes_config(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[agent]\ndb = "{tmp_path / "from-config.db"}"\n')
    r = invoke("collect", "--config", str(cfg), "--source", str(SAMPLE), "--json")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "from-config.db").is_file()


# ---------------------------------------------------------------------------- no config
@pytest.mark.parametrize("command", ["tick", "run"])
def test_tick_and_run_without_a_config_are_one_line_and_exit_2(tmp_path, command, monkeypatch):
    monkeypatch.delenv("FSCONTROL_CONFIG", raising=False)
    db = tmp_path / "h.db"
    stop = ["--for", "1s"] if command == "run" else []  # (before, run went on without a config: for a second)
    line = one_line_error(invoke(command, *stop, "--source", str(SAMPLE), "--db", str(db)), 2, "no config file", "--defaults")
    assert "--config" in line
    assert not db.exists() and not list(tmp_path.glob("*.lock"))  # refused before it touched anything


def test_tick_runs_on_defaults_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.delenv("FSCONTROL_CONFIG", raising=False)
    db = tmp_path / "h.db"
    r = invoke("tick", "--defaults", "--source", str(SAMPLE), "--db", str(db), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["clusters"][0]["cluster"] == "tbcluster"
    cfg = tmp_path / "c.toml"
    cfg.write_text('[clusters.tbcluster]\ntarget_core_hours = 10\n')
    # $FSCONTROL_CONFIG counts as given (the shipped systemd units set it)
    r = invoke("tick", "--source", str(SAMPLE), "--db", str(db), env={"FSCONTROL_CONFIG": str(cfg)})
    assert r.exit_code == 0, r.output
    one_line_error(invoke("tick", "--defaults", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(db)), 2,
                   "--defaults")


# ---------------------------------------------------------------------------- interrupt
def terminal_sigint() -> None:
    """In the child: Ctrl-C's SIGINT as a terminal's shell leaves it (default). A test run started in
    the background (`cmd &`, nohup) inherits SIGINT ignored, and the child would never see it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(argv: list[str], ready, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Start `python -m fscontrol ARGV`, wait until `ready(proc)` says it is inside the command,
    send SIGINT (what Ctrl-C sends), and return what it printed and its exit code."""
    p = subprocess.Popen([sys.executable, "-m", "fscontrol", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
                         preexec_fn=terminal_sigint)
    try:
        deadline = time.monotonic() + timeout
        while not ready(p):
            assert p.poll() is None, f"ended before the interrupt: {p.returncode} {p.communicate()}"
            assert time.monotonic() < deadline, "never got ready"
            time.sleep(0.005)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


@pytest.fixture(scope="module")
def big_sample(tmp_path_factory):
    """A SYNTHETIC cluster large enough that a tick takes a few seconds (the interrupt lands in it)."""
    out = tmp_path_factory.mktemp("big") / "sample"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", "10000", "--jobs", "100000",
                    "--seed", "3", "--out", str(out)], check=True, stdout=subprocess.DEVNULL, timeout=300)
    return out


def test_an_interrupted_tick_apply_is_one_line_and_exit_130(tmp_path, big_sample):
    """Ctrl-C in `tick --apply` (once it holds the agent's lock, i.e. inside the tick): one line
    saying what stopped and that the next tick settles it; exit code 130; no traceback."""
    db = tmp_path / "h.db"
    # the sample's cluster's lock (it names its own cluster: act/lock.py), beside the history
    r = _interrupt(["tick", "--defaults", "--apply", "--source", str(big_sample), "--db", str(db)],
                   lambda p: any(tmp_path.glob("*.lock")))
    assert r.returncode == 130, (r.returncode, r.stdout, r.stderr)
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("fscontrol: interrupted: `fscontrol tick` stopped"), r.stderr
    assert "the next tick settles it" in err[0]
    # and the next tick runs: the lock was released, the history is readable
    again = subprocess.run([sys.executable, "-m", "fscontrol", "tick", "--defaults", "--source", str(SAMPLE), "--db",
                            str(tmp_path / "h2.db")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr


def test_an_interrupted_web_server_is_one_line_and_exit_130():
    """`fscontrol web` is stopped with Ctrl-C: it said nothing and exited 0 before."""
    seen: list[str] = []

    def serving(p) -> bool:
        import select

        if not select.select([p.stderr], [], [], 0.05)[0]:
            return False
        line = p.stderr.readline()  # the first line it prints is the address
        seen.append(line)
        return line.startswith("serving http://")

    r = _interrupt(["web", "--port", "0", "--no-token", "--source", str(SAMPLE)], serving)
    assert r.returncode == 130, (r.returncode, seen, r.stderr)
    assert [ln for ln in r.stderr.splitlines() if ln.strip()] == ["fscontrol: interrupted: `fscontrol web` stopped"], r.stderr
    assert "Traceback" not in r.stderr


def test_the_interrupt_line_names_the_command():
    from fscontrol.cli.app import interrupted_line

    assert interrupted_line("status") == "fscontrol: interrupted: `fscontrol status` stopped before it finished"
    for acting in ("tick", "control", "gate"):
        assert "the next tick settles it" in interrupted_line(acting)
