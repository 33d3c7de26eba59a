"""The decay fit's and the forecast's loaders: the usage series, the jobs' charges and the inflow of the history as numpy arrays (numpy imported by the functions that need it); and the plain rows the tick's record of the halving Slurm used reads (snapshot_cluster, ended_jobs)."""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: records says why)
if TYPE_CHECKING:
    import sqlite_utils
    import numpy as np



def usage_series(db: sqlite_utils.Database, cluster: str) -> tuple[list[float], dict[tuple[str, str], list[int | None]]]:
    """Every snapshot time of a cluster and, per association, its RawUsage at each (None when
    absent). Rebuilt from the change-only samples."""
    snaps = db.execute("SELECT id, taken_at FROM snapshots WHERE cluster = ? ORDER BY id", [cluster]).fetchall()
    index = {sid: i for i, (sid, _) in enumerate(snaps)}
    times = [t for _, t in snaps]
    changes: dict[tuple[str, str], list[tuple[int, int | None]]] = {}
    rows = db.execute(
        """SELECT a.account, a.user, s.snapshot_id, s.present, s.raw_usage
           FROM assoc_samples s JOIN assocs a ON a.id = s.assoc_id
           WHERE a.cluster = ? ORDER BY s.assoc_id, s.snapshot_id""",
        [cluster],
    )
    for account, user, sid, present, raw in rows:
        if sid in index:
            changes.setdefault((account, user), []).append((index[sid], raw if present else None))
    series: dict[tuple[str, str], list[int | None]] = {}
    for key, pts in changes.items():
        s: list[int | None] = [None] * len(times)
        for k, (i, value) in enumerate(pts):
            stop = pts[k + 1][0] if k + 1 < len(pts) else len(times)
            s[i:stop] = [value] * (stop - i)
        series[key] = s
    return times, series


def inflow_series(db: sqlite_utils.Database, cluster: str) -> dict[tuple[str, str], dict[int, float]]:
    """Per user association, the charge (billing x clipped seconds x QOS UsageFactor) of the
    sacct window that ends at each snapshot, keyed by snapshot id."""
    factors = {
        sid: json.loads(cfg).get("qos", {})
        for sid, cfg in db.execute("SELECT id, config_json FROM snapshots WHERE cluster = ?", [cluster])
    }
    out: dict[tuple[str, str], dict[int, float]] = {}
    rows = db.execute(
        """SELECT j.snapshot_id, j.account, j.user, j.qos, sum(j.billing * j.elapsed_s)
           FROM job_usage j JOIN snapshots s ON s.id = j.snapshot_id
           WHERE s.cluster = ? GROUP BY j.snapshot_id, j.account, j.user, j.qos""",
        [cluster],
    )
    for sid, account, user, qos, charge in rows:
        uf = factors.get(sid, {}).get(qos, 1.0)
        d = out.setdefault((account, user), {})
        d[sid] = d.get(sid, 0.0) + (charge or 0.0) * uf
    return out


UsageHistory = namedtuple("UsageHistory", (
    "ids",  # np.ndarray (n_snap,): snapshot ids, ascending
    "times",  # np.ndarray (n_snap,): their taken_at
    "keys",  # list[tuple[str, str]]: (account, user) of each row, by association id
    "assoc_ids",  # np.ndarray (n_rows,): association id of each row
    "usage",  # np.ndarray (n_rows, n_snap): RawUsage at each snapshot, NaN where absent
), module=__name__)


JobCharges = namedtuple("JobCharges", (
    "qos_names",  # list: in SQLite's GROUP BY order (NULL first, then by bytes)
    "sid",  # np.ndarray: snapshot id of each job
    "aid",  # np.ndarray: its association id (-1: none)
    "q",  # np.ndarray: index of its QOS in qos_names
    "charge",  # np.ndarray: billing x elapsed_s (0 where unknown)
    "orphans",  # list: (account, user) of the jobs without an association id, in order
    "running",  # np.ndarray | None: billing of the jobs running at their snapshot, else 0 (read_job_charges(running=True))
), defaults=(None,), module=__name__)


