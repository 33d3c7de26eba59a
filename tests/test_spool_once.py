"""collect parses sacct once (issue #14): read_sacct's one parse spools the records, later
iterations (write_snapshot) read them back instead of parsing again; the whole-output errors
still win over a parse error, as when they were checked first."""

from __future__ import annotations

from pathlib import Path

import pytest

from fscontrol.slurm import parse
from fscontrol.agent import pipeline
from fscontrol.slurm import spool
from fscontrol.store import history as store
from fscontrol.errors import ParseError, SlurmCommandError
from fscontrol.slurm.source import RecordedSlurm

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"


def test_sacct_is_parsed_once_from_read_to_write(tmp_path, monkeypatch):
    records = parse.parse_sacct((SAMPLE / "sacct.txt").read_text())
    calls = []
    real = parse.iter_sacct

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(parse, "iter_sacct", counted)
    snap = pipeline.read_snapshot(RecordedSlurm(SAMPLE))
    assert len(calls) == 1
    db = store.open_db(tmp_path / "h.db")
    with store.transaction(db):
        sid = store.write_snapshot(db, snap)
    assert tuple(snap.jobs) == records
    assert len(calls) == 1
    got = db.execute("SELECT job_id, user, account, billing, start, end, elapsed_s FROM job_usage WHERE snapshot_id = ? "
                     "ORDER BY job_id", [sid]).fetchall()
    want = sorted({j.job_id: (j.job_id, j.user, j.account, j.billing, j.start, j.end, j.elapsed_s) for j in snap.jobs}.values())
    assert got == want


def test_records_come_from_the_spool_not_the_file(tmp_path):
    path = tmp_path / "sacct.txt"
    text = (SAMPLE / "sacct.txt").read_text()
    path.write_text(text)
    jobs = spool.from_file(path, "sacct")
    path.write_text(text.splitlines()[0] + "\n")  # the file changes after the read: the jobs do not
    assert tuple(jobs) == parse.parse_sacct(text) and len(jobs) == len(parse.parse_sacct(text)) > 0
    assert [list(c) for c in jobs.rows_chunks()] and sum(len(c) for c in jobs.rows_chunks()) == len(jobs)


@pytest.mark.parametrize("kept", [0, 1, spool.IN_MEMORY_CHUNKS])
@pytest.mark.parametrize("n", [0, 1, spool.ROWS_PER_PICKLE - 1, spool.ROWS_PER_PICKLE, 2 * spool.ROWS_PER_PICKLE + 3])
def test_chunk_edges(n, kept, monkeypatch):
    """The records read back are parse_sacct's, kept in memory or spilled to the temporary file
    (`kept`: the lists held in memory before the spill)."""
    monkeypatch.setattr(spool, "IN_MEMORY_CHUNKS", kept)
    header, *rows = (SAMPLE / "sacct.txt").read_text().splitlines()
    text = header + "\n" + "".join(f"{7000 + i}|{rows[i % len(rows)].split('|', 1)[1]}\n" for i in range(n))
    jobs = spool.from_text(text, "sacct")
    chunks = -(-n // spool.ROWS_PER_PICKLE)
    assert isinstance(jobs._rows, list) == (chunks <= kept)  # spilled exactly when there are more lists
    assert tuple(jobs) == parse.parse_sacct(text) and tuple(jobs) == parse.parse_sacct(text)  # read twice alike
    assert [len(c) for c in jobs.rows_chunks()] == [min(spool.ROWS_PER_PICKLE, n - i) for i in range(0, n, spool.ROWS_PER_PICKLE)]


def test_whole_output_errors_win_over_a_parse_error():
    text = (SAMPLE / "sacct.txt").read_text()
    lines = text.splitlines(keepends=True)
    garbled = lines[:-1] + [lines[-1].replace("|1|", "|x|", 1)]
    with pytest.raises(ParseError, match="AllocCPUS|NNodes"):
        spool.from_text("".join(garbled), "sacct")
    with pytest.raises(ParseError, match="cut short"):  # and no final newline: that error, as before
        spool.from_text("".join(garbled).rstrip("\n"), "sacct")
    with pytest.raises(SlurmCommandError, match="not UTF-8"):  # and a byte that is not UTF-8
        fh = __import__("tempfile").TemporaryFile()
        fh.write("".join(garbled).encode() + b"\xff\n")
        spool.read_sacct(fh, "sacct", lambda at: SlurmCommandError(f"not UTF-8 (at byte {at})"))
    with pytest.raises(ParseError, match="cut short"):  # a clean parse without the final newline
        spool.from_text(text.rstrip("\n"), "sacct")
