"""Issue 30 on the real testbed: the halving Slurm used at a pass, as the agent records it, and the
hybrid's padding planned job by job for the pass it lands at.

Every figure is checked against sprio: H = EffectvUsage x U_pre / -log2 F_sprio x S_ref / S_user,
U_pre root's RawUsage read just before the pass (a pass's EffectvUsage is computed from the usage
as it stands when it starts), F from sprio after it.

1. The record: a 32-CPU job is cancelled between the control tick's read and the pass. Its tail
   since the last pass is charged at once (`limits`), so the pass reads several percent more than
   the agent did. The agent's record (`decisions.h_slurm`, which `history` and `status` report)
   must agree with sprio within 0.2 points; ef8da55 recorded S_ref x d x the control read, off by
   the whole tail.
2. The mechanism of the hybrid (issue 30 item 1): at d near 4, d's rounding alone misses by up to
   12%. A job starts mid-period every pass; the padding is planned for what each running job is
   charged at the coming pass (from its start, not a whole period), so the pass after reads the
   planned usage and the d it was planned for makes H exact: within 1% at every settled pass,
   where d's rounding on the same real usage (damping alone) misses by more. ef8da55 charged
   every running job a whole period in its plan (20 s x 8 CPUs too much each pass: its passes
   missed by d's rounding, -1.2%, on 24.11), and stepped d down only to the floor of its ideal
   when real usage outgrew the padding (+5.6%).
3. padding_mode = "trim" (the last test): d and the padding chosen together at the trim, the
   padding landing in that same pass's read; exact within 0.2% from the second pass.
"""

from __future__ import annotations

import math
import time

import pytest

from fscontrol.agent import config
from fscontrol.agent import pipeline
from fscontrol.slurm import parse
from fscontrol.slurm.source import last_decay_pass
from fscontrol.store import history as store

pytestmark = pytest.mark.slurm

PROBES = [("alice", "flat"), ("bob", "physics"), ("carol", "chem")]


def _clean(slurm) -> None:
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")


def _last_pass(slurm) -> float:
    t = last_decay_pass(str(slurm.dir / "spool" / "ctld"))
    assert t is not None, "slurmctld's priority_last_decay_ran is not readable"
    return t


def _until(t: float) -> None:
    while time.time() < t:
        time.sleep(min(0.2, max(0.0, t - time.time())))


def _root_before_pass(slurm, p_before: float, with_padding: bool = False):
    """Root's RawUsage, read while no pass has run since `p_before` (the usage a pass starts from),
    and with `with_padding` the dummy's (fsdummy@fsadmin) beside it."""
    rows = slurm.sshare()
    raw = next(r.raw_usage for r in rows.values() if r.depth == 0)
    assert _last_pass(slurm) == p_before, "a pass ran during the read: timing too tight on this machine"
    if with_padding:
        pad = rows.get(("fsadmin", "fsdummy"))
        return float(raw), float(pad.raw_usage if pad else 0)
    return float(raw)


def _big_job_and_a_control_read(slurm, db, cfg, lead_s: float):
    """carol's 32-CPU job, charged from the next pass p on; the control tick `lead_s` after p:
    (the job, p, the tick's result, its S_ref, its d, root's usage as it read it)."""
    big = slurm.submit("carol", "chem", 32, 900)
    slurm.wait_for_pass()
    p = _last_pass(slurm)
    _until(p + lead_s)
    res = pipeline.control_tick(slurm.source(), db, cfg, apply=True)
    return big, p, res, res.decision.s_ref, res.decision.d_target, res.decision.u_real + res.decision.w_now


def _pass_phase(slurm) -> float:
    """The fraction of a second at which slurmctld's decay passes run: the decay thread wakes every
    PriorityCalcPeriod after its start, to the microsecond (priority_multifactor.c, `abs.tv_sec +=
    calc_period`), and writes priority_last_decay_ran at the end of each pass (milliseconds on
    the testbed)."""
    import os

    t = os.stat(slurm.dir / "spool" / "ctld" / "priority_last_decay_ran").st_mtime_ns / 1e9
    assert int(t) - _last_pass(slurm) in (0, 1), "slurmctld's record of its last pass is not its time"
    return t - _last_pass(slurm) if int(t) == _last_pass(slurm) else 0.0


