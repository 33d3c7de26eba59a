"""Issue #30, "safe by default": slurm.conf's original is recorded only for an edit the agent made,
and `control off` puts back only a line the agent wrote. On real files and a real history, with
the recorded testbed snapshot; the testbed run of the same story is in
tests/test_integration_off.py (test_control_off_leaves_an_admins_line_alone).

The story an outside admin met (on ef8da55): slurm.conf used Include, so persist's edit was refused
(rightly), but the refused edit recorded {"value": null} as the original; the admin later put back
a plain slurm.conf with FairShareDampeningFactor=1; `control off --apply` trusted the null and
removed the admin's line."""

from __future__ import annotations

from pathlib import Path

from fscontrol.act import actions as act
from fscontrol.act import executor, slurmconf
from fscontrol.agent import config, pipeline
from fscontrol.slurm.source import RecordedSlurm
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"


def _setup(tmp_path, conf_text: str):
    conf = tmp_path / "slurm.conf"
    conf.write_text(conf_text)
    db = store.open_db(tmp_path / "h.db")
    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10_000, "method": "damping",
                                                       "persist": True, "slurm_conf": str(conf)}}})
    res = pipeline.control_tick(RecordedSlurm(SAMPLE), db, cfg, apply=False)  # a real decision row
    return conf, db, cfg.clusters["tbcluster"], res


def _persist(db, cc, res, now, run=lambda argv: ""):
    return executor._persist(db, run, cc, res.decision, res.decision_id, None, cc.slurm_conf, now, act)


def _off_plan(db, cc):
    snap = pipeline.read_snapshot(RecordedSlurm(SAMPLE))
    return pipeline._decide_off(db, snap, cc)[1]


def test_a_refused_persist_records_no_original_and_off_leaves_the_admins_line(tmp_path):
    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\nInclude more.conf\n")
    (tmp_path / "more.conf").write_text("FairShareDampeningFactor=5\n")
    (p,) = _persist(db, cc, res, 1000.0)
    # refused, not failed (the runtime d works without the file), naming the d a restart reads:
    # ef8da55 said "a restart would start on slurm.conf's d = 1"
    assert p.status == "refused" and "uses Include" in p.output, p
    assert f"{tmp_path / 'more.conf'}'s d = 5" in p.output and f"FairShareDampeningFactor={res.decision.d_target}" in p.output
    assert "slurm_conf_damping" not in store_ledger.originals(db, "tbcluster")  # ef8da55: {"value": None}
    assert store_ledger.get_state(db, "tbcluster", "persist_written") is None
    conf.write_text("ClusterName=x\nFairShareDampeningFactor=1\n")  # the admin's plain slurm.conf
    assert [a.kind for a in _off_plan(db, cc) if "conf" in a.kind] == []  # ef8da55: restore_conf_damping (removes it)


def test_off_restores_exactly_the_line_before_the_agents_edit(tmp_path):
    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\nFairShareDampeningFactor=7\n")
    (p,) = _persist(db, cc, res, 1000.0)
    assert p.status == "ok", p.output
    d = res.decision.d_target
    assert f"FairShareDampeningFactor={d}\n" in conf.read_text()
    assert store_ledger.originals(db, "tbcluster")["slurm_conf_damping"]["value"] == "7"
    (r,) = [a for a in _off_plan(db, cc) if a.kind == "restore_conf_damping"]
    assert r.status == "planned" and r.argv[2] == "FairShareDampeningFactor=7" and r.argv[3] == slurmconf.ONLY_IF + str(d)
    done = executor.apply(db, lambda argv, timeout=None: None, [r], store_ledger.write_actions(db, "tbcluster", None, "off", [r], 0, None),
                          float("inf"), dependent=False)
    assert done[0].status == "ok" and conf.read_text() == "ClusterName=x\nFairShareDampeningFactor=7\n"


