"""The indexed fast path (issue #15): the same schedule as the former engine, overloaded or not.

`sim_engine_reference.py` is a verbatim copy of fscontrol/sim/engine.py before the change; every
case here runs both and compares every job's start time and the order the jobs started in.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import sim_engine_reference as ref

from fscontrol.sim import SimJob, Workload, get_policy, read_swf, section9_workload
from fscontrol.sim import engine

EXCERPT = Path(__file__).resolve().parents[1] / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln-first2000.swf"
FULL = Path(__file__).resolve().parents[1] / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"


def compressed(w: Workload, factor: float) -> Workload:
    return Workload(w.name, w.nodes, [SimJob(j.job_id, j.submit / factor, j.run, j.estimate, j.size, j.user, j.account)
                                      for j in w.jobs], w.allocations)


def random_workload(seed: int, n: int = 1500, nodes: int = 64, load: float = 2.0) -> Workload:
    """Sizes from 1 to the whole machine (many small), limits with ties, bursts of equal submit
    times, run times at or under the limit; arrivals about `load` times what the machine takes."""
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for k in range(n):
        size = min(nodes, int(rng.paretovariate(1.2))) if rng.random() < 0.9 else rng.randint(1, nodes)
        limit = rng.choice([600, 1800, 3600, 3600, 7200, 14400, 86400]) * rng.choice([1, 1, 2])
        run = limit if rng.random() < 0.1 else rng.uniform(0.05, 1.0) * limit
        if rng.random() > 0.3:  # 30% arrive with the previous job
            t += rng.expovariate(1.0) * (size * run) / nodes / load
        jobs.append(SimJob(f"j{k}", round(t), run, limit, size, f"u{k % 7}", f"a{k % 3}"))
    return Workload(f"random{seed}", nodes, jobs)


def same_schedule(w: Workload, policy) -> tuple[int, int]:
    new = engine.simulate(w, policy)
    old = ref.simulate(w, policy)
    assert new.start == old.start
    assert new.order == old.order
    assert new.end == old.end
    assert (new.passes, new.events, new.unfinished) == (old.passes, old.events, old.unfinished)
    return len(new.order), sum(1 for s in new.start if s != float("inf"))


@pytest.fixture(params=["default", "tree-always"])
def thresholds(request, monkeypatch):
    """The engine's own thresholds, and a tiny queue limit so the tree (and the way back to the
    list) is used all the time, also on the short queues of the normal case."""
    if request.param == "tree-always":
        monkeypatch.setattr(engine, "TREE_ON", 2)
        monkeypatch.setattr(engine, "TREE_OFF", 1)
    return request.param


@pytest.mark.parametrize("factor", [1.0, 2.5, 4.0])
def test_sdsc_excerpt_same_start_times_normal_and_overloaded(thresholds, factor):
    w = compressed(read_swf(EXCERPT), factor)
    started, finite = same_schedule(w, get_policy("easy"))
    assert started == finite == len(w.jobs) == 1904


@pytest.mark.parametrize("seed", range(8))
def test_random_overloaded_workloads_same_start_times(thresholds, seed):
    w = random_workload(seed)
    for pol in (get_policy("easy"), get_policy("linear-eligible", depth=1), get_policy("linear-size", depth=1),
                get_policy("easy", schedule_interval_s=300.0), get_policy("linear-size", depth=1, schedule_interval_s=600.0),
                get_policy("fcfs"), get_policy("easy+nobf")):
        started, _ = same_schedule(w, pol)
        assert started == len(w.jobs)


def test_section9_same_start_times(thresholds):
    for seed in range(3):
        w = section9_workload(seed)
        same_schedule(w, get_policy("easy"))
        same_schedule(w, get_policy("linear-size", depth=1))


def test_the_overloaded_excerpt_reaches_the_tree():
    """At the default thresholds the comparisons above use the tree too: in the overloaded
    excerpt more than TREE_ON jobs wait at once (counted from the schedule)."""
    w = compressed(read_swf(EXCERPT), 4.0)
    r = engine.simulate(w, get_policy("easy"))
    waiting = max(sum(1 for j, s in zip(w.jobs, r.start) if j.submit <= t < s) for t in [j.submit for j in w.jobs][::50])
    assert waiting > engine.TREE_ON


def test_full_log_overloaded_prefix_same_start_times():
    """The first 6,000 records of the whole log with arrivals 2.5 times faster (the queue grows to
    thousands: the former engine takes a few seconds here)."""
    w = compressed(read_swf(FULL, limit=6000), 2.5)
    started, _ = same_schedule(w, get_policy("easy"))
    assert started == len(w.jobs)
