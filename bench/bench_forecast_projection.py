"""The forecast's projection: closed form between events (forecast.projection) against the
step-by-step walk it replaced (tests/forecast_reference.py), in the same run (issue #31 item 1).

A cluster with --jobs running jobs (times to their limits spread over a week, rates 1-64), a
user who shares an account (weight 0.25 on a third of the jobs), the page's default plan
(16 CPUs for 7 days, 3 idle, 16 CPUs for 7 days: 17 days) at 5-minute passes, a week's
half-life, the inflow terms on. Both compute the same statements: F after every pass of the
plan (the walk has to), which the projection answers at the page's 60 chart points, the plan's
end and its events. Reported: the best of --runs for each, the ratio, and the largest relative
difference between the two at every pass (checked to 1e-9).

Run:  .venv/bin/python bench/bench_forecast_projection.py [--jobs 5000] [--runs 3] [--days 17]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from forecast_reference import project_running as walk  # noqa: E402

from fscontrol.forecast.classic import Segment  # noqa: E402
from fscontrol.forecast.projection import Projection  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--days", type=float, default=17.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    P, HL = 300.0, 7 * 86400.0
    cluster = [(rng.uniform(0, 7 * 86400), float(rng.randint(1, 64))) for _ in range(a.jobs)]
    weighted = [(left, rate, 0.25) for left, rate in cluster[: a.jobs // 3]]
    inflow_jobs = [(left, -rate * 0.1) for left, rate, _ in weighted]
    half = (a.days - 3) / 2 * 86400
    plan = [Segment(half, 16.0), Segment(3 * 86400, 0.0), Segment(half, 16.0)]
    passes = round(a.days * 86400 / P)
    kw = dict(period_s=P, half_life_s=HL, weighted_jobs=weighted, cluster_jobs=None, plan=plan, inflow=40.0,
              inflow_jobs=inflow_jobs)
    u0, total0 = 3.6e7, 1e9

    def slow():
        return walk(u0, total0, passes=passes, **kw)

    def fast():
        p = Projection(u0, total0, **kw)
        pts = [p.at(max(0, round(passes * i / 59) - 1)) for i in range(60)]
        p.peak(0, passes - 1)
        p.first_at_or_below(0.03, passes - 1)
        return p, pts

    t_slow, t_fast = [], []
    for _ in range(a.runs):  # interleaved
        t = time.perf_counter()
        ref = slow()
        t_slow.append(time.perf_counter() - t)
        t = time.perf_counter()
        p, _ = fast()
        t_fast.append(time.perf_counter() - t)
    worst = max(abs(p.at(k)[0] / u - 1) for k, (u, _) in enumerate(ref))
    print(f"{a.jobs} running jobs, {passes} passes ({a.days:g} days of 5-minute passes), best of {a.runs}:")
    print(f"  step-by-step walk (reference): {min(t_slow) * 1000:10.1f} ms")
    print(f"  closed form (forecast.projection, 60 points + peak + crossing): {min(t_fast) * 1000:10.2f} ms")
    print(f"  ratio: {min(t_slow) / min(t_fast):.0f}x; largest relative difference over every pass: {worst:.1e}")
    assert worst <= 1e-9


if __name__ == "__main__":
    main()
