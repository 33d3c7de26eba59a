"""PriorityTier across partitions, the replay against the real slurmctld (issue #32 item 1 of fscontrol).

A second partition `hi` over the testbed's node with a higher PriorityTier (10 against normal's 1)
and a lower PriorityJobFactor (0 against 1, PriorityWeightPartition=1000): its jobs have the lower
priority (sprio says so) but the higher tier. Behind a job that fills the node, two whole-node jobs
in `normal` then two in `hi` wait; slurmctld starts the `hi` ones first (job_scheduler.c
sort_job_queue2: tier, then priority). The capture records `scontrol -o show partition`
(partitions.txt); its replay starts them in slurmctld's order, and the same capture with every
PriorityTier made equal replays in priority order instead (so the tier, not chance, decides).
"""

from __future__ import annotations

import re
import shutil
import time

import pytest

from fscontrol.sim import fidelity
from fscontrol.slurm.source import capture

pytestmark = pytest.mark.slurm


def _order(starts: dict, ids: list[str]) -> list[str]:
    return sorted(ids, key=lambda j: (starts[j], int(j)))


def test_replay_orders_the_queue_by_partition_tier_as_slurmctld(slurm, tmp_path):
    slurm.cancel_all()
    node = slurm.run("sinfo", "-h", "-p", "normal", "-o", "%N").strip()
    t0 = time.time()
    slurm.set_conf(PriorityWeightPartition="1000")
    try:
        slurm.scontrol("create", "PartitionName=hi", f"Nodes={node}", "PriorityTier=10", "PriorityJobFactor=0",
                       "MaxTime=INFINITE", "State=UP")
        fill = slurm.submit("alice", "flat", 128, 30)
        for _ in range(240):  # running (26.05: its reconfigure restarts slurmctld, the node comes back slowly)
            if slurm.run("squeue", "-h", "-j", fill, "-o", "%T").strip() == "RUNNING":
                break
            time.sleep(0.5)
        low = [slurm.submit("alice", "flat", 128, 8) for _ in range(2)]  # the higher priority, tier 1
        high = [slurm.submit("alice", "flat", 128, 8, partition="hi") for _ in range(2)]  # lower priority, tier 10
        time.sleep(3)
        rows = [ln.split("|") for ln in slurm.run("sprio", "-h", "-o", "%i|%Y").split()]  # each job's priority
        prio = {r[0]: int(r[1]) for r in rows if len(r) == 2}
        mine = [*low, *high]
        for _ in range(600):  # all ran (~70 s)
            if not slurm.run("squeue", "-h", "-j", ",".join([fill, *mine]), "-o", "%A", check=False).strip():
                break
            time.sleep(0.5)
        time.sleep(2)
        capture(slurm.source(), tmp_path / "cap", history_s=time.time() - t0 + 5)
    finally:
        slurm.cancel_all()
        slurm.run("scontrol", "delete", "PartitionName=hi", check=False)
        slurm.set_conf(PriorityWeightPartition="0")
    assert min(prio[j] for j in low) > max(prio[j] for j in high), prio  # the priority says normal first
    cap = tmp_path / "cap"
    parts = (cap / "partitions.txt").read_text()
    assert re.search(r"PartitionName=hi .*PriorityTier=10", parts), parts
    real = {k: v["start"] for k, v in fidelity.real_starts(cap).items()}
    real_order = _order(real, mine)
    assert real_order == [*high, *low], (real_order, real)  # slurmctld: the tier first

    sim = fidelity.replay(cap)
    assert _order(sim, mine) == real_order, sim
    worst = max(abs(sim[j] - real[j]) for j in [fill, *mine])

    flat = tmp_path / "flat"  # the same capture, every partition in one tier: the old replay
    shutil.copytree(cap, flat)
    (flat / "partitions.txt").write_text(re.sub(r"PriorityTier=\d+", "PriorityTier=1", parts))
    old = fidelity.replay(flat)
    assert _order(old, mine) == [*low, *high] != real_order, old
    print(f"slurmctld's order {real_order} (sprio {[prio[j] for j in real_order]}); the replay's the same, "
          f"each start within {worst:.0f} s; one tier: {_order(old, mine)}")
