"""Fair Tree's ranking for the multifactor engine, incremental (issue #31 item 3).

`fairtree.level_values` + `fairtree.rank_users` rank the whole tree from dicts keyed by
(account, user); the engine ranks at every decay pass with a pending job, on the same tree, from its
usage list. `Ranker.update` gives the same ranks (the same float operations, the same stable sort,
the same walk) from index lists, and redoes only what changed since its last call:

- only the associations charged since (and their ancestors) are compared with the last values; a
  sibling group (an fs parent's children) is looked at only when the usage of the parent or of one
  of its children changed (LevelFS = S / (U / P): nothing else enters it). The engine keeps usage
  scaled by the decay (true usage = value x G), so a decay pass changes no rank: only charges do;
- a group of FAST_MIN or more plain children (no FairShare=parent, no share 0, all users or all
  accounts) is kept in the order of K = S / U, which does not depend on the parent's usage P: a
  charge to the root moves every LevelFS of its children by one common scale, and re-evaluating
  and re-sorting them all at every charge was most of the cost. Only the children whose own usage
  changed are moved (bisection), or updated in place when they stay clear of their neighbours.
  Why the order is exact: for normal numbers LevelFS = fl(S / fl(U / P)) = (S P / U)(1 + e1) /
  (1 + e2), |e| <= u = 2^-53, so two children's LevelFS ratio is within (1 +- 4u) of their exact
  S/U ratio, and K within (1 +- u) of it: two neighbours whose K differ by more than the relative
  MARGIN (1e-12) compare the same way, strictly (no tie), whatever P. Neighbours closer than that
  (exact or near ties) form a cluster whose LevelFS are evaluated at each call and sorted as the
  full sort does (stable in the group's order); the children with no usage (LevelFS inf, all
  tied) come first, in the group's order. A value out of the safe range (LO..HI: no underflow or
  overflow), a parent with no usage, or a first LevelFS of NO_VAL (the walk's start) sends the
  group to the full evaluation (every LevelFS, the stable sort), and its K order is rebuilt;
- the walk (slurmctld's `_calc_tree_fs`) is redone only over the spans of the one group whose
  order or ties changed (each moved child from its old place to its new one, each cluster), from
  the walk's state there (the rank of the user before, the users before), and on while that state
  differs from the last walk's and the next user is tied to the one before; more than one changed
  group: the whole walk. It reads the ties the groups recorded, never the LevelFS (the fast path
  leaves those of unmoved children stale).

`update` returns only the users whose F changed (every user at the first call); `F` holds them
all. tests/test_sim_ftrank_fast.py compares it with the previous ranker (tests/ftrank_reference.py)
and with fairtree.rank_users at every step of random usage sequences, with exact and near ties.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress
from operator import ne

from fscontrol.model import fairtree

NO_VAL = fairtree.NO_VAL
INF = math.inf
MARGIN = 1.0 + 1e-12  # neighbours' K must differ by more than this factor (see the module's note)
LO, HI = 1e-250, 1e250  # the safe range of K, LevelFS and U / P on the fast path


class Ranker:
    """Ranks of the user associations of one tree (`keys`: the engine's association order, root
    first; `shares`: fairtree.fair_tree_shares; `kids`: fairtree.children_lists)."""

    FAST_MIN = 16  # the smallest group kept in K order (the tests lower it to reach every path)

    def __init__(self, t_tree: fairtree.Tree, keys: Sequence[tuple[str, str]],
                 shares: Mapping[tuple[str, str], float], kids: Mapping[tuple[str, str], list[tuple[str, str]]]) -> None:
        kix = {k: i for i, k in enumerate(keys)}
        na = len(keys)
        self.na = na
        self.n_users = sum(1 for k in t_tree.order if k[1])
        self.user = [bool(k[1]) for k in keys]
        self.fp = [-1] + [kix[t_tree.fs_parent[k]] for k in keys[1:]]
        par = [-1] + [kix[t_tree.parent[k]] for k in keys[1:]]
        chains: list[tuple[int, ...]] = []
        for i in range(na):  # an association and its ancestors: what a charge to it changes
            up = [i]
            while par[up[-1]] >= 0:
                up.append(par[up[-1]])
            chains.append(tuple(up))
        self.chains = chains
        self.s = [0.0] + [float(shares[k]) for k in keys[1:]]
        self.sp = [False] + [bool(t_tree.rows[k].shares_parent) for k in keys[1:]]
        # each fs parent's children, in children_lists' order (the stable sort's tie order)
        self.kids: list[list[int]] = [[] for _ in range(na)]
        for pk, cks in kids.items():
            self.kids[kix[pk]] = [kix[c] for c in cks]
        self.ix = [0] * na  # a child's place in its parent's list
        for ch in self.kids:
            for j, k in enumerate(ch):
                self.ix[k] = j
        self.cnt = [1 if u else 0 for u in self.user]  # the users under each association (fs tree)
        for i in reversed(range(1, na)):
            self.cnt[self.fp[i]] += self.cnt[i]
        self.parents = [p for p in range(na) if self.kids[p]]
        self.plain = [all(not self.sp[k] and self.s[k] != 0.0 for k in ch) for ch in self.kids]
        self.mixed = [len({self.user[k] for k in ch}) > 1 for ch in self.kids]
        self.one = [len(ch) == 1 and self.plain[p] for p, ch in enumerate(self.kids)]
        self.unit = [all(self.cnt[k] == 1 for k in ch) for ch in self.kids]  # (a user each: place = users)
        self.fast_ok = [bool(ch) and self.plain[p] and not self.mixed[p] for p, ch in enumerate(self.kids)]
        self.lf = [0.0] * na
        self.sorted: list[list[int]] = [list(c) for c in self.kids]
        self.ties: list[list[bool]] = [[] for _ in range(na)]
        # the fast path's state of a group (None: not kept): the children with no usage (in the
        # group's order), the others by K = S/U decreasing, and -K of those (ascending, to bisect)
        self.kv = [0.0] * na
        self.infb: list[list[int] | None] = [None] * na
        self.kfin: list[list[int]] = [[] for _ in range(na)]
        self.kneg: list[list[float]] = [[] for _ in range(na)]
        self.close: list[set[int]] = [set() for _ in range(na)]  # K-order children close to their next
        self.cspans: list[list[tuple[int, int]]] = [[] for _ in range(na)]  # the clusters' places, last given
        self.synced = [False] * na  # the group's order and ties are its K order's (the fast path's last)
        self.smin = [min((self.s[k] for k in ch), default=0.0) for ch in self.kids]
        self.smax = [max((self.s[k] for k in ch), default=0.0) for ch in self.kids]
        self.last: list[float] | None = None
        n = self.n_users
        self.F: dict[int, float] = {}  # every user's F (rank / users)
        self.rk: dict[int, int] = {}  # every user's rank
        self.seq = [0] * n  # the users in the walk's order
        self.rpos = [0] * n  # the rank at each place of the walk
        self.stats = {"stay": 0, "fast": 0, "full": 0, "span": 0, "walk": 0}

    # ------------------------------------------------------------------ groups
    def _full(self, p: int, vals: Sequence[float]) -> bool:
        """Re-evaluate group p in full (every child's LevelFS, fairtree._level_fs on level_values'
        U) and re-sort it; True when its order or its ties changed."""
        self.stats["full"] += 1
        lf = self.lf
        s, sp, user = self.s, self.sp, self.user
        pu = vals[p]
        ch = self.kids[p]
        if len(ch) == 1 and self.plain[p]:  # (one child: its order cannot change, only its lead tie)
            k = ch[0]
            u = vals[k] / pu if pu > 0 else 0.0
            v = lf[k] = INF if u == 0.0 else s[k] / u
            lead1 = NO_VAL == v
            if self.ties[p] == [lead1]:
                return False
            self.ties[p] = [lead1]
            return True
        if self.plain[p]:  # (no FairShare=parent child, no share 0: the general case below, fewer tests)
            if pu > 0:
                for k in ch:
                    u = vals[k] / pu
                    lf[k] = INF if u == 0.0 else s[k] / u
            else:
                for k in ch:
                    lf[k] = INF  # (u = 0.0)
        else:
            for k in ch:
                if sp[k]:
                    v = INF if user[k] else NO_VAL
                elif s[k] == 0.0:
                    v = 0.0
                else:
                    u = vals[k] / pu if pu > 0 else 0.0
                    v = INF if u == 0.0 else s[k] / u
                lf[k] = v
        if len(ch) == 1:
            order = ch
        elif self.mixed[p]:
            # rank_users' sort: higher LevelFS first, users before accounts on a tie, else stable
            order = sorted(ch, key=lambda k: (-lf[k], 0 if user[k] else 1))
        else:  # (all users or all accounts: by LevelFS alone; reverse=True keeps the sort stable)
            order = sorted(ch, key=lf.__getitem__, reverse=True)
        ties = [lf[a] == lf[b] for a, b in zip(order, order[1:])]
        ties.append(NO_VAL == lf[order[0]])  # (the walk's prev starts at NO_VAL)
        if self.fast_ok[p] and len(ch) >= self.FAST_MIN:
            self._build_fast(p, vals)
            # (the K order is the order given: the next fast call may walk only what it moves)
            self.synced[p] = self.infb[p] is not None and self._implied(p, vals) == (order, ties)
        if order == self.sorted[p] and ties == self.ties[p]:
            return False
        self.sorted[p] = list(order)
        self.ties[p] = ties
        return True

    def _build_fast(self, p: int, vals: Sequence[float]) -> None:
        """Group p's K order from the usage `vals` (none when a K is out of the safe range)."""
        s, kv = self.s, self.kv
        self.infb[p] = None
        inf: list[int] = []
        fin: list[int] = []
        for k in self.kids[p]:
            v = vals[k]
            if v == 0.0:
                kv[k] = INF
                inf.append(k)
                continue
            x = kv[k] = s[k] / v
            if not LO <= x <= HI:
                return
            fin.append(k)
        fin.sort(key=kv.__getitem__, reverse=True)
        self.close[p] = {a for a, b in zip(fin, fin[1:]) if not kv[a] > kv[b] * MARGIN}
        self.infb[p] = inf
        self.kfin[p] = fin
        self.kneg[p] = [-kv[k] for k in fin]
        self.cspans[p] = []

    def _fast(self, p: int, vals: Sequence[float], ch: list[int]) -> list[tuple[int, int]] | None | bool:
        """Group p on the fast path after its children `ch` (and perhaps p) changed: the spans of
        places that may have moved (in order, apart), None when nothing did, False when the fast
        path cannot say (the caller evaluates the group in full)."""
        infb = self.infb[p]
        assert infb is not None
        kfin, kneg, kv, s, ix, close = self.kfin[p], self.kneg[p], self.kv, self.s, self.ix, self.close[p]
        ixg = ix.__getitem__
        pu = vals[p]
        if not 0.0 < pu < INF:
            return False
        ninf = len(infb)
        # each changed child's place in K order before any change
        olds: list[tuple[int, int]] = []
        for c in ch:
            x = kv[c]
            if x == INF:
                olds.append((bisect_left(infb, ix[c], key=ixg), c))
            else:
                j = bisect_left(kneg, -x)
                while kfin[j] != c:  # (equal K: the first of them, then on)
                    j += 1
                olds.append((ninf + j, c))
        olds.sort(reverse=True)
        if olds and self.synced[p]:
            # a child whose new K stays clear of its neighbours' (neither of them changed) keeps
            # its place and its ties: its K is updated where it is (most charges move nothing)
            stay: list[tuple[int, int, float]] = []
            nf = len(kfin)
            prevj = -2
            for j, c in reversed(olds):  # (by place, increasing)
                if j < ninf or j == prevj + 1:
                    stay = []
                    break
                prevj = j
                v = vals[c]
                if v == 0.0:
                    continue
                x = s[c] / v
                if not LO <= x <= HI:
                    continue
                j -= ninf
                if (j == 0 or kv[kfin[j - 1]] > x * MARGIN) and (j == nf - 1 or x > kv[kfin[j + 1]] * MARGIN):
                    stay.append((j, c, x))
            if stay:
                for j, c, x in stay:
                    kv[c] = x
                    kneg[j] = -x
                    if close:
                        close.discard(c)
                        if j:
                            close.discard(kfin[j - 1])
                if len(stay) == len(olds):
                    if not close and not self.cspans[p]:
                        if infb or NO_VAL != s[kfin[0]] / (vals[kfin[0]] / pu):
                            if kfin:
                                top, bot = -kneg[0] * pu, -kneg[-1] * pu
                                if LO <= bot and top <= HI and self.smin[p] / top >= LO and self.smax[p] / bot <= HI:
                                    self.stats["stay"] += 1
                                    return None
                    olds = []
                    ch = []
                else:
                    kept = {c for _, c, _ in stay}
                    olds = [o for o in olds if o[1] not in kept]
                    ch = [c for c in ch if c not in kept]
        # the others taken out (from the last place up, so that the places above stay)
        for j, c in olds:
            if j < ninf:
                del infb[j]
            else:
                j -= ninf
                del kfin[j]
                del kneg[j]
                if close:
                    close.discard(c)
                if j:  # (the neighbours that meet: is the one before close to its new next?)
                    a = kfin[j - 1]
                    if j < len(kfin) and not kv[a] > kv[kfin[j]] * MARGIN:
                        close.add(a)
                    elif close:
                        close.discard(a)
        # put back by the new K, each new neighbour pair checked as it forms
        for c in ch:
            v = vals[c]
            if v == 0.0:
                kv[c] = INF
                insort(infb, c, key=ixg)
                continue
            x = kv[c] = s[c] / v
            if not LO <= x <= HI:
                return False
            j = bisect_right(kneg, -x)
            if j:
                a = kfin[j - 1]
                if not kv[a] > x * MARGIN:
                    close.add(a)
                elif close:
                    close.discard(a)
            if j < len(kfin) and not x > kv[kfin[j]] * MARGIN:
                close.add(c)
            kneg.insert(j, -x)
            kfin.insert(j, c)
        if kfin:
            top, bot = -kneg[0] * pu, -kneg[-1] * pu
            if not (LO <= bot and top <= HI and self.smin[p] / top >= LO and self.smax[p] / bot <= HI):
                return False
        oldt = self.ties[p]
        old_spans = self.cspans[p]
        got = self._implied(p, vals)
        if got is None:
            return False
        order, ties = got
        self.stats["fast"] += 1
        if order == self.sorted[p] and ties == oldt:
            self.synced[p] = True
            return None
        self.sorted[p] = order
        self.ties[p] = ties
        if not olds and not old_spans and not self.cspans[p] or not self.synced[p]:
            # (the order given was not the K order's, or only the lead: walk it all)
            self.synced[p] = True
            return [(0, len(order) - 1)]
        ninf = len(infb)
        # what may have moved: each changed child from its old place to its new one (in K order;
        # a child in a cluster of close ones anywhere in it), and every cluster, old and new
        segs = old_spans + self.cspans[p]
        for a, c in olds:  # (unmoved too: its ties may have changed, from inf or to it)
            x = kv[c]
            if x == INF:
                b = bisect_left(infb, ix[c], key=ixg)
            else:
                b = bisect_left(kneg, -x)
                while kfin[b] != c:
                    b += 1
                b += ninf
            segs.append((a, b) if a < b else (b, a))
        segs.sort()
        out = [segs[0]]
        for a, b in segs[1:]:
            if a <= out[-1][1] + 1:
                if b > out[-1][1]:
                    out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
        return out

    def _implied(self, p: int, vals: Sequence[float]) -> tuple[list[int], list[bool]] | None:
        """Fast group p's order and ties at its usage in `vals`: the children with no usage first
        (tied, in the group's order), then by K, each cluster of close K sorted by its LevelFS
        (evaluated: _full's operations and sort); None when the first LevelFS is NO_VAL."""
        infb = self.infb[p]
        assert infb is not None
        kfin, s = self.kfin[p], self.s
        ninf = len(infb)
        order = infb + kfin
        nt = ninf - 1 if ninf else 0
        ties = [True] * nt + [False] * (len(order) - nt)  # (m - 1 pairs, then the lead: False)
        pu = vals[p]
        if not 0.0 < pu < INF:
            return None
        spans: list[tuple[int, int]] = []
        close = self.close[p]
        if close:
            kv, kneg, ix, lf = self.kv, self.kneg[p], self.ix, self.lf
            at = []
            for a in close:
                j = bisect_left(kneg, -kv[a])
                while kfin[j] != a:
                    j += 1
                at.append(j)
            at.sort()
            i = 0
            while i < len(at):
                j0 = at[i]
                while i + 1 < len(at) and at[i + 1] == at[i] + 1:
                    i += 1
                j1 = at[i] + 1  # (the last in the cluster: the next of the last close one)
                i += 1
                mem = sorted(kfin[j0:j1 + 1], key=ix.__getitem__)
                for k in mem:
                    lf[k] = s[k] / (vals[k] / pu)
                mem.sort(key=lf.__getitem__, reverse=True)
                order[ninf + j0:ninf + j1 + 1] = mem
                for x in range(j1 - j0):
                    ties[ninf + j0 + x] = lf[mem[x]] == lf[mem[x + 1]]
                spans.append((ninf + j0, ninf + j1))
        if not infb and kfin:
            c = order[0]
            if NO_VAL == s[c] / (vals[c] / pu):  # (the walk's start: then the full path)
                return None
        self.cspans[p] = spans
        return order, ties

    def _group(self, p: int, vals: Sequence[float], ch: list[int]) -> list[tuple[int, int]] | None:
        """Group p after its children `ch` (and perhaps p) changed: the spans of places whose
        child or tie may have changed (in order, apart), None when nothing did."""
        if self.infb[p] is not None:
            r = self._fast(p, vals, ch)
            if r is not False:
                return r  # type: ignore[return-value]
        old, oldt = self.sorted[p], self.ties[p]
        if not self._full(p, vals):
            return None
        new, newt = self.sorted[p], self.ties[p]
        m = len(new)
        if len(oldt) != len(newt) or oldt[-1] != newt[-1]:
            return [(0, m - 1)]
        lo = 0
        while lo < m and new[lo] == old[lo] and (lo == m - 1 or newt[lo] == oldt[lo]):
            lo += 1
        hi = m - 1
        while hi > lo and new[hi] == old[hi] and newt[hi - 1] == oldt[hi - 1]:
            hi -= 1
        return [(lo, hi) if lo < m else (0, m - 1)]

    # ------------------------------------------------------------------ the ranking
    def update(self, vals: Sequence[float], touched: Iterable[int] | None = None) -> dict[int, float]:
        """The users whose F (rank / users) changed since the last call, by association index,
        from the usage `vals` (the engine's S); every user at the first call. `touched`: the
        associations charged since the last call (their ancestors are implied), or None to
        compare every value."""
        last = self.last
        if last is None:
            self.last = list(vals)
            for p in self.parents:
                self._full(p, vals)
            self._span(0, [(0, len(self.sorted[0]) - 1)])
            return dict(self.F)
        if touched is None:
            changed = list(compress(range(self.na), map(ne, vals, last)))
        else:
            cand: set[int] = set()
            chains = self.chains
            for a in touched:
                cand.update(chains[a])
            changed = [i for i in cand if vals[i] != last[i]]
        if not changed:
            return {}
        fp, kids, one = self.fp, self.kids, self.one
        dirty: dict[int, list[int]] = {}
        for i in changed:
            last[i] = vals[i]
            if i:
                q = fp[i]
                if q in dirty:
                    dirty[q].append(i)
                else:
                    dirty[q] = [i]
            if kids[i] and i not in dirty:
                dirty[i] = []
        moved: list[tuple[int, list[tuple[int, int]]]] = []
        s, lf, ties = self.s, self.lf, self.ties
        for p, ch in dirty.items():
            if one[p]:  # _full's one plain child, inlined: only its lead tie can change
                k = kids[p][0]
                pu = vals[p]
                u = vals[k] / pu if pu > 0 else 0.0
                v = lf[k] = INF if u == 0.0 else s[k] / u
                if (NO_VAL == v) != ties[p][0]:
                    ties[p] = [NO_VAL == v]
                    moved.append((p, [(0, 0)]))
                continue
            r = self._group(p, vals, ch)
            if r is not None:
                moved.append((p, r))
        if not moved:
            return {}
        if len(moved) == 1:
            p, segs = moved[0]
            return self._span(p, segs)
        self.stats["walk"] += 1
        return self._span(0, [(0, len(self.sorted[0]) - 1)])

    def rank(self, vals: Sequence[float]) -> dict[int, float] | None:
        """Every user's F from `vals`, or None when no F changed since the last call (the
        previous interface: compares every value)."""
        first = self.last is None
        ch = self.update(vals)
        return dict(self.F) if (ch or first) else None

    def _tied_in_parent(self, p: int) -> bool:
        """The `account_tied` the walk passes to group p (root: False)."""
        if p == 0:
            return False
        q = self.fp[p]
        i = self.sorted[q].index(p)
        if i:
            return self.ties[q][i - 1]
        return self.ties[q][-1] or self._tied_in_parent(q)

    def _before(self, p: int) -> int:
        """The users the walk meets before group p's subtree."""
        if p == 0:
            return 0
        q = self.fp[p]
        sq = self.sorted[q]
        i = sq.index(p)
        return self._before(q) + sum(map(self.cnt.__getitem__, sq[:i]))

    def _first_tied(self, k: int, tied: bool) -> bool | None:
        """Whether the first user the walk meets in k's subtree is tied (None: k has no user)."""
        user, srt, ties, cnt = self.user, self.sorted, self.ties, self.cnt
        while not user[k]:
            sk = srt[k]
            for i, c in enumerate(sk):
                if cnt[c]:
                    break
            else:
                return None
            tied = (tied or ties[k][-1]) if i == 0 else ties[k][i - 1]
            k = sk[i]
        return tied

    def _span(self, p: int, segs: list[tuple[int, int]]) -> dict[int, float]:
        """Walk group p's places lo..hi again for each (lo, hi) of `segs` (in order, apart), and
        on (in p, then in its ancestors) while the next user is tied to the one before: the users
        whose F changed."""
        out: dict[int, float] = {}
        order0 = self.sorted[p]
        if not order0:
            return out
        user, srt, ties, cnt, fp = self.user, self.sorted, self.ties, self.cnt, self.fp
        n = self.n_users
        seq, rpos, rk, F = self.seq, self.rpos, self.rk, self.F
        before = self._before(p)
        unit = self.unit[p]
        p0 = p
        for lo, hi in segs:
            if hi < lo:
                continue
            self.stats["span"] += 1
            p = p0
            order = order0
            g = before + (lo if unit else sum(map(cnt.__getitem__, order[:lo])))
            # the rank, the rank with no ties, the rank the last walk gave at the last place written
            r0 = rold = rpos[g - 1] if g else n
            r1 = n - g
            tp = ties[p]
            m = len(order)
            x = lo
            while True:
                while x < m:
                    k = order[x]
                    tied = (tp[-1] or self._tied_in_parent(p)) if x == 0 else tp[x - 1]
                    if x > hi and (r0 == rold or self._first_tied(k, tied) is False):
                        break  # (from here the walk is the last one's: same state, or a fresh start)
                    x += 1
                    if user[k]:
                        u = k
                    elif cnt[k]:
                        sk = srt[k]
                        if len(sk) == 1 and user[sk[0]]:  # an account with one user (calc, inlined)
                            u = sk[0]
                            tied = tied or ties[k][-1]
                        else:
                            r0, r1, rold = self._calc(k, tied, r0, r1, rold, out)
                            continue
                    else:
                        continue
                    # a user's place (calc's, inlined)
                    if not tied:
                        r0 = r1
                    pos = n - r1
                    seq[pos] = u
                    rold = rpos[pos]
                    rpos[pos] = r0
                    r1 -= 1
                    if rk.get(u) != r0:
                        rk[u] = r0
                        out[u] = F[u] = r0 / n
                else:
                    if p != 0:
                        # past the group's end: what follows it in its parent's walk may be tied
                        q = fp[p]
                        order = srt[q]
                        x = order.index(p) + 1
                        p, tp, m, hi = q, ties[q], len(order), -1
                        continue
                break
        return out

    def _calc(self, q: int, account_tied: bool, r0: int, r1: int, rold: int,
              out: dict[int, float]) -> tuple[int, int, int]:
        """The walk through account q's group (slurmctld's recursion), from the walk's state."""
        user, srt, ties, cnt = self.user, self.sorted, self.ties, self.cnt
        n = self.n_users
        seq, rpos, rk, F = self.seq, self.rpos, self.rk, self.F
        tq = ties[q]
        for i, k in enumerate(srt[q]):
            tied = (account_tied or tq[-1]) if i == 0 else tq[i - 1]
            if user[k]:
                if not tied:
                    r0 = r1
                pos = n - r1
                seq[pos] = k
                rold = rpos[pos]
                rpos[pos] = r0
                r1 -= 1
                if rk.get(k) != r0:
                    rk[k] = r0
                    out[k] = F[k] = r0 / n
            elif cnt[k]:
                r0, r1, rold = self._calc(k, tied, r0, r1, rold, out)
        return r0, r1, rold
