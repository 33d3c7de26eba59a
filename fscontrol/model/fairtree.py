"""Fair Tree (Slurm's default fair-share since 19.05) recomputed from raw values.

Pure: no I/O, no clock. Input is the association tree as `sshare -a -l` prints it (ShareRow);
output is every association's Level Fair-Share and every user association's rank and factor,
computed from RawShares and RawUsage only (sshare's FairShare column is the check, not the
source).

The rules are slurmctld's, read from Slurm 22.05 and 24.11 (identical there apart from type
names): `fair_tree.c` (`_ft_set_assoc_usage_efctv`, `_calc_assoc_fs`, `_cmp_level_fs`,
`_count_tied_accounts`, `_calc_tree_fs`, `_apply_priority_fs`) and `assoc_mgr.c`
(`_find_assoc_parent`, `_get_children_level_shares`, `_normalize_assoc_shares_fair_tree`).

* Siblings are the associations with the same fs parent (`fairshare.build_tree`: the children
  of a FairShare=parent account compete one level up, beside that account).
* S = RawShares / (sum of the siblings' RawShares); a FairShare=parent association takes its
  fs parent's S (shown by sshare, used by nothing).
* U = RawUsage / the fs parent's RawUsage (0 when the parent has none).
* LevelFS = S / U: infinite when U = 0 (and S > 0), 0 when S = 0. A FairShare=parent user gets
  an infinite LevelFS (first in its account, tied with the other idle users); a FairShare=parent
  account gets NO_VAL (4294967294) and has no children of its own.
* From root down, each level's siblings are sorted by LevelFS, highest first, users before
  accounts on equal LevelFS (the sort is stable: glibc's qsort is a merge sort on 22.05's and
  24.11's Debian). Walking that order, a user takes the next rank (counting down from N, the
  number of user associations) unless its LevelFS equals the previous sibling's, then it shares
  that sibling's rank; an account is walked into at once, and if it tied with the previous
  sibling its first child starts tied. (Slurm's `_count_tied_accounts` means to merge tied
  sibling accounts' children but stops at the first account it meets, so it never merges: tied
  accounts are walked one after the other.)
* F = rank / N.

Decay multiplies every RawUsage by the same factor, so it changes no LevelFS and no rank: under
Fair Tree a user's factor moves only as usage is charged (theirs, or others').
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from collections.abc import Iterable, Mapping, Sequence

from fscontrol.model.fairshare import ROOT, Key, Tree, TreeError, build_tree
from fscontrol.records import ShareRow

NO_VAL = float(0xFFFFFFFE)  # Slurm's NO_VAL as a long double: a FairShare=parent account's LevelFS

__all__ = ["AssocFairTree", "FairTree", "compute_fair_tree", "TreeError", "NO_VAL"]


@dataclass(frozen=True, slots=True)
class AssocFairTree:
    """One association under Fair Tree. `rank` and `fairshare` are None for accounts."""

    account: str
    user: str
    parent: str  # direct parent account ("" for root)
    fs_parent: str  # the account it competes under (FairShare=parent links skipped)
    depth: int
    raw_shares: int | None
    shares_parent: bool
    raw_usage: float
    norm_shares: float  # S at its level
    effective_usage: float  # U: its share of the fs parent's usage
    level_fs: float  # S / U (inf: no usage; NO_VAL: a FairShare=parent account)
    rank: int | None
    fairshare: float | None

    @property
    def key(self) -> Key:
        return (self.account, self.user)

    @property
    def is_user(self) -> bool:
        return self.user != ""


@dataclass(frozen=True, slots=True)
class FairTree:
    """The whole tree under Fair Tree: associations in sshare's order, and the ranking."""

    assocs: tuple[AssocFairTree, ...]
    n_users: int  # N: user associations (slurmctld's g_user_assoc_count)
    ranking: tuple[Key, ...]  # user associations, best first, in slurmctld's walk order
    shares_form: str = "fair_tree"  # the NormShares slurmctld ranks with (fairtree.held_shares)
    # siblings sshare cannot order (equal printed LevelFS, usage ranges that overlap: ranking_keys),
    # and every rank each user association can have as slurmctld's arithmetic orders them
    # (rank_alternatives); empty when the tree has none
    undecided: tuple[tuple[Key, ...], ...] = ()
    rank_choices: Mapping[Key, tuple[int, ...]] | None = None

    @property
    def stale_shares(self) -> bool:
        return self.shares_form != "fair_tree"

    def by_key(self) -> dict[Key, AssocFairTree]:
        return {a.key: a for a in self.assocs}


