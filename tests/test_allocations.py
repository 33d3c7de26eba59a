from __future__ import annotations

import pytest

from fscontrol.model.allocations import (
    Allocation,
    allocations_unit,
    make_allocation,
    parse_allocations,
    parse_period,
)
from fscontrol.errors import ConfigError


def test_ideal_and_target_from_award_and_period():
    a = make_allocation("chem", {"award": 50000, "period": "30d", "unit": "cpus", "factor": 2})
    assert a.period_s == 30 * 86400
    assert a.ideal == pytest.approx(50000 / 720)
    assert a.target == pytest.approx(2 * 50000 / 720)
    assert a.unit == "cpus"


def test_paper_equation_1_and_2():
    # Steffen eq. 1: 1e6 CPU-hours over one year ~ 114 (the paper says nodes; units as given).
    a = make_allocation("alice", {"award": 1e6, "period": "1y"})
    assert a.ideal == pytest.approx(114.16, abs=0.01)
    assert a.target == pytest.approx(228.3, abs=0.1)  # eq. 2, factor 2 by default


@pytest.mark.parametrize(
    "value, seconds",
    [(3600, 3600), (2.5, 2.5), ("3600", 3600), ("30d", 30 * 86400), ("2w", 14 * 86400), ("12h", 43200),
     ("90m", 5400), ("1d12h", 129600), ("1y", 365 * 86400), ("1D 2H", 93600)],
)
def test_parse_period(value, seconds):
    assert parse_period(value) == seconds


@pytest.mark.parametrize("value", ["", "abc", "30x", "d30", "-5", 0, -1, True, None, [1], "12h garbage"])
def test_parse_period_rejects(value):
    with pytest.raises(ConfigError, match="period"):
        parse_period(value, account="chem")


def test_defaults_apply_and_accounts_override():
    allocs = parse_allocations(
        {
            "defaults": {"factor": 3, "unit": "nodes", "period": "30d"},
            "b": {"award": 720},
            "a": {"award": 1440, "factor": 1.5},
        }
    )
    assert list(allocs) == ["a", "b"]
    assert allocs["a"].factor == 1.5 and allocs["a"].target == pytest.approx(3.0)
    assert allocs["b"].factor == 3 and allocs["b"].target == pytest.approx(3.0)
    assert allocations_unit(allocs) == "nodes"
    assert allocations_unit({}) == "cpus"
    assert parse_allocations(None) == {}


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"period": "30d"}, ["'chem'", "award"]),
        ({"award": 10}, ["'chem'", "period"]),
        ({"award": -10, "period": "30d"}, ["'chem'", "award", "> 0"]),
        ({"award": "lots", "period": "30d"}, ["'chem'", "award", "number"]),
        ({"award": True, "period": "30d"}, ["'chem'", "award"]),
        ({"award": 10, "period": "30d", "unit": "gpus"}, ["'chem'", "unit"]),
        ({"award": 10, "period": "30d", "factor": 0}, ["'chem'", "factor"]),
        ({"award": 10, "period": "30d", "fator": 2}, ["'chem'", "fator"]),
        ({"award": 10, "period": "soon"}, ["'chem'", "period"]),
        ("50000", ["'chem'"]),
    ],
)
def test_errors_name_account_and_key(spec, words):
    with pytest.raises(ConfigError) as e:
        parse_allocations({"chem": spec})
    for w in words:
        assert w in str(e.value)


def test_mixed_units_rejected():
    with pytest.raises(ConfigError, match="units"):
        parse_allocations({"a": {"award": 1, "period": 3600}, "b": {"award": 1, "period": 3600, "unit": "nodes"}})


def test_bad_tables():
    with pytest.raises(ConfigError):
        parse_allocations(["a"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="defaults"):
        parse_allocations({"defaults": {"awrd": 1}})
    with pytest.raises(ConfigError, match="defaults"):
        parse_allocations({"defaults": 3})


def test_to_dict():
    d = Allocation("x", 720, 86400 * 30, "nodes", 2).to_dict()
    assert d["ideal"] == pytest.approx(1.0) and d["target"] == pytest.approx(2.0) and d["account"] == "x"
