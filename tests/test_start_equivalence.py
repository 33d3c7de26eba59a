"""The faster start planner gives the old planner's answers (issue #32 item 4, its cost).

tests/start_reference.py keeps the planner as it was before the cost work (main at ff430af),
verbatim. Each test plays seeded random cases through both and asserts the same start times,
exactly (floats compared with ==): a backfill cycle alone (`backfill_starts`, which the simulator's
mfcore uses too) and the whole playing-forward (`start._plan`)."""

from __future__ import annotations

import math
import random

import pytest
from start_reference import ref_backfill_starts, ref_plan

from fscontrol.forecast import start as st
from fscontrol.sim.slurmsched import SlurmSched, backfill_starts


def _sched(rng: random.Random, node_cpus: int) -> SlurmSched:
    return SlurmSched(node_cpus=node_cpus, bf_resolution_s=rng.choice([1.0, 30.0, 60.0, 60.0, 300.0]),
                      bf_window_s=rng.choice([600.0, 3600.0, 86400.0, 86400.0]),
                      bf_max_job_test=rng.choice([1, 5, 50, 500, 500]),
                      bf_interval_s=rng.choice([10.0, 30.0, 30.0, 120.0]),
                      sched_interval_s=rng.choice([30.0, 60.0]), default_queue_depth=rng.choice([3, 100]))


def _cycle_case(seed: int):
    rng = random.Random(seed)
    nodes = rng.randint(1, 8)
    node_cpus = rng.choice([4, 16, 128])
    total = nodes * node_cpus
    sc = _sched(rng, rng.choice([0, node_cpus]))
    t = rng.choice([1_000_000.0, 1_000_000.0 + rng.uniform(0, 300), float(rng.randrange(10**6, 2 * 10**6))])
    n_run = rng.randint(0, 30)
    n_pend = rng.randint(0, 80)
    size = [rng.randint(1, max(1, total // rng.choice([1, 2, 4, 8]))) for _ in range(n_run + n_pend)]
    est = [rng.choice([rng.uniform(10, 4 * 3600), float(rng.choice([60, 600, 3600])), rng.uniform(10, 86400 * 2)])
           for _ in range(n_run + n_pend)]
    running = sorted((t + rng.choice([rng.uniform(0.001, 86400 * 2), float(rng.randint(1, 100) * 60)]), n_pend + j)
                     for j in range(n_run))
    used = sum(size[j] for _, j in running)
    free = max(0, total - used) if rng.random() < 0.8 else rng.randint(0, total)
    queue = list(range(n_pend))
    mask = -1
    if rng.random() < 0.3:  # mfcore's keys: priority bits above the index
        mask = (1 << 20) - 1
        queue = [(rng.randrange(50) << 20) | i for i in queue]
    completing = None
    if rng.random() < 0.2:
        completing = sorted((t + rng.uniform(0.5, 30), rng.randint(1, 8)) for _ in range(rng.randint(1, 4)))
    smallest = min((size[q & mask] for q in queue), default=0) if rng.random() < 0.7 else 0
    return t, queue, free, running, size, est, total, sc, mask, smallest, completing


@pytest.mark.parametrize("block", range(4))
def test_a_backfill_cycle_starts_what_the_reference_starts(block):
    started = 0
    for seed in range(block * 150, block * 150 + 150):
        args = _cycle_case(seed)
        new = backfill_starts(*args)
        old = ref_backfill_starts(*args)
        assert new == old, f"seed {seed}"
        started += len(new)
    assert started > 50  # the cases do start jobs (not a comparison of empty lists)


def _plan_case(seed: int):
    rng = random.Random(10_000 + seed)
    nodes = rng.randint(1, 6)
    node_cpus = rng.choice([8, 32, 128])
    total = nodes * node_cpus
    sc = _sched(rng, node_cpus)
    now = 1_000_000.0 + rng.choice([0.0, rng.uniform(0, 100)])
    running = []
    used = 0
    while used < total * rng.uniform(0.3, 1.0):
        c = rng.randint(1, node_cpus)
        lim = rng.uniform(60, 12 * 3600)
        st_ = now - rng.uniform(0, lim)
        running.append((st_ + rng.uniform(0.2, 1.0) * lim, st_ + lim, c))
        used += c
    pending = []
    for _ in range(rng.randint(1, 60)):
        lim = rng.choice([rng.uniform(60, 8 * 3600), float(rng.choice([600, 3600]))])
        f = rng.choice([1.0, rng.uniform(0.1, 1.0)])
        nb = now if rng.random() < 0.9 else now + rng.uniform(0, 7200)
        pending.append((f * lim, lim, rng.randint(1, max(1, total // rng.choice([1, 2, 4]))), nb))
    blocked = 0 if rng.random() < 0.8 else rng.randint(0, node_cpus)
    stop = None if rng.random() < 0.5 else set(rng.sample(range(len(pending)), k=rng.randint(1, len(pending))))
    horizon = rng.choice([86400.0, 7 * 86400.0])
    return now, running, pending, total, sc, blocked, stop, horizon


@pytest.mark.parametrize("block", range(3))
def test_the_planner_gives_the_reference_start_times(block):
    estimated = 0
    for seed in range(block * 100, block * 100 + 100):
        now, running, pending, total, sc, blocked, stop, horizon = _plan_case(seed)
        new = st._plan(now, running, pending, total, sc, blocked, set(stop) if stop else stop, horizon)
        old = ref_plan(now, running, pending, total, sc, blocked, set(stop) if stop else stop, horizon)
        if stop is not None:  # the faster planner stops as soon as the asked-for jobs have started
            new = {i: v for i, v in new.items() if i in stop}
            old = {i: v for i, v in old.items() if i in stop}
        assert new == old, f"seed {seed}"
        estimated += sum(1 for v in new.values() if math.isfinite(v))
    assert estimated > 100
