"""The users' page and forecast at a big site's size, this checkout against another (issue #31
item 2, at 1M jobs): what each process pays once per published snapshot.

For each checkout, from the same history (--db) and sample (--sample: its sshare names the users):
* `fscontrol publish`: CPU and peak RSS (the child's own, os.wait4);
* `fscontrol forecast --published FILE --source published --user U --json`: CPU and peak RSS;
* the page (fscontrol.web.app.make_app, in process, no HTTP): the CPU of a worker's first page,
  then of its first page after each of --replace new snapshots (the file replaced, os.replace of a
  copy: a new inode, as the agent publishes), and the median of --pages later pages;
* `fscontrol web --workers 2` (fscontrol.web.app.serve) with --clients threads asking in turn
  for --seconds while the file is replaced every --every s: requests a second, median, p95.

`--before DIR`: a folder holding another fscontrol/ (`git archive main fscontrol | tar -x -C DIR`),
run the same way. The history is not changed (publish writes into a temporary folder).

Run:  .venv/bin/python bench/bench_first_page.py --db BIG.db --sample BIGSAMPLE [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import http.client
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PAGES = """
import json, os, shutil, statistics, sys, time
from fscontrol.web.app import make_app
pub, now, users, replace, pages = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(","), int(sys.argv[4]), int(sys.argv[5])
live = pub + ".live"
shutil.copy(pub, live)
app = make_app(published=live, source="published", now=now)
def get(u, ok="200"):
    st = []
    t = time.process_time()
    body = b"".join(app({"REQUEST_METHOD": "GET", "PATH_INFO": "/", "QUERY_STRING": "user=" + u}, lambda s, h: st.append(s)))
    dt = time.process_time() - t
    assert st[0].startswith(ok) and (ok != "200" or b"Plan a campaign" in body), (st, body[-300:])
    return dt
first = get(users[0])
after = []
for i in range(replace):
    shutil.copy(pub, live + ".tmp"); os.replace(live + ".tmp", live)
    after.append(get(users[1 + i]))
later = sorted(get(u) for u in users[1 + replace:1 + replace + pages])
unknown = get("no-such-user-here", "404")
known = get(users[-1])
st = open("/proc/self/status").read()
print(json.dumps({"first": first, "after_new_snapshot": after, "later_median": statistics.median(later), "unknown": unknown, "after_unknown": known,
                  "peak_mib": int(re.search(r"VmHWM:\\s+(\\d+)", st).group(1)) / 1024}))
""".replace("import json, os", "import json, os, re")

SERVER = """
import sys
from fscontrol.web.app import serve
try:
    serve("127.0.0.1", 0, published=sys.argv[1], source="published", workers=2, now=float(sys.argv[2]),
          ready=lambda url: print(url, flush=True))
except KeyboardInterrupt:
    pass
