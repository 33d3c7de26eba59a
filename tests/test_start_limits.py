"""Association and QOS limits in the start estimate (forecast/startlimits.py, issue #32 item 4).

Each case's expected start is worked out by hand in its comment; the rules are slurmctld's
(acct_policy.c): a held job is passed by in the main pass and gets no plan in backfill; a QOS's
limit of a kind masks the associations' of that kind; an account's MaxJobs is the default of the
associations below it."""

from __future__ import annotations

import math

import pytest

from fscontrol.errors import ParseError
from fscontrol.forecast import start as st
from fscontrol.forecast import startlimits as sl
from fscontrol.model import acctpolicy as ap
from fscontrol.sim.slurmsched import SlurmSched
from fscontrol.slurm import tres

NOW = 1_000_000.0
SC = SlurmSched(node_cpus=128)


def job(i, user, state, cpus, limit, start=None, prio=0.0, reason="Priority", account="physics"):
    return st.StartJob(str(i), user, account, "normal", state, cpus, limit, start, prio, reason, NOW - 100)


def assoc(account, user="", parent="root", jobs=None, grp_cpus=None):
    return tres.AssocLimits(account, user, parent, {"GrpTRES": {"cpu": grp_cpus}} if grp_cpus else {}, jobs or {})


def qos(name, jobs=None, tres_=None):
    return tres.AssocLimits(name, "", "", tres_ or {}, jobs or {})


TREE = [assoc("root", parent=""), assoc("physics"), assoc("physics", "alice", "physics"),
        assoc("physics", "bob", "physics"), assoc("chem"), assoc("chem", "carol", "chem")]


def limits_of(jobs, assocs=TREE, qoss=(), qos_of=None, hidden=False, part_qos=None, over=()):
    q = {j.job_id: ap.qos_order((qos_of or {}).get(j.job_id, "normal"), j.partition, part_qos or {}, over) for j in jobs}
    keys = {(j.account, j.user, q[j.job_id]) for j in jobs}
    return (ap.model(assocs, qoss, keys), q, hidden)


def by_id(ests):
    return {e.job_id: e for e in ests}


def test_qos_max_jobs_per_user_starts_each_held_job_at_the_end_before_it():
    # QOS normal MaxJobsPU=1: alice's job runs to NOW + 200 (started 100 s ago, 300 s limit, no
    # history: to the limit); her two pending jobs wait for it one after the other (the main pass
    # at its end starts the first: NOW + 200; the second at the first's end, NOW + 200 + 300).
    # Carol's job, behind them in priority, starts now: the held jobs never stop the main pass.
    jobs = [job(1, "alice", "RUNNING", 4, 300, NOW - 100),
            job(2, "alice", "PENDING", 4, 300, prio=100, reason="QOSMaxJobsPerUserLimit"),
            job(3, "alice", "PENDING", 4, 300, prio=90, reason="QOSMaxJobsPerUserLimit"),
            job(4, "carol", "PENDING", 4, 300, prio=10, account="chem")]
    lim = limits_of(jobs, qoss=[qos("normal", {"MaxJobsPU": 1})])
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert (e["2"].start, e["3"].start, e["4"].start) == (NOW + 200, NOW + 500, NOW)
    # without the limits read the held jobs get squeue's reason, no time
    e0 = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC))
    assert e0["2"].start is None and "QOSMaxJobsPerUserLimit" in e0["2"].reason


def test_an_accounts_grp_cpus_count_its_whole_subtree():
    # physics GrpTRES=cpu=8: alice's 4 CPUs and bob's 4 run (to NOW + 200 and NOW + 400); bob's
    # 4-CPU job waits for the first of them to end (NOW + 200); alice's 8-CPU job then for both
    # (4 + 8 > 8 while bob's new job runs: to its end, NOW + 200 + 300); carol's (chem) starts now
    jobs = [job(1, "alice", "RUNNING", 4, 300, NOW - 100), job(2, "bob", "RUNNING", 4, 500, NOW - 100),
            job(3, "bob", "PENDING", 4, 300, prio=100, reason="AssocGrpCpuLimit"),
            job(4, "alice", "PENDING", 8, 300, prio=90, reason="AssocGrpCpuLimit"),
            job(5, "carol", "PENDING", 64, 300, prio=10, account="chem")]
    tree = [a if (a.account, a.user) != ("physics", "") else assoc("physics", grp_cpus=8) for a in TREE]
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=limits_of(jobs, tree)))
    assert (e["3"].start, e["4"].start, e["5"].start) == (NOW + 200, NOW + 500, NOW)