def _level_fs(s: float, u: float, row: ShareRow) -> float:
    if row.shares_parent:
        return math.inf if row.user else NO_VAL
    if s == 0.0:
        return 0.0
    return math.inf if u == 0.0 else s / u


def children_lists(t: Tree) -> dict[Key, list[Key]]:
    """Each fs parent's children in sshare's (depth-first) order. slurmctld's lists are in the
    order the associations were created; the two differ only in which of two accounts with
    exactly equal LevelFS is walked first."""
    kids: dict[Key, list[Key]] = {}
    for k in t.rows:
        if k != ROOT:
            kids.setdefault(t.fs_parent[k], []).append(k)
    return kids


def fair_tree_shares(t: Tree) -> dict[Key, float]:
    """S of every association but root, as `_normalize_assoc_shares_fair_tree` sets it: RawShares
    over the level's shares (a FairShare=parent association: its fs parent's)."""
    s: dict[Key, float] = {}
    for k in t.order[1:]:
        src = t.fs_parent[k] if t.rows[k].shares_parent else k
        if src == ROOT:
            s[k] = 0.0  # root sits in no level: its level_shares stay 0
        else:
            ls = t.level_shares[src]
            s[k] = (t.rows[src].raw_shares or 0) / ls if ls else 0.0
    return s


SHARES_FORMS = ("fair_tree", "classic", "mixed")
_SSHARE_DECIMALS = 1.5e-6  # sshare prints NormShares with 6 decimals


def held_shares(t: Tree, mode: str) -> tuple[dict[Key, float], str]:
    """The NormShares slurmctld holds for every association but root, read off sshare's own
    NormShares column, and their form: "fair_tree" (each level's own), "classic" (products down the
    tree) or "mixed".

    slurmctld normalises an association's shares under the algorithm in force when it loads or
    changes it. Switching PriorityFlags by `scontrol reconfigure` renormalises nothing on Slurm
    22.05 (priority_p_reconfig compares the flags after _internal_setup has already taken the new
    ones), so the other algorithm's shares stay until a restart, and associations added since have
    the new form: both forms can be in one tree, and slurmctld computes with what it holds. Each
    association's value is the exact form its printed one matches; a printed value neither form
    gives is taken as printed. `mode` ("fair_tree" or "classic") is the algorithm in force: its own
    form where sshare printed no NormShares."""
    from fscontrol.model.fairshare import norm_shares_of

    ft, cl = fair_tree_shares(t), norm_shares_of(t)
    own, other = (ft, cl) if mode == "fair_tree" else (cl, ft)
    keys = [k for k in t.rows if k != ROOT]
    out = {k: own[k] for k in keys}
    form = _hold(own, other, ((k, t.rows[k].norm_shares) for k in keys), out, keys, mode)
    return out, form


def _hold(own, other, printed, out, keys, mode: str) -> str:
    """held_shares' rule, on dicts or lists alike: `out` starts as `own` and takes, for each printed
    (key, NormShares) that is not own's, the other form's value it matches, else the printed one.
    Returns the form: the mode's own, the other's, or "mixed"."""
    seen: set[str] = set()
    for k, v in printed:
        if v is None or abs(own[k] - v) <= _SSHARE_DECIMALS:
            continue
        if abs(other[k] - v) <= _SSHARE_DECIMALS:
            out[k] = other[k]
            seen.add("other")
        else:
            out[k] = v
            seen.add("printed")
    own_name, other_name = ("fair_tree", "classic") if mode == "fair_tree" else ("classic", "fair_tree")
    if not seen:
        return own_name
    if seen == {"other"} and all(abs(out[k] - other[k]) <= _SSHARE_DECIMALS for k in keys):
        return other_name
    return "mixed"


def held_shares_in_order(rows, mode: str, tl=None) -> tuple[list[float], str, dict[Key, int]] | None:
    """held_shares(build_tree(rows), mode) for rows in tree order (each association after its
    parent: sshare's order, and the history's), without building a Tree: lists indexed as the
    rows (fairshare.tree_in_order). Returns the NormShares aligned with `rows` (root's 1.0), their
    form, and each association's index; the same floats as held_shares (the same operations in
    the same order). None when the rows are not such a tree: the caller builds the Tree, which
    says why. `tl`: the rows' tree_in_order, when the caller has it already."""
    from fscontrol.model.fairshare import classic_shares_in_order, tree_in_order

    if tl is None:
        tl = tree_in_order(rows)
    if tl is None:
        return None
    index, par, fsp, lvl, sp, rs = tl
    n = len(rows)
    cl = classic_shares_in_order(tl)
    ft = [0.0] * n  # Fair Tree's: RawShares over the level's shares (FairShare=parent: the fs parent's)
    for i in range(1, n):
        src = fsp[i] if sp[i] else i
        if src:
            ls = lvl[fsp[src]]
            ft[i] = rs[src] / ls if ls else 0.0
    own, other = (ft, cl) if mode == "fair_tree" else (cl, ft)
    out = own[:]
    out[0] = 1.0
    form = _hold(own, other, ((i, rows[i].norm_shares) for i in range(1, n)), out, range(1, n), mode)
    return out, form, index


