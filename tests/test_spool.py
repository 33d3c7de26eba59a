"""collect streams sacct (fscontrol.slurm.spool): the records and errors of parse_sacct, from a file
read line by line, with memory that does not grow with the number of jobs; the live command
keeps its argument list, timeout and errors."""

from __future__ import annotations

import random
import sys
import tracemalloc
from pathlib import Path

import pytest

from fscontrol.slurm import parse
from fscontrol.agent import pipeline
from fscontrol.slurm import spool
from fscontrol.store import history as store
from fscontrol.errors import FscontrolError, SlurmCommandError, SlurmTimeoutError
from fscontrol.slurm.source import RecordedSlurm

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "testbed-basic"
CAPTURES = sorted({*ROOT.glob("samples/**/sacct.txt"), *ROOT.glob("tests/data/**/sacct*.txt")})

sys.path.insert(0, str(Path(__file__).parent))
from test_fuzz_parsers import mutations  # noqa: E402


def outcome(fn, text):
    try:
        return "ok", tuple(fn(text))
    except FscontrolError as e:
        return type(e).__name__, str(e)


def streamed(text: str):
    return tuple(spool.from_text(text, "sacct -a -X -T -P"))


def whole(text: str):
    """What collect did before streaming: the final-newline check, then parse_sacct."""
    if text and not text.endswith("\n"):
        from fscontrol.errors import ParseError

        raise ParseError("sacct -a -X -T -P", "output does not end with a newline: cut short?")
    return parse.parse_sacct(text)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_streamed_jobs_equal_parse_sacct_on_every_capture(path):
    text = path.read_text()
    assert len(CAPTURES) >= 5
    # the same records, or (a capture of sacct refusing a field of the other Slurm version) the same error
    assert outcome(streamed, text) == outcome(parse.parse_sacct, text)


def test_streamed_and_whole_agree_on_mutations_of_the_capture():
    """Same records, or the same named error with the same message, on every mutation."""
    text = (SAMPLE / "sacct.txt").read_text()
    rng = random.Random(14)
    n = 0
    extra = [text.replace("\n", "\x1c\n"), text.replace("\n", "\r\n"), text.replace("\n", "\r"), "\n\n" + text,
             text + "CLUSTER: x\n", text.replace("|", "||", 1), ""]
    for t in [m for _, m in mutations(text, rng) if isinstance(m, str)] + extra:
        n += 1
        assert outcome(streamed, t) == outcome(whole, t), repr(t[-80:])
    assert n > 1000


def test_a_recorded_sample_streams_from_its_file(tmp_path):
    snap = pipeline.read_snapshot(RecordedSlurm(SAMPLE))
    assert isinstance(snap.jobs, spool.SacctJobs)
    assert tuple(snap.jobs) == parse.parse_sacct((SAMPLE / "sacct.txt").read_text()) and len(snap.jobs) > 0
    db = store.open_db(tmp_path / "h.db")
    with store.transaction(db):
        sid = store.write_snapshot(db, snap)
    assert db.execute("SELECT count(*) FROM job_usage WHERE snapshot_id = ?", [sid]).fetchone()[0] == len(
        {j.job_id for j in snap.jobs})
    running = dict(db.execute("SELECT job_id, rate FROM running_jobs WHERE snapshot_id = ?", [sid]).fetchall())
    by_id = {j.job_id: j for j in snap.jobs}
    assert running and all(rate == by_id[j].billing for j, rate in running.items())  # QOS normal: factor 1


def test_garbled_sacct_writes_nothing(tmp_path):
    """A bad line near the end: the named ParseError from read_snapshot, before any write."""
    text = (SAMPLE / "sacct.txt").read_text()
    lines = text.splitlines(keepends=True)
    lines[-1] = lines[-1].replace("|1|", "|x|", 1)

    class Garbled(RecordedSlurm):
        def _get(self, name):
            out = super()._get(name)
            return type(out)(out.argv, "".join(lines), out.started_at, out.finished_at) if name == "sacct" else out

    db = store.open_db(tmp_path / "h.db")
    with pytest.raises(FscontrolError, match="NNodes|AllocCPUS|line"):
        pipeline.collect(Garbled(SAMPLE), db)
    assert db.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM job_usage").fetchone()[0] == 0
    assert db.execute("SELECT status FROM ticks").fetchall() == [("failed",)]


def big_sacct(path: Path, n: int) -> None:
    """n jobs: the real capture's rows again and again with new job ids."""
    header, *rows = (SAMPLE / "sacct.txt").read_text().splitlines()
    with open(path, "w") as f:
        f.write(header + "\n")
        for i in range(n):
            r = rows[i % len(rows)].split("|", 1)[1]
            f.write(f"{1000 + i}|{r}\n")


def peak_streaming(tmp_path: Path, n: int) -> int:
    path = tmp_path / f"sacct-{n}.txt"
    big_sacct(path, n)
    tracemalloc.start()
    try:
        jobs = spool.from_file(path, "sacct")
        assert len(jobs) == n
        total = sum(j.elapsed_s for j in jobs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total >= 0
    return peak


def test_streaming_memory_does_not_grow_with_jobs(tmp_path):
    """Python's own allocations (tracemalloc) while sacct is checked and read through: the same
    for 15,000 and 60,000 jobs (parse_sacct's tuple alone would hold ~10 MiB more; the peak is
    the records kept in memory before they spill to the temporary file, spool.IN_MEMORY_CHUNKS
    lists, reached by both); a window under that is held whole, and costs less."""
    assert spool.IN_MEMORY_CHUNKS * spool.ROWS_PER_PICKLE < 15_000
    small, large = peak_streaming(tmp_path, 15_000), peak_streaming(tmp_path, 60_000)
    assert large < small + 512 * 1024, (small, large)
    assert large < 3 * 2**20
    assert peak_streaming(tmp_path, 2_000) < small


def test_live_sacct_keeps_timeout_exit_code_and_utf8_errors(tmp_path):
    capture = SAMPLE / "sacct.txt"
    jobs, t0, t1 = spool.run_sacct(("cat", str(capture)), 10.0, {"PATH": "/usr/bin:/bin"})
    assert tuple(jobs) == parse.parse_sacct(capture.read_text()) and t0 <= t1
    with pytest.raises(SlurmTimeoutError, match="timed out after 0.2 s"):
        spool.run_sacct(("sleep", "5"), 0.2, {"PATH": "/usr/bin:/bin"})
    with pytest.raises(SlurmCommandError, match=r"failed \(exit 3\): boom"):
        spool.run_sacct(("sh", "-c", "echo boom >&2; exit 3"), 10.0, {"PATH": "/usr/bin:/bin"})
    with pytest.raises(SlurmCommandError, match="printed only an error: nope"):
        spool.run_sacct(("sh", "-c", "echo nope >&2"), 10.0, {"PATH": "/usr/bin:/bin"})
    with pytest.raises(SlurmCommandError, match="not found"):
        spool.run_sacct(("no-such-sacct-here",), 10.0, {"PATH": "/usr/bin:/bin"})
    bad = tmp_path / "bad.txt"
    bad.write_bytes(capture.read_bytes()[:40] + b"\xff" + capture.read_bytes()[40:])
    with pytest.raises(SlurmCommandError, match="not UTF-8 \\(at byte 40\\)"):
        spool.run_sacct(("cat", str(bad)), 10.0, {"PATH": "/usr/bin:/bin"})
