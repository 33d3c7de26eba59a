"""Free nodes over time: the availability profile the backfill passes reserve in."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

INF = math.inf


class Profile:
    """Free nodes over time: F[k] on [T[k], T[k+1]), the last step lasting forever."""

    __slots__ = ("F", "T")

    def __init__(self, now: float, free: int, ends: list[tuple[float, int]]):
        T = [now]
        F = [free]
        for e, s in ends:  # (predicted end, size), sorted
            if e <= T[-1]:
                F[-1] += s
            else:
                T.append(e)
                F.append(F[-1] + s)
        self.T, self.F = T, F

    def _split(self, t: float) -> int:
        T = self.T
        k = bisect_left(T, t)
        if k < len(T) and T[k] == t:
            return k
        T.insert(k, t)
        self.F.insert(k, self.F[k - 1])
        return k

    def min_free(self, a: float, b: float) -> int:
        T, F = self.T, self.F
        k = bisect_right(T, a) - 1
        m = F[k]
        k += 1
        n = len(T)
        while k < n and T[k] < b:
            if F[k] < m:  # noqa: PLR1730 - hot loop: a comparison is cheaper than a min() call
                m = F[k]
            k += 1
        return m

    def reserve(self, a: float, b: float, s: int) -> None:
        i = self._split(a)
        j = self._split(b) if b != INF else len(self.T)
        F = self.F
        for k in range(i, j):
            F[k] -= s

    def earliest(self, s: int, dur: float) -> float:
        for t in self.T:
            if self.min_free(t, t + dur) >= s:
                return t
        return INF  # pragma: no cover - the last step is the whole machine