def _sacct_end(slurm, job: str) -> float:
    """sacct's End of a job, POSIX seconds (waited for: slurmdbd records it within seconds)."""
    import subprocess

    env = {**(slurm.env or {}), "SLURM_TIME_FORMAT": "%s"}
    for _ in range(30):
        out = subprocess.run(["sacct", "-nP", "-X", "-j", job, "-o", "End"], env=env, capture_output=True, text=True,
                             timeout=30, check=True).stdout.split()
        if out and out[0].isdigit():
            return float(out[0])
        time.sleep(1)
    raise AssertionError(f"sacct shows no End for job {job}")


def _halving_sprio(slurm, probes: dict, s_ref: float, u_pre: float) -> float:
    """H as Slurm's priorities used it at the pass just run (mean over the probed users with usage)."""
    rows = slurm.sshare()
    prio = {p.job_id: p.fairshare_norm for p in parse.parse_sprio(slurm.run(*parse.SPRIO_ARGS))}
    hs = []
    for job, key in probes.items():
        f, row = prio.get(job), rows.get(key[::-1])
        if f is None or row is None or not 0 < f < 1 or not row.effective_usage:
            continue
        hs.append(row.effective_usage * u_pre / -math.log2(f) * s_ref / row.norm_shares)
    assert hs, "no probed user with usage and a factor below 1"
    assert max(hs) - min(hs) <= 1e-3 * max(hs), hs  # one halving for every user, whatever the account
    return sum(hs) / len(hs)


def test_the_record_agrees_with_sprio_when_a_job_ends_between_the_read_and_the_pass(slurm, tmp_path):
    _clean(slurm)
    u_star = 3600.0
    cfg = config.from_dict({"agent": {"apply": True}, "clusters": {"tbcluster": {
        "target_core_hours": u_star / 3600, "method": "damping"}}})
    db = store.open_db(tmp_path / "h.db")
    try:
        probes = {slurm.probe(u, a): (u, a) for u, a in PROBES}
        slurm.submit("alice", "flat", 8, 900)
        slurm.submit("bob", "physics", 4, 900)
        slurm.wait_for_pass()
        big, p0, first, s_ref, d, read = _big_job_and_a_control_read(slurm, db, cfg, 52)
        slurm.run("scancel", big)  # its tail since p0 (about 53 s x 32 CPUs) is charged now, before the pass
        _until(p0 + 58)
        u_pre = _root_before_pass(slurm, p0)
        assert u_pre / read - 1 > 0.05, (u_pre, read)  # the pass reads what the agent's read missed
        slurm.wait_for_pass()
        assert _last_pass(slurm) - p0 < 70, "more than one pass"
        time.sleep(2)
        h = _halving_sprio(slurm, probes, s_ref, u_pre)
        assert slurm.damping() == d
        pipeline.control_tick(slurm.source(), db, cfg, apply=True)  # the tick after the pass records it
        h_slurm = db.execute("SELECT h_slurm FROM decisions WHERE id = ?", [first.decision_id]).fetchone()[0]
        old = s_ref * d * read  # what ef8da55 recorded: the control tick's read
        print(f"\nrecord {h_slurm / u_star - 1:+.3%}, sprio {h / u_star - 1:+.3%}, the control read alone {old / u_star - 1:+.3%}")
        assert abs(h_slurm - h) / u_star <= 0.002, (h_slurm, h)
        assert abs(old - h) / u_star > 0.01

        # 2. A job that ends in the pass's own second, just before the pass (an outside tester's
        # busy run, issue 30 item 2): sacct's End is that second, the same whole second as the
        # pass's time, so End cannot tell whether the pass read its tail. The pass runs at a fixed
        # fraction of a second (the decay thread's phase, set when slurmctld starts): read from the
        # mtime of slurmctld's record of its last pass, and slurmctld restarted until it leaves
        # half a second for the cancel and a read before the pass.
        phase = _pass_phase(slurm)
        for _ in range(12):
            if phase >= 0.5:
                break
            slurm.stop_controller()
            slurm.start_controller()
            slurm.wait_for_pass()  # a restart runs a pass at once
            phase = _pass_phase(slurm)
        assert phase >= 0.5, f"the decay pass's phase stayed below 0.5 s over 12 restarts ({phase:.3f})"
        big, p1, second, s_ref, d, read = _big_job_and_a_control_read(slurm, db, cfg, 50)
        _until(p1 + 60 + 0.05)  # the pass runs at p1 + 60 + phase: its own second, before it
        slurm.run("scancel", big)
        u_pre = _root_before_pass(slurm, p1)
        assert u_pre / read - 1 > 0.05, (u_pre, read)
        slurm.wait_for_pass()
        assert _last_pass(slurm) == p1 + 60, "more than one pass"
        time.sleep(2)
        h = _halving_sprio(slurm, probes, s_ref, u_pre)
        end = _sacct_end(slurm, big)
        assert end == p1 + 60, f"big ended at {end}, not in the pass's own second {p1 + 60} (timing)"
        pipeline.control_tick(slurm.source(), db, cfg, apply=True)
        h_slurm = db.execute("SELECT h_slurm FROM decisions WHERE id = ?", [second.decision_id]).fetchone()[0]
        print(f"pass's own second: record {h_slurm / u_star - 1:+.3%}, sprio {h / u_star - 1:+.3%}, "
              f"the control read alone {s_ref * d * read / u_star - 1:+.3%} (phase {phase:.3f} s)")
        assert abs(h_slurm - h) / u_star <= 0.002, (h_slurm, h)
    finally:
        slurm.cancel_all()
        slurm.scontrol("reconfigure")


