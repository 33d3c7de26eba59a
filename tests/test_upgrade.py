"""Old histories: every released schema upgrades, and read-only commands never migrate."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fscontrol.agent import pipeline
from fscontrol.store import history as store
from fscontrol.slurm.source import RecordedSlurm

FIXTURES = Path(__file__).resolve().parent / "data" / "upgrade"
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"


def _copy(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / "history.db"
    shutil.copy(FIXTURES / name, dst)
    return dst


def _fscontrol(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fscontrol", *args], capture_output=True, text=True, timeout=120)


RELEASED = [("history-004.db", "004_gate_ledger"), ("history-005.db", "005_tick_stage"),
            ("history-006.db", "006_tick_story"), ("history-007.db", "007_level_fs")]


@pytest.mark.parametrize("fixture,schema", RELEASED)
def test_a_report_on_an_old_history_says_so_and_changes_nothing(tmp_path, fixture, schema):
    path = _copy(tmp_path, fixture)
    before = path.read_bytes()
    r = _fscontrol("status", "--db", str(path))
    assert r.returncode == 4
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]  # one line, no traceback
    assert f"schema {schema}" in r.stderr and "upgrades it" in r.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("fixture,schema", RELEASED)
def test_every_released_schema_upgrades_and_keeps_its_history_and_ledger(tmp_path, fixture, schema):
    path = _copy(tmp_path, fixture)
    db = store.open_db(path)
    names = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY name")]
    assert names == [n for n, _ in store.MIGRATIONS]
    assert db.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 3
    assert {j: e.state for j, e in store.ledger_entries(db, "tbcluster").items()} == {"11": "held", "12": "held"}
    old = store.load_snapshot(db, cluster="tbcluster")
    res = pipeline.collect(RecordedSlurm(SAMPLE), db)
    assert res.snapshot_id > old.id
    db.close()
    r = _fscontrol("status", "--db", str(path), "--json")
    assert r.returncode == 0, r.stderr
