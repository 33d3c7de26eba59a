"""The history: SQLite, with numbered migrations (sqlite-utils' Migrations) and one transaction a tick.

Associations cost little when they do not change: `assoc_samples` holds a row only when an
association's values changed since its previous sample (or it appeared or vanished), and
`assoc_current` keeps the latest values so a tick compares without scanning history. A snapshot's
rows are the latest sample at or before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from collections import namedtuple

from fscontrol.errors import NotFoundError, StoreError
from fscontrol.slurm.parse import gc_paused
from fscontrol.store.connection import Database
from fscontrol.records import ShareRow, Snapshot, SlurmConfig, share_rows

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: records says why)
if TYPE_CHECKING:  # the migrations get a real one; every other function here takes a historydb.Database
    import sqlite_utils

# ---------------------------------------------------------------------------- migrations
Migration = Callable[["sqlite_utils.Database"], None]


def _m001_history(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE snapshots (
            id INTEGER PRIMARY KEY,
            cluster TEXT NOT NULL,
            taken_at REAL NOT NULL,
            slurm_version TEXT,
            priority_mode TEXT,
            priority_flags TEXT,
            damping_factor INTEGER,
            half_life_s INTEGER,
            calc_period_s INTEGER,
            usage_reset_period TEXT,
            private_data TEXT,
            enforce TEXT,
            total_raw_usage INTEGER,
            n_users INTEGER,
            n_active_users INTEGER,
            window_start REAL,
            window_end REAL,
            source TEXT,
            config_json TEXT
        )"""
    )
    db.execute("CREATE INDEX snapshots_cluster_time ON snapshots(cluster, taken_at)")
    db.execute(
        """CREATE TABLE assocs (
            id INTEGER PRIMARY KEY,
            cluster TEXT NOT NULL,
            account TEXT NOT NULL,
            user TEXT NOT NULL,
            parent TEXT NOT NULL,
            depth INTEGER NOT NULL,
            path TEXT NOT NULL,
            UNIQUE (cluster, account, user)
        )"""
    )
    # one row per association per change; WITHOUT ROWID keeps it to the key plus values
    db.execute(
        """CREATE TABLE assoc_samples (
            assoc_id INTEGER NOT NULL,
            snapshot_id INTEGER NOT NULL,
            present INTEGER NOT NULL,
            raw_shares INTEGER,
            shares_parent INTEGER,
            norm_shares REAL,
            raw_usage INTEGER,
            norm_usage REAL,
            effective_usage REAL,
            fairshare REAL,
            billing_run_mins INTEGER,
            PRIMARY KEY (assoc_id, snapshot_id)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE assoc_current (
            assoc_id INTEGER PRIMARY KEY,
            snapshot_id INTEGER NOT NULL,
            present INTEGER NOT NULL,
            raw_shares INTEGER,
            shares_parent INTEGER,
            norm_shares REAL,
            raw_usage INTEGER,
            norm_usage REAL,
            effective_usage REAL,
            fairshare REAL,
            billing_run_mins INTEGER
        )"""
    )
    # what each job was charged-for inside the sacct window that ends at this snapshot
    db.execute(
        """CREATE TABLE job_usage (
            snapshot_id INTEGER NOT NULL,
            job_id TEXT NOT NULL,
            assoc_id INTEGER,
            user TEXT NOT NULL,
            account TEXT NOT NULL,
            partition TEXT,
            qos TEXT,
            state TEXT,
            alloc_cpus INTEGER,
            billing INTEGER,
            nnodes INTEGER,
            start REAL,
            end REAL,
            elapsed_s REAL,
            PRIMARY KEY (snapshot_id, job_id)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE prio (
            snapshot_id INTEGER NOT NULL,
            job_id TEXT NOT NULL,
            user TEXT,
            account TEXT,
            partition TEXT,
            priority_norm REAL,
            fairshare_norm REAL,
            PRIMARY KEY (snapshot_id, job_id)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE occupancy (
            snapshot_id INTEGER NOT NULL,
            account TEXT NOT NULL,
            running_jobs INTEGER,
            running_cpus INTEGER,
            running_nodes INTEGER,
            pending_jobs INTEGER,
            pending_cpus INTEGER,
            held_jobs INTEGER,
            PRIMARY KEY (snapshot_id, account)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE ticks (
            id INTEGER PRIMARY KEY,
            cluster TEXT,
            started_at REAL NOT NULL,
            finished_at REAL,
            status TEXT NOT NULL,
            error TEXT,
            snapshot_id INTEGER
        )"""
    )


