"""Start-up paid only for what a command uses (issue #31 item 5): the processes of `fscontrol
forecast` and of `fscontrol why` never import numpy, tabulate or matplotlib (nor scipy,
sqlite_utils, pydantic, rich), nor the standard library's html (its 2,000-name entity table:
export.html.esc is written out) or tempfile (random, hashing: only `capture` makes temporary
folders); `simulate --json` prints no table, so no tabulate. Each check is a fresh interpreter
running the console script's entry (fscontrol.cli.main) on real files: the forecast on a
published snapshot and a recorded sample, `simulate` on a scenario. `why` needs a live Slurm for
its answer (tests/test_integration_why.py): here its process runs every module its code path
imports (the app, forecast.why and what why_job and format_all import) on a real published file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "testbed-basic"
NEVER = {"numpy", "tabulate", "matplotlib", "scipy", "sqlite_utils", "pydantic", "rich", "html", "tempfile"}


def _modules_after(code: str) -> set[str]:
    """The top-level modules a fresh interpreter holds after running `code`."""
    run = f"import sys\n{code}\nprint(repr(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", run], check=True, capture_output=True, text=True, timeout=120).stdout
    return set(json.loads(out.strip().splitlines()[-1].replace("'", '"')))


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("startup")
    db, out = tmp / "h.db", tmp / "public" / "c.json"
    out.parent.mkdir()
    for args in (["collect", "--source", str(SAMPLE), "--db", str(db)], ["publish", "--db", str(db), "--out", str(out)]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
    return out


def test_the_forecast_process_imports_nothing_it_does_not_use(published):
    args = ["forecast", "--published", str(published), "--source", str(SAMPLE), "--user", "alice",
            "--plan", "8cpus:1h,idle:30m", "--stale-ok"]
    for extra in ([], ["--json"], ["--source", "published"]):
        mods = _modules_after(f"from fscontrol.cli.main import exit_code\nassert exit_code({args + extra!r}) == 0")
        assert "fscontrol" in mods and "typer" in mods
        assert not mods & NEVER, sorted(mods & NEVER)
        # the text report reads its JSON through fscontrol.jsontext (the json package compiles six
        # regular expressions at import) and builds no dataclass (each compiles its methods from
        # source: the records it makes are named tuples); --json writes with json itself
        assert not mods & {"dataclasses", *(() if "--json" in extra else ("json",))}, sorted(mods & {"json", "dataclasses"})


def test_the_why_process_imports_nothing_it_does_not_use(published):
    code = f"""
from fscontrol.cli.app import app, only
only("why")
from fscontrol.export import privacy, publish as pub
from fscontrol.forecast import reasons, service, waits, why
from fscontrol.model import fairtree
from fscontrol.slurm import parse
from fscontrol.forecast.why import diagnose, format_all
data, _ = pub.read_published({str(published)!r}, head_only=True)
assert data["associations"] == [] and "gate" in data
job = waits.WaitJob("20", "dave", "flat", "normal", "PENDING", 1, 100, 0, "Priority", "2026-11-26T10:00:00", "", "")
parts = {{"normal": waits.Partition("normal", 1, "UP", frozenset({{"n1"}}))}}
d = diagnose(job, [job, job], line=None, partitions=parts, weights={{}}, max_age_s=3600, favor_small=False,
             mode="classic", now=0.0, gate_pub=data.get("gate"))
assert d["category"] == "priority" and "job 20" in format_all(d)
"""
    mods = _modules_after(code)
    assert "fscontrol" in mods
    assert not mods & NEVER, sorted(mods & NEVER)


def test_simulate_json_prints_no_table_and_imports_no_tabulate():
    scenario = ROOT / "samples" / "sim" / "sfs-section5.toml"
    code = f"from fscontrol.cli.main import exit_code\nassert exit_code(['simulate', {str(scenario)!r}, '--json']) == 0"
    mods = _modules_after(code)
    assert "tabulate" not in mods and "matplotlib" not in mods
    text = _modules_after(code.replace(", '--json'", ""))
    assert "tabulate" in text  # the text report's tables: there it pays


def test_a_command_imports_only_its_own_command_module(published):
    """The app registers the command modules' commands by name (cli.app._lazy): `forecast` builds and
    imports cli.forecast alone, not the agent's, the simulator's, collect's or the doctor's."""
    args = ["forecast", "--published", str(published), "--source", str(SAMPLE), "--user", "alice", "--stale-ok"]
    run = (f"import sys\nfrom fscontrol.cli.main import exit_code\nassert exit_code({args!r}) == 0\n"
           "print(repr(sorted(m for m in sys.modules if m.startswith('fscontrol.cli.'))))")
    out = subprocess.run([sys.executable, "-c", run], check=True, capture_output=True, text=True, timeout=120).stdout
    mods = set(json.loads(out.strip().splitlines()[-1].replace("'", '"')))
    assert "fscontrol.cli.forecast" in mods
    assert not mods & {"fscontrol.cli.agent", "fscontrol.cli.simulate", "fscontrol.cli.collect", "fscontrol.cli.doctor"}
    # every command is still there for help and for in-process callers (CliRunner on the whole app)
    r = CliRunner().invoke(app, ["--help"])
    assert r.exit_code == 0 and all(c in r.output for c in ("collect", "control", "tick", "run", "gate", "simulate",
                                                            "simulate-merge", "forecast", "doctor", "config"))
    assert "simulate-task" not in r.output  # hidden, as before
    r = CliRunner().invoke(app, ["config", "check", "--help"])
    assert r.exit_code == 0 and "--config" in r.output


def test_version_builds_no_command():
    # `fscontrol --version` (and -V) prints the version before any command is read: typer builds
    # none of them (it built all ~40, 1.86x `import typer`'s instructions, for one line)
    from fscontrol import __version__

    for flag in ("--version", "-V"):
        code = f"""
import typer.main
built = []
orig = typer.main.get_command_from_info
def counted(*a, **kw):
    built.append(1)
    return orig(*a, **kw)
typer.main.get_command_from_info = counted
from fscontrol.cli.main import exit_code
assert exit_code([{flag!r}]) == 0
assert not built, built
"""
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == f"fscontrol {__version__}", out.stderr
        mods = _modules_after(f"from fscontrol.cli.main import exit_code\nassert exit_code([{flag!r}]) == 0")
        assert "fscontrol" in mods and not mods & NEVER