def level_values(t: Tree, usage: Mapping[Key, float] | None = None,
                 shares: Mapping[Key, float] | None = None) -> tuple[dict[Key, float], dict[Key, float], dict[Key, float]]:
    """S, U and LevelFS of every association but root (`_calc_assoc_fs`); `usage` replaces the
    rows' RawUsage (a projection re-ranks one tree under new usage); `shares` the S slurmctld
    holds when it is not Fair Tree's own (see held_shares)."""
    raw = usage if usage is not None else {k: float(r.raw_usage) for k, r in t.rows.items()}
    s: dict[Key, float] = dict(shares) if shares is not None else fair_tree_shares(t)
    u: dict[Key, float] = {}
    lf: dict[Key, float] = {}
    for k in t.order[1:]:
        r = t.rows[k]
        fs = t.fs_parent[k]
        parent_usage = raw[fs]
        u[k] = raw[k] / parent_usage if parent_usage > 0 else 0.0
        lf[k] = _level_fs(s[k], u[k], r)
    return s, u, lf


def _span(v: float, r: float, slack: float = 1.0, shares_parent: bool = False) -> tuple[float, float]:
    """The LevelFS v = S·R/r an association may truly have when its usage r is known to within
    `slack` below the truth (sshare truncates RawUsage: slack 1; decayed since in a projection):
    [S·R/(r+slack), S·R/r]. Infinite, zero, NO_VAL and FairShare=parent values are exact."""
    if shares_parent or r <= 0 or not 0.0 < v < math.inf or v == NO_VAL:
        return v, v
    return v * r / (r + slack), v


def _group_overlapping(members: list[Key], span: Mapping[Key, tuple[float, float]], p: float,
                       out: dict[Key, tuple[float, float]]) -> None:
    """Keys whose ranges overlap (transitively) share one key: (p, the group's top)."""
    spans = sorted(members, key=lambda k: -span[k][1])
    group: list[Key] = []
    low = top = math.nan
    for k in spans:
        lo, hi = span[k]
        if group and hi >= low:
            group.append(k)
            low = min(low, lo)
            continue
        for m in group:
            out[m] = (p, top)
        group, low, top = [k], lo, hi
    for m in group:
        out[m] = (p, top)


def ranking_keys(t: Tree, lf: Mapping[Key, float], kids: Mapping[Key, list[Key]] | None = None) -> dict[Key, tuple[float, float]]:
    """What slurmctld's walk compares, as well as sshare lets it be known: per association
    (printed LevelFS, LevelFS of its tie group).

    sshare truncates RawUsage to an integer, so a LevelFS recomputed from it is S·R/r with the
    true r anywhere in [r, r+1) (R, the parent's, is common to the siblings and cancels): two
    siblings slurmctld holds exactly tied (jobs sized to their shares that started in the same
    second) come out a hair apart, and the walk would split them. sshare's LevelFS column is
    slurmctld's own value to 6 decimals: siblings ordered by it are ordered so in slurmctld; where
    it prints two equal and their recomputed ranges [S·R/(r+1), S·R/r] overlap, they are taken as
    tied (slurmctld's exact tie; a true gap under 5e-7 would print the same and rank as a tie
    here). With no printed LevelFS (a projection, a classic recording) this is (LevelFS, LevelFS)."""
    kids = children_lists(t) if kids is None else kids
    out: dict[Key, tuple[float, float]] = {}
    for sibs in kids.values():
        printed = {k: t.rows[k].level_fs for k in sibs}
        if all(v is None for v in printed.values()):
            out.update({k: (lf[k], lf[k]) for k in sibs})
            continue
        by_primary: dict[float, list[Key]] = {}
        for k in sibs:
            p = lf[k] if printed[k] is None or t.rows[k].shares_parent else printed[k]
            by_primary.setdefault(p, []).append(k)
        for p, group in by_primary.items():
            _group_overlapping(group, {k: _span(lf[k], float(t.rows[k].raw_usage), 1.0, t.rows[k].shares_parent)
                                       for k in group}, p, out)
    return out


