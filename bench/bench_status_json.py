"""`fscontrol status --json` as a whole process (issue #31 item 4: under 1 s of CPU at 100,000
associations), this checkout against another (--before DIR) in the same run.

Each run is a fresh `python -m fscontrol status --db H --json` (and, with --text, the text form),
the two checkouts interleaved, --repeat rounds. CPU is the child's user + system time (os.wait4),
peak its own VmHWM, which it prints at exit (as bench_flat_memory.py's children do); on a machine
shared with other work CPU moves far less than wall time. Min and median of the rounds. Every run's output is hashed: each
checkout must print the same bytes in every round, and the two checkouts the same text, or, for
--json, the same values (parsed once a side and written again by json.dumps: the floats below 1e-4
are written by orjson since issue #31's 1 s, 1.5e-7 for json's 1.5e-07); else the bench says so and
exits 1.

The history is bench_bounds.py's: SYNTHETIC, `scripts/gen_synthetic.py --users 93000 --jobs 18600
--seed 1 --out DIR` (99,803 associations), collected by each checkout's own `fscontrol collect
--source DIR` into a history of its own (--sample DIR; each checkout's schema: an older fscontrol
refuses a history a newer one migrated), or one history both read (--db H).

Bytecode: with PYTHONDONTWRITEBYTECODE=1 in the caller's environment (as in this workplace) and
no __pycache__ in a checkout, every start compiles the imported modules again (~0.1-0.2 s).
--bytecode unsets it for the children and runs each checkout once first (its .pyc written), as an
installed fscontrol (pip compiles at install) starts; without it the caller's setting is kept.

Run:  .venv/bin/python bench/bench_status_json.py --sample DIR [--before DIR] [--repeat 5] [--text] [--bytecode]
      (DIR: `git archive main fscontrol | tar -x -C DIR`)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = ("import atexit, sys, runpy\n"
         "def peak():\n"
         "    hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0]\n"
         "    sys.stderr.write('PEAK ' + hwm.split()[1] + '\\n')\n"
         "atexit.register(peak)\n"
         "sys.argv = ['fscontrol'] + sys.argv[1:]\n"
         "runpy.run_module('fscontrol', run_name='__main__', alter_sys=True)\n")


def one(tree: Path, env: dict, args: list[str]) -> tuple[float, float, float, str]:
    """(CPU s, wall s, peak MiB, sha256 of stdout) of one fresh process running `tree`'s fscontrol."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", CHILD, *args], cwd=tree, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    h = hashlib.sha256()
    while block := p.stdout.read(1 << 20):
        h.update(block)
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    peak = [ln for ln in err.splitlines() if ln.startswith("PEAK ")]
    if code != 0 or not peak:
        raise SystemExit(f"{tree}: {args}: exit {code}\n{err[-2000:]}")
    return ru.ru_utime + ru.ru_stime, wall, int(peak[-1].split()[1]) / 1024, h.hexdigest()


def values_digest(tree: Path, env: dict, args: list[str]) -> str:
    """sha256 of the JSON `tree`'s fscontrol prints, parsed and written again by json.dumps: the
    same digest for the same values, however each float is written."""
    import json

    out = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=tree, env=env, capture_output=True, check=True).stdout
    return hashlib.sha256(json.dumps(json.loads(out), indent=2).encode()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--sample", type=Path, help="a sample folder gen_synthetic.py wrote: each checkout collects it")
    src.add_argument("--db", type=Path, help="one history both checkouts read")
    ap.add_argument("--before", type=Path, help="another checkout (a folder holding fscontrol/), run in the same rounds")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--text", action="store_true", help="time the text `status` too")
    ap.add_argument("--bytecode", action="store_true", help="children with bytecode (PYTHONDONTWRITEBYTECODE unset), warmed up")
    a = ap.parse_args()
    sides = {"after (this checkout)": ROOT} | ({"before": a.before.resolve()} if a.before else {})
    envs = {}
    for name, tree in sides.items():
        env = dict(os.environ, PYTHONPATH=str(tree))
        if a.bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        envs[name] = env
        got = subprocess.run([sys.executable, "-c", "import fscontrol; print(fscontrol.__file__)"], cwd=tree, env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
        if not got.startswith(str(tree)):
            raise SystemExit(f"{name}: imports {got}, not {tree}'s fscontrol")
    tmp = Path(tempfile.mkdtemp(prefix="bench-status-json-"))
    try:
        dbs = {}
        for i, (name, tree) in enumerate(sides.items()):
            if a.db:
                dbs[name] = str(a.db.resolve())
                continue
            dbs[name] = str(tmp / f"h{i}.db")
            subprocess.run([sys.executable, "-m", "fscontrol", "collect", "--source", str(a.sample.resolve()), "--db",
                            dbs[name]], cwd=tree, env=envs[name], check=True, stdout=subprocess.DEVNULL)
        commands = [["status", "--json"]] + ([["status"]] if a.text else [])
        if a.bytecode:  # each checkout's .pyc written once, as an install has them
            for name, tree in sides.items():
                for args in commands:
                    one(tree, envs[name], args + ["--db", dbs[name]])
        runs: dict[tuple[str, str], list[tuple[float, float, float, str]]] = {}
        for _ in range(a.repeat):
            for args in commands:
                for name, tree in sides.items():  # interleaved: one run of each a round
                    runs.setdefault((" ".join(args), name), []).append(one(tree, envs[name], args + ["--db", dbs[name]]))
        values = {}  # --json of each side, by value
        if a.before:
            for name, tree in sides.items():
                values[("status --json", name)] = values_digest(tree, envs[name], ["status", "--json", "--db", dbs[name]])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bytecode = "with bytecode (warmed up)" if a.bytecode else (
        "PYTHONDONTWRITEBYTECODE=" + os.environ.get("PYTHONDONTWRITEBYTECODE", "(unset)"))
    print(f"{a.sample or a.db}; {a.repeat} rounds; {bytecode}; load average now {os.getloadavg()[0]:.2f}")
    print(f"{'command':<16}{'code':<24}{'CPU min':>9}{'CPU median':>12}{'wall median':>13}{'peak MiB':>10}  output sha256")
    same = True
    for cmd in dict.fromkeys(k[0] for k in runs):
        hashes = set()
        for name in sides:
            r = runs[(cmd, name)]
            cpu = [x[0] for x in r]
            if len({x[3] for x in r}) != 1:
                same = False
                print(f"{cmd}: {name} printed {len({x[3] for x in r})} different texts")
            hashes |= {values[(cmd, name)]} if (cmd, name) in values else {x[3] for x in r}
            print(f"{cmd:<16}{name:<24}{min(cpu):>8.3f}s{statistics.median(cpu):>11.3f}s"
                  f"{statistics.median(x[1] for x in r):>12.2f}s{statistics.median(x[2] for x in r):>10.0f}  {r[0][3][:16]}")
        if len(hashes) != 1:
            same = False
            print(f"{cmd}: THE OUTPUTS DIFFER ({len(hashes)} different {'values' if cmd.endswith('--json') else 'texts'})")
    if a.before:
        print("outputs: the same in every run (--json: the same values)" if same else "outputs: NOT the same")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
