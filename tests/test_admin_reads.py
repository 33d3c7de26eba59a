"""What the admin reads (issue #30 item 5): when a user's F cannot halve at the current d, status
says why and which d and u* would change it; status and the forecast give the same "usage until F
halves" (one function: fairshare.usage_to_halve, H while the agent holds the total, the exact
figure at a d that stays put), each checked against F itself."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fscontrol.export import publish as pub
from fscontrol.forecast import service as uf
from fscontrol.model import fairshare
from fscontrol.report import status as rstatus
from test_forecast_cli import T0, _snapshot

HOUR = 3600.0


def _f(ue: float, s: float, d: float) -> float:
    return 2 ** (-(ue / s) / d)


def _status_row(data: dict, user: str) -> dict:
    return next(r for r in data["table"] if r["user"] == user)


def _published(snap, applying: bool):
    return pub.build_published(snap, target_core_hours=10_000, method="damping",
                               control={"applying": applying, "off": False})


def test_status_and_forecast_use_one_halving_formula():
    """u1 (S = 0.1, EffectvUsage 1/9, d = 2: above the floor of 1). 8b2524e: the forecast
    said H = S d U whatever the agent did, status d S U / (1 - UE - d S) whatever it did (issue
    #30: "halves after +" blank, the forecast 15.0, for one user). Now both say the same, by one
    function: H while the agent holds the total (control applied), the exact figure at a d that
    stays put (a dry run, control off, no control); each checked against F itself."""
    snap = _snapshot()
    snap = replace(snap, config=replace(snap.config, damping_factor=2))
    ue, s, d, total = 1 / 9, 0.1, 2, 100_000.0
    for held in (True, False):
        st = _status_row(rstatus.status_data(snap, target_core_hours=10_000, total_held=held), "u1")["usage_to_halve_core_hours"]
        fc = uf.forecast_data(_published(snap, held), snap.shares, user="u1", now=T0, target=0.9)["associations"][0]
        assert fc["core_hours_to_halve"] == pytest.approx(st, rel=1e-12), held
        if held:  # d follows the total (d U fixed): F = 2^(-(UE U)/(S d U)), and UE U grows by x
            assert _f((ue * total + st) / total, s, d) == pytest.approx(_f(ue, s, d) / 2, rel=1e-9)
            assert st == pytest.approx(s * d * total)
        else:  # d as it is: x of u1's own raise its EffectvUsage to (UE U + x) / (U + x)
            assert _f((ue * total + st) / (total + st), s, d) == pytest.approx(_f(ue, s, d) / 2, rel=1e-9)
            assert st > s * d * total


def test_status_knows_whether_the_agent_holds_the_total():
    assert rstatus.holds_total({"apply": 1, "advise_only": 0, "method": "hybrid"}, 40)
    assert not rstatus.holds_total({"apply": 0, "advise_only": 0, "method": "hybrid"}, 40)  # a dry run
    assert not rstatus.holds_total({"apply": 1, "advise_only": 1, "method": "hybrid"}, 40)  # control off, Fair Tree
    assert not rstatus.holds_total({"apply": 1, "advise_only": 0, "method": "damping"}, 1)  # d at its floor
    assert not rstatus.holds_total(None, 40)


def test_status_says_why_f_cannot_halve_and_what_would_change_it():
    """d = 9: d S = 0.9 >= 1 - EffectvUsage = 8/9 for the nine users with usage: "halves after +"
    is blank, and status says why and gives the d (and u*) at which it halves again (8b2524e: blank,
    no reason)."""
    snap = _snapshot()
    snap = replace(snap, config=replace(snap.config, damping_factor=9))
    data = rstatus.status_data(snap, target_core_hours=10_000)
    assert _status_row(data, "u1")["usage_to_halve_core_hours"] is None
    assert _status_row(data, "yalim")["usage_to_halve_core_hours"] is not None  # UE 0: 0.9 < 1
    blocked = {r["user"]: r for r in data["cannot_halve"]}
    assert sorted(blocked) == [f"u{i}" for i in range(1, 10)]
    r = blocked["u1"]
    assert r["d_below"] == pytest.approx((1 - 1 / 9) / 0.1)
    # the d it names is the edge: just below it u1's usage halves F, at it never
    assert fairshare.usage_to_halve(1 / 9, 0.1, r["d_below"] * 0.999, 100_000 * HOUR) is not None
    assert fairshare.usage_to_halve(1 / 9, 0.1, r["d_below"], 100_000 * HOUR) is None
    # and the u* that gives that d: H = S_ref d U (S_ref = 0.1, the median share)
    assert r["target_below_core_hours"] == pytest.approx(0.1 * r["d_below"] * 100_000)
    text = "\n".join(rstatus.status_lines(data))
    assert "F cannot halve at d=9 for 9 user(s): d S >= 1 - EffectvUsage" in text
    assert "u1@u1: d S = 0.9000 >= 1 - EffectvUsage = 0.8889; halves again at d < 8.89, i.e. u* < 88,888.89 core-hours" in text


def test_the_forecast_says_why_too():
    snap = _snapshot()
    snap = replace(snap, config=replace(snap.config, damping_factor=9))
    fc = uf.forecast_data(_published(snap, False), snap.shares, user="u1", now=T0, target=0.9)  # a dry run
    a = fc["associations"][0]
    assert a["core_hours_to_halve"] is None
    assert a["cannot_halve"] == ("F cannot halve at d = 9 from your usage alone: d S = 0.9000 >= 1 - EffectvUsage = 0.8889 "
                                 "(it halves again at d < 8.89; the agent does not hold the total)")
    # with the agent holding the total, it halves after H = S d U (d falls as the total grows)
    held = uf.forecast_data(_published(snap, True), snap.shares, user="u1", now=T0, target=0.9)["associations"][0]
    assert held["core_hours_to_halve"] == pytest.approx(0.1 * 9 * 100_000) and "cannot_halve" not in held
    (line,) = [ln for ln in uf.format_forecast(fc).splitlines() if "core-hours until F halves" in ln]
    assert line.endswith(a["cannot_halve"])
