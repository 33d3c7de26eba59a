"""Benchmark the multifactor simulator (decay passes, classic fair-share, Fair Tree, the controller)
on the SDSC Blue Horizon log, with AccaSim's EASY as the ratio's base, run in the same benchmark.

Run:  .venv/bin/python bench/bench_sim_multifactor.py [--jobs 20000] [--accasim /tmp/peer-venv-mf/bin/python]

Prints jobs/second, best of --repeat, on the first --jobs jobs of the log (0: the whole log) for:
  * easy: the static-order engine (fscontrol.sim.engine), for scale;
  * mf-classic: priority/multifactor, classic fair-share at d = 1, 5-minute passes, a one-week
    half-life, age 1000 (PriorityMaxAge 7 days) + fair-share 10000;
  * mf-classic + hybrid: the same with the agent's controller (plan_control) before every pass;
  * mf-fairtree: Fair Tree (the whole tree ranked at every pass with a pending job);
and, when --accasim names a Python with AccaSim 1.1.3 installed (`pip install accasim` into a
throwaway venv), AccaSim's EASYBackfilling + FirstFit on the same jobs, in a child process: its
jobs/second is the base of the ratios. AccaSim's whole-log run takes about 500 s here, hence the
prefix by default; the multifactor rows are also run on the whole log with --full.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fscontrol.sim import get_policy, read_swf, run_simulation  # noqa: E402
from fscontrol.sim.multifactor import ControlSpec  # noqa: E402
from fscontrol.sim.workload import Workload  # noqa: E402

SWF = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"

ACCASIM_RUNNER = textwrap.dedent('''
    import collections, collections.abc, json, sys, time
    for name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):
        setattr(collections, name, getattr(collections.abc, name))
    from accasim.base.simulator_class import Simulator
    from accasim.base.scheduler_class import EASYBackfilling
    from accasim.base.allocator_class import FirstFit
    swf, sysconf, out = sys.argv[1:4]
    t0 = time.perf_counter()
    sim = Simulator(swf, sysconf, EASYBackfilling(FirstFit()), RESULTS_FOLDER_PATH=out,
                    scheduling_output=False, statistics_output=False, show_statistics=False, pprint_output=False)
    t1 = time.perf_counter()
    sim.start_simulation()
    t2 = time.perf_counter()
    print(json.dumps({"setup_s": t1 - t0, "sim_s": t2 - t1}))
''')


def prefix_swf(n: int, dest: Path) -> int:
    """The log's header and its first n records with a run time (as the simulator reads them)."""
    kept = 0
    with gzip.open(SWF, "rt") as src, open(dest, "w") as out:
        for line in src:
            if line.startswith(";"):
                out.write(line)
                continue
            f = line.split()
            if len(f) < 18 or float(f[3]) < 0:
                continue
            if n and kept >= n:
                break
            out.write(line)
            kept += 1
    return kept


def run_accasim(python: str, n: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        swf = d / "prefix.swf"
        kept = prefix_swf(n, swf)
        sysconf = d / "sys.json"
        sysconf.write_text(json.dumps({"groups": {"g0": {"core": 8}}, "resources": {"g0": 144}}))
        runner = d / "run_accasim.py"
        runner.write_text(ACCASIM_RUNNER)
        t0 = time.perf_counter()
        p = subprocess.run([python, str(runner), str(swf), str(sysconf), str(d / "out")], capture_output=True,
                           text=True, check=False, cwd=d)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"AccaSim failed: {p.stderr.strip()[-2000:]}")
        res = json.loads(p.stdout.strip().splitlines()[-1])
        res.update(jobs=kept, wall_s=wall)
        return res


def best(fn, repeat: int):
    out, t = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        dt = time.perf_counter() - t0
        if dt < t:
            out, t = r, dt
    return out, t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20000, help="the first N jobs of the log (0: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--accasim", help="a Python with AccaSim 1.1.3 installed (the base of the ratios)")
    ap.add_argument("--full", action="store_true", help="also run the multifactor rows on the whole log, once")
    a = ap.parse_args()

    whole = read_swf(SWF)
    jobs = whole.jobs[: a.jobs] if a.jobs else whole.jobs
    w = Workload(whole.name, whole.nodes, list(jobs), meta=whole.meta)
    n = len(w.jobs)
    print(f"log: {SWF.name}: the first {n:,} jobs with a run time, {w.nodes} nodes")
    base = None
    if a.accasim:
        acc = run_accasim(a.accasim, a.jobs)
        assert acc["jobs"] == n, (acc["jobs"], n)
        base = n / acc["sim_s"]
        print(f"{'AccaSim EASY (base)':<28}{acc['sim_s']:8.2f} s  {base:10,.0f} jobs/s   "
              f"(setup {acc['setup_s']:.2f} s, child wall {acc['wall_s']:.2f} s)")
    u_star = 20000 * 3600.0  # node-seconds; d about 40 on this log's usage (see docs/simulator-control.md)
    rows = [
        ("easy (static order)", get_policy("easy")),
        ("mf-classic", get_policy("mf-classic")),
        ("mf-classic + hybrid", get_policy("mf-classic", control=ControlSpec("hybrid", u_star=u_star))),
        ("mf-fairtree", get_policy("mf-fairtree")),
    ]
    for label, pol in rows:
        r, t = best(lambda pol=pol: run_simulation(w, pol, per_user=False), a.repeat)
        ratio = f"{n / t / base:8.1f}x AccaSim" if base else ""
        print(f"{label:<28}{t:8.2f} s  {n / t:10,.0f} jobs/s {ratio}   mean wait {r.overall['mean_wait_s'] / 60:8.1f} min"
              f"   mean bsld {r.overall['mean_bsld']:8.2f}")
    if a.full and a.jobs:
        print(f"whole log: {len(whole.jobs):,} jobs")
        for label, pol in rows[1:3]:
            r, t = best(lambda pol=pol: run_simulation(whole, pol, per_user=False), 1)
            print(f"{label:<28}{t:8.2f} s  {len(whole.jobs) / t:10,.0f} jobs/s   mean wait "
                  f"{r.overall['mean_wait_s'] / 60:8.1f} min   mean bsld {r.overall['mean_bsld']:8.2f}")


if __name__ == "__main__":
    main()
