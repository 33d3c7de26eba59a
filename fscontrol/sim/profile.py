"""Free processors over time: the availability profile of a backfilling scheduler.

A step function kept as two parallel lists, breakpoint times ``T`` (strictly increasing) and free
counts ``F``: ``F[k]`` processors are free on ``[T[k], T[k+1])`` and the last step lasts forever.
The list is canonical (no two neighbouring steps have the same count), so equal profiles have
equal lists. Every operation touches only the steps of the interval it is given (found by
bisection) plus at most two insertions and two deletions: nothing is rebuilt per event.

API (times are floats, ``math.inf`` allowed as an end; sizes are ints, processors or nodes):

    p = Profile(capacity, now)           # the whole machine free from ``now`` on
    p.earliest(size, duration, after)    # earliest t >= after with `size` free on [t, t+duration)
    p.reserve(start, end, size)          # take `size` on [start, end)  (ProfileError if not free)
    p.release(start, end, size)          # give them back (a job ended early, a re-plan)
    p.improve(size, duration, held, after)  # a held reservation's earliest earlier start (compression)
    p.move(held, start, duration, size)  # ... and the move there (trusts improve's answer)
    p.free_at(t); p.min_free(a, b); p.max_free(a, b); p.fits(start, duration, size)
    p.advance(now)                       # drop the past: the profile now starts at ``now``
    p.steps()                            # [(T[k], F[k]), ...] for tests and display
    p.copy()                             # an independent copy, to try placements

Conventions: intervals are half-open ``[start, end)``; a zero-length interval ``[t, t)`` asks
for (or takes) nothing except that ``earliest`` and ``fits`` with duration 0 need ``size`` free
at the instant ``t``. Times before the origin (the last ``advance``) are read as the origin: a
running job's reservation ``[its start, its end)`` can be released after ``advance`` passed its
start. A reservation may end at ``math.inf``.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

from ..errors import ProfileError

INF = math.inf

__all__ = ["Profile"]


class Profile:
    """Free processors over time (a step function); see the module docstring for the API."""

    __slots__ = ("F", "T", "capacity")

    def __init__(self, capacity: int, now: float = 0.0) -> None:
        if capacity < 0:
            raise ProfileError(f"a profile needs a capacity >= 0, not {capacity}")
        self.capacity = capacity
        self.T: list[float] = [now]
        self.F: list[int] = [capacity]

    def copy(self) -> Profile:
        """An independent copy (to try placements without touching this one)."""
        q = Profile.__new__(Profile)
        q.capacity, q.T, q.F = self.capacity, list(self.T), list(self.F)
        return q

    # --- reading -----------------------------------------------------------------------
    @property
    def origin(self) -> float:
        """The earliest time the profile knows (the last ``advance``)."""
        return self.T[0]

    def __len__(self) -> int:
        return len(self.T)

    def __repr__(self) -> str:
        return f"Profile(capacity={self.capacity}, steps={self.steps()!r})"

    def steps(self) -> list[tuple[float, int]]:
        """The breakpoints and the free count from each one on."""
        return list(zip(self.T, self.F))

    def free_at(self, t: float) -> int:
        """Processors free at instant ``t`` (the origin's count for earlier times)."""
        k = bisect_right(self.T, t) - 1
        return self.F[k if k > 0 else 0]

    def min_free(self, start: float, end: float) -> int:
        """The fewest processors free at any instant of ``[start, end)`` (``free_at(start)`` if empty)."""
        T, F = self.T, self.F
        k = bisect_right(T, start) - 1
        if k < 0:
            k = 0
        m = F[k]
        k += 1
        n = len(T)
        while k < n and T[k] < end:
            if F[k] < m:  # noqa: PLR1730 - hot loop: a comparison is cheaper than min()
                m = F[k]
            k += 1
        return m

    def max_free(self, start: float, end: float) -> int:
        """The most processors free at any instant of ``[start, end)`` (``free_at(start)`` if empty)."""
        T, F = self.T, self.F
        k = bisect_right(T, start) - 1
        if k < 0:
            k = 0
        m = F[k]
        k += 1
        n = len(T)
        while k < n and T[k] < end:
            if F[k] > m:  # noqa: PLR1730
                m = F[k]
            k += 1
        return m

    def fits(self, start: float, duration: float, size: int) -> bool:
        """Are ``size`` processors free on ``[start, start + duration)``?"""
        return self.min_free(start, start + duration) >= size

    def earliest(self, size: int, duration: float, after: float, by: float = INF) -> float:
        """The earliest ``t >= after`` (and >= the origin) with ``size`` free on ``[t, t + duration)``.

        ``by``: stop looking at candidates from ``by`` on and return ``by`` (meant for a re-plan:
        "earlier than the reservation I hold, or keep it"; ``by`` itself is not checked, and an
        ``after`` at or past ``by`` returns ``by`` at once).
        Returns ``math.inf`` when no such time exists (a reservation to infinity in the way).
        """
        if size > self.capacity:
            raise ProfileError(f"{size} processors requested on a machine of {self.capacity}")
        if size < 0 or duration < 0:
            raise ProfileError(f"a job needs a size and duration >= 0, not {size} and {duration}")
        T, F = self.T, self.F
        n = len(T)
        if after <= T[0]:
            after = T[0]
            k = 0
        else:
            k = bisect_right(T, after) - 1
        cand = after
        if cand >= by:
            return by
        end = cand + duration
        while True:
            if F[k] < size:
                k += 1
                if k == n:
                    return by  # blocked for ever (math.inf unless `by` was given)
                cand = T[k]
                if cand >= by:
                    return by
                end = cand + duration
            elif k + 1 == n or T[k + 1] >= end:
                return cand
            else:
                k += 1

    def improve(self, size: int, duration: float, held: float, after: float) -> float:
        """For a job that holds ``[held, held + duration)`` with ``size`` processors: the earliest
        start ``>= after`` it could move to once it gives that back, or ``held`` if there is none
        earlier. Changes nothing (the caller releases and reserves only when the job moves).

        Same answer as ``release(held, held + duration, size)``, ``earliest(size, duration,
        after, by=held)``, ``reserve`` back, without the three edits: a window ``[c, c + duration)``
        with ``c < held`` ends inside the held one, where the freed processors are at least
        ``size``, so only ``[c, held)`` needs checking against the profile as it is.
        """
        T, F = self.T, self.F
        n = len(T)
        if after <= T[0]:
            after = T[0]
            k = 0
        else:
            k = bisect_right(T, after) - 1
        cand = after
        if cand >= held:
            return held
        end = cand + duration
        if end > held:
            end = held
        while True:
            if F[k] < size:
                k += 1
                if k == n:
                    return held
                cand = T[k]
                if cand >= held:
                    return held
                end = cand + duration
                if end > held:
                    end = held
            elif k + 1 == n or T[k + 1] >= end:
                return cand
            else:
                k += 1

    # --- writing -----------------------------------------------------------------------
    def _split(self, t: float) -> int:
        """Index of a breakpoint at ``t`` (inserted if needed; ``t`` after the origin)."""
        T = self.T
        k = bisect_left(T, t)
        if k < len(T) and T[k] == t:
            return k
        T.insert(k, t)
        self.F.insert(k, self.F[k - 1])
        return k

    def _add(self, start: float, end: float, delta: int) -> None:
        T, F = self.T, self.F
        if start < T[0]:
            start = T[0]
        if end <= start or delta == 0:
            return
        # check first (an error leaves the profile as it was), then change
        k = bisect_right(T, start) - 1
        n = len(T)
        lo, hi = F[k], F[k]
        k += 1
        while k < n and T[k] < end:
            f = F[k]
            if f < lo:  # noqa: PLR1730
                lo = f
            elif f > hi:  # noqa: PLR1730
                hi = f
            k += 1
        if lo + delta < 0:
            raise ProfileError(f"cannot reserve {-delta} on [{start:g}, {end:g}): only {lo} free at some instant")
        if hi + delta > self.capacity:
            raise ProfileError(f"cannot release {delta} on [{start:g}, {end:g}): {hi} of {self.capacity} already free at some instant")
        self._apply(start, end, delta)

    def _apply(self, start: float, end: float, delta: int) -> None:
        """Add ``delta`` on ``[start, end)`` (start at or after the origin, end > start), unchecked."""
        T, F = self.T, self.F
        i = self._split(start)
        j = self._split(end) if end != INF else len(T)
        for k in range(i, j):
            F[k] += delta
        # keep the list canonical: only the two boundaries can have become equal to a neighbour
        if j < len(T) and F[j] == F[j - 1]:
            del T[j], F[j]
        if i > 0 and F[i] == F[i - 1]:
            del T[i], F[i]

    def reserve(self, start: float, end: float, size: int) -> None:
        """Take ``size`` processors on ``[start, end)``; ProfileError (and no change) if they are not free."""
        if size < 0:
            raise ProfileError(f"cannot reserve a negative size ({size})")
        self._add(start, end, -size)

    def release(self, start: float, end: float, size: int) -> None:
        """Give back ``size`` processors on ``[start, end)`` (a job that ended early, a reservation
        being re-planned); ProfileError (and no change) if that would exceed the capacity."""
        if size < 0:
            raise ProfileError(f"cannot release a negative size ({size})")
        self._add(start, end, size)

    def move(self, held: float, start: float, duration: float, size: int) -> None:
        """Move a reservation of ``size`` from ``[held, held + duration)`` to ``[start, start +
        duration)`` with ``start = improve(size, duration, held, now)`` (the compression step).

        Not checked again (``improve`` found the room): two edits instead of release and reserve
        with their checks. ``start`` must be at or after the origin.
        """
        if start == held or size == 0 or duration <= 0:
            return
        self._apply(held if held > self.T[0] else self.T[0], held + duration, size)
        self._apply(start, start + duration, -size)

    def advance(self, now: float) -> None:
        """Forget the profile before ``now`` (a no-op for times at or before the origin)."""
        T, F = self.T, self.F
        if now <= T[0]:
            return
        k = bisect_right(T, now) - 1
        if k:
            del T[:k], F[:k]
        T[0] = now
