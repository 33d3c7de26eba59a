"""The user's forecast under Fair Tree: rank now and why, what moves it, and when.

Pure (no Slurm, no clock, no files) and standard library only (the forecast's cold-start path).

Under Fair Tree a user's factor is a rank: F = rank / N (fscontrol.model.fairtree). What a user can act
on is therefore not a usage that halves F but the comparisons that place them, one per level of
the tree: at each level their own account (or themselves) against its siblings, by LevelFS =
S / U (S the share of the level's shares, U the share of the parent's usage).

* Decay multiplies every association's usage by the same factor, so it changes no LevelFS and no
  rank: idle time alone never moves anyone. A user moves up only as others are charged.
* The association just above, met at level M through sibling nodes A (the user's side) and B
  (theirs): A passes B once B's side has used x = S_B u_A / S_A - u_B more (u: RawUsage; the
  parent's usage cancels). The same from below: the user may use y = S_A u_C / S_C - u_A more
  before the next lower sibling C passes A, at every level of the user's path; the smallest is
  the budget.
* When: the jobs running at the snapshot (published by the agent) are charged pass by pass to
  their time limits, everyone's usage decays, and the tree is ranked again after each pass.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from collections.abc import Mapping, Sequence

from fscontrol.model.decay import decay_factor_per_second
from fscontrol.model.fairshare import ROOT, Key, build_tree
from fscontrol.model.fairtree import FairTree, compute_fair_tree, place, place_text
from fscontrol.records import ShareRow

HOUR = 3600.0


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


# ---------------------------------------------------------------------------- projection
@dataclass(frozen=True, slots=True)
class RankPoint:
    in_s: float  # seconds after the snapshot
    rank: int
    fairshare: float


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


def changes(points: Sequence[RankPoint], rank0: int) -> list[RankPoint]:
    """The passes at which the rank moves."""
    out, last = [], rank0
    for p in points:
        if p.rank != last:
            out.append(p)
            last = p.rank
    return out


def inf_or(x: float) -> float | None:
    return None if math.isinf(x) else x


# ---------------------------------------------------------------------------- the user's forecast
MAX_POINTS = 120  # tree rankings per forecast, fewer on big trees (bench/bench_parse.py: ~0.3 s a ranking at 100k)


def max_points(n_assocs: int) -> int:
    return max(12, min(MAX_POINTS, int(3_000_000 / max(1, n_assocs))))


def tree_from_published(published: Mapping) -> tuple[ShareRow, ...]:
    """The whole association tree the agent published (needs per-association rows)."""
    from fscontrol.errors import NotFoundError

    if not published.get("per_association"):
        raise NotFoundError(
            "the published snapshot has no per-association rows (PrivateData): under Fair Tree a rank depends "
            "on everyone's usage, so only an admin's `fscontrol status` can show it")
    return tuple(
        ShareRow(a["account"], a["user"], a["parent"], a["depth"], a["raw_shares"], a["shares_parent"],
                 a["norm_shares"], a["raw_usage"], a["norm_usage"], a["effective_usage"], a.get("fairshare"))
        for a in published.get("associations", [])
    )


def running_from_published(published: Mapping, rows: Sequence[ShareRow]) -> dict[Key, list[tuple[float | None, float]]] | None:
    """The running jobs by user association (keyed by privacy.run_key). None when the agent
    could not publish them per user (PrivateData=jobs)."""
    from fscontrol.export.privacy import run_key

    run = published.get("running")
    if not run or not run.get("users_published"):
        return None
    out: dict[Key, list[tuple[float | None, float]]] = {}
    for r in rows:
        if r.user:
            jobs = run["users"].get(run_key(r.account, r.user))
            if jobs:
                out[r.key] = [(e[0], float(e[1])) for e in jobs]
    return out


def _lfs(x: float) -> float | None:
    return None if math.isinf(x) else x


def forecast_data(
    published: Mapping,
    *,
    user: str,
    now: float,
    account: str | None = None,
    requester: str | None = None,
    is_admin: bool = False,
    max_age_s: float = HOUR,
    stale_ok: bool = False,
    horizon_s: float | None = None,
) -> dict:
    """`fscontrol forecast` under Fair Tree, as plain data: for each of the user's associations,
    the rank now and the path that places it, the neighbours above and below with the usage that
    would swap them, the user's budget, and the rank after each coming decay pass with the jobs
    running now going on (nobody starting another)."""
    from fscontrol.errors import NotFoundError
    from fscontrol.forecast.service import _iso, age_text, check_access, check_fresh

    check_access(user, requester if requester is not None else user, is_admin)
    age, stale = check_fresh(dict(published), now, max_age_s, stale_ok)
    cfg = published["config"]
    rows = tree_from_published(published)
    ft = compute_fair_tree(rows)
    by = ft.by_key()
    mine = [a for a in ft.assocs if a.is_user and a.user == user and (account is None or a.account == account)]
    if not mine:
        have = sorted(a.account for a in ft.assocs if a.user == user)
        if have:
            raise NotFoundError(f"user {user!r} has no association in account {account!r} (has: {', '.join(have)})")
        raise NotFoundError(f"unknown user {user!r}: no association for them on {published.get('cluster')}")
    warnings = [stale] if stale else []
    running = running_from_published(published, rows)
    period, half_life = float(cfg.get("calc_period_s") or 0), float(cfg.get("half_life_s") or 0)
    taken = float(published["taken_at"])
    nxt = published.get("next_pass_at")
    first_in = (float(nxt) - taken) if nxt else period  # unknown phase: within one pass
    while period > 0 and first_in <= 0:
        first_in += period
    jobs_left = [left for jobs in (running or {}).values() for left, _ in jobs if left is not None]
    ahead = horizon_s if horizon_s is not None else min(86400.0, max(12 * period, 2 * max(jobs_left, default=0.0)))
    horizon = max(0.0, now - taken) + ahead  # from the snapshot: the passes since it, then `ahead` past now
    passes = 0 if period <= 0 else max(1, int((horizon - first_in) // period) + 1)
    step = max(1, math.ceil(passes / max_points(len(rows))))
    projection: dict[Key, list[RankPoint]] = {}
    if running is not None and passes:
        # every `step`-th pass, charged in between as one interval of step passes
        projection = project_ranks(rows, running, [a.key for a in mine], passes=math.ceil(passes / step),
                                   period_s=period * step, half_life_s=half_life, first_pass_in_s=first_in)
    elif running is None:
        warnings.append("the agent does not publish the running jobs per user here (PrivateData=jobs): "
                        "no projection, only where you stand and what would move you")
    out = []
    for a in mine:
        above, below = neighbours(ft, a.key)
        pts = projection.get(a.key, [])
        due = [p for p in pts if taken + p.in_s >= now - period * step]
        entry = {
            "account": a.account,
            "rank": a.rank,
            "of": ft.n_users,
            # Slurm's rank counts from the bottom (rank N is the first place): said in words too
            "place": None if a.rank is None else place(a.rank, ft.n_users),
            "place_text": place_text(a.rank, ft.n_users),
            "fairshare": a.fairshare,
            "fairshare_sshare": next((r.fairshare for r in rows if r.key == a.key), None),
            "level_fs": _lfs(a.level_fs),
            "path": [
                {"level_of": s.level_of, "name": s.name, "is_user": s.is_user, "level_fs": _lfs(s.level_fs),
                 "place": s.place, "siblings": s.siblings}
                for s in explain(ft, a.key)
            ],
            "above": None if above is None else _neighbour(above, by, ft.n_users),
            "below": None if below is None else _neighbour(below, by, ft.n_users),
            "budget_core_hours": None if (b := budget(ft, a.key)) is None else b / HOUR,
            "projection": [{"at": _iso(taken + p.in_s), "in_s": taken + p.in_s - now, "rank": p.rank,
                            "fairshare": p.fairshare} for p in due],
            "rank_changes": [{"at": _iso(taken + p.in_s), "in_s": taken + p.in_s - now, "rank": p.rank,
                              "place_text": place_text(p.rank, ft.n_users), "fairshare": p.fairshare}
                             for p in changes(due, a.rank or 0)][:5],
        }
        out.append(entry)
    n_jobs = sum(len(j) for j in (running or {}).values())
    return {
        "user": user,
        "requester": requester if requester is not None else user,
        "cluster": published.get("cluster"),
        "priority_mode": "fair_tree",
        "now": _iso(now),
        "snapshot_taken_at": published.get("taken_at_iso"),
        "snapshot_age_s": age,
        "snapshot_age": age_text(age),
        "half_life_s": half_life,
        "calc_period_s": period,
        "pass_phase_known": bool(nxt),
        "passes_per_point": step,
        "assumed": (f"the {n_jobs} job(s) running at the snapshot keep running to their time limits and nobody starts "
                    "another; decay alone changes no rank (every usage decays by the same factor)"),
        "warnings": warnings,
        "associations": out,
    }


def _neighbour(n: Neighbour, by, n_users: int = 0) -> dict:
    return {"user": n.key[1], "account": n.key[0], "rank": n.rank, "place_text": place_text(n.rank, n_users),
            "level_of": n.level_of, "mine": n.mine,
            "theirs": n.theirs, "my_level_fs": _lfs(n.my_level_fs), "their_level_fs": _lfs(n.their_level_fs),
            "usage_core_hours": None if n.usage is None else n.usage / HOUR}


def _place(x: Mapping) -> str:
    """The place in words (older --json data without it: Slurm's rank)."""
    return x.get("place_text") or f"rank {x['rank']}"


def _lf_text(x: float | None) -> str:
    return "inf (no usage)" if x is None else f"{x:.6f}"


def format_forecast(data: Mapping) -> str:
    from fscontrol.export.html import duration_text

    lines = []
    for a in data["associations"]:
        lines.append(f"{data['user']}@{a['account']} on {data['cluster']} (Fair Tree), snapshot {data['snapshot_age']} old:")
        lines.append(f"  {_place(a)} of the user associations: Slurm's rank {a['rank']} of {a['of']} "
                     f"(rank {a['of']} is the first), F = {a['rank']}/{a['of']} = {a['fairshare']:.6f}")
        lines.append("  why, level by level (LevelFS = share of the level's shares / share of the parent's usage):")
        for s in a["path"]:
            who = "you" if s["is_user"] else s["name"]
            lines.append(f"    under {s['level_of']}: {who} LevelFS {_lf_text(s['level_fs'])}, "
                         f"{s['place']} of {s['siblings']}")
        ab = a["above"]
        if ab is None:
            lines.append("  nobody ranks above you")
        else:
            x = ab["usage_core_hours"]
            lines.append(f"  next above: {ab['user']}@{ab['account']} ({_place(ab)}): under {ab['level_of']}, "
                         f"{ab['theirs']} ({_lf_text(ab['their_level_fs'])}) is ahead of {ab['mine']} "
                         f"({_lf_text(ab['my_level_fs'])});")
            lines.append("    you pass them once " + (f"{ab['theirs']} has used {x:,.2f} core-hours more"
                                                       if x is not None else "never by usage alone")
                         + " (your idle time alone changes nothing: everyone decays alike)")
        be = a["below"]
        if be is not None and a["budget_core_hours"] is not None:
            lines.append(f"  your budget: {a['budget_core_hours']:,.2f} core-hours more before anyone now below "
                         f"passes you (next below: {be['user']}@{be['account']}, {_place(be)})")
        if a["projection"]:
            ch = a["rank_changes"]
            if ch:
                first = ch[0]
                lines.append(f"  with the jobs running now: {_place(first)} (rank {first['rank']}, F {first['fairshare']:.6f}) "
                             f"at {first['at']}, in {duration_text(max(0.0, first['in_s']))}"
                             + (f"; then {', '.join(_place(c) for c in ch[1:])}" if len(ch) > 1 else ""))
            else:
                last = a["projection"][-1]
                lines.append(f"  with the jobs running now: {_place(a)} until at least {last['at']}")
            if not data["pass_phase_known"]:
                lines.append("    (pass times unknown to the agent: within one decay pass)")
    lines.append(f"assumed: {data['assumed']}")
    for w in data["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def plot_png(data: Mapping, path: str) -> None:
    """F = rank / N after each coming decay pass, per account, as steps (matplotlib)."""
    from fscontrol.forecast.service import pyplot, save_plot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for a in data["associations"]:
        pts = [(0.0, a["fairshare"])] + [(max(0.0, p["in_s"]) / 60, p["fairshare"]) for p in a["projection"]]
        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=f"{data['user']} @ {a['account']}")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("minutes from now (decay passes)")
    ax.set_ylabel("fair-share factor F = rank / N")
    ax.set_title(f"Fair Tree forecast, {data['cluster']}: the jobs running now go on, nobody starts another")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    save_plot(fig, path)
