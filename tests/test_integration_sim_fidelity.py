"""The multifactor simulator against the real slurmctld: the same jobs, the same slurm.conf, classic
fair-share with a runtime d; every association's RawUsage (sshare) and every probed user's F
(sprio) after each decay pass agree with the simulator's within 1%.

The simulated jobs start and end when sacct says the real ones did (the scheduler's second or two
of latency is not what this checks: the decay passes, the charges, the end-of-job top-ups and the
fair-share factor are). Passes fall every PriorityCalcPeriod from a pass read off slurmctld's own
record (StateSaveLocation/priority_last_decay_ran). Probe jobs pend in the DOWN partition, first
in slurmctld's job list, so sprio shows their users' F; in the simulator they are jobs wider than
the machine, first in its list too.
"""

from __future__ import annotations

import time

import pytest

from fscontrol.slurm import parse
from fscontrol.records import ShareRow
from fscontrol.sim.multifactor import priority_config_from_slurm_conf, simulate_multifactor
from fscontrol.sim.workload import SimJob, Workload
from fscontrol.slurm.source import last_decay_pass

pytestmark = pytest.mark.slurm

D = 5  # the runtime d (scontrol fsdampeningfactor), slurm.conf says 1
PROBES = [("alice", "flat"), ("bob", "flat"), ("dave", "flat"), ("carol", "chem"), ("alice", "physics"), ("bob", "physics")]
# (user, account, cpus, seconds, submitted this many seconds after the first pass)
JOBS = [("alice", "flat", 8, 100, 0), ("bob", "flat", 4, 170, 0), ("carol", "chem", 16, 70, 0),
        ("alice", "physics", 8, 130, 0), ("carol", "flat", 2, 200, 30), ("bob", "physics", 24, 60, 95),
        ("alice", "flat", 4, 80, 130)]
PASSES = 5  # passes compared after the first


def _run_and_read(slurm, p0: float, until: float, submit) -> list[tuple[int, dict, dict]]:
    """Submit each job when it is due (`submit(now)`) and, after every decay pass until `until`,
    read (the pass's time, sshare's rows, sprio's rows)."""
    state = str(slurm.dir / "spool" / "ctld")
    last = last_decay_pass(state)
    out = []
    while time.time() < until:
        time.sleep(0.2)
        submit(time.time() - p0)
        now = last_decay_pass(state)
        if now is not None and now != last:
            last = now
            shares = parse.parse_sshare(slurm.run(*parse.SSHARE_ARGS))
            prio = parse.parse_sprio(slurm.run(*parse.SPRIO_ARGS))
            if last_decay_pass(state) == now:  # no other pass between the reads
                out.append((int(now), {r.key: r for r in shares}, {p.job_id: p for p in prio}))
    return out


def test_simulator_matches_slurm_usage_and_sprio_at_every_pass(slurm):
    slurm.cancel_all()
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=normal", "set", "usagefactor=1")
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    state = str(slurm.dir / "spool" / "ctld")
    assert last_decay_pass(state) is not None, "the test reads slurmctld's pass record (root on its host)"
    slurm.run("scontrol", "fsdampeningfactor", str(D))
    try:
        slurm.wait_for_pass()
        p0 = int(last_decay_pass(state))
        start_rows = parse.parse_sshare(slurm.run(*parse.SSHARE_ARGS))
        probe_ids = {slurm.probe(u, a): (a, u) for u, a in PROBES}
        ids: dict[str, tuple] = {}
        due = sorted(JOBS, key=lambda j: j[4])

        def submit(elapsed: float) -> None:
            while due and due[0][4] <= elapsed:
                u, a, cpus, secs, _ = due.pop(0)
                ids[slurm.submit(u, a, cpus, secs)] = (u, a, cpus, secs)

        reads = _run_and_read(slurm, p0, p0 + 60 * (PASSES + 0.5), submit)
        assert int(slurm.damping()) == D
    finally:
        slurm.cancel_all()
        slurm.scontrol("reconfigure")  # d back to slurm.conf's
    assert len(reads) >= PASSES - 1 and not due, [r[0] for r in reads]

    # the real jobs' times and the probes' submissions, from sacct
    acct = parse.parse_sacct(slurm.run("env", "SLURM_TIME_FORMAT=%s", "sacct", "-a", "-X", "-P", "-j",
                                       ",".join([*probe_ids, *ids]), "-o", parse.SACCT_FIELDS))
    by_id = {j.job_id: j for j in acct}
    jobs: list[SimJob] = []
    for jid, (a, u) in probe_ids.items():
        jobs.append(SimJob(jid, by_id[jid].submit, 60, 60, 10**6, u, a))  # wider than the machine: never starts
    for jid, (u, a, cpus, _) in ids.items():
        j = by_id[jid]
        assert j.start is not None and j.end is not None, jid
        jobs.append(SimJob(jid, j.start, j.end - j.start, 10**6, cpus, u, a))
    jobs.sort(key=lambda j: (j.submit, int(j.job_id)))
    conf = priority_config_from_slurm_conf(slurm.conf.read_text(), damping=D)
    assert not conf.fair_tree and conf.limits and conf.calc_period_s == 60
    tree = tuple(ShareRow(r.account, r.user, r.parent, r.depth, r.raw_shares, r.shares_parent, r.norm_shares, 0,
                          None, None, None) for r in start_rows)
    w = Workload("fidelity", 128, jobs)
    t0 = jobs[0].submit
    sim = simulate_multifactor(w, conf, tree=tree, first_pass=float(p0),
                               initial_usage={r.key: float(r.raw_usage) for r in start_rows},
                               trace=True, trace_keys=[r.key for r in start_rows], max_time=reads[-1][0] - t0 + 1)
    assert [s for s in sim.start if s != float("inf")] == sorted(j.start for j in by_id.values() if j.job_id in ids)
    trace = {round(t + t0): (u, f) for t, u, f in sim.trace}

    worst_u = worst_f = worst_abs = 0.0
    compared_u = compared_f = moved = 0
    for t, shares, prio in reads:
        assert t in trace, (t, sorted(trace))
        su, sf = trace[t]
        for k, row in shares.items():
            worst_abs = max(worst_abs, abs(su[k] - row.raw_usage))
            if row.raw_usage >= 100:  # sshare truncates to integers: 1% needs 100 units or more
                err = su[k] / row.raw_usage - 1
                worst_u = max(worst_u, abs(err))
                compared_u += 1
                assert abs(err) <= 0.01, (t, k, row.raw_usage, su[k])
        for jid, key in probe_ids.items():
            real = prio[jid].fairshare_norm
            if real > 0.001:
                err = sf[key] / real - 1
                worst_f = max(worst_f, abs(err))
                compared_f += 1
                moved += real < 0.99
                assert abs(err) <= 0.01, (t, key, real, sf[key])
    print(f"{len(reads)} passes: RawUsage of {compared_u} (association, pass) pairs within {worst_u:.4%} "
          f"(every association: within {worst_abs:.2f} CPU-seconds of sshare's integer), "
          f"sprio F of {compared_f} ({moved} of them below 0.99) within {worst_f:.4%} (d = {D})")
    assert compared_u >= 20 and compared_f >= 15 and moved >= 10  # F moved: the comparison is not of 1s


