"""The users' web page under load (issue #31 item 2), against a static file server serving the
same bytes, in the same run, on loopback.

The clusters are SYNTHETIC (scripts/gen_synthetic.py, as bench/bench_bounds.py: 2,500 users and
93,000 users = ~100,000 associations, seed 1), collected and published with `fscontrol collect` /
`fscontrol publish`. The server is `fscontrol.web.app.serve` (what `fscontrol web` runs) in a child
process, `--workers` processes, `now` set to 10 minutes after the snapshot (the generator's
snapshots are days old). Each request is the whole page with the planner's default plan (16 CPUs
x 7 d, 3 d idle, twice: the page's two forecasts), `/?user=NAME`, the names taken in turn from
--users-asked distinct users of the cluster (the server runs as root, an admin: it may ask for
anyone), so no answer is a repeat of the one before.

The baseline: Python's http.server (threaded) serving one of those pages from a file, the same
bytes, with the same clients.

Two phases each, bounded in count and time: one client, --requests requests one after the other
(latency: median, p95); then --clients clients at once, --requests x 2 requests in all or
--seconds, whichever ends first (requests/s, median and p95 latency). The first request of each
worker builds its per-snapshot index and is timed apart ("cold"). Memory: the peak RSS (VmHWM)
of each server process (the workers', with --workers > 1) after the load.

Run:  .venv/bin/python bench/bench_web.py [--sizes 2500,93000] [--workers 2] [--clients 8]
      [--requests 100] [--seconds 60] [--users-asked 200]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_bounds import cluster  # noqa: E402

SERVER = """
import sys
from fscontrol.web.app import serve
pub, now, workers = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
try:
    serve("127.0.0.1", 0, published=pub, source="published", token=None, workers=workers, now=now,
          ready=lambda url: (print(url, flush=True)))
except KeyboardInterrupt:  # the bench's TERM
    pass
"""
STATIC = """
import sys, functools
from http.server import ThreadingHTTPServer, SimpleHTTPRequestHandler
class Quiet(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a): pass
h = functools.partial(Quiet, directory=sys.argv[1])
with ThreadingHTTPServer(("127.0.0.1", 0), h) as s:
    print(f"http://127.0.0.1:{s.server_port}/", flush=True)
    s.serve_forever()
"""


def start(code: str, *args: str) -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    url = p.stdout.readline().strip()
    m = re.search(r":(\d+)/", url)
    if not m:
        p.kill()
        raise SystemExit(f"the server did not start: {url!r}")
    return p, int(m.group(1))


def get(port: int, path: str) -> tuple[float, int, bytes]:
    t = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return time.perf_counter() - t, r.status, body


def sequential(port: int, paths: list[str], n: int) -> list[float]:
    out = []
    for i in range(n):
        dt, status, _ = get(port, paths[i % len(paths)])
        if status != 200:
            raise SystemExit(f"HTTP {status} for {paths[i % len(paths)]}")
        out.append(dt)
    return out


def concurrent(port: int, paths: list[str], clients: int, n: int, seconds: float) -> tuple[list[float], float, int]:
    lock, times, errors = threading.Lock(), [], [0]
    nxt = [0]
    deadline = time.perf_counter() + seconds

    def client() -> None:
        while time.perf_counter() < deadline:
            with lock:
                i = nxt[0]
                if i >= n:
                    return
                nxt[0] += 1
            dt, status, _ = get(port, paths[i % len(paths)])
            with lock:
                times.append(dt)
                errors[0] += status != 200

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, time.perf_counter() - t0, errors[0]


def family(pid: int) -> list[int]:
    """The server and its children (the workers)."""
    try:
        return [pid] + [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return [pid]


def cpu(pid: int) -> float:
    """User + system CPU seconds of the server and its workers (/proc/PID/stat), the load-independent cost."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in family(pid):
        try:
            f = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(f[11]) + int(f[12])) / tick
        except OSError:
            pass
    return total


def peaks(pid: int) -> list[float]:
    """VmHWM (MiB) of the server and of its children (the workers), those still alive."""
    pids = family(pid)
    out = []
    for p in pids:
        try:
            hwm = next(ln for ln in Path(f"/proc/{p}/status").read_text().splitlines() if ln.startswith("VmHWM:"))
            out.append(int(hwm.split()[1]) / 1024)
        except (OSError, StopIteration):
            pass
    return out


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(round(0.95 * len(xs))) - 1)]


