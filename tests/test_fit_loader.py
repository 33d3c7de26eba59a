"""fit's loader: store_loaders.usage_history / inflow_history (numpy, no Python object per sample) give
exactly the arrays of the old path (usage_series / inflow_series into Python lists and dicts,
then the matrices fit_history built from them), so the fit is the same to the last bit.

The history is the real testbed series (samples/testbed-series, collected in order); a second
case adds to it what the series lacks: several jobs per user and window, a QOS with a
UsageFactor, jobs stored without an association id, a vanished and returning association, and
snapshots closer than a decay pass (thinned)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fscontrol.model import fit as fitmod
from fscontrol.agent import fitting, pipeline
from fscontrol.store import history as store
from fscontrol.store import loaders as store_loaders
from fscontrol.slurm.source import RecordedSlurm

SERIES = Path(__file__).resolve().parent.parent / "samples" / "testbed-series"


def old_matrices(db, cluster: str, last: int | None = None):
    """fit_history's matrices as they were built before the numpy loader (commit a21e7f3)."""
    latest = store.load_snapshot(db, cluster=cluster)
    times, series = store_loaders.usage_series(db, cluster)
    ids = store.snapshot_ids(db, cluster)
    if last:
        times, ids = times[-last:], ids[-last:]
        series = {k: v[-last:] for k, v in series.items()}
    keep = fitting.thin_to_period(times, max(latest.config.calc_period_s, 1))
    inflow = store_loaders.inflow_series(db, cluster)
    keys = [k for k in series if k[1]]
    usage = np.array([[series[k][i] if series[k][i] is not None else math.nan for i in keep] for k in keys], dtype=float)
    flow = np.zeros_like(usage)
    for r, k in enumerate(keys):
        per = inflow.get(k, {})
        for c in range(1, len(keep)):
            flow[r, c] = sum(per.get(ids[i], 0.0) for i in range(keep[c - 1] + 1, keep[c] + 1))
    return keys, [times[i] for i in keep], usage, flow, latest.config


def new_matrices(db, cluster: str, last: int | None = None):
    """What fit_history now feeds the fit (captured from fit_decay_matrix's arguments)."""
    seen = {}
    real = fitmod.fit_decay_matrix

    def capture(times, usage, flow, *a, **kw):
        seen.update(times=np.asarray(times), usage=usage, flow=flow)
        return real(times, usage, flow, *a, **kw)

    pipeline_fit = fitmod.fit_decay_matrix
    fitmod.fit_decay_matrix = capture
    try:
        _, _, result = fitting.fit_history(db, cluster, last=last, now=0.0)
    finally:
        fitmod.fit_decay_matrix = pipeline_fit
    return seen, result


@pytest.fixture(scope="module")
def series_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("fitload") / "h.db"
    db = store.open_db(path)
    for folder in sorted(p for p in SERIES.iterdir() if p.is_dir()):
        pipeline.collect(RecordedSlurm(folder), db)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.conn.close()
    return path


def assert_same(db, cluster, last=None):
    keys, times, usage, flow, cfg = old_matrices(db, cluster, last)
    seen, result = new_matrices(db, cluster, last)
    hist = store_loaders.usage_history(db, cluster)
    assert hist.keys == keys
    assert np.array_equal(seen["times"], np.array(times))
    assert np.array_equal(seen["usage"], usage, equal_nan=True)
    assert np.array_equal(seen["flow"], flow)  # bit for bit, not approximately
    old = fitmod.fit_decay_matrix(times, usage, flow, cfg.half_life_s, calc_period_s=cfg.calc_period_s)
    assert result == old
    return result


def test_the_real_series_loads_to_the_same_arrays_and_fit(series_db):
    db = store.open_db(series_db)
    r = assert_same(db, "tbcluster")
    assert r.n_residuals > 0 and abs(r.half_life_s / 300 - 1) < 0.05
    assert_same(db, "tbcluster", last=6)


def _copy_with_scaled_qos(series_db, tmp_path):
    """A copy of the series whose every snapshot lists a QOS `scaled` charged at 0.37 (jobs of a
    QOS no snapshot lists are the tests' own); the copy, its snapshot ids and user associations."""
    import shutil

    path = tmp_path / "h.db"
    shutil.copy(series_db, path)
    db = store.open_db(path)
    with store.transaction(db):
        for sid, cfg in db.execute("SELECT id, config_json FROM snapshots").fetchall():
            blob = json.loads(cfg)
            blob["qos"]["scaled"] = 0.37
            db.execute("UPDATE snapshots SET config_json = ? WHERE id = ?", [json.dumps(blob), sid])
    users = db.execute("SELECT id, account, user FROM assocs WHERE cluster = 'tbcluster' AND user != ''").fetchall()
    return db, store.snapshot_ids(db, "tbcluster"), users


