"""The third pass on collect's CPU (issue #14): sacct read a block at a time into plain tuples,
squeue's fast paths inline, the twins built without make_dataclass, write_snapshot reading the
associations and their latest values in one query. Each is checked here against the slower,
plainer form it replaced."""

from __future__ import annotations

import dataclasses
import io
import json
import random
from pathlib import Path

import pytest

from fscontrol.slurm import parse
from fscontrol.agent import pipeline
from fscontrol.slurm import spool
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.records import JobRecord, ShareRow, share_rows, twin_of
from fscontrol.snaprecords import QueueJob, new_queue_job
from fscontrol.slurm.source import RecordedSlurm

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
BASIC = SAMPLES / "testbed-basic"


# ---------------------------------------------------------------------------- file_lines
TRICKY = [
    b"",
    b"\n",
    b"a",
    b"a\n",
    b"a\nb",
    b"a\r\nb\r\n",
    b"a\rb\rc\n",
    b"a\r\n\r\nb\n\n",
    "x\u2028y\u2029z\x1cw\x1dv\x1eu\x85t\x0bs\x0cr\n".encode(),
    "\u00e9t\u00e9|\u65e5\u672c|\U0001F600\n".encode() * 50,
    b"\n".join(b"%d|%s" % (i, b"x" * (i % 97)) for i in range(400)) + b"\n",
    b"y" * 5000 + b"\n" + b"z" * 3000,  # lines longer than the block
]


@pytest.mark.parametrize("data", TRICKY)
@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 1 << 16])
def test_file_lines_are_the_whole_texts_lines(data, block):
    fh = io.BytesIO(data)
    assert list(spool.file_lines(fh, block)) == data.decode().splitlines()


@pytest.mark.parametrize("block", [1, 5, 64, 1 << 16])
def test_file_lines_raise_on_bytes_that_are_not_utf8(block):
    for data in (b"ab\xff\ncd\n", b"ab\ncd\xe9\n", b"ok\n" * 100 + b"\xc3", b"\xe6\x97\n"):
        with pytest.raises(UnicodeDecodeError):
            list(spool.file_lines(io.BytesIO(data), block))


def test_random_cuts_of_a_sample_split_alike():
    text = (BASIC / "sacct.txt").read_bytes() + "\u00e9\u65e5\r\n\u2028x\r".encode()
    rng = random.Random(14)
    for _ in range(50):
        block = rng.randrange(1, 200)
        assert list(spool.file_lines(io.BytesIO(text), block)) == text.decode().splitlines()


# ---------------------------------------------------------------------------- iter_sacct(plain=True)
@pytest.mark.parametrize("sample", ["testbed-basic", "synthetic-agave", "testbed-history", "testbed-2411-fairtree"])
def test_plain_sacct_records_are_jobrecords_tuples(sample):
    lines = (SAMPLES / sample / "sacct.txt").read_text().splitlines()
    records = list(parse.iter_sacct(lines))
    plain = list(parse.iter_sacct(lines, plain=True))
    assert records and all(type(r) is JobRecord for r in records)
    assert all(type(t) is tuple for t in plain) and plain == [tuple(r) for r in records]
    assert records == [JobRecord(*t) for t in plain]


def test_the_spool_keeps_plain_tuples_and_gives_jobrecords():
    jobs = spool.from_file(BASIC / "sacct.txt", "sacct")
    chunks = list(jobs.rows_chunks())
    assert chunks and all(type(t) is tuple for c in chunks for t in c)
    assert tuple(jobs) == parse.parse_sacct((BASIC / "sacct.txt").read_text())
    assert all(type(j) is JobRecord for j in jobs)


# ---------------------------------------------------------------------------- twins
@pytest.mark.parametrize("cls", [QueueJob])
def test_twins_are_plain_classes_with_the_slots(cls):
    twin = twin_of(cls)
    assert twin is not None and twin.__slots__ == cls.__slots__
    assert not dataclasses.is_dataclass(twin) and not hasattr(twin(*range(len(cls.__slots__))), "__dict__")


