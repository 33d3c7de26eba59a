"""fscontrol.forecast.start's pure parts: the queue played through Slurm's scheduler model
(issue #32 item 4). Each case's expected start is worked out by hand in its comment."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fscontrol.errors import ParseError
from fscontrol.forecast import start as st
from fscontrol.forecast import startview as sv
from fscontrol.sim.slurmsched import SlurmSched, sched_from_config

NOW = 1_000_000.0
SC = SlurmSched(node_cpus=128)


def job(i, user, state, cpus, limit, start=None, prio=0.0, reason="Priority"):
    return st.StartJob(str(i), user, "a", "normal", state, cpus, limit, start, prio, reason, NOW - 100)


def by_id(ests):
    return {e.job_id: e for e in ests}


def test_a_job_behind_a_running_job_starts_at_its_limit():
    # 128 CPUs busy until NOW + 500 (started 100 s ago, 600 s limit): both 64-CPU jobs start then
    jobs = [job(1, "alice", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "PENDING", 64, 300, prio=100, reason="Resources"),
            job(3, "carol", "PENDING", 64, 300, prio=50)]
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC))
    assert e["2"].start == e["3"].start == NOW + 500
    assert e["2"].early == e["2"].late == NOW + 500


def test_the_typical_fraction_moves_the_estimate_and_the_limit_bounds_the_range():
    # alice's jobs run half their limit: hers ends at NOW - 100 + 300 = NOW + 200; limits: NOW + 500
    jobs = [job(1, "alice", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "PENDING", 64, 300, prio=100)]
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, fractions={"alice": 0.5}))["2"]
    assert (e.start, e.early, e.late) == (NOW + 200, NOW + 200, NOW + 500)


def test_the_main_scheduler_stops_at_the_first_job_that_does_not_fit_and_backfill_fills_behind():
    # 64 CPUs free. The head (100 CPUs) waits for the running job (end NOW + 1000); the 32-CPU job
    # behind it is not started by the main scheduler (it stops at the head) but by the first
    # backfill cycle (NOW + bf_interval / 2: the phase is unknown), as it ends (300 s) before
    # the head's reservation; the 64-CPU, 2000 s job would run past it and waits for the head's end.
    jobs = [job(1, "alice", "RUNNING", 64, 1000, NOW), job(2, "bob", "PENDING", 100, 600, prio=100, reason="Resources"),
            job(3, "carol", "PENDING", 32, 300, prio=50), job(4, "dave", "PENDING", 64, 2000, prio=10)]
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC))
    assert e["2"].start == NOW + 1000
    assert e["3"].start == NOW + SC.bf_interval_s / 2
    assert e["4"].start == NOW + 1000 + 600  # after the head ends (100 + 64 > 128 alongside it)


def test_jobs_that_wait_for_something_else_get_their_reason_not_a_time():
    jobs = [job(1, "alice", "PENDING", 8, 300, reason="JobHeldUser"), job(2, "bob", "PENDING", 8, None),
            job(3, "carol", "PENDING", 500, 300), job(4, "dave", "PENDING", 8, 300, reason="Dependency")]
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC))
    assert e["1"].start is None and "JobHeldUser" in e["1"].reason
    assert e["2"].start is None and "no time limit" in e["2"].reason
    assert e["3"].start is None and "more than the 128" in e["3"].reason
    assert e["4"].start is None and "Dependency" in e["4"].reason


def test_hidden_cpus_are_busy_throughout_and_reveal_nothing():
    # PrivateData: 96 CPUs are used by jobs this user cannot see. A 16-CPU job starts now; a
    # 64-CPU job needs them: no estimate (a time would tell when the hidden jobs end).
    jobs = [job(1, "carol", "PENDING", 16, 300, prio=10), job(2, "carol", "PENDING", 64, 300, prio=5)]
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, hidden_cpus=96))
    assert e["1"].start == NOW
    assert e["2"].start is None and "PrivateData" in e["2"].reason


def test_one_users_jobs_and_own_first():
    jobs = [job(1, "alice", "RUNNING", 128, 600, NOW), job(2, "bob", "PENDING", 64, 300, prio=100),
            job(3, "carol", "PENDING", 64, 300, prio=50)]
    ests = st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, users={"carol"})
    assert [e.job_id for e in ests] == ["3"] and ests[0].start == NOW + 600  # bob's job still holds the queue
    allj = st.order_own_first(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC), "carol")
    assert [e.job_id for e in allj] == ["3", "2"]


def test_parsers():
    q = st.parse_queue("12|bob|flat|normal|PENDING|64|5:00|N/A|100|Resources|2026-11-26T22:00:00\n"
                       "11|alice|flat|normal|RUNNING|128|1-00:00:00|2026-11-26T21:00:00|0|None|2026-11-26T20:59:00\n")
    assert q[0].limit_s == 300 and q[0].start is None and q[1].limit_s == 86400 and q[1].start is not None
    with pytest.raises(ParseError):
        st.parse_queue("12|bob|flat\n")
    assert st.parse_fractions("alice|30|2\nalice|120|2\nalice|60|2\nbob|10|UNLIMITED\n") == {"alice": 0.5}
    assert st.parse_sinfo("n1|128|64/64/0/128\nn1|128|64/64/0/128\nn2|64|0/64/0/64\n") == (192, 128, 64)
    with pytest.raises(ParseError):
        st.parse_sinfo("")


def test_the_why_line():
    e = {"start": NOW + 120, "early": NOW + 60, "late": NOW + 600, "squeue_start": None, "reason": ""}
    assert sv.why_line(e, NOW) == ("estimated start: in 2 min (in 1 min .. in 10 min; fscontrol start explains "
                                   "the model); squeue --start: -")
    assert "none (waits for Dependency" in sv.why_line({"start": None, "reason": "waits for Dependency"}, NOW)


@pytest.mark.parametrize("desc", [
    "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions",  # 22.05
    "Nodes required for job are DOWN, DRAINED, REBOOTING or reserved for jobs in higher priority partitions"])  # 24.11+
def test_slurmctld_s_nodes_busy_description_is_resources(desc):
    # slurmctld's main pass sets state_reason WAIT_RESOURCES with this state_desc when too few of the
    # partition's nodes are free (job_scheduler.c), and squeue's %r prints the description (CI of
    # 2026-11-29: a job kept off a reserved node). It waits for CPUs like "Resources": 128 CPUs
    # busy until NOW + 500, so it starts then, as with reason Resources
    jobs = [job(1, "alice", "RUNNING", 128, 600, NOW - 100), job(2, "bob", "PENDING", 64, 300, prio=100, reason=desc)]
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC))["2"]
    assert e.start == NOW + 500 and not e.reason


@pytest.mark.parametrize("args", [["-j", "12x"], ["-j", ","], ["-u", ","], ["-j", "1,,"], ["-u", "no_such_user_x"]])
def test_bad_input_is_one_line_and_exit_2(args, capsys):
    from fscontrol.cli.main import exit_code

    assert exit_code(["start", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fscontrol: error:")


def test_the_web_pages_start_card():
    """The page's card (web.userpage._starts_card) from `fscontrol start`'s dict: an estimate with its
    range and squeue's, a job without one with its reason, no pending job, and the one-line error."""
    from fscontrol.web.userpage import _starts_card

    d = {"now": NOW, "model": "Slurm's scheduler model, Slurm's defaults", "notes": ["a note"], "jobs": [
        {"job_id": "7", "user": "bob", "start": NOW + 600, "early": NOW + 300, "late": NOW + 900, "reason": "",
         "squeue_start": NOW + 1200},
        {"job_id": "8", "user": "bob", "start": None, "early": None, "late": None, "reason": "waits for Dependency, not only for CPUs and priority",
         "squeue_start": None}]}
    html = _starts_card(d)
    assert '<tr data-job="7"><td>7</td><td data-k="start" data-v="' in html and "in 10 min" in html and "in 5 min .. in 15 min" in html
    assert "in 20 min" in html and "waits for Dependency" in html and "a note" in html
    assert "You have no pending job." in _starts_card({**d, "jobs": []})
    assert "no start estimate: x" in _starts_card({"error": "no start estimate: x"}) and _starts_card(None) == ""
    assert "<script" not in _starts_card({**d, "notes": ["<script>alert(1)</script>"]})  # escaped


