"""`fscontrol collect`: the snapshot it took, as data (for --json) and its one line. Pure."""

from __future__ import annotations


def collect_data(res) -> dict:
    """One collect's result (agent.pipeline.CollectResult) as the command's JSON object."""
    snap = res.snapshot
    return {
        "snapshot_id": res.snapshot_id,
        "cluster": snap.cluster,
        "taken_at": snap.taken_at,
        "associations": len(snap.shares),
        "users": len(snap.users),
        "jobs_in_window": len(snap.jobs),
        "queued_jobs": len(snap.queue),
    }


def format_collect(data: dict) -> str:
    return (f"snapshot {data['snapshot_id']} of {data['cluster']}: {data['associations']} associations "
            f"({data['users']} users), {data['jobs_in_window']} jobs in the sacct window, "
            f"{data['queued_jobs']} in the queue")
