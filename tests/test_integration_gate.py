"""Queue stuffing on the real testbed, with and without the SFS gate (Steffen 2019, section 9).

The cluster's priority is set to eligible-time dominant for this test (PriorityWeightAge far
above the fair-share weight, PriorityMaxAge 10 min; slurm.conf restored after), the linear
policy the paper starts from. Account flat (alice) fills the 128 CPUs with 2-CPU jobs of
30-240 s and queues more; account chem (carol) submits one 2-CPU job a minute later. Both have
an award of 20 core-hours an hour: target occupancy 2 x 20 = 40 CPUs.

- Without the gate carol waits behind every job alice queued before her (they are older).
- With the gate applied every GATE_S, her job starts within one gate interval plus one scheduler
  cycle, while alice's older jobs are still held; afterwards `fscontrol gate --release-all
  --apply` releases every hold the agent placed, and a job an admin held and one a user held
  are never touched.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time

import pytest

from fscontrol.agent import config
from fscontrol.agent import pipeline
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger

pytestmark = pytest.mark.slurm

GATE_S = 20.0  # the gate's interval in this test (the config's minimum is 60 s; the pipeline takes any)
SCHED_CYCLE_S = 60.0  # slurmctld's main scheduler: sched_interval's default (it also runs on job ends)
RUNNING, QUEUED = 64, 80  # 2-CPU jobs: 64 fill the 128 CPUs
CFG = {"clusters": {"tbcluster": {
    "gate": {"enabled": True, "action": "hold", "max_actions": 500},
    "allocations": {"flat": {"award": 20, "period": "1h"}, "chem": {"award": 20, "period": "1h"}},
}}}


def _age_dominant(slurm) -> str:
    original = slurm.conf.read_text()
    text = original.replace("PriorityWeightAge=0", "PriorityWeightAge=10000000") + "PriorityMaxAge=00:10:00\n"
    slurm.conf.write_text(text)
    slurm.scontrol("reconfigure")
    return original


def _stuff(slurm, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [slurm.submit("alice", "flat", 2, rng.randint(30, 240)) for _ in range(RUNNING + QUEUED)]


def _states(slurm) -> dict[str, tuple[str, str]]:
    out = slurm.run("squeue", "-h", "-o", "%A|%T|%r")
    return {i: (st, r) for i, st, r in (ln.split("|") for ln in out.splitlines() if ln)}


def _wait_running(slurm, job: str, timeout: float = 900) -> tuple[float, dict]:
    """When the job was first seen running (polled every second), and the queue at that moment."""
    end = time.time() + timeout
    while time.time() < end:
        states = _states(slurm)
        if states.get(job, ("", ""))[0] == "RUNNING":
            return time.time(), states
        time.sleep(1)
    raise TimeoutError(f"job {job} did not start in {timeout:.0f} s")


def _fill(slurm, ids: list[str]) -> None:
    deadline = time.time() + 120
    while sum(s == "RUNNING" for s, _ in _states(slurm).values()) < RUNNING and time.time() < deadline:
        time.sleep(1)


def test_queue_stuffing_with_and_without_the_gate(slurm, tmp_path):
    slurm.cancel_all()
    original = _age_dominant(slurm)
    cfg = config.from_dict(CFG)
    try:
        # ---- without the gate
        stuffed = _stuff(slurm, seed=1)
        _fill(slurm, stuffed)
        time.sleep(60)
        late = slurm.submit("carol", "chem", 2, 60)
        submitted = time.time()
        started, states = _wait_running(slurm, late)
        wait_without = started - submitted
        older_pending = [j for j in stuffed if states.get(j, ("", ""))[0] == "PENDING"]
        print(f"\nwithout the gate: carol waited {wait_without:.0f} s; alice's older jobs still pending then: {len(older_pending)}")
        assert not older_pending  # she waited for every job queued before hers
        slurm.cancel_all()

        # ---- with the gate, plus two holds that are not the agent's (placed once the machine is full:
        # on an empty one a job can start between its sbatch and its hold, then end and leave the queue)
        stuffed = _stuff(slurm, seed=2)
        _fill(slurm, stuffed)
        foreign_admin = slurm.submit("dave", "flat", 2, 60)
        slurm.scontrol("hold", foreign_admin)
        foreign_user = slurm.submit("bob", "flat", 2, 60)
        slurm.run("scontrol", "hold", foreign_user, user="bob")
        states = _states(slurm)
        assert (states[foreign_admin], states[foreign_user]) == (("PENDING", "JobHeldAdmin"), ("PENDING", "JobHeldUser"))
        db = store.open_db(tmp_path / "gate.db")
        stop = threading.Event()
        errors: list[BaseException] = []

        def gate_loop() -> None:
            gdb = store.open_db(tmp_path / "gate.db")
            while not stop.is_set():
                t = time.time()
                try:
                    pipeline.gate_tick(slurm.source(), gdb, cfg, apply=True)
                except BaseException as e:  # noqa: BLE001 - reported by the test
                    errors.append(e)
                    return
                stop.wait(max(0.0, GATE_S - (time.time() - t)))

        time.sleep(60)
        thread = threading.Thread(target=gate_loop, daemon=True)
        thread.start()
        late = slurm.submit("carol", "chem", 2, 60)
        submitted = time.time()
        try:
            started, states = _wait_running(slurm, late, timeout=GATE_S + SCHED_CYCLE_S + 120)
        finally:
            stop.set()
            thread.join(timeout=120)
        wait_with = started - submitted
        held_older = [j for j in stuffed if states.get(j) == ("PENDING", "JobHeldAdmin")]
        print(f"with the gate every {GATE_S:.0f} s: carol waited {wait_with:.0f} s; alice's older jobs held then: {len(held_older)}")
        assert not errors, errors
        assert wait_with <= GATE_S + SCHED_CYCLE_S
        assert held_older  # she went ahead of alice's older jobs because the gate held them
        placed = db.execute("SELECT count(*) FROM actions WHERE stage = 'gate' AND kind = 'hold' AND status = 'ok'").fetchone()[0]
        assert placed > 0

        # ---- undo: every hold the agent placed, and nothing else
        own = tmp_path / "agent.toml"  # --apply acts only on the agent's own history (act/lock.py)
        own.write_text(f'[agent]\ndb = "{tmp_path / "gate.db"}"\n')
        r = subprocess.run([sys.executable, "-m", "fscontrol", "gate", "--release-all", "--apply", "-c", str(own)],
                           env=slurm.env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        states = _states(slurm)
        still = [j for j in stuffed if states.get(j, ("", ""))[1] == "JobHeldAdmin"]
        print(f"after --release-all: agent holds left {len(still)}; admin's hold {states[foreign_admin][1]}, "
              f"user's hold {states[foreign_user][1]}")
        assert not still
        assert store_ledger.gate_ledger(db, "tbcluster") == {}
        assert states[foreign_admin] == ("PENDING", "JobHeldAdmin")
        assert states[foreign_user] == ("PENDING", "JobHeldUser")
        touched = {j for (j,) in db.execute("SELECT job_id FROM actions WHERE stage = 'gate'")}
        assert not touched & {foreign_admin, foreign_user}
    finally:
        slurm.cancel_all()
        slurm.conf.write_text(original)
        slurm.scontrol("reconfigure")


def _agent_holds(slurm) -> dict[str, tuple[str, str]]:
    """job -> (reason, AdminComment) for every pending job, as squeue shows it."""
    out = slurm.run("squeue", "-h", "-t", "PD", "-O", "JobID:0|,Reason:0|,admin_comment:0")
    rows = (ln.split("|", 2) for ln in out.splitlines() if ln.strip())
    return {i: (r, "" if c == "(null)" else c) for i, r, c in rows}


@pytest.mark.parametrize("turn_off", ["disabled", "no allocations"])
def test_turning_the_gate_off_releases_the_agents_holds_at_the_next_tick(slurm, tmp_path, turn_off):
    """The gate held jobs; then the admin turns it off (`enabled = false`, or removes the
    allocations). The next `fscontrol tick` releases the jobs whose ledger row, mark and hold
    agree, says so in one line, and leaves a job that carries the agent's mark with no ledger row
    (a lost history) held, saying that too. A dry-run tick first says what it would release.
    (ef8da55: the gate stage never ran again, the holds stayed for ever, and the tick said
    nothing about them.)"""
    slurm.cancel_all()
    db = tmp_path / "h.db"
    head = f'[agent]\ndb = "{db}"\n[clusters.tbcluster]\ntarget_core_hours = 1\nmethod = "none"\n'
    gate_on = ('[clusters.tbcluster.gate]\nenabled = true\n'
               '[clusters.tbcluster.allocations.flat]\naward = 20\nperiod = "1h"\n'
               '[clusters.tbcluster.allocations.chem]\naward = 20\nperiod = "1h"\n')
    gate_off = ('[clusters.tbcluster.gate]\nenabled = false\n'
                '[clusters.tbcluster.allocations.flat]\naward = 20\nperiod = "1h"\n'
                if turn_off == "disabled" else '[clusters.tbcluster.gate]\nenabled = true\n')
    cfg = tmp_path / "f.toml"
    cfg.write_text(head + gate_on)

    def tick(*extra: str) -> subprocess.CompletedProcess:
        r = subprocess.run([sys.executable, "-m", "fscontrol", "tick", "-c", str(cfg), *extra], env=slurm.env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r

    try:
        for _ in range(2):
            slurm.submit("alice", "flat", 64, 900)  # flat fills the 128 CPUs (over its 40)
        deadline = time.time() + 60
        while len(slurm.run("squeue", "-h", "-t", "R", "-o", "%A").split()) < 2 and time.time() < deadline:
            time.sleep(1)
        waiting = [slurm.submit("bob", "flat", 4, 600) for _ in range(3)]  # the gate holds these
        lost = slurm.submit("bob", "flat", 4, 600)
        slurm.submit("carol", "chem", 4, 600)  # chem under target and waiting: the gate holds flat's for it
        deadline = time.time() + 120  # until the scheduler has looked at them (a reason other than None)
        while any(r == "None" for r, _ in _agent_holds(slurm).values()) and time.time() < deadline:
            time.sleep(1)
        first = tick("--apply")
        held = _agent_holds(slurm)
        ours = [j for j in waiting if held[j] == ("JobHeldAdmin", "fscontrol:hold")]
        assert ours, (held, first.stdout)
        # a job with the agent's mark and hold but no ledger row (a history lost or rebuilt)
        if held[lost][1] != "fscontrol:hold":
            slurm.scontrol("update", f"JobId={lost}", "Priority=0", "AdminComment=fscontrol:hold")
        else:
            store_db = store.open_db(db)
            with store.transaction(store_db):
                store_db.execute("DELETE FROM gate_ledger WHERE job_id = ?", [lost])
            store_db.close()

        cfg.write_text(head + gate_off)
        plan = tick()
        why = ("[clusters.tbcluster.gate] enabled = false" if turn_off == "disabled"
               else "no allocations configured for tbcluster")
        lines = [ln.strip() for ln in plan.stdout.splitlines() if "the gate is off" in ln]
        print(f"\n{turn_off}, dry run: {lines}")
        assert lines == [f"the gate is off ({why}): {len(ours)} agent hold(s) to release; nothing done (dry run: "
                         "--apply or agent.apply = true); 1 job(s) carry the agent's mark with no ledger row, left held "
                         "(`fscontrol gate --release-all --apply` releases them)"]
        now = _agent_holds(slurm)  # the dry run released nothing (a waiting job's reason is the scheduler's to change)
        assert all(now[j] == ("JobHeldAdmin", "fscontrol:hold") for j in [*ours, lost]), now

        done = tick("--apply")
        lines = [ln.strip() for ln in done.stdout.splitlines() if "the gate is off" in ln]
        print(f"{turn_off}, applied: {lines}")
        assert lines == [f"the gate is off ({why}): released {len(ours)} of {len(ours)} agent hold(s); 1 job(s) carry the "
                         "agent's mark with no ledger row, left held (`fscontrol gate --release-all --apply` releases them)"]
        after = _agent_holds(slurm)
        for j in ours:
            assert after[j][0] != "JobHeldAdmin" and after[j][1] == "", (j, after[j])
        assert after[lost] == ("JobHeldAdmin", "fscontrol:hold")  # not the tick's to release: no ledger row
        assert store_ledger.gate_ledger(store.open_db(db), "tbcluster") == {}
        quiet = tick("--apply")  # nothing left of the agent's: the gate stays out of the tick
        assert "the gate is off" not in quiet.stdout and "gate (" not in quiet.stdout
    finally:
        slurm.cancel_all()
