"""Issue 30's admin findings (an outside tester's busy run): `decisions` lists each control
decision with the halving Slurm used at the pass after it, dated by that pass; `status` dates "error
Slurm used at the last pass" by the pass, not by the decision; after `control off --apply`, status
says control is off and shows the d slurmctld was read back at, not "control applied" with the
snapshot's d. Over the recorded series (samples/testbed-series: ten snapshots of a real 22.05,
each interval holding a decay pass), ticked as the agent ticks; each figure checked against the
history's own rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.report.table import _iso
from fscontrol.store import history as store
from fscontrol.store import ledger

ROOT = Path(__file__).resolve().parent.parent
SERIES = ROOT / "samples" / "testbed-series"


@pytest.fixture(scope="module")
def ticked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dec")
    cfg = tmp / "c.toml"
    cfg.write_text('[clusters.tbcluster]\ntarget_core_hours = 1\nmethod = "damping"\n')
    db = tmp / "h.db"
    for snap_dir in sorted(p for p in SERIES.iterdir() if p.is_dir()):
        r = CliRunner().invoke(app, ["tick", "--config", str(cfg), "--source", str(snap_dir), "--db", str(db)])
        assert r.exit_code == 0, r.output
    return cfg, db


def _copy(ticked, tmp_path) -> Path:
    import shutil

    db = tmp_path / "h.db"
    shutil.copy(ticked[1], db)
    return db


def test_decisions_lists_every_decision_with_what_slurm_used(ticked):
    cfg, db = ticked
    r = CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "--since", "1700000000", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    h = store.open_db(db, readonly=True)
    rows = h.execute("SELECT d.decided_at, d.h_now, d.h_slurm, d.u_star, d.d_now, d.pass_seen_at FROM decisions d "
                     "ORDER BY d.id").fetchall()
    taken = [t for (t,) in h.execute("SELECT taken_at FROM snapshots ORDER BY id")]
    assert len(data["decisions"]) == len(rows) == 10
    for got, (at, h_now, h_slurm, u, d_now, seen) in zip(data["decisions"], rows):
        assert got["time"] == _iso(at) and got["damping_before"] == got["damping_after"] == d_now  # a dry run
        assert got["error_read"] == pytest.approx(h_now / u - 1)
        assert got["error_expected"] == pytest.approx(h_now / u - 1)  # the d in force meets the next pass
        if h_slurm is None:
            assert got["error_slurm"] is None and got["pass_seen_at"] is None
        else:
            assert got["error_slurm"] == pytest.approx(h_slurm / u - 1)
            # the pass was seen by the snapshot after the decision's own
            assert seen in taken and got["pass_seen_at"] == _iso(seen) and seen > at
        assert [a["status"] for a in got["actions"]] == ["planned"] * len(got["actions"])  # a dry run plans
    planned = h.execute("SELECT count(*) FROM actions WHERE decision_id IS NOT NULL").fetchone()[0]
    assert planned >= 1 and sum(len(x["actions"]) for x in data["decisions"]) == planned
    known = [abs(hs / u - 1) for _, _, hs, u, _, _ in rows if hs is not None]
    assert data["passes"] == len(known) >= 1 and data["worst_error_slurm"] == pytest.approx(max(known))
    assert data["within_1pct"] == sum(e <= 0.01 for e in known)
    # -P: the field names, then one row per decision, | between fields; -n: the rows alone
    p = CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-S", "1700000000", "-P"]).output.splitlines()
    assert p[0].split("|")[:3] == ["Time", "Method", "Applied"] and len(p) == 11
    assert [ln.split("|")[0] for ln in p[1:]] == [x["time"] for x in data["decisions"]]
    n = CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-S", "1700000000", "-P", "-n",
                                 "-o", "time,errorslurm"]).output.splitlines()
    assert len(n) == 10 and n[0] == f"{data['decisions'][0]['time']}|" + (
        "" if data["decisions"][0]["error_slurm"] is None else format(100 * data["decisions"][0]["error_slurm"], "+.2f"))
    text = CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-S", "1700000000"]).output
    assert f"passes with Slurm's halving known: {len(known)}" in text and "Slurm err %" in text
    bad = CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-o", "time,nosuch"])
    assert bad.exit_code == 2 and "unknown field 'nosuch'" in bad.output


def test_status_dates_what_slurm_used_by_the_pass(ticked, tmp_path):
    """The pass's own time where slurmctld's record of it was read (the settling snapshot's
    usage_at), else when the agent saw it; never the decision's time."""
    cfg, _ = ticked
    db = _copy(ticked, tmp_path)
    h = store.open_db(db)
    seen = [s for (s,) in h.execute("SELECT pass_seen_at FROM decisions WHERE h_slurm IS NOT NULL ORDER BY id")]
    line = lambda: next(ln for ln in CliRunner().invoke(app, ["status", "--db", str(db), "--config", str(cfg)]).output.splitlines()
                        if ln.startswith("control ("))  # noqa: E731
    assert f"(pass seen at {_iso(seen[-1])})" in line()
    with store.transaction(h):  # slurmctld's record of the pass, as a root tick on the controller reads it
        h.execute("UPDATE snapshots SET usage_at = ? WHERE taken_at = ?", [seen[-1] - 17.0, seen[-1]])
    assert f"(pass at {_iso(seen[-1] - 17.0)})" in line()
    dec = json.loads(CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-S", "1700000000",
                                              "--json"]).output)
    assert [x["pass_at"] for x in dec["decisions"] if x["pass_at"]] == [_iso(seen[-1] - 17.0)]


