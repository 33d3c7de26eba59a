"""Against the real testbed: `fscontrol why JOBID` explains a pending job's priority term by term,
and its figures are sprio's: each term is its factor x its weight, the terms add up to the
priority, the dominant term is the largest, and the count of jobs ahead is squeue's. The weights
are set for the test (age, job size, partition beside fair-share) and put back after."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = {"PriorityWeightAge": "1000", "PriorityWeightJobSize": "20000", "PriorityWeightPartition": "500",
           "PriorityMaxAge": "1:00:00"}


def _why(slurm, job: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fscontrol", "why", job, "--json"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=slurm.env)


def test_why_is_my_job_waiting(slurm):
    slurm.cancel_all()
    try:
        slurm.set_conf(**WEIGHTS)
        small = slurm.probe("dave", "flat")
        big = slurm.submit("carol", "chem", 96, 60, partition="parked")
        slurm.wait_for_pass()  # the pass recomputes every pending job's priority with the new weights
        for job in (small, big):
            p = _why(slurm, job)
            assert p.returncode == 0, p.stderr
            d = json.loads(p.stdout)
            terms = {t["factor"]: t for t in d["terms"]}
            assert terms["job size"]["weight"] == 20000 and terms["age"]["weight"] == 1000
            for t in d["terms"]:
                if t["weight"]:
                    assert abs(t["points"] - t["normalized"] * t["weight"]) <= 1.0, t
            assert abs(sum(t["points"] for t in d["terms"]) - d["priority"]) <= len(d["terms"]), d
            assert d["dominant"] == max(d["terms"], key=lambda t: t["points"])["factor"]
            prio = {ln.split("|")[0]: float(ln.split("|")[1]) for ln in
                    slurm.run("squeue", "-h", "-t", "PD", "-p", "parked", "-o", "%i|%Q").split()}
            assert d["ahead_in_partition"] == sum(1 for j, q in prio.items() if j != job and q > prio[job])
            assert any(x.startswith("age: +") for x in d["levers"])  # age grows towards its cap
        text = subprocess.run([sys.executable, "-m", "fscontrol", "why", big], capture_output=True, text=True,
                              timeout=120, cwd=ROOT, env=slurm.env).stdout
        assert "job size" in text and "what would change it" in text and "larger jobs score higher" in text
        # a running job and a gone one: one clear line, exit 6
        run = slurm.submit("bob", "flat", 1, 120)
        for _ in range(20):
            if "RUNNING" in slurm.run("squeue", "-h", "-j", run, "-o", "%T"):
                break
            time.sleep(0.5)
        r = subprocess.run([sys.executable, "-m", "fscontrol", "why", run], capture_output=True, text=True, timeout=120,
                           cwd=ROOT, env=slurm.env)
        assert r.returncode == 6 and "RUNNING" in r.stderr and "Traceback" not in r.stderr
        g = subprocess.run([sys.executable, "-m", "fscontrol", "why", "999999"], capture_output=True, text=True,
                           timeout=120, cwd=ROOT, env=slurm.env)
        assert g.returncode == 6 and "not in the queue" in g.stderr
    finally:
        slurm.cancel_all()
        slurm.set_conf(PriorityWeightAge="0", PriorityWeightJobSize="0", PriorityWeightPartition="0", PriorityMaxAge="")
