"""fscontrol/sim/nodeplace.py: where select/cons_tres puts a job of `-n` tasks, and the nodes
backfill plans for it, against hand-worked cases and against slurmctld 22.05.8's own placements
on a testbed of 4 nodes x 32 CPUs (tests/data/captures/nodeplace-4x32/, recorded by
scripts/record-nodeplace.py; docs/simulator-fidelity.md, "Where a job of tasks lands")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fscontrol.sim.nodeplace import backfill_cycle, place, reservation_nodes, will_run
from fscontrol.sim.slurmsched import SlurmSched, backfill_starts

DATA = Path(__file__).parent / "data" / "captures"
VERSIONS = {"22.05": DATA / "nodeplace-4x32", "24.11": DATA / "nodeplace-4x32-24.11",
            "26.05": DATA / "nodeplace-4x32-26.05"}
NODES = ["tbnode1", "tbnode2", "tbnode3", "tbnode4"]
CPUS = 32


# ---------------------------------------------------------------- hand-worked cases
@pytest.mark.parametrize("free, n, want", [
    # one set of four empty nodes: the best fit single node is the first of the smallest
    ([32, 32, 32, 32], 5, [5, 0, 0, 0]),
    ([27, 32, 32, 32], 20, [20, 0, 0, 0]),
    ([10, 4, 32, 6], 5, [0, 0, 0, 5]),  # the smallest node that holds it (6), not the first
    ([10, 4, 32, 6], 4, [0, 4, 0, 0]),  # an exact fit
    # no node holds it: the nodes of the set in order, each min(free, still wanted)
    ([32, 32, 32, 32], 50, [32, 18, 0, 0]),
    ([8, 8, 8, 32], 22, [0, 0, 0, 22]),
    ([8, 8, 8, 20], 22, [8, 8, 6, 0]),
    # a full node ends a set: the first sufficient set (nodes 3-4), not the first nodes
    ([10, 0, 20, 5], 22, [0, 0, 20, 2]),
    ([10, 0, 20, 5], 9, [9, 0, 0, 0]),  # set 1 is sufficient (10) and smaller than set 2 (25)
    ([10, 0, 5, 20], 9, [9, 0, 0, 0]),
    ([5, 0, 10, 20], 9, [0, 0, 9, 0]),  # set 2 (30) is the only sufficient one; node 3 fits best
    # the smallest sufficient set first, even if a node of another set would hold the job alone
    ([10, 10, 0, 28], 15, [10, 5, 0, 0]),
    ([0, 5, 0, 28], 5, [0, 5, 0, 0]),
    # no set is sufficient: the biggest first, then the next
    ([12, 0, 12, 1], 20, [7, 0, 12, 1]),
    ([1, 0, 0, 3], 4, [1, 0, 0, 3]),
    ([10, 0, 5, 0], 12, [10, 0, 2, 0]),
    # does not fit
    ([10, 0, 5, 0], 16, None),
    ([0, 0, 0, 0], 1, None),
])
def test_place_by_hand(free, n, want):
    assert place(free, n) == want


def test_place_takes_exactly_n_and_only_free_cpus():
    import random

    rng = random.Random(7)
    for _ in range(2000):
        free = [rng.choice([0, 0, 1, 3, 8, 16, 31, 32]) for _ in range(rng.randint(1, 8))]
        n = rng.randint(1, 80)
        got = place(free, n)
        if sum(free) < n:
            assert got is None
            continue
        assert got is not None and sum(got) == n
        assert all(0 <= g <= f for g, f in zip(got, free))
        # on nodes that all have free CPUs (one set), a job that one node holds takes one node,
        # the smallest that holds it (with several sets, the set comes first: test_place_by_hand)
        holders = [f for f in free if f >= n]
        if holders and min(free) > 0:
            assert sum(1 for g in got if g) == 1 and free[next(i for i, g in enumerate(got) if g)] == min(holders)


def test_will_run_by_hand():
    # free now [6, 0, 0, 0]; 8 CPUs free on nodes 2-4 at 300 (end of 3 jobs), the rest at 1800
    running = [(1800, [26, 0, 0, 0]), (1800, [0, 24, 0, 0]), (1800, [0, 0, 24, 0]), (1800, [0, 0, 0, 24]),
               (300, [0, 8, 0, 0]), (300, [0, 0, 8, 0]), (300, [0, 0, 0, 8])]
    assert will_run(22, [6, 0, 0, 0], running, 0) == (300, [6, 8, 8, 0])
    assert will_run(4, [6, 0, 0, 0], running, 0) == (0, [4, 0, 0, 0])
    # node 1 held by an earlier plan: node 4's 8 at 300
    assert will_run(4, [6, 0, 0, 0], running, 0, [False, True, True, True]) == (300, [0, 4, 0, 0])
    assert reservation_nodes([6, 8, 8, 8], 22) == frozenset({0, 1, 2})
    assert reservation_nodes([6, 8, 8, 8], 22, [False, True, True, True]) == frozenset({1, 2, 3})
    assert reservation_nodes([6, 8, 8, 8], 40) is None


def test_will_run_batches_the_ends():
    # ends at 301 (E = 330), 420 and 440: after the first batch the window doubles to 120, and the
    # second batch takes every job ending by 450: the plan starts at 440, the last of them, and
    # holds its CPUs too
    running = [(301, [10, 0]), (420, [0, 10]), (440, [0, 5])]
    assert will_run(15, [0, 0], running, 0) == (440, [0, 15])
    # an end on a multiple of 30 moves E a whole 30 s on: 300 -> E = 330, the first batch takes 360
    assert will_run(12, [0, 0], [(300, [10, 0]), (360, [0, 2])], 0) == (360, [10, 2])
    assert will_run(12, [0, 0], [(300, [10, 0]), (361, [0, 2])], 0) == (361, [10, 2])
    # a job that should have ended: KillWait (30 s) after its end, at least now + 1
    assert will_run(4, [0], [(100, [8])], 110) == (130, [4])
    assert will_run(4, [0], [(50, [8])], 110) == (111, [4])
    assert will_run(40, [0, 0], [(100, [8, 8])], 0) is None


# ---------------------------------------------------------------- slurmctld's own placements
def expand(hostlist: str) -> list[str]:
    """tbnode[1-2,4] -> tbnode1, tbnode2, tbnode4 (a list of names and ranges)."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", hostlist):
        m = re.fullmatch(r"(.*)\[(.*)\]", part)
        if not m:
            out.append(part)
            continue
        for r in m.group(2).split(","):
            lo, _, hi = r.partition("-")
            out += [f"{m.group(1)}{k}" for k in range(int(lo), int(hi or lo) + 1)]
    return out