def test_several_jobs_qos_factors_orphans_gaps_and_thinning(series_db, tmp_path):
    db, sids, users = _copy_with_scaled_qos(series_db, tmp_path)
    rng = np.random.default_rng(5)
    with store.transaction(db):
        rows = []
        for sid in sids[1:]:
            for aid, account, user in users:
                for j in range(int(rng.integers(0, 4))):  # several jobs per user, window and QOS
                    qos = ["normal", "scaled", "unlisted", "scaled"][j]
                    rows.append((sid, f"x{sid}-{aid}-{j}", aid if sid % 3 else None, user, account, "debug", qos,
                                 "COMPLETED", 2, int(rng.integers(1, 9)), 1, None, None, float(rng.uniform(0, 61.7))))
        db.conn.executemany("INSERT INTO job_usage VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        # an association that vanishes for two snapshots and comes back
        aid = users[0][0]
        db.execute("INSERT OR REPLACE INTO assoc_samples (assoc_id, snapshot_id, present) VALUES (?, ?, 0)", [aid, sids[3]])
        db.execute("INSERT OR REPLACE INTO assoc_samples (assoc_id, snapshot_id, present, raw_usage) VALUES (?, ?, 1, 12345)",
                   [aid, sids[5]])
        # two snapshots closer than a decay pass: the second is thinned away, its charge carried
        db.execute("UPDATE snapshots SET taken_at = (SELECT taken_at FROM snapshots WHERE id = ?) + 5 WHERE id = ?",
                   [sids[6], sids[7]])
    assert_same(db, "tbcluster")
    assert_same(db, "tbcluster", last=7)


def test_snapshots_timed_by_their_pass_move_the_times_and_the_running_jobs_tails(series_db, tmp_path):
    """Snapshots whose collect read when their decay pass ran (usage_at): fit_history times them by
    the pass and moves the charge the still-running jobs made after it to the next window, as a
    plain Python walk over the stored rows computes it (jobs with and without an association id,
    a QOS with a UsageFactor, a job that ended after the pass: left whole); the rest as before."""
    db, sids, users = _copy_with_scaled_qos(series_db, tmp_path)
    rng = np.random.default_rng(11)
    taken = dict(db.execute("SELECT id, taken_at FROM snapshots").fetchall())
    with store.transaction(db):
        rows = []
        for sid in sids[1:]:
            t = taken[sid]
            for aid, account, user in users:
                for j, (state, qos) in enumerate([("RUNNING", "normal"), ("RUNNING", "scaled"), ("COMPLETED", "normal")]):
                    start = t - float(rng.uniform(1, 90))
                    end = t if state == "RUNNING" else t - float(rng.uniform(0, 1))  # -T clips a running job's End
                    rows.append((sid, f"r{sid}-{aid}-{j}", aid if sid % 3 else None, user, account, "debug", qos, state,
                                 2, int(rng.integers(1, 9)), 1, start, end, max(0.0, end - max(start, taken.get(sid - 1, start)))))
        db.conn.executemany("INSERT INTO job_usage VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        for sid in sids[::2]:  # every other snapshot knows its pass: 0 to 20 s before it was taken
            db.execute("UPDATE snapshots SET usage_at = taken_at - ? WHERE id = ?", [float(rng.uniform(0, 20)), sid])
    # by hand: times, each window's charge, each snapshot's tails, moved, thinned, summed
    at = dict(db.execute("SELECT id, usage_at FROM snapshots").fetchall())
    window_end = dict(db.execute("SELECT id, window_end FROM snapshots").fetchall())
    times = [at[s] if at[s] is not None else taken[s] for s in sids]
    factors = {sid: json.loads(cfg).get("qos", {}) for sid, cfg in db.execute("SELECT id, config_json FROM snapshots")}
    inflow = store_loaders.inflow_series(db, "tbcluster")
    tails: dict = {}
    for sid, account, user, qos, billing, elapsed in db.execute(
            "SELECT snapshot_id, account, user, qos, billing, elapsed_s FROM job_usage WHERE state = 'RUNNING'"):
        if at[sid] is not None:  # from the pass to the window's end, at most the job's time in the window
            d = tails.setdefault((account, user), {})
            d[sid] = d.get(sid, 0.0) + billing * min(elapsed, max(0.0, window_end[sid] - at[sid])) * factors[sid].get(qos, 1.0)
    keep = fitting.thin_to_period(times, 60)
    hist = store_loaders.usage_history(db, "tbcluster")
    flow = np.zeros((len(hist.keys), len(keep)))
    for r, k in enumerate(hist.keys):
        per, tail = inflow.get(k, {}), tails.get(k, {})
        moved = [per.get(s, 0.0) - tail.get(s, 0.0) + (tail.get(sids[i - 1], 0.0) if i else 0.0) for i, s in enumerate(sids)]
        for c in range(1, len(keep)):
            flow[r, c] = sum(moved[keep[c - 1] + 1:keep[c] + 1])
    seen, result = new_matrices(db, "tbcluster")
    assert np.array_equal(seen["times"], np.array([times[i] for i in keep]))
    assert np.allclose(seen["flow"], flow, rtol=1e-12, atol=1e-9)
    assert sum(sum(d.values()) for d in tails.values()) > 1000  # there were tails to move
    assert result.n_residuals > 0
