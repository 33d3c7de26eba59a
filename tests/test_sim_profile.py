"""The availability profile (fscontrol.sim.profile): hand-worked cases, and random sequences of
operations checked against a brute-force reference (a plain list of reservations)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.errors import ProfileError
from fscontrol.sim.profile import Profile

INF = math.inf


class Brute:
    """The obvious model: a list of (start, end, size); free(t) = capacity - what covers t."""

    def __init__(self, capacity, now=0):
        self.cap, self.origin, self.res = capacity, now, []

    def free_at(self, t):
        t = max(t, self.origin)
        return self.cap - sum(s for a, b, s in self.res if a <= t < b)

    def points(self):
        return sorted({self.origin} | {x for a, b, _ in self.res for x in (a, b) if self.origin <= x < INF})

    def min_free(self, a, b):
        a = max(a, self.origin)
        return min(self.free_at(x) for x in [a] + [p for p in self.points() if a < p < b])

    def earliest(self, size, dur, after):
        after = max(after, self.origin)
        for c in sorted({after} | {p for p in self.points() if p > after}):
            if self.min_free(c, c + dur) >= size:
                return c
        return INF

    def reserve(self, a, b, s):
        a = max(a, self.origin)
        if b > a and s:
            self.res.append((a, b, s))

    def release(self, a, b, s):
        a = max(a, self.origin)
        if b > a and s:
            self.res.append((a, b, -s))

    def advance(self, now):
        self.origin = max(self.origin, now)

    def steps(self):
        out = []
        for p in self.points():
            f = self.free_at(p)
            if not out or out[-1][1] != f:
                out.append((p, f))
        return out


def test_a_hand_worked_profile():
    # 10 processors; 4 taken on [0, 5), 3 on [2, 8): free 6 on [0,2), 3 on [2,5), 7 on [5,8), then 10
    p = Profile(10, 0)
    p.reserve(0, 5, 4)
    p.reserve(2, 8, 3)
    assert p.steps() == [(0, 6), (2, 3), (5, 7), (8, 10)]
    assert [p.free_at(t) for t in (0, 1.9, 2, 4.99, 5, 7, 8, 1e9)] == [6, 6, 3, 3, 7, 7, 10, 10]
    assert p.earliest(5, 2, 0) == 0  # [0, 2) has 6
    assert p.earliest(5, 3, 0) == 5  # [0, 3) dips to 3 at t=2
    assert p.earliest(8, 1, 0) == 8
    assert p.earliest(3, 100, 1) == 1
    assert p.earliest(4, 1, 3) == 5
    assert p.earliest(5, 3, 0, by=4) == 4  # nothing before 4: keep what you hold
    assert p.min_free(1, 6) == 3 and p.fits(5, 3, 7) and not p.fits(4, 3, 7)
    p.release(0, 5, 4)
    assert p.steps() == [(0, 10), (2, 7), (8, 10)]
    q = p.copy()
    q.reserve(0, 1, 10)
    assert p.free_at(0) == 10 and q.free_at(0) == 0  # the copy is independent
    p.advance(6)
    assert p.steps() == [(6, 7), (8, 10)] and p.origin == 6
    p.release(2, 8, 3)  # a reservation that began before the origin: its past is gone
    assert p.steps() == [(6, 10)] and len(p) == 1


def test_reservations_to_infinity_and_zero_lengths():
    p = Profile(4, 0)
    p.reserve(3, INF, 4)
    assert p.steps() == [(0, 4), (3, 0)]
    assert p.earliest(1, 3, 0) == 0 and p.earliest(1, 3.5, 0) == INF
    assert p.earliest(0, 10, 0) == 0
    p.reserve(1, 1, 4)  # empty interval: nothing taken
    assert p.steps() == [(0, 4), (3, 0)]
    assert p.earliest(4, 0, 3) == INF and p.earliest(4, 0, 2) == 2  # an instant needs its processors
    p.release(3, INF, 4)
    assert p.steps() == [(0, 4)]


def test_errors_leave_the_profile_unchanged():
    p = Profile(10, 0)
    p.reserve(0, 5, 8)
    before = p.steps()
    with pytest.raises(ProfileError, match="only 2 free"):
        p.reserve(4, 6, 3)
    with pytest.raises(ProfileError, match="already free"):
        p.release(4, 6, 1)
    with pytest.raises(ProfileError, match="machine of 10"):
        p.earliest(11, 1, 0)
    with pytest.raises(ProfileError):
        p.reserve(0, 1, -1)
    with pytest.raises(ProfileError):
        Profile(-1)
    assert p.steps() == before


ops = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "release", "advance", "earliest"]),
        st.integers(0, 40),
        st.integers(0, 25),
        st.integers(0, 8),
        st.booleans(),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(ops, st.integers(0, 8))
def test_random_operations_match_the_brute_force_reference(seq, cap):
    p, b = Profile(cap, 0), Brute(cap, 0)
    held = []  # reservations we may give back
    for op, t, d, s, forever in seq:
        s = min(s, cap)
        if op == "reserve":
            end = INF if forever else t + d
            if b.min_free(t, end) >= s and end > max(t, b.origin):
                p.reserve(t, end, s)
                b.reserve(t, end, s)
                held.append((t, end, s))
            elif s and end > max(t, b.origin):
                with pytest.raises(ProfileError):
                    p.reserve(t, end, s)
        elif op == "release" and held:
            a, e, sz = held.pop(t % len(held))
            p.release(a, e, sz)
            b.release(a, e, sz)
        elif op == "advance":
            p.advance(t)
            b.advance(t)
        else:
            assert p.earliest(s, d, t) == b.earliest(s, d, t)
            got = p.earliest(s, d, t)
            if got != INF:
                assert p.fits(got, d, s)
            if held:
                a, e, sz = held[t % len(held)]
                if e != INF and a >= b.origin:
                    q = p.copy()  # give the reservation back on a copy, search, compare
                    q.release(a, e, sz)
                    want = q.earliest(sz, e - a, t, by=a)
                    assert p.improve(sz, e - a, a, t) == want
                    if want < a and want >= b.origin:  # and move there, as the compression does
                        p.move(a, want, e - a, sz)
                        b.release(a, e, sz)
                        b.reserve(want, want + e - a, sz)
                        held[t % len(held)] = (want, want + e - a, sz)
            by = t + 3
            assert p.earliest(s, d, t, by=by) == (by if max(t, b.origin) >= by else min(b.earliest(s, d, t), by))
        assert p.steps() == b.steps()  # canonical: the same function, the same list
        for x in range(0, 45, 3):
            assert p.free_at(x) == b.free_at(x)
            assert p.min_free(x, x + d) == b.min_free(x, x + d)
            assert p.max_free(x, x + d) == max(b.free_at(y) for y in [max(x, b.origin)] + [q for q in b.points() if x < q < x + d])
        assert all(0 <= f <= cap for _, f in p.steps())
