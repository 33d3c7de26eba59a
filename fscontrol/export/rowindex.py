"""The published file's row index (its layout: fscontrol.export.publish.published_text): a user's
rows found by bisection on the index at the end of the file and read by seek, so that a forecast
at 100,000 associations reads a few rows, not 30 MB. Standard library only (the forecast's
cold-start path)."""

from __future__ import annotations

import os

from fscontrol import jsontext

INDEX_LINE = ' "row_index": ['
ROWS_LINE = ' "associations": ['  # the rows' line (export.pubwrite): a row's offset counts from its start
INDEX_KEY = "row_index_bytes"
END = b"\n ]\n}\n"  # what follows the index's last entry
_LINEAR = 512  # bytes of entries (~12) read one by one after the bisection: each probe and each entry read is a json.loads


def by_index(fh, at: int, size: int, users: set[str], ancestors: bool) -> list[dict] | None:
    """The rows of `users` and the accounts' (with `ancestors`, only those on these users' paths)
    through the index at the end of the file (published_text), in the file's order; None when the
    index does not fit the file (then the caller reads every line).

    Every entry read is checked against the row it points at (the row's own user and account),
    and a user's entries against the count each of them carries (its fifth field: how many rows
    the user has), so an entry whose name was changed (same length, the offsets still right)
    cannot hide a row: a user or an account on the path with no entry, or fewer than the count,
    is None too (the caller's scan finds the row, or says there is none: an unknown user pays
    for one scan of the file)."""
    total = os.fstat(fh.fileno()).st_size
    if not 0 < size <= total - at:
        return None
    fh.seek(total - size)
    if fh.readline() != INDEX_LINE.encode() + b"\n":
        return None
    first, end = fh.tell(), total - len(END) + 1  # end: just after the last entry's newline
    fh.seek(end - 1)
    if fh.read() != END:
        return None
    got: dict[int, dict] = {}

    def read(key: tuple[str, ...]) -> list[dict]:
        lo = _first_entry(fh, first, end, key, after=False)
        hi = _first_entry(fh, lo, end, key, after=True)
        if hi <= lo:
            return []
        fh.seek(lo)
        block = fh.read(hi - lo).rstrip().removesuffix(b",")
        spans = jsontext.loads(b"[" + block + b"]")
        raws = []
        for e in spans:
            if tuple(e[:len(key)]) != key:
                raise ValueError("index out of order")
            if len(e) > 4 and len(key) == 1 and e[4] != len(spans):  # (user,) and ("",): all of them
                raise ValueError(f"the index has {len(spans)} of {key[0]!r}'s {e[4]} rows")
            fh.seek(at + e[2])
            raws.append(fh.read(e[3]))
        rows = jsontext.loads(b"[" + b",".join(raws) + b"]")
        for e, r in zip(spans, rows):
            if not isinstance(r, dict) or (r.get("user") or "", str(r.get("account") or "")) != (e[0], e[1]):
                raise ValueError("the index does not fit the rows")
            got[e[2]] = r
        return rows

    mine = []
    for u in users:
        if u:
            got_u = read((u,))
            if not got_u:  # no entry: no such user, or an entry damaged: the scan tells which
                return None
            mine += got_u
    if not ancestors:
        read(("",))
    else:  # up each of the user's rows, account by account
        seen: set[str] = set()
        todo = [r.get("account") for r in mine]
        while todo:
            a = todo.pop()
            if not isinstance(a, str) or not a or a in seen:  # root's parent: "" (or none)
                continue
            seen.add(a)
            up = read(("", a))
            if not up:  # every account on a path has its row: no entry is a damaged index
                return None
            todo += [r.get("parent") for r in up]
    return [got[k] for k in sorted(got)]


def on_paths(rows: list[dict], users: set[str] | frozenset[str]) -> list[dict]:
    """`users`' rows and the accounts' on their paths (each row's account, its parent, up to root)."""
    accounts = {r["account"]: r for r in rows if not r.get("user")}
    keep: set[str] = set()
    todo = [r.get("account") for r in rows if r.get("user") and r.get("user") in users]
    while todo:
        a = todo.pop()
        if isinstance(a, str) and a not in keep and a in accounts:
            keep.add(a)
            todo.append(accounts[a].get("parent"))
    return [r for r in rows if (r.get("user") and r.get("user") in users) or (not r.get("user") and r.get("account") in keep)]


def _entry_key(line: bytes) -> list:
    return jsontext.loads(line.rstrip().removesuffix(b","))


def _first_entry(fh, lo: int, end: int, key: tuple[str, ...], after: bool) -> int:
    """Where the index's first entry >= `key` starts (> `key` with `after`; entries compared on
    their first len(key) fields), by bisection between byte `lo` (an entry's start, every entry
    before it lower) and `end`."""
    n = len(key)
    hi = end
    while hi - lo > _LINEAR:
        mid = (lo + hi) // 2
        fh.seek(mid)
        fh.readline()  # on to the next entry's start
        pos = fh.tell()
        if pos >= end:
            hi = mid
            continue
        line = fh.readline()
        k = tuple(_entry_key(line)[:n])
        if k < key or (after and k == key):
            lo = pos + len(line)
        else:
            hi = mid
    fh.seek(lo)
    while lo < end:
        line = fh.readline()
        k = tuple(_entry_key(line)[:n])
        if k > key or (not after and k == key):
            return lo
        lo += len(line)
    return end
