"""Against the real testbed running Fair Tree: the forecast of an idle user while others keep
running matches sprio 5 and 10 minutes later within 1%, and says when the rank changes, within
one decay pass.

The scenario: alice@flat runs 64 CPUs for a minute and stops; then bob@physics and carol@chem run
(16 CPUs between them) for the rest of the test. Science's usage grows while flat's decays: once
science has used more than twice flat's (its shares are twice flat's), flat's LevelFS passes
science's and dave, idle in flat, jumps above science's users. Nothing else moves his rank:
under Fair Tree decay alone changes no ranking. The agent publishes the snapshot with the next
decay pass (root reads slurmctld's state file); dave's forecast is read from it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fscontrol.agent import config
from fscontrol.agent import publishing
from fscontrol.store import history as store
from fscontrol.model.decay import next_pass
from fscontrol.slurm.source import last_decay_pass

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[1]
WHO = ("flat", "dave")


def _sprio_f(slurm) -> float:
    """sprio's fair-share factor of dave's pending probe job (sprio -h: no header)."""
    return float(slurm.run("sprio", "-h", "-j", slurm.dave_probe, "-o", "%f").strip())


def test_fair_tree_forecast_of_an_idle_user_matches_sprio(slurm, tmp_path):
    slurm.cancel_all()
    slurm.reset_usage()
    try:
        slurm.set_priority_flags("")
        slurm.dave_probe = slurm.probe("dave", "flat")
        slurm.submit("alice", "flat", 64, 60)
        time.sleep(65)  # alice's minute: charged by the passes and at its end
        slurm.submit("bob", "physics", 10, 1500)
        slurm.submit("carol", "chem", 6, 1500)
        slurm.wait_for_pass()
        slurm.wait_for_pass()  # both running jobs charged
        db = store.open_db(tmp_path / "h.db")
        snap = slurm.stable_snapshot(db)
        pub = tmp_path / "pub.json"
        publishing.publish_latest(db, config.load(None), snap.cluster, out=pub, source=slurm.source())
        published = json.loads(pub.read_text())
        assert published["next_pass_at"] and published["running"]["users_published"]
        t0 = time.time()
        p = subprocess.run([sys.executable, "-m", "fscontrol", "forecast", "--published", str(pub), "--source", "published",
                            "-u", "dave", "-A", "flat", "--horizon", "15m", "--json", "--now", str(t0)],
                           capture_output=True, text=True, timeout=120, cwd=ROOT, env=slurm.env)
        assert p.returncode == 0, p.stderr
        (fc,) = json.loads(p.stdout)["associations"]
        f0 = _sprio_f(slurm)
        assert fc["fairshare"] == pytest.approx(f0, abs=1e-6)
        predicted = {round(x["in_s"]): x for x in fc["projection"]}
        change = fc["rank_changes"][0] if fc["rank_changes"] else None

        state = str(slurm.dir / "spool" / "ctld")
        observed = []  # (seconds after t0, sprio's F), once between every two passes
        while time.time() < t0 + 10 * 60 + 40:
            last = last_decay_pass(state)
            mid = next_pass(last, 60.0, time.time()) - 30.0  # half-way between two passes
            if mid < time.time():
                mid += 60.0
            time.sleep(max(0.0, mid - time.time()))
            observed.append((time.time() - t0, _sprio_f(slurm)))

        def forecast_at(s: float) -> float:
            due = [x for k, x in sorted(predicted.items()) if k <= s]
            return due[-1]["fairshare"] if due else fc["fairshare"]

        errors = {}
        for minutes in (5, 10):
            s, f_obs = min(observed, key=lambda o: abs(o[0] - minutes * 60))
            errors[minutes] = abs(forecast_at(s) - f_obs)
            assert errors[minutes] <= 0.01 * f_obs, (minutes, s, forecast_at(s), f_obs, observed, fc["projection"])
        first_seen = next((s for s, f in observed if abs(f - f0) > 1e-6), None)
        assert first_seen is not None and change is not None, (observed, fc["rank_changes"])
        # the change shows at the first reading after the pass that made it: within one pass
        assert abs(change["in_s"] - first_seen) <= 60 + 30 + 5, (change, first_seen, observed)
    finally:
        slurm.cancel_all()
        slurm.set_priority_flags("NO_FAIR_TREE", restart=True)
    print(f"Fair Tree forecast for dave@flat: F {f0:.4f} -> {change['fairshare']:.4f} predicted "
          f"{change['in_s'] / 60:.1f} min after the forecast, seen at {first_seen / 60:.1f} min; "
          f"|forecast - sprio| at +5 min {errors[5]:.1e}, at +10 min {errors[10]:.1e}")
