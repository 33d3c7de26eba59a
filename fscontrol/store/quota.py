"""The limits read of each tick in the history (table limit_reads, migration 009_tres_limits):
every limit with what is used of it (fscontrol.model.quota.entries) and the account tree it is
read along. A history from before the migration (opened read-only) has no table: no limits."""

from __future__ import annotations

import json

from fscontrol.store.connection import Database


def write_limits(db: Database, cluster: str, snapshot_id: int, read_at: float, entries: list[dict],
                 parent: dict[str, str]) -> None:
    """One tick's limits, with its snapshot (inside the tick's transaction)."""
    db.execute("INSERT OR REPLACE INTO limit_reads (cluster, snapshot_id, read_at, data) VALUES (?, ?, ?, ?)",
               [cluster, snapshot_id, read_at, json.dumps({"entries": entries, "parent": parent},
                                                          separators=(",", ":"), allow_nan=False)])


def latest_limits(db: Database, cluster: str, snapshot_id: int | None = None) -> dict | None:
    """{"read_at", "snapshot_id", "entries", "parent"} of the newest read at or before
    `snapshot_id` (any, when None); None when there is none or the history predates the table."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'limit_reads'").fetchone() is None:
        return None
    sql = "SELECT snapshot_id, read_at, data FROM limit_reads WHERE cluster = ?"
    args: list = [cluster]
    if snapshot_id is not None:
        sql += " AND snapshot_id <= ?"
        args.append(snapshot_id)
    row = db.execute(sql + " ORDER BY snapshot_id DESC LIMIT 1", args).fetchone()
    if row is None:
        return None
    data = json.loads(row[2])
    return {"snapshot_id": row[0], "read_at": row[1], "entries": data.get("entries") or [],
            "parent": data.get("parent") or {}}
