"""A file lock so two ticks never overlap: the second one fails at once with a clear message."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import LockedError, StoreError


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
        yield
    finally:
        fh.close()
