"""The user's forecast under Fair Tree: rank now and why, what moves it, and when.

Pure (no Slurm, no clock, no files) and standard library only (the forecast's cold-start path).
The maths are in fscontrol.model.ftoutlook (the module's docstring says what moves a rank). The
agent publishes every user association's outlook in its row (export.publish), so a forecast on a
fresh published snapshot reads only its own rows, whatever the tree's size; otherwise (an older
file, an unpublished snapshot, a longer horizon, a snapshot older than the outlook covers) it
ranks the whole tree itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from fscontrol.export.outlook import outlook_plan, running_from_published, tree_from_published
from fscontrol.model import ftoutlook as fo
from fscontrol.model.fairtree import compute_fair_tree, place, place_text
from fscontrol.records import ShareRow

HOUR = 3600.0
# a published file without outlooks is ranked whole only up to this size (~10,000 associations,
# ~1.5 s; 100,000 associations took 13 s and 915 MiB: docs/forecast-bounds.md)
MAX_WHOLE_TREE_BYTES = 4_000_000


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
    running now going on (nobody starting another). From the rows' published outlooks where
    they serve (can_use_published); else computed here from every row."""
    from fscontrol.errors import NotFoundError
    from fscontrol.forecast.service import _iso, age_text, check_access, check_fresh

    check_access(user, requester if requester is not None else user, is_admin)
    age, stale = check_fresh(dict(published), now, max_age_s, stale_ok)
    cfg = published["config"]
    taken = float(published["taken_at"])
    warnings = [stale] if stale else []
    if can_use_published(published, user):
        from fscontrol.export.publish import PublishedError

        own = [r for r in published.get("associations", []) if r.get("user") == user
               and (account is None or r.get("account") == account)]
        if not own:
            _unknown(user, account, [r.get("account") for r in published.get("associations", []) if r.get("user") == user],
                     published.get("cluster"))
        try:
            head = published["fair_tree_outlook"]
            p, n_users, has_running, n_jobs = (fo.plan_from_json(head), int(head["n_users"]), bool(head["running"]),
                                               int(head["n_jobs"]))
            mine = [(str(r["account"]), r.get("fairshare"), fo.from_json(r["ft"])) for r in own]
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise PublishedError(f"the published Fair Tree outlook is damaged ({type(e).__name__}: {e}): "
                                 "ask your admin to publish again") from None
        end = taken + p.at(p.points - 1) if p.points else taken
        if has_running and p.points and (horizon_s is not None and now + horizon_s > end or now > end):
            warnings.append(f"the agent's projection reaches {_iso(end)} (its published outlook: an hour past the "
                            "snapshot and the default horizon); a longer one needs the whole tree, from an admin")
    else:
        rows = tree_from_published(published)
        ft = compute_fair_tree(rows)
        n_users = ft.n_users
        keys = [a.key for a in ft.assocs if a.is_user and a.user == user and (account is None or a.account == account)]
        if not keys:
            _unknown(user, account, [a.account for a in ft.assocs if a.user == user], published.get("cluster"))
        running = running_from_published(published, rows)
        has_running = running is not None
        n_jobs = sum(len(j) for j in (running or {}).values())
        p = outlook_plan(published, rows, running, now, horizon_s)
        out = fo.outlooks(ft, rows, running, keys, p, float(cfg.get("half_life_s") or 0))
        sshare_f = {r.key: r.fairshare for r in rows}
        mine = [(k[0], sshare_f.get(k), out[k]) for k in keys]
    if not has_running:
        warnings.append("the agent does not publish the running jobs per user here (PrivateData=jobs): "
                        "no projection, only where you stand and what would move you")
    period, step = p.period_s, p.step
    entries = []
    for acct, f_sshare, o in mine:
        pts = [] if o.changes is None else fo.points(p, o.changes, o.rank, n_users)
        due = [q for q in pts if taken + q.in_s >= now - period * step
               and (horizon_s is None or taken + q.in_s <= now + horizon_s + period * step)]
        entries.append({
            "account": acct,
            "rank": o.rank,
            "of": n_users,
            # Slurm's rank counts from the bottom (rank N is the first place): said in words too
            "place": None if o.rank is None else place(o.rank, n_users),
            "place_text": place_text(o.rank, n_users),
            "fairshare": None if o.rank is None else o.rank / n_users,
            "fairshare_sshare": f_sshare,
            "level_fs": _lfs(o.level_fs),
            "path": [{"level_of": s.level_of, "name": s.name, "is_user": s.is_user, "level_fs": _lfs(s.level_fs),
                      "place": s.place, "siblings": s.siblings} for s in o.path],
            "above": None if o.above is None else _neighbour(o.above, n_users),
            "below": None if o.below is None else _neighbour(o.below, n_users),
            "budget_core_hours": None if o.budget is None else o.budget / HOUR,
            # a pass before `now` (a snapshot older than a pass) has passed: said so, never "in 0 min"
            "projection": [{"at": _iso(taken + q.in_s), "in_s": taken + q.in_s - now, "rank": q.rank,
                            "fairshare": q.fairshare, "passed": taken + q.in_s < now} for q in due],
            "rank_changes": [{"at": _iso(taken + q.in_s), "in_s": taken + q.in_s - now, "rank": q.rank,
                              "place_text": place_text(q.rank, n_users), "fairshare": q.fairshare,
                              "passed": taken + q.in_s < now}
                             for q in fo.changes(due, o.rank or 0)][:5],
        })
    return {
        "user": user,
        "requester": requester if requester is not None else user,
        "cluster": published.get("cluster"),
        "priority_mode": "fair_tree",
        "now": _iso(now),
        "snapshot_taken_at": published.get("taken_at_iso"),
        "snapshot_age_s": age,
        "snapshot_age": age_text(age),
        "half_life_s": float(cfg.get("half_life_s") or 0),
        "calc_period_s": float(cfg.get("calc_period_s") or 0),
        "pass_phase_known": bool(published.get("next_pass_at")),
        "passes_per_point": step,
        "assumed": (f"the {n_jobs} job(s) running at the snapshot keep running to their time limits and nobody starts "
                    "another; decay alone changes no rank (every usage decays by the same factor)"),
        "warnings": warnings,
        "associations": entries,
    }


