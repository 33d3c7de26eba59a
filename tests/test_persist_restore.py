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


def test_a_bounded_cold_start_names_one_ideal_the_bound_and_the_d(tmp_path):
    """ef8da55: "ideal d = 890.389 (above max_damping: d bounded)" with max_damping 1000, under a
    note saying the ideal was 2,491. The reason now names the note's ideal, the bound and the d."""
    import re

    db = store.open_db(tmp_path / "h.db")
    for method in ("damping", "hybrid"):
        cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10_000, "method": method}}})
        res = pipeline.control_tick(RecordedSlurm(SAMPLE), db, cfg, apply=False)
        dec = res.decision
        (note,) = [n for n in dec.notes if n.startswith("d would be")]
        (why,) = [a.reason for a in res.actions if a.kind == "set_damping"]
        ideal = re.search(r"d would be (\d[\d,]*\d)", note).group(1)
        assert f"ideal d = {ideal} for u*" in why and "above max_damping 1000: d = 1000" in why, (note, why)
        assert len(re.findall(r"ideal d = ", why)) == 1
        # the ideal is what u* asks of the usage the coming pass reads
        assert float(ideal.replace(",", "")) == round(dec.u_star / (dec.s_ref * (dec.u_real + dec.w_now)))


def test_metrics_halving_is_status_and_the_forecasts_formula(tmp_path):
    """ef8da55: user_usage_to_halve_core_hours used the fixed-d formula d S U / (1 - UE - d S)
    while the agent held the total, where status and the forecast use S d U. Independent check:
    with the total held, every user's figure over its norm share is one number, d U."""
    from fscontrol.agent import publishing

    db = store.open_db(tmp_path / "h.db")
    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10, "method": "padding"}}})
    res = pipeline.control_tick(RecordedSlurm(SAMPLE), db, cfg, apply=False)
    db.execute("UPDATE decisions SET apply = 1 WHERE id = ?", [res.decision_id])  # as if the agent had applied it

    def halve() -> dict:
        text = publishing.metrics_text(db, cfg)
        fam = "fscontrol_user_usage_to_halve_core_hours"
        return {ln.split("{", 1)[1].split("}", 1)[0]: float(ln.rsplit(" ", 1)[1])
                for ln in text.splitlines() if ln.startswith(fam + "{")}

    held = halve()
    snap = store.load_snapshot(db, cluster="tbcluster")
    shares = {f'cluster="tbcluster",account="{r.account}",user="{r.user}"': r.norm_shares for r in snap.shares if r.is_user}
    ratios = {k: v / shares[k] for k, v in held.items() if k in shares}
    assert len(ratios) >= 3, held
    assert max(ratios.values()) - min(ratios.values()) <= 1e-9 * max(ratios.values()), ratios
    db.execute("UPDATE decisions SET apply = 0")  # not applied: d stays put, the fixed-d formula
    fixed = halve()
    assert any(abs(fixed[k] - held[k]) > 1e-6 * held[k] for k in held if k in fixed), (fixed, held)


def test_control_on_frees_the_first_tick_to_persist(tmp_path):
    """ef8da55: after off and on, a changed d waited up to persist_interval (an hour), silently."""
    from fscontrol.agent import loop

    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\n")
    assert _persist(db, cc, res, 1000.0)[0].status == "ok"
    near = int(res.decision.d_target * 0.7)  # 30% off: beyond persist_tolerance, under the 2x that writes at once
    conf.write_text(f"ClusterName=x\nFairShareDampeningFactor={near}\n")
    (held,) = _persist(db, cc, res, 1060.0)  # held back by persist_interval: the rate limit works, and the tick says so
    assert held.status == "held" and "persist_interval" in held.output and f"d = {near}" in held.output, held
    n_recorded = db.execute("SELECT count(*) FROM actions WHERE kind = 'persist_damping'").fetchone()[0]
    assert n_recorded == 1  # (a held write is said, not recorded: it recurs every tick of the interval)
    store_ledger.set_state(db, "tbcluster", "acting_off", {"by": "control off", "at": 1100.0}, 1100.0)
    db.close()
    cfg = config.from_dict({"agent": {"db": str(tmp_path / "h.db")},
                            "clusters": {"tbcluster": {"target_core_hours": 10_000, "method": "damping", "persist": True,
                                                       "slurm_conf": str(conf)}}})
    loop.set_acting(cfg, tmp_path / "h.db", "tbcluster", by=None)  # `control on`
    db = store.open_db(tmp_path / "h.db")
    (p,) = _persist(db, cc, res, 1120.0)
    assert p.status == "ok" and f"FairShareDampeningFactor={res.decision.d_target}" in conf.read_text()


