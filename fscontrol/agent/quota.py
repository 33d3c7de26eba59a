"""The tick's limits read (issue #32 item 5, "how much can I still run?"): sacctmgr's association
and QOS limits, sshare's TRES usage and the queue's job counts (fscontrol.slurm.tres), one read
per tick, turned into used/left entries (fscontrol.model.quota) and kept with the tick's
snapshot (fscontrol.store.quota). A read that fails is logged and skipped: limits are for users
to read, never a reason for a tick to fail or the controller to stop."""

from __future__ import annotations

import logging

from fscontrol.errors import FscontrolError
from fscontrol.model import quota
from fscontrol.slurm import tres
from fscontrol.slurm.source import RecordedSlurm
from fscontrol.store import quota as store_quota

log = logging.getLogger(__name__)


def read_limits(source, cluster: str | None) -> dict | None:
    """{"read_at", "entries", "parent"} read live from `source`; None from a recording (it holds no
    limits) or when a read fails (logged)."""
    run = getattr(source, "run", None)
    if run is None or isinstance(source, RecordedSlurm):
        return None
    try:
        got = tres.read(run, cluster)
    except FscontrolError as e:
        log.warning("limits not read this tick: %s", e)
        return None
    parent = {a.account: a.parent for a in got.assocs if not a.user}
    return {"read_at": got.read_at, "entries": quota.entries(got), "parent": parent}


def record(db, cluster: str, snapshot_id: int, read: dict | None) -> None:
    """Keep the read with the tick's snapshot (inside its transaction)."""
    if read is not None:
        store_quota.write_limits(db, cluster, snapshot_id, read["read_at"], read["entries"], read["parent"])