def _m002_fits(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE fits (
            id INTEGER PRIMARY KEY,
            cluster TEXT NOT NULL,
            fitted_at REAL NOT NULL,
            first_snapshot INTEGER,
            last_snapshot INTEGER,
            lam REAL,
            half_life_s REAL,
            half_life_se_s REAL,
            configured_half_life_s REAL,
            expected_half_life_s REAL,
            drift REAL,
            drifted INTEGER,
            n_residuals INTEGER,
            n_breaks INTEGER,
            n_outliers INTEGER,
            converged INTEGER
        )"""
    )


def _m003_control(db: sqlite_utils.Database) -> None:
    # every decision with its inputs; h_measured is filled in by the next tick (the effect)
    db.execute(
        """CREATE TABLE decisions (
            id INTEGER PRIMARY KEY,
            cluster TEXT NOT NULL,
            snapshot_id INTEGER NOT NULL,
            decided_at REAL NOT NULL,
            method TEXT NOT NULL,
            apply INTEGER NOT NULL,
            advise_only INTEGER NOT NULL,
            u_star REAL,
            s_ref REAL,
            u_real REAL,
            u_real_next REAL,
            w_now REAL,
            w_target REAL,
            d_now INTEGER,
            d_target INTEGER,
            d_ideal REAL,
            usage_factor REAL,
            pulse_usage_factor REAL,
            h_now REAL,
            h_planned REAL,
            bound REAL,
            h_measured REAL,
            notes TEXT
        )"""
    )
    db.execute("CREATE INDEX decisions_cluster ON decisions(cluster, id)")
    db.execute(
        """CREATE TABLE actions (
            id INTEGER PRIMARY KEY,
            decision_id INTEGER,
            cluster TEXT NOT NULL,
            stage TEXT NOT NULL,
            kind TEXT NOT NULL,
            argv TEXT NOT NULL,
            reason TEXT NOT NULL,
            job_id TEXT,
            status TEXT NOT NULL,
            output TEXT,
            planned_at REAL NOT NULL,
            done_at REAL
        )"""
    )


def _m004_gate_ledger(db: sqlite_utils.Database) -> None:
    # the jobs the agent itself holds or demoted: it releases only these (scontrol hold records
    # no owner); every hold/release is also in `actions` (stage 'gate') with its reason
    db.execute(
        """CREATE TABLE gate_ledger (
            cluster TEXT NOT NULL,
            job_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            restore_nice INTEGER NOT NULL,
            placed_at REAL NOT NULL,
            reason TEXT,
            PRIMARY KEY (cluster, job_id)
        )"""
    )


def _m005_tick_stage(db: sqlite_utils.Database) -> None:
    # which stage a tick ran (collect, control, gate), so the loop and cron know what is due and
    # the metrics can count failures per stage
    db["ticks"].add_column("stage", str)
    db["ticks"].create_index(["cluster", "stage", "started_at"], index_name="ticks_cluster_stage")


def _m006_tick_story(db: sqlite_utils.Database) -> None:
    # one tick, one story: a ledger row is written with the intent (state 'holding'/'releasing')
    # before the command runs and settled against Slurm's marks by the next tick; actions of an
    # applying tick are 'pending' until their outcome is known ('ok', 'failed', 'unknown' when a
    # command timed out, then 'ok'/'not_done' once reconciled); a tick is 'running' until it ends
    db["gate_ledger"].add_column("state", str, not_null_default="held")
    db["gate_ledger"].add_column("set_nice", int)
    db["actions"].add_column("tick_id", int)
    db["actions"].create_index(["cluster", "status"], index_name="actions_open")
    # what Slurm held before the agent first changed it (the first value wins), for `control off`
    db.execute("""CREATE TABLE originals (cluster TEXT NOT NULL, what TEXT NOT NULL, value TEXT,
                  recorded_at REAL NOT NULL, PRIMARY KEY (cluster, what))""")
    # what runs at each snapshot, for the forecast of users whose account-mates keep running:
    # rate = billing x the QOS UsageFactor, per second; ends_at = start + time limit (NULL: none)
    # (WITHOUT ROWID: sqlite-utils' create() has no such option)
    db.execute("""CREATE TABLE running_jobs (snapshot_id INTEGER NOT NULL, job_id TEXT NOT NULL, account TEXT NOT NULL,
                  user TEXT NOT NULL, rate REAL NOT NULL, ends_at REAL, PRIMARY KEY (snapshot_id, job_id)) WITHOUT ROWID""")
    # the halving Slurm itself used at the decay pass after a decision: S_ref x the d in force x
    # the total usage the pass started from (EffectvUsage lags RawUsage by one pass), and when
    db["decisions"].add_column("h_slurm", float)
    db["decisions"].add_column("pass_seen_at", float)
    # the agent's own switches per cluster: control_off (set by `fscontrol control off`)
    db.execute("""CREATE TABLE agent_state (cluster TEXT NOT NULL, key TEXT NOT NULL, value TEXT,
                  set_at REAL NOT NULL, PRIMARY KEY (cluster, key))""")


def _m007_level_fs(db: sqlite_utils.Database) -> None:
    # sshare's LevelFS: slurmctld's own Fair Tree value (6 decimals). RawUsage is printed truncated
    # to an integer, so two siblings slurmctld holds exactly tied (e.g. jobs sized to their shares,
    # started in the same second) look a unit apart in it; the printed LevelFS shows the tie
    # (fairtree.ranking_keys)
    for table in ("assoc_samples", "assoc_current"):
        db[table].add_column("level_fs", float)


def _m008_usage_at(db: sqlite_utils.Database) -> None:
    # when the decay pass whose RawUsage a snapshot holds ran (slurmctld's priority_last_decay_ran,
    # readable by root or SlurmUser on the controller's host), NULL where it could not be read:
    # RawUsage moves only at passes, so the fit times the usage by its pass, not by the snapshot
    db["snapshots"].add_column("usage_at", float)


# The schema's migrations, in order: sqlite-utils' own migration sets (sqlite_utils.migrations,
# the `_sqlite_migrations` table) apply them, each in one transaction with the record of it. The
# names are also read here without sqlite-utils (applied_migrations): it is imported only when one
# is pending (its import pulls numpy and pluggy: store.connection says why that matters).
MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_history", _m001_history),
    ("002_fits", _m002_fits),
    ("003_control", _m003_control),
    ("004_gate_ledger", _m004_gate_ledger),
    ("005_tick_stage", _m005_tick_stage),
    ("006_tick_story", _m006_tick_story),
    ("007_level_fs", _m007_level_fs),
    ("008_usage_at", _m008_usage_at),
]
SCHEMA_VERSION = len(MIGRATIONS)
MIGRATION_SET = "fscontrol"  # the migration_set of our rows in _sqlite_migrations
# Before sqlite-utils kept them, fscontrol recorded its migrations in its own `_migrations` table.
# A history that has one is carried over once (its rows copied into _sqlite_migrations) and keeps
# it with this row added, which an older fscontrol reads as a migration it does not know: it then
# refuses the history ("newer version?") instead of migrating it again. A new history gets the
# same table with only this row, for the same reason.
LEGACY_TABLE = "_migrations"
LEGACY_MOVED = "009_moved_to__sqlite_migrations"


def _migration_set():
    """sqlite_utils.migrations.Migrations holding MIGRATIONS (imports sqlite-utils)."""
    from sqlite_utils.migrations import Migrations

    migrations = Migrations(MIGRATION_SET)
    for name, fn in MIGRATIONS:
        migrations(name=name)(fn)
    return migrations


def _table_exists(db, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [name]).fetchone() is not None


def applied_migrations(db) -> tuple[set[str], set[str] | None]:
    """(names in _sqlite_migrations for our set, names in the legacy _migrations table or None when
    there is none); read with plain SQL, no sqlite-utils."""
    done = set()
    if _table_exists(db, "_sqlite_migrations"):
        done = {r[0] for r in db.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = ?", [MIGRATION_SET])}
    legacy = {r[0] for r in db.execute(f"SELECT name FROM {LEGACY_TABLE}")} if _table_exists(db, LEGACY_TABLE) else None
    return done, legacy


def migrate(db: sqlite_utils.Database) -> list[str]:
    """Apply the migrations not yet applied (sqlite-utils' Migrations, each in its own transaction);
    a history with the legacy _migrations table is carried over first. Returns the names applied."""
    done, legacy = applied_migrations(db)
    known = {name for name, _ in MIGRATIONS}
    unknown = (done | (legacy or set())) - known - {LEGACY_MOVED}
    if unknown:
        raise StoreError(f"database has migrations this fscontrol does not know: {sorted(unknown)} (newer version?)")
    if known <= done and legacy is not None and LEGACY_MOVED in legacy:
        return []
    import sqlite_utils  # only now: a migration (or the carry-over) is pending

    sdb = sqlite_utils.Database(db.conn)
    migrations = _migration_set()
    # One process migrates: the write lock is taken first (BEGIN IMMEDIATE; another process opening
    # the same history waits for it, up to the busy timeout) and what is applied is read again under
    # it, so a second opener finds nothing left to do instead of creating the tables twice. Each
    # migration is a savepoint inside this one transaction (sqlite-utils' atomic() nests).
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        done, legacy = applied_migrations(db)
        migrations.ensure_migrations_table(sdb)
        if legacy is None:  # the tombstone for older fscontrols
            sdb.execute(f"CREATE TABLE {LEGACY_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT)")
        elif LEGACY_MOVED not in legacy:  # the carry-over of a legacy history
            sdb.execute("INSERT OR IGNORE INTO _sqlite_migrations (migration_set, name, applied_at) "
                        f"SELECT ?, name, applied_at FROM {LEGACY_TABLE}", [MIGRATION_SET])
        sdb.execute(f"INSERT OR IGNORE INTO {LEGACY_TABLE} VALUES (?, datetime('now'))", [LEGACY_MOVED])
        pending = [m.name for m in migrations.pending(sdb)]
        migrations.apply(sdb)
        db.conn.execute("COMMIT")
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    return pending


# ---------------------------------------------------------------------------- opening
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


def open_db(path: Path | str, *, create: bool = True, timeout_s: float = 10.0, readonly: bool = False) -> sqlite_utils.Database:
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


def _open_readonly(path: Path, timeout_s: float) -> sqlite_utils.Database:
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
    if set(known) - names:
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


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """One transaction; a lock or I/O error inside it becomes a StoreError, nothing half-written."""
    try:
        with db.atomic():
            yield db
    except sqlite3.OperationalError as e:
        path = next((f for _, name, f in db.execute("PRAGMA database_list") if name == "main"), "?")
        if "locked" in str(e) or "busy" in str(e):
            raise StoreError(f"history database {path} is locked by another process, nothing was written ({e})") from None
        if "full" in str(e) or (path != "?" and _disk_full(Path(path))):
            raise StoreError(f"history database {path}: no space left on its file system, nothing was written ({e})") from None
        raise StoreError(f"history database {path}: write failed, nothing was written: {e}") from None


# ---------------------------------------------------------------------------- writing
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


def write_snapshot(db: sqlite_utils.Database, snap: Snapshot, source: str = "") -> int:
    """Write one snapshot and all it carries. The caller holds the transaction."""
    with gc_paused():  # a tick holds the parsed snapshot: collections would re-scan it all
        return _write_snapshot(db, snap, source)


def _write_snapshot(db: sqlite_utils.Database, snap: Snapshot, source: str) -> int:
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

    # associations: ids and the latest values (one read of both), then change-only samples
    ids = {}
    current = {}
    for row in conn.execute(
        f"SELECT a.id, a.account, a.user, a.parent, a.depth, {', '.join('c.' + c for c in _SAMPLE_COLS)} FROM assocs a "
        "LEFT JOIN assoc_current c ON c.assoc_id = a.id WHERE a.cluster = ?",
        [snap.cluster],
    ):
        aid = row[0]
        ids[(row[1], row[2])] = (aid, row[3], row[4])
        if row[5] is not None:  # present is NOT NULL in assoc_current: NULL here is no row there
            current[aid] = row[5:]
    # (account, user) built once per row: at 100k associations the `key` property adds up
    keyed = [((r.account, r.user), r) for r in snap.shares]
    new_assocs = []
    moved = []
    for k, r in keyed:
        known = ids.get(k)
        if known is None:
            new_assocs.append((k, r))
        elif (known[1], known[2]) != (r.parent, r.depth):
            moved.append((k, r))
    if new_assocs or moved:  # the tree paths only when an association is new or has moved
        paths = _paths(snap.shares)
        new_assocs = [(snap.cluster, r.account, r.user, r.parent, r.depth, paths[k]) for k, r in new_assocs]
        moved = [(r.parent, r.depth, paths[k], ids[k][0]) for k, r in moved]
    if new_assocs:
        insert_rows(conn, "INSERT INTO assocs (cluster, account, user, parent, depth, path)", 6, new_assocs)
        ids = {
            (a, u): (i, p, d)
            for i, a, u, p, d in conn.execute(
                "SELECT id, account, user, parent, depth FROM assocs WHERE cluster = ?", [snap.cluster]
            )
        }
    if moved:
        conn.executemany("UPDATE assocs SET parent = ?, depth = ?, path = ? WHERE id = ?", moved)
    changed = []
    seen = set()
    get = current.get
    for k, r in keyed:
        aid = ids[k][0]
        seen.add(aid)
        vals = (1, r.raw_shares, int(r.shares_parent), r.norm_shares, r.raw_usage, r.norm_usage, r.effective_usage,
                r.fairshare, r.billing_run_mins, r.level_fs)  # in _SAMPLE_COLS' order
        if get(aid) != vals:
            changed.append((aid, sid, *vals))
    for aid, vals in current.items():
        if aid not in seen and vals[0] == 1:  # vanished: a tombstone sample
            changed.append((aid, sid, 0, *([None] * (len(_SAMPLE_COLS) - 1))))
    if changed:
        ph = ",".join("?" * (2 + len(_SAMPLE_COLS)))
        width = 2 + len(_SAMPLE_COLS)
        insert_rows(conn, "INSERT INTO assoc_samples", width, changed)
        insert_rows(conn, f"INSERT OR REPLACE INTO assoc_current (assoc_id, snapshot_id, {', '.join(_SAMPLE_COLS)})", width, changed)

    # sacct's billing of the running jobs, taken as the jobs stream past (they are read once)
    running_ids = {q.job_id for q in snap.queue if q.state == "RUNNING"}
    billing: dict[str, int] = {}
    if snap.jobs:
        # a generator, not a list: at a million jobs the rows are bound one by one, never all held;
        # snap.jobs may be a spool.SacctJobs: then its records come as plain tuples, a list at a
        # time, unpickled from the spool its one parse wrote (JobRecord is a tuple: same indices)
        assoc_id = {key: v[0] for key, v in ids.items()}.get
        chunks = snap.jobs.rows_chunks() if hasattr(snap.jobs, "rows_chunks") else (snap.jobs,)

        def rows():
            for chunk in chunks:
                for j in chunk:
                    job_id = j[0]
                    if job_id in running_ids:
                        billing[job_id] = j[7]
                    # (snapshot, job_id, assoc_id, user, account, partition, qos, state, alloc_cpus,
                    #  billing, nnodes, start, end, elapsed_s) from JobRecord's order
                    yield (sid, job_id, assoc_id((j[2], j[1])), j[1], j[2], j[3], j[4], j[5], j[6], j[7], j[8],
                           j[10], j[11], j[12])

        insert_rows(conn, "INSERT OR REPLACE INTO job_usage", 14, rows())
    if snap.prio:
        account_of = {q.job_id: q.account for q in snap.queue}
        insert_rows(conn, "INSERT OR REPLACE INTO prio", 7, [
            (sid, p.job_id, p.user, account_of.get(p.job_id), p.partition, p.priority_norm, p.fairshare_norm)
            for p in snap.prio])
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
        insert_rows(conn, "INSERT OR REPLACE INTO running_jobs", 6, [
            (sid, q.job_id, q.account, q.user, float(billing.get(q.job_id) or q.cpus) * factor.get(q.qos, 1.0),
             None if q.start is None or q.time_limit_s is None else q.start + q.time_limit_s)
            for q in snap.queue if q.state == "RUNNING"])
    return sid


def _config_json(cfg: SlurmConfig) -> dict:
    """asdict(cfg) without `raw` (the whole `scontrol show config`, not stored): the fields
    themselves (tuples of str, a dict of int), not deep copies, for json.dumps."""
    return {name: getattr(cfg, name) for name in cfg.__slots__ if name != "raw"}


def record_tick(
    db: sqlite_utils.Database,
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


def last_ok(db: sqlite_utils.Database, cluster: str, stage: str) -> float | None:
    """When the stage last ran without failing for this cluster (None: never)."""
    return db.execute(  # a tick's stage is one name or several joined by '+' ("control+gate")
        "SELECT max(started_at) FROM ticks WHERE cluster = ? AND instr('+' || stage || '+', ?) > 0 AND status = 'ok'",
        [cluster, f"+{stage}+"],
    ).fetchone()[0]


def tick_stats(db: sqlite_utils.Database) -> list[dict]:
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


# ---------------------------------------------------------------------------- reading
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


def clusters(db: sqlite_utils.Database) -> list[str]:
    return [r[0] for r in db.execute("SELECT DISTINCT cluster FROM snapshots ORDER BY cluster").fetchall()]


def latest_snapshot_id(db: sqlite_utils.Database, cluster: str | None = None) -> int | None:
    if cluster:
        row = db.execute("SELECT max(id) FROM snapshots WHERE cluster = ?", [cluster]).fetchone()
    else:
        row = db.execute("SELECT max(id) FROM snapshots").fetchone()
    return row[0] if row else None


def previous_snapshot_time(db: sqlite_utils.Database, cluster: str) -> float | None:
    row = db.execute("SELECT max(taken_at) FROM snapshots WHERE cluster = ?", [cluster]).fetchone()
    return row[0] if row else None


def _config_from_json(blob: dict) -> SlurmConfig:
    c = blob["config"]
    return SlurmConfig(**{**c, "priority_flags": tuple(c["priority_flags"]), "private_data": tuple(c["private_data"]),
                          "enforce": tuple(c["enforce"])})


def latest_config(db: sqlite_utils.Database, cluster: str) -> SlurmConfig:
    """The Slurm configuration stored with the latest snapshot of a cluster (load_snapshot's
    .config without reading the snapshot's associations)."""
    snapshot_id = latest_snapshot_id(db, cluster)
    if snapshot_id is None:
        raise NotFoundError(f"no snapshot in the history for cluster {cluster}: run `fscontrol collect` first")
    (cfg_json,) = db.execute("SELECT config_json FROM snapshots WHERE id = ?", [snapshot_id]).fetchone()
    return _config_from_json(json.loads(cfg_json))


_SHARE_COLS = ", ".join(("a." if f in ("account", "user", "parent", "depth") else "s.") + f
                        for f in ShareRow.__slots__)  # ShareRow's fields, in its order


def _share_values(db: sqlite_utils.Database, cluster: str, snapshot_id: int, latest: bool) -> list[tuple]:
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


def latest_usage_values(db: sqlite_utils.Database, cluster: str) -> tuple[int | None, list[tuple]]:
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


def usage_values(db: sqlite_utils.Database, cluster: str, snapshot_id: int) -> list[tuple]:
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


def load_snapshot(db: sqlite_utils.Database, snapshot_id: int | None = None, cluster: str | None = None) -> StoredSnapshot:
    """A stored snapshot with its association rows in tree order (latest if no id)."""
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
    prio = {
        (account, user): f
        for account, user, f in db.execute(
            "SELECT account, user, fairshare_norm FROM prio WHERE snapshot_id = ? AND account IS NOT NULL", [sid]
        )
    }
    running = tuple(db.execute("SELECT job_id, account, user, rate, ends_at FROM running_jobs WHERE snapshot_id = ? "
                               "ORDER BY job_id", [sid]).fetchall())
    return StoredSnapshot(
        id=sid,
        cluster=cl,
        taken_at=taken_at,
        config=cfg,
        shares=shares,
        usage_factors=blob.get("qos", {}),
        source=source,
        prio_fairshare=prio,
        running=running,
    )


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
UsageHistory.__doc__ = """A cluster's user associations over its snapshots, as numpy arrays (see usage_history).
    (A named tuple: built at import in 0.05 ms where a frozen dataclass takes 0.4, and only the
    fit makes one.)"""

JobCharges = namedtuple("JobCharges", (
    "qos_names",  # list: in SQLite's GROUP BY order (NULL first, then by bytes)
    "sid",  # np.ndarray: snapshot id of each job
    "aid",  # np.ndarray: its association id (-1: none)
    "q",  # np.ndarray: index of its QOS in qos_names
    "charge",  # np.ndarray: billing x elapsed_s (0 where unknown)
    "orphans",  # list: (account, user) of the jobs without an association id, in order
    "running",  # np.ndarray | None: billing of the jobs running at their snapshot, else 0 (read_job_charges(running=True))
), defaults=(None,), module=__name__)
JobCharges.__doc__ = """The charged jobs of a range of snapshots (read_job_charges), as numpy arrays in the order
    SQLite returns them: the jobs with an association id, then those without (by name)."""


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


def snapshot_ids(db: sqlite_utils.Database, cluster: str) -> list[int]:
    return [r[0] for r in db.execute("SELECT id FROM snapshots WHERE cluster = ? ORDER BY id", [cluster])]


def write_fit(db: sqlite_utils.Database, cluster: str, fitted_at: float, first: int, last: int, fit) -> int:
    cur = db.execute(
        """INSERT INTO fits (cluster, fitted_at, first_snapshot, last_snapshot, lam, half_life_s, half_life_se_s,
             configured_half_life_s, expected_half_life_s, drift, drifted, n_residuals, n_breaks, n_outliers, converged)
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
        [
            cluster, fitted_at, first, last, fit.lam, fit.half_life_s, fit.half_life_se_s,
            fit.configured_half_life_s, fit.expected_half_life_s, fit.drift, int(fit.drifted),
            fit.n_residuals, fit.n_breaks, fit.n_outliers, int(fit.converged),
        ],
    )
    return cur.lastrowid


_DECISION_COLS = (
    "method", "u_star", "s_ref", "u_real", "u_real_next", "w_now", "w_target", "d_now", "d_target", "d_ideal",
    "usage_factor", "pulse_usage_factor", "h_now", "h_planned", "bound",
)


def write_decision(db: sqlite_utils.Database, cluster: str, snapshot_id: int, decided_at: float, dec, apply: bool) -> int:
    vals = [getattr(dec, c) for c in _DECISION_COLS]
    cur = db.execute(
        f"""INSERT INTO decisions (cluster, snapshot_id, decided_at, apply, advise_only, notes, {', '.join(_DECISION_COLS)})
            VALUES (?,?,?,?,?,?,{','.join('?' * len(_DECISION_COLS))})""",
        [cluster, snapshot_id, decided_at, int(apply), int(dec.advise_only), json.dumps(list(dec.notes)), *vals],
    )
    return cur.lastrowid


def last_decision(db: sqlite_utils.Database, cluster: str, applied_only: bool = False) -> dict | None:
    where = " AND apply = 1" if applied_only else ""
    row = db.execute(f"SELECT * FROM decisions WHERE cluster = ?{where} ORDER BY id DESC LIMIT 1", [cluster])
    cols = [c[0] for c in row.description]
    r = row.fetchone()
    return dict(zip(cols, r)) if r else None


def last_applied_damping(db: sqlite_utils.Database, cluster: str) -> int | None:
    """The d the agent itself last set in slurmctld (from its action log)."""
    row = db.execute(
        """SELECT argv FROM actions WHERE cluster = ? AND kind = 'set_damping' AND status = 'ok'
           ORDER BY id DESC LIMIT 1""",
        [cluster],
    ).fetchone()
    return int(json.loads(row[0])[-1]) if row else None


def set_measured_effect(db: sqlite_utils.Database, decision_id: int, h_measured: float | None,
                        h_slurm: float | None = None, pass_seen_at: float | None = None) -> None:
    db.execute("UPDATE decisions SET h_measured = ? WHERE id = ?", [h_measured, decision_id])
    if h_slurm is not None:
        db.execute("UPDATE decisions SET h_slurm = ?, pass_seen_at = ? WHERE id = ?", [h_slurm, pass_seen_at, decision_id])


def write_actions(db: sqlite_utils.Database, cluster: str, decision_id: int | None, stage: str, actions, planned_at: float,
                  tick_id: int | None = None) -> list[int]:
    ids = []
    for a in actions:
        cur = db.execute(
            """INSERT INTO actions (decision_id, cluster, stage, kind, argv, reason, job_id, status, output, planned_at, tick_id)
               VALUES (?,?,?,?,?,?,?,?,?,?,?)""",
            [decision_id, cluster, stage, a.kind, json.dumps(list(a.argv)), a.reason, a.job_id, a.status, a.output, planned_at, tick_id],
        )
        ids.append(cur.lastrowid)
    return ids


def update_action(db: sqlite_utils.Database, action_id: int, status: str, output: str, job_id: str | None, done_at: float) -> None:
    db.execute(
        "UPDATE actions SET status = ?, output = ?, job_id = ?, done_at = ? WHERE id = ?",
        [status, output, job_id, done_at, action_id],
    )


def decision_history(db: sqlite_utils.Database, cluster: str, limit: int = 50) -> list[dict]:
    cur = db.execute(
        """SELECT d.id, s.taken_at, d.method, d.d_now, d.d_target, d.w_now, d.w_target, d.h_now, d.h_planned,
                  d.h_measured, d.h_slurm, d.u_star, d.apply FROM decisions d JOIN snapshots s ON s.id = d.snapshot_id
           WHERE d.cluster = ? ORDER BY d.id DESC LIMIT ?""",
        [cluster, limit],
    )
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()][::-1]


def gate_ledger(db: sqlite_utils.Database, cluster: str) -> dict[str, int]:
    """Job id -> the Nice to restore (0 for a hold), for the jobs the agent holds or demoted
    (confirmed or intended; not the jobs it keeps its hands off)."""
    return {j: n for j, n in db.execute(
        "SELECT job_id, restore_nice FROM gate_ledger WHERE cluster = ? AND state != 'hands_off'", [cluster])}


def ledger_entries(db: sqlite_utils.Database, cluster: str) -> dict:
    """The whole ledger of a cluster: job id -> gate.LedgerEntry."""
    rows = db.execute("SELECT job_id, kind, restore_nice, set_nice, state FROM gate_ledger WHERE cluster = ?", [cluster]).fetchall()
    if not rows:  # no hold: the gate's module is not needed (a tick without the gate)
        return {}
    from fscontrol.records import LedgerEntry

    return {j: LedgerEntry(kind, n, s_nice, state) for j, kind, n, s_nice, state in rows}


def write_ledger(db: sqlite_utils.Database, cluster: str, entries: dict, reasons: dict[str, str], at: float) -> None:
    """Make the stored ledger equal `entries` (job id -> gate.LedgerEntry); placed_at and reason
    are kept for rows that stay, `reasons` gives them for new rows."""
    current = ledger_entries(db, cluster)
    gone = [j for j in current if j not in entries]
    if gone:
        db.conn.executemany("DELETE FROM gate_ledger WHERE cluster = ? AND job_id = ?", [(cluster, j) for j in gone])
    for j, e in entries.items():
        if j in current:
            if current[j] != e:
                db.execute("UPDATE gate_ledger SET kind = ?, restore_nice = ?, set_nice = ?, state = ? WHERE cluster = ? AND job_id = ?",
                           [e.kind, e.restore_nice, e.set_nice, e.state, cluster, j])
        else:
            db.execute("""INSERT INTO gate_ledger (cluster, job_id, kind, restore_nice, placed_at, reason, state, set_nice)
                          VALUES (?,?,?,?,?,?,?,?)""", [cluster, j, e.kind, e.restore_nice, at, reasons.get(j, ""), e.state, e.set_nice])


def ledger_state(db: sqlite_utils.Database, cluster: str, job_id: str) -> str | None:
    row = db.execute("SELECT state FROM gate_ledger WHERE cluster = ? AND job_id = ?", [cluster, job_id]).fetchone()
    return row[0] if row else None


def set_ledger_state(db: sqlite_utils.Database, cluster: str, job_id: str, state: str | None) -> None:
    """One ledger row's state; None removes the row."""
    if state is None:
        db.execute("DELETE FROM gate_ledger WHERE cluster = ? AND job_id = ?", [cluster, job_id])
    else:
        db.execute("UPDATE gate_ledger SET state = ? WHERE cluster = ? AND job_id = ?", [state, cluster, job_id])


def record_original(db: sqlite_utils.Database, cluster: str, what: str, value, at: float) -> None:
    """What Slurm held before the agent first changed `what` (the first record stays)."""
    db.execute("INSERT OR IGNORE INTO originals (cluster, what, value, recorded_at) VALUES (?,?,?,?)",
               [cluster, what, None if value is None else json.dumps(value), at])


def originals(db: sqlite_utils.Database, cluster: str) -> dict:
    return {w: (None if v is None else json.loads(v)) for w, v in
            db.execute("SELECT what, value FROM originals WHERE cluster = ?", [cluster])}


def set_state(db: sqlite_utils.Database, cluster: str, key: str, value, at: float) -> None:
    if value is None:
        db.execute("DELETE FROM agent_state WHERE cluster = ? AND key = ?", [cluster, key])
    else:
        db.execute("INSERT OR REPLACE INTO agent_state (cluster, key, value, set_at) VALUES (?,?,?,?)",
                   [cluster, key, json.dumps(value), at])


def get_state(db: sqlite_utils.Database, cluster: str, key: str):
    row = db.execute("SELECT value FROM agent_state WHERE cluster = ? AND key = ?", [cluster, key]).fetchone()
    return None if row is None or row[0] is None else json.loads(row[0])


def open_actions(db: sqlite_utils.Database, cluster: str) -> list[dict]:
    """Actions of earlier applying ticks whose outcome is not known yet (killed mid-tick, timed out)."""
    cur = db.execute("SELECT id, kind, argv, job_id, status FROM actions WHERE cluster = ? AND status IN ('pending', 'unknown') ORDER BY id",
                     [cluster])
    return [{"id": i, "kind": k, "argv": json.loads(a), "job_id": j, "status": st} for i, k, a, j, st in cur.fetchall()]


def update_tick(db: sqlite_utils.Database, tick_id: int, status: str, finished_at: float, error: str | None = None) -> None:
    db.execute("UPDATE ticks SET status = ?, finished_at = ?, error = ? WHERE id = ?", [status, finished_at, error, tick_id])


def history(db: sqlite_utils.Database, cluster: str, since: float, until: float) -> dict:
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
