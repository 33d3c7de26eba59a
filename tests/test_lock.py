"""act/lock.py: the agent lock, one per cluster, and `--apply` only on the agent's own history.

ef8da55 opened the lock with open(path, "a+") (following a symlink), truncated it and wrote a pid
into it: as root, a link planted there emptied its target. It was keyed to the history's path
(history.db -> history.lock), and the default history differs per uid, so an operator's
`control off --apply` took another lock and read another ledger than root's agent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.act import lock
from fscontrol.act.lock import agent_lock
from fscontrol.agent import config
from fscontrol.agent import loop
from fscontrol.cli.app import app
from fscontrol.errors import LockedError, UnsafeActionError


def test_a_symlink_in_the_locks_place_is_refused_and_its_target_untouched(tmp_path):
    precious = tmp_path / "shadow"
    precious.write_text("root:secret:19000::::::\n")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "tbcluster.lock").symlink_to(precious)
    with pytest.raises(UnsafeActionError, match="symbolic link"):
        with agent_lock(state / "tbcluster.lock"):
            pass
    assert precious.read_text() == "root:secret:19000::::::\n"


def test_a_hard_link_or_someone_elses_file_is_refused(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    precious = state / "passwd"
    precious.write_text("keep\n")
    os.link(precious, state / "tbcluster.lock")
    with pytest.raises(UnsafeActionError, match="one link"):
        with agent_lock(state / "tbcluster.lock"):
            pass
    assert precious.read_text() == "keep\n"


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775, 0o757])
def test_a_lock_folder_others_can_write_to_is_refused(tmp_path, mode):
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(mode)
    with pytest.raises(UnsafeActionError, match="others can write to it"):
        with agent_lock(state / "tbcluster.lock"):
            pass
    assert list(state.iterdir()) == []


def test_the_lock_is_never_truncated_and_names_its_holder(tmp_path):
    path = tmp_path / "tbcluster.lock"
    with agent_lock(path):
        assert path.read_text().strip() == str(os.getpid())
        with pytest.raises(LockedError, match=f"pid {os.getpid()} holds {path}"):
            with agent_lock(path):
                pass
    # a longer file (a lock of an older fscontrol, or anything) keeps its length: written over, never cut
    path.write_text("x" * 40)
    with agent_lock(path):
        assert path.stat().st_size == 40 and path.read_text().split()[0] == str(os.getpid())


def test_the_lock_is_keyed_to_the_cluster_whatever_the_history(tmp_path):
    cfg = config.from_dict({"clusters": {"tbcluster": {}}})
    a = loop.lock_path(cfg, tmp_path / "history.db", None)  # the config's one cluster, no -M
    b = loop.lock_path(cfg, tmp_path / "other.db", "tbcluster")  # -M tbcluster
    assert a == b == tmp_path / "tbcluster.lock"
    two = config.from_dict({"agent": {"lock": str(tmp_path / "run" / "agent.lock")}, "clusters": {"a": {}, "b": {}}})
    assert loop.lock_path(two, tmp_path / "h.db", "a") == tmp_path / "run" / "agent.a.lock"
    assert loop.lock_path(two, tmp_path / "h.db", "b") == tmp_path / "run" / "agent.b.lock"
    assert lock.cluster_key("../etc/x") == "_etc_x"


def test_apply_on_a_history_that_is_not_the_agents_is_refused_in_one_line(tmp_path):
    """`control off --apply` (and every other acting command) on a history other than the one the
    config's agent.db names is refused before any Slurm command runs and before anything is
    written; so is one with a config that names none (the agent's is then root's default)."""
    agents = tmp_path / "agent.db"
    cfg = tmp_path / "f.toml"
    cfg.write_text(f'[agent]\ndb = "{agents}"\n[clusters.tbcluster]\ntarget_core_hours = 1\nmethod = "damping"\n')
    other = tmp_path / "mine.db"
    for argv in (["control", "off", "--apply"], ["control", "--apply"], ["gate", "--apply"], ["tick", "--apply"]):
        r = CliRunner().invoke(app, [*argv, "-c", str(cfg), "--db", str(other)])
        assert r.exit_code == 7, (argv, r.output)
        assert r.output.strip() == (f"fscontrol: error: --apply refused: {other} is not the agent's history ({agents}, "
                                    "agent.db in the config); the agent's lock, ledger and originals are there "
                                    "(use the agent's config, or set agent.db)"), argv
        assert not other.exists() and not agents.exists()
    bare = tmp_path / "bare.toml"
    bare.write_text("[clusters.tbcluster]\n")
    env = {k: v for k, v in os.environ.items() if k != "FSCONTROL_DB"}
    r = subprocess.run([sys.executable, "-m", "fscontrol", "control", "off", "--apply", "-c", str(bare), "--db", str(other)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 7 and r.stderr.count("\n") == 1, r.stderr
    assert f"is not the agent's history ({lock.ROOT_HISTORY}, the default: the config names no agent.db)" in r.stderr
    assert not other.exists()


def test_the_agents_own_history_may_act_and_a_dry_run_may_use_any(tmp_path):
    cfg = config.from_dict({"agent": {"db": str(tmp_path / "agent.db")}})
    lock.check_agent_history(cfg, tmp_path / "agent.db")
    lock.check_agent_history(cfg, tmp_path / "." / "agent.db")  # the same file by another spelling
    (tmp_path / "link.db").symlink_to(tmp_path / "agent.db")
    lock.check_agent_history(cfg, tmp_path / "link.db")
    with pytest.raises(UnsafeActionError):
        lock.check_agent_history(cfg, tmp_path / "copy.db")
    # a dry run takes the cluster's lock beside whatever history it was given, and acts on nothing
    with loop._locked(cfg, tmp_path / "copy.db", "tbcluster", apply=False):
        assert Path(tmp_path / "tbcluster.lock").exists()