def tie_groups(keys: Mapping[Key, tuple[float, ...]], kids: Mapping[Key, list[Key]]) -> list[list[Key]]:
    """Siblings that share one ranking key (ranking_keys) with finite LevelFS: slurmctld's exact
    ties that integer usage hides."""
    out = []
    for sibs in kids.values():
        by: dict[tuple[float, ...], list[Key]] = {}
        for k in sibs:
            by.setdefault(keys[k], []).append(k)
        out += [g for key, g in by.items() if len(g) > 1 and 0.0 < key[-1] < math.inf and key[-1] != NO_VAL]
    return out


def projected_keys(lf: Mapping[Key, float], usage: Mapping[Key, float], slack: float,
                   groups: Sequence[list[Key]]) -> dict[Key, tuple[float, float]]:
    """Ranking keys for a projected tree: each association by its LevelFS, except that the
    snapshot's tie groups stay tied while their ranges overlap (each usage is known to within
    `slack` below the truth: the snapshot's truncation, decayed since)."""
    out = {k: (v, v) for k, v in lf.items()}
    for g in groups:
        sub: dict[Key, tuple[float, float]] = {}
        _group_overlapping(g, {k: _span(lf[k], usage[k], slack) for k in g}, 0.0, sub)
        for k, (_, top) in sub.items():
            out[k] = (top, top)
    return out


def rank_users(t: Tree, lf: Mapping[Key, float], kids: Mapping[Key, list[Key]] | None = None,
               keys: Mapping[Key, tuple[float, ...]] | None = None) -> tuple[dict[Key, int], list[Key]]:
    """Slurm's ranking walk (`_calc_tree_fs`): each user association's rank, and the walk order.
    `kids`: children_lists(t), when the caller ranks the same tree many times; `keys`: what the
    walk compares (ranking_keys), when it is not the recomputed LevelFS alone."""
    kids = children_lists(t) if kids is None else kids
    cmp: Mapping[Key, tuple[float, ...]] = keys if keys is not None else {k: (v,) for k, v in lf.items()}
    width = len(next(iter(cmp.values()))) if cmp else 1
    start = (NO_VAL,) * width  # slurmctld's prev_level_fs starts at NO_VAL
    n = sum(1 for k in t.order if k[1])
    rank = {"rank": n, "rnt": n}  # rnt: the rank with no ties
    out: dict[Key, int] = {}
    walk: list[Key] = []

    def is_user(k: Key) -> bool:
        return k[1] != ""

    if keys is None:  # one value per key: the same order without building a tuple per comparison key
        def sort_key(k: Key) -> tuple:
            return (-lf[k], 0 if k[1] else 1)
    else:
        def sort_key(k: Key) -> tuple:
            return (tuple(-x for x in cmp[k]), 0 if k[1] else 1)

    def calc(siblings: list[Key], account_tied: bool) -> None:
        # sort: higher LevelFS first, users before accounts on a tie; stable otherwise
        sibs = sorted(siblings, key=sort_key)
        prev = start
        i = 0
        while i < len(sibs):
            k = sibs[i]
            tied = True if (i == 0 and account_tied) else (prev == cmp[k])
            if is_user(k):
                if not tied:
                    rank["rank"] = rank["rnt"]
                out[k] = rank["rank"]
                walk.append(k)
                rank["rnt"] -= 1
            else:
                merge = _count_tied_accounts(sibs, i, cmp)
                merged: list[Key] = []
                for j in range(i, i + merge + 1):
                    merged.extend(kids.get(sibs[j], ()))
                calc(merged, tied)
                i += merge
            prev = cmp[k]
            i += 1

    calc(list(kids.get(ROOT, ())), False)
    return out, walk


def _count_tied_accounts(sibs: list[Key], i: int, lf: Mapping[Key, object]) -> int:
    """As Slurm's: counts the following siblings that are users (!) with the same LevelFS.

    Users sort before accounts on a tie, so after an account no user ties with it: the count is
    always 0 and tied accounts are never merged. Kept literal so the walk is Slurm's."""
    count = 0
    for k in sibs[i + 1:]:
        if not k[1]:
            break
        if lf[sibs[i]] != lf[k]:
            break
        count += 1
    return count


MAX_ALTERNATIVES = 64  # rankings tried for undecided groups (3 each for a pair), at most


