"""Advance reservations in the start estimate (forecast/start.py; issue #32 item 4).

One pool of CPUs, as the rest of the estimate. A reservation of R CPUs over [begin, end):
* a job not in it may start at t only if, besides the CPUs free now, the CPUs outside every
  reservation overlapping [t, t + its limit) suffice: total - sum R - X, where X is what the
  jobs running outside those reservations and past their (earliest) begin hold. Those jobs
  cannot be on the reserved CPUs (slurmctld does not create a reservation on CPUs a job holds
  past its begin, unless IGNORE_JOBS, nor start a job on a reservation's CPUs across its begin);
  the others are taken to be on the reserved CPUs where they fit (optimistic where placement
  would decide otherwise);
* a job in it (squeue's %v) starts only within [begin, end), on its R CPUs less what its other
  jobs hold; its time limit may run past the end (not checked);
* in backfill the reservation is one more hold on the plan (forecast/start.py gives it
  R + X CPUs over [begin, end)), and the jobs in reservations are left to the main scheduler.

Flags: MAINT, IGNORE_JOBS (X = 0: running jobs may run into it), OVERLAP, SPEC_NODES, ALL_NODES,
PURGE_COMP, ... change nothing here; DAILY and WEEKLY repeat the occurrence scontrol shows through
the horizon; HOURLY, WEEKDAY and WEEKEND are modelled at that occurrence alone, and the output says
so; FLEX, MAGNETIC and TIME_FLOAT are not
modelled: the reservation is left out, named in the output, and its jobs get that reason.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass

UNMODELLED = ("FLEX", "MAGNETIC", "TIME_FLOAT")
REPEATS = ("HOURLY", "WEEKDAY", "WEEKEND")  # modelled at the occurrence shown alone
PERIODS = {"DAILY": 86400.0, "WEEKLY": 7 * 86400.0}  # repeated through the horizon


@dataclass(frozen=True, slots=True)
class Window:
    name: str
    begin: float
    end: float
    cpus: int
    ignore_jobs: bool = False


def _hm(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def windows(resvs: Sequence, now: float, horizon_s: float = 7 * 86400.0
            ) -> tuple[list[Window], dict[str, str], list[str]]:
    """(the windows modelled, {name: why not modelled}, notes) from slurm/resv.py's records; a
    DAILY or WEEKLY one once per period up to now + `horizon_s` (the jobs in it: its first)."""
    wins: list[Window] = []
    skipped: dict[str, str] = {}
    notes: list[str] = []
    for r in resvs:
        if r.end <= now:
            continue
        bad = sorted(f for f in r.flags if f in UNMODELLED)
        if bad:
            skipped[r.name] = f"its flags {','.join(bad)} are not modelled"
            continue
        if r.cpus <= 0:
            continue  # licences or burst buffers only: holds no CPUs
        wins.append(Window(r.name, r.start, r.end, r.cpus, "IGNORE_JOBS" in r.flags))
        period = min((PERIODS[f] for f in r.flags if f in PERIODS), default=0.0)
        k = 1
        while period and r.start + k * period < now + horizon_s:
            wins.append(Window(r.name, r.start + k * period, r.end + k * period, r.cpus, "IGNORE_JOBS" in r.flags))
            k += 1
        if k > 1:
            notes.append(f"reservation {r.name} repeats every {period / 86400:g} day(s): {k} occurrences modelled")
        rep = sorted(f for f in r.flags if f in REPEATS)
        if rep:
            notes.append(f"reservation {r.name} repeats ({','.join(rep)}): only its occurrence "
                         f"{_hm(r.start)} .. {_hm(r.end)} is modelled")
    if wins:
        first: dict[str, Window] = {}
        for w in wins:
            first.setdefault(w.name, w)
        notes.append("reservations modelled: " + ", ".join(
            f"{w.name} ({w.cpus} CPUs, {_hm(w.begin)} .. {_hm(w.end)})" for w in first.values()))
    for name, why in skipped.items():
        notes.append(f"reservation {name} not modelled: {why}")
    return wins, skipped, notes


class Holds:
    """What the reservations leave to a job at t, over the planner's live state (start._plan):
    `live` (key -> end at its limit, the running jobs), `size` (key -> CPUs), `member`
    (key -> window index or -1). `touch()` after any job starts or ends."""

    def __init__(self, wins: Sequence[Window], cap: int, live: dict, size: list, member: list):
        self.w = list(wins)
        self.cap = cap
        self.live = live
        self.size = size
        self.member = member
        self.used = [0] * len(self.w)  # CPUs the jobs in each window hold now
        self._cross: dict[int, int] = {}

    def touch(self) -> None:
        self._cross.clear()

    def started(self, k: int, delta: int) -> None:
        m = self.member[k]
        if m >= 0:
            self.used[m] += delta
        self._cross.clear()

    def cross(self, r: int, t: float) -> int:
        """CPUs of the running jobs outside window r that run past max(its begin, t)."""
        c = self._cross.get(r)
        if c is None:
            w = self.w[r]
            if w.ignore_jobs:
                c = 0
            else:
                b = max(w.begin, t)
                c = sum(self.size[k] for k, e in self.live.items() if e > b and self.member[k] != r)
            self._cross[r] = c
        return c

    def avail(self, k: int, d: float, t: float, free: int) -> tuple[int, int]:
        """(CPUs job k of limit d may take at t, the window that cut it or -1)."""
        m = self.member[k]
        if m >= 0:
            w = self.w[m]
            if not (w.begin <= t < w.end):
                return 0, m
            a = w.cpus - self.used[m]
            return (a, m) if a < free else (free, -1)
        held = 0
        x = 0
        first = -1
        for r, w in enumerate(self.w):
            if w.begin < t + d and w.end > t:
                held += w.cpus
                c = self.cross(r, t)
                if c > x:
                    x = c
                if first < 0:
                    first = r
        if first < 0:
            return free, -1
        a = self.cap - held - x
        return (a, first) if a < free else (free, -1)

    def fixed(self, t: float) -> list[tuple[float, float, int]]:
        """The windows as backfill holds at t: (begin, end, R + what runs into it outside it)."""
        return [(w.begin, w.end, w.cpus + self.cross(r, t)) for r, w in enumerate(self.w) if w.end > t]


def reserved_reason(reason: str) -> bool:
    """squeue's reason for a job kept off a reservation's nodes: "ReqNodeNotAvail, Reserved for
    maintenance" (any reservation, MAINT or not; 22.05)."""
    r = reason.replace("_", " ")
    return r.startswith("ReqNodeNotAvail") and "Reserved for maintenance" in r