def test_why_and_the_web_card_estimate_up_to_their_caps_at_a_login_node_cost():
    # why's and the web card's caps on pending jobs are what the estimate's cost allows (issue #28 item 5: about 1 s of
    # CPU per request): at the cap, bench_start's synthetic queue (100 x 128-CPU nodes full, 300
    # users), the worst job for why (the lowest-priority one: the whole queue is played before it)
    # is estimated in a few seconds of CPU here (about 1 s alone, docs/start.md). The planner before
    # the cost work took 94 s at 10,000 pending.
    import sys
    import time
    from pathlib import Path

    from fscontrol.forecast import why

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from bench_start import queue

    from fscontrol.web import app as webapp

    cap = why.WHY_ESTIMATE_MAX_PENDING
    assert cap >= 10_000 and webapp.START_MAX_PENDING >= 10_000
    jobs = queue(1, 100, cap, 300, 1.8e9)
    last = min((j for j in jobs if j.state == "PENDING"), key=lambda j: j.priority)
    t = time.process_time()
    (e,) = st.estimate(jobs, now=1.8e9, total_cpus=100 * 128, sched=SC, fractions={}, job_ids={last.job_id})
    cpu = time.process_time() - t
    assert e.reason or e.start is not None
    assert cpu < 5.0, f"{cpu:.2f} s of CPU for one job's estimate at {cap:,} pending"
    # the web page's card: one user's pending jobs, the user of the lowest-priority job
    t = time.process_time()
    ests = st.estimate(jobs, now=1.8e9, total_cpus=100 * 128, sched=SC, fractions={}, users={last.user})
    cpu = time.process_time() - t
    assert len(ests) > 1
    assert cpu < 5.0, f"{cpu:.2f} s of CPU for one user's estimates at {webapp.START_MAX_PENDING:,} pending"