def rank_alternatives(t: Tree, lf: Mapping[Key, float], kids: Mapping[Key, list[Key]],
                      keys: Mapping[Key, tuple[float, ...]], groups: Sequence[list[Key]]) -> dict[Key, tuple[int, ...]]:
    """Every rank a user association can take when each undecided group is resolved each way
    slurmctld's long-double arithmetic can resolve it: all tied, or any strict order of its members.

    Such a group is mathematically tied (jobs sized to their shares): slurmctld computes S/U in long
    double from a usage sshare prints truncated, and the last bits decide. Seen on the testbed:
    Slurm 22.05 held dave@genomics and lab bit-equal (a tie), Slurm 24.11 held lab 1.2e-17 ahead."""
    from itertools import product

    options: list[list[dict[Key, tuple[float, float, float]]]] = []
    for g in groups:
        p, top = keys[g[0]]
        opts = [{k: (p, top, 0.0) for k in g}]  # all tied (what compute_fair_tree reports)
        for order in _orders(g, MAX_ALTERNATIVES):  # no more are tried
            opts.append({k: (p, top, float(len(g) - i)) for i, k in enumerate(order)})
        options.append(opts)
    base = {k: (*v, 0.0) for k, v in keys.items()}
    out: dict[Key, set[int]] = {}
    for n, combo in enumerate(product(*options)):
        if n >= MAX_ALTERNATIVES:
            break
        k2 = dict(base)
        for o in combo:
            k2.update(o)
        ranks, _ = rank_users(t, lf, kids, k2)
        for k, r in ranks.items():
            out.setdefault(k, set()).add(r)
    return {k: tuple(sorted(v)) for k, v in out.items() if len(v) > 1}


def _orders(g: Sequence[Key], limit: int) -> list[tuple[Key, ...]]:
    """The strict orders of an undecided group tried (at most `limit`): every one for up to 3
    members; for more, each rotation of the group and of its reverse, in which every member takes
    every place (2m orders; m! orders of a group of 15 users with equal usage, built before any was
    tried, took all memory)."""
    from itertools import permutations

    if len(g) <= 3:
        return list(permutations(g))[:limit]
    out: list[tuple[Key, ...]] = []
    for seq in (list(g), list(reversed(g))):
        for i in range(len(seq)):
            if len(out) >= limit:
                return out
            out.append(tuple(seq[i:] + seq[:i]))
    return out


def place(rank: int, n: int) -> int:
    """A user association's place from the top: Slurm's rank N is the first place, rank 1 the last
    (F = rank / N), so "rank 1 of 10" is the lowest; tied ranks share a place."""
    return n - rank + 1


def ordinal(k: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 102nd."""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k:,}{suffix}"


def place_text(rank: int | None, n: int) -> str | None:
    """The place in words: "1st of 10 (highest)", "4th of 10", "10th of 10 (lowest)"."""
    if rank is None or n < 1:
        return None
    k = place(rank, n)
    end = " (highest)" if k == 1 else " (lowest)" if k == n else ""
    return f"{ordinal(k)} of {n:,}{end}"


def compute_fair_tree(rows: Iterable[ShareRow]) -> FairTree:
    """Every association's Fair Tree values, and every user association's rank and F. S is what
    slurmctld holds (held_shares): Fair Tree's own, unless sshare's NormShares column shows it
    still holds classic ones for some associations; slurmctld ranks with those, and so does this."""
    t = build_tree(rows)
    held, form = held_shares(t, "fair_tree")
    s, u, lf = level_values(t, shares=held)
    kids = children_lists(t)
    keys = ranking_keys(t, lf, kids)
    ranks, walk = rank_users(t, lf, kids, keys)
    groups = tie_groups(keys, kids)
    choices = rank_alternatives(t, lf, kids, keys, groups) if groups else {}
    n = len(ranks)
    out = []
    for k, r in t.rows.items():  # sshare's order
        is_root = k == ROOT
        rk = ranks.get(k)
        out.append(
            AssocFairTree(
                account=r.account,
                user=r.user,
                parent=r.parent,
                fs_parent="" if is_root else t.fs_parent[k][0],
                depth=r.depth,
                raw_shares=r.raw_shares,
                shares_parent=r.shares_parent,
                raw_usage=float(r.raw_usage),
                norm_shares=1.0 if is_root else s[k],
                effective_usage=1.0 if is_root else u[k],
                level_fs=NO_VAL if is_root else lf[k],
                rank=rk,
                fairshare=None if rk is None else rk / n,
            )
        )
    return FairTree(tuple(out), n, tuple(walk), form, tuple(tuple(g) for g in groups), choices)
