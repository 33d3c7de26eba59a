"""What the admin reads (issue #30 item 5): when a user's F cannot halve at the current d, status
says why and which d and u* would change it; status and the forecast give the same "usage until F
halves" (one formula: fairshare.usage_to_halve), each checked against F itself."""

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


def test_status_and_forecast_use_one_halving_formula():
    """u1 (S = 0.1, EffectvUsage 1/9, d = 1): both say 11,111 core-hours; 8b2524e's forecast said
    H = 10,000 (Yalim's figure, which leaves out that u1's usage grows the total too)."""
    snap = _snapshot()
    st = _status_row(rstatus.status_data(snap, target_core_hours=10_000), "u1")["usage_to_halve_core_hours"]
    fc = uf.forecast_data(pub.build_published(snap), snap.shares, user="u1", now=T0, target=0.9)["associations"][0]
    assert fc["core_hours_to_halve"] == pytest.approx(st, rel=1e-12)
    # independently, from F: x core-hours of u1's own raise its EffectvUsage to (UE U + x) / (U + x)
    ue, s, total = 1 / 9, 0.1, 100_000.0
    assert _f((ue * total + st) / (total + st), s, 1) == pytest.approx(_f(ue, s, 1) / 2, rel=1e-9)


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
    fc = uf.forecast_data(pub.build_published(snap), snap.shares, user="u1", now=T0, target=0.9)
    a = fc["associations"][0]
    assert a["core_hours_to_halve"] is None
    assert a["cannot_halve"] == ("F cannot halve at d = 9 from your usage alone: d S = 0.9000 >= 1 - EffectvUsage = 0.8889 "
                                 "(it halves again at d < 8.89)")
    (line,) = [ln for ln in uf.format_forecast(fc).splitlines() if "core-hours until F halves" in ln]
    assert line.endswith(a["cannot_halve"])