def test_bf_max_job_user_skips_a_users_jobs_past_the_cap_in_a_backfill_cycle():
    # one 128-CPU node; 64 CPUs busy until NOW + 1000 (a 1000 s job just started). A (128 CPUs,
    # 300 s) heads the queue and cannot start: backfill reserves the node from NOW + 980 (1,000,980
    # rounded down to the minute). B (32 CPUs, 100 s) fits beside it: the first backfill cycle (half
    # an interval from now, NOW + 15) starts it, unless B is A's user's second job and
    # bf_max_job_user=1: then backfill never tests it while A pends, and it starts after A, at
    # NOW + 1300 (A from NOW + 1000 to NOW + 1300 on the whole node)
    from fscontrol.sim.slurmsched import sched_from_config

    sc1 = sched_from_config("SchedulerParameters=bf_max_job_user=1\n", node_cpus=128)
    assert sc1.bf_max_job_user == 1 and SC.bf_max_job_user == 0  # Slurm's default: no limit

    def jobs(b_user):
        return [job(1, "carol", "RUNNING", 64, 1000, NOW), job(2, "alice", "PENDING", 128, 300, prio=100, reason="Resources"),
                job(3, b_user, "PENDING", 32, 100, prio=50)]

    assert by_id(st.estimate(jobs("alice"), now=NOW, total_cpus=128, sched=SC))["3"].start == NOW + 15
    assert by_id(st.estimate(jobs("alice"), now=NOW, total_cpus=128, sched=sc1))["3"].start == NOW + 1300
    assert by_id(st.estimate(jobs("bob"), now=NOW, total_cpus=128, sched=sc1))["3"].start == NOW + 15


def test_gpus_read_from_squeue_and_sinfo_as_each_release_prints_them():
    assert [st.gpu_count(x) for x in ("gres:gpu:2", "gres/gpu:2", "gres/gpu:a100:3", "gpu:4(S:0-1)", "N/A", "(null)",
                                      "gres/gpu=2", "gres:gpu:1,gres:fpga:1", "gres/fpga:2", "gpu:a100:2(S:0),gpu:v100:1")] \
        == [2, 2, 3, 4, 0, 0, 2, 1, 0, 3]
    # 22.05: tres-per-node gres:gpu:2 on 2 nodes; 26.05 --gpus=1 is per job; a CPU job: none
    assert st.parse_job_gpus("30|gres:gpu:2|N/A|2\n31|N/A|gres/gpu:1|1\n32|N/A|N/A|1\n") == {"30": 4, "31": 1}
    # a node listed once per partition is counted once
    assert st.parse_sinfo_gpus("n1|gpu:4(S:0)\nn1|gpu:4(S:0)\nn2|gpu:2\nn3|(null)\n") == 6


