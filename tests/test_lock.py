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
from fscontrol.errors import LockedError, NotFoundError, UnsafeActionError


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
    named = config.from_dict({"agent": {"db": str(tmp_path / "agent.db")}, "clusters": {"tbcluster": {}}})
    with loop._locked(named, tmp_path / "copy.db", "tbcluster", apply=False):
        assert Path(tmp_path / "tbcluster.lock").exists()


# ---------------------------------------------------------------------------- review of #29, item 1
def test_one_cluster_has_one_lock_however_it_is_named(tmp_path):
    """The review of #29 (item 1): with a config naming no cluster, the agent's tick (no -M) took
    default.lock and an operator's `-M alpha` alpha.lock, on the same cluster; with a config
    naming alpha and beta, `control --apply` without -M ran on Slurm's default cluster (alpha or
    beta) under default.lock, beside the agent's alpha.lock and beta.lock."""
    h = tmp_path / "history.db"
    bare = config.from_dict({})
    assert loop.lock_path(bare, h, None) == tmp_path / "default.lock"  # which cluster: unknown before Slurm says
    assert loop.lock_path(bare, h, "alpha") == tmp_path / "alpha.lock"  # (rev29: a named cluster is its own key)
    one = config.from_dict({"clusters": {"alpha": {}}})
    assert loop.lock_path(one, h, None) == loop.lock_path(one, h, "alpha") == tmp_path / "alpha.lock"
    two = config.from_dict({"clusters": {"alpha": {}, "beta": {}}})
    assert loop.lock_path(two, h, "beta") == tmp_path / "beta.lock"
    with pytest.raises(NotFoundError, match="which cluster\\? the config names alpha, beta: pick one with -M"):
        loop.lock_path(two, h, None)
    # the lock is taken: two ticks of one key exclude each other (a section-less config's no -M and
    # -M alpha: the history's recorded key refuses the second, test_an_acting_command_under_another_key_is_refused)
    with loop._locked(bare, h, "alpha"):
        with pytest.raises(LockedError):
            with loop._locked(one, h, None):
                pass


# ---------------------------------------------------------------------------- review rev29, item 2
def test_a_named_cluster_has_one_key_whatever_the_config(tmp_path, monkeypatch):
    """rev29: the agent (config [clusters.alpha], no agent.db) and root's `control off -M alpha
    --apply` without --config shared the history and took alpha.lock and default.lock; -M Alpha
    took Alpha.lock (Slurm lowercases ClusterName)."""
    monkeypatch.setenv("FSCONTROL_DB", str(tmp_path / "history.db"))
    agent = config.from_dict({"clusters": {"alpha": {}}})
    op = config.from_dict({})
    h = config.history_path(agent)
    assert h == config.history_path(op)
    assert loop.lock_path(agent, h, None) == loop.lock_path(op, h, "alpha") == loop.lock_path(op, h, "Alpha") \
        == loop.lock_path(agent, h, "ALPHA") == tmp_path / "alpha.lock"
    assert lock.lock_key(op, "alpha") != lock.DEFAULT_KEY


def test_an_acting_command_under_another_key_is_refused(tmp_path):
    from fscontrol.store import history as store
    from fscontrol.store import ledger as store_ledger

    h = tmp_path / "history.db"
    bare = config.from_dict({})
    db = store.open_db(h)
    try:
        lock.check_lock_key(db, "alpha", 1.0)  # no lock held: nothing checked, nothing recorded
        assert store_ledger.get_state(db, "alpha", lock.KEY_STATE) is None
        with loop._locked(bare, h, None):  # the agent: section-less config, no -M
            lock.check_lock_key(db, "alpha", 1.0)
            lock.check_lock_key(db, "alpha", 2.0)
        assert store_ledger.get_state(db, "alpha", lock.KEY_STATE) == "default.lock"
        with loop._locked(bare, h, "alpha"):  # the operator's -M alpha: another lock, refused in one line
            with pytest.raises(UnsafeActionError, match="take the lock default.lock, and this one took alpha.lock") as e:
                lock.check_lock_key(db, "alpha", 3.0)
            assert "\n" not in str(e.value)
            lock.check_lock_key(db, "alpha", 4.0, reset=True)  # `control on` with the new config
        assert store_ledger.get_state(db, "alpha", lock.KEY_STATE) == "alpha.lock"
        with loop._locked(bare, h, None):
            with pytest.raises(UnsafeActionError):
                lock.check_lock_key(db, "alpha", 5.0)
    finally:
        db.close()


