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

The charges and tracks it is made of are forecast.charges'. Standard library only: on the
`fscontrol forecast` cold-start path.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from fscontrol.forecast.charges import Cache, _jobs, _Jobs, _Plan, _sum, _total_track, _Track, sorted_jobs  # noqa: F401 (Cache, sorted_jobs: the callers' names here)

_BLOCK = 256  # first_at_or_below reads the events' shares this many at a time (bounds them first: share_floor)
_READ = 16  # ... and halves a span whose bound does not clear the target down to this many


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
        self._events: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        """The passes where any charge may change (E channels are read at k + 1): the segments'
        starts of the three tracks together."""
        if self._starts is None:
            bks = set(self.tu.starts) | set(self.to.starts)
            if self.tt is not None:
                bks.update(self.tt.starts)
            if self.ws:
                for c in (self.e_own, self.e_all):  # b - 1 for b >= 1
                    bks.update(map((-1).__add__, c.breaks()))
            got = sorted(bks)
            self._starts = got[bisect_left(got, 0):]  # (a track's starts are never negative)
        return self._starts

    def at(self, k: int) -> tuple[float, float]:
        """(effective usage, total) after pass k, k >= 0."""
        us, tots = self._at_many((k,))
        return us[0], tots[0]

    def usages(self, ks: Sequence[int]) -> list[float]:
        """[at(k)[0] for k in ks], ks ascending: the effective usage, each track walked once."""
        return self._at_many(ks)[0] if ks else []

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

    def share_floor(self, ka: int, kb: int) -> float:
        """A lower bound of share(k) over the passes ka..kb (0 <= ka <= kb), -inf where no cheap
        one is known: each state's range over the span (_Track.span, _Jobs.span) put through
        share's formula at its lowest, less a slack far above the floats' rounding (1e-9 of the
        terms' size), so a span whose floor is above a share is above it at every pass."""
        lo_u, hi_u = self.tu.span(ka, kb)
        k_prev = max(ka - 1, 0) if self.ws else ka  # the term reads the total after the pass before too
        lo_t, hi_t = (self._t_const, self._t_const) if self.tt is None else self.tt.span(k_prev, kb)
        if lo_t <= 0 or self.fp <= 0:
            return -math.inf
        num, size = lo_u, abs(lo_u) + abs(hi_u)
        if self.ws:
            if self.ws < 0:
                return -math.inf
            lo_p = lo_t if ka > 0 else min(lo_t, self.total0)  # the total after the pass before: > 0 for the term
            lo_o, hi_o = self.to.span(ka, kb)
            e_o, e_a = self.e_own.span(ka + 1, kb + 1), self.e_all.span(ka + 1, kb + 1)
            if lo_p <= 0 or lo_o < 0 or e_o is None or e_a is None or e_o[0] < 0 or e_a[0] < 0:
                return -math.inf
            fp = self.fp  # the term ws (mid - own/tot) tot = ws (tot (own fp + e_o) / (tot fp + e_a) - own)
            lo_mt = (lo_o * fp + e_o[0]) * lo_t / (lo_t * fp + e_a[1])
            hi_mt = (hi_o * fp + e_o[1]) * hi_t / (hi_t * fp + e_a[0])
            num += self.ws * (lo_mt - hi_o)
            size += self.ws * (hi_mt + hi_o)
        num -= 1e-9 * size
        return num / hi_t if num >= 0 else num / lo_t

    def events(self, k0: int = 0, k1: int | None = None) -> list[int]:
        """The passes where a segment starts or ends, within [k0, k1]: the candidates for a
        peak (inside a segment every state moves monotonically toward its fixed point)."""
        if self._events is None:
            starts = self.starts
            self._events = sorted(set(starts).union(map((-1).__add__, starts)))
        ev = self._events
        i = bisect_left(ev, k0)
        j = len(ev) if k1 is None else bisect_right(ev, k1)
        out = ev[i:j]
        if not out or out[0] != k0:
            out.insert(0, k0)
        if k1 is not None and out[-1] != k1:
            out.append(k1)
        return out

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

    def first_at_or_below(self, x: float, k0: int, k_max: int = 10**9, share=None, shares=None,
                          floor=None) -> int | None:
        """The first pass k >= k0 whose u/total <= x; None when none comes (checked to the
        settled limit, or k_max). `share`: another function of k to search (monotone between
        events, as u/total is), `shares` the same over a list, `floor(ka, kb)` a lower bound of
        it over passes ka..kb (share_floor's): the events of a span whose floor is above x are not
        read (a user far above the target skips thousands), the rest in blocks (issue #31)."""
        if share is None:
            share, shares, floor = self.share, self.shares, self.share_floor
        if share(k0) <= x:
            return k0
        ev = self.events(k0)  # the events after k0, capped at k_max: where the share is read
        his = ev[bisect_right(ev, k0):bisect_left(ev, k_max)] + ([k_max] if k_max > k0 else [])
        hit = self._first_event_at_or_below(his, x, share, shares, floor)
        if hit is None:
            return None
        hi, lo = his[hit], his[hit - 1] if hit > 0 else k0
        while hi - lo > 1:  # monotone inside a segment: bisect
            mid = (lo + hi) // 2
            if share(mid) <= x:
                hi = mid
            else:
                lo = mid
        return hi

    @staticmethod
    def _first_event_at_or_below(his: list[int], x: float, share, shares, floor) -> int | None:
        """The index of the first of `his` whose share is at or below x: spans of _BLOCK events
        whose floor is above x skipped whole, the others halved down to _READ events, read."""
        n = len(his)
        todo = [(a, min(a + _BLOCK, n)) for a in range(0, n, _BLOCK)][::-1]
        while todo:  # the earliest span last (a stack)
            a, b = todo.pop()
            if floor is not None and floor(his[a], his[b - 1]) > x:
                continue
            if floor is not None and b - a > _READ:
                m = (a + b) // 2
                todo += [(m, b), (a, m)]
                continue
            block = his[a:b]
            got = shares(block) if shares is not None else [share(k) for k in block]
            j = next((j for j, v in enumerate(got) if v <= x), None)
            if j is not None:
                return a + j
        return None
