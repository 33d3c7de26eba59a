"""One external command, its whole process group bounded by the timeout.

`subprocess.run(timeout=...)` kills only the command it started: a child of that command (a site's
wrapper script around sshare, say) keeps running after the timeout, and it holds the agent lock's
file that the command inherited (lock.held_fds), so the next ticks find the lock taken for as long
as that child lives. Here the command starts a session of its own, and on a timeout (or an
interrupt of the agent) its whole process group is killed before the output is read.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_inherited = threading.local()  # the files this thread's commands inherit (the agent lock's: act/lock.py)


def inherited_fds() -> tuple[int, ...]:
    """The file descriptors every command the calling thread runs inherits (pass_fds): the agent
    locks it holds, so a lock outlives a killed tick for as long as its in-flight command runs."""
    return tuple(getattr(_inherited, "fds", ()))


@contextmanager
def inherited(fd: int) -> Iterator[None]:
    """While inside, the commands this thread runs inherit `fd`."""
    fds = _inherited.__dict__.setdefault("fds", [])
    fds.append(fd)
    try:
        yield
    finally:
        fds.remove(fd)


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)  # (the group outlives its leader while a member lives)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: list[str], *, timeout: float, env: dict[str, str] | None = None, stdout=subprocess.PIPE,
        pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess:
    """Run `argv` (never a shell) with stdout to `stdout` (a pipe by default) and stderr to a pipe;
    bytes out. Raises subprocess.TimeoutExpired once the group is dead, FileNotFoundError as Popen."""
    with subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, env=env, pass_fds=pass_fds,
                          start_new_session=True) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(p)
            p.communicate()
            raise
        except BaseException:
            _kill_group(p)
            raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)
