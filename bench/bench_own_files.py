"""The cost of each user's own file at a publish (fscontrol.export.privacy.write_own_files): every
name the host knows gets a folder and a file, all rewritten at every publish. N names, 10 % of them
with a running job; the first write (folders made) and the best of two rewrites, in a temporary
folder under --dir (default /var/tmp: a disk, as /var/lib/fscontrol; /tmp may be tmpfs).

Run:  .venv/bin/python bench/bench_own_files.py [--names 100 1000 10000] [--dir /var/tmp]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from fscontrol.export import privacy


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--dir", default="/var/tmp")
    args = ap.parse_args()
    for n in args.names:
        with tempfile.TemporaryDirectory(dir=args.dir) as d:
            pub = Path(d) / "tb.json"
            names = {f"user{i:05d}": (20000 + i, 20000 + i) for i in range(n)}
            own = {f"user{i:05d}": {"format": privacy.OWN_FORMAT, "user": f"user{i:05d}", "cluster": "tb", "snapshot_id": 1,
                                    "running": {"users": {f"acct/user{i:05d}": [[3600.0, 8.0, 1000 + i]]}, "accounts": {}}}
                   for i in range(0, n, 10)}
            times = []
            for _ in range(3):
                t = time.perf_counter()
                privacy.write_own_files(pub, own, names=names)
                times.append(time.perf_counter() - t)
            print(f"{n:>6} names ({len(own)} with running jobs): first {times[0]:.3f} s, rewrite (best of 2) {min(times[1:]):.3f} s")


if __name__ == "__main__":
    main()
