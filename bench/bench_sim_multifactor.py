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
prefix by default; the multifactor rows are also run on the whole log with --full (once, or best
of --full-repeat).

The machine may be shared: each row gives wall time (the ratio's base is AccaSim's wall time) and
CPU time (time.process_time), both best of --repeat. `--before REV` also runs the multifactor
engine (fscontrol/sim/multifactor.py) as it was at git revision REV, interleaved with the current
one in this process, and prints the CPU-time ratio (and how many jobs start at a different time:
none, for a change meant to be exact). `--full-fairtree` adds mf-fairtree to the whole-log rows
(about 5 minutes a run). The rows run the engine `fscontrol.sim.accel` chooses (printed first: the
compiled one once `python -m fscontrol.sim.accel build` has made it); `--python-vs-compiled`
times the Python engine against the compiled one, interleaved, on the same rows (and the whole
log with --full).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
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
from fscontrol.sim.slurmsched import SlurmSched  # noqa: E402
from fscontrol.sim.workload import Workload  # noqa: E402
from dataclasses import replace  # noqa: E402

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
    """(result, best wall time, best CPU time) over `repeat` runs."""
    out, t, c = None, float("inf"), float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        r = fn()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if dt < t:
            out, t = r, dt
        c = min(c, dc)
    return out, t, c


def engine_at(rev: str):
    """The multifactor engine as of git revision `rev` (fscontrol/sim/mfcore.py, or multifactor.py
    before the engine had its own module), imported beside the current one: a module with
    `simulate_multifactor`."""
    def show(path: str) -> str | None:
        p = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True)
        return p.stdout if p.returncode == 0 else None

    src = show("fscontrol/sim/mfcore.py")
    name = "mfcore" if src is not None else "multifactor"
    if src is None:
        src = show("fscontrol/sim/multifactor.py")
        if src is None:
            raise SystemExit(f"no multifactor engine at {rev}")
    d = Path(tempfile.mkdtemp())

    def load(modname: str, text: str):
        path = d / f"{modname}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"fscontrol.sim.{modname}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod

    if name == "mfcore":  # (with that revision's multifactor.py, whose names it imports)
        load("_multifactor_before", _current_layout(show("fscontrol/sim/multifactor.py") or ""))
        src = src.replace("from .multifactor import", "from ._multifactor_before import")
    mod = load(f"_{name}_before", _current_layout(src))
    return _Engine(mod) if name == "mfcore" else mod


# Revisions before the layer packages (ef8da55) import the flat modules: point them at today's.
_OLD_LAYOUT = {
    "from .. import control, fairshare, fairtree":
        "from fscontrol.act import control\nfrom fscontrol.model import fairshare, fairtree",
    "from .. import control": "from fscontrol.act import control",
    "from ..decay import": "from fscontrol.model.decay import",
    "from ..fairshare import": "from fscontrol.model.fairshare import",
    "from ..parse import": "from fscontrol.slurm.parse import",
    "from ..gate import": "from fscontrol.act.gate import",
    "from .engine import _Profile": "from fscontrol.sim.availability import Profile as _Profile",
}


def _current_layout(src: str) -> str:
    lines = src.split("\n")
    for i, line in enumerate(lines):
        for old, new in _OLD_LAYOUT.items():
            stripped = line.strip()
            rest = stripped[len(old):]
            if stripped.startswith(old) and (not rest or rest[0] in " #") and (rest.strip()[:1] != "," ):
                indent = line[: len(line) - len(line.lstrip())]
                lines[i] = "\n".join(indent + part for part in (new + stripped[len(old):]).split("\n"))
                break
    return "\n".join(lines)


class _Engine:
    """A module's `simulate` as `simulate_multifactor` (the engines of fscontrol.sim.accel)."""

    def __init__(self, mod) -> None:
        self.simulate_multifactor = mod.simulate


def compare_engines(before, w: Workload, rows, repeat: int, rev: str, now=None) -> None:
    """CPU time of the engine at `rev` and the current one on the same jobs, runs interleaved."""
    if now is None:
        from fscontrol.sim import multifactor as now

    n = len(w.jobs)
    for label, pol in rows:
        if pol.kind != "multifactor" or pol.slurm_sched is not None:  # (no such scheduler before)
            continue
        kw = dict(control_spec=pol.control, depth=pol.depth, backfill=pol.backfill == "easy")
        cpu = {"before": float("inf"), "now": float("inf")}
        res = {}
        for _ in range(repeat):
            for name, mod in (("before", before), ("now", now)):
                c0 = time.process_time()
                res[name] = mod.simulate_multifactor(w, pol.priority, **kw)
                cpu[name] = min(cpu[name], time.process_time() - c0)
        differ = sum(1 for x, y in zip(res["before"].start, res["now"].start) if x != y)
        print(f"{label:<28}CPU {cpu['before']:7.2f} s ({n / cpu['before']:8,.0f} jobs/s) at {rev} -> "
              f"{cpu['now']:7.2f} s ({n / cpu['now']:8,.0f} jobs/s) now: {cpu['before'] / cpu['now']:5.2f}x"
              f"   start times {'the same' if not differ else f'DIFFER for {differ:,} jobs'}")


