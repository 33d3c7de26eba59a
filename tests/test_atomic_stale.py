"""atomic.write_chunks removes what a killed writer of the same file left (an outside review,
2026-11-28: a publish killed mid-write left its ~70 MB temporary file for ever)."""

from __future__ import annotations

import os
import time

from fscontrol import atomic


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "c.json"
    stale = tmp_path / ".c.json.abc123.tmp"
    fresh = tmp_path / ".c.json.def456.tmp"  # another writer in flight: left alone
    other = tmp_path / ".d.json.xyz.tmp"  # another file's: left alone
    link = tmp_path / ".c.json.lnk.tmp"  # a link: never followed nor removed
    for f in (stale, fresh, other):
        f.write_text("half")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link.symlink_to(victim)
    old = time.time() - atomic.STALE_S - 60
    for f in (stale, other):
        os.utime(f, (old, old))
    os.utime(link, (old, old), follow_symlinks=False)
    atomic.write_chunks(target, ["{", "}"])
    assert target.read_text() == "{}"
    assert not stale.exists() and fresh.exists() and other.exists() and link.is_symlink() and victim.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".c.json.def456.tmp", ".c.json.lnk.tmp", ".d.json.xyz.tmp", "c.json", "victim"])
