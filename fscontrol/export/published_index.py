"""The published snapshot read once per snapshot, for a process that answers many requests (the
users' web page, fscontrol.web): read_published's answers without reading the file each time.

A request for one user reads only that user's rows and the accounts' (read_published's `users`),
but to find them `read_published` scans the whole file: at 100,000 associations (31 MB) that is
~0.3 s a request. `PublishedIndex.read` does the scan once per snapshot (a new file: another
inode, size or mtime) and keeps
* the cluster-wide part, parsed;
* the accounts' rows (user ""), parsed: a request needs those on its user's path;
* where each user's rows are in the file (offset and length), not the rows themselves,
and answers a request from those and one `os.pread` per row of the user's, through the file it
opened when it built the index (the agent replaces the file atomically, so the old snapshot stays
readable through it until the next request sees the new one).

Memory is bounded by the cluster's size: two integers a user association and the accounts' rows
(~15 MB at 100,000 associations), whatever the number of requests. A file not in
published_text's layout (one row a line) is not indexed: every request reads it as
read_published does. Reading every row (Fair Tree's forecast, users=None) is not kept either."""

from __future__ import annotations

import json
import os
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fscontrol.export import runsorted
from fscontrol.export.publish import ROWS_LINE, PublishedError, _line, check_published, locate, read_published
from fscontrol.export.rowindex import INDEX_KEY, by_index

_USER = ',"user":'


@dataclass(frozen=True)
class _View:
    """What one snapshot's index holds, replaced whole (never changed in place): a request reads one
    view from start to end while another request's rebuild makes the next (issue #31: the page's
    threads saw a view half rebuilt, and answered with no rows)."""

    head: dict[str, Any] | None  # None: not in the layout, read as read_published does
    has_rows: bool = False  # the file has the rows' line (else it is the head alone, as read_published reads it)
    accounts: dict[str, dict] = field(default_factory=dict)  # the accounts' rows (user "") by account name
    where: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    indexed: tuple[int, int] | None = None  # (where the rows' line starts, the row index's size)
    order: dict[int, int] = field(default_factory=dict)  # id(an account's row) -> its place in the file
    run_at: int | None = None  # where the running block starts, in runsorted's layout (None: not in it)


