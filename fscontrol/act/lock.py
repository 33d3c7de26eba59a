"""The agent lock: one per cluster, so two ticks on one cluster never overlap (the second fails at
once with a clear message), and the rule for which history may act.

**Where.** `<folder of the agent's history>/<cluster>.lock` (or, with `agent.lock = "/run/x/agent.lock"`,
`/run/x/agent.<cluster>.lock`). The lock is keyed to the cluster, not to a database path: every
command that may act on a cluster (`tick`, `run`, `control`, `control off`, `gate`) takes the same
lock whoever runs it, because `--apply` is allowed only on the agent's own history (below), whose
folder holds the locks.

**Which cluster** (`lock_key`): one cluster has one key however it was named, from the config
alone (no Slurm command before the lock):
* the config names clusters ([clusters.X]): -M X gives X; no -M gives the config's one cluster
  (an acting tick refuses when Slurm's ClusterName is another), and is refused when it names
  several (the command would act on whichever Slurm reaches by default, under no cluster's lock:
  pick one with -M);
* -M X gives X whatever the config (a command run without the agent's config, or with none, takes
  the agent's lock); the name lowercased, as Slurm lowercases ClusterName (-M Alpha is alpha);
* no -M and a config that names none: DEFAULT_KEY (which cluster Slurm reaches is unknown before
  asking it).
A cluster can still be reached under two keys (the agent's section-less config without -M takes
DEFAULT_KEY; an operator's -M alpha takes alpha): the history records the lock acting commands on
each cluster take (check_lock_key, once Slurm named the cluster), and an acting command under
another lock is refused with one line (`control on` with the new config records a changed one).

**How.** The lock file is opened with O_NOFOLLOW (a symlink planted in its place is refused, never
followed) and never truncated: a root tick cannot be made to write into another file. It must be a
regular file owned by the running user with one link. The folder must be a real folder (not a
symlink), belong to the running user or root and not be writable by group or others; and every
folder on the way to it (symlinks followed as the kernel does, each link the running user's or
root's) must belong to the running user or root and be writable by group or others only with the
sticky bit (/tmp), or the lock is refused: anyone who can write
there could swap the file, or the folder, between our checks. The holder's pid is written over the first
bytes (fixed width), for the "pid N holds it" message.

**The agent's own history.** `--apply` (and `agent.apply = true`) acts only on the history the
config's `agent.db` names; a config without `agent.db` means the history root's agent keeps by
default ($FSCONTROL_DB, else /var/lib/fscontrol/history.db) whoever runs the command. Another
history is refused with one line: an operator's `control off --apply` with their own per-user
default history would otherwise take another lock and read an empty ledger and no originals, and
restore nothing while the agent acts on.

The lock outlives a killed tick for as long as a command it started is still running: the
commands a tick runs through source.LiveSlurm.run inherit the lock's file (held_fds), and a
flock is released only when every copy of it is closed. Without that, `kill -9` of a tick left
its in-flight `scontrol` running, and the next tick could undo a hold that then landed after it
(tests/test_integration_faults.py)."""

from __future__ import annotations

import fcntl
import os
import re
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fscontrol.errors import LockedError, NotFoundError, StoreError, UnsafeActionError
from fscontrol.slurm import command

ROOT_HISTORY = Path("/var/lib/fscontrol/history.db")  # root's default history (store.default_db_path)
DEFAULT_KEY = "default"  # the lock of every cluster a config that names none is used on (lock_key)
_PID_WIDTH = 11


def held_fds() -> tuple[int, ...]:
    """The file descriptors of the agent locks the calling thread holds: a command it runs keeps them."""
    return command.inherited_fds()


def cluster_key(name: str | None) -> str:
    """The lock's key: the cluster's name lowercased (Slurm converts ClusterName to lower case, so
    -M Alpha is cluster alpha), or DEFAULT_KEY."""
    if not name:
        return DEFAULT_KEY
    return re.sub(r"[^a-z0-9_.-]", "_", name.lower()).lstrip(".") or DEFAULT_KEY