def test_an_accounts_max_jobs_is_the_default_of_its_users_and_a_qos_limit_masks_it():
    # physics MaxJobs=1 (its users set none: theirs); alice runs one job: her next waits for it (NOW + 200)
    jobs = [job(1, "alice", "RUNNING", 4, 300, NOW - 100), job(2, "alice", "PENDING", 4, 300, prio=100,
                                                              reason="AssocMaxJobsLimit")]
    tree = [a if (a.account, a.user) != ("physics", "") else assoc("physics", jobs={"MaxJobs": 1}) for a in TREE]
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=limits_of(jobs, tree)))
    assert e["2"].start == NOW + 200
    # the QOS's MaxJobsPU=2 masks MaxJobs (acct_policy.c: `qos_rec.max_jobs_pu == INFINITE && ...`):
    # she may run two, the second starts now (squeue's reason, from before the QOS changed, is
    # not held by what was read: the job keeps it)
    lim = limits_of(jobs, tree, [qos("normal", {"MaxJobsPU": 2})])
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert e["2"].start is None and e["2"].reason.startswith("waits for AssocMaxJobsLimit: the limits read do not hold")
    jobs[1] = job(2, "alice", "PENDING", 4, 300, prio=100)
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert e["2"].start == NOW


def test_backfill_starts_no_more_of_a_users_jobs_than_the_limit():
    # 28 CPUs free; dave's head (128 CPUs) waits for alice's first job (100 CPUs, to NOW + 1000):
    # the main pass stops at it, so only backfill starts the small jobs behind, at its first cycle
    # (NOW + bf_interval / 2). Bob's QOS (MaxJobsPU=1): one of his two 4-CPU, 100-s jobs then, the
    # other at the first cycle after that one ends (+100 s: NOW + 15 + 100 = NOW + 115, cycles at
    # NOW + 15 + 30k: NOW + 135); without the limit both at NOW + 15
    jobs = [job(1, "alice", "RUNNING", 100, 1000, NOW), job(2, "dave", "PENDING", 128, 600, prio=100, reason="Resources",
                                                            account="chem"),
            job(3, "bob", "PENDING", 4, 100, prio=50), job(4, "bob", "PENDING", 4, 100, prio=40)]
    first = NOW + SC.bf_interval_s / 2
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC))
    assert e["3"].start == e["4"].start == first
    lim = limits_of(jobs, qoss=[qos("normal"), qos("bobs", {"MaxJobsPU": 1})], qos_of={"3": "bobs", "4": "bobs"})
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert e["3"].start == first
    assert e["4"].start == first + 4 * SC.bf_interval_s  # NOW + 135: the first cycle from NOW + 115
    assert e["2"].start == NOW + 1000


def test_past_bf_window_a_held_job_waits_for_a_job_of_its_limit_to_end():
    # bf_window is a day: alice's running job ends in two (limit 2 days + 100 s, started 100 s
    # ago); her pending job (MaxJobsPU=1) starts then, in the plan's first-fit part past bf_window,
    # while bob's job (lower priority) starts now
    two_days = 2 * 86400.0
    jobs = [job(1, "alice", "RUNNING", 4, two_days + 100, NOW - 100),
            job(2, "alice", "PENDING", 4, 300, prio=100, reason="QOSMaxJobsPerUserLimit"),
            job(3, "bob", "PENDING", 4, 300, prio=10)]
    lim = limits_of(jobs, qoss=[qos("normal", {"MaxJobsPU": 1})])
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert e["2"].start == NOW + two_days and e["3"].start == NOW


def test_private_data_counts_only_the_users_own_limits():
    # under PrivateData=jobs the account's GrpJobs counts jobs the user cannot see: not counted, and a
    # job squeue shows held by it keeps its reason; the QOS's MaxJobsPU (her own jobs) still holds
    jobs = [job(1, "alice", "RUNNING", 4, 300, NOW - 100),
            job(2, "alice", "PENDING", 4, 300, prio=100, reason="AssocGrpJobsLimit"),
            job(3, "alice", "PENDING", 4, 300, prio=90, reason="QOSMaxJobsPerUserLimit")]
    tree = [a if (a.account, a.user) != ("physics", "") else assoc("physics", jobs={"GrpJobs": 1}) for a in TREE]
    lim = limits_of(jobs, tree, [qos("normal", {"MaxJobsPU": 1})], hidden=True)
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert e["2"].start is None and "AssocGrpJobsLimit" in e["2"].reason
    assert e["3"].start == NOW + 200


