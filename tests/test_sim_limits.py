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
    started them 3 s after alice's, beside it; the replay at its first backfill cycle after their
    submission, also before alice's end (+30 s: the agent's phase is not in a capture); without the
    setting the head's plan holds the node and they wait for the head."""
    cap = DATA / "bf_min_prio_reserve-1000000"
    assert re.search(r"^SchedulerParameters\s*=\s*bf_min_prio_reserve=1000000$", (cap / "config.txt").read_text(), re.M)
    real = {k: v["start"] for k, v in fidelity.real_starts(cap).items()}
    fill, head, *small = sorted(real, key=int)
    assert [round(real[j] - real[fill]) for j in (head, *small)] == [40, 3, 3, 3]  # what slurmctld did
    sim = fidelity.replay(cap)
    assert max(sim[j] for j in small) < sim[fill] + 38 <= sim[head], sim
    assert max(abs(sim[j] - real[j]) for j in small) <= 35 and max(abs(sim[j] - real[j]) for j in (fill, head)) <= 3
    plain = tmp_path / "plain"
    shutil.copytree(cap, plain)
    conf = (cap / "config.txt").read_text()
    (plain / "config.txt").write_text(re.sub(r"^SchedulerParameters\s*=.*$", "SchedulerParameters     = (null)",
                                             conf, flags=re.M))
    old = fidelity.replay(plain)
    assert min(old[j] for j in small) >= old[head], old
