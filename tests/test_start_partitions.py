"""Partitions in the start estimate (fscontrol/forecast/startparts.py; issue #32 item 4): pools of
partitions over separate nodes are played apart. Each case's expected start is worked out by hand."""

from __future__ import annotations

import pytest

from fscontrol.errors import ParseError
from fscontrol.forecast import start as st
from fscontrol.forecast import startfs, startparts, startview as sv
from fscontrol.records import ShareRow
from fscontrol.sim.slurmsched import SlurmSched
from fscontrol.slurm.resv import Reservation

NOW = 1_000_000.0
SC = SlurmSched(node_cpus=128)


def job(i, user, part, state, cpus, limit, start=None, prio=0.0, reason="Priority", acct="a"):
    return st.StartJob(str(i), user, acct, part, state, cpus, limit, start, prio, reason, NOW - 100)


def nodes(text):
    return startparts.parse_nodes(text)


# two nodes: n1 in partition a, n2 in partition b (sinfo -a -h -N -o %N|%P|%C|%G)
DISJOINT = "n1|a*|128/0/0/128|(null)|up\nn2|b|0/128/0/128|(null)|up\n"


def run(jobs, text=DISJOINT, **kw):
    kw.setdefault("total_cpus", 256)
    ests, notes = startparts.estimate_pools(jobs, nodes(text), st.estimate, now=NOW, sched=SC, **kw)
    return {e.job_id: e for e in ests}, notes


def test_parse_nodes_and_host_lists():
    got = nodes("n1|a*|64/64/0/128|gpu:4(S:0)|up\nn1|b|64/64/0/128|gpu:4(S:0)|up\nn2|b|0/64/0/64|(null)|up\n")
    assert (got["n1"].cpus, got["n1"].alloc, got["n1"].gpus, got["n1"].parts) == (128, 64, 4, {"a", "b"})
    assert (got["n2"].cpus, got["n2"].parts) == (64, {"b"})
    with pytest.raises(ParseError):
        nodes("n1|a|x/y|")
    assert startparts.expand_hostlist("n[1-3,05],gpu1,g[08-10]x") == ["n1", "n2", "n3", "n05", "gpu1", "g08x", "g09x", "g10x"]
    assert startparts.expand_hostlist("") == []


def test_a_job_waiting_for_its_partitions_busy_node_is_not_started_on_the_idle_one():
    # n1 (partition a) is full until NOW + 500 (alice's job started 100 s ago, 600 s limit); n2 (b)
    # is idle. Bob's 128-CPU job of a waits for n1: NOW + 500. As one pool (before) it started on n2's
    # 128 idle CPUs at once; played by pool it starts when alice's ends. Carol's job of b starts now.
    jobs = [job(1, "alice", "a", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "a", "PENDING", 128, 300, prio=100),
            job(3, "carol", "b", "PENDING", 64, 300, prio=50)]
    e, notes = run(jobs)
    assert e["2"].start == NOW + 500 and (e["2"].early, e["2"].late) == (NOW + 500, NOW + 500)
    assert e["3"].start == NOW
    assert e["2"].extra["partition"] == "a" and e["2"].extra["pool"] == "a"
    assert "2 pool(s)" in notes[0] and "a (128 CPUs)" in notes[0] and "b (128 CPUs)" in notes[0]
    # before: one pool of 256 CPUs, bob's job starts now
    old = {x.job_id: x for x in st.estimate(jobs, now=NOW, total_cpus=256, sched=SC)}
    assert old["2"].start == NOW