def usage_history(db: sqlite_utils.Database, cluster: str) -> UsageHistory:
    """usage_series for the user associations, straight into numpy: the same values (RawUsage as
    float, NaN where usage_series has None) in the same row order, without a Python object per
    sample.

    SQLite joins each association's change-only samples, in snapshot order, into one string of
    integers (an absent sample is INT64_MIN) that numpy parses (integers parse several times
    faster than floats); with them come the samples' count and first and last snapshot: when the
    count is every snapshot of the cluster in between (an association whose usage moves at every
    snapshot), the samples are those snapshots and their ids are not read at all. Any other
    association (sparse samples, a value stored as other than an integer) is read row by row."""
    import numpy as np

    snaps = db.execute("SELECT id, taken_at FROM snapshots WHERE cluster = ? ORDER BY id", [cluster]).fetchall()
    ids = np.array([r[0] for r in snaps], dtype=np.int64)
    times = np.array([r[1] for r in snaps], dtype=float)
    n_snap = ids.size
    # each association's first and last sample: two look-ups in the primary key, no scan
    users = db.execute(
        """SELECT id, account, user, (SELECT min(snapshot_id) FROM assoc_samples WHERE assoc_id = a.id),
                  (SELECT max(snapshot_id) FROM assoc_samples WHERE assoc_id = a.id)
           FROM assocs a WHERE cluster = ? AND user != '' ORDER BY id""",
        [cluster],
    ).fetchall()
    if not users or not n_snap:
        return UsageHistory(ids, times, [], np.zeros(0, dtype=np.int64), np.full((0, n_snap), np.nan))
    usage = np.full((len(users), n_snap), np.nan)
    who = {aid: (account, user, lo, hi) for aid, account, user, lo, hi in users}
    # the samples in primary-key order (assoc_id, snapshot_id): SQLite walks the key for the
    # GROUP BY, so group_concat sees them in snapshot order (checked: the count must be every
    # snapshot from the first to the last sample, else the association is read row by row)
    rows = db.execute(
        f"""SELECT assoc_id, count(*), group_concat(CASE WHEN present = 1 AND raw_usage IS NOT NULL THEN raw_usage
                                                   ELSE {_ABSENT} END, ' ')
            FROM assoc_samples WHERE assoc_id IN (SELECT id FROM assocs WHERE cluster = ? AND user != '')
            GROUP BY assoc_id ORDER BY assoc_id""",
        [cluster],
    )
    import warnings

    filled = np.zeros(len(users), dtype=bool)
    sparse: dict[int, tuple[int, object]] = {}  # assoc id -> (row, values): snapshot ids read next
    slow: list[tuple[int, int]] = []  # (assoc id, row): read row by row
    order = {aid: i for i, (aid, *_) in enumerate(users)}
    with warnings.catch_warnings():  # a value that is no integer ends the parse early: read slowly
        warnings.simplefilter("ignore", DeprecationWarning)
        for aid, count, text in rows:
            i = order[aid]
            vals = np.fromstring(text, dtype=np.int64, sep=" ")
            if vals.size != count:
                slow.append((aid, i))
                continue
            _, _, lo, hi = who[aid]
            a, b = np.searchsorted(ids, [lo, hi])
            if b < n_snap and ids[a] == lo and ids[b] == hi and b - a + 1 == count:  # one sample a snapshot
                row = usage[i]
                row[a:b + 1] = vals
                absent = vals == _ABSENT
                if absent.any():
                    row[a:b + 1][absent] = np.nan
                row[b + 1:] = row[b]  # the last sample holds to the end
                filled[i] = True
            else:
                sparse[aid] = (i, vals)
    todo = list(sparse)
    for k in range(0, len(todo), 500):
        chunk = todo[k:k + 500]
        for aid, text in db.execute(
                f"""SELECT assoc_id, group_concat(snapshot_id, ' ') FROM assoc_samples
                    WHERE assoc_id IN ({','.join('?' * len(chunk))}) GROUP BY assoc_id""", chunk):
            i, vals = sparse[aid]
            sids = np.fromstring(text, dtype=np.int64, sep=" ")
            if sids.size != vals.size or (sids.size > 1 and not (sids[1:] > sids[:-1]).all()):
                slow.append((aid, i))  # never with this schema: read it row by row
                continue
            v = vals.astype(float)
            v[vals == _ABSENT] = np.nan
            filled[i] = _fill(usage[i], ids, sids, v)
    for aid, i in slow:
        filled[i] = _fill_row(db, aid, ids, usage[i])
    keys = [(account, user) for (_, account, user, _, _), f in zip(users, filled) if f]
    aids = np.array([u[0] for u in users], dtype=np.int64)
    if not filled.all():
        usage, aids = usage[filled], aids[filled]
    return UsageHistory(ids, times, keys, aids, usage)


