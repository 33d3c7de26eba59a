"""The history: SQLite, with numbered migrations (sqlite-utils' Migrations) and one transaction a tick.

Associations cost little when they do not change: `assoc_samples` holds a row only when an
association's values changed since its previous sample (or it appeared or vanished), and
`assoc_current` keeps the latest values so a tick compares without scanning history. A snapshot's
rows are the latest sample at or before it."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from fscontrol.errors import NotFoundError, StoreError
from fscontrol.slurm.parse import gc_paused
from fscontrol.store.connection import Database
from fscontrol.records import ShareRow, share_rows
from fscontrol.snaprecords import Snapshot, SlurmConfig
from fscontrol.store.loaders import JobCharges, UsageHistory
from fscontrol.store.schema import LEGACY_MOVED, MIGRATIONS, OPTIONAL_MIGRATIONS, applied_migrations, migrate


def default_db_path() -> Path:
    """/var/lib/fscontrol/history.db for root; $XDG_STATE_HOME/fscontrol/history.db otherwise."""
    if env := os.environ.get("FSCONTROL_DB"):
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/fscontrol/history.db")
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "fscontrol" / "history.db"


def ensure_db_folder(path: Path | str) -> None:
    """The history's folder: made only for the default path; a missing folder of any other path is
    a NotFoundError (a typo in --db must not start an empty history somewhere new)."""
    path = Path(path)
    if path.parent.is_dir():
        return
    if path != default_db_path():
        raise NotFoundError(f"folder {path.parent} of the history database {path.name} does not exist (a typo in --db?)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create the folder of the history database {path}: {e}") from None


def open_db(path: Path | str, *, create: bool = True, timeout_s: float = 10.0, readonly: bool = False) -> Database:
    """Open (and migrate) the history. A locked, corrupt or foreign file is a StoreError.

    `readonly` (the reports): opened read-only and never migrated; a history an older fscontrol
    wrote is refused with a clear line until the agent's next tick (or `collect`) upgrades it."""
    path = Path(path)
    if (readonly or not create) and not path.exists():
        raise NotFoundError(f"no history database at {path}: run `fscontrol collect` first")
    if readonly:
        return _open_readonly(path, timeout_s)
    if path.exists() and not writable(path):
        db = _open_readonly(path, timeout_s)  # one clear line: a schema too old, else that it is read-only
        db.close()
        raise StoreError(f"history database {path} is read-only to you (the file or its folder): the reports "
                         "(status, history, fit, metrics) read it; collecting into it needs write access")
    ensure_db_folder(path)
    try:
        _private(path)
        conn = sqlite3.connect(str(path), timeout=timeout_s)
        db = Database(conn)
        _wal(db, timeout_s)
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        migrate(db)
    except sqlite3.DatabaseError as e:
        msg = str(e)
        if "locked" in msg or "busy" in msg:
            raise StoreError(f"history database {path} is locked by another process ({msg})") from None
        if _disk_full(path):
            raise StoreError(f"history database {path}: no space left on its file system, nothing was written ({msg})") from None
        raise StoreError(f"history database {path} is unreadable: {msg}") from None
    except OSError as e:
        raise StoreError(f"cannot open history database {path}: {e}") from None
    return db