def cpu_count(ids: str) -> int:
    return sum(int(b) - int(a) + 1 for a, _, b in (r.partition("-") if "-" in r else (r, "", r) for r in ids.split(",")))


def read_jobs(name: str, version: str = "22.05") -> list[dict]:
    """The jobs of a recorded scenario, by job id: their fields and CPUs per node (CPU_IDs)."""
    jobs = []
    for line in (VERSIONS[version] / f"{name}.txt").read_text().splitlines():
        fields: dict = {}
        alloc = [0] * len(NODES)
        nodes = None
        for tok in line.split():
            k, _, v = tok.partition("=")
            if k == "Nodes":
                nodes = expand(v)
            elif k == "CPU_IDs" and nodes is not None:
                for nd in nodes:
                    alloc[NODES.index(nd)] = cpu_count(v)
            elif k not in fields:
                fields[k] = v
        fields["alloc"] = alloc
        jobs.append(fields)
    assert jobs, name
    return sorted(jobs, key=lambda j: int(j["JobId"]))


def pinned(job: dict) -> bool:
    return job["ReqNodeList"] != "(null)"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["pack", "spread", "sets", "bestfit", "setfit"])
def test_main_scheduler_placements_match_slurmctld(name, version):
    """Each job submitted once the one before runs: replayed in order from an empty machine, the
    model puts every unpinned job where slurmctld did (pinned fillers: as recorded)."""
    free = [CPUS] * len(NODES)
    tested = 0
    for job in read_jobs(name, version):
        assert job["JobState"] == "RUNNING" and sum(job["alloc"]) == int(job["NumCPUs"]), job["JobId"]
        if not pinned(job):
            assert place(free, int(job["NumCPUs"])) == job["alloc"], (name, job["JobId"], free)
            tested += 1
        free = [f - a for f, a in zip(free, job["alloc"])]
    assert tested >= 3


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["churn-1", "churn-2"])
def test_placements_through_random_submissions_and_cancellations(name, version):
    """Random jobs of 1-40 CPUs submitted one by one, random ones cancelled between them (holes
    in the middle of nodes, sets cut by full nodes): replayed event by event, the model puts
    every job where slurmctld did, each version by its own rule: on 26.05 a job of ONE task goes
    to the first node with a free CPU, not to the best fit single node (8 of 8; 2 differ from
    22.05's rule: [4, 1, 32, 32] -> node 1, not node 2; `place(version="26.05")`)."""
    jobs = {j["JobId"]: j for j in read_jobs(name, version)}
    free = [CPUS] * len(NODES)
    placed = one = differs = 0
    for line in (VERSIONS[version] / f"{name}.cmd").read_text().splitlines():
        m = re.search(r"# run -> job (\d+)$", line)
        if m:
            job = jobs[m.group(1)]
            assert place(free, int(job["NumCPUs"]), version=version) == job["alloc"], (name, job["JobId"], free)
            if version == "26.05" and int(job["NumCPUs"]) == 1:
                one += 1
                differs += place(free, 1) != job["alloc"]  # (22.05's best fit would not)
            free = [f - a for f, a in zip(free, job["alloc"])]
            placed += 1
            continue
        m = re.search(r"# cancel (\d+),", line)
        if m:
            free = [f + a for f, a in zip(free, jobs[m.group(1)]["alloc"])]
    assert placed == len(jobs) >= 15
    if version == "26.05":
        assert one >= 3 and (differs >= 1 or name != "churn-1"), (one, differs)