def test_twin_made_records_equal_the_dataclasses_own():
    q = ("7_3+1", "u", "a", "p", "normal", "PENDING", 1, 4, 100, -5, "Priority", 1.0, None, 3600)
    for made, want in ((new_queue_job(*q), QueueJob(*q)), (new_queue_job(*q, "fscontrol:hold"), QueueJob(*q, "fscontrol:hold"))):
        assert type(made) is QueueJob and made == want and hash(made) == hash(want) and repr(made) == repr(want)
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.nice = 0
    v = ("acct", "u", "acct", 2, None, 1, 0.5, 10, None, 0.1, 0.9)
    made = share_rows([v])[0]
    want = ShareRow(*v[:5], True, *v[6:])
    assert type(made) is ShareRow and made == want and made.shares_parent is True and made.billing_run_mins is None
    assert hash(made) == hash(want) and repr(made) == repr(want)
    full = share_rows([(*v[:5], False, *v[6:], 7, 0.25)])[0]  # every field given, shares_parent a bool already
    assert type(full) is ShareRow and full == ShareRow(*v[:5], False, *v[6:], 7, 0.25) and full.level_fs == 0.25
    with pytest.raises(AttributeError):
        made.raw_usage = 0


# ---------------------------------------------------------------------------- write_snapshot
def _assoc_state(db, sid):
    return {(a, u): vals for a, u, *vals in db.execute(
        "SELECT a.account, a.user, s.present, s.raw_shares, s.raw_usage, s.fairshare FROM assoc_samples s "
        "JOIN assocs a ON a.id = s.assoc_id WHERE s.snapshot_id = ?", [sid])}


def test_change_only_samples_new_vanished_and_moved_associations(tmp_path):
    """Snapshot 2 of the basic sample with: bob@flat gone, erin@flat new, physics moved under
    root (depth 1, its users to 2), alice@flat's usage changed. Only those rows get samples; the
    vanished one a tombstone; the moved ones their new parent, depth and path; every snapshot
    reads back as written."""
    snap = pipeline.read_snapshot(RecordedSlurm(BASIC))
    db = store.open_db(tmp_path / "h.db")
    with store.transaction(db):
        s1 = store.write_snapshot(db, snap)
    rows = []
    for r in snap.shares:
        if r.key == ("flat", "bob"):
            rows.append(r._replace(user="erin"))
            continue
        if r.key == ("flat", "alice"):
            r = r._replace(raw_usage=r.raw_usage + 100)
        if r.account == "physics":
            r = r._replace(parent="root" if not r.user else r.parent, depth=r.depth - 1)
        rows.append(r)
    snap2 = dataclasses.replace(snap, shares=tuple(rows), taken_at=snap.taken_at + 60)
    with store.transaction(db):
        s2 = store.write_snapshot(db, snap2)
    got = _assoc_state(db, s2)
    assert set(got) == {("flat", "bob"), ("flat", "erin"), ("flat", "alice")}
    assert got[("flat", "bob")] == [0, None, None, None]
    assert got[("flat", "erin")][0] == 1 and got[("flat", "alice")][2] == snap.shares[3].raw_usage + 100
    assert len(_assoc_state(db, s1)) == len(snap.shares)
    moved = {(a, u): (p, d, path) for a, u, p, d, path in db.execute(
        "SELECT account, user, parent, depth, path FROM assocs WHERE account = 'physics'")}
    assert moved == {("physics", ""): ("root", 1, "root/physics"), ("physics", "alice"): ("physics", 2, "root/physics/alice"),
                     ("physics", "bob"): ("physics", 2, "root/physics/bob")}
    # (an older snapshot reads back with the tree as it stands now: assocs hold one parent and depth)
    back = store.load_snapshot(db, s1).shares  # in tree-path order
    assert len(back) == len(snap.shares) and {r.key: r._replace(parent="", depth=0) for r in back} == \
        {r.key: r._replace(parent="", depth=0) for r in snap.shares}
    back = store.load_snapshot(db, s2).shares
    assert len(back) == len(snap2.shares) and {r.key: r for r in back} == {r.key: r for r in snap2.shares}
    with store.transaction(db):  # the same again: no sample at all
        s3 = store.write_snapshot(db, dataclasses.replace(snap2, taken_at=snap2.taken_at + 60))
    assert _assoc_state(db, s3) == {}


def test_config_json_is_asdict_without_raw():
    for folder in sorted(SAMPLES.glob("*/config.txt")) + sorted(SAMPLES.glob("*/*/config.txt")):
        cfg = parse.parse_config(folder.read_text())
        want = dataclasses.asdict(cfg)
        del want["raw"]
        assert json.dumps(store._config_json(cfg)) == json.dumps(want)
        assert store._config_from_json({"config": json.loads(json.dumps(store._config_json(cfg)))}) == cfg


