"""`fscontrol control off` on the real testbed: after the agent acted (hybrid control with persist,
steady padding, the gate holding jobs), `control off --apply` leaves `scontrol show config`, the
padding QOS, slurm.conf, the job list and the holds exactly as they were before the agent first
acted: each is read before and after, and diffed. Then the agent stays off until `control on`.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slurm


def _config_text(slurm) -> list[str]:
    # every line but the time of the read, the next job id (the padding job took one) and the
    # controller's start: Slurm 24.11's `scontrol reconfigure` restarts slurmctld (a new process, a
    # new BOOT_TIME; slurm_versions.RELEASES), and control off reconfigures
    return [ln for ln in slurm.scontrol("show", "config").splitlines()
            if not ln.startswith(("Configuration data as of", "NEXT_JOB_ID", "BOOT_TIME"))]


def _state(slurm) -> dict:
    jobs = slurm.run("squeue", "-h", "-O", "JobID:0|,UserName:0|,Account:0|,State:0|,Reason:0|,Nice:0|,admin_comment:0")
    # a waiting job's reason (Priority, Resources) is the scheduler's to change: only holds count.
    # An AdminComment cleared by `scontrol update AdminComment=` reads "" where a job never given
    # one reads "(null)": scontrol cannot set it back to null, and both mean "no comment"
    jobs = "\n".join("|".join(f[:4] + [f[4] if f[4].startswith("JobHeld") else "waiting"] + f[5:6]
                               + ["" if f[6] == "(null)" else f[6]])
                     for f in (ln.split("|") for ln in jobs.splitlines() if ln.strip()))
    return {
        "config": _config_text(slurm),
        "qos": slurm.run("sacctmgr", "-n", "-P", "show", "qos", "format=Name,UsageFactor"),
        "slurm.conf": slurm.conf.read_bytes(),
        "slurm.conf mode": slurm.conf.stat().st_mode,
        "jobs": sorted(jobs.splitlines()),
    }


def _fscontrol(slurm, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fscontrol", *args], env=slurm.env, capture_output=True, text=True, timeout=300)


def test_control_off_puts_everything_back(slurm, tmp_path):
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", "name=fspad", "set", "usagefactor=1")
    cfg = tmp_path / "f.toml"
    cfg.write_text(
        f'[agent]\ndb = "{tmp_path / "h.db"}"\n'
        f'[clusters.tbcluster]\ntarget_core_hours = 0.5\nmethod = "hybrid"\npersist = true\nslurm_conf = "{slurm.conf}"\n'
        '[clusters.tbcluster.gate]\nenabled = true\n'
        '[clusters.tbcluster.allocations.flat]\naward = 20\nperiod = "1h"\n'
        '[clusters.tbcluster.allocations.chem]\naward = 20\nperiod = "1h"\n')
    try:
        for _ in range(2):
            slurm.submit("alice", "flat", 63, 900)  # flat runs 126 CPUs (over its 40); 2 left for the padding job
        deadline = time.time() + 60
        while slurm.run("squeue", "-h", "-t", "R", "-o", "%A").split().__len__() < 2 and time.time() < deadline:
            time.sleep(1)
        for _ in range(3):
            slurm.submit("bob", "flat", 4, 600)  # waiting: the gate will hold them
        slurm.submit("carol", "chem", 4, 600)  # chem under target, waiting
        admin_held = slurm.submit("dave", "flat", 4, 600)
        slurm.scontrol("hold", admin_held)
        user_held = slurm.submit("alice", "flat", 4, 600)
        slurm.run("scontrol", "hold", user_held, user="alice")
        slurm.wait_for_pass()  # some usage, so control has something to hold
        before = _state(slurm)

        for _ in range(2):
            r = _fscontrol(slurm, "tick", "-c", str(cfg), "--apply")
            assert r.returncode == 0, r.stderr
        deadline = time.time() + 30  # the scheduler starts the padding job when it next runs: not ours to race
        while slurm.run("squeue", "-h", "-u", "fsdummy", "-t", "PD", "-o", "%A").strip() and time.time() < deadline:
            time.sleep(1)
        acted = _state(slurm)
        marks = [ln for ln in acted["jobs"] if "fscontrol:hold" in ln]
        assert acted["config"] != before["config"] and acted["qos"] != before["qos"]  # d and UsageFactor moved
        assert acted["slurm.conf"] != before["slurm.conf"] and marks  # persisted, and the gate held jobs
        assert any("|fsdummy|" in ln for ln in acted["jobs"])  # the padding job

        plan = _fscontrol(slurm, "control", "off", "-c", str(cfg))  # the dry run first: changes nothing
        assert plan.returncode == 0, plan.stderr
        assert _state(slurm) == acted and "dry run" in plan.stdout
        off = _fscontrol(slurm, "control", "off", "-c", str(cfg), "--apply")
        print(f"\n{off.stdout}")
        assert off.returncode == 0, off.stderr
        after = _state(slurm)
        for key in before:
            assert after[key] == before[key], key
        # status says so (issue 30, an outside tester: it still said "control applied", with the
        # snapshot's d, while slurmctld had the d put back): off, since when, and slurmctld's d
        st = _fscontrol(slurm, "status", "-c", str(cfg))
        assert st.returncode == 0, st.stderr
        assert "control applied" not in st.stdout and "control off since " in st.stdout, st.stdout
        assert f"damping factor d={_d(slurm)}" in st.stdout and f"d is {_d(slurm)}" in st.stdout, st.stdout

        again = _fscontrol(slurm, "tick", "-c", str(cfg), "--apply")  # off stays off
        assert again.returncode == 0, again.stderr
        assert _state(slurm) == before
        on = _fscontrol(slurm, "control", "on", "-c", str(cfg))
        assert on.returncode == 0 and "acts again" in on.stdout
        resumed = _fscontrol(slurm, "tick", "-c", str(cfg), "--apply")
        assert resumed.returncode == 0, resumed.stderr
        assert _state(slurm)["config"] != before["config"]  # control acts again
    finally:
        _fscontrol(slurm, "control", "off", "-c", str(cfg), "--apply")
        for b in slurm.conf.parent.glob(slurm.conf.name + ".fscontrol-*"):  # its backups and pre-agent original
            b.unlink()
        slurm.cancel_all()
        slurm.scontrol("reconfigure")


def _d(slurm) -> int:
    return int(next(ln.split("=", 1)[1] for ln in slurm.scontrol("show", "config").splitlines()
                    if ln.startswith("FairShareDampeningFactor")).strip())


def test_control_off_never_touches_a_line_the_agent_did_not_write(slurm, tmp_path):
    """Issue #30's story on the real testbed. (1) slurm.conf uses Include (its d, 5, in the included
    file): persist is refused at each tick as a WARNING naming that d, the tick does not fail, and
    the runtime d is controlled all the same; the admin then puts back a plain slurm.conf with
    FairShareDampeningFactor=1; `control off --apply` leaves it byte for byte (ef8da55 recorded the
    refused edit's null as the original and removed the line). (2) persist wrote its d, then the
    admin set the line back to 1: off refuses that restore in one line (exit 3), puts the runtime
    d back all the same, and the file stays the admin's. (3) `control on`: the first tick persists
    at once (off/on resets persist_interval; ef8da55 waited up to an hour, silently)."""
    slurm.cancel_all()
    slurm.reset_usage()
    plain = slurm.conf.read_bytes()
    assert b"\nFairShareDampeningFactor=1\n" in plain  # the testbed's own line: the admin's
    d0 = _d(slurm)
    included = slurm.conf.parent / "fscontrol-offsafe-extra.conf"
    included.write_text("FairShareDampeningFactor=5\n")
    split = plain.replace(b"\nFairShareDampeningFactor=1\n", b"\n") + b"Include fscontrol-offsafe-extra.conf\n"
    cfg = tmp_path / "f.toml"
    cfg.write_text(f'[agent]\ndb = "{tmp_path / "h.db"}"\n'
                   f'[clusters.tbcluster]\ntarget_core_hours = 0.5\nmethod = "damping"\npersist = true\n'
                   f'slurm_conf = "{slurm.conf}"\n')
    try:
        slurm.submit("alice", "flat", 8, 600)
        slurm.wait_for_pass()  # some usage to decide on
        slurm.conf.write_bytes(split)
        r = _fscontrol(slurm, "tick", "-c", str(cfg), "--apply")
        print(f"\n{r.stdout}")
        assert r.returncode == 0, r.stderr  # ef8da55: exit 3, the reason only in the actions table
        warn = [ln for ln in r.stdout.splitlines() if "WARNING: persist_damping refused" in ln]
        assert len(warn) == 1 and f"{included}'s d = 5" in warn[0] and "uses Include" in warn[0], r.stdout
        d_agent = _d(slurm)
        assert d_agent != d0  # the runtime control works without the file
        assert slurm.conf.read_bytes() == split  # not edited
        slurm.conf.write_bytes(plain)  # the admin's plain slurm.conf, FairShareDampeningFactor=1
        off = _fscontrol(slurm, "control", "off", "-c", str(cfg), "--apply")
        print(off.stdout)
        assert off.returncode == 0, off.stdout + off.stderr
        assert slurm.conf.read_bytes() == plain  # ef8da55: the admin's line removed
        assert _d(slurm) == d0

        # (2) the agent's own line, then the admin's: refused, the rest undone
        assert "acts again" in _fscontrol(slurm, "control", "on", "-c", str(cfg)).stdout
        r = _fscontrol(slurm, "tick", "-c", str(cfg), "--apply")
        assert r.returncode == 0, r.stderr
        d_agent = _d(slurm)
        assert d_agent != d0 and f"\nFairShareDampeningFactor={d_agent}\n".encode() in slurm.conf.read_bytes()
        slurm.conf.write_bytes(plain.replace(b"FairShareDampeningFactor=1\n", b"FairShareDampeningFactor=2\n"))
        admins = slurm.conf.read_bytes()
        off = _fscontrol(slurm, "control", "off", "-c", str(cfg), "--apply")
        print(off.stdout)
        assert off.returncode == 3, off.stdout + off.stderr
        refused = [ln for ln in off.stdout.splitlines() if "not the" in ln]
        assert len(refused) == 1 and f"FairShareDampeningFactor=2, not the {d_agent} the agent wrote" in refused[0]
        assert "fscontrol-original" in refused[0]  # what to do
        assert slurm.conf.read_bytes() == admins and _d(slurm) == d0  # the file left, the runtime d put back

        # (3) off/on resets persist_interval: the first tick after `control on` persists at once
        assert "acts again" in _fscontrol(slurm, "control", "on", "-c", str(cfg)).stdout
        r = _fscontrol(slurm, "tick", "-c", str(cfg), "--apply")
        assert r.returncode == 0, r.stderr
        d_agent = _d(slurm)
        assert f"\nFairShareDampeningFactor={d_agent}\n".encode() in slurm.conf.read_bytes(), r.stdout
        off = _fscontrol(slurm, "control", "off", "-c", str(cfg), "--apply")  # puts back the admin's 2
        assert off.returncode == 0 and slurm.conf.read_bytes() == admins, off.stdout
    finally:
        slurm.conf.write_bytes(plain)
        included.unlink(missing_ok=True)
        for b in slurm.conf.parent.glob(slurm.conf.name + ".fscontrol-*"):
            b.unlink()
        slurm.cancel_all()
        slurm.scontrol("fsdampeningfactor", str(d0))