def test_control_without_M_on_a_config_naming_several_clusters_is_refused_before_anything(tmp_path):
    cfg = tmp_path / "f.toml"
    db = tmp_path / "agent" / "history.db"
    cfg.write_text(f'[agent]\ndb = "{db}"\n[clusters.alpha]\n[clusters.beta]\n')
    r = CliRunner().invoke(app, ["control", "--apply", "-c", str(cfg)])
    assert r.exit_code != 0 and "pick one with -M" in r.output, r.output
    assert not (tmp_path / "agent").exists()  # nothing made: no history, no default.lock


# ---------------------------------------------------------------------------- item 2
def test_control_on_switches_only_the_agents_own_history(tmp_path):
    """The review of #29 (item 2): `control on --db OTHER` made OTHER and OTHER's lock, printed
    "the agent acts again", exit 0, and the agent (its acting_off in its own history) stayed off."""
    agents = tmp_path / "agent" / "history.db"
    cfg = tmp_path / "f.toml"
    cfg.write_text(f'[agent]\ndb = "{agents}"\n[clusters.prod]\n')
    agents.parent.mkdir()
    other = tmp_path / "op" / "history.db"
    other.parent.mkdir()
    r = CliRunner().invoke(app, ["control", "on", "-c", str(cfg), "--db", str(other)])
    assert r.exit_code == 7, r.output
    assert r.output.strip() == (f"fscontrol: error: control on refused: {other} is not the agent's history ({agents}, "
                                "agent.db in the config); the agent's lock, ledger and originals are there "
                                "(use the agent's config, or set agent.db)")
    assert list(other.parent.iterdir()) == []
    # on its own history it works
    r = CliRunner().invoke(app, ["control", "on", "-c", str(cfg)])
    assert r.exit_code == 0 and "prod: the agent was not off; nothing changed" in r.output, r.output


def test_control_on_says_whether_the_agent_was_off(tmp_path):
    """The review of #29: `control on` said "the agent acts again from its next tick" when the agent
    had never been off. Now it says which case holds (exit 0 in both), and --json says was_off."""
    import json

    from fscontrol.store import history as store
    from fscontrol.store import ledger

    agents = tmp_path / "agent" / "history.db"
    cfg = tmp_path / "f.toml"
    cfg.write_text(f'[agent]\ndb = "{agents}"\n[clusters.prod]\n')
    agents.parent.mkdir()
    never = CliRunner().invoke(app, ["control", "on", "-c", str(cfg)])
    assert never.exit_code == 0 and never.output.startswith("prod: the agent was not off; nothing changed"), never.output
    db = store.open_db(agents)
    ledger.set_state(db, "prod", "acting_off", {"by": "control off", "at": 100.0}, 100.0)
    db.close()
    again = CliRunner().invoke(app, ["control", "on", "-c", str(cfg), "--json"])
    assert again.exit_code == 0 and json.loads(again.output) == {"cluster": "prod", "acting": True, "was_off": True}
    db = store.open_db(agents)
    assert ledger.get_state(db, "prod", "acting_off") is None
    db.close()
    twice = CliRunner().invoke(app, ["control", "on", "-c", str(cfg)])
    assert twice.exit_code == 0 and "was not off; nothing changed" in twice.output and "acts again" not in twice.output
    db = store.open_db(agents)
    ledger.set_state(db, "prod", "acting_off", {"by": "on_stop", "at": 200.0}, 200.0)
    db.close()
    back = CliRunner().invoke(app, ["control", "on", "-c", str(cfg)])
    assert back.exit_code == 0 and back.output.startswith("prod: the agent acts again from its next tick"), back.output


