"""The history's index on (cluster, path) (migration 010_assoc_path_index, issue #31): the reports
read a snapshot's associations in tree order without sorting them; a history without the index
(an older fscontrol's) reads the same rows, read-only too, and is given it by the next writable
open. And `status` leaves the cyclic garbage collector as it found it (it pauses it)."""

from __future__ import annotations

import gc
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from fscontrol.agent import pipeline
from fscontrol.slurm.source import RecordedSlurm
from fscontrol.store import history as store
from fscontrol.store import schema as store_schema

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "testbed-basic"
INDEX = "assocs_cluster_path"


def _plan(db, latest: bool) -> list[str]:
    """SQLite's query plan of _share_values' query for the latest snapshot or an earlier one."""
    captured = []

    class Spy:
        def execute(self, sql, params):
            captured.append(sql)
            return db.execute(sql, params)

    store._share_values(Spy(), "x", 1, latest=latest)
    return [r[3] for r in db.execute("EXPLAIN QUERY PLAN " + captured[0], ["x", 1]).fetchall()]


@pytest.fixture
def history(tmp_path) -> Path:
    db = store.open_db(tmp_path / "h.db")
    for _ in range(2):  # two snapshots: the latest's query and an earlier one's
        pipeline.collect(RecordedSlurm(SAMPLE), db)
    db.close()
    return tmp_path / "h.db"


def test_a_new_history_reads_its_associations_without_sorting(history):
    db = store.open_db(history)
    assert INDEX in {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    for latest in (True, False):
        plan = _plan(db, latest)
        assert any(INDEX in step for step in plan), plan
        assert not any("TEMP B-TREE" in step for step in plan), plan


def test_a_history_without_the_index_reads_the_same_rows_and_gets_it(history, tmp_path):
    with_index = store.open_db(history, readonly=True)
    want = [store.load_snapshot(with_index, sid).shares for sid in (1, 2)]
    with_index.close()
    old = tmp_path / "old.db"
    shutil.copy(history, old)
    conn = sqlite3.connect(old)  # as an fscontrol before the migration left it
    conn.execute(f"DROP INDEX {INDEX}")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = '010_assoc_path_index'")
    conn.commit()
    conn.close()
    ro = store.open_db(old, readonly=True)  # an optional migration: a report reads it as it is
    assert any("TEMP B-TREE" in step for step in _plan(ro, True))
    assert [store.load_snapshot(ro, sid).shares for sid in (1, 2)] == want and len(want[0]) > 5
    ro.close()
    rw = store.open_db(old)  # the next writable open (a tick, collect) adds it
    assert INDEX in {r[0] for r in rw.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "010_assoc_path_index" in store_schema.applied_migrations(rw)[0]
    assert [store.load_snapshot(rw, sid).shares for sid in (1, 2)] == want


def test_status_leaves_the_garbage_collector_as_it_found_it(history, capsys):
    from fscontrol.cli.main import main

    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            for args in (["--json"], []):
                sys.argv = ["fscontrol", "status", "--db", str(history), *args]
                with pytest.raises(SystemExit) as e:
                    main()
                assert e.value.code in (0, None)
                assert capsys.readouterr().out
                assert gc.isenabled() is enabled
        finally:
            gc.enable()
