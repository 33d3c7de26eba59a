"""Conservative backfilling: fscontrol.sim against CQSim's conservative mode, same logs, same run.

Run:  .venv/bin/python bench/bench_sim_conservative.py --cqsim /tmp/cqsim [--jobs 10000] [--logs kth,sdsc]

--cqsim: a checkout of SPEAR-UIC/CQSim (the folder holding ``src/cqsim.py``; it is not on the
package index). The script copies its ``src/`` into a temporary folder, points ``cqsim_path`` at
the copy, writes the first --jobs jobs with a run time of each log there, and runs
``python cqsim.py -j X.swf -n X.swf -b 2 -w 0 -R N`` (``-b 2``: its ``backfill_cons``; ``-b 1``
with --cqsim-easy too) with this interpreter, standard output to /dev/null, timed end to end
(its own reading of the log included). Then fscontrol.sim on the same jobs (read from the same
file): conservative and EASY, timed the same way (reading the file included). Wall time and CPU
time of each (CQSim's: the child's user + system time; ours: this process's), since the
machine is shared and wall time moves with its load.

Prints per log: wall time, jobs/s, mean wait (min) and mean bounded slowdown (10 s) of each
schedule (CQSim's from its ``.rst`` output: ``id;reqProc;proc;reqTime;run;wait;submit;start;end``)
and the speed ratio ours / CQSim's. Also a replica of what CQSim's conservative mode does
(tests/peer_models.py ``cqsim_conservative``: waiting jobs placed by their actual run time,
re-planned from scratch at every pass), its figures and how many of CQSim's jobs it starts at
the same second. Without --cqsim only our side and the replica run. --json for the rows.

Logs (samples/traces): KTH-SP2 (100 nodes of 1 processor) and SDSC-BLUE (144 nodes of 8).
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from peer_models import cqsim_conservative, schedule_metrics  # noqa: E402

from fscontrol.sim import read_swf, run_simulation  # noqa: E402

LOGS = {
    "kth": (ROOT / "samples" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz", 1),
    "sdsc": (ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz", 8),
}


def prefix(src: Path, dst: Path, jobs: int) -> int:
    """The header and the first `jobs` records with a run time (field 4 >= 0): what both simulators read."""
    kept = 0
    with gzip.open(src, "rt") as f, dst.open("w") as out:
        for line in f:
            if line.startswith(";"):
                out.write(line)
                continue
            fields = line.split()
            if len(fields) < 5 or float(fields[3]) < 0:
                continue
            if kept == jobs:
                break
            out.write(line)
            kept += 1
    return kept


def bsld(wait: float, run: float, tau: float = 10.0) -> float:
    b = (wait + run) / max(run, tau)
    return b if b > 1.0 else 1.0


def run_cqsim(src: Path, work: Path, swf: Path, mode: int, n: int) -> dict:
    tree = work / "cqsim"
    if not tree.exists():
        shutil.copytree(src / "src", tree / "src")
        for d in ("InputFiles", "Results", "Fmt", "Debug"):
            (tree / "data" / d).mkdir(parents=True)
        p = tree / "src" / "cqsim_path.py"
        text = p.read_text()
        p.write_text(text.replace(text.split("\n")[1], f'path_cqsim="{tree}/"'))
    shutil.copy(swf, tree / "data" / "InputFiles" / swf.name)
    out = f"{swf.stem}-b{mode}"
    cmd = [sys.executable, "cqsim.py", "-j", swf.name, "-n", swf.name, "-b", str(mode), "-w", "0", "-R", str(n), "-o", out]
    c0 = _children_cpu()
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=tree / "src", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - c0
    rows = [ln.strip().split(";") for ln in (tree / "data" / "Results" / f"{out}.rst").read_text().splitlines() if ln.strip()]
    waits = [float(r[5]) for r in rows]
    runs = [float(r[4]) for r in rows]
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "jobs": len(rows),
        "mean_wait_min": sum(waits) / len(waits) / 60,
        "mean_bsld": sum(bsld(w, r) for w, r in zip(waits, runs)) / len(rows),
        "command": " ".join(cmd[1:]),
        "starts": {r[0]: float(r[7]) for r in rows},  # SWF job id -> start, from the first submission
    }


def same_starts(w, starts: list[float], peer: dict[str, float]) -> float:
    """The fraction of the peer's jobs that start at the same second in `starts`."""
    t0 = w.jobs[0].submit
    ours = {j.job_id: s - t0 for j, s in zip(w.jobs, starts)}
    return sum(1 for k, v in peer.items() if ours.get(k) == v) / len(peer)


