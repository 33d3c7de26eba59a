"""Fair Tree outlooks in the published snapshot: the agent ranks the tree once per publish and
writes each user association's outlook (fscontrol.model.ftoutlook) in its own row, so a user's
`fscontrol forecast` reads only its rows (export.publish.read_published's `users`) instead of
ranking the whole tree itself: at 100,000 associations that is the difference between ~1 s and
13 s of CPU per request (docs/forecast-bounds.md). Also how a published file's rows become the
tree and the running jobs again, for the forecasts that rank the tree themselves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fscontrol.model import ftoutlook as fo
from fscontrol.model.fairshare import Key
from fscontrol.model.fairtree import compute_fair_tree
from fscontrol.records import ShareRow


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


def outlook_plan(published: Mapping, rows: Sequence[ShareRow], running: Mapping | None, now: float,
                 horizon_s: float | None = None) -> fo.Plan:
    """The passes a forecast of `published` made at `now` projects (ftoutlook.plan)."""
    cfg = published["config"]
    jobs_left = [left for jobs in (running or {}).values() for left, _ in jobs if left is not None]
    return fo.plan(period_s=float(cfg.get("calc_period_s") or 0), taken=float(published["taken_at"]),
                   next_pass_at=published.get("next_pass_at"), jobs_left=jobs_left, n_rows=len(rows), now=now,
                   horizon_s=horizon_s)


def published_outlooks(published: Mapping, rows: Sequence[ShareRow]) -> tuple[dict, dict[str, dict]]:
    """Every user association's outlook for the published file (the agent's publish step): the
    head's "fair_tree_outlook" (the plan, N, the jobs it charges) and each user row's "ft", keyed
    by "account/user". The plan covers the forecasts made while the snapshot is fresh."""
    ft = compute_fair_tree(rows)
    running = running_from_published(published, rows)
    taken = float(published["taken_at"])
    p = outlook_plan(published, rows, running, taken)
    watch = [a.key for a in ft.assocs if a.is_user]
    out = fo.outlooks(ft, rows, running, watch, p, float(published["config"].get("half_life_s") or 0))
    head = fo.plan_json(p, valid_until=taken + fo.OUTLOOK_AGE_S, n_users=ft.n_users, running=running is not None,
                        n_jobs=sum(len(j) for j in (running or {}).values()))
    return head, {f"{k[0]}/{k[1]}": fo.to_json(o) for k, o in out.items()}
