#!/usr/bin/env python3
"""Record where slurmctld (select/cons_tres, CR_CPU) puts jobs of `sbatch -n N` on a testbed of
4 nodes of 32 CPUs, and the nodes backfill plans for a pending one
(tests/data/captures/nodeplace-4x32/, checked by tests/test_nodeplace.py against
fscontrol/sim/nodeplace.py). Run as root on a testbed with no other jobs, with its client
environment, from the checkout:

    TB_CPUS=32 TB_NODES=4 TB_CTLD_PORT=... scripts/testbed.sh start DIR   # (or tests/testbed.py ensure_testbed)
    eval "$(scripts/testbed.sh env DIR)"
    python3 scripts/record-nodeplace.py DIR tests/data/captures/nodeplace-4x32
    python3 scripts/record-nodeplace.py DIR tests/data/captures/nodeplace-4x32 churn-1 churn-2

Each scenario: `fill` jobs pinned with -w (to shape the free CPUs; their placement is not under
test), then the jobs under test, each submitted once the one before it runs (`run`) or left to
pend (`pend`); `churn-SEED` and `bfchurn-SEED` (named on the command line): random submissions
and cancellations (`churn`), a random machine and queue for backfill (`bfchurn`). NAME.txt: `scontrol -d -o show job` of the scenario's jobs (SLURM_TIME_FORMAT=%s),
once the backfill plan has settled for a scenario with pending jobs; NAME.cmd: the commands, the
user, the time and the Slurm version. All the scenario's jobs are cancelled after it. For the
24.11 testbed (FSCONTROL_SLURM=24.11): OUT tests/data/captures/nodeplace-4x32-24.11."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

D = Path(sys.argv[1])
OUT = Path(sys.argv[2])
ONLY = set(sys.argv[3:])
ENV = {**os.environ, "SLURM_TIME_FORMAT": "%s"}
USER, ACCOUNT = "alice", "flat"

# (kind, CPUs, time limit in minutes, node for -w or "")
SCENARIOS: dict[str, list[tuple[str, int, int, str]]] = {
    # from an empty machine: best fit single node, then spread in node order
    "pack": [("run", 5, 30, ""), ("run", 20, 30, ""), ("run", 7, 30, ""), ("run", 30, 30, ""),
             ("run", 3, 30, ""), ("run", 40, 30, ""), ("run", 12, 30, ""), ("run", 10, 30, "")],
    "spread": [("run", 50, 30, ""), ("run", 40, 30, ""), ("run", 7, 30, ""), ("run", 6, 30, "")],
    # free [10, 0, 20, 5]: a full node cuts the nodes into sets; the job of 22 goes to the set
    # that holds it (nodes 3-4), not to the first nodes in order
    "sets": [("fill", 22, 30, "tbnode1"), ("fill", 32, 30, "tbnode2"), ("fill", 12, 30, "tbnode3"),
             ("fill", 27, 30, "tbnode4"), ("run", 22, 30, ""), ("run", 9, 30, ""), ("run", 4, 30, "")],
    # free [12, 6, 25, 8]: the smallest node that holds the job; none holds it: the biggest set
    "bestfit": [("fill", 20, 30, "tbnode1"), ("fill", 26, 30, "tbnode2"), ("fill", 7, 30, "tbnode3"),
                ("fill", 24, 30, "tbnode4"), ("run", 7, 30, ""), ("run", 6, 30, ""), ("run", 13, 30, ""),
                ("run", 20, 30, "")],
    # free [10, 10, 0, 28]: the smallest sufficient set (nodes 1-2, 20 CPUs) before the set of
    # node 4, which alone would hold the job of 15
    "setfit": [("fill", 22, 30, "tbnode1"), ("fill", 22, 30, "tbnode2"), ("fill", 32, 30, "tbnode3"),
               ("fill", 4, 30, "tbnode4"), ("run", 15, 30, ""), ("run", 5, 30, ""), ("run", 20, 30, "")],
    # backfill: free now [6, 0, 0, 0]; at +5 min (the short fillers' end) [6, 8, 8, 8]. The job of
    # 22 is planned on nodes 1-3 (6 + 8 + 8), node 1 among them: the job of 4 for 30 minutes
    # behind it does not start in node 1's 6 free CPUs (a pool of CPUs would start it); the job
    # of 2 for 1 minute ends before the plan's start and does
    "plan": [("fill", 26, 30, "tbnode1"), ("fill", 24, 30, "tbnode2"), ("fill", 24, 30, "tbnode3"),
             ("fill", 24, 30, "tbnode4"), ("fill", 8, 5, "tbnode2"), ("fill", 8, 5, "tbnode3"),
             ("fill", 8, 5, "tbnode4"), ("pend", 22, 10, ""), ("pend", 4, 30, ""), ("pend", 2, 1, "")],
    # backfill: free now [4, 0, 0, 0], at +7 min [4, 20, 0, 16]: the job of 40 is planned on the three
    # nodes with free CPUs then (a pool would reserve ceil(40 / 32) = 2 nodes), the job of 3 behind it waits
    "plan2": [("fill", 28, 30, "tbnode1"), ("fill", 20, 5, "tbnode2"), ("fill", 12, 30, "tbnode2"),
              ("fill", 32, 30, "tbnode3"), ("fill", 16, 7, "tbnode4"), ("fill", 16, 30, "tbnode4"),
              ("pend", 40, 10, ""), ("pend", 3, 30, "")],
}


def run(*argv: str, user: str | None = None, check: bool = True) -> str:
    cmd = list(argv) if user is None else ["runuser", "-u", user, "--", *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=ENV, check=False)
    if check and p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


def state(job: str) -> str:
    return run("squeue", "-h", "-j", job, "-o", "%T", check=False).strip()


def queue_empty() -> None:
    for _ in range(300):
        if not run("squeue", "-h", "-o", "%A").split():
            return
        time.sleep(0.5)
    raise SystemExit("the queue did not empty")


def show(ids: list[str]) -> str:
    return "".join(run("scontrol", "-d", "-o", "show", "job", j) for j in ids)


def plans(ids: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in show(ids).splitlines():
        f = dict(t.split("=", 1) for t in line.split() if "=" in t)
        if f.get("JobState") == "PENDING":
            out.append((f.get("StartTime", ""), f.get("SchedNodeList", "")))
    return out


def churn(name: str, seed: int, steps: int = 40) -> None:
    """`churn-SEED`: from an empty machine, `steps` random events: a job of 1-8 or 1-40 CPUs (at most
    the free CPUs) submitted and left to start, or (with probability 0.35, or when fewer than 4
    CPUs are free) a random running job cancelled and waited out of the queue. NAME.txt: each
    job's `scontrol -d -o show job` read once it runs; NAME.cmd: the events in order."""
    rng = random.Random(seed)
    live: dict[str, int] = {}
    lines: list[str] = []
    cmds = [f"# scripts/record-nodeplace.py {name}: {version}, user {USER}, "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, testbed {D} (4 nodes x 32 CPUs, CR_CPU)"]
    for _ in range(steps):
        free = 128 - sum(live.values())
        if live and (free < 4 or rng.random() < 0.35):
            job = rng.choice(sorted(live))
            run("scancel", job)
            for _ in range(120):
                if not state(job):
                    break
                time.sleep(0.5)
            else:
                raise SystemExit(f"job {job} did not leave the queue")
            del live[job]
            cmds.append(f"scancel {job}   # cancel {job}, then waited until squeue no longer lists it")
            continue
        n = min(free, rng.choice([rng.randint(1, 8), rng.randint(1, 40)]))
        argv = ["sbatch", "--parsable", f"--chdir={D / 'jobs'}", "-o", "/dev/null", "-A", ACCOUNT,
                "-n", str(n), "-t", "30", "--wrap", "sleep 3000"]
        job = run(*argv, user=USER).strip().split(";")[0]
        for _ in range(120):
            if state(job) == "RUNNING":
                break
            time.sleep(0.5)
        else:
            raise SystemExit(f"job {job} ({n}) did not start: {show([job])}")
        lines.append(show([job]))
        live[job] = n
        cmds.append(" ".join(a if " " not in a else repr(a) for a in argv) + f"   # run -> job {job}")
    cmds.append("SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job, once it runs")
    (OUT / f"{name}.txt").write_text("".join(lines))
    (OUT / f"{name}.cmd").write_text("\n".join(cmds) + "\n")
    print(f"{name}: {len(lines)} jobs recorded", file=sys.stderr)
    if live:
        run("scancel", *live, check=False)
    queue_empty()


def settle(ids: list[str]) -> None:
    """Until two reads 35 s apart (a backfill cycle is every 30 s) give the same plans."""
    last = None
    for _ in range(8):
        time.sleep(35)
        now = plans(ids)
        if now == last:
            return
        last = now


def bfchurn(name: str, seed: int) -> None:
    """`bfchurn-SEED`: random jobs of 1-40 CPUs with limits of 3-20 minutes started one by one until
    fewer than 24 CPUs are free, then 6 random jobs of 1-60 CPUs with limits of 1-30 minutes
    submitted at once; read once the backfill plans have settled (`settle`)."""
    rng = random.Random(seed)
    ids: list[str] = []
    cmds = [f"# scripts/record-nodeplace.py {name}: {version}, user {USER}, "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, testbed {D} (4 nodes x 32 CPUs, CR_CPU)"]
    used = 0
    while 128 - used >= 24:
        n = min(128 - used, rng.choice([rng.randint(1, 8), rng.randint(1, 40)]))
        argv = ["sbatch", "--parsable", f"--chdir={D / 'jobs'}", "-o", "/dev/null", "-A", ACCOUNT,
                "-n", str(n), "-t", str(rng.randint(3, 20)), "--wrap", "sleep 3000"]
        job = run(*argv, user=USER).strip().split(";")[0]
        for _ in range(120):
            if state(job) == "RUNNING":
                break
            time.sleep(0.5)
        else:
            raise SystemExit(f"job {job} ({n}) did not start: {show([job])}")
        ids.append(job)
        used += n
        cmds.append(" ".join(a if " " not in a else repr(a) for a in argv) + f"   # run -> job {job}")
    for _ in range(6):
        n = rng.choice([rng.randint(1, 8), rng.randint(1, 60)])
        argv = ["sbatch", "--parsable", f"--chdir={D / 'jobs'}", "-o", "/dev/null", "-A", ACCOUNT,
                "-n", str(n), "-t", str(rng.randint(1, 30)), "--wrap", "sleep 3000"]
        job = run(*argv, user=USER).strip().split(";")[0]
        ids.append(job)
        cmds.append(" ".join(a if " " not in a else repr(a) for a in argv) + f"   # pend -> job {job}")
    settle(ids)
    time.sleep(1)
    (OUT / f"{name}.txt").write_text(show(ids))
    cmds.append("SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order, once two "
                "reads 35 s apart gave the same StartTime and SchedNodeList")
    (OUT / f"{name}.cmd").write_text("\n".join(cmds) + "\n")
    print(f"{name}: {len(ids)} jobs recorded", file=sys.stderr)
    run("scancel", *ids, check=False)
    queue_empty()


version = run("sinfo", "--version").strip()
OUT.mkdir(parents=True, exist_ok=True)
if run("squeue", "-h", "-o", "%A").split():
    raise SystemExit("the testbed has jobs: record on an empty queue")
for name, steps in SCENARIOS.items():
    if ONLY and name not in ONLY:
        continue
    cmds = [f"# scripts/record-nodeplace.py {name}: {version}, user {USER}, "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, testbed {D} (4 nodes x 32 CPUs, CR_CPU)"]
    ids: list[str] = []
    pending = False
    for kind, cpus, limit, node in steps:
        argv = ["sbatch", "--parsable", f"--chdir={D / 'jobs'}", "-o", "/dev/null", "-A", ACCOUNT,
                "-n", str(cpus), "-t", str(limit)]
        if node:
            argv.append(f"-w{node}")
        argv += ["--wrap", "sleep 3000"]
        job = run(*argv, user=USER).strip().split(";")[0]
        ids.append(job)
        cmds.append(" ".join(a if " " not in a else repr(a) for a in argv) + f"   # {kind} -> job {job}")
        if kind == "pend":
            pending = True
            time.sleep(1)
            continue
        for _ in range(120):
            if state(job) == "RUNNING":
                break
            time.sleep(0.5)
        else:
            raise SystemExit(f"job {job} ({kind} {cpus}) did not start: {show([job])}")
    if pending:
        # backfill runs every bf_interval (30 s): wait until two reads 35 s apart give the same plans
        # (a job backfill starts changes the next cycle's plans)
        last = None
        for _ in range(8):
            time.sleep(35)
            now = plans(ids)
            if now == last:
                break
            last = now
    time.sleep(1)
    text = show(ids)
    cmds.append("SLURM_TIME_FORMAT=%s scontrol -d -o show job JOBID   # for each job above, in order"
                + (", once two reads 35 s apart gave the same StartTime and SchedNodeList" if pending else ""))
    (OUT / f"{name}.txt").write_text(text)
    (OUT / f"{name}.cmd").write_text("\n".join(cmds) + "\n")
    print(f"{name}: {len(ids)} jobs recorded", file=sys.stderr)
    run("scancel", *ids, check=False)
    queue_empty()
for name in sorted(ONLY):
    if name.startswith("churn-"):
        churn(name, int(name.split("-", 1)[1]))
    elif name.startswith("bfchurn-"):
        bfchurn(name, int(name.split("-", 1)[1]))
