"""The README and the docs it sends a newcomer to say what is true: the example outputs (the `status`
block of docs/reports.md, the replay of docs/gate-simulator.md) are the program's real output line
for line; the quick start's demo runs as written; the README's deployment config is one the agent
accepts (tests/test_site_install.py runs the whole checklist on the testbed); every page it links
exists."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from fscontrol.cli.app import app

ROOT = Path(__file__).resolve().parent.parent


def _block_after(text: str, heading: str) -> list[str]:
    body = text[text.index(heading):]
    m = re.search(r"```\n(.*?)```", body, re.S)
    assert m, heading
    return m.group(1).rstrip("\n").splitlines()


def test_readme_status_block_is_real_output(tmp_path):
    db = tmp_path / "h.db"
    assert CliRunner().invoke(app, ["collect", "--source", str(ROOT / "samples" / "testbed-basic"), "--db", str(db)]).exit_code == 0
    out = CliRunner().invoke(app, ["status", "--db", str(db)]).output.splitlines()
    block = _block_after((ROOT / "docs" / "reports.md").read_text(), "## What `status` shows")
    assert block[-1] == "..."
    assert block[:-1] == out[: len(block) - 1]


def test_the_demo_has_what_it_needs():
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    series = sorted(p for p in (ROOT / "samples" / "testbed-series").iterdir() if p.is_dir())
    assert len(series) >= 5 and all((p / "meta.json").is_file() for p in series)
    for command in ("collect", "status", "fit", "forecast"):
        assert f'"$fsc" {command}' in demo


def test_the_demo_commands_on_the_series(tmp_path, capsys, monkeypatch):
    """What demo.sh runs, in-process: a history of the recorded series, status, a converged decay
    fit, and carol's forecast as of the last snapshot (no staleness error from a recording)."""
    import json

    from fscontrol.cli.main import exit_code

    def forecast_main(argv):
        return exit_code(["forecast", *argv])

    db = tmp_path / "h.db"
    series = sorted(p for p in (ROOT / "samples" / "testbed-series").iterdir() if p.is_dir())
    for snap in series:
        r = CliRunner().invoke(app, ["collect", "--source", str(snap), "--db", str(db)])
        assert r.exit_code == 0, r.output
    assert CliRunner().invoke(app, ["status", "--db", str(db)]).exit_code == 0
    r = CliRunner().invoke(app, ["fit", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    fit = json.loads(r.output)
    assert fit["converged"] and abs(fit["half_life_s"] / fit["expected_half_life_s"] - 1) < 0.05, fit
    (tmp_path / "public").mkdir()  # nothing published (the demo publishes nothing): the sample is the snapshot
    monkeypatch.setattr("fscontrol.export.publish.DEFAULT_DIR", str(tmp_path / "public"))
    monkeypatch.delenv("FSCONTROL_PUBLISHED", raising=False)
    code = forecast_main(["-u", "carol", "-A", "chem", "--source", str(series[-1]), "--plan", "8cpus:10m", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(out)
    assert data["associations"][0]["account"] == "chem" and not any("old" in w for w in data["warnings"])


def test_readme_replay_example_is_real_output():
    """The worked example "replay your last month" (docs/gate-simulator.md): its command, run on the bundled capture, prints
    the README's block line for line; and the controlled run is the one that meets u*."""
    import shlex

    section = (ROOT / "docs" / "gate-simulator.md").read_text().split("## Worked example: replay your last month", 1)[1]
    block = re.search(r"```\n(\$ fscontrol .*?)```", section, re.S).group(1).rstrip("\n").splitlines()
    assert block[0].startswith("$ fscontrol simulate samples/testbed-history")
    argv = shlex.split(block[0][2:])[1:]
    r = CliRunner().invoke(app, [*argv, "--no-progress"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert r.output.rstrip("\n").splitlines() == block[1:]
    hybrid = next(line for line in block if line.startswith("mf-classic hybrid"))
    static = next(line for line in block if line.startswith("mf-classic d=1"))
    # (slurmctld's scheduler in the replay, issue #32: the hybrid control misses u* by 11% on this
    # three-minute sample, the static d by 97%; 1.1% and 96% under EASY at every event)
    assert 5 * float(hybrid.split()[-1].rstrip("%")) < float(static.split()[-1].rstrip("%"))


README = (ROOT / "README.md").read_text()


def _code_after(text: str, heading: str) -> list[str]:
    """The first fenced block (```sh, ```toml or plain) after the heading."""
    body = text[text.index(heading):]
    m = re.search(r"^```\w*\n(.*?)^```", body, re.S | re.M)
    assert m, heading
    return m.group(1).rstrip("\n").splitlines()


def _section(heading: str) -> str:
    body = README[README.index(heading):]
    nxt = body.find("\n## ", 1)
    return body if nxt < 0 else body[:nxt]


def test_readme_is_a_newcomers_page():
    """Under 250 lines; the problem said before any symbol is used; the two quick-start commands."""
    assert len(README.splitlines()) < 250
    first = README.split("\n\n")[1]  # the paragraph after the title
    assert "Slurm" in first and "users" in first and "admins" in first
    for jargon in ("u*", "u\\*", "LevelFS", "damping", " F ", "F is"):
        assert jargon not in first, jargon
    quick = _code_after(README, "## Quick start")
    assert [ln.split("#")[0].strip() for ln in quick] == ["./scripts/demo.sh", "sudo ./scripts/test.sh"]


def test_readme_fast_test_commands_work_after_the_demo():
    """The fast-test commands: the extras bootstrap.sh is given bring pytest (what the demo's .venv
    lacks), and the pytest line is the one that runs the suite without the testbed."""
    import tomllib

    lines = [ln.split("#")[0].strip() for ln in _code_after(README, "## Running the fast tests")]
    assert lines[1] == '.venv/bin/python -m pytest -m "not slurm and not slow" -q -n 2'
    assert lines[0].startswith("scripts/bootstrap.sh ")
    extras = set(lines[0].split()[1].split(","))
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    brought = {d.split(">")[0].split("=")[0] for e in extras for d in deps[e]}
    assert {"pytest", "pytest-xdist"} <= brought  # -n 2
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert "scripts/bootstrap.sh plot" in demo  # the demo's README lines include history --png


def test_readme_deployment_config_is_valid(tmp_path):
    """The checklist's config, as written, passes `fscontrol config check` (the testbed test runs it
    against a real Slurm) and sets what the agent needs to serve users: the history, the published
    snapshot, a cluster with a target."""
    import tomllib

    m = re.search(r"```toml\n(.*?)```", _section("## Deploying at a site"), re.S)
    conf = tmp_path / "fscontrol.toml"
    conf.write_text(m.group(1))
    r = CliRunner().invoke(app, ["config", "check", "--config", str(conf)])
    assert r.exit_code == 0, r.output
    assert "valid. apply = false" in r.output
    data = tomllib.loads(m.group(1))
    assert {"apply", "db", "publish_dir"} <= set(data["agent"])
    (cluster,) = data["clusters"].values()
    assert cluster["target_core_hours"] > 0 and cluster["method"] in ("damping", "padding", "hybrid", "none")


def test_readme_links_exist():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / target).exists(), target
    for target in set(re.findall(r"\b(docs/[\w.-]+\.md)\b", README)):
        assert (ROOT / target).is_file(), target
