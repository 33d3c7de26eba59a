"""What the doctor's rules cost a tick: every control decision asks them (agent.diagnose.control_stop),
and the first tick once more to log them. Measured against a same-run baseline, the parse of the
same sshare text (which every tick does anyway).

The tree is synthetic: samples/testbed-basic's configuration and QOS, plus N user associations
(100 per account, shares 1) written as `sshare -a -l -P` prints them, then parsed.

Run:  .venv/bin/python bench/bench_doctor.py [--users 2500,100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fscontrol.doctor import checks  # noqa: E402
from fscontrol.slurm import parse, survey  # noqa: E402
from fscontrol.slurm.source import RecordedSlurm  # noqa: E402

TRES = "cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0"


def sshare_text(users: int) -> str:
    accounts = max(1, users // 100)
    lines = ["Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins",
             f"root|||1.000000|0||1.000000|0.500000||{TRES}",
             f" fsadmin||1|{1 / (accounts + 1):.6f}|0|0.000000|0.000000|1.000000||{TRES}",
             f"  fsadmin|fsdummy|1|{1 / (accounts + 1):.6f}|0|0.000000|0.000000|1.000000||{TRES}"]
    for a in range(accounts):
        lines.append(f" a{a}||1|{1 / (accounts + 1):.6f}|0|0.000000|0.000000|1.000000||{TRES}")
        n = min(100, users - a * 100)
        for u in range(n):
            lines.append(f"  a{a}|u{a * 100 + u}|1|{1 / (accounts + 1) / n:.6f}|0|0.000000|0.000000|1.000000||{TRES}")
    return "\n".join(lines) + "\n"


def best(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", default="2500,100000")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    base = survey.read(RecordedSlurm(ROOT / "samples" / "testbed-basic"))
    intent = checks.Intent(method="hybrid", padding_mode="steady")
    print(f"{'users':>8} {'sshare parse (ms)':>18} {'doctor rules (ms)':>18} {'ratio':>7}")
    for n in (int(x) for x in args.users.split(",")):
        text = sshare_text(n)
        rows = parse.parse_sshare(text)
        s = survey.Survey(config=base.config, shares=rows, qos=base.qos)
        assert checks.check(s, intent) == [], checks.check(s, intent)  # the tree is sound: every rule runs through
        t_parse = best(lambda: parse.parse_sshare(text), args.repeat)
        t_rules = best(lambda: checks.check(s, intent), args.repeat)
        print(f"{n:>8} {t_parse * 1000:>18.1f} {t_rules * 1000:>18.1f} {t_rules / t_parse:>7.2f}")


if __name__ == "__main__":
    main()
