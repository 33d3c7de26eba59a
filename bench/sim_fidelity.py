#!/usr/bin/env python3
"""The simulator's start times against slurmctld's, on the real testbed (issue #32 item 3).

For each seed and fair-share algorithm: a workload generated from the seed (users in accounts
with unequal shares, in bursts, 1-64 CPUs on the testbed's 128 CPUs, runs of 20-150 s
under time limits a minute or two longer) is submitted to the testbed's slurmctld (22.05; one
node of 128 CPUs, or with `--nodes N` N nodes of 128/N, one slurmd each on this host: a new
testbed folder, as a testbed keeps the nodes it was made with), captured (`capture --history`, with
the decay passes' phase and SchedulerParameters), replayed (`simulate CAPTURE`, the capture's
own config) and compared job by job (fscontrol.sim.fidelity). During the run, after every decay
pass, sshare's RawUsage and sprio's F (one probe job per association, pending in the DOWN
partition `parked`) are read into the capture's passes.json; the replay's own F at those passes,
on its own schedule, is compared with them (fscontrol.sim.passfidelity). Opt-in: ~10 minutes per run.
Figures and the command in docs/simulator-fidelity.md.

    sudo FSCONTROL_TESTBED_DIR=/tmp/tb-x FSCONTROL_TESTBED_PORT_OFFSET=N \\
        .venv/bin/python bench/sim_fidelity.py --seeds 21 22 --algos classic fairtree --keep DIR

    .venv/bin/python bench/sim_fidelity.py --replay DIR/seed21-classic   # a kept capture again

`--runs K` runs each workload K times (folders seedS-ALGO, seedS-ALGO-run2, ...) and prints, beside
each replay, slurmctld against itself: the first run's starts against each later run's (the same
figures, each job's wait in the later run put after its arrival in the first: fidelity.as_other_run).
`--pair A B` does that for two kept captures of one workload.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fscontrol.sim import fidelity, passfidelity  # noqa: E402

# (user, account) pairs of the testbed's tree, the flat account's users and science's
# (physics, chem: science has RawShares 2), with how often each submits
ASSOCS = [("alice", "flat", 3), ("bob", "flat", 2), ("dave", "flat", 1), ("carol", "chem", 2),
          ("alice", "physics", 2), ("bob", "physics", 1)]
AGE = {"PriorityWeightAge": "20000", "PriorityMaxAge": "00:20:00"}


def workload(seed: int, jobs: int = 45, span_s: float = 180.0) -> list[tuple[float, str, str, int, int]]:
    """(offset s, user, account, CPUs, run s), sorted: bursts of 3-8 jobs, one user each mostly."""
    rng = random.Random(seed)
    weights = [w for _, _, w in ASSOCS]
    out = []
    t = 0.0
    while len(out) < jobs:
        u, a, _ = rng.choices(ASSOCS, weights)[0]
        for _ in range(rng.randint(3, 8)):
            if len(out) >= jobs:
                break
            if rng.random() < 0.2:
                u, a, _ = rng.choices(ASSOCS, weights)[0]
            cpus = max(1, min(64, int(round(math.exp(rng.uniform(0, math.log(64)))))))
            out.append((round(t + rng.uniform(0, 4), 1), u, a, cpus, rng.randint(20, 150)))
        t += rng.expovariate(1.0 / (span_s / (jobs / 5.5)))
    return sorted(out)


def run_on_testbed(tb, seed: int, algo: str, folder: Path) -> None:
    from fscontrol.slurm import parse
    from fscontrol.slurm.source import capture, last_decay_pass

    tb.cancel_all()
    if algo == "fairtree":
        tb.set_priority_flags("", restart=True)
    else:
        tb.set_priority_flags("NO_FAIR_TREE")
    tb.set_conf(**AGE)
    tb.reset_usage()
    jobs = workload(seed)
    # one probe per association of the workload, pending in the DOWN partition `parked`, so sprio
    # shows its F after every pass (as tests/test_integration_sim_fidelity.py). Submitted more than
    # the capture's 2-s margin before the first job: outside the workload (own_jobs); pending at
    # the capture, the replay leaves them out (PartitionDown)
    probes = {tb.probe(u, a): (a, u) for u, a in sorted({(u, a) for _, u, a, _, _ in jobs})}
    time.sleep(3)
    # the fair-share factors slurmctld holds are the last pass's until its next: wait for one, or
    # the first jobs get the previous run's (the replay starts from no usage)
    tb.wait_for_pass()
    time.sleep(1)
    state = str(tb.dir / "spool" / "ctld")
    last = last_decay_pass(state)
    passes: list[dict] = []

    def read_pass() -> None:
        """After a new decay pass (slurmctld's priority_last_decay_ran moved): sshare's and
        sprio's text, kept if no other pass fell between the two reads."""
        nonlocal last
        now = last_decay_pass(state)
        if now is None or now == last:
            return
        last = now
        at = time.time()
        shares = tb.run(*parse.SSHARE_ARGS)
        prio = tb.run(*parse.SPRIO_ARGS)
        if last_decay_pass(state) == now:
            passes.append({"pass": now, "read_at": [at, time.time()], "sshare": shares, "sprio": prio})

    t0 = time.time()
    ids = []
    due = list(jobs)
    while due:
        read_pass()
        while due and t0 + due[0][0] <= time.time():
            _, u, a, cpus, secs = due.pop(0)
            ids.append(tb.submit(u, a, cpus, secs))
        time.sleep(0.1)
    print(f"  {len(ids)} jobs submitted in {time.time() - t0:.0f} s; waiting for them to end", flush=True)
    while tb.run("squeue", "-h", "-p", "normal", "-o", "%A").strip():
        for _ in range(10):
            read_pass()
            time.sleep(0.5)
    time.sleep(3)
    read_pass()
    capture(tb.source(), folder, history_s=time.time() - t0 + 2, note=f"sim_fidelity seed {seed} {algo}")
    tb.run("scancel", *probes, check=False)
    # slurmctld's log, kept: its ms times (`_job_complete`, the decay thread's `_read_last_decay_ran`)
    # order a job's end against a pass of the same second, which sacct's seconds cannot (docs)
    log = Path(tb.dir) / "log" / "slurmctld.log"
    if log.is_file():
        (folder / "slurmctld.log").write_bytes(log.read_bytes())
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "passes.json").write_text(json.dumps({
        "note": "sshare's and sprio's text just after each decay pass of the run (bench/sim_fidelity.py), "
                "the pass's time from slurmctld's StateSaveLocation/priority_last_decay_ran; probes: one job "
                "per association pending in the DOWN partition parked, so sprio shows its F",
        "slurm_version": meta.get("slurm_version"),
        "commands": {"sshare": list(parse.SSHARE_ARGS), "sprio": list(parse.SPRIO_ARGS),
                     "pass": f"{state}/priority_last_decay_ran"},
        "probes": {j: list(k) for j, k in probes.items()},
        "passes": passes,
    }, indent=1) + "\n")
    print(f"  {len(passes)} decay passes read (sshare, sprio)", flush=True)


