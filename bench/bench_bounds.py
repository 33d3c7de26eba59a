"""Benchmark what one user request costs (issue 28, item 5): CPU seconds and peak RSS of one
`fscontrol forecast` process, at 2,500 users and at ~100,000 associations.

The clusters are SYNTHETIC (scripts/gen_synthetic.py, Agave-shaped, seeded), collected into a
temporary history and published with `fscontrol publish` exactly as the agent does. Each request
is a fresh process: `python -c <wrapper> forecast --published FILE --source published -u USER
--stale-ok [--plan ...]`, the wrapper calling the console script's entry (fscontrol.cli.main) and
reporting its own VmHWM (peak RSS since exec); CPU is the child's user+system time (os.wait4).
Same-run baseline: the same wrapper running `forecast --version` (the interpreter and the
forecast's imports, no work).

Requests: no plan; plans of 1 day, 7 days and the longest the default caps allow (60 days);
the web planner's default campaign (16 CPUs x 7 d, 3 d idle, 2 runs = 17 days; the page makes
this request and the plain one); and two refused ones (16cpus:2000w, 10^6 CPUs: exit 2). Then
the Fair Tree forecast (no plan: Fair Tree has none) on the same tree, its published file's
priority_mode set to fair_tree (the generator writes classic clusters only).

Run:  .venv/bin/python bench/bench_bounds.py [--repeat 3] [--users 2500,93000] [--skip-long] [--only TEXT]
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
sys.path.insert(0, str(ROOT))
PEAK = ("import atexit, sys\n"
        "def peak():\n"
        "    hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0]\n"
        "    sys.stderr.write('PEAK ' + hwm.split()[1] + '\\n')\n"
        "atexit.register(peak)\n"
        "from fscontrol.cli.main import main\n"
        "sys.argv = ['fscontrol'] + sys.argv[1:]\n"
        "sys.exit(main())\n")
REQUESTS = [
    ("baseline (forecast --version)", None),
    ("no plan", []),
    # a user with no association: the index has no entry, and the reader scans the rows to be sure
    # (an entry whose name was edited must not hide a row; issue 28): exit 6
    ("no plan, unknown user (exit 6)", ["-u", "nobody-here"]),
    ("plan 16cpus:1d", ["--plan", "16cpus:1d"]),
    ("plan 16cpus:7d", ["--plan", "16cpus:7d"]),
    ("web planner default (17 d)", ["--plan", "16cpus:7d,idle:3d,16cpus:7d"]),
    ("plan 16cpus:60d (the longest allowed)", ["--plan", "16cpus:60d"]),
    ("refused: 16cpus:2000w", ["--plan", "16cpus:2000w"]),
    ("refused: 1000000cpus:1d", ["--plan", "1000000cpus:1d"]),
]


def fscontrol(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "fscontrol", *args], cwd=ROOT, check=True, capture_output=True)


def cluster(tmp: Path, users: int) -> tuple[Path, str, int]:
    sample = tmp / f"syn{users}"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", str(users), "--jobs",
                    str(max(5000, users // 5)), "--seed", "1", "--out", str(sample)], check=True, capture_output=True)
    db = tmp / f"syn{users}.db"
    fscontrol("collect", "--source", str(sample), "--db", str(db))
    out = tmp / f"syn{users}.json"
    fscontrol("publish", "--db", str(db), "--out", str(out))
    lines = (sample / "sshare.txt").read_text().splitlines()
    user = next(ln.split("|")[1] for ln in lines[3:] if ln.split("|")[1])
    return out, user, len(lines) - 1


def one(argv: list[str]) -> tuple[int, float, float]:
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    peak = [ln for ln in err.splitlines() if ln.startswith("PEAK ")]
    return os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime, int(peak[-1].split()[1]) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per request (the median is shown)")
    ap.add_argument("--users", default="2500,93000", help="synthetic cluster sizes (93,000 users: ~100,000 associations)")
    ap.add_argument("--skip-long", action="store_true", help="leave out the 60-day plan (slow on today's projection)")
    ap.add_argument("--only", help="only the requests whose name contains this text (the baseline always runs)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-bounds-") as t:
        tmp = Path(t)
        for users in (int(x) for x in args.users.split(",")):
            published, user, assocs = cluster(tmp, users)
            print(f"\n{users:,} users, {assocs:,} associations, published file {published.stat().st_size / 1e6:.1f} MB")
            print(f"| request | exit | CPU s (median of {args.repeat}) | peak RSS MiB | x baseline CPU | x baseline RSS |")
            print("|---|---|---|---|---|---|")
            base = None
            import json

            from fscontrol.export import publish as pub

            ft = json.loads(published.read_text())
            ft["config"]["priority_mode"] = "fair_tree"
            # a snapshot just published, as the agent's every tick leaves it (the generator's is years old)
            ft["taken_at"] = ft["published_at"] = time.time()
            ft["next_pass_at"] = None
            for r in ft["associations"]:  # as build_published writes a Fair Tree cluster's rows: F = rank / N
                r["halving_core_hours"] = None
            # the agent's publish step under Fair Tree: every user's outlook in its own row (export.outlook)
            from fscontrol.export.outlook import published_outlooks, tree_from_published

            t0 = time.process_time()
            ft["fair_tree_outlook"], outlook = published_outlooks(ft, tree_from_published(ft))
            agent_s = time.process_time() - t0
            for r in ft["associations"]:
                if r["user"]:
                    r["ft"] = outlook[f"{r['account']}/{r['user']}"]
            ft_file = pub.write_published(ft, published.with_name(published.stem + "-fairtree.json"))
            del ft, outlook
            print(f"(agent side, once per publish: every user's Fair Tree outlook in {agent_s:.2f} s of CPU, in process; "
                  f"published file {ft_file.stat().st_size / 1e6:.1f} MB)")
            fair_tree = [("Fair Tree forecast (no plan)", ["--fair-tree"]),
                         ("Fair Tree forecast, --horizon 1d (within the agent's projection)", ["--fair-tree", "--horizon", "1d"])]
            for name, extra in REQUESTS + fair_tree:
                if args.skip_long and extra and "60d" in extra[-1]:
                    continue
                if args.only and extra is not None and args.only not in name:
                    continue
                target = ft_file if extra and extra[0] == "--fair-tree" else published
                extra = extra[1:] if extra and extra[0] == "--fair-tree" else extra
                tail = ["--version"] if extra is None else ["--published", str(target), "--source", "published",
                                                            "-u", user, "--stale-ok", *extra]
                runs = [one([sys.executable, "-c", PEAK, "forecast", *tail]) for _ in range(args.repeat)]
                code = runs[0][0]
                cpu = statistics.median(r[1] for r in runs)
                rss = max(r[2] for r in runs)
                if base is None:
                    base = (cpu, rss)
                print(f"| {name} | {code} | {cpu:.2f} | {rss:.1f} | {cpu / base[0]:.1f} | {rss / base[1]:.2f} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
