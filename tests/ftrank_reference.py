"""The engine's Fair Tree ranker as it was before the incremental K order and span walk (issue #31
item 3, main at 3dda2ec: fscontrol/sim/ftrank.py's `Ranker`), verbatim but for this note, kept as
the reference the faster ranker is compared with (tests/test_sim_ftrank.py). Not part of the
package. Its own note follows.

`fairtree.level_values` + `fairtree.rank_users` rank the whole tree from dicts keyed by
(account, user); the engine ranks at every decay pass with a pending job, on the same tree, from its
usage list. `Ranker` gives the same ranks (the same float operations, the same stable sort, the
same walk) from index lists, and redoes only what changed since its last call:

- a sibling group (an fs parent's children) is re-evaluated (LevelFS) and re-sorted only when the
  usage of the parent or of one of its children changed (LevelFS = S / (U_child / U_parent): nothing
  else enters it). The engine keeps usage scaled by the decay (true usage = value x G), so a decay
  pass changes no value and no rank: only charges do;
- the walk (slurmctld's `_calc_tree_fs`) is redone only when a group's order or its ties changed;
  otherwise every rank is the one already given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from fscontrol.model import fairtree

NO_VAL = fairtree.NO_VAL
INF = math.inf


class Ranker:
    """Ranks of the user associations of one tree (`keys`: the engine's association order, root
    first; `shares`: fairtree.fair_tree_shares; `kids`: fairtree.children_lists)."""

    def __init__(self, t_tree: fairtree.Tree, keys: Sequence[tuple[str, str]],
                 shares: Mapping[tuple[str, str], float], kids: Mapping[tuple[str, str], list[tuple[str, str]]]) -> None:
        kix = {k: i for i, k in enumerate(keys)}
        na = len(keys)
        self.na = na
        self.n_users = sum(1 for k in t_tree.order if k[1])
        self.user = [bool(k[1]) for k in keys]
        self.fp = [-1] + [kix[t_tree.fs_parent[k]] for k in keys[1:]]
        self.s = [0.0] + [float(shares[k]) for k in keys[1:]]
        self.sp = [False] + [bool(t_tree.rows[k].shares_parent) for k in keys[1:]]
        # each fs parent's children, in children_lists' order (the stable sort's tie order)
        self.kids: list[list[int]] = [[] for _ in range(na)]
        for p, ch in kids.items():
            self.kids[kix[p]] = [kix[c] for c in ch]
        self.parents = [p for p in range(na) if self.kids[p]]
        self.plain = [all(not self.sp[k] and self.s[k] != 0.0 for k in ch) for ch in self.kids]
        self.mixed = [len({self.user[k] for k in ch}) > 1 for ch in self.kids]
        self.lf = [0.0] * na
        self.sorted: list[list[int]] = [list(c) for c in self.kids]
        self.ties: list[list[bool]] = [[] for _ in range(na)]
        self.last: list[float] | None = None
        self.ranks: dict[int, float] = {}

    def _group(self, p: int, vals: Sequence[float]) -> bool:
        """Re-evaluate group p (its children's LevelFS, fairtree._level_fs on level_values' U) and
        re-sort it; True when its order or its ties changed."""
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
        mix = self.mixed[p]
        if len(ch) == 1:
            order = ch
        elif mix:
            # rank_users' sort: higher LevelFS first, users before accounts on a tie, else stable
            order = sorted(ch, key=lambda k: (-lf[k], 0 if user[k] else 1))
        else:  # (all users or all accounts: by LevelFS alone; reverse=True keeps the sort stable)
            order = sorted(ch, key=lf.__getitem__, reverse=True)
        ties = [lf[a] == lf[b] for a, b in zip(order, order[1:])]
        lead = NO_VAL == lf[order[0]]  # (the walk's prev starts at NO_VAL)
        ties.append(lead)
        if order == self.sorted[p] and ties == self.ties[p]:
            return False
        self.sorted[p] = list(order)
        self.ties[p] = ties
        return True

    def rank(self, vals: Sequence[float]) -> dict[int, float] | None:
        """The users' F (rank / users) by association index from the usage `vals` (the engine's S),
        or None when they are the ones the last call gave."""
        last = self.last
        na = self.na
        if last is None:
            for p in self.parents:
                self._group(p, vals)
            changed = True
        else:
            if list(vals) == last:
                return None
            fp, kids = self.fp, self.kids
            dirty: set[int] = set()
            for i in [i for i, x, y in zip(range(na), vals, last) if x != y]:
                if i:
                    dirty.add(fp[i])
                if kids[i]:
                    dirty.add(i)
            changed = False
            for p in dirty:
                if self._group(p, vals):
                    changed = True
        self.last = list(vals)
        if not changed:
            return None
        self.ranks = self._walk()
        return self.ranks

    def _walk(self) -> dict[int, float]:
        lf, user, srt, kids = self.lf, self.user, self.sorted, self.kids
        n = self.n_users
        out: dict[int, float] = {}
        state = [n, n]  # rank, rank with no ties

        def calc(sibs: list[int], account_tied: bool) -> None:
            prev = NO_VAL
            i = 0
            m = len(sibs)
            while i < m:
                k = sibs[i]
                v = lf[k]
                tied = True if (i == 0 and account_tied) else (prev == v)
                if user[k]:
                    if not tied:
                        state[0] = state[1]
                    out[k] = state[0]
                    state[1] -= 1
                elif len(srt[k]) == 1 and user[srt[k][0]]:  # calc([its one user], tied), inlined
                    c = srt[k][0]
                    if not (tied or NO_VAL == lf[c]):
                        state[0] = state[1]
                    out[c] = state[0]
                    state[1] -= 1
                else:
                    # fairtree._count_tied_accounts: the following users with the same LevelFS
                    merge = 0
                    for j in range(i + 1, m):
                        if not user[sibs[j]] or v != lf[sibs[j]]:
                            break
                        merge += 1
                    if merge:  # (never: users sort before accounts on a tie; kept literal, as fairtree's)
                        merged: list[int] = []
                        for j in range(i, i + merge + 1):
                            merged.extend(kids[sibs[j]])
                        calc(sorted(merged, key=lambda k: (-lf[k], 0 if user[k] else 1)), tied)
                    else:
                        calc(srt[k], tied)
                    i += merge
                prev = v
                i += 1

        calc(srt[0], False)
        return {k: r / n for k, r in out.items()}
