"""Classic EffectvUsage beyond the six decimals sshare prints.

Pure: no I/O, no clock. sshare prints slurmctld's EffectvUsage with "%f": half a unit of the
sixth decimal (5e-7) is lost. F = 2^(-(UE/S)/d) divides it by NormShares, so on a large tree
(NormShares ~1e-5, 100,000 associations) a user with no usage of their own, whose UE is a share
of their account's (~5e-8), prints 0.000000 and F comes out 1.000000 where slurmctld has 0.995.

slurmctld computes UE from RawUsage and the tree (`priority_multifactor.c` `set_assoc_usage_norm`,
`_set_assoc_usage_efctv`, `_set_usage_efctv`; `fairshare.effective_usage_step`): NormUsage =
RawUsage / root's RawUsage, then down from root, UE = UN at the first tier, the fs parent's UE for
FairShare=parent, else UN + (UE_fs - UN) * RawShares / level shares. RawUsage is printed whole
(truncated), so the same rule on the printed RawUsage gives UE to about 1 / root's RawUsage.

The two disagree beyond the printed rounding only when slurmctld's figures were not taken at one
moment: while jobs run, a decay pass charges them one after another and sets each association's
NormUsage against root's RawUsage of that moment, and sshare's RawUsage may be a pass newer. There
the printed value (slurmctld's own, to 5e-7) is kept. So `refined_effective_usage` is the
recomputed UE where it is finer than the print and lies within its rounding (the digits sshare
dropped), and sshare's value where it does not.
"""

from __future__ import annotations

from collections.abc import Sequence

from fscontrol.model.fairshare import (
    FS_LEVEL, FS_ROOT, ROOT, TreeError, build_tree, effective_usage_rule, effective_usage_step, tree_in_order,
)
from fscontrol.records import ShareRow

PRINTED_HALF = 5e-7  # half a unit of "%f"'s sixth decimal

__all__ = ["computed_effective_usage", "refined_effective_usage", "PRINTED_HALF"]


def computed_effective_usage(rows: Sequence[ShareRow]) -> list[float] | None:
    """Classic EffectvUsage of every row (aligned with `rows`, root 1.0) from RawUsage, RawShares
    and the tree; None when the rows are not one tree (sshare without -a, PrivateData)."""
    got = _computed(list(rows))
    return None if got is None else got[0]


def _computed(rows: list[ShareRow], tl=None) -> tuple[list[float], list[float]] | None:
    """(UE, its error bound) of every row. sshare prints RawUsage truncated: each NormUsage x/T is
    off by less than (1 + x/T)/T, and taken as exact where RawUsage prints 0 (an association that
    never ran holds exactly 0; a decayed remainder under one billing-second is the case this
    misses). UE is a weighted mean of its chain's NormUsages, and its bound the same mean of theirs."""
    if not rows:
        return None
    root = next((r for r in rows if r.depth == 0), None)
    total = float(root.raw_usage) if root is not None else 0.0
    n = len(rows)
    if total > 0:
        raw = [r.raw_usage for r in rows]
        un = [min(1.0, x / total) for x in raw]
        eu = [((1.0 if x > 0 else 0.0) + u) / total for x, u in zip(raw, un)]
    else:
        un, eu = [0.0] * n, [0.0] * n
    if tl is None:
        tl = tree_in_order(rows)
    if tl is not None:  # sshare's order (and the history's): lists, no Tree (100,000 rows)
        _, par, fsp, lvl, sp, rs = tl
        ue, err = [1.0] * n, [0.0] * n
        for i in range(1, n):
            f = fsp[i]
            if sp[i] and (f != 0 or rows[i].user):  # FairShare=parent: the fs parent's (a user's up to root: 1)
                ue[i], err[i] = ue[f], err[f]
            elif f == 0:
                ue[i], err[i] = un[i], eu[i]
            elif not lvl[f]:
                ue[i], err[i] = ue[f], err[f]
            else:
                w = rs[i] / lvl[f]
                u = un[i]
                ue[i] = u + (ue[f] - u) * w
                err[i] = eu[i] * (1.0 - w) + err[f] * w
        return ue, err
    try:
        t = build_tree(rows)
    except TreeError:
        return None
    at = {(r.account, r.user): i for i, r in enumerate(rows)}
    ue_k, err_k = {ROOT: 1.0}, {ROOT: 0.0}
    for k in t.order[1:]:
        i, f = at[k], t.fs_parent[k]
        kind, w = effective_usage_rule(t, k)
        ue_k[k] = effective_usage_step((kind, w), un[i], ue_k[f])
        err_k[k] = eu[i] if kind == FS_ROOT else (eu[i] * (1.0 - w) + err_k[f] * w if kind == FS_LEVEL else err_k[f])
    return [ue_k[(r.account, r.user)] for r in rows], [err_k[(r.account, r.user)] for r in rows]


def refined_effective_usage(rows: Sequence[ShareRow], tl=None) -> list[float | None]:
    """Each row's EffectvUsage to more than sshare's six decimals.

    The printed value p holds slurmctld's within h = 5e-7; the recomputed one c within its bound e
    (RawUsage's truncation, _computed). Where c is the finer (e < h) and the two agree
    (|c - p| <= h + e), the result is c held inside p's rounding, min(max(c, p - h), p + h):
    exact where sshare's decimals cannot hold the value (a user with no usage of their own under
    a tiny NormShares), never further from slurmctld's value than p can be. Elsewhere it is p:
    on a small cluster (RawUsage too coarse), and where slurmctld's figures are of different
    moments (while jobs run, a decay pass charges them one after another and sets each
    association's NormUsage against root's RawUsage of that moment). The recomputed value where
    sshare printed none; the printed ones all when the rows are not one tree. `tl`: the rows'
    fairshare.tree_in_order, when the caller has it already."""
    rows = list(rows)
    printed = [r.effective_usage for r in rows]
    if tl is None:
        tl = tree_in_order(rows)
    got = _computed(rows, tl)
    if got is None:
        return printed
    # a FairShare=parent user whose chain reaches root: slurmctld's factor is root's (sprio: 2^(-1/d), UE =
    # NormShares = 1), while sshare prints the user's own usage as its EffectvUsage (docs/halving.md)
    to_root = set() if tl is None else {i for i in range(1, len(rows)) if tl[4][i] and tl[2][i] == 0 and rows[i].user}
    h = PRINTED_HALF  # the clamp: p - h and p + h are within h (and an ulp of p) of p
    # min(max(c, p - h), p + h) written out (the same element chosen: max keeps the first unless
    # the other is greater, min likewise): at 100,000 associations the calls were a tenth of `status`
    hh = h * (1 + 1e-9)
    out: list[float | None] = []
    add = out.append
    for i, (c, e, p) in enumerate(zip(*got, printed)):
        if p is None or i in to_root:
            add(c)
        elif e < h and abs(c - p) <= hh + e + 1e-15:
            lo, hi = p - h, p + h
            x = lo if lo > c else c
            add(hi if hi < x else x)
        else:
            add(p)
    return out
