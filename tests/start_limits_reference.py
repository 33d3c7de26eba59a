"""The start estimate's limits, by brute force (the reference for forecast/startlimits.Gate): every
held job is tested anew whenever it is met, and past bf_window every held job is offered again at
every event, in the plan's order. The same starts as Gate's, at a cost that grows with the held
jobs x the events (tests/test_start_limits.py compares them on random queues)."""

from __future__ import annotations

import heapq

from fscontrol.model.acctpolicy import Counts


class NaiveGate:
    def __init__(self, counts: Counts) -> None:
        self.c = counts.fresh()
        self.held: set[int] = set()  # (a set: Gate keeps one entry per job)
        self.cheld: set[int] = set()  # (empty: every job is tested anew)
        self.opened: set[int] = set()
        self.key = None
        # (no cache: the planner's first test of Gate.over, hx[i] >= 0, never holds here)
        self.hx = [-1] * len(self.c.cpus)
        self.hd: list[int] = []
        self.downs: list[int] = []

    def active(self, waiting, started, order):
        return waiting  # (the whole queue read at each cycle)

    def over(self, i: int) -> bool:
        if self.c.blocking(i) >= 0:
            self.held.add(i)
            return True
        self.held.discard(i)
        return False

    def pre(self, i: int) -> bool:
        return self.over(i) and self.c.count_blocked(i)

    def count_blocked(self, i: int) -> bool:
        return self.c.count_blocked(i)

    def add(self, k: int) -> None:
        self.c.add(k)

    def ended(self, k: int) -> None:
        self.c.add(k, -1)
        if self.held:
            self.opened.add(0)

    def reorder(self, key) -> None:
        self.key = key

    def candidates(self) -> list:
        self.opened.clear()
        out = [(i if self.key is None else self.key(i), i, 0) for i in self.held]
        heapq.heapify(out)
        return out

    def next_free(self, heap: list, before: float) -> int:
        while heap and heap[0][0] < before:
            _, i, _ = heapq.heappop(heap)
            if i in self.held and not self.over(i):
                return i
        return -1
