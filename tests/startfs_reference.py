"""The fair-share priority passes of the start estimate as they were before their cost work
(issue #32 item 4: fair-share through the horizon at 10,000 pending jobs; main at 80435dc):
`Passes` of fscontrol/forecast/startfs.py, verbatim, kept as the reference the faster passes are
compared with (tests/test_start_fairshare_equivalence.py). Not part of the package."""

from __future__ import annotations

from collections.abc import Sequence

from fscontrol.forecast.startfs import Bound, _ranker, arrays, factors
from fscontrol.model.decay import decay_factor_per_second


class RefPasses:
    """The priority passes of one estimate run: call `started` for each job the plan starts,
    `due(t)` at each event and then `run(t, ...)`, which gives the queue's new order or None."""

    def __init__(self, now: float, bf_until: float, n: int, aging, fs: Bound | None, prio0: Sequence[float],
                 elig: Sequence[float], run_ends: Sequence[float]):
        self.now = now
        self.n = n
        self.until = bf_until
        self.aging = aging  # (PriorityWeightAge, PriorityMaxAge s, PriorityCalcPeriod s) or None
        self.fs = fs
        calc = aging[2] if aging is not None else fs.model.calc_s
        self.calc = calc
        self.next = now + calc / 2  # the passes' phase is not known
        self.last = self.next - calc  # the pass before: sshare's usage is as of it
        self.emin = min(elig, default=now)
        self.np = None  # numpy, imported once a pass needs it (a CLI start without an age term or
        self._raw = (prio0, elig, run_ends)  # fair-share does not pay for it; a user's copy may not have it)
        self._started: list[int] = []
        self.dfs = None
        if fs is not None:
            self._numpy()

    def _numpy(self) -> None:
        import numpy as np

        self.np = np
        prio0, elig, _ = self._raw
        n, now, aging = self.n, self.now, self.aging
        self.st_mask = np.zeros(n, dtype=bool)
        self.st_mask[self._started] = True
        self.e = np.asarray(elig, dtype=float)
        p = np.asarray(prio0, dtype=float)
        if aging is not None:
            w_age, max_age, _ = aging
            p = p - w_age * np.minimum(1.0, np.maximum(0.0, now - self.e) / max_age)
        self.p0 = p  # each job's priority less its age term now
        self.order = np.arange(n)
        self.dfs = None  # PriorityWeightFairshare x (F at the last pass - F now) of each pending job
        fs = self.fs
        if fs is not None:
            run_ends = self._raw[2]
            m = fs.model
            arrays(m, np)
            self.usage = np.asarray(m.usage, dtype=float)
            # the F in the priorities now: slurmctld's F lags RawUsage by one pass (it is computed
            # from the usage before the pass's charges), so sshare's RawUsage is the next pass's F.
            # sshare's FairShare column is the present one: where it differs from the model's F on
            # RawUsage by more than its 6 decimals, the last real pass charged, and the next
            # modelled pass moves F by the difference
            if m.tree is not None:  # Fair Tree: ranks over usage kept scaled by the decay (x G)
                self.G = 1.0
                self.ranker = _ranker(m)
                fm = np.zeros(len(m.usage))
                for i, f in self.ranker.update(self.usage.tolist()).items():
                    fm[i] = f
                self.fa = fm.copy()
            else:
                fm = factors(m, self.usage, np)
            pr = np.asarray(m.printed, dtype=float)
            keep = np.isnan(pr) | (np.abs(pr - fm) <= 1.5e-6)
            self.f0 = np.where(keep, fm, pr)
            self.dirty = not bool(keep.all())  # the next pass computes F anew
            a = np.asarray(fs.assoc, dtype=np.intp)
            self.ok = a >= 0
            self.a = np.where(self.ok, a, 0)
            self.rate = np.asarray(fs.rate, dtype=float)
            k = n + len(run_ends)
            self.k_start = np.full(k, np.inf)
            self.k_end = np.full(k, np.inf)
            self.k_start[n:] = fs.run_start
            self.k_end[n:] = run_ends
            self.decay = decay_factor_per_second(m.half_life_s)  # Slurm's 1 - 0.693 / T

    def started(self, i: int, at: float, end: float) -> None:
        if self.np is None:
            self._started.append(i)
            return
        self.st_mask[i] = True
        if self.fs is not None:
            self.k_start[i] = at
            self.k_end[i] = end

    def due(self, t: float) -> bool:
        return t >= self.next and t < self.until

    def _charge(self, tp: float) -> bool:
        """Slurm's pass at `tp`: decay, charge the jobs run since the last; True if any F moved."""
        np = self.np
        dt = tp - self.last
        ov = np.minimum(self.k_end, tp) - np.maximum(self.k_start, self.last)
        ov = np.where(self.ok, np.maximum(ov, 0.0), 0.0)
        self.last = tp
        return self._apply(ov, dt)

    def _apply(self, ov, dt) -> bool:
        np = self.np
        m = self.fs.model
        f = self.decay
        if m.tree is not None:
            return self._apply_fair_tree(ov, dt)
        if f != 1.0:
            self.usage *= f ** dt
        moved = self.dirty
        if moved:
            # this pass's F: from the usage before its charges (slurmctld's lag; decay alone moves no F)
            fa = factors(m, self.usage, np)
            d = m.w_fs * (fa - self.f0)
            self.dfs = np.where(self.ok[: self.n], d[self.a[: self.n]], 0.0)
        self.dirty = bool(ov.any())
        if self.dirty:  # charged: the next pass's F moves
            ch = ov * self.rate * (f ** ov if f != 1.0 else 1.0)
            per = np.bincount(self.a, weights=ch, minlength=len(self.usage))
            pairs = arrays(m, np)
            desc, anc = pairs.desc, pairs.anc
            self.usage += np.bincount(anc, weights=per[desc], minlength=len(self.usage))
        return moved

    def _apply_fair_tree(self, ov, dt) -> bool:
        """Fair Tree's pass (fair_tree.c `fair_tree_decay`): the decay, the running jobs' charges,
        then the ranks from the usage after them: no lag, unlike classic. The usage is kept as
        true usage / G (G the decay since now), as the simulator's engine keeps it, so a pass that
        charges nothing changes no rank."""
        np = self.np
        m = self.fs.model
        f = self.decay
        if f != 1.0:
            self.G *= f ** dt
        touched = None
        if ov.any():
            ch = ov * self.rate * (f ** ov if f != 1.0 else 1.0) / self.G
            per = np.bincount(self.a, weights=ch, minlength=len(self.usage))
            pairs = arrays(m, np)
            desc, anc = pairs.desc, pairs.anc
            self.usage += np.bincount(anc, weights=per[desc], minlength=len(self.usage))
            touched = np.nonzero(per)[0].tolist()
        changed = self.ranker.update(self.usage.tolist(), touched) if touched else {}
        for i, fv in changed.items():
            self.fa[i] = fv
        first = self.dfs is None
        if changed or (first and self.dirty):
            d = m.w_fs * (self.fa - self.f0)
            self.dfs = np.where(self.ok[: self.n], d[self.a[: self.n]], 0.0)
            self.dirty = False
            return True
        return False

    def run(self, t: float, waiting_len: int) -> list[int] | None:
        """The pass(es) due by t: the new queue (every pending job not started, by priority, ties to
        the earlier job) when it must be set, else None (as the age-only re-sort before it)."""
        while self.next <= t:
            tp = self.next
            self.next += self.calc
            if self.fs is not None:
                self._charge(tp)
        aging = self.aging
        age_due = aging is not None and t - self.emin >= aging[1]
        if not age_due and self.dfs is None:
            return None  # all gain alike: the order is the one the queue has
        if self.np is None:
            self._numpy()
        np = self.np
        key = self.p0
        if aging is not None:
            key = key + aging[0] * np.minimum(1.0, np.maximum(0.0, t - self.e) / aging[1])  # (0 until eligible)
        if self.dfs is not None:
            key = key + self.dfs
        o = self.order[~self.st_mask[self.order]]  # the queue as it is: every pending job not started
        ko = key[o]
        # by priority, ties to the earlier job (the order a lexsort gives): a stable sort of the queue
        # as it is (timsort: linear where little moved), checked for ties that newly met out of order
        p = np.argsort(-ko, kind="stable")
        o, ko = o[p], ko[p]
        if len(o) > 1 and bool(np.any((ko[:-1] == ko[1:]) & (o[:-1] > o[1:]))):
            o = o[np.lexsort((o, -ko))]
        self.order = o
        if len(o) != waiting_len or (len(o) > 1 and not bool(np.all(o[:-1] < o[1:]))):
            return o.tolist()  # not in index order (or started jobs to drop): the queue is set anew
        return None

