"""Each user association's outlook under Fair Tree: where it stands, what moves it, and its rank
after each coming decay pass. Pure maths (no Slurm, no clock, no files), for one user or for every
user of the tree at once.

Under Fair Tree a user's factor is a rank: F = rank / N (fscontrol.model.fairtree). What a user can
act on is the comparisons that place them, one per level of the tree: at each level their own
account (or themselves) against its siblings, by LevelFS = S / U (S the share of the level's
shares, U the share of the parent's usage).

* Decay multiplies every association's usage by the same factor, so it changes no LevelFS and no
  rank: idle time alone never moves anyone. A user moves up only as others are charged.
* The association just above, met at level M through sibling nodes A (the user's side) and B
  (theirs): A passes B once B's side has used x = S_B u_A / S_A - u_B more (u: RawUsage; the
  parent's usage cancels). The same from below: the user may use y = S_A u_C / S_C - u_A more
  before the next lower sibling C passes A, at every level of the user's path; the smallest is
  the budget.
* When: the jobs running at the snapshot are charged pass by pass to their time limits, everyone's
  usage decays, and the tree is ranked again after each pass.

A rank depends on everyone's usage, so a user's outlook reads the whole tree. The agent computes
every user's at publish time (export.publish) in O(n log n) per tree plus one ranking per projected
pass; a user's forecast then reads only its own row (forecast.fairtree).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from fscontrol.model.decay import decay_factor_per_second
from fscontrol.model.fairshare import ROOT, Key, build_tree
from fscontrol.model.fairtree import FairTree
from fscontrol.records import ShareRow

HOUR = 3600.0
MAX_POINTS = 120  # tree rankings per projection, fewer on big trees (bench/bench_parse.py: ~0.3 s a ranking at 100k)
OUTLOOK_AGE_S = HOUR  # a projection covers at least this long after its snapshot (the forecast's default max age)


def max_points(n_assocs: int) -> int:
    return max(12, min(MAX_POINTS, int(3_000_000 / max(1, n_assocs))))


@dataclass(frozen=True, slots=True)
class Step:
    """One level of a user's path: their node there and its place among its siblings."""

    level_of: str  # the account whose children compete here ("root" at the top)
    name: str  # the node: an account, or the user themselves at the last level
    is_user: bool
    level_fs: float
    place: int  # 1 = the highest LevelFS among the siblings
    siblings: int


@dataclass(frozen=True, slots=True)
class Neighbour:
    """The user association ranked next above (or below) and where the two paths meet."""

    key: Key
    rank: int
    level_of: str  # the account under which the two paths part
    mine: str  # the user's node there (an account, or the user)
    theirs: str  # theirs
    my_level_fs: float
    their_level_fs: float
    usage: float | None  # above: their side's extra usage that lets the user pass;
    #                      below: the user's extra usage before they are passed (billing-seconds)


@dataclass(frozen=True, slots=True)
class RankPoint:
    in_s: float  # seconds after the snapshot
    rank: int
    fairshare: float


@dataclass(frozen=True, slots=True)
class Plan:
    """The passes a projection ranks the tree at: `points` of them, the first `first_pass_in_s`
    after the snapshot, then every `period_s` x `step` (each point charges `step` passes as one
    interval). `points` is 0 where the cluster runs no decay passes."""

    first_pass_in_s: float
    period_s: float
    step: int
    points: int

    def at(self, i: int) -> float:
        return self.first_pass_in_s + i * self.period_s * self.step


