"""When slurmctld next sets all usage to 0 (PriorityUsageResetPeriod), as a pure function of `now`.

Slurm's rule (src/plugins/priority/multifactor/priority_multifactor.c, `_next_reset` and
`_decay_thread`, read at SchedMD/slurm 284c3b9; slurm.conf(5) PriorityUsageResetPeriod):

- the next reset is computed from the last one, in slurmctld's local time (localtime_r/mktime),
  at 00:00:00 of:
  - DAILY: the next day;
  - WEEKLY: the next Sunday (7 - tm_wday days on: a reset on a Sunday is followed by the next
    Sunday's);
  - MONTHLY: the 1st of the next month;
  - QUARTERLY: the 1st of the next of January, April, July, October;
  - YEARLY: January 1st of the next year;
- NOW resets once, when slurmctld starts or reconfigures, and never again (no future reset);
  NONE never resets;
- the decay thread resets at its first pass at or after that time (`now >= next_reset`), so the
  usage is 0 from at most one PriorityCalcPeriod after it.

Here the last reset is taken to be the period's boundary at or before `now` (slurmctld ran it), so
the resets to come are the boundaries strictly after `now`. (A slurmctld that was down over a
boundary catches up at its first pass, which this does not model.)
"""

from __future__ import annotations

import datetime as dt

from fscontrol.errors import ConfigError

PERIODS = ("NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY")


def normal_period(period: str | None) -> str:
    """PriorityUsageResetPeriod as Slurm spells it ("monthly" -> "MONTHLY"; None/"" -> "NONE");
    ConfigError on anything else."""
    p = (period or "NONE").strip().upper()
    if p not in PERIODS:
        raise ConfigError(f"PriorityUsageResetPeriod {period!r}: expected one of {', '.join(PERIODS)}")
    return p


def _next_boundary(day: dt.date, period: str) -> dt.date:
    """The day of the first reset after one on (or the boundary at or before) `day`."""
    if period == "DAILY":
        return day + dt.timedelta(days=1)
    if period == "WEEKLY":  # tm_wday: Sunday 0 ... Saturday 6; Python's weekday(): Monday 0 ... Sunday 6
        tm_wday = (day.weekday() + 1) % 7
        return day + dt.timedelta(days=7 - tm_wday)
    if period == "MONTHLY":
        return dt.date(day.year + (day.month == 12), day.month % 12 + 1, 1)
    if period == "QUARTERLY":
        for m in (4, 7, 10):
            if day.month < m:
                return dt.date(day.year, m, 1)
        return dt.date(day.year + 1, 1, 1)
    if period == "YEARLY":
        return dt.date(day.year + 1, 1, 1)
    raise ConfigError(f"no reset boundaries for PriorityUsageResetPeriod={period}")


def resets_between(now: float, until: float, period: str | None, tz: dt.tzinfo | None = None) -> list[float]:
    """The times (Unix seconds) in (now, until] at which slurmctld sets all usage to 0 under this
    PriorityUsageResetPeriod, at midnight in `tz` (slurmctld's local time zone; None: this
    process's local time, as slurmctld's localtime_r). [] for NONE and NOW (NOW has reset already)."""
    p = normal_period(period)
    if p in ("NONE", "NOW") or until <= now:
        return []
    local = dt.datetime.fromtimestamp(now, tz) if tz is not None else dt.datetime.fromtimestamp(now).astimezone()
    zone = local.tzinfo if tz is None else tz
    day = local.date()
    out: list[float] = []
    while True:
        day = _next_boundary(day, p)
        # mktime of 00:00:00 that day in the zone (a zone's own offset that day: DST handled)
        at = dt.datetime(day.year, day.month, day.day, tzinfo=zone) if tz is not None else \
            dt.datetime(day.year, day.month, day.day).astimezone()
        t = at.timestamp()
        if t <= now:
            continue
        if t > until:
            return out
        out.append(t)
