"""The start estimate of a job pending on a dependency (forecast/startdeps.py), worked by hand.

slurmctld keeps such a job out of its queue until the dependency is met (job_scheduler.c
`job_independent`, in the pass after the job it waits for ends), and sets its begin time then;
`_depend_list2str` prints what is left of it (squeue's %E)."""

from __future__ import annotations

from fscontrol.forecast import start as st
from fscontrol.forecast.startdeps import Dep, Rows, members, parse_dep, parse_deps
from fscontrol.sim.slurmsched import SlurmSched

NOW = 1_000_000.0


def job(i, user, state, cpus, limit, start=None, prio=0.0, reason="Priority"):
    return st.StartJob(str(i), user, "a", "normal", state, cpus, limit, start, prio, reason, NOW - 100)


def by_id(ests):
    return {e.job_id: e for e in ests}


def test_squeue_dependency_text_as_slurmctld_writes_it():
    assert parse_dep("afterok:12(unfulfilled)") == Dep((("end", "12", 0.0),), False, text="afterok:12(unfulfilled)")
    d = parse_dep("afterany:12_*(unfulfilled)?after:13+5(unfulfilled)")
    assert d.refs == (("end", "12_*", 0.0), ("start", "13", 300.0)) and d.any_of
    assert parse_dep("aftercorr:7_3(unfulfilled),afterok:8(unfulfilled)").refs == (("end", "7_3", 0.0), ("end", "8", 0.0))
    assert parse_dep("(null)") == Dep() and parse_dep("") == Dep()
    assert "fails" in parse_dep("afternotok:5(unfulfilled)").why
    assert "singleton" in parse_dep("singleton(unfulfilled)").why
    assert "can no longer be met" in parse_dep("afterok:5(failed)").why
    assert "does not read" in parse_dep("afterok:5").why  # (no state: not slurmctld's text)
    assert set(parse_deps("1|afterok:2(unfulfilled)\n3|(null)\n4|singleton(unfulfilled)\n")) == {"1", "4"}


def test_an_array_reference_names_its_rows():
    ids = Rows(["10_1", "10_2", "10_[3-6%2]", "11", "100_1"])
    assert members("10_*", ids) == ["10_1", "10_2", "10_[3-6%2]"]
    assert members("10_4", ids) == ["10_[3-6%2]"] and members("10_2", ids) == ["10_2"]
    assert members("11", ids) == ["11"] and members("12", ids) == [] and members("10_9", ids) == []


def test_a_dependent_job_starts_when_its_dependency_is_met():
    """17 CPUs. Alice's job A runs on 12 until NOW + 500, R on 4 (started 100 s ago, a 1000-s
    limit), N on 1 with no time limit (no history: each runs to its limit). Bob's B (8 CPUs,
    afterok:A) is eligible at A's end, NOW + 500, as is erin's E (1 CPU, afterok:A or afterok:Z,
    Z not in the queue: the one it can see). Dave's D (3 CPUs, after:R+11: R's start + 11 minutes,
    NOW + 560) starts then on the 3 CPUs B and E leave. Carol's C (afterany:B, B pending) gets a
    reason (the estimate does not chain plans), as do afterok:Z alone, afternotok, singleton and
    a job waiting on N (no time limit)."""
    jobs = [job("101", "alice", "RUNNING", 12, 600, NOW - 100), job("120", "rob", "RUNNING", 4, 1000, NOW - 100),
            job("130", "nat", "RUNNING", 1, None, NOW - 100),
            job("102", "bob", "PENDING", 8, 300, prio=50, reason="Dependency"),
            job("103", "carol", "PENDING", 8, 300, prio=40, reason="Dependency"),
            job("104", "dave", "PENDING", 3, 300, prio=30, reason="Dependency"),
            job("105", "erin", "PENDING", 1, 300, prio=20, reason="Dependency"),
            job("106", "fred", "PENDING", 1, 300, prio=10, reason="Dependency"),
            job("107", "gina", "PENDING", 1, 300, prio=5, reason="Dependency"),
            job("108", "hal", "PENDING", 1, 300, prio=4, reason="Dependency"),
            job("109", "ida", "PENDING", 1, 300, prio=3, reason="Dependency")]
    deps = parse_deps("102|afterok:101(unfulfilled)\n103|afterany:102(unfulfilled)\n104|after:120+11(unfulfilled)\n"
                      "105|afterok:101(unfulfilled)?afterok:199(unfulfilled)\n106|afterok:199(unfulfilled)\n"
                      "107|afternotok:101(unfulfilled)\n108|singleton(unfulfilled)\n109|afterok:130(unfulfilled)\n")
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=17, sched=SlurmSched(node_cpus=17), deps=deps))
    got = {k: (None if x.start is None else x.start - NOW) for k, x in e.items()}
    assert got == {"102": 500, "103": None, "104": 560, "105": 500, "106": None, "107": None, "108": None,
                   "109": None}, got
    assert "itself pending" in e["103"].reason and "199" in e["106"].reason and "fails" in e["107"].reason
    assert "singleton" in e["108"].reason and "no time limit" in e["109"].reason
    assert e["104"].extra["dependency"] == "after:120+11(unfulfilled)"
    # without the dependencies read: each waits for "Dependency", as before
    old = by_id(st.estimate(jobs, now=NOW, total_cpus=17, sched=SlurmSched(node_cpus=17)))
    assert all(x.start is None and x.reason.startswith("waits for Dependency") for x in old.values())
    # asked about one job (why, start -j): the same answer
    for k in ("102", "104", "105"):
        one = by_id(st.estimate(jobs, now=NOW, total_cpus=17, sched=SlurmSched(node_cpus=17), deps=deps, job_ids={k}))
        assert one[k].start == e[k].start, k


