#!/usr/bin/env python3
"""The forecast on a shared, busy account, on the real testbed, for several seeds (issue #28
item 3): the experiment tests/test_integration_forecast_busy.py runs once (tests/forecast_busy.py),
here with the seeds and the watch you choose. Each seed is a different stream of new jobs.
Prints, per seed and user, F now, where it settles, the forecast at +5 and +watch minutes against
sprio then and against "F stays where it is", and the time to a given F against when sprio shows
it. Opt-in (it takes ~5 min + the watch per seed), not in CI; figures in docs/forecast-running.md.

    sudo FSCONTROL_TESTBED_DIR=/tmp/tb-x FSCONTROL_TESTBED_PORT_OFFSET=N FSCONTROL_BUSY_KEEP=KEEP \\
        .venv/bin/python bench/forecast_busy.py --seeds 11 12 [--watch 10] [--out KEEP/run.json]

With FSCONTROL_BUSY_KEEP the run keeps, per seed, what the forecasts read (KEEP/seedN/public: the
published file; KEEP/seedN/sample: a capture of sshare at that moment) and the agent's history
(KEEP/agent-seedN.db). `--replay KEEP/run.json` then forecasts again from those with THIS tree's
code (no testbed) and compares with the sprio the run saw: a model change is judged on recorded
runs it was not tuned on, without a new 30-minute run.
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
    ap.add_argument("--replay", type=Path, help="a run's --out file (its seedN folders beside it): forecast again, no testbed")
    a = ap.parse_args()
    if a.replay:
        replay(a.replay, a.seeds if "--seeds" in sys.argv else None)
        return
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


def _forecast_replay(keep: Path, got: dict, who: str, *args: str) -> dict:
    import subprocess

    user, account = who.split("@")
    argv = [sys.executable, "-m", "fscontrol", "forecast", "--published", str(keep / "public" / "tbcluster.json"),
            "--source", str(keep / "sample"), "--user", user, "--account", account,
            "--job", str(got["probe_jobs"][who]), "--now", str(got["forecast_time"]), "--stale-ok", "--json", *args]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    if r.returncode != 0:
        raise SystemExit(f"replay failed: {' '.join(argv)}\n{r.stderr}")
    return json.loads(r.stdout)["associations"][0]


def replay(results: Path, seeds: list[int] | None) -> None:
    """Forecast again from each kept seed's inputs with this tree's code; print against sprio."""
    for got in json.loads(results.read_text()):
        if seeds and got["seed"] not in seeds:
            continue
        keep = results.parent / f"seed{got['seed']}"
        print(f"seed {got['seed']} (replayed from {keep})")
        for who in ("dave@flat", "carol@chem"):
            g = got[who]
            a = _forecast_replay(keep, got, who, "--plan", "idle:1m")
            print(f"  {who}: F now {a['fairshare']:.4f} (sprio {g['sprio_now']:.4f}), settles near "
                  f"{a['recovery']['settles_at_fairshare']:.4f}; was {g['settles_at']:.4f}")
            for m in g["forecast"]:
                f = _forecast_replay(keep, got, who, "--plan", f"idle:{m}m")["after_plan"]["fairshare"]
                seen = g["sprio"][str(m)] if str(m) in g["sprio"] else g["sprio"][m]
                print(f"    +{m} min: forecast {f:.4f} (was {g['forecast'][m]:.4f}), sprio {seen:.4f} "
                      f"({seen / f - 1:+.2%}; was {g['error'][m]:+.2%}; F stays where it is {g['persistence_error'][m]:+.2%})")
            sprio = {int(k): v for k, v in g["sprio"].items()}
            for what in ("reach", "never"):
                if what in g:
                    t = g[what]["target"]
                    b = _forecast_replay(keep, got, who, "--target", f"{t}")
                    hit = next((j for j in sorted(sprio) if sprio[j] >= t), None)
                    print(f"    F >= {t}: forecast {b['idle_to_target_text']!r} (was {g[what]['text']!r}), sprio "
                          + ("never in the watch" if hit is None else f"after {hit * 60} s"))


if __name__ == "__main__":
    main()
