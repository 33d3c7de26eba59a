"""act/slurmconf.py, the one writer of slurm.conf (persist and `control off` both use it), on real
files: a symlinked slurm.conf, an Included one, one edited while the agent edits it, two agents
editing at once, a reconfigure that fails (a real `scontrol` on PATH that exits 1, run through
LiveSlurm as the agent runs it), a full file system. The success path against a real slurmctld is
in tests/test_integration_control.py (persist) and tests/test_integration_off.py (restore)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fscontrol.act import slurmconf
from fscontrol.errors import SlurmCommandError, UnsafeActionError
from fscontrol.slurm.source import LiveSlurm

CONF = "ClusterName=x\nFairShareDampeningFactor=1\n"


def ok(argv):
    assert argv == ("scontrol", "reconfigure")
    return ""


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp") or "fscontrol-tmp" in p.name)


def test_a_symlinked_slurm_conf_is_edited_through_the_link(tmp_path):
    """The link stays a link; its target (the copy config management and the nodes share) gets the
    edit, and the backups sit beside the target. (ef8da55's persist replaced the link with a file.)"""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "slurm.conf").write_text(CONF)
    etc = tmp_path / "etc"
    etc.mkdir()
    link = etc / "slurm.conf"
    link.symlink_to("../shared/slurm.conf")
    out = slurmconf.edit_damping(str(link), 7, ok, "20261126T000000")
    assert link.is_symlink() and os.readlink(link) == "../shared/slurm.conf"
    assert (shared / "slurm.conf").read_text() == "ClusterName=x\nFairShareDampeningFactor=7\n"
    assert [p.name for p in etc.iterdir()] == ["slurm.conf"]
    assert (shared / "slurm.conf.fscontrol-original").read_text() == CONF
    assert slurmconf.backups(str(link)) == [str(shared / "slurm.conf.fscontrol-20261126T000000")]
    assert "backup" in out and "reconfigured" in out
    # and back (what control off does): through the link again
    slurmconf.edit_damping(str(link), "1", ok, "20261126T000001")
    assert link.is_symlink() and (shared / "slurm.conf").read_text() == CONF


def test_an_included_slurm_conf_is_refused_whole(tmp_path):
    """Include is refused (not followed): the last FairShareDampeningFactor Slurm reads wins, and
    an included file may set one. Nothing is written, no backup, no reconfigure."""
    conf = tmp_path / "slurm.conf"
    text = "ClusterName=x\nFairShareDampeningFactor=1\n  include /etc/slurm/prio.conf\n"
    conf.write_text(text)
    calls = []
    for value in (5, None, "1"):  # persist, and both kinds of restore
        with pytest.raises(UnsafeActionError, match="Include"):
            slurmconf.edit_damping(str(conf), value, calls.append, "20261126T000000")
    assert conf.read_text() == text and calls == [] and [p.name for p in tmp_path.iterdir()] == ["slurm.conf"]


def test_a_change_underneath_is_refused_and_theirs_stands(tmp_path, monkeypatch):
    """An admin's editor saves slurm.conf while the agent writes its temporary file: the agent
    sees it before the rename and writes nothing."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    theirs = "ClusterName=x\nFairShareDampeningFactor=1\nSchedulerType=sched/backfill\n"
    real_mkstemp = slurmconf.tempfile.mkstemp

    def mkstemp_then_admin_saves(**kw):
        made = real_mkstemp(**kw)
        conf.write_text(theirs)
        return made

    monkeypatch.setattr(slurmconf.tempfile, "mkstemp", mkstemp_then_admin_saves)
    calls = []
    with pytest.raises(UnsafeActionError, match="changed while fscontrol was editing it"):
        slurmconf.edit_damping(str(conf), 9, calls.append, "20261126T000000")
    assert conf.read_text() == theirs and calls == []
    assert leftovers(tmp_path) == [] and slurmconf.backups(str(conf)) == []


def test_a_link_repointed_underneath_is_refused(tmp_path, monkeypatch):
    a, b = tmp_path / "a.conf", tmp_path / "b.conf"
    a.write_text(CONF)
    b.write_text(CONF)
    link = tmp_path / "slurm.conf"
    link.symlink_to(a.name)
    real_mkstemp = slurmconf.tempfile.mkstemp

    def repoint(**kw):
        made = real_mkstemp(**kw)
        link.unlink()
        link.symlink_to(b.name)
        return made

    monkeypatch.setattr(slurmconf.tempfile, "mkstemp", repoint)
    with pytest.raises(UnsafeActionError, match="changed while"):
        slurmconf.edit_damping(str(link), 9, ok, "20261126T000000")
    assert a.read_text() == CONF and b.read_text() == CONF


_RACER = """
import sys
from fscontrol.act import slurmconf
from fscontrol.errors import UnsafeActionError
path, tag = sys.argv[1], int(sys.argv[2])
changed = 0
for k in range(150):
    try:
        slurmconf.edit_damping(path, 2 + (tag * 1000 + k) % 60000, lambda argv: "", f"{tag}{k:04d}")
    except UnsafeActionError as e:
        assert "changed while" in str(e), e
        changed += 1
print(changed)
"""


def test_two_writers_at_once_never_share_a_temporary_file(tmp_path):
    """Two processes edit the same slurm.conf 150 times each, at once. Every edit either lands
    whole or is refused as a change underneath; none fails on the other's temporary file (ef8da55:
    one fixed name, opened with O_TRUNC), the file always ends as one valid d line, and no
    temporary file is left."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, str(conf), str(t)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for t in (1, 2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    text = conf.read_text()
    assert text.startswith("ClusterName=x\n") and text.count("FairShareDampeningFactor=") == 1
    assert leftovers(tmp_path) == []
    # at most MAX_BACKUPS: each writer prunes to it; a writer pruning while the other's refused edit
    # takes its backup back can leave one fewer (seen once in 5 runs; one writer at a time keeps 5)
    assert slurmconf.MAX_BACKUPS - 1 <= len(slurmconf.backups(str(conf))) <= slurmconf.MAX_BACKUPS
    assert Path(slurmconf.original_path(str(conf))).read_text() == CONF
    print(f"refused as changed underneath: {[int(o) for o, _ in outs]} of 150 each")


