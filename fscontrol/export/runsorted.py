"""The published running jobs in a layout a reader takes without parsing them all (issue #31 item
2): at 1M jobs a snapshot's `running` is ~220,000 cluster entries and ~500,000 more under the
accounts and users, and a web worker spent 2.5-3.7 s of CPU parsing and sorting them on its first
page after each new snapshot.

What `fscontrol publish` adds (publish.published_text), all of it derived from the `running` the
file already holds, so nothing more is exposed (docs/privacy.md):
* the head key "running_sorted": the cluster's entries sorted by (time left, rate, place) as
  little-endian binary columns in base64 (times left, rates, places; -1 for no place), the entries
  with no time limit, their count and the rates' exact sum: what every projection on the snapshot
  charges (forecast.projection), read in milliseconds instead of parsed and sorted;
* "running" written last in the head, one line a key, so a reader skips its three long lines
  (the cluster's entries, the accounts', the users') without reading them into memory;
* where the rows carry them (`rows_carry`), each association row's "run_at": [offset, length] of
  its own list in the running block's "accounts" (an account row) or "users" (a user row) line,
  counted from the block's first byte, so a user's forecast reads by seek the few lists on its path.

A reader that knows nothing of these (an older fscontrol) reads the file as before: one JSON
document, "running" as it always was. A file without them (an older agent's) is read as before
by this one too (read_head: no key, nothing skipped). Standard library only (the forecast's
cold-start path)."""

from __future__ import annotations

import binascii
import math
import operator
import sys
from array import array
from collections.abc import Callable, Sequence
from itertools import compress, islice, repeat

from fscontrol import jsontext

KEY = "running_sorted"
FORMAT = 1
BLOCK = b' "running": {\n'
_SKIP = {b'  "cluster": ': "cluster", b'  "accounts": ': "accounts", b'  "users": ': "users"}
_PEEK = 16  # longer than each of _SKIP's prefixes
_CHUNK = 1 << 18  # a skipped line is read by chunks of this many bytes


def _b64(a: array) -> str:
    if sys.byteorder != "little":  # pragma: no cover (the file is little-endian whatever writes it)
        a = array(a.typecode, a)
        a.byteswap()
    return binascii.b2a_base64(a.tobytes(), newline=False).decode("ascii")  # (base64.b64encode's, without importing base64)


def _column(text: str, code: str) -> array:
    a = array(code)
    if not isinstance(text, str):  # b64decode's own checks and words, without importing base64
        raise TypeError(f"argument should be a bytes-like object or ASCII string, not {type(text).__name__!r}")
    if not text.isascii():
        raise ValueError("string argument should contain only ASCII characters")
    a.frombytes(binascii.a2b_base64(text, strict_mode=True))
    if sys.byteorder != "little":  # pragma: no cover
        a.byteswap()
    return a


