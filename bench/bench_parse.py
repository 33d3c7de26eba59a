"""Benchmark reading `sshare -a -l -P` on 100,000 associations (issue #17): the text parser and
the two fair-share algorithms on top of it, as ratios to reading the bytes in the same run.

Data: SYNTHETIC, generated here in the format Slurm 22.05's and 24.11's `sshare -a -l -P` print
(the columns of samples/testbed-fairtree/sshare.txt, recorded from the testbed): 1,000 accounts
under 10 top-level accounts, 99 users each, random shares and usage.

Run:  .venv/bin/python bench/bench_parse.py [--json FILE]
`--json FILE` also times a `sshare --json` document (Slurm 24.11, data_parser v0.0.42) when a
reader for it exists (fscontrol.slurm.parse.parse_sshare_json); without one it says so.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from fscontrol.model import fairshare
from fscontrol.model import fairtree
from fscontrol.slurm import parse

HEADER = "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins"
TRES = "cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0"


def make_sshare(n_top: int = 10, per_top: int = 100, users: int = 99, seed: int = 7) -> str:
    """sshare -a -l -P text for n_top x per_top accounts with `users` users each (NormShares as
    Fair Tree prints them: each level's own)."""
    rng = random.Random(seed)
    lines = [HEADER]
    tops = []
    for t in range(n_top):
        accts = []
        for a in range(per_top):
            us = [(f"u{t}_{a}_{k}", rng.randint(1, 5), rng.choice([0, rng.randint(1, 10**7)])) for k in range(users)]
            accts.append((f"acct{t}_{a}", rng.randint(1, 10), us))
        tops.append((f"top{t}", rng.randint(1, 10), accts))
    total = sum(u for _, _, accts in tops for _, _, us in accts for _, _, u in us)
    lines.append(f"root|||0.000000|{total}||1.000000||||{TRES}")
    top_shares = sum(s for _, s, _ in tops)
    for name, s, accts in tops:
        t_usage = sum(u for _, _, us in accts for _, _, u in us)
        lines.append(f" {name}||{s}|{s / top_shares:.6f}|{t_usage}|{t_usage / total:.6f}|{t_usage / total:.6f}||1.0||{TRES}")
        a_shares = sum(x for _, x, _ in accts)
        for aname, asz, us in accts:
            a_usage = sum(u for _, _, u in us)
            lines.append(f"  {aname}||{asz}|{asz / a_shares:.6f}|{a_usage}|{a_usage / total:.6f}|"
                         f"{(a_usage / t_usage if t_usage else 0):.6f}||1.0||{TRES}")
            u_shares = sum(x for _, x, _ in us)
            for user, usz, u in us:
                lines.append(f"   {aname}|{user}|{usz}|{usz / u_shares:.6f}|{u}|{u / total:.6f}|"
                             f"{(u / a_usage if a_usage else 0):.6f}|0.5|1.0||{TRES}")
    return "\n".join(lines) + "\n"


def timed(fn, *a, repeat: int = 3, **kw):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="a `sshare --json` document to time beside the text")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "sshare.txt"
        path.write_text(make_sshare())
        size = path.stat().st_size
        t_read, text = timed(path.read_text)
        t_parse, rows = timed(parse.parse_sshare, text)
        t_check, _ = timed(parse.check_share_tree, rows, fair_tree=True)
        t_ft, ft = timed(fairtree.compute_fair_tree, rows, repeat=1)
        t_cl, _ = timed(fairshare.compute_fairshare, rows, 1.0, repeat=1)
        from fscontrol.model.ftoutlook import project_ranks

        user = next(r.key for r in rows if r.user)
        running = {r.key: [(None, 64.0)] for r in rows[:5000] if r.user}
        t_pr, _ = timed(project_ranks, rows, running, [user], passes=10, period_s=300, half_life_s=7 * 86400,
                        first_pass_in_s=60, repeat=1)
    print(f"sshare -a -l -P text, {len(rows):,} associations ({ft.n_users:,} users), {size / 2**20:.1f} MiB (SYNTHETIC)")
    print(f"  read the bytes            {t_read * 1000:8.1f} ms   1.0x (baseline)")
    print(f"  parse_sshare              {t_parse * 1000:8.1f} ms   {t_parse / t_read:5.1f}x")
    print(f"  check_share_tree          {t_check * 1000:8.1f} ms   {t_check / t_read:5.1f}x")
    print(f"  Fair Tree (ranks, F)      {t_ft * 1000:8.1f} ms   {t_ft / t_read:5.1f}x")
    print(f"  classic (compute_fairshare) {t_cl * 1000:6.1f} ms   {t_cl / t_read:5.1f}x")
    print(f"  Fair Tree forecast: 10 passes re-ranked {t_pr * 1000:8.1f} ms ({t_pr / 10 * 1000:.0f} ms a pass)")
    if args.json is not None:
        reader = getattr(parse, "parse_sshare_json", None)
        if reader is None:
            print("  sshare --json: no reader in fscontrol.slurm.parse (the text path is what fscontrol reads)")
        else:
            t_jr, doc = timed(args.json.read_text)
            t_j, jrows = timed(reader, doc)
            print(f"  sshare --json: read {t_jr * 1000:.1f} ms, parse {t_j * 1000:.1f} ms ({t_j / t_jr:.1f}x its bytes, "
                  f"{t_j / t_parse:.2f}x the text parse), {len(jrows):,} associations")


if __name__ == "__main__":
    main()
