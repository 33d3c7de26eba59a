"""Benchmark `fscontrol history` on 30 days of an agent ticking once a minute (43,200 ticks,
decisions and their actions; SYNTHETIC rows, generated here through the store's own writers'
tables), asked for the last week.

Run:  .venv/bin/python bench/bench_history.py
It prints the time to build the history, the baseline (one `SELECT count(*)` over every
decision: reading the table once) and the one-week `history` query with its report, and their
ratio. The issue's target: under 1 second for a one-week range.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from fscontrol.report import ticks as rticks
from fscontrol.store import history as store

DAYS, EVERY_S = 30, 60.0


def build(path: Path) -> float:
    db = store.open_db(path)
    rng = random.Random(3)
    t0 = 1_790_000_000.0
    n = int(DAYS * 86400 / EVERY_S)
    with store.transaction(db):
        ticks, decisions, actions = [], [], []
        for i in range(n):
            t = t0 + i * EVERY_S
            ok = rng.random() > 0.001
            ticks.append((i + 1, "big", t, t + 0.8, "ok" if ok else "failed", None if ok else "sshare timed out", None, "control"))
            d = 100 + rng.randint(-3, 3)
            decisions.append((i + 1, "big", 1, t, "hybrid", 1, 0, 86400.0, 0.05, 1.7e4, 1.7e4, 100.0, 120.0, d, d, d + 0.3,
                              0.5, None, 86400.0 * (1 + rng.gauss(0, 0.002)), 86400.0, None, None, "[]",
                              86400.0 * (1 + rng.gauss(0, 0.003)), t + 30))
            actions.append((2 * i + 1, i + 1, "big", "control", "set_damping", '["scontrol", "fsdampeningfactor", "100"]',
                            "r", None, "ok", "", t, t + 0.1, i + 1))
            actions.append((2 * i + 2, i + 1, "big", "control", "set_usage_factor", '["sacctmgr"]', "r", None, "ok", "", t,
                            t + 0.2, i + 1))
        db.conn.executemany("INSERT INTO ticks (id, cluster, started_at, finished_at, status, error, snapshot_id, stage) "
                            "VALUES (?,?,?,?,?,?,?,?)", ticks)
        cols = ("id, cluster, snapshot_id, decided_at, method, apply, advise_only, u_star, s_ref, u_real, u_real_next, w_now, "
                "w_target, d_now, d_target, d_ideal, usage_factor, pulse_usage_factor, h_now, h_planned, bound, h_measured, "
                "notes, h_slurm, pass_seen_at")
        db.conn.executemany(f"INSERT INTO decisions ({cols}) VALUES ({','.join('?' * 25)})", decisions)
        db.conn.executemany("INSERT INTO actions (id, decision_id, cluster, stage, kind, argv, reason, job_id, status, output, "
                            "planned_at, done_at, tick_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", actions)
    db.close()
    return t0 + n * EVERY_S


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "h.db"
        t = time.perf_counter()
        end = build(path)
        built = time.perf_counter() - t
        db = store.open_db(path, readonly=True)
        t = time.perf_counter()
        n = db.execute("SELECT count(*) FROM decisions").fetchone()[0]
        base = time.perf_counter() - t
        t = time.perf_counter()
        data = rticks.history_data("big", end - 7 * 86400, end, store.history(db, "big", end - 7 * 86400, end))
        text = rticks.format_history(data)
        json.dumps(data)
        took = time.perf_counter() - t
        print(f"history of {DAYS} days, one tick a minute: {n:,} decisions, {2 * n:,} actions (built in {built:.1f} s)")
        print(f"baseline (count every decision): {base * 1000:.1f} ms")
        print(f"history, last 7 days ({len(data['decisions']):,} decisions), text and JSON: {took * 1000:.0f} ms "
              f"= {took / base:.1f}x the baseline")
        print(text.splitlines()[1])


if __name__ == "__main__":
    main()