def _failing_scontrol(tmp_path: Path) -> dict:
    """A real `scontrol` earlier on PATH that fails as slurmctld's refusal does (exit 1)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "scontrol"
    fake.write_text("#!/bin/sh\necho \"$@\" >> \"$(dirname \"$0\")/calls\"\n"
                    "echo 'slurm_reconfigure error: Unable to contact slurm controller' >&2\nexit 1\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_a_failed_reconfigure_rolls_back_persist_and_restore(tmp_path):
    env = _failing_scontrol(tmp_path)
    live = LiveSlurm(env=env, timeout_s=30)
    conf = tmp_path / "etc" / "slurm.conf"
    conf.parent.mkdir()
    conf.write_text(CONF)
    conf.chmod(0o640)
    for value in (5, None):  # persist d = 5; restore "no d line"
        with pytest.raises(SlurmCommandError, match="the old file is back") as e:
            slurmconf.edit_damping(str(conf), value, lambda argv: live.run(argv).stdout, f"t{value}")
        assert "Unable to contact slurm controller" in str(e.value)
        assert conf.read_text() == CONF and stat.S_IMODE(conf.stat().st_mode) == 0o640
    # each attempt: reconfigure, then reconfigure again on the old file
    assert (tmp_path / "bin" / "calls").read_text() == "reconfigure\n" * 4
    assert leftovers(conf.parent) == []


def test_mode_owner_backups_and_the_original_kept_for_good(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    conf.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(conf, 1, 1)  # daemon:daemon: root keeps the owner
    old = os.umask(0o077)  # the agent's own umask must not leak into slurm.conf or its backups
    try:
        for k in range(slurmconf.MAX_BACKUPS + 3):
            slurmconf.edit_damping(str(conf), 2 + k, ok, f"2026112{k}T000000")
    finally:
        os.umask(old)
    kept = slurmconf.backups(str(conf))
    assert len(kept) == slurmconf.MAX_BACKUPS and kept[-1].endswith("20261127T000000")
    original = Path(slurmconf.original_path(str(conf)))
    assert original.read_text() == "ClusterName=x\n"  # not rotated out
    for p in [conf, original, *map(Path, kept)]:
        st = p.stat()
        assert stat.S_IMODE(st.st_mode) == 0o640, p
        if os.geteuid() == 0:
            assert (st.st_uid, st.st_gid) == (1, 1), p
    # a file that already says so: not written, not reconfigured
    assert "not written" in slurmconf.edit_damping(str(conf), 2 + slurmconf.MAX_BACKUPS + 2, lambda argv: 1 / 0, "x")
    # two edits in one stamp keep both backups
    slurmconf.edit_damping(str(conf), 3, ok, "20261129T000000")
    slurmconf.edit_damping(str(conf), 4, ok, "20261129T000000")
    assert slurmconf.backups(str(conf))[-2:] == [f"{conf}.fscontrol-20261129T000000", f"{conf}.fscontrol-20261129T000000.1"]


def test_on_a_full_disk_slurm_conf_stays_byte_identical(tmp_path):
    """A real full file system (a 64 KiB tmpfs) under slurm.conf: no partial file, no temp file,
    no backup and no original of ours left."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true" or os.environ.get("FSCONTROL_REQUIRE_SLURM") == "1":
            raise AssertionError("mounting a tmpfs needs root, and CI must run this test (it runs as root)")
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mnt = tmp_path / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        conf = mnt / "slurm.conf"
        original = "ClusterName=x\n" + "# padding\n" * 3000 + "FairShareDampeningFactor=1\n"
        conf.write_text(original)
        with open(mnt / "filler", "wb") as fh:
            try:
                fh.write(b"x" * (1 << 20))
            except OSError:
                pass
        with pytest.raises(OSError):
            slurmconf.edit_damping(str(conf), 5, ok, "20261123T000000")
        assert conf.read_text() == original
        left = sorted(p.name for p in mnt.iterdir())
        assert left in (["filler", "slurm.conf"], ["filler", "slurm.conf", "slurm.conf.fscontrol-original"]), left
        if len(left) == 3:  # the pre-agent copy is kept only whole
            assert (mnt / left[2]).read_text() == original
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_bad_values_and_files_are_refused(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    for bad in (0, 65536, "1.5"):
        with pytest.raises(UnsafeActionError):
            slurmconf.edit_damping(str(conf), bad, ok, "t")
    assert conf.read_text() == CONF
    (tmp_path / "dir.conf").mkdir()
    with pytest.raises((UnsafeActionError, OSError)):
        slurmconf.edit_damping(str(tmp_path / "dir.conf"), 3, ok, "t")


def test_a_timed_out_reconfigure_keeps_the_new_file_and_is_not_repeated(tmp_path):
    """rev29: a timeout was rolled back like a failure and reconfigured a second time; from Slurm
    23.11 a reconfigure is a restart, so a timed-out one may have acted. The new file stays, one
    reconfigure only, and the error is the timeout (the executor's 'unknown') naming what to check
    and the backup to copy back by hand."""
    from fscontrol.errors import SlurmTimeoutError

    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF)
    calls = []

    def slow(argv):
        calls.append(argv)
        raise SlurmTimeoutError("`scontrol reconfigure` timed out after 3 s")

    with pytest.raises(SlurmTimeoutError) as e:
        slurmconf.edit_damping(str(conf), 9, slow, "20261127T000003")
    assert calls == [("scontrol", "reconfigure")]
    assert conf.read_text() == "ClusterName=x\nFairShareDampeningFactor=9\n"
    backup = str(tmp_path / "slurm.conf.fscontrol-20261127T000003")
    assert slurmconf.backups(str(conf)) == [backup] and Path(backup).read_text() == CONF
    assert "scontrol show config | grep -i dampening" in str(e.value) and backup in str(e.value)
    assert "the old file is back" not in str(e.value)


