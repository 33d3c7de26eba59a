"""The user's forecast at the cluster's current load: one projection (forecast.projection) from
which every statement comes (issue #28 item 3).

What it assumes, and says it does:
- the jobs running at the snapshot (as published, `running`) run to their time limits;
- the submissions keep coming: each account on the user's path goes on charging at its inflow c
  (the mean charge rate of its recent history, published as `inflow`: the c of the decay ODE
  du/dt = c - lambda u), the user's own excepted (the user's future is the plan). As the running
  jobs end, new ones take their place: an account's charge moves from what runs now, R(0), to c
  in proportion to what still runs, R(t) (1 - c/R(0)) + c;
- where that history is short the inflow is trusted only in part, the rest being the account's
  other usage held where it is (its equilibrium inflow): the naive "it stays where it is";
- the total usage is held when the agent controls the halving, else it moves with the cluster's
  jobs and inflow.

Pure; standard library only (the `fscontrol forecast` cold-start path).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from fscontrol.export.html import duration_text
from fscontrol.forecast.classic import Segment, total_held

TRUST_PASSES = 2.0
MIN_ENDED = 5  # jobs seen to end before the typical end is read from them
BLEND = True  # lean to "it stays where it is" within the inflow's noise (Loaded)
_EQ_REL_VAR = 0.0  # the equilibrium inflow's own relative variance (the usage is a long average: 0)  # an inflow read over this many decay passes (or more) is trusted in full


class Loaded:
    """One projection for one association and one plan, with what it assumed.

    The share it reports is the projection's, blended with "it stays where it is" as far as the
    inflow's own noise could account for the change it projects: with v_k the variance the
    inflow's uncertainty (`sigma`, billing-seconds per second, weighted) puts on the usage after
    pass k, and D_k the projected change of the share, the share is now + D_k x D_k^2 / (D_k^2 +
    v_k). A change well beyond the noise (a user recovering from a run) stands; one within it
    (an account in equilibrium, read from a short, noisy window) leans to the naive guess, which
    is then as good as any."""

    def __init__(self, proj, period: float, s: float, d: float, f_now: float, assumed: str, trust: float,
                 inflow_rate: float, sigma: float = 0.0, share_now: float | None = None) -> None:
        self.proj, self.period, self.s, self.d = proj, period, s, d
        self.f_now, self.assumed, self.trust, self.inflow_rate = f_now, assumed, trust, inflow_rate
        self.sigma = sigma
        self.share_now = share_now

    def share(self, k: int) -> float:
        """The usage share after pass k, blended (see the class)."""
        return self._blended(k, self.proj.share(k))

    def shares(self, ks) -> list[float]:
        """[share(k) for k in ks], ks ascending (Projection.shares: each track walked once)."""
        return [self._blended(k, x) for k, x in zip(ks, self.proj.shares(ks))]

    def share_floor(self, ka: int, kb: int) -> float:
        """A lower bound of share(k) over passes ka..kb (Projection.share_floor's, blended): the
        blend share_now + D^3 / (D^2 + v_k) rises with D, and v_k with k, so the projection's
        floor and the span's v at its end (its start where D < 0) bound it."""
        x = self.proj.share_floor(ka, kb)
        if not self.sigma or self.share_now is None or math.isinf(x):
            return x
        delta = x - self.share_now
        v = self._spread(kb if delta >= 0 else ka)
        d2 = delta * delta
        out = x if d2 + v <= 0 else self.share_now + delta * d2 / (d2 + v)
        return out - 1e-9 * (abs(self.share_now) + abs(x))

    def _spread(self, k: int) -> float:
        """v_k: the variance the inflow's uncertainty puts on the share after pass k (grows with k)."""
        fp = self.proj.fp
        grow = (k + 1) * self.period if fp >= 1 else self.period * fp * (1 - fp ** (k + 1)) / (1 - fp)
        return (self.sigma * grow / self.proj.total0) ** 2

    def _blended(self, k: int, x: float) -> float:
        if not self.sigma or self.share_now is None or math.isinf(x):
            return x
        v = self._spread(k)
        delta = x - self.share_now
        d2 = delta * delta
        return x if d2 + v <= 0 else self.share_now + delta * d2 / (d2 + v)

    def limit(self) -> float:
        x = self.proj.limit()
        if not self.sigma or self.share_now is None or math.isinf(x) or self.proj.fp >= 1:
            return x
        fp = self.proj.fp
        v = (self.sigma * self.period * fp / (1 - fp) / self.proj.total0) ** 2
        delta = x - self.share_now
        return self.share_now + delta * delta * delta / (delta * delta + v) if delta * delta + v > 0 else x

    def fairshare(self, k: int) -> float:
        """F after pass k (k = -1: now)."""
        if k < 0:
            return self.f_now
        return self.f_of(self.share(k))

    def fairshares(self, ks) -> list[float]:
        """[fairshare(k) for k in ks], ks ascending (-1 first, if at all): the same floats, each
        track walked once."""
        head = [self.f_now] if ks and ks[0] < 0 else []
        return head + [self.f_of(x) for x in self.shares(ks[len(head):])]

    def f_of(self, share: float) -> float:
        if math.isinf(share):
            return 0.0
        return 2.0 ** (-(share / self.s) / self.d)

    def share_for(self, target: float) -> float:
        return -self.s * self.d * math.log2(target)

    def t(self, k: int) -> float:
        """Seconds from the snapshot's pass to pass k's (pass 0 is the next one)."""
        return (k + 1) * self.period

    def passes(self, seconds: float) -> int:
        return max(1, round(seconds / self.period))

    def time_to(self, target: float, after: int = -1, half_life_s: float = 0.0) -> tuple[float | None, float]:
        """(seconds from now until F >= target, idling after pass `after`; None when it never
        comes at this load) and the F the projection settles at."""
        settles = self.f_of(self.limit())
        if self.fairshare(after) >= target:
            return 0.0, settles
        x = self.share_for(target)
        k0 = max(0, after + 1)
        horizon = self.proj.events(k0)[-1] + self.passes(20 * max(half_life_s, self.period))
        k = self.proj.first_at_or_below(x, k0, k_max=horizon, share=self.share, shares=self.shares,
                                        floor=self.share_floor)
        return (None if k is None else self.t(k)), settles


def build(r, rows: Sequence, published: dict, plan: Sequence[Segment], d: float, total: float,
          pending_job: int | None = None, others_stopped: bool = False) -> Loaded | str:
    """The projection for the user's association `r` (a ShareRow) with `plan` from now, or why
    there is none (a sentence). `others_stopped`: the user's account-mates (every other user
    of the accounts on the path) stop now, their running jobs and their inflow with them; the
    user's own running jobs go on (they keep charging the user and their accounts)."""
    from fscontrol.export.privacy import ORDER_JOB_ID, run_key
    from fscontrol.forecast.classic import path_weights
    from fscontrol.forecast.projection import Projection

    running = published.get("running")
    cfg = published["config"]
    period, half_life = float(cfg.get("calc_period_s") or 0), float(cfg.get("half_life_s") or 0)
    if running is None:
        return "the published snapshot has no running jobs (an older agent)"
    weights = path_weights(rows, r.key)
    if weights is None or period <= 0 or not r.norm_shares or total <= 0:
        return "the jobs running now could not be projected (your account rows are not visible)"
    scope = _scope_of(running)
    inflow = published.get("inflow") or {}
    q = inflow.get("left_ratio")
    from fscontrol.export import runsorted
    from fscontrol.forecast.projection import sorted_jobs

    cluster_in = running["cluster"]  # sorted once a snapshot (the file's running_sorted, or here)
    srt = _same(scope, ("sorted", cluster_in), lambda: runsorted.of_entries(cluster_in))
    if q is not None and 0 < q < 1 and int(inflow.get("left_ratio_jobs") or 0) >= MIN_ENDED:
        base, q = srt, float(q)
        srt = _same(scope, ("typical_end", base, q), lambda: runsorted.scaled(base, q))
    else:
        q = None

    def listed(part: str, key: str) -> list:  # a published list, each time left cut to its typical end (q of it)
        got = (running.get(part) or {}).get(key) or []
        return got if q is None else [[None if e[0] is None else e[0] * q, *e[1:]] for e in got]

    own_tok = run_key(*r.key)
    mine = listed("users", own_tok)
    own_ids = {e[2] for e in mine if len(e) > 2 and e[2] is not None}
    c_own = float((inflow.get("users") or {}).get(own_tok, 0.0))
    var_own = float((inflow.get("users_var") or {}).get(own_tok, 0.0))
    snapshots, span = int(inflow.get("snapshots") or 0), float(inflow.get("span_s") or 0.0)
    trust = 0.0 if snapshots < 3 else min(1.0, span / (TRUST_PASSES * period))
    from fscontrol.model.decay import decay_factor_per_second

    fp = decay_factor_per_second(half_life) ** period
    by = {x.key: x for x in rows}
    jobs, inflow_jobs, c_weighted, said, var_w = [], [], 0.0, [], 0.0
    for k, w in weights.items():
        if k[1]:  # the user's own association: their running jobs; their future is the plan
            jobs += [(e[0], e[1], w) for e in mine]
            continue
        group = listed("accounts", run_key(k[0]))
        if others_stopped:  # only the user's own jobs charge the account (by id; else their own list)
            group = [e for e in group if len(e) > 2 and e[2] in own_ids] if own_ids else mine
            jobs += [(e[0], e[1], w) for e in group]
            said.append(f"{k[0]} 0")
            continue
        jobs += [(e[0], e[1], w) for e in group]
        others = [e for e in group if not (len(e) > 2 and e[2] in own_ids)]
        r0 = math.fsum(e[1] for e in others)
        tok = run_key(k[0])
        c_hist = max(0.0, float((inflow.get("accounts") or {}).get(tok, 0.0)) - c_own)
        var = max(0.0, float((inflow.get("accounts_var") or {}).get(tok, 0.0)) - var_own)  # the others' noise
        u_others = max(0.0, float(by[k].raw_usage) - float(r.raw_usage)) if k in by else 0.0
        c_eq = u_others * (1 - fp) / (period * fp) if fp < 1 else 0.0  # their usage held where it is
        kappa = trust * _shrink(c_hist - c_eq, var)
        c = c_eq + kappa * (c_hist - c_eq)
        var_w += (w * kappa) ** 2 * var + (w * (1 - kappa) * c_eq) ** 2 * _EQ_REL_VAR
        c_weighted += w * c
        if r0 > 0:
            inflow_jobs += [(e[0], -w * e[1] * c / r0) for e in others]
        said.append(f"{k[0]} {c:,.1f}")

    by_id = running.get("order", ORDER_JOB_ID) == ORDER_JOB_ID  # else ranks (PrivateData=jobs): no job id to compare

    def early(e) -> bool:  # listed before the pending job the forecast is for (a new job; ranks or groups: all)
        return not by_id or (len(e) > 2 and e[2] is not None and (pending_job is None or e[2] < pending_job))

    cluster_all = srt
    held = total_held(published, d)
    d_pass = _controlled_damping(published, d, total) if held else None
    t_in, t_jobs = 0.0, ()
    if not held:
        r0 = srt.r0
        c_cl = float(inflow.get("cluster") or 0.0)
        c_eq = total * (1 - fp) / (period * fp) if fp < 1 else 0.0
        t_in = c_eq + trust * _shrink(c_cl - c_eq, float(inflow.get("cluster_var") or 0.0)) * (c_cl - c_eq)
        if r0 > 0:  # (amounts -c x rate: among equal times left, in the rates' descending order when c > 0)
            t_jobs = _same(scope, ("t_jobs", srt, t_in, period, half_life), lambda: sorted_jobs(
                srt.lefts, [-a * t_in / r0 for a in (srt.rates_down_in_ties() if t_in > 0 else srt.rates)],
                [-a * t_in / r0 for a in srt.untimed_rates()], period_s=period, half_life_s=half_life, future=True))

    def cluster_jobs():  # the cluster's, charged once a snapshot
        return _same(scope, ("jobs", srt, period, half_life), lambda: sorted_jobs(
            srt.lefts, srt.rates, srt.untimed_rates(), period_s=period, half_life_s=half_life))

    def early_jobs():  # listed before the pending job: all of them when each has its place and no job is named
        if not by_id or (srt.all_ids and pending_job is None):
            return cluster_jobs()

        def make():
            keep = [i for i, j in enumerate(srt.ids) if j >= 0 and (pending_job is None or j < pending_job)]
            return sorted_jobs([srt.lefts[i] for i in keep], [srt.rates[i] for i in keep],
                               [a for a, j in srt.untimed if j is not None and (pending_job is None or j < pending_job)],
                               period_s=period, half_life_s=half_life)
        return _same(scope, ("early", srt, pending_job, period, half_life), make)
    ue0 = r.effective_usage or 0.0
    # after the pass just past, the weighted usage is known: the RawUsages sshare shows now
    u_first = math.fsum(w * float(by[k].raw_usage) for k, w in weights.items()) if all(k in by for k in weights) else None
    proj = Projection(ue0 * total, total, period_s=period, half_life_s=half_life, weighted_jobs=jobs,
                      cluster_jobs=None if held else cluster_jobs(),
                      plan=plan, self_weight=weights.get(r.key, 0.0), own0=float(r.raw_usage),
                      own_jobs=[tuple(e[:2]) for e in mine], own_early=[tuple(e[:2]) for e in mine if early(e)],
                      early_jobs=early_jobs(),
                      inflow=c_weighted, inflow_jobs=inflow_jobs, total_inflow=t_in, total_inflow_jobs=t_jobs,
                      u_first=u_first, total_first=None if held else total, cache=scope.cache)
    from fscontrol.model.fsfactor import fairshare_factor

    f_now = fairshare_factor(ue0, r.norm_shares, d)
    own = "" if running.get("users_published") or running.get("own_users_published") else \
        " (your own running jobs are not published here: PrivateData)"
    job = f"your pending job {pending_job}" if pending_job is not None else "a job you submit now"
    if trust >= 1:
        src = f"their rate over the last {_dur(span)}"
    elif trust > 0:
        src = f"{trust:.0%} their rate over the last {_dur(span)}, {1 - trust:.0%} their usage held where it is"
    else:
        src = "their usage held where it is (no history of their rate yet)"
    ends = "to their time limits" if q is None else f"to their typical end ({q:.0%} of the time to their limits)"
    withheld = int(running.get("cluster_withheld") or 0)
    jobs_now = (f"the jobs running now ({len(cluster_all)} group(s) of several users' jobs, PrivateData=jobs"
                + (f"; {withheld} job(s) too few to hide in a group left out" if withheld else "") + ")"
                if running.get("cluster_grouped") else f"the {len(cluster_all)} job(s) running now")
    assumed = (f"{jobs_now} run {ends}; your accounts' other users keep "
               f"submitting: {src} ({', '.join(said) or 'none'} CPUs); "
               f"{_held_text(published, d_pass) if held else 'the total usage moves with the cluster'}{own}; "
               f"the priority of {job}")
    return Loaded(proj, period, r.norm_shares, d if d_pass is None else d_pass, f_now, assumed, trust, c_weighted,
                  sigma=math.sqrt(var_w) if BLEND else 0.0, share_now=ue0)


_SAME_MAX = 8  # a snapshot's derived lists (_same): typical_end, r0, t_jobs, jobs, and a few pending jobs' "early"


class _Scope:
    """What the forecasts on one snapshot share: the cluster's job lists derived from it (_same)
    and the projections' Cache."""

    def __init__(self, running: dict) -> None:
        from fscontrol.forecast.projection import Cache

        self.running = running
        self.cache = Cache()
        self.same: dict[tuple, tuple] = {}


_scope: _Scope | None = None  # the snapshot last forecast on (its `running`), and its caches


def _scope_of(running: dict) -> _Scope:
    """The caches of the snapshot whose published `running` this is (the same object while the
    process answers from one snapshot: the web page's index parses it once). Another snapshot's
    gets new, empty caches and the old ones go with it: a process holds one snapshot's derived
    lists and charges, however many snapshots the agent publishes (issue #31 item 2: module-wide
    memos of 16 and 32 entries held ~16 snapshots' job lists, +90 MiB a replaced snapshot at 1M
    jobs). A request still on the old snapshot keeps its own scope until it ends."""
    global _scope
    scope = _scope
    if scope is None or scope.running is not running["cluster"]:  # (a reader's own copy of `running` keeps it)
        scope = _scope = _Scope(running["cluster"])
    return scope


def _same(scope: _Scope, key: tuple, make: Callable[[], Any]) -> Any:
    """make(), the same object again while key[1] (a list of the published snapshot, which no one
    changes) is the same object: a process that answers many users from one snapshot (the web
    page) derives the cluster's job lists once, and the projection then finds its shared charges
    by identity (forecast.projection._jobs). The entry keeps the object, so its id is never a
    later object's. Kept in the snapshot's `scope`, at most _SAME_MAX, the least recently used
    first out."""
    ident = (key[0], id(key[1]), *key[2:])
    cache = scope.cache
    hit = cache.get(scope.same, ident)
    if hit is not None and hit[0] is key[1]:
        return hit[1]
    val = make()
    cache.put(scope.same, ident, (key[1], val), _SAME_MAX)
    return val


def _controlled_damping(published: dict, d: float, total: float) -> float | None:
    """The d the coming passes read, in the projection's terms (its usage share is u / the total
    now): the controller sets d so that S_ref d U = u* at each pass (hybrid: padding makes up the
    rounding of its integer d; damping: the nearest d), so S_ref d_k U_k = u* and F_k =
    2^(-u_k S_ref / (s u*)) = 2^(-(u_k / U_now) / (s d')) with d' = u* / (S_ref U_now). The d and
    U of the snapshot are NOT what the next pass reads while the load grows: the snapshot comes
    just after a pass has charged the running jobs, and the controller lowers d for the new U
    before the next pass (testbed, seed 11: S_ref d U at the snapshot 1.13-1.26 u*, at the passes
    1.005-1.036 u*; a forecast that held the snapshot's d U missed sprio by 15-17%). None when
    the target or the reference share is not published (then the snapshot's d U is held)."""
    u_star_ch, s_ref = published.get("target_core_hours"), published.get("reference_share")
    if not u_star_ch or not s_ref or total <= 0:
        return None
    d_pass = float(u_star_ch) * HOUR / (float(s_ref) * total)
    return d_pass if d_pass >= 1 else None  # below 1 the controller cannot hold it (d's floor)


def _held_text(published: dict, d_pass: float | None) -> str:
    if d_pass is None:
        return "the agent holds the total usage"
    u = float(published["target_core_hours"])
    return (f"the agent holds the halving at its target ({u:,.0f} core-hours for the reference share; it sets d "
            f"for the usage each pass reads)" if u >= 100 else
            f"the agent holds the halving at its target ({u:.3g} core-hours for the reference share; it sets d "
            f"for the usage each pass reads)")


def _shrink(diff: float, var: float) -> float:
    """How much of the history's rate to take over the equilibrium's: diff^2 / (diff^2 + var), the
    share of the difference that is more than the history's own noise (a James-Stein style
    shrinkage toward "their usage stays where it is")."""
    d2 = diff * diff
    return 1.0 if d2 + var <= 0 else d2 / (d2 + var)


def _dur(s: float) -> str:
    return f"{s / 60:.0f} min" if s < 7200 else (f"{s / 3600:.1f} h" if s < 172800 else f"{s / 86400:.1f} days")


DAY = 86400.0
HOUR = 3600.0


def _days(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / DAY


def apply(a: dict, idle: Loaded, planned: Loaded | None, plan_end: float, target: float, half_life_s: float,
          horizon_s: float | None, points: int,
          others_stopped: Loaded | Callable[[], Loaded | None] | None = None) -> None:
    """Every statement of association `a` (service._one's dict) from the projections: the
    headline recovery (idling from now: `idle`), and with a plan (`planned`, the same projection
    with the plan's charges) F at its end, the lowest F, the recovery after it, and the chart.
    `others_stopped` (build's): the same with the account-mates stopped and the user's own
    running jobs going on, for "what would change it" (without it: the everyone-stopped model's).
    Given as a function (the web page's), it is built only where its answer is said: where the
    recovery does not come at the current load (elsewhere recovery.if_others_stopped_days is None:
    at 99,803 associations it was 15 of a page's 41 ms; issue #31)."""
    stopped_days = a.get("idle_days_to_target")  # the everyone-stopped model's, as "what would change it"
    rec, settles = idle.time_to(target, -1, half_life_s)
    if callable(others_stopped):
        if rec is None:
            others_stopped = others_stopped()
        else:
            others_stopped = stopped_days = None  # not said: not built
    if others_stopped is not None:
        t_stop, _ = others_stopped.time_to(target, -1, half_life_s)
        stopped_days = _days(t_stop)
    a["idle_days_to_target"] = _days(rec)
    a["recovery"] = {"reachable": rec is not None, "settles_at_fairshare": settles,
                     "if_others_stopped_days": stopped_days}
    a["idle_to_target_text"] = when_text(_days(rec), settles, stopped_days)
    a["model"] = "current load"
    a["assumed"] = idle.assumed
    if a.get("note") and not a.get("exact"):
        a["note"] = ("an approximation: your account's other usage counts in your EffectvUsage (you are below the "
                     "first tier); it is projected at the current load (see assumed)")
    use = planned or idle
    n_plan = use.passes(plan_end) if planned is not None else 0
    if planned is not None:
        end_k = n_plan - 1
        cands = [-1] + planned.proj.events(0, end_k)
        low_k = max(zip(planned.fairshares(cands), cands), key=lambda c: (-c[0], -c[1]))[1]  # the lowest F, the earliest such pass
        after, settles_after = planned.time_to(target, end_k, half_life_s)
        after = None if after is None else max(0.0, after - planned.t(end_k))
        stopped_after = (a.get("after_plan") or {}).get("idle_days_to_target")
        a["after_plan"] = dict(a.get("after_plan") or {},
                               fairshare=planned.fairshare(end_k),
                               lowest_fairshare=planned.fairshare(low_k),
                               lowest_at_days=0.0 if low_k < 0 else planned.t(low_k) / DAY,
                               idle_days_to_target=_days(after),
                               idle_to_target_text=when_text(_days(after), settles_after, None),
                               fairshare_if_everyone_stopped=(a.get("after_plan") or {}).get("fairshare"),
                               idle_days_to_target_if_everyone_stopped=stopped_after)
        a["assumed"] = planned.assumed
    if horizon_s is None:
        tail = max(1.2 * rec if rec else 0.0, half_life_s, 10 * use.period)
        if planned is not None:
            after = (a["after_plan"]["idle_days_to_target"] or 0.0) * DAY
            tail = max(1.2 * after, half_life_s, 10 * use.period)
        horizon_s = plan_end + tail
    n = max(2, points)
    ks: list[int] = []
    for i in range(n):
        t = horizon_s * i / (n - 1)
        k = -1 if i == 0 else max(0, round(t / use.period) - 1)
        if not ks or k != ks[-1]:  # ascending: a repeat is the last one
            ks.append(k)
    usage = use.proj.usages(ks[1:])  # each track walked once: the same floats as at(k) one by one
    traj = [{"days": round((0.0 if k < 0 else use.t(k)) / DAY, 6), "fairshare": round(f, 6),
             "effective_usage_core_hours": None if k < 0 else round(usage[i - 1] / HOUR, 3)}
            for i, (k, f) in enumerate(zip(ks, use.fairshares(ks)))]
    if traj:
        traj[0]["effective_usage_core_hours"] = a.get("effective_usage_core_hours")
    a["trajectory"] = traj
    a["horizon_days"] = (traj[-1]["days"] if traj else horizon_s / DAY)


def when_text(days: float | None, settles: float | None = None, if_stopped_days: float | None = None) -> str:
    """'in 12 min', 'already there', or where it never comes at this load, what would change it."""
    if days == 0:
        return "already there"
    if days is not None:
        return "in " + duration_text(days * DAY)
    out = "not at the current load"
    if settles is not None:
        out += f" (F settles near {settles:.4f})"
    if if_stopped_days is not None:
        out += f"; if your account's other users stopped: in {duration_text(if_stopped_days * DAY)}"
    return out