def test_off_refuses_a_line_changed_since_the_agents_edit_and_undoes_the_rest(tmp_path):
    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\n")
    assert _persist(db, cc, res, 1000.0)[0].status == "ok"
    store_ledger.record_original(db, "tbcluster", "damping", 3, 1000.0)  # the runtime d the agent changed
    conf.write_text("ClusterName=x\nFairShareDampeningFactor=1\n")  # the admin's own line since
    plan = _off_plan(db, cc)
    (r,) = [a for a in plan if a.kind == "restore_conf_damping"]
    assert r.status == "refused" and "not the" in r.output and "leaves it as it is" in r.output
    assert slurmconf.original_path(str(conf)) in r.output  # what to do: the pre-agent file is there
    assert any(a.kind == "set_damping" for a in plan)  # the runtime d still goes back
    ids = executor.write_plan(db, "tbcluster", None, "off", plan, apply_it=True, at=0, tick_id=None)
    ran = []
    done = executor.apply(db, lambda argv, timeout=None: ran.append(argv) or type("O", (), {"stdout": ""})(), plan, ids,
                          float("inf"), dependent=False)
    assert [a.status for a in done if a.kind == "restore_conf_damping"] == ["refused"]
    assert ran == [("scontrol", "fsdampeningfactor", "3")]
    assert conf.read_text() == "ClusterName=x\nFairShareDampeningFactor=1\n"  # not touched


def test_a_restore_is_refused_when_the_file_changes_between_plan_and_apply(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nFairShareDampeningFactor=461\n")
    out = slurmconf.edit_damping(str(conf), None, lambda argv: "", "t1", reconfigure=False, expect="461")
    assert "removed" in out and "FairShareDampening" not in conf.read_text()
    conf.write_text("ClusterName=x\nFairShareDampeningFactor=1\n")
    try:
        slurmconf.edit_damping(str(conf), None, lambda argv: "", "t2", reconfigure=False, expect="461")
        raise AssertionError("not refused")
    except slurmconf.UnsafeActionError as e:
        assert "FairShareDampeningFactor=1, not the 461 the agent wrote" in str(e)
    assert conf.read_text() == "ClusterName=x\nFairShareDampeningFactor=1\n"


def test_the_original_is_the_line_before_the_agents_latest_run_of_edits(tmp_path):
    """The admin took the line back (d = 5) after the agent's edit; the agent's next edit records 5,
    not the first original: off puts back what was there before its own edit."""
    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\n")
    assert _persist(db, cc, res, 1000.0)[0].status == "ok"
    assert store_ledger.originals(db, "tbcluster")["slurm_conf_damping"]["value"] is None
    conf.write_text("ClusterName=x\nFairShareDampeningFactor=5\n")
    assert _persist(db, cc, res, 1000.0 + 2 * cc.persist_interval_s)[0].status == "ok"
    assert store_ledger.originals(db, "tbcluster")["slurm_conf_damping"]["value"] == "5"


def test_d_is_read_where_slurmctld_reads_it(tmp_path):
    """slurm.conf(5): an Include is read where it stands, a relative name in slurm.conf's folder,
    %c the cluster's name; the last line read wins. What cannot be followed is said, not guessed."""
    (tmp_path / "etc").mkdir()
    conf = tmp_path / "etc" / "slurm.conf"
    (tmp_path / "etc" / "a.conf").write_text("FairShareDampeningFactor=5\n")
    (tmp_path / "etc" / "tb.conf").write_text("# nothing\nInclude a.conf\n")
    conf.write_text("FairShareDampeningFactor=2\nInclude\t%c.conf\n")
    assert slurmconf.read_damping(str(conf), "tb") == ("5", str(tmp_path / "etc" / "a.conf"))
    conf.write_text("Include %c.conf\nFairShareDampeningFactor=3 # after it\n")
    assert slurmconf.read_damping(str(conf), "tb") == ("3", str(conf))
    conf.write_text("ClusterName=tb\n")
    assert slurmconf.read_damping(str(conf)) == (None, None)  # Slurm's default, 1
    for bad, said in (("Include missing.conf", "cannot read"), ("Include *.conf", "wildcard"),
                      ("Include %c.conf", "modifier")):
        conf.write_text(bad + "\n")
        try:
            slurmconf.read_damping(str(conf))
            raise AssertionError(bad)
        except slurmconf.UnsafeActionError as e:
            assert said in str(e) and "d is unknown" in str(e)


def test_persist_with_no_usable_slurm_conf_is_a_warning_every_tick(tmp_path):
    """ef8da55: no file, or one that cannot be read, was a failed action (or nothing); now a
    refused one at every control tick, with what to do, and the tick is not failed."""
    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\n")
    conf.unlink()
    for now in (1000.0, 1060.0):
        (p,) = _persist(db, cc, res, now)
        assert p.status == "refused" and "cannot be read" in p.output and "persist = false" in p.output
    (p,) = executor._persist(db, lambda argv: "", cc, res.decision, res.decision_id, None, None, 1100.0, act)
    assert p.status == "refused" and "no slurm.conf to write" in p.output
    assert "slurm_conf_damping" not in store_ledger.originals(db, "tbcluster")