# ---------------------------------------------------------------------------- item 11
def test_a_symlinked_lock_folder_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "state").symlink_to(real)
    with pytest.raises(UnsafeActionError, match="symbolic link"):
        with agent_lock(tmp_path / "state" / "tbcluster.lock"):
            pass
    assert list(real.iterdir()) == []


@pytest.mark.parametrize("mode", [0o777, 0o757, 0o775])
def test_a_lock_folder_under_a_folder_others_can_write_to_is_refused(tmp_path, mode):
    """The folder itself 0700, its parent writable by others (no sticky bit): they could rename the
    folder away and put their own in its place between our checks."""
    up = tmp_path / "up"
    up.mkdir()
    (up / "state").mkdir(mode=0o700)
    up.chmod(mode)
    with pytest.raises(UnsafeActionError, match=f"{up} on its way is writable by others"):
        with agent_lock(up / "state" / "tbcluster.lock"):
            pass
    assert list((up / "state").iterdir()) == []


def test_a_sticky_parent_like_tmp_is_fine_and_a_parent_of_another_user_is_not(tmp_path):
    up = tmp_path / "up"
    up.mkdir()
    (up / "state").mkdir(mode=0o700)
    up.chmod(0o1777)
    with agent_lock(up / "state" / "tbcluster.lock"):
        pass
    if os.geteuid() != 0:
        pytest.skip("a folder of another uid: needs root to make")
    up.chmod(0o755)
    os.chown(up, 54321, -1)
    with pytest.raises(UnsafeActionError, match="owner uid 54321"):
        with agent_lock(up / "state" / "tbcluster.lock"):
            pass


def test_a_link_on_the_way_is_followed_and_checked(tmp_path):
    """A link on the way to the folder: the folders it leads through are checked as the kernel
    walks them (a link into a folder others can write to is refused, and so is a link of another
    user, who could repoint it); a link of the user's own to a sound folder is fine."""
    good = tmp_path / "good"
    (good / "state").mkdir(parents=True, mode=0o700)
    (tmp_path / "via").symlink_to(good)
    with agent_lock(tmp_path / "via" / "state" / "tbcluster.lock"):
        pass
    bad = tmp_path / "bad"
    (bad / "state").mkdir(parents=True, mode=0o700)
    bad.chmod(0o777)
    (tmp_path / "rel").symlink_to("bad")  # relative, as `ln -s bad rel`
    with pytest.raises(UnsafeActionError, match=f"{bad} on its way is writable by others"):
        with agent_lock(tmp_path / "rel" / "state" / "tbcluster.lock"):
            pass
    if os.geteuid() != 0:
        return
    os.chown(tmp_path / "via", 54321, -1, follow_symlinks=False)
    with pytest.raises(UnsafeActionError, match="the symbolic link .*via on its way belongs to uid 54321"):
        with agent_lock(tmp_path / "via" / "state" / "tbcluster.lock"):
            pass


def test_the_usual_lock_folders_are_still_fine(tmp_path, monkeypatch):
    """~/.local/state/fscontrol (made by the agent, 0755 under the user's home) and a root-owned
    /var/lib/fscontrol-like chain of 0755 folders."""
    home = tmp_path / "home" / "op"
    home.mkdir(parents=True, mode=0o755)
    with agent_lock(home / ".local" / "state" / "fscontrol" / "tbcluster.lock"):
        pass
    var = tmp_path / "var" / "lib"
    var.mkdir(parents=True, mode=0o755)
    with agent_lock(var / "fscontrol" / "tbcluster.lock"):
        pass
