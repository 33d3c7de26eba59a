"""Faults in the middle of an applying gate tick, on the real testbed (issue: safe under every fault).

The agent's gate runs as cron runs it (`python -m fscontrol gate --apply`, a fresh process) with a
`scontrol` on PATH that takes a second before it runs the real one, so the tick can be killed
between two of its commands. Whatever the moment of the kill:

- every job that Slurm shows held with the agent's mark has a ledger row (the intent is written
  before the command runs): zero holds that no ledger owns;
- the next tick settles the ledger against the marks: every row it keeps is a job Slurm shows in
  the state the agent left it in;
- `gate --release-all --apply` then leaves no job held or marked by the agent, and never touches
  a job an admin or a user held, or a job an admin released after the agent held it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from fscontrol import gate, store

pytestmark = pytest.mark.slurm

CFG = """
[clusters.tbcluster.gate]
enabled = true
action = "hold"
max_actions = 500
[clusters.tbcluster.allocations.flat]
award = 20
period = "1h"
[clusters.tbcluster.allocations.chem]
award = 20
period = "1h"
"""


def _queue(slurm) -> dict[str, tuple[str, str, str]]:
    """job -> (state, reason, AdminComment) as squeue shows it."""
    out = slurm.run("squeue", "-h", "-O", "JobID:0|,State:0|,Reason:0|,admin_comment:0")
    rows = (ln.split("|", 3) for ln in out.splitlines() if ln.strip())
    return {i: (st, r, "" if c == "(null)" else c) for i, st, r, c in rows}


def _gate(slurm, tmp_path, *args: str, env: dict | None = None, wait: bool = True):
    argv = [sys.executable, "-m", "fscontrol", "gate", "--config", str(tmp_path / "f.toml"), "--db", str(tmp_path / "h.db"), *args]
    p = subprocess.Popen(argv, env=env or slurm.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if wait:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    return p


def _stranded(slurm, db) -> list[str]:
    """Jobs Slurm shows held with the agent's mark that no ledger row owns."""
    ledger = store.ledger_entries(db, "tbcluster")
    return [j for j, (st, r, c) in _queue(slurm).items()
            if st == "PENDING" and r == "JobHeldAdmin" and c == gate.HOLD_MARK and j not in ledger]


def test_kill_between_hold_commands_strands_nothing_and_release_all_undoes_all(slurm, tmp_path):
    slurm.cancel_all()
    (tmp_path / "f.toml").write_text(CFG)
    shim = tmp_path / "bin"
    shim.mkdir()
    real = subprocess.run(["which", "scontrol"], capture_output=True, text=True, env=slurm.env).stdout.strip()
    (shim / "scontrol").write_text(f"#!/bin/sh\nsleep 1\nexec {real} \"$@\"\n")
    (shim / "scontrol").chmod(0o755)
    slow = {**slurm.env, "PATH": f"{shim}:{slurm.env.get('PATH', '/usr/bin:/bin')}"}
    try:
        for _ in range(2):
            slurm.submit("alice", "flat", 64, 600)  # flat runs 128 CPUs: over its 40
        deadline = time.time() + 60
        while sum(st == "RUNNING" for st, _, _ in _queue(slurm).values()) < 2 and time.time() < deadline:
            time.sleep(1)
        queued = [slurm.submit("alice", "flat", 2, 60) for _ in range(12)]
        admin_held = slurm.submit("alice", "flat", 2, 60)
        slurm.scontrol("hold", admin_held)
        user_held = slurm.submit("bob", "flat", 2, 60)
        slurm.run("scontrol", "hold", user_held, user="bob")
        slurm.submit("carol", "chem", 2, 60)  # chem under target, waiting
        db = store.open_db(tmp_path / "h.db")

        # 1. kill -9 after a few of the 12 holds landed (each command takes >= 1 s here)
        p = _gate(slurm, tmp_path, "--apply", env=slow, wait=False)
        deadline = time.time() + 120
        while time.time() < deadline:
            marked = [j for j, (_, _, c) in _queue(slurm).items() if c == gate.HOLD_MARK]
            if len(marked) >= 3:
                break
            time.sleep(0.2)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        marked = [j for j, (_, _, c) in _queue(slurm).items() if c == gate.HOLD_MARK]
        print(f"killed with {len(marked)} of {len(queued)} holds placed")
        assert 3 <= len(marked) < len(queued)
        assert _stranded(slurm, db) == []  # every mark has its ledger row (the intent came first)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

        # 2. an admin releases one of the agent's holds; the next tick settles everything
        released_by_admin = marked[0]
        slurm.scontrol("release", released_by_admin)
        _gate(slurm, tmp_path, "--apply")
        q = _queue(slurm)
        entries = store.ledger_entries(db, "tbcluster")
        for j, e in entries.items():
            if e.state == "held":  # the ledger keeps only what Slurm shows as the agent left it
                assert q[j][1] == "JobHeldAdmin" and q[j][2] == gate.HOLD_MARK, (j, q.get(j))
        assert entries[released_by_admin].state == "hands_off"
        assert q[released_by_admin][1] != "JobHeldAdmin" and q[released_by_admin][2] == ""  # not held again, unmarked
        assert _stranded(slurm, db) == []
        assert db.execute("SELECT count(*) FROM ticks WHERE status = 'running'").fetchone()[0] == 0  # the killed tick: failed
        killed = db.execute("SELECT count(*) FROM actions WHERE status = 'pending'").fetchone()[0]
        assert killed == 0  # every intent of the killed tick was settled by the next one

        # 3. undo all: nothing of the agent's is left; others' holds untouched
        _gate(slurm, tmp_path, "--release-all", "--apply")
        q = _queue(slurm)
        ours = [j for j, (_, r, c) in q.items() if c.startswith(gate.MARK_PREFIX) or (j in queued and r == "JobHeldAdmin")]
        print(f"after --release-all: {len(ours)} jobs held or marked by the agent; admin's hold {q[admin_held][1]}, "
              f"user's hold {q[user_held][1]}")
        assert ours == []
        assert q[admin_held][1] == "JobHeldAdmin" and q[user_held][1] == "JobHeldUser"
        assert {j for j, e in store.ledger_entries(db, "tbcluster").items() if e.state != "hands_off"} == set()
        touched = {j for (j,) in db.execute("SELECT job_id FROM actions WHERE stage = 'gate'")}
        assert not touched & {admin_held, user_held}
    finally:
        slurm.cancel_all()