def _fill(row, ids, sids, vals) -> bool:
    """Samples (snapshot ids ascending, values) into one row of the usage matrix: each holds until
    the association's next sample; samples of snapshots not in `ids` are left out. False if none
    is left."""
    import numpy as np

    col = np.searchsorted(ids, sids)
    ok = col < ids.size
    ok[ok] = ids[col[ok]] == sids[ok]  # samples of snapshots of this cluster only
    if not ok.all():
        col, vals = col[ok], vals[ok]
    if not col.size:
        return False
    row[col[0]:] = np.repeat(vals, np.diff(np.append(col, ids.size)))
    return True


def _fill_row(db: sqlite_utils.Database, aid: int, ids, row) -> bool:
    """One association's samples read row by row (as usage_series does) into `row`."""
    import numpy as np

    got = db.execute("SELECT snapshot_id, present, raw_usage FROM assoc_samples WHERE assoc_id = ? ORDER BY snapshot_id",
                     [aid]).fetchall()
    sids = np.array([r[0] for r in got], dtype=np.int64)
    vals = np.array([float(raw) if present and raw is not None else np.nan for _, present, raw in got], dtype=float)
    return _fill(row, ids, sids, vals)


_ABSENT = -(2**63)  # usage_history's mark of an absent sample (RawUsage is never negative)


def read_job_charges(conn: sqlite3.Connection, lo: int, hi: int, *, running: bool = False) -> JobCharges:
    """The jobs of snapshots lo..hi for inflow_history. Takes a plain connection: the fit reads
    them on a second (read-only) connection in a thread while the usage is read on the first;
    SQLite lets the other thread run while it steps. Two numbers a job cross into Python (the
    snapshot, association and QOS packed into one integer, and the charge); `running`: a third,
    the billing of each job still running at its snapshot (0 for the others), for pass_tails."""
    # the QOS the snapshots list (no scan of the jobs); a job of another QOS: read again with all
    listed = {None}
    for (cfg,) in conn.execute("SELECT config_json FROM snapshots WHERE id BETWEEN ? AND ?", [lo, hi]):
        listed.update(json.loads(cfg or "{}").get("qos", {}))
    got = _read_job_charges(conn, lo, hi, sorted(listed, key=_qos_order), unknown_ok=False, running=running)
    if got is None:
        names = [q for (q,) in conn.execute("SELECT DISTINCT qos FROM job_usage WHERE snapshot_id BETWEEN ? AND ?", [lo, hi])]
        got = _read_job_charges(conn, lo, hi, sorted(names, key=_qos_order), unknown_ok=True, running=running)
    return got


def pass_tails(jobs: JobCharges, snap_ids: "np.ndarray", after_pass: "np.ndarray") -> JobCharges:
    """The jobs with, as their charge, the part of it after the decay pass whose RawUsage their
    snapshot holds: for a job still running at the snapshot, billing x the seconds from the pass
    to the window's end (`after_pass`, per snapshot of `snap_ids`: window end - usage_at, NaN
    where the pass is unknown), at most its charge in the window; 0 for the others. Slurm charges
    that part at the next pass, so it belongs to the next window. A job that ended after the
    pass is left whole (with `limits` Slurm charges a job's tail when it ends). `jobs` must have
    been read with running=True."""
    import numpy as np

    if not len(snap_ids):
        return jobs._replace(charge=np.zeros_like(jobs.charge))
    col = np.minimum(np.searchsorted(snap_ids, jobs.sid), len(snap_ids) - 1)
    secs = np.where(snap_ids[col] == jobs.sid, np.maximum(np.nan_to_num(after_pass, nan=0.0), 0.0)[col], 0.0)
    return jobs._replace(charge=np.minimum(jobs.charge, jobs.running * secs))


def _qos_order(q):
    return (q is not None, q or "")  # SQLite's GROUP BY order: NULL first, then by bytes


