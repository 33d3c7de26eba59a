"""The published file's text (fscontrol.export.publish's layout), in pieces: what `fscontrol
publish` writes (publish.write_published, through atomic.write_chunks), never held whole (issue
#31: at 1M jobs the whole ~70 MB text and its pieces took ~250 MiB more than the data)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fscontrol.export import runsorted
from fscontrol.export.rowindex import END as _END, INDEX_KEY, INDEX_LINE, ROWS_LINE

_STEP = 1024  # rows encoded a piece: the writer's memory bounded by it, not by the cluster


def published_chunks(data: dict[str, Any], sorted_running: bool = True) -> Iterator[str]:
    """The file's JSON in pieces: the cluster-wide part indented, then the per-association rows,
    one compact row a line, then their index, so that a forecast reads only its user's rows
    (read_published's `users`) without reading the others (100,000 associations are ~30 MB of JSON).

    The index ("row_index") is one line `[user, account, offset, length, n]` a row, sorted (the
    accounts' rows, user "", first, by account; n: how many rows that user has, the accounts'
    rows counted as user "", so a reader knows when an entry is missing); the offset counts bytes from the start of the
    ' "associations": [' line. The head's "row_index_bytes" is the index's size from its first
    line to the end of the file, so a reader finds the index from the file's size, a user's
    entries by bisection, and the rows by seek. json.dumps writes ASCII (ensure_ascii), so a
    character is a byte. Readers that know nothing of the index (VERSION 1 from before it) read
    the file as before: it is one JSON document, the index two keys more. `sorted_running`: the
    running jobs in export/runsorted.py's layout (False: as before it, e.g. an older agent's file).

    The index's size goes in the head, before the rows: the rows are encoded twice, once for their
    lengths (the index) and once as they are written, _STEP at a time, so no more than _STEP of
    their texts is held at once (issue #31: the whole text was ~70 MB at 1M jobs, its pieces more)."""
    head = {k: v for k, v in data.items() if k not in ("associations", INDEX_KEY, "row_index", runsorted.KEY)}
    if "associations" not in data:
        yield json.dumps(head, indent=1, sort_keys=False, allow_nan=False) + "\n"
        return
    run, where = head.get("running"), None
    block: str | list[str] = ""
    if sorted_running and data["associations"] and isinstance(run, dict) and isinstance(run.get("cluster"), list):
        head[runsorted.KEY], block, where = runsorted.layout(head.pop("running"), pieces=True)  # export/runsorted.py
    assoc = data["associations"]
    if not assoc:
        text = json.dumps(head, indent=1, sort_keys=False, allow_nan=False)
        yield text[:-2] + ",\n" + ROWS_LINE + "]\n}\n"
        return
    encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    entries = []
    at = len(ROWS_LINE) + 1
    count: dict[str, int] = {}
    for r in assoc:
        n = len(encode(runsorted.row(r, where)))
        user = r.get("user") or ""
        entries.append((user, str(r.get("account") or ""), at, n))
        count[user] = count.get(user, 0) + 1
        at += n + 2  # ",\n"
    entries.sort()
    index = INDEX_LINE + "\n" + ",\n".join(json.dumps([*e, count[e[0]]], separators=(",", ":")) for e in entries) + _END.decode()
    del entries, count
    head[INDEX_KEY] = len(index)
    text = json.dumps(head, indent=1, sort_keys=False, allow_nan=False)
    del head
    yield text[:-2]
    del text
    if block:  # (not joined to the head's text: ~25 MB each at 1M jobs)
        yield ",\n"
        yield from block
    del block
    yield ",\n" + ROWS_LINE + "\n"
    last = len(assoc)
    for i in range(0, last, _STEP):
        yield ",\n".join(encode(runsorted.row(r, where)) for r in assoc[i:i + _STEP]) + (",\n" if i + _STEP < last else "")
    yield "\n ],\n"
    yield index