def lock_key(cfg, cluster: str | None) -> str:
    """The key of the cluster a command names (-M, or a recorded sample's cluster; None: the one
    Slurm reaches by default), from the config alone: the module's docstring says why. A named
    cluster is its own key whatever the config (never DEFAULT_KEY). NotFoundError when the config
    names several clusters and the command none."""
    if cluster:
        return cluster_key(cluster)
    named = sorted(getattr(cfg, "clusters", None) or ())
    if not named:
        return DEFAULT_KEY
    if len(named) == 1:
        return cluster_key(named[0])
    raise NotFoundError(f"which cluster? the config names {', '.join(named)}: pick one with -M (without it the "
                        "command would reach Slurm's default cluster under none of their locks)")


def cluster_lock_path(cfg, db_path: Path | str, cluster: str | None) -> Path:
    """The lock of one cluster (lock_key): beside the history, or named after `agent.lock` when it is set."""
    key, configured = lock_key(cfg, cluster), getattr(cfg, "lock", None)
    if configured:
        p = Path(configured)
        return p.with_name(f"{p.stem}.{key}{p.suffix or '.lock'}")
    return Path(db_path).parent / f"{key}.lock"


def agent_history(cfg) -> Path:
    """The agent's own history: the config's agent.db, else root's default history."""
    if getattr(cfg, "db", None):
        return Path(cfg.db)
    return Path(os.environ.get("FSCONTROL_DB") or ROOT_HISTORY)


def check_agent_history(cfg, db_path: Path | str, doing: str = "--apply") -> None:
    """`--apply` (and `control on`: `doing`) only on the agent's own history (the module's docstring
    says why); UnsafeActionError in one line otherwise, before anything is read or written."""
    own = agent_history(cfg)
    if os.path.realpath(db_path) != os.path.realpath(own):
        where = "agent.db in the config" if getattr(cfg, "db", None) else "the default: the config names no agent.db"
        raise UnsafeActionError(f"{doing} refused: {db_path} is not the agent's history ({own}, {where}); "
                                "the agent's lock, ledger and originals are there (use the agent's config, or set agent.db)")
    try:
        st = os.stat(db_path)
    except FileNotFoundError:
        return  # the agent's first tick makes it
    if st.st_uid != os.geteuid() and os.geteuid() != 0:
        raise UnsafeActionError(f"{doing} refused: the agent's history {db_path} belongs to uid {st.st_uid}, "
                                f"not to you (uid {os.geteuid()}): run it as the agent's user")


def _check_folder(folder: Path) -> None:
    """The lock's folder: a real folder (lstat: a symlinked one is refused), the running user's or
    root's, not writable by group or others; and the way to it trusted (_check_way)."""
    try:
        st = os.lstat(folder)
    except OSError as e:
        raise StoreError(f"cannot use the lock folder {folder}: {e}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeActionError(f"refusing the lock folder {folder}: it is a symbolic link (name the real folder)")
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"the lock folder {folder} is not a folder")
    if st.st_uid not in (os.geteuid(), 0) or st.st_mode & 0o022:
        raise UnsafeActionError(f"refusing the lock folder {folder}: others can write to it (owner uid {st.st_uid}, "
                                f"mode {stat.S_IMODE(st.st_mode):04o}); give it to the agent's user, mode 0755 or 0700")
    _check_way(folder)