def test_model_masks_and_inherits_as_acct_policy_does():
    tree = [assoc("root", parent="", jobs={"GrpJobs": 100}), assoc("physics", jobs={"MaxJobs": 3, "GrpJobs": 10}),
            assoc("physics", "alice", "physics", jobs={"MaxJobs": 5}), assoc("physics", "bob", "physics")]
    m = ap.model(tree, [qos("normal"), qos("big", {"GrpJobs": 7, "MaxJobsPA": 2}, {"MaxTRESPU": {"cpu": 64}})],
                 {("physics", "alice", "normal"), ("physics", "bob", "normal"), ("physics", "alice", "big")})
    got = {k: {x.name: (x.jobs, x.cpus) for x in v} for k, v in m.of.items()}
    assert got[("physics", "alice", "normal")] == {"association physics/alice": (5, math.inf),
                                                   "account physics": (10, math.inf), "account root": (100, math.inf)}
    assert got[("physics", "bob", "normal")]["association physics/bob"] == (3, math.inf)  # the account's MaxJobs
    # the QOS's GrpJobs masks every level's; its MaxJobsPA masks MaxJobs
    assert got[("physics", "alice", "big")] == {"qos big": (7, math.inf), "qos big, user alice": (math.inf, 64),
                                                "qos big, account physics": (2, math.inf)}
    assert m.own[("physics", "alice", "big")] == {"qos big, user alice"}


def test_the_qos_read_takes_the_per_user_and_per_account_columns():
    text = ("Name|GrpTRESMins|GrpTRESRunMins|MaxTRESMins|GrpTRES|GrpJobs|MaxJobsPU|MaxSubmitPU|MaxTRESPU|MaxJobsPA|MaxTRESPA\n"
            "normal||||cpu=64|10|2||cpu=16|3|cpu=32\n")
    (q,) = tres.parse_qos_limits(text, " ".join(tres.QOS_LIMITS_ARGS))
    assert q.jobs == {"GrpJobs": 10, "MaxJobsPU": 2, "MaxJobsPA": 3}
    assert q.tres == {"GrpTRES": {"cpu": 64.0}, "MaxTRESPU": {"cpu": 16.0}, "MaxTRESPA": {"cpu": 32.0}}
    with pytest.raises(ParseError):
        tres.parse_qos_limits(text.replace("cpu=16", "cpu=lots"), " ".join(tres.QOS_LIMITS_ARGS))


@pytest.mark.parametrize("seed", range(200))
def test_the_gate_starts_what_testing_every_held_job_anew_starts(seed, monkeypatch):
    """Random queues under random limits (MaxJobsPU, GrpTRES=cpu on accounts, a QOS's GrpJobs), some
    past bf_window (limits of up to 3 days): forecast/startlimits.Gate's estimates are those of the
    brute-force reference (tests/start_limits_reference.py: every held job tested anew, and offered
    again at every event), job by job."""
    import random

    from start_limits_reference import NaiveGate

    rng = random.Random(seed)
    users = [f"u{k}" for k in range(6)]
    acct = {u: f"a{k % 2}" for k, u in enumerate(users)}
    jobs = []
    for k in range(rng.randint(2, 12)):
        u = rng.choice(users)
        lim = rng.choice([600.0, 3600.0, 3 * 86400.0])
        jobs.append(st.StartJob(f"r{k}", u, acct[u], "normal", "RUNNING", rng.randint(1, 40), lim,
                                NOW - rng.uniform(0, lim), 0.0, "None", NOW - lim))
    for k in range(rng.randint(10, 60)):
        u = rng.choice(users)
        jobs.append(st.StartJob(f"p{k}", u, acct[u], "normal", "PENDING", rng.randint(1, 64),
                                rng.choice([300.0, 3600.0, 2 * 86400.0]), None, float(rng.randrange(10**6)),
                                "Priority", NOW - 60))
    tree = [assoc("root", parent="")] + [assoc(f"a{k}", grp_cpus=rng.choice([None, 32, 64])) for k in range(2)]
    tree += [assoc(acct[u], u, acct[u]) for u in users]
    qoss = [qos("normal", {"MaxJobsPU": rng.randint(1, 3), **({"GrpJobs": 6} if rng.random() < 0.5 else {})})]
    lim = limits_of(jobs, tree, qoss)
    fr = {u: rng.uniform(0.2, 1.0) for u in users}
    extra = {}
    if seed % 3 == 0:  # the age term growing: the queue re-sorted at the passes (Gate.active's order anew)
        from dataclasses import replace

        jobs = [replace(j, submit=NOW - rng.uniform(0, 8 * 86400)) if j.state == "PENDING" else j for j in jobs]
        extra["age"] = (1e6, 7 * 86400.0, 300.0)
    got = {e.job_id: (e.start, e.late) for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, fractions=fr,
                                                            limits=lim, **extra)}
    monkeypatch.setattr(sl, "Gate", NaiveGate)
    want = {e.job_id: (e.start, e.late) for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, fractions=fr,
                                                             limits=lim, **extra)}
    assert got == want


