"""The one place the stages are composed, top to bottom:

    source -> parse -> model -> control / gate -> plan -> apply -> store -> report

`collect` reads and parses everything first and writes only when all of it parsed, in one
transaction: a failed or garbled command leaves the history as it was and records a failed tick.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import sqlite_utils

from . import parse, store
from .errors import FscontrolError
from .records import Snapshot
from .source import RecordedSlurm, SlurmSource

FIRST_WINDOW_S = 3600.0  # sacct look-back for a cluster's first snapshot


@dataclass(frozen=True)
class CollectResult:
    snapshot_id: int
    snapshot: Snapshot


def read_snapshot(source: SlurmSource, window_start_of: Callable[[str], float | None] = lambda c: None) -> Snapshot:
    """Run every read command and parse it. Raises on the first failure; nothing is written.

    `window_start_of(cluster)` gives the start of the sacct window: the previous snapshot."""
    cfg_out = source.config()
    config = parse.parse_config(cfg_out.stdout, " ".join(cfg_out.argv))
    cluster = source.cluster or config.cluster
    window_start = window_start_of(cluster)
    sshare_out = source.sshare()
    shares = parse.parse_sshare(sshare_out.stdout, " ".join(sshare_out.argv))
    taken_at = sshare_out.finished_at
    squeue_out = source.squeue()
    queue = parse.parse_squeue(squeue_out.stdout, " ".join(squeue_out.argv))
    sprio_out = source.sprio()
    prio = parse.parse_sprio(sprio_out.stdout, " ".join(sprio_out.argv))
    qos_out = source.qos()
    qos = parse.parse_qos(qos_out.stdout, " ".join(qos_out.argv))
    if isinstance(source, RecordedSlurm):
        window = source.window
    else:
        start = window_start if window_start is not None else taken_at - FIRST_WINDOW_S
        window = (start, taken_at)
    sacct_out = source.sacct(*window)
    jobs = parse.parse_sacct(sacct_out.stdout, " ".join(sacct_out.argv))
    return Snapshot(
        cluster=cluster,
        taken_at=taken_at,
        config=config,
        shares=shares,
        jobs=jobs,
        window=window,
        queue=queue,
        prio=prio,
        qos=qos,
    )


def collect(source: SlurmSource, db: sqlite_utils.Database) -> CollectResult:
    """One snapshot into the history, in one transaction; a failure is recorded as a failed tick."""
    started = time.time()
    cluster = source.cluster
    try:
        snap = read_snapshot(source, lambda c: store.previous_snapshot_time(db, c))
        cluster = snap.cluster
        with store.transaction(db):
            sid = store.write_snapshot(db, snap, source=source.describe())
            store.record_tick(db, cluster, started, time.time(), "ok", snapshot_id=sid)
    except FscontrolError as e:
        try:
            with store.transaction(db):
                store.record_tick(db, cluster, started, time.time(), "failed", error=str(e))
        except FscontrolError:
            pass  # the database itself is the problem: the original error says more
        raise
    return CollectResult(snapshot_id=sid, snapshot=snap)