def _wal(db, timeout_s: float) -> None:
    """PRAGMA journal_mode=WAL. Switching a new file needs it alone for a moment, and SQLite answers
    'locked' at once (no busy wait) when another process opens it at the same time: tried again
    until timeout_s; a history already in WAL (every one after its first open) needs no switch."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _open_readonly(path: Path, timeout_s: float) -> Database:
    """mode=ro; a WAL history whose folder the reader cannot write (an admin's copy, a snapshot on a
    read-only mount: no -shm can be made) is opened immutable when it has no WAL content to miss."""
    from urllib.parse import quote

    uri = f"file:{quote(str(path))}?mode=ro"
    try:
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=timeout_s)
            db = Database(conn)
            done, legacy = applied_migrations(db)
        except sqlite3.OperationalError as e:
            if not _cannot_share(path, e):
                raise
            conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=timeout_s)
            db = Database(conn)
            done, legacy = applied_migrations(db)
    except sqlite3.DatabaseError as e:
        raise StoreError(f"history database {path} is unreadable: {e}") from None
    names = done | ((legacy or set()) - {LEGACY_MOVED})  # a legacy history that is up to date reads as it is
    known = [n for n, _ in MIGRATIONS]
    if names - set(known):
        raise StoreError(f"history database {path} was written by a newer fscontrol (schema {max(names)})")
    if set(known) - names - OPTIONAL_MIGRATIONS:
        have = max(names) if names else "none"
        raise StoreError(f"history database {path} has schema {have}, this fscontrol reads {known[-1]}: "
                         "the agent's next tick (or `fscontrol collect`) upgrades it")
    return db


def _cannot_share(path: Path, e: Exception) -> bool:
    """The read-only open failed only because SQLite could not make the WAL's shared-memory file
    beside a history nobody is writing (no -wal with content): the folder is read-only to us."""
    msg = str(e)
    if "readonly" not in msg and "unable to open" not in msg:
        return False
    wal = Path(f"{path}-wal")
    try:
        if wal.exists() and wal.stat().st_size > 0:
            return False
    except OSError:
        return False
    return not os.access(path.parent, os.W_OK) or not os.access(path, os.W_OK)


def writable(path: Path | str) -> bool:
    """We may write the history (and its folder, for the WAL): the reports that also record
    (fit) only compute on one we may not."""
    p = Path(path)
    return os.access(p, os.W_OK) and os.access(p.parent, os.W_OK)


def _disk_full(path: Path) -> bool:
    import shutil

    try:
        return shutil.disk_usage(path.parent).free < 64 * 1024
    except OSError:
        return False


def _private(path: Path) -> None:
    """The history holds every user's usage and jobs: 0600, whatever the umask (cron's and
    systemd's is 022). A new file is created so; an existing one (and its WAL and SHM, which
    SQLite creates with the database's own mode) is put right when we own it."""
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        if st.st_mode & 0o077 and st.st_uid == os.geteuid():
            os.chmod(p, st.st_mode & 0o700)


def db_file(db: Database) -> str | None:
    """The history's file, None for an in-memory one."""
    return next((f for _, name, f in db.execute("PRAGMA database_list") if name == "main"), None) or None


@contextmanager
def transaction(db: Database) -> Iterator[Database]:
    """One transaction; a lock or I/O error inside it becomes a StoreError, nothing half-written."""
    try:
        with db.atomic():
            yield db
    except sqlite3.OperationalError as e:
        path = db_file(db) or "?"
        if "locked" in str(e) or "busy" in str(e):
            raise StoreError(f"history database {path} is locked by another process, nothing was written ({e})") from None
        if "full" in str(e) or (path != "?" and _disk_full(Path(path))):
            raise StoreError(f"history database {path}: no space left on its file system, nothing was written ({e})") from None
        raise StoreError(f"history database {path}: write failed, nothing was written: {e}") from None


_SAMPLE_COLS = (
    "present",
    "raw_shares",
    "shares_parent",
    "norm_shares",
    "raw_usage",
    "norm_usage",
    "effective_usage",
    "fairshare",
    "billing_run_mins",
    "level_fs",
)


def _sample_values(r: ShareRow) -> tuple:
    """An association's values in _SAMPLE_COLS' order (present = 1)."""
    return (1, r.raw_shares, int(r.shares_parent), r.norm_shares, r.raw_usage, r.norm_usage, r.effective_usage,
            r.fairshare, r.billing_run_mins, r.level_fs)


def _row_paths(rows) -> list[str]:
    """_paths' values as a list by row (no key tuples, no dict a row)."""
    by_account: dict[str, str] = {}
    out: list[str] = []
    add = out.append
    for r in rows:
        account, user = r.account, r.user
        if user:
            add(f"{by_account.get(account, account)}/{user}")
        else:
            base = by_account.get(r.parent, r.parent) if r.parent else ""
            p = f"{base}/{account}" if base else account
            by_account[account] = p
            add(p)
    return out


def _paths(rows: Iterable[ShareRow]) -> dict[tuple[str, str], str]:
    """A stable tree path per association, e.g. root/science/physics/alice, for ordering."""
    by_account: dict[str, str] = {}
    out: dict[tuple[str, str], str] = {}
    for r in rows:
        account, user = r.account, r.user
        if user:
            out[(account, user)] = f"{by_account.get(account, account)}/{user}"
        else:
            base = by_account.get(r.parent, r.parent) if r.parent else ""
            p = f"{base}/{account}" if base else account
            by_account[account] = p
            out[(account, user)] = p
    return out


ROWS_PER_INSERT = 1000


