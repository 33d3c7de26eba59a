"""What classic `status` computes from a snapshot's rows alone (report.status.classic_basis: the
NormShares slurmctld holds, the refined EffectvUsage, sprio's lagging factors) is computed once
when the agent writes the snapshot and kept with it (migration 011_status_basis; issue #31: a
quarter of `status --json` at 100,000 associations). Each check compares the report made from the
stored basis with the report computed from the rows, as before, on the recorded samples."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.report import status as rstatus
from fscontrol.report import table as rtable
from fscontrol.store import history as store
from fscontrol.store import schema as store_schema

ROOT = Path(__file__).resolve().parent.parent
CLASSIC = ["testbed-basic", "synthetic-agave", "testbed-2411-classic", "testbed-2605-classic", "testbed-history", "testbed-series/03"]


def _collect(tmp_path: Path, *samples: str) -> Path:
    db = tmp_path / "h.db"
    for name in samples:
        r = CliRunner().invoke(app, ["collect", "--source", str(ROOT / "samples" / name), "--db", str(db)])
        assert r.exit_code == 0, r.output
    return db


def _json(data: dict) -> str:
    return "".join(rtable.json_chunks(data))


@pytest.mark.parametrize("sample", CLASSIC)
def test_the_stored_basis_gives_the_report_the_rows_give(sample, tmp_path):
    db = store.open_db(_collect(tmp_path, sample), readonly=True)
    snap = store.load_snapshot(db, running=False)
    assert snap.basis is not None and snap.basis.rows is snap.shares
    computed = rstatus.classic_basis(snap.shares, snap.prio_fairshare, snap.config.damping_factor)
    assert (computed.held, computed.held_form, computed.refined, computed.lagging, computed.sprio) == (
        snap.basis.held, snap.basis.held_form, snap.basis.refined, snap.basis.lagging, snap.basis.sprio)
    plain = replace(snap, basis=None)
    for kw in ({}, {"tree": True}, {"target_core_hours": 123.0, "dummy": ("acct001", "u00001")}):
        assert _json(rstatus.status_data(snap, **kw)) == _json(rstatus.status_data(plain, **kw))
        a = rstatus.status_data(snap, columns=True, **kw)
        b = rstatus.status_data(plain, columns=True, **kw)
        assert list(rstatus.status_lines(a, rstatus.status_fields())) == list(rstatus.status_lines(b, rstatus.status_fields()))


def test_a_basis_is_used_only_for_its_own_rows_and_d(tmp_path, monkeypatch):
    """Another snapshot's rows (a caller's replace), or a d read back after the snapshot: the basis
    is computed again, at that d."""
    db = store.open_db(_collect(tmp_path, "testbed-basic"), readonly=True)
    snap = store.load_snapshot(db, running=False)
    calls = []
    real = rstatus.classic_basis
    monkeypatch.setattr(rstatus, "classic_basis", lambda *a: calls.append(a[2]) or real(*a))
    rstatus.status_data(snap)
    assert calls == []
    rstatus.status_data(replace(snap, shares=tuple(list(snap.shares))))  # equal rows, not the ones it was read with
    assert calls == [snap.config.damping_factor]
    d = snap.config.damping_factor + 4
    state = {"damping_in_force": {"d": d, "at": snap.taken_at + 1}}
    got = rstatus.status_data(snap, agent_state=state)
    assert calls[-1] == d and got["damping_factor"] == d
    assert _json(got) == _json(rstatus.status_data(replace(snap, basis=None), agent_state=state))


def test_each_snapshot_keeps_its_basis_only_while_it_is_the_latest(tmp_path):
    db_path = _collect(tmp_path, "testbed-series/00", "testbed-series/01")
    db = store.open_db(db_path, readonly=True)
    first, latest = store.snapshot_ids(db, store.clusters(db)[0])[:1] + store.snapshot_ids(db, store.clusters(db)[0])[-1:]
    assert store.load_snapshot(db, latest, running=False).basis is not None
    old = store.load_snapshot(db, first, running=False)
    assert old.basis is None  # one row a cluster: the latest snapshot's
    assert db.execute("SELECT count(*) FROM status_basis").fetchone()[0] == len(store.clusters(db))
    assert _json(rstatus.status_data(old)) == _json(rstatus.status_data(replace(old, basis=None)))


def test_a_basis_that_does_not_hold_the_rows_is_not_used(tmp_path):
    db_path = _collect(tmp_path, "synthetic-agave")
    conn = sqlite3.connect(db_path)
    (raw,) = conn.execute("SELECT raw_usage FROM status_basis").fetchone()
    b = bytearray(raw)
    b[8 * 5] ^= 1  # one association's RawUsage is not the row's
    conn.execute("UPDATE status_basis SET raw_usage = ?", [bytes(b)])
    conn.commit()
    conn.close()
    snap = store.load_snapshot(store.open_db(db_path, readonly=True), running=False)
    assert snap.basis is None


def test_a_history_before_the_migration_reads_as_it_is_and_gets_the_table(tmp_path):
    db_path = _collect(tmp_path, "testbed-basic")
    want = _json(rstatus.status_data(store.load_snapshot(store.open_db(db_path, readonly=True), running=False)))
    old = tmp_path / "old.db"
    with sqlite3.connect(db_path) as src, sqlite3.connect(old) as dst:  # the WAL's pages too
        src.backup(dst)
    conn = sqlite3.connect(old)  # as an fscontrol before 011_status_basis left it
    conn.execute("DROP TABLE status_basis")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = '011_status_basis'")
    conn.commit()
    conn.close()
    ro = store.open_db(old, readonly=True)  # optional: a report reads it as it is, computing the basis
    snap = store.load_snapshot(ro, running=False)
    assert snap.basis is None and _json(rstatus.status_data(snap)) == want
    ro.close()
    r = CliRunner().invoke(app, ["collect", "--source", str(ROOT / "samples" / "testbed-basic"), "--db", str(old)])
    assert r.exit_code == 0, r.output
    rw = store.open_db(old, readonly=True)
    assert "011_status_basis" in store_schema.applied_migrations(rw)[0]
    assert store.load_snapshot(rw, running=False).basis is not None


def test_fair_tree_keeps_no_classic_basis(tmp_path):
    db = store.open_db(_collect(tmp_path, "testbed-fairtree"), readonly=True)
    assert store.load_snapshot(db, running=False).basis is None
    assert db.execute("SELECT count(*) FROM status_basis").fetchone()[0] == 0


@pytest.mark.parametrize("sample", ["testbed-basic", "testbed-2411-classic", "testbed-2605-classic", "synthetic-agave"])
def test_status_without_sprios_rows_reports_the_same(sample, tmp_path):
    """`status` reads a snapshot without sprio's factors by association where the stored basis holds
    each row's (load_snapshot prio=False: at 1M jobs, 135,000 sprio rows); at another d (read back
    after the snapshot) status_of reads them and computes the basis again. Same report both ways."""
    from fscontrol.agent import config

    db = store.open_db(_collect(tmp_path, sample), readonly=True)
    full = store.load_snapshot(db, running=False)
    lean = store.load_snapshot(db, running=False, prio=False)
    assert full.prio_fairshare and lean.prio_fairshare == {} and lean.basis.sprio == full.basis.sprio
    assert any(v is not None for v in lean.basis.sprio)
    cc = config.load(None).cluster(full.cluster)
    for kw in ({}, {"tree": True}, {"columns": True}):
        assert _json(rstatus.status_of(db, lean, cc, **kw)) == _json(rstatus.status_of(db, replace(full, basis=None), cc, **kw))
    d = full.config.damping_factor + 3  # a d read back after the snapshot: the factors read, the basis made at d
    state = {"damping_in_force": {"d": d, "at": full.taken_at + 1}}
    import fscontrol.store.ledger as ledger

    real = ledger.control_state
    try:
        ledger.control_state = lambda db_, cluster: state
        got = rstatus.status_of(db, lean, cc)
        want = rstatus.status_of(db, replace(full, basis=None), cc)
    finally:
        ledger.control_state = real
    assert got["damping_factor"] == d and _json(got) == _json(want)
    assert any(r["fairshare_sprio"] is not None for r in got["table"])


def test_a_status_basis_table_of_another_shape_is_not_read(tmp_path):
    """A history whose status_basis lacks a column (a development build's first shape, without
    sprio's factors): status computes the basis, publish and collect go on."""
    db_path = _collect(tmp_path, "testbed-basic")
    want = _json(rstatus.status_data(store.load_snapshot(store.open_db(db_path, readonly=True), running=False)))
    conn = sqlite3.connect(db_path)
    conn.execute("ALTER TABLE status_basis DROP COLUMN sprio")
    conn.commit()
    conn.close()
    snap = store.load_snapshot(store.open_db(db_path, readonly=True), running=False, prio=False)
    assert snap.basis is None and snap.prio_fairshare and _json(rstatus.status_data(snap)) == want
    r = CliRunner().invoke(app, ["collect", "--source", str(ROOT / "samples" / "testbed-basic"), "--db", str(db_path)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["status", "--json", "--db", str(db_path)])
    assert r.exit_code == 0, r.output
