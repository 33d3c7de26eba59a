#!/usr/bin/env python3
"""CPU time of one user's start estimate (fscontrol.forecast.start.estimate) on a synthetic queue
(issue #32 item 4: under 1 s at 10,000 pending jobs; figures in docs/start.md).

The queue, from a seed: `--nodes` 128-CPU nodes, full of running jobs (1-128 CPUs, limits
1-48 h, started up to their limit ago); `--pending` pending jobs of `--users` users (sizes
1-256 CPUs log-uniform, limits 10 min-48 h, random priorities); each user's typical fraction
0.2-1. One user's estimate: a user whose jobs sit in the middle of the queue, and the user with
the lowest-priority job (the whole queue is played before it starts). Median of `--repeat`.

    .venv/bin/python bench/bench_start.py --pending 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fscontrol.forecast import start as st  # noqa: E402
from fscontrol.sim.slurmsched import SlurmSched  # noqa: E402


def queue(seed: int, nodes: int, pending: int, users: int, now: float) -> list[st.QJob]:
    rng = random.Random(seed)
    jobs = []
    total = nodes * 128
    used = 0
    i = 0
    while used < total:
        c = min(total - used, max(1, int(math.exp(rng.uniform(0, math.log(128))))))
        lim = rng.uniform(3600, 48 * 3600)
        jobs.append(st.QJob(str(i), f"u{rng.randrange(users)}", "a", "p", "RUNNING", c, lim, now - rng.uniform(0, lim),
                            0.0, "None", now - lim))
        used += c
        i += 1
    for _ in range(pending):
        c = max(1, int(math.exp(rng.uniform(0, math.log(256)))))
        jobs.append(st.QJob(str(i), f"u{rng.randrange(users)}", "a", "p", "PENDING", c, rng.uniform(600, 48 * 3600),
                            None, float(rng.randrange(10**6)), "Priority", now - 60))
        i += 1
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pending", type=int, default=10000)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--users", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    now = 1.8e9
    jobs = queue(a.seed, a.nodes, a.pending, a.users, now)
    rng = random.Random(a.seed + 1)
    fr = {f"u{k}": rng.uniform(0.2, 1.0) for k in range(a.users)}
    pend = sorted((j for j in jobs if j.state == "PENDING"), key=lambda j: -j.priority)
    mid = pend[len(pend) // 2].user
    last = pend[-1].user
    sc = SlurmSched(node_cpus=128)
    print(f"{a.pending} pending, {len(jobs) - a.pending} running on {a.nodes} x 128 CPUs, {a.users} users")
    for label, user in (("middle of the queue", mid), ("lowest-priority job", last)):
        times = []
        for _ in range(a.repeat):
            t = time.process_time()
            ests = st.estimate(jobs, now=now, total_cpus=a.nodes * 128, sched=sc, fractions=fr, users={user})
            times.append(time.process_time() - t)
        n = sum(e.start is not None for e in ests)
        print(f"  {label} ({user}, {len(ests)} jobs, {n} estimated): CPU {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f})")


if __name__ == "__main__":
    main()
