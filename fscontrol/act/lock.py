"""A file lock so two ticks never overlap: the second one fails at once with a clear message.

The lock outlives a killed tick for as long as a command it started is still running: the
commands a tick runs through source.LiveSlurm.run inherit the lock's file (held_fds), and a
flock is released only when every copy of it is closed. Without that, `kill -9` of a tick left
its in-flight `scontrol` running, and the next tick could undo a hold that then landed after it
(tests/test_integration_faults.py)."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fscontrol.errors import LockedError, StoreError

_held = threading.local()  # the lock files this thread holds (the loop runs its jobs in threads)


def held_fds() -> tuple[int, ...]:
    """The file descriptors of the agent locks the calling thread holds: a command it runs keeps them."""
    return tuple(getattr(_held, "fds", ()))


@contextmanager
def agent_lock(path: Path | str) -> Iterator[None]:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")
    except OSError as e:
        raise StoreError(f"cannot open the agent lock {path}: {e}") from None
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            raise LockedError(f"another fscontrol tick is running (pid {holder} holds {path})") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        fds = _held.__dict__.setdefault("fds", [])
        fds.append(fh.fileno())
        try:
            yield
        finally:
            fds.remove(fh.fileno())
    finally:
        fh.close()
