"""SchedulerParameters' count limits in the replay (issue #32 item 1), on the testbed's own runs:
tests/data/captures/limits-22.05/ holds the three captures tests/test_integration_sim_limits.py
made on Slurm 22.05.8 (one per setting). In each, slurmctld spread three 2-CPU jobs of dave's over
separate passes where, without the limit, one pass starts them all: bf_max_job_user=2 (dave's
whole-node job at the head takes one of his two tests a backfill cycle) and bf_max_job_start=1
(one start a cycle) put them 30 s apart; sched_max_job_start=1 lets the first submission's main
pass start one, and the next backfill cycle the other two. The rule is worked by hand in
tests/test_sim_slurmsched.py and checked against the reference in tests/test_sim_mf_reference.py."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fscontrol.sim import fidelity

DATA = Path(__file__).parent / "data" / "captures" / "limits-22.05"
# (capture, slurmctld's starts of the three small jobs, from the first)
CASES = [("bf_max_job_user-2", [0, 30, 60]), ("bf_max_job_start-1", [0, 30, 60]), ("sched_max_job_start-1", [0, 12, 12]),
         ("partition_job_depth-1", [0, 16, 32])]  # (the last with bf_interval=-1: main passes alone, at each job's end)


def _small(cap: Path) -> list[str]:
    rows = [ln.split("|") for ln in (cap / "jobs.txt").read_text().splitlines()[1:]]
    return [r[0] for r in rows if r[1] == "dave" and r[13] == "2"]


@pytest.mark.parametrize("name,spread", CASES, ids=[c[0] for c in CASES])
def test_the_replay_spreads_the_jobs_as_slurmctld_did(tmp_path, name, spread):
    cap = DATA / name
    setting = name.replace("-", "=") + (",bf_interval=-1" if name.startswith("partition") else "")
    assert re.search(rf"^SchedulerParameters\s*=\s*{setting}$", (cap / "config.txt").read_text(), re.M)
    real = {k: v["start"] for k, v in fidelity.real_starts(cap).items()}
    small = _small(cap)
    assert len(small) == 3
    r = sorted(real[j] for j in small)
    assert [round(x - r[0]) for x in r] == spread  # what slurmctld did (the capture)
    # the run's jobs (the capture's window holds the run before it too): alice's job and dave's head
    # were submitted just before the small ones
    mine = [j for j in real if int(j) >= int(min(small, key=int)) - (0 if name.startswith("sched") else 2)]
    sim = fidelity.replay(cap)
    assert max(abs(sim[j] - real[j]) for j in mine) <= 3  # each within 3 s of slurmctld's start
    s = sorted(sim[j] for j in small)
    assert [round(x - s[0]) for x in s] == [round(x - r[0]) for x in r] or name.startswith(("sched", "partition"))
    if name.startswith("sched"):
        assert round(s[1] - s[0]) >= 10 and round(s[2] - s[1]) == 0  # one at once, two at the next cycle
    if name.startswith("partition"):  # one a pass, each at a job's end (slurmctld's 1-s completions add up)
        assert round(s[1] - s[0]) >= 10 and round(s[2] - s[1]) >= 10
    free = tmp_path / "free"  # the same capture without the limit: one pass starts all three
    shutil.copytree(cap, free)
    conf = (cap / "config.txt").read_text()
    (free / "config.txt").write_text(re.sub(r"^SchedulerParameters\s*=.*$", "SchedulerParameters     = (null)",
                                            conf, flags=re.M))
    old = fidelity.replay(free)
    assert max(old[j] for j in small) - min(old[j] for j in small) == 0


def test_simulate_names_the_limits_it_applies():
    from typer.testing import CliRunner

    from fscontrol.cli.app import app

    r = CliRunner().invoke(app, ["simulate", str(DATA / "bf_max_job_user-2")])
    assert r.exit_code == 0, r.output
    assert "limits bf_max_job_user=2; SchedulerParameters=bf_max_job_user=2" in r.output, r.output


def test_the_replay_plans_no_job_below_bf_min_prio_reserve(tmp_path):
    """bf_min_prio_reserve=1000000 (over every priority: no job gets a backfill plan), the capture
    tests/test_integration_sim_limits.py made on 22.05.8: alice's job (64 CPUs, 40 s) runs, dave's
    whole-node head waits for it, his three 2-CPU jobs with 10-minute limits behind it. slurmctld
    started them 3 s after alice's, beside it, in its main pass (the head, below the threshold,
    does not fail the partition: job_scheduler.c `fail_by_part = false`); the replay too, 3 s after
    its start of alice's (the whole run 3 s earlier than slurmctld's); without the setting the
    head's plan holds the node and they wait for the head."""
    cap = DATA / "bf_min_prio_reserve-1000000"
    assert re.search(r"^SchedulerParameters\s*=\s*bf_min_prio_reserve=1000000$", (cap / "config.txt").read_text(), re.M)
    real = {k: v["start"] for k, v in fidelity.real_starts(cap).items()}
    fill, head, *small = sorted(real, key=int)
    assert [round(real[j] - real[fill]) for j in (head, *small)] == [40, 3, 3, 3]  # what slurmctld did
    sim = fidelity.replay(cap)
    assert max(sim[j] for j in small) < sim[fill] + 38 <= sim[head], sim
    assert [round(sim[j] - sim[fill]) for j in small] == [3, 3, 3]  # (before the main pass's rule: +27 to +30 s)
    assert max(abs(sim[j] - real[j]) for j in (fill, head, *small)) <= 3
    plain = tmp_path / "plain"
    shutil.copytree(cap, plain)
    conf = (cap / "config.txt").read_text()
    (plain / "config.txt").write_text(re.sub(r"^SchedulerParameters\s*=.*$", "SchedulerParameters     = (null)",
                                             conf, flags=re.M))
    old = fidelity.replay(plain)
    assert min(old[j] for j in small) >= old[head], old