def ms(x: float) -> str:
    return f"{x * 1000:,.1f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2500,93000")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--users-asked", type=int, default=200)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        for users in (int(x) for x in a.sizes.split(",")):
            pub, _, assocs = cluster(Path(tmp), users)
            head = pub.read_text(encoding="utf-8")[:4000]
            taken = float(re.search(r'"taken_at": *([0-9.]+)', head).group(1))
            lines = (Path(tmp) / f"syn{users}" / "sshare.txt").read_text().splitlines()[3:]
            names = sorted({ln.split("|")[1] for ln in lines if ln.split("|")[1]})
            step = max(1, len(names) // a.users_asked)
            paths = [f"/?user={n}" for n in names[::step][: a.users_asked]]
            print(f"== {users:,} users, {assocs:,} associations; {len(paths)} users asked in turn; "
                  f"{a.workers} worker(s), {a.clients} clients", flush=True)
            server, port = start(SERVER, str(pub), str(taken + 600), str(a.workers))
            try:
                cold = [get(port, paths[i])[0] for i in range(a.workers)]
                _, status, page = get(port, paths[0])
                if status != 200 or b"Plan a campaign" not in page:
                    raise SystemExit(f"the page did not come: HTTP {status}")
                c0 = cpu(server.pid)
                seq = sequential(port, paths, a.requests)
                conc, wall, errors = concurrent(port, paths, a.clients, 2 * a.requests, a.seconds)
                served_cpu = (cpu(server.pid) - c0) / (len(seq) + len(conc))
                mem = peaks(server.pid)
            finally:
                server.terminate()
                server.wait(timeout=30)
            static_dir = Path(tmp) / "static"
            static_dir.mkdir(exist_ok=True)
            (static_dir / "page.html").write_bytes(page)
            sserver, sport = start(STATIC, str(static_dir))
            try:
                c0 = cpu(sserver.pid)
                sseq = sequential(sport, ["/page.html"], a.requests)
                sconc, swall, serrors = concurrent(sport, ["/page.html"], a.clients, 2 * a.requests, a.seconds)
                static_cpu = (cpu(sserver.pid) - c0) / (len(sseq) + len(sconc))
                smem = peaks(sserver.pid)
            finally:
                sserver.terminate()
                sserver.wait(timeout=30)
            row = {"users": users, "associations": assocs, "page_bytes": len(page), "cold_ms": [round(c * 1000) for c in cold]}
            print(f"  page {len(page):,} bytes; first request of each worker (builds its index): "
                  + ", ".join(ms(c) for c in cold))
            print(f"  {'':28} {'fscontrol web':>22} {'static (same bytes)':>22} {'ratio':>8}")
            for label, x, y in (("one client: median", statistics.median(seq), statistics.median(sseq)),
                                ("one client: p95", p95(seq), p95(sseq)),
                                (f"{a.clients} clients: median", statistics.median(conc), statistics.median(sconc)),
                                (f"{a.clients} clients: p95", p95(conc), p95(sconc))):
                print(f"  {label:28} {ms(x):>22} {ms(y):>22} {x / y:>7.0f}x")
                row[label] = round(x * 1000, 1)
            rate, srate = len(conc) / wall, len(sconc) / swall
            print(f"  {a.clients + 0} clients: requests/s    {rate:>22.1f} {srate:>22.1f}   "
                  f"({len(conc)} and {len(sconc)} requests in {wall:.1f} s and {swall:.1f} s; errors {errors}, {serrors})")
            print(f"  server CPU a request         {ms(served_cpu):>22} {ms(static_cpu):>22} {served_cpu / max(static_cpu, 1e-9):>7.0f}x")
            row["server_cpu_ms"] = round(served_cpu * 1000, 1)
            print(f"  peak RSS a process (MiB)     {', '.join(f'{m:.0f}' for m in mem):>22} "
                  f"{', '.join(f'{m:.0f}' for m in smem):>22}")
            row.update({"requests_per_s": round(rate, 1), "static_requests_per_s": round(srate, 1),
                        "peak_mib": [round(m, 1) for m in mem]})
            print("  " + json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