class SortedRunning(Sequence):
    """The cluster's running entries sorted by (time left, rate, place), the ones with no limit
    after them: `lefts`, `rates`, `ids` (array columns of the timed ones; -1 is no place),
    `untimed` ([rate, place] pairs), `r0` (math.fsum of every rate). As a sequence it is the
    entries [time left, rate, place] in that order (what `running["cluster"]` held, sorted)."""

    def __init__(self, lefts: array, rates: array, ids: array, untimed: list, r0: float) -> None:
        if not len(lefts) == len(rates) == len(ids):
            raise ValueError("running_sorted: columns of different lengths")
        self.lefts, self.rates, self.ids, self.untimed, self.r0 = lefts, rates, ids, untimed, r0
        self.all_ids = (min(ids) >= 0 if len(ids) else True) and all(u[1] is not None for u in untimed)
        self._list: list | None = None
        self._ties: list[bool] | None = None  # _tie_flags

    def __len__(self) -> int:
        return len(self.lefts) + len(self.untimed)

    def __getitem__(self, i):
        if self._list is None:
            self._list = [[x, r, None if j < 0 else j] for x, r, j in zip(self.lefts, self.rates, self.ids)] + \
                [[None, float(r), j] for r, j in self.untimed]
        return self._list[i]

    def __eq__(self, other) -> bool:
        """The same entries (in any order: the file's list is in its own order)."""
        if isinstance(other, SortedRunning):  # (both sorted: the columns compared, in C)
            return (self.lefts, self.rates, self.ids, self.untimed) == (other.lefts, other.rates, other.ids, other.untimed)
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and _canon(self) == _canon(other)

    __hash__ = None  # type: ignore[assignment]

    def rates_down_in_ties(self) -> array:
        """The rates with each run of equal times left in descending order: (time left, -rate) order,
        the order of (time left, -c rate) for any c > 0 (forecast.loaded's inflow that replaces
        the jobs as they end), found without a sort."""
        out = array("d", self.rates)
        ties = compress(range(1, len(self.lefts)), self._tie_flags())  # i: lefts[i - 1] == lefts[i]
        i = next(ties, None)
        while i is not None:
            start, end = i - 1, i + 1  # a run of equal times left, lefts[start:end]
            while (i := next(ties, None)) == end:
                end += 1
            out[start:end] = out[start:end][::-1]
        return out

    def _tie_flags(self) -> list[bool]:
        """[lefts[i - 1] == lefts[i] for i >= 1], once an object (a scaled copy shares its source's)."""
        if self._ties is None:
            lefts = self.lefts
            self._ties = list(map(operator.eq, lefts, islice(lefts, 1, None)))
        return self._ties

    def ties(self) -> int:
        """How many entries have the same time left as the one before them."""
        return sum(self._tie_flags())

    def untimed_rates(self) -> list[float]:
        return [float(r) for r, _ in self.untimed]


def _canon(entries: Sequence) -> list:
    return sorted((e[0] is None, e[0] or 0.0, float(e[1]), -1 if len(e) < 3 or e[2] is None else e[2]) for e in entries)


def as_read(whole: dict, rows: list[dict]) -> dict:
    """What a reader of `rows` (with the head) gets of a whole file's data `whole` in this layout:
    the running lists of those rows' accounts and users only, no running_sorted (the tests' check
    that a read through the index is the whole file's)."""
    out = {k: v for k, v in whole.items() if k not in (KEY, "associations")}
    run = out.get("running")
    if KEY in whole and (whole[KEY] or {}).get("rows_carry") and isinstance(run, dict):
        mine = {(r["account"], r.get("user") or "") for r in rows if r.get("run_at")}
        out["running"] = {**run, "accounts": {k: v for k, v in run["accounts"].items() if (k, "") in mine},
                          "users": {k: v for k, v in run["users"].items() if tuple(k.split("/", 1)) in mine}}
    return {**out, "associations": rows}


def of_entries(entries: Sequence) -> SortedRunning:
    """SortedRunning of published entries [time left or None, rate, place or None] (a file
    without running_sorted, or the entries cut to their typical end: forecast.loaded)."""
    if isinstance(entries, SortedRunning):
        return entries
    timed = sorted((float(e[0]), float(e[1]), -1 if len(e) < 3 or e[2] is None else int(e[2]))
                   for e in entries if e[0] is not None)
    return SortedRunning(array("d", (t[0] for t in timed)), array("d", (t[1] for t in timed)),
                         array("q", (t[2] for t in timed)),
                         [[float(e[1]), None if len(e) < 3 or e[2] is None else int(e[2])] for e in entries if e[0] is None],
                         math.fsum(float(e[1]) for e in entries))