def test_a_capture_holds_what_a_replay_needs(slurm, tmp_path):
    """Issue #32 item 2: a capture keeps the decay passes' phase (slurmctld's own record,
    StateSaveLocation/priority_last_decay_ran), its SchedulerParameters (config.txt), the nodes
    and the pending jobs with their limits, the advance reservations; `simulate CAPTURE -p
    mf-classic` replays with the capture's config (and says so, and names the reservations it does
    not model), its passes in slurmctld's phase."""
    import json

    from typer.testing import CliRunner

    from fscontrol.cli.app import app
    from fscontrol.sim.load import load_workload
    from fscontrol.sim.slurmsched import sched_from_config
    from fscontrol.slurm.source import capture

    slurm.cancel_all()
    state = str(slurm.dir / "spool" / "ctld")
    held = slurm.submit("alice", "flat", 4, 300, begin="now+3600")  # pending at the capture, with its limit
    slurm.scontrol("create", "reservation", "reservationname=fsc_cap", "starttime=now+3600", "duration=10",
                   "users=alice", "corecnt=32", "partitionname=normal")
    try:
        before = last_decay_pass(state)
        capture(slurm.source(), tmp_path / "cap", history_s=600)
        after = last_decay_pass(state)
    finally:
        slurm.cancel_all()
        slurm.run("scontrol", "delete", "reservation=fsc_cap", check=False)
    meta = json.loads((tmp_path / "cap" / "meta.json").read_text())
    assert meta["priority_last_decay_ran"] in (before, after) and before is not None
    config = (tmp_path / "cap" / "config.txt").read_text()
    assert "SchedulerParameters" in config
    sc = sched_from_config(config)
    assert sc.backfill and sc.bf_interval_s == 30.0  # the testbed's: Slurm's defaults
    w = load_workload(str(tmp_path / "cap"))
    assert w.meta["last_decay_pass"] == meta["priority_last_decay_ran"]
    # (the testbed's node has 4 GPUs, testbed.sh TB_GPUS: nodes.txt's %G since 2026-11-29)
    assert w.nodes == 128 and w.meta["machine"] == {"nodes": 1, "cpus": 128, "node_cpus": [128], "node_gpus_each": [4]}
    resv = w.meta["reservations"]  # advance reservations: recorded, named by the replay (not modelled)
    assert [(r["name"], r["cpus"], r["users"]) for r in resv] == [("fsc_cap", 32, "alice")], resv
    assert 3500 < resv[0]["start"] - meta["history_window"][1] < 3700 and resv[0]["end"] - resv[0]["start"] == 600
    job = next(j for j in w.jobs if j.job_id == held)
    assert (job.size, job.estimate) == (4, 420.0)  # testbed.submit: -t seconds // 60 + 2 minutes
    r = CliRunner().invoke(app, ["simulate", str(tmp_path / "cap"), "-p", "mf-classic", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "a capture's config wins over a preset" in r.output and "scheduler: slurmctld's" in r.output
    assert "the capture holds 1 advance reservation(s) (fsc_cap): the replay does not model them" in r.output