def _read_job_charges(conn: sqlite3.Connection, lo: int, hi: int, qos_names: list, unknown_ok: bool,
                      running: bool = False) -> JobCharges | None:
    import numpy as np

    empty = np.zeros(0, dtype=np.int64)
    if not qos_names:
        return JobCharges(qos_names, empty, empty, empty, np.zeros(0), [], np.zeros(0) if running else None)
    case = " ".join("WHEN ? THEN " + str(i) for i, q in enumerate(qos_names) if q is not None)
    null_code = qos_names.index(None) if None in qos_names else -1
    params = [q for q in qos_names if q is not None]
    n_q = len(qos_names)  # code n_q: a QOS not in the list
    qcode = f"CASE WHEN qos IS NULL THEN {null_code} ELSE {f'CASE qos {case} ELSE {n_q} END' if case else n_q} END"
    n_q += 1
    n_a = (conn.execute("SELECT max(id) FROM assocs").fetchone()[0] or 0) + 1
    where = "FROM job_usage WHERE snapshot_id BETWEEN ? AND ? AND assoc_id IS NOT NULL"
    charge_sql = "coalesce(billing * elapsed_s, 0.0)"
    if running:  # a third number a job: its billing if it was running at its snapshot
        charge_sql += ", CASE WHEN state = 'RUNNING' THEN coalesce(billing, 0.0) ELSE 0.0 END"
    cf = [("c", float)] + ([("r", float)] if running else [])
    n = conn.execute(f"SELECT count(*) {where}", [lo, hi]).fetchone()[0]  # sized once: fromiter does not grow
    # ids in 4 bytes and the QOS in 1 when they fit: 17 bytes a job once read
    id_type = np.int32 if max(hi, n_a) < 2**31 else np.int64
    q_type = np.int8 if n_q < 128 else np.int64
    sid, aid, q = np.empty(n, dtype=id_type), np.empty(n, dtype=id_type), np.empty(n, dtype=q_type)
    if (hi + 1) * n_a * n_q < 2**62:  # (snapshot, association, QOS) in one integer: two numbers a job
        packed = np.fromiter(conn.execute(
            f"SELECT (snapshot_id * {n_a} + assoc_id) * {n_q} + {qcode}, {charge_sql} {where}",
            [*params, lo, hi]), dtype=[("k", np.int64), *cf], count=n)
        for a in range(0, n, 1 << 18):  # unpacked a slice at a time: small temporaries
            k = packed["k"][a:a + (1 << 18)]
            q[a:a + k.size] = k % n_q
            k = k // n_q
            aid[a:a + k.size] = k % n_a
            sid[a:a + k.size] = k // n_a
    else:
        packed = np.fromiter(conn.execute(f"SELECT snapshot_id, assoc_id, {qcode}, {charge_sql} {where}",
                                          [*params, lo, hi]),
                             dtype=[("sid", np.int64), ("aid", np.int64), ("q", np.int64), *cf], count=n)
        sid[:], aid[:], q[:] = packed["sid"], packed["aid"], packed["q"]
    charge = np.ascontiguousarray(packed["c"])
    rate = np.ascontiguousarray(packed["r"]) if running else None
    del packed
    # jobs whose association id was not known when they were written (NULL): by account and user
    orphan = conn.execute(
        f"""SELECT snapshot_id, account, user, {qcode}, {charge_sql}
            FROM job_usage WHERE snapshot_id BETWEEN ? AND ? AND assoc_id IS NULL""", [*params, lo, hi]).fetchall()
    if orphan:
        sid = np.concatenate([sid, np.array([r[0] for r in orphan], dtype=sid.dtype)])
        aid = np.concatenate([aid, np.full(len(orphan), -1, dtype=aid.dtype)])
        q = np.concatenate([q, np.array([r[3] for r in orphan], dtype=q.dtype)])
        charge = np.concatenate([charge, np.array([r[4] for r in orphan], dtype=float)])
        if running:
            rate = np.concatenate([rate, np.array([r[5] for r in orphan], dtype=float)])
    if not unknown_ok and (q == n_q - 1).any():
        return None
    return JobCharges(qos_names, sid, aid, q, charge, [(r[1], r[2]) for r in orphan], rate)