def test_a_gpu_job_waits_for_the_gpus_with_cpus_free():
    # 128 CPUs and 4 GPUs; alice holds the 4 GPUs on 2 CPUs until NOW + 500: bob's 2-GPU job on 2
    # CPUs counts as max(2, 2 x 128 / 4 = 64) CPUs, alice's as 128: it starts at NOW + 500, not now
    # (126 CPUs are free)
    alice = st.StartJob("1", "alice", "a", "normal", "RUNNING", 2, 600, NOW - 100, 0.0, "None", NOW - 200, 4)
    bob = st.StartJob("2", "bob", "a", "normal", "PENDING", 2, 300, None, 100.0, "Resources", NOW - 50, 2)
    e = by_id(st.estimate([alice, bob], now=NOW, total_cpus=128, sched=SC, total_gpus=4))
    assert e["2"].start == NOW + 500
    e = by_id(st.estimate([alice, bob], now=NOW, total_cpus=128, sched=SC))  # a cluster without GPUs: a reason
    assert e["2"].start is None and e["2"].reason == "needs 2 GPUs, more than the 0 there are"
    big = st.StartJob("3", "bob", "a", "normal", "PENDING", 2, 300, None, 100.0, "Resources", NOW - 50, 8)
    assert by_id(st.estimate([alice, big], now=NOW, total_cpus=128, sched=SC, total_gpus=4))["3"].reason == \
        "needs 8 GPUs, more than the 4 there are"


def test_no_main_scheduler_and_no_backfill_starts_nothing():
    """sched_interval=-1 turns slurmctld's main scheduler off (job_scheduler.c `_schedule` returns at
    once); with backfill it starts the jobs at its cycle (half an interval ahead: its phase is not
    known); with no backfill either, no job starts, and each estimate says why."""
    from fscontrol.sim.slurmsched import sched_from_config

    jobs = [job(1, "alice", "RUNNING", 8, 600, start=NOW - 100), job(2, "bob", "PENDING", 4, 300, prio=10.0),
            job(3, "bob", "PENDING", 4, 300, prio=5.0)]
    on = st.estimate(jobs, now=NOW, total_cpus=16, sched=sched_from_config("SchedulerParameters=\n", node_cpus=16))
    assert [e.start - NOW for e in on] == [0.0, 0.0]
    bf = st.estimate(jobs, now=NOW, total_cpus=16, sched=sched_from_config("SchedulerParameters=sched_interval=-1\n",
                                                                          node_cpus=16))
    assert [e.start - NOW for e in bf] == [15.0, 15.0]
    off = st.estimate(jobs, now=NOW, total_cpus=16,
                      sched=sched_from_config("SchedulerParameters=sched_interval=-1,bf_interval=-1\n", node_cpus=16))
    assert [(e.start, e.reason) for e in off] == [(None, "slurmctld starts no job: sched_interval=-1 and no backfill")] * 2