def _snapshot(name: str, version: str = "22.05"):
    jobs = read_jobs(name, version)
    running = [j for j in jobs if j["JobState"] == "RUNNING"]
    pending = [j for j in jobs if j["JobState"] == "PENDING"]
    free = [CPUS - sum(j["alloc"][i] for j in running) for i in range(len(NODES))]
    ends = [(int(j["EndTime"]), j["alloc"]) for j in running]
    return jobs, running, pending, free, ends


def _limit_s(job: dict) -> int:
    h, m, s = (int(x) for x in job["TimeLimit"].split(":"))
    return h * 3600 + m * 60 + s


@pytest.mark.parametrize("name, head_nodes", [("plan", {0, 1, 2}), ("plan2", {0, 1, 3})])
@pytest.mark.parametrize("version", VERSIONS)
def test_backfill_plan_matches_slurmctld(name, version, head_nodes):
    """The first pending job: the model's will-run start and nodes are slurmctld's StartTime and
    SchedNodeList (squeue --start's SchedNodes); the nodes are every node with free CPUs in the
    plan, more than ceil(CPUs / 32) nodes' worth."""
    jobs, running, pending, free, ends = _snapshot(name, version)
    head = pending[0]
    now = int(head["LastSchedEval"])
    start, alloc = will_run(int(head["NumCPUs"]), free, ends, now, version=version)
    planned = {NODES.index(n) for n in expand(head["SchedNodeList"])}
    assert {i for i, c in enumerate(alloc) if c} == planned == head_nodes
    assert start == int(head["StartTime"])
    assert len(planned) > -(-int(head["NumCPUs"]) // CPUS)


@pytest.mark.parametrize("name", ["plan", "plan2"])
@pytest.mark.parametrize("version", VERSIONS)
def test_backfill_leaves_the_planned_nodes_whole(name, version):
    """The jobs behind the first pending job: slurmctld did not start one that would fit now only
    in the free CPUs of a node the first job's plan holds (the pool of CPUs starts it: the
    engine's backfill_starts, reservations of ceil(CPUs / 32) nodes); the model, with the planned
    nodes held whole, does not."""
    jobs, running, pending, free, ends = _snapshot(name, version)
    head, behind = pending[0], pending[1:]
    start = int(head["StartTime"])
    held = [n in expand(head["SchedNodeList"]) for n in NODES]
    waiting = [j for j in behind if place(free, int(j["NumCPUs"])) is not None]
    assert waiting, "a job behind fits in the free CPUs now and still waits"
    for j in waiting:
        assert start < int(j["LastSchedEval"]) + _limit_s(j)  # it would run into the plan
        assert place([0 if h else f for f, h in zip(free, held)], int(j["NumCPUs"])) is None
    # the pool starts them
    now = int(head["LastSchedEval"])
    size = [int(j["NumCPUs"]) for j in running + pending]
    est = [float(_limit_s(j)) for j in running + pending]
    run_idx = sorted((int(j["EndTime"]), k) for k, j in enumerate(running))
    queue = list(range(len(running), len(running) + len(pending)))
    sc = SlurmSched(node_cpus=CPUS)
    started = backfill_starts(float(now), queue, sum(free), [(float(e), k) for e, k in run_idx], size, est,
                              CPUS * len(NODES), sc)
    assert {len(running) + 1 + behind.index(j) for j in waiting} <= set(started)


def test_backfill_starts_what_ends_before_the_plan():
    """plan: the job of 2 CPUs for 1 minute behind the plan ends before it: slurmctld backfilled
    it into node 1 (the best fit single node for 2, the model's placement)."""
    jobs, running, pending, free, ends = _snapshot("plan")
    short = [j for j in running if not pinned(j)]
    assert [int(j["NumCPUs"]) for j in short] == [2]
    j = short[0]
    before = [f + a for f, a in zip(free, j["alloc"])]
    assert place(before, 2) == j["alloc"]
    assert int(j["StartTime"]) + _limit_s(j) < int(pending[0]["StartTime"])


@pytest.mark.parametrize("name", ["plan", "plan2", "bfchurn-1", "bfchurn-2", "bfchurn-3"])
@pytest.mark.parametrize("version", VERSIONS)
def test_backfill_cycle_plans_every_pending_job_as_slurmctld(name, version):
    """A backfill cycle on the recorded state (the plans had settled: the cycle that recorded them
    saw the same running jobs): the model starts nothing, and plans each pending job at
    slurmctld's StartTime on its SchedNodeList (bfchurn-*: random machines and queues). plan2's second job: the first job's plan holds
    nodes 1, 2 and 4 until its end rounded down to the minute; node 3 frees only in 30 minutes,
    so backfill tries again from that rounded end (later_start) and plans the job there, on
    node 1, in the CPUs free now."""
    jobs, running, pending, free, ends = _snapshot(name, version)
    assert len({j["Priority"] for j in pending}) == 1  # (one user: the queue is in job id order)
    now = int(pending[0]["LastSchedEval"])
    got = backfill_cycle(now, [(int(j["NumCPUs"]), _limit_s(j)) for j in pending], free, ends, version=version)
    for job, res in zip(pending, got):
        assert res is not None and res[0] == "plan", (job["JobId"], res)
        assert res[1] == int(job["StartTime"]), job["JobId"]
        assert {NODES[i] for i, c in enumerate(res[2]) if c} == set(expand(job["SchedNodeList"])), job["JobId"]


def test_backfill_cycle_by_hand():
    running = [(1800, [26, 0, 0, 0]), (1800, [0, 24, 0, 0]), (1800, [0, 0, 24, 0]), (1800, [0, 0, 0, 24]),
               (300, [0, 8, 0, 0]), (300, [0, 0, 8, 0]), (300, [0, 0, 0, 8])]
    got = backfill_cycle(0, [(22, 600), (4, 1800), (2, 60), (6, 60)], [6, 0, 0, 0], running)
    assert got == [("plan", 300, [6, 8, 8, 0]),  # nodes 1-3 held over [300, 900]
                   ("plan", 300, [0, 0, 0, 4]),  # node 4 is left: its 8 at 300
                   ("start", 0, [2, 0, 0, 0]),   # ends by 60, before the plans
                   ("plan", 60, [6, 0, 0, 0])]   # 4 left on node 1 now, 6 once the job of 2 ends
    # a pool of CPUs would start the job of 4 now, in node 1's 6 free CPUs
    assert place([6, 0, 0, 0], 4) == [4, 0, 0, 0]


def test_the_plan_starts_at_the_last_end_of_its_batch():
    """plan: 22 CPUs are free once the two short fillers of nodes 2 and 3 have ended (6 + 8 + 8),
    but slurmctld plans the job a second later, at the end of the third (node 4's): the will-run
    test takes off, after the 1-minute job, every job ending by E + 240 s at once (E: that job's
    end rounded up to 30 s), and the plan starts at the last of them. The model does the same."""
    jobs, running, pending, free, ends = _snapshot("plan")
    head = pending[0]
    n = int(head["NumCPUs"])
    earliest = None
    for e, _ in sorted(ends):  # the exact earliest end after which n CPUs are free
        cur = [f + sum(a[i] for t, a in ends if t <= e) for i, f in enumerate(free)]
        if place(cur, n) is not None:
            earliest = e
            break
    assert earliest is not None and earliest < int(head["StartTime"])
    assert will_run(n, free, ends, int(head["LastSchedEval"]))[0] == int(head["StartTime"])


def test_the_versions_differ_where_the_captures_do():
    """plan2's second job: 22.05 plans it at the first job's hold end rounded down, on node 1 (in
    the CPUs free now); 24.11 at that end rounded up, on node 4 (the free CPUs at that time, jobs
    ending before it taken off: node 4's 16 is the smaller sufficient set). Each version's rule
    gives its own capture and not the other's."""
    answers = {}
    for version in ("22.05", "24.11"):
        jobs, running, pending, free, ends = _snapshot("plan2", version)
        now = int(pending[0]["LastSchedEval"])
        queue = [(int(j["NumCPUs"]), _limit_s(j)) for j in pending]
        want = (int(pending[1]["StartTime"]), set(expand(pending[1]["SchedNodeList"])))
        for rule in ("22.05", "24.11"):
            res = backfill_cycle(now, queue, free, ends, version=rule)[1]
            answers[version, rule] = (res[1], {NODES[i] for i, c in enumerate(res[2]) if c}) == want
    assert answers == {("22.05", "22.05"): True, ("22.05", "24.11"): False,
                       ("24.11", "24.11"): True, ("24.11", "22.05"): False}


def test_will_run_24_11_starts_from_start_res():
    running = [(100, [8, 0]), (400, [0, 16])]
    # 22.05: fits now on node 1's 4 free CPUs, whatever start_res backfill is at
    assert will_run(3, [4, 0], running, 0, start=200, version="22.05") == (0, [3, 0])
    # 24.11: from start_res 200 the job ending at 100 is gone first: node 1 has 12 free
    assert will_run(10, [4, 0], running, 0, start=200, version="24.11") == (0, [10, 0])
    # ... and the batches stop at the first job ending after later_start
    assert will_run(20, [4, 0], running, 0, start=200, until=300, version="24.11") is None
    assert will_run(20, [4, 0], running, 0, start=200, until=400, version="24.11") == (400, [12, 8])
    with pytest.raises(ValueError):
        will_run(1, [1], [], 0, version="23.02")


def test_26_05_starts_the_plan_at_the_last_relevant_end():
    """plan on 26.05: the plan starts when the last job on the chosen nodes (1-3) ends, 3 s before
    node 4's job that closed the batch, where 24.11's rule (the batch's last end) would put it."""
    jobs, running, pending, free, ends = _snapshot("plan", "26.05")
    head = pending[0]
    n, now = int(head["NumCPUs"]), int(head["LastSchedEval"])
    assert will_run(n, free, ends, now, version="26.05")[0] == int(head["StartTime"])
    assert will_run(n, free, ends, now, version="24.11")[0] == int(head["StartTime"]) + 3


def test_a_job_of_several_nodes_worked_from_eval_nodes():
    """`-N N` (the replay's GPU jobs of several nodes: place(min_nodes=N)), worked by hand from
    cons_tres/job_test.c `_eval_nodes` (22.05.8): a set is sufficient with the CPUs AND N nodes
    (`_enough_nodes`); its nodes are taken in order, each giving min(its free CPUs, the CPUs still
    wanted less one for each other node still wanted) (`_cpus_to_use`); with one node left to take,
    a node too small for the rest is passed over."""
    assert place([24, 8], 4, min_nodes=2) == [3, 1]  # one set of two: 4 - 1 on the first, 1 on the second
    assert place([0, 8], 4, min_nodes=2) is None  # one usable node
    assert place([1, 1, 10], 11, min_nodes=2) == [1, 0, 10]  # the second node passed over: too small for the 10 left
    assert place([4, 0, 4], 8, min_nodes=2) == [4, 0, 4]  # two sets of one node, neither sufficient: the larger first
    assert place([2, 0, 6, 6], 4, min_nodes=2) == [0, 0, 3, 1]  # the set {2, 3} is sufficient (two nodes)
    assert place([8, 8, 8], 2, min_nodes=3) is None  # three nodes need three tasks
