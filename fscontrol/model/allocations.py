"""Per-account allocations for the SFS gate (Steffen 2019, section 4.1).

An allocation is an award A (core-hours for unit "cpus", node-hours for unit "nodes") over a
period P. Its ideal occupancy is ``A / P_hours`` (the size of one job that, running the whole
period, would use exactly the award) and its target occupancy is ``factor * ideal`` (factor 2
by default, overridable per account). Both are in the allocation's unit (cpus or nodes).

Configuration comes from a parsed TOML/JSON table, for example::

    [allocations.defaults]          # optional, applies to every account below
    factor = 2
    unit = "cpus"

    [allocations.chem]
    award = 50000                   # core-hours
    period = "30d"                  # or seconds (number), or "1w2d", "12h", "90m", "3600s"

    [allocations.astro]
    award = 4000
    period = 2592000
    unit = "nodes"                  # node-hours; occupancy is counted in nodes
    factor = 1.5

Pure: no I/O. Errors are :class:`~fscontrol.errors.ConfigError` naming the account and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from fscontrol.errors import ConfigError

Unit = Literal["cpus", "nodes"]
UNITS: tuple[str, ...] = ("cpus", "nodes")
DEFAULT_FACTOR = 2.0
DEFAULTS_KEY = "defaults"
KNOWN_KEYS = frozenset({"award", "period", "unit", "factor"})

_PERIOD_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_PERIOD_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdwy])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Allocation:
    """One account's award and the occupancies that follow from it (in ``unit``)."""

    account: str
    award: float  # core-hours (unit "cpus") or node-hours (unit "nodes")
    period_s: float
    unit: Unit = "cpus"
    factor: float = DEFAULT_FACTOR

    @property
    def period_hours(self) -> float:
        return self.period_s / 3600.0

    @property
    def ideal(self) -> float:
        """Ideal occupancy: award / period in hours (cpus or nodes)."""
        return self.award / self.period_hours

    @property
    def target(self) -> float:
        """Target occupancy: factor x ideal (cpus or nodes)."""
        return self.factor * self.ideal

    def to_dict(self) -> dict[str, Any]:
        return {
            "account": self.account,
            "award": self.award,
            "period_s": self.period_s,
            "unit": self.unit,
            "factor": self.factor,
            "ideal": self.ideal,
            "target": self.target,
        }


def parse_period(value: Any, *, account: str = "?", key: str = "period", where: str | None = None) -> float:
    """Seconds from a number (seconds) or a string like "30d", "2w", "12h", "1d12h", "3600s", "3600".

    ``y`` is 365 days. Raises ConfigError (naming account and key) unless the result is > 0.
    """
    where = where or f"allocation {account!r}: {key}"
    if isinstance(value, bool):
        raise ConfigError(f"{where} must be seconds or a duration like '30d', not {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(" ", "")
        if not text:
            raise ConfigError(f"{where} is empty")
        try:
            seconds = float(text)
        except ValueError:
            pos = 0
            seconds = 0.0
            for m in _PERIOD_RE.finditer(text):
                if m.start() != pos:
                    break
                seconds += float(m.group(1)) * _PERIOD_UNITS[m.group(2).lower()]
                pos = m.end()
            if pos != len(text) or pos == 0:
                raise ConfigError(
                    f"{where} {value!r} is not a duration (use seconds or e.g. '30d', '2w', '12h', '1d12h')"
                ) from None
    else:
        raise ConfigError(f"{where} must be seconds or a duration like '30d', not {type(value).__name__}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{where} must be > 0 (got {value!r})")
    return seconds


def _number(value: Any, *, account: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"allocation {account!r}: {key} must be a number, not {value!r}")
    x = float(value)
    if not math.isfinite(x) or x <= 0:
        raise ConfigError(f"allocation {account!r}: {key} must be > 0 (got {value!r})")
    return x


def make_allocation(account: str, spec: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> Allocation:
    """One Allocation from a parsed table; ``defaults`` fills keys the account does not set."""
    if not isinstance(account, str) or not account.strip():
        raise ConfigError(f"allocation account name must be a non-empty string, not {account!r}")
    if not isinstance(spec, Mapping):
        raise ConfigError(f"allocation {account!r} must be a table of keys (award, period, unit, factor)")
    merged: dict[str, Any] = dict(defaults or {})
    merged.update(spec)
    unknown = sorted(set(merged) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"allocation {account!r}: unknown key(s) {', '.join(unknown)} (known: award, period, unit, factor)"
        )
    for key in ("award", "period"):
        if key not in merged:
            raise ConfigError(f"allocation {account!r}: missing key {key!r}")
    award = _number(merged["award"], account=account, key="award")
    period_s = parse_period(merged["period"], account=account)
    unit = merged.get("unit", "cpus")
    if unit not in UNITS:
        raise ConfigError(f"allocation {account!r}: unit must be 'cpus' or 'nodes', not {unit!r}")
    factor = _number(merged.get("factor", DEFAULT_FACTOR), account=account, key="factor")
    return Allocation(account=account, award=award, period_s=period_s, unit=unit, factor=factor)


def parse_allocations(table: Mapping[str, Any] | None) -> dict[str, Allocation]:
    """All allocations from a parsed ``[allocations]`` table: ``{account: {award, period, ...}}``.

    A ``defaults`` sub-table (optional) supplies keys for every account. Accounts come back in
    sorted order. All accounts must use the same unit (the gate counts occupancy one way).
    """
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise ConfigError("allocations must be a table of accounts")
    defaults = table.get(DEFAULTS_KEY) or {}
    if not isinstance(defaults, Mapping):
        raise ConfigError("allocations.defaults must be a table")
    bad = sorted(set(defaults) - KNOWN_KEYS)
    if bad:
        raise ConfigError(f"allocations.defaults: unknown key(s) {', '.join(bad)}")
    out: dict[str, Allocation] = {}
    for account in sorted(k for k in table if k != DEFAULTS_KEY):
        out[account] = make_allocation(account, table[account], defaults)
    units = {a.unit for a in out.values()}
    if len(units) > 1:
        by_unit = {u: sorted(a.account for a in out.values() if a.unit == u) for u in sorted(units)}
        raise ConfigError(f"allocations mix units ({by_unit}): use one unit for all accounts")
    return out


def allocations_unit(allocations: Mapping[str, Allocation]) -> Unit:
    """The one unit the allocations use ("cpus" when there are none)."""
    units = {a.unit for a in allocations.values()}
    if len(units) > 1:
        raise ConfigError(f"allocations mix units {sorted(units)}: use one unit for all accounts")
    return units.pop() if units else "cpus"
