"""Against the real testbed: the controller keeps fair-share halving at u* while other users'
jobs run and decay, for each method; the implied halving is measured from sprio's factor.

Measured quantity, per user with usage and a pending probe job, at every snapshot:
    H_user = (EffectvUsage x U_total) / -log2(F_sprio) x (S_ref / S_user)
EffectvUsage is computed by Slurm at the start of a decay pass from the usage the previous pass
left, so U_total is root's RawUsage just before the pass that produced it. For a user alone at the
first tier this is Yalim's u / -log2 F; for a user who shares an account, classic fair-share adds
a share of the account's usage to EffectvUsage, and this is still the usage that halves F. Users
with other shares than S_ref halve at u* x S_user / S_ref, which the last factor normalises.

FSCONTROL_CONTROL_HALFLIVES sets how long each method is held (default 1 half-life here; the
3-half-life runs are documented in docs/control.md). FSCONTROL_CONTROL_METHODS picks the methods
(default padding,damping: in CI the hybrid method is held for 2 half-lives by
tests/test_integration_forecast.py, which forecasts under it and measures it the same way).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest

from fscontrol.agent import config
from fscontrol.agent import pipeline
from fscontrol.store import history as store

pytestmark = pytest.mark.slurm

HALF_LIFE_S = 300
HOLD = float(os.environ.get("FSCONTROL_CONTROL_HALFLIVES", "1")) * HALF_LIFE_S
TICK_S = 15.0
# The controller needs a few decay passes after it starts: a pass to see usage, one for its
# first d to show in EffectvUsage, and padding it plans lands one pass after it is charged.
# Measured on the testbed (hybrid): the error is 43% at 2 min, 5% at 3 min, < 0.01% from 4 min.
SETTLE_S = 270.0
U_STAR_CH = 10.0  # core-hours: a few times the real usage, as a site would set it
# A burst that ends after one pass (its usage then decays) and a steady load sized so that its
# charge per pass makes up the burst's decay: real usage is about level from the start, as on a
# production cluster whose half-life is long against a pass, instead of ramping for 3 half-lives.
BURST = [("alice", "flat", 64, 60), ("carol", "chem", 48, 60)]
STEADY = [("bob", "flat", 8, 1800), ("alice", "physics", 4, 1800), ("dave", "flat", 2, 1800), ("carol", "flat", 2, 1800)]
PROBES = [("alice", "flat"), ("bob", "flat"), ("dave", "flat"), ("carol", "flat"), ("alice", "physics"), ("carol", "chem")]


def _measure(history: list, s_ref: float, u_star: float) -> list[float]:
    """Relative errors H_user/u* - 1 over a run (see the module doc)."""
    errors = []
    for k in range(1, len(history)):
        snap = history[k]
        ue_now = {r.key: r.effective_usage for r in snap.shares}
        # the pass that produced this EffectvUsage: the first snapshot showing it
        j = k
        while j > 0 and {r.key: r.effective_usage for r in history[j - 1].shares} == ue_now:
            j -= 1
        if j == 0:
            continue
        u_prev = next(r.raw_usage for r in history[j - 1].shares if r.depth == 0)
        for r in snap.shares:
            f = snap.prio_fairshare.get(r.key)
            if not r.is_user or f is None or not 0 < f < 1 or r.effective_usage <= 0 or r.raw_usage <= 0:
                continue
            h = r.effective_usage * u_prev / -math.log2(f) * (s_ref / r.norm_shares)
            errors.append(h / u_star - 1)
    return errors


def _run(slurm, tmp_path, method: str, hold_s: float, padding_mode: str = "steady"):
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")  # d back to slurm.conf's 1
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
    for user, account, cpus, secs in BURST + STEADY:
        slurm.submit(user, account, cpus, secs)
    for user, account in PROBES:
        slurm.probe(user, account)
    cfg = config.from_dict({"clusters": {"tbcluster": {
        "target_core_hours": U_STAR_CH, "method": method, "padding_mode": padding_mode, "hysteresis": 0.25,
    }}})
    db = store.open_db(tmp_path / f"{method}.db")
    t0 = time.time()
    results = []
    while time.time() - t0 < hold_s + SETTLE_S:
        t = time.time()
        results.append((t - t0, pipeline.control_tick(slurm.source(), db, cfg, apply=True)))
        time.sleep(max(0.0, TICK_S - (time.time() - t)))
    settled = [store.load_snapshot(db, r.snapshot_id) for t, r in results if t >= SETTLE_S]
    s_ref = results[-1][1].decision.s_ref
    errors = _measure(settled, s_ref, U_STAR_CH * 3600)
    failed = [a for _, r in results for a in r.actions if a.status != "ok"]
    slurm.cancel_all()
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
    slurm.scontrol("reconfigure")
    return results, errors, failed


METHODS = os.environ.get("FSCONTROL_CONTROL_METHODS", "padding,damping").split(",")


@pytest.mark.parametrize("method", METHODS)
def test_control_holds_halving_at_target(slurm, tmp_path, method):
    """`padding-pulse`: padding upkept by short dummy jobs (Yalim's way) instead of the steady
    job; its halving saws by up to padding_threshold (2%) of the padding between pulses."""
    method, _, mode = method.partition("-")
    results, errors, failed = _run(slurm, tmp_path, method, HOLD, padding_mode=mode or "steady")
    assert not failed, failed
    assert len(errors) >= 20, "too few measurements"
    worst = max(abs(e) for e in errors)
    last = results[-1][1].decision
    print(f"{method} {mode}: {len(errors)} measurements over {HOLD:.0f} s, worst |H/u* - 1| = {worst:.3%}, "
          f"mean {sum(errors) / len(errors):+.3%}, d = {last.d_target}, padding {last.w_now / 3600:.2f} core-hours")
    if method == "damping":
        d_ideal = min(r.decision.d_ideal for t, r in results if t >= SETTLE_S)
        bound = (0.5 + 0.25) / d_ideal + 0.01  # integer d with hysteresis, plus 1% for measurement
        assert worst <= bound, (worst, bound)
    elif mode == "pulse":
        # opt-in (FSCONTROL_CONTROL_METHODS=padding-pulse): on a 5-minute half-life every pass needs a
        # pulse and its charge can land a pass late, so this mode misses the 2% threshold here (measured
        # 12.2%, docs/control.md); the test holds it to that measured bound, not to the target
        assert worst <= 0.15, worst
    else:
        assert worst <= 0.01, worst


def test_persist_keeps_d_across_reconfigure_and_restart(slurm, tmp_path):
    """persist = true: slurm.conf gets the agent's d (backup kept), so neither `scontrol
    reconfigure` nor a slurmctld restart reverts it."""
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    for user, account, cpus, secs in STEADY:
        slurm.submit(user, account, cpus, secs)
    slurm.wait_for_pass()
    original = slurm.conf.read_text()
    cfg = config.from_dict({"clusters": {"tbcluster": {
        "target_core_hours": 1.0, "method": "damping", "persist": True, "slurm_conf": str(slurm.conf)}}})
    db = store.open_db(tmp_path / "persist.db")
    try:
        res = pipeline.control_tick(slurm.source(), db, cfg, apply=True)
        d_set = res.decision.d_target
        from fscontrol.act import slurmconf

        persisted = [a for a in res.actions if a.kind == "persist_damping"]
        assert d_set > 1 and [a.status for a in persisted] == ["ok"], res.actions
        backup = Path(slurmconf.backups(str(slurm.conf))[-1])
        assert backup.read_text() == original and Path(slurmconf.original_path(str(slurm.conf))).read_text() == original
        assert f"backup {backup}" in persisted[0].output
        assert f"FairShareDampeningFactor={d_set}\n" in slurm.conf.read_text()
        slurm.scontrol("reconfigure")
        assert slurm.damping() == d_set
        slurm.stop_controller()
        slurm.start_controller()
        assert slurm.damping() == d_set  # the restart read it from slurm.conf
        again = pipeline.control_tick(slurm.source(), db, cfg, apply=False)
        assert not any("reverted" in n for n in again.decision.notes)
        print(f"\npersist: d = {d_set} in slurm.conf (backup {backup.name}); kept across reconfigure and restart")
    finally:
        slurm.conf.write_text(original)
        for b in slurm.conf.parent.glob(slurm.conf.name + ".fscontrol-*"):
            b.unlink()
        slurm.cancel_all()
        slurm.scontrol("reconfigure")


def test_reverted_damping_is_detected_and_reapplied(slurm, tmp_path):
    """`scontrol reconfigure` puts slurm.conf's d back; the next tick sees it and sets d again.
    And a dry run changes nothing in Slurm."""
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    for user, account, cpus, secs in STEADY:
        slurm.submit(user, account, cpus, secs)
    slurm.wait_for_pass()  # some real usage
    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 1.0, "method": "damping"}}})
    db = store.open_db(tmp_path / "revert.db")

    def d_in_slurm() -> int:
        line = next(ln for ln in slurm.scontrol("show", "config").splitlines() if ln.startswith("FairShareDampeningFactor"))
        return int(line.split("=")[1])

    try:
        dry = pipeline.control_tick(slurm.source(), db, cfg, apply=False)
        assert dry.decision.d_target > 1 and [a.status for a in dry.actions] == ["planned"]
        assert d_in_slurm() == 1  # the dry run changed nothing
        first = pipeline.control_tick(slurm.source(), db, cfg, apply=True)
        d_set = first.decision.d_target
        assert first.verified_damping == d_set == d_in_slurm() > 1
        slurm.scontrol("reconfigure")  # an admin's reconfigure: back to slurm.conf's 1
        assert d_in_slurm() == 1
        again = pipeline.control_tick(slurm.source(), db, cfg, apply=True)
        assert any("reverted" in n for n in again.decision.notes)
        assert [a.kind for a in again.actions if a.status == "ok"] == ["set_damping"]
        assert d_in_slurm() == again.decision.d_target
        rows = db.execute("SELECT kind, status, reason FROM actions ORDER BY id").fetchall()
        assert [(k, s) for k, s, _ in rows] == [("set_damping", "planned"), ("set_damping", "ok"), ("set_damping", "ok")]
        # the loop's cheap watch (one RPC) puts d back right after the next reconfigure
        slurm.scontrol("reconfigure")
        t0 = time.time()
        done = pipeline.watch_damping(slurm.source(), db, cfg, apply=True)
        print(f"\nwatch: d {again.decision.d_target} back {time.time() - t0:.1f} s after a reconfigure: {done.reason}")
        assert done.status == "ok" and d_in_slurm() == again.decision.d_target
        assert pipeline.watch_damping(slurm.source(), db, cfg, apply=True) is None  # nothing more to do
    finally:
        slurm.cancel_all()
        slurm.scontrol("reconfigure")


def test_persist_and_control_off_through_a_symlinked_slurm_conf(slurm, tmp_path):
    """slurm_conf names a symlink to the testbed's slurm.conf (as /etc/slurm/slurm.conf is often a
    link into a shared tree): persist edits the link's target, slurmctld runs on it after a
    reconfigure, the link stays a link; `control off` puts the target back byte for byte, through
    the same writer. (ef8da55 replaced the link with a regular file: the shared copy kept the old d.)"""
    from fscontrol.act import slurmconf

    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    for user, account, cpus, secs in STEADY:
        slurm.submit(user, account, cpus, secs)
    slurm.wait_for_pass()
    original = slurm.conf.read_bytes()
    for b in slurm.conf.parent.glob(slurm.conf.name + ".fscontrol-*"):  # an earlier test's backups and original
        b.unlink()
    link = tmp_path / "etc" / "slurm.conf"
    link.parent.mkdir()
    link.symlink_to(slurm.conf)
    cfg = config.from_dict({"clusters": {"tbcluster": {
        "target_core_hours": 1.0, "method": "damping", "persist": True, "slurm_conf": str(link)}}})
    db = store.open_db(tmp_path / "h.db")
    try:
        res = pipeline.control_tick(slurm.source(), db, cfg, apply=True)
        d_set = res.decision.d_target
        assert d_set > 1 and [a.status for a in res.actions if a.kind == "persist_damping"] == ["ok"], res.actions
        assert link.is_symlink() and os.readlink(link) == str(slurm.conf)
        assert f"FairShareDampeningFactor={d_set}\n" in slurm.conf.read_text()
        assert not list(link.parent.glob("slurm.conf.*"))  # the backups sit beside the target
        assert Path(slurmconf.original_path(str(link))).read_bytes() == original
        slurm.scontrol("reconfigure")
        assert slurm.damping() == d_set  # slurmctld read the agent's d through the edited target
        off = pipeline.run_tick(slurm.source(), db, cfg, apply=True, stages=pipeline.Stages(off="control off"))
        kinds = {a.kind: a.status for a in off.control.actions}
        assert kinds.get("restore_conf_damping") == "ok", off.control.actions
        assert link.is_symlink() and slurm.conf.read_bytes() == original
        print(f"\nsymlinked slurm.conf: d = {d_set} persisted through the link, control off put the target back")
    finally:
        slurm.conf.write_bytes(original)
        for b in slurm.conf.parent.glob(slurm.conf.name + ".fscontrol-*"):
            b.unlink()
        slurm.scontrol("reconfigure")
        db.close()
