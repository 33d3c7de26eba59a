"""fscontrol's simulator against its peers, both sides timed the same way (issue #31 item 6):
whole processes, start-up and log reading included, on the same jobs, on the same machine,
interleaved (every command once a round, in turn), the median of --rounds.

The jobs: the first --jobs records with a run time of the SDSC Blue Horizon log
(samples/traces/SDSC-BLUE-2000-4.2-cln.swf.gz, 144 nodes of 8 processors), written once to a
file every command reads. The commands:

* ours:    `fscontrol simulate FILE -p POLICY --procs-per-node 8` (the console script: the
           interpreter, the imports, reading and parsing the log, the simulation, the report);
* AccaSim: 1.1.3's EASYBackfilling + FirstFit (`--accasim PYTHON`: a Python with `pip install
           accasim`), a script that builds its Simulator on the file and runs it (its own
           interpreter start-up and imports included; collections.Mapping & co. aliased first, as
           1.1.3 needs on Python >= 3.10), 144 resources of 8 cores;
* CQSim:   SPEAR-UIC/CQSim's `cqsim.py -j FILE -n FILE -b 1|2 -w 0 -R JOBS` (`--cqsim DIR`: a
           folder holding its src/; copied into a temporary tree, as bench_sim_conservative.py
           does), EASY (-b 1) and conservative (-b 2), standard output to /dev/null.

Each run: wall time (perf_counter around the child) and CPU time (the child's own user + system,
os.wait4), its exit code checked. Ratios: peer / ours, pair by pair within a round, median over
the rounds; mf-classic against AccaSim's EASY is the yardstick the multifactor sections use (a
different policy: labelled so).

Run:  .venv/bin/python bench/bench_peers.py [--jobs 20000] [--rounds 3] [--accasim /tmp/peer-venv/bin/python]
      [--cqsim /tmp/cqsim] [--ours easy,conservative,mf-classic]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWF = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"
FSCONTROL = Path(sys.executable).parent / "fscontrol"

ACCASIM = """
import collections, collections.abc, sys
for name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable"):
    setattr(collections, name, getattr(collections.abc, name))
from accasim.base.simulator_class import Simulator
from accasim.base.scheduler_class import EASYBackfilling
from accasim.base.allocator_class import FirstFit
swf, sysconf, out = sys.argv[1:4]
Simulator(swf, sysconf, EASYBackfilling(FirstFit()), RESULTS_FOLDER_PATH=out, scheduling_output=False,
          statistics_output=False, show_statistics=False, pprint_output=False).start_simulation()
"""


def prefix(dst: Path, jobs: int) -> int:
    """The header and the first `jobs` records with a run time (field 4 >= 0)."""
    kept = 0
    with gzip.open(SWF, "rt") as f, dst.open("w") as out:
        for line in f:
            if line.startswith(";"):
                out.write(line)
                continue
            fields = line.split()
            if len(fields) < 18 or float(fields[3]) < 0:
                continue
            if kept == jobs:
                break
            out.write(line)
            kept += 1
    return kept


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one whole process; its output thrown away, its exit code checked."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {err.decode(errors='replace')[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--accasim", help="a Python with AccaSim 1.1.3 installed")
    ap.add_argument("--cqsim", type=Path, help="a folder holding CQSim's src/")
    ap.add_argument("--ours", default="easy,conservative,mf-classic")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        tmp = Path(tmp)
        swf = tmp / "sdsc.swf"
        kept = prefix(swf, a.jobs)
        commands: dict[str, tuple[list[str], Path]] = {}
        for policy in a.ours.split(","):
            commands[f"fscontrol simulate -p {policy}"] = (
                [str(FSCONTROL), "simulate", str(swf), "-p", policy, "--procs-per-node", "8"], ROOT)
        if a.accasim:
            (tmp / "sys.json").write_text(json.dumps({"groups": {"g0": {"core": 8}}, "resources": {"g0": 144}}))
            (tmp / "run_accasim.py").write_text(ACCASIM)
            commands["AccaSim 1.1.3 EASY"] = ([a.accasim, str(tmp / "run_accasim.py"), str(swf), str(tmp / "sys.json"),
                                               str(tmp / "accasim-out")], tmp)
        if a.cqsim:
            tree = tmp / "cqsim"
            shutil.copytree(a.cqsim / "src", tree / "src")
            for d in ("InputFiles", "Results", "Fmt", "Debug"):
                (tree / "data" / d).mkdir(parents=True)
            p = tree / "src" / "cqsim_path.py"
            text = p.read_text()
            p.write_text(text.replace(text.split("\n")[1], f'path_cqsim="{tree}/"'))
            shutil.copy(swf, tree / "data" / "InputFiles" / swf.name)
            for mode, name in ((1, "EASY"), (2, "conservative")):
                commands[f"CQSim {name} (-b {mode})"] = (
                    [sys.executable, "cqsim.py", "-j", swf.name, "-n", swf.name, "-b", str(mode), "-w", "0", "-R", str(kept),
                     "-o", f"out-b{mode}"], tree / "src")
        print(f"{kept:,} jobs (SDSC-BLUE, the first with a run time); {a.rounds} rounds, each command once a round, in turn; "
              f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
        for r in range(a.rounds):
            for name, (argv, cwd) in commands.items():
                runs[name].append(timed(argv, cwd))
                print(f"  round {r + 1}: {name}: {runs[name][-1][0]:.2f} s wall, {runs[name][-1][1]:.2f} s CPU", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        print(f"\n{'command (whole process)':42} {'wall s':>8} {'CPU s':>8} {'jobs/s (wall)':>14}   median of {a.rounds}")
        for name, xs in runs.items():
            w, c = statistics.median(x[0] for x in xs), statistics.median(x[1] for x in xs)
            print(f"{name:42} {w:>8.2f} {c:>8.2f} {kept / w:>14,.0f}")
        pairs = [("AccaSim 1.1.3 EASY", "fscontrol simulate -p easy", "same policy family (EASY)"),
                 ("CQSim EASY (-b 1)", "fscontrol simulate -p easy", "same policy family (EASY)"),
                 ("CQSim conservative (-b 2)", "fscontrol simulate -p conservative", "same policy family (conservative)"),
                 ("AccaSim 1.1.3 EASY", "fscontrol simulate -p mf-classic", "a yardstick: AccaSim has no multifactor")]
        print(f"\n{'peer / ours, pair by pair in each round':66} {'wall':>8} {'CPU':>8}")
        for peer, ours, note in pairs:
            if peer in runs and ours in runs:
                rw = statistics.median(p[0] / o[0] for p, o in zip(runs[peer], runs[ours]))
                rc = statistics.median(p[1] / o[1] for p, o in zip(runs[peer], runs[ours]))
                print(f"{peer + ' / ' + ours.replace('fscontrol simulate ', ''):66} {rw:>7.1f}x {rc:>7.1f}x   ({note})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
