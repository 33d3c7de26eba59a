"""The billing maths (fscontrol.model.billing) against hand-worked cases from Slurm's formula
(assoc_mgr_tres_weighted; the worked examples of Slurm's tres.html)."""

from __future__ import annotations

import pytest

from fscontrol.errors import ConfigError
from fscontrol.model import billing as b


def test_weights_parse_with_memory_units():
    w = b.parse_weights("CPU=1.0,Mem=0.25G,GRES/gpu=8.0")
    assert w["cpu"] == 1.0 and w["gres/gpu"] == 8.0
    assert w["mem"] == pytest.approx(0.25 / 1024)  # per MB: memory is counted in MB
    assert b.parse_weights("") == {} and b.parse_weights(None) == {}


@pytest.mark.parametrize("bad", ["CPU", "CPU=x", "Mem=1Q", "CPU=-1", "=2"])
def test_bad_weights_are_refused(bad):
    with pytest.raises(ConfigError):
        b.parse_weights(bad)


def test_slurm_docs_worked_examples():
    # tres.html: CPU=1.0,Mem=0.25G,GRES/gpu=2.0,license/licA=1.5; 1 CPU and 8 GB
    w = b.parse_weights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0,license/licA=1.5")
    job = {"cpu": 1, "mem": 8192}
    assert b.billing(job, w) == pytest.approx(3.0)  # 1*1.0 + 8*0.25
    assert b.billing({**job, "license/lica": 1}, w) == pytest.approx(4.5)  # AllocTRES shows 4
    assert b.billing(job, w, "MAX_TRES") == pytest.approx(2.0)  # MAX(1, 2, 0) + 0
    assert b.billing(job, w, "MAX_TRES_GRES") == pytest.approx(2.0)  # 0*2.0 + MAX(1, 2) + 0
    # with a GPU: the docs' terms are (1*2.0) + MAX(1*1.0, 8*0.25) + (0*1.5), which is 4.0 (the page
    # prints "= 3.0", not the sum of its own terms; not checked on a 26.05 testbed here)
    assert b.billing({**job, "gres/gpu": 1}, w, "MAX_TRES_GRES") == pytest.approx(4.0)


def test_hand_worked_gpu_job():
    """8 CPUs, 2 GPUs, 16 GB under CPU=1.0,Mem=0.25G,GRES/gpu=8.0, worked by hand:
    sum: 8*1 + 16*0.25 + 2*8 = 8 + 4 + 16 = 28; MAX_TRES: max(8, 4, 16) = 16;
    MAX_TRES_GRES: 2*8 + max(8, 4) = 24; with a license at 1.5 beside it (global: always summed)."""
    w = b.parse_weights("CPU=1.0,Mem=0.25G,GRES/gpu=8.0,license/matlab=1.5")
    job = b.parse_tres("billing=28,cpu=8,gres/gpu=2,mem=16G,node=1")
    assert job["mem"] == 16384 and "billing" in job
    assert b.billing(job, w) == 28.0
    assert b.billing(job, w, "NO_FAIR_TREE,MAX_TRES") == 16.0
    assert b.billing(job, w, "MAX_TRES_GRES") == 24.0
    assert b.billing({**job, "license/matlab": 2}, w, "MAX_TRES") == 19.0  # 16 + 2*1.5
    # no weights: CPUs, whatever else the job holds
    assert b.billing(job, {}) == 8.0
    # one GPU and its 4 CPUs: the rate a `2gpus` plan runs at, per GPU
    assert b.billing_per_gpu(w, "", 4) == 12.0 and b.billing_per_gpu(w, "MAX_TRES", 4) == 8.0


