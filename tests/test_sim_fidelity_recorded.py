"""The replay against slurmctld's real start times, on runs recorded on the testbed (issue #32):
`bench/sim_fidelity.py` generated the workloads (seeds 23 and 24, not the seed the scheduler model
was tuned on), ran them on the 22.05 testbed (one 128-CPU node) and captured them into
samples/fidelity/. Here the capture is replayed (`simulate CAPTURE`, its own config) and
compared job by job (fscontrol.sim.fidelity), without a testbed. docs/simulator-fidelity.md has
the figures; Fair Tree meets every target on seed 23 run again, and on its other runs
(seed 23's first, 31, 32) not all of them: checked as measured, so a change that moves them shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fscontrol.errors import ConfigError
from fscontrol.sim import fidelity

FID = Path(__file__).resolve().parent.parent / "samples" / "fidelity"


@pytest.mark.parametrize("run", ["seed23-classic", "seed24-classic", "seed51-classic", "seed52-classic",
                                 "seed53-classic"])
def test_classic_replays_meet_the_start_time_targets(run):
    """Seeds 23, 24 (not tuned on), 51 (with its probe jobs in the pass's walk: 55.6% within 60 s
    without), 53 (held out: chosen and run after that change, 2026-11-27) and 52 (since backfill
    runs in the phase of slurmctld's backfill agent, 2026-11-28: its probes pending from 25 s
    before the first submission put the agent's cycles 5 s after it; before, 91.1%, 94.4%, -6.6%)."""
    c = fidelity.compare(fidelity.real_starts(FID / run), fidelity.replay(FID / run))
    assert c["jobs"] == 45
    assert c["within_60s"] >= 0.90, fidelity.format_compare(c)
    assert c["pairs_in_order"] >= 0.90, fidelity.format_compare(c)
    assert abs(c["mean_wait_error"]) <= 0.05, fidelity.format_compare(c)  # seed 23: -1.3%, seed 24: +1.0%
    for acct, m in c["per_account"].items():  # every account with more than two jobs within 10%
        if m["jobs"] > 2:
            assert abs(m["error"]) <= 0.10, (acct, fidelity.format_compare(c))


@pytest.mark.parametrize("run, figures", [
    ("seed23-fairtree", (1.0, 0.818)),  # seed 23's first run: 100% within 60 s, not the pairs
    ("seed31-fairtree", (0.889, 0.947)),  # held out: a 6-s lead on one job (docs: what is left)
    ("seed32-fairtree", (0.889, 0.882)),  # a 1-s lead on job 67 moves a reservation a minute
    ("seed33-fairtree", (1.0, 1.0)),  # held out: every target but chem's mean wait (5.2 vs 6.8 s)
])
def test_fair_tree_replay_as_measured(run, figures):
    """Not all at the targets (docs/simulator-fidelity.md): the figures as measured, so a change
    to the Fair Tree replay is seen here. The independent checks: the same seed 23 run again on
    the testbed replays at the targets (below), and the two rules behind the figures are checked
    on hand-made cases (test_sim_slurmsched.py: batch_sched_delay, the will-run batches with
    seed 23's own end times; test_sim_mf_reference.py: the engine against the slow reference)."""
    c = fidelity.compare(fidelity.real_starts(FID / run), fidelity.replay(FID / run))
    assert c["jobs"] == 45
    assert (round(c["within_60s"], 3), round(c["pairs_in_order"], 3)) == figures, fidelity.format_compare(c)


@pytest.mark.parametrize("run", ["seed23-fairtree-rerun", "seed34-fairtree", "seed53-fairtree", "seed54-fairtree"])
def test_fair_tree_runs_meet_the_targets(run):
    """Seed 34 (held out: chosen and run after the rules were written) and seed 23 under Fair
    Tree run again on the testbed (2026-11-27, with slurmctld's log: its InitPrio lines,
    `sched: Allocate` at 3 s from the loop's last scheduling, the backfill starts):
    slurmctld's timing differed from seed 23's first run by a second here and there, and its
    real mean wait by 31%. The replay meets every target on both (34: 100%, 99.8%, -0.3%), and on
    seed 53 (held out, 2026-11-27: 97.8%, 97.4%, +0.0%) and seed 54 (held out: chosen and run on the
    testbed after backfill followed the agent's phase, 2026-11-28: 100%, 98.4%, -2.2%)."""
    c = fidelity.compare(fidelity.real_starts(FID / run), fidelity.replay(FID / run))
    assert c["jobs"] == 45
    assert c["within_60s"] >= 0.90 and c["pairs_in_order"] >= 0.90, fidelity.format_compare(c)
    assert abs(c["mean_wait_error"]) <= 0.05, fidelity.format_compare(c)  # -1.1%, -0.3%
    for acct, m in c["per_account"].items():
        if m["jobs"] > 2:
            assert abs(m["error"]) <= 0.10, (acct, fidelity.format_compare(c))


@pytest.mark.parametrize("run, figures, pooled", [
    # (within 60 s, pairs in the real order, |mean wait error| at most), and the pool's within 60 s
    ("seed41-classic-4x32", (0.933, 0.945, 0.012), 0.889),  # held out, 4 nodes of 32 CPUs
    ("seed42-classic-4x32", (1.0, 1.0, 0.006), 0.80),  # held out: the pool was -18.6% (docs: "Several nodes")
])
def test_four_node_replays_on_nodes(run, figures, pooled, monkeypatch):
    """On 4 nodes of 32 CPUs (four slurmd on the testbed's host, TB_NODES=4) the replay places
    each job on nodes (nodeplace.place) and backfills on nodes (nodesched: slurmctld's backfill
    reserves every node a job is planned on, whole), by the capture's 22.05 rule: at least as
    close to the real starts as docs/simulator-fidelity.md states, and closer than the pool of
    128 CPUs (the same replay with the node model off). Independent: the capture's own nodes
    (4 x 32, nodes.txt) and its real starts."""
    from dataclasses import replace

    from fscontrol.sim import run as simrun

    real = fidelity.real_starts(FID / run)
    c = fidelity.compare(real, fidelity.replay(FID / run))
    assert c["jobs"] == 45
    within, pairs, wait = figures
    assert c["within_60s"] >= within - 5e-4 and c["pairs_in_order"] >= pairs - 5e-4, fidelity.format_compare(c)
    assert round(abs(c["mean_wait_error"]), 3) <= wait, fidelity.format_compare(c)  # (the docs round to 0.1%)
    node_sched = simrun._node_sched
    monkeypatch.setattr(simrun, "_node_sched", lambda sc, w: replace(node_sched(sc, w), node_model=""))
    p = fidelity.compare(real, fidelity.replay(FID / run))
    assert round(p["within_60s"], 3) == pooled, fidelity.format_compare(p)
    assert c["within_60s"] > p["within_60s"] and c["mean_wait_error"] ** 2 <= p["mean_wait_error"] ** 2 + 1e-4


@pytest.mark.parametrize("run, same", [("seed41-classic-4x32", 37), ("seed42-classic-4x32", 38)])
def test_four_node_replays_place_jobs_on_as_many_nodes(run, same):
    """Where the replay put each job against sacct's NNodes for it (the capture records no node
    list): as measured (docs/simulator-fidelity.md), each node within the node's 32 CPUs."""
    from fscontrol.sim.command import SimulateOptions, simulate

    (r,) = simulate(SimulateOptions(str(FID / run), policy=["mf-classic"], progress=False)).results
    nodes = r.mf.nodes
    assert nodes is not None and len(nodes) == len(r.workload.jobs)
    rows = [ln.split("|") for ln in (FID / run / "jobs.txt").read_text().splitlines()]
    nn = {f[rows[0].index("JobID")]: int(f[rows[0].index("NNodes")]) for f in rows[1:]}
    for j, a in zip(r.workload.jobs, nodes):
        assert len(a) == 4 and sum(a) == j.size and all(0 <= x <= 32 for x in a), (j.job_id, a)
    for t in r.start:  # at every start, the jobs running on a node hold at most its CPUs
        held = [sum(a[k] for a, s, e in zip(nodes, r.start, r.end) if s <= t < e) for k in range(4)]
        assert max(held) <= 32, (t, held)
    got = sum(1 for j, a in zip(r.workload.jobs, nodes) if sum(1 for x in a if x) == nn[j.job_id])
    assert got == same, got


def test_the_replay_before_issue_32_missed_them():
    """The same capture under EASY at every event (the preset's scheduler, no capture phase, no
    completion latency): the comparison tells the two apart."""
    from dataclasses import replace

    from fscontrol.sim import run as simrun
    from fscontrol.sim.load import load_workload
    from fscontrol.sim.sweep import multifactor_specs

    w = load_workload(str(FID / "seed24-classic"))
    (spec,) = multifactor_specs(slurm_conf=FID / "seed24-classic" / "config.txt", controls=())
    pol = replace(spec.policy(), slurm_sched=None)
    r = simrun.run_simulation(w, pol, per_user=False)
    c = fidelity.compare(fidelity.real_starts(FID / "seed24-classic"), {j.job_id: s for j, s in zip(w.jobs, r.start)})
    assert c["within_60s"] < 0.7 and c["mean_wait_error"] < -0.5  # 62.2%, -58.3%


@pytest.mark.parametrize("run, on_nodes, pooled", [
    # (before backfill's cycles followed the agent's phase, 2026-11-28: seed 43 (0.911, 0.94, 0.097),
    # pooled (0.822, 0.913, -0.061); seed 44 (0.867, 0.966, -0.045), pooled (0.8, 0.859, -0.285))
    ("seed43-classic-4x32", (0.933, 0.94, 0.093), (0.844, 0.905, -0.091)),
    ("seed44-classic-4x32", (1.0, 0.993, -0.031), (0.778, 0.836, -0.307)),
    # held out: chosen and run on the testbed after that change (2026-11-28); every target on nodes
    # (its one chem job waited 1 s for 2 s: an account of one job is not held to the 10%)
    ("seed45-classic-4x32", (1.0, 0.985, 0.032), (0.844, 0.774, -0.151)),
])
def test_four_node_held_out_seeds_as_measured(run, on_nodes, pooled, monkeypatch):
    """Seeds 43 and 44 on 4 nodes of 32 CPUs, held out (chosen and run on the testbed after the
    node model was written, 2026-11-27): on nodes closer than the pool on every figure but seed
    43's mean wait; seed 44 at every target since the replay runs backfill in the phase of
    slurmctld's backfill agent (slurmsched.bf_first_cycle: its probes pending before the first
    submission, each decay pass was a change, so the agent's cycles fell 2 s before the grid from
    the first submission: jobs 69-73 backfilled at +28, not +30, so 73 ended at +123 and 75-78 started before 81 and 82 came;
    docs/simulator-fidelity.md), seed 43 not (job 20 planned on all four nodes, which blocks job
    21). As measured, so a change shows here."""
    from dataclasses import replace

    from fscontrol.sim import run as simrun

    d = FID / run
    real = fidelity.real_starts(d)
    c = fidelity.compare(real, fidelity.replay(d))
    got = (c["jobs"], round(c["within_60s"], 3), round(c["pairs_in_order"], 3), round(c["mean_wait_error"], 3))
    assert got == (45, *on_nodes), fidelity.format_compare(c)
    node_sched = simrun._node_sched
    monkeypatch.setattr(simrun, "_node_sched", lambda sc, w: replace(node_sched(sc, w), node_model=""))
    p = fidelity.compare(real, fidelity.replay(d))
    got = (round(p["within_60s"], 3), round(p["pairs_in_order"], 3), round(p["mean_wait_error"], 3))
    assert got == pooled, fidelity.format_compare(p)


def test_seed_44_placements_against_slurmctlds_nodes():
    """Seed 44's capture has sacct's NodeList: the replay puts 39 of its 45 jobs on the nodes
    slurmctld put them on, and the first 28 it starts on exactly those nodes (the 29th, job 85 of
    49 CPUs at +252 s, slurmctld's at +254 s, on other nodes). (Before backfill's cycles followed the agent's phase,
    29: the replay started jobs 81 and 82 at +125 s, beside job 75, where slurmctld had started
    75-78 at +124 s and 81 and 82 waited for job 74's end at +210 s.)"""
    from fscontrol.sim.command import SimulateOptions, simulate

    d = FID / "seed44-classic-4x32"
    rows = [ln.split("|") for ln in (d / "jobs.txt").read_text().splitlines()]
    h = rows[0]
    where = {f[h.index("JobID")]: f[h.index("NodeList")] for f in rows[1:]}

    def expand(s: str) -> set[str]:  # tbnode[1-3], tbnode4, tbnode[1,3-4]
        out: set[str] = set()
        for base, br in re.findall(r"([A-Za-z_-]+\d*)(?:\[([^\]]*)\])?,?", s):
            if not br:
                out.add(base)
                continue
            for part in br.split(","):
                a, _, b = part.partition("-")
                out |= {f"{base}{k}" for k in range(int(a), int(b or a) + 1)}
        return out

    (r,) = simulate(SimulateOptions(str(d), policy=["mf-classic"], progress=False)).results
    names = [f"tbnode{k}" for k in range(1, 5)]
    same = []
    for k in sorted(range(len(r.workload.jobs)), key=lambda k: r.start[k]):
        j = r.workload.jobs[k]
        got = {names[i] for i, x in enumerate(r.mf.nodes[k]) if x}
        same.append(got == expand(where[j.job_id]))
    assert sum(same) == 39 and all(same[: same.index(False)]) and same.index(False) == 28, same


def test_seed_54_classic_held_out_as_measured():
    """Seed 54 under classic, held out (chosen and run on the testbed after backfill followed the
    agent's phase, 2026-11-28; one 128-CPU node): every target but one account's mean wait, chem's
    10 jobs waiting 11.8 s in the replay for 13.7 s (-13.9%: 19 s over 10 short waits). As measured,
    so a change shows here."""
    c = fidelity.compare(fidelity.real_starts(FID / "seed54-classic"), fidelity.replay(FID / "seed54-classic"))
    got = (c["jobs"], round(c["within_60s"], 3), round(c["pairs_in_order"], 3), round(c["mean_wait_error"], 3))
    assert got == (45, 1.0, 0.996, -0.024), fidelity.format_compare(c)
    assert {a: round(m["error"], 3) for a, m in c["per_account"].items()} == \
        {"chem": -0.139, "flat": -0.037, "physics": -0.012}, fidelity.format_compare(c)


def test_as_other_run_puts_each_jobs_wait_after_its_arrival_by_submission_order():
    """A hand-worked case: two runs of three jobs (ids in submission order, 10-12 and 20-22). In
    the second run the jobs waited 5, 0 and 40 s; put after the first run's arrivals (100, 101,
    130) they start at 105, 101 and 170. Against the first run's starts (103, 101, 140: waits 3,
    0 and 10 s) all within 60 s, mean wait (5+0+40)/3 = 15 s against (3+0+10)/3 = 4.33 s. A
    second run of other jobs (a user changed, a job missing) is refused."""
    a = {"10": {"arrival": 100.0, "start": 103.0, "account": "x", "user": "u"},
         "11": {"arrival": 101.0, "start": 101.0, "account": "x", "user": "v"},
         "12": {"arrival": 130.0, "start": 140.0, "account": "y", "user": "u"}}
    b = {"21": {"arrival": 1001.0, "start": 1001.0, "account": "x", "user": "v"},
         "20": {"arrival": 1000.2, "start": 1005.2, "account": "x", "user": "u"},
         "22": {"arrival": 1030.0, "start": 1070.0, "account": "y", "user": "u"}}
    got = fidelity.as_other_run(a, b)
    assert got == pytest.approx({"10": 105.0, "11": 101.0, "12": 170.0})
    c = fidelity.compare(a, got)
    assert c["within_60s"] == 1.0
    assert c["sim_mean_wait_s"] == pytest.approx(15.0) and c["real_mean_wait_s"] == pytest.approx(13 / 3)
    with pytest.raises(ConfigError, match="same jobs"):
        fidelity.as_other_run(a, {**b, "22": {**b["22"], "user": "w"}})
    with pytest.raises(ConfigError, match="same jobs"):
        fidelity.as_other_run(a, {k: b[k] for k in ("20", "21")})


def test_slurmctld_against_itself_is_further_from_its_first_run_than_the_replay():
    """Seed 23 under Fair Tree was run twice on the testbed (22.05, one 128-CPU node, the same
    config but an unused GresTypes=gpu; 2026-11-26 and -27): the same 45 jobs submitted at the
    same offsets. slurmctld's second run, against its first, misses the issue's targets: 88.9%
    within 60 s, 75.0% of the pairs in order, mean wait +31.3% (physics +45.3%); the replay of
    the first run's capture is closer to it on every figure (100%, 81.8%, +5.8%). A one- to
    three-second difference in when a job ends (slurmctld's threads) moves a Fair Tree pass's
    ranks, and the order of everything after (docs/simulator-fidelity.md, "slurmctld against
    itself"). As measured from the two captures."""
    first = fidelity.real_starts(FID / "seed23-fairtree")
    again = fidelity.compare(first, fidelity.as_other_run(first, fidelity.real_starts(FID / "seed23-fairtree-rerun")))
    got = (again["jobs"], round(again["within_60s"], 3), round(again["pairs_in_order"], 3),
           round(again["mean_wait_error"], 3))
    assert got == (45, 0.889, 0.75, 0.313), fidelity.format_compare(again)
    rep = fidelity.compare(first, fidelity.replay(FID / "seed23-fairtree"))
    assert rep["within_60s"] > again["within_60s"] and rep["pairs_in_order"] > again["pairs_in_order"]
    assert abs(rep["mean_wait_error"]) < abs(again["mean_wait_error"])
    assert rep["mean_abs_start_error_s"] < again["mean_abs_start_error_s"]


@pytest.mark.parametrize("run, figures, accounts", [
    # Fair Tree seeds 31 and 32 again (2026-11-29, the bench with its probes; their first runs of
    # 2026-11-27, without, missed the targets): every target met
    ("seed31-fairtree-again1", (1.0, 1.0, -0.006), {"chem": -0.028, "flat": -0.002, "physics": -0.03}),
    ("seed31-fairtree-again2", (0.978, 0.982, -0.031), {"chem": -0.004, "flat": -0.034, "physics": -0.029}),
    ("seed32-fairtree-again1", (1.0, 0.983, 0.04), {"chem": -0.012, "flat": 0.051, "physics": -0.023}),
    ("seed32-fairtree-again2", (1.0, 1.0, -0.004), {"chem": -0.023, "flat": -0.002, "physics": -0.006}),
    # classic seed 43 on 4 x 32 CPUs, twice again: the first misses one account's mean wait (physics -13.0%)
    ("seed43-classic-4x32-again1", (0.978, 0.957, -0.038), {"chem": -0.048, "flat": -0.001, "physics": -0.13}),
    ("seed43-classic-4x32-again2", (0.933, 0.92, -0.045), {"chem": 0.0, "flat": -0.03, "physics": -0.083}),
])
def test_held_out_seeds_run_again_as_measured(run, figures, accounts):
    """The seeds that missed the targets (Fair Tree 31 and 32, classic 43 on four nodes) run again on
    the testbed (22.05; `bench/sim_fidelity.py --seeds 31 32 --algos fairtree --runs 2` and
    `--seeds 43 --algos classic --runs 2 --nodes 4`, 2026-11-29 evening, nothing changed in the
    replay since their first runs): as measured, so a change shows here."""
    c = fidelity.compare(fidelity.real_starts(FID / run), fidelity.replay(FID / run))
    got = (round(c["within_60s"], 3), round(c["pairs_in_order"], 3), round(c["mean_wait_error"], 3))
    assert c["jobs"] == 45 and got == figures, fidelity.format_compare(c)
    assert {a: round(m["error"], 3) for a, m in c["per_account"].items()} == accounts, fidelity.format_compare(c)


@pytest.mark.parametrize("first, again, figures", [
    ("seed31-fairtree-again1", "seed31-fairtree-again2", (1.0, 1.0, 0.006)),
    # seed 32 twice in a row: slurmctld's second run waits 18.0% longer (flat +19.8%, physics +20.7%),
    # where the replay of each run is within 4% (every target met on both)
    ("seed32-fairtree-again1", "seed32-fairtree-again2", (0.911, 0.929, 0.18)),
    ("seed43-classic-4x32-again1", "seed43-classic-4x32-again2", (1.0, 1.0, -0.002)),
    # seed 43's first run (2026-11-28, the same config) against each later one: slurmctld itself
    # misses the 60-s target (84.4%), where the replay of that run had 93.3%
    ("seed43-classic-4x32", "seed43-classic-4x32-again1", (0.844, 0.922, -0.03)),
    ("seed43-classic-4x32", "seed43-classic-4x32-again2", (0.844, 0.919, -0.032)),
])
def test_slurmctld_against_itself_on_the_seeds_run_again(first, again, figures):
    """The same workload run twice by slurmctld, the second run's waits against the first's
    (fidelity.as_other_run): on seeds 31 and 43 twice in a row it repeats itself to a second or
    two; seed 32's second run misses the mean-wait target against its first (+18.0%), and seed 43's
    run of the day before differs from both by more than the 60-s target allows."""
    a = fidelity.real_starts(FID / first)
    c = fidelity.compare(a, fidelity.as_other_run(a, fidelity.real_starts(FID / again)))
    got = (round(c["within_60s"], 3), round(c["pairs_in_order"], 3), round(c["mean_wait_error"], 3))
    assert c["jobs"] == 45 and got == figures, fidelity.format_compare(c)
