"""Golden output of `fscontrol status` on the recorded sample (regenerate: FSCONTROL_REGEN_GOLDEN=1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
SAMPLE = ROOT / "samples" / "testbed-basic"


def _check(name: str, got: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FSCONTROL_REGEN_GOLDEN") == "1":
        path.write_text(got)
    assert got == path.read_text()


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "h.db"
    r = CliRunner().invoke(app, ["collect", "--source", str(SAMPLE), "--db", str(path)])
    assert r.exit_code == 0, r.output
    return path


def test_status_table_golden(db):
    r = CliRunner().invoke(app, ["status", "--db", str(db), "--target", "1"])
    assert r.exit_code == 0, r.output
    _check("status_testbed_basic.txt", r.output)


def test_status_json_golden(db):
    r = CliRunner().invoke(app, ["status", "--db", str(db), "--json", "--target", "1"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["users"] == 7 and data["dummy"] == "fsadmin/fsdummy"
    # beside the golden file, by hand from sshare's own row (d = 1, U = root's RawUsage 13784):
    # carol@chem S = 0.2, EffectvUsage 0.329286: x = 0.2 * 13784 / (1 - 0.329286 - 0.2) s
    carol = next(u for u in data["table"] if (u["user"], u["account"]) == ("carol", "chem"))
    assert carol["usage_to_halve_core_hours"] == pytest.approx(0.2 * 13784 / (1 - 0.329286 - 0.2) / 3600, rel=1e-6)
    assert carol["implied_halving_core_hours"] is None and carol["alone_at_first_tier"] is False
    _check("status_testbed_basic.json", r.output)


def test_status_without_history_is_a_clear_error(tmp_path):
    r = CliRunner().invoke(app, ["status", "--db", str(tmp_path / "none.db")])
    assert r.exit_code == 6
    assert r.output.strip().startswith("fscontrol: error: no history database at")


def test_bad_sample_folder(tmp_path):
    r = CliRunner().invoke(app, ["collect", "--source", str(tmp_path), "--db", str(tmp_path / "h.db")])
    assert r.exit_code == 6 and "is not a recorded sample (no meta.json)" in r.output


def test_garbled_sample_writes_nothing(tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(SAMPLE, bad)
    (bad / "sshare.txt").write_text((SAMPLE / "sshare.txt").read_text().replace("|1673|", "|16x3|"))
    r = CliRunner().invoke(app, ["collect", "--source", str(bad), "--db", str(tmp_path / "h.db")])
    assert r.exit_code == 3
    assert "RawUsage is not a number: '16x3'" in r.output
    from fscontrol.store import history as store

    db = store.open_db(tmp_path / "h.db")
    assert db.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM assoc_samples").fetchone()[0] == 0