def test_a_gpu_plan_is_refused_with_how_to_bill_it():
    """`--plan 2gpus:1h`: one line that says how to write GPUs in billing units (a plan is a rate
    in billing-seconds a second; the forecast does not know the partitions' weights)."""
    from fscontrol.forecast import classic as fc

    for plan in ("2gpus:1h", "1gpu:30m", "2GRES/gpu:1h"):
        with pytest.raises(fc.PlanError, match="GRES/gpu=8.0 bill '20cpus'") as e:
            fc.parse_plan(plan)
        assert "\n" not in str(e.value)
    assert fc.parse_plan("20cpus:1h")[0].rate == 20.0  # the billing of 4 CPUs + 2 GPUs at GPU=8: 20 a second


def test_a_usage_reset_period_is_a_forecast_warning():
    """PriorityUsageResetPeriod: the agent publishes it and the forecast says in one line that its
    decay-only numbers hold until the next reset (it does not model the reset)."""
    from fscontrol.forecast import service

    assert service.usage_reset_warning("NONE") is None and service.usage_reset_warning(None) is None
    w = service.usage_reset_warning("MONTHLY")
    assert w and "PriorityUsageResetPeriod=MONTHLY" in w and "\n" not in w


def test_max_tres_gres_before_25_05_is_max_tres():
    """Slurm before 25.05 reads PriorityFlags by substring: MAX_TRES_GRES there is MAX_TRES (read_config.c;
    the 24.11 testbed prints MAX_TRES and bills 16 for this job, 26.05 bills 22: test_integration_tres.py)."""
    w = b.parse_weights("CPU=1.0,Node=6.0,GRES/gpu=8.0")
    job = b.parse_tres("billing=22,cpu=4,gres/gpu=2,node=1")
    assert b.billing(job, w) == 26.0  # 4 + 6 + 16
    assert b.billing(job, w, "MAX_TRES") == 16.0  # max(4, 6, 16)
    assert b.billing(job, w, "NO_FAIR_TREE,MAX_TRES_GRES") == 22.0  # 16 + max(4, 6)
    assert b.billing(job, w, "NO_FAIR_TREE,MAX_TRES_GRES", release="26.05") == 22.0
    assert b.billing(job, w, "NO_FAIR_TREE,MAX_TRES_GRES", release="25.05.0") == 22.0
    for old in ("24.11", "22.05.8"):
        assert b.billing(job, w, "NO_FAIR_TREE,MAX_TRES_GRES", release=old) == 16.0
    assert [b.has_max_tres_gres(r) for r in ("22.05", "24.11", "25.05", "26.05")] == [False, False, True, True]
    with pytest.raises(ConfigError):
        b.has_max_tres_gres("latest")


def test_max_tres_gres_on_a_multi_node_job_is_over_the_jobs_totals():
    """slurmctld bills a job from its whole allocation's TRES counts (assoc_mgr.c
    assoc_mgr_tres_weighted on tres_alloc_cnt: CPU, Mem and Node are the job's totals, Node the node
    count), not node by node. A 2-node job, 8 CPUs and 4 GPUs (2 a node), under
    CPU=1.0,Node=6.0,GRES/gpu=8.0: MAX_TRES_GRES is max(8, 2 x 6) + 4 x 8 = 44, MAX_TRES max(8, 12, 32)
    = 32, the sum 8 + 12 + 32 = 52. Hand-worked from the source; slurmctld's own figure for this job
    on a two-node testbed: tests/test_integration_multinode.py (44 on 26.05, 32 on 22.05 and 24.11)."""
    w = b.parse_weights("CPU=1.0,Node=6.0,GRES/gpu=8.0")
    job = b.parse_tres("cpu=8,gres/gpu=4,node=2")
    assert b.billing(job, w, "NO_FAIR_TREE,MAX_TRES_GRES", release="26.05") == 44.0
    assert b.billing(job, w, "MAX_TRES") == 32.0
    assert b.billing(job, w) == 52.0
    # node by node would differ where the CPUs are uneven: 8 + 2 CPUs on 2 nodes bill max(10, 12) = 12
    # as slurmctld does, where max(8, 6) + max(2, 6) = 14 would be the per-node reading
    assert b.billing(b.parse_tres("cpu=10,node=2"), w, "NO_FAIR_TREE,MAX_TRES_GRES", release="26.05") == 12.0
