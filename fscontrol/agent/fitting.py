"""The tick's fit stage: the decay rate fitted to the stored history of a cluster (`fit_history`,
run by pipeline.run_tick when schedule.fit is due, and by `fscontrol fit`), on the fit's numpy
loaders (store.loaders) and the fit itself (model.fit). numpy loads only when there is enough
history to fit.
"""

from __future__ import annotations

import time

from fscontrol.errors import NotFoundError
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.store import loaders as store_loaders
from fscontrol.store.connection import Database


def thin_to_period(times: list[float], period_s: float) -> list[int]:
    """Indices of snapshots at least one PriorityCalcPeriod apart (greedy from the first).

    RawUsage moves only at decay passes: a pair of snapshots closer than one pass says nothing
    about decay, and pairs should span whole passes (see fit.py)."""
    keep: list[int] = []
    for i, t in enumerate(times):
        if not keep or t - times[keep[-1]] >= period_s * 0.98:
            keep.append(i)
    return keep


def _read_fit_history(db: Database, cluster: str, last: int | None, running: bool = False):
    """The usage history and the charged jobs the fit needs. The jobs (each crosses into Python)
    are read on a second, read-only connection in a thread while this one reads the usage
    (SQLite joins those into strings without holding Python's lock): on two cores the two reads
    overlap. An in-memory history (no file) is read in turn. The jobs are those of the snapshots
    up to the last one the usage has (a collect committing meanwhile adds only later ones)."""
    import sqlite3
    import threading

    ids = store.snapshot_ids(db, cluster)
    if last:
        ids = ids[-last:]
    if not ids:
        return store_loaders.usage_history(db, cluster), None
    lo, hi = ids[0], ids[-1]
    path = store.db_file(db)
    if not path:
        hist = store_loaders.usage_history(db, cluster)
        return hist, store_loaders.read_job_charges(db.conn, lo, int(hist.ids[-1]) if hist.ids.size else hi, running=running)
    box: dict = {}

    def read_jobs() -> None:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
            try:
                box["jobs"] = store_loaders.read_job_charges(conn, lo, hi, running=running)
            finally:
                conn.close()
        except BaseException as e:  # noqa: BLE001 - handed to the caller below
            box["error"] = e

    worker = threading.Thread(target=read_jobs, name="fit-jobs", daemon=True)
    worker.start()
    try:
        hist = store_loaders.usage_history(db, cluster)
    finally:
        worker.join()
    now_ids = hist.ids[-last:] if last else hist.ids
    if "error" in box or not now_ids.size or (int(now_ids[0]), int(now_ids[-1])) != (lo, hi):
        # the read-only connection failed (a locked or vanished file), or a collect added a
        # snapshot in between: inflow_history reads the jobs on this connection
        return hist, None
    return hist, box["jobs"]


def _at_the_passes(db: Database, cluster: str, hist, ids, times, charge, jobs):
    """fit.at_the_passes for the snapshots whose collect could tell when their pass ran
    (snapshots.usage_at); the others keep their times. Under load a collect's timing wanders by
    seconds against the passes: at a half-life of a few passes that biased the fitted half-life
    by a few percent. `jobs`: read_job_charges(running=True) of those snapshots."""
    import numpy as np

    from fscontrol.model.fit import at_the_passes

    rows = store_loaders.pass_times(db, cluster, int(ids[0]), int(ids[-1]))
    at = np.array([np.nan if a is None else a for a, _ in rows], dtype=float)
    if at.shape != times.shape or not np.isfinite(at).any():
        return times, charge
    after = np.array([np.nan if a is None or w is None else w - a for a, w in rows], dtype=float)
    tails = store_loaders.pass_tails(jobs, np.asarray(ids), after)
    tail = store_loaders.inflow_history(db, cluster, hist, first_id=int(ids[0]), jobs=tails)[:, len(hist.ids) - len(ids):]
    return at_the_passes(times, at, charge, tail)


def fit_history(db: Database, cluster: str | None, *, last: int | None = None, now: float | None = None,
                record_fit: bool = True):
    """Fit the decay rate to the stored history of a cluster and record the fit (unless not
    `record_fit`: a read-only history, whose fit is only shown).

    Uses user associations only (account rows are sums of them) and the sacct charge between
    snapshots; snapshots are thinned to one per decay pass at most."""
    if cluster is None:
        names = store.clusters(db)
        if len(names) != 1:
            raise NotFoundError("no history yet" if not names else f"several clusters in the history, pick one with -M: {', '.join(names)}")
        cluster = names[0]
    config = store.latest_config(db, cluster)
    taken = store_loaders.snapshot_times(db, cluster)
    if len(thin_to_period(taken[-last:] if last else taken, max(config.calc_period_s, 1))) < 3:
        # said before numpy loads: a young history, every tick
        raise NotFoundError(f"cannot fit the decay of {cluster} yet: too few snapshot pairs to fit "
                            "(one decay pass apart at least; 2 needed)")
    import numpy as np

    from fscontrol.model import fit as fitmod

    # snapshots that know their pass (usage_at): the jobs are read with their running billing too
    timed = store_loaders.knows_pass_times(db, cluster)
    hist, jobs = _read_fit_history(db, cluster, last, running=timed)
    times, ids, usage_all = hist.times, hist.ids, hist.usage
    if last:
        times, ids, usage_all = times[-last:], ids[-last:], usage_all[:, -last:]
    first = int(ids[0]) if len(ids) else None
    charge = store_loaders.inflow_history(db, cluster, hist, first_id=first, jobs=jobs)[:, len(hist.ids) - len(ids):]
    if timed and len(ids):
        times, charge = _at_the_passes(db, cluster, hist, ids, times, charge, jobs)
    del jobs
    keep = thin_to_period(times.tolist(), max(config.calc_period_s, 1))
    all_kept = keep == list(range(len(times)))
    usage = usage_all if all_kept else usage_all[:, keep]
    del hist, usage_all
    if all_kept:  # each kept snapshot's own window (column 0: before the history, unused)
        flow = charge
        flow[:, :1] = 0.0
    else:
        flow = np.zeros_like(usage)
        # the charge between two kept snapshots is the sum of the windows ending after the first,
        # added one window after the other (as Python's sum did, so the same floats)
        starts = np.array(keep[:-1], dtype=np.int64) + 1
        lens = np.diff(np.array(keep, dtype=np.int64))
        for off in range(int(lens.max()) if lens.size else 0):
            cols = np.flatnonzero(lens > off)
            flow[:, cols + 1] += charge[:, starts[cols] + off]
    del charge
    kept_times = times[keep]
    try:
        result = fitmod.fit_decay_matrix(
            kept_times, usage, flow, config.half_life_s, calc_period_s=config.calc_period_s
        )
    except ValueError as e:
        raise NotFoundError(f"cannot fit the decay of {cluster} yet: {e}") from None
    if record_fit:
        with store.transaction(db):
            store_ledger.write_fit(db, cluster, now if now is not None else time.time(), int(ids[keep[0]]), int(ids[keep[-1]]), result)
    return cluster, len(keep), result
