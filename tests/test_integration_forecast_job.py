"""`fscontrol forecast -j` against the real testbed: -j names one of the user's own pending jobs in
the account (squeue), and the default pending job is never one an admin or the user holds.
Found by an outside tester: -j 999999, -j -1 and another user's job were all accepted (exit 0,
"...the priority of your pending job 999999"), and the default was carol's admin-held job."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fscontrol.agent import config, pipeline, publishing
from fscontrol.store import history as store

pytestmark = pytest.mark.slurm


def test_j_is_one_of_the_users_own_pending_jobs_and_the_default_skips_held_ones(slurm, tmp_path):
    slurm.cancel_all()
    slurm.submit("carol", "chem", 4, 120)  # usage to forecast from (a fresh testbed has none)
    slurm.wait_for_pass()
    # the snapshot first: the forecast reads the user's pending jobs live (squeue), not from it
    (tmp_path / "public").mkdir()
    db = store.open_db(tmp_path / "history.db")
    pipeline.collect(slurm.source(), db)
    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 10}}})
    published, _ = publishing.publish_latest(db, cfg, "tbcluster", out=tmp_path / "public" / "tbcluster.json")
    db.close()
    try:
        held = slurm.submit("carol", "chem", 1, 60, begin="now+1hour")  # first: the lower id
        slurm.scontrol("hold", held)  # held by an admin: JobHeldAdmin
        waiting = slurm.submit("carol", "chem", 1, 60, begin="now+1hour")  # pending (BeginTime), not held
        other = slurm.submit("alice", "flat", 1, 60, begin="now+1hour")  # someone else's pending job
        reasons = dict(line.split("|") for line in slurm.run("squeue", "-h", "-t", "PD", "-o", "%i|%r").split())
        assert reasons[held].startswith("JobHeld") and reasons[waiting] == "BeginTime", reasons

        def forecast(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "fscontrol", "forecast", "--published", str(published),
                                   "--user", "carol", "-A", "chem", "--plan", "4cpus:1h", *args],
                                  env=slurm.env, capture_output=True, text=True, timeout=120, check=False)

        default = forecast()
        assert default.returncode == 0, default.stderr
        assert f"your pending job {waiting}" in default.stdout and f"your pending job {held}" not in default.stdout

        named = forecast("-j", waiting)
        assert named.returncode == 0 and f"your pending job {waiting}" in named.stdout, named.stderr
        for job, code, words in [("999999", 6, "no pending job 999999"), (other, 6, f"no pending job {other}"),
                                 (held, 6, "is held"), ("-1", 2, "--job must be a job id")]:
            r = forecast("-j", job)
            lines = r.stderr.strip().splitlines()
            assert r.returncode == code and r.stdout == "" and len(lines) == 1 and words in lines[0], (job, r.returncode, r.stderr)
        # the rows from the published file (issue #28: -j 99999999 was taken as "your pending job"
        # there, unchecked): the queue is still the cluster's
        named = forecast("--source", "published", "-j", waiting)
        assert named.returncode == 0 and f"your pending job {waiting}" in named.stdout, named.stderr
        for job, words in [("99999999", "no pending job 99999999"), (other, f"no pending job {other}"), (held, "is held")]:
            r = forecast("--source", "published", "-j", job)
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 6 and r.stdout == "" and len(lines) == 1 and words in lines[0], (job, r.returncode, r.stderr)
    finally:
        slurm.cancel_all()
