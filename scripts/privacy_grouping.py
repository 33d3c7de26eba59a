"""What grouping the cluster's running jobs costs the forecast (docs/privacy.md): under
PrivateData=jobs the world-readable list carries groups of at least 3 jobs of 3 users, their time
left to the hour (privacy.grouped_running), not each job. The projection of the cluster's total usage (what every
user's F is divided by, where the agent does not hold the total) is made from the exact jobs and
from their groups, on a generated cluster (times to the limits spread over --spread-days, rates
1-64 CPUs; a user sharing an account; the web page's default plan, 17 days of 5-minute passes, a
week's half-life). Prints the largest difference of F (the user's, about 0.8 now) over every
pass, and over the first hour and day. Generated data, not a capture.

Run:  .venv/bin/python scripts/privacy_grouping.py [--jobs 50,500,5000] [--seeds 5]
"""

from __future__ import annotations

import argparse
import random

from fscontrol.export.privacy import grouped_running
from fscontrol.forecast.classic import Segment
from fscontrol.forecast.projection import Projection


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default="50,500,5000")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--spread-days", type=float, default=2.0)
    a = ap.parse_args()
    P, HL, days = 300.0, 7 * 86400.0, 17.0
    passes = round(days * 86400 / P)
    half = (days - 3) / 2 * 86400
    plan = [Segment(half, 16.0), Segment(3 * 86400, 0.0), Segment(half, 16.0)]
    print(f"{'jobs':>6} {'seed':>4} {'groups':>6}  largest |dF|: first hour   first day   17 days")
    for n in [int(x) for x in a.jobs.split(",")]:
        for seed in range(a.seeds):
            rng = random.Random(seed)
            cluster = [[rng.uniform(0, a.spread_days * 86400), float(rng.randint(1, 64)), f"u{rng.randrange(max(3, n // 5))}"]
                       for i in range(n)]
            mates = [(e[0], e[1], 0.25) for e in cluster[: n // 10]]
            total0 = 2e3 * 3600 * sum(e[1] for e in cluster) / 32
            u0 = 0.3 * total0 / 100
            s = 0.01  # the user's normalized share; F = 2^(-(U_E / s)), d = 1
            f = {}
            groups, _ = grouped_running([tuple(e) for e in cluster])
            for name, jobs in (("exact", cluster), ("grouped", groups)):
                p = Projection(u0, total0, period_s=P, half_life_s=HL, weighted_jobs=mates,
                               cluster_jobs=[tuple(e[:2]) for e in jobs], plan=plan)
                f[name] = [2 ** (-(u / t) / s) for u, t in (p.at(k) for k in range(passes))]
            diff = [abs(x - y) for x, y in zip(f["exact"], f["grouped"], strict=True)]
            print(f"{n:>6} {seed:>4} {len(groups):>6}  {max(diff[:12]):>24.2e} "
                  f"{max(diff[:288]):>11.2e} {max(diff):>9.2e}   (F now {f['exact'][0]:.3f})")


if __name__ == "__main__":
    main()