def _check_way(folder: Path) -> None:
    """Every folder the path to `folder` is looked up in, symlinks followed as the kernel does:
    the running user's or root's, and writable by group or others only with the sticky bit (/tmp);
    every symlink on the way the running user's or root's. Whoever could rename an entry on the way
    (or repoint a link) could swap the lock's folder between our checks."""
    me = os.geteuid()
    todo = list((folder if folder.is_absolute() else Path.cwd() / folder).parts[1:-1])  # `folder` itself: _check_folder
    cur, hops = Path("/"), 0
    while True:
        st = os.stat(cur)  # a real folder: reached through checked lookups only
        if st.st_uid not in (me, 0) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            raise UnsafeActionError(f"refusing the lock folder {folder}: others can move it, {cur} on its way is writable "
                                    f"by others (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}); keep the "
                                    "agent's history in a folder whose every parent is root's or the agent user's, "
                                    "mode 0755 (or sticky, as /tmp)")
        while todo:
            name = todo.pop(0)
            if name == "..":
                cur = cur.parent  # (a folder already walked through)
                continue
            nxt = cur / name
            try:
                lst = os.lstat(nxt)
            except OSError as e:
                raise StoreError(f"cannot use the lock folder {folder}: {nxt}: {e}") from None
            if not stat.S_ISLNK(lst.st_mode):
                cur = nxt
                break
            hops += 1
            if lst.st_uid not in (me, 0) or hops > 40:
                raise UnsafeActionError(f"refusing the lock folder {folder}: the symbolic link {nxt} on its way belongs "
                                        f"to uid {lst.st_uid} (or the links loop): name the real folder")
            target = Path(os.readlink(nxt))
            if target.is_absolute():
                cur, todo = Path("/"), list(target.parts[1:]) + todo
                break
            todo = list(target.parts) + todo
        else:
            return


def _open_lock(path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if os.path.islink(path):
            raise UnsafeActionError(f"refusing the agent lock {path}: it is a symbolic link") from None
        raise StoreError(f"cannot open the agent lock {path}: {e}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
        os.close(fd)
        raise UnsafeActionError(f"refusing the agent lock {path}: not a regular file of uid {os.geteuid()} with one link "
                                f"(uid {st.st_uid}, {st.st_nlink} link(s)); remove it")
    return fd


KEY_STATE = "lock_key"  # agent_state: the lock key acting commands on the cluster take (check_lock_key)
_held = threading.local()


def held_key() -> str | None:
    """The lock file this thread holds (its name: `<key>.lock`, or `agent.<key>.lock`), else None."""
    paths = getattr(_held, "paths", None)
    return paths[-1] if paths else None


def check_lock_key(db, cluster: str, at: float, *, reset: bool = False) -> None:
    """An acting command on `cluster`, under its lock (held_key): the history records which lock
    acting commands on the cluster take (the first one's, or `reset`: `control on`'s); a command
    under another lock is refused with one line (UnsafeActionError): two locks on one cluster would
    let it act beside the agent's tick. Nothing when no lock is held (a caller of its own)."""
    from fscontrol.store import history as store
    from fscontrol.store import ledger as store_ledger

    mine = held_key()
    if mine is None:
        return
    known = store_ledger.get_state(db, cluster, KEY_STATE)
    if known is not None and known != mine and not reset:
        raise UnsafeActionError(f"refused: acting commands on cluster {cluster} take the lock {known}, and this one took "
                                f"{mine} (another config or -M than the agent's): run it as the agent runs, or, if the "
                                f"agent's config changed for good, `fscontrol control on -M {cluster}` with the new one")
    if known != mine:
        with store.transaction(db):
            store_ledger.set_state(db, cluster, KEY_STATE, mine, at)


@contextmanager
def agent_lock(path: Path | str) -> Iterator[None]:
    path = Path(path)
    try:
        path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot open the agent lock {path}: {e}") from None
    _check_folder(path.parent)
    fd = _open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, _PID_WIDTH, 0).decode(errors="replace").strip() or "?"
            raise LockedError(f"another fscontrol tick is running (pid {holder} holds {path})") from None
        os.pwrite(fd, f"{os.getpid():<{_PID_WIDTH - 1}}\n".encode(), 0)  # over the first bytes: never truncated
        paths = _held.__dict__.setdefault("paths", [])
        paths.append(path.name)
        try:
            with command.inherited(fd):  # the commands this tick runs keep the lock's file open
                yield
        finally:
            paths.remove(path.name)
    finally:
        os.close(fd)