def test_hybrid_padding_planned_for_the_running_jobs_makes_the_next_pass_exact(slurm, tmp_path):
    _clean(slurm)
    db = store.open_db(tmp_path / "h.db")
    rows = []
    try:
        probes = {slurm.probe(u, a): (u, a) for u, a in PROBES}
        slurm.submit("alice", "flat", 16, 1200)
        slurm.wait_for_pass()
        slurm.wait_for_pass()
        # u* for d between about 4 and 8 on this load by the settled passes (S_ref 0.05, the median
        # share; 6,000-12,000 CPU-s): d's rounding alone misses by up to 6-12%
        u_star = 2700.0
        cfg = config.from_dict({"agent": {"apply": True}, "clusters": {"tbcluster": {
            "target_core_hours": u_star / 3600, "method": "hybrid", "padding_mode": "steady"}}})
        for k in range(6):
            p0 = _last_pass(slurm)
            _until(p0 + 20)
            slurm.submit("bob", "physics", 8, 1200)  # starts mid-period: charged 40 s at the coming pass
            _until(p0 + 56.5)
            res = pipeline.control_tick(slurm.source(), db, cfg, apply=True)
            assert res.decision.s_ref and res.decision.method == "hybrid"
            _until(p0 + 58.8)
            u_pre, pad = _root_before_pass(slurm, p0, with_padding=True)
            slurm.wait_for_pass()
            assert _last_pass(slurm) - p0 < 70, "more than one pass"
            time.sleep(2)
            s_ref = res.decision.s_ref
            h = _halving_sprio(slurm, probes, s_ref, u_pre)
            x = u_star / (s_ref * (u_pre - pad))  # the ideal d on the real usage this pass read: d alone
            rows.append({"pass": k, "error": h / u_star - 1, "d": res.decision.d_target, "d_ideal_real": x,
                         "rounding_alone": round(x) / x - 1, "padding": pad})
            print(f"\npass {k}: H/u* - 1 = {rows[-1]['error']:+.3%}, d {rows[-1]['d']}, padding {pad:.0f}; "
                  f"d alone on the real usage: ideal {x:.3f}, {rows[-1]['rounding_alone']:+.3%}")
        settled = rows[2:]  # the padding job charged a whole period, its plan landed
        assert all(abs(r["error"]) <= 0.01 for r in settled), settled
        # d's rounding alone, on the same real usage, misses by more at most passes (d 4-10: up to 12%)
        assert sum(abs(r["error"]) < abs(r["rounding_alone"]) for r in settled) >= len(settled) - 1, settled
        assert max(abs(r["rounding_alone"]) for r in settled) > 0.01, settled
    finally:
        slurm.cancel_all()
        slurm.scontrol("reconfigure")
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")


