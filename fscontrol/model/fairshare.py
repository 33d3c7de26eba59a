"""Classic fair-share (PriorityFlags=NO_FAIR_TREE) recomputed from raw values.

Pure: no I/O, no clock. Input is the association tree as `sshare -a` prints it (ShareRow);
output is one `AssocFairShare` per association, computed from RawShares and RawUsage only,
never copied from sshare's derived columns (sshare computes FairShare with its *own*
slurm.conf's damping factor, and its columns lag RawUsage by one decay pass).

The rules follow Slurm 22.05 (`assoc_mgr.c`: `_find_assoc_parent`,
`_get_children_level_shares`, `_normalize_assoc_shares_traditional`;
`priority_multifactor.c`: `set_assoc_usage_norm`, `_set_assoc_usage_efctv`,
`_set_usage_efctv`, `priority_p_calc_fs_factor`):

* The *fs parent* of an association is its parent account, or, if that account has
  FairShare=parent, the first ancestor that does not. An association is a sibling of all
  other associations with the same fs parent (so the children of a FairShare=parent account
  compete one level up, and the `root` user association is a top-level sibling).
* level_shares = sum of RawShares of the non-`parent` siblings.
* NormShares = product up the direct-parent chain, skipping `parent` links, of
  RawShares / level_shares (0 if level_shares is 0). A `parent` association takes its fs
  parent's NormShares.
* NormUsage = RawUsage / root RawUsage, clipped to 1; 0 when root has no usage.
* EffectvUsage: 1 at root; UN when the fs parent is root; the fs parent's UE for a `parent`
  association; otherwise UN + (UE_fsparent - UN) * RawShares / level_shares (UE_fsparent
  when level_shares is 0). A user with no usage of its own therefore still inherits a share
  of its account's usage below the first tier; only at the first tier is UE = 0, F = 1.
* F = 2^(-(UE/S)/d); F = 0 when S <= 0 (Slurm returns 0 for zero shares).
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from collections.abc import Collection, Iterable, Mapping, Sequence

from fscontrol.errors import FscontrolError
from fscontrol.model.fsfactor import (  # noqa: F401 (fairshare.fairshare_factor, ...: one association's formulas)
    damping_to_halve, fairshare_factor, halving_usage, implied_halving, usage_to_halve,
)
from fscontrol.records import ShareRow

Key = tuple[str, str]  # (account, user); user "" for an account row
ROOT: Key = ("root", "")
UNDERFLOW = 1e-6  # sshare/sprio print 6 decimals: below this F shows as 0


class TreeError(FscontrolError, ValueError):
    """The sshare rows do not form one association tree (missing parent, duplicate, no root)."""


@dataclass(frozen=True, slots=True)
class AssocFairShare:
    """Classic fair-share of one association, recomputed from raw values.

    `halving` is the usage (billing-seconds) that halves F: H = S * d * U_total. For an
    association whose fs parent is root, UE = u / U_total and F = 2^(-u/H) exactly (U_total
    held fixed). Deeper down it is an approximation: the user's own extra usage still raises UE
    by du / U_total (it raises every ancestor's NormUsage too), so H is the marginal halving
    usage, but UE also carries a share of the account's other usage, so F != 2^(-u/H).
    None when the cluster has no usage. `implied_halving` is u / -log2(F) (Yalim table 2),
    None when undefined (no usage, F = 1, or F underflowed to 0).
    """

    account: str
    user: str
    parent: str
    depth: int
    raw_shares: int | None
    shares_parent: bool
    raw_usage: float
    norm_shares: float
    norm_usage: float
    effective_usage: float
    fairshare: float
    halving: float | None
    implied_halving: float | None

    @property
    def key(self) -> Key:
        return (self.account, self.user)

    @property
    def is_user(self) -> bool:
        return self.user != ""

    @property
    def underflow(self) -> bool:
        return self.fairshare < UNDERFLOW


# ---------------------------------------------------------------------------- the tree
@dataclass(frozen=True, slots=True)
class Tree:
    rows: dict[Key, ShareRow]
    order: tuple[Key, ...]  # parents before children
    parent: dict[Key, Key]  # direct parent
    fs_parent: dict[Key, Key]  # Slurm's fs_assoc_ptr
    level_shares: dict[Key, int]  # per association: sum of its siblings' RawShares


def _key(row: ShareRow) -> Key:
    return (row.account, row.user)


def _parent_key(row: ShareRow) -> Key:
    # a user hangs under its own account; an account under its parent account
    return (row.account, "") if row.user else (row.parent, "")


def build_tree(rows: Iterable[ShareRow]) -> Tree:
    """The association tree as slurmctld's assoc_mgr links it (shared by classic and Fair Tree):
    direct parents, fs parents (FairShare=parent links skipped) and each level's shares."""
    by_key: dict[Key, ShareRow] = {}
    for r in rows:
        k = (r.account, r.user)  # _key(r), inline: this loop runs once per association
        if r.raw_usage < 0:
            raise TreeError(f"association {k[0]}/{k[1] or '-'} has negative RawUsage {r.raw_usage!r}")
        if k in by_key:
            raise TreeError(f"association {k[0]}/{k[1] or '-'} appears twice (several clusters mixed?)")
        by_key[k] = r
    if ROOT not in by_key or by_key[ROOT].depth != 0:
        raise TreeError("no root row (depth 0, account root): run sshare -a as an admin")

    parent: dict[Key, Key] = {}
    children: dict[Key, list[Key]] = {}
    for k, r in by_key.items():
        if k == ROOT:
            continue
        p = (r.account, "") if r.user else (r.parent, "")  # _parent_key(r)
        if p not in by_key:
            raise TreeError(f"association {k[0]}/{k[1] or '-'} has no parent row {p[0]!r}")
        parent[k] = p
        children.setdefault(p, []).append(k)

    order: list[Key] = [ROOT]
    i = 0
    while i < len(order):  # breadth-first: every fs parent (an ancestor) comes first
        order.extend(children.get(order[i], ()))
        i += 1
    if len(order) != len(by_key):
        lost = sorted(set(by_key) - set(order))
        raise TreeError(f"associations not reachable from root (a cycle?): {lost[:5]}")

    fs_parent: dict[Key, Key] = {}
    for k in order[1:]:
        p = parent[k]
        while p != ROOT and by_key[p].shares_parent:  # FairShare=parent links are skipped
            p = parent[p]
        fs_parent[k] = p

    level: dict[Key, int] = {}
    for k, p in fs_parent.items():
        r = by_key[k]
        if not r.shares_parent:
            level[p] = level.get(p, 0) + (r.raw_shares or 0)
    level_shares = {k: level.get(p, 0) for k, p in fs_parent.items()}
    return Tree(by_key, tuple(order), parent, fs_parent, level_shares)


def tree_in_order(rows: Sequence[ShareRow]) -> tuple[dict[Key, int], list[int], list[int], list[int], list[bool], list[int]] | None:
    """build_tree's links as lists indexed as the rows, for rows in tree order (root first, each
    association after its parent: sshare's order, and the history's): (index of each key, parent,
    fs parent, level shares of each fs parent, FairShare=parent, RawShares or 0). None when the
    rows are not such a tree (root not first, a parent missing or after its child, an association
    twice, negative RawUsage): build_tree says what is wrong. At 100,000 associations this is a
    few list passes where the Tree is several dicts keyed by (account, user)."""
    n = len(rows)
    if not n or (rows[0].account, rows[0].user) != ROOT or rows[0].depth != 0:
        return None
    acc = [r.account for r in rows]
    usr = [r.user for r in rows]
    index = dict(zip(zip(acc, usr), range(n)))
    if len(index) != n or min(r.raw_usage for r in rows) < 0:
        return None
    get = index.get
    par = [get((a, "") if u else (r.parent, ""), -1) for a, u, r in zip(acc, usr, rows)]
    par[0] = 0
    if any(p < 0 or p >= i for i, p in enumerate(par) if i):
        return None
    sp = [r.shares_parent for r in rows]
    rs = [r.raw_shares or 0 for r in rows]
    fsp = [0] * n  # the fs parent: the first ancestor that is not FairShare=parent (or root)
    lvl = [0] * n  # each fs parent's level shares: its non-parent children's RawShares
    for i in range(1, n):
        p = par[i]
        f = fsp[i] = fsp[p] if p and sp[p] else p
        if not sp[i]:
            lvl[f] += rs[i]
    return index, par, fsp, lvl, sp, rs


def classic_shares_in_order(tl) -> list[float]:
    """_norm_shares over tree_in_order's lists: classic NormShares aligned with the rows (root
    1.0), the same floats (the same products in the same order)."""
    _, par, fsp, lvl, sp, rs = tl
    n = len(par)
    path = [1.0] * n  # the product of RawShares / level shares from root down
    cl = [1.0] * n
    for i in range(1, n):
        f = fsp[i]
        if sp[i]:
            path[i] = path[par[i]]
            cl[i] = cl[f]
        else:
            ls = lvl[f]
            cl[i] = path[i] = path[par[i]] * rs[i] / ls if ls else 0.0
    return cl


# ---------------------------------------------------------------------------- the pieces
def norm_shares(rows: Iterable[ShareRow]) -> dict[Key, float]:
    """Slurm's classic NormShares for every association (root: 1.0)."""
    return _norm_shares(build_tree(rows))


def norm_shares_of(t: Tree) -> dict[Key, float]:
    """norm_shares of a tree already built."""
    return _norm_shares(t)


def _norm_shares(t: Tree) -> dict[Key, float]:
    out: dict[Key, float] = {ROOT: 1.0}
    # path[k]: the product of RawShares / level shares from root down to k, FairShare=parent
    # links counting 1; breadth-first order has every parent's before its children's
    path: dict[Key, float] = {ROOT: 1.0}
    rows, parent, level, fs_parent = t.rows, t.parent, t.level_shares, t.fs_parent
    for k in t.order[1:]:
        r = rows[k]
        above = path[parent[k]]
        if r.shares_parent:
            path[k] = above
            out[k] = out[fs_parent[k]]
            continue
        ls = level[k]
        path[k] = s = above * (r.raw_shares or 0) / ls if ls else 0.0
        out[k] = s
    return out


def norm_usage(rows: Iterable[ShareRow]) -> dict[Key, float]:
    """RawUsage / root RawUsage, clipped to 1 (Slurm's `set_assoc_usage_norm`)."""
    return _norm_usage(build_tree(rows))


def _norm_usage(t: Tree) -> dict[Key, float]:
    total = float(t.rows[ROOT].raw_usage)
    if total <= 0:
        return {k: 0.0 for k in t.order}
    return {k: min(1.0, float(t.rows[k].raw_usage) / total) for k in t.order}


def effective_usage(rows: Iterable[ShareRow], norm: Mapping[Key, float] | None = None) -> dict[Key, float]:
    """Classic EffectvUsage for every association.

    `norm` overrides the NormUsage computed from RawUsage (e.g. sshare's own NormUsage column,
    to check the tree rule in isolation from RawUsage's integer truncation).
    """
    t = build_tree(rows)
    return _effective_usage(t, dict(norm) if norm is not None else _norm_usage(t))


# The classic EffectvUsage rule of one association (`_set_assoc_usage_efctv`), given its fs
# parent's: the one implementation the agent's compute_fairshare and the simulator's decay passes
# (fscontrol.sim.multifactor) both call. `rule` is effective_usage_rule(tree, key).
FS_ROOT, FS_PARENT, FS_LEVEL, FS_NO_LEVEL = 0, 1, 2, 3


def effective_usage_rule(t: Tree, k: Key) -> tuple[int, float]:
    """How association k's EffectvUsage follows from its NormUsage and its fs parent's
    EffectvUsage: (kind, weight), weight = RawShares / level shares for FS_LEVEL."""
    fs = t.fs_parent[k]
    r = t.rows[k]
    if r.shares_parent and (r.user or fs != ROOT):
        # a FairShare=parent user whose chain reaches root takes root's UE, 1: sprio gives it root's
        # factor 2^(-1/d) (docs/halving.md); a first-tier FairShare=parent account keeps its own
        # NormUsage, as sshare's FairShare shows (tests/test_treezoo.py's 22.05 capture: ops)
        return FS_PARENT, 0.0
    if fs == ROOT:
        return FS_ROOT, 0.0
    ls = t.level_shares[k]
    return (FS_LEVEL, (r.raw_shares or 0) / ls) if ls else (FS_NO_LEVEL, 0.0)


def effective_usage_step(rule: tuple[int, float], un: float, ue_fs: float) -> float:
    """UE from NormUsage `un` and the fs parent's UE `ue_fs`: UN at the first tier, the fs parent's
    UE for FairShare=parent (and when the level has no shares), else UN + (UE_fs - UN) s/S_level."""
    kind, w = rule
    if kind == FS_ROOT:
        return un
    if kind == FS_LEVEL:
        return un + (ue_fs - un) * w
    return ue_fs


def _effective_usage(t: Tree, un: Mapping[Key, float]) -> dict[Key, float]:
    ue: dict[Key, float] = {ROOT: 1.0}
    fs_parent = t.fs_parent
    for k in t.order[1:]:
        ue[k] = effective_usage_step(effective_usage_rule(t, k), un[k], ue[fs_parent[k]])
    return ue


def compute_fairshare(rows: Iterable[ShareRow], damping: float) -> tuple[AssocFairShare, ...]:
    """Every association's classic fair-share at damping factor `damping`, in tree order.

    `damping` is the d slurmctld uses (read it from `scontrol show config`); a float is
    accepted for what-if questions even though Slurm only takes integers 1..65535.
    """
    t = build_tree(rows)
    s = _norm_shares(t)
    un = _norm_usage(t)
    ue = _effective_usage(t, un)
    total = float(t.rows[ROOT].raw_usage)
    out = []
    for k in t.order:
        r = t.rows[k]
        f = fairshare_factor(ue[k], s[k], damping)
        out.append(
            AssocFairShare(
                account=r.account,
                user=r.user,
                parent=r.parent,
                depth=r.depth,
                raw_shares=r.raw_shares,
                shares_parent=r.shares_parent,
                raw_usage=float(r.raw_usage),
                norm_shares=s[k],
                norm_usage=un[k],
                effective_usage=ue[k],
                fairshare=f,
                halving=halving_usage(s[k], damping, total) if total > 0 else None,
                implied_halving=implied_halving(float(r.raw_usage), f),
            )
        )
    return tuple(out)


def reference_share(results: Iterable[AssocFairShare], exclude: Collection[Key] = ()) -> float:
    """The share of a typical user: the median NormShares of the user associations with
    shares > 0, leaving out `exclude` (the dummy) and the `root` user association.

    On a flat tree with one share per user this is 1/N, so H = d * mean usage (Yalim).
    """
    shares = [
        r.norm_shares
        for r in results
        if r.is_user and r.norm_shares > 0 and r.key not in exclude and r.key != ("root", "root")
    ]
    if not shares:
        raise TreeError("no user association with shares > 0: cannot choose a reference share")
    return _median(shares)


REFERENCE_RULES = ("median", "mean", "min", "max")


def choose_reference_share(
    rows: Sequence[ShareRow],
    damping: float | None = None,
    dummy: Key | None = None,
    reference: str | float = "median",
    exact: Mapping[Key, float] | None = None,
) -> tuple[float | None, str]:
    """S_ref, the share of the user the admin's target u* is stated for (H = S_ref * d * U_total),
    and a phrase saying how it was chosen.

    `reference` is a number in (0, 1] (taken as is) or a rule over the NormShares of the user
    associations with shares > 0, leaving out `dummy` and users named `root`: "median" (the
    default: a typical user; 1/N on a flat one-share-per-user tree), "mean", "min" (the smallest
    share: H is then the strictest user's) or "max". NormShares are recomputed from RawShares;
    when the rows do not form a whole tree (sshare without -a, PrivateData) sshare's printed
    NormShares are used. `damping` does not change shares; it is accepted so callers can pass a
    snapshot's settings as they are. (None, reason) when no user has shares. `exact`: the rows'
    norm_shares(), when the caller has them already (a large tree costs a pass to build).
    """
    del damping  # NormShares do not depend on d
    if not isinstance(reference, str):
        value = float(reference)
        if not 0.0 < value <= 1.0:
            raise ValueError(f"reference share must be in (0, 1], got {value!r}")
        return value, "set in the config"
    if reference not in REFERENCE_RULES:
        raise ValueError(f"reference share rule must be one of {', '.join(REFERENCE_RULES)} or a number, got {reference!r}")
    tl = tree_in_order(rows) if exact is None and isinstance(rows, (list, tuple)) else None
    if tl is not None:  # rows in tree order: classic NormShares from lists, no Tree
        return pick_reference_share(
            [s for r, s in zip(rows, classic_shares_in_order(tl))
             if r.user and r.user != "root" and s > 0 and (r.account, r.user) != dummy],
            reference, dummy_left_out=bool(dummy))
    try:
        shares_by_key = norm_shares(rows) if exact is None else exact
        source = ""
    except TreeError:
        shares_by_key = {_key(r): r.norm_shares or 0.0 for r in rows}
        source = " (sshare's values: incomplete tree)"
    get = shares_by_key.get
    shares = [
        s
        for r in rows
        if r.user and r.user != "root" and (s := get((r.account, r.user), 0.0)) > 0 and (r.account, r.user) != dummy
    ]
    return pick_reference_share(shares, reference, dummy_left_out=bool(dummy), source=source)


def _median(xs: Sequence[float]) -> float:
    """statistics.median (the same sort, the same middle, the same mean of the two middles),
    without importing statistics (fractions, decimal, random) on every tick."""
    s = sorted(xs)
    n = len(s)
    i = n // 2
    return s[i] if n % 2 else (s[i - 1] + s[i]) / 2


def _fmean(xs: Sequence[float]) -> float:
    """statistics.fmean: fsum over the count."""
    return math.fsum(xs) / len(xs)


def pick_reference_share(shares: Sequence[float], reference: str, dummy_left_out: bool = False,
                         source: str = "") -> tuple[float | None, str]:
    """choose_reference_share's rule over the users' NormShares already chosen (those > 0 of the
    user associations, dummy and users named root left out), and its phrase."""
    if not shares:
        return None, "no user with shares"
    pick = {"median": _median, "mean": _fmean, "min": min, "max": max}[reference]
    return float(pick(shares)), f"{reference} NormShares of the user associations" + (
        " (dummy left out)" if dummy_left_out else ""
    ) + source


def remove_associations(rows: Iterable[ShareRow], keys: Collection[Key]) -> tuple[ShareRow, ...]:
    """The tree without the given user associations, their RawUsage taken off every ancestor.

    Used to ask "what would F be without the dummy" (Yalim figure 2 ignores the dummy user).
    Account rows are kept (their shares still count among their siblings).
    """
    rows = tuple(rows)
    t = build_tree(rows)
    delta: dict[Key, float] = {}
    for k in keys:
        if k not in t.rows:
            continue
        if not k[1]:
            raise TreeError(f"only user associations can be removed, not account {k[0]!r}")
        u = float(t.rows[k].raw_usage)
        a = t.parent[k]
        while True:
            delta[a] = delta.get(a, 0.0) + u
            if a == ROOT:
                break
            a = t.parent[a]
    out = []
    for r in rows:
        k = _key(r)
        if k in keys:
            continue
        if k in delta:
            r = r._replace(raw_usage=max(0.0, r.raw_usage - delta[k]))
        out.append(r)
    return tuple(out)


# ---------------------------------------------------------------------------- Yalim figure 2
@dataclass(frozen=True, slots=True)
class ModelOutcome:
    name: str
    damping: float
    n_underflow: int  # users with F < 1e-6 (sshare prints 0)
    n_half: int  # users with F <= 0.5


@dataclass(frozen=True, slots=True)
class ModelComparison:
    n_users: int  # N: user associations considered
    n_active: int  # M: those with RawUsage > 0
    real_usage: float  # root RawUsage without the excluded associations
    reference_share: float
    models: tuple[ModelOutcome, ...]


def model_comparison(
    rows: Sequence[ShareRow],
    configured_damping: float,
    target_halving: float,
    exclude: Collection[Key] = (),
    s_ref: float | None = None,
) -> ModelComparison:
    """Yalim figure 2 on one snapshot: how many users underflow and how many have F <= 0.5
    under four choices of d.

    * "d=1": no control, on the real usage (the `exclude`d dummy removed);
    * "d=N/M": N users, M of them active, rounded to an integer >= 1;
    * "d=u*/ubar": generalised as u* / (S_ref * U_real) (for a flat tree, S_ref = 1/N and this
      is Yalim's u*/ubar); kept as a float, as in the paper (Slurm would take round(d));
    * "configured": the system as it is, dummy included, at `configured_damping`.

    `target_halving` (u*) is in RawUsage units (billing-seconds). Users are the user
    associations other than `exclude` and the `root` user association.
    """
    real_rows = remove_associations(rows, exclude) if exclude else tuple(rows)
    real = compute_fairshare(real_rows, 1.0)
    users = [r for r in real if r.is_user and r.key != ("root", "root")]
    n = len(users)
    m = sum(1 for r in users if r.raw_usage > 0)
    total = next(r.raw_usage for r in real if r.key == ROOT)
    sref = s_ref if s_ref is not None else reference_share(real)
    d_nm = float(max(1, round(n / m))) if m else 1.0
    d_star = target_halving / (sref * total) if total > 0 else 1.0

    def outcome(name: str, d: float, rws: Sequence[ShareRow], skip: Collection[Key]) -> ModelOutcome:
        fs = [
            r.fairshare
            for r in compute_fairshare(rws, d)
            if r.is_user and r.key not in skip and r.key != ("root", "root")
        ]
        return ModelOutcome(name, d, sum(1 for f in fs if f < UNDERFLOW), sum(1 for f in fs if f <= 0.5))

    models = (
        outcome("d=1", 1.0, real_rows, ()),
        outcome("d=N/M", d_nm, real_rows, ()),
        outcome("d=u*/ubar", d_star, real_rows, ()),
        outcome("configured", float(configured_damping), rows, exclude),
    )
    return ModelComparison(n, m, total, sref, models)
