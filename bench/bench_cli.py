"""Benchmark the report commands as an admin runs them: whole fresh processes, wall clock.

Two parts, in one run:

* start-up: `status`, `collect` and `tick` on the bundled samples (samples/testbed-basic, 9
  users; samples/synthetic-agave, 2,500 users, SYNTHETIC), each against `python -c 'import
  typer'` (the least any typer command costs), with `fscontrol --help` for reference. `collect`
  and `tick` add a snapshot of the same sample to the same history each round (no association
  value changes); --first-collect also times `collect` into a new, empty history each round;
* scale: `status` on a SYNTHETIC snapshot of ~100,000 associations (scripts/gen_synthetic.py,
  93,238 users), plain and -P, against two floors measured in the same run: reading the bytes of
  the same snapshot's `sshare -a -l -P` text, and a plain join (a Python process that selects the
  association rows from the same history and writes them '|'-joined).

Processes run interleaved round-robin after a warm-up round; the median of --runs is reported.
Children get a private PYTHONPYCACHEPREFIX (bytecode cached, as in an installed package).
--compare DIR runs the same fscontrol commands from another checkout too (e.g. a `git worktree`
of an older commit), in the same rounds, so a before/after is measured on the same machine state;
a checkout with its own .venv runs on it (its own typer), and is compared with its own
`import typer` as well. `tick` is given an empty config file (every default: it refuses to start
on defaults it was not asked for).

Run:  .venv/bin/python bench/bench_cli.py [--runs 10] [--users 93238] [--compare DIR] [--skip-scale]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
PLAIN_JOIN = (
    "import sqlite3, sys; c = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True); "
    "out = sys.stdout; "
    "out.writelines('|'.join('' if v is None else str(v) for v in r) + '\\n' for r in c.execute("
    "'SELECT a.account, a.user, s.raw_shares, s.norm_shares, s.raw_usage, s.norm_usage, s.effective_usage, s.fairshare "
    "FROM assocs a JOIN assoc_current s ON s.assoc_id = a.id WHERE s.present = 1 ORDER BY a.path'))"
)
READ_BYTES = "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())"


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall clock and CPU time (user + system) of one child: on a machine shared with other work
    the wall clock also counts the time the child waited for a CPU, its CPU time does not."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd, check=False)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.decode()[-500:]}")
    return dt, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _rounds(commands: dict[str, tuple[list[str], Path]], env, runs: int, warmup: int = 1):
    """"{run}" in an argument is replaced by the round's number (a new history each round)."""
    for _ in range(warmup):
        for argv, cwd in commands.values():
            _timed([a.replace("{run}", "warmup") for a in argv], env, cwd)
    times: dict[str, list[float]] = {k: [] for k in commands}
    cpu: dict[str, list[float]] = {k: [] for k in commands}
    for r in range(runs):
        for name, (argv, cwd) in commands.items():
            wall, used = _timed([a.replace("{run}", str(r)) for a in argv], env, cwd)
            times[name].append(wall)
            cpu[name].append(used)
    return times, cpu


