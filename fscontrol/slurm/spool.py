"""sacct's output kept on disk and read line by line: collect's memory stays flat as jobs grow.

A live `sacct` writes into an anonymous temporary file (the subprocess keeps its argument list
and timeout); a recorded sample is read from its own file. `SacctJobs` is the window's jobs.
`read_sacct` checks the output whole before anything is written, as collect always has: UTF-8
throughout, a final newline (else "cut short?"), and one parse of every line (so garbled output
raises the same named ParseError as parse_sacct, before the snapshot is stored).

That one parse is the only one: as it goes, the records are kept, a thousand to a list, in
memory for a usual window (up to IN_MEMORY_CHUNKS lists) and beyond that pickled into a second
temporary file; iterating the jobs afterwards (write_snapshot) reads those lists instead of
parsing the text again (issue #14: parsing twice made a streamed collect 1.4-1.7x slower than
the materialized one). No list of a million records is ever held.
"""

from __future__ import annotations

import codecs
import os
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from itertools import islice
from datetime import timezone, tzinfo
from pathlib import Path

from fscontrol.slurm import command
from fscontrol.slurm import parse
from fscontrol.errors import ParseError, SlurmCommandError, SlurmTimeoutError

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: records says why)
if TYPE_CHECKING:
    from typing import BinaryIO
from fscontrol.records import JobRecord

CHUNK = 1 << 20
ROWS_PER_PICKLE = 1024  # records a pickle: ~0.3 MiB in memory at a time
_SIZE = struct.Struct("<Q")


def check_whole(fh: BinaryIO, command: str, not_utf8: Callable[[int], Exception]) -> None:
    """What collect checked on the whole text before parsing: UTF-8 throughout (not_utf8(byte
    offset) is raised), and a final newline unless empty (else ParseError "cut short?")."""
    fh.seek(0)
    dec = codecs.getincrementaldecoder("utf-8")("strict")
    offset = 0
    last = b""
    while chunk := fh.read(CHUNK):
        pending = len(dec.getstate()[0])  # bytes of a character cut by the previous chunk
        try:
            dec.decode(chunk)
        except UnicodeDecodeError as e:
            raise not_utf8(offset - pending + e.start) from None
        offset += len(chunk)
        last = chunk[-1:]
    pending = len(dec.getstate()[0])
    try:
        dec.decode(b"", final=True)
    except UnicodeDecodeError as e:
        raise not_utf8(offset - pending + e.start) from None
    if offset and last != b"\n":
        raise ParseError(command, "output does not end with a newline: cut short?")


def file_lines(fh: BinaryIO, block: int = 1 << 16) -> Iterator[str]:
    """The lines of a UTF-8 file exactly as str.splitlines gives them for its whole text, decoded
    and split a block at a time (64 KiB cut after its last b"\n"; a piece ending in "\n" splits
    on its own as inside the whole text, and "\n" is never part of a multi-byte UTF-8
    character): memory bounded by the block (a line longer than it is read whole), a third of the
    cost of a decode a line. A byte that is not UTF-8 raises UnicodeDecodeError, possibly some
    lines before the parse reaches it: read_sacct's check_whole then names it."""
    fh.seek(0)
    buf = bytearray()
    while data := fh.read(block):
        seen = len(buf)
        buf += data
        cut = buf.rfind(b"\n", seen) + 1
        if cut:
            text = buf[:cut].decode()
            del buf[:cut]
            yield from text.splitlines()
    if buf:
        yield from buf.decode().splitlines()


IN_MEMORY_CHUNKS = 6  # up to 6 lists of ROWS_PER_PICKLE records (6,144 jobs, ~1.7 MiB) stay in memory


def _spill_file():
    import tempfile

    return tempfile.TemporaryFile()


def _spill(fh: BinaryIO, chunk: list[tuple]) -> None:
    import pickle

    blob = pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(_SIZE.pack(len(blob)))
    fh.write(blob)