def test_latest_usage_values_are_the_previous_snapshots(tmp_path):
    """What a tick reads from assoc_current before writing (store.latest_usage_values) is the
    previous snapshot's usage as usage_values reads it from the samples, at every step of the
    recorded series and of two samples alternating (associations appearing and vanishing)."""
    series = sorted(p for p in (SAMPLES / "testbed-series").iterdir() if p.is_dir())
    for folders in (series, [BASIC, SAMPLES / "testbed-history", BASIC, SAMPLES / "testbed-history"]):
        db = store.open_db(tmp_path / f"{len(folders)}-{folders[0].name}.db")
        seen = 0
        for f in folders:
            snap = pipeline.read_snapshot(RecordedSlurm(f))
            sid, rows = store.latest_usage_values(db, snap.cluster)
            if sid is not None:
                assert sorted(rows) == sorted(store.usage_values(db, snap.cluster, sid)) and rows
                seen += 1
            with store.transaction(db):
                store.write_snapshot(db, snap)
        assert seen == len(folders) - 1


@pytest.mark.parametrize("when", ["after the read", "before the read"])
def test_halving_slurm_used_alike_with_a_collect_committed_in_between(tmp_path, monkeypatch, when):
    """The previous snapshot's usage is read before the tick's transaction: a collect another
    process commits after that read (the read is then still the previous decision's snapshot) or
    before it (then it is not, and the samples are read) changes nothing; each decision's h_slurm
    is what the samples give (the read disabled)."""
    from fscontrol.agent import config

    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 1, "method": "damping"}}})
    series = sorted(p for p in (SAMPLES / "testbed-series").iterdir() if p.is_dir())
    real = store.latest_usage_values

    def run(name, interleave):
        path = tmp_path / f"{name}.db"
        db = store.open_db(path)
        other = store.open_db(path)

        def read_then_collect(d, cluster):
            if interleave and when == "before the read":
                pipeline.collect(RecordedSlurm(series[0]), other)
            got = real(d, cluster) if interleave else (None, [])
            if interleave and when == "after the read":  # another process commits a snapshot
                pipeline.collect(RecordedSlurm(series[0]), other)
            used.append(got[0] is not None and got[0] == store_ledger.last_decision(d, cluster)["snapshot_id"]
                        if interleave and store_ledger.last_decision(d, cluster) else None)
            return got

        monkeypatch.setattr(store, "latest_usage_values", read_then_collect)
        for f in series:
            pipeline.control_tick(RecordedSlurm(f), db, cfg, apply=False)
        return db.execute("SELECT s.taken_at, d.h_slurm FROM decisions d JOIN snapshots s ON s.id = d.snapshot_id "
                          "ORDER BY d.id").fetchall()

    used: list = []
    fast = run("fast", True)
    assert set(used[1:]) == {when == "after the read"}  # the read used, or not, at every tick after the first
    slow = run("slow", False)
    assert len(fast) == len(slow) == len(series) and fast == slow
    assert any(h is not None for _, h in fast)


def test_a_pending_job_sprio_does_not_list_is_no_parse_error(tmp_path):
    """Found on the testbed: a job with a begin time to come pends with a priority in squeue but
    sprio lists no such job; with no other job waiting, collect failed ("printed no job")."""
    import shutil

    from fscontrol.agent import pipeline
    from fscontrol.slurm.source import RecordedSlurm
    from fscontrol.store import history as store_

    src = tmp_path / "sample"
    shutil.copytree(Path(__file__).resolve().parent.parent / "samples" / "testbed-basic", src)
    lines = (src / "squeue.txt").read_text().splitlines()
    keep = [lines[0]] + [ln for ln in lines[1:] if "|PENDING|" not in ln]
    keep.append("99|carol|chem|normal|normal|PENDING|1|1|5000|0|BeginTime|1795287665|1795295000|10:00")
    (src / "squeue.txt").write_text("\n".join(keep) + "\n")
    (src / "sprio.txt").write_text("")
    db = store_.open_db(tmp_path / "h.db")
    try:
        pipeline.collect(RecordedSlurm(src), db)
        assert store_.latest_snapshot_id(db) is not None
    finally:
        db.close()