class _Snapshot:
    """One published file's index (built by PublishedIndex)."""

    def __init__(self, p: Path, fd: int, key: tuple) -> None:
        self.path, self.fd, self.key = p, fd, key
        self._lock = threading.Lock()
        self.view = self._build()

    # the current view's parts (tests, the bench)
    head = property(lambda self: self.view.head)
    has_rows = property(lambda self: self.view.has_rows)
    accounts = property(lambda self: self.view.accounts)
    where = property(lambda self: self.view.where)
    indexed = property(lambda self: self.view.indexed)

    def _reader(self):
        """A file object of this request's own on the snapshot's file: its own open of the same
        inode (/proc/self/fd/N), so its own offset. Not os.dup: a dup shares its offset with every
        other dup of the fd, and the web page's threads moved each other's reads (a 500, and wrong
        rows, under 8 clients: tests/test_published_index.py). Where /proc is not there, the path
        itself, checked to be the same file."""
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(f"/proc/self/fd/{self.fd}", flags)
        except OSError:
            fd = os.open(self.path, flags)
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self.key[1:3]:
                os.close(fd)
                raise ValueError(f"{self.path} was replaced while it was read") from None
        return os.fdopen(fd, "rb")

    def _build(self, use_index: bool = True) -> _View:
        decode = json.JSONDecoder().raw_decode
        with self._reader() as fh:
            head, at, run_at, found = runsorted.read_head(fh, ROWS_LINE.encode(), _line)
            if not found:
                data = check_published(json.loads(b"".join(head)), self.path)
                data.pop(INDEX_KEY, None)  # the file's row index is not the data's (read_published)
                data.pop("row_index", None)
                data.pop(runsorted.KEY, None)  # (as read_published reads a file whole)
                return _View(data)
            offset = fh.tell()  # just after the rows' line
            if use_index:
                view = self._from_row_index(fh, head, at, run_at)
                if view:  # (None, or False where a test refuses the file's index)
                    return view
                fh.seek(offset)  # (the index's reads moved the file: the scan starts at the first row)
            where: dict[str, list[tuple[int, int]]] = {}
            accounts: dict[str, dict] = {}
            for raw in fh:
                start, offset = offset, offset + len(raw)
                row = raw.strip()
                if row.endswith(b","):
                    row = row[:-1]
                if row == b"":
                    continue
                if row in (b"]", b"}"):  # the rows' end (the file's row index may follow: publish.published_text)
                    break
                text = row.decode("utf-8")
                i = text.find(_USER)
                if not (text.startswith("{") and text.endswith("}")) or i < 0:
                    return _View(None)  # not one row a line: not indexed
                user, _ = decode(text, i + len(_USER))
                if user == "":
                    r = json.loads(text)
                    if r.get("account") in accounts:  # one row an account, as sshare has: else not indexed
                        return _View(None)
                    accounts[r.get("account")] = r
                else:
                    where.setdefault(user, []).append((start, len(raw)))
        text = b"".join(head).decode("utf-8").rstrip().removesuffix(",") + "\n}"
        data = _sorted_once(check_published(json.loads(text), self.path), run_at)
        data.pop(INDEX_KEY, None)  # the row index's size: the file's, not the data's (read_published)
        return _View(data, True, accounts, where, None, {id(r): i for i, r in enumerate(accounts.values())}, run_at)

    def _from_row_index(self, fh, head: list[bytes], at: int, run_at: int | None = None) -> _View | None:
        """The file's own row index (publish.published_text writes it after the rows) in place of
        the scan: the head parsed, the accounts' rows read through the index, and each request's
        rows found by bisection on it (rowindex.by_index, as read_published does). A snapshot at
        100,000 associations is then indexed without reading its 30 MB, and a worker holds no
        offsets a user (issue #31 item 2). None when the file has no index or it does not fit
        (the scan then runs, as before)."""
        try:
            data = json.loads(b"".join(head).rstrip().removesuffix(b",") + b"\n}")
            size = data.get(INDEX_KEY) if isinstance(data, dict) else None
            if type(size) is not int:
                return None
            accounts_rows = by_index(fh, at, size, set(), ancestors=False)
        except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError):
            return None
        if accounts_rows is None:
            return None
        accounts: dict[str, dict] = {}
        for r in accounts_rows:
            if r.get("user") or r.get("account") in accounts:
                return None
            accounts[r.get("account")] = r
        data.pop(INDEX_KEY, None)
        return _View(_sorted_once(check_published(data, self.path), run_at), True, accounts, {}, (at, size),
                     {id(r): i for i, r in enumerate(accounts.values())}, run_at)

    def rows(self, users: set[str] | frozenset[str]) -> list[dict] | None:
        """The users' rows and the accounts' on their paths up to the root (what a user's own
        `sshare` shows, and all a forecast reads of the accounts: forecast.classic.path_weights)."""
        return self.rows_of(self.view, users)[0]

    def rows_of(self, v: _View, users: set[str] | frozenset[str]) -> tuple[list[dict] | None, _View]:
        """rows() on the view `v`, and the view the answer came from (a rebuild may make a new one)."""
        if v.indexed is not None:  # through the file's row index: the same rows in the same order
            at, size = v.indexed
            try:
                with self._reader() as fh:
                    got = by_index(fh, at, size, set(users), ancestors=True)
            except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError):
                got = None
            if got is not None:
                mine = [r for r in got if r.get("user")]
                return (sorted((v.accounts.get(r.get("account"), r) for r in got if not r.get("user")),
                               key=lambda r: v.order.get(id(r), -1))
                        + [r for u in users for r in mine if r.get("user") == u]), v
            # a user the index does not have (unknown, or an entry damaged: rowindex.by_index): the
            # scan tells which, once for this snapshot, as read_published's fallback does
            with self._lock:
                if self.view.indexed is not None:
                    old, self.view = self.view, self._build(use_index=False)
                    _keep_cluster(old, self.view)  # (the same file: its projections' caches stay valid)
                v = self.view
            if v.head is None or v.indexed is not None:
                return None, v  # not one row a line after all: the caller reads it as read_published does
        out, path = [], {}
        for u in users:
            for start, length in v.where.get(u, ()):
                r = json.loads(os.pread(self.fd, length, start).decode("utf-8").strip().removesuffix(","))
                if r.get("user") != u:
                    continue
                out.append(r)
                a = r.get("account")
                while a in v.accounts and a not in path:
                    path[a] = v.accounts[a]
                    a = path[a].get("parent")
        return sorted(path.values(), key=lambda r: v.order[id(r)]) + out, v


