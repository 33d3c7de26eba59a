"""Old histories: every released schema upgrades, and read-only commands never migrate."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from fscontrol.agent import pipeline
from fscontrol.errors import StoreError
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.store import schema as store_schema
from fscontrol.slurm.source import RecordedSlurm

FIXTURES = Path(__file__).resolve().parent / "data" / "upgrade"
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"


def _copy(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / "history.db"
    shutil.copy(FIXTURES / name, dst)
    return dst


def _fscontrol(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fscontrol", *args], capture_output=True, text=True, timeout=120)


OLDER = [("history-004.db", "004_gate_ledger"), ("history-005.db", "005_tick_stage"),
         ("history-006.db", "006_tick_story"), ("history-007.db", "007_level_fs")]
# 008: the last schema whose migrations fscontrol kept in its own `_migrations` table
RELEASED = [*OLDER, ("history-008.db", "008_usage_at")]
BOOKKEEPING = ("_migrations", "_sqlite_migrations")


def _schema(db) -> dict:
    """Every table's columns and indexes as SQLite reports them (not the CREATE text), the
    migrations' bookkeeping left out."""
    out = {}
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall():
        if name in BOOKKEEPING:
            continue
        cols = db.execute(f"PRAGMA table_xinfo({name})").fetchall()
        idx = {i[1]: (i[2], [c[2] for c in db.execute(f"PRAGMA index_info({i[1]})").fetchall()])
               for i in db.execute(f"PRAGMA index_list({name})").fetchall()}
        rowid = "WITHOUT ROWID" in db.execute("SELECT sql FROM sqlite_master WHERE name = ?", [name]).fetchone()[0]
        out[name] = (cols, idx, rowid)
    return out


@pytest.mark.parametrize("fixture,schema", OLDER)
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
    legacy = {r[0]: r[1] for r in sqlite3.connect(path).execute("SELECT name, applied_at FROM _migrations")}
    db = store.open_db(path)
    rows = db.execute("SELECT name, applied_at FROM _sqlite_migrations WHERE migration_set = 'fscontrol' ORDER BY id").fetchall()
    assert [n for n, _ in rows] == [n for n, _ in store_schema.MIGRATIONS]
    assert {n: t for n, t in rows if n in legacy} == legacy  # carried over as they were
    # the legacy table stays, with the row that makes an older fscontrol refuse the history
    assert {r[0] for r in db.execute("SELECT name FROM _migrations")} == {*legacy, store_schema.LEGACY_MOVED}
    assert _schema(db) == _schema(store.open_db(tmp_path / "new.db"))  # the same schema as a new history
    assert db.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 3
    assert {j: e.state for j, e in store_ledger.ledger_entries(db, "tbcluster").items()} == {"11": "held", "12": "held"}
    old = store.load_snapshot(db, cluster="tbcluster")
    res = pipeline.collect(RecordedSlurm(SAMPLE), db)
    assert res.snapshot_id > old.id
    db.close()
    r = _fscontrol("status", "--db", str(path), "--json")
    assert r.returncode == 0, r.stderr


def test_a_report_on_an_up_to_date_legacy_history_reads_it_and_changes_nothing(tmp_path):
    path = _copy(tmp_path, "history-008.db")
    before = path.read_bytes()
    r = _fscontrol("status", "--db", str(path), "--json")
    assert r.returncode == 0, r.stderr
    assert path.read_bytes() == before


def test_a_new_history_is_kept_by_sqlite_utils_migrations(tmp_path):
    from sqlite_utils import Database
    from sqlite_utils.migrations import Migrations

    path = tmp_path / "h.db"
    assert store.open_db(path).close() is None
    db = Database(path)
    ours = Migrations(store_schema.MIGRATION_SET)  # sqlite-utils' own reading of the bookkeeping
    for name, fn in store_schema.MIGRATIONS:
        ours(name=name)(fn)
    assert [m.name for m in ours.applied(db)] == [n for n, _ in store_schema.MIGRATIONS] and ours.pending(db) == []
    assert [r[0] for r in db.execute("SELECT name FROM _migrations")] == [store_schema.LEGACY_MOVED]
    # opening again applies nothing and does not import sqlite-utils
    code = (f"import sys; from fscontrol.store import history as s; d = s.open_db({str(path)!r}); "
            "assert s.migrate(d) == [] and 'sqlite_utils' not in sys.modules, sorted(sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).returncode == 0


def test_a_history_with_a_migration_this_fscontrol_does_not_know_is_refused(tmp_path):
    path = tmp_path / "h.db"
    store.open_db(path).close()
    with sqlite3.connect(path) as c:
        c.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('fscontrol', '999_future', 'x')")
    with pytest.raises(StoreError, match="newer"):
        store.open_db(path)
    r = _fscontrol("status", "--db", str(path))
    assert r.returncode != 0 and "newer fscontrol" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def _open_at_once(path: Path, barrier, out) -> None:
    barrier.wait()
    try:
        store.open_db(path).close()
        out.put("ok")
    except Exception as e:  # noqa: BLE001 - reported to the test
        out.put(f"{type(e).__name__}: {e}")


@pytest.mark.parametrize("fixture", [None, "history-007.db"])
def test_processes_opening_one_history_at_once_all_open_it_and_it_is_migrated_once(tmp_path, fixture):
    """The agent's tick and an operator's collect may open a new (or just upgraded) history at the
    same moment: before, every such race left all but one with 'unreadable: table ... already
    exists' (or 'locked' from the switch to WAL); now one migrates under the write lock and the
    others wait and find nothing left to do."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for trial in range(4):
        path = tmp_path / f"h{trial}.db"
        if fixture:
            shutil.copy(FIXTURES / fixture, path)
        barrier, out = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier, out)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [out.get(timeout=5) for _ in procs] == ["ok"] * 4
        rows = sqlite3.connect(path).execute("SELECT name FROM _sqlite_migrations ORDER BY id").fetchall()
        assert [r[0] for r in rows] == [n for n, _ in store_schema.MIGRATIONS]
