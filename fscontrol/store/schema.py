"""The history's schema: numbered migrations run through sqlite-utils' Migrations (the _sqlite_migrations table), and the carry-over of histories an older fscontrol wrote."""

from __future__ import annotations

from collections.abc import Callable

from fscontrol.errors import StoreError

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: records says why)
if TYPE_CHECKING:  # the migrations get a real sqlite_utils.Database; migrate() the store's own
    import sqlite_utils

    from fscontrol.store.connection import Database


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


def _m009_tres_limits(db: sqlite_utils.Database) -> None:
    # "how much can I still run?": one limits read per tick (fscontrol.slurm.tres, model.quota):
    # every limit with what is used of it, as JSON (a few rows per association with limits). An
    # older history simply has none: the forecast then shows no limits
    db.execute("""CREATE TABLE limit_reads (
            cluster TEXT NOT NULL,
            snapshot_id INTEGER NOT NULL,
            read_at REAL NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (cluster, snapshot_id)
        )""")


def _m010_assoc_path_index(db: sqlite_utils.Database) -> None:
    # the reports read a snapshot's associations in tree order (ORDER BY path, store.history
    # _share_values): without an index SQLite sorts all of them in a temporary B-tree at each read
    # (~0.04 s of `status --json` at 100,000 associations; issue #31). Readers do without it
    # (OPTIONAL_MIGRATIONS): the same rows, sorted
    db.execute("CREATE INDEX assocs_cluster_path ON assocs (cluster, path)")


def _m011_status_basis(db: sqlite_utils.Database) -> None:
    # what `status` computes from a snapshot's associations alone, computed once when the snapshot
    # is written (report.status.classic_basis; issue #31: at 100,000 associations a quarter of
    # `status --json`): the NormShares slurmctld holds and the refined EffectvUsage, as packed
    # doubles in the history's row order (and sprio's factor of each), for the latest snapshot of each cluster. Readers do
    # without it (OPTIONAL_MIGRATIONS): they compute the same values
    db.execute("""CREATE TABLE status_basis (
            cluster TEXT PRIMARY KEY,
            snapshot_id INTEGER NOT NULL,
            damping REAL NOT NULL,
            held_form TEXT NOT NULL,
            lagging INTEGER NOT NULL,
            raw_usage BLOB NOT NULL,
            held BLOB NOT NULL,
            refined BLOB NOT NULL,
            sprio BLOB NOT NULL
        )""")


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
    ("009_tres_limits", _m009_tres_limits),
    ("010_assoc_path_index", _m010_assoc_path_index),
    ("011_status_basis", _m011_status_basis),
]


SCHEMA_VERSION = len(MIGRATIONS)

# Migrations that only add a table or an index its readers do without (store.quota reads no
# limits from a history that lacks it; the associations are read in path order with or without
# the index; status computes what status_basis would hold): a read-only open of a history without them still reads it as it is
OPTIONAL_MIGRATIONS = frozenset({"009_tres_limits", "010_assoc_path_index", "011_status_basis"})


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


def migrate(db: Database) -> list[str]:
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
