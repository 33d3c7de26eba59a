"""squeue and sprio read as sacct is (issue #31 item 4): from disk a block at a time
(spool.checked_lines), parsed once into spool.Spooled (records on disk beyond a few thousand),
the same records as parse_squeue/parse_sprio of the whole text; a cut-short, garbled or non-UTF-8
output fails collect with the same named error and writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fscontrol.agent import pipeline
from fscontrol.errors import ParseError, SlurmCommandError
from fscontrol.slurm import parse, spool
from fscontrol.slurm.source import RecordedSlurm
from fscontrol.store import history as store

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"


def _sample(tmp_path: Path) -> Path:
    src = tmp_path / "sample"
    shutil.copytree(SAMPLE, src)
    return src


def test_streamed_records_are_the_whole_texts(tmp_path):
    src = RecordedSlurm(SAMPLE)
    queue, prio = src.squeue_jobs(), src.sprio_rows()
    want_q = parse.parse_squeue((SAMPLE / "squeue.txt").read_text())
    want_p = parse.parse_sprio((SAMPLE / "sprio.txt").read_text())
    assert len(queue) == len(want_q) > 0 and tuple(queue) == want_q and tuple(queue) == want_q  # read twice alike
    assert len(prio) == len(want_p) > 0 and tuple(prio) == want_p
    snap = pipeline.read_snapshot(src)
    assert tuple(snap.queue) == want_q and tuple(snap.prio) == want_p


@pytest.mark.parametrize("kept", [0, spool.IN_MEMORY_CHUNKS])
def test_a_long_queue_spills_and_reads_back_alike(kept, monkeypatch):
    """Beyond IN_MEMORY_CHUNKS lists the records go to the temporary file; every read gives them back."""
    monkeypatch.setattr(spool, "IN_MEMORY_CHUNKS", kept)
    header, *rows = (SAMPLE / "squeue.txt").read_text().splitlines()
    n = 3 * spool.ROWS_PER_PICKLE + 5
    text = header + "\n" + "".join(f"{70000 + i}|{rows[i % len(rows)].split('|', 1)[1]}\n" for i in range(n))
    queue = spool.queue_of(text.splitlines(), "squeue")
    assert isinstance(queue._rows, list) == (kept >= 4)
    assert tuple(queue) == parse.parse_squeue(text) and len(queue) == n


def test_a_duplicate_job_is_still_found():
    header, first, *_ = (SAMPLE / "squeue.txt").read_text().splitlines()
    with pytest.raises(ParseError, match="listed twice"):
        spool.queue_of([header, first, first], "squeue")
    spool.queue_of([header, first, "0" + first], "squeue")  # 0123 is another text than 123: not the same job


@pytest.mark.parametrize("name,damage,error", [
    ("squeue", lambda t: t.rstrip("\n"), "cut short"),  # no final newline
    ("squeue", lambda t: t[: len(t) * 2 // 3].rsplit("|", 3)[0] + "\n", "fields"),  # cut inside a line
    ("squeue", lambda t: t.replace("|PENDING|", "|PENDING|x|", 1), "fields"),
    ("squeue", lambda t: t.replace("|Priority|", "|Priority", 1).replace("|1|1|", "|one|1|", 1), "NODES|CPUS|fields"),
    ("sprio", lambda t: t.rstrip("\n"), "cut short"),
    ("sprio", lambda t: t.replace("|", "|x|", 3), "fields|FAIRSHARE|PRIORITY"),
])
def test_a_damaged_output_fails_collect_and_writes_nothing(tmp_path, name, damage, error):
    src = _sample(tmp_path)
    f = src / f"{name}.txt"
    f.write_text(damage(f.read_text()))
    db = store.open_db(tmp_path / "h.db")
    try:
        with pytest.raises(ParseError, match=error):
            pipeline.collect(RecordedSlurm(src), db)
        assert store.latest_snapshot_id(db) is None
        assert db.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0] == 0
    finally:
        db.close()


def test_bytes_that_are_not_utf8_fail_collect_and_write_nothing(tmp_path):
    src = _sample(tmp_path)
    f = src / "squeue.txt"
    f.write_bytes(f.read_bytes().replace(b"|PENDING|", b"|PEND\xffING|", 1))
    db = store.open_db(tmp_path / "h.db")
    try:
        with pytest.raises(SlurmCommandError, match="not UTF-8"):
            pipeline.collect(RecordedSlurm(src), db)
        assert store.latest_snapshot_id(db) is None
    finally:
        db.close()
