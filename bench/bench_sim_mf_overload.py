"""Benchmark the multifactor engine when arrivals outpace the machine (issue #31 item 3).

Run:  .venv/bin/python bench/bench_sim_mf_overload.py [--factors 1.5,2] [--repeat 3] [--limit N]
          [--rows mf-classic,hybrid,mf-fairtree] [--before REV] [--engine python|compiled|auto]

For each row (mf-classic: the preset; hybrid: mf-classic with the agent's hybrid controller before
every pass; mf-fairtree: Fair Tree), the SDSC Blue Horizon log (samples/traces, 232,562 jobs with a
run time, 144 nodes) as it is ("normal") and with every submit time divided by each factor
("x1.5": arrivals 1.5 times faster). The engine alone (`simulate_multifactor`, no metrics), the
cases interleaved, best of --repeat, CPU time of the process (time.process_time: the machine is
shared). Prints the cost per job of each case and its ratio to the normal one's in the same run
(the target: at most 2x), and the rate in jobs/s (Fair Tree's target: at least 20,000 on the whole
log, normal load).

--before REV also runs the engine as it was at git revision REV (bench_sim_multifactor.engine_at),
interleaved with the current one, on every case: its CPU time, and whether every job's start
time, the order the jobs started in and every association's final usage are the same to the bit.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fscontrol.sim import get_policy, read_swf  # noqa: E402
from fscontrol.sim.multifactor import ControlSpec  # noqa: E402
from fscontrol.sim.workload import SimJob, Workload  # noqa: E402

SWF = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"
U_STAR = 20000 * 3600.0  # as bench_sim_multifactor's hybrid row


def compressed(w: Workload, factor: float) -> Workload:
    """The same jobs, submit times divided by ``factor`` (arrivals ``factor`` times faster)."""
    if factor == 1:
        return w
    jobs = [SimJob(j.job_id, j.submit / factor, j.run, j.estimate, j.size, j.user, j.account) for j in w.jobs]
    return Workload(f"{w.name} x{factor:g}", w.nodes, jobs)


ROWS = {
    "mf-classic": lambda: get_policy("mf-classic"),
    "hybrid": lambda: get_policy("mf-classic", control=ControlSpec("hybrid", u_star=U_STAR)),
    "mf-fairtree": lambda: get_policy("mf-fairtree"),
}


def run(engine, w: Workload, pol):
    kw = dict(control_spec=pol.control, depth=pol.depth, backfill=pol.backfill == "easy")
    c0 = time.process_time()
    r = engine.simulate_multifactor(w, pol.priority, **kw)
    return time.process_time() - c0, r


def same(a, b) -> bool:
    return a.start == b.start and a.end == b.end and a.order == b.order and a.final_usage == b.final_usage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factors", default="1.5,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="only the first N job records")
    ap.add_argument("--rows", default="mf-classic,hybrid,mf-fairtree")
    ap.add_argument("--before", metavar="REV", help="also the engine at git revision REV, interleaved")
    ap.add_argument("--engine", choices=("auto", "python", "compiled"), default="auto")
    a = ap.parse_args()
    from fscontrol.sim import accel
    from fscontrol.sim import multifactor

    if a.engine == "auto":
        now = multifactor
        print(f"multifactor engine: {accel.status()}")
    else:
        from bench_sim_multifactor import _Engine

        mod = accel.python_engine() if a.engine == "python" else accel.compiled_engine()
        if mod is None:
            raise SystemExit(f"--engine compiled: {accel.status()}")
        now = _Engine(mod)
        print(f"multifactor engine: {a.engine}")
    before = None
    if a.before:
        from bench_sim_multifactor import engine_at

        before = engine_at(a.before)
    w = read_swf(SWF, limit=a.limit)
    n = len(w.jobs)
    factors = [1.0] + [float(x) for x in a.factors.split(",") if x]
    cases = [(f, compressed(w, f)) for f in factors]
    print(f"{w.name}: {n:,} jobs, {w.nodes} nodes; cases: normal, " + ", ".join(f"x{f:g}" for f in factors[1:])
          + f"; best of {a.repeat}, CPU time")
    for row in a.rows.split(","):
        pol = ROWS[row]()
        best: dict[tuple[str, float], float] = {}
        res: dict[tuple[str, float], object] = {}
        for _ in range(a.repeat):
            for f, wl in cases:
                for name, eng in (("now", now), ("before", before)):
                    if eng is None:
                        continue
                    dt, r = run(eng, wl, pol)
                    best[(name, f)] = min(best.get((name, f), float("inf")), dt)
                    res[(name, f)] = r
        for name in ("now", "before"):
            if (name, 1.0) not in best:
                continue
            base = best[(name, 1.0)] / n * 1e6
            tag = "now" if name == "now" else f"at {a.before}"
            for f in factors:
                us = best[(name, f)] / n * 1e6
                ratio = us / base
                line = (f"{row:<12} {tag:<14} {'normal' if f == 1 else f'x{f:g}':<7} {best[(name, f)]:8.2f} s "
                        f"{us:7.1f} us/job {n / best[(name, f)]:9,.0f} jobs/s  ratio to normal {ratio:5.2f}x")
                if name == "before":
                    sm = same(res[("now", f)], res[("before", f)])
                    line += f"   now/before CPU {best[('now', f)] / best[(name, f)]:5.2f}   same schedule: {sm}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
