"""Peak memory and CPU of `fscontrol collect` and `fscontrol status [--json]` at a large site's
size (issue #31 item 4), each a fresh process, against a same-run baseline.

Data: SYNTHETIC, `scripts/gen_synthetic.py --users 93000 --jobs 1000000 --seed 1` (99,803
associations, a sacct window of 1,000,000 jobs, 370,081 jobs in squeue, 135,077 in sprio), unless
--sample names a folder it already wrote. Measured:

* baseline: a Python process reading every byte of the sample's outputs (nothing parsed);
* collect:  `fscontrol collect --source SAMPLE --db H` into a fresh history;
* status / status --json: on that history.

Peak RSS is the child's own VmHWM (reported at exit; a child's ru_maxrss on Linux counts the
parent it was forked from), CPU its user + system time (os.wait4): on a machine shared with other
work, CPU moves less than wall time. Median of --repeat runs.

--before DIR runs another checkout's fscontrol (as --code) beside this one in the same rounds,
interleaved, each command once a round for each: the before/after figures of one run.

Run:  .venv/bin/python bench/bench_flat_memory.py [--repeat 3] [--sample DIR] [--only collect,status] [--code DIR] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEAK = ("import atexit, sys\n"
        "def peak():\n"
        "    hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0]\n"
        "    sys.stderr.write('PEAK ' + hwm.split()[1] + '\\n')\n"
        "atexit.register(peak)\n")
FSCONTROL = PEAK + ("from fscontrol.cli.main import main\n"
                    "sys.argv = ['fscontrol'] + sys.argv[1:]\n"
                    "sys.exit(main())\n")
READ = PEAK + ("import pathlib\n"
               "for p in sorted(pathlib.Path(sys.argv[1]).glob('*.txt')):\n"
               "    with open(p, 'rb') as f:\n"
               "        while f.read(1 << 20):\n"
               "            pass\n")


CODE = [ROOT]  # the checkout whose fscontrol the children import (--code)


def one(code: str, *args: str, cwd: Path | None = None) -> tuple[float, float, float]:
    """(CPU s, wall s, peak MiB) of one fresh process."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd or CODE[0], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    code_ = os.waitstatus_to_exitcode(status)
    peak = [ln for ln in err.splitlines() if ln.startswith("PEAK ")]
    if code_ != 0 or not peak:
        raise SystemExit(f"{args}: exit {code_}\n{err[-2000:]}")
    return ru.ru_utime + ru.ru_stime, wall, int(peak[-1].split()[1]) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample", type=Path, help="a folder gen_synthetic.py wrote (else one is made)")
    ap.add_argument("--only", default="collect,status")
    ap.add_argument("--code", type=Path, help="run another checkout's fscontrol (a folder holding fscontrol/, e.g. "
                    "`git archive REV fscontrol | tar -x -C DIR`): the children run there")
    ap.add_argument("--before", type=Path, help="another checkout's fscontrol run beside this one, interleaved")
    a = ap.parse_args()
    if a.code:
        CODE[0] = a.code.resolve()
    with tempfile.TemporaryDirectory(prefix="bench-flat-") as tmp:
        sample = a.sample
        if sample is None:
            sample = Path(tmp) / "big"
            subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", "93000", "--jobs",
                            "1000000", "--seed", "1", "--out", str(sample)], check=True, capture_output=True)
        lines = {n: sum(1 for _ in open(sample / f"{n}.txt", "rb")) - 1 for n in ("sshare", "squeue", "sprio", "sacct")}
        print(f"sample {sample}: " + ", ".join(f"{n} {k:,} lines" for n, k in lines.items()), flush=True)
        rows: dict[str, list[tuple[float, float, float]]] = {}
        sides = [("", CODE[0])] + ([("before: ", a.before.resolve())] if a.before else [])
        for _ in range(a.repeat):
            rows.setdefault("baseline: read the outputs", []).append(one(READ, str(sample)))
            for label, cwd in sides:
                db = Path(tmp) / ("h-before.db" if label else "h.db")
                if "collect" in a.only or not db.exists():
                    for x in Path(tmp).glob(db.name + "*"):
                        x.unlink()
                    rows.setdefault(label + "fscontrol collect", []).append(
                        one(FSCONTROL, "collect", "--source", str(sample), "--db", str(db), cwd=cwd))
                if "status" in a.only:
                    rows.setdefault(label + "fscontrol status", []).append(one(FSCONTROL, "status", "--db", str(db), cwd=cwd))
                    rows.setdefault(label + "fscontrol status --json", []).append(
                        one(FSCONTROL, "status", "--db", str(db), "--json", cwd=cwd))
        print(f"{'':30} {'CPU s':>8} {'wall s':>8} {'peak MiB':>9}   (median of {a.repeat})")
        for label, runs in rows.items():
            cpu, wall, peak = (statistics.median(x[i] for x in runs) for i in range(3))
            print(f"{label:30} {cpu:>8.2f} {wall:>8.2f} {peak:>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
