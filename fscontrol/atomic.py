"""Replace a file atomically: readers (a user's forecast, node_exporter) see the old file or the
new one, never half of one."""

from __future__ import annotations

import glob
import os
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path


def write_text(path: str | Path, text: str, mode: int = 0o644, gid: int | None = None, uid: int | None = None) -> Path:
    """`text` written atomically (write_chunks)."""
    return write_chunks(path, (text,), mode, gid, uid)


def write_chunks(path: str | Path, chunks: Iterable[str], mode: int = 0o644, gid: int | None = None,
                 uid: int | None = None) -> Path:
    """The text of `chunks` (written as they come: the whole text is never held) written
    atomically: a temporary file in the same folder (so the rename stays on one filesystem), fsync,
    chown to `uid`/`gid` (when given) and chmod (world-readable by default) on the open file,
    os.replace; the temporary file is removed on failure. The temporary file is made by the writer
    (O_EXCL) and everything is set through its descriptor, and os.replace replaces a symlink at
    `path`, never follows it: nothing another user put in the folder is followed (a user's own
    folder, export.privacy.write_own_files)."""
    p = Path(path)
    if not p.parent.is_dir():  # never made here: a typo would otherwise create folders as root
        raise FileNotFoundError(f"folder {p.parent} does not exist")
    _remove_stale_temps(p)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
            if gid is not None or uid is not None:
                os.fchown(fh.fileno(), -1 if uid is None else uid, -1 if gid is None else gid)
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


STALE_S = 3600.0  # a temporary file untouched this long is a killed writer's (publish at 1M jobs writes in ~8 s)


def _remove_stale_temps(p: Path) -> None:
    """Remove the temporary files a killed writer of `p` left (`.NAME.*.tmp`, ~70 MB each at 1M
    jobs; an outside review): only regular files of this process's user, untouched for STALE_S
    (a writer in flight touches its file at each chunk). Never follows a link; what cannot be
    removed is left."""
    now = time.time()
    for q in glob.glob(os.path.join(glob.escape(str(p.parent)), f".{glob.escape(p.name)}.*.tmp")):
        try:
            st = os.lstat(q)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and now - st.st_mtime > STALE_S:
                os.unlink(q)
        except OSError:
            pass
