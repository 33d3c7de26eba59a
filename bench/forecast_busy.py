#!/usr/bin/env python3
"""The forecast on a shared, busy account, on the real testbed, for several seeds (issue #28
item 3): the experiment tests/test_integration_forecast_busy.py runs once (tests/forecast_busy.py),
here with the seeds and the watch you choose. Each seed is a different stream of new jobs.
Prints, per seed and user, F now, where it settles, the forecast at +5 and +watch minutes against
sprio then and against "F stays where it is", and the time to a given F against when sprio shows
it. Opt-in (it takes ~5 min + the watch per seed), not in CI; figures in docs/forecast-running.md.

    sudo FSCONTROL_TESTBED_DIR=/tmp/tb-x FSCONTROL_TESTBED_PORT_OFFSET=N \\
        .venv/bin/python bench/forecast_busy.py --seeds 11 12 [--watch 10] [--out busy-forecast.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from forecast_busy import run  # noqa: E402
from testbed import ensure_testbed, stop_testbed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[11, 12])
    ap.add_argument("--watch", type=int, default=10, help="decay passes (minutes) watched after the forecast")
    ap.add_argument("--settle", type=float, default=240.0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    tb = ensure_testbed()
    results = []
    try:
        for seed in a.seeds:
            with tempfile.TemporaryDirectory(prefix="fscontrol-busy-") as tmp:
                got = run(tb, Path(tmp), seed=seed, settle_s=a.settle, watch=a.watch)
            results.append(got)
            print(f"seed {seed}: {got['jobs_submitted']} jobs submitted; failed ticks: {got['failed_ticks']}")
            for who in ("dave@flat", "carol@chem"):
                g = got[who]
                print(f"  {who}: F now {g['f_now']:.4f} (sprio {g['sprio_now']:.4f}), settles near {g['settles_at']:.4f}")
                for m, want in g["forecast"].items():
                    print(f"    +{m} min: forecast {want:.4f}, sprio {g['sprio'][m]:.4f} ({g['error'][m]:+.2%}; "
                          f"F stays where it is {g['persistence_error'][m]:+.2%})")
                for what in ("reach", "never"):
                    if what in g:
                        x = g[what]
                        print(f"    F >= {x['target']}: forecast {x['text']!r}, sprio "
                              + ("never in the watch" if x["observed_s"] is None else f"after {x['observed_s']:.0f} s"))
            sys.stdout.flush()
    finally:
        if tb.started_here:
            stop_testbed(tb)
    if a.out:
        a.out.write_text(json.dumps(results, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
