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

The two disagree beyond the printed rounding when slurmctld's figures are not of one moment,
which is always the case on a busy cluster: slurmctld sets the accounts' NormUsage and
EffectvUsage at the start of each decay pass, then charges the running jobs, and sets a user's
when it is first asked after the pass (a pending job's factor, a submission, sshare); jobs that
end between passes are charged at their end. sshare's RawUsage is of the moment it is read. So
`refined_effective_usage` goes down the tree with the value it found for each fs parent, and holds
each association's within what sshare printed of slurmctld's own: EffectvUsage (to 5e-7) and
FairShare (computed by sshare from the full values: on a small share it pins EffectvUsage to
about NormShares * 1e-6). An outside tester's busy 10,516-user tree on 22.05 had 530 user rows
whose F the older rule (recompute, else the printed EffectvUsage) put up to 0.25 from slurmctld's;
this puts every row within the prints' rounding (docs/treezoo.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from fscontrol.model.fairshare import (
    FS_LEVEL, FS_ROOT, ROOT, TreeError, build_tree, classic_shares_in_order, effective_usage_rule, effective_usage_step,
    tree_in_order,
)
from fscontrol.records import ShareRow

from fscontrol.model.fsfactor import PRINTED_HALF, _print_bounds, _within, own_effective_usage  # noqa: F401 (one row's prints)

__all__ = ["computed_effective_usage", "own_effective_usage", "refined_effective_usage", "sprio_lags", "sshare_damping", "sshare_damping_of",
           "PRINTED_HALF", "SPRIO_HALF"]


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


def refined_effective_usage(rows: Sequence[ShareRow], tl=None, norm_shares: Sequence[float] | None = None,
                            d_sshare: int | None = None, d: int | None = None,
                            sprio: Mapping[tuple[str, str], float] | None = None) -> list[float | None]:
    """Each row's EffectvUsage to more than sshare's six decimals: slurmctld's value as closely as
    sshare's figures pin it.

    Three figures bound slurmctld's usage_efctv, each from its own print:
    - EffectvUsage p, within h = 5e-7;
    - FairShare, which sshare computes from the full usage_efctv and shares_norm
      (2^(-(UE/S)/d) with the d of sshare's own slurm.conf), within h: on a small share that
      pins UE to about S h, far finer than p (a user or account of NormShares 1e-5);
    - the rule slurmctld applies (RawUsage over root's, and down the tree from the fs parent's
      value), fine where RawUsage is large, but of another moment: slurmctld sets the accounts'
      NormUsage and EffectvUsage at the start of each decay pass, and a user's when first asked
      after it (a pending job's factor during the pass, a submission, sshare), while RawUsage
      goes on growing as jobs are charged and end (`priority_multifactor.c`
      `_set_children_usage_efctv`, `_get_fairshare_priority`, `assoc_mgr_get_shares`).
    So the value is taken down the tree: each association's from the rule on its own NormUsage
    (RawUsage over root's, held within its printed NormUsage's rounding) and its fs parent's value
    as found, then held within what the two printed figures allow. Exact where sshare's decimals
    cannot hold it (a user with no usage of their own under a tiny NormShares); where the moments
    differ, never further from slurmctld's than its prints. The printed column when the rows are
    not one tree (sshare without -a, PrivateData). `tl`: the rows' fairshare.tree_in_order;
    `norm_shares`: the NormShares slurmctld holds (aligned with the rows; default the classic
    ones from RawShares); `d_sshare`: the d sshare's FairShare used (default: found from the rows,
    else `d`, slurmctld's; a FairShare that disagrees with EffectvUsage is not used). `sprio`:
    sprio's fair-share factor (7 decimals) by (account, user) of the pending jobs, read with the
    rows: slurmctld's own F at its d `d`, which pins EffectvUsage where sshare's FairShare cannot
    (Slurm 22.05's sshare computes it with its slurm.conf's d, not one `scontrol fsdampeningfactor`
    set); not used when it disagrees with the prints (d changed since the pass: sprio_lags)."""
    rows = list(rows)
    printed = [r.effective_usage for r in rows]
    if tl is None:
        tl = tree_in_order(rows)
    if tl is None:  # not in sshare's order: put it in tree order, refine, put it back
        try:
            t = build_tree(rows)
        except TreeError:
            return printed
        at = {(r.account, r.user): i for i, r in enumerate(rows)}
        perm = [at[k] for k in t.order]
        ordered = [rows[i] for i in perm]
        tl2 = tree_in_order(ordered)
        if tl2 is None or len(perm) != len(rows):
            return printed
        ns2 = None if norm_shares is None else [norm_shares[i] for i in perm]
        got = refined_effective_usage(ordered, tl2, ns2, d_sshare, d, sprio)
        out: list[float | None] = [None] * len(rows)
        for j, i in enumerate(perm):
            out[i] = got[j]
        return out
    return _refined_in_order(rows, tl, norm_shares, d_sshare, d, sprio)


