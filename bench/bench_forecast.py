"""Benchmark the cold start of `fscontrol forecast` (and `why`) against `python -c 'import typer'`.

Every measurement is a fresh process (a user types the command once), timed wall-clock from
spawn to exit, interleaved round-robin so machine drift hits every command alike; the median
of --runs is reported. In the same run:

* baseline: `python -c 'import typer'` (the least any typer command costs to start);
* forecast: the `fscontrol` console script, `forecast --published FILE --source SAMPLE
  --user USER --plan ...` (the published file is made first from the recorded sample:
  `collect` into a temporary history, then `publish`). With --users N the sample is a
  SYNTHETIC cluster of N users made by scripts/gen_synthetic.py (93,238 users: ~100,000
  associations), else samples/testbed-basic; its sshare is an admin's whole tree (`sshare -a`),
  so with --users the same forecast is also run from the published rows (`--source published`)
  and from what `sshare -l -P` shows the user on a live cluster (the accounts' rows and the
  user's own, cut from the sample: the default `--source live` path at that size), and all
  three for the sample's user with the lowest FairShare (a heavy user: the forecast searches
  its recovery through the cluster's job ends);
* help:     `fscontrol --help` and `fscontrol why --help`, for reference: the floor of any
            command of the typer app, and of `why` (whose own work needs a live Slurm);
* library:  the same forecast as a plain `python -c` calling fscontrol's functions, without
            typer: what fscontrol's own modules and work cost;
* sshare:   `sshare -l -P`, if it is on PATH and answers (what the live forecast runs
            anyway); skipped with a note otherwise.

--compare DIR times the same commands from another checkout too, with that checkout's own
.venv (its own typer: e.g. a `git worktree` of an older commit and `scripts/bootstrap.sh`
there), in the same rounds, each against its own `import typer`.

Bytecode: the children get a private PYTHONPYCACHEPREFIX (a temporary folder, nothing is
written into the checkout) and PYTHONDONTWRITEBYTECODE unset, and are warmed up first, so
fscontrol's modules load from cached bytecode as in an installed package. --no-bytecode keeps
the caller's setting (with PYTHONDONTWRITEBYTECODE=1 every start recompiles fscontrol).

It also checks, once, that the forecast's process never imports numpy or scipy.

--instructions counts each process's instructions with valgrind's callgrind instead of timing it
(the ratios then hold on a loaded machine, where wall time is noise; --runs 1 is enough). --cpu
times each process's own CPU (user + system, os.wait4) instead of the wall clock.

--inflow publishes the snapshot with a MADE-UP inflow history (INFLOW_PUBLISH: what an agent that has
run an hour publishes), whose per-account and per-user maps and typical job ends the forecast reads.

Run:  .venv/bin/python bench/bench_forecast.py [--runs 10] [--users 93238 [--jobs 18600]] [--inflow] [--compare DIR] [--no-bytecode] [--instructions | --cpu]
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
TARGET_RATIO = 1.5  # issue #31: forecast and why under 1.5x `import typer`
PLAN = "8cpus:1h,idle:30m,4cpus:2h"
# the same forecast without typer: what fscontrol's own modules and work cost
LIBRARY_ONLY = (
    "import sys, time; from fscontrol.forecast import classic as fc, service as uf; from fscontrol.export import publish as pub; "
    "from fscontrol.slurm.source import RecordedSlurm; "
    "p, src, user, plan = sys.argv[1:]; d, _ = pub.read_published(p); "
    "rows = uf.parse_own_sshare(RecordedSlurm(src).sshare().stdout); "
    "print(uf.format_forecast(uf.forecast_data(d, rows, user=user, now=time.time(), plan=fc.parse_plan(plan), "
    "stale_ok=True, requester=user)))"
)


# --inflow: `fscontrol publish` with the history's inflow window MADE UP as an agent that has run an
# hour would publish it (12 snapshots over an hour, a rate and a variance for each account/user with a
# running job, running jobs ending at 60% of their time to the limit, read from 500 ended jobs): the
# head's inflow maps (~11,000 lines at 100,000 associations) and the typical-end columns a forecast reads.
INFLOW_PUBLISH = (
    "import random, sys; import fscontrol.agent.publishing as P; from fscontrol.cli.main import main\n"
    "def made_up(db, snap):\n"
    "    rnd = random.Random(7); pairs = sorted({(j[1], j[2]) for j in snap.running})\n"
    "    return 12, 3600.0, {p: rnd.uniform(0.1, 50.0) for p in pairs}, {p: rnd.uniform(0.0, 5.0) for p in pairs}, 0.6, 500\n"
    "P.published_inflow = made_up; main(sys.argv[1:])"
)


def _lowest_fairshare_user(sshare: Path) -> str:
    """The user row with the lowest FairShare (ties: the most RawUsage, then the name): a heavy
    user whose forecast searches its recovery through the cluster's job ends."""
    rows = []
    with open(sshare) as f:
        header = next(f).rstrip("\n").split("|")
        ix = {c: i for i, c in enumerate(header)}
        for ln in f:
            c = ln.rstrip("\n").split("|")
            if c[ix["User"]] and c[ix["User"]] != "root":
                rows.append((float(c[ix["FairShare"]]), -int(c[ix["RawUsage"]]), c[ix["User"]]))
    return min(rows)[2]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - t0, p.returncode


