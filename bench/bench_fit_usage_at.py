"""The fit on a history whose snapshots know their decay pass (usage_at) against one without:
best CPU of 5, in process, same synthetic history (bench_fit_history.build_history). Run:
.venv/bin/python bench/bench_fit_usage_at.py USERS SNAPSHOTS (docs/benchmarks.md: 2500 400)."""
import shutil, sys, time, tempfile
from pathlib import Path
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "bench"))
import bench_fit_history as b
from fscontrol.agent import fitting
from fscontrol.store import history as store
tmp = Path(tempfile.mkdtemp())
db0 = tmp / "a.db"
b.build_history(db0, int(sys.argv[1]), int(sys.argv[2]))
db1 = tmp / "b.db"; shutil.copy(db0, db1)
d = store.open_db(db1)
with store.transaction(d):
    d.execute("UPDATE snapshots SET usage_at = taken_at - 10, window_end = taken_at")
    d.execute("UPDATE job_usage SET state = 'RUNNING', start = coalesce(start, 0), \"end\" = (SELECT taken_at FROM snapshots s WHERE s.id = snapshot_id) WHERE abs(random()) % 3 = 0")
d.conn.close()
def best(path):
    ts = []
    for _ in range(5):
        db = store.open_db(path)
        t = time.process_time(); r = fitting.fit_history(db, None, now=0.0); ts.append(time.process_time() - t)
        db.conn.close()
    return min(ts), r
for name, p in (("usage_at NULL", db0), ("usage_at set, 1/3 jobs running", db1), ("usage_at NULL", db0), ("usage_at set, 1/3 jobs running", db1)):
    t, r = best(p)
    print(f"{name:32} best CPU {t*1000:8.1f} ms  half-life {r[2].half_life_s:.0f}")
shutil.rmtree(tmp)