def _table(times: dict[str, list[float]], base: str, cpu: dict[str, list[float]] | None = None) -> None:
    b = statistics.median(times[base])
    cb = statistics.median(cpu[base]) if cpu else None
    print(f"{'command':<44}{'median':>10}{'min':>10}{'max':>10}{'x base':>12}" + (f"{'CPU':>10}{'x base':>10}" if cpu else "")
          + f"   (base: {base})")
    for name, ts in times.items():
        med = statistics.median(ts)
        line = f"{name:<44}{med * 1000:>8.0f}ms{min(ts) * 1000:>8.0f}ms{max(ts) * 1000:>8.0f}ms{med / b:>11.2f}x"
        if cpu:
            c = statistics.median(cpu[name])
            line += f"{c * 1000:>8.0f}ms{c / cb:>9.2f}x"
        print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--scale-runs", type=int, default=5)
    ap.add_argument("--users", type=int, default=93238, help="users of the scale snapshot (93,238: ~100,000 associations)")
    ap.add_argument("--compare", type=Path, help="another checkout of fscontrol to time beside this one")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--skip-startup", action="store_true")
    ap.add_argument("--first-collect", action="store_true",
                    help="also time `collect` into a new, empty history each round (it creates the schema: sqlite-utils)")
    args = ap.parse_args()

    py = sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    trees = {"": ROOT} | ({"before: ": args.compare.resolve()} if args.compare else {})
    # each checkout with its own .venv when it has one (its own typer), else this interpreter
    pys = {tag: str(c / ".venv" / "bin" / "python") if (c / ".venv" / "bin" / "python").exists() else py
           for tag, c in trees.items()}
    empty_config = tmp / "defaults.toml"  # tick needs a config (or --defaults): an empty one is every default
    empty_config.write_text("")
    try:
        def fsc(tag: str, checkout: Path, *argv: str) -> tuple[list[str], Path]:
            return [pys[tag], "-m", "fscontrol", *argv], checkout

        print(f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")
        if not args.skip_startup:
            commands: dict[str, tuple[list[str], Path]] = {f"{tag}python -c 'import typer'": ([pys[tag], "-c", "import typer"], ROOT)
                                                            for tag in trees}
            for tag, checkout in trees.items():
                env_db = tmp / f"db{len(tag)}"
                env_db.mkdir()
                for sample in ("testbed-basic", "synthetic-agave"):
                    for name in ("status", "tick"):
                        subprocess.run([pys[tag], "-m", "fscontrol", "collect", "--source", str(SAMPLES / sample), "--db",
                                        str(env_db / f"{name}-{sample}.db")], cwd=checkout, env=env, check=True,
                                       stdout=subprocess.DEVNULL)
                commands[f"{tag}fscontrol --help"] = fsc(tag, checkout, "--help")
                for sample in ("testbed-basic", "synthetic-agave"):
                    src = str(SAMPLES / sample)
                    commands[f"{tag}status ({sample})"] = fsc(tag, checkout, "status", "--db", str(env_db / f"status-{sample}.db"))
                    commands[f"{tag}collect ({sample})"] = fsc(tag, checkout, "collect", "--source", src, "--db",
                                                               str(env_db / f"collect-{sample}.db"))
                    commands[f"{tag}tick ({sample})"] = fsc(tag, checkout, "tick", "--config", str(empty_config), "--source", src,
                                                            "--db", str(env_db / f"tick-{sample}.db"))
                    if args.first_collect:
                        commands[f"{tag}first collect ({sample})"] = fsc(tag, checkout, "collect", "--source", src, "--db",
                                                                         str(env_db / f"first-{sample}-{{run}}.db"))
            times, cpu = _rounds(commands, env, args.runs)
            print(f"\nstart-up: fresh processes, median of {args.runs} interleaved runs after a warm-up round "
                  f"(wall clock; CPU: user + system of the child)")
            _table(times, "python -c 'import typer'", cpu)
        if not args.skip_scale:
            sample = tmp / "scale"
            subprocess.run([py, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", str(args.users), "--jobs", "2000",
                            "--seed", "1", "--out", str(sample)], check=True, stdout=subprocess.DEVNULL, env=env)
            commands = {"read the bytes of sshare -a -l -P": ([py, "-c", READ_BYTES, str(sample / "sshare.txt")], ROOT)}
            for tag, checkout in trees.items():
                db = tmp / f"scale{len(tag)}.db"
                subprocess.run([pys[tag], "-m", "fscontrol", "collect", "--source", str(sample), "--db", str(db)], cwd=checkout,
                               env=env, check=True, stdout=subprocess.DEVNULL)
                if not tag:
                    commands["plain join of the history's rows"] = ([py, "-c", PLAIN_JOIN, str(db)], ROOT)
                commands[f"{tag}status"] = fsc(tag, checkout, "status", "--db", str(db))
                if not tag:
                    commands["status -P"] = fsc(tag, checkout, "status", "-P", "--db", str(db))
                    commands["status --tree -l"] = fsc(tag, checkout, "status", "--tree", "-l", "--db", str(db))
            n = sum(1 for _ in open(sample / "sshare.txt")) - 1
            times, cpu = _rounds(commands, env, args.scale_runs)
            print(f"\nscale: status on {n:,} associations (SYNTHETIC), median of {args.scale_runs} interleaved runs "
                  f"(wall clock; CPU: user + system of the child)")
            _table(times, "read the bytes of sshare -a -l -P", cpu)
            join = statistics.median(times["plain join of the history's rows"])
            print(f"status / plain join: {statistics.median(times['status']) / join:.2f}x; "
                  f"status -P / plain join: {statistics.median(times['status -P']) / join:.2f}x (wall clock)")
            print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