def test_partitions_over_the_same_or_overlapping_nodes_are_one_pool_as_before():
    # a over n1, n2; b over n2, n3: they share n2, so one pool of 384 CPUs; the estimate is
    # start.estimate's itself (bob's job fits beside alice's in the 256 idle CPUs: now; carol's
    # 64 then wait for the first end, bob's at NOW + 300)
    text = "n1|a|128/0/0/128||up\nn2|a|0/128/0/128||up\nn2|b|0/128/0/128||up\nn3|b|0/128/0/128||up\n"
    jobs = [job(1, "alice", "a", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "a", "PENDING", 256, 300, prio=100),
            job(3, "carol", "b", "PENDING", 64, 300, prio=50)]
    e, notes = run(jobs, text, total_cpus=384)
    ref = {x.job_id: x for x in st.estimate(jobs, now=NOW, total_cpus=384, sched=SC)}
    assert {k: (x.start, x.early, x.late) for k, x in e.items()} == {k: (x.start, x.early, x.late) for k, x in ref.items()}
    assert e["2"].start == NOW and e["3"].start == NOW + 300
    assert "pool" not in e["2"].extra
    assert any("over only some" in n and "a, b" in n for n in notes)
    # a partition over all of the pool's nodes and one over part of them: one pool, the part named
    text2 = "n1|all|0/128/0/128||up\nn2|all|0/128/0/128||up\nn2|half|0/128/0/128||up\n"
    g, _, why = startparts.pools(nodes(text2), [job(7, "x", "all", "PENDING", 1, 60), job(8, "y", "half", "PENDING", 1, 60)])
    assert (len(g), g[0].cpus, g[0].partial, why) == (1, 256, ("half",), "")


def test_one_partition_is_exactly_start_estimate():
    text = "n1|normal*|100/28/0/128||up\nn2|normal*|0/128/0/128||up\n"
    jobs = [job(1, "alice", "normal", "RUNNING", 100, 600, NOW - 100), job(2, "bob", "normal", "PENDING", 200, 300, prio=100),
            job(3, "carol", "normal", "PENDING", 28, 900, prio=50), job(4, "dave", "normal", "PENDING", 64, 60, prio=10)]
    e, notes = run(jobs, text, fractions={"alice": 0.5})
    ref = {x.job_id: x for x in st.estimate(jobs, now=NOW, total_cpus=256, sched=SC, fractions={"alice": 0.5})}
    assert {k: (x.start, x.early, x.late, x.reason) for k, x in e.items()} == \
        {k: (x.start, x.early, x.late, x.reason) for k, x in ref.items()}
    assert notes == []
    assert e["2"].extra["partition"] == "normal"


def test_a_job_of_two_partitions_on_separate_nodes_joins_their_pools():
    # bob's job may run in a or b: the pools merge (256 CPUs), and it starts now on n2. Without it a
    # and b would be two pools; carol's job of a alone waits for n1.
    jobs = [job(1, "alice", "a", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "a,b", "PENDING", 128, 300, prio=100),
            job(3, "carol", "a", "PENDING", 128, 300, prio=50)]
    e, notes = run(jobs)
    assert e["2"].start == NOW
    # carol's (a) job: n2 is taken by bob's until NOW + 300, n1 frees at NOW + 500: the one pool
    # of 256 CPUs sees 128 free at NOW + 300. Slurm would start it at NOW + 500 (a has n1 alone):
    # the approximation of a merged pool, which the notes name
    assert e["3"].start == NOW + 300
    assert any("a, b over only some" in n for n in notes)
    g, of, _ = startparts.pools(nodes(DISJOINT), jobs[:1] + jobs[2:] + [job(4, "dave", "b", "PENDING", 8, 60)])
    assert len(g) == 2 and (of["3"], of["4"]) == (0, 1)


def test_a_partition_sinfo_does_not_list_plays_one_pool_and_says_so():
    jobs = [job(1, "alice", "a", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "hidden", "PENDING", 128, 300, prio=100)]
    e, notes = run(jobs)
    assert e["2"].start == NOW  # as before: one pool of the cluster's 256 CPUs
    assert any("hidden" in n and "one pool" in n for n in notes)


