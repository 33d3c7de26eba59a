"""Classic fair-share's formulas for one association, no tree: F from its EffectvUsage and
NormShares, the usage that halves it, the d past which its own usage cannot. fscontrol.model.fairshare
names them too (`fairshare.fairshare_factor`); they live here so the forecast, which needs only
these, does not build fairshare's records at start-up (its four dataclasses: ~20 M instructions,
callgrind). And what one association's printed sshare row pins of its EffectvUsage
(own_effective_usage, named by fscontrol.model.effusage too), for the same reason.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fscontrol.records import ShareRow

PRINTED_HALF = 5e-7  # half a unit of "%f"'s sixth decimal


def fairshare_factor(effective_usage: float, norm_shares: float, damping: float) -> float:
    """F = 2^(-(UE/S)/d), as `priority_p_calc_fs_factor`; 0 for S <= 0."""
    if damping <= 0:
        raise ValueError(f"damping factor must be > 0, got {damping!r}")
    if norm_shares <= 0:
        return 0.0
    return 2.0 ** (-(effective_usage / norm_shares) / damping)


def halving_usage(norm_shares: float, damping: float, total_usage: float) -> float:
    """Usage that halves F for a first-tier association: H = S * d * U_total (Yalim eq. 2-4).

    U_total is root's RawUsage (real usage plus any padding). With one share per user and N
    users, S = 1/N and H = d * mean usage. For deeper associations this is an approximation.
    """
    return norm_shares * damping * total_usage


def usage_to_halve(effective_usage: float, norm_shares: float, damping: float, total_usage: float, *,
                   total_held: bool = False) -> float | None:
    """The extra usage, by this association alone, that halves its classic F: exact for any
    place in the tree (shared accounts, siblings' shares, FairShare=parent).

    Usage x charged to a user goes to the user, every ancestor and root alike, so each NormUsage
    on its path becomes (u_j + x) / (U + x). Classic EffectvUsage is a weighted sum of the path's
    NormUsages whose weights add up to 1 (UE = UA + (UE_parent - UA) s/S_siblings, down from the
    first tier where UE = UA), so UE(x) = (UE U + x) / (U + x). F halves when UE(x) = UE + d S:

        x = d S U / (1 - UE - d S)

    None when that never happens (UE + d S >= 1: the user's own usage alone cannot halve F, as
    UE(x) < 1), or S <= 0, or no usage on the cluster. For a user alone in a first-tier account,
    x differs from Yalim's u / -log2 F = d S U by the factor 1 / (1 - UE - d S) (its own usage
    also grows the total): negligible on a production cluster (d S U is a small part of U), not on
    a small one. The other associations' usage is taken as it is (no one else runs meanwhile).

    `total_held`: the agent applies control, so d follows the total (S_ref d U = u*) and d U stays
    as it is while x is charged: F = 2^(-(UE U)/(S d U)) and UE U grows by x exactly, so F halves
    after H = S d U, wherever the association sits and whatever its EffectvUsage (the d S >= 1 -
    UE limit above is one of a d that stays put)."""
    if norm_shares <= 0 or total_usage <= 0 or damping <= 0:
        return None
    if total_held:
        return norm_shares * damping * total_usage
    room = 1.0 - effective_usage - damping * norm_shares
    if room <= 0:
        return None
    return damping * norm_shares * total_usage / room


def damping_to_halve(effective_usage: float, norm_shares: float) -> float | None:
    """The d below which this association's own usage can halve its classic F: (1 - UE) / S.

    F halves when EffectvUsage grows by d S, and a user's own usage raises it only towards 1
    (usage_to_halve); so at d >= (1 - UE) / S (d S >= 1 - EffectvUsage) it never does, whatever
    the user runs. None for S <= 0 (F is 0 whatever it uses)."""
    if norm_shares <= 0:
        return None
    return max(0.0, 1.0 - effective_usage) / norm_shares


def implied_halving(usage: float, fairshare: float) -> float | None:
    """u / -log2(F) (Yalim table 2): the halving usage this user's F implies; None if undefined."""
    if usage <= 0 or not (0.0 < fairshare < 1.0):
        return None
    return usage / -math.log2(fairshare)


# ---------------------------------------------------------------------------- everything


def _print_bounds(p: float | None, fp: float | None, s: float | None, d_s: float | None) -> tuple[float, float]:
    """(lo, hi): what sshare's printed EffectvUsage `p` and FairShare `fp` allow of slurmctld's
    usage_efctv, for an association of NormShares `s` (slurmctld's, exact) whose FairShare sshare
    computed at d `d_s`: EffectvUsage's rounding, and FairShare's where it agrees with it (where it
    does not, sshare's d is not d_s)."""
    h = PRINTED_HALF
    hh = h * (1 + 1e-9)  # a print's rounding, with its last ulp
    lo, hi = (p - h, p + h) if p is not None else (-math.inf, math.inf)
    if d_s is not None and fp is not None and s and s > 0 and fp - hh < 1.0:
        flo = -math.log2(fp + hh) * d_s * s if fp + hh < 1.0 else 0.0
        fhi = -math.log2(fp - hh) * d_s * s if fp - hh > 0 else math.inf
        lo, hi = _within(lo, hi, flo, fhi)
    return lo, hi


def _within(lo: float, hi: float, olo: float, ohi: float) -> tuple[float, float]:
    """[lo, hi] narrowed to [olo, ohi] where the two bounds agree (overlap, to a relative 1e-9);
    unchanged where they do not (the other figure is of another d or moment)."""
    if olo <= hi * (1 + 1e-9) and ohi >= lo * (1 - 1e-9):
        if olo > lo:
            lo = olo
        if ohi < hi:
            hi = ohi
        if lo > hi:
            lo = hi = 0.5 * (lo + hi)
    return lo, hi


def own_effective_usage(row: ShareRow, norm_shares: float | None, d: float | None) -> float | None:
    """A user's own row as `sshare -u USER` shows it (no tree to go down): slurmctld's EffectvUsage
    as closely as the row's prints pin it, the middle of what its EffectvUsage and FairShare allow
    (FairShare read at `d`, where it agrees), 0 where they allow 0. `norm_shares`: slurmctld's exact NormShares (the
    published tree's), else the printed one."""
    s = norm_shares if norm_shares is not None else row.norm_shares
    if row.effective_usage is None:
        return None
    lo, hi = _print_bounds(row.effective_usage, None if row.shares_parent else row.fairshare, s, d)
    return 0.0 if lo <= 0.0 else 0.5 * (lo + hi)  # 0 where the prints allow it: no usage on the path
