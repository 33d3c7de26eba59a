"""A kept capture's jobs as slurmctld ran them, read straight from its jobs.txt (sacct's columns):
the independent side of the replay tests of tests/data/captures/ (test_sim_nodesizes, test_sim_gpus)."""

from __future__ import annotations

from pathlib import Path


def real_rows(cap: Path) -> tuple[list[str], dict[str, float], dict[str, str]]:
    """The jobs in submission order (job id order), slurmctld's starts and nodes (NodeList)."""
    rows = [ln.split("|") for ln in (cap / "jobs.txt").read_text().splitlines()]
    head = rows[0]
    rows = sorted((dict(zip(head, r)) for r in rows[1:]), key=lambda r: int(r["JobID"]))
    return [r["JobID"] for r in rows], {r["JobID"]: float(r["Start"]) for r in rows}, {r["JobID"]: r["NodeList"] for r in rows}
