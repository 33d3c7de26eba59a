"""The agent's guard rails that need no Slurm: the tick lock, the config file, dry runs."""

from __future__ import annotations

import pytest
import json
from pathlib import Path

from typer.testing import CliRunner

from fscontrol.store import history as store
from fscontrol.cli.app import app
from fscontrol.act.lock import agent_lock

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-basic"


def _cfg(tmp_path, text: str) -> Path:
    p = tmp_path / "fscontrol.toml"
    p.write_text(text)
    return p


def test_second_tick_exits_5_while_one_holds_the_lock(tmp_path):
    cfg = _cfg(tmp_path, f'[agent]\nlock = "{tmp_path}/agent.lock"\n')
    with agent_lock(tmp_path / "agent.tbcluster.lock"):  # the recorded sample names its cluster: its own key
        r = CliRunner().invoke(app, ["tick", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db")])
    assert r.exit_code == 5
    assert r.output.strip().startswith("fscontrol: error: another fscontrol tick is running (pid ")
    assert not (tmp_path / "h.db").exists()  # nothing was touched
    r = CliRunner().invoke(app, ["tick", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db")])
    assert r.exit_code == 0, r.output


def test_config_typo_names_the_key(tmp_path):
    cfg = _cfg(tmp_path, "[clusters.tb]\ntarget_core_hour = 100\n")
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg)])
    assert r.exit_code == 2
    assert r.output.strip() == (
        f"fscontrol: error: {cfg}: config: unknown key 'clusters.tb.target_core_hour' (did you mean 'target_core_hours'?)"
    )


def test_config_check_prints_effective_settings(tmp_path):
    cfg = _cfg(tmp_path, '[clusters.tb]\ntarget_core_hours = 100\nmethod = "hybrid"\n')
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg)])
    assert r.exit_code == 0 and "valid" in r.output and "cluster tb: method hybrid, u* 100 core-hours" in r.output
    r = CliRunner().invoke(app, ["config", "check", "--config", str(cfg), "--json"])
    assert r.exit_code == 0
    eff = json.loads(r.output)
    # padding_mode's default is steady, the mode docs/control.md measures closest (issue #30: it was pulse)
    assert eff["apply"] is False and eff["clusters"]["tb"]["padding_mode"] == "steady"
    assert eff["schedule"]["collect"] == 300.0
    assert eff["clusters"]["tb"]["slurm_conf"] is None  # SLURM_CONF from `scontrol show config` (was /etc/slurm/slurm.conf)


def test_config_check_prints_every_key_in_force(tmp_path):
    """The plain `config check` prints the effective value of every key an admin sets (issue #30
    item 4: it printed the method and u* alone), in the file's own names and sections."""
    from fscontrol.agent.config import AgentConfig, ClusterConfig

    cfg = _cfg(tmp_path, '[clusters.tb]\ntarget_core_hours = 100\nmethod = "damping"\npersist = true\n'
                         'persist_interval = "2h"\n')
    out = CliRunner().invoke(app, ["config", "check", "--config", str(cfg)]).output
    lines = [ln.strip() for ln in out.splitlines()]
    for key in set(ClusterConfig.__slots__) - {"name", "gate", "allocations"}:
        key = key.removesuffix("_s")
        assert sum(ln.startswith(f"{key} = ") for ln in lines) == 1, key
    for key in set(AgentConfig.__slots__) - {"schedule", "clusters", "forecast"}:
        assert any(ln.startswith(f"{key.removesuffix('_s')} = ") for ln in lines), key
    for want in ('persist = true', 'persist_interval = "7200s"', 'padding_mode = "steady"', "max_damping = 1000",
                 "persist_tolerance = 0.1", "persist_reconfigure = false", "apply = false",
                 "slurm_conf = (default: SLURM_CONF from `scontrol show config`)"):
        assert want in lines, want


def test_config_check_prints_forecast_caps_and_the_history_in_force(tmp_path, monkeypatch):
    """An outside tester (issue #30 item 4, "config check prints the effective value of each"):
    the [forecast] caps were missing from the text, and `db` said "(default: $FSCONTROL_DB, else
    ...)" with FSCONTROL_DB set. Every [forecast] key is printed, and db is the path in force."""
    from fscontrol.agent.config import AgentConfig

    monkeypatch.setenv("FSCONTROL_DB", str(tmp_path / "site.db"))
    cfg = _cfg(tmp_path, '[forecast]\nmax_horizon = "30d"\nmax_plan_steps = 12\n[clusters.tb]\ntarget_core_hours = 100\n')
    out = CliRunner().invoke(app, ["config", "check", "--config", str(cfg)]).output
    lines = [ln.strip() for ln in out.splitlines()]
    assert "[forecast]" in lines and 'max_horizon = "2592000s"' in lines and "max_plan_steps = 12" in lines
    assert "max_cpus = (default: the cluster's size)" in lines
    assert f"db = (default: {tmp_path / 'site.db'})" in lines
    assert len(AgentConfig().forecast) == 3  # every cap: the three above


