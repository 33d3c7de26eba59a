"""The forecast on a shared, busy account (issue #28 item 3), on the real testbed: account-mates
that keep submitting NEW jobs at random (tests/forecast_busy.py runs it; bench/forecast_busy.py
runs other seeds, figures in docs/forecast-running.md).

Asserted, for dave@flat (recovering from his own run while three account-mates submit) and
carol@chem (idle; her EffectvUsage is the science tree's, where two users submit):
- F at +5 and +10 minutes within 1% of sprio, and never further off than "F stays where it is"
  (beyond 0.5% of F: a tie within the measurement's own noise);
- the predicted time to a given F within 10% (or one decay pass) of when sprio shows it;
- a target above where F settles: the forecast says "not at the current load" (no time), and
  sprio does not get there.
"""

from __future__ import annotations

import os

import pytest
from forecast_busy import run

# opt-in (FSCONTROL_BUSY_FORECAST=1): a run takes ~27 minutes, and one run does not meet the 1% target: at
# this load the random arrivals alone spread sprio's F by 2-6% (sd) from any state a forecast can know
# (docs/forecast-running.md, 'On the testbed'); deselected otherwise (tests/conftest.py)
pytestmark = [pytest.mark.slurm, pytest.mark.optin("FSCONTROL_BUSY_FORECAST")]

SEED = int(os.environ.get("FSCONTROL_BUSY_SEED", "11"))


def test_forecast_holds_on_a_shared_busy_account(slurm, tmp_path):
    got = run(slurm, tmp_path, seed=SEED, settle_s=900.0, watch=10)  # three half-lives of the same load first
    print(f"\nseed {SEED}: {got['jobs_submitted']} jobs submitted; inflow read from {got['inflow_published']}; "
          f"failed ticks: {got['failed_ticks']}")
    assert len(got["failed_ticks"]) <= 2  # a lost tick here and there; the controller held meanwhile
    for who in ("dave@flat", "carol@chem"):
        g = got[who]
        print(f"{who}: F now {g['f_now']:.4f} (sprio {g['sprio_now']:.4f}), settles near {g['settles_at']:.4f}")
        print(f"  assumed: {g['assumed']}")
        for m, want in g["forecast"].items():
            print(f"  +{m} min: forecast {want:.4f}, sprio {g['sprio'][m]:.4f} ({g['error'][m]:+.3%}; "
                  f"F stays where it is: {g['persistence_error'][m]:+.3%})")
        for what in ("reach", "never"):
            if what in g:
                print(f"  {what}: F >= {g[what]['target']}: forecast {g[what]['text']!r} "
                      f"({g[what]['predicted_s']}), sprio {g[what]['observed_s']} s")
    for who in ("dave@flat", "carol@chem"):
        g = got[who]
        assert abs(g["sprio_now"] / g["f_now"] - 1) <= 0.01  # the forecast starts where sprio is
        for m in g["forecast"]:
            assert abs(g["error"][m]) <= 0.01, (who, m, g["error"][m])
            assert abs(g["error"][m]) <= abs(g["persistence_error"][m]) + 0.005, (who, m)
        nv = g["never"]
        assert nv["predicted_s"] is None and nv["text"].startswith("not at the current load"), nv
        assert nv["observed_s"] is None, nv  # and indeed it did not come
        assert "not at the current load" in g["never_text_out"]
    dave = got["dave@flat"]
    assert dave["sprio"][10] > dave["sprio_now"]  # he recovers, as forecast
    r = dave["reach"]
    assert r["predicted_s"] is not None and r["observed_s"] is not None, r
    assert abs(r["predicted_s"] - r["observed_s"]) <= max(0.1 * r["observed_s"], 60.0), r
