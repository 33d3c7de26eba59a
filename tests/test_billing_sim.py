"""The simulator charges billing, not CPUs, where the capture records it (issue #33, GPUs): a
history with AllocTRES gives each job its `billing=`, and the multifactor engine charges it.
Both fail on main before this change (ef8da55: the engine charged each job's size)."""

from __future__ import annotations

import random

import pytest

from fscontrol.model.decay import Charge, slurm_usage
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
    """Root's RawUsage at every pass equals decay.slurm_usage on the jobs' billing (GPU jobs bill
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
