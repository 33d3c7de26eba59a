"""The README's example output is the program's real output: its `status` block, line for line, on
the bundled sample it names; the quick start's demo runs as written (tests/test_demo is the slow
half: here, the commands the demo uses exist and the sample series it collects is there)."""

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
    block = _block_after((ROOT / "README.md").read_text(), "### What `status` shows")
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

    from fscontrol.cli.forecast import main as forecast_main

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
    """The worked example "replay your last month": its command, run on the bundled capture, prints
    the README's block line for line; and the controlled run is the one that meets u*."""
    import shlex

    section = (ROOT / "README.md").read_text().split("### Worked example: replay your last month", 1)[1]
    block = re.search(r"```\n(\$ fscontrol .*?)```", section, re.S).group(1).rstrip("\n").splitlines()
    assert block[0].startswith("$ fscontrol simulate samples/testbed-history")
    argv = shlex.split(block[0][2:])[1:]
    r = CliRunner().invoke(app, [*argv, "--no-progress"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert r.output.rstrip("\n").splitlines() == block[1:]
    hybrid = next(line for line in block if line.startswith("mf-classic hybrid"))
    static = next(line for line in block if line.startswith("mf-classic d=1"))
    assert float(hybrid.split()[-1].rstrip("%")) < 2.0 < float(static.split()[-1].rstrip("%"))