def test_a_restart_far_off_is_written_inside_the_interval_unless_a_reconfigure_follows(tmp_path):
    """scripts/busy.py (seed 12, 2026-11-26): the cold start's d (1000) stayed in slurm.conf for
    persist_interval while the runtime d fell to 20, and the restart at minute 31 started on it
    (+4,959% on that pass). A slurm.conf d 2x off or more is written at once where no reconfigure
    follows the write; with persist_reconfigure (a write restarts slurmctld >= 23.11) the interval holds."""
    import dataclasses

    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\n")
    d = res.decision.d_target
    assert _persist(db, cc, res, 1000.0)[0].status == "ok"
    conf.write_text(f"ClusterName=x\nFairShareDampeningFactor={d * 50}\n")  # as if the agent's earlier, far larger d
    (held,) = _persist(db, dataclasses.replace(cc, persist_reconfigure=True), res, 1060.0, run=lambda argv: "")
    assert held.status == "held" and "persist_interval" in held.output, held
    (p,) = _persist(db, cc, res, 1060.0)
    assert p.status == "ok" and "2x off or more" in p.reason, p
    assert f"FairShareDampeningFactor={d}\n" in conf.read_text()


# ---------------------------------------------------------------------------- review of #29, item 7
def test_persist_goes_through_the_executor_a_passed_deadline_writes_nothing(tmp_path):
    """The review of #29 (item 7): persist ran slurmconf.edit_damping on its own path, with no
    deadline check: slurm.conf was written after agent.tick_deadline had passed. Through
    executor.apply it is skipped like every other action, the file untouched, no original kept."""
    import time

    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\nFairShareDampeningFactor=7\n")
    (p,) = executor._persist(db, lambda argv, timeout=None: "", cc, res.decision, res.decision_id, None, cc.slurm_conf,
                             1000.0, act, deadline=time.monotonic() - 1.0)
    assert p.status == "skipped" and "deadline" in p.output, p
    assert conf.read_text() == "ClusterName=x\nFairShareDampeningFactor=7\n"
    assert "slurm_conf_damping" not in store_ledger.originals(db, "tbcluster")
    assert store_ledger.get_state(db, "tbcluster", "persist_written") is None
    row = db.execute("SELECT status FROM actions WHERE kind = 'persist_damping'").fetchone()
    assert row[0] == "skipped"


def test_persist_refused_at_the_edit_is_recorded_refused_as_apply_records_it(tmp_path):
    """slurm.conf changed to use Include between persist's read and its edit: slurmconf refuses
    the edit (UnsafeActionError). apply records that "refused" (as for a restore); persist's own
    path recorded "failed", which failed the tick."""
    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\nFairShareDampeningFactor=7\n")
    real = slurmconf.edit_damping

    def include_meanwhile(path, *a, **kw):
        Path(path).write_text("ClusterName=x\nInclude more.conf\n")
        return real(path, *a, **kw)

    slurmconf.edit_damping = include_meanwhile
    try:
        (p,) = _persist(db, cc, res, 1000.0)
    finally:
        slurmconf.edit_damping = real
    assert p.status == "refused" and "uses Include" in p.output, p
    assert db.execute("SELECT status FROM actions WHERE kind = 'persist_damping'").fetchone()[0] == "refused"
    assert "slurm_conf_damping" not in store_ledger.originals(db, "tbcluster")


def test_a_timed_out_reconfigure_after_persist_is_unknown_and_keeps_the_original(tmp_path):
    """rev29: the reconfigure after persist's write timed out. It may have acted, so the file keeps
    the agent's line (no rollback, no second reconfigure) and the outcome is 'unknown'; the write is
    recorded with its original, so `control off` can still put the admin's line back."""
    from dataclasses import replace

    from fscontrol.errors import SlurmTimeoutError

    conf, db, cc, res = _setup(tmp_path, "ClusterName=x\nFairShareDampeningFactor=7\n")
    cc = replace(cc, persist_reconfigure=True)
    calls = []

    def slow(argv, timeout=None):
        calls.append(tuple(argv))
        raise SlurmTimeoutError("`scontrol reconfigure` timed out after 3 s")

    (p,) = _persist(db, cc, res, 1000.0, run=slow)
    assert p.status == "unknown" and "scontrol show config | grep -i dampening" in p.output, p
    assert calls == [("scontrol", "reconfigure")]
    assert slurmconf.conf_damping_value(conf.read_text()) == str(res.decision.d_target)
    assert store_ledger.originals(db, "tbcluster")["slurm_conf_damping"]["value"] == "7"
    assert store_ledger.get_state(db, "tbcluster", "persist_written")["d"] == res.decision.d_target
