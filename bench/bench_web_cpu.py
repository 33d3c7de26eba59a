"""CPU a page of the users' web page costs, in process, this checkout against another (issue #31
item 2): the WSGI app (fscontrol.web.app.make_app) called directly, no HTTP, for --pages distinct
users in turn (the page with the planner's default plan: its two forecasts), after one page that
warms the process (and, where there is one, builds the per-snapshot index). CPU by
time.process_time around each call, the median and p95 printed; each checkout in a fresh child
process, alternately, --repeat times.

The clusters are bench_bounds.py's (SYNTHETIC, gen_synthetic.py, seed 1). `--before DIR`: a
folder holding another fscontrol/ (`git archive REV fscontrol | tar -x -C DIR`).

Run:  .venv/bin/python bench/bench_web_cpu.py [--sizes 2500,93000] [--pages 60] [--repeat 2] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_bounds import cluster  # noqa: E402

CHILD = """
import json, statistics, sys, time
from fscontrol.web.app import make_app
pub, now, users = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(",")
app = make_app(published=pub, source="published", now=now)
def get(u):
    got = []
    body = b"".join(app({"REQUEST_METHOD": "GET", "PATH_INFO": "/", "QUERY_STRING": "user=" + u}, lambda s, h: got.append(s)))
    assert got[0].startswith("200") and b"Plan a campaign" in body, (got, body[-300:])
t = time.process_time(); get(users[0]); first = time.process_time() - t
cpu = []
for u in users[1:]:
    t = time.process_time(); get(u); cpu.append(time.process_time() - t)
cpu.sort()
print(json.dumps({"first": first, "median": statistics.median(cpu), "p95": cpu[max(0, round(0.95 * len(cpu)) - 1)]}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2500,93000")
    ap.add_argument("--pages", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--before", type=Path)
    a = ap.parse_args()
    trees = [("this checkout", ROOT)] + ([("before", a.before.resolve())] if a.before else [])
    with tempfile.TemporaryDirectory(prefix="bench-webcpu-") as tmp:
        for users in (int(x) for x in a.sizes.split(",")):
            pub, _, assocs = cluster(Path(tmp), users)
            taken = float(re.search(r'"taken_at": *([0-9.]+)', pub.read_text(encoding="utf-8")[:4000]).group(1))
            lines = (Path(tmp) / f"syn{users}" / "sshare.txt").read_text().splitlines()[3:]
            names = sorted({ln.split("|")[1] for ln in lines if ln.split("|")[1]})
            asked = names[:: max(1, len(names) // (a.pages + 1))][: a.pages + 1]
            print(f"== {users:,} users, {assocs:,} associations, {len(asked) - 1} pages of distinct users", flush=True)
            for r in range(a.repeat):
                for label, tree in trees:
                    p = subprocess.run([sys.executable, "-c", CHILD, str(pub), str(taken + 600), ",".join(asked)], cwd=tree,
                                       capture_output=True, text=True, check=True)
                    x = json.loads(p.stdout.strip().splitlines()[-1])
                    print(f"  run {r + 1} {label:14} CPU a page: median {x['median'] * 1000:7.1f} ms, p95 {x['p95'] * 1000:7.1f} ms"
                          f" (the first page {x['first'] * 1000:.0f} ms)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