def plan(*, period_s: float, taken: float, next_pass_at: float | None, jobs_left: Sequence[float], n_rows: int,
         now: float, horizon_s: float | None = None) -> Plan:
    """The passes a forecast made at `now` projects: from the snapshot, the passes since it (at
    least OUTLOOK_AGE_S of them, so one projection serves every forecast while the snapshot is
    fresh), then `horizon_s` past now (default: 12 passes, or twice the longest time left of a
    running job, at most a day). The phase comes from slurmctld's next pass when the agent knew it,
    else within one pass."""
    first_in = (float(next_pass_at) - taken) if next_pass_at else period_s
    while period_s > 0 and first_in <= 0:
        first_in += period_s
    ahead = horizon_s if horizon_s is not None else min(86400.0, max(12 * period_s, 2 * max(jobs_left, default=0.0)))
    horizon = max(OUTLOOK_AGE_S, now - taken) + ahead
    passes = 0 if period_s <= 0 else max(1, int((horizon - first_in) // period_s) + 1)
    step = max(1, math.ceil(passes / max_points(n_rows))) if passes else 1
    return Plan(first_in, period_s, step, math.ceil(passes / step) if passes else 0)


class TreeIndex:
    """A FairTree indexed for per-user questions in O(log n) each: the associations by key, each
    fs parent's children by LevelFS, and the ranking's nearest better and worse neighbours."""

    def __init__(self, ft: FairTree):
        self.ft = ft
        self.by = ft.by_key()
        groups: dict[str, list] = {}
        for order, a in enumerate(ft.assocs):
            if a.key != ROOT:
                groups.setdefault(a.fs_parent, []).append((a.level_fs, order, a))
        self._lfs: dict[str, list[float]] = {}  # each group's LevelFS, ascending
        self._lower_lfs: dict[str, list[float]] = {}  # the same, FairShare=parent accounts left out
        self._first_at: dict[str, dict[float, Key]] = {}  # of those, the first (sshare's order) at each LevelFS
        for fs, members in groups.items():
            self._lfs[fs] = sorted(m[0] for m in members)
            passable = [m for m in members if not m[2].shares_parent]
            self._lower_lfs[fs] = sorted(m[0] for m in passable)
            first: dict[float, Key] = {}
            for lf, _, a in passable:  # in sshare's order: the first one seen at a value stays
                first.setdefault(lf, a.key)
            self._first_at[fs] = first
        # the nearest user association before (after) each in the walk with a higher (lower) rank
        walk = list(ft.ranking)
        ranks = [self.by[k].rank for k in walk]
        self._above: dict[Key, Key | None] = {}
        self._below: dict[Key, Key | None] = {}
        stack: list[int] = []
        for i, r in enumerate(ranks):
            while stack and ranks[stack[-1]] <= r:
                stack.pop()
            self._above[walk[i]] = walk[stack[-1]] if stack else None
            stack.append(i)
        stack = []
        for i in range(len(walk) - 1, -1, -1):
            r = ranks[i]
            while stack and ranks[stack[-1]] >= r:
                stack.pop()
            self._below[walk[i]] = walk[stack[-1]] if stack else None
            stack.append(i)

    def node_path(self, key: Key) -> list[Key]:
        """The nodes from the first level below root down to `key`, following fs parents."""
        path = [key]
        while True:
            a = self.by[path[-1]]
            up = (a.fs_parent, "")
            if up == ROOT or not a.fs_parent:
                break
            path.append(up)
        return list(reversed(path))

    def explain(self, key: Key) -> list[Step]:
        """The user's path from the top level down, with their node's place at each level."""
        steps = []
        for node in self.node_path(key):
            a = self.by[node]
            lfs = self._lfs[a.fs_parent]
            higher = len(lfs) - bisect_right(lfs, a.level_fs)
            steps.append(Step(a.fs_parent or "root", node[1] or node[0], bool(node[1]), a.level_fs, higher + 1, len(lfs)))
        return steps

    def meet(self, mine: Key, theirs: Key) -> tuple[Key, Key]:
        """The two sibling nodes under the first common fs ancestor of two user associations."""
        a, b = self.node_path(mine), self.node_path(theirs)
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        return a[i], b[i]

    def usage_to_pass(self, low: Key, high: Key) -> float | None:
        """The usage `high`'s side must gain for `low` to rank above it (siblings; None: never,
        e.g. `low` has no shares, or `high` is a FairShare=parent account)."""
        lo, hi = self.by[low], self.by[high]
        if lo.norm_shares <= 0 or lo.raw_usage <= 0:
            return 0.0 if lo.norm_shares > 0 else None  # no usage: LevelFS inf, already level or above
        if hi.shares_parent:
            return None
        return max(0.0, hi.norm_shares * lo.raw_usage / lo.norm_shares - hi.raw_usage)

    def neighbours(self, key: Key) -> tuple[Neighbour | None, Neighbour | None]:
        """The next user association above `key` (the first with a higher rank, in walk order) and
        the next below, with the usage that would swap each pair."""
        out: list[Neighbour | None] = []
        for other, up in ((self._above[key], True), (self._below[key], False)):
            if other is None:
                out.append(None)
                continue
            a, b = self.meet(key, other)
            usage = self.usage_to_pass(a, b) if up else self.usage_to_pass(b, a)
            out.append(Neighbour(other, self.by[other].rank or 0, self.by[a].fs_parent or "root", a[1] or a[0],
                                 b[1] or b[0], self.by[a].level_fs, self.by[b].level_fs, usage))
        return out[0], out[1]

    def budget(self, key: Key) -> float | None:
        """The usage this user association can add before any association now below it passes it:
        at every level of its path, its node against the next lower sibling (None: nobody below)."""
        best: float | None = None
        for node in self.node_path(key):
            a = self.by[node]
            lfs = self._lower_lfs[a.fs_parent]
            i = bisect_left(lfs, a.level_fs)  # the siblings strictly below
            if i == 0:
                continue
            nxt = self._first_at[a.fs_parent][lfs[i - 1]]
            y = self.usage_to_pass(nxt, node)
            if y is not None and (best is None or y < best):
                best = y
        return best


def _passes(rows: Sequence[ShareRow], running: Mapping[Key, Sequence[tuple[float | None, float]]], p: Plan,
            half_life_s: float) -> Iterator[tuple[float, dict[Key, int]]]:
    """(seconds after the snapshot, every user association's rank) after each pass of `p`.

    `running`: by user association, its running jobs as (seconds to the time limit or None, rate
    in billing-seconds per second). Each pass decays every usage by f^P and charges each job
    rate x dt x f^dt for its run time dt since the last pass (decay.py: Slurm's step), to the
    association and every ancestor; the snapshot's usage is taken as of the pass before the
    first one. Nobody starts a new job."""
    from fscontrol.model.fairtree import (children_lists, held_shares, level_values, projected_keys, rank_users,
                                          ranking_keys, tie_groups)

    t = build_tree(rows)
    held = held_shares(t, "fair_tree")[0]  # the NormShares slurmctld ranks with
    kids = children_lists(t)
    # siblings slurmctld holds exactly tied now (sshare's LevelFS) stay tied while usage grows alike
    ties = tie_groups(ranking_keys(t, level_values(t, shares=held)[2], kids), kids)
    slack = 1.0  # each usage is known to within one unit (sshare truncates), decaying with it
    f = decay_factor_per_second(half_life_s)
    usage = {k: float(r.raw_usage) for k, r in t.rows.items()}
    prev = p.first_pass_in_s - p.period_s * p.step
    for n in range(p.points):
        at = p.at(n)
        dt = at - prev
        decay = f**dt
        for k in usage:
            usage[k] *= decay
        slack *= decay
        for key, jobs in running.items():
            if key not in t.rows:
                continue
            charge = 0.0
            for left, rate in jobs:  # running at the snapshot: since before the last pass, to its limit
                ran = max(0.0, (at if left is None else min(at, left)) - prev)
                charge += rate * ran * f**ran
            a: Key | None = key
            while a is not None:
                usage[a] += charge
                a = t.parent.get(a)
        lf = level_values(t, usage, held)[2]
        keys = projected_keys(lf, usage, slack, ties) if ties else None
        ranks, _ = rank_users(t, lf, kids, keys)  # one tree, re-ranked under the new usage
        yield at, ranks
        prev = at


def project_ranks(rows: Sequence[ShareRow], running: Mapping[Key, Sequence[tuple[float | None, float]]],
                  watch: Sequence[Key], *, passes: int, period_s: float, half_life_s: float,
                  first_pass_in_s: float) -> dict[Key, list[RankPoint]]:
    """Rank and F of the `watch`ed user associations after each of the next `passes` decay
    passes, the first `first_pass_in_s` after the snapshot, then every `period_s` (see _passes)."""
    n_users = sum(1 for r in rows if r.user)
    out: dict[Key, list[RankPoint]] = {k: [] for k in watch}
    for at, ranks in _passes(rows, running, Plan(first_pass_in_s, period_s, 1, passes), half_life_s):
        for k in watch:
            out[k].append(RankPoint(at, ranks[k], ranks[k] / n_users))
    return out


def rank_changes(rows: Sequence[ShareRow], running: Mapping[Key, Sequence[tuple[float | None, float]]],
                 watch: Sequence[Key], p: Plan, half_life_s: float,
                 rank0: Mapping[Key, int | None]) -> dict[Key, list[tuple[int, int]]]:
    """For each `watch`ed user association, the points of `p` at which its rank differs from the
    point before (from `rank0` before the first): (point, rank). Compact for every user at once."""
    out: dict[Key, list[tuple[int, int]]] = {k: [] for k in watch}
    last = {k: rank0.get(k) for k in watch}
    for i, (_, ranks) in enumerate(_passes(rows, running, p, half_life_s)):
        for k in watch:
            r = ranks[k]
            if r != last[k]:
                out[k].append((i, r))
                last[k] = r
    return out


def points(p: Plan, changes: Sequence[Sequence[int]], rank0: int | None, n_users: int) -> list[RankPoint]:
    """The rank at every point of `p`, from its changes (rank_changes)."""
    out, r, j = [], rank0, 0
    for i in range(p.points):
        while j < len(changes) and changes[j][0] <= i:
            r = changes[j][1]
            j += 1
        out.append(RankPoint(p.at(i), r or 0, (r or 0) / n_users))
    return out


def changes(pts: Sequence[RankPoint], rank0: int) -> list[RankPoint]:
    """The passes at which the rank moves."""
    out, last = [], rank0
    for pt in pts:
        if pt.rank != last:
            out.append(pt)
            last = pt.rank
    return out


@dataclass(frozen=True, slots=True)
class Outlook:
    """One user association's outlook: its place and path, its neighbours, its budget, and the
    rank changes over a Plan (None: no projection, the running jobs are not known per user)."""

    rank: int | None
    level_fs: float
    path: tuple[Step, ...]
    above: Neighbour | None
    below: Neighbour | None
    budget: float | None
    changes: tuple[tuple[int, int], ...] | None


def outlooks(ft: FairTree, rows: Sequence[ShareRow], running: Mapping[Key, Sequence[tuple[float | None, float]]] | None,
             watch: Sequence[Key], p: Plan, half_life_s: float) -> dict[Key, Outlook]:
    """The outlook of each `watch`ed user association (all of them at publish time: the tree is
    indexed once and ranked once per point of `p`)."""
    ix = TreeIndex(ft)
    ch = (rank_changes(rows, running, watch, p, half_life_s, {k: ix.by[k].rank for k in watch})
          if running is not None and p.points else None)
    out = {}
    for k in watch:
        above, below = ix.neighbours(k)
        out[k] = Outlook(ix.by[k].rank, ix.by[k].level_fs, tuple(ix.explain(k)), above, below, ix.budget(k),
                         None if ch is None else tuple(ch[k]))
    return out


def _num(x: float) -> float | None:
    return None if math.isinf(x) else x


def _inf(x: float | None) -> float:
    return math.inf if x is None else float(x)


def _nb_json(n: Neighbour | None) -> list | None:
    return None if n is None else [n.key[0], n.key[1], n.rank, n.level_of, n.mine, n.theirs, _num(n.my_level_fs),
                                   _num(n.their_level_fs), n.usage]


def _nb(x: Sequence | None) -> Neighbour | None:
    if x is None:
        return None
    return Neighbour((x[0], x[1]), int(x[2]), x[3], x[4], x[5], _inf(x[6]), _inf(x[7]), None if x[8] is None else float(x[8]))


def to_json(o: Outlook) -> dict:
    """An outlook as compact JSON (inf as null), for one published row."""
    return {"rank": o.rank, "lfs": _num(o.level_fs),
            "path": [[s.level_of, s.name, s.is_user, _num(s.level_fs), s.place, s.siblings] for s in o.path],
            "above": _nb_json(o.above), "below": _nb_json(o.below), "budget": o.budget,
            "changes": None if o.changes is None else [list(c) for c in o.changes]}


def from_json(d: Mapping) -> Outlook:
    return Outlook(d["rank"], _inf(d["lfs"]),
                   tuple(Step(s[0], s[1], bool(s[2]), _inf(s[3]), int(s[4]), int(s[5])) for s in d["path"]),
                   _nb(d["above"]), _nb(d["below"]), None if d["budget"] is None else float(d["budget"]),
                   None if d["changes"] is None else tuple((int(i), int(r)) for i, r in d["changes"]))


def plan_json(p: Plan, **extra) -> dict:
    return {"first_pass_in_s": p.first_pass_in_s, "period_s": p.period_s, "step": p.step, "points": p.points, **extra}


def plan_from_json(d: Mapping) -> Plan:
    return Plan(float(d["first_pass_in_s"]), float(d["period_s"]), int(d["step"]), int(d["points"]))
