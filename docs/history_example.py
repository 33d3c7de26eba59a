"""Draw docs/history.png (and /tmp/fscontrol-history.html): `fscontrol history --png/--html` on a SYNTHETIC
week of an agent ticking every 5 minutes (rows written here straight into the store's tables, as
bench/bench_history.py does): u* raised from 8,000 to 10,000 core-hours on day 3, the controller
moving d and the padding to follow, the gate holding and releasing jobs in working hours, a
slurmctld outage on day 5 (failed ticks).

Run:  .venv/bin/python docs/history_example.py     (the 'plot' extra: matplotlib)
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fscontrol.store import history as store

HERE = Path(__file__).resolve().parent
HOUR = 3600.0
HTML_OUT = "/tmp/fscontrol-history.html"  # not kept in the repo (280 kB); the PNG is


def build(path: Path, now: float) -> None:
    db = store.open_db(path)
    rng = random.Random(18)
    every = 300.0
    n = int(7 * 86400 / every)
    t0 = now - n * every + 60
    d, pad = 60, 150.0
    ticks, decisions, actions = [], [], []
    with store.transaction(db):
        for i in range(n):
            t = t0 + i * every
            day = (t - t0) / 86400
            outage = 4.6 < day < 4.75
            ticks.append((t, t + 0.8 + rng.random(), "failed" if outage else "ok", "sshare: Unable to contact slurm controller" if outage else None,
                          "control"))
            if outage:
                continue
            u = 8000.0 if day < 3 else 10000.0
            real = 2500 * (1 + 0.2 * math.sin(2 * math.pi * day / 2.3)) + 40 * rng.gauss(0, 1)
            ideal = u / (0.05 * (real + pad))
            if day >= 3 and pad < 450:
                pad += 1.5
            d_target = max(1, round(ideal))
            h_now = 0.05 * d * (real + pad)
            h_slurm = h_now * (1 + rng.gauss(0, 0.004))
            decisions.append((t, u * HOUR, d, d_target, pad * HOUR, h_now * HOUR, h_slurm * HOUR))
            d = d_target
            hour = (t % 86400) / HOUR
            if 8 <= hour <= 18 and rng.random() < 0.25:
                for k in range(rng.randint(1, 4)):
                    actions.append((t + k, "hold"))
            if (hour < 8 or hour > 18) and rng.random() < 0.3:
                for k in range(rng.randint(1, 5)):
                    actions.append((t + k, "release"))
        db.conn.executemany("INSERT INTO ticks (cluster, started_at, finished_at, status, error, stage) VALUES ('alpha', ?, ?, ?, ?, ?)",
                            ticks)
        db.conn.executemany(
            "INSERT INTO decisions (cluster, snapshot_id, decided_at, method, apply, advise_only, u_star, d_now, d_target, w_now, "
            "h_now, h_slurm) VALUES ('alpha', 1, ?, 'hybrid', 1, 0, ?, ?, ?, ?, ?, ?)", decisions)
        db.conn.executemany("INSERT INTO actions (cluster, stage, kind, argv, reason, job_id, status, planned_at) "
                            "VALUES ('alpha', 'gate', ?, '[]', 'synthetic', ?, 'ok', ?)",
                            [(k, str(1000 + j), t) for j, (t, k) in enumerate(actions)])
    db.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "h.db"
        build(path, time.time())
        subprocess.run([sys.executable, "-m", "fscontrol", "history", "--db", str(path), "-M", "alpha", "--since", "7d",
                        "--png", str(HERE / "history.png"), "--html", HTML_OUT], check=True,
                       cwd=HERE.parent)
    print(f"wrote {HERE / 'history.png'} and {HTML_OUT}")


if __name__ == "__main__":
    main()
