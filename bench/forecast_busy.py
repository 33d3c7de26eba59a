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
    ap.add_argument("--settle", type=float, default=900.0, help="seconds of the load before the forecast (three half-lives)")
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


def _published_for_replay(keep: Path) -> Path:
    """The kept published file; runs made before tests/forecast_busy.py set agent.apply published
    control.applying = false although the experiment's controller acted (control_tick apply=True):
    the replay says what the agent did (a copy with applying = true, beside the kept one)."""
    src = keep / "public" / "tbcluster.json"
    data = json.loads(src.read_text())
    if (data.get("control") or {}).get("applying") is not False:
        return src
    data["control"] = dict(data["control"], applying=True)
    out = keep / "replay-published.json"
    out.write_text(json.dumps(data))
    return out


def _forecast_replay(keep: Path, got: dict, who: str, *args: str) -> dict:
    import subprocess

    user, account = who.split("@")
    argv = [sys.executable, "-m", "fscontrol", "forecast", "--published", str(_published_for_replay(keep)),
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
            fl = oracle_and_floor(keep, who)
            if fl:
                for m in (5, 10):
                    seen = g["sprio"][str(m)] if str(m) in g["sprio"] else g["sprio"][m]
                    print(f"    +{m} min, the halving held at u* and the real jobs (the oracle): {fl['oracle'][m]:.4f} "
                          f"({seen / fl['oracle'][m] - 1:+.2%} from sprio); over random streams like the run's: mean "
                          f"{fl[m]['mean']:.4f}, sd {fl[m]['sd']:.1%}, {fl[m]['within_1pct_of_mean']:.0%} within 1% of the mean")
            sprio = {int(k): v for k, v in g["sprio"].items()}
            for what in ("reach", "never"):
                if what in g:
                    t = g[what]["target"]
                    b = _forecast_replay(keep, got, who, "--target", f"{t}")
                    hit = next((j for j in sorted(sprio) if sprio[j] >= t), None)
                    dd = b["idle_days_to_target"]
                    print(f"    F >= {t}: forecast {b['idle_to_target_text']!r} ({'-' if dd is None else f'{dd * 86400:.0f} s'}; "
                          f"was {g[what]['text']!r}), sprio "
                          + ("never in the watch" if hit is None else f"after {hit * 60} s"))


def _jobs_of_run(keep: Path) -> list[tuple]:
    """(user, account, cpus, start, end) of every job that ran, from the run's kept sacct."""
    out = []
    for line in (keep / "sacct.txt").read_text().splitlines():
        f = line.split("|")
        if len(f) < 7 or not f[4].isdigit():
            continue  # never started (the parked probes)
        out.append((f[1], f[2], int(f[3]), float(f[4]), float(f[5]) if f[5].isdigit() else float("inf")))
    return out


def oracle_and_floor(keep: Path, who: str, horizons=(5, 10), draws: int = 400) -> dict | None:
    """What sprio's F at +m passes would be with the halving held at u* (S_ref d U = u* at every
    pass) and the usage the run's real jobs charged (the oracle: a forecast that knew every job
    to come), and its spread over random streams of new jobs like the experiment's own, from the
    same state (the usage and the jobs running at the snapshot, with their real ends): the noise
    floor no forecast of random arrivals can beat. None without the run's sacct."""
    import random
    import statistics

    from forecast_busy import MATES
    from fscontrol.forecast.classic import path_weights
    from fscontrol.model.decay import decay_factor_per_second
    from fscontrol.slurm import parse

    if not (keep / "sacct.txt").exists():
        return None
    pub = json.loads((keep / "public" / "tbcluster.json").read_text())
    rows = parse.parse_sshare((keep / "sample" / "sshare.txt").read_text(), "sshare")
    user, account = who.split("@")
    weights = path_weights(rows, (account, user))
    me = next(r for r in rows if r.key == (account, user))
    h = float(pub["target_core_hours"]) * 3600.0 / float(pub["reference_share"])  # d U, held
    parent = {r.account: r.parent for r in rows if not r.user}

    def inside(key, ju, ja) -> bool:
        if key[1]:
            return key == (ja, ju)
        a = ja
        while a:
            if a == key[0]:
                return True
            a = parent.get(a)
        return False

    cfg = pub["config"]
    period, f = float(cfg["calc_period_s"]), decay_factor_per_second(float(cfg["half_life_s"]))
    fp = f**period
    t0 = float(pub["taken_at"])
    u0 = {k: float(next(r.raw_usage for r in rows if r.key == k)) for k in weights}

    def f_at(jobs) -> dict:
        u, hist = dict(u0), {0: dict(u0)}
        for k in range(1, max(horizons) + 1):
            t = t0 + k * period
            for key in u:
                u[key] *= fp
                for ju, ja, c, st, en in jobs:
                    lo, hi = max(t - period, st), min(t, en)
                    if hi > lo and inside(key, ju, ja):
                        u[key] += c * (hi - lo) * f ** (t - lo)
            hist[k] = dict(u)
        # sprio after pass m shows the EffectvUsage of the usage pass m - 1 left
        return {m: 2 ** (-sum(w * hist[m - 1][k] for k, w in weights.items()) / (me.norm_shares * h)) for m in horizons}

    real = _jobs_of_run(keep)
    running = [j for j in real if j[3] < t0 < j[4]]
    spread = {m: [] for m in horizons}
    for seed in range(draws):
        rng, jobs, t = random.Random(seed), list(running), t0
        while True:
            t += rng.expovariate(1 / 6.0)
            if t > t0 + (max(horizons) + 1) * period:
                break
            ju, ja = rng.choice(MATES)
            jobs.append((ju, ja, rng.randint(1, 4), t, t + rng.randint(60, 180)))
        for m, x in f_at(jobs).items():
            spread[m].append(x)
    out = {"oracle": f_at(real)}
    for m, xs in spread.items():
        mean = statistics.fmean(xs)
        out[m] = {"mean": mean, "sd": statistics.pstdev(xs) / mean,
                  "within_1pct_of_mean": sum(abs(x / mean - 1) <= 0.01 for x in xs) / len(xs)}
    return out


if __name__ == "__main__":
    main()