ACCT = Path(__file__).parent / "data" / "captures" / "acct-limits-22.05"


def test_the_replay_holds_jobs_to_association_and_qos_limits_as_slurmctld_did(tmp_path):
    """tests/data/captures/acct-limits-22.05: tests/test_integration_start_limits.py's run on Slurm
    22.05.8 (2026-11-29), captured with the limits (assoc.txt, qoslimits.txt): the QOS lim1
    (MaxJobsPU=1) held alice's three 2-CPU, 40-s jobs one at a time (95, 96, 97: slurmctld started
    them +1, +41, +82 s from their submission), account chem's GrpTRES=cpu=4 held carol's third
    (100: +41 s) on a node with CPUs to spare. The replay does the same, each within 3 s (its
    starts +0, +40, +80 and +40: the capture's completion latency is 0 s, slurmctld's 1 s between
    an end and the next start adds up); without the two files every job starts at its submission."""
    from fscontrol.sim.history import read_history

    real = fidelity.real_starts(ACCT)
    mine = ["95", "96", "97", "98", "99", "100"]
    w = read_history(ACCT)
    lim = w.meta["limits"]
    caps = {k: (jj, cc) for k, jj, cc in zip(lim["kinds"], lim["jobs"], lim["cpus"])}
    assert caps == {"qos-user": (1, None), "account": (None, 4)}
    kind = {j.job_id: [lim["kinds"][x] for x in j.limit_keys] for j in w.jobs if j.job_id in mine}
    assert kind == {"95": ["qos-user"], "96": ["qos-user"], "97": ["qos-user"], "98": ["account"],
                    "99": ["account"], "100": ["account"]}
    sim = fidelity.replay(ACCT)
    assert [round(real[j]["start"] - real[j]["arrival"]) for j in mine] == [1, 41, 82, 1, 1, 41]
    assert [round(sim[j] - real[j]["arrival"]) for j in mine] == [0, 40, 80, 0, 0, 40]
    free = tmp_path / "free"
    shutil.copytree(ACCT, free)
    (free / "assoc.txt").unlink()
    old = fidelity.replay(free)
    assert [round(old[j] - real[j]["arrival"]) for j in mine] == [0] * 6
    # without AccountingStorageEnforce=limits slurmctld enforces none: nor does the replay
    conf = (ACCT / "config.txt").read_text()
    assert re.search(r"^AccountingStorageEnforce\s*=\s*.*limits", conf, re.M | re.I)
    (free / "assoc.txt").write_text((ACCT / "assoc.txt").read_text())
    (free / "config.txt").write_text(re.sub(r"^(AccountingStorageEnforce\s*=).*$", r"\1 associations", conf,
                                            flags=re.M))
    assert read_history(free).meta["limits"] is None


