"""The charges and tracks the forecast's projection (forecast.projection) is made of.

A set of running jobs charges a decay pass fp x sum amount x the seconds of the pass each runs
(_Jobs, from prefix sums over the jobs sorted by their time left), a plan and a constant inflow
charge rate x overlap x decay (_Plan); between the passes where any charge changes (its
`breaks`), a state x_k = x_(k-1) fp + c follows one closed form (_Track). What the projections on
one snapshot share (the cluster's jobs charged once, the total's track stepped once a plan) is
kept in a Cache a snapshot.

Standard library only: on the `fscontrol forecast` cold-start path.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import accumulate
from operator import mul

Job = tuple  # (seconds to its limit or None, amount[, ...]): amount = rate x weight
_MEMO = 1 << 16  # the most charges a set of jobs remembers (by pass)
_SHARED = 6  # the sets of jobs a Cache keeps (_jobs): the cluster's, its inflow's, a few pending jobs' "early"
_TRACKS = 16  # the total's tracks a Cache keeps (_total_track): one a plan and start
_SHARE_BREAKS = 256  # sets of at least this many jobs share their breaks with the next set of the same times left
_last_breaks: tuple | None = None  # (times left, P, breaks) of the last such set: one entry, the snapshot's cluster


class Cache:
    """What the projections on ONE snapshot share (the web page answers many users from one): the
    cluster's running jobs sorted and charged once (_jobs), the total's track stepped once a plan
    (_total_track). The caller keeps one Cache a snapshot and drops it with the snapshot
    (forecast.loaded: a new snapshot gets a new Cache), so what it holds is the current
    snapshot's, never an old one's (issue #31 item 2: module-wide caches kept the last 8-16
    snapshots' job lists, +90 MiB a replaced snapshot at 1M jobs). Within it, least recently used
    entries go first, so a stream of users' own pending jobs (their "early" lists) never evicts the
    cluster's. Thread-safe: the page's threads share it."""

    def __init__(self) -> None:
        self.by_obj: dict[tuple, tuple] = {}  # (id(jobs), ...) -> (jobs, its _Jobs): a tuple seen again skips the key
        self.shared: dict[tuple, _Jobs] = {}
        self.tracks: dict[tuple, tuple] = {}
        self.lock = threading.Lock()

    def get(self, table: dict, key):
        with self.lock:
            hit = table.pop(key, None)
            if hit is not None:
                table[key] = hit  # the most recently used last
            return hit

    def put(self, table: dict, key, value, most: int):
        with self.lock:
            table.pop(key, None)
            while len(table) >= most:
                del table[next(iter(table))]
            table[key] = value
        return value


def _jobs(jobs: Sequence[Job], period: float, fp: float, future: bool = False, cache: Cache | None = None) -> _Jobs:
    """_Jobs(jobs, ...), the same object again for the same jobs (compared whole) within `cache`:
    every user's projection on one snapshot charges the cluster's running jobs (the total), so a
    process that answers many (the web page) sorts them and reads their charge at a pass once, not
    once each. Without a cache, a new one."""
    if isinstance(jobs, _Jobs):  # charged once by the caller (sorted_jobs)
        if (jobs.P, jobs.fp, jobs.future) != (period, fp, future):
            raise ValueError("jobs charged for another period, decay or start")
        return jobs
    if cache is None:
        return _Jobs(jobs, period, fp, future)
    ident = (id(jobs), period, fp, future)
    seen = cache.get(cache.by_obj, ident)
    if seen is not None and seen[0] is jobs and isinstance(jobs, tuple):  # the same (immutable) jobs again
        return seen[1]
    key_jobs = tuple((j[0], j[1]) for j in jobs)
    key = (period, fp, future, key_jobs)
    hit = cache.get(cache.shared, key)
    if hit is None:
        hit = cache.put(cache.shared, key, _Jobs(key_jobs, period, fp, future), _SHARED)
    if isinstance(jobs, tuple):
        cache.put(cache.by_obj, ident, (jobs, hit), _SHARED)  # the entry keeps `jobs`: its id is never a later object's
    return hit


def _floors(lefts: Sequence[float], P: float) -> list[int]:
    """The distinct int(x // P) of the sorted `lefts` (P > 0), ascending: x // P never falls as x
    grows, so each value's run ends where x reaches (k + 1) P, found by bisection (the bound's
    rounding put right by stepping): a few hundred floor divisions for thousands of jobs, the same
    values as every job's own."""
    out: list[int] = []
    n, i = len(lefts), 0
    while i < n:
        k = lefts[i] // P
        out.append(int(k))
        j = bisect_left(lefts, (k + 1.0) * P, i + 1)
        while j > i + 1 and lefts[j - 1] // P > k:
            j -= 1
        while j < n and lefts[j] // P <= k:
            j += 1
        i = j
    return out


class _Jobs:
    """The charge of a set of running jobs at pass k: fp x sum amount x the seconds of pass k
    ((k-1)P, kP] the job runs (pass 0 charges the interval just past in full, unless `future`:
    then it charges nothing)."""

    def __init__(self, jobs: Sequence[Job], period: float, fp: float, future: bool = False) -> None:
        self.P, self.fp, self.future = period, fp, future
        fin = sorted((float(j[0]), float(j[1])) for j in jobs if j[0] is not None)
        self.inf_amount = math.fsum(float(j[1]) for j in jobs if j[0] is None)
        self.total = self.inf_amount + math.fsum(a for _, a in fin)
        self.lefts = [x for x, _ in fin]
        self.cum_a, self.cum_al = [0.0], [0.0]  # prefix sums of amount and amount x left
        for left, a in fin:
            self.cum_a.append(self.cum_a[-1] + a)
            self.cum_al.append(self.cum_al[-1] + a * left)

        self._breaks: list[int] | None = None
        self._memo: dict[int, float] = {}
        self._nonneg: bool | None = None
        self._amounts: list[float] | None = None  # (presorted keeps them)

    @classmethod
    def presorted(cls, lefts: Sequence[float], amounts: Sequence[float], untimed: Sequence[float], period: float,
                  fp: float, future: bool = False) -> _Jobs:
        """The same as _Jobs([(left, amount)...] + [(None, amount)...]) when (left, amount) are
        already in sorted order: no sort, the prefix sums in the same order (the same floats)."""
        self = cls.__new__(cls)
        self.P, self.fp, self.future = period, fp, future
        self.inf_amount = math.fsum(float(a) for a in untimed)
        self.total = self.inf_amount + math.fsum(amounts)
        self.lefts = lefts
        self.cum_a = list(accumulate(amounts, initial=0.0))
        self.cum_al = list(accumulate(map(mul, amounts, lefts), initial=0.0))
        self._breaks, self._memo, self._nonneg = None, {}, None
        self._amounts = amounts
        return self

    def breaks(self) -> list[int]:
        if self._breaks is None:
            global _last_breaks
            last = _last_breaks  # (one read: the page's threads replace it whole)
            if last is not None and last[0] is self.lefts and last[1] == self.P:  # the same times left (the cluster's jobs and their inflow)
                self._breaks = last[2]
            else:
                ks = _floors(self.lefts, float(self.P))  # each job's left // P
                self._breaks = sorted({0, 1}.union(ks, [k + 1 for k in ks], [k + 2 for k in ks]))
                if len(self.lefts) >= _SHARE_BREAKS:
                    _last_breaks = (self.lefts, self.P, self._breaks)
        return self._breaks

    def values(self, ks: Sequence[int]) -> list[float]:
        """[value(k) for k in ks], ks sorted: the same floats, in one loop (a track's thousands of
        segments read the charge once each), remembered as value's are (the plan's track and
        the idle one's read the same passes)."""
        P, fp, lefts, cum_a, cum_al = self.P, self.fp, self.lefts, self.cum_a, self.cum_al
        n = len(lefts)
        inf, top_a = self.inf_amount, cum_a[n]
        memo = self._memo
        if len(memo) + len(ks) > _MEMO:
            memo.clear()
        out = []
        add = out.append
        i_full = i_part = 0
        k_prev = -2
        for k in ks:
            v = memo.get(k)
            if v is None:
                if k == 0:
                    v = 0.0 if self.future else fp * P * self.total
                else:
                    a0, a1 = (k - 1) * P, k * P  # lefts >= a1 run the whole pass; a0 < left < a1: their last stretch
                    if k_prev == k - 1:  # a0 is the last pass's a1: past the lefts equal to it
                        i_part = i_full
                        while i_part < n and lefts[i_part] == a0:
                            i_part += 1
                    else:
                        i_part = bisect_right(lefts, a0, i_part)
                    i_full = bisect_left(lefts, a1, i_part)
                    full = inf + (top_a - cum_a[i_full])
                    part = (cum_al[i_full] - cum_al[i_part]) - a0 * (cum_a[i_full] - cum_a[i_part])
                    v = fp * (P * full + part)
                memo[k] = v
                k_prev = k
            add(v)
        return out

    def value(self, k: int) -> float:
        v = self._memo.get(k)
        return self.values((k,))[0] if v is None else v

    def span(self, ka: int, kb: int) -> tuple[float, float] | None:
        """(lowest, highest) charge over passes ka..kb (1 <= ka <= kb), or None where no cheap
        bound is known: with no negative amount a job's charge only falls as the passes go by
        (a whole pass, its last stretch, then nothing), so the two ends bound it."""
        if self._nonneg is None:  # (presorted keeps its amounts: min reads them in C)
            amounts = self._amounts if self._amounts is not None else list(map(float.__sub__, self.cum_a[1:], self.cum_a))
            self._nonneg = self.inf_amount >= 0 and min(amounts, default=0.0) >= 0
        if not self._nonneg or ka < 1:
            return None
        hi, lo = self.values((ka, kb))
        return lo, hi


class _Plan:
    """The charge of the user's plan (segments from now) and of a constant inflow from now, at
    pass k: rate x overlap x f^(kP - the later of the pass's and the segment's start)."""

    def __init__(self, plan: Sequence, period: float, f: float, inflow: float = 0.0) -> None:
        self.P, self.f = period, f
        self.bounds = [0.0]
        for seg in plan:
            self.bounds.append(self.bounds[-1] + seg.duration_s)
        self.plan = list(plan)
        self.inflow = inflow

    def breaks(self) -> list[int]:
        out = [0, 1]
        for b in self.bounds:
            k = int(b // self.P)
            out += [k, k + 1, k + 2]
        return out

    def values(self, ks: Sequence[int]) -> list[float]:
        """[value(k) for k in ks], ks sorted: past the plan's end only the inflow charges (the same
        float each pass)."""
        end = self.bounds[-1]
        out = []
        tail = None
        for k in ks:
            if (k - 1) * self.P >= end and k >= 1:
                if tail is None:
                    tail = self.value(k)
                out.append(tail)
            else:
                out.append(self.value(k))
        return out

    def value(self, k: int) -> float:
        a0, a1 = (k - 1) * self.P, k * self.P
        c = 0.0
        i = max(0, bisect_right(self.bounds, a0) - 1)
        while i < len(self.plan) and self.bounds[i] < a1:
            seg, b0 = self.plan[i], self.bounds[i]
            hi = min(a1, b0 + seg.duration_s)
            ov = max(0.0, hi - max(a0, b0))
            if ov > 0 and seg.rate > 0:
                c += seg.rate * ov * self.f ** (a1 - max(a0, b0))
            i += 1
        if self.inflow and k >= 1:
            c += self.inflow * self.P * self.f ** self.P
        return c


def _sum(*channels) -> _Sum:
    return _Sum(channels)


class _Sum:
    def __init__(self, channels) -> None:
        self.channels = [c for c in channels if c is not None]

    def breaks(self) -> list[int]:
        return [b for c in self.channels for b in c.breaks()]

    def value(self, k: int) -> float:
        return sum(c.value(k) for c in self.channels)

    def values(self, ks: Sequence[int]) -> list[float]:
        """[value(k) for k in ks]: each channel's in one loop, added in value's order."""
        return list(map(sum, zip(*(c.values(ks) for c in self.channels))))


def _advance(x: float, m: float, c: float, n: int) -> float:
    """x after n steps of x <- x m + c."""
    if n <= 0:
        return x
    if m == 1.0:
        return x + c * n
    mn = m**n
    return x * mn + c * (1.0 - mn) / (1.0 - m)


class _Track:
    """One state x_k = x_(k-1) fp + c(k) over the passes, c(k) from a channel (`value`) that is
    constant between its `breaks`: the state before each segment and the segment's charge, so
    x_k is one closed-form step from the segment's start. `frozen0`: pass 0 leaves x as it is
    (the user's own usage: the snapshot's RawUsage already holds the pass just past)."""

    __slots__ = ("fp", "starts", "state", "rates", "frozen0")

    def __init__(self, channel, x0: float, fp: float, frozen0: bool = False) -> None:
        self.fp, self.frozen0 = fp, frozen0
        got = {0, 1}.union(channel.breaks())
        self.starts = starts = sorted(got if min(got) >= 0 else (b for b in got if b >= 0))
        self.rates = rates = channel.values(starts)
        self.state = state = []
        x = x0
        one = fp == 1.0
        for a, b, c in zip(starts, starts[1:], rates):  # _advance inline: the same floats
            state.append(x)
            if not (frozen0 and a == 0):
                n = b - a
                if one:
                    x = x + c * n
                else:
                    mn = fp**n
                    x = x * mn + c * (1.0 - mn) / (1.0 - fp)
        state.append(x)

    def at(self, k: int) -> float:
        """x after pass k, k >= 0."""
        if k == 0 and self.frozen0:
            return self.state[0]
        i = bisect_right(self.starts, k) - 1
        return _advance(self.state[i], self.fp, self.rates[i], k - self.starts[i] + 1)

    def at_many(self, ks: Sequence[int]) -> list[float]:
        """[at(k) for k in ks], ks ascending: the same floats, the segment found by walking on."""
        starts, state, rates, fp = self.starts, self.state, self.rates, self.fp
        last = len(starts) - 1
        out = []
        i = max(0, bisect_right(starts, ks[0]) - 1) if ks else 0  # the first k's segment, then walking on
        for k in ks:
            if k == 0 and self.frozen0:
                out.append(state[0])
                continue
            if i < last and starts[i + 1] <= k:  # on to k's segment (a span's two ends: far apart)
                i = bisect_right(starts, k, i + 1, last + 1) - 1
            n = k - starts[i] + 1  # _advance, inline: the same floats
            if n <= 0:
                out.append(state[i])
            elif fp == 1.0:
                out.append(state[i] + rates[i] * n)
            else:
                mn = fp**n
                out.append(state[i] * mn + rates[i] * (1.0 - mn) / (1.0 - fp))
        return out


    def span(self, ka: int, kb: int) -> tuple[float, float]:
        """(lowest, highest) x over passes ka..kb (ka <= kb): inside a segment x moves
        monotonically toward the segment's fixed point, so its ends bound it; the segments that
        start inside the span add the states they start from."""
        ends = self.at_many((ka, kb)) if ka < kb else self.at_many((ka,))
        starts = self.starts
        i, j = bisect_right(starts, ka), bisect_right(starts, kb)
        if j > i:  # state[i..j-1]: x after passes starts[i]-1 .. starts[j-1]-1, all inside [ka, kb)
            inner = self.state[i:j]
            return min(min(inner), *ends), max(max(inner), *ends)
        return min(ends), max(ends)


def _total_track(shared: tuple, plan_key: tuple, rest: tuple, make, cache: Cache | None) -> _Track:
    """The total usage's track, the same object again for the same charges and start within
    `cache`: every user's projection on one snapshot moves the cluster's total alike (the running
    jobs, the inflow, the same plan), so a process that answers many (the web page) steps its
    thousands of segments once. `shared`: the shared _Jobs objects of the channel (kept in the
    entry, so an id in the key is never a later object's). Without a cache, a new one."""
    if cache is None:
        return make()
    key = (tuple(id(x) for x in shared), plan_key, rest)
    hit = cache.get(cache.tracks, key)
    if hit is None or any(a is not b for a, b in zip(hit[0], shared)):
        hit = cache.put(cache.tracks, key, (shared, make()), _TRACKS)
    return hit[1]


def sorted_jobs(lefts: Sequence[float], amounts: Sequence[float], untimed: Sequence[float], *, period_s: float,
                half_life_s: float, future: bool = False) -> _Jobs:
    """Running jobs in (time left, amount) order charged once, for Projection's `cluster_jobs`,
    `early_jobs` or `total_inflow_jobs` (the same answers as the jobs given as a list, with no
    sort: forecast.loaded on export/runsorted.py's sorted columns)."""
    from fscontrol.model.decay import decay_factor_per_second

    P = float(period_s)
    return _Jobs.presorted(lefts, amounts, untimed, P, decay_factor_per_second(half_life_s) ** P, future)