def test_bf_min_reserve_and_partition_job_depth_in_the_estimate():
    """Worked by hand, 128 CPUs: alice's job runs on 64 until NOW + 500 (its limit). bob's 128-CPU
    job (priority 100) waits; carol's 8-CPU job behind it (priority 50, a 1-hour limit) would run
    past bob's plan at NOW + 500. Slurm's defaults: the main pass stops at bob's job and backfill
    keeps carol's off his plan: carol at NOW + 1100 (bob's end). With bf_min_prio_reserve=1000
    (above both): the main pass goes on past bob's (job_scheduler.c `fail_by_part = false`) and
    carol's starts at its first pass (within a minute), and bob's when all 128 CPUs are free: at
    carol's end, an hour after her start. With bf_min_age_reserve=3600 (both
    eligible 100 s ago: young) the same. partition_job_depth=1: the main pass tests one job of the
    partition (bob's); carol's waits for backfill, which keeps it off bob's plan: as the defaults."""
    jobs = [job(1, "alice", "RUNNING", 64, 600, NOW - 100), job(2, "bob", "PENDING", 128, 600, prio=100, reason="Resources"),
            job(3, "carol", "PENDING", 8, 3600, prio=50)]
    plain = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC))
    assert plain["2"].start == NOW + 500 and plain["3"].start == NOW + 1100, (plain["2"].start - NOW, plain["3"].start - NOW)
    for params in ("bf_min_prio_reserve=1000", "bf_min_age_reserve=3600"):
        sc = replace(sched_from_config(f"SchedulerParameters={params}\n"), node_cpus=128)
        e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=sc))
        assert e["3"].start < NOW + 60 and e["2"].start == e["3"].start + 3600, (params, e["3"].start - NOW, e["2"].start - NOW)
    sc = replace(sched_from_config("SchedulerParameters=partition_job_depth=1\n"), node_cpus=128)
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=sc))
    assert (e["2"].start, e["3"].start) == (plain["2"].start, plain["3"].start)
    # bob asking about his own job (`start -u bob`, `why 2`): the same answer as the whole queue's
    # (the jobs behind his are played: under these settings one may start ahead of his; an
    # outside tester's case, 2026-11-29)
    for params in ("bf_min_prio_reserve=1000", "bf_min_age_reserve=3600", "partition_job_depth=1"):
        sc = replace(sched_from_config(f"SchedulerParameters={params}\n"), node_cpus=128)
        whole = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=sc))["2"].start
        assert by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=sc, job_ids={"2"}))["2"].start == whole, params
        assert by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=sc, users={"bob"}))["2"].start == whole, params


def test_a_qos_min_prio_threshold_in_the_estimate():
    """The worked example above, with a QOS's MinPrioThreshold per job (prio_thresh) in place of
    bf_min_prio_reserve, as acct_policy_get_prio_thresh's value is read (backfill.c, job_scheduler.c:
    the job's threshold, else bf_min_prio_reserve). Bob's job below its threshold (1000 > 100): the
    main pass goes on past it and carol's starts at its first pass, bob's at carol's end. Carol's
    alone below hers: bob's job still stops the pass and holds its plan, which carol's hour would
    cross: carol at bob's end, as without thresholds. bf_min_prio_reserve=1000 with bob's own
    threshold at 50 (below his priority): his threshold, not the setting, is his; he stops the
    pass and carol (held to the setting) gets no plan and waits for his end."""
    jobs = [job(1, "alice", "RUNNING", 64, 600, NOW - 100), job(2, "bob", "PENDING", 128, 600, prio=100, reason="Resources"),
            job(3, "carol", "PENDING", 8, 3600, prio=50)]
    plain = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC))
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, prio_thresh={"2": 1000}))
    assert e["3"].start < NOW + 60 and e["2"].start == e["3"].start + 3600, (e["3"].start - NOW, e["2"].start - NOW)
    for who in ({"2"}, {"2", "3"}, None):  # asked about a part of the queue: the same answer
        part = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, prio_thresh={"2": 1000},
                                 job_ids=who))
        assert all(part[k].start == e[k].start for k in part), who
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, prio_thresh={"3": 1000}))
    assert (e["2"].start, e["3"].start) == (plain["2"].start, plain["3"].start)
    sc = replace(sched_from_config("SchedulerParameters=bf_min_prio_reserve=1000\n"), node_cpus=128)
    e = by_id(st.estimate(jobs, now=NOW, total_cpus=128, sched=sc, prio_thresh={"2": 50}))
    assert (e["2"].start, e["3"].start) == (plain["2"].start, plain["3"].start)