def inflow_history(db: sqlite_utils.Database, cluster: str, hist: UsageHistory, first_id: int | None = None,
                   jobs: JobCharges | None = None) -> "np.ndarray":
    """inflow_series laid out like hist.usage: (n_rows, n_snap), each association's charge of the
    sacct window ending at each snapshot (0 where none). The same sums in the same order as
    inflow_series (jobs summed per snapshot, account, user and QOS in the order SQLite feeds
    them to its sum, times the QOS UsageFactor, then the QOS in name order), so the same floats.
    Jobs of snapshots before `first_id` are not read (their columns stay 0). `jobs`: those
    jobs already read (read_job_charges from first_id, or the first snapshot, to the last)."""
    import numpy as np

    n_rows, n_snap = hist.usage.shape
    out = np.zeros((n_rows, n_snap))
    if not n_rows or not n_snap:
        return out
    lo = int(hist.ids[0]) if first_id is None else int(first_id)
    hi = int(hist.ids[-1])
    if jobs is None:
        jobs = read_job_charges(db.conn, lo, hi)
    qos_names = jobs.qos_names
    if not qos_names or not jobs.sid.size:
        return out
    factors = {
        sid: json.loads(cfg).get("qos", {})
        for sid, cfg in db.execute("SELECT id, config_json FROM snapshots WHERE cluster = ? AND id BETWEEN ? AND ?",
                                   [cluster, lo, hi])
    }
    n_q = len(qos_names)
    uf_tab = np.ones((n_snap, n_q))  # the QOS UsageFactor of each snapshot (1.0 for a QOS it does not list)
    for s_id, per in factors.items():
        k = int(np.searchsorted(hist.ids, s_id))
        if k < n_snap and hist.ids[k] == s_id:
            for qi, name in enumerate(qos_names):
                if name in per:
                    uf_tab[k, qi] = per[name]
    # the cell (row, column) of each job: its row by association id, or by (account, user) for
    # the orphans; -1 for a job of no row or of a snapshot not in the history
    aid_max = int(max(hist.assoc_ids.max(), jobs.aid.max(initial=0))) + 1
    row_lut = np.full(aid_max, -1, dtype=np.int64)
    row_lut[hist.assoc_ids] = np.arange(n_rows)
    n_jobs = jobs.aid.size
    n_known = n_jobs - len(jobs.orphans)
    orphan_rows = None
    if jobs.orphans:
        by_key = {k: i for i, k in enumerate(hist.keys)}
        orphan_rows = np.array([by_key.get(k, -1) for k in jobs.orphans], dtype=np.int64)
    cell = np.empty(n_jobs, dtype=np.int64)
    for a in range(0, n_jobs, 1 << 18):  # a slice at a time: small temporaries
        b = min(a + (1 << 18), n_jobs)
        row = row_lut[np.maximum(jobs.aid[a:b], 0)]
        if b > n_known:
            row[max(n_known - a, 0):] = orphan_rows[max(a - n_known, 0):b - n_known]
        sid = jobs.sid[a:b]
        col = np.searchsorted(hist.ids, sid)
        col[col >= n_snap] = 0
        bad = (row < 0) | (hist.ids[col] != sid)
        c = row * n_snap + col
        c[bad] = -1
        cell[a:b] = c
    del row_lut
    keep = cell >= 0
    if not np.isfinite(uf_tab).all():  # 0 x inf: keep the exact sums of the groups that exist
        return _inflow_sparse(out, cell[keep], jobs.q[keep], jobs.charge[keep], uf_tab, n_snap)
    del out
    np.maximum(cell, 0, out=cell)  # (a dropped job weighs 0 below)
    # per QOS: each cell's jobs summed in the order SQLite gave them (bincount adds in input
    # order, as the sum of the old GROUP BY did), times that snapshot's UsageFactor; the QOS
    # added in name order. A job of another QOS (or dropped) adds 0.0, which changes no sum.
    total = None
    for qi in range(n_q):
        m = keep & (jobs.q == qi) if n_q > 1 else keep
        if not m.any():
            continue
        weights = np.where(m, jobs.charge, 0.0)
        del m
        sums = np.bincount(cell, weights=weights, minlength=n_rows * n_snap).reshape(n_rows, n_snap)
        del weights
        sums *= uf_tab[:, qi]
        if total is None:
            total = sums
        else:
            total += sums
            del sums
    return total if total is not None else np.zeros((n_rows, n_snap))


def _inflow_sparse(out, cell, q, charge, uf_tab, n_snap):
    """inflow_history's sums group by group (np.add.at), for UsageFactors that are not finite."""
    import numpy as np

    n_q = uf_tab.shape[1]
    uniq, inv = np.unique(cell * n_q + q, return_inverse=True)
    sums = np.zeros(uniq.size)
    np.add.at(sums, inv, charge)
    g_q, g_cell = uniq % n_q, uniq // n_q
    np.add.at(out.reshape(-1), g_cell, sums * uf_tab[g_cell % n_snap, g_q])
    return out


