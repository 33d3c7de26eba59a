"""Where `fscontrol status` spends its CPU at scale: reading the snapshot (store.load_snapshot),
the status data (rstatus.status_data), the text (rstatus.status_lines) and the JSON
(report.table.json_chunks, what --json writes), each timed with
time.process_time in a fresh process, best of --runs; --compare DIR times another checkout's
code (e.g. `git archive COMMIT fscontrol | tar -x -C DIR`) on the same history in the same run.

The history is a SYNTHETIC snapshot written by scripts/gen_synthetic.py (93,238 users: ~100,000
associations), collected with this checkout, unless --db names one.

Run:  .venv/bin/python bench/bench_status_phases.py [--runs 5] [--users 93238] [--compare DIR] [--db H]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = """
import inspect, sys, time
T = time.process_time
from fscontrol.agent import config
from fscontrol.report import status as rstatus
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
db = store.open_db(sys.argv[1], create=False, readonly=True)
t0 = T()
snap = store.load_snapshot(db)
t1 = T()
cc = config.load(None).cluster(snap.cluster)
kw = {"columns": True} if "columns" in inspect.signature(rstatus.status_data).parameters else {}
data = rstatus.status_data(snap, target_core_hours=cc.target_core_hours, dummy=cc.dummy_key, reference=cc.reference_share,
                          control_history=store_ledger.decision_history(db, snap.cluster, 60), **kw)
t2 = T()
n = sum(len(line) for line in rstatus.status_lines(data, rstatus.status_fields()))
t3 = T()
try:
    from fscontrol.report import table as rtable
    m = sum(len(c) for c in rtable.json_chunks(data))  # what --json writes
except (ImportError, AttributeError):
    m = 0
t4 = T()
print(t1 - t0, t2 - t1, t3 - t2, n, t4 - t3, m)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--users", type=int, default=93238)
    ap.add_argument("--compare", type=Path)
    ap.add_argument("--db", type=Path)
    args = ap.parse_args()
    py = sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="bench-phases-"))
    try:
        db = args.db
        if db is None:
            sample = tmp / "scale"
            subprocess.run([py, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", str(args.users), "--jobs", "2000",
                            "--seed", "1", "--out", str(sample)], check=True, stdout=subprocess.DEVNULL)
            db = tmp / "h.db"
            subprocess.run([py, "-m", "fscontrol", "collect", "--source", str(sample), "--db", str(db)], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        trees = {"this checkout": ROOT} | ({"compare": args.compare.resolve()} if args.compare else {})
        best: dict[str, list[float]] = {k: [9e9, 9e9, 9e9, 9e9] for k in trees}
        chars: dict[str, int] = {}
        jchars: dict[str, int] = {}
        for _ in range(args.runs):  # interleaved
            for name, tree in trees.items():
                out = subprocess.run([py, "-c", CHILD, str(db)], cwd=tree, capture_output=True, text=True, check=True,
                                     env=dict(os.environ, PYTHONPATH=str(tree))).stdout.split()
                best[name] = [min(b, float(x)) for b, x in zip(best[name], out[:3] + out[4:5])]
                chars[name] = int(out[3])
                jchars[name] = int(out[5])
        print(f"CPU (process_time), best of {args.runs}; load average {os.getloadavg()[0]:.2f}")
        print(f"{'code':<16}{'load_snapshot':>15}{'status_data':>13}{'text':>9}{'sum':>9}{'text chars':>13}"
              f"{'--json':>9}{'sum --json':>12}{'json chars':>13}")
        for name, (a, b, c, j) in best.items():
            print(f"{name:<16}{a:>14.3f}s{b:>12.3f}s{c:>8.3f}s{a + b + c:>8.3f}s{chars[name]:>13,}"
                  f"{j:>8.3f}s{a + b + j:>11.3f}s{jchars[name]:>13,}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
