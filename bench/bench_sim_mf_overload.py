"""Benchmark the multifactor engine when arrivals outpace the machine (issue #31 item 3).

Run:  .venv/bin/python bench/bench_sim_mf_overload.py [--sizes 10000,50000,100000,0] [--factors 1.5,2]
          [--repeat 1] [--rows mf-classic,hybrid,mf-fairtree] [--before REV] [--engine python|compiled|auto]

For each row (mf-classic: the preset; hybrid: mf-classic with the agent's hybrid controller before
every pass; mf-fairtree: Fair Tree) and each log size (the first N job records of the SDSC Blue
Horizon log, samples/traces; 0: the whole log, 232,562 jobs with a run time, 144 nodes), the log
as it is ("normal") and with every submit time divided by each factor ("x1.5": arrivals 1.5 times
faster). Every case runs in a worker process of its own (a fresh interpreter that reads the log:
no case pays for another's objects), which times the engine alone (`simulate_multifactor`, no
metrics) in CPU time (time.process_time: the machine is shared); best of --repeat. Prints the cost per job of each case
and its ratio to the normal one's at the same size (the target: at most 2x), and the rate in
jobs/s (Fair Tree's target: at least 20,000 on the whole log, normal load).

--before REV: the same cases run by the whole `fscontrol` package as it is at git revision REV
(`git archive REV fscontrol` into a temporary directory; its workers import from there, so the
engine, its Fair Tree ranking and everything it imports are REV's), each case right after the
current one, timed the same way. Each line says whether every job's start and end time, the start order and every
association's final usage are the same to the bit (a SHA-256 of their repr, both sides).
The baseline runs the Python engine (a revision's archive has no compiled build); compare it with
`--engine python`.

--instr (compiled engine only): each case's worker runs under `valgrind --tool=callgrind
--toggle-collect=CPyDef_simulate` (PYTHONHASHSEED=0), which counts the instructions executed inside
the compiled `simulate` call and nothing else (not the interpreter's start-up, nor reading the log):
deterministic, unlike CPU time on a shared machine. Prints G instructions per case and the ratio
to the normal case's per job. About 40x slower than a timed run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWF = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"
U_STAR = 20000 * 3600.0  # as bench_sim_multifactor's hybrid row
ROW_NAMES = ("mf-classic", "hybrid", "mf-fairtree")


def compressed(w, factor: float):
    """The same jobs, submit times divided by ``factor`` (arrivals ``factor`` times faster)."""
    from fscontrol.sim.workload import SimJob, Workload

    if factor == 1:
        return w
    jobs = [SimJob(j.job_id, j.submit / factor, j.run, j.estimate, j.size, j.user, j.account) for j in w.jobs]
    return Workload(f"{w.name} x{factor:g}", w.nodes, jobs)


def policy(row: str):
    from fscontrol.sim import get_policy
    from fscontrol.sim.multifactor import ControlSpec

    if row == "hybrid":
        return get_policy("mf-classic", control=ControlSpec("hybrid", u_star=U_STAR))
    return get_policy(row)


def run(engine, w, pol):
    kw = dict(control_spec=pol.control, depth=pol.depth, backfill=pol.backfill == "easy")
    c0 = time.process_time()
    r = engine.simulate_multifactor(w, pol.priority, **kw)
    return time.process_time() - c0, r


def digest(r) -> str:
    """The schedule to the bit: every start and end, the order, every final usage (repr: exact)."""
    return hashlib.sha256(repr((r.start, r.end, r.order, sorted(r.final_usage.items()))).encode()).hexdigest()


def engine_module(kind: str):
    """What `simulate_multifactor` runs: auto (as configured), python or compiled."""
    from fscontrol.sim import accel, multifactor

    if kind == "auto":
        return multifactor, accel.status()

    class _E:
        pass

    mod = accel.python_engine() if kind == "python" else accel.compiled_engine()
    if mod is None:
        raise SystemExit(f"--engine compiled: {accel.status()}")
    e = _E()
    e.simulate_multifactor = mod.simulate  # type: ignore[attr-defined]
    return e, kind


def worker(a) -> None:
    """One case in this process, from the package under --root: CPU time and digest, as JSON."""
    sys.path.insert(0, a.root)
    import fscontrol

    assert Path(fscontrol.__file__).resolve().is_relative_to(Path(a.root).resolve()), fscontrol.__file__
    from fscontrol.sim import read_swf

    w = compressed(read_swf(SWF, limit=a.limit or None), a.factor)
    eng, label = engine_module(a.engine)
    dt, r = run(eng, w, policy(a.row))
    print(json.dumps({"cpu": dt, "digest": digest(r), "n": len(w.jobs), "engine": label}))


def archive(rev: str) -> str:
    d = tempfile.mkdtemp(prefix="bench-mf-before-")
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "fscontrol"], capture_output=True, check=True, timeout=120)
    subprocess.run(["tar", "-x", "-C", d], input=tar.stdout, check=True, timeout=120)
    return d


def case(root: str, row: str, limit: int, factor: float, engine: str, instr: bool = False) -> dict:
    """One case in a worker process importing fscontrol from `root` (instr: under callgrind, the
    instructions of the compiled `simulate` call in "cpu")."""
    cmd = [sys.executable, __file__, "--worker", "--root", root, "--row", row, "--limit", str(limit),
           "--factor", repr(factor), "--engine", engine]
    env = None
    if instr:
        cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=CPyDef_simulate", "--callgrind-out-file=/dev/null"] + cmd
        env = {**os.environ, "PYTHONHASHSEED": "0"}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=36000, env=env)
    if p.returncode != 0:
        raise SystemExit(f"worker ({root}) failed: {p.stderr.strip().splitlines()[-1:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if instr:
        m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
        if m is None:
            raise SystemExit(f"callgrind: no count ({p.stderr.strip().splitlines()[-1:]})")
        r["cpu"] = int(m.group(1)) / 1e9
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0", help="first N job records, comma-separated; 0: the whole log")
    ap.add_argument("--limit", type=int, default=None, help="(one size: the same as --sizes N)")
    ap.add_argument("--factors", default="1.5,2")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--rows", default=",".join(ROW_NAMES))
    ap.add_argument("--before", metavar="REV", help="also the package at git revision REV, interleaved")
    ap.add_argument("--engine", choices=("auto", "python", "compiled"), default="auto")
    ap.add_argument("--instr", action="store_true", help="instructions (callgrind) of the compiled engine, not CPU time")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--row", help=argparse.SUPPRESS)
    ap.add_argument("--factor", type=float, default=1.0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        a.limit = a.limit or 0
        return worker(a)
    sys.path.insert(0, str(ROOT))

    rows = [r for r in a.rows.split(",") if r]
    for r in rows:
        if r not in ROW_NAMES:
            raise SystemExit(f"unknown row {r!r}: choose from {', '.join(ROW_NAMES)}")
    sizes = [a.limit] if a.limit is not None else [int(x) for x in a.sizes.split(",") if x]
    factors = [1.0] + [float(x) for x in a.factors.split(",") if x]
    if a.instr and (a.engine != "compiled" or a.before):
        raise SystemExit("--instr: with --engine compiled and without --before")
    _, label = engine_module(a.engine)
    print(f"multifactor engine (now): {label}")
    root = None
    if a.before:
        root = archive(a.before)
        print(f"baseline: fscontrol at {a.before} (git archive in {root}), Python engine")
    what = "G instructions of the engine call (callgrind)" if a.instr else "CPU time of the engine alone"
    print(f"best of {a.repeat}, {what}; ratio: to the normal case's cost per job at the same size")
    for size in sizes:
        for row in rows:
            normal: dict[str, float] = {}
            for f in factors:
                best = {"now": float("inf"), "before": float("inf")}
                dig = {}
                for _ in range(a.repeat):
                    r = case(str(ROOT), row, size, f, a.engine, a.instr)
                    n = r["n"]
                    best["now"] = min(best["now"], r["cpu"])
                    dig["now"] = r["digest"]
                    if root:
                        b = case(root, row, size, f, "python")
                        assert b["n"] == n, (b["n"], n)
                        best["before"] = min(best["before"], b["cpu"])
                        dig["before"] = b["digest"]
                label_f = "normal" if f == 1 else f"x{f:g}"
                if f == 1:
                    normal = dict(best)
                us = best["now"] / n * 1e6
                if a.instr:
                    line = (f"{row:<11} {n:>7,} jobs {label_f:<6} now {best['now']:7.2f} G instr {us * 1e3:8.0f} instr/job "
                            f"ratio {best['now'] / normal['now']:5.2f}x  schedule {dig['now'][:16]}")
                else:
                    line = (f"{row:<11} {n:>7,} jobs {label_f:<6} now {best['now']:7.2f} s {us:6.1f} us/job "
                            f"{n / best['now']:8,.0f} jobs/s ratio {best['now'] / normal['now']:5.2f}x")
                if root:
                    ub = best["before"] / n * 1e6
                    line += (f" | {a.before} {best['before']:7.2f} s {ub:6.1f} us/job ratio "
                             f"{best['before'] / normal['before']:5.2f}x | now/{a.before} {best['now'] / best['before']:5.2f}"
                             f" | same schedule: {dig['now'] == dig['before']}")
                print(line, flush=True)


if __name__ == "__main__":
    main()
