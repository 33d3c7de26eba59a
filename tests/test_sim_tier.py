"""PriorityTier in the replay (issue #32 item 1 of fscontrol): slurmctld orders its queue by the
job's partition's PriorityTier first, then by priority (job_scheduler.c sort_job_queue2, in the
main scheduler and in backfill), and the engine does too. The capture is the testbed's
(tests/data/captures/tier-22.05, tests/test_integration_sim_tier.py records one like it): two
jobs in `hi` (tier 10, the lower priority) started before two in `normal` (tier 1)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fscontrol.sim import fidelity
from fscontrol.sim.load import load_workload
from fscontrol.sim.multifactor import PriorityConfig, simulate_multifactor
from fscontrol.sim.workload import SimJob, Workload
from fscontrol.slurm.partitions import parse_partitions

DATA = Path(__file__).parent / "data" / "captures"
CAP = DATA / "tier-22.05"
# (capture, the jobs in normal, the jobs in hi): the same run on 22.05.8 and 26.05.5
RUNS = [(CAP, ["2", "3"], ["4", "5"]), (DATA / "tier-26.05", ["7", "8"], ["9", "10"])]


def _order(starts: dict[str, float], ids) -> list[str]:
    return sorted(ids, key=lambda j: (starts[j], int(j)))


def test_the_partitions_are_read_with_their_tier_and_job_factor():
    ps = parse_partitions((CAP / "partitions.txt").read_text())
    assert [(p.name, p.tier, p.job_factor, p.nodes) for p in ps] == [
        ("normal", 1, 1, "tbnode1"), ("fsadmin", 10, 1, "tbnode1"), ("parked", 1, 1, "tbnode1"), ("hi", 10, 0, "tbnode1")]
    p26 = parse_partitions((DATA / "tier-26.05" / "partitions.txt").read_text())  # 26.05.5: the same keys
    assert [(p.name, p.tier, p.job_factor) for p in p26] == [(p.name, p.tier, p.job_factor) for p in ps]
    w = load_workload(str(CAP))
    assert w.meta["partition_tiers"] == {"normal": 1, "fsadmin": 10, "parked": 1, "hi": 10}
    assert w.meta["partition_factors"] == {"normal": 1, "fsadmin": 1, "parked": 1, "hi": 0}


@pytest.mark.parametrize("cap,low,high", RUNS, ids=["22.05", "26.05"])
def test_the_replay_starts_the_higher_tier_first_as_slurmctld_did(tmp_path, cap, low, high):
    real = {k: v["start"] for k, v in fidelity.real_starts(cap).items()}
    mine = [*low, *high]
    assert _order(real, mine) == [*high, *low]  # slurmctld: hi's jobs first, the lower priority
    sim = fidelity.replay(cap)
    assert _order(sim, mine) == _order(real, mine)
    assert max(abs(sim[j] - real[j]) for j in real) <= 5  # each start within 5 s of slurmctld's
    # every partition in one tier: the priority alone (normal's PriorityJobFactor 1 against hi's 0)
    flat = tmp_path / "flat"
    shutil.copytree(cap, flat)
    text = (cap / "partitions.txt").read_text()
    (flat / "partitions.txt").write_text(re.sub(r"PriorityTier=\d+", "PriorityTier=1", text))
    assert _order(fidelity.replay(flat), mine) == mine
    # tiers swapped: normal's jobs first again (the tier decides, whichever partition holds it)
    (flat / "partitions.txt").write_text(text.replace("PriorityTier=1 ", "PriorityTier=20 "))
    assert _order(fidelity.replay(flat), mine) == mine


def test_a_capture_without_partitions_replays_as_before(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(CAP, old)
    (old / "partitions.txt").unlink()
    w = load_workload(str(old))
    assert w.meta["partition_tiers"] == {} and w.meta["partition_factors"] == {}
    assert _order(fidelity.replay(old), ["2", "3", "4", "5"]) == ["2", "3", "4", "5"]  # equal priorities: by id


def _jobs() -> list[SimJob]:
    out = []
    for i in range(40):
        part = "hi" if i % 3 == 0 else "normal"
        out.append(SimJob(str(i + 1), float(i * 7), 50.0 + (i * 37) % 200, 400.0, 1 + (i * 13) % 32,
                          f"u{i % 4}", f"a{i % 2}", part))
    return out


def test_one_tier_among_the_jobs_changes_nothing():
    """The tiers of partitions no job is in add nothing: the same starts as without them, bit for bit;
    two tiers among the jobs change the schedule."""
    prio = PriorityConfig(weight_age=1000, weight_fairshare=10000, fair_tree=False)
    base = simulate_multifactor(Workload("w", 32, _jobs()), prio)
    same = simulate_multifactor(Workload("w", 32, _jobs(), meta={"partition_tiers": {"hi": 5, "normal": 5, "x": 9}}), prio)
    assert same.start == base.start and same.end == base.end
    two = simulate_multifactor(Workload("w", 32, _jobs(), meta={"partition_tiers": {"hi": 9, "normal": 5}}), prio)
    assert two.start != base.start
    hi = [i for i, j in enumerate(_jobs()) if j.partition == "hi"]
    lo = [i for i in range(40) if i not in hi]
    # a job in the high tier never waits longer than it did with one tier, summed over them
    assert sum(two.start[i] - _jobs()[i].submit for i in hi) < sum(base.start[i] - _jobs()[i].submit for i in hi)
    assert sum(two.start[i] - _jobs()[i].submit for i in lo) > sum(base.start[i] - _jobs()[i].submit for i in lo)