def test_a_het_job_an_array_and_own_ids():
    """A heterogeneous job's components (400+0, 400+1) and an array's tasks (300_1, 300_2: the
    last end), and a task named by its own id (%A 130 of 123_4), are what %E names."""
    from dataclasses import replace

    jobs = [job("400+0", "alice", "RUNNING", 2, 600, NOW - 100), job("400+1", "alice", "RUNNING", 2, 900, NOW - 100),
            job("300_1", "bob", "RUNNING", 2, 600, NOW - 100), job("300_2", "bob", "RUNNING", 2, 1000, NOW - 100),
            replace(job("123_4", "carol", "RUNNING", 2, 700, NOW - 100), own_id="130"),
            job("401", "dave", "PENDING", 1, 60, prio=5, reason="Dependency"),
            job("301", "erin", "PENDING", 1, 60, prio=4, reason="Dependency"),
            job("131", "fred", "PENDING", 1, 60, prio=3, reason="Dependency"),
            job("302", "gina", "PENDING", 1, 60, prio=2, reason="Dependency")]
    deps = parse_deps("401|afterok:400(unfulfilled)\n301|afterany:300_*(unfulfilled)\n131|afterok:130(unfulfilled)\n"
                      "302|afterok:300+10(unfulfilled)\n")
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=20, sched=SlurmSched(node_cpus=20), deps=deps))
    got = {k: (None if x.start is None else x.start - NOW) for k, x in e.items()}
    # (302's `+10` is read for `after` alone, as slurmctld does; the array's id names all its tasks)
    assert got == {"401": 800, "301": 900, "131": 600, "302": 900}, got


def test_a_job_behind_takes_the_cpus_before_the_dependency_is_met():
    """32 CPUs. Alice's A runs on 16 until NOW + 500. Bob's B (32 CPUs, afterok:A, priority 100)
    cannot be eligible before then; dave's D (16 CPUs, an hour, priority 50) is the only eligible
    job and starts now, so B waits for D's end at its limit: NOW + 3600. Asked about bob's job alone, the jobs behind it are played too (a cut at
    the last asked job would miss D and say NOW + 500)."""
    jobs = [job("101", "alice", "RUNNING", 16, 600, NOW - 100),
            job("102", "bob", "PENDING", 32, 300, prio=100, reason="Dependency"),
            job("104", "dave", "PENDING", 16, 3600, prio=50)]
    deps = parse_deps("102|afterok:101(unfulfilled)\n")
    whole = by_id(st.estimate(jobs, now=NOW, total_cpus=32, sched=SlurmSched(node_cpus=32), deps=deps))
    assert whole["104"].start == NOW and whole["102"].start == NOW + 3600, {k: v.start - NOW for k, v in whole.items()}
    mine = by_id(st.estimate(jobs, now=NOW, total_cpus=32, sched=SlurmSched(node_cpus=32), deps=deps, users={"bob"}))
    assert mine["102"].start == NOW + 3600


def test_squeue_dependency_text_failed_parts_and_minutes():
    """An any-of list with a part failed still waits for the others (test_job_dependency fails
    the job only when none is left unfulfilled); `+minutes` is read for `after` alone (the
    outside tester's cases, 2026-11-29)."""
    d = parse_dep("afterok:1001(failed)?afterok:1002(unfulfilled)")
    assert d.refs == (("end", "1002", 0.0),) and d.any_of and not d.why
    assert "can no longer be met" in parse_dep("afterok:1001(failed),afterok:1002(unfulfilled)").why
    assert parse_dep("afterok:1002+10(unfulfilled)").refs == (("end", "1002", 0.0),)


