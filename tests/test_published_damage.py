"""A published file damaged where a user's forecast reads it (a NaN or an infinity in the user's
row, a name that cannot be printed) is refused with one line and exit 6, as a file that is not
JSON at all is: never a traceback (an outside tester's cases; the writer, pubwrite, writes no
NaN, no infinity and only Slurm's names). Each case is the bundled testbed-basic sample,
collected and published as the agent does, with one value changed in the text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "testbed-basic"


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("damage")
    db, out = tmp / "h.db", tmp / "pub" / "c.json"
    out.parent.mkdir()
    for args in (["collect", "--source", str(SAMPLE), "--db", str(db)], ["publish", "--db", str(db), "--out", str(out)]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
    return out


def _forecast(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fscontrol.cli.main", "forecast", "--published", str(path), "--user", "alice",
                           "--source", "published", "--stale-ok"], capture_output=True, text=True, timeout=120)


def _alice_row(text: str) -> str:
    return next(ln for ln in text.splitlines() if '"user":"alice"' in ln)  # (her first row)


@pytest.mark.parametrize("what,change", [
    ("raw_usage NaN", lambda row: row.replace('"raw_usage":', '"raw_usage":NaN,"x":', 1)),
    ("raw_usage Infinity", lambda row: row.replace('"raw_usage":', '"raw_usage":Infinity,"x":', 1)),
    ("norm_shares -Infinity", lambda row: row.replace('"norm_shares":', '"norm_shares":-Infinity,"x":', 1)),
    ("effective_usage 1e999", lambda row: row.replace('"effective_usage":', '"effective_usage":1e999,"x":', 1)),
    ("an account name with a lone surrogate", lambda row: row.replace('"account":"', '"account":"\\ud800', 1)),
])
def test_a_damaged_row_is_refused_in_one_line(published, tmp_path, what, change):
    text = published.read_text()
    bad = tmp_path / "c.json"
    bad.write_text(text.replace(_alice_row(text), change(_alice_row(text)), 1))
    good = _forecast(published)
    assert good.returncode == 0, good.stderr
    got = _forecast(bad)
    assert got.returncode == 6 and "Traceback" not in got.stderr, (what, got.stderr)
    (line,) = got.stderr.strip().splitlines()
    assert line.startswith("fscontrol: error: published snapshot") and "unreadable" in line, line


def test_a_cluster_name_that_cannot_be_printed_is_refused(published, tmp_path):
    text = published.read_text()
    bad = tmp_path / "c.json"
    name = [ln for ln in text.splitlines() if ln.startswith(' "cluster": ')][0]
    bad.write_text(text.replace(name, name.replace('": "', '": "\\ud800', 1), 1))
    got = _forecast(bad)
    assert got.returncode == 6 and "Traceback" not in got.stderr, got.stderr
    assert "cluster name" in got.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr
