"""The agent under faults, on the real testbed, through the command admins run (`fscontrol tick`
in a fresh process, as cron runs it). Each test prints the exact message the admin sees
(`pytest -s`); docs/agent.md lists them.

- slurmctld stopped: the tick fails (exit 3, one line), records a failed tick and takes no action;
  a second tick meanwhile exits 5 (the lock); slurmctld restarted: d is back at slurm.conf's value
  and the next tick re-applies the agent's d.
- kill -9 at random moments of ticks: the history stays consistent (integrity check, every
  snapshot with its tick, every decision with its snapshot), and the next tick works.
- a corrupt database, a database another process holds locked, a config with a typo: one line,
  the exit code for it, nothing changed in Slurm.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.slurm

STEADY = [("bob", "flat", 8, 1800), ("alice", "physics", 4, 1800)]


def _cfg(tmp_path: Path, extra: str = "") -> Path:
    p = tmp_path / "fscontrol.toml"
    p.write_text(
        f'[agent]\ndb = "{tmp_path / "history.db"}"\nmetrics = "{tmp_path / "fscontrol.prom"}"\n'
        f'publish_dir = "{tmp_path / "public"}"\nslurm_timeout = "30s"\n'
        '[clusters.tbcluster]\ntarget_core_hours = 1.0\nmethod = "damping"\n' + extra
    )
    return p


def _tick(slurm, cfg: Path, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fscontrol", "tick", "-c", str(cfg), *extra],
                          env=slurm.env, capture_output=True, text=True, timeout=timeout)


def _one(db: Path, sql: str):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def _with_usage(slurm) -> None:
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")  # d back to slurm.conf's 1
    for user, account, cpus, secs in STEADY:
        slurm.submit(user, account, cpus, secs)
    slurm.wait_for_pass()


def test_controller_outage_fails_cleanly_and_recovery_reapplies_d(slurm, tmp_path):
    _with_usage(slurm)
    cfg = _cfg(tmp_path)
    db = tmp_path / "history.db"
    try:
        first = _tick(slurm, cfg, "--apply")
        assert first.returncode == 0, first.stderr
        d_agent = slurm.damping()
        assert d_agent > 1
        snaps, actions = _one(db, "SELECT count(*) FROM snapshots"), _one(db, "SELECT count(*) FROM actions")

        slurm.stop_controller()
        # a tick while slurmctld is down; a second tick meanwhile finds the lock held
        down = subprocess.Popen([sys.executable, "-m", "fscontrol", "tick", "-c", str(cfg), "--apply"],
                                env=slurm.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lock = tmp_path / "tbcluster.lock"  # the cluster's lock, beside the agent's history
        deadline = time.time() + 30
        while (not lock.exists() or lock.read_text().strip() != str(down.pid)) and time.time() < deadline:
            time.sleep(0.05)
        second = _tick(slurm, cfg, "--apply")
        out, err = down.communicate(timeout=120)
        print(f"\nslurmctld down: exit {down.returncode}: {err.strip()}")
        print(f"concurrent tick: exit {second.returncode}: {second.stderr.strip()}")
        assert second.returncode == 5
        assert second.stderr.strip() == f"fscontrol: error: another fscontrol tick is running (pid {down.pid} holds {lock})"
        assert down.returncode == 3 and out == ""
        assert err.count("\n") == 1 and err.startswith("fscontrol: error: `scontrol show config` failed")
        assert "Unable to contact slurm controller" in err
        # nothing acted on, nothing but the failed tick written
        assert _one(db, "SELECT count(*) FROM snapshots") == snaps
        assert _one(db, "SELECT count(*) FROM actions") == actions
        assert _one(db, "SELECT status FROM ticks ORDER BY id DESC LIMIT 1") == "failed"
        prom = {f.name: f for f in text_string_to_metric_families((tmp_path / "fscontrol.prom").read_text())}
        failed = {s.labels["stage"]: s.value for s in prom["fscontrol_ticks"].samples
                  if s.name.endswith("_total") and s.labels["status"] == "failed"}
        assert failed == {"control": 1.0}
    finally:
        slurm.start_controller()
    assert slurm.damping() == 1  # a restart reads slurm.conf: the agent's d is gone
    slurm.wait_for_pass()
    again = _tick(slurm, cfg, "--apply", "--json")
    print(f"after restart: exit {again.returncode}")
    assert again.returncode == 0, again.stderr
    control = json.loads(again.stdout)["clusters"][0]["control"]
    assert any("reverted" in n for n in control["notes"]), control["notes"]
    assert [a["status"] for a in control["actions"] if a["kind"] == "set_damping"] == ["ok"]
    assert slurm.damping() == control["damping_target"] == control["verified_damping"] > 1
    slurm.cancel_all()
    slurm.scontrol("reconfigure")


def test_the_testbed_stops_a_slurmctld_just_restarted_or_without_its_pid_file(slurm):
    """The outage tests need slurmctld really down. Slurm 23.11+ restarts slurmctld on `scontrol
    reconfigure` (a new process, which rewrites the pid file a moment later): a stop right after a
    reconfigure once killed the old pid only and left the new slurmctld running with no pid file,
    so the next "outage" had a controller (CI on 24.11). `ctld-stop` also stops every slurmctld
    started with this testbed's slurm.conf."""
    pidfile = slurm.dir / "run" / "slurmctld.pid"
    try:
        for _ in range(3):
            slurm.scontrol("reconfigure")
            slurm.stop_controller()  # raises if a slurmctld still answers
            slurm.start_controller()
        assert slurm.controller_up()
        pidfile.unlink()  # as that race left it: running, no pid file
        slurm.stop_controller()
        assert not slurm.controller_up()
    finally:
        slurm.start_controller()
    assert slurm.controller_up() and pidfile.is_file()


def test_kill_9_mid_tick_leaves_a_consistent_history(slurm, tmp_path):
    _with_usage(slurm)
    cfg = _cfg(tmp_path)
    db = tmp_path / "history.db"
    rng = random.Random(7)
    assert _tick(slurm, cfg).returncode == 0  # the schema and a first snapshot
    # kills fall inside a tick's own length, whatever the Slurm (24.11's clients answer faster):
    # timed on a tick like the killed ones (the first also creates the schema, a slower start)
    t0 = time.monotonic()
    assert _tick(slurm, cfg).returncode == 0
    tick_s = max(0.3, time.monotonic() - t0)
    killed = 0
    for _ in range(12):
        p = subprocess.Popen([sys.executable, "-m", "fscontrol", "tick", "-c", str(cfg)], env=slurm.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.15, 0.95) * tick_s)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait(timeout=60)
    # the next tick settles what the killed ones left, once the lock is free: a killed tick's lock is
    # held until the command it had in flight ends (docs/agent.md), exit 5 until then
    deadline = time.monotonic() + 60
    while (rc := _tick(slurm, cfg).returncode) == 5 and time.monotonic() < deadline:
        time.sleep(1)
    assert rc == 0
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # every snapshot was written with its tick (and its intent), every decision with its
        # snapshot, in one transaction; a killed tick's row was ended by the next tick
        orphans = con.execute(
            "SELECT count(*) FROM snapshots s WHERE NOT EXISTS (SELECT 1 FROM ticks t WHERE t.snapshot_id = s.id)"
        ).fetchone()[0]
        running = con.execute("SELECT count(*) FROM ticks WHERE status = 'running'").fetchone()[0]
        pending = con.execute("SELECT count(*) FROM actions WHERE status IN ('pending', 'unknown')").fetchone()[0]
        lost = con.execute(
            "SELECT count(*) FROM ticks t WHERE t.status = 'ok' AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.id = t.snapshot_id)"
        ).fetchone()[0]
        undecided = con.execute(
            "SELECT count(*) FROM snapshots s WHERE NOT EXISTS (SELECT 1 FROM decisions d WHERE d.snapshot_id = s.id)"
        ).fetchone()[0]
        snaps = con.execute("SELECT count(*) FROM snapshots").fetchone()[0]
    finally:
        con.close()
    print(f"\nkill -9: {killed} of 12 ticks (a whole one took {tick_s:.2f} s) killed mid-run, {snaps} snapshots committed, all consistent")
    assert killed >= 6, "too few ticks were caught mid-run to test anything"
    assert (orphans, lost, undecided, running, pending) == (0, 0, 0, 0, 0)


