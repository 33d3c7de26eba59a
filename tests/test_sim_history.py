"""A site's own history as a simulator workload (issue #15), on the samples recorded from the
testbed. The independent checks add up sacct's own columns here, by another route than the
reader: CPUs from AllocTRES' cpu= (the reader takes AllocCPUS), run time as End - Start (the
reader takes ElapsedRaw)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.errors import ConfigError, ParseError
from fscontrol.sim import load_workload, run_simulation
from fscontrol.sim.history import jobs_from_sacct, parse_nodes, read_history

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
PLAIN = ["testbed-basic", "testbed-fairtree", "testbed-2411-classic", "testbed-2411-fairtree", "testbed-2605-classic",
         *[f"testbed-series/{k:02d}" for k in range(10)]]
HISTORY = SAMPLES / "testbed-history"


def by_hand(folder: Path, name: str) -> tuple[int, float]:
    """Jobs that ran and their core-seconds, from the raw text: CPUs from AllocTRES (or AllocCPUS
    when the history fields have no AllocTRES), seconds as End - Start (Start-only: still running,
    up to the capture)."""
    lines = [ln for ln in (folder / f"{name}.txt").read_text().splitlines() if ln.strip()]
    head = lines[0].split("|")
    captured = json.loads((folder / "meta.json").read_text())["commands"][name]["finished_at"]
    count, core_s = 0, 0.0
    for ln in lines[1:]:
        row = dict(zip(head, ln.split("|")))
        if row["State"] == "PENDING" or row["Start"] in ("Unknown", "None", ""):
            continue
        start = int(row["Start"])
        end = int(row["End"]) if row["End"] not in ("Unknown", "None", "") else None
        secs = (end if end is not None else captured) - start
        if row["State"].startswith("CANCELLED") and secs == 0:
            continue  # cancelled before it ran
        tres = row.get("AllocTRES")
        cpus = int(dict(kv.split("=") for kv in tres.split(","))["cpu"]) if tres else int(row["AllocCPUS"])
        count += 1
        core_s += cpus * secs
    return count, core_s


BLOCKED = {"JobHeldAdmin", "JobHeldUser", "DependencyNeverSatisfied", "PartitionDown", "PartitionInactive"}


def pending_by_hand(folder: Path, blocked: bool = False) -> dict[str, tuple[int, float, float]]:
    """The jobs pending at the capture, from the raw squeue.txt: id -> (CPUs, submit, limit in s);
    those held or in a DOWN partition (Slurm would not start them) only with `blocked`."""
    lines = [ln for ln in (folder / "squeue.txt").read_text().splitlines() if ln.strip()]
    head = lines[0].split("|")
    out = {}
    for ln in lines[1:]:
        row = dict(zip(head, ln.split("|")))
        if row["STATE"] != "PENDING" or row["TIME_LIMIT"] == "UNLIMITED" or (row["REASON"] in BLOCKED and not blocked):
            continue
        parts = [int(x) for x in row["TIME_LIMIT"].replace("-", ":").split(":")]
        secs = sum(v * m for v, m in zip(reversed(parts), (1, 60, 3600, 86400)))
        out[row["JOBID"]] = (int(row["CPUS"]), float(row["SUBMIT_TIME"]), float(secs))
    return out


@pytest.mark.parametrize("name", PLAIN)
def test_plain_samples_replay_with_sacct_totals(name):
    folder = SAMPLES / name
    w = read_history(folder, machine=128)
    count, core_s = by_hand(folder, "sacct")
    pending = pending_by_hand(folder)
    assert not set(pending_by_hand(folder, blocked=True)) - set(pending) & {j.job_id for j in w.jobs}
    ran = [j for j in w.jobs if j.job_id not in pending]
    assert len(ran) == count > 0
    running = w.meta["stats"]["running_at_capture"]
    # ElapsedRaw of a job still running is taken a moment before the capture's end: allow 2 s each
    assert abs(sum(j.size * j.run for j in ran) - core_s) <= 2 * 128 * running + 1e-6
    assert w.meta["jobs_from"] == "sacct.txt" and w.meta["stats"]["no_limit"] == count  # -T sample: no limits
    # the jobs pending at the capture are replayed: at their submit time, for their time limit
    assert {j.job_id: (j.size, j.submit, j.run) for j in w.jobs if j.job_id in pending} == pending
    assert w.meta["stats"]["pending"] == len(pending)
    assert {r.account for r in w.shares} >= {"flat", "fsadmin"}
    r = run_simulation(w, "easy")
    assert r.overall["finished"] == count + len(pending)
    assert abs(sum(e - s for s, e in zip(r.start, r.end)) - sum(j.run for j in w.jobs)) < 1e-6


def test_recorded_history_sample_has_every_job_with_limits_and_eligible_times():
    w = read_history(HISTORY)
    meta = json.loads((HISTORY / "meta.json").read_text())
    assert w.nodes == 128 and w.meta["machine"] == {"nodes": 1, "cpus": 128, "node_cpus": [128]}  # TB_CPUS on one node
    count, core_s = by_hand(HISTORY, "jobs")
    mine = [j for j in w.jobs if j.user in ("alice", "bob", "carol", "dave")]
    assert len(w.jobs) == count
    assert len(mine) == 10  # scripts/record-history.sh submits 10 jobs and waits for them all to end
    assert sum(j.size * j.run for j in w.jobs) == core_s
    assert sorted(j.cpus for j in mine) == [4, 4, 8, 12, 16, 24, 32, 48, 64, 96]
    limits = {j.cpus: j.estimate for j in mine}
    assert limits[64] == 180 and limits[12] == 300 and limits[96] == 120  # -t 3, -t 5, -t 2 minutes
    assert all(j.run <= j.estimate for j in mine)
    begin = next(j for j in mine if j.cpus == 24)  # --begin=now+50
    assert begin.submit - begin.submitted >= 50
    dep = next(j for j in mine if j.cpus == 8)  # afterok on the 16-CPU job: eligible once it ended
    first = next(j for j in mine if j.cpus == 16)
    rows = [ln.split("|") for ln in (HISTORY / "jobs.txt").read_text().splitlines()[1:]]
    first_end = next(int(r[9]) for r in rows if r[0] == first.job_id)  # End, read here from the raw line
    assert first_end <= dep.submit <= first_end + 2 and dep.submitted < first_end
    assert meta["history_window"][1] - meta["history_window"][0] == 3600
    r = run_simulation(w, "easy")
    assert r.overall["finished"] == len(w.jobs)
    assert all(s >= j.submit for s, j in zip(r.start, w.jobs))  # nothing starts before it was eligible


def test_load_workload_and_cli_take_a_folder():
    w = load_workload(SAMPLES / "testbed-basic", history={"machine": 128, "unit": "cpus"})
    assert w.meta["source"] == "slurm" and w.nodes == 128
    r = CliRunner().invoke(app, ["simulate", str(SAMPLES / "testbed-basic"), "--machine", "128", "-p", "easy",
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "workload testbed-basic: 9 jobs on 128 CPUs; policy easy" in r.output  # 8 ran, 1 pending at the capture
    assert "not started: held 0, partition down 8" in r.output  # 8 more pending in the DOWN partition `parked`
    r = CliRunner().invoke(app, ["simulate", str(SAMPLES / "testbed-basic"), "--machine", "128", "--no-progress",
                                 "-p", "easy", "--start-blocked"])
    assert "workload testbed-basic: 17 jobs on 128 CPUs; policy easy" in r.output and "not started" not in r.output and "CPU-hours" in r.output
    r = CliRunner().invoke(app, ["simulate", str(SAMPLES / "testbed-basic"), "--unit", "nodes", "--machine", "1",
                                 "--json", "--no-progress"])
    assert r.exit_code == 0, r.output
    (d,) = json.loads(r.output)
    assert d["workload"]["nodes"] == 1 and d["workload"]["meta"]["unit"] == "nodes"


@pytest.mark.parametrize("args, msg", [
    ([], "has no nodes.txt"),
    (["--machine", "0"], "machine size must be >= 1"),
    (["--machine", "8", "--unit", "cores"], "unit must be one of cpus, nodes"),
])
def test_cli_bad_history_input_one_line(args, msg):
    r = CliRunner().invoke(app, ["simulate", str(SAMPLES / "testbed-basic"), *args, "--no-progress"])
    assert r.exit_code != 0 and msg in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_reader_rules_on_hand_made_lines():
    head = "JobID|User|Account|Partition|QOS|State|Submit|Eligible|Start|End|ElapsedRaw|TimelimitRaw|ReqCPUS|AllocCPUS|ReqNodes|NNodes"
    rows = [
        "1|a|x|p1|normal|COMPLETED|100|100|110|170|60|2|4|4|1|1",
        "2|a|x|p1|normal|COMPLETED|100|150|160|400|240|2|4|4|1|1",          # overran its 2 min: limit = run
        "3|b|y|p2|normal|CANCELLED by 0|100|100|Unknown|200|0|5|2|0|1|0",  # never started
        "4|b|y|p1|normal|PENDING|100|100|Unknown|Unknown|0|5|2|0|1|0",
        "5|b|y|p1|high|RUNNING|120|130|140|Unknown|30|UNLIMITED|8|8|2|2",   # no limit: the run so far
        "6|c|z|p2|normal|TIMEOUT|100|90|300|420|120|2|16|16|1|1",          # Eligible before Submit: Submit
    ]
    jobs, st = jobs_from_sacct([head, *rows], "sacct")
    assert [j.job_id for j in jobs] == ["1", "2", "4", "5", "6"]
    assert st["never_started"] == 1 and st["pending"] == 1 and st["running_at_capture"] == 1
    assert st["overrun"] == 1 and st["no_limit"] == 1
    j2, j4, j5, j6 = jobs[1], jobs[2], jobs[3], jobs[4]
    assert (j4.submit, j4.run, j4.estimate, j4.size) == (100, 300, 300, 2)  # pending: runs for its limit
    assert (j2.submit, j2.submitted, j2.estimate, j2.run) == (150, 100, 240, 240)
    assert (j5.size, j5.nodes, j5.qos, j5.estimate) == (8, 2, "high", 30)
    assert j6.submit == 100 and j6.estimate == 120
    jobs, st = jobs_from_sacct([head, *rows], "sacct", unit="nodes", partitions=frozenset({"p1"}))
    assert [j.size for j in jobs] == [1, 1, 1, 2] and st["other_partition"] == 1  # job 3 never started
    with pytest.raises(ParseError, match="missing column"):
        jobs_from_sacct(["JobID|User", "1|a"], "sacct")
    with pytest.raises(ParseError, match="fields, header has"):
        jobs_from_sacct([head, "1|a"], "sacct")
    with pytest.raises(ParseError, match="bad value"):
        jobs_from_sacct([head, "1|a|x|p1|normal|COMPLETED|soon|100|110|170|60|2|4|4|1|1"], "sacct")
    assert parse_nodes("n1|normal*|128|idle\nn1|debug|128|idle\nn2|normal*|64|mixed\n") == {
        "n1": (128, frozenset({"normal", "debug"})), "n2": (64, frozenset({"normal"}))}
    with pytest.raises(ParseError):
        parse_nodes("n1|normal|many|idle")
    with pytest.raises(ConfigError, match="unit must be"):
        jobs_from_sacct([head], "sacct", unit="gpus")


def test_a_replay_under_multifactor_uses_the_captured_tree_and_settings():
    """The multifactor engine takes the capture's own association tree (RawShares as sshare printed
    them, usage reset to 0: the capture's usage is the period's end) and adds the controller's
    dummy; the CLI reads the capture's config.txt (scontrol show config) for the weights."""
    from fscontrol.slurm.parse import parse_sshare
    from fscontrol.sim.multifactor import DUMMY, captured_tree, priority_config_from_slurm_conf

    folder = ROOT / "samples" / "testbed-history"
    w = load_workload(str(folder))
    printed = {r.key: r.raw_shares for r in parse_sshare((folder / "sshare.txt").read_text())}
    rows = captured_tree(w)
    assert {r.key: r.raw_shares for r in rows if r.key in printed} == printed
    assert all(r.raw_usage == 0 for r in rows) and DUMMY in {r.key for r in rows}
    assert {(j.account, j.user) for j in w.jobs} <= {r.key for r in rows}
    prio = priority_config_from_slurm_conf((folder / "config.txt").read_text())
    assert (prio.half_life_s, prio.calc_period_s, prio.weight_fairshare) == (300.0, 60.0, 100000.0)  # the testbed's
    r = CliRunner().invoke(app, ["simulate", str(folder), "--control", "hybrid", "--u-star", "0.5", "--json", "--no-progress"])
    assert r.exit_code == 0, r.output
    (run,) = json.loads(r.output)
    assert run["policy"]["priority"]["half_life_s"] == 300.0 and run["halving"]["u_star"] == 1800.0


