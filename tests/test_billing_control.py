"""The control plans in billing units, not CPUs (issue #33, GPUs): a running GPU job is charged
its AllocTRES billing x its QOS UsageFactor, and the padding job's own billing sets its
UsageFactor. Hand-worked numbers; the first three tests fail on main before this change (ef8da55),
which charged a running job its CPUs and took the padding job's billing as 1 (the last checks
that plan_control's dummy_billing, which the agent now reads, sets the UsageFactor)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fscontrol.act import control
from fscontrol.agent import pipeline
from fscontrol.model.decay import decay_factor_per_second
from fscontrol.records import JobRecord, ShareRow
from fscontrol.snaprecords import QueueJob

P = 60.0
HL = 300.0
DUMMY = ("fsadmin", "fsdummy")


def _gpu_job() -> QueueJob:
    # 8 CPUs and 2 GPUs under CPU=1.0,GRES/gpu=8.0: billing 8 + 16 = 24 (sacct's AllocTRES), QOS x2
    return QueueJob("7", "alice", "physics", "normal", "gpux2", "RUNNING", 1, 8, 1, 0, "None", 0.0, 0.0, 3600)


def test_a_running_gpu_job_is_charged_its_billing_times_its_usage_factor():
    fp = decay_factor_per_second(HL) ** P
    u = control.predict_real_usage(1000.0, [_gpu_job()], P, HL, {"gpux2": 2.0}, billings={"7": 24.0})
    assert u == pytest.approx(1000.0 * fp + 24 * 2 * P * fp, rel=1e-12)  # 48 billing-seconds a second
    # no billing known (no TRESBillingWeights): its CPUs, as before
    assert control.predict_real_usage(1000.0, [_gpu_job()], P, HL, {"gpux2": 2.0}) == pytest.approx(1000 * fp + 16 * P * fp)
    assert control.job_rate(_gpu_job(), {"gpux2": 2.0}, {"7": 24.0}) == 48.0


def test_the_pass_plan_charges_billing_too():
    j = _gpu_job()
    u, _ = control.predict_read_at_next_pass(0.0, [j], now=30.0, last_pass=0.0, pass_at=60.0, next_pass_at=120.0,
                                             half_life_s=HL, usage_factors={}, billings={"7": 24.0})
    f = decay_factor_per_second(HL)
    assert u == pytest.approx(24 * 60 * f ** 60, rel=1e-12)  # ran the whole 60 s at billing 24 (no tail: limit 1 h)


def test_running_billings_reads_the_real_jobs_and_the_padding_job():
    def rec(jid, user, acct, state, cpus, bill):
        return JobRecord(jid, user, acct, "normal", "normal", state, cpus, bill, 1, 0.0, 0.0, None, 60.0)

    snap = SimpleNamespace(jobs=(rec("7", "alice", "physics", "RUNNING", 8, 24), rec("8", "bob", "chem", "COMPLETED", 4, 4),
                                 rec("9", "fsdummy", "fsadmin", "RUNNING", 1, 3)))
    bills, pad = pipeline.running_billings(snap, DUMMY)
    assert bills == {"7": 24.0} and pad == 3.0
    assert pipeline.running_billings(SimpleNamespace(jobs=()), DUMMY) == ({}, 1.0)


def test_padding_usage_factor_follows_the_padding_jobs_billing():
    """The padding job bills 3 a second (its partition weighs more than CPU=1.0): the UsageFactor
    that delivers the same padding is a third of the one for billing 1."""
    root = ShareRow("root", "", "", 0, None, False, 1.0, 10000, None, 1.0, 0.5)
    acct = ShareRow("a", "", "root", 1, 1, False, 0.5, 10000, 1.0, 1.0, 0.5)
    u = ShareRow("a", "x", "a", 2, 1, False, 1.0, 10000, 1.0, 1.0, 0.5)
    dacct = ShareRow("fsadmin", "", "root", 1, 1, False, 0.5, 0, 0.0, 0.0, 1.0)
    dummy = ShareRow("fsadmin", "fsdummy", "fsadmin", 2, 1, False, 1.0, 0, 0.0, 0.0, 1.0)
    kw = dict(method="padding", u_star=40000.0, d_now=1, half_life_s=HL, calc_period_s=P, dummy=DUMMY, s_ref=1.0)
    one = control.plan_control((root, acct, u, dacct, dummy), **kw)
    three = control.plan_control((root, acct, u, dacct, dummy), dummy_billing=3.0, **kw)
    assert one.usage_factor and one.usage_factor > 0
    assert three.usage_factor == pytest.approx(one.usage_factor / 3, rel=1e-12)