def test_bad_database_and_bad_config_are_one_line_and_change_nothing(slurm, tmp_path):
    _with_usage(slurm)
    d_before = slurm.damping()
    db = tmp_path / "history.db"

    cfg = _cfg(tmp_path)
    db.write_bytes(b"not a database " * 200)
    r = _tick(slurm, cfg, "--apply")
    print(f"\ncorrupt database: exit {r.returncode}: {r.stderr.strip()}")
    assert r.returncode == 4 and r.stdout == ""
    assert r.stderr.strip() == f"fscontrol: error: history database {db} is unreadable: file is not a database"

    db.unlink()
    assert _tick(slurm, cfg).returncode == 0
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process (a backup, an admin's sqlite3 shell) holds the file
    try:
        r = _tick(slurm, cfg, "--apply", timeout=180)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    print(f"locked database: exit {r.returncode}: {r.stderr.strip()}")
    assert r.returncode == 4 and r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"fscontrol: error: history database {db} is locked by another process")

    typo = tmp_path / "typo.toml"
    typo.write_text(cfg.read_text().replace("target_core_hours", "target_core_hour"))
    r = _tick(slurm, typo, "--apply")
    print(f"config typo: exit {r.returncode}: {r.stderr.strip()}")
    assert r.returncode == 2
    assert r.stderr.strip() == (f"fscontrol: error: {typo}: config: unknown key 'clusters.tbcluster.target_core_hour' "
                                "(did you mean 'target_core_hours'?)")
    assert slurm.damping() == d_before  # none of the three touched Slurm
    slurm.cancel_all()


def test_several_clusters_by_M_one_unreachable(slurm, tmp_path):
    """Two [clusters.*] tables: each is served through `-M NAME`. The testbed's own cluster goes
    through slurmdbd's multi-cluster path; a cluster slurmdbd does not know fails alone."""
    cfg = tmp_path / "two.toml"
    cfg.write_text(f'[agent]\ndb = "{tmp_path / "history.db"}"\nslurm_timeout = "30s"\n'
                   '[clusters.tbcluster]\ntarget_core_hours = 1.0\nmethod = "damping"\n'
                   '[clusters.nosuch]\ntarget_core_hours = 10\nmethod = "hybrid"\n')
    r = _tick(slurm, cfg, "--json")
    print(f"\ntwo clusters, one unknown: exit {r.returncode}: {r.stderr.strip()}")
    data = json.loads(r.stdout)
    by_name = {c["cluster"]: c for c in data["clusters"]}
    assert by_name["tbcluster"]["ok"] and by_name["tbcluster"]["control"]["method"] == "damping"
    assert not by_name["nosuch"]["ok"] and by_name["nosuch"]["exit_code"] == 3
    assert r.returncode == 3 and r.stderr.startswith("fscontrol: error: cluster nosuch: ")
    db = tmp_path / "history.db"
    assert _one(db, "SELECT group_concat(DISTINCT cluster) FROM decisions") == "tbcluster"
    assert _one(db, "SELECT count(*) FROM ticks WHERE cluster = 'nosuch' AND status = 'failed'") == 1
    # the -M path reads the same association tree as the plain one
    from fscontrol.store import history as store

    via_m = {r.key: r.raw_shares for r in store.load_snapshot(store.open_db(db), cluster="tbcluster").shares}
    assert via_m == {k: r.raw_shares for k, r in slurm.sshare().items()}