@pytest.mark.parametrize("seed", range(30))
def test_one_users_estimate_is_the_whole_queues_for_them(seed):
    """Asked about one user's jobs, the estimate leaves out the jobs behind the last of them (the
    cost) only when none of the user's jobs counts towards a limit (else a job behind could start
    while theirs is held, and take the room of a limit they share); either way the user's estimates
    are those of the whole queue played."""
    import random

    rng = random.Random(seed)
    users = [f"u{k}" for k in range(5)]
    acct = {u: "a0" if k < 3 else "a1" for k, u in enumerate(users)}
    qos_of: dict[str, str] = {}
    jobs = []
    for k in range(rng.randint(1, 8)):
        u = rng.choice(users)
        jobs.append(st.StartJob(f"r{k}", u, acct[u], "normal", "RUNNING", rng.randint(1, 60), 3600.0,
                                NOW - rng.uniform(0, 3600), 0.0, "None", NOW - 3600))
    for k in range(rng.randint(5, 40)):
        u = rng.choice(users)
        jobs.append(st.StartJob(f"p{k}", u, acct[u], "normal", "PENDING", rng.randint(1, 80), rng.choice([600.0, 7200.0]),
                                None, float(rng.randrange(10**6)), "Priority", NOW - 60))
    for j in jobs:
        qos_of[j.job_id] = "free" if j.user == "u0" else "normal"
    tree = [assoc("root", parent=""), assoc("a0"), assoc("a1", grp_cpus=rng.choice([None, 48]))]
    tree += [assoc(acct[u], u, acct[u]) for u in users]
    lim = limits_of(jobs, tree, [qos("normal", {"MaxJobsPU": rng.randint(1, 2)}), qos("free")], qos_of)
    whole = {e.job_id: (e.start, e.late) for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim)}
    for u in ("u0", "u1", "u4"):
        got = {e.job_id: (e.start, e.late) for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim,
                                                                users={u})}
        assert got == {k: v for k, v in whole.items() if k in got}, u


def test_held_jobs_do_not_count_towards_bf_max_job_test():
    """backfill.c passes a job held by a limit on running jobs by (`acct_policy_job_runnable_pre_select`,
    l.2033 in 22.05) before it counts towards bf_max_job_test (`bf_last_depth_try++`, l.2480): bob's
    4-CPU job behind 600 of alice's held jobs (MaxJobsPU=1) still backfills at the first cycle
    (NOW + 15), ahead of dave's whole-node head, which waits for both running jobs (an outside
    tester's case: bob's started 33,525 s later while the held jobs took the cycle's 500 tests)."""
    jobs = [job(1, "alice", "RUNNING", 4, 3000, NOW - 100), job(2, "dave", "RUNNING", 100, 1100, NOW - 100, account="chem"),
            job(3, "dave", "PENDING", 128, 600, prio=10000, reason="Resources", account="chem")]
    jobs += [job(100 + k, "alice", "PENDING", 4, 300, prio=5000 - k, reason="QOSMaxJobsPerUserLimit") for k in range(600)]
    jobs += [job(50, "bob", "PENDING", 4, 300, prio=10)]
    lim = limits_of(jobs, qoss=[qos("normal", {"MaxJobsPU": 1}), qos("other")], qos_of={"2": "other", "3": "other", "50": "other"})
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim, job_ids={"50", "3"}))
    assert e["50"].start == NOW + SC.bf_interval_s / 2
    assert e["3"].start == NOW + 2900  # (the whole node: once alice's running job has ended too)