def test_capture_then_simulate_keeps_the_pending_jobs():
    """Issue 28: `capture` then `simulate` dropped the jobs pending at the capture (testbed-basic: 17
    recorded, 8 simulated, mean wait 0). The 9 pending jobs arrive at their submit time with their
    time limits; on the testbed's 128 CPUs they cannot all start at once (they need 27 CPUs beside
    the 120 of the jobs running then), so some wait. 8 of them wait on the DOWN partition `parked`:
    Slurm would not start them, so they are replayed only with start_blocked (--start-blocked)."""
    default = read_history(SAMPLES / "testbed-basic", machine=128)
    assert len(default.jobs) == 9 and default.meta["stats"]["partition_down"] == 8
    assert set(pending_by_hand(SAMPLES / "testbed-basic")) == {"11"} and "11" in {j.job_id for j in default.jobs}
    w = read_history(SAMPLES / "testbed-basic", machine=128, start_blocked=True)
    pending = pending_by_hand(SAMPLES / "testbed-basic", blocked=True)
    assert len(pending) == 9 and set(pending) <= {j.job_id for j in w.jobs}
    r = run_simulation(w, "easy")
    assert r.overall["finished"] == len(w.jobs) == 17
    start = {j.job_id: s for j, s in zip(w.jobs, r.start)}
    job11 = next(j for j in w.jobs if j.job_id == "11")
    assert (job11.size, job11.estimate) == (16, 600.0)
    assert sum(j.size for j in w.jobs if j.job_id in pending) == 27
    assert any(start[k] > j.submit for k, j in ((j.job_id, j) for j in w.jobs))
    assert r.overall["mean_wait_s"] > 0