def run_replica(swf: Path, ppn: int) -> tuple[dict, list[float]]:
    w = read_swf(swf, procs_per_node=ppn)
    t0 = time.perf_counter()
    st = cqsim_conservative(w.jobs, w.nodes)
    wall = time.perf_counter() - t0
    m = schedule_metrics(w, st)
    return {"wall_s": wall, "jobs": m["finished"], "mean_wait_min": m["mean_wait_s"] / 60, "mean_bsld": m["mean_bsld"]}, st


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_ours(swf: Path, ppn: int, policy: str) -> dict:
    c0 = time.process_time()
    t0 = time.perf_counter()
    w = read_swf(swf, procs_per_node=ppn)
    r = run_simulation(w, policy, per_user=False)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    o = r.overall
    out = {
        "wall_s": wall,
        "cpu_s": cpu,
        "engine_s": r.wall_s,
        "jobs": o["finished"],
        "mean_wait_min": o["mean_wait_s"] / 60,
        "mean_bsld": o["mean_bsld"],
    }
    if r.reservation:
        out["started_after_reservation"] = sum(1 for s, f in zip(r.start, r.reservation) if s > f)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cqsim", type=Path, help="a CQSim checkout (the folder with src/cqsim.py)")
    ap.add_argument("--jobs", type=int, default=10000, help="the first N jobs with a run time of each log")
    ap.add_argument("--logs", default="kth,sdsc", help="comma-separated: kth, sdsc")
    ap.add_argument("--cqsim-easy", action="store_true", help="also run CQSim's EASY (-b 1)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-cons-") as tmp:
        work = Path(tmp)
        for name in a.logs.split(","):
            src, ppn = LOGS[name]
            swf = work / f"{name}-first{a.jobs}.swf"
            n = prefix(src, swf, a.jobs)
            res = {"log": src.name, "jobs": n}
            res["ours_conservative"] = run_ours(swf, ppn, "conservative")
            res["ours_easy"] = run_ours(swf, ppn, "easy")
            res["replica_cqsim_conservative"], rep = run_replica(swf, ppn)
            if a.cqsim:
                cq = res["cqsim_conservative"] = run_cqsim(a.cqsim, work, swf, 2, n)
                if a.cqsim_easy:
                    res["cqsim_easy"] = run_cqsim(a.cqsim, work, swf, 1, n)
                res["speed_ratio"] = cq["wall_s"] / res["ours_conservative"]["wall_s"]
                res["cpu_ratio"] = cq["cpu_s"] / res["ours_conservative"]["cpu_s"]
                w = read_swf(swf, procs_per_node=ppn)
                res["replica_same_start_as_cqsim"] = same_starts(w, rep, cq["starts"])
                res["ours_same_start_as_cqsim"] = same_starts(w, run_simulation(w, "conservative", per_user=False).start, cq["starts"])
                del cq["starts"]
                res.get("cqsim_easy", {}).pop("starts", None)
            rows.append(res)
            if not a.json:
                print(f"{src.name}: the first {n:,} jobs with a run time")
                for k in ("ours_conservative", "ours_easy", "cqsim_conservative", "cqsim_easy", "replica_cqsim_conservative"):
                    if k in res:
                        v = res[k]
                        cpu = f" (CPU {v['cpu_s']:6.2f} s)" if "cpu_s" in v else " " * 17
                        print(
                            f"  {k:<28}{v['wall_s']:9.2f} s {v['jobs'] / v['wall_s']:10,.0f} jobs/s{cpu}"
                            f"   mean wait {v['mean_wait_min']:8.1f} min   mean bsld {v['mean_bsld']:7.2f}"
                            f"   ({v['jobs']:,} jobs)"
                        )
                c = res["ours_conservative"]
                print(f"  our conservative: {c['started_after_reservation']} jobs started after their arrival reservation")
                if "speed_ratio" in res:
                    print(
                        f"  same start as CQSim's conservative: the replica {res['replica_same_start_as_cqsim']:.1%}, "
                        f"our conservative {res['ours_same_start_as_cqsim']:.1%} of its jobs"
                    )
                    print(
                        f"  speed: ours {res['speed_ratio']:.1f}x CQSim's conservative mode in wall time, "
                        f"{res['cpu_ratio']:.1f}x in CPU time (target >= 10x)"
                    )
                print()
    if a.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