def test_gpus_and_privatedata_count_by_pool():
    # n1 (gpu, 4 GPUs, 64 CPUs) and n2 (cpu, 128 CPUs). Alice holds 2 of n1's GPUs until NOW + 500;
    # bob's 3-GPU job waits for them (his share of the pool: 3 x 64 / 4 = 48 CPUs, 2 GPUs' 32 held).
    text = "n1|gpu|16/48/0/64|gpu:4|up\nn2|cpu|0/128/0/128|(null)|up\n"
    alice = st.StartJob("1", "alice", "a", "gpu", "RUNNING", 16, 600, NOW - 100, 0.0, "None", NOW - 200, gpus=2)
    bob = st.StartJob("2", "bob", "a", "gpu", "PENDING", 8, 300, None, 10.0, "Resources", NOW - 50, gpus=3)
    e, _ = run([alice, bob], text, total_cpus=192, total_gpus=4)
    assert e["2"].start == NOW + 500
    # carol fills n2 (cpu) until NOW + 500; dave's 2-GPU job of gpu finds n1's GPUs free. By pool:
    # 2 x 64 / 4 = 32 CPUs of n1's 64, now. As one pool it counted 2 x 192 / 4 = 96 CPUs of the
    # 64 carol leaves free, and waited for her job
    carol = job(5, "carol", "cpu", "RUNNING", 128, 600, NOW - 100, reason="None")
    dave = st.StartJob("6", "dave", "a", "gpu", "PENDING", 8, 300, None, 10.0, "Resources", NOW - 50, gpus=2)
    e, _ = run([carol, dave], text, total_cpus=192, total_gpus=4)
    assert e["6"].start == NOW
    old = {x.job_id: x for x in st.estimate([carol, dave], now=NOW, total_cpus=192, sched=SC, total_gpus=4)}
    assert old["6"].start == NOW + 500
    # PrivateData: bob sees his own jobs alone; n1 has 16 CPUs allocated (alice's, hidden from him):
    # his 56-CPU job of gpu needs more than the 64 - 16 CPUs he may count on
    big = job(3, "bob", "gpu", "PENDING", 56, 300, prio=5)
    small = job(4, "bob", "cpu", "PENDING", 100, 300, prio=5)
    e, notes = run([big, small], text, total_cpus=192, private=True, hidden_cpus=16)
    assert e["3"].start is None and "PrivateData" in e["3"].reason
    assert any(n.startswith("PrivateData=jobs, by pool") for n in notes)
    assert e["4"].start == NOW  # n2 has nothing hidden


def test_reservations_go_to_the_pool_of_their_nodes():
    # a reservation on n1 (a) from NOW + 100 for an hour: bob's 600 s job of a would run across its
    # start, so it waits for its end; carol's job of b is not delayed by it
    r = Reservation("maint", NOW + 100, NOW + 3700, "n1", 1, 128, frozenset({"MAINT"}))
    jobs = [job(2, "bob", "a", "PENDING", 64, 600, prio=100), job(3, "carol", "b", "PENDING", 64, 600, prio=50)]
    from fscontrol.forecast import resvplan

    wins, skipped, _ = resvplan.windows([r], NOW)
    e, _ = run(jobs, resvs=[r], windows=wins, skipped=skipped)
    assert e["2"].start >= NOW + 3700 and e["2"].extra.get("reservation") == "maint"
    assert e["3"].start == NOW
    # a reservation across both pools: its CPUs shared by its nodes' CPUs in each (ceil)
    g, _, _ = startparts.pools(nodes(DISJOINT), jobs)
    both = Reservation("x", NOW, NOW + 10, "n[1-2]", 2, 200, frozenset())
    assert [x.cpus for x in startparts.pool_reservations([both], g[0], nodes(DISJOINT))] == [100]


def rows(ua, ub):
    return [ShareRow("root", "", "", 0, None, False, 1.0, int(ua + ub), 1.0, 1.0, None),
            ShareRow("A", "", "root", 1, 1, False, None, int(ua), None, None, None),
            ShareRow("A", "alice", "A", 2, 1, False, None, int(ua), None, None, None),
            ShareRow("B", "", "root", 1, 1, False, None, int(ub), None, None, None),
            ShareRow("B", "bob", "B", 2, 1, False, None, int(ub), None, None, None)]


PAIRS = {"PriorityWeightFairShare": "1000", "PriorityFlags": "NO_FAIR_TREE", "FairShareDampeningFactor": "1",
         "PriorityCalcPeriod": "00:01:00", "PriorityDecayHalfLife": "0"}


