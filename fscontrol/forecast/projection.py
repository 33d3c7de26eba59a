"""The forecast's one projection, in O(jobs log jobs) whatever the horizon (issue #31 item 1).

A decay pass (Slurm's classic `_decay_thread`, modelled in forecast.classic) maps the usage
u <- u f^P + charge. The charge of a pass is piecewise constant in the pass number: the jobs
still running charge their rate x the period, the job that ends inside a pass charges its last
stretch once, a plan segment charges at a constant rate between its ends. So the passes fall
into segments between events (a job's end, a plan boundary), and inside a segment every state
(the weighted usage, the user's own usage, the total) follows x_k = x_(k-1) m + c: a closed
form. The charges come from prefix sums over the jobs sorted by their time left.

`Projection(...)` takes the arguments of the step-by-step walk (tests/forecast_reference.py,
the slow reference the tests hold it to, to 1e-9) and answers `at(k)`: (effective usage, total
usage) after pass k (k = 0 is the pass just after the snapshot), in O(log jobs) each, for any
k. `limit()` is where the usage settles after the last event (the equilibrium at the current
load), `first_at_or_below(x, k0)` the first pass from k0 on whose usage share u/total is at or
below x (None: not at this load).

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
_BLOCK = 256  # first_at_or_below reads the events' shares this many at a time
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
        self._breaks, self._memo = None, {}
        return self

    def breaks(self) -> list[int]:
        if self._breaks is None:
            global _last_breaks
            last = _last_breaks  # (one read: the page's threads replace it whole)
            if last is not None and last[0] is self.lefts and last[1] == self.P:  # the same times left (the cluster's jobs and their inflow)
                self._breaks = last[2]
            else:
                ks = set(map(int, map(float(self.P).__rfloordiv__, self.lefts)))  # each job's left // P
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
            while i < last and starts[i + 1] <= k:
                i += 1
            n = k - starts[i] + 1  # _advance, inline: the same floats
            if n <= 0:
                out.append(state[i])
            elif fp == 1.0:
                out.append(state[i] + rates[i] * n)
            else:
                mn = fp**n
                out.append(state[i] * mn + rates[i] * (1.0 - mn) / (1.0 - fp))
        return out


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


class Projection:
    """See the module's docstring; the arguments are forecast.classic's walk's (the reference in
    tests/forecast_reference.py), plus the submissions that keep coming: `inflow` a constant rate
    (weighted) charged from now on, `inflow_jobs` running jobs charged from the next pass on
    (amounts may be negative: the inflow that replaces them as they end), and the same for the
    total (`total_inflow`, `total_inflow_jobs`) when the total moves. `u_first`/`total_first`: the
    weighted usage and the total after pass 0 when they are known (the snapshot's RawUsages: the
    pass just past has charged them), instead of charging the running jobs for that pass.

    Each state (the weighted usage, the user's own usage, the total) is a _Track over its own
    segments: the total's (the whole cluster's jobs: thousands of segments) is shared by every
    user's projection on the same snapshot, the user's two have a few."""

    def __init__(self, u0: float, total0: float, *, period_s: float, half_life_s: float,
                 weighted_jobs: Sequence, cluster_jobs: Sequence | None, plan: Sequence = (),  # forecast.classic.Segment items
                 self_weight: float = 0.0, own0: float | None = None, own_early: Sequence = (),
                 own_jobs: Sequence = (), early_jobs: Sequence = (), inflow: float = 0.0, inflow_jobs: Sequence = (),
                 total_inflow: float = 0.0, total_inflow_jobs: Sequence = (), u_first: float | None = None,
                 total_first: float | None = None, cache: Cache | None = None) -> None:
        from fscontrol.model.decay import decay_factor_per_second

        f = decay_factor_per_second(half_life_s)
        P = float(period_s)
        self.fp = fp = f**P
        self.P = P
        plan = list(plan)
        pl = _Plan(plan, P, f) if plan else None
        g = _sum(_Jobs([(j[0], j[1] * j[2]) for j in weighted_jobs], P, fp), _Plan(plan, P, f, inflow),
                 _Jobs(inflow_jobs, P, fp, future=True) if inflow_jobs else None)
        self.held = cluster_jobs is None
        gt = None
        shared: tuple = ()
        if not self.held:
            shared = (_jobs(cluster_jobs, P, fp, cache=cache),) + ((_jobs(total_inflow_jobs, P, fp, True, cache),)
                                                      if total_inflow_jobs else ())
            gt = _sum(shared[0], _Plan(plan, P, f, total_inflow), shared[1] if len(shared) > 1 else None)
        self.ws = self_weight if (self_weight and own0 is not None) else 0.0
        own_j = _Jobs(own_jobs, P, fp)
        go = _sum(own_j, pl)
        self.e_own = _Jobs(own_early, P, fp)
        self.e_all = _jobs(early_jobs, P, fp, cache=cache)
        self.total0 = total0
        u = u0
        if self.ws and total0 > 0:  # as the walk: the snapshot's mid-pass own term taken out
            own_prev = (own0 - own_j.value(0)) / fp
            mid0 = (own_prev * fp + self.e_own.value(0)) / (total0 * fp + self.e_all.value(0))
            u = u0 - self.ws * (mid0 - own_prev / total0) * total0
        if u_first is not None and fp > 0:  # the weighted usage after pass 0 is known (sshare's RawUsage)
            u = (u_first - g.value(0)) / fp
        if total_first is not None and not self.held and fp > 0:
            total0 = (total_first - gt.value(0)) / fp
        self.tu = _Track(g, u, fp)
        self.to = _Track(go, float(own0 or 0.0), fp, frozen0=True)
        if gt is None:
            self.tt = None
            self._t_const = float(total0)
        else:
            x0 = float(total0)
            self.tt = _total_track(shared, tuple((seg.duration_s, seg.rate) for seg in plan),
                                   (P, fp, float(total_inflow), x0), lambda: _Track(gt, x0, fp), cache)
        self._starts: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        """The passes where any charge may change (E channels are read at k + 1): the segments'
        starts of the three tracks together."""
        if self._starts is None:
            bks = set(self.tu.starts) | set(self.to.starts)
            if self.tt is not None:
                bks.update(self.tt.starts)
            if self.ws:
                for c in (self.e_own, self.e_all):
                    bks.update(b - 1 for b in c.breaks() if b >= 1)
            self._starts = sorted(bks)
        return self._starts

    def _tot(self, k: int) -> float:
        return self._t_const if self.tt is None else self.tt.at(k)

    def at(self, k: int) -> tuple[float, float]:
        """(effective usage, total) after pass k, k >= 0."""
        us, tots = self._at_many((k,))
        return us[0], tots[0]

    def _at_many(self, ks: Sequence[int]) -> tuple[list[float], list[float]]:
        """([effective usage], [total]) after each pass of ks (ascending): each track walked once.
        The user's own term is read mid-pass, as the walk reads it (the class's docstring)."""
        us = self.tu.at_many(ks)
        tots = [self._t_const] * len(ks) if self.tt is None else self.tt.at_many(ks)
        if self.ws:
            tots_prev = tots if self.tt is None else self.tt.at_many([max(k - 1, 0) for k in ks])
            owns = self.to.at_many(ks)
            nxt = [k + 1 for k in ks]
            e_o, e_a = self.e_own.values(nxt), self.e_all.values(nxt)
            fp, ws = self.fp, self.ws
            for j, k in enumerate(ks):
                tot_prev = self.total0 if k == 0 else tots_prev[j]
                if tot_prev > 0:
                    own, tot = owns[j], tots[j]
                    mid = (own * fp + e_o[j]) / (tot * fp + e_a[j])
                    us[j] = us[j] + ws * (mid - own / tot) * tot
        return us, tots

    def share(self, k: int) -> float:
        u, tot = self.at(k)
        return u / tot if tot > 0 else math.inf

    def shares(self, ks: Sequence[int]) -> list[float]:
        """[share(k) for k in ks], ks ascending: the same floats, each track walked once (a search
        over thousands of events reads them all: first_at_or_below)."""
        us, tots = self._at_many(ks)
        return [u / tot if tot > 0 else math.inf for u, tot in zip(us, tots)]

    def events(self, k0: int = 0, k1: int | None = None) -> list[int]:
        """The passes where a segment starts or ends, within [k0, k1]: the candidates for a
        peak (inside a segment every state moves monotonically toward its fixed point)."""
        out = {k0} if k1 is None else {k0, k1}
        for a in self.starts:
            for k in (a - 1, a):
                if k >= k0 and (k1 is None or k <= k1):
                    out.add(k)
        return sorted(out)

    def peak(self, k0: int, k1: int, share=None) -> tuple[int, float]:
        """(pass, u/total) of the highest usage share among passes k0..k1 (the lowest F)."""
        share = share or self.share
        best = max(self.events(k0, k1), key=share)
        return best, share(best)

    def limit(self) -> float:
        """u/total where the projection settles after its last event (inf: it grows without
        bound, no decay)."""
        cg, cgo = self.tu.rates[-1], self.to.rates[-1]
        cgt = 0.0 if self.tt is None else self.tt.rates[-1]
        if self.fp >= 1.0:
            return math.inf if (cg or cgo or cgt) else self.share(max(self.starts[-1], 0))
        u_inf = cg / (1 - self.fp)
        tot_inf = self.total0 if self.held else cgt / (1 - self.fp)
        if self.ws:  # the own term's mid-pass reading, at the fixed point
            own_inf = cgo / (1 - self.fp)
            e_o, e_a = self.e_own.value(10**12), self.e_all.value(10**12)
            if tot_inf > 0:
                u_inf += self.ws * ((own_inf * self.fp + e_o) / (tot_inf * self.fp + e_a) - own_inf / tot_inf) * tot_inf
        return u_inf / tot_inf if tot_inf > 0 else math.inf

    def first_at_or_below(self, x: float, k0: int, k_max: int = 10**9, share=None, shares=None) -> int | None:
        """The first pass k >= k0 whose u/total <= x; None when none comes (checked to the
        settled limit, or k_max). `share`: another function of k to search (monotone between
        events, as u/total is)."""
        shares = shares or (self.shares if share is None else None)
        share = share or self.share
        if share(k0) <= x:
            return k0
        his = []  # the events after k0, capped at k_max: where the share is read
        lo = k0
        for hi in [k for k in self.events(k0) if k > k0] + [k_max]:
            hi = min(hi, k_max)
            if hi > lo:
                his.append(hi)
                lo = hi
            if lo >= k_max:
                break
        at = 0
        while at < len(his):  # in blocks, each track walked once a block (shares), or one at a time
            block = his[at:at + _BLOCK]
            got = shares(block) if shares is not None else [share(k) for k in block]
            hit = next((j for j, v in enumerate(got) if v <= x), None)
            if hit is not None:
                hi = block[hit]
                lo = his[at + hit - 1] if at + hit > 0 else k0
                while hi - lo > 1:  # monotone inside a segment: bisect
                    mid = (lo + hi) // 2
                    if share(mid) <= x:
                        hi = mid
                    else:
                        lo = mid
                return hi
            at += _BLOCK
        return None


def sorted_jobs(lefts: Sequence[float], amounts: Sequence[float], untimed: Sequence[float], *, period_s: float,
                half_life_s: float, future: bool = False) -> _Jobs:
    """Running jobs in (time left, amount) order charged once, for Projection's `cluster_jobs`,
    `early_jobs` or `total_inflow_jobs` (the same answers as the jobs given as a list, with no
    sort: forecast.loaded on export/runsorted.py's sorted columns)."""
    from fscontrol.model.decay import decay_factor_per_second

    P = float(period_s)
    return _Jobs.presorted(lefts, amounts, untimed, P, decay_factor_per_second(half_life_s) ** P, future)