class SacctJobs:
    """The jobs of one sacct window, from `fh` (a binary file): parsed line by line until
    count() (read_sacct) has read it through, then unpickled from the records it spooled.

    len() is the number of records (known once read_sacct has read it through)."""

    def __init__(self, fh: BinaryIO, command: str, tz: tzinfo = timezone.utc, owned: bool = True):
        self._fh, self.command, self.tz, self._owned = fh, command, tz, owned
        self._n: int | None = None
        self._rows: BinaryIO | None = None  # the parsed records, once count() has run

    def __iter__(self) -> Iterator[JobRecord]:
        if self._rows is None:
            return parse.iter_sacct(file_lines(self._fh), self.command, self.tz)
        return self._records()

    def _records(self) -> Iterator[JobRecord]:
        make = tuple.__new__  # JobRecord is a NamedTuple: the tuple is the record
        for chunk in self.rows_chunks():
            for t in chunk:
                yield make(JobRecord, t)

    def rows_chunks(self) -> Iterator[list[tuple]]:
        """The records as plain tuples (JobRecord's field order), a list at a time: what
        write_snapshot binds, without a JobRecord per job."""
        if self._rows is None:
            it = parse.iter_sacct(file_lines(self._fh), self.command, self.tz, plain=True)
            while chunk := list(islice(it, ROWS_PER_PICKLE)):
                yield chunk
            return
        if isinstance(self._rows, list):  # kept in memory
            yield from self._rows
            return
        # (a thread unpickling the next list while SQLite inserted this one was tried: no gain)
        import pickle

        fh = self._rows
        fh.seek(0)
        size = _SIZE.size
        unpack = _SIZE.unpack
        while head := fh.read(size):
            yield pickle.loads(fh.read(unpack(head)[0]))

    def count(self) -> int:
        """Parse every line (raising what parse_sacct raises) and count the records; the
        records are kept for the next iterations: in memory up to IN_MEMORY_CHUNKS lists (a
        usual window: no temporary file, no pickling), pickled into a temporary file beyond."""
        kept: list[list[tuple]] = []
        rows = None
        n = 0
        try:
            with parse.gc_paused():  # a tuple a record: nothing for the collector to find
                it = parse.iter_sacct(file_lines(self._fh), self.command, self.tz, plain=True)
                while chunk := list(islice(it, ROWS_PER_PICKLE)):
                    n += len(chunk)
                    kept.append(chunk)
                    if len(kept) > IN_MEMORY_CHUNKS or rows is not None:  # a large window: memory stays flat
                        if rows is None:
                            rows = _spill_file()
                        for c in kept:
                            _spill(rows, c)
                        kept = []
        except BaseException:
            if rows is not None:
                rows.close()
            raise
        if self._rows is not None and not isinstance(self._rows, list):
            self._rows.close()
        self._rows, self._n = (kept if rows is None else rows), n
        return n

    def __len__(self) -> int:
        return self.count() if self._n is None else self._n

    def __bool__(self) -> bool:
        return len(self) > 0

    def close(self) -> None:
        if self._owned:
            self._fh.close()
        if self._rows is not None and not isinstance(self._rows, list):
            self._rows.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def read_sacct(fh: BinaryIO, command: str, not_utf8: Callable[[int], Exception], tz: tzinfo = timezone.utc,
               owned: bool = True) -> SacctJobs:
    """SacctJobs over `fh`, checked whole and parsed through once (its errors raised here).

    The whole-output checks come first, as before, but cost no pass of their own when the
    parse succeeds: the parse decodes every line strictly, and a b"\n" is never part of a
    multi-byte UTF-8 character, so every line decoding is the whole file decoding; only the
    final newline is looked at. When the parse fails, check_whole runs and its error (bytes
    that are not UTF-8, a missing final newline) wins over the parse's, as it always has."""
    jobs = SacctJobs(fh, command, tz, owned=False)
    try:
        try:
            jobs.count()
        except Exception:
            check_whole(fh, command, not_utf8)  # raises what the whole-output check finds first
            raise
        size = os.fstat(fh.fileno()).st_size
        if size:
            fh.seek(size - 1)
            if fh.read(1) != b"\n":
                raise ParseError(command, "output does not end with a newline: cut short?")
    except BaseException:
        jobs.close()
        if owned:
            fh.close()
        raise
    jobs._owned = owned
    if owned:  # parsed and spooled: the text is no longer needed, its disk space goes back now
        fh.close()
    return jobs