def test_jobs_a_limit_never_lets_run_are_left_out_of_the_replay(tmp_path):
    """A job that asks for more CPUs than one of its limits allows (or whose limit allows no running
    job) stays pending in slurmctld for ever (acct_policy.c, TRES_USAGE_REQ_EXCEEDS_LIMIT): the replay
    leaves it out and says so, as it does a job bigger than the machine (an outside tester's case:
    chem's GrpTRES=cpu=1 under carol's 2-CPU jobs made the replay run for ever)."""
    from fscontrol.sim.history import read_history

    cap = tmp_path / "cap"
    shutil.copytree(ACCT, cap)
    text = (cap / "assoc.txt").read_text()
    assert "|chem||science||||cpu=4|" in text
    (cap / "assoc.txt").write_text(text.replace("|chem||science||||cpu=4|", "|chem||science||||cpu=1|"))
    w = read_history(cap)
    assert w.meta["stats"]["never_start_limits"] == 3
    assert set(w.meta["limits"]["never"]) == {"98", "99", "100"}
    assert w.meta["limits"]["never"]["98"] == "it asks for 2 CPUs, more than the 1 account chem allows running at once"
    sim = fidelity.replay(cap)
    assert not {"98", "99", "100"} & set(sim) and {"95", "96", "97"} <= set(sim)


def test_the_replays_backfill_passes_by_a_job_its_own_start_put_under_a_limit(tmp_path):
    """The replay's backfill counts a job a start of the same cycle puts under a limit on running
    jobs towards no bf_max_job_test (backfill.c: pre_select before `bf_last_depth_try++`). Generated
    from acct-limits-22.05 (its config, limits and node; jobs written here, an outside tester's case):
    bf_max_job_test=3; dave's 100-CPU job runs, his whole-node job waits for it; alice's ten 4-CPU
    jobs in QOS lim1 (MaxJobsPerUser=1), then one of hers in QOS normal. The first cycle (+30 s) tests
    dave's head, starts alice's first lim1 job, passes her other nine by uncounted and starts her
    normal one: +30 s whatever bf_max_job_test (it was +35 s at 3, as the nine took the tests)."""
    cap = tmp_path / "cap"
    shutil.copytree(ACCT, cap)
    conf = (cap / "config.txt").read_text()
    (cap / "config.txt").write_text(re.sub(r"^SchedulerParameters\s*=.*$", "SchedulerParameters     = bf_max_job_test=3",
                                           conf, flags=re.M))
    head = (ACCT / "jobs.txt").read_text().splitlines()[0]
    t0 = 1795969800

    def row(i, user, acct, qos, sub, start, run, cpus):
        return (f"{i}|{user}|{acct}|normal|{qos}|COMPLETED|{sub}|{sub}|{start}|{start + run}|{run}|2|{cpus}|{cpus}|1|1|"
                f"billing={cpus},cpu={cpus},node=1|tbnode1|billing={cpus},cpu={cpus},mem=1M,node=1")
    rows = [row(201, "dave", "flat", "normal", t0, t0, 100, 100), row(202, "dave", "flat", "normal", t0 + 1, t0 + 100, 10, 128)]
    rows += [row(210 + k, "alice", "physics", "lim1", t0 + 1, t0 + 30 + 5 * k, 5, 4) for k in range(10)]
    rows += [row(230, "alice", "physics", "normal", t0 + 1, t0 + 30, 5, 4)]
    (cap / "jobs.txt").write_text("\n".join([head, *rows]) + "\n")
    sim = fidelity.replay(cap)
    assert round(sim["230"] - t0) == 30 and round(sim["210"] - t0) == 30, sim
    assert [round(sim[str(210 + k)] - sim["210"]) for k in range(10)] == [5 * k for k in range(10)]


PART = Path(__file__).parent / "data" / "captures" / "part-qos-24.11"