def sshare_damping(rows: Sequence[ShareRow], ns: Sequence[float]) -> int | None:
    """The d sshare's FairShare column was computed with (its own slurm.conf's
    FairShareDampeningFactor, which `scontrol fsdampeningfactor` does not change): the median of
    (EffectvUsage / NormShares) / -log2(FairShare) over rows whose prints hold three figures.
    None where no row does (an idle cluster)."""
    ks = []
    for r, s in zip(rows, ns):
        p, f = r.effective_usage, r.fairshare
        if p is None or f is None or r.shares_parent or not s or p < 1e-4 or not 0.02 < f < 0.98:
            continue
        ks.append((p / s) / -math.log2(f))
    if not ks:
        return None
    ks.sort()
    k = round(ks[len(ks) // 2])
    return k if k >= 1 else None


SPRIO_HALF = 5e-8  # sprio -n prints its factors with 7 decimals


def _sprio_bounds(f: float, s: float, d: float) -> tuple[float, float]:
    """What sprio's factor `f` (F = 2^(-(UE/S)/d), 7 decimals) allows of UE."""
    hs = SPRIO_HALF * (1 + 1e-9)
    lo = -math.log2(f + hs) * d * s if f + hs < 1.0 else 0.0
    hi = -math.log2(f - hs) * d * s if f - hs > 0 else math.inf
    return lo, hi


def _sprio_rows(rows: list[ShareRow], tl, ns, sprio, d) -> tuple[dict[int, float], int]:
    """sprio's factors by row index (FairShare=parent users whose chain reaches root left out: theirs
    is root's), and how many of them disagree with the printed EffectvUsage at d."""
    if not sprio or not d:
        return {}, 0
    index, _, fsp, _, sp, _ = tl
    at = {}
    bad = 0
    h = PRINTED_HALF * (1 + 1e-9)
    for k, f in sprio.items():
        i = index.get(k)
        if i is None or not i or f is None or not ns[i] or ns[i] <= 0 or (sp[i] and fsp[i] == 0):
            continue
        at[i] = f
        p = rows[i].effective_usage
        if p is not None:
            lo, hi = _sprio_bounds(f, ns[i], d)
            if lo > (p + h) * (1 + 1e-9) or hi < (p - h) * (1 - 1e-9):
                bad += 1
    return at, bad


def sprio_lags(rows: Sequence[ShareRow], sprio: Mapping[tuple[str, str], float] | None, d: float,
               norm_shares: Sequence[float] | None = None, tl=None) -> int:
    """How many of sprio's factors disagree with sshare's EffectvUsage at slurmctld's d `d`: after
    `scontrol fsdampeningfactor`, the pending jobs keep the factors of the last decay pass (the old
    d) until the next one (0 where there is no tree or no sprio)."""
    rows = list(rows)
    if tl is None:
        tl = tree_in_order(rows)
    if tl is None or not sprio:
        return 0
    ns = list(norm_shares) if norm_shares is not None else classic_shares_in_order(tl)
    return _sprio_rows(rows, tl, ns, sprio, d)[1]


def sshare_damping_of(rows: Sequence[ShareRow]) -> int | None:
    """sshare_damping over a whole tree in sshare's order (its classic NormShares computed here);
    None where the rows are not one tree or none holds three figures."""
    rows = list(rows)
    tl = tree_in_order(rows)
    return None if tl is None else sshare_damping(rows, classic_shares_in_order(tl))


def _refined_in_order(rows: list[ShareRow], tl, norm_shares, d_sshare, d, sprio=None) -> list[float | None]:
    n = len(rows)
    _, par, fsp, lvl, sp, rs = tl
    ns = list(norm_shares) if norm_shares is not None else classic_shares_in_order(tl)
    d_s = d_sshare if d_sshare is not None else (sshare_damping(rows, ns) or d)
    sprio_at, lagging = _sprio_rows(rows, tl, ns, sprio, d)
    if lagging:  # the factors are of another d (or another pass): not slurmctld's now
        sprio_at = {}
    total = float(rows[0].raw_usage)
    h = PRINTED_HALF
    hh = h * (1 + 1e-9)  # a print's rounding, with its last ulp
    hh2 = 2 * hh
    print_bounds = _print_bounds
    ue, err = [1.0] * n, [0.0] * n
    out: list[float | None] = [1.0] + [None] * (n - 1)
    for i in range(1, n):
        r = rows[i]
        x = r.raw_usage
        # NormUsage: RawUsage over root's (truncated: off by < (1 + x/T)/T), held within the
        # printed NormUsage's rounding (slurmctld's, of the moment it was set)
        if total > 0:
            u = x / total
            if u > 1.0:
                u = 1.0
            eu = ((1.0 if x > 0 else 0.0) + u) / total
        else:
            u, eu = 0.0, 0.0
        q = r.norm_usage
        if q is not None and not sp[i]:
            if u < q - h:
                eu += q - h - u
                u = q - h
                if eu > hh2:
                    eu = hh2
            elif u > q + h:
                eu += u - q - h
                u = q + h
                if eu > hh2:
                    eu = hh2
        f = fsp[i]
        if sp[i] and (f != 0 or r.user):  # FairShare=parent: the fs parent's (a user's up to root: 1)
            c, e = ue[f], err[f]
            fs_i = sprio_at.get(i)
            if f != 0 and fs_i is not None:  # a parent user's factor is its fs parent's: held to sprio's
                lo, hi = _sprio_bounds(fs_i, ns[i], d)
                if lo - e <= c <= hi + e:
                    c = lo if c < lo else (hi if c > hi else c)
            ue[i], err[i] = c, e
            out[i] = c
            continue
        if f == 0:
            c, e = u, eu
        elif not lvl[f]:
            c, e = ue[f], err[f]
        else:
            w = rs[i] / lvl[f]
            c = u + (ue[f] - u) * w
            e = eu * (1.0 - w) + err[f] * w
        p = r.effective_usage
        lo, hi = print_bounds(p, r.fairshare, ns[i], d_s)
        fs_i = sprio_at.get(i)
        if fs_i is not None:  # slurmctld's own factor at its d
            lo, hi = _within(lo, hi, *_sprio_bounds(fs_i, ns[i], d))
        half = 0.5 * (hi - lo)
        if e < half and lo - e <= c <= hi + e:  # the rule is the finer, and of the same moment
            v = lo if c < lo else (hi if c > hi else c)
            e = min(e + abs(v - c), half)
        elif math.isinf(half):  # nothing printed: the rule's
            v = c
        else:  # the middle of what the prints allow (the printed value itself, where only it bounds)
            v = p if (p is not None and lo == p - h and hi == p + h) else 0.5 * (lo + hi)
            e = half
        ue[i], err[i] = v, e
        out[i] = v
    return out


def classic_basis(shares: Sequence[ShareRow], prio: Mapping[tuple[str, str], float] | None,
                  d: float) -> tuple[list[float], str, list[float | None], int] | None:
    """What classic `status` computes from a snapshot's rows alone, at slurmctld's d `d`: the
    NormShares slurmctld holds and their form (fairtree.held_shares_in_order: after a reconfigure
    switched Fair Tree off, Slurm 22.05 keeps Fair Tree's until a restart), sshare's EffectvUsage
    with the digits its 6 decimals drop recomputed from RawUsage and the tree
    (refined_effective_usage: at 100,000 associations a user with no usage of their own prints
    0.000000, issue #33), and how many of sprio's factors `prio` lag (sprio_lags). None where the
    rows are not in tree order. The agent computes it once when it writes a snapshot and keeps it
    with it: a quarter of `status --json` at 100,000 associations (issue #31)."""
    from fscontrol.model import fairtree

    tl = tree_in_order(shares) if isinstance(shares, (list, tuple)) else None
    fast = fairtree.held_shares_in_order(shares, "classic", tl=tl)
    if fast is None:
        return None
    held, form, _ = fast
    refined = refined_effective_usage(shares, tl=tl, norm_shares=held, d=d, sprio=prio)
    return held, form, refined, (sprio_lags(shares, prio, d, held, tl) if prio else 0)
