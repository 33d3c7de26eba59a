"""The steady padding job on a full cluster (the testbed filled to its last core): with a
reservation that keeps one core for the dummy user (`padding_reservation`), the agent's padding
job starts at once; without it, it pends behind the real jobs and no padding is charged, which
the agent says.

The reservation is what docs/control.md tells the admin to create:

    scontrol create reservation ReservationName=fspad Users=fsdummy CoreCnt=1 \\
        Nodes=<one node> PartitionName=fsadmin StartTime=now Duration=UNLIMITED
"""

from __future__ import annotations

import time

import pytest

from fscontrol.agent import config
from fscontrol.agent import pipeline
from fscontrol.store import history as store

pytestmark = pytest.mark.slurm


def _state(slurm, job: str) -> tuple[str, str]:
    out = slurm.run("squeue", "-h", "-j", job, "-o", "%T|%r").strip()
    state, _, reason = out.partition("|")
    return state, reason


def _cfg(**extra):
    return config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10, "method": "padding",
                                                        "padding_mode": "steady", **extra}}})


def _padding_job(slurm, db, cfg) -> str:
    res = pipeline.control_tick(slurm.source(), db, cfg, apply=True)
    sub = [a for a in res.actions if a.kind == "submit_dummy"]
    assert sub and sub[0].status == "ok", [(a.kind, a.status, a.output) for a in res.actions]
    return sub[0].output.strip().split(";")[0]


def _reserve_a_core(slurm, timeout: float = 90) -> None:
    """Create the reservation once the node is free: the jobs cancelled just before may still be
    completing ("Requested nodes are busy", seen in CI on a loaded machine)."""
    argv = ("scontrol", "create", "reservation", "ReservationName=fspad_full", "Users=fsdummy", "CoreCnt=1",
            "Nodes=tbnode1", "PartitionName=fsadmin", "StartTime=now", "Duration=UNLIMITED")
    deadline = time.time() + timeout
    while True:
        try:
            slurm.run(*argv)
            return
        except RuntimeError as e:
            if "busy" not in str(e) or time.time() > deadline:
                raise
        time.sleep(1)


def test_a_reserved_core_keeps_the_padding_running_on_a_full_cluster(slurm, tmp_path):
    slurm.cancel_all()
    slurm.run("scontrol", "delete", "reservation=fspad_full", check=False)
    _reserve_a_core(slurm)
    try:
        # the real users take every core there is to take, and more wait
        for user, cpus in (("alice", 64), ("bob", 63)):
            slurm.submit(user, "flat", cpus, 600)
        deadline = time.time() + 60
        while sorted(slurm.run("squeue", "-h", "-t", "R", "-o", "%C").split()) != ["63", "64"] and time.time() < deadline:
            time.sleep(1)
        assert sorted(slurm.run("squeue", "-h", "-t", "R", "-o", "%C").split()) == ["63", "64"]
        slurm.submit("carol", "flat", 8, 600)
        db = store.open_db(tmp_path / "h.db")

        # without the reservation: the padding job waits behind the full machine, and the agent says so
        plain = _padding_job(slurm, db, _cfg())
        time.sleep(5)
        state, reason = _state(slurm, plain)
        assert state == "PENDING", (state, reason)
        res = pipeline.control_tick(slurm.source(), db, _cfg(), apply=False)
        assert any("padding job" in n and "pending" in n for n in res.decision.notes), res.decision.notes
        slurm.run("scancel", plain)

        # with it: the padding job starts at once, the machine still full
        job = _padding_job(slurm, db, _cfg(padding_reservation="fspad_full"))
        deadline = time.time() + 30
        while _state(slurm, job)[0] != "RUNNING" and time.time() < deadline:
            time.sleep(1)
        assert _state(slurm, job)[0] == "RUNNING", _state(slurm, job)
        assert _state(slurm, next(j for j in slurm.run("squeue", "-h", "-u", "carol", "-o", "%i").split()))[0] == "PENDING"
        print(f"\nfull testbed (127 of 128 cores taken, carol's 8 waiting): padding job without the reservation "
              f"{state} ({reason}); with it RUNNING")
    finally:
        slurm.cancel_all()
        slurm.run("scontrol", "delete", "reservation=fspad_full", check=False)
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