def test_fair_share_a_running_job_in_one_pool_charges_its_user_in_the_other():
    # tests/test_start_fairshare.py's first case split over two pools: alice's 128-CPU job runs in
    # b (n2) until NOW + 180 and charges her account A; in a (n1), held by carol's job until NOW + 180,
    # alice's job and bob's wait, alice 37 ahead in priority. By NOW + 150 A's usage is 111,520 of
    # 211,520: bob's fair-share lead 37.76 > 37, so bob's starts first (at NOW + 180), as slurmctld's
    # one usage tree would. Charged only with the pool's own jobs, alice's would stay first.
    m, why = startfs.fairshare_model(rows(100_000, 100_000), PAIRS)
    assert m is not None, why
    jobs = [job(1, "alice", "b", "RUNNING", 128, 180, NOW, acct="A", reason="None"),
            job(5, "carol", "a", "RUNNING", 128, 180, NOW, acct="C", reason="None"),
            job(2, "alice", "a", "PENDING", 128, 600, prio=1537, acct="A"),
            job(3, "bob", "a", "PENDING", 128, 600, prio=1500, acct="B")]
    e, notes = run(jobs, fairshare=(m, {}))
    assert (e["3"].start, e["2"].start) == (NOW + 180, NOW + 780)
    assert "running jobs are charged in each" in notes[0]
    # alice's job charged nowhere (the same queue, her job in b left out): hers first
    e2, _ = run([jobs[1], jobs[2], jobs[3]], fairshare=(m, {}))
    assert (e2["2"].start, e2["3"].start) == (NOW + 180, NOW + 780)


def test_fair_share_a_job_the_estimate_starts_in_one_pool_is_not_charged_in_the_other():
    # The approximation (docs/start.md): the same, but alice's job in b is pending and starts now.
    # slurmctld would charge it to A as the running one above (bob first); the estimate charges it
    # only in b's pool, so in a alice's job stays first: a's starts are swapped against Slurm's.
    m, _ = startfs.fairshare_model(rows(100_000, 100_000), PAIRS)
    jobs = [job(1, "alice", "b", "PENDING", 128, 180, prio=1, acct="A"),
            job(5, "carol", "a", "RUNNING", 128, 180, NOW, acct="C", reason="None"),
            job(2, "alice", "a", "PENDING", 128, 600, prio=1537, acct="A"),
            job(3, "bob", "a", "PENDING", 128, 600, prio=1500, acct="B")]
    e, _ = run(jobs, fairshare=(m, {}))
    assert e["1"].start == NOW
    assert (e["2"].start, e["3"].start) == (NOW + 180, NOW + 780)


def test_render_and_json_name_the_partition_with_several_pools():
    jobs = [job(1, "alice", "a", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "a", "PENDING", 128, 300, prio=100)]
    e, notes = run(jobs)
    d = st.to_dict(list(e.values()), now=NOW, sched=SC, notes=notes)
    assert d["jobs"][0]["partition"] == "a" and d["jobs"][0]["pool"] == "a"
    assert "partition a" in sv.render(d)
    assert "; partition a, played apart" in sv.why_line(d["jobs"][0], NOW)
    assert {"job_id", "user", "start", "early", "late", "reason", "squeue_start", "fraction", "reservation",
            "reservation_role"} <= set(d["jobs"][0])


def test_a_partition_without_jobs_joins_no_pools_and_a_job_not_played_gets_its_reason():
    # "all" over both nodes (no jobs) and "parked" (DOWN: its job pends with PartitionDown) join
    # nothing: a and b stay two pools, bob's job of a waits for n1 as above
    text = DISJOINT + "n1|all|128/0/0/128||up\nn2|all|0/128/0/128||up\nn1|parked|128/0/0/128||down\nn2|parked|0/128/0/128||down\n"
    jobs = [job(1, "alice", "a", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "a", "PENDING", 64, 300, prio=100),
            job(3, "carol", "parked", "PENDING", 8, 300, prio=500, reason="PartitionDown")]
    e, notes = run(jobs, text)
    assert e["2"].start == NOW + 500 and e["2"].extra["pool"] == "a"
    assert e["3"].start is None and "PartitionDown" in e["3"].reason and e["3"].extra["partition"] == "parked"
    assert "1 pool(s)" in notes[0] and "a (128 CPUs)" in notes[0]
    # a running job of "all" joins them: one pool of every node, start.estimate's own answer (now: 120
    # of 256 CPUs free)
    e, notes = run(jobs + [job(4, "dave", "all", "RUNNING", 8, 600, NOW - 100)], text)
    assert e["2"].start == NOW and "pool" not in e["2"].extra
    assert notes == ["partition(s) a over only some of the nodes of the pool a,all: played as one pool, as if each of "
                     "its partitions could use all of them"]