def test_the_replay_holds_jobs_to_their_partition_s_qos_as_slurmctld_did(tmp_path):
    """tests/data/captures/part-qos-24.11: tests/test_integration_start_limits.py's partition-QOS run
    on Slurm 24.11.5 (2026-11-29): the partition normal's QOS fscpq (MaxJobsPU=1, partitions.txt's
    QoS=) held alice's three 2-CPU, 40-s jobs in QOS normal one at a time (3, 4, 5: slurmctld
    started them +0, +42, +82 s from their submission); carol's in QOS fscbig (OverPartQOS,
    MaxJobsPU=2) ran two at once, her third at +42 (6, 7, 8). The replay: each within 2 s. Without
    the partition's QOS alice's run at once; without the flag fscpq's 1 holds carol's to one at a time."""
    from fscontrol.sim.history import read_history

    real = fidelity.real_starts(PART)
    mine = ["3", "4", "5", "6", "7", "8"]
    assert [round(real[j]["start"] - real[j]["arrival"]) for j in mine] == [0, 42, 82, 0, 0, 42]
    w = read_history(PART)
    lim = w.meta["limits"]
    # alice's: checked and counted under fscpq's MaxJobsPU; carol's: checked under fscbig's (first, it
    # masks fscpq's), counted towards both QOSes' per-user use
    got = {j.job_id: ([lim["names"][x] for x in j.limit_keys], [(lim["names"][x], cj) for x, cj, _ in j.limit_checks])
           for j in w.jobs if j.job_id in mine}
    assert got == {**{j: (["qos fscpq, user alice"], [("qos fscpq, user alice", 1)]) for j in ("3", "4", "5")},
                   **{j: (["qos fscbig, user carol", "qos fscpq, user carol"], [("qos fscbig, user carol", 2)])
                      for j in ("6", "7", "8")}}
    sim = fidelity.replay(PART)
    assert max(abs(sim[j] - real[j]["start"]) for j in mine) <= 2, {j: round(sim[j] - real[j]["arrival"]) for j in mine}
    free = tmp_path / "free"  # the partition without its QOS
    shutil.copytree(PART, free)
    (free / "partitions.txt").write_text((PART / "partitions.txt").read_text().replace("QoS=fscpq", "QoS=N/A"))
    old = fidelity.replay(free)
    assert [round(old[j] - real[j]["arrival"]) for j in mine[:3]] == [0, 0, 0]
    flat = tmp_path / "noflag"  # fscbig without OverPartQOS: the partition's QOS first, its MaxJobsPU=1
    shutil.copytree(PART, flat)
    for f in ("qoslimits.txt", "qos.txt"):
        (flat / f).write_text((PART / f).read_text().replace("OverPartQOS", ""))
    nf = fidelity.replay(flat)
    s = sorted(round(nf[j] - real[j]["arrival"]) for j in mine[3:])
    assert s[1] - s[0] >= 35 and s[2] - s[1] >= 35, s  # one at a time


REL = Path(__file__).parent / "data" / "captures" / "relative-qos-24.11"


def test_a_relative_qos_s_limits_are_a_share_of_its_partition_s_cpus(tmp_path):
    """tests/data/captures/relative-qos-24.11 (an outside tester's run on Slurm 24.11.5): the
    partition normal's QOS pqr, Flags=Relative, GrpTRES=cpu=5: slurmctld makes it 5% of the
    partition's 128 CPUs, 6 (assoc_mgr.c: at most 100, times the count, / 100, rounded down).
    carol's eight 1-CPU jobs 97-104: six started at once (+1 s), 103 at the first end (+22), 104 at
    the next (+42). The replay: each within 2 s (+0 x 6, +20, +40); read as 5 CPUs (the flag
    dropped), 102 waits too. The capture's earlier jobs ran under other partition QOSes than
    partitions.txt's last one: not compared."""
    from fscontrol.model import acctpolicy
    from fscontrol.slurm import tres

    mine = [str(j) for j in range(97, 105)]
    real = fidelity.real_starts(REL)
    assert [round(real[j]["start"] - real[j]["arrival"]) for j in mine] == [1] * 6 + [22, 42]
    sim = fidelity.replay(REL)
    assert max(abs(sim[j] - real[j]["start"]) for j in mine) <= 2, {j: round(sim[j] - real[j]["arrival"]) for j in mine}
    flat = tmp_path / "absolute"
    shutil.copytree(REL, flat)
    for f in ("qoslimits.txt", "qos.txt"):
        (flat / f).write_text((REL / f).read_text().replace("Relative", ""))
    old = fidelity.replay(flat)
    assert sum(1 for j in mine if old[j] - real[j]["arrival"] <= 5) == 5  # (5 at once, not 6)
    # the rule, by hand: 5% of 128 is 6.4, rounded down; a share over 100% is 100%; a Relative QOS that
    # is no partition's QOS keeps its numbers
    rows = [tres.AssocLimits("pqr", "", "", {"GrpTRES": {"cpu": 5.0}, "MaxTRESPU": {"cpu": 150.0}}, {"GrpJobs": 50}),
            tres.AssocLimits("loose", "", "", {"GrpTRES": {"cpu": 5.0}}, {})]
    got = {q.account: q for q in acctpolicy.relative(rows, {"pqr", "loose"}, {"normal": "PQR"}, {"normal": 128})}
    assert got["pqr"].tres == {"GrpTRES": {"cpu": 6}, "MaxTRESPU": {"cpu": 128}} and got["pqr"].jobs == {"GrpJobs": 50}
    assert got["loose"].tres == {"GrpTRES": {"cpu": 5.0}}