def window_inflow(db: sqlite_utils.Database, cluster: str, since: float, until: float, max_snapshots: int = 120
                  ) -> tuple[int, float, dict, dict, float | None, int]:
    """What the history says of the submissions that keep coming, from the jobs running at the
    cluster's snapshots in [since, until] (the latest `max_snapshots` of them: every job seen, a
    job shorter than the agent's tick may be missed): how
    much of its time to the limit a running job still ran (decay.left_ratio, from the jobs that
    ended) and the work the jobs that started bring per second (decay.arrival_inflow), per
    (account, user). Returns (snapshots read, the seconds they span, the rates, their variances,
    the ratio or None, the jobs seen to end); (0, 0.0, {}, {}, None, 0) without 3 snapshots."""
    from fscontrol.model.decay import arrival_inflow, left_ratio

    rows = db.execute("SELECT id, taken_at FROM snapshots WHERE cluster = ? AND taken_at BETWEEN ? AND ? "
                      "ORDER BY id DESC LIMIT ?", [cluster, since, until, max_snapshots]).fetchall()[::-1]
    if len(rows) < 3:
        return 0, 0.0, {}, {}, None, 0
    at = dict(rows)
    ids = [sid for sid, _ in rows]
    tick = (rows[-1][1] - rows[0][1]) / (len(rows) - 1)
    jobs: dict[str, list] = {}
    for sid, job, account, user, rate, ends_at in db.execute(
            f"""SELECT snapshot_id, job_id, account, user, rate, ends_at FROM running_jobs
                WHERE snapshot_id IN ({",".join("?" * len(ids))}) ORDER BY snapshot_id""", ids):
        t = at[sid]
        j = jobs.get(job)
        if j is None:
            jobs[job] = [account, user, rate, t, t, ends_at, [(t, ends_at)]]
        else:
            j[4], j[5] = t, ends_at
            j[6].append((t, ends_at))
    first, last = rows[0][1], rows[-1][1]
    pairs, ended = [], 0
    for account, user, rate, t0, t1, ends_at, seen in jobs.values():
        if t1 < last and ends_at is not None:
            ended += 1
            pairs += [(e - t, t1 + tick / 2 - t) for t, e in seen if e is not None]
    q = left_ratio(pairs)
    visits = [(a, u, r, t0, t1, None if e is None else max(0.0, e - last)) for a, u, r, t0, t1, e, _ in jobs.values()]
    rates, variances = arrival_inflow(visits, first, last, tick, q)
    return len(rows), last - first, rates, variances, q, ended


def snapshot_cluster(db: sqlite_utils.Database, snapshot_id: int) -> str | None:
    """The cluster of a snapshot, None when the history has no such snapshot."""
    row = db.execute("SELECT cluster FROM snapshots WHERE id = ?", [snapshot_id]).fetchone()
    return row[0] if row is not None else None


def ended_jobs(db: sqlite_utils.Database, cluster: str, after_snapshot_id: int, end_from: float, end_before: float) -> list[tuple]:
    """The jobs sacct showed ended (not RUNNING) in the snapshots of `cluster` after
    `after_snapshot_id`, with End in [end_from, end_before): (job id, qos, billing, alloc cpus,
    start, end) each, as often as the snapshots show them."""
    return db.execute(
        "SELECT j.job_id, j.qos, j.billing, j.alloc_cpus, j.start, j.end FROM job_usage j "
        "JOIN snapshots s ON s.id = j.snapshot_id WHERE s.cluster = ? AND j.snapshot_id > ? "
        "AND j.state != 'RUNNING' AND j.end >= ? AND j.end < ?",
        [cluster, after_snapshot_id, end_from, end_before]).fetchall()


def snapshot_times(db: sqlite_utils.Database, cluster: str) -> list[float]:
    """When each snapshot of `cluster` was taken, in snapshot order."""
    return [r[0] for r in db.execute("SELECT taken_at FROM snapshots WHERE cluster = ? ORDER BY id", [cluster])]


def knows_pass_times(db: sqlite_utils.Database, cluster: str) -> bool:
    """Whether any snapshot of `cluster` knows the decay pass its usage is from (usage_at)."""
    return db.execute("SELECT count(usage_at) FROM snapshots WHERE cluster = ?", [cluster]).fetchone()[0] > 0


def pass_times(db: sqlite_utils.Database, cluster: str, first_id: int, last_id: int) -> list[tuple]:
    """(usage_at, window_end) of the snapshots of `cluster` with ids in [first_id, last_id], in
    order: the pass each one's usage is from (None where not known) and the end of its sacct window."""
    return db.execute("SELECT usage_at, window_end FROM snapshots WHERE cluster = ? AND id BETWEEN ? AND ? ORDER BY id",
                      [cluster, first_id, last_id]).fetchall()