def test_a_down_partition_listed_by_a_pending_job_joins_no_pool():
    # (an outside tester's case on the two-node testbed, 2026-11-28: the estimate 136 s early.) a on
    # n1 (full until NOW + 500), b on n2 DOWN, h on n2 (full until NOW + 1000). Alice's job of `a,b`
    # can start only in a (slurmctld starts nothing in a DOWN partition), so a and h stay two pools:
    # carol's job of h waits for h's job, NOW + 1000, not for n1's end as one pool of a, b, h said.
    text = "n1|a|128/0/0/128||up\nn2|b|128/0/0/128||down\nn2|h|128/0/0/128||up\n"
    jobs = [job(1, "dave", "a", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "h", "RUNNING", 128, 1100, NOW - 100),
            job(3, "alice", "a,b", "PENDING", 128, 300, prio=100), job(4, "carol", "h", "PENDING", 128, 300, prio=50)]
    e, notes = run(jobs, text=text)
    assert e["3"].start == NOW + 500 and e["3"].extra["pool"] == "a"
    assert e["4"].start == NOW + 1000 and e["4"].extra["pool"] == "h"
    assert "2 pool(s)" in notes[0]
    # b UP: alice's job may start on n2 too, and the three partitions are one pool (the documented approximation)
    e, notes = run(jobs, text=text.replace("||down", "||up"))
    assert "pool" not in e["3"].extra and not any("pool(s)" in n for n in notes)  # one pool of every node: as before


def test_a_down_or_drained_nodes_cpus_are_not_free():
    # sinfo's A/I/O/T: a DOWN or DRAINED node's CPUs are "other" (O); jobs cannot use them
    got = nodes("n1|a|0/0/128/128||up\nn2|a|64/64/0/128||up\n")
    assert (got["n1"].cpus, got["n2"].cpus) == (0, 128)
    from fscontrol.forecast.startqueue import parse_sinfo

    assert parse_sinfo("n1|128|0/0/128/128\nn2|128|64/64/0/128\n") == (128, 128, 64)
    # the whole cluster's estimate (one pool): bob's 128 CPUs wait for alice's end on n2, not n1's "free" CPUs
    jobs = [job(1, "alice", "a", "RUNNING", 64, 600, NOW - 100), job(2, "bob", "a", "PENDING", 128, 300, prio=100)]
    e = {x.job_id: x for x in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC)}
    assert e["2"].start == NOW + 500


@pytest.mark.parametrize("bad", [
    "n1|a|-1/0/1/0||up",            # a negative count
    "n1|a|64/0/0/128||up",          # A + I + O != T
    "n1|a|0/128/0/128|x|y|up",      # a field too many
    "n1||0/128/0/128||up",          # no partition
    "|a|0/128/0/128||up",           # no node
    "n1|a|0/128/0/128||sideways",   # no such state
    "n1|a|0/128/0/128|",            # the state missing (an older column list)
    "",                             # no node at all
])
def test_doubtful_sinfo_is_refused(bad):
    with pytest.raises(ParseError):
        nodes(bad)


@pytest.mark.parametrize("bad", ["n[1-3", "n1-3]", "n[5-3]", "n[a-c]", "n[1-x]", "n[[1-2]]"])
def test_a_host_list_that_cannot_be_read_is_refused(bad):
    with pytest.raises(ParseError):
        startparts.expand_hostlist(bad)


