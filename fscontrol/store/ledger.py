"""The agent's own record in the history: fits, control decisions and the actions they planned (intent, then outcome), the gate's ledger of holds, the originals the agent changed (for control off), and its state per cluster."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: records says why)
if TYPE_CHECKING:
    import sqlite_utils



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
        # pass_at: when the pass the decision's h_slurm belongs to ran (slurmctld's priority_last_decay_ran,
        # read with the snapshot that saw it: that snapshot's usage_at), NULL where it was not readable
        """SELECT d.id, s.taken_at, d.method, d.d_now, d.d_target, d.w_now, d.w_target, d.h_now, d.h_planned,
                  d.h_measured, d.h_slurm, d.u_star, d.apply, d.pass_seen_at,
                  (SELECT p.usage_at FROM snapshots p WHERE p.cluster = d.cluster AND p.taken_at = d.pass_seen_at
                   AND d.h_slurm IS NOT NULL LIMIT 1) AS pass_at
           FROM decisions d JOIN snapshots s ON s.id = d.snapshot_id
           WHERE d.cluster = ? ORDER BY d.id DESC LIMIT ?""",
        [cluster, limit],
    )
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()][::-1]


def decisions_between(db: sqlite_utils.Database, cluster: str, since: float, until: float) -> list[dict]:
    """The control decisions taken in [since, until], oldest first, each with the halving Slurm
    used at the pass after it (h_slurm), that pass's time (pass_at: the usage_at of the snapshot
    that saw it; pass_seen_at: that snapshot's time) and the actions it planned (kind, status)."""
    cur = db.execute(
        """SELECT d.id, d.decided_at, d.method, d.apply, d.advise_only, d.u_star, d.d_now, d.d_target, d.w_now,
                  d.w_target, d.h_now, d.h_slurm, d.pass_seen_at,
                  (SELECT p.usage_at FROM snapshots p WHERE p.cluster = d.cluster AND p.taken_at = d.pass_seen_at
                   AND d.h_slurm IS NOT NULL LIMIT 1) AS pass_at
           FROM decisions d WHERE d.cluster = ? AND d.decided_at BETWEEN ? AND ? ORDER BY d.id""",
        [cluster, since, until])
    cols = [c[0] for c in cur.description]
    rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    acts: dict[int, list[dict]] = {}
    if rows:
        for did, kind, status in db.execute(
                "SELECT decision_id, kind, status FROM actions WHERE cluster = ? AND decision_id BETWEEN ? AND ? ORDER BY id",
                [cluster, rows[0]["id"], rows[-1]["id"]]):
            acts.setdefault(did, []).append({"kind": kind, "status": status})
    for r in rows:
        r["actions"] = acts.get(r["id"], [])
    return rows


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
    from fscontrol.snaprecords import LedgerEntry

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


def set_original(db: sqlite_utils.Database, cluster: str, what: str, value, at: float) -> None:
    """Replace the record of `what`: slurm.conf's line, which the admin may take back from the
    agent and the agent then write again over a new original (act/executor.py's _persist)."""
    db.execute("INSERT OR REPLACE INTO originals (cluster, what, value, recorded_at) VALUES (?,?,?,?)",
               [cluster, what, None if value is None else json.dumps(value), at])


def forget_original(db: sqlite_utils.Database, cluster: str, what: str) -> None:
    db.execute("DELETE FROM originals WHERE cluster = ? AND what = ?", [cluster, what])


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


def control_state(db: sqlite_utils.Database, cluster: str) -> dict:
    """What the agent's own state says about control now (agent_state rows): `off`, set by
    `control off --apply` until `control on`; `damping_in_force`, the d an applying tick (or
    control off) read back from slurmctld after acting, with the snapshot time it follows."""
    return {"off": get_state(db, cluster, "acting_off"), "damping_in_force": get_state(db, cluster, "damping_in_force")}


def damping_sets(db: sqlite_utils.Database, cluster: str, since: float, until: float) -> list[tuple[float, str, int | None]]:
    """The agent's own changes of slurmctld's runtime d done in (since, until], oldest first:
    (done_at, kind, the d it set or None for a restore by slurm.conf and reconfigure)."""
    out = []
    for done_at, kind, argv in db.execute(
            "SELECT done_at, kind, argv FROM actions WHERE cluster = ? AND status = 'ok' AND done_at > ? AND done_at <= ? "
            "AND kind IN ('set_damping', 'restore_conf_damping') ORDER BY done_at, id", [cluster, since, until]):
        d = None
        if kind == "set_damping":
            try:
                d = int(json.loads(argv)[-1])
            except (ValueError, TypeError, IndexError):
                d = None
        out.append((float(done_at), kind, d))
    return out


def decision_cluster(db: sqlite_utils.Database, decision_id: int) -> str:
    """The cluster a recorded decision is for."""
    return db.execute("SELECT cluster FROM decisions WHERE id = ?", [decision_id]).fetchone()[0]


def activity_counts(db: sqlite_utils.Database, cluster: str, since: float, until: float, width: float,
                    kinds: tuple[str, ...]) -> tuple[list[tuple], list[tuple], int]:
    """The agent's activity on `cluster` over [since, until] in buckets `width` seconds wide
    (bucket 0 starts at `since`): (bucket, status, count) of the ticks that ended ok or failed,
    (bucket, kind, count) of the gate's actions of `kinds` carried out or that may have been
    (status ok, pending, unknown), and the jobs the gate's ledger holds now (not hands-off)."""
    ticks = db.execute(
        """SELECT CAST((started_at - ?) / ? AS INTEGER), status, count(*) FROM ticks
           WHERE cluster = ? AND started_at BETWEEN ? AND ? AND status IN ('ok', 'failed') GROUP BY 1, 2""",
        [since, width, cluster, since, until]).fetchall()
    actions = db.execute(
        f"""SELECT CAST((planned_at - ?) / ? AS INTEGER), kind, count(*) FROM actions
            WHERE cluster = ? AND stage = 'gate' AND planned_at BETWEEN ? AND ?
            AND kind IN ({','.join('?' * len(kinds))}) AND status IN ('ok', 'pending', 'unknown') GROUP BY 1, 2""",
        [since, width, cluster, since, until, *kinds]).fetchall()
    held = db.execute("SELECT count(*) FROM gate_ledger WHERE cluster = ? AND state != 'hands_off'", [cluster]).fetchone()[0]
    return ticks, actions, held