def insert_rows(conn: sqlite3.Connection, head: str, width: int, rows: Iterable[tuple]) -> None:
    """conn.executemany(f"{head} VALUES (?, ...)", rows), `width` values a row, as multi-row
    INSERTs of up to ROWS_PER_INSERT rows each (fewer where SQLite allows fewer variables a
    statement): executemany runs the statement once a row, and at 5,000 jobs that took twice as
    long (docs/benchmarks.md, "Fifth pass"). Rows are inserted in order, so INSERT OR REPLACE
    keeps the last of two rows with one key, as executemany does; `rows` may be a generator (a
    million jobs are never all held: one statement's rows at a time)."""
    per = max(1, min(ROWS_PER_INSERT, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
    one = "(" + ",".join("?" * width) + ")"
    full = f"{head} VALUES {','.join([one] * per)}"
    values: list = []
    add = values.extend
    n = 0
    for r in rows:
        add(r)
        n += 1
        if n == per:
            conn.execute(full, values)
            values = []
            add = values.extend
            n = 0
    if n:
        conn.execute(f"{head} VALUES {','.join([one] * n)}", values)


def write_snapshot(db: Database, snap: Snapshot, source: str = "") -> int:
    """Write one snapshot and all it carries. The caller holds the transaction."""
    with gc_paused():  # a tick holds the parsed snapshot: collections would re-scan it all
        return _write_snapshot(db, snap, source)


def _write_snapshot(db: Database, snap: Snapshot, source: str) -> int:
    cfg = snap.config
    users = snap.users
    root = snap.root
    cur = db.execute(
        """INSERT INTO snapshots (cluster, taken_at, slurm_version, priority_mode, priority_flags,
             damping_factor, half_life_s, calc_period_s, usage_reset_period, private_data, enforce,
             total_raw_usage, n_users, n_active_users, window_start, window_end, source, config_json, usage_at)
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
        [
            snap.cluster,
            snap.taken_at,
            cfg.slurm_version,
            cfg.mode,
            ",".join(cfg.priority_flags),
            cfg.damping_factor,
            cfg.half_life_s,
            cfg.calc_period_s,
            cfg.usage_reset_period,
            ",".join(cfg.private_data),
            ",".join(cfg.enforce),
            root.raw_usage if root else None,
            len(users),
            sum(1 for u in users if u.raw_usage > 0),
            snap.window[0] if snap.window else None,
            snap.window[1] if snap.window else None,
            source,
            json.dumps({"config": _config_json(cfg), "qos": {q.name: q.usage_factor for q in snap.qos}}),
            snap.usage_at,
        ],
    )
    sid = cur.lastrowid
    conn = db.conn

    # associations: ids and the latest values (one read of both), then change-only samples.
    # Compact at 100,000 associations (issue #31): one key tuple a row (the row's own strings),
    # its id in a list of ints by row, a byte a row for "changed"; the history's strings and
    # latest values are compared as they are read, never held (the vanished ones aside).
    shares = snap.shares
    index: dict[tuple[str, str], int] = {}
    for i, r in enumerate(shares):
        index[(r.account, r.user)] = i
    if len(index) != len(shares):
        raise StoreError(f"snapshot of {snap.cluster} lists an association twice: not written")
    aid = [0] * len(shares)  # ids start at 1: 0 is "new"
    changed = bytearray(len(shares))
    moved: list = []
    vanished: list[int] = []  # present before, absent now: a tombstone each, in the history's order
    others: dict[tuple[str, str], int] = {}  # the history's associations absent now (their jobs keep their id)
    get = index.get
    for row in conn.execute(
        f"SELECT a.id, a.account, a.user, a.parent, a.depth, {', '.join('c.' + c for c in _SAMPLE_COLS)} FROM assocs a "
        "LEFT JOIN assoc_current c ON c.assoc_id = a.id WHERE a.cluster = ?",
        [snap.cluster],
    ):
        i = get((row[1], row[2]))
        if i is None:
            others[(row[1], row[2])] = row[0]
            if row[5] == 1:  # present is NOT NULL in assoc_current: NULL here is no row there
                vanished.append(row[0])
            continue
        r = shares[i]
        aid[i] = row[0]
        if row[3] != r.parent or row[4] != r.depth:
            moved.append(i)
        if row[5] is None or row[5:] != _sample_values(r):
            changed[i] = 1
    new = [i for i, a in enumerate(aid) if not a]
    if new or moved:  # the tree paths only when an association is new or has moved
        paths = _row_paths(shares)
        if new:
            top = conn.execute("SELECT coalesce(max(id), 0) FROM assocs").fetchone()[0]
            insert_rows(conn, "INSERT INTO assocs (cluster, account, user, parent, depth, path)", 6, (
                (snap.cluster, shares[i].account, shares[i].user, shares[i].parent, shares[i].depth, paths[i]) for i in new))
            for a, acc, user in conn.execute("SELECT id, account, user FROM assocs WHERE cluster = ? AND id > ?",
                                             [snap.cluster, top]):
                aid[index[(acc, user)]] = a
            for i in new:
                changed[i] = 1
        if moved:
            conn.executemany("UPDATE assocs SET parent = ?, depth = ?, path = ? WHERE id = ?",
                             [(shares[i].parent, shares[i].depth, paths[i], aid[i]) for i in moved])
        del paths
    del new, moved

    def samples():
        """The changed associations' sample rows, then a tombstone for each vanished one: made
        anew for each of the two tables, never all held (a first snapshot changes every row)."""
        for i, r in enumerate(shares):
            if changed[i]:
                yield (aid[i], sid, *_sample_values(r))
        for a in vanished:
            yield (a, sid, 0, *([None] * (len(_SAMPLE_COLS) - 1)))

    width = 2 + len(_SAMPLE_COLS)
    insert_rows(conn, "INSERT INTO assoc_samples", width, samples())
    insert_rows(conn, f"INSERT OR REPLACE INTO assoc_current (assoc_id, snapshot_id, {', '.join(_SAMPLE_COLS)})", width, samples())
    del changed
    for k, i in index.items():  # the key -> row index map becomes key -> id in place (no second map)
        index[k] = aid[i]
    del aid
    index.update(others)
    ids = index

    # sacct's billing of the running jobs, taken as the jobs stream past (they are read once)
    # (one dict keyed by squeue's own job-id strings, its values filled in place: at 220,000
    # running jobs a second map keyed by sacct's strings took ~20 MiB more; issue #31)
    billing: dict[str, int | None] = dict.fromkeys(q.job_id for q in snap.queue if q.state == "RUNNING")
    if snap.jobs:
        # a generator, not a list: at a million jobs the rows are bound one by one, never all held;
        # snap.jobs may be a spool.SacctJobs: then its records come as plain tuples, a list at a
        # time, unpickled from the spool its one parse wrote (JobRecord is a tuple: same indices)
        assoc_id = ids.get
        chunks = snap.jobs.rows_chunks() if hasattr(snap.jobs, "rows_chunks") else (snap.jobs,)

        def rows():
            for chunk in chunks:
                for j in chunk:
                    job_id = j[0]
                    if job_id in billing:
                        billing[job_id] = j[7]
                    # (snapshot, job_id, assoc_id, user, account, partition, qos, state, alloc_cpus,
                    #  billing, nnodes, start, end, elapsed_s) from JobRecord's order
                    yield (sid, job_id, assoc_id((j[2], j[1])), j[1], j[2], j[3], j[4], j[5], j[6], j[7], j[8],
                           j[10], j[11], j[12])

        insert_rows(conn, "INSERT OR REPLACE INTO job_usage", 14, rows())
    if snap.queue:
        occ: dict[str, list[int]] = {}
        for q in snap.queue:
            o = occ.setdefault(q.account, [0, 0, 0, 0, 0, 0])
            if q.state == "RUNNING":
                o[0] += 1
                o[1] += q.cpus
                o[2] += q.nodes
            elif q.state == "PENDING":
                o[3] += 1
                o[4] += q.cpus
                if q.reason.startswith("JobHeld"):
                    o[5] += 1
        insert_rows(conn, "INSERT INTO occupancy", 8, [(sid, a, *v) for a, v in sorted(occ.items())])
        factor = {q.name: q.usage_factor for q in snap.qos}
        insert_rows(conn, "INSERT OR REPLACE INTO running_jobs", 6, (
            (sid, q.job_id, q.account, q.user, float(billing.get(q.job_id) or q.cpus) * factor.get(q.qos, 1.0),
             None if q.start is None or q.time_limit_s is None else q.start + q.time_limit_s)
            for q in snap.queue if q.state == "RUNNING"))
    del billing
    if snap.prio:
        # the accounts of sprio's jobs alone (squeue's may be 10^5 more: slurm.spool keeps both on
        # disk), one string an account; rows bound as they come, never all held (issue #31)
        account_of: dict[str, str | None] = dict.fromkeys(p.job_id for p in snap.prio)  # sprio's strings, filled in place
        one: dict[str, str] = {}
        for q in snap.queue:
            if q.job_id in account_of:
                account_of[q.job_id] = one.setdefault(q.account, q.account)
        insert_rows(conn, "INSERT OR REPLACE INTO prio", 7, (
            (sid, p.job_id, p.user, account_of.get(p.job_id), p.partition, p.priority_norm, p.fairshare_norm)
            for p in snap.prio))
        del account_of
    return sid


def _config_json(cfg: SlurmConfig) -> dict:
    """asdict(cfg) without `raw` (the whole `scontrol show config`, not stored): the fields
    themselves (tuples of str, a dict of int), not deep copies, for json.dumps."""
    return {name: getattr(cfg, name) for name in cfg.__slots__ if name != "raw"}


def record_tick(
    db: Database,
    cluster: str | None,
    started_at: float,
    finished_at: float,
    status: str,
    error: str | None = None,
    snapshot_id: int | None = None,
    stage: str | None = None,
) -> int:
    cur = db.execute(
        "INSERT INTO ticks (cluster, started_at, finished_at, status, error, snapshot_id, stage) VALUES (?,?,?,?,?,?,?)",
        [cluster, started_at, finished_at, status, error, snapshot_id, stage],
    )
    return cur.lastrowid


def last_ok(db: Database, cluster: str, stage: str) -> float | None:
    """When the stage last ran without failing for this cluster (None: never)."""
    return db.execute(  # a tick's stage is one name or several joined by '+' ("control+gate")
        "SELECT max(started_at) FROM ticks WHERE cluster = ? AND instr('+' || stage || '+', ?) > 0 AND status = 'ok'",
        [cluster, f"+{stage}+"],
    ).fetchone()[0]


def tick_stats(db: Database) -> list[dict]:
    """Per cluster and stage: ticks ok and failed, and the last tick's duration (for metrics)."""
    rows = db.execute(
        """SELECT cluster, coalesce(stage, 'collect'), sum(status = 'ok'), sum(status = 'failed'),
                  max(started_at),
                  (SELECT t2.finished_at - t2.started_at FROM ticks t2 WHERE t2.cluster IS t.cluster
                   AND coalesce(t2.stage, 'collect') = coalesce(t.stage, 'collect') ORDER BY t2.id DESC LIMIT 1)
           FROM ticks t GROUP BY 1, 2 ORDER BY 1, 2"""
    ).fetchall()
    return [{"cluster": c, "stage": st, "ok": ok, "failed": bad, "last_at": last, "last_duration_s": dur}
            for c, st, ok, bad, last, dur in rows]


@dataclass(frozen=True, slots=True)
class StoredSnapshot:
    id: int
    cluster: str
    taken_at: float
    config: SlurmConfig
    shares: tuple[ShareRow, ...]
    usage_factors: dict[str, float]
    source: str
    prio_fairshare: dict[tuple[str, str], float] = field(default_factory=dict)  # sprio's F by association (default: none)
    running: tuple = ()  # (job_id, account, user, rate per second, ends_at or None) of the running jobs; default ()
    basis: StatusBasis | None = None  # what status computes from the rows alone, stored with the snapshot (or None)


@dataclass(frozen=True, slots=True)
class StatusBasis:
    """What `status` computes from a classic snapshot's rows alone (report.status.classic_basis),
    aligned with its rows: the NormShares slurmctld holds, their form, the refined EffectvUsage,
    and how many of sprio's factors lag, all at slurmctld's d `damping`. Computed once when the
    snapshot is written (save_status_basis) and read with it (load_snapshot)."""
    damping: float
    held: list[float]
    held_form: str
    refined: list[float | None]
    lagging: int
    sprio: list[float | None]  # sprio's fair-share factor of each row's association (None: no pending job)
    rows: tuple | None = None  # the rows it is aligned with, as read (a snapshot given other rows does not use it)


def save_status_basis(db: Database, cluster: str, sid: int, shares: Sequence[ShareRow], compute) -> None:
    """Keep `compute(rows, prio)` (a StatusBasis) as the status basis of snapshot `sid`, the latest
    of `cluster`, just written from `shares`: `rows` are those rows in the order load_snapshot
    reads them back (the history's order, read from its keys alone: the rows are not read again),
    `prio` sprio's factors as it reads them. One row a cluster (the latest snapshot's replaces the
    one before). None kept where the history has no table for it (an older schema opened as it
    is), where `sid` is no longer the latest, or where compute gives None."""
    if not _has_table(db, "status_basis") or latest_snapshot_id(db, cluster) != sid:
        return
    at = {(r.account, r.user): r for r in shares}
    try:
        rows = tuple(at[k] for k in db.execute(
            """SELECT a.account, a.user FROM assocs a JOIN assoc_current s ON s.assoc_id = a.id
               WHERE a.cluster = ? AND s.present = 1 AND s.snapshot_id <= ? ORDER BY a.path""", [cluster, sid]))
    except KeyError:  # not the rows just written
        return
    del at
    if len(rows) != len(shares):
        return
    basis = compute(rows, prio_fairshare_of(db, sid))
    if basis is None:
        return
    db.execute("INSERT OR REPLACE INTO status_basis VALUES (?,?,?,?,?,?,?,?,?)", [
        cluster, sid, float(basis.damping), basis.held_form, basis.lagging,
        array("q", [r.raw_usage for r in rows]).tobytes(), array("d", basis.held).tobytes(),
        _doubles(basis.refined), _doubles(basis.sprio)])


def _doubles(values: list[float | None]) -> bytes:
    return array("d", [_NO_VALUE if v is None else v for v in values]).tobytes()


def _values(blob: bytes) -> list[float | None]:
    out = array("d", blob).tolist()
    return [None if v != v else v for v in out] if any(v != v for v in out) else out


def prio_fairshare_of(db: Database, sid: int) -> dict[tuple[str, str], float]:
    """sprio's fair-share factor of a snapshot's pending jobs by (account, user) (the last row of each)."""
    return {(account, user): f for account, user, f in db.execute(
        "SELECT account, user, fairshare_norm FROM prio WHERE snapshot_id = ? AND account IS NOT NULL", [sid])}


_NO_VALUE = float("nan")  # a refined EffectvUsage of None (no print to refine) as stored


def _has_table(db: Database, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [name]).fetchone() is not None


def _status_basis(db: Database, cluster: str, sid: int, shares: tuple[ShareRow, ...]) -> StatusBasis | None:
    """The stored basis of snapshot `sid`, if it is there and holds these rows (the same count and
    RawUsage in the same order); else None (the reader computes it)."""
    if not _has_table(db, "status_basis"):
        return None
    try:
        row = db.execute("SELECT damping, held_form, lagging, raw_usage, held, refined, sprio FROM status_basis "
                         "WHERE cluster = ? AND snapshot_id = ?", [cluster, sid]).fetchone()
    except sqlite3.OperationalError:  # a table of another shape (a development build's): computed instead
        return None
    if row is None:
        return None
    d, form, lagging, raw, held, refined, sprio = row
    if len(raw) != 8 * len(shares) or array("q", raw) != array("q", [r.raw_usage for r in shares]):
        return None
    return StatusBasis(d, array("d", held).tolist(), form, _values(refined), lagging, _values(sprio), shares)


def clusters(db: Database) -> list[str]:
    return [r[0] for r in db.execute("SELECT DISTINCT cluster FROM snapshots ORDER BY cluster").fetchall()]


def has_cluster(db: Database, cluster: str) -> bool:
    """Whether the history holds anything of `cluster`: a snapshot, a decision or a tick."""
    return any(db.execute(f"SELECT 1 FROM {table} WHERE cluster = ? LIMIT 1", [cluster]).fetchone()
               for table in ("snapshots", "decisions", "ticks"))


def latest_snapshot_id(db: Database, cluster: str | None = None) -> int | None:
    if cluster:
        row = db.execute("SELECT max(id) FROM snapshots WHERE cluster = ?", [cluster]).fetchone()
    else:
        row = db.execute("SELECT max(id) FROM snapshots").fetchone()
    return row[0] if row else None


def previous_snapshot_time(db: Database, cluster: str) -> float | None:
    row = db.execute("SELECT max(taken_at) FROM snapshots WHERE cluster = ?", [cluster]).fetchone()
    return row[0] if row else None


def _config_from_json(blob: dict) -> SlurmConfig:
    c = blob["config"]
    return SlurmConfig(**{**c, "priority_flags": tuple(c["priority_flags"]), "private_data": tuple(c["private_data"]),
                          "enforce": tuple(c["enforce"])})


def latest_config(db: Database, cluster: str) -> SlurmConfig:
    """The Slurm configuration stored with the latest snapshot of a cluster (load_snapshot's
    .config without reading the snapshot's associations)."""
    snapshot_id = latest_snapshot_id(db, cluster)
    if snapshot_id is None:
        raise NotFoundError(f"no snapshot in the history for cluster {cluster}: run `fscontrol collect` first")
    (cfg_json,) = db.execute("SELECT config_json FROM snapshots WHERE id = ?", [snapshot_id]).fetchone()
    return _config_from_json(json.loads(cfg_json))


_SHARE_COLS = ", ".join(("a." if f in ("account", "user", "parent", "depth") else "s.") + f
                        for f in ShareRow._fields)  # ShareRow's fields, in its order


def _share_values(db: Database, cluster: str, snapshot_id: int, latest: bool) -> list[tuple]:
    """A snapshot's association rows in tree order, as tuples in ShareRow's field order. The
    latest snapshot of a cluster (what the reports read) is assoc_current as it stands: no
    look-up of each association's latest sample (`latest`: the caller knows it is)."""
    cols = _SHARE_COLS
    if latest:
        return db.execute(
            f"""SELECT {cols} FROM assocs a JOIN assoc_current s ON s.assoc_id = a.id
                WHERE a.cluster = ? AND s.present = 1 AND s.snapshot_id <= ? ORDER BY a.path""",
            [cluster, snapshot_id],
        ).fetchall()
    return db.execute(
        f"""SELECT {cols}
            FROM assocs a JOIN assoc_samples s ON s.assoc_id = a.id
            WHERE a.cluster = ?
              AND s.snapshot_id = (SELECT max(snapshot_id) FROM assoc_samples
                                   WHERE assoc_id = a.id AND snapshot_id <= ?)
              AND s.present = 1
            ORDER BY a.path""",
        [cluster, snapshot_id],
    ).fetchall()


def latest_usage_values(db: Database, cluster: str) -> tuple[int | None, list[tuple]]:
    """(the cluster's latest snapshot id, usage_values of it), read from assoc_current: no look-up
    of each association's latest sample. Read before a new snapshot is written, it is the
    snapshot before that one (assoc_current then holds its values). Both reads in one read
    transaction (one view of the history, whatever another process commits meanwhile); called
    outside the tick's write transaction, so that one still begins with its first write."""
    with transaction(db):
        sid = latest_snapshot_id(db, cluster)
        if sid is None:
            return None, []
        return sid, db.execute(
            """SELECT a.account, a.user, a.depth, c.raw_usage, c.effective_usage
                FROM assocs a JOIN assoc_current c ON c.assoc_id = a.id
                WHERE a.cluster = ? AND c.present = 1""",
            [cluster],
        ).fetchall()


def usage_values(db: Database, cluster: str, snapshot_id: int) -> list[tuple]:
    """(account, user, depth, raw_usage, effective_usage) of each association of a snapshot: the
    rows _share_values(latest=False) reads, five of their columns, in no particular order."""
    return db.execute(
        """SELECT a.account, a.user, a.depth, s.raw_usage, s.effective_usage
            FROM assocs a JOIN assoc_samples s ON s.assoc_id = a.id
            WHERE a.cluster = ?
              AND s.snapshot_id = (SELECT max(snapshot_id) FROM assoc_samples
                                   WHERE assoc_id = a.id AND snapshot_id <= ?)
              AND s.present = 1""",
        [cluster, snapshot_id],
    ).fetchall()


def load_snapshot(db: Database, snapshot_id: int | None = None, cluster: str | None = None,
                  running: bool = True, prio: bool = True) -> StoredSnapshot:
    """A stored snapshot with its association rows in tree order (latest if no id). `running`
    False: without its running jobs (`status` reads none: at 220,000 running jobs they were a
    tenth of `status --json`'s CPU; issue #31). `prio` False: sprio's factors by association left
    out (prio_fairshare empty) where the stored basis holds each row's: for report.status.status_of,
    which reads them where it does not use the basis (at another d)."""
    if snapshot_id is None:
        snapshot_id = latest_snapshot_id(db, cluster)
        if snapshot_id is None:
            where = f" for cluster {cluster}" if cluster else ""
            raise NotFoundError(f"no snapshot in the history{where}: run `fscontrol collect` first")
    row = db.execute(
        "SELECT id, cluster, taken_at, config_json, source FROM snapshots WHERE id = ?", [snapshot_id]
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no snapshot {snapshot_id}")
    sid, cl, taken_at, cfg_json, source = row
    blob = json.loads(cfg_json)
    cfg = _config_from_json(blob)
    shares = share_rows(_share_values(db, cl, sid, latest=sid == latest_snapshot_id(db, cl)))
    basis = _status_basis(db, cl, sid, shares) if cfg.mode != "fair_tree" else None
    # `prio` False: sprio's factors by association not read where the basis holds each row's (at
    # 1M jobs, 135,000 sprio rows were a tenth of `status --json`); prio_fairshare is then empty
    factors = prio_fairshare_of(db, sid) if prio or basis is None else {}
    jobs = _running_jobs(db, sid) if running else ()
    return StoredSnapshot(
        id=sid,
        cluster=cl,
        taken_at=taken_at,
        config=cfg,
        shares=shares,
        usage_factors=blob.get("qos", {}),
        source=source,
        prio_fairshare=factors,
        running=jobs,
        basis=basis,
    )


def _running_jobs(db: Database, sid: int) -> tuple[tuple, ...]:
    """A snapshot's running jobs (job_id, account, user, rate, ends_at) by job id, each account and
    user name one string shared by its jobs (sqlite makes one a row: at 220,000 running jobs ~24 MiB
    of `publish`'s peak; issue #31)."""
    names: dict[str, str] = {}
    name = names.setdefault
    return tuple((j, name(a, a), name(u, u), rate, end) for j, a, u, rate, end in db.execute(
        "SELECT job_id, account, user, rate, ends_at FROM running_jobs WHERE snapshot_id = ? ORDER BY job_id", [sid]))


UsageHistory.__doc__ = """A cluster's user associations over its snapshots, as numpy arrays (see usage_history).
    (A named tuple: built at import in 0.05 ms where a frozen dataclass takes 0.4, and only the
    fit makes one.)"""


JobCharges.__doc__ = """The charged jobs of a range of snapshots (read_job_charges), as numpy arrays in the order
    SQLite returns them: the jobs with an association id, then those without (by name)."""


def snapshot_ids(db: Database, cluster: str) -> list[int]:
    return [r[0] for r in db.execute("SELECT id FROM snapshots WHERE cluster = ? ORDER BY id", [cluster])]


def update_tick(db: Database, tick_id: int, status: str, finished_at: float, error: str | None = None) -> None:
    db.execute("UPDATE ticks SET status = ?, finished_at = ?, error = ? WHERE id = ?", [status, finished_at, error, tick_id])


def fail_running_ticks(db: Database, cluster: str, error: str) -> None:
    """Mark the cluster's ticks still 'running' failed, with `error` (a tick killed mid-run)."""
    db.execute("UPDATE ticks SET status = 'failed', error = ? WHERE cluster = ? AND status = 'running'", [error, cluster])


def last_fit_time(db: Database, cluster: str) -> float | None:
    """When the cluster's decay was last fitted, None when never."""
    return db.execute("SELECT max(fitted_at) FROM fits WHERE cluster = ?", [cluster]).fetchone()[0]


def history(db: Database, cluster: str, since: float, until: float) -> dict:
    """The agent's record of a cluster over [since, until]: every decision (with the halving it
    aimed at and the one Slurm used), the actions by stage, kind and status (the failed and
    unknown ones in full), and the ticks by stage and status (the failed ones with their error)."""
    cur = db.execute(
        """SELECT decided_at, method, apply, advise_only, u_star, d_now, d_target, w_now, w_target, h_now, h_planned,
                  h_slurm FROM decisions WHERE cluster = ? AND decided_at BETWEEN ? AND ? ORDER BY id""",
        [cluster, since, until])
    cols = [c[0] for c in cur.description]
    decisions = [dict(zip(cols, r)) for r in cur.fetchall()]
    actions = [dict(zip(("stage", "kind", "status", "n"), r)) for r in db.execute(
        """SELECT stage, kind, status, count(*) FROM actions WHERE cluster = ? AND planned_at BETWEEN ? AND ?
           GROUP BY stage, kind, status ORDER BY stage, kind, status""", [cluster, since, until])]
    bad_actions = [dict(zip(("planned_at", "stage", "kind", "status", "reason", "output"), r)) for r in db.execute(
        """SELECT planned_at, stage, kind, status, reason, output FROM actions WHERE cluster = ? AND planned_at BETWEEN ? AND ?
           AND status IN ('failed', 'unknown', 'not_done') ORDER BY id""", [cluster, since, until])]
    ticks = [dict(zip(("stage", "status", "n"), r)) for r in db.execute(
        """SELECT coalesce(stage, 'collect'), status, count(*) FROM ticks WHERE cluster = ? AND started_at BETWEEN ? AND ?
           GROUP BY 1, 2 ORDER BY 1, 2""", [cluster, since, until])]
    failed = [dict(zip(("started_at", "stage", "error"), r)) for r in db.execute(
        """SELECT started_at, coalesce(stage, 'collect'), error FROM ticks WHERE cluster = ? AND started_at BETWEEN ? AND ?
           AND status = 'failed' ORDER BY id""", [cluster, since, until])]
    return {"decisions": decisions, "actions": actions, "failed_actions": bad_actions, "ticks": ticks, "failed_ticks": failed}