def test_fair_share_held_where_pending_jobs_times_pools_is_over_the_cap(monkeypatch):
    # each pool played runs its own passes and backfill cycles: charged fair-share costs pools x what
    # one pool costs, so it is held where pending jobs x pools played > startfs.MAX_PENDING (the cost
    # an outside tester measured: 10 pools of 1,000 pending, 2.3-3.6 s charged; 1.0 s held)
    m, _ = startfs.fairshare_model(rows(100_000, 100_000), PAIRS)
    jobs = [job(1, "alice", "b", "PENDING", 128, 180, prio=1, acct="A"),
            job(5, "carol", "a", "RUNNING", 128, 180, NOW, acct="C", reason="None"),
            job(2, "alice", "a", "PENDING", 128, 600, prio=1537, acct="A"),
            job(3, "bob", "a", "PENDING", 128, 600, prio=1500, acct="B")]
    e, notes = run(jobs, fairshare=(m, {}))  # 3 pending x 2 pools = 6, under 8,000: charged
    assert not any(n.startswith("fair-share held") for n in notes)
    monkeypatch.setattr(startfs, "MAX_PENDING", 5)
    e, notes = run(jobs, fairshare=(m, {}))
    held = [n for n in notes if n.startswith("fair-share held")]
    assert len(held) == 1 and "3 jobs pending in the 2 pools" in held[0], notes
    assert (e["1"].start, e["2"].start, e["3"].start) == (NOW, NOW + 180, NOW + 780)  # the priorities of now
    # one pool played (bob's jobs alone asked for): charged, whatever the cap
    e, notes = run(jobs, fairshare=(m, {}), users={"bob"})
    assert not any(n.startswith("fair-share held") for n in notes)


def test_partition_states_set_the_reasons_a_second_tester_found():
    # (B3) every partition of bob's job DOWN, squeue's reason still Priority: not played (PartitionDown);
    # carol's job of c on the same idle node starts now
    text = "n1|a|0/128/0/128||down\nn1|c|0/128/0/128||up\n"
    jobs = [job(2, "bob", "a", "PENDING", 128, 300, prio=100), job(3, "carol", "c", "PENDING", 128, 300, prio=50)]
    e, _ = run(jobs, text=text, total_cpus=128)
    assert e["2"].start is None and "PartitionDown" in (e["2"].reason or ""), e["2"]
    assert e["3"].start == NOW
    # (B4) a job of a,b with b DOWN, squeue's reason PartitionDown: slurmctld starts it in a (idle): now
    text = "n1|a|0/128/0/128||up\nn2|b|0/128/0/128||down\n"
    e, _ = run([job(4, "dave", "a,b", "PENDING", 128, 300, prio=100, reason="PartitionDown")], text=text)
    assert e["4"].start == NOW, e["4"]


def test_a_drained_nodes_gpus_are_not_usable_and_host_lists_stay_ascii():
    got = nodes("g1|gpu|0/0/64/64|gpu:4|up\nc1|gpu|0/64/0/64|(null)|up\n")
    assert (got["g1"].cpus, got["g1"].gpus, got["c1"].gpus) == (0, 0, 0)
    for bad in ("n[\u00b2-3]", "n[1-]", "n]1[", "n]1[2]"):
        with pytest.raises(ParseError):
            startparts.expand_hostlist(bad)


def test_the_fair_share_cap_counts_the_pools_played_only(monkeypatch):
    # 2 jobs in the two pools played (alice's), 3 in a third not played: 2 x 2 = 4 is the cost counted
    m, _ = startfs.fairshare_model(rows(100_000, 100_000), PAIRS)
    text = DISJOINT + "n3|c|0/128/0/128||up\n"
    jobs = [job(1, "alice", "a", "PENDING", 128, 300, prio=10, acct="A"), job(2, "alice", "b", "PENDING", 128, 300, prio=10, acct="A")]
    jobs += [job(10 + k, "bob", "c", "PENDING", 128, 300, prio=5, acct="B") for k in range(3)]
    monkeypatch.setattr(startfs, "MAX_PENDING", 4)
    _, notes = run(jobs, text=text, total_cpus=384, fairshare=(m, {}), users={"alice"})
    assert not any(n.startswith("fair-share held") for n in notes), notes
    monkeypatch.setattr(startfs, "MAX_PENDING", 3)
    _, notes = run(jobs, text=text, total_cpus=384, fairshare=(m, {}), users={"alice"})
    held = [n for n in notes if n.startswith("fair-share held")]
    assert held and "2 jobs pending in the 2 pools" in held[0] and "4 (pending x pools) over the 3" in held[0], notes
