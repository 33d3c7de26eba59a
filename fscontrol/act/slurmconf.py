"""The one writer of slurm.conf: persist (`persist = true` writes d) and `control off` (puts the
admin's d line back) both go through `edit_damping`. It changes one line, FairShareDampeningFactor,
and nothing else.

How it writes, and why:
- **Through a symlink.** slurm.conf is often a link into a tree that config management and the
  nodes share; the edit goes to the link's target (os.path.realpath) and the link stays a link.
- **Include is refused**, not followed. Slurm reads an included file where its Include line stands
  and the last FairShareDampeningFactor it reads wins ("specified more than once, latest value
  used"), so the value in force depends on every included file and their order; editing those
  files (often shared or generated) is not the agent's to do. The admin sets d there, or keeps
  persist = false.
- **A unique temporary file** in the same folder (tempfile.mkstemp: O_CREAT|O_EXCL, a random name),
  fsync'ed, given the mode and owner of the file it replaces, then renamed over the target: a
  reader sees the old file or the new one, and two writers never share a temporary file.
- **A change underneath is refused.** The bytes, size, inode and mtime read before the edit are
  compared with what is there just before the rename; if anything moved (an admin's editor,
  config management), nothing is written, in one line. (What lands in the microseconds between
  that check and the rename is not seen: POSIX has no compare-and-rename.)
- **Line endings and extended attributes kept**: a CRLF file gets a CRLF line; the file's xattrs
  (ACLs, SELinux label, ...) are copied to the temporary file before the rename (none where the
  file system has none; one that cannot be copied refuses the edit).
- **Backups.** Before each edit the file is copied to `<target>.fscontrol-<stamp>`; the newest
  MAX_BACKUPS are kept. The file as it was before the agent first edited it is kept for good as
  `<target>.fscontrol-original` (written once, never rotated).
- **No reconfigure unless asked.** The runtime d is set by `scontrol fsdampeningfactor`; the file is
  for slurmctld's next start. `scontrol reconfigure` follows a write only when the caller asks
  (config persist_reconfigure): from Slurm 23.11 it restarts slurmctld.
- **Rollback.** When `scontrol reconfigure` (asked for) fails, the old bytes go back the same way and
  slurmctld is reconfigured again; the error says so. One that TIMES OUT is not rolled back: it may
  have acted (from 23.11 a reconfigure is a restart), so the new file stays, nothing is reconfigured
  a second time, and the SlurmTimeoutError (the executor's "unknown") names what to check and the
  backup to copy back by hand.
- **A restore touches only the agent's line** (`expect`): the last d line, the one in force, must
  say what the agent wrote; only that line is put back or removed. A d line the admin added above
  it stays; one added below it (so in force) is "changed underneath": refused, in one line.
"""

from __future__ import annotations

import errno
import glob
import os
import re
import stat
import tempfile
from collections.abc import Callable

from fscontrol.act.control import D_MAX
from fscontrol.errors import SlurmCommandError, SlurmTimeoutError, UnsafeActionError

Runner = Callable[[tuple[str, ...]], str]

MAX_BACKUPS = 5  # <target>.fscontrol-<stamp> files kept; older ones of ours are removed
ORIGINAL_SUFFIX = ".fscontrol-original"  # the pre-agent slurm.conf, kept apart from the rotation
KEY = "fairsharedampeningfactor"
ONLY_IF = "only if FairShareDampeningFactor="  # a restore's guard in its argv: the agent's own line
_INCLUDE = re.compile(rb"^\s*include\s", re.IGNORECASE | re.MULTILINE)


# ---------------------------------------------------------------------------- the pure part
def _key(line: str) -> str:
    return line.split("#", 1)[0].strip().partition("=")[0].strip().lower()


def has_include(text: str) -> bool:
    return _INCLUDE.search(text.encode() if isinstance(text, str) else text) is not None


def conf_damping_value(text: str) -> str | None:
    """The value of slurm.conf's FairShareDampeningFactor line (the last one), or None."""
    value = None
    for line in text.splitlines():
        key, _, v = line.split("#", 1)[0].strip().partition("=")
        if key.strip().lower() == KEY:
            value = v.strip()
    return value


