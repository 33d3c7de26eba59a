"""The published snapshot says what slurmctld uses and whether the agent acts (found on the 22.05
testbed by an outside tester): the d the tick left in slurmctld, not the one its snapshot read at
its start; and whether the agent applies control (not a dry run, not turned off)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from typer.testing import CliRunner

from fscontrol.agent import config
from fscontrol.agent import publishing
from fscontrol.cli.app import app
from fscontrol.export import publish as pub
from fscontrol.model.fairshare import fairshare_factor
from fscontrol.store import history as store
from fscontrol.store import ledger

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"


def _history(tmp_path):
    db_path = tmp_path / "h.db"
    r = CliRunner().invoke(app, ["collect", "--source", str(SAMPLE), "--db", str(db_path)])
    assert r.exit_code == 0, r.output
    return store.open_db(db_path)


def test_publish_carries_the_d_an_applying_tick_left_in_slurmctld(tmp_path):
    db = _history(tmp_path)
    snap = store.load_snapshot(db, cluster="tbcluster")
    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 2.0, "method": "damping"}}})
    d_old, d_new = snap.config.damping_factor, snap.config.damping_factor + 23226
    out = tmp_path / "tbcluster.json"
    _, data = publishing.publish_latest(db, cfg, "tbcluster", out=out)
    assert data["config"]["damping_factor"] == d_old  # nothing applied: the snapshot's d
    # an applying tick read d_new back from slurmctld after this snapshot was taken
    ledger.set_state(db, "tbcluster", "damping_in_force", {"d": d_new, "at": snap.taken_at}, snap.taken_at)
    _, data = publishing.publish_latest(db, cfg, "tbcluster", out=out)
    assert data["config"]["damping_factor"] == d_new == json.loads(out.read_text())["config"]["damping_factor"]
    # every F and every halving in the file are at slurmctld's d
    row = next(r for r in snap.shares if r.user == "alice" and r.effective_usage)
    got = next(a for a in data["associations"] if a["user"] == "alice" and a["account"] == row.account)
    # (EffectvUsage within its print's rounding: refined by sshare's FairShare, model/effusage.py)
    assert got["fairshare"] == pytest.approx(fairshare_factor(row.effective_usage, row.norm_shares, d_new), abs=1e-9)
    assert abs(got["fairshare"] - fairshare_factor(row.effective_usage, row.norm_shares, d_old)) > 0.5
    assert data["halving_usage"] == data["reference_share"] * d_new * data["total_usage"]
    # the tick's own read-back wins (the tick passes it); a record older than the snapshot does not count
    assert publishing.publish_latest(db, cfg, "tbcluster", out=out, damping=7)[1]["config"]["damping_factor"] == 7
    ledger.set_state(db, "tbcluster", "damping_in_force", {"d": d_new, "at": snap.taken_at - 1}, snap.taken_at)
    assert publishing.publish_latest(db, cfg, "tbcluster", out=out)[1]["config"]["damping_factor"] == d_old


def test_build_published_is_at_the_d_it_is_given():
    from tests.test_forecast_busy_offline import _shared_busy

    _, snap = _shared_busy()
    a = pub.build_published(snap)
    b = pub.build_published(snap, damping=snap.config.damping_factor * 10)
    assert b["config"]["damping_factor"] == 10 * a["config"]["damping_factor"]
    assert b["halving_usage"] == a["reference_share"] * 10 * snap.config.damping_factor * a["total_usage"]


def test_publish_says_whether_the_agent_applies_control(tmp_path):
    db = _history(tmp_path)
    out = tmp_path / "tbcluster.json"
    clusters = {"tbcluster": {"target_core_hours": 2.0, "method": "damping"}}
    dry = config.from_dict({"clusters": clusters})
    acting = config.from_dict({"agent": {"apply": True}, "clusters": clusters})
    assert publishing.publish_latest(db, dry, "tbcluster", out=out)[1]["control"] == {"applying": False, "off": False}
    assert publishing.publish_latest(db, acting, "tbcluster", out=out)[1]["control"] == {"applying": True, "off": False}
    ledger.set_state(db, "tbcluster", "acting_off", {"by": "control off", "at": 0.0}, 0.0)
    assert publishing.publish_latest(db, acting, "tbcluster", out=out)[1]["control"] == {"applying": False, "off": True}
    assert json.loads(out.read_text())["control"] == {"applying": False, "off": True}
