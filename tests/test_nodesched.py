"""The engine's backfill on nodes (fscontrol/sim/nodesched.py) against the reference cycle
(nodeplace.backfill_cycle): the same jobs start, in the same order, on the same nodes, on random
machines and queues, under each version's rule."""

from __future__ import annotations

import random

import pytest

from fscontrol.sim.nodeplace import VERSIONS, backfill_cycle, place
from fscontrol.sim.nodesched import backfill_nodes, node_rule
from fscontrol.sim.slurmsched import SlurmSched


def _machine(rng: random.Random, nodes: int, cpus: int | list[int], now: float):
    free = list(cpus) if isinstance(cpus, list) else [cpus] * nodes  # (a list: each node's CPUs)
    big = max(free)
    running = []
    for _ in range(rng.randint(0, 4 * nodes)):
        n = rng.randint(1, big + big // 2)
        got = place(free, n)
        if got is None:
            continue
        free = [f - a for f, a in zip(free, got)]
        # ends: on the minute, on the bf grid, or anywhere (ties and the batches' windows)
        end = now + rng.choice([rng.randint(1, 3600), 60 * rng.randint(1, 60), 30 * rng.randint(1, 120)])
        running.append((float(end), got))
    return free, running


def _random_machine(rng: random.Random):
    """(nodes, CPUs a node, now, each node's free CPUs, the running jobs) of a random machine."""
    nodes = rng.choice([2, 3, 4, 8])
    cpus = rng.choice([4, 8, 32])
    now = 1_800_000_000.0 + rng.randint(0, 600)
    return (nodes, cpus, now, *_machine(rng, nodes, cpus, now))


def _sized_machine(rng: random.Random):
    """The same with nodes of different sizes (each 1-48 CPUs; `cpus`: the largest)."""
    nodes = rng.choice([2, 3, 4, 8])
    caps = [rng.choice([1, 2, 4, 6, 8, 16, 24, 32, 48]) for _ in range(nodes)]
    now = 1_800_000_000.0 + rng.randint(0, 600)
    return (nodes, max(caps), now, *_machine(rng, nodes, caps, now))


@pytest.mark.parametrize("sized", [False, True], ids=["one size", "sizes"])
@pytest.mark.parametrize("version", VERSIONS)
def test_the_starts_are_the_reference_cycles(version, sized):
    """Nodes of one size, and of different sizes (where the reference cycle, which reads only the
    free CPUs and the running jobs' CPUs per node, needs no node size either)."""
    rng = random.Random(f"nodesched-{version}" + ("-sizes" if sized else ""))
    checked = started = 0
    for case in range(300):
        nodes, cpus, now, free, running = (_sized_machine if sized else _random_machine)(rng)
        q = [(rng.randint(1, nodes * cpus if rng.random() < 0.3 else cpus), float(rng.choice(
            [60, 120, 300, 600, 1800, rng.randint(30, 7200)]))) for _ in range(rng.randint(1, 25))]
        sc = SlurmSched(bf_resolution_s=rng.choice([60.0, 60.0, 30.0, 300.0]),
                        bf_window_s=rng.choice([1440 * 60.0, 3600.0]), bf_max_job_test=rng.choice([500, 500, 5]))
        ref = backfill_cycle(now, q[:sc.bf_max_job_test], free, running, resolution=sc.bf_resolution_s,
                             window=sc.bf_window_s, version=version)
        want = [(k, r[2]) for k, r in enumerate(ref) if r is not None and r[0] == "start"]
        size = [n for n, _ in q]
        est = [d for _, d in q]
        got = backfill_nodes(now, list(range(len(q))), free, running, size, est, sc, smallest=min(size), version=version)
        assert got == want, (case, free, running, q)
        checked += 1
        started += len(want)
    assert checked == 300 and started > 100  # (the cases start jobs, not only plan them)


@pytest.mark.parametrize("version", VERSIONS)
def test_jobs_kept_from_a_plan_are_the_reference_cycles(version):
    """The same with a random third of the jobs kept from a plan (bf_min_age_reserve,
    bf_min_prio_reserve: `no_reserve`), on nodes of different sizes: the reference starts each of
    them only if `place` fits it now on the nodes the map leaves it. Such jobs change the starts
    (the cycles differ from the same queue without them)."""
    rng = random.Random(f"nodesched-noresv-{version}")
    differ = 0
    for case in range(300):
        nodes, cpus, now, free, running = _sized_machine(rng)
        q = [(rng.randint(1, nodes * cpus if rng.random() < 0.3 else cpus), float(rng.choice(
            [60, 120, 300, 600, 1800, rng.randint(30, 7200)]))) for _ in range(rng.randint(1, 25))]
        nr = {k for k in range(len(q)) if rng.random() < 0.33}
        sc = SlurmSched(bf_resolution_s=rng.choice([60.0, 30.0]), bf_window_s=1440 * 60.0)
        ref = backfill_cycle(now, q, free, running, resolution=sc.bf_resolution_s, window=sc.bf_window_s,
                             version=version, no_reserve=nr)
        want = [(k, r[2]) for k, r in enumerate(ref) if r is not None and r[0] == "start"]
        assert all(r is None or r[0] == "start" for k, r in enumerate(ref) if k in nr)  # never a plan
        size = [n for n, _ in q]
        est = [d for _, d in q]
        got = backfill_nodes(now, list(range(len(q))), free, running, size, est, sc, smallest=min(size),
                             version=version, no_reserve=nr)
        assert got == want, (case, free, running, q, nr)
        plain = backfill_nodes(now, list(range(len(q))), free, running, size, est, sc, smallest=min(size), version=version)
        differ += plain != got
    assert differ >= 8, differ  # (16, 14, 8 and 17 of the 300: 22.05, 24.11, 25.11, 26.05)


def test_keys_carry_the_index():
    """The engine passes priority keys whose low bits are the index (mask)."""
    sc = SlurmSched()
    keys = [(7 << 8) | 1, (3 << 8) | 0]
    got = backfill_nodes(0.0, keys, [4, 4], [], [3, 5], [60.0, 60.0], sc, mask=0xFF)
    assert [i for i, _ in got] == [1, 0] and sum(got[0][1]) == 5


def test_node_rule():
    assert [node_rule(v) for v in ("22.05.8", "23.02.1", "24.11.5", "25.05.0", "25.11.2", "26.05.3", "27.11", "", None,
                                   "x")] == [
        "22.05", "22.05", "24.11", "24.11", "25.11", "26.05", "26.05", "22.05", "22.05", "22.05"]
    # 25.11: 26.05's backfill rule (977bb2ee4f), 24.11's placement of a one-task job (best fit: the
    # one-task commits 496893603b and 295100b5f6 are in no 25.11 release)
    from fscontrol.sim.nodeplace import place

    assert place([4, 2], 1, version="25.11") == place([4, 2], 1, version="24.11") == [0, 1]
    assert place([4, 2], 1, version="26.05") == [1, 0]


@pytest.mark.parametrize("version", VERSIONS)
def test_partitions_over_some_nodes_are_the_reference_cycles(version):
    """The same on machines cut into partitions (each job's nodes: a random set, or an interval
    of the nodes, or all): a job plans and starts on its partition's nodes only, and a node
    outside them coming back does not move its later_start."""
    rng = random.Random(f"nodesched-parts-{version}")
    started = outside = 0
    for case in range(300):
        nodes, cpus, now, free, running = _random_machine(rng)
        parts = [(1 << nodes) - 1, (1 << (nodes // 2)) - 1, ((1 << nodes) - 1) ^ ((1 << (nodes // 2)) - 1),
                 rng.randint(1, (1 << nodes) - 1)]
        q = [(rng.randint(1, cpus * 2), float(rng.choice([60, 120, 300, 600, 1800, rng.randint(30, 7200)])))
             for _ in range(rng.randint(1, 25))]
        masks = [rng.choice(parts) for _ in q]
        sc = SlurmSched(bf_resolution_s=rng.choice([60.0, 60.0, 30.0, 300.0]))
        nodes_of = [[k for k in range(nodes) if (m >> k) & 1] for m in masks]
        ref = backfill_cycle(now, q, free, running, resolution=sc.bf_resolution_s, window=sc.bf_window_s,
                             version=version, nodes_of=nodes_of)
        want = [(k, r[2]) for k, r in enumerate(ref) if r is not None and r[0] == "start"]
        for k, a in want:
            assert all(not c or (masks[k] >> i) & 1 for i, c in enumerate(a))  # on its partition's nodes
        size = [n for n, _ in q]
        est = [d for _, d in q]
        got = backfill_nodes(now, list(range(len(q))), free, running, size, est, sc, smallest=min(size),
                             version=version, masks=masks)
        assert got == want, (case, free, running, q, masks)
        started += len(want)
        outside += sum(1 for k, _ in want if masks[k] != (1 << nodes) - 1)
    assert started > 100 and outside > 30


def _gpu_machine(rng: random.Random):
    """A machine whose nodes have GPUs (0-8 each) and running jobs holding some of them: (nodes,
    the largest node's CPUs, now, free CPUs, GPUs free, running jobs, their GPUs a node, GPUs each)."""
    nodes = rng.choice([1, 2, 3, 4, 8])
    caps = [rng.choice([4, 8, 16, 32]) for _ in range(nodes)]
    gcaps = [rng.choice([0, 1, 2, 4, 8]) for _ in range(nodes)]
    now = 1_800_000_000.0 + rng.randint(0, 600)
    free, gfree = list(caps), list(gcaps)
    running, rgpu = [], []
    for _ in range(rng.randint(0, 4 * nodes)):
        n = rng.randint(1, max(caps))
        g = rng.choice([0, 0, 1, 2])
        got = place([c if gf >= g else 0 for c, gf in zip(free, gfree)], n, min_nodes=rng.choice([1, 1, 2]) if g else 1)
        if got is None:
            continue
        free = [f - a for f, a in zip(free, got)]
        gfree = [gf - g if a else gf for gf, a in zip(gfree, got)]
        end = now + rng.choice([rng.randint(1, 3600), 60 * rng.randint(1, 60), 30 * rng.randint(1, 120)])
        running.append((float(end), got))
        rgpu.append(g)
    return nodes, max(caps), now, free, gfree, running, rgpu, gcaps


@pytest.mark.parametrize("version", VERSIONS)
def test_gpu_jobs_are_the_reference_cycles(version):
    """Jobs that ask for GPUs a node, on nodes with GPUs, some of them on several nodes (-N): the
    engine's cycle starts what the reference starts, on the same nodes (a -N job on that many);
    no node ever gives more GPUs than it has; and the GPUs change the starts (the same cycle with
    the GPUs left out starts other jobs)."""
    rng = random.Random(f"nodesched-gpus-{version}")
    differ = started = multi = 0
    for case in range(300):
        nodes, cpus, now, free, gfree, running, rgpu, gcaps = _gpu_machine(rng)
        q = [(rng.randint(1, nodes * cpus if rng.random() < 0.2 else cpus), float(rng.choice(
            [60, 120, 300, 600, 1800, rng.randint(30, 7200)]))) for _ in range(rng.randint(1, 20))]
        gq = [rng.choice([0, 1, 1, 2, 4]) for _ in q]
        mq = [rng.choice([0, 0, 0, 2, 3]) if g else 0 for g in gq]  # -N of some GPU jobs
        # (a job asking for more GPUs a node than any node has would never start: Slurm refuses it)
        keep = [k for k in range(len(q)) if sum(c for c, g in zip([cpus] * nodes, gcaps) if g >= gq[k]) > 0]
        q, gq, mq = [q[k] for k in keep], [gq[k] for k in keep], [mq[k] for k in keep]
        if not q:
            continue
        sc = SlurmSched(bf_resolution_s=rng.choice([60.0, 30.0]), bf_window_s=1440 * 60.0)
        ref = backfill_cycle(now, q, free, running, resolution=sc.bf_resolution_s, window=sc.bf_window_s,
                             version=version, gpus=gq, gfree=gfree, running_gpus=rgpu, min_nodes=mq)
        want = [(k, r[2]) for k, r in enumerate(ref) if r is not None and r[0] == "start"]
        for k, a in want:  # a -N job on that many nodes
            assert not mq[k] or sum(1 for x in a if x) == mq[k], (case, k, a)
        size = [n for n, _ in q]
        est = [d for _, d in q]
        got = backfill_nodes(now, list(range(len(q))), free, running, size, est, sc, smallest=min(size),
                             version=version, gfree=gfree, gpus=gq, running_gpus=rgpu, min_nodes=mq)
        assert got == want, (case, free, gfree, running, rgpu, q, gq, mq)
        multi += sum(1 for k, _ in got if mq[k])
        left = list(gfree)
        for k, a in got:
            for i, x in enumerate(a):
                if x:
                    left[i] -= gq[k]
        assert min(left, default=0) >= 0, (case, left)
        blind = backfill_nodes(now, list(range(len(q))), free, running, size, est, sc, smallest=min(size),
                               version=version)
        differ += blind != got
        started += len(got)
    assert started > 100 and differ >= 20 and multi >= 10, (started, differ, multi)


def test_a_gpu_job_waits_for_gpus_where_cpus_are_free():
    """Worked by hand: one node of 16 CPUs and 2 GPUs; a running job (4 CPUs, both GPUs) ends at
    now + 600. A job of 2 CPUs and 1 GPU cannot start though 12 CPUs are free: backfill plans it at
    the running job's end. A CPU-only job of 8 CPUs behind it, 5 minutes long, starts now (the plan
    holds the node from +600 s)."""
    now = 1_800_000_040.0
    sc = SlurmSched(bf_resolution_s=60.0, bf_window_s=1440 * 60.0)
    running = [(now + 600.0, [4])]
    ref = backfill_cycle(now, [(2, 600.0), (8, 300.0)], [12], running, resolution=60.0, window=1440 * 60.0,
                         gpus=[1, 0], gfree=[0], running_gpus=[2])
    assert ref == [("plan", now + 600.0, [2]), ("start", now, [8])]
    got = backfill_nodes(now, [0, 1], [12], running, [2, 8], [600.0, 300.0], sc, smallest=2,
                         gfree=[0], gpus=[1, 0], running_gpus=[2])
    assert got == [(1, [8])]
    # without the GPUs both start now
    assert backfill_nodes(now, [0, 1], [12], running, [2, 8], [600.0, 300.0], sc, smallest=2) == [(0, [2]), (1, [8])]