def test_a_restore_removes_only_the_agents_line(tmp_path):
    """rev29: `control off` (the file had no d line) removed every d line, the admin's own one added
    above the agent's after persist too. Only the agent's line (the last, in force, with the value it
    wrote) goes; a d line below it (the agent's is no longer in force) is refused, nothing written."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=c\n")
    slurmconf.edit_damping(str(conf), 40, ok, "s1", reconfigure=False)  # persist
    admin = "# pinned by admin\nFairShareDampeningFactor=10\n"
    conf.write_text(admin + conf.read_text())
    slurmconf.edit_damping(str(conf), None, ok, "s2", reconfigure=False, expect="40")  # control off
    assert conf.read_text() == admin + "ClusterName=c\n"
    # and a restore to the admin's old value: only the agent's line changes back
    conf.write_text(admin + "ClusterName=c\nFairShareDampeningFactor=40\n")
    slurmconf.edit_damping(str(conf), "7", ok, "s3", reconfigure=False, expect="40")
    assert conf.read_text() == admin + "ClusterName=c\nFairShareDampeningFactor=7\n"
    # the admin's line below the agent's: changed underneath, refused, the file as it is
    text = "ClusterName=c\nFairShareDampeningFactor=40\nFairShareDampeningFactor=10\n"
    conf.write_text(text)
    with pytest.raises(UnsafeActionError, match="FairShareDampeningFactor=10, not the 40 the agent wrote"):
        slurmconf.edit_damping(str(conf), None, ok, "s4", reconfigure=False, expect="40")
    assert conf.read_text() == text


def test_a_relative_include_is_resolved_as_slurm_does(tmp_path):
    """rev29: Slurm's _add_full_path (parse_config.c) puts a relative Include beside the including
    file's path as given, not its symlink's target; a nested one beside the nested file's path."""
    shared, etc = tmp_path / "shared", tmp_path / "etc"
    (shared / "conf.d").mkdir(parents=True)
    etc.mkdir()
    (shared / "slurm.conf").write_text("ClusterName=C\nInclude fs.conf\n")
    (shared / "fs.conf").write_text("FairShareDampeningFactor=3\n")  # beside the target: not read
    (etc / "fs.conf").write_text("FairShareDampeningFactor=7\n")  # beside the link: what slurmctld reads
    (etc / "slurm.conf").symlink_to("../shared/slurm.conf")
    assert slurmconf.read_damping(str(etc / "slurm.conf")) == ("7", str(etc / "fs.conf"))
    (shared / "nested.conf").write_text("Include conf.d/prio.conf\n")
    (shared / "conf.d" / "prio.conf").write_text("Include fs2.conf\n")
    (shared / "conf.d" / "fs2.conf").write_text("FairShareDampeningFactor=9\n")
    (shared / "fs2.conf").write_text("FairShareDampeningFactor=4\n")
    assert slurmconf.read_damping(str(shared / "nested.conf")) == ("9", str(shared / "conf.d" / "fs2.conf"))
    (etc / "c.conf").write_text("FairShareDampeningFactor=5\n")  # %c: ClusterName in lower case
    (etc / "top.conf").write_text("Include %c.conf\n")
    assert slurmconf.read_damping(str(etc / "top.conf"), "C") == ("5", str(etc / "c.conf"))