def test_a_replay_does_not_start_what_slurm_would_not_start(tmp_path):
    """An outside tester: held jobs (JobHeldAdmin/JobHeldUser) and jobs in a DOWN partition were
    started in the replay, a begin time two hours away was replayed with a 0.1 h wait. The capture
    is testbed-history copied, with jobs pending at the capture in its squeue.txt (job 11 also in
    jobs.txt, held by an admin with Eligible = Submit, as sacct printed it)."""
    import shutil

    d = tmp_path / "cap"
    shutil.copytree(HISTORY, d)
    t0 = 1795459030
    (d / "jobs.txt").write_text((d / "jobs.txt").read_text()
                                + f"11|alice|flat|normal|normal|PENDING|{t0}|{t0}|Unknown|Unknown|0|5|4|0|1|0\n")
    head = (d / "squeue.txt").read_text().splitlines()[0]
    rows = [  # JOBID|USER|ACCOUNT|PARTITION|QOS|STATE|NODES|CPUS|PRIORITY|NICE|REASON|SUBMIT|START|LIMIT|COMMENT
        f"11|alice|flat|normal|normal|PENDING|1|4|100|0|JobHeldAdmin|{t0}|N/A|5:00|",
        f"12|bob|flat|normal|normal|PENDING|1|4|100|0|JobHeldUser|{t0}|N/A|5:00|",
        f"13|carol|chem|parked|normal|PENDING|1|4|100|0|PartitionDown|{t0}|N/A|5:00|",
        f"14|dave|flat|normal|normal|PENDING|1|4|100|0|BeginTime|{t0}|{t0 + 7200}|5:00|",
        f"15|bob|flat|normal|normal|PENDING|1|4|100|0|Dependency|{t0 + 10}|N/A|5:00|",
        f"16|bob|flat|normal|normal|PENDING|1|4|100|0|Priority|{t0 + 20}|N/A|5:00|",
    ]
    (d / "squeue.txt").write_text("\n".join([head, *rows]) + "\n")
    w = read_history(d)
    ids = {j.job_id: j for j in w.jobs}
    assert not {"11", "12", "13"} & set(ids) and {"14", "15", "16"} <= set(ids)
    st = w.meta["stats"]
    assert (st["held"], st["partition_down"], st["dependency_ignored"], st["begin_time"]) == (2, 1, 1, 1)
    assert ids["14"].submit == t0 + 7200 and ids["14"].submitted == t0  # arrives at its begin time
    assert ids["15"].submit == t0 + 10 and ids["16"].submit == t0 + 20
    r = CliRunner().invoke(app, ["simulate", str(d), "--json", "--no-progress"])
    assert r.exit_code == 0, r.output
    (run,) = json.loads(r.output)
    starts = {row["id"]: row["start_s"] for row in run.get("jobs", [])} if "jobs" in run else None
    res = run_simulation(w, "easy")
    k = [j.job_id for j in w.jobs].index("14")
    assert res.start[k] >= t0 + 7200  # not started before its begin time
    assert starts is None or starts["14"] >= t0 + 7200
    r = CliRunner().invoke(app, ["simulate", str(d), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "not started: held 2, partition down 1" in r.output
    assert "replayed without their dependency: 1 jobs" in r.output


def test_jobs_submitted_in_one_second_keep_their_job_ids_order(tmp_path):
    """slurmctld breaks a priority tie by submit time, then by job id (job_scheduler.c
    `sort_job_queue2`); the replay's tie goes by the workload's order, so jobs of one second are
    read in job id order, whatever order the capture lists them in (a job pending at the capture
    is added after sacct's: an outside tester's head job came after a later one)."""
    import shutil

    cap = tmp_path / "cap"
    shutil.copytree(Path(__file__).parent / "data" / "captures" / "nodesizes" / "22.05", cap)
    head, *rows = (cap / "jobs.txt").read_text().splitlines()
    (cap / "jobs.txt").write_text("\n".join([head, *reversed(rows)]) + "\n")
    w = read_history(cap, partitions=["normal"])
    assert [j.job_id for j in w.jobs] == ["5", "6", "7", "8"]  # (7 and 8: one submit second)
