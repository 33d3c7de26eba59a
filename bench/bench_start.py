#!/usr/bin/env python3
"""CPU time of one user's start estimate (fscontrol.forecast.start.estimate) on a synthetic queue
(issue #32 item 4: under 1 s at 10,000 pending jobs; figures in docs/start.md).

The queue, from a seed: `--nodes` 128-CPU nodes, full of running jobs (1-128 CPUs, limits
1-48 h, started up to their limit ago); `--pending` pending jobs of `--users` users (sizes
1-256 CPUs log-uniform, limits 10 min-48 h, random priorities); each user's typical fraction
0.2-1. One user's estimate: a user whose jobs sit in the middle of the queue, and the user with
the lowest-priority job (the whole queue is played before it starts). Median of `--repeat`.

`--against-old`: the same queue through the planner as it was before the cost work
(tests/start_reference.py, kept verbatim as the reference), in its own process, and the ratio.
Peak RSS: each planner runs in a process of its own (`--impl`); the figure is the process's peak
(ru_maxrss), beside the peak once the queue is built (what the estimate itself adds is the
difference).

    .venv/bin/python bench/bench_start.py --pending 10000 --repeat 5 --against-old
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fscontrol.forecast import start as st  # noqa: E402
from fscontrol.sim.slurmsched import SlurmSched  # noqa: E402


def queue(seed: int, nodes: int, pending: int, users: int, now: float) -> list[st.StartJob]:
    rng = random.Random(seed)
    jobs = []
    total = nodes * 128
    used = 0
    i = 0
    while used < total:
        c = min(total - used, max(1, int(math.exp(rng.uniform(0, math.log(128))))))
        lim = rng.uniform(3600, 48 * 3600)
        jobs.append(st.StartJob(str(i), f"u{rng.randrange(users)}", "a", "p", "RUNNING", c, lim, now - rng.uniform(0, lim),
                            0.0, "None", now - lim))
        used += c
        i += 1
    for _ in range(pending):
        c = max(1, int(math.exp(rng.uniform(0, math.log(256)))))
        jobs.append(st.StartJob(str(i), f"u{rng.randrange(users)}", "a", "p", "PENDING", c, rng.uniform(600, 48 * 3600),
                            None, float(rng.randrange(10**6)), "Priority", now - 60))
        i += 1
    return jobs


def run(a) -> dict:
    now = 1.8e9
    jobs = queue(a.seed, a.nodes, a.pending, a.users, now)
    rng = random.Random(a.seed + 1)
    fr = {f"u{k}": rng.uniform(0.2, 1.0) for k in range(a.users)}
    pend = sorted((j for j in jobs if j.state == "PENDING"), key=lambda j: -j.priority)
    mid = pend[len(pend) // 2].user
    last = pend[-1].user
    sc = SlurmSched(node_cpus=128)
    # --reservations N: N advance reservations of 10 nodes each, 4 h long, the first 6 h ahead, 12 h apart
    from fscontrol.forecast.resvplan import Window

    wins = [Window(f"r{k}", now + 6 * 3600 + k * 12 * 3600, now + 10 * 3600 + k * 12 * 3600, 10 * 128)
            for k in range(a.reservations)]
    if a.impl == "old":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from start_reference import ref_plan

        def old_plan(*args, **kw):  # the old planner knew none of the later features: only the base queue
            # (args[8] the owners, for SchedulerParameters' per-user limits, unset here; args[12] `why`, filled)
            extra = [v for v in (*args[9:12], *args[13:], *kw.values()) if v]
            if extra:
                raise SystemExit("--impl old / --against-old: the old planner plays the base queue only "
                                 "(no --reservations, --age, --fairshare, --dependent, --begins, --limits)")
            return ref_plan(*args[:8])

        st._plan = old_plan
    extra = {"windows": wins} if wins else {}
    if a.age:
        # --age: the pending jobs submitted up to 8 days ago (those past 7 days at the maximum age),
        # PriorityWeightAge 1,000,000 over PriorityMaxAge 7 days, passes every 5 minutes: the
        # queue is re-sorted at every pass within bf_window (the worst case)
        from dataclasses import replace

        rng2 = random.Random(a.seed + 2)
        jobs = [replace(j, submit=now - rng2.uniform(0, 8 * 86400)) if j.state == "PENDING" else j for j in jobs]
        extra["age"] = (1e6, 7 * 86400.0, 300.0)
    if a.fairshare:
        # --fairshare: classic fair-share charged and decayed at each pass (forecast/startfs.py): the
        # users in 30 accounts (u_k in a{k % 30}), RawShares 1-10 per account and 1 per user, a
        # week's usage spread at random; PriorityWeightFairshare 1,000,000 (the priorities' range),
        # passes every 5 minutes, half-life 7 days; billing = CPUs
        from dataclasses import replace

        from fscontrol.forecast import startfs
        from fscontrol.records import ShareRow

        jobs = [replace(j, account=f"a{int(j.user[1:]) % 30}") for j in jobs]
        rng3 = random.Random(a.seed + 3)
        uu = {f"u{k}": rng3.uniform(0, 2 * a.nodes * 128 * 7 * 86400 / a.users) for k in range(a.users)}
        rows = [ShareRow("root", "", "", 0, None, False, 1.0, int(sum(uu.values())), 1.0, 1.0, None)]
        for acc in range(30):
            mine = [u for u in uu if int(u[1:]) % 30 == acc]
            rows.append(ShareRow(f"a{acc}", "", "root", 1, rng3.randint(1, 10), False, None,
                                 int(sum(uu[u] for u in mine)), None, None, None))
            rows += [ShareRow(f"a{acc}", u, f"a{acc}", 2, 1, False, None, int(uu[u]), None, None, None) for u in mine]
        m, why = startfs.fairshare_model(rows, {"PriorityWeightFairShare": "1000000",
                                                "PriorityFlags": "" if a.fairtree else "NO_FAIR_TREE",
                                                "PriorityCalcPeriod": "00:05:00", "PriorityDecayHalfLife": "7-00:00:00"})
        assert m is not None, why
        extra["fairshare"] = (m, {})
    if a.dependent or a.begins:
        # --dependent N: N pending jobs (at random) pending on a dependency, afterok on a running job;
        # --begins N: N others waiting for a begin time up to 3 days ahead
        from dataclasses import replace

        from fscontrol.forecast.startdeps import parse_deps

        rng4 = random.Random(a.seed + 4)
        run_ids = [j.job_id for j in jobs if j.state == "RUNNING"]
        pk = [k for k, j in enumerate(jobs) if j.state == "PENDING"]
        picked = rng4.sample(pk, a.dependent + a.begins)
        lines = []
        for k in picked[:a.dependent]:
            lines.append(f"{jobs[k].job_id}|afterok:{rng4.choice(run_ids)}(unfulfilled)")
            jobs[k] = replace(jobs[k], reason="Dependency")
        for k in picked[a.dependent:]:
            jobs[k] = replace(jobs[k], reason="BeginTime", start=now + rng4.uniform(0, 3 * 86400))
        extra["deps"] = parse_deps("\n".join(lines))
    if a.limits:
        # --limits N: the QOS normal's MaxJobsPU=N for every user and GrpTRES=cpu of a tenth of the
        # cluster on each of 30 accounts (u_k in a{k % 30}); a user at N running jobs has every
        # pending job held (QOSMaxJobsPerUserLimit), as squeue shows it (model/acctpolicy.py)
        from dataclasses import replace

        from fscontrol.model import acctpolicy
        from fscontrol.slurm.tres import AssocLimits

        jobs = [replace(j, account=f"a{int(j.user[1:]) % 30}") for j in jobs]
        nrun: dict[str, int] = {}
        for j in jobs:
            if j.state == "RUNNING":
                nrun[j.user] = nrun.get(j.user, 0) + 1
        jobs = [replace(j, reason="QOSMaxJobsPerUserLimit") if j.state == "PENDING" and nrun.get(j.user, 0) >= a.limits
                else j for j in jobs]
        assocs = [AssocLimits("root", "", "", {}, {})]
        assocs += [AssocLimits(f"a{k}", "", "root", {"GrpTRES": {"cpu": a.nodes * 128 / 10}}, {}) for k in range(30)]
        assocs += [AssocLimits(f"a{int(u[1:]) % 30}", u, f"a{int(u[1:]) % 30}", {}, {}) for u in fr]
        keys = {(j.account, j.user, "normal") for j in jobs}
        lim = acctpolicy.model(assocs, [AssocLimits("normal", "", "", {}, {"MaxJobsPU": a.limits})], keys)
        extra["limits"] = (lim, {j.job_id: "normal" for j in jobs}, False)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"running": len(jobs) - a.pending, "rss_queue_mib": round(rss0, 1), "cases": []}
    for label, user in (("middle of the queue", mid), ("lowest-priority job", last)):
        times = []
        for _ in range(a.repeat):
            t = time.process_time()
            ests = st.estimate(jobs, now=now, total_cpus=a.nodes * 128, sched=sc, fractions=fr, users={user},
                               **extra)
            times.append(time.process_time() - t)
        out["cases"].append({"label": label, "user": user, "jobs": len(ests),
                             "estimated": sum(e.start is not None for e in ests),
                             "starts": [e.start for e in ests], "cpu_s": statistics.median(times),
                             "cpu_min": min(times), "cpu_max": max(times)})
    out["rss_peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pending", type=int, default=10000)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--users", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--impl", choices=("new", "old"), default=None, help="run one planner here, print JSON")
    ap.add_argument("--against-old", action="store_true", help="the old planner too, in its own process")
    ap.add_argument("--reservations", type=int, default=0, help="advance reservations (10 nodes, 4 h, 12 h apart)")
    ap.add_argument("--age", action="store_true", help="the age term growing (submissions over 8 days, max age 7)")
    ap.add_argument("--fairshare", action="store_true", help="classic fair-share charged at each pass (startfs)")
    ap.add_argument("--fairtree", action="store_true", help="with --fairshare: Fair Tree's ranks instead of classic F")
    ap.add_argument("--dependent", type=int, default=0, help="pending jobs on a dependency (afterok on a running job)")
    ap.add_argument("--begins", type=int, default=0, help="pending jobs waiting for a begin time (up to 3 days ahead)")
    ap.add_argument("--limits", type=int, default=0, help="MaxJobsPU=N for every user, GrpTRES=cpu on 30 accounts")
    a = ap.parse_args()
    if (a.reservations or a.age or a.fairshare) and a.against_old:
        ap.error("--against-old plans without reservations: not with --reservations")
    if a.impl:
        print(json.dumps(run(a)))
        return
    res = {}
    for impl in ("new", "old") if a.against_old else ("new",):
        cmd = [sys.executable, __file__, "--impl", impl, "--pending", str(a.pending), "--nodes", str(a.nodes),
               "--users", str(a.users), "--seed", str(a.seed), "--repeat", str(a.repeat),
               "--reservations", str(a.reservations), *(["--age"] if a.age else []),
               *(["--fairshare"] if a.fairshare else []), *(["--fairtree"] if a.fairtree else []),
               "--dependent", str(a.dependent), "--begins", str(a.begins), "--limits", str(a.limits)]
        res[impl] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        if a.limits and impl == "new":  # the baseline: the same queue, no limits read, in the same run
            cmd[cmd.index("--limits") + 1] = "0"
            res["nolimits"] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    new = res["new"]
    print(f"{a.pending} pending, {new['running']} running on {a.nodes} x 128 CPUs, {a.users} users, "
          f"{a.reservations} reservations{', the age term growing' if a.age else ''}"
          f"{(', Fair Tree ranks' if a.fairtree else ', fair-share') + ' charged at each pass' if a.fairshare else ''}"
          f"{f', {a.dependent} on a dependency' if a.dependent else ''}{f', {a.begins} with a begin time' if a.begins else ''}"
          f"{f', MaxJobsPU={a.limits} and GrpTRES=cpu on 30 accounts' if a.limits else ''}")
    for k, c in enumerate(new["cases"]):
        line = (f"  {c['label']} ({c['user']}, {c['jobs']} jobs, {c['estimated']} estimated): CPU {c['cpu_s']:.3f} s "
                f"(min {c['cpu_min']:.3f}, max {c['cpu_max']:.3f})")
        if "old" in res:
            o = res["old"]["cases"][k]
            same = "same starts" if o["starts"] == c["starts"] else "STARTS DIFFER"
            line += f"; old planner {o['cpu_s']:.3f} s, ratio {o['cpu_s'] / c['cpu_s']:.1f}x, {same}"
        if "nolimits" in res:
            b = res["nolimits"]["cases"][k]
            line += (f"; without the limits {b['cpu_s']:.3f} s ({b['estimated']} estimated), ratio "
                     f"{c['cpu_s'] / b['cpu_s']:.2f}x")
        print(line)
    for impl, r in res.items():
        print(f"  {impl} planner: peak RSS {r['rss_peak_mib']} MiB (queue built: {r['rss_queue_mib']} MiB)")


if __name__ == "__main__":
    main()
