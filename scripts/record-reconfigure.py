#!/usr/bin/env python3
"""Record what `scontrol reconfigure` does to a testbed's slurmctld (tests/data/captures/*/reconfigure.txt):
its BOOT_TIME and pid before and after, and when the decay passes run around it. Run as root,
with the testbed's client environment (`eval "$(scripts/testbed.sh env DIR)"`), from the checkout:

    python3 scripts/record-reconfigure.py DIR > tests/data/captures/tb-24.11/reconfigure.txt

It waits for a decay pass, reconfigures 20 s later, and reports the next two passes' times
relative to the first (slurmctld's own record, StateSaveLocation/priority_last_decay_ran)."""

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fscontrol.slurm.source import last_decay_pass  # noqa: E402

d = Path(sys.argv[1])
state = str(d / "spool" / "ctld")


def cfg(key: str) -> str:
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30, check=True).stdout
    return next(ln.split("=", 1)[1].strip() for ln in out.splitlines() if ln.startswith(key))


def pid() -> str:
    return (d / "run" / "slurmctld.pid").read_text().strip()


def pass_after(t: float, timeout: float = 200) -> float:
    end = time.time() + timeout
    while time.time() < end:
        v = last_decay_pass(state)
        if v is not None and v > t:
            return v
        time.sleep(0.2)
    raise SystemExit("no decay pass seen")


p0 = pass_after(last_decay_pass(state) or 0)
print(f"# scripts/record-reconfigure.py, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
print(f"SLURM_VERSION {cfg('SLURM_VERSION')}, PriorityCalcPeriod {cfg('PriorityCalcPeriod')}")
print(f"decay pass at +0 s; BOOT_TIME {cfg('BOOT_TIME')}; slurmctld pid {pid()}")
time.sleep(max(0.0, p0 + 20 - time.time()))
subprocess.run(["scontrol", "reconfigure"], check=True, timeout=60, capture_output=True)
print(f"scontrol reconfigure at +{time.time() - p0:.0f} s")
time.sleep(3)
print(f"after it: BOOT_TIME {cfg('BOOT_TIME')}; slurmctld pid {pid()}")
p1 = pass_after(p0)
p2 = pass_after(p1)
print(f"next decay passes at +{p1 - p0:.0f} s and +{p2 - p0:.0f} s")
