"""Benchmark the simulator's EASY when arrivals outpace the machine (issue #15).

Run:  PYTHONPATH=. .venv/bin/python bench/bench_sim_overload.py [--factor 2.5] [--repeat 3]
          [--limit N] [--reference]

The "normal" case is the SDSC Blue Horizon log as it is (samples/traces, 232,562 jobs with a run
time, 144 nodes, offered load ~0.77); the "overloaded" case is the same jobs with every submit
time divided by --factor (2.5: offered load ~1.9, the queue grows to ~10^5 jobs). Both run through
the engine alone (``fscontrol.sim.engine.simulate``, no metrics), alternately, best of --repeat;
the figure is the per-job cost of the overloaded run over the normal one's, in the same process
(CPU time of the process, time.process_time: the machine is shared).

--reference also runs the engine as it was before the change (tests/sim_engine_reference.py, a
verbatim copy) on both cases, checks that every job starts at the same second, and prints its
ratio: use --limit (e.g. 60000) with it, the old engine is quadratic when overloaded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fscontrol.sim import get_policy, read_swf  # noqa: E402
from fscontrol.sim.engine import simulate  # noqa: E402
from fscontrol.sim.workload import SimJob, Workload  # noqa: E402

SWF = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"


def compressed(w: Workload, factor: float) -> Workload:
    """The same jobs, submit times divided by ``factor`` (arrivals ``factor`` times faster)."""
    jobs = [SimJob(j.job_id, j.submit / factor, j.run, j.estimate, j.size, j.user, j.account) for j in w.jobs]
    return Workload(f"{w.name} x{factor:g}", w.nodes, jobs)


def timed(sim, w: Workload, policy) -> tuple[float, object]:
    """CPU seconds of this process (the machine is shared: wall time moves with the others' load)."""
    t0 = time.process_time()
    r = sim(w, policy)
    return time.process_time() - t0, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", type=float, default=2.5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="only the first N job records")
    ap.add_argument("--policy", default="easy")
    ap.add_argument("--reference", action="store_true", help="also the former engine (slow: use --limit)")
    a = ap.parse_args()

    w = read_swf(SWF, limit=a.limit)
    over = compressed(w, a.factor)
    pol = get_policy(a.policy)
    n = len(w.jobs)
    print(f"{w.name}: {n:,} jobs, {w.nodes} nodes; policy {pol.label}; overloaded = submit times / {a.factor:g}")
    best = {"normal": float("inf"), "over": float("inf")}
    runs = {}
    for _ in range(a.repeat):
        for key, wl in (("normal", w), ("over", over)):
            dt, r = timed(simulate, wl, pol)
            best[key] = min(best[key], dt)
            runs[key] = r
    us_n = best["normal"] / n * 1e6
    us_o = best["over"] / n * 1e6
    print(f"normal      {best['normal']:7.2f} s  {us_n:6.1f} us/job  {n / best['normal']:9,.0f} jobs/s  ({runs['normal'].passes:,} passes)")
    print(f"overloaded  {best['over']:7.2f} s  {us_o:6.1f} us/job  {n / best['over']:9,.0f} jobs/s  ({runs['over'].passes:,} passes)")
    print(f"per-job cost overloaded / normal: {us_o / us_n:.2f}x  (target <= 2)")
    if a.reference:
        sys.path.insert(0, str(ROOT / "tests"))
        import sim_engine_reference as ref

        t_n, r_n = timed(ref.simulate, w, pol)
        t_o, r_o = timed(ref.simulate, over, pol)
        same = r_n.start == runs["normal"].start and r_o.start == runs["over"].start
        print(f"former engine: normal {t_n / n * 1e6:6.1f} us/job, overloaded {t_o / n * 1e6:6.1f} us/job, "
              f"ratio {t_o / t_n:.2f}x (one run each); same start times as the new engine: {same}")


if __name__ == "__main__":
    main()