def compare_sched(w: Workload, rows, repeat: int) -> None:
    """CPU time of each mf-* row with EASY at every event and with slurmctld's scheduler, interleaved."""
    from fscontrol.sim import multifactor as now

    n = len(w.jobs)
    by = dict(rows)
    for label, pol in rows:
        if pol.slurm_sched is None or label.split()[0] not in by:
            continue
        easy = by[label.split()[0]]
        cpu = {"easy": float("inf"), "sched": float("inf")}
        for _ in range(repeat):
            for name, p in (("easy", easy), ("sched", pol)):
                c0 = time.process_time()
                now.simulate_multifactor(w, p.priority, sched=p.slurm_sched)
                cpu[name] = min(cpu[name], time.process_time() - c0)
        print(f"{label:<28}CPU {cpu['easy']:7.2f} s ({n / cpu['easy']:8,.0f} jobs/s) EASY -> "
              f"{cpu['sched']:7.2f} s ({n / cpu['sched']:8,.0f} jobs/s) slurmctld's: {cpu['easy'] / cpu['sched']:5.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20000, help="the first N jobs of the log (0: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--accasim", help="a Python with AccaSim 1.1.3 installed (the base of the ratios)")
    ap.add_argument("--full", action="store_true", help="also run the multifactor rows on the whole log, once")
    ap.add_argument("--full-fairtree", action="store_true", help="with --full: mf-fairtree on the whole log too (slow)")
    ap.add_argument("--full-repeat", type=int, default=1, help="with --full: best of N on the whole log (default 1)")
    ap.add_argument("--before", metavar="REV", help="also time the multifactor engine at git revision REV (CPU-time ratio)")
    ap.add_argument("--python-vs-compiled", action="store_true",
                    help="also time the Python engine (mfcore) against the compiled one (fscontrol.sim.accel), interleaved")
    ap.add_argument("--sched", action="store_true",
                    help="also time slurmctld's scheduler (slurmsched) against EASY at every event, interleaved")
    a = ap.parse_args()
    from fscontrol.sim import accel

    print(f"multifactor engine: {accel.status()}")

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
        # slurmctld's scheduler (issue #32: main scheduler on events and every 60 s, backfill every
        # 30 s with whole-node reservations; the log's unit is the node)
        ("mf-classic slurm-sched", replace(get_policy("mf-classic"), slurm_sched=SlurmSched(node_cpus=1))),
        ("mf-fairtree slurm-sched", replace(get_policy("mf-fairtree"), slurm_sched=SlurmSched(node_cpus=1))),
    ]
    for label, pol in rows:
        r, t, c = best(lambda pol=pol: run_simulation(w, pol, per_user=False), a.repeat)
        ratio = f"{n / t / base:8.1f}x AccaSim" if base else ""
        print(f"{label:<28}{t:8.2f} s  {n / t:10,.0f} jobs/s {ratio}   CPU {c:7.2f} s {n / c:10,.0f} jobs/s"
              f"   mean wait {r.overall['mean_wait_s'] / 60:8.1f} min   mean bsld {r.overall['mean_bsld']:8.2f}")
    before = engine_at(a.before) if a.before else None
    if before is not None:
        print(f"the multifactor engine at {a.before} and now (simulate_multifactor alone, best of {a.repeat}):")
        compare_engines(before, w, rows[1:], a.repeat, a.before)
    if a.sched:
        print(f"EASY at every event (before) and slurmctld's scheduler (now), simulate_multifactor alone, best of {a.repeat}:")
        compare_sched(w, rows, a.repeat)
    compiled = accel.compiled_engine() if a.python_vs_compiled else None
    if a.python_vs_compiled:
        if compiled is None:
            raise SystemExit(f"--python-vs-compiled: {accel.status()}")
        print(f"the Python engine (before) and the compiled one (now), simulate_multifactor alone, best of {a.repeat}:")
        compare_engines(_Engine(accel.python_engine()), w, rows[1:], a.repeat, "python", now=_Engine(compiled))
    if a.full and a.jobs:
        print(f"whole log: {len(whole.jobs):,} jobs, best of {a.full_repeat}")
        full_rows = rows[1:] if a.full_fairtree else rows[1:3]
        for label, pol in full_rows:
            r, t, c = best(lambda pol=pol: run_simulation(whole, pol, per_user=False), a.full_repeat)
            print(f"{label:<28}{t:8.2f} s  {len(whole.jobs) / t:10,.0f} jobs/s   CPU {c:7.2f} s "
                  f"{len(whole.jobs) / c:10,.0f} jobs/s   mean wait {r.overall['mean_wait_s'] / 60:8.1f} min"
                  f"   mean bsld {r.overall['mean_bsld']:8.2f}")
        if before is not None:
            compare_engines(before, whole, full_rows, a.full_repeat, a.before)
        if compiled is not None:
            compare_engines(_Engine(accel.python_engine()), whole, full_rows, a.full_repeat, "python", now=_Engine(compiled))


if __name__ == "__main__":
    main()