def _add_full_path(file_name: str, including: str) -> str:
    """Slurm's `_add_full_path` (parse_config.c): a relative Include name beside the including
    file's path as given (no realpath): everything up to its last '/', then "/" + file_name."""
    head = including.rsplit("/", 1)[0] if "/" in including else including
    return head + "/" + file_name


def read_damping(path: str, cluster: str | None = None) -> tuple[str | None, str | None]:
    """FairShareDampeningFactor where slurmctld would read it from `path` at its next start: the
    last line read wins, an `Include FILE` read where it stands (%c the ClusterName, as
    slurm.conf(5) "INCLUDE MODIFIERS" says; a relative FILE as below). Returns (value, the
    file it comes from), (None, None) when no file has the line (Slurm's default, 1). Raises
    UnsafeActionError, in one line, when the d is unknown: a file that cannot be read, a name
    with a wildcard (not followed), or Includes nested more than 10 deep.

    A relative FILE is resolved as Slurm does (src/common/parse_config.c, `_parse_include_directive`
    -> `_add_full_path(file_name, slurm_conf_path)`): the including file's path AS GIVEN (the
    name slurmctld was started with, or the nested file's own path as Slurm built it), cut at its
    last '/', then "/" FILE. Symlinks are not followed for this: a slurm.conf that is a link into
    another folder includes from the link's folder, not its target's. (With no '/' in the path
    Slurm keeps the whole name, "slurm.conf/FILE"; so does this.) %c is ClusterName in lower
    case (`_parse_for_format`)."""
    found: list[tuple[str, str]] = []

    def walk(name: str, depth: int) -> None:
        if depth > 10:
            raise UnsafeActionError(f"{path}: Include nested more than 10 deep: slurm.conf's d is unknown")
        try:
            with open(name, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError as e:
            raise UnsafeActionError(f"cannot read {name} (Included by {path}): {e.strerror or e}; slurm.conf's d "
                                    "is unknown") from None
        for line in text.splitlines():
            body = line.split("#", 1)[0].strip()
            head, rest = (body.split(None, 1) + ["", ""])[:2]
            if head.lower() == "include" and rest.strip():
                inc = rest.split()[0].replace("%c", cluster.lower() if cluster else "%c")
                if "%c" in inc or any(c in inc for c in "*?["):
                    raise UnsafeActionError(f"{path}: Include {rest.strip()} (a modifier or wildcard fscontrol does not "
                                            "follow): slurm.conf's d is unknown")
                walk(inc if inc.startswith("/") else _add_full_path(inc, name), depth + 1)
            elif _key(line) == KEY:
                found.append((body.partition("=")[2].strip(), name))

    walk(path, 0)
    return found[-1] if found else (None, None)


def rewrite_damping(conf_text: str, d: int) -> str:
    """slurm.conf with FairShareDampeningFactor=d (the line replaced, or added). Pure.

    Only a validated integer is ever written: Slurm's clients die on a non-integer, and
    `scontrol reconfigure` with one killed slurmctld on the testbed (losing usage since its
    last state save)."""
    if not isinstance(d, int) or isinstance(d, bool) or not 1 <= d <= D_MAX:
        raise UnsafeActionError(f"refusing to write FairShareDampeningFactor={d!r}: must be an integer in 1..{D_MAX}")
    nl = _newline(conf_text)
    out, done = [], False
    for line in conf_text.splitlines(keepends=True):
        if _key(line) == KEY:
            if not done:
                out.append(f"FairShareDampeningFactor={d}{nl}")
                done = True
            continue  # a duplicate line would be ambiguous: keep one
        out.append(line)
    if not done:
        if out and not out[-1].endswith("\n"):
            out[-1] += nl
        out.append(f"FairShareDampeningFactor={d}{nl}")
    return "".join(out)


def _newline(conf_text: str) -> str:
    """The file's line ending (its first line's): a CRLF file gets CRLF lines back, not a mix."""
    first = conf_text.find("\n")
    return "\r\n" if first > 0 and conf_text[first - 1] == "\r" else "\n"


def remove_damping(conf_text: str) -> str:
    """slurm.conf without any FairShareDampeningFactor line. Pure."""
    return "".join(ln for ln in conf_text.splitlines(keepends=True) if _key(ln) != KEY)


def _checked(value: int | str) -> int:
    if isinstance(value, str):
        if not value.strip().isdigit():
            raise UnsafeActionError(f"refusing to write FairShareDampeningFactor={value!r}: must be an integer in 1..{D_MAX}")
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= D_MAX:
        raise UnsafeActionError(f"refusing to write FairShareDampeningFactor={value!r}: must be an integer in 1..{D_MAX}")
    return value


def set_damping_line(conf_text: str, value: int | str | None) -> str:
    """The d line set to `value`, or removed (None). Pure."""
    if value is None:
        return remove_damping(conf_text)
    return rewrite_damping(conf_text, _checked(value))


def set_last_damping_line(conf_text: str, value: int | str | None) -> str:
    """Only the LAST d line (the one Slurm uses: the agent's, when a restore checked it) set to
    `value`, or removed (None); every other line, another d line included, stays as it is. Pure."""
    lines = conf_text.splitlines(keepends=True)
    last = max((i for i, ln in enumerate(lines) if _key(ln) == KEY), default=None)
    if last is None:
        return conf_text if value is None else rewrite_damping(conf_text, _checked(value))
    if value is None:
        del lines[last]
    else:
        end = lines[last][len(lines[last].rstrip("\r\n")):]
        lines[last] = f"FairShareDampeningFactor={_checked(value)}" + (end or _newline(conf_text))
    return "".join(lines)


# ---------------------------------------------------------------------------- the file
class _Seen:
    """The file as read before the edit: its target, bytes and identity."""

    __slots__ = ("target", "data", "st")

    def __init__(self, target: str, data: bytes, st: os.stat_result) -> None:
        self.target, self.data, self.st = target, data, st

    def same_as_now(self, path: str) -> bool:
        if os.path.realpath(path) != self.target:  # the link was pointed elsewhere meanwhile
            return False
        try:
            with open(self.target, "rb") as fh:
                st = os.fstat(fh.fileno())
                data = fh.read()
        except OSError:
            return False
        return (data == self.data and st.st_ino == self.st.st_ino and st.st_size == self.st.st_size
                and st.st_mtime_ns == self.st.st_mtime_ns)


def _read(path: str) -> _Seen:
    target = os.path.realpath(path)
    with open(target, "rb") as fh:
        st = os.fstat(fh.fileno())
        data = fh.read()
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeActionError(f"{path} is not a regular file: fscontrol does not edit it")
    return _Seen(target, data, st)


def _write_new(path: str, data: bytes, st: os.stat_result) -> None:
    """A new file at `path` (O_EXCL: never over an existing one), with the mode and owner of `st`."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        _fill(fd, data, st)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)


def _fill(fd: int, data: bytes, st: os.stat_result) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)
    os.fchmod(fd, st.st_mode & 0o7777)
    if os.geteuid() == 0:
        os.fchown(fd, st.st_uid, st.st_gid)


def _copy_xattrs(src: str, dst: str) -> None:
    """The extended attributes of `src` (an ACL, a label, config management's marks) onto `dst`,
    so the renamed file keeps them; none where the file system has none (ENOTSUP). One that
    cannot be copied refuses the edit rather than drop it."""
    try:
        names = os.listxattr(src)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return
        raise
    for name in names:
        try:
            os.setxattr(dst, name, os.getxattr(src, name))
        except OSError as e:
            if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
                continue
            raise UnsafeActionError(f"{src}: cannot keep its extended attribute {name} ({e.strerror or e}): "
                                    "not written") from None


def _replace(seen: _Seen, path: str, data: bytes) -> None:
    """`data` over seen.target: a unique temporary file in the same folder, the mode and owner
    kept, renamed over it only while the file is still what was read. Nothing is left behind
    on a failure."""
    folder, name = os.path.split(seen.target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.fscontrol-", suffix=".tmp", dir=folder)
    try:
        try:
            _fill(fd, data, seen.st)
        finally:
            os.close(fd)
        _copy_xattrs(seen.target, tmp)
        if not seen.same_as_now(path):
            raise UnsafeActionError(f"{path} changed while fscontrol was editing it: not written (theirs stands; "
                                    "the next tick tries again)")
        os.replace(tmp, seen.target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)  # the rename itself survives a crash
    finally:
        os.close(dfd)


def _backup_path(target: str, stamp: str) -> str:
    base = f"{target}.fscontrol-{stamp}"
    path, n = base, 1
    while os.path.lexists(path):  # two edits within one stamp keep both
        path, n = f"{base}.{n}", n + 1
    return path


def backups(path: str) -> list[str]:
    """The rotating backups of slurm.conf's target, oldest first (the original is not one)."""
    target = os.path.realpath(path)
    return sorted(glob.glob(glob.escape(target) + ".fscontrol-[0-9]*"))


def original_path(path: str) -> str:
    return os.path.realpath(path) + ORIGINAL_SUFFIX


def refused_restore(path: str, now: str | None, mine: str) -> str:
    """The one line of a restore `control off` refuses: the d line is no longer the agent's."""
    has = "has no FairShareDampeningFactor line" if now is None else f"says FairShareDampeningFactor={now}"
    return (f"{path} {has}, not the {mine} the agent wrote: it changed since the agent's edit, so fscontrol leaves "
            f"it as it is (set the line yourself if you want it otherwise; the file before the agent's first edit "
            f"is {os.path.realpath(path)}{ORIGINAL_SUFFIX})")


def persist_due(conf_value: str | None, d: int, *, tolerance: float, last_write_at: float | None,
                interval_s: float, now: float, urgent_factor: float | None = None,
                where: str = "slurm.conf's") -> tuple[bool, str]:
    """Whether persist writes d into slurm.conf now, and why (one line). Pure.

    The runtime d follows every pass through `scontrol fsdampeningfactor`; slurm.conf matters
    only to a restart (or a reconfigure), which starts on its line (1 without one). So it is
    written only when a restart would start on a d more than `tolerance` (relative: the halving
    error that start would have) off the d in force, and at most once every `interval_s`.

    `urgent_factor` (None: never): a slurm.conf d that far off (d_conf / d or d / d_conf at least
    that) is written inside the interval too. A cold start's first d (max_damping, 1000) otherwise
    stays in slurm.conf for the whole interval while the runtime d falls to ~20, and a restart
    in that hour starts on a 50x halving (scripts/busy.py, seed 12: +4,959% on the restart's pass).
    The caller gives it only where a write restarts nothing (persist_reconfigure = false): a
    halving of d is then one file write, about log2(max_damping) of them in a cold start."""
    try:
        d_conf = int(conf_value) if conf_value is not None else 1
    except ValueError:
        d_conf = None
    if d_conf == d:
        return False, f"slurm.conf already says FairShareDampeningFactor={d}"
    off = None if d_conf is None else d_conf / d - 1
    if off is not None and abs(off) <= tolerance:
        return False, (f"a restart would start on {where} d = {d_conf}, {off:+.1%} off the d in force {d}: "
                       f"within persist_tolerance {tolerance:.0%}, not written")
    start = "a restart would start on " + (f"{where} d = {d_conf} ({off:+.1%} off {d})" if off is not None
                                           else f"{where} unreadable d = {conf_value!r}")
    far = d_conf is not None and d_conf > 0 and urgent_factor is not None and max(d_conf / d, d / d_conf) >= urgent_factor
    if d_conf is not None and urgent_factor is not None and d_conf <= 0:
        far = True
    if far and last_write_at is not None and now - last_write_at < interval_s:
        return True, f"{start}: {urgent_factor:g}x off or more, written inside persist_interval"
    if last_write_at is not None and now - last_write_at < interval_s:
        return False, (f"{start}, but slurm.conf was written {now - last_write_at:.0f} s ago: the next write after "
                       f"persist_interval ({interval_s:g} s)")
    return True, start


def edit_damping(path: str, value: int | str | None, run: Runner, stamp: str, *, reconfigure: bool = True,
                 expect: str | None = None) -> str:
    """slurm.conf's FairShareDampeningFactor line set to `value` (None: removed), then, when
    `reconfigure`, `scontrol reconfigure` (rolled back if that fails). Returns what was done, in
    one line (with the backup's path). A file that already says so is left alone, and nothing is
    reconfigured. Without `reconfigure` slurmctld reads the file at its next start (the runtime d
    is set apart, by `scontrol fsdampeningfactor`): from Slurm 23.11 a reconfigure restarts
    slurmctld, and a start runs a decay pass at once.

    `expect` (a restore by `control off`): the value the agent itself wrote; a file whose d line
    says anything else now (the admin or config management changed it since) is not touched, and
    only that (last) line is set or removed: another d line above it (the admin's) stays.

    A reconfigure that times out raises SlurmTimeoutError with the new file left in place (it may
    have acted: no rollback, no second reconfigure); one that fails is rolled back."""
    seen = _read(path)
    if _INCLUDE.search(seen.data):
        raise UnsafeActionError(f"{path} uses Include: fscontrol does not edit a split slurm.conf (an included file "
                                "may set FairShareDampeningFactor too); set it there yourself, or keep persist = false")
    try:
        text = seen.data.decode()
    except UnicodeDecodeError as e:
        raise UnsafeActionError(f"{path} is not UTF-8 text (byte {e.start}): fscontrol does not edit it") from None
    if expect is not None and conf_damping_value(text) != expect:
        raise UnsafeActionError(refused_restore(path, conf_damping_value(text), expect))
    what = "removed" if value is None else f"= {value}"
    new = (set_damping_line(text, value) if expect is None else set_last_damping_line(text, value)).encode()
    if new == seen.data:
        return f"{path}: FairShareDampeningFactor already {what}; not written"
    made: list[str] = []
    try:
        original = seen.target + ORIGINAL_SUFFIX
        if not os.path.lexists(original):  # the pre-agent file, for good (kept even if this edit fails:
            try:                            # it is what the file was before the agent wrote it)
                _write_new(original, seen.data, seen.st)
            except FileExistsError:  # another writer made it just now, from the same file
                pass
        backup = _backup_path(seen.target, stamp)
        _write_new(backup, seen.data, seen.st)
        made.append(backup)
        _replace(seen, path, new)
    except BaseException:
        for p in made:  # nothing edited: nothing of ours left behind either
            try:
                os.unlink(p)
            except OSError:
                pass
        raise
    for old in backups(path)[:-MAX_BACKUPS]:
        try:
            os.unlink(old)
        except OSError:
            pass
    if not reconfigure:
        return f"{path}: FairShareDampeningFactor {what}; backup {backup}; not reconfigured (read at slurmctld's next start)"
    try:
        run(("scontrol", "reconfigure"))
    except SlurmTimeoutError as e:  # it may have acted (23.11+: a restart): no rollback, no second reconfigure
        raise SlurmTimeoutError(
            f"scontrol reconfigure timed out after setting FairShareDampeningFactor {what} in {path} ({e}): it may or "
            f"may not have acted, so the new file stays and slurmctld is not reconfigured again; check "
            f"`scontrol show config | grep -i dampening` once slurmctld answers; the file before this edit is "
            f"{backup} (copy it back by hand to undo)") from None
    except SlurmCommandError as e:
        head = f"scontrol reconfigure failed after setting FairShareDampeningFactor {what} in {path} ({e})"
        try:
            now = _read(path)
            if now.data == new:
                _replace(now, path, seen.data)
                back = "the old file is back"
            else:  # someone edited it after us: theirs stands
                back = "the file changed meanwhile and was left as it is"
        except (UnsafeActionError, OSError) as e2:
            raise SlurmCommandError(f"{head}; putting the old file back failed too: {e2}") from None
        try:
            run(("scontrol", "reconfigure"))
        except SlurmCommandError as e3:
            raise SlurmCommandError(f"{head}; {back}, and reconfiguring on it failed too: {e3}") from None
        raise SlurmCommandError(f"{head}; {back}, slurmctld reconfigured on it") from None
    return f"{path}: FairShareDampeningFactor {what}; backup {backup}; reconfigured"
