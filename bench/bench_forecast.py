"""Benchmark the cold start of `fscontrol forecast` against `python -c 'import typer'`.

Every measurement is a fresh process (a user types the command once), timed wall-clock from
spawn to exit, interleaved round-robin so machine drift hits every command alike; the median
of --runs is reported. In the same run:

* baseline: `python -c 'import typer'` (the least any typer command costs to start);
* forecast: the `fscontrol` console script, `forecast --published FILE --source SAMPLE
  --user alice --plan ...` (the published file is made first from the recorded sample
  samples/testbed-basic: `collect` into a temporary history, then `publish`); the console
  script dispatches it to argparse (fscontrol/cli/forecast.py) without importing typer;
* help:     `fscontrol --help`, for reference: the floor of any command that goes through the
            typer app (typer 0.2x coerces every parameter through a pydantic TypeAdapter);
* library:  the same forecast as a plain `python -c` calling fscontrol's functions, without
            typer: what fscontrol's own modules and work cost;
* sshare:   `sshare -l -P`, if it is on PATH and answers (what the live forecast runs
            anyway); skipped with a note otherwise.

Bytecode: the children get a private PYTHONPYCACHEPREFIX (a temporary folder, nothing is
written into the checkout) and PYTHONDONTWRITEBYTECODE unset, and are warmed up first, so
fscontrol's modules load from cached bytecode as in an installed package. --no-bytecode keeps
the caller's setting (with PYTHONDONTWRITEBYTECODE=1 every start recompiles fscontrol).

It also checks, once, that the forecast's process never imports numpy or scipy.

Run:  .venv/bin/python bench/bench_forecast.py [--runs 10] [--no-bytecode] [--source FOLDER]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "testbed-basic"
TARGET_RATIO = 2.0
PLAN = "8cpus:1h,idle:30m,4cpus:2h"
# the same forecast without typer: what fscontrol's own modules and work cost
LIBRARY_ONLY = (
    "import sys, time; from fscontrol import forecast as fc, publish as pub, userforecast as uf; "
    "from fscontrol.slurm.source import RecordedSlurm; "
    "p, src, user, plan = sys.argv[1:]; d, _ = pub.read_published(p); "
    "rows = uf.parse_own_sshare(RecordedSlurm(src).sshare().stdout); "
    "print(uf.format_forecast(uf.forecast_data(d, rows, user=user, now=time.time(), plan=fc.parse_plan(plan), "
    "stale_ok=True, requester=user)))"
)


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - t0, p.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--source", default=str(SAMPLE), help="recorded sample folder for the user's sshare row")
    ap.add_argument("--user", default="alice")
    ap.add_argument("--no-bytecode", action="store_true", help="keep the caller's PYTHONDONTWRITEBYTECODE")
    args = ap.parse_args()

    py = sys.executable
    script = Path(py).parent / "fscontrol"
    if not script.exists():
        print(f"no fscontrol console script next to {py}: pip install -e . first", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="bench-forecast-"))
    try:
        env = dict(os.environ)
        if not args.no_bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        db, published = tmp / "h.db", tmp / "public" / "tbcluster.json"
        published.parent.mkdir()  # publish writes into a folder that exists (it makes none: issue #14)
        for argv in (
            [str(script), "collect", "--source", args.source, "--db", str(db)],
            [str(script), "publish", "--db", str(db), "--out", str(published)],
        ):
            subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)

        commands: dict[str, list[str]] = {
            "python -c 'import typer'": [py, "-c", "import typer"],
            "fscontrol forecast": [
                str(script), "forecast", "--published", str(published), "--source", args.source,
                "--user", args.user, "--plan", PLAN, "--stale-ok",
            ],
            "fscontrol --help": [str(script), "--help"],
            "forecast, library only": [py, "-c", LIBRARY_ONLY, str(published), args.source, args.user, PLAN],
        }
        notes = []
        sshare = shutil.which("sshare")
        if sshare is None:
            notes.append("sshare: not on PATH, skipped")
        else:
            probe = subprocess.run([sshare, "-l", "-P"], capture_output=True, text=True, env=env, timeout=30, check=False)
            if probe.returncode == 0:
                commands["sshare -l -P"] = [sshare, "-l", "-P"]
            else:
                msg = (probe.stderr or probe.stdout).strip().splitlines()
                notes.append(f"sshare: on PATH ({sshare}) but it failed (exit {probe.returncode}: "
                             f"{msg[-1] if msg else 'no message'}), not timed")

        # the forecast must work, and must not pull numpy/scipy in
        check = subprocess.run(
            [py, "-X", "importtime", *commands["fscontrol forecast"]], capture_output=True, text=True, env=env, check=False
        )
        if check.returncode != 0:
            print(f"fscontrol forecast failed:\n{check.stdout}{check.stderr}", file=sys.stderr)
            return 1
        mods = [ln.split("|")[-1].strip() for ln in check.stderr.splitlines() if ln.startswith("import time:")][1:]
        heavy = sorted({m.split(".")[0] for m in mods} & {"numpy", "scipy", "pandas", "sqlite_utils", "matplotlib"})

        for _ in range(args.warmup):
            for argv in commands.values():
                _timed(argv, env)
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                dt, rc = _timed(argv, env)
                if rc != 0:
                    print(f"{name} exited {rc}", file=sys.stderr)
                    return 1
                times[name].append(dt)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    base = statistics.median(times["python -c 'import typer'"])
    print(f"cold processes, {args.runs} runs each after {args.warmup} warm-up rounds, interleaved; "
          f"bytecode {'as the caller has it' if args.no_bytecode else 'cached (private PYTHONPYCACHEPREFIX)'}")
    print(f"python {sys.version.split()[0]} at {py}")
    print()
    print(f"{'command':<30}{'median':>10}{'min':>10}{'max':>10}{'x typer':>10}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<30}{med * 1000:>8.0f}ms{min(ts) * 1000:>8.0f}ms{max(ts) * 1000:>8.0f}ms{med / base:>9.2f}x")
    ratio = statistics.median(times["fscontrol forecast"]) / base
    floor = statistics.median(times["fscontrol --help"]) / base
    print()
    for n in notes:
        print(n)
    print(f"forecast process imported {len(mods)} modules; heavy ones: {', '.join(heavy) if heavy else 'none (no numpy, scipy, pandas, sqlite_utils, matplotlib)'}")
    print(f"forecast / typer import: {ratio:.2f}x (target < {TARGET_RATIO:g}x: {'met' if ratio < TARGET_RATIO else 'NOT met'}); "
          f"any command of this typer app (--help): {floor:.2f}x")
    return 0 if not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
