"""store.insert_rows (multi-row INSERTs) leaves the table exactly as executemany does: every
row, in order, with INSERT OR REPLACE keeping the last of two rows with one key, across the
statement boundaries that ROWS_PER_INSERT and SQLite's variable limit set."""

import random
import sqlite3

import pytest

from fscontrol.store import history as store

SCHEMA = "CREATE TABLE t (k INTEGER NOT NULL, name TEXT, x REAL, PRIMARY KEY (k)) WITHOUT ROWID"


def _rows(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    return [(rng.randrange(max(1, n // 2)), rng.choice(["a", "b", None, "é|x"]), rng.choice([None, 0.5, -1e300, 3]))
            for _ in range(n)]  # about half the keys repeat: the later row must win


def _table(rows, verb: str, insert) -> list[tuple]:
    conn = sqlite3.connect(":memory:")
    conn.execute(SCHEMA.replace("PRIMARY KEY (k)", "PRIMARY KEY (k)" if "REPLACE" in verb else "PRIMARY KEY (k, name, x)"))
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 20)  # 6 rows of 3 a statement: many boundaries
    insert(conn, rows)
    return conn.execute("SELECT k, name, x FROM t ORDER BY k, name, x").fetchall()


@pytest.mark.parametrize("n", [0, 1, 5, 6, 7, 12, 13, 100, 1001])
@pytest.mark.parametrize("verb", ["INSERT OR REPLACE INTO t", "INSERT OR IGNORE INTO t"])
def test_insert_rows_is_executemany(n, verb):
    rows = _rows(n, n)
    want = _table(rows, verb, lambda c, r: c.executemany(f"{verb} VALUES (?,?,?)", r))
    got = _table(rows, verb, lambda c, r: store.insert_rows(c, verb, 3, iter(r)))  # a generator, as the jobs come
    assert got == want and len(got) <= n


def test_a_full_statement_is_rows_per_insert_rows_at_most(monkeypatch):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (k INTEGER, name TEXT, x REAL)")
    seen = []
    conn.set_trace_callback(lambda sql: seen.append(sql.count("),(") + 1) if sql.startswith("INSERT") else None)
    monkeypatch.setattr(store, "ROWS_PER_INSERT", 4)
    store.insert_rows(conn, "INSERT INTO t", 3, [(i, "a", 1.0) for i in range(10)])
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 10
    assert seen == [4, 4, 2]  # rows a statement