def from_text(text: str, command: str, tz: tzinfo = timezone.utc) -> SacctJobs:
    """SacctJobs over text already in memory (a sample whose output a test replaced)."""
    import tempfile

    fh = tempfile.TemporaryFile()
    fh.write(text.encode())
    return read_sacct(fh, command, lambda at: SlurmCommandError(f"`{command}` printed bytes that are not UTF-8 (at byte {at})"), tz)


def from_file(path: Path, command: str, tz: tzinfo = timezone.utc) -> SacctJobs:
    """SacctJobs over a recorded sample's sacct.txt."""
    return read_sacct(open(path, "rb"), command,  # noqa: SIM115 (owned by SacctJobs, closed by it)
                      lambda at: SlurmCommandError(f"sample {path} holds bytes that are not UTF-8 (at byte {at}): not read"), tz)


def run_sacct(argv: tuple[str, ...], timeout_s: float, env: dict[str, str]) -> tuple[SacctJobs, float, float]:
    """Run sacct (an argument list, never a shell) with its output into an anonymous temporary
    file, under `timeout_s`; (its jobs, started, finished). The errors of LiveSlurm.run: a
    missing command, the timeout, bytes that are not UTF-8, a non-zero exit, only an error."""
    fh, t0, t1 = run_to_file(argv, timeout_s, env)
    cmd = " ".join(argv)
    try:
        jobs = read_sacct(fh, cmd, lambda at: SlurmCommandError(f"`{cmd}` printed bytes that are not UTF-8 (at byte {at}): not read"))
    except BaseException:
        fh.close()
        raise
    return jobs, t0, t1


def run_to_file(argv: tuple[str, ...], timeout_s: float, env: dict[str, str], pass_fds: tuple[int, ...] = ()
                ) -> tuple[BinaryIO, float, float]:
    """Run a command (an argument list, never a shell) with its output into an anonymous temporary
    file, under `timeout_s`; (the file, started, finished). The errors of LiveSlurm.run: a missing
    command, the timeout, a non-zero exit, only an error (bytes that are not UTF-8: checked_lines)."""
    import tempfile

    cmd = " ".join(argv)
    fh = tempfile.TemporaryFile()
    t0 = time.time()
    try:
        try:
            proc = command.run(list(argv), stdout=fh, timeout=timeout_s, env=env, pass_fds=pass_fds)
        except FileNotFoundError:
            raise SlurmCommandError(f"`{argv[0]}` not found: is the Slurm client installed and on PATH?") from None
        except subprocess.TimeoutExpired:
            raise SlurmTimeoutError(f"`{cmd}` timed out after {timeout_s:g} s") from None
        t1 = time.time()
        stderr = proc.stderr.decode(errors="replace")
        size = os.fstat(fh.fileno()).st_size
        if proc.returncode != 0:
            err = stderr.strip().splitlines() or _tail(fh).strip().splitlines()
            raise SlurmCommandError(f"`{cmd}` failed (exit {proc.returncode}): {err[-1] if err else 'no message'}")
        if stderr.strip() and size < CHUNK and not _tail(fh, CHUNK).strip():
            raise SlurmCommandError(f"`{cmd}` printed only an error: {stderr.strip().splitlines()[-1]}")
    except BaseException:
        fh.close()
        raise
    return fh, t0, t1


def checked_lines(fh: BinaryIO, command: str, not_utf8: Callable[[int], Exception]) -> Iterator[str]:
    """The lines of an output on disk (file_lines), after check_whole: squeue and sprio are parsed
    from these (parse.parse_squeue/parse_sprio take lines), never held whole as text (issue #31)."""
    check_whole(fh, command, not_utf8)
    return file_lines(fh)


