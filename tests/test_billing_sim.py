"""The simulator charges billing, not CPUs, where the capture records it (issue #33, GPUs): a
history with AllocTRES gives each job its `billing=`, and the multifactor engine charges it.
Both fail on main before this change (ef8da55: the engine charged each job's size)."""

from __future__ import annotations

import random

import pytest

from fscontrol.model.passes import Charge, slurm_usage
from fscontrol.records import ShareRow
from fscontrol.sim.history import jobs_from_sacct
from fscontrol.sim.mfconfig import PriorityConfig
from fscontrol.sim.multifactor import simulate_multifactor
from fscontrol.sim.workload import SimJob, Workload


def test_history_reads_the_billing_from_alloctres():
    head = "JobID|User|Account|Partition|QOS|State|Submit|Eligible|Start|End|ElapsedRaw|TimelimitRaw|ReqCPUS|AllocCPUS|ReqNodes|NNodes|AllocTRES"
    rows = ["1|a|x|gpu|normal|COMPLETED|100|100|110|170|60|2|4|4|1|1|billing=20,cpu=4,gres/gpu=2,node=1",
            "2|a|x|cpu|normal|COMPLETED|100|100|110|170|60|2|4|4|1|1|billing=4,cpu=4,node=1",
            "3|a|x|cpu|normal|COMPLETED|100|100|110|170|60|2|4|4|1|1|"]
    jobs, st = jobs_from_sacct([head, *rows], "sacct")
    assert [j.billing for j in jobs] == [20.0, 4.0, 0.0] and st["billed_not_cpus"] == 1


def test_engine_charges_each_jobs_billing():
    """Root's RawUsage at every pass equals passes.slurm_usage on the jobs' billing (GPU jobs bill
    up to 9x their CPUs), and not the CPU-charged staircase."""
    rng = random.Random(4)
    jobs = []
    t = 0.0
    for i in range(40):
        t += rng.uniform(0, 40)
        size = rng.choice([1, 2, 4])
        bill = size * rng.choice([1, 3, 9])  # GPUs billed at 8 a GPU, one GPU a CPU (or none)
        jobs.append(SimJob(str(i), t, rng.uniform(5, 200), 400, size, f"u{i % 3}", "A", billing=float(bill)))
    w = Workload("gpus", 64, jobs)
    rows = (ShareRow("root", "", "", 0, None, False, 1.0, 0, None, 1.0, None),
            ShareRow("A", "", "root", 1, 1, False, None, 0, None, None, None),
            *(ShareRow("A", f"u{k}", "A", 2, 1, False, None, 0, None, None, None) for k in range(3)))
    pc = PriorityConfig(weight_fairshare=1000, calc_period_s=60, half_life_s=600, fair_tree=False)
    r = simulate_multifactor(w, pc, tree=rows, first_pass=0.0, trace=True, trace_keys=[("root", "")])
    assert r.start == [j.submit for j in w.jobs]
    passes = [0.0] + [tt + w.jobs[0].submit for tt, _, _ in r.trace]
    at = [p + 1e-6 for p in passes[1:]]
    model = slurm_usage(at, passes, [Charge(j.submit, j.submit + j.run, j.billing) for j in w.jobs], 600)
    by_cpus = slurm_usage(at, passes, [Charge(j.submit, j.submit + j.run, j.size) for j in w.jobs], 600)
    sim = [u[("root", "")] for _, u, _ in r.trace]
    assert len(sim) > 15
    for a, b in zip(sim, model):
        assert a == pytest.approx(b, rel=1e-9)
    assert sim[-1] > 2 * by_cpus[-1]


def test_engine_charges_billing_times_the_qos_usage_factor():
    """Slurm charges RawUsage billing x the QOS's UsageFactor (#33: the simulator ignored it). On the
    22.05 testbed (tests/test_integration_tres.py, docs/billing.md) a 4-CPU, 2-GPU job (billing 16)
    and a 6-CPU job under a QOS with UsageFactor 2 ran the same 60 s: slurmctld's RawUsage came out
    1.3326 : 1, where 16 : 12 = 1.3333 and CPUs alone would give 4 : 6. The engine, on the same two
    jobs, gives 16 : 12 to the last digit."""
    jobs = [SimJob("gpu", 0.0, 60.0, 120, 4, "alice", "physics", billing=16.0),
            SimJob("cpu", 0.0, 60.0, 120, 6, "bob", "physics", qos="twice", billing=6.0, usage_factor=2.0)]
    rows = (ShareRow("root", "", "", 0, None, False, 1.0, 0, None, 1.0, None),
            ShareRow("physics", "", "root", 1, 1, False, None, 0, None, None, None),
            *(ShareRow("physics", u, "physics", 2, 1, False, None, 0, None, None, None) for u in ("alice", "bob")))
    pc = PriorityConfig(weight_fairshare=1000, calc_period_s=30, half_life_s=600, fair_tree=False)
    r = simulate_multifactor(Workload("uf", 128, jobs), pc, tree=rows, first_pass=0.0, trace=True,
                             trace_keys=[("physics", "alice"), ("physics", "bob")])
    last = r.trace[-1][1]
    ua, ub = last[("physics", "alice")], last[("physics", "bob")]
    assert ua > 0 and ua / ub == pytest.approx(16 / 12, rel=1e-12)
    assert ua / ub == pytest.approx(1.3326, rel=1e-3)  # slurmctld's own figure on the testbed


def test_a_capture_s_qos_usage_factor_reaches_its_jobs(tmp_path):
    """read_history takes each QOS's UsageFactor from the capture's qos.txt (sacctmgr show qos)."""
    import shutil
    from pathlib import Path

    from fscontrol.sim.history import read_history
    from fscontrol.sim.workload import billing_rates

    src = Path(__file__).resolve().parent.parent / "samples" / "fidelity" / "seed23-classic"
    cap = tmp_path / "cap"
    shutil.copytree(src, cap)
    plain = read_history(cap)
    (cap / "qos.txt").write_text("Name|UsageFactor\nnormal|2.500000\nfspad|1.000000\n")
    scaled = read_history(cap)
    normal = [j for j in scaled.jobs if (j.qos or "normal") == "normal"]
    assert normal and scaled.meta["stats"]["usage_factor"] == len(normal)
    assert billing_rates(scaled.jobs) == [r * (2.5 if (j.qos or "normal") == "normal" else 1.0)
                                          for r, j in zip(billing_rates(plain.jobs), plain.jobs)]