def test_line_endings_and_extended_attributes_are_kept(tmp_path):
    """rev29: a CRLF file came back with one LF line among CRLF ones, and the rename dropped the
    file's extended attributes (the temporary file had none)."""
    conf = tmp_path / "slurm.conf"
    conf.write_bytes(b"ClusterName=c\r\nFairShareDampeningFactor=5\r\nX=1\r\n")
    slurmconf.edit_damping(str(conf), 9, ok, "s1", reconfigure=False)
    assert conf.read_bytes() == b"ClusterName=c\r\nFairShareDampeningFactor=9\r\nX=1\r\n"
    conf.write_bytes(b"ClusterName=c\r\nX=1")  # added: CRLF too
    slurmconf.edit_damping(str(conf), 9, ok, "s2", reconfigure=False)
    assert conf.read_bytes() == b"ClusterName=c\r\nX=1\r\nFairShareDampeningFactor=9\r\n"
    slurmconf.edit_damping(str(conf), "4", ok, "s3", reconfigure=False, expect="9")  # a restore
    assert conf.read_bytes() == b"ClusterName=c\r\nX=1\r\nFairShareDampeningFactor=4\r\n"
    try:
        os.setxattr(conf, "user.fscontrol-test", b"kept")
    except OSError:
        if os.environ.get("CI") == "true" or os.environ.get("FSCONTROL_REQUIRE_SLURM") == "1":
            raise AssertionError("no user extended attributes here, and CI must run this test") from None
        pytest.skip("no user extended attributes on this file system")
    slurmconf.edit_damping(str(conf), 11, ok, "s4", reconfigure=False)
    assert conf.read_bytes().endswith(b"FairShareDampeningFactor=11\r\n")
    assert os.getxattr(conf, "user.fscontrol-test") == b"kept"