def test_a_completing_job_counts_towards_no_limit():
    # slurmctld gives a job's limits back as it ends (deallocate_nodes: acct_policy_job_fini), before
    # its epilog: alice's COMPLETING job holds no MaxJobsPU=1 room, her next starts now
    jobs = [job(1, "alice", "COMPLETING", 4, 86400, NOW - 60),
            job(2, "alice", "PENDING", 4, 300, prio=100, reason="QOSMaxJobsPerUserLimit")]
    lim = limits_of(jobs, qoss=[qos("normal", {"MaxJobsPU": 1})])
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    # (squeue's reason is from before the end: the limits read do not hold it now, so it keeps it)
    assert e["2"].start is None and "do not hold it now" in e["2"].reason
    jobs[1] = job(2, "alice", "PENDING", 4, 300, prio=100)
    assert by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))["2"].start == NOW


def test_a_job_no_limit_lets_run_never_starts_and_says_so():
    # slurmctld keeps pending for ever a job that asks for more CPUs than a limit allows, or whose
    # limit allows no running job (acct_policy.c, TRES_USAGE_REQ_EXCEEDS_LIMIT): no time, the reason
    jobs = [job(1, "alice", "PENDING", 16, 300, prio=100, reason="AssocGrpCpuLimit"),
            job(2, "bob", "PENDING", 4, 300, prio=50, reason="QOSGrpJobsLimit", account="chem")]
    tree = [a if (a.account, a.user) != ("physics", "") else assoc("physics", grp_cpus=8) for a in TREE]
    tree.append(assoc("chem", "bob", "chem"))
    lim = limits_of(jobs, tree, [qos("normal"), qos("none", {"GrpJobs": 0})], {"2": "none"})
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert e["1"].start is None and e["1"].reason == ("never starts under its limits: it asks for 16 CPUs, more than the 8 "
                                                      "account physics allows running at once"), e["1"].reason
    assert e["2"].start is None and e["2"].reason == "never starts under its limits: qos none allows no running job"


def test_a_job_a_start_of_the_cycle_puts_under_a_limit_is_passed_by_uncounted():
    """A start in a backfill cycle counts towards its limits at once (acct_policy_job_begin), so the
    same user's next jobs are passed by (pre_select) uncounted in that very cycle: bob's job behind
    600 of alice's 20-s jobs (MaxJobsPU=1, none running: none held when the cycle begins) starts in
    the first cycle beside her first (an outside tester's case: +3,075 s when the cycle counted her
    other 599 towards its 500 tests)."""
    jobs = [job(2, "dave", "RUNNING", 100, 5000, NOW - 100, account="chem"),
            job(3, "dave", "PENDING", 128, 600, prio=10000, reason="Resources", account="chem")]
    jobs += [job(100 + k, "alice", "PENDING", 4, 20, prio=5000 - k) for k in range(600)]
    jobs += [job(50, "bob", "PENDING", 4, 300, prio=10)]
    lim = limits_of(jobs, qoss=[qos("normal", {"MaxJobsPU": 1}), qos("other")], qos_of={"2": "other", "3": "other", "50": "other"})
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    first = NOW + SC.bf_interval_s / 2
    assert e["50"].start == e["100"].start == first and e["101"].start == first + SC.bf_interval_s


@pytest.mark.parametrize("order,want", [(("normal", "big", "big", "big"), (0, 0, 0, 300)),
                                        (("big", "big", "normal", "normal"), (0, 0, 300, 600))])
def test_a_qos_that_masks_a_limit_still_counts_towards_it(order, want):
    """slurmctld adds every job to its association's use (acct_policy.c `_adjust_limit_usage`), and a
    QOS's limit of a kind masks the association's only for the jobs of that QOS (the checks, l.3543,
    l.3603). Alice's association: MaxJobs=1, GrpJobs=3; QOS big: MaxJobsPU=5 (it masks MaxJobs). Her
    four 300-s jobs in priority order: a normal job is held while any of hers runs (MaxJobs=1 counts
    the big ones too); a big one while three run (GrpJobs). (An outside tester's case: the estimate
    counted a job only towards the limits it was checked against, and the first QOS seen set the
    association's cap for all.)"""
    jobs = [job(k + 1, "alice", "PENDING", 4, 300, prio=100 - k) for k in range(4)]
    tree = [a if (a.account, a.user) != ("physics", "alice") else assoc("physics", "alice", "physics",
                                                                         jobs={"MaxJobs": 1, "GrpJobs": 3}) for a in TREE]
    lim = limits_of(jobs, tree, [qos("normal"), qos("big", {"MaxJobsPU": 5})], {str(k + 1): q for k, q in enumerate(order)})
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert tuple(e[str(k + 1)].start - NOW for k in range(4)) == want