class PublishedIndex:
    """read_published (same arguments, answers and errors) for many requests: the file is scanned
    once per snapshot (module docstring). Thread-safe; one per process (a forked worker builds its own)."""

    def __init__(self) -> None:
        self._snap: _Snapshot | None = None
        self._lock = threading.Lock()
        self.builds = 0  # how many snapshots were indexed (tests, the bench)

    def read(self, path: Path | str, cluster: str | None = None, users: set[str] | frozenset[str] | None = None
             ) -> tuple[dict[str, Any], Path]:
        if users is None:
            return read_published(path, cluster)
        p = locate(path, cluster)
        snap = self._current(p)
        try:
            v = snap.view  # one view for the whole request (another's rebuild replaces it, never changes it)
            rows, v = snap.rows_of(v, users) if v.head is not None else (None, v)  # (None: read as read_published does)
            if v.head is None or rows is None:
                return read_published(p, cluster, users)
            data = check_published(v.head, p, cluster)
            if v.run_at is not None:  # the rows' own running lists, by seek (export/runsorted.py)
                data = runsorted.fill(data, rows, v.run_at, lambda o, n: os.pread(snap.fd, n, o))
        except (OSError, ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, MemoryError) as e:
            # a damaged file (an offset, a column): one error, as read_published's, never a page's 500
            raise PublishedError(f"published snapshot {p} is unreadable: {type(e).__name__}: {e}") from None
        return ({**data, "associations": rows} if v.has_rows else dict(data)), p

    def _current(self, p: Path) -> _Snapshot:
        try:
            st = os.stat(p)
            key = (str(p), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
            with self._lock:
                snap = self._snap
                if snap is None or snap.key != key:
                    fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    try:
                        f = os.fstat(fd)
                        snap = _Snapshot(p, fd, (str(p), f.st_dev, f.st_ino, f.st_mtime_ns, f.st_size))
                    except BaseException:
                        os.close(fd)
                        raise
                    weakref.finalize(snap, os.close, fd)  # when no request reads the old snapshot any more
                    self._snap = snap
                    self.builds += 1
                return snap
        except (OSError, ValueError) as e:
            raise PublishedError(f"published snapshot {p} is unreadable: {e}") from None


def _sorted_once(data: dict, run_at: int | None) -> dict:
    """The head as the view keeps it: in runsorted's layout, the cluster's running entries decoded
    once for the snapshot (every request's projection charges them) and the head's copy of them
    dropped, so a worker holds one decoded copy (export/runsorted.py)."""
    m, run = data.get(runsorted.KEY), data.get("running")
    if run_at is None or not isinstance(m, dict) or not isinstance(run, dict):
        return data
    data[runsorted.KEY] = {k: m.get(k) for k in ("format", "n", "rows_carry")}
    data["running"] = {**run, "cluster": runsorted.from_meta(m)}
    return data


def _keep_cluster(old: _View, new: _View) -> None:
    """The new view of the same snapshot keeps the old one's decoded cluster entries (the same
    object), so the forecast's per-snapshot caches (forecast.loaded, keyed on it) stay warm."""
    a, b = (v.head.get("running") if v.head else None for v in (old, new))
    if isinstance(a, dict) and isinstance(b, dict) and isinstance(a.get("cluster"), runsorted.SortedRunning) \
            and a.get("cluster") == b.get("cluster"):
        b["cluster"] = a["cluster"]