"""


def run_measured(argv: list[str], env: dict, cwd: Path) -> tuple[float, float, str]:
    """(CPU s, peak RSS MiB, stdout) of one child process (its own rusage: os.wait4; this process
    stays small, as a forked child's ru_maxrss counts what it was forked from). `cwd`: not a
    checkout's (python -m and -c put the working folder first on sys.path)."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if p.returncode != 0:
        raise SystemExit(f"{argv[2:5]} failed ({p.returncode}): {text[-2000:]}")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, text


def load(pub: Path, now: float, users: list[str], clients: int, seconds: float, every: float, env: dict) -> dict:
    """Requests a second and latency of `clients` threads against `fscontrol web --workers 2` while
    the file is replaced every `every` s."""
    live = pub.with_name("live-" + pub.name)
    shutil.copy(pub, live)
    srv = subprocess.Popen([sys.executable, "-c", SERVER, str(live), str(now)], stdout=subprocess.PIPE, text=True, env=env,
                           cwd=pub.parent)
    try:
        port = int(re.search(r":(\d+)/", srv.stdout.readline()).group(1))
        times: list[float] = []
        errors = [0]
        stop = threading.Event()
        lock = threading.Lock()

        def client(k: int) -> None:
            i = k
            while not stop.is_set():
                t = time.perf_counter()
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                c.request("GET", f"/?user={users[i % len(users)]}")
                r = c.getresponse()
                body = r.read()
                c.close()
                with lock:
                    times.append(time.perf_counter() - t)
                    if r.status != 200 or users[i % len(users)].encode() not in body:
                        errors[0] += 1
                i += clients

        replaced = [0]

        def writer() -> None:
            while not stop.wait(every):
                tmp = live.with_suffix(".tmp")
                shutil.copy(pub, tmp)
                os.replace(tmp, live)
                replaced[0] += 1

        th = [threading.Thread(target=client, args=(k,)) for k in range(clients)] + [threading.Thread(target=writer)]
        t0 = time.perf_counter()
        for t in th:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in th:
            t.join()
        wall = time.perf_counter() - t0
        times.sort()
        return {"requests_per_s": len(times) / wall, "requests": len(times), "errors": errors[0], "replaced": replaced[0],
                "median_ms": 1000 * statistics.median(times), "p95_ms": 1000 * times[max(0, round(0.95 * len(times)) - 1)]}
    finally:
        srv.terminate()
        srv.wait(timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--sample", type=Path, required=True)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--replace", type=int, default=3)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--every", type=float, default=2.0)
    a = ap.parse_args()
    lines = (a.sample / "sshare.txt").read_text().splitlines()[3:]
    names = sorted({ln.split("|")[1] for ln in lines if ln.split("|")[1]})
    users = names[:: max(1, len(names) // 200)][:200]
    trees = [("this checkout", ROOT)] + ([("before", a.before.resolve())] if a.before else [])
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start")
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-firstpage-") as tmp:
        for name, tree in trees:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            folder = Path(tmp) / re.sub(r"\W", "_", name)
            folder.mkdir()
            pub = folder / "c.json"
            r: dict = {}
            r["publish_cpu_s"], r["publish_peak_mib"], _ = run_measured(
                [sys.executable, "-m", "fscontrol", "publish", "--db", str(a.db), "--out", str(pub)], env, folder)
            with pub.open("rb") as fh:
                taken = float(re.search(rb'"taken_at": *([0-9.]+)', fh.read(4000)).group(1))
            now = taken + 600
            r["file_mb"] = pub.stat().st_size / 1e6
            r["forecast_cpu_s"], r["forecast_peak_mib"], _ = run_measured(
                [sys.executable, "-m", "fscontrol", "forecast", "--published", str(pub), "--source", "published",
                 "--user", users[1], "--now", str(now), "--stale-ok", "--json"], env, folder)
            _, _, out = run_measured([sys.executable, "-c", PAGES, str(pub), str(now), ",".join(users), str(a.replace),
                                      str(a.pages)], env, folder)
            r["page"] = json.loads(out.strip().splitlines()[-1])
            r["load"] = load(pub, now, users, a.clients, a.seconds, a.every, env)
            results[name] = r
            pg, ld = r["page"], r["load"]
            print(f"== {name} ({tree}; forecast and first page for {users[1]}, {users[0]})")
            print(f"  publish                      {r['publish_cpu_s']:7.2f} s CPU  {r['publish_peak_mib']:6.0f} MiB peak  "
                  f"(file {r['file_mb']:.1f} MB)")
            print(f"  forecast --published         {r['forecast_cpu_s']:7.2f} s CPU  {r['forecast_peak_mib']:6.0f} MiB peak")
            print(f"  page: a worker's first       {pg['first']:7.3f} s CPU")
            print("  page: first after a new snapshot " + ", ".join(f"{x:.3f}" for x in pg["after_new_snapshot"]) + " s CPU")
            print(f"  page: later pages, median    {1000 * pg['later_median']:7.1f} ms CPU  (worker peak {pg['peak_mib']:.0f} MiB)")
            print(f"  page: an unknown user        {pg['unknown']:7.3f} s CPU, the next known user {pg['after_unknown']:.3f} s")
            print(f"  {a.clients} clients, file replaced every {a.every:g} s: {ld['requests_per_s']:.1f} requests/s "
                  f"({ld['requests']} in {a.seconds:g} s, {ld['replaced']} replacements, errors {ld['errors']}), "
                  f"median {ld['median_ms']:.0f} ms, p95 {ld['p95_ms']:.0f} ms", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
