"""How far `status`'s F is from slurmctld's in a history the agent collected (issue #33): for
each classic snapshot, every user row's F against sshare's FairShare (6 decimals) and every
pending job's against sprio's. So that the comparison with sshare is not circular (status reads
FairShare too: model/effusage.py), the users' own FairShare is blanked before status runs; the
accounts' prints and the rule give the users' values.

Run:  .venv/bin/python scripts/check_f_history.py HISTORY.db [--snapshot N] [--tol 5e-6]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--snapshot", type=int, action="append")
    ap.add_argument("--tol", type=float, default=5e-6)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from fscontrol.report import status as rstatus
    from fscontrol.store import history as store

    db = store.open_db(Path(args.db), create=False, readonly=True)
    worst = 0
    for cluster in store.clusters(db):
        for sid in args.snapshot or store.snapshot_ids(db, cluster):
            snap = store.load_snapshot(db, sid, cluster=cluster)
            if snap.config.mode != "classic":
                continue
            blind = dataclasses.replace(snap, shares=tuple(dataclasses.replace(r, fairshare=None) if r.user else r
                                                           for r in snap.shares))
            table = rstatus.status_data(blind)["table"]
            printed = {r.key: r.fairshare for r in snap.shares}
            off_s = [abs(t["fairshare"] - printed[(t["account"], t["user"])]) for t in table
                     if t["fairshare"] is not None and printed.get((t["account"], t["user"])) is not None]
            off_p = [abs(t["fairshare"] - snap.prio_fairshare[(t["account"], t["user"])]) for t in table
                     if t["fairshare"] is not None and (t["account"], t["user"]) in snap.prio_fairshare]
            bad = sum(x > args.tol for x in off_s) + sum(x > args.tol for x in off_p)
            worst = max(worst, bad)
            print(f"{cluster} snapshot {sid}: {len(snap.shares):,} associations; {len(off_s):,} user rows, "
                  f"max |F - sshare FairShare| {max(off_s, default=0):.1e} ({sum(x > args.tol for x in off_s)} over "
                  f"{args.tol:g}); {len(off_p)} pending, max |F - sprio| {max(off_p, default=0):.1e} "
                  f"({sum(x > args.tol for x in off_p)} over)")
    return 1 if worst else 0


if __name__ == "__main__":
    raise SystemExit(main())
