"""How far `status`'s F is from slurmctld's in a history the agent collected (issue #33): for
each classic snapshot, every pending job's F against sprio's and every user row's against
sshare's FairShare (6 decimals; only where sshare computed it with slurmctld's d: Slurm 22.05's
sshare uses its slurm.conf's d, not one `scontrol fsdampeningfactor` set). status reads both
(model/effusage.py), so it runs twice: as it is ("status"), and blind, with the users' own
FairShare and sprio withheld ("blind": the accounts' prints and the rule give the users' values),
which is the check that is not circular.

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
    from fscontrol.model import effusage, fairshare
    from fscontrol.report import status as rstatus
    from fscontrol.store import history as store

    db = store.open_db(Path(args.db), create=False, readonly=True)
    worst = 0
    for cluster in store.clusters(db):
        for sid in args.snapshot or store.snapshot_ids(db, cluster):
            snap = store.load_snapshot(db, sid, cluster=cluster)
            if snap.config.mode != "classic":
                continue
            blind = dataclasses.replace(snap, prio_fairshare={}, shares=tuple(
                dataclasses.replace(r, fairshare=None) if r.user else r for r in snap.shares))
            tl = fairshare.tree_in_order(snap.shares)
            ns = fairshare.classic_shares_in_order(tl) if tl else None
            d_s = effusage.sshare_damping(snap.shares, ns) if ns else None
            same_d = d_s in (None, snap.config.damping_factor)
            printed = {r.key: r.fairshare for r in snap.shares}
            line = [f"{cluster} snapshot {sid}: {len(snap.shares):,} associations, d {snap.config.damping_factor} "
                    f"(sshare's {d_s if d_s is not None else '?'})"]
            for name, s in (("status", snap), ("blind", blind)):
                table = rstatus.status_data(s)["table"]
                off_s = [abs(t["fairshare"] - printed[(t["account"], t["user"])]) for t in table
                         if same_d and t["fairshare"] is not None and printed.get((t["account"], t["user"])) is not None]
                off_p = [abs(t["fairshare"] - snap.prio_fairshare[(t["account"], t["user"])]) for t in table
                         if t["fairshare"] is not None and (t["account"], t["user"]) in snap.prio_fairshare]
                bad = sum(x > args.tol for x in off_s) + sum(x > args.tol for x in off_p)
                worst = max(worst, bad)
                sshare_part = (f"{len(off_s):,} user rows, max |F - sshare FairShare| {max(off_s, default=0):.1e} "
                               f"({sum(x > args.tol for x in off_s)} over)") if same_d else "sshare: another d"
                line.append(f"{name}: {sshare_part}; {len(off_p)} pending, max |F - sprio| {max(off_p, default=0):.1e} "
                            f"({sum(x > args.tol for x in off_p)} over)")
            print("; ".join(line))
    return 1 if worst else 0


if __name__ == "__main__":
    raise SystemExit(main())
