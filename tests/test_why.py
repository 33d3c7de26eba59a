"""`fscontrol why`: sprio's breakdown of one job read and put in words. The data is a real sprio
line (tests/data/why/sprio-22.05.txt, the command and settings in its first line); the real-Slurm
check of the whole command is tests/test_integration_why.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from fscontrol.forecast import why
from fscontrol.errors import ConfigError, ParseError

DATA = Path(__file__).parent / "data" / "why" / "sprio-22.05.txt"
WEIGHTS = {"age": 1000, "fairshare": 100000, "jobsize": 20000, "partition": 500, "qos": 0, "assoc": 0}


def _line():
    text = "\n".join(ln for ln in DATA.read_text().splitlines() if not ln.startswith("#"))
    return why.parse_sprio_why(text, "2")


def test_the_real_sprio_line_is_read_term_by_term():
    ln = _line()
    assert (ln.job_id, ln.user, ln.partition, ln.priority) == ("2", "carol", "parked", 118000.0)
    assert ln.weighted == {"age": 0.0, "association": 0.0, "fair-share": 100000.0, "job size": 17500.0,
                           "partition": 500.0, "QOS": 0.0}
    assert ln.normalized["job size"] == 0.875
    # Slurm's sum: the terms add up to the priority, each term its factor x its weight
    assert sum(ln.weighted.values()) + ln.site - ln.nice == ln.priority
    for name, _, _, key in why.TERMS:
        assert ln.weighted[name] == pytest.approx(ln.normalized[name] * WEIGHTS[key], abs=1)


def test_explained_in_words():
    d = why.explain(_line(), weights=WEIGHTS, max_age_s=3600, favor_small=False, mode="classic",
                    ahead=0, pending_in_partition=1, reason="PartitionDown", account="chem")
    assert d["dominant"] == "fair-share"
    shares = {t["factor"]: t["share"] for t in d["terms"]}
    assert shares["fair-share"] == pytest.approx(100000 / 118000) and shares["job size"] == pytest.approx(17500 / 118000)
    text = why.format_why(d)
    assert "priority 118,000" in text and "waiting for: PartitionDown" in text
    assert "job size" in text and "17,500 (15%)" in text and "= 0.8750 x weight 20,000" in text
    assert "(weight 0 here, so they do not count: association, QOS)" in text
    assert "+1,000.0 an hour of waiting" in text and "counts only while the job is eligible" in text
    assert "larger jobs score higher" in text
    assert "0 of the 1 other pending job(s) in parked" in text
    fair_tree = why.explain(_line(), weights=WEIGHTS, max_age_s=3600, favor_small=True, mode="fair_tree",
                            fairshare_detail="rank 7 of 9")
    assert any("rank 7 of 9" in x and "only as others use the machine" in x for x in fair_tree["levers"])
    assert any("smaller jobs score higher" in x for x in fair_tree["levers"])


def test_no_line_for_the_job_and_garbled_lines():
    text = "JOBID|USER\n"
    assert why.parse_sprio_why(text, "2") is None
    with pytest.raises(ParseError):
        why.parse_sprio_why("H\n2|carol|parked|x|0|0|0|0|0|0|0|0|0|0|0|0|0|0\n", "2")
    with pytest.raises(ParseError):
        why.parse_sprio_why("H\n2|carol|parked\n", "2")
    assert why.count_ahead("1|110578\n2|118000\n3|120000\n", "2", 118000.0) == (1, 2)
    assert why.parse_max_age("7-00:00:00") == 7 * 86400 and why.parse_max_age(None) == 7 * 86400


# ---------------------------------------------------------------------------- every reason a job waits
from fscontrol.forecast import reasons, waits  # noqa: E402


def _q(job_id, *, user="dave", account="flat", partition="normal", state="PENDING", cpus=1, priority=100, nice=0,
       reason="Priority", submit="2026-11-26T10:00:00", reservation="", comment=""):
    return waits.WaitJob(job_id, user, account, partition, state, cpus, priority, nice, reason, submit, reservation, comment)


PARTS = {"normal": waits.Partition("normal", 1, "UP", frozenset({"n1", "n2"})),
         "fsadmin": waits.Partition("fsadmin", 10, "UP", frozenset({"n2"})),
         "gpu": waits.Partition("gpu", 20, "UP", frozenset({"g1"}))}


def test_slurm_reasons_in_plain_words_and_unknown_ones_verbatim():
    assert reasons.plain_reason("Resources")[0] == "resources" and reasons.plain_reason(None)[0] == "other"
    assert reasons.plain_reason("Dependency")[0] == "dependency" and reasons.plain_reason("BeginTime")[0] == "begin_time"
    cat, text = reasons.plain_reason("ReqNodeNotAvail, UnavailableNodes:n[1-2]")
    assert cat == "nodes" and "UnavailableNodes:n[1-2]" in text
    # the string 22.05 prints when a higher-tier partition's job has the node (seen on the testbed)
    cat, text = reasons.plain_reason("Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions")
    assert cat == "nodes" and "PriorityTier" in text
    # limits read from their names: who, over whom, which resource
    cat, text = reasons.plain_reason("AssocGrpCpuLimit")
    assert cat == "limit" and text.startswith("an association limit of your user or of an account above it")
    assert "CPUs in use of all the jobs under it together" in text
    cat, text = reasons.plain_reason("QOSMaxJobsPerUserLimit")
    assert cat == "limit" and "the job's QOS (or its partition's QOS) caps the jobs running for one user" in text
    assert reasons.plain_reason("AssocMaxWallDurationPerJobLimit")[0] == "never"
    assert "decay" in reasons.plain_reason("AssocGrpCPUMinutesLimit")[1]
    assert "running jobs" in reasons.plain_reason("QOSGrpCPURunMinutesLimit")[1]
    assert reasons.plain_reason("AssocGrpGRES")[0] == "limit"  # no "Limit" suffix, as Slurm names it
    cat, text = reasons.plain_reason("SomethingNew")
    assert cat == "unknown" and "'SomethingNew'" in text


def test_the_queue_read_with_a_pipe_in_the_admin_comment():
    text = ("12|dave|flat|normal|PENDING|2|3125|0|Priority|2026-11-26T10:00:00|(null)|N/A|N/A|a|b\n"
            "13|eve|x|normal|RUNNING|1|9|0|None|2026-11-26T10:00:01|resv1|gres/gpu:2|N/A|(null)\n")
    a, b = waits.parse_queue(text)
    assert (a.job_id, a.cpus, a.priority, a.admin_comment, a.reservation, a.gres) == ("12", 2, 3125, "a|b", "", "")
    assert (b.state, b.reservation, b.admin_comment, b.gres) == ("RUNNING", "resv1", "", "gres/gpu:2 per node")
    with pytest.raises(ParseError):
        waits.parse_queue("12|dave|flat\n")
    parts = waits.parse_partitions("PartitionName=normal Nodes=n[1-2] PriorityTier=1 State=UP\n"
                                   "PartitionName=fsadmin Nodes=n2 PriorityTier=10 State=UP\n",
                                   "n1|normal*\nn2|normal*\nn2|fsadmin\n")
    assert parts["normal"].nodes == {"n1", "n2"} and parts["fsadmin"].tier == 10 and parts["fsadmin"].nodes == {"n2"}


def test_a_tie_is_broken_as_slurm_breaks_it():
    """sort_job_queue2: reservation, PriorityTier, priority, then submit time, then job id."""
    me = _q("20", submit="2026-11-26T10:00:05")
    queue = [me,
             _q("30", submit="2026-11-26T10:00:01"),  # tied, submitted earlier (a higher id): ahead
             _q("15", submit="2026-11-26T10:00:05"),  # tied, same second, lower id: ahead
             _q("25", submit="2026-11-26T10:00:05"),  # tied, same second, higher id: behind
             _q("40", submit="2026-11-26T10:09:00"),  # tied, later: behind
             _q("41", priority=101),                  # higher priority: ahead
             _q("42", priority=99),                   # lower: behind
             _q("43", priority=100, reason="JobHeldUser"),  # held: not in the queue's order
             _q("44", partition="other")]              # another partition
    o = waits.queue_place(me, queue, PARTS)
    assert (o["higher_priority"], o["tied"], o["tied_ahead"], o["tied_behind"]) == (1, 4, 2, 2)
    assert o["tied_ahead_ids"] == ["30", "15"] and o["place"] == 4 and o["pending"] == 6
    # a job in an advanced reservation goes first whatever its priority
    o = waits.queue_place(me, [me, _q("50", priority=1, reservation="maint")], PARTS)
    assert o["place"] == 2 and o["in_reservation_ahead"] == 1
    # the ids compare as numbers, an array task by its array's id then its task
    assert waits.order_key(_q("9"), 1) < waits.order_key(_q("10"), 1)
    assert waits.order_key(_q("12_3"), 1) < waits.order_key(_q("12_10"), 1) < waits.order_key(_q("13"), 1)


def test_holds_told_apart_and_the_gate_s_with_its_account_against_its_target():
    from fscontrol.export.privacy import run_key

    tok = run_key("flat")
    pub = {"decided_at": 1000.0, "every_s": 120.0, "next_at": 1120.0, "as_of": 1000.0, "unit": "cpus",
           "waiting_at_or_under": 1, "accounts": {tok: {"occupancy": 128.0, "target": 40.0, "state": "over", "allocation_on": None}}}
    held = _q("9", reason="JobHeldAdmin", priority=0, cpus=2, comment="fscontrol:hold")
    h = waits.hold_of(held, pub, tok, now=1030.0)
    assert h["by"] == "fscontrol" and h["kind"] == "hold" and h["mark"] == "fscontrol:hold"
    g = h["gate"]
    assert (g["account"], g["occupancy"], g["target"], g["over_by"], g["next_at"]) == ("flat", 128.0, 40.0, 88.0, 1120.0)
    assert "come down by at least 88 cpus" in h["lifted_when"] and "in 2 min" in h["lifted_when"]
    # nothing published: said so, not guessed
    h = waits.hold_of(held, None, tok, now=1030.0)
    assert h["by"] == "fscontrol" and h["gate"] is None and "not published" in h["gate_unknown"]
    # an allocation on a parent account: named as such
    pub2 = {**pub, "accounts": {tok: {**pub["accounts"][tok], "allocation_on": "science"}}}
    assert waits.hold_of(held, pub2, tok, 1030.0)["gate"]["account"] == "science"
    # others' holds: an admin's (even with the agent's old mark left on it: not the agent's to release), a user's
    assert waits.hold_of(_q("9", reason="JobHeldAdmin", priority=0), pub, tok, 0)["by"] == "admin"
    u = waits.hold_of(_q("9", reason="JobHeldUser", priority=0, comment="fscontrol:hold"), pub, tok, 0)
    assert u["by"] == "user" and "scontrol release 9" in u["how"] and "not the agent's any more" in u["how"]
    # the gate's nice mode: a demotion, not a hold
    n = waits.hold_of(_q("9", nice=10000, comment="fscontrol:nice:10000"), pub, tok, 0)
    assert n["by"] == "fscontrol" and n["kind"] == "nice"
    assert waits.hold_of(_q("9"), pub, tok, 0) is None


def test_higher_tier_partitions_and_the_padding_job():
    me = _q("20", cpus=128)
    pad = _q("5", user="fsdummy", account="fsadmin", partition="fsadmin", reason="Resources")
    gpu = _q("6", partition="gpu")  # a higher tier, but on other nodes: nothing to do with this job
    t = waits.higher_tiers(me, [me, pad, gpu], PARTS, ("fsadmin", "fsdummy"))
    assert [p["partition"] for p in t["partitions"]] == ["fsadmin"] and t["partitions"][0]["pending"] == 1
    assert t["padding"]["job_id"] == "5" and "padding_reservation" in t["padding"]["advice"]
    assert "before any job of normal" in t["padding"]["advice"]
    # known by its job name when nothing is published
    assert waits.higher_tiers(me, [me, pad], PARTS, None, {"5": "fscontrol-padding"})["padding"]["job_id"] == "5"
    assert waits.higher_tiers(me, [me, pad], PARTS, None)["padding"] is None
    # running in the admin's reservation: it takes nothing this job could get
    run = _q("5", user="fsdummy", account="fsadmin", partition="fsadmin", state="RUNNING", reservation="fspad")
    adv = waits.higher_tiers(me, [me, run], PARTS, ("fsadmin", "fsdummy"))["padding"]["advice"]
    assert "reservation fspad" in adv and "takes nothing" in adv
    run = _q("5", user="fsdummy", account="fsadmin", partition="fsadmin", state="RUNNING")
    assert "would not shorten this wait" in waits.higher_tiers(me, [me, run], PARTS, ("fsadmin", "fsdummy"))["padding"]["advice"]
    # nothing in the higher tier: nothing said
    assert waits.higher_tiers(me, [me], PARTS, None) is None


def test_the_whole_answer_in_json_and_text():
    me = _q("20", reason="Priority", priority=100)
    d = why.diagnose(me, [me, _q("19")], line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600, favor_small=False,
                     mode="classic", now=0.0)
    assert d["category"] == "priority" and d["order"]["tied"] == 1 and d["ahead_in_partition"] == 0
    text = why.format_all(d)
    assert "a tie, which Slurm breaks by submit time, then job id: 1 of them go first" in text
    held = _q("9", reason="JobHeldAdmin", priority=0, comment="fscontrol:hold")
    d = why.diagnose(held, [held], line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600, favor_small=False,
                     mode="classic", now=0.0)
    assert d["category"] == "fscontrol_hold" and d["order"] is None
    assert "fscontrol's fair-share gate" in why.format_all(d) and "not published" in why.format_all(d)


def test_the_gate_s_table_published_without_names():
    """What a gate tick records (pipeline.gate_table) and what the published file then carries:
    per account (privacy.run_key), the sub-accounts of an allocated parent included, with the
    parent's name there. Who may read which entry is privacy's (tests/test_privacy.py)."""
    from fscontrol.act import gate
    from fscontrol.agent.pipeline import gate_table
    from fscontrol.export.privacy import run_key
    from fscontrol.export.publish import gate_summary
    from fscontrol.model.allocations import Allocation
    from fscontrol.records import ShareRow
    from fscontrol.snaprecords import QueueJob

    q = [QueueJob("1", "alice", "physics", "normal", "normal", "RUNNING", 1, 96, 0, 0, "None", 0.0, 0.0, 600),
         QueueJob("2", "alice", "physics", "normal", "normal", "PENDING", 1, 2, 10, 0, "Priority", 1.0, None, 600),
         QueueJob("3", "dave", "flat", "normal", "normal", "PENDING", 1, 2, 10, 0, "Priority", 2.0, None, 600)]
    allocs = {"science": Allocation("science", 20, 3600), "flat": Allocation("flat", 20, 3600)}
    plan = gate.plan_gate(q, allocs, (), now=500.0, parents={"physics": "science"})
    table = gate_table(plan)
    assert table["accounts"]["science"] == [96.0, 40.0, "over"] and table["under_waiting"] == 1
    shares = tuple(ShareRow(a, "", p, 1, 1, False, 0.5, 0, 0.0, 0.0, None) for a, p in
                   (("root", ""), ("science", "root"), ("physics", "science"), ("flat", "root")))
    pub = gate_summary(table, shares, "c", 120.0)
    assert pub["next_at"] == 620.0 and pub["waiting_at_or_under"] == 1
    acc = pub["accounts"]
    assert acc[run_key("physics")] == {"occupancy": 96.0, "target": 40.0, "state": "over", "allocation_on": "science"}
    assert acc[run_key("science")]["allocation_on"] is None
    assert run_key("root") not in acc


def test_under_private_jobs_the_count_says_it_sees_only_the_user_s_jobs():
    me = _q("20")
    d = why.diagnose(me, [me], line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600, favor_small=False,
                     mode="classic", now=0.0, jobs_private=True)
    assert d["order"]["only_own_jobs_seen"] and "your own jobs alone" in why.format_all(d)


def test_jobs_that_cannot_start_are_not_ahead():
    """The tester's queue on 22.05: job 9 is next (Resources); 7 waits on a Dependency, 8 on a
    BeginTime, others on association/QOS limits or a hold. slurmctld does not walk those (or passes
    them by), so they are neither ahead nor tied ahead: they are counted as set aside."""
    me = _q("10", reason="Priority")
    queue = [_q("7", reason="Dependency"), _q("8", reason="BeginTime"), _q("9", reason="Resources"), me,
             _q("11", reason="AssocMaxJobsLimit"), _q("12", reason="QOSMaxCpuPerUserLimit", priority=500),
             _q("13", reason="AssocGrpJobsLimit"), _q("14", reason="JobHeldUser", priority=500),
             _q("15", reason="PartitionDown"), _q("16", reason="Priority")]
    o = waits.queue_place(me, queue, PARTS)
    assert o["tied_ahead_ids"] == ["9"] and (o["tied"], o["tied_ahead"], o["tied_behind"]) == (2, 1, 1)
    assert (o["higher_priority"], o["place"], o["pending"], o["ineligible"], o["eligible"]) == (0, 2, 2, 7, True)
    nine = queue[2]
    o9 = waits.queue_place(nine, queue, PARTS)
    assert (o9["place"], o9["tied_ahead"], o9["ineligible"]) == (1, 0, 7)
    d = why.diagnose(nine, queue, line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600, favor_small=False,
                     mode="classic", now=0.0)
    text = why.format_all(d)
    assert "its place: 1 of 3 pending job(s) in normal that may start now" in text and "0 of them go first" in text
    assert "7 other pending job(s) in normal cannot start now" in text
    # a job that cannot start itself is told so before its would-be place
    dep = queue[0]
    text = why.format_all(why.diagnose(dep, queue, line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600,
                                       favor_small=False, mode="classic", now=0.0))
    assert "it cannot start now itself (above); once it may, its place: 1 of 4" in text
    # a higher-tier partition's pending jobs count only when they may start
    queue2 = [me, _q("60", partition="fsadmin", reason="Dependency"), _q("61", partition="fsadmin", reason="Priority")]
    t = waits.higher_tiers(me, queue2, PARTS, None)
    assert t["partitions"][0]["pending"] == 1


def test_a_limit_reached_with_nothing_running_under_it_never_lifts():
    """The tester's carol/flat with MaxJobs=0 and no other job there: not "it starts when your other
    jobs end" but a limit of 0 that only an administrator can raise; GrpJobs on the account: the
    reason does not say the level, so the words name both."""
    cat, text = reasons.plain_reason("AssocMaxJobsLimit", {"assoc": 0, "user": 3, "account": 5})
    assert cat == "never" and "the limit is 0" in text and "until an administrator raises it" in text
    assert "your other jobs end" not in text
    cat, text = reasons.plain_reason("AssocMaxJobsLimit", {"assoc": 2, "user": 2, "account": 2})
    assert cat == "limit" and "when enough of your 2 running job(s) under it end" in text
    cat, text = reasons.plain_reason("AssocMaxJobsLimit")  # not known what runs: no promise
    assert cat == "limit" and "if the limit is 0, it can never start" in text and "your other jobs end" not in text
    cat, text = reasons.plain_reason("QOSMaxCpuPerUserLimit", {"assoc": 0, "user": 0, "account": None})
    assert cat == "never" and "this job alone asks for more than it" in text
    assert reasons.plain_reason("QOSMaxJobsPerAccountLimit", {"assoc": 0, "user": 0, "account": None})[0] == "limit"
    cat, text = reasons.plain_reason("AssocGrpJobsLimit", {"assoc": 0, "user": 0, "account": 0})
    assert cat == "limit" and "of your user or of an account above it (Grp* limits count the whole account's jobs)" in text
    assert "your association (your user in this account) has a limit" not in text
    # diagnose counts the user's running jobs in the job's account from the queue
    me = _q("11", user="carol", reason="AssocMaxJobsLimit")
    queue = [me, _q("5", user="carol", account="chem", state="RUNNING"), _q("6", user="dave", state="RUNNING")]
    d = why.diagnose(me, queue, line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600, favor_small=False,
                     mode="classic", now=0.0)
    assert d["category"] == "never" and "the limit is 0" in why.format_all(d)
    queue.append(_q("4", user="carol", state="RUNNING"))
    d = why.diagnose(me, queue, line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600, favor_small=False,
                     mode="classic", now=0.0)
    assert d["category"] == "limit" and "your 1 running job(s) under it end" in why.format_all(d)


def test_only_slurm_job_ids_are_asked_about():
    """`why ٥` (an Arabic-Indic digit: str.isdigit takes it) and a number past uint32 were asked of
    Slurm and said "not in the queue" (exit 6); they are not job ids (exit 2), and Slurm is not run."""
    from typer.testing import CliRunner

    from fscontrol.cli.app import app

    for bad in ("\u0665", "99999999999999999999"):
        r = CliRunner().invoke(app, ["why", bad])
        assert r.exit_code == 2 and "not a Slurm job id" in r.output and "Traceback" not in r.output, r.output
    for ok in ("1", "123", "123_4", "123+1", str(2**32 - 1)):
        assert why.is_job_id(ok), ok
    for bad in ("\u0665", "12\u0663", "99999999999999999999", str(2**32), "0", "", "12_", "_3", "1_2_3", "1+2_3",
                "abc", " 12", "12\n", "+12", "-1", "\uff11\uff12"):
        assert not why.is_job_id(bad), bad
        with pytest.raises(ConfigError, match="not a Slurm job id"):
            why.why_job(None, bad)  # refused before any Slurm command (the source is never used)


def test_reasons_new_in_25_11_and_26_05():
    """25.11's NvidiaImexChannels, and 26.05's topology rejections that squeue prints in place of
    Resources (a job's state_desc), get words; the topology's own message is kept."""
    cat, text = reasons.plain_reason("NvidiaImexChannels")
    assert cat == "resources" and "IMEX" in text
    for msg in reasons.TOPOLOGY_REASONS:
        cat, text = reasons.plain_reason(msg)
        assert cat == "resources" and msg in text and "topology" in text


def test_topology_reasons_are_the_words_slurm_26_05_prints():
    """Each of TOPOLOGY_REASONS is a string of the installed Slurm 26.05.5 (scripts/install-slurm.sh
    26.05), and so is NvidiaImexChannels: the table holds Slurm's words, not guesses."""
    import os
    from pathlib import Path

    lib = Path(os.environ.get("FSCONTROL_SID_ROOT", "/var/cache/fscontrol/sid")) / "usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so"
    if not lib.is_file():
        if os.environ.get("FSCONTROL_REQUIRE_SLURM") == "1":
            raise AssertionError(f"no Slurm 26.05 library at {lib}: run scripts/install-slurm.sh 26.05")
        import pytest
        pytest.skip("no Slurm 26.05 root (scripts/install-slurm.sh 26.05)")
    data = lib.read_bytes()
    for msg in (*reasons.TOPOLOGY_REASONS, "NvidiaImexChannels"):
        assert msg.encode() + b"\0" in data, msg


def test_the_limit_a_job_waits_on_is_read_with_its_value():
    """Issue #28: `why` named the limit (AssocGrpCpuLimit) but not its value. From `scontrol show
    assoc_mgr` as the testbed's slurmctld printed it to the job's owner (carol: GrpTRES cpu=1 on
    her association, cpu=3 on account chem, MaxJobs=2, MaxWall 30, MaxTRES cpu=4; the QOS normal
    with MaxTRESPerUser=cpu=2, dave is uid 1004): which limit, where it is set, its value and
    what counts against it. tests/test_integration_why.py runs it against slurmctld itself."""
    data = Path(__file__).parent / "data" / "why"
    assoc = why.parse_assoc_mgr((data / "assoc_mgr-assoc-22.05.txt").read_text())
    qos = why.parse_assoc_mgr((data / "assoc_mgr-qos-22.05.txt").read_text())
    assert why.limit_values("AssocGrpCpuLimit", assoc, "carol", "chem") == [
        {"on": "carol in account chem", "field": "GrpTRES cpu", "limit": "1", "in_use": "0"},
        {"on": "account chem", "field": "GrpTRES cpu", "limit": "3", "in_use": "0"}]
    assert why.limit_values("AssocMaxJobsLimit", assoc, "carol", "chem") == [
        {"on": "carol in account chem", "field": "MaxJobs", "limit": "2", "in_use": "0"}]
    assert why.limit_values("AssocMaxWallDurationPerJobLimit", assoc, "carol", "chem")[0]["limit"] == "30"
    assert why.limit_values("AssocMaxCpuPerJobLimit", assoc, "carol", "chem")[0]["field"] == "MaxTRESPJ cpu"
    assert why.limit_values("AssocGrpNodeLimit", assoc, "carol", "chem") == []  # set nowhere: N
    assert why.limit_values("QOSMaxCpuPerUserLimit", qos, "dave", "flat", 1004) == [
        {"on": "QOS normal, for dave", "field": "MaxTRESPU cpu", "limit": "2", "in_use": "0"}]
    # 24.11 (and 26.05) name the per-user owner "dave(1004)" (README.md in tests/data/why)
    qos_2411 = why.parse_assoc_mgr((data / "assoc_mgr-qos-24.11.txt").read_text())
    for uid in (1004, None):
        assert why.limit_values("QOSMaxCpuPerUserLimit", qos_2411, "dave", "flat", uid) == [
            {"on": "QOS normal, for dave", "field": "MaxTRESPU cpu", "limit": "2", "in_use": "0"}]
    assert why.limit_values("QOSMaxCpuPerUserLimit", qos_2411, "davey", "flat", 1005) == []
    assert why.limits_text(why.limit_values("AssocGrpCpuLimit", assoc, "carol", "chem")) == (
        "the limit: GrpTRES cpu=1 on carol in account chem (in use: 0); GrpTRES cpu=3 on account chem (in use: 0)")
    assert why.limit_field("Priority") is None and why.assoc_mgr_args("Resources", "carol", "chem") is None
    assert why.assoc_mgr_args("AssocGrpCpuLimit", "carol", "chem") == (
        "scontrol", "show", "assoc_mgr", "flags=assoc", "users=carol", "accounts=chem")


def test_a_job_waiting_for_resources_with_gpus_is_told_it_waits_for_gpus():
    """Issue #33 item 5: reason Resources for a job that asks for GPUs names them (a GPU job can wait
    with every CPU free); one without GRES keeps the CPUs, nodes or memory words."""
    gpu = waits.WaitJob("21", "bob", "physics", "normal", "PENDING", 2, 100, 0, "Resources", "2026-11-26T10:00:00", "", "",
                     "gres/gpu:2 per node")
    d = why.diagnose(gpu, [gpu], line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600, favor_small=False,
                     mode="classic", now=0.0)
    assert d["category"] == "resources" and "the GPUs it asks for (gres/gpu:2 per node)" in d["reason_text"]
    plain = _q("22", reason="Resources")
    d = why.diagnose(plain, [plain], line=None, partitions=PARTS, weights=WEIGHTS, max_age_s=3600, favor_small=False,
                     mode="classic", now=0.0)
    assert "GPU" not in d["reason_text"] and "CPUs, nodes or memory" in d["reason_text"]
    other = waits.WaitJob("23", "bob", "physics", "normal", "PENDING", 2, 100, 0, "Resources", "2026-11-26T10:00:00", "", "",
                       "gres/fpga:1 per job")
    assert "generic resources (GRES)" in why.diagnose(other, [other], line=None, partitions=PARTS, weights=WEIGHTS,
                                                       max_age_s=3600, favor_small=False, mode="classic",
                                                       now=0.0)["reason_text"]


def test_job_state_takes_only_the_row_that_is_the_job_asked():
    """`squeue -j 123+5` lists every component of heterogeneous job 123: the state is the asked
    component's, or none (an outside tester: a missing component was 'PENDING: not waiting')."""
    text = "PENDING|Resources|flat|normal|46+0\nPENDING|Resources|flat|normal|46+1\n"
    assert why.job_state(text, "46+1") == ("PENDING", "Resources", "flat", "normal")
    assert why.job_state(text, "46+5") == (None, None, None, None)
    assert why.job_state("RUNNING||flat|normal\n") == ("RUNNING", None, "flat", "normal")  # the 4-field form


def test_a_job_hidden_by_private_data_is_not_called_finished():
    """An outside tester: under PrivateData=jobs, another user's pending job was 'not in the queue
    (finished, or never existed)'."""
    assert "another user's (PrivateData=jobs" in str(why.not_pending("8", None, None, jobs_private=True))
    assert "finished, or never existed" in str(why.not_pending("8", None, None))