def test_bad_toml_and_missing_file(tmp_path):
    r = CliRunner().invoke(app, ["config", "check", "--config", str(_cfg(tmp_path, "[agent\n"))])
    assert r.exit_code == 2 and "is not valid TOML" in r.output
    r = CliRunner().invoke(app, ["config", "check", "--config", str(tmp_path / "nope.toml")])
    assert r.exit_code == 2 and "does not exist" in r.output


def test_dry_run_records_the_plan_and_changes_nothing(tmp_path):
    cfg = _cfg(tmp_path, '[clusters.tbcluster]\ntarget_core_hours = 2\nmethod = "hybrid"\npadding_mode = "steady"\n')
    db = tmp_path / "h.db"
    r = CliRunner().invoke(app, ["control", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["mode"] == "dry-run" and [a["status"] for a in data["actions"]] == ["planned"] * 3
    rows = store.open_db(db).execute("SELECT kind, status, reason FROM actions").fetchall()
    assert [k for k, _, _ in rows] == ["set_damping", "set_usage_factor", "submit_dummy"]
    assert all(s == "planned" and reason for _, s, reason in rows)
    # --apply on a recorded sample is refused before anything is written
    r = CliRunner().invoke(app, ["control", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(db), "--apply"])
    assert r.exit_code == 7 and "only a live cluster can be changed" in r.output
    assert store.open_db(db).execute("SELECT count(*) FROM decisions").fetchone()[0] == 1


def test_corrupt_database_is_a_clear_error(tmp_path):
    db = tmp_path / "h.db"
    db.write_bytes(b"this is not sqlite" * 100)
    r = CliRunner().invoke(app, ["collect", "--source", str(SAMPLE), "--db", str(db)])
    assert r.exit_code == 4
    assert r.output.strip() == f"fscontrol: error: history database {db} is unreadable: file is not a database"


def test_gate_dry_run_on_the_sample(tmp_path):
    cfg = _cfg(tmp_path, "".join(
        f'[clusters.tbcluster.allocations.{a}]\naward = {w}\nperiod = "30d"\n'
        for a, w in (("physics", 2000), ("flat", 20000), ("chem", 10000))
    ))
    r = CliRunner().invoke(app, ["gate", "--config", str(cfg), "--source", str(SAMPLE), "--db", str(tmp_path / "h.db"), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    states = {a["account"]: a["state"] for a in data["accounts"]}
    # flat runs 64 cpus against a target of 2 x 20000/720 = 55.6; chem's pending jobs sit in a DOWN
    # partition, so nothing under target is waiting and no hold may be placed (it would idle nodes)
    assert states == {"chem": "under", "flat": "over", "physics": "over"}
    assert data["actions"] == [] and data["under_waiting"] == []


def test_gate_without_allocations_is_no_failure(tmp_path):
    """A dry-run gate on a cluster with no allocations: one line saying so, exit 0, and the tick
    is an ok tick in the history and the metrics (before, issue 28: exit 6 and a failed tick)."""
    from fscontrol.store import history as store

    db = tmp_path / "h.db"
    r = CliRunner().invoke(app, ["gate", "--source", str(SAMPLE), "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert r.output.strip().splitlines() == [
        "no allocations configured for cluster tbcluster: nothing to gate (add [clusters.tbcluster.allocations.ACCOUNT] to the config)"]
    r = CliRunner().invoke(app, ["gate", "--source", str(SAMPLE), "--db", str(db), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["actions"] == []
    conn = store.open_db(db, create=False, readonly=True)
    try:
        assert [tuple(x) for x in conn.execute("SELECT stage, status FROM ticks")] == [("gate", "ok"), ("gate", "ok")]
    finally:
        conn.close()
    r = CliRunner().invoke(app, ["metrics", "--db", str(db)])
    assert 'fscontrol_ticks_total{cluster="tbcluster",stage="gate",status="failed"} 0' in r.output
    assert 'fscontrol_ticks_total{cluster="tbcluster",stage="gate",status="ok"} 2' in r.output


def test_bad_schedule_interval_names_the_key(tmp_path):
    r = CliRunner().invoke(app, ["config", "check", "--config", str(_cfg(tmp_path, '[schedule]\ncollect = "soon"\n'))])
    assert r.exit_code == 2
    assert "config: 'schedule.collect' 'soon' is not a duration" in r.output


def test_history_and_its_wal_are_private_whatever_the_umask(tmp_path):
    """Per-user usage and job ids: 0600 for a new history under umask 022, and an old 0644 one
    (and its WAL/SHM) is put right on open."""
    import os
    import stat

    from fscontrol.store import history as store

    old = os.umask(0o022)
    try:
        db = store.open_db(tmp_path / "new.db")
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES (1)")
        files = [tmp_path / "new.db", tmp_path / "new.db-wal", tmp_path / "new.db-shm"]
        assert all(f.exists() for f in files)
        assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o600}
        db.close()
        legacy = tmp_path / "old.db"
        legacy.touch(mode=0o644)
        legacy.chmod(0o644)
        store.open_db(legacy).close()
        assert stat.S_IMODE(legacy.stat().st_mode) == 0o600
    finally:
        os.umask(old)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "0", "-5"])
def test_a_target_that_is_not_a_finite_positive_number_is_refused_naming_the_key(bad):
    from fscontrol.agent import config
    from fscontrol.errors import ConfigError

    with pytest.raises(ConfigError, match="target_core_hours"):
        config.from_dict({"clusters": {"c": {"target_core_hours": float(bad), "method": "damping"}}})


def test_a_young_history_is_not_fitted_at_every_tick(tmp_path):
    """A fit that finds too little history is tried again after schedule.fit, not at every tick
    (each try loads numpy)."""
    from fscontrol.agent import config
    from fscontrol.agent import pipeline
    from fscontrol.store import history as store
    from fscontrol.slurm.source import RecordedSlurm

    cfg = config.from_dict({"clusters": {"tbcluster": {}}})
    db = store.open_db(tmp_path / "h.db")
    res = pipeline.agent_tick(RecordedSlurm(SAMPLE), db, cfg, apply=False)
    assert res.fit is None
    import time

    t = time.time()
    assert not pipeline.fit_due(db, "tbcluster", 3600.0, t + 60)
    assert pipeline.fit_due(db, "tbcluster", 3600.0, t + 3600)


def test_a_command_the_tick_started_keeps_the_lock_after_the_tick_is_gone(tmp_path):
    """A tick killed while its command runs must stay locked until the command has ended (lock.py):
    here the command leaves a process behind that lives 1.5 s after the lock's holder let go."""
    import fcntl
    import threading
    import time

    from fscontrol.act.lock import held_fds
    from fscontrol.slurm.source import LiveSlurm

    path = tmp_path / "agent.lock"
    with agent_lock(path):
        assert len(held_fds()) == 1
        seen_by_other_thread = []
        t = threading.Thread(target=lambda: seen_by_other_thread.append(held_fds()))
        t.start()
        t.join()
        assert seen_by_other_thread == [()]  # the loop's other jobs do not pass this thread's lock on
        LiveSlurm().run(("sh", "-c", "sleep 1.5 >/dev/null 2>&1 </dev/null &"))
    assert held_fds() == ()
    with open(path) as fh:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        deadline = time.monotonic() + 30
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, "the lock outlived its command"
                time.sleep(0.05)


def test_a_timed_out_command_is_killed_with_its_children(tmp_path):
    """A command that outlives its timeout is killed with every process it started (a site's
    wrapper around a Slurm client, say): subprocess.run killed the wrapper only, and its child lived
    on with the agent lock's file (the next ticks locked out while it lived; this test failed so).
    Here the timeout holds and the child is gone."""
    import os
    import time

    from fscontrol.errors import SlurmTimeoutError
    from fscontrol.slurm.source import LiveSlurm

    pidfile = tmp_path / "child.pid"
    # the wrapper starts a child that keeps stdout open, then waits for it
    script = f"sleep 30 & echo $! > {pidfile}; wait"
    t0 = time.monotonic()
    with pytest.raises(SlurmTimeoutError, match="timed out after 1 s"):
        LiveSlurm(timeout_s=1.0).run(("sh", "-c", script))
    took = time.monotonic() - t0
    assert took < 10, took
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while True:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        # (a zombie until its parent, the killed wrapper, is reaped by init: gone from ps soon)
        with open(f"/proc/{child}/stat") as f:
            if f.read().split(")")[-1].split()[0] == "Z":
                break
        assert time.monotonic() < deadline, "the wrapper's child outlived the timeout"
        time.sleep(0.05)
