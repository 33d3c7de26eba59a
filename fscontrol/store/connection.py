"""The history's connection on the standard library's sqlite3: the part of sqlite_utils.Database
that fscontrol's store uses (execute, atomic, query, close, conn), with the same semantics.

Why not sqlite_utils.Database itself on every open: importing sqlite_utils imports numpy (and
pandas when installed) to map their types, and pluggy with its plugins: 80-90 ms, more than
`import typer`, on every `status`, `collect` and cron `tick`, none of which needs it. The
migrations (store.history.migrate) run through sqlite-utils' own Migrations and table helpers on
sqlite_utils.Database over the same connection, so sqlite-utils stays the schema's tool; it is
imported only when a migration is pending (a new history, or one an older fscontrol wrote): which
ones are applied is read from its `_sqlite_migrations` table with plain SQL.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: records says why)
if TYPE_CHECKING:
    from typing import Any

_SAVEPOINTS = itertools.count(1)


class Database:
    """A sqlite3 connection in autocommit mode (a write outside `atomic()` commits at once, as
    sqlite_utils.Database.execute does); `atomic()` is one transaction, a nested one a savepoint."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.isolation_level = None  # no implicit BEGIN: transactions are atomic()'s alone
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence | dict[str, Any] | None = None) -> sqlite3.Cursor:
        return self.conn.execute(sql) if parameters is None else self.conn.execute(sql, parameters)

    def query(self, sql: str, params: Sequence | dict[str, Any] | None = None) -> Iterator[dict]:
        """Rows as dicts, as sqlite_utils.Database.query yields them."""
        cur = self.execute(sql, params)
        keys = [d[0] for d in cur.description or ()]
        for row in cur:
            yield dict(zip(keys, row))

    def table_exists(self, name: str) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [name]).fetchone() is not None

    @contextmanager
    def atomic(self) -> Iterator[Database]:
        if self.conn.in_transaction:
            savepoint = f"fscontrol_{next(_SAVEPOINTS)}"  # unique in this process, as nesting needs
            self.conn.execute(f"SAVEPOINT {savepoint}")
            try:
                yield self
            except BaseException:
                if self.conn.in_transaction:  # an error may have ended the whole transaction already
                    self.conn.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
                    self.conn.execute(f"RELEASE SAVEPOINT {savepoint}")
                raise
            self.conn.execute(f"RELEASE SAVEPOINT {savepoint}")
            return
        self.conn.execute("BEGIN")
        try:
            yield self
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
