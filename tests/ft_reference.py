"""The Fair Tree outlook as it was first written (issue 28), one user at a time, scanning the
whole tree for every question: the slow, independent reference that fscontrol.model.ftoutlook's
indexed, all-users-at-once versions are checked against (tests/test_ftoutlook.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fscontrol.model.decay import decay_factor_per_second
from fscontrol.model.fairshare import ROOT, Key, build_tree
from fscontrol.model.fairtree import FairTree
from fscontrol.model.ftoutlook import Neighbour, RankPoint, Step
from fscontrol.records import ShareRow


def _node_path(ft: FairTree, key: Key) -> list[Key]:
    """The nodes from the first level below root down to `key`, following fs parents."""
    by = ft.by_key()
    path = [key]
    while True:
        a = by[path[-1]]
        up = (a.fs_parent, "")
        if up == ROOT or not a.fs_parent:
            break
        path.append(up)
    return list(reversed(path))


def _siblings(ft: FairTree, node: Key) -> list[Key]:
    by = ft.by_key()
    fs = by[node].fs_parent
    return [a.key for a in ft.assocs if a.key != ROOT and a.fs_parent == fs]


def explain(ft: FairTree, key: Key) -> list[Step]:
    """The user's path from the top level down, with their node's place at each level."""
    by = ft.by_key()
    steps = []
    for node in _node_path(ft, key):
        sibs = _siblings(ft, node)
        lf = by[node].level_fs
        higher = sum(1 for s in sibs if s != node and by[s].level_fs > lf)
        steps.append(Step(by[node].fs_parent or "root", node[1] or node[0], bool(node[1]), lf, higher + 1, len(sibs)))
    return steps


def _meet(ft: FairTree, mine: Key, theirs: Key) -> tuple[Key, Key]:
    """The two sibling nodes under the first common fs ancestor of two user associations."""
    a, b = _node_path(ft, mine), _node_path(ft, theirs)
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[i], b[i]


def _usage_to_pass(ft: FairTree, low: Key, high: Key) -> float | None:
    """The usage `high`'s side must gain for `low` to rank above it (siblings; None: never,
    e.g. `low` has no shares, or `high` is a FairShare=parent account)."""
    by = ft.by_key()
    lo, hi = by[low], by[high]
    if lo.norm_shares <= 0 or lo.raw_usage <= 0:
        return 0.0 if lo.norm_shares > 0 else None  # no usage: LevelFS inf, already level or above
    if hi.shares_parent:
        return None
    return max(0.0, hi.norm_shares * lo.raw_usage / lo.norm_shares - hi.raw_usage)


def neighbours(ft: FairTree, key: Key) -> tuple[Neighbour | None, Neighbour | None]:
    """The next user association above `key` (the first with a higher rank, in walk order) and
    the next below, with the usage that would swap each pair."""
    by = ft.by_key()
    me = by[key]
    walk = list(ft.ranking)
    i = walk.index(key)
    above = next((k for k in reversed(walk[:i]) if by[k].rank > me.rank), None)
    below = next((k for k in walk[i + 1:] if by[k].rank < me.rank), None)
    out: list[Neighbour | None] = []
    for other, up in ((above, True), (below, False)):
        if other is None:
            out.append(None)
            continue
        a, b = _meet(ft, key, other)
        usage = _usage_to_pass(ft, a, b) if up else _usage_to_pass(ft, b, a)
        out.append(Neighbour(other, by[other].rank or 0, by[a].fs_parent or "root", a[1] or a[0], b[1] or b[0],
                             by[a].level_fs, by[b].level_fs, usage))
    return out[0], out[1]


def budget(ft: FairTree, key: Key) -> float | None:
    """The usage this user association can add before any association now below it passes it:
    at every level of its path, its node against the next lower sibling (None: nobody below)."""
    by = ft.by_key()
    best: float | None = None
    for node in _node_path(ft, key):
        lf = by[node].level_fs
        lower = [s for s in _siblings(ft, node) if s != node and by[s].level_fs < lf and not by[s].shares_parent]
        if not lower:
            continue
        nxt = max(lower, key=lambda s: by[s].level_fs)
        y = _usage_to_pass(ft, nxt, node)
        if y is not None and (best is None or y < best):
            best = y
    return best


def project_ranks(
    rows: Sequence[ShareRow],
    running: Mapping[Key, Sequence[tuple[float | None, float]]],
    watch: Sequence[Key],
    *,
    passes: int,
    period_s: float,
    half_life_s: float,
    first_pass_in_s: float,
) -> dict[Key, list[RankPoint]]:
    """Rank and F of the `watch`ed user associations after each of the next `passes` decay
    passes, the first `first_pass_in_s` after the snapshot, then every `period_s`.

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
    n_users = sum(1 for k in t.rows if k[1])
    f = decay_factor_per_second(half_life_s)
    usage = {k: float(r.raw_usage) for k, r in t.rows.items()}
    out: dict[Key, list[RankPoint]] = {k: [] for k in watch}
    prev = first_pass_in_s - period_s
    for n in range(passes):
        at = first_pass_in_s + n * period_s
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
        for k in watch:
            out[k].append(RankPoint(at, ranks[k], ranks[k] / n_users))
        prev = at
    return out