def test_qos_order_is_slurmctlds():
    # acct_policy_set_qos_order: the partition's QOS first unless the job's has OverPartQOS; one
    # QOS alone when the partition has none or the same; names matched whatever their case
    pq = {"normal": "PartQ", "gpu": "", "debug": "normal"}
    assert ap.qos_order("normal", "normal", pq, ()) == "partq>normal"
    assert ap.qos_order("high", "normal", pq, {"High"}) == "high>partq"
    assert ap.qos_order("normal", "gpu", pq, ()) == "normal"
    assert ap.qos_order("normal", "debug", pq, ()) == "normal"
    assert ap.qos_order("high,normal", "normal,gpu", pq, ()) == "partq>high"  # (their first of each)
    assert ap.qos_order("", "normal", pq, ()) == "partq"


def test_a_kind_of_limit_is_the_first_qos_s_that_sets_it_on_that_qos_s_usage():
    # partition QOS pq: GrpJobs=2, MaxJobsPU=1; the job's QOS normal: MaxJobsPU=3, GrpTRES=cpu=16.
    # pq first: MaxJobsPU=1 (pq's, counted over pq's jobs), GrpJobs=2 (pq's); GrpTRES=cpu=16 is
    # normal's, pq sets none (acct_policy.c's qos_rec fills a kind only while INFINITE). With
    # OverPartQOS on normal: MaxJobsPU=3 and GrpTRES 16 normal's, GrpJobs=2 still pq's. Each job's
    # use counts towards both QOSes' counters.
    qoss = [qos("pq", {"GrpJobs": 2, "MaxJobsPU": 1}), qos("normal", {"MaxJobsPU": 3}, {"GrpTRES": {"cpu": 16}})]
    first = ap.model(TREE, qoss, {("physics", "alice", "pq>normal")})
    got = {(x.name, x.jobs, x.cpus) for x in first.of[("physics", "alice", "pq>normal")]}
    assert got == {("qos pq", 2, math.inf), ("qos pq, user alice", 1, math.inf), ("qos normal", math.inf, 16)}
    over = ap.model(TREE, qoss, {("physics", "alice", "normal>pq")})
    got = {(x.name, x.jobs, x.cpus) for x in over.of[("physics", "alice", "normal>pq")]}
    assert got == {("qos normal", math.inf, 16), ("qos normal, user alice", 3, math.inf), ("qos pq", 2, math.inf)}
    assert {"qos pq", "qos normal", "qos pq, user alice", "qos normal, user alice"} <= set(
        first.scopes[("physics", "alice", "pq>normal")])


def test_a_partition_s_qos_holds_jobs_and_an_overpartqos_job_qos_masks_it():
    # the partition normal's QOS pq: MaxJobsPU=1. Alice's two 4-CPU, 300-s jobs (QOS normal, no
    # limit of its own): one now, the other at its end (NOW + 300; the main pass at that end).
    # Bob's two (QOS high, OverPartQOS, MaxJobsPU=2): high's MaxJobsPU masks pq's, both now;
    # without the flag pq's 1 applies: his second at NOW + 300
    jobs = [job(1, "alice", "PENDING", 4, 300, prio=100), job(2, "alice", "PENDING", 4, 300, prio=90),
            job(3, "bob", "PENDING", 4, 300, prio=80), job(4, "bob", "PENDING", 4, 300, prio=70)]
    qoss = [qos("normal"), qos("pq", {"MaxJobsPU": 1}), qos("high", {"MaxJobsPU": 2})]
    qos_of = {"3": "high", "4": "high"}
    lim = limits_of(jobs, qoss=qoss, qos_of=qos_of, part_qos={"normal": "pq"}, over={"high"})
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert (e["1"].start, e["2"].start, e["3"].start, e["4"].start) == (NOW, NOW + 300, NOW, NOW)
    lim = limits_of(jobs, qoss=qoss, qos_of=qos_of, part_qos={"normal": "pq"})
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert (e["1"].start, e["2"].start, e["3"].start, e["4"].start) == (NOW, NOW + 300, NOW, NOW + 300)
    lim = limits_of(jobs, qoss=qoss, qos_of=qos_of)  # (no partition QOS: only high's 2 holds, no one here)
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, limits=lim))
    assert {e[k].start for k in "1234"} == {NOW}