def test_status_after_control_off_says_off_and_shows_the_d_read_back(ticked, tmp_path):
    """What `control off --apply` records (agent_state acting_off, and the d it read back from
    slurmctld after putting it back): status no longer says the agent holds the halving, names
    when control went off, and shows that d, with the snapshot's beside it. On the real testbed:
    tests/test_integration_off.py."""
    cfg, _ = ticked
    db = _copy(ticked, tmp_path)
    h = store.open_db(db)
    before = CliRunner().invoke(app, ["status", "--db", str(db), "--config", str(cfg), "--json"])
    d_snap = json.loads(before.output)["damping_factor"]
    last = h.execute("SELECT max(taken_at) FROM snapshots").fetchone()[0]
    d_back = d_snap + 6
    with store.transaction(h):
        ledger.set_state(h, "tbcluster", "acting_off", {"by": "control off", "at": last}, last)
        ledger.set_state(h, "tbcluster", "damping_in_force", {"d": d_back, "at": last}, last)
    r = CliRunner().invoke(app, ["status", "--db", str(db), "--config", str(cfg)])
    assert r.exit_code == 0, r.output
    assert f"damping factor d={d_back} (read back from slurmctld after the agent's last action; the snapshot read {d_snap})" in r.output
    assert f"control off since {_iso(last)} (control off): the agent acts on nothing until `fscontrol control on`; d is {d_back}" in r.output
    assert "control applied" not in r.output and "expected at the next pass" not in r.output
    data = json.loads(CliRunner().invoke(app, ["status", "--db", str(db), "--config", str(cfg), "--json"]).output)
    assert data["damping_factor"] == d_back and data["damping_factor_snapshot"] == d_snap
    assert data["control_off"] == {"at": _iso(last), "by": "control off"} and data["total_held"] is False
    # a d read back before the snapshot is not the d in force: the snapshot's stands
    with store.transaction(h):
        ledger.set_state(h, "tbcluster", "damping_in_force", {"d": d_back, "at": last - 1.0}, last)
    data = json.loads(CliRunner().invoke(app, ["status", "--db", str(db), "--config", str(cfg), "--json"]).output)
    assert data["damping_factor"] == d_snap and "damping_factor_snapshot" not in data


def test_the_record_uses_the_d_slurm_held_at_the_pass_not_a_later_restore(tmp_path):
    """An outside tester: `control off --apply` 56 s after a pass put d back to 1 before the
    loop's next tick settled the pass, and the record used d=1 where Slurm had used 11
    (-90.91%). The d at the pass is the agent's last change before it when the agent changed d
    again between the pass and the settling read."""
    from types import SimpleNamespace

    from fscontrol.act import actions
    from fscontrol.agent.pipeline import _damping_at_pass

    h = store.open_db(tmp_path / "h.db")
    t0 = 1_800_000_000.0
    with store.transaction(h):
        ids = ledger.write_actions(h, "c", None, "control", [actions.set_damping(11, "the decision's d")], t0)
        ledger.update_action(h, ids[0], "ok", "", None, t0 + 1.0)
    previous = {"decided_at": t0, "d_now": 14}
    snap = SimpleNamespace(cluster="c", taken_at=t0 + 64.0, config=SimpleNamespace(damping_factor=1))
    # nothing changed d after the pass (at t0 + 3): the d the settling snapshot read stands
    assert _damping_at_pass(h, previous, snap, t0 + 3.0) == 1
    with store.transaction(h):
        ids = ledger.write_actions(h, "c", None, "off", [actions.set_damping(1, "control off: put back")], t0 + 56.0)
        ledger.update_action(h, ids[0], "ok", "", None, t0 + 56.2)
    assert _damping_at_pass(h, previous, snap, t0 + 3.0) == 11  # the restore came after the pass
    assert _damping_at_pass(h, previous, snap, t0 + 0.5) == 14  # every change after it: the d it read
    assert _damping_at_pass(h, previous, snap, None) == 1  # pass time unknown: the read