def test_a_jobs_min_prio_threshold_is_found_as_slurmctld_finds_it():
    """acct_policy_get_prio_thresh: the partition's QOS first, unless the job's QOS has
    OverPartQOS; the first of the two that sets one; a job without a QOS is `normal`'s; one of
    several partitions is read for its first."""
    from fscontrol.model.acctpolicy import enforces_limits, job_prio_thresh

    thr, parts = {"normal": 500, "gold": 2000, "pq": 900}, {"p": "pq", "q": ""}
    assert job_prio_thresh("normal", "p", thr, (), parts) == 900
    assert job_prio_thresh("normal", "p", thr, ("normal",), parts) == 500
    assert job_prio_thresh("", "q", thr, (), parts) == 500
    assert job_prio_thresh("silver", "q", thr, (), parts) == 0
    assert job_prio_thresh("silver", "p", thr, ("silver",), parts) == 900  # (its own sets none)
    assert job_prio_thresh("gold", "q,p", thr, (), parts) == 2000
    assert [enforces_limits(x) for x in ("associations,limits", "safe", "associations", "", "qos,ALL")] == \
        [True, True, False, False, True]
    # names in any case (slurmctld's xstrcasecmp: a partition's QoS= as slurm.conf writes it, a
    # pending job's %q as --qos gave it on 24.11 on), and of a job's several QOSes its first (an
    # outside tester's cases, 2026-11-29)
    assert job_prio_thresh("normal", "r", {"prio": 700, "normal": 500}, (), {"r": "Prio"}) == 700
    assert job_prio_thresh("Gold", "q", thr, (), parts) == 2000
    assert job_prio_thresh("GOLD", "p", thr, ("gold",), parts) == 2000
    assert job_prio_thresh("gold,normal", "q", thr, (), parts) == 2000


class _Recorded:
    """A source that answers each command with a recorded text (or raises the error recorded)."""

    def __init__(self, answers):
        self.answers = answers

    def run(self, argv, timeout=None):
        from types import SimpleNamespace

        got = self.answers[argv[0] + " " + argv[1 if argv[0] != "sacctmgr" else 3]]
        if isinstance(got, Exception):
            raise got
        return SimpleNamespace(stdout=got)


def test_the_thresholds_read_or_left_out_with_a_note():
    """read_prio_thresh on recorded answers (sacctmgr's and squeue's formats as the testbed's): the
    thresholds by job; squeue or scontrol failing or garbled after sacctmgr answered: the
    estimate goes on without them, and the note says why (an outside tester's case, 2026-11-29)."""
    from fscontrol.errors import SlurmCommandError
    from fscontrol.forecast.startqueue import read_prio_thresh

    qos = "Name|UsageFactor|MinPrioThres|Flags\nnormal|1.000000|1000|\ngold|1.000000||OverPartQOS\n"
    part = "PartitionName=normal Nodes=n1 QoS=N/A PriorityTier=1 PriorityJobFactor=1\n"
    jobs = [job(2, "bob", "PENDING", 8, 600, prio=100), job(3, "carol", "PENDING", 8, 600, prio=5000),
            job(4, "dave", "PENDING", 8, 600, prio=10)]
    pairs = {"AccountingStorageEnforce": "associations,limits"}
    ok = {"sacctmgr qos": qos, "squeue -a": "2|normal\n3|Normal\n", "scontrol -o": part}
    got, note = read_prio_thresh(_Recorded(ok), pairs, jobs)
    assert got == {"2": 1000, "3": 1000} and note.startswith("QOS MinPrioThreshold (normal 1,000): 1 pending"), (got, note)
    assert read_prio_thresh(_Recorded(ok), {"AccountingStorageEnforce": "associations"}, jobs) == ({}, "")
    for broken in ({"squeue -a": SlurmCommandError("squeue: error: timeout")}, {"squeue -a": "2\n"},
                   {"scontrol -o": "garbled"}, {"sacctmgr qos": "Name|MinPrioThres\nnormal|x\n"}):
        got, note = read_prio_thresh(_Recorded({**ok, **broken}), pairs, jobs)
        assert got == {} and note.startswith("QOS MinPrioThreshold not read ("), (broken, note)


def test_a_pending_array_rows_tasks_are_counted_for_the_note():
    """squeue's row of a pending array names its tasks: ranges, a step after ':', a throttle after
    '%' (not a task); a plain job or a task split off is one."""
    from fscontrol.slurm.jobid import array_tasks

    assert [array_tasks(x) for x in ("87_[1-3]", "87_[1-5,7]", "87_[1-9:2%3]", "87_[0-99%5]", "87_4", "87", "87_[x]")] == \
        [3, 6, 5, 100, 1, 1, 1]