def can_use_published(published: Mapping, user: str | None = None) -> bool:
    """Whether the rows' published outlooks answer the forecast (the agent published them): then
    only the user's own rows are read, whatever the tree's size. The projection is the one the
    agent made: from the snapshot to an hour after it and the default horizon past that; a longer
    --horizon is cut there, and says so (ranking 100,000 associations again per request is what
    this avoids: 13-20 s and over 900 MiB, docs/forecast-bounds.md)."""
    if not published.get("fair_tree_outlook"):
        return False
    # every row of the user's carries its outlook (else the forecast ranks the tree itself, not
    # drops the association)
    return user is None or all(r.get("ft") for r in published.get("associations", []) if r.get("user") == user)


def _unknown(user: str, account: str | None, have: Sequence[str], cluster) -> None:
    from fscontrol.errors import NotFoundError

    if have:
        raise NotFoundError(f"user {user!r} has no association in account {account!r} (has: {', '.join(sorted(have))})")
    raise NotFoundError(f"unknown user {user!r}: no association for them on {cluster}")


def _neighbour(n: fo.Neighbour, n_users: int = 0) -> dict:
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
            passed, ch = split_changes(a)
            if passed:  # the snapshot is older than these passes: they are the past, not "in 0 min"
                last = passed[-1]
                lines.append(f"  since the snapshot ({data.get('snapshot_age', '')} old), projected: {_place(last)} "
                             f"(rank {last['rank']}, F {last['fairshare']:.6f}) at {last['at']}, "
                             f"{ago_text(-last['in_s'])} ago (already passed)")
            if ch:
                first = ch[0]
                lines.append(f"  with the jobs running now: {_place(first)} (rank {first['rank']}, F {first['fairshare']:.6f}) "
                             f"at {first['at']}, in {ago_text(max(0.0, first['in_s']))}"
                             + (f"; then {', '.join(_place(c) for c in ch[1:])}" if len(ch) > 1 else ""))
            elif passed:
                lines.append(f"  with the jobs running now: no further change until at least {a['projection'][-1]['at']}")
            else:
                last = a["projection"][-1]
                lines.append(f"  with the jobs running now: {_place(a)} until at least {last['at']}")
            if not data["pass_phase_known"]:
                lines.append("    (pass times unknown to the agent: within one decay pass)")
    lines.append(f"assumed: {data['assumed']}")
    for w in data["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def split_changes(a: Mapping) -> tuple[list, list]:
    """An association's rank changes as (already passed at `now`, still to come): a forecast
    shown after its snapshot's next pass has some of its projection in the past."""
    ch = list(a.get("rank_changes") or ())
    passed = [c for c in ch if c.get("passed", c["in_s"] < 0)]
    return passed, [c for c in ch if c not in passed]


def ago_text(seconds: float) -> str:
    """How long (ago, or until), in seconds under a minute (duration_text says "0 min")."""
    from fscontrol.export.html import duration_text

    return f"{seconds:.0f} s" if seconds < 60 else duration_text(seconds)


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
