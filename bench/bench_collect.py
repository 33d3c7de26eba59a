"""Benchmark fscontrol's collect path (parse + store) at scale, against a csv floor.

Data: SYNTHETIC, written by scripts/gen_synthetic.py's functions into a temporary folder: an
`sshare -a -l -P` snapshot of ~100,000 associations and an `sacct -a -X -T -P` window of
1,000,000 allocations (10x smaller with --quick).

Three child processes, one after the other, so each one's peak RSS (getrusage ru_maxrss, the
kernel's high-water mark of resident memory, interpreter and imports included) is its own:

* floor:    Python's csv module (`csv.reader(f, delimiter='|')`) reads both files, rows
            materialized in lists. The least any Python parser of these bytes must do.
* floor-nogc: the same with the cyclic garbage collector off, for reference (the GC re-scans the
            growing list of rows; fscontrol's parsers pause it).
* measured: fscontrol: read the files, parse_config + parse_sshare + parse_sacct, build a
            snaprecords.Snapshot, open a fresh SQLite history and write_snapshot in one transaction.
* storage:  10 consecutive snapshots of the same associations where ~10% of them change each
            time (decaying usage) and the rest are unchanged; database growth per snapshot and
            per association, against a full copy (every association changed) for comparison.

Run:  .venv/bin/python bench/bench_collect.py [--quick] [--repeat N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import gc
import importlib.util
import itertools
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 3.0
TARGET_PEAK_MIB = 1024.0


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_synthetic", ROOT / "scripts" / "gen_synthetic.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_synthetic"] = mod
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------------------- data
def make_data(folder: Path, n_assoc: int, n_jobs: int, seed: int = 1) -> dict:
    """sshare.txt (about n_assoc associations), sacct.txt (n_jobs jobs), config.txt in folder."""
    gen = _load_generator()
    import numpy as np

    # ~1.0725 associations per user (users/20 accounts, 15% of them split into 2-4 labs)
    users = max(10, round((n_assoc - 2) / 1.0725))
    rng = np.random.default_rng(seed)
    tree = gen.build_tree(users, max(1, round(users / 20)), rng)
    gen.assign_usage(tree, rng)
    gen.classic_fairshare(tree, 1)
    now = gen.DEFAULT_NOW
    window = (now - 3600, now)
    jobs = gen.generate_jobs(tree, n_jobs, window, np.random.default_rng([seed, 1]))
    gen.charge_running(tree, jobs, now)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sshare.txt").write_text(gen.format_sshare(tree))
    (folder / "sacct.txt").write_text(gen.format_sacct(tree, jobs, window))
    (folder / "config.txt").write_text(gen.format_config("agave-synth", now, 1))
    info = {
        "associations": len(tree),
        "users": users,
        "jobs": n_jobs,
        "window": list(window),
        "sshare_bytes": (folder / "sshare.txt").stat().st_size,
        "sacct_bytes": (folder / "sacct.txt").stat().st_size,
    }
    (folder / "info.json").write_text(json.dumps(info))
    return info


# ---------------------------------------------------------------------------- children
def child_floor(folder: Path, gc_off: bool = False) -> dict:
    if gc_off:
        gc.disable()
    base = _maxrss_mib()
    out = {}
    t0 = time.perf_counter()
    keep = []
    for name in ("sshare", "sacct"):
        t = time.perf_counter()
        with open(folder / f"{name}.txt", newline="") as f:
            rows = list(csv.reader(f, delimiter="|"))
        out[f"{name}_s"] = time.perf_counter() - t
        out[f"{name}_rows"] = len(rows) - 1
        keep.append(rows)  # both tables held at once, as the measured side holds both
    out["total_s"] = time.perf_counter() - t0
    out["maxrss_mib"] = _maxrss_mib()
    out["base_mib"] = base
    return out


def child_measured(folder: Path) -> dict:
    from fscontrol.slurm import parse
    from fscontrol.store import history as store
    from fscontrol.snaprecords import Snapshot

    info = json.loads((folder / "info.json").read_text())
    db_path = folder / "measured.db"
    for p in folder.glob("measured.db*"):
        p.unlink()
    base = _maxrss_mib()
    out = {}
    t0 = time.perf_counter()
    config = parse.parse_config((folder / "config.txt").read_text())
    t = time.perf_counter()
    shares = parse.parse_sshare((folder / "sshare.txt").read_text())
    out["sshare_s"] = time.perf_counter() - t
    t = time.perf_counter()
    jobs = parse.parse_sacct((folder / "sacct.txt").read_text())
    out["sacct_s"] = time.perf_counter() - t
    t = time.perf_counter()
    snap = Snapshot(
        cluster=config.cluster,
        taken_at=float(info["window"][1]),
        config=config,
        shares=shares,
        jobs=jobs,
        window=(float(info["window"][0]), float(info["window"][1])),
    )
    db = store.open_db(db_path)
    with store.transaction(db):
        store.write_snapshot(db, snap, source="bench")
    db.conn.close()
    out["store_s"] = time.perf_counter() - t
    out["total_s"] = time.perf_counter() - t0
    out["maxrss_mib"] = _maxrss_mib()
    out["base_mib"] = base
    out["associations"] = len(shares)
    out["jobs"] = len(jobs)
    out["db_bytes"] = sum(p.stat().st_size for p in folder.glob("measured.db*"))
    return out


def _db_bytes(db, path: Path) -> int:
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def child_storage(folder: Path, n_snap: int = 10, change_frac: float = 0.10, seed: int = 2) -> dict:
    """Database growth for n_snap snapshots of the same associations, change-only vs full copy."""
    import dataclasses
    import random

    from fscontrol.slurm import parse
    from fscontrol.store import history as store
    from fscontrol.snaprecords import Snapshot

    config = parse.parse_config((folder / "config.txt").read_text())
    shares0 = parse.parse_sshare((folder / "sshare.txt").read_text())
    t_base = json.loads((folder / "info.json").read_text())["window"][1]
    out = {"associations": len(shares0), "snapshots": n_snap, "change_frac": change_frac}
    for label, frac in (("change_only", change_frac), ("full_copy", 1.0)):
        path = folder / f"storage-{label}.db"
        for p in folder.glob(path.name + "*"):
            p.unlink()
        db = store.open_db(path)
        rng = random.Random(seed)
        shares = list(shares0)
        sizes = []
        changed_rows = []
        for k in range(n_snap):
            if k:
                # decay: a fraction of the associations lose some usage; the rest print the same
                idx = range(len(shares)) if frac >= 1.0 else rng.sample(range(len(shares)), round(frac * len(shares)))
                for i in idx:
                    r = shares[i]
                    u = int(r.raw_usage * 0.9987) if r.raw_usage > 1000 else r.raw_usage + 1
                    shares[i] = dataclasses.replace(
                        r, raw_usage=u, norm_usage=None if r.norm_usage is None else round(r.norm_usage * 0.9987, 6)
                    )
            snap = Snapshot(cluster=config.cluster, taken_at=t_base + 300.0 * k, config=config, shares=tuple(shares))
            with store.transaction(db):
                sid = store.write_snapshot(db, snap, source="bench-storage")
            changed_rows.append(db.execute("SELECT count(*) FROM assoc_samples WHERE snapshot_id = ?", [sid]).fetchone()[0])
            sizes.append(_db_bytes(db, path))
        db.conn.close()
        growth = [b - a for a, b in itertools.pairwise(sizes)]
        out[label] = {
            "first_snapshot_bytes": sizes[0],
            "final_bytes": sizes[-1],
            "growth_per_snapshot_bytes": sum(growth) / len(growth) if growth else 0,
            "rows_per_snapshot": sum(changed_rows[1:]) / max(1, len(changed_rows) - 1),
            "sizes": sizes,
        }
    n = out["associations"]
    for label in ("change_only", "full_copy"):
        d = out[label]
        d["bytes_per_assoc_per_snapshot"] = d["growth_per_snapshot_bytes"] / n
        d["bytes_per_changed_row"] = d["growth_per_snapshot_bytes"] / max(1, d["rows_per_snapshot"])
    return out


def run_child(kind: str, folder: Path, *extra: str) -> dict:
    p = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--dir", str(folder), *extra],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )
    if p.returncode != 0:
        raise SystemExit(f"child {kind} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------- report
def _mib(b: float) -> str:
    return f"{b / 2**20:,.1f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10x smaller: 10,000 associations, 100,000 jobs")
    ap.add_argument("--assocs", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3, help="floor/measured pairs to run (medians reported)")
    ap.add_argument("--keep", type=Path, default=None, help="write the data here and keep it")
    ap.add_argument("--no-storage", action="store_true", help="skip the 10-snapshot storage run")
    ap.add_argument("--child", choices=("gen", "floor", "floor-nogc", "measured", "storage"), help=argparse.SUPPRESS)
    ap.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child == "gen":
        print(json.dumps(make_data(args.dir, args.assocs, args.jobs)))
        return
    if args.child:
        fn = {
            "floor": child_floor,
            "floor-nogc": lambda d: child_floor(d, gc_off=True),
            "measured": child_measured,
            "storage": child_storage,
        }[args.child]
        print(json.dumps(fn(args.dir)))
        return

    n_assoc = args.assocs or (10_000 if args.quick else 100_000)
    n_jobs = args.jobs or (100_000 if args.quick else 1_000_000)
    tmp = None
    if args.keep:
        folder = args.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bench-collect-")
        folder = Path(tmp.name)
    try:
        # generated in a child too: ru_maxrss survives fork+exec, so this parent stays small
        t = time.perf_counter()
        info = run_child("gen", folder, "--assocs", str(n_assoc), "--jobs", str(n_jobs))
        t_gen = time.perf_counter() - t
        print(
            f"SYNTHETIC data (scripts/gen_synthetic.py functions), generated in {t_gen:.1f} s: "
            f"sshare {info['associations']:,} associations ({_mib(info['sshare_bytes'])}), "
            f"sacct {info['jobs']:,} jobs ({_mib(info['sacct_bytes'])})"
        )
        # floor and measured alternate, each in a fresh child, `--repeat` times: the medians are
        # reported, and the ratio of each consecutive pair (a busy machine slows both alike)
        floors, meases, nogcs = [], [], []
        for _ in range(args.repeat):
            floors.append(run_child("floor", folder))
            meases.append(run_child("measured", folder))
            nogcs.append(run_child("floor-nogc", folder))

        def med(runs: list[dict], k: str) -> float:
            return statistics.median(r[k] for r in runs)

        floor = {k: med(floors, k) for k in ("sshare_s", "sacct_s", "total_s")}
        nogc = {k: med(nogcs, k) for k in ("sshare_s", "sacct_s", "total_s")}
        meas = {k: med(meases, k) for k in ("sshare_s", "sacct_s", "store_s", "total_s")}
        rows = [
            ("sshare", floor["sshare_s"], meas["sshare_s"]),
            ("sacct", floor["sacct_s"], meas["sacct_s"]),
            ("store (write_snapshot, 1 tx)", None, meas["store_s"]),
            ("total", floor["total_s"], meas["total_s"]),
        ]
        print()
        print(f"median of {args.repeat} runs          csv floor  fscontrol   ratio")
        for name, f, m in rows:
            fs = f"{f:8.2f} s" if f is not None else f"{'-':>10}"
            rs = f"{m / f:6.2f}x" if f else f"{'':>7}"
            print(f"{name:<30} {fs:>10} {m:8.2f} s {rs:>7}")
        peak_f = max(r["maxrss_mib"] for r in floors)
        peak_m = max(r["maxrss_mib"] for r in meases)
        print(
            f"{'peak RSS (ru_maxrss, max)':<30} {peak_f:6.0f} MiB {peak_m:6.0f} MiB"
            f"   (at child start: {floors[0]['base_mib']:.0f} / {meases[0]['base_mib']:.0f} MiB)"
        )
        pair = [m["total_s"] / f["total_s"] for f, m in zip(floors, meases)]
        ratio = statistics.median(pair)
        ok_t = ratio <= TARGET_RATIO
        ok_m = peak_m <= TARGET_PEAK_MIB
        print(f"total/floor per run: {', '.join(f'{x:.2f}x' for x in pair)}")
        print(
            f"for reference, the csv floor with the cyclic GC off (gc.disable(), as fscontrol's parsers do): "
            f"sshare {nogc['sshare_s']:.2f} s, sacct {nogc['sacct_s']:.2f} s, total {nogc['total_s']:.2f} s "
            f"-> fscontrol = {meas['total_s'] / nogc['total_s']:.2f}x that"
        )
        print(
            f"target: within {TARGET_RATIO:g}x the floor -> {ratio:.2f}x (median) {'OK' if ok_t else 'MISSED'}; "
            f"peak under 1 GiB -> {peak_m:.0f} MiB {'OK' if ok_m else 'MISSED'}; "
            f"history file after one snapshot {_mib(meases[0]['db_bytes'])}"
        )
        if not args.no_storage:
            st = run_child("storage", folder)
            n = st["associations"]
            print()
            print(f"storage: {st['snapshots']} snapshots of {n:,} associations (no jobs), file size after WAL checkpoint")
            print(f"{'history':<34} {'1st snapshot':>12} {'growth/snapshot':>16} {'rows/snapshot':>14} {'B/assoc/snap':>13} {'B/row':>6}")
            for label, name in (("change_only", f"~{st['change_frac']:.0%} changed (change-only)"), ("full_copy", "100% changed (= full copy)")):
                d = st[label]
                print(
                    f"{name:<34} {_mib(d['first_snapshot_bytes']):>12} {_mib(d['growth_per_snapshot_bytes']):>16} "
                    f"{d['rows_per_snapshot']:>14,.0f} {d['bytes_per_assoc_per_snapshot']:>13.1f} {d['bytes_per_changed_row']:>6.1f}"
                )
        print()
        print(json.dumps({"data": info, "floor": floors, "floor_nogc": nogcs, "measured": meases, **({"storage": st} if not args.no_storage else {})}))
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    gc.collect()
    main()