def test_partitions_on_separate_nodes():
    """Two partitions on separate nodes (a: n1, b: n2, 16 CPUs each), each played on its own
    (startparts). In a: job 500 runs until NOW + 500 and 501 (afterok:500) waits for it: NOW +
    500. 502 waits for 510, which runs in b until NOW + 300: then, behind 501, at NOW + 1100."""
    from fscontrol.forecast import startparts

    def pj(i, user, state, cpus, limit, start=None, prio=0.0, reason="Priority", part="a"):
        return st.StartJob(str(i), user, "acct", part, state, cpus, limit, start, prio, reason, NOW - 100)

    nodes = {"n1": startparts.Node(16, 16, 0, {"a"}), "n2": startparts.Node(16, 16, 0, {"b"})}
    jobs = [pj(500, "u", "RUNNING", 16, 600, NOW - 100), pj(501, "u", "PENDING", 16, 600, prio=50, reason="Dependency"),
            pj(502, "u", "PENDING", 16, 600, prio=40, reason="Dependency"),
            pj(510, "v", "RUNNING", 16, 400, NOW - 100, part="b"), pj(511, "v", "PENDING", 16, 600, prio=40, part="b")]
    deps = parse_deps("501|afterok:500(unfulfilled)\n502|afterok:510(unfulfilled)\n")
    ests, _ = startparts.estimate_pools(jobs, nodes, st.estimate, now=NOW, total_cpus=32,
                                        sched=SlurmSched(node_cpus=16), deps=deps)
    e = by_id(ests)
    assert e["501"].start == NOW + 500 and e["511"].start == NOW + 300, {k: v.start for k, v in e.items()}
    # (510's end is known, whatever the pool: 502 at +300, behind 501 in its pool: +1100; the same
    # with fair-share held, an outside tester's case)
    assert e["502"].start == NOW + 1100, e["502"]


def test_the_cut_with_a_job_ahead_not_yet_eligible():
    """32 CPUs (an outside tester's case, 2026-11-29). R0 (1 CPU) ends at NOW + 60, R1 (16 CPUs)
    at + 1000. D (priority 100, 15 CPUs, 600 s) waits afterok:R0; X (50, 32 CPUs) waits for R1; B
    (10, 15 CPUs, 900 s, ending before X's plan) backfills now, as D is not yet in slurmctld's
    queue (job_independent): at +60 D finds 1 CPU free and waits for B (+900), X for D (+1500).
    Asked about X alone (`-j`, `-u`, `why`), B behind it is played too: the same +1500. And the
    same with a begin time in place of the dependency."""
    from dataclasses import replace

    jobs = [job(10, "r", "RUNNING", 1, 160, NOW - 100), job(11, "r", "RUNNING", 16, 1100, NOW - 100),
            job(20, "d", "PENDING", 15, 600, prio=100, reason="Dependency"),
            job(21, "x", "PENDING", 32, 600, prio=50), job(22, "b", "PENDING", 15, 900, prio=10)]
    deps = parse_deps("20|afterok:10(unfulfilled)\n")
    sc = SlurmSched(node_cpus=32)
    for js, dd in ((jobs, deps), ([replace(j, reason="BeginTime", start=NOW + 60) if j.job_id == "20" else j
                                   for j in jobs], None)):
        whole = by_id(st.estimate(js, now=NOW, total_cpus=32, sched=sc, deps=dd))
        assert (whole["22"].start, whole["20"].start, whole["21"].start) == (NOW + 15, NOW + 915, NOW + 1515), \
            {k: v.start - NOW for k, v in whole.items()}
        for kw in ({"job_ids": {"21"}}, {"users": {"x"}}):
            assert by_id(st.estimate(js, now=NOW, total_cpus=32, sched=sc, deps=dd, **kw))["21"].start == NOW + 1515, kw


def test_a_completing_job_and_an_array_listed_with_a_step():
    """A job waited for that is COMPLETING has ended: the dependency is met as it completes (now),
    not at its start + limit. A pending array listed with a step (`300_[1-21:2]`, slurmctld's
    xlate_array_task_str) holds tasks 1, 3, ... 21: a job on task 5 waits on a pending job."""
    jobs = [job(700, "u", "COMPLETING", 16, 7200, NOW - 600), job(701, "v", "PENDING", 16, 600, prio=50, reason="Dependency"),
            job("300_[1-21:2]", "w", "PENDING", 1, 60, prio=1),
            job(702, "v", "PENDING", 1, 60, prio=40, reason="Dependency"),
            job(703, "v", "PENDING", 1, 60, prio=30, reason="Dependency")]
    deps = parse_deps("701|afterok:700(unfulfilled)\n702|afterok:300_5(unfulfilled)\n703|afterok:300_4(unfulfilled)\n")
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=32, sched=SlurmSched(node_cpus=32), deps=deps))
    assert e["701"].start - NOW < 60 and e["701"].late - NOW < 60, (e["701"].start - NOW, e["701"].late - NOW)
    assert "itself pending" in e["702"].reason and "not among" in e["703"].reason, (e["702"].reason, e["703"].reason)