def test_hybrid_trim_padding_lands_in_the_same_pass_and_makes_it_exact(slurm, tmp_path):
    """padding_mode = "trim" (issue 30 item 1, agent/trimpad.py): d and the padding chosen
    together on the trim's read just before the pass; the padding job's cancel charges its
    stretch since the last pass at once, at the UsageFactor the trim set, into that same pass's
    read. A job still starts mid-period every pass (the usage the steady plan must foresee)."""
    from fscontrol.agent import trimpad

    _clean(slurm)
    db = store.open_db(tmp_path / "h.db")
    rows = []
    try:
        probes = {slurm.probe(u, a): (u, a) for u, a in PROBES}
        slurm.submit("alice", "flat", 16, 1200)
        slurm.wait_for_pass()
        u_star = 2700.0  # d about 4-8 here, as above: d's rounding alone misses by up to 6-12%
        cfg = config.from_dict({"agent": {"apply": True}, "clusters": {"tbcluster": {
            "target_core_hours": u_star / 3600, "method": "hybrid", "padding_mode": "trim"}}})
        for k in range(3):
            p0 = _last_pass(slurm)
            _until(p0 + 20)
            slurm.submit("bob", "physics", 8, 1200)
            _until(p0 + 56.5)
            res = pipeline.control_tick(slurm.source(), db, cfg, apply=True)  # the first submits the padding job
            assert res.decision.s_ref and res.decision.method == "hybrid"
            _until(p0 + 58.6)
            pipeline.trim_damping(slurm.source(), db, cfg, apply=True)
            _until(p0 + 59.4)
            u_pre, pad = _root_before_pass(slurm, p0, with_padding=True)
            slurm.wait_for_pass()
            assert _last_pass(slurm) - p0 < 70, "more than one pass"
            trimpad.start_pad(slurm.source(), db, cfg, apply=True)  # the next padding job, after the pass
            time.sleep(2)
            s_ref = res.decision.s_ref
            h = _halving_sprio(slurm, probes, s_ref, u_pre)
            x = u_star / (s_ref * (u_pre - pad))  # the ideal d on the real usage this pass read: d alone
            rows.append({"pass": k, "error": h / u_star - 1, "d": slurm.damping(), "d_ideal_real": x,
                         "rounding_alone": round(x) / x - 1, "padding": pad, "decision": res.decision_id, "h": h})
            print(f"\ntrim pass {k}: H/u* - 1 = {rows[-1]['error']:+.4%}, d {rows[-1]['d']}, padding {pad:.0f}; "
                  f"d alone on the real usage: ideal {x:.3f}, {rows[-1]['rounding_alone']:+.3%}")
        settled = rows[1:]  # the first pass's padding job started 3 s before it: too short to pad
        # exact up to sshare's whole RawUsage and a whole second of the padding job's stretch
        assert all(abs(r["error"]) <= 0.002 for r in settled), settled
        # in d's steps (1/d): d's rounding alone leaves |error| x d_ideal uniform on [0, 0.5] (last run, 22.05:
        # -0.0001% and -0.015% at d 30 and 17, where d alone on the same real usage gives -0.50% and -2.28%)
        assert all(abs(r["error"]) * r["d_ideal_real"] <= 0.05 for r in settled), settled
        kinds = [r[0] for r in db.execute("SELECT kind FROM actions WHERE stage = 'trim' ORDER BY id")]
        assert "cancel_dummy" in kinds and "set_usage_factor" in kinds
        # the record (issue 30 item 2): the halving Slurm used at each pass, from the top-level accounts
        # the trim read a second before it (the padding's cancel lands between that read and the pass)
        pipeline.control_tick(slurm.source(), db, cfg, apply=True)  # the tick after the last pass records it
        for r in rows:
            h_slurm = db.execute("SELECT h_slurm FROM decisions WHERE id = ?", [r["decision"]]).fetchone()[0]
            print(f"trim pass {r['pass']}: record {h_slurm / u_star - 1:+.4%}, sprio {r['h'] / u_star - 1:+.4%}")
            assert abs(h_slurm - r["h"]) / u_star <= 0.002, (r, h_slurm)
    finally:
        slurm.cancel_all()
        slurm.scontrol("reconfigure")
        slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