def own_jobs(folder: Path, into: Path) -> Path:
    """A copy of the capture whose jobs.txt keeps the jobs submitted in its history window (sacct
    also lists an earlier run's jobs still running when the window began: not this workload's)."""
    import shutil

    shutil.copytree(folder, into)
    since = json.loads((folder / "meta.json").read_text())["history_window"][0]
    lines = (folder / "jobs.txt").read_text().splitlines()
    col = lines[0].split("|").index("Submit")
    keep = [lines[0]] + [ln for ln in lines[1:] if float(ln.split("|")[col]) >= since]
    (into / "jobs.txt").write_text("\n".join(keep) + "\n")
    return into


def report(folder: Path) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fscontrol-fidelity-") as tmp:
        own = own_jobs(folder, Path(tmp) / folder.name)
        real = fidelity.real_starts(own)
        sim = fidelity.replay(own)
        c = fidelity.compare(real, sim)
        print(fidelity.format_compare(c), flush=True)
        if (own / "passes.json").is_file():  # F per pass against sprio: the replay's own schedule, then the real starts
            for given in (False, True):
                p = passfidelity.compare_passes(own, given_real_starts=given)
                print(passfidelity.format_passes(p), flush=True)
                c["f_per_pass" + ("_given_real_starts" if given else "")] = {
                    k: v for k, v in p.items() if k != "misses"} | {"misses": len(p["misses"])}
    return c


def pair(a: Path, b: Path) -> dict:
    """slurmctld against itself: capture a's real starts against b's (two runs of one workload)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fscontrol-fidelity-") as tmp:
        ra = fidelity.real_starts(own_jobs(a, Path(tmp) / "a"))
        rb = fidelity.real_starts(own_jobs(b, Path(tmp) / "b"))
    c = fidelity.compare(ra, fidelity.as_other_run(ra, rb))
    print(f"slurmctld against itself: {a.name} (as real) against {b.name} (as the replay)", flush=True)
    print(fidelity.format_compare(c), flush=True)
    return c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[21, 22])
    ap.add_argument("--algos", nargs="+", default=["classic", "fairtree"], choices=["classic", "fairtree"])
    ap.add_argument("--keep", type=Path, help="keep the captures here (seedS-ALGO folders)")
    ap.add_argument("--replay", type=Path, nargs="+", help="only replay these kept captures")
    ap.add_argument("--out", type=Path, help="the figures as JSON")
    ap.add_argument("--runs", type=int, default=1, help="run each workload K times; slurmctld against itself too")
    ap.add_argument("--pair", type=Path, nargs=2, metavar=("A", "B"), help="two kept captures of one workload: "
                    "slurmctld against itself")
    ap.add_argument("--nodes", type=int, default=1, choices=range(1, 9), metavar="N",
                    help="a testbed made here gets N nodes of 128/N CPUs (one slurmd each); default 1")
    a = ap.parse_args()
    results = {}
    if a.pair:
        results["pair"] = pair(*a.pair)
    elif a.replay:
        for f in a.replay:
            print(f"{f}:")
            results[str(f)] = report(f)
    else:
        import tempfile

        from testbed import ensure_testbed, stop_testbed

        import os

        os.environ["TB_CPUS"] = str(128 // a.nodes)
        tb = ensure_testbed(nodes=a.nodes)
        keep = a.keep or Path(tempfile.mkdtemp(prefix="fscontrol-fidelity-"))
        keep.mkdir(parents=True, exist_ok=True)
        try:
            for algo in a.algos:
                for seed in a.seeds:
                    runs = []
                    for r in range(1, a.runs + 1):
                        f = keep / (f"seed{seed}-{algo}" + (f"-run{r}" if r > 1 else ""))
                        print(f"seed {seed}, {algo}" + (f", run {r}" if a.runs > 1 else "") + f": {f}", flush=True)
                        run_on_testbed(tb, seed, algo, f)
                        runs.append(f)
                        try:
                            results[f.name] = report(f)
                        except Exception as e:  # (the capture is kept: --replay it)
                            print(f"  replay failed: {type(e).__name__}: {e}", flush=True)
                    for f in runs[1:]:
                        results[f"{runs[0].name} against {f.name}"] = pair(runs[0], f)
        finally:
            tb.set_conf(PriorityWeightAge="0", PriorityMaxAge="")
            tb.set_priority_flags("NO_FAIR_TREE", restart=True)
            if tb.started_here:
                stop_testbed(tb)
    if a.out:
        a.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
