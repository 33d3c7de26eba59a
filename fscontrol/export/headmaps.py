"""The published head's long maps, read by need (issue #31): the inflow's per-account and per-user
rates and variances ("inflow": {"accounts": {...}, "accounts_var": ..., "users": ..., "users_var": ...})
are one line an entry in the indented head, ~11,000 lines at 100,000 associations once an agent
has an hour of history, and a forecast reads the entries of its own path only (a handful).

runsorted.read_head skips each such map by chunks (`skip`) and keeps its text; `EntryMap` finds
an entry in that text by its key, as json.dumps wrote it, and parses the whole map (json.loads)
only when it is iterated. The file's layout does not change: it is the same JSON document, and a
reader that parses it whole sees the same values. As for the rows read through the index, an
entry the forecast does not read is not parsed: a damaged one that it reads is refused
(PublishedError), never read as another key's; a map that runs on into the next (its close lost)
makes the file unreadable; and a key not found is called missing only where every line of the map
is one entry as json.dumps writes it and the key appears nowhere else in it: otherwise the map is
parsed whole (other spacing, escapes, a line cut short: read as json.loads reads them, or refused)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from fscontrol import jsontext

# the maps read by need: (the head's key at indent 1, the map's key at indent 2)
PARENT = b' "inflow": {\n'
NAMES = {b'  "accounts": {\n': "accounts", b'  "accounts_var": {\n': "accounts_var",
         b'  "users": {\n': "users", b'  "users_var": {\n': "users_var"}
_CLOSE = b"\n  }"  # the map's closing line (its entries are at indent 3: "\n   ")
_CHUNK = 1 << 16
_MAX_MAP = 1 << 30  # longer is no published head


def skip(fh, at_most: int = _MAX_MAP) -> tuple[bytes, bytes]:
    """Read on from just after a map's opening line to its closing line: (the entries' text, from
    the newline before the first entry, or b"" for none; the closing line, `  }` or `  },` with its
    newline). ValueError when the map does not close (a damaged or cut file)."""
    parts: list[bytes] = [b"\n"]  # (the opening line's newline: each entry then starts with "\n   ")
    n, tail = 1, b"\n"
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            raise ValueError("a map of the head does not close")
        end = (tail + chunk[:len(_CLOSE) - 1]).find(_CLOSE)  # a close across the chunks' seam
        if end < 0:
            end = chunk.find(_CLOSE)
            end = end + len(tail) if end >= 0 else -1
        if end >= 0:
            cut = end - len(tail)  # where the close starts in this chunk (< 0: in what came before)
            fh.seek(cut + 1 - len(chunk), 1)  # the file read on from the closing line
            close = fh.readline(8)
            if close not in (b"  }\n", b"  },\n"):
                raise ValueError("a map of the head does not close as the published layout writes it")
            parts.append(chunk)
            raw = b"".join(parts)[:n + cut]
            if b"{\n" in raw:  # an object opened inside (a key holds no newline): it ran on into the next map
                raise ValueError("a map of the head does not close where the next one begins")
            return raw, close
        n += len(chunk)
        if n > at_most:
            raise ValueError("a map of the head is too long for a published snapshot")
        parts.append(chunk)
        tail = (tail + chunk[-(len(_CLOSE) - 1):])[-(len(_CLOSE) - 1):]


class EntryMap(Mapping):
    """A map of the head kept as its text (`skip`'s): `get` finds one entry by its key, a number;
    iterating parses it whole. `error` (an exception class) is raised for a damaged entry or map."""

    __slots__ = ("_raw", "_whole", "_error", "_name", "_plain")

    def __init__(self, raw: bytes, name: str, error: type[Exception] = ValueError) -> None:
        self._raw, self._whole, self._error, self._name = raw, None, error, name
        self._plain: bool | None = None  # one entry a line as json.dumps writes it (checked at a first miss)

    def __bool__(self) -> bool:
        return bool(self._raw.strip())

    def _parsed(self) -> dict[str, Any]:
        if self._whole is None:
            try:
                got = jsontext.loads(b"{" + self._raw + b"}") if self._raw.strip() else {}
            except ValueError as e:
                raise self._error(f"the published inflow's {self._name} map is damaged: {e}") from None
            if not isinstance(got, dict):
                raise self._error(f"the published inflow's {self._name} map is damaged")
            self._whole = got
        return self._whole

    def __getitem__(self, key: str) -> Any:
        if self._whole is not None:
            got = self._whole[key]
            if type(got) not in (int, float) or not math.isfinite(got):
                raise self._error(f"the published inflow's {self._name} entry for {key!r} is damaged")
            return got
        if not isinstance(key, str):
            raise KeyError(key)
        needle = b"\n   " + jsontext.dumps_str(key).encode() + b": "
        at = self._raw.rfind(needle)  # (json.loads keeps a repeated key's last value)
        if at < 0:  # missing, unless the map is not as json.dumps(indent=1) writes it: then parsed whole
            raw = self._raw
            if self._plain is None:  # (an escape anywhere, or a line without its key and value: counted once)
                self._plain = b"\\" not in raw and raw.count(b"\n") == raw.count(b'": ')
            if not self._plain or raw.find(needle[4:-2]) >= 0:
                self._parsed()  # (the key with other spacing, a line cut short or two on one line: read
                return self[key]  # as json.loads reads it, or the map refused; never taken for missing)
            raise KeyError(key)
        start = at + len(needle)
        end = self._raw.find(b"\n", start)
        text = (self._raw[start:] if end < 0 else self._raw[start:end]).rstrip(b" \t\r")  # (JSON's spaces)
        if end >= 0:  # an entry before the last: its comma (the last has none)
            text = text[:-1] if text.endswith(b",") else b""
        try:
            got = jsontext.loads(text) if text else None
        except ValueError:
            got = None
        if type(got) not in (int, float) or not math.isfinite(got):  # (a number, as publish writes it: no NaN)
            raise self._error(f"the published inflow's {self._name} entry for {key!r} is damaged")
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())
