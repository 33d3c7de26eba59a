"""The published head's long maps, read by need (issue #31): the inflow's per-account and per-user
rates and variances ("inflow": {"accounts": {...}, "accounts_var": ..., "users": ..., "users_var": ...})
are one line an entry in the indented head, ~11,000 lines at 100,000 associations once an agent
has an hour of history, and a forecast reads the entries of its own path only (a handful).

runsorted.read_head skips each such map by chunks (`skip`) and keeps its text; `EntryMap` finds
an entry in that text by its key, as json.dumps wrote it, and parses the whole map (json.loads)
only when it is iterated. The file's layout does not change: it is the same JSON document, and a
reader that parses it whole sees the same values. As for the rows read through the index, an
entry the forecast does not read is not parsed: a damaged one that it reads is refused
(PublishedError), never read as another key's."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

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
            return b"".join(parts)[:n + cut], close
        n += len(chunk)
        if n > at_most:
            raise ValueError("a map of the head is too long for a published snapshot")
        parts.append(chunk)
        tail = (tail + chunk[-(len(_CLOSE) - 1):])[-(len(_CLOSE) - 1):]


class EntryMap(Mapping):
    """A map of the head kept as its text (`skip`'s): `get` finds one entry by its key, a number;
    iterating parses it whole. `error` (an exception class) is raised for a damaged entry or map."""

    __slots__ = ("_raw", "_whole", "_error", "_name")

    def __init__(self, raw: bytes, name: str, error: type[Exception] = ValueError) -> None:
        self._raw, self._whole, self._error, self._name = raw, None, error, name

    def __bool__(self) -> bool:
        return bool(self._raw.strip())

    def _parsed(self) -> dict[str, Any]:
        if self._whole is None:
            try:
                got = json.loads(b"{" + self._raw + b"}") if self._raw.strip() else {}
            except ValueError as e:
                raise self._error(f"the published inflow's {self._name} map is damaged: {e}") from None
            if not isinstance(got, dict):
                raise self._error(f"the published inflow's {self._name} map is damaged")
            self._whole = got
        return self._whole

    def __getitem__(self, key: str) -> Any:
        if self._whole is not None:
            return self._whole[key]
        if not isinstance(key, str):
            raise KeyError(key)
        needle = b"\n   " + json.dumps(key).encode() + b": "
        at = self._raw.rfind(needle)  # (json.loads keeps a repeated key's last value)
        if at < 0:
            if not self._raw.isascii():  # not as json.dumps writes a key: find it in the parsed map
                return self._parsed()[key]
            raise KeyError(key)
        start = at + len(needle)
        end = self._raw.find(b"\n", start)
        if end < 0:  # the last entry: no comma
            text = self._raw[start:]
        elif self._raw[end - 1:end] == b",":
            text = self._raw[start:end - 1]
        else:
            text = b""
        try:
            got = json.loads(text) if text else None
        except ValueError:
            got = None
        if type(got) not in (int, float) or not math.isfinite(got):  # (a number, as publish writes it: no NaN)
            raise self._error(f"the published inflow's {self._name} entry for {key!r} is damaged")
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())