class _Recorded:
    """A LiveSlurm stand-in answering from a capture of the 24.11 testbed (tests/data/captures/
    part-qos-24.11: `scontrol -o show partition`, sacctmgr's QOS limits and associations, as
    recorded), with `edits` applied and squeue's QOS of each job given; it notes each command run."""

    def __init__(self, job_qos, partition_qos=None, qos_limits=None):
        from pathlib import Path

        from fscontrol.slurm.partitions import PARTITIONS_ARGS

        d = Path(__file__).resolve().parent / "data" / "captures" / "part-qos-24.11"
        parts = (d / "partitions.txt").read_text()
        if partition_qos is not None:  # the partition normal's QOS (fscpq in the capture)
            parts = parts.replace("QoS=fscpq", f"QoS={partition_qos or 'N/A'}")
        qos = (d / "qoslimits.txt").read_text()
        if qos_limits is not None:  # fscpq's MaxJobsPU (1 in the capture)
            qos = qos.replace("fscpq||||||1|", f"fscpq||||||{qos_limits}|")
        self.out = {PARTITIONS_ARGS: parts, tres.QOS_LIMITS_ARGS: qos, tres.ASSOC_ARGS: (d / "assoc.txt").read_text(),
                    sl.SQUEUE_QOS_ARGS: "".join(f"{j}|{q}\n" for j, q in job_qos.items())}
        self.ran = []

    def run(self, argv):
        from types import SimpleNamespace

        self.ran.append(argv)
        return SimpleNamespace(stdout=self.out[tuple(argv)])


@pytest.mark.parametrize("enforce, partition_qos, job_qos, limit, read", [
    # a job QOS with MaxJobsPU=1 and no partition QOS: read, before any job shows a limit's reason
    ("associations,limits", "", "fscpq", "1", True),
    # the same where slurmctld enforces no limit (AccountingStorageEnforce without limits): nothing run
    ("associations", "", "fscpq", "1", False),
    # the job's QOS has no limit, nor its partition's: the associations are not read
    ("associations,limits", "", "normal", "1", False),
    # a partition's QOS with a limit, the job's QOS without: read (the outside tester's case)
    ("associations,limits", None, "normal", "1", True),
    # the partition's QOS without its limit, the job's without one: not read
    ("associations,limits", None, "normal", "", False),
])
def test_limits_are_read_where_a_pending_jobs_qos_sets_one(enforce, partition_qos, job_qos, limit, read):
    """No pending job shows a limit's reason (carol's two jobs pending with Priority): the limits are
    read where slurmctld enforces them and a pending job's own QOS or its partition's sets a limit
    (MaxJobsPU=1 will hold her second job until her first ends); elsewhere nothing costly is run
    (the associations, 100,000 at a large site, never; without AccountingStorageEnforce=limits no
    command at all)."""
    jobs = [job(1, "dave", "RUNNING", 128, 600, start=NOW - 10), job(2, "carol", "PENDING", 1, 600, prio=10, account="chem"),
            job(3, "carol", "PENDING", 1, 600, prio=9, account="chem")]
    src = _Recorded({"1": "normal", "2": job_qos, "3": job_qos}, partition_qos, limit)
    lim, qos, note, apart = sl.read(src, {"AccountingStorageEnforce": enforce, "ClusterName": "tbcluster"}, jobs)
    assert apart == {}
    # not read where slurmctld enforces limits: said (an account's GrpTRES may still hold her jobs; an outside tester's case)
    assert note == ("" if read or enforce == "associations" else sl.ASSOC_NOT_READ), note
    assert (lim is not None) == read, (lim, src.ran)
    assert (tres.ASSOC_ARGS in src.ran) == read
    if enforce == "associations":
        assert src.ran == []
    if read:  # and the plan holds her second job behind her first: each at the end of the job before it
        ests = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, fractions={}, limits=(lim, qos, False)))
        assert ests["2"].start == pytest.approx(NOW + 590) and ests["3"].start == pytest.approx(NOW + 1190), ests
