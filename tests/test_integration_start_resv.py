"""Against the real testbed (22.05 and 26.05): `fscontrol start` around an advance reservation
(issue #32 item 4). The node is reserved for dave from about 3 minutes ahead, for 1 minute. Bob's
job (64 CPUs, 5-minute limit) would run across its start: Slurm keeps it off the node until the
reservation ends, and the estimate must put it there and name the reservation. Carol's job (begin
20 s ahead, 1-minute limit) ends before it: it runs at its begin time. Dave's job in the
reservation starts at its start. The estimates are compared with `squeue --start` and with the
real starts (each within 60 s: slurmctld's passes run every 30-60 s); ~4.5 minutes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fscontrol.slurm.parse import parse_time
from fscontrol.slurm.resv import RESV_ARGS, parse_reservations

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[1]
FSCONTROL = [sys.executable, "-m", "fscontrol.cli.main"]
NAME = "fsc_start_resv"


def _cli(slurm, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*FSCONTROL, *args], capture_output=True, text=True, timeout=120, env=slurm.env, cwd=ROOT)


def _real_start(slurm, job_id: str) -> float | None:
    s = slurm.run("squeue", "-h", "-j", job_id, "-o", "%T|%S", check=False).strip()
    state, _, start = s.partition("|")
    if state in ("RUNNING", "COMPLETING"):
        return parse_time(start)
    if not state:  # ended already: sacct has it
        s = slurm.run("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "Start", check=False).strip()
        return parse_time(s.splitlines()[0]) if s and s.splitlines()[0] not in ("Unknown", "None") else None
    return None


def _scenario(slurm):
    """The reservation and the three jobs, read by `start --json` once slurmctld has looked at them:
    (the reservation, bob's, carol's and dave's job ids, squeue's reasons, start's data)."""
    slurm.cancel_all()  # (a reservation with jobs in it cannot be deleted)
    slurm.run("scontrol", "delete", f"reservation={NAME}", check=False)
    slurm.run("scontrol", "create", "reservation", f"reservationname={NAME}", "starttime=now+3minutes",
              "duration=1", "nodes=ALL", "users=dave")
    (r,) = [x for x in parse_reservations(slurm.run(*RESV_ARGS)) if x.name == NAME]
    a = slurm.submit("bob", "flat", 64, 30, time="5")  # 5-minute limit: across the reservation's start
    b = slurm.submit("carol", "chem", 64, 10, time="1", begin="now+20")  # ends before it
    c = slurm.submit("dave", "flat", 8, 10, time="1", reservation=NAME)
    # read once slurmctld has looked at all three (each pending with a reason other than None),
    # however loaded the machine: what `start` reads is then what the scheduler decided, not a
    # job it has not seen. At most 12 s: carol's job begins 20 s ahead and must still be pending
    seen_by = time.time() + 12
    while True:
        reasons = slurm.run("squeue", "-h", "-j", f"{a},{b},{c}", "-o", "%i|%T|%r").splitlines()
        looked = all(x.split("|")[1] != "PENDING" or x.split("|")[2] not in ("None", "") for x in reasons)
        if (len(reasons) == 3 and looked) or time.time() >= seen_by:
            break
        time.sleep(1)
    p = _cli(slurm, "start", "--json")
    assert p.returncode == 0, p.stderr
    return r, a, b, c, reasons, json.loads(p.stdout)


def test_start_estimates_around_a_reservation(slurm):
    try:
        for again in range(3):
            r, a, b, c, reasons, d = _scenario(slurm)
            carol = next((e for e in d["jobs"] if e["job_id"] == b), {})
            held = carol.get("start") is None and "ReqNodeNotAvail" in (carol.get("reason") or "")
            if not held:
                break
            # slurmctld itself held carol's job off the reserved node (CI runs on a loaded machine,
            # 22.05; twice in a row on 2026-11-29): the premise failed, not the estimate; the
            # scenario again, up to three times (CI's of 2026-11-29 afternoon: all three; then the
            # estimate is held to say what squeue says, and bob's and dave's are checked as ever)
            print(f"slurmctld held carol's job {b} for the reservation ({carol.get('reason')}): the scenario again")
        ests = {e["job_id"]: e for e in d["jobs"]}
        assert {a, b, c} <= ests.keys(), d
        assert any(NAME in n and "reservations modelled" in n for n in d["notes"]), d["notes"]
        ea, eb, ec = ests[a], ests[b], ests[c]
        # bob's: at the reservation's end (within a backfill cycle), and it names it
        assert ea["start"] is not None and r.end <= ea["start"] <= r.end + 31, (ea.get("reason"), reasons, ea, r)
        assert (ea["reservation"], ea["reservation_role"]) == (NAME, "delayed by")
        # carol's: at her begin time, before it; dave's: at its start, in it
        if held:  # squeue's reason, not a time: the estimate does not start a job slurmctld holds off
            assert eb["start"] is None and eb["reason"].startswith("waits for ReqNodeNotAvail"), eb
        else:
            assert eb["start"] is not None and eb["start"] + 60 <= r.start and eb["reservation"] is None, (eb.get("reason"), reasons, eb, r)
        assert ec["start"] is not None and r.start <= ec["start"] <= r.start + 31, (ec.get("reason"), reasons, ec, r)
        assert (ec["reservation"], ec["reservation_role"]) == (NAME, "in")
        human = _cli(slurm, "start", "-u", "bob")
        assert human.returncode == 0 and f"delayed by reservation {NAME}" in human.stdout, human.stdout
        w = _cli(slurm, "why", a)  # why's estimate line says it too
        assert w.returncode == 0 and f"delayed by reservation {NAME}" in w.stdout, w.stdout
        # the real starts
        real: dict[str, float] = {}
        deadline = r.end + 150
        mine = (a, c) if held else (a, b, c)
        while time.time() < deadline and len(real) < len(mine):
            for j in mine:
                if j not in real:
                    s = _real_start(slurm, j)
                    if s is not None:
                        real[j] = s
            time.sleep(2)
        assert len(real) == len(mine), real
        assert real[a] >= r.end - 1, "Slurm started the job across the reservation"
        for j, e in ((a, ea), (b, eb), (c, ec)) if not held else ((a, ea), (c, ec)):
            print(f"job {j}: estimate {e['start'] - d['now']:+.0f} s, squeue --start "
                  f"{'-' if e['squeue_start'] is None else format(e['squeue_start'] - d['now'], '+.0f')} s, "
                  f"real {real[j] - d['now']:+.0f} s")
            assert abs(e["start"] - real[j]) <= 60, (j, e, real[j])
    finally:
        slurm.cancel_all()  # a reservation with jobs in it cannot be deleted
        slurm.run("scontrol", "delete", f"reservation={NAME}", check=False)