def test_decisions_taken_while_control_is_off_are_advice_not_applied(ticked, tmp_path):
    """An outside tester: a running loop kept recording decisions after `control off --apply`,
    shown as applied with the d they would have set; status counted their passes at d=1. They
    are advice (apply and advise_only), leave d as read, and status's line stops at the off."""
    cfg, _ = ticked
    db = _copy(ticked, tmp_path)
    h = store.open_db(db)
    rows = h.execute("SELECT id, decided_at FROM decisions ORDER BY id").fetchall()
    off_at = rows[6][1] + 1.0
    with store.transaction(h):  # decisions 1-7 applied; the off; 8-10 a loop's ticks after it (advice only)
        h.execute("UPDATE decisions SET apply = 1, d_target = d_now + 5")
        h.execute("UPDATE decisions SET advise_only = 1 WHERE decided_at > ?", [off_at])
        ledger.set_state(h, "tbcluster", "acting_off", {"by": "control off", "at": off_at}, off_at)
    dec = json.loads(CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-S", "1700000000",
                                              "--json"]).output)["decisions"]
    assert [x["applied"] for x in dec] == [True] * 7 + [False] * 3
    assert all(x["damping_after"] == x["damping_before"] for x in dec[7:])
    assert all(x["damping_after"] == x["damping_before"] + 5 for x in dec[:7])
    st = json.loads(CliRunner().invoke(app, ["status", "--db", str(db), "--config", str(cfg), "--json"]).output)
    assert len(st["control"]) == 7 and st["control"][-1]["time"] == _iso(rows[6][1])
    text = CliRunner().invoke(app, ["status", "--db", str(db), "--config", str(cfg)]).output
    assert "last 7 decisions before it was turned off" in text


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "1e20", "infd"])
def test_since_out_of_range_is_one_line_not_a_traceback(ticked, bad):
    cfg, db = ticked
    for cmd in ("decisions", "history"):
        r = CliRunner().invoke(app, [cmd, "--db", str(db), "--config", str(cfg), "-S", bad])
        assert r.exit_code == 2 and r.output.startswith("fscontrol: error: --since") and "Traceback" not in r.output, r.output


def test_since_longer_than_the_epoch_is_everything(ticked):
    cfg, db = ticked
    r = CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-S", "99999999999999d", "--json"])
    assert r.exit_code == 0 and len(json.loads(r.output)["decisions"]) == 10


def test_cluster_choice_as_status_makes_it(ticked):
    """An outside tester: `decisions -M nosuch` printed "0 decisions" with exit 0 where status
    says the cluster is not there (6); several clusters without -M is a usage error (2)."""
    cfg, db = ticked
    for cmd in ("decisions", "history"):
        r = CliRunner().invoke(app, [cmd, "--db", str(db), "--config", str(cfg), "-M", "nosuch"])
        assert r.exit_code == 6 and "cluster 'nosuch' is not in this history (it holds: tbcluster)" in r.output, r.output


def test_the_metrics_carry_what_slurm_used_at_the_last_pass(ticked):
    """An outside tester: the metrics' halving error was the snapshot's pre-action figure and what
    Slurm used was not exported. `fscontrol_halving_error_slurm_ratio` is the last recorded pass's."""
    cfg, db = ticked
    h = store.open_db(db, readonly=True)
    hs, u = h.execute("SELECT h_slurm, u_star FROM decisions WHERE h_slurm IS NOT NULL ORDER BY id DESC LIMIT 1").fetchone()
    r = CliRunner().invoke(app, ["metrics", "--db", str(db), "--config", str(cfg)])
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("fscontrol_halving_error_slurm_ratio{"))
    assert float(line.rsplit(" ", 1)[1]) == pytest.approx(hs / u - 1, rel=1e-9)


def test_since_takes_a_date_as_sacct_does(ticked):
    from datetime import datetime

    cfg, db = ticked
    h = store.open_db(db, readonly=True)
    times = [t for (t,) in h.execute("SELECT decided_at FROM decisions ORDER BY id")]
    cut = datetime.fromtimestamp(times[4] - 1)  # local time, as sacct reads a date without a zone
    r = CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-S", cut.isoformat(timespec="seconds"),
                                 "--json"])
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.output)["decisions"]) == 6
    bad = CliRunner().invoke(app, ["decisions", "--db", str(db), "--config", str(cfg), "-S", "2026-13-45"])
    assert bad.exit_code == 2 and "not a date" in bad.output
