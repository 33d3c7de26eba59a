"""How far `status`'s F is from the exact one on a large tree (issue #33), with no Slurm needed.

scripts/gen_synthetic.py writes a SYNTHETIC `sshare -a -l -P` of --users users (~100,000
associations at 93,238) whose FairShare column it computed with Slurm's classic formulas from
exact values (its own damping factor, the one in the sample's `scontrol show config`): that
column, to its 6 decimals, is the independent reference. This collects the sample into a history
and compares, for every user association with shares, `status`'s F and F as main (8b2524e)
computed it (from sshare's printed EffectvUsage) with that column. `status` reads sshare's
FairShare too (model/effusage.py): so that the reference stays independent, the users' FairShare
is blanked before `status` runs on the snapshot (the accounts' stays, as sshare prints it).

Run:  .venv/bin/python scripts/check_exact_f.py [--users 93238]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=93238)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from fscontrol.model import fairshare
    from fscontrol.report import status as rstatus
    from fscontrol.store import history as store

    py = sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="check-exact-f-"))
    try:
        sample = tmp / "scale"
        subprocess.run([py, str(ROOT / "scripts" / "gen_synthetic.py"), "--users", str(args.users), "--jobs", "2000",
                        "--seed", "1", "--out", str(sample)], check=True, stdout=subprocess.DEVNULL)
        db = tmp / "h.db"
        subprocess.run([py, "-m", "fscontrol", "collect", "--source", str(sample), "--db", str(db)], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        snap = store.load_snapshot(store.open_db(db, create=False, readonly=True))
        d = snap.config.damping_factor
        blind = dataclasses.replace(snap, shares=tuple(dataclasses.replace(r, fairshare=None) if r.user else r
                                                       for r in snap.shares))
        data = rstatus.status_data(blind)
        rows = {r.key: r for r in snap.shares}
        worst_new = worst_old = 0.0
        n = changed = 0
        for t in data["table"]:
            key = (t["account"], t["user"])
            r = rows[key]
            if r.fairshare is None or not t["norm_shares"]:
                continue
            n += 1
            old = fairshare.fairshare_factor(r.effective_usage, t["norm_shares"], d)
            worst_new = max(worst_new, abs(t["fairshare"] - r.fairshare))
            worst_old = max(worst_old, abs(old - r.fairshare))
            changed += abs(t["fairshare"] - old) > 5e-7
        print(f"{len(snap.shares):,} associations, {n:,} user associations with shares, d = {d}: "
              f"max |F - exact F (6 decimals)| status {worst_new:.1e}, main's (printed EffectvUsage) {worst_old:.1e}; "
              f"{changed:,} users' F moved by more than 5e-7")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