def _cpu(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """The process's own CPU seconds (user + system, from os.wait4), and its exit code."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime, p.returncode


def _instructions(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """The process's instruction count (valgrind's callgrind: deterministic where wall time is noise
    on a loaded machine), and its exit code."""
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=env, check=False)
    got = [ln.split()[-1] for ln in p.stderr.splitlines() if "Collected" in ln]
    return (float(got[-1]) if got else float("nan")), p.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--source", default=str(SAMPLE), help="recorded sample folder for the user's sshare row")
    ap.add_argument("--users", type=int, help="a SYNTHETIC sample of this many users instead (93238: ~100,000 associations)")
    ap.add_argument("--user", default=None, help="whose forecast (default: alice; u00020 with --users, and the user with "
                    "the lowest FairShare beside)")
    ap.add_argument("--jobs", type=int, default=2000, help="with --users: the synthetic cluster's jobs (18600: ~4,100 running)")
    ap.add_argument("--inflow", action="store_true",
                    help="publish with a MADE-UP inflow history (what an agent publishes after an hour: _inflow_history)")
    ap.add_argument("--compare", type=Path, help="another checkout, with its own .venv, timed beside this one")
    ap.add_argument("--no-bytecode", action="store_true", help="keep the caller's PYTHONDONTWRITEBYTECODE")
    ap.add_argument("--instructions", action="store_true",
                    help="count each process's instructions (valgrind callgrind) instead of timing it; --runs 1 is enough")
    ap.add_argument("--cpu", action="store_true", help="time each process's own CPU (user + system) instead of the wall clock")
    args = ap.parse_args()
    measure = _instructions if args.instructions else (_cpu if args.cpu else _timed)
    if args.instructions and shutil.which("valgrind") is None:
        print("--instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2

    trees = {"": (Path(sys.executable), ROOT)}
    if args.compare:
        other = args.compare.resolve() / ".venv" / "bin" / "python"
        if not other.exists():
            print(f"no {other}: run scripts/bootstrap.sh in {args.compare} first", file=sys.stderr)
            return 2
        trees["before: "] = (other, args.compare.resolve())
    for py, _ in trees.values():
        if not (py.parent / "fscontrol").exists():
            print(f"no fscontrol console script next to {py}: pip install -e . first", file=sys.stderr)
            return 2
    tmp = Path(tempfile.mkdtemp(prefix="bench-forecast-"))
    try:
        env = dict(os.environ)
        if not args.no_bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        source, user = args.source, args.user or "alice"
        if args.users:
            source, user = str(tmp / "sample"), args.user or "u00020"
            subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", str(args.users), "--jobs",
                            str(args.jobs), "--seed", "1", "--out", source], check=True, stdout=subprocess.DEVNULL, env=env)
        n_assoc = sum(1 for _ in open(Path(source) / "sshare.txt")) - 2
        db, published = tmp / "h.db", tmp / "public" / "cluster.json"
        published.parent.mkdir()  # publish writes into a folder that exists (it makes none: issue #14)
        script = Path(sys.executable).parent / "fscontrol"
        subprocess.run([str(script), "collect", "--source", source, "--db", str(db)], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        publish = [str(script), "publish", "--db", str(db), "--out", str(published)]
        if args.inflow:  # the same command in a process whose history has an hour of inflow (made up)
            publish = [sys.executable, "-c", INFLOW_PUBLISH, *publish[1:]]
        subprocess.run(publish, check=True, env=env, stdout=subprocess.DEVNULL)

        forecast_args = ["forecast", "--published", str(published), "--source", source, "--user", user, "--plan", PLAN,
                         "--stale-ok"]
        own, heavy = {}, None
        if args.users:  # what `sshare -l -P` shows the user on a live cluster: the accounts and their own rows
            heavy = _lowest_fairshare_user(Path(source) / "sshare.txt")  # the story's user: low F, recovering
            for who in (user, heavy):
                own[who] = tmp / f"own-{who}"
                shutil.copytree(source, own[who])
                with open(Path(source) / "sshare.txt") as f, open(own[who] / "sshare.txt", "w") as out:
                    out.writelines(ln for i, ln in enumerate(f) if i == 0 or ln.split("|")[1] in ("", who))
        commands: dict[str, list[str]] = {}
        for tag, (py, _) in trees.items():
            fsc = str(py.parent / "fscontrol")
            commands[f"{tag}python -c 'import typer'"] = [str(py), "-c", "import typer"]
            commands[f"{tag}fscontrol forecast"] = [fsc, *forecast_args]
            for who, folder in own.items():
                rest = ["--user", who, *forecast_args[7:]]
                if who != user:
                    commands[f"{tag}forecast, {who} (lowest F)"] = [fsc, *forecast_args[:5], *rest]
                commands[f"{tag}  ... {who} published rows"] = [fsc, *forecast_args[:3], "--source", "published", *rest]
                commands[f"{tag}  ... {who} own sshare"] = [fsc, *forecast_args[:3], "--source", str(folder), *rest]
            commands[f"{tag}fscontrol why --help"] = [fsc, "why", "--help"]
            commands[f"{tag}fscontrol --help"] = [fsc, "--help"]
        commands["forecast, library only"] = [sys.executable, "-c", LIBRARY_ONLY, str(published), source, user, PLAN]
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
            [sys.executable, "-X", "importtime", *commands["fscontrol forecast"]], capture_output=True, text=True, env=env,
            check=False
        )
        if check.returncode != 0:
            print(f"fscontrol forecast failed:\n{check.stdout}{check.stderr}", file=sys.stderr)
            return 1
        mods = [ln.split("|")[-1].strip() for ln in check.stderr.splitlines() if ln.startswith("import time:")][1:]
        heavy = sorted({m.split(".")[0] for m in mods} & {"numpy", "scipy", "pandas", "sqlite_utils", "matplotlib", "pydantic"})

        for _ in range(args.warmup):
            for argv in commands.values():
                _timed(argv, env)  # the bytecode cache, the page cache
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                dt, rc = measure(argv, env)
                if rc != 0:
                    print(f"{name} exited {rc}", file=sys.stderr)
                    return 1
                times[name].append(dt)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{'instructions' if args.instructions else ('CPU time' if args.cpu else 'wall time')} of cold processes, {args.runs} runs each after {args.warmup} warm-up rounds, interleaved; "
          f"bytecode {'as the caller has it' if args.no_bytecode else 'cached (private PYTHONPYCACHEPREFIX)'}; "
          f"{n_assoc:,} associations{' (SYNTHETIC)' if args.users else ''}"
          f"{'; a MADE-UP inflow history (--inflow)' if args.inflow else ''}")
    print(f"python {sys.version.split()[0]} at {sys.executable}; load average {os.getloadavg()[0]:.2f} at the end")
    print()
    unit, scale = ("M", 1e-6) if args.instructions else ("ms", 1000)
    print(f"{'command':<40}{'median':>10}{'min':>10}{'max':>10}{'x typer':>10}   (each against its own tree's import typer"
          f"{'; M = million instructions, callgrind' if args.instructions else ''})")
    for name, ts in times.items():
        tag = "before: " if name.startswith("before: ") else ""
        base = statistics.median(times[f"{tag}python -c 'import typer'"])
        med = statistics.median(ts)
        print(f"{name:<40}{med * scale:>8.0f}{unit:<2}{min(ts) * scale:>8.0f}{unit:<2}{max(ts) * scale:>8.0f}{unit:<2}"
              f"{med / base:>9.2f}x")
    print()
    for n in notes:
        print(n)
    print(f"forecast process imported {len(mods)} modules; heavy ones: "
          f"{', '.join(heavy) if heavy else 'none (no numpy, scipy, pandas, sqlite_utils, matplotlib, pydantic)'}")
    ok = True
    for tag in trees:
        base = statistics.median(times[f"{tag}python -c 'import typer'"])
        ratio = statistics.median(times[f"{tag}fscontrol forecast"]) / base
        why = statistics.median(times[f"{tag}fscontrol why --help"]) / base
        ok &= ratio < TARGET_RATIO
        print(f"{tag or 'this tree: '}forecast / import typer: {ratio:.2f}x, why --help / import typer: {why:.2f}x "
              f"(target < {TARGET_RATIO:g}x: forecast {'met' if ratio < TARGET_RATIO else 'NOT met'})")
        for name in times:
            if name.startswith(f"{tag}  ... ") or (name.startswith(tag) and name.endswith("(lowest F)")):
                r = statistics.median(times[name]) / base
                what = name[len(tag):].strip(" .")
                print(f"{tag or 'this tree: '}{what}: {r:.2f}x ({'met' if r < TARGET_RATIO else 'NOT met'})")
    return 0 if not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