def scaled(s: SortedRunning, q: float) -> SortedRunning:
    """The entries with each time left cut to q of it (forecast.loaded: jobs end before their limits), sorted again.
    For q > 0 the product keeps the order (x <= y: x q <= y q), so the columns stand as they are
    unless two different times left round to the same product: a tie, ordered by rate and place,
    then the entries are sorted again (the same result either way)."""
    if q > 0 and math.isfinite(q):
        cut = list(map(operator.mul, s.lefts, repeat(q)))
        flags = list(map(operator.eq, cut, islice(cut, 1, None)))
        if sum(flags) == s.ties():  # no new tie (x = y still gives x q = y q): the order and the ties stand
            out = SortedRunning(array("d", cut), s.rates, s.ids, s.untimed, s.r0)
            out._ties = flags
            return out
    return of_entries([[x * q, r, None if j < 0 else j] for x, r, j in zip(s.lefts, s.rates, s.ids)]
                      + [[None, r, j] for r, j in s.untimed])


def meta(cluster: Sequence, rows_carry: bool) -> dict:
    """The head's "running_sorted" for the published `cluster` entries."""
    s = of_entries(cluster)
    return {"format": FORMAT, "n": len(s), "lefts": _b64(s.lefts), "rates": _b64(s.rates), "ids": _b64(s.ids),
            "untimed": s.untimed, "r0": s.r0, "rows_carry": rows_carry}


def from_meta(m: dict) -> SortedRunning:
    """The head's running_sorted decoded, and checked as publish writes it (ValueError otherwise: a
    damaged file is refused, never charged): times left finite, >= 0 and sorted, their sum finite
    (finite ends do not make it so: 1e308 twice), rates finite and
    >= 0, places -1 or more, the count, and the rates' exact sum (math.fsum) equal to r0."""
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise ValueError("running_sorted: not a format this fscontrol reads")
    try:
        untimed = [[float(r), None if j is None else int(j)] for r, j in m["untimed"]]
        s = SortedRunning(_column(m["lefts"], "d"), _column(m["rates"], "d"), _column(m["ids"], "q"), untimed,
                          float(m["r0"]))
    except (KeyError, TypeError, ValueError) as e:  # (binascii.Error is a ValueError)
        raise ValueError(f"running_sorted: damaged ({type(e).__name__}: {e})") from None
    lefts, rates = s.lefts, s.rates
    every = [*rates, *(r for r, _ in untimed)] if untimed else rates
    if len(s) != m.get("n") or s.r0 != math.fsum(every) or not math.isfinite(s.r0) \
            or (every and min(every) < 0.0) or (len(lefts) and not (lefts[0] >= 0.0 and math.isfinite(lefts[-1]))) \
            or not math.isfinite(sum(lefts)) or (not s.all_ids and len(s.ids) and min(s.ids) < -1) or any(j is not None and j < 0 for _, j in untimed) \
            or not all(map(operator.le, lefts, islice(lefts, 1, None))):
        raise ValueError("running_sorted: damaged (its columns are not what publish writes)")
    return s


def layout(running: dict, pieces: bool = False) -> tuple[dict, str | list[str], Callable[[dict], tuple[int, int] | None] | None]:
    """For publish.published_chunks: the head's running_sorted, the running block's text (`pieces`:
    as the list of its pieces, never joined: ~25 MB at 1M jobs), and where a row's own list is in
    the block (None: the rows carry none)."""
    carry = isinstance(running.get("accounts"), dict) and isinstance(running.get("users"), dict)
    parts, accts, usrs = block_pieces(running)
    text = parts if pieces else "".join(parts)

    def where(r: dict) -> tuple[int, int] | None:
        return usrs.get(f"{r.get('account')}/{r['user']}") if r.get("user") else accts.get(r.get("account"))
    return meta(running["cluster"], carry), text, where if carry else None


def row(r: dict, where: Callable[[dict], tuple[int, int] | None] | None) -> dict:
    """The row as written: its "run_at" where `where` (layout's) has one, never one read from an older file."""
    at = where(r) if where is not None else None
    if at is None:
        return r if "run_at" not in r else {k: v for k, v in r.items() if k != "run_at"}
    return {**r, "run_at": list(at)}


