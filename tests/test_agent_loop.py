"""The agent around the pipeline, on recorded samples: several clusters in one tick, the
Prometheus textfile (parsed with prometheus_client's own parser), and the APScheduler loop with
its clean stop. The same on the real testbed, with faults: tests/test_integration_agent.py."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fscontrol.agent import loop as agent
from fscontrol.agent import config
from fscontrol.export import metrics
from fscontrol.slurm import parse
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger
from fscontrol.errors import ConfigError, ParseError
from fscontrol.act.lock import agent_lock
from fscontrol.slurm.source import RecordedSlurm

ROOT = Path(__file__).resolve().parent.parent
BASIC = ROOT / "samples" / "testbed-basic"
AGAVE = ROOT / "samples" / "synthetic-agave"

TWO = {
    "agent": {},
    "clusters": {
        "tbcluster": {"target_core_hours": 10, "method": "hybrid"},
        "agave-synth": {"target_core_hours": 10000, "method": "damping"},
    },
}


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _sources(mapping: dict[str, Path]):
    return lambda name: RecordedSlurm(mapping[name], cluster=name)


def test_one_tick_serves_several_clusters_each_with_its_own_target_and_history(tmp_path):
    cfg = config.from_dict({**TWO, "agent": {"metrics": str(tmp_path / "m.prom"), "publish_dir": str(tmp_path / "pub")}})
    assert agent.clusters_to_serve(cfg, None, live=True) == ["agave-synth", "tbcluster"]
    assert agent.clusters_to_serve(cfg, "tbcluster", live=True) == ["tbcluster"]
    out = agent.tick(cfg, _sources({"tbcluster": BASIC, "agave-synth": AGAVE}), tmp_path / "h.db",
                     ["agave-synth", "tbcluster"], apply=False)
    assert [(o.cluster, o.error) for o in out] == [("agave-synth", None), ("tbcluster", None)]
    db = store.open_db(tmp_path / "h.db")
    u_star = dict(db.execute("SELECT cluster, u_star FROM decisions").fetchall())
    assert u_star == {"tbcluster": 10 * 3600.0, "agave-synth": 10000 * 3600.0}
    methods = dict(db.execute("SELECT cluster, method FROM decisions").fetchall())
    assert methods == {"tbcluster": "hybrid", "agave-synth": "damping"}
    assert sorted(p.name for p in (tmp_path / "pub").iterdir()) == ["agave-synth.html", "agave-synth.json", "agave-synth.users",  # + the public pages,
                                                                 "tbcluster.html", "tbcluster.json", "tbcluster.users"]  # own files
    fams = _families((tmp_path / "m.prom").read_text())
    usage = {s.labels["cluster"]: s.value for s in fams["fscontrol_usage_core_hours"].samples}
    for name, sample in (("tbcluster", BASIC), ("agave-synth", AGAVE)):  # what the cluster's own sshare said
        root = next(r for r in parse.parse_sshare(RecordedSlurm(sample).sshare().stdout) if r.depth == 0)
        assert usage[name] == pytest.approx(root.raw_usage / 3600.0, rel=1e-12)


def test_one_clusters_garbled_output_does_not_stop_the_others(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(BASIC, broken)
    (broken / "sshare.txt").write_text("Account|User|RawShares\nthis is not sshare output\n")
    cfg = config.from_dict(TWO)
    out = agent.tick(cfg, _sources({"tbcluster": broken, "agave-synth": AGAVE}), tmp_path / "h.db",
                     ["tbcluster", "agave-synth"], apply=False)
    assert isinstance(out[0].error, ParseError) and out[1].error is None
    db = store.open_db(tmp_path / "h.db")
    ticks = db.execute("SELECT cluster, stage, status FROM ticks ORDER BY id").fetchall()
    assert ticks == [("tbcluster", "control", "failed"), ("agave-synth", "control", "ok")]
    # nothing of the failed cluster was written but its failed tick
    assert db.execute("SELECT count(*) FROM snapshots WHERE cluster = 'tbcluster'").fetchone()[0] == 0


def test_metrics_parse_with_prometheus_clients_parser_and_match_the_history(tmp_path):
    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10, "method": "hybrid"}}})
    agent.tick(cfg, _sources({"tbcluster": BASIC}), tmp_path / "h.db", ["tbcluster"], apply=False)
    db = store.open_db(tmp_path / "h.db")
    from fscontrol.agent import publishing
    from fscontrol.report import status as rstatus

    text = publishing.metrics_text(db, cfg)
    fams = _families(text)
    status = rstatus.status_data(store.load_snapshot(db), target_core_hours=10, dummy=("fsadmin", "fsdummy"))
    f = {(s.labels["account"], s.labels["user"]): s.value for s in fams["fscontrol_user_fairshare"].samples}
    assert f == {(r["account"], r["user"]): r["fairshare"] for r in status["table"] if not r["dummy"] and r["fairshare"] is not None}
    assert fams["fscontrol_damping_factor"].samples[0].value == status["damping_factor"]
    assert fams["fscontrol_halving_target_core_hours"].samples[0].value == 10
    assert fams["fscontrol_damping_factor_target"].samples[0].value == store_ledger.last_decision(db, "tbcluster")["d_target"]
    ticks = {(s.labels["stage"], s.labels["status"]): s.value for s in fams["fscontrol_ticks"].samples if s.name.endswith("_total")}
    assert ticks == {("control", "ok"): 1.0, ("control", "failed"): 0.0}
    assert fams["fscontrol_ticks"].type == "counter"
    assert fams["fscontrol_agent_holds"].samples[0].value == 0


def test_label_values_are_escaped_and_round_trip():
    fam = metrics.Family("user_fairshare", "F")
    odd = 'we"ird\\name\nx'
    fam.add(0.25, cluster="c", user=odd)
    fam.add(None, cluster="c", user="unknown")  # left out, not exported as 0
    parsed = list(text_string_to_metric_families(metrics.render([fam])))
    assert [(s.labels["user"], s.value) for s in parsed[0].samples] == [(odd, 0.25)]


def test_metrics_file_is_replaced_atomically_and_world_readable(tmp_path):
    p = tmp_path / "tf" / "fscontrol.prom"
    with pytest.raises(FileNotFoundError):  # the folder is the admin's (node_exporter's): never made here
        metrics.write_textfile(p, "a 1\n")
    p.parent.mkdir()
    metrics.write_textfile(p, "a 1\n")
    metrics.write_textfile(p, "a 2\n")
    assert p.read_text() == "a 2\n" and (p.stat().st_mode & 0o777) == 0o644
    assert [x.name for x in p.parent.iterdir()] == ["fscontrol.prom"]  # no temporary file left


def test_schedule_where_control_runs_more_often_than_collect_is_refused():
    with pytest.raises(ConfigError, match=r"'schedule.control' \(300 s\) is shorter than 'schedule.collect' \(600 s\)"):
        config.from_dict({"schedule": {"collect": "10m", "control": "5m"}})


def _fast(cfg, **every):
    return replace(cfg, schedule={**cfg.schedule, **every})


def test_loop_ticks_on_its_schedule_and_stops_cleanly(tmp_path):
    cfg = _fast(config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10, "method": "hybrid"}}}),
                collect=1.0, control=2.0, fit=3600.0)
    stop = threading.Event()
    seen = []
    t = threading.Timer(4.5, stop.set)
    t.start()
    counts = agent.run_loop(cfg, _sources({"tbcluster": BASIC}), tmp_path / "h.db", ["tbcluster"], apply=False,
                            stop=stop, on_tick=lambda stage, out: seen.append(time.monotonic()))
    assert counts["failed"] == 0 and counts["ok"] >= 4, counts
    stages = [s for (s,) in store.open_db(tmp_path / "h.db").execute("SELECT stage FROM ticks ORDER BY id")]
    # control every 2 s at the 1-s wake-ups (90% slack), collect-only between
    assert stages[0] == "control" and "collect" in stages and stages.count("control") >= 2, stages
    assert len(stages) == counts["ok"]


def test_a_stop_while_a_job_schedules_its_successor_ends_the_loop(tmp_path):
    """The stop comes while the control-before-the-pass job is running; that job then schedules
    its next run. APScheduler 3's shutdown(wait=True) holds the job stores' lock while it waits for
    the job, so the job's add_job waited for ever (seen in CI: `fscontrol run` under systemd's stop,
    killed at TimeoutStopSec). The loop must end, and no job queued behind the running one starts."""
    cfg = _fast(config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10, "method": "hybrid"}}}),
                collect=3600.0, control=3600.0, fit=3600.0)
    stop = threading.Event()

    def make_source(name):
        if sys._getframe(1).f_code.co_name == "pass_job":  # the job, about to reschedule itself
            time.sleep(0.3)  # past the scheduler's own bookkeeping of this run
            stop.set()
            time.sleep(1.0)  # the main thread is in shutdown by now
        return RecordedSlurm(BASIC, cluster=name)

    out = {}
    t = threading.Thread(target=lambda: out.update(agent.run_loop(cfg, make_source, tmp_path / "h.db", ["tbcluster"],
                                                                  apply=False, stop=stop)), daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "the loop did not end after its stop"
    # whatever ran before the stop ended well, and nothing started after it
    ticks = store.open_db(tmp_path / "h.db").execute("SELECT count(*) FROM ticks").fetchone()[0]
    assert out["failed"] == 0 and out["ok"] == ticks <= 1, (out, ticks)


def test_loop_skips_a_run_while_a_cron_tick_holds_the_lock(tmp_path):
    cfg = _fast(config.from_dict({"agent": {"lock": str(tmp_path / "a.lock")}}), collect=1.0, control=1.0)
    stop = threading.Event()
    with agent_lock(tmp_path / "a.tbcluster.lock"):  # the loop serves -M tbcluster: its own key (lock.lock_key)
        threading.Timer(1.5, stop.set).start()
        counts = agent.run_loop(cfg, _sources({"tbcluster": BASIC}), tmp_path / "h.db", ["tbcluster"], apply=False, stop=stop)
    assert counts["ok"] == 0 and counts["skipped"] >= 1 and counts["failed"] == 0


def test_run_ends_cleanly_on_sigterm(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[agent]\ndb = "{tmp_path / "h.db"}"\nmetrics = "{tmp_path / "m.prom"}"\n'
                   '[clusters.tbcluster]\ntarget_core_hours = 10\nmethod = "hybrid"\n')
    p = subprocess.Popen([sys.executable, "-m", "fscontrol", "run", "-c", str(cfg), "-s", str(BASIC)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while not (tmp_path / "m.prom").exists() and time.time() < deadline:
            time.sleep(0.2)
        assert (tmp_path / "m.prom").exists(), "the first tick never finished"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert err.strip().splitlines()[-1] == "fscontrol run: stopped; 1 ok, 0 failed, 0 skipped (lock held)"
    con = sqlite3.connect(tmp_path / "h.db")
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert con.execute("SELECT count(*), min(status) FROM ticks").fetchone() == (1, "ok")


def test_run_refuses_a_bad_duration_and_a_bad_schedule(tmp_path):
    from typer.testing import CliRunner

    from fscontrol.cli.app import app

    r = CliRunner().invoke(app, ["run", "--defaults", "-s", str(BASIC), "--db", str(tmp_path / "h.db"), "--for", "soon"])
    assert r.exit_code == 2 and "--for" in r.output
    cfg = tmp_path / "c.toml"
    cfg.write_text('[schedule]\ncollect = "10m"\ncontrol = "10m"\nfit = "5m"\n')
    r = CliRunner().invoke(app, ["run", "-c", str(cfg), "-s", str(BASIC), "--db", str(tmp_path / "h.db")])
    assert r.exit_code == 2 and "'schedule.fit' (300 s) is shorter than 'schedule.collect' (600 s)" in r.output
    assert not os.path.exists(tmp_path / "h.db")


def test_the_log_names_the_configs_cluster_before_the_first_tick(tmp_path, caplog):
    """An outside tester (issue 30: "the log names the cluster"): without -M, the loop's first
    lines said "control (default cluster) runs every 60s" although the config names tbcluster."""
    import logging

    cfg = _fast(config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10, "method": "hybrid"}}}),
                collect=3600.0, control=3600.0, fit=3600.0)
    stop = threading.Event()
    threading.Timer(1.5, stop.set).start()
    with caplog.at_level(logging.INFO):
        agent.run_loop(cfg, lambda name: RecordedSlurm(BASIC, cluster=name), tmp_path / "h.db", [None], apply=False, stop=stop)
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("control tbcluster runs every") for m in said), said
    assert not any("(default cluster)" in m for m in said), said
