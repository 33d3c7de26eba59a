"""Peak memory of collect's sacct path as the jobs grow: streamed (now) against materialized.

Data: SYNTHETIC, written by bench_collect.make_data (scripts/gen_synthetic.py's functions): one
`sshare -a -l -P` of ~10,000 associations and `sacct -a -X -T -P` windows of 250,000, 500,000
and 1,000,000 jobs, in the exact text formats of samples/testbed-basic.

The data is generated in a child too, so the small parent lends no RSS to the children (Linux
carries the parent's high-water mark across fork). Each measurement is a fresh child process (peak RSS = its getrusage ru_maxrss, interpreter and
imports included), one after the other:

* read:     the baseline: read every byte of sshare.txt and sacct.txt, nothing else;
* streamed: what collect does now: parse_sshare, spool.from_file(sacct.txt) (the whole-output
            check and the one parse of every line, its records pickled to a temporary file a few
            thousand at a time), a snaprecords.Snapshot, open_db and write_snapshot in one
            transaction (the records unpickled as they are inserted, not parsed again);
* materialized: what collect did before: the text read whole, parse_sacct into a tuple of
            JobRecords, the same Snapshot and write_snapshot (this tree's);
* materialized@REV (`--before REV`): the same with fscontrol as of git revision REV (exported
            with `git archive`), e.g. b59d5cf, the last one before collect streamed;
* streamed@REV (`--streamed-before REV`): the streamed path as of REV (c01d118 parsed sacct
            twice).

Each child also reports its CPU time (user + system): on a machine shared with other work the
wall time of one child can double; CPU time moves much less.

Run:  .venv/bin/python bench/bench_collect_stream.py [--sizes 250000,500000,1000000] [--keep DIR] [--repeat N]
      [--before b59d5cf] [--streamed-before c01d118]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

N_ASSOC = 10_000


def child(kind: str, folder: Path) -> dict:
    import resource

    def rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    out = {"base_mib": rss()}
    t0 = time.perf_counter()
    if kind == "read":
        n = 0
        for name in ("sshare.txt", "sacct.txt"):
            with open(folder / name, "rb") as f:
                while b := f.read(1 << 20):
                    n += len(b)
        out["bytes"] = n
    else:
        from fscontrol.slurm import parse
        from fscontrol.store import history as store
        from fscontrol.snaprecords import Snapshot

        info = json.loads((folder / "info.json").read_text())
        config = parse.parse_config((folder / "config.txt").read_text())
        shares = parse.parse_sshare((folder / "sshare.txt").read_text())
        if kind == "streamed":
            from fscontrol.slurm import spool

            jobs = spool.from_file(folder / "sacct.txt", "sacct")
        else:
            jobs = parse.parse_sacct((folder / "sacct.txt").read_text())
        out["parsed_s"] = time.perf_counter() - t0
        snap = Snapshot(cluster=config.cluster, taken_at=float(info["window"][1]), config=config, shares=shares,
                        jobs=jobs, window=(float(info["window"][0]), float(info["window"][1])))
        db_path = folder / f"{kind}.db"
        for p in folder.glob(f"{kind}.db*"):
            p.unlink()
        db = store.open_db(db_path)
        with store.transaction(db):
            sid = store.write_snapshot(db, snap, source="bench")
        out["rows"] = db.execute("SELECT count(*) FROM job_usage WHERE snapshot_id = ?", [sid]).fetchone()[0]
        db.conn.close()
        out["jobs"] = len(jobs)
    out["total_s"] = time.perf_counter() - t0
    use = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = use.ru_utime + use.ru_stime  # (imports included: the same ~0.1 s in each)
    out["maxrss_mib"] = rss()
    return out


def run_child(kind: str, folder: Path, code: Path = ROOT) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}  # this tree's fscontrol, or an exported revision's
    p = subprocess.run([sys.executable, __file__, "--child", kind.split("@")[0], str(folder)], capture_output=True,
                       text=True, cwd=ROOT, env=env)
    if p.returncode != 0:
        raise SystemExit(f"child {kind} failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="250000,500000,1000000")
    ap.add_argument("--keep", type=Path, help="folder for the generated data (reused when present)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds (medians are reported)")
    ap.add_argument("--before", help="also time the materialized path with fscontrol as of this git revision "
                                     "(e.g. b59d5cf, before streaming), exported with git archive")
    ap.add_argument("--streamed-before", help="also time the streamed path as of this revision (e.g. c01d118: sacct "
                                              "parsed twice)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        if a.child[0].startswith("gen="):  # in a child: a big parent would lend its RSS to the children
            import bench_collect

            print(json.dumps(bench_collect.make_data(Path(a.child[1]), N_ASSOC, int(a.child[0][4:]))))
        else:
            print(json.dumps(child(a.child[0], Path(a.child[1]))))
        return

    base = a.keep or Path(tempfile.mkdtemp(prefix="bench-collect-stream-"))
    rows = []
    old = Path(tempfile.mkdtemp(prefix="bench-collect-before-"))
    old_streamed = Path(tempfile.mkdtemp(prefix="bench-collect-before-streamed-"))
    for rev, into in ((a.before, old), (a.streamed_before, old_streamed)):
        if rev:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "fscontrol"], capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    try:
        for n in [int(x) for x in a.sizes.split(",")]:
            folder = base / f"jobs-{n}"
            if not (folder / "info.json").exists():
                t = time.perf_counter()
                info = run_child(f"gen={n}", folder)
                print(f"generated {info['associations']:,} associations, {n:,} jobs "
                      f"({info['sacct_bytes'] / 2**20:.1f} MiB sacct) in {time.perf_counter() - t:.0f} s", flush=True)
            kinds = ["read", "streamed", "materialized"] + ([f"materialized@{a.before}"] if a.before else []) + (
                [f"streamed@{a.streamed_before}"] if a.streamed_before else [])
            runs: dict[str, list[dict]] = {k: [] for k in kinds}
            for _ in range(a.repeat):  # rounds interleave the kinds: a busy machine slows all alike
                for k in runs:
                    code = old if k.startswith("materialized@") else old_streamed if "@" in k else ROOT
                    runs[k].append(run_child(k, folder, code))
            res = {}
            for k, v in runs.items():  # the median round by wall time; peak RSS the highest seen
                med = sorted(v, key=lambda r: r["total_s"])[len(v) // 2]
                res[k] = {**med, "maxrss_mib": max(r["maxrss_mib"] for r in v), "walls": [r["total_s"] for r in v]}
            for k, v in runs.items():
                walls = ", ".join(f"{r['total_s']:.2f}" for r in v)
                cpus = ", ".join(f"{r['cpu_s']:.2f}" for r in v)
                print(f"  {k:<24} wall {walls} s | CPU {cpus} s | peak RSS {max(r['maxrss_mib'] for r in v):.0f} MiB",
                      flush=True)
            if a.before:
                ref = f"materialized@{a.before}"
                for k in ("streamed", "materialized") + ((f"streamed@{a.streamed_before}",) if a.streamed_before else ()):
                    print(f"  {k} / {ref}: wall (best) {min(r['total_s'] for r in runs[k]) / min(r['total_s'] for r in runs[ref]):.2f}, "
                          f"CPU (median) {statistics.median(r['cpu_s'] for r in runs[k]) / statistics.median(r['cpu_s'] for r in runs[ref]):.2f}")
            print("  child RSS at start (imports only):", {k: round(v["base_mib"]) for k, v in res.items()})
            assert res["streamed"]["rows"] == res["materialized"]["rows"]
            rows.append((n, res))
            print(f"{n:>9,} jobs: read {res['read']['total_s']:.2f} s | streamed {res['streamed']['total_s']:.2f} s, "
                  f"{res['streamed']['maxrss_mib']:.0f} MiB | materialized {res['materialized']['total_s']:.2f} s, "
                  f"{res['materialized']['maxrss_mib']:.0f} MiB", flush=True)
        print(f"\n{'jobs':>9} | {'read':>6} | {'streamed':>9} {'/ read':>7} {'peak RSS':>9} | "
              f"{'materialized':>12} {'/ read':>7} {'peak RSS':>9} | streamed / materialized")
        for n, r in rows:
            rd = r["read"]["total_s"]
            print(f"{n:>9,} | {rd:>5.2f}s | {r['streamed']['total_s']:>8.2f}s {r['streamed']['total_s'] / rd:>6.0f}x "
                  f"{r['streamed']['maxrss_mib']:>6.0f} MiB | {r['materialized']['total_s']:>11.2f}s "
                  f"{r['materialized']['total_s'] / rd:>6.0f}x {r['materialized']['maxrss_mib']:>6.0f} MiB | "
                  f"{r['streamed']['total_s'] / r['materialized']['total_s']:.2f}")
        peaks = [r["streamed"]["maxrss_mib"] for _, r in rows]
        print(f"streamed peak RSS spread: {min(peaks):.0f}-{max(peaks):.0f} MiB "
              f"(median {statistics.median(peaks):.0f}); flat = roughly constant")
    finally:
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(old_streamed, ignore_errors=True)
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