def block(running: dict) -> tuple[str, dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """The running block's text (' "running": {' to ' }', one line a key) and where each
    account's and each account/user's list is in it: {key: (offset from the block's start, length)}."""
    parts, accts, usrs = block_pieces(running)
    return "".join(parts), accts, usrs


def block_pieces(running: dict) -> tuple[list[str], dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """block's text as its pieces (one a list, never joined), with block's positions."""
    import json  # (the writer's: a forecast reads with jsontext)

    lines = [BLOCK.decode()]
    at = len(lines[0])
    where: dict[str, dict[str, tuple[int, int]]] = {"accounts": {}, "users": {}}
    keys = list(running)
    for i, k in enumerate(keys):
        start = f"  {json.dumps(k)}: "
        end = ",\n" if i < len(keys) - 1 else "\n"
        v = running[k]
        if k in where and isinstance(v, dict):
            parts, pos = [], at + len(start) + 1
            for name, jobs in v.items():
                lead = ("," if parts else "") + json.dumps(name) + ":"
                text = json.dumps(jobs, separators=(",", ":"), allow_nan=False)
                where[k][name] = (pos + len(lead), len(text))
                parts.append(lead + text)
                pos += len(lead) + len(text)
            lines.append(start + "{")
            lines += parts
            lines.append("}" + end)
            at = pos + 1 + len(end)
            continue
        body = json.dumps(v, separators=(",", ":"), allow_nan=False)
        lines.append(start + body + end)
        at += len(lines[-1])
    lines.append(" }")
    return lines, where["accounts"], where["users"]


def read_head(fh, rows_line: bytes, read_line, parsed: list | None = None,
              maps: dict[str, bytes] | None = None) -> tuple[list[bytes], int, int | None, bool]:
    """The head's lines up to the rows' line (not included), from fh's start: (lines, where the
    rows' line starts, where the running block starts (None: not in this layout), whether the
    rows' line was found). `parsed`: a list that gets what this read parsed of the head (for
    head_json: the lines before the running block, parsed once). In this layout the running block's long lines are skipped unread (the
    cluster's always: running_sorted replaces it; the accounts' and users' where the rows carry
    theirs) and stand in the lines as null; `read_line` reads one whole line (publish._line).
    `maps`: a dict that gets the text of the inflow's long maps (export/headmaps.py), skipped
    unparsed and null in the lines (None: read as every line)."""
    head: list[bytes] = []
    pos = 0
    run_at = None
    skip: set[str] = set()
    in_parent = False
    while True:
        if run_at is not None and skip:
            line = fh.readline(_PEEK)
            name = next((n for p, n in _SKIP.items() if line.startswith(p)), None) if not line.endswith(b"\n") else None
            if name in skip:  # on to the line's end by chunks (readline copies it piece by piece: ~2 ms at 100,000 associations)
                n, tail = len(line), line[-2:]
                while chunk := fh.read(_CHUNK):
                    end = chunk.find(b"\n")
                    if end >= 0:
                        n, tail = n + end + 1, (tail + chunk[max(0, end - 1):end + 1])[-2:]
                        fh.seek(end + 1 - len(chunk), 1)
                        break
                    n, tail = n + len(chunk), (tail + chunk[-2:])[-2:]  # (not the whole chunk copied)
                prefix = next(p for p, v in _SKIP.items() if v == name)
                head.append(prefix + b"null" + (b",\n" if tail == b",\n" else b"\n"))
                pos += n
                continue
            if line and not line.endswith(b"\n"):
                line += read_line(fh)
        else:
            line = read_line(fh)
            if maps is not None:
                if line == _INFLOW:
                    in_parent = True
                elif in_parent and line.startswith(b" }"):
                    in_parent = False
                elif in_parent and line.endswith(b": {\n") and line in (headmaps := _headmaps()).NAMES:
                    raw, close = headmaps.skip(fh)  # by need: its text kept, null in the lines
                    maps[headmaps.NAMES[line]] = raw
                    head.append(line[:-2] + b"null" + close[3:])
                    pos += len(line) + len(raw) + len(close)
                    continue
        if not line:
            return head, pos, run_at, False
        if line.rstrip(b"\n") in (rows_line, rows_line + b"]"):
            return head, pos, run_at, True
        if line == BLOCK and run_at is None:
            try:
                got = jsontext.loads(b"".join(head).rstrip().removesuffix(b",") + b"\n}")
            except ValueError:
                got = None
            m = got.get(KEY) if isinstance(got, dict) else None
            if isinstance(m, dict) and m.get("format") == FORMAT:
                run_at = pos
                skip = {"cluster", "accounts", "users"} if m.get("rows_carry") else {"cluster"}
                if parsed is not None:
                    parsed[:] = [got, len(head)]
        head.append(line)
        pos += len(line)


_INFLOW = b' "inflow": {\n'  # (headmaps.PARENT: that module is imported where a map is skipped)


def _headmaps():
    from fscontrol.export import headmaps

    return headmaps


def head_json(head: list[bytes], parsed: list | None = None):
    """The head's JSON (the lines read_head gave), the lines before the running block taken as
    read_head parsed them (`parsed`): only the block is parsed again, not the ~130 KB of
    running_sorted's columns before it. The same value as parsing every line."""
    if parsed:
        got, n = parsed
        try:
            block = jsontext.loads(b"{" + b"".join(head[n:]).rstrip().removesuffix(b",") + b"\n}")
        except ValueError:
            block = None
        if isinstance(got, dict) and isinstance(block, dict) and not (block.keys() & got.keys()):
            return got | block
    return jsontext.loads(b"".join(head).rstrip().removesuffix(b",") + b"\n}")


_MAX_LIST = 1 << 30  # one account's running list is far shorter: longer is a damaged run_at


def _own_list(pread, run_at: int, at, key: str) -> list:
    """The running list a row's run_at [offset, length] points at, checked to be `key`'s as the
    block writes it (`,"key":[...]` or `{"key":[...]`, then `,` or `}`): a damaged or shifted
    run_at is refused (ValueError), never read as another association's jobs."""
    if not (isinstance(at, list) and len(at) == 2 and all(type(x) is int for x in at)
            and 0 <= at[0] and 2 <= at[1] <= _MAX_LIST):
        raise ValueError(f"running lists: a damaged run_at ({at!r:.40})")
    lead = jsontext.dumps_str(key).encode() + b":"
    start = run_at + at[0] - len(lead) - 1
    if start < run_at:
        raise ValueError(f"running lists: a damaged run_at ({at!r:.40})")
    got = pread(start, len(lead) + 1 + at[1] + 1)
    if got[:1] not in (b",", b"{") or got[1:1 + len(lead)] != lead or got[-1:] not in (b",", b"}") \
            or len(got) != len(lead) + at[1] + 2:
        raise ValueError(f"running lists: run_at of {key!r} does not point at its list")
    jobs = jsontext.loads(got[1 + len(lead):-1])
    if not isinstance(jobs, list):
        raise ValueError(f"running lists: run_at of {key!r} does not point at a list")
    return jobs


def fill(data: dict, rows: list[dict], run_at: int | None, pread) -> dict:
    """`data` (a head read by read_head, in this layout) with its running as a reader uses it:
    the cluster's entries from running_sorted, and where the rows carry them, the lists of `rows`'
    accounts and users read by `pread(offset, length)`. A head in no such layout is returned as it is."""
    m = data.get(KEY)
    run = data.get("running")
    if run_at is None or not isinstance(m, dict) or not isinstance(run, dict):
        return data
    out = dict(data)
    out.pop(KEY)  # (the layout's, not the data's)
    run = dict(run)
    if not isinstance(run.get("cluster"), SortedRunning):
        run["cluster"] = from_meta(m)
    if m.get("rows_carry"):
        accounts, users = {}, {}
        for r in rows:
            at = r.get("run_at")
            if at is not None:
                key = f"{r['account']}/{r['user']}" if r.get("user") else r["account"]
                jobs = _own_list(pread, run_at, at, key)
                if r.get("user"):
                    users[key] = jobs
                else:
                    accounts[key] = jobs
        run["accounts"], run["users"] = accounts, users
    out["running"] = run
    return out