class SpooledOutput:
    """A command's output on disk (a live command's anonymous temporary file, or a recorded
    sample's own file) and when it ran: parsed from its lines, never held whole as text (sshare at
    100,000 associations: issue #31). A context manager: the file is closed on leaving it."""

    def __init__(self, fh: BinaryIO, command: str, started_at: float, finished_at: float,
                 not_utf8: Callable[[int], Exception]) -> None:
        self.fh, self.command, self.started_at, self.finished_at = fh, command, started_at, finished_at
        self._not_utf8 = not_utf8

    def lines(self) -> Iterator[str]:
        """The lines after the whole-output checks (checked_lines: UTF-8, the final newline)."""
        return checked_lines(self.fh, self.command, self._not_utf8)

    def again(self) -> Iterator[str]:
        """The lines read anew (a parser's error path: the first bad field count wins)."""
        return file_lines(self.fh)

    def shares(self):
        """sshare's associations (parse.parse_sshare) from the lines."""
        return parse.parse_sshare(self.lines(), self.command, again=self.again)

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> "SpooledOutput":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def output_of_text(text: str, command: str, started_at: float, finished_at: float) -> SpooledOutput:
    """SpooledOutput over text already in memory (a sample whose output a test replaced)."""
    import tempfile

    fh = tempfile.TemporaryFile()
    fh.write(text.encode())
    return SpooledOutput(fh, command, started_at, finished_at, lambda at: SlurmCommandError(
        f"`{command}` printed bytes that are not UTF-8 (at byte {at})"))


class Spooled:
    """Records (squeue's jobs, sprio's rows) parsed once and kept as SacctJobs keeps sacct's: a
    thousand to a list, in memory for a usual queue (IN_MEMORY_CHUNKS lists) and pickled into a
    temporary file beyond, so that a queue of 10^5 jobs is never held as 10^5 objects (issue #31).
    Iterated any number of times (each record made anew by `make(*fields)`); len(), bool().

    `rows`: the records as plain tuples (parse.iter_squeue/iter_sprio with make=tuple-like), parsed
    through here: their errors are raised by the constructor, before anything is kept."""

    def __init__(self, rows: Iterator[tuple], make: Callable) -> None:
        self._make = make
        kept: list[list[tuple]] = []
        spill = None
        n = 0
        try:
            with parse.gc_paused():
                while chunk := list(islice(rows, ROWS_PER_PICKLE)):
                    n += len(chunk)
                    kept.append(chunk)
                    if len(kept) > IN_MEMORY_CHUNKS or spill is not None:
                        if spill is None:
                            spill = _spill_file()
                        for c in kept:
                            _spill(spill, c)
                        kept = []
        except BaseException:
            if spill is not None:
                spill.close()
            raise
        self._rows = kept if spill is None else spill
        self._n = n

    def chunks(self) -> Iterator[list[tuple]]:
        if isinstance(self._rows, list):
            yield from self._rows
            return
        import pickle

        fh = self._rows
        fh.seek(0)
        size, unpack = _SIZE.size, _SIZE.unpack
        while head := fh.read(size):
            yield pickle.loads(fh.read(unpack(head)[0]))

    def __iter__(self):
        make = self._make
        for chunk in self.chunks():
            for t in chunk:
                yield make(*t)

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def close(self) -> None:
        if not isinstance(self._rows, list):
            self._rows.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _plain(*values) -> tuple:
    return values


def queue_of(lines, command: str) -> Spooled:
    """squeue's jobs from its output's lines (or text), spooled (Spooled of QueueJob)."""
    from fscontrol.snaprecords import new_queue_job

    return Spooled(parse.iter_squeue(lines, command, make=_plain), new_queue_job)


def prio_of(lines, command: str) -> Spooled:
    """sprio's rows from its output's lines (or text), spooled (Spooled of PrioRow)."""
    from fscontrol.snaprecords import PrioRow

    return Spooled(parse.iter_sprio(lines, command, make=_plain), PrioRow)


def _tail(fh: BinaryIO, n: int = 4096) -> str:
    size = os.fstat(fh.fileno()).st_size
    fh.seek(max(0, size - n))
    return fh.read().decode(errors="replace")
