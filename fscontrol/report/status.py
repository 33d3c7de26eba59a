"""`fscontrol status`: the admin's view of a snapshot as data (--json) and text, classic and Fair Tree. Pure: no Slurm, no clock."""

from __future__ import annotations

import math
from dataclasses import replace
from collections import Counter
from collections.abc import Iterator, Sequence

from fscontrol.model import effusage, fairshare
from fscontrol.model.fairshare import UNDERFLOW
from fscontrol.records import ShareRow
from fscontrol.slurm import privatedata
from fscontrol.store.history import StatusBasis, StoredSnapshot, prio_fairshare_of
from fscontrol.report.control import _control_history, _pass_when, damping_after, holds_total  # noqa: F401 (status's own names)
from fscontrol.report.table import Field, HOUR, StatusTable, _duration, _fmt, _iso, pick_fields, sparkline, table_lines


def _snapshot_head(snap: StoredSnapshot) -> dict:
    """What every status says first: the snapshot and the cluster's priority settings."""
    cfg = snap.config
    return {
        "cluster": snap.cluster,
        "snapshot_id": snap.id,
        "taken_at": _iso(snap.taken_at),
        "source": snap.source,
        "slurm_version": cfg.slurm_version,
        "priority_mode": cfg.mode,
        "priority_flags": list(cfg.priority_flags),
        "damping_factor": cfg.damping_factor,
        "half_life_s": cfg.half_life_s,
        "calc_period_s": cfg.calc_period_s,
    }


def _select(rows, users, only_users: Sequence[str], only_accounts: Sequence[str], cluster: str) -> tuple[set, set[str]]:
    """-u/-A as sshare takes them: the keys of the user rows shown (those users, under those
    accounts' subtrees) and the account rows a --tree shows (the path down to each user shown,
    within the accounts asked for). `rows`/`users`: anything with account, user and parent.
    NotFoundError names what the snapshot does not have."""
    from fscontrol.errors import NotFoundError

    parent = {r.account: r.parent for r in rows if not r.user}

    def ancestors(account: str) -> list[str]:
        out, a, hops = [], account, 0
        while a and hops < 64:
            out.append(a)
            a, hops = parent.get(a, ""), hops + 1
        return out

    known_users = {u.user for u in users}
    unknown = [x for x in only_users if x not in known_users] + [a for a in only_accounts if a not in parent]
    if unknown:
        raise NotFoundError(f"not in the snapshot of {cluster}: {', '.join(unknown)}")
    wanted = set(only_accounts)
    under = {a for a in parent if wanted.intersection(ancestors(a))} if wanted else set(parent)
    keys = {u.key for u in users if (not only_users or u.user in only_users) and u.account in under}
    accounts = under
    if only_users:
        accounts = {a for u in users if u.key in keys for a in ancestors(u.account)} & under
    return keys, accounts


def status_data(
    snap: StoredSnapshot,
    target_core_hours: float | None = None,
    dummy: tuple[str, str] | None = None,
    reference: str | float = "median",
    control_history: list[dict] | None = None,
    only_users: Sequence[str] = (),
    only_accounts: Sequence[str] = (),
    tree: bool = False,
    columns: bool = False,
    total_held: bool = False,
    agent_state: dict | None = None,
) -> dict:
    """Everything `fscontrol status` shows, as plain data. `only_users`/`only_accounts` (-u/-A,
    as sshare's) keep those rows of the table (an account: its whole subtree); the cluster-wide
    figures stay the cluster's. `tree` (--tree) adds the account rows (user "", F and the
    halving figures None) in sshare's order, each row with its depth below root; with -u, the
    accounts above the users shown. F is Slurm's classic factor from the EffectvUsage and
    NormShares Slurm holds (they lag RawUsage by one decay pass, exactly as the factor slurmctld
    schedules with) and the d in force in slurmctld. The dummy (padding) association is shown but
    not counted as a user. Under Fair Tree, status_data_fair_tree. The table is a list of dicts,
    one a row (what --json prints); `columns`: a StatusTable instead, the same values a column at
    a time (what the text needs: no dict per row).

    `agent_state` (control_state): whether `control off --apply` stopped the agent, and the d it
    read back from slurmctld after its last action: after the snapshot, the d in force, which F and
    the halving use (the snapshot's own d shown beside it)."""
    if snap.config.mode == "fair_tree":
        data = status_data_fair_tree(snap, dummy, only_users, only_accounts, tree=tree)
        if columns:
            data["table"] = StatusTable.from_rows(data["table"])
        return data
    cfg = snap.config
    d_in_force = damping_after(agent_state, snap.taken_at)
    d = cfg.damping_factor if d_in_force is None else d_in_force
    shares = snap.shares
    n = len(shares)
    # ShareRow's columns, taken once (zip: a named tuple's fields a column at a time, ~3x cheaper
    # than reading each field of 100,000 rows by its name)
    (acc, usr, par, depth, raw_shares, _, norm_shares, raw, norm_usage, _, fairshare_sshare, _, _) = (
        zip(*shares) if shares else ((),) * len(ShareRow._fields))
    # NormShares recomputed from RawShares as slurmctld holds them (sshare's 6 decimals alone move F
    # by up to 1e-3 at 2,500 users), EffectvUsage Slurm's own (lagging RawUsage by one pass, as the
    # factor slurmctld schedules with) with its dropped digits recomputed: effusage.classic_basis,
    # stored with the snapshot when it was written (at slurmctld's d then)
    basis = snap.basis
    if basis is None or basis.rows is not shares or basis.damping != d:
        basis = classic_basis(shares, snap.prio_fairshare, d)
    if basis is not None:  # rows in tree order (the history's): lists, no Tree
        held, held_form, refined, lagging, sprio = basis.held, basis.held_form, basis.refined, basis.lagging, basis.sprio
        index = {dummy: i for i, k in enumerate(zip(acc, usr)) if k == dummy} if dummy else {}
        exact = None
    else:
        from fscontrol.model import fairtree

        held_form = "classic"
        try:
            exact, held_form = fairtree.held_shares(fairshare.build_tree(shares), "classic")
            exact[fairshare.ROOT] = 1.0
        except fairshare.TreeError:
            exact = {}
        index = {k: i for i, k in enumerate(zip(acc, usr))}
        held = [exact.get(k, ns) for k, ns in zip(zip(acc, usr), norm_shares)]
        refined = effusage.refined_effective_usage(shares, norm_shares=held, d=d, sprio=snap.prio_fairshare)
        lagging = effusage.sprio_lags(shares, snap.prio_fairshare, d, held) if snap.prio_fairshare else 0
    root_i = next((i for i, dp in enumerate(depth) if dp == 0), None)
    total = float(raw[root_i]) if root_i is not None else 0.0
    dummy = dummy if dummy in index else None
    dummy_i = index[dummy] if dummy else -1
    dummy_usage = float(raw[dummy_i]) if dummy else 0.0
    uidx = [i for i, u in enumerate(usr) if u and u != "root"]  # the user associations
    real = [i for i in uidx if i != dummy_i]
    n_active = sum(1 for i in real if raw[i] > 0)
    if exact is None and isinstance(reference, str) and reference in fairshare.REFERENCE_RULES:
        s_ref, rule = fairshare.pick_reference_share([s for i in real if (s := held[i]) > 0], reference, bool(dummy))
    else:
        s_ref, rule = fairshare.choose_reference_share(shares, d, dummy, reference, exact=exact or None)
    halving = s_ref * d * total if s_ref is not None else None
    # a user alone in a first-tier account: Yalim's u / -log2 F is its halving usage
    kids = Counter(a if u else p for a, u, p, dp in zip(acc, usr, par, depth) if dp != 0)
    alone_in = {a for a, u, p, dp in zip(acc, usr, par, depth) if dp != 0 and not u and p == "root" and kids[a] == 1}
    if only_users or only_accounts:
        keys, accounts_shown = _select(shares, [shares[i] for i in uidx], only_users, only_accounts, snap.cluster)
        shown = {i for i in uidx if (acc[i], usr[i]) in keys}
        sel = ([i for i in range(n) if ((i in shown) if usr[i] else (acc[i] in accounts_shown))] if tree
               else [i for i in uidx if i in shown])
    else:
        sel = [i for i in range(n) if usr[i] != "root"] if tree else uidx  # --tree: every account row too
    # the table a column at a time (a comprehension per column, no dict per row: at 100,000
    # associations that was a third of the report); an account row (--tree) has the user "" and
    # no F or halving figures
    U = [usr[i] for i in sel]
    A = [acc[i] for i in sel]
    R = [raw[i] for i in sel]
    S = [held[i] for i in sel]
    E = [refined[i] for i in sel]
    log2 = math.log2
    F = [None if not u or e is None or s_u is None else (2.0 ** (-(e / s_u) / d) if s_u > 0 else 0.0)
         for u, e, s_u in zip(U, E, S)]
    # the one halving formula (fairshare.usage_to_halve; the forecast's too)
    to_halve = fairshare.usage_to_halve
    halve = [x / HOUR if u and e is not None and s_u is not None
             and (x := to_halve(e, s_u, d, total, total_held=total_held)) is not None
             else None for u, e, s_u in zip(U, E, S)]
    # users whose own usage cannot halve F at this d (d S >= 1 - EffectvUsage): why, and what would
    cannot = [] if total <= 0 else [
        _cannot_halve(u, a, e, s_u, d, s_ref, total) for u, a, e, s_u, x, i in zip(U, A, E, S, halve, sel)
        if u and x is None and e is not None and s_u is not None and s_u > 0 and i != dummy_i]
    alone = [bool(u) and a in alone_in for u, a in zip(U, A)]
    implied = [raw_u / -log2(f) / HOUR if al and f is not None and raw_u > 0 and 0.0 < f < 1.0 else None
               for al, f, raw_u in zip(alone, F, R)]
    prio = snap.prio_fairshare
    table = StatusTable({
        "user": U, "account": A, "raw_usage": R, "usage_core_hours": [x / HOUR for x in R], "norm_shares": S,
        "effective_usage": E, "fairshare": F, "fairshare_sshare": [fairshare_sshare[i] for i in sel],
        "fairshare_sprio": ([sprio[i] if usr[i] else None for i in sel] if basis is not None else
                            [prio.get((a, u)) if u else None for a, u in zip(A, U)] if prio else [None] * len(sel)),
        "usage_to_halve_core_hours": halve, "alone_at_first_tier": alone, "implied_halving_core_hours": implied,
        "underflow": [f is not None and f < UNDERFLOW for f in F],
        "dummy": [i == dummy_i and u != "" for i, u in zip(sel, U)] if dummy else [False] * len(sel),
        "depth": [depth[i] for i in sel], "raw_shares": [raw_shares[i] for i in sel],
        "norm_usage": [norm_usage[i] for i in sel],
    })
    warnings = []
    if cfg.mode == "fair_tree":
        warnings.append("Fair Tree is in use: it never reads FairShareDampeningFactor, so fscontrol can only advise.")
    elif cfg.mode != "classic":
        warnings.append(f"priority mode {cfg.mode}: fscontrol's classic maths are an approximation here.")
    if "limits" not in cfg.enforce:
        warnings.append(
            "AccountingStorageEnforce lacks 'limits': Slurm (22.05 and 24.11 alike) then never charges the end of a job, "
            "so usage (and control) is under-counted."
        )
    from fscontrol.slurm import versions as slurm_versions

    untested = slurm_versions.untested_warning(cfg.slurm_version)
    if untested:
        warnings.append(untested)
    if not privatedata.usage_public(cfg.private_data):
        warnings.append("PrivateData=usage: users see only their own rows; publish a snapshot for `forecast`.")
    if lagging:
        warnings.append(f"sprio's fair-share factor of {lagging} pending association(s) is not at the d slurmctld holds "
                        f"(d={d}): d changed since the last decay pass, and sprio follows at the next one "
                        "(within PriorityCalcPeriod); F here is what that pass will use.")
    if held_form != "classic":
        warnings.append(stale_shares_warning("classic", held_form))
    head = _snapshot_head(snap)
    off = (agent_state or {}).get("off")
    if d != cfg.damping_factor:
        head["damping_factor"] = d
        head["damping_factor_snapshot"] = cfg.damping_factor
    return {
        **head,
        "shares_form": held_form,
        "total_usage_core_hours": total / HOUR,
        "users": len(real),
        "active_users": n_active,
        "dummy": "/".join(dummy) if dummy else None,
        "dummy_usage_core_hours": dummy_usage / HOUR,
        "real_usage_core_hours": (total - dummy_usage) / HOUR,
        "reference_share": s_ref,
        "reference_share_rule": rule,
        "halving_core_hours": halving / HOUR if halving is not None else None,
        "target_core_hours": target_core_hours,
        "halving_error": (halving / HOUR / target_core_hours - 1) if halving is not None and target_core_hours else None,
        "model_comparison": _comparison(snap, d, target_core_hours, dummy, s_ref),
        "underflow_users": [f"{u}@{a}" for u, a, uf, dm in zip(U, A, table.columns["underflow"], table.columns["dummy"])
                            if uf and not dm],
        "cannot_halve": cannot,
        "total_held": total_held,
        "tree": tree,
        "warnings": warnings,
        "table": table if columns else table.rows(),
        # once `control off` stopped the agent, the decisions a running loop still records after it
        # only advise: the control line is the record up to the off
        "control": [h for h in _control_history(control_history or [])
                    if not off or h["time"] <= _iso(float(off.get("at") or 0.0))],
        "control_off": None if not off else {"at": _iso(float(off.get("at") or 0.0)), "by": off.get("by")},
    }


def classic_basis(shares: Sequence, prio, d: float) -> StatusBasis | None:
    """effusage.classic_basis as the store keeps it, aligned with `shares` (None: not in tree order)."""
    got = effusage.classic_basis(shares, prio, d)
    return None if got is None else StatusBasis(d, *got, [prio.get((r.account, r.user)) if prio else None
                                                          for r in shares], shares)  # sprio's factor of each row


def status_of(db, snap: StoredSnapshot, cc, *, target_core_hours: float | None = None, decisions: int = 60, **table) -> dict:
    """status_data for a stored snapshot with what the agent's own record adds: its last
    `decisions` (the control line; 0: none), whether it holds the total (its last decision, and
    `control off`), and the d it read back from slurmctld after acting. `cc`: the cluster's config
    (its u* unless `target_core_hours` is given, its dummy and reference share). `status` and the
    metrics both call it, so both judge alike. (load_snapshot's prio=False: see there.)"""
    from fscontrol.store import ledger
    state = ledger.control_state(db, snap.cluster)
    d_now = damping_after(state, snap.taken_at) or snap.config.damping_factor
    if snap.basis is not None and snap.basis.damping != d_now:  # computed again at d_now, from sprio's factors
        snap = replace(snap, basis=None, prio_fairshare=prio_fairshare_of(db, snap.id))
    return status_data(
        snap,
        target_core_hours=cc.target_core_hours if target_core_hours is None else target_core_hours,
        dummy=cc.dummy_key,
        reference=cc.reference_share,
        control_history=ledger.decision_history(db, snap.cluster, decisions) if decisions else None,
        total_held=holds_total(ledger.last_decision(db, snap.cluster), d_now, state),
        agent_state=state,
        **table,
    )


def _cannot_halve(user: str, account: str, ue: float, s: float, d: int, s_ref: float | None, total: float) -> dict:
    """Why a user's F cannot halve at d, and the d (and u*, H = S_ref d U) at which it would."""
    d_below = fairshare.damping_to_halve(ue, s)
    return {"user": user, "account": account, "d_s": d * s, "room": 1.0 - ue, "d_below": d_below,
            "target_below_core_hours": None if s_ref is None or d_below is None else s_ref * d_below * total / HOUR}


def cannot_halve_lines(data: dict, most: int = 10) -> Iterator[str]:
    """status's words for the users whose F cannot halve at the current d (blank `halves after +`)."""
    rows = data.get("cannot_halve") or []
    if not rows:
        return
    yield ""
    yield (f"F cannot halve at d={data['damping_factor']} for {len(rows)} user(s): d S >= 1 - EffectvUsage, and F "
           "halves only when EffectvUsage grows by d S (a user's own usage raises it towards 1, never past it)")
    for r in sorted(rows, key=lambda r: r["d_below"] if r["d_below"] is not None else 0)[:most]:
        line = (f"  {r['user']}@{r['account']}: d S = {r['d_s']:.4f} >= 1 - EffectvUsage = {r['room']:.4f}; "
                f"halves again at d < {r['d_below']:,.2f}")
        if r["target_below_core_hours"] is not None:
            line += f", i.e. u* < {r['target_below_core_hours']:,.2f} core-hours (H = S_ref x d x total usage)"
        yield line
    if len(rows) > most:
        yield f"  ... and {len(rows) - most} more (--json lists them)"


def _comparison(snap: StoredSnapshot, d: int, target_core_hours, dummy, s_ref) -> list[dict] | None:
    """Yalim figure 2 on this snapshot: underflows and F <= 0.5 under several choices of d."""
    if not target_core_hours or s_ref is None:
        return None
    root = next((r for r in snap.shares if r.depth == 0), None)
    if root is None or root.raw_usage <= 0:
        return None
    mc = fairshare.model_comparison(snap.shares, d, target_core_hours * HOUR, exclude=[dummy] if dummy else (), s_ref=s_ref)
    return [
        {"model": m.name, "damping": m.damping, "underflow": m.n_underflow, "f_le_half": m.n_half, "users": mc.n_users}
        for m in mc.models
    ]


STATUS_FIELDS: tuple[Field, ...] = (
    Field("User", "user", "user", None, False, "the user (empty on an account row of --tree)"),
    Field("Account", "account", "account", None, False, "the account (with --tree, indented one space a level, as sshare)"),
    Field("RawShares", "RawShares", "raw_shares", "d", True, "RawShares as sshare prints them (- for root and FairShare=parent)"),
    Field("NormShares", "NormShares", "norm_shares", ".6f", True, "NormShares recomputed from RawShares over the whole tree"),
    Field("RawUsage", "RawUsage", "raw_usage", "d", True, "decayed usage in CPU-seconds, as sshare's RawUsage"),
    Field("Usage", "usage (core-h)", "usage_core_hours", ",.3f", True, "RawUsage in core-hours"),
    Field("NormUsage", "NormUsage", "norm_usage", ".6f", True, "sshare's NormUsage"),
    Field("EffectvUsage", "EffectvUsage", "effective_usage", ".6f", True,
          "Slurm's EffectvUsage: sshare's, the digits its 6 decimals drop recomputed from RawUsage and the tree"),
    Field("F", "F", "fairshare", ".6f", True, "F = 2^(-(EffectvUsage/NormShares)/d) with the d slurmctld holds"),
    Field("FairShare", "F sshare", "fairshare_sshare", ".6f", True, "F as sshare printed it (with sshare's own d)"),
    Field("FSprio", "F sprio", "fairshare_sprio", ".6f", True, "F as sprio reports it for the user's pending jobs"),
    Field("HalvesAfter", "halves after +(core-h)", "usage_to_halve_core_hours", ",.3f", True,
          "the extra usage of this user alone that halves its F"),
    Field("ImpliedHalving", "u/-log2 F", "implied_halving_core_hours", ",.3f", True,
          "Yalim's u / -log2 F, only for a user alone in a first-tier account"),
    Field("Place", "place", "place_text", None, False,
          "Fair Tree: the user association's place in words, '1st of N (highest)' to 'Nth of N (lowest)'"),
    Field("Rank", "rank", "rank", "d", True, "Fair Tree: Slurm's rank of the user association, N the first; F = rank / N"),
    Field("LevelFS", "LevelFS", "level_fs", ".6f", True,
          "Fair Tree: NormShares / EffectvUsage among its siblings (inf: no usage)", "level_fs_idle"),
    Field("AccountLevelFS", "account LevelFS", "account_level_fs", ".6f", True,
          "Fair Tree: the LevelFS of the account the user competes under", "account_level_fs_idle"),
)


_FIELDS_BY_NAME = {f.name.lower(): f for f in STATUS_FIELDS}


DEFAULT_FIELDS = ("User", "Account", "Usage", "NormShares", "EffectvUsage", "F", "FairShare", "FSprio", "HalvesAfter",
                  "ImpliedHalving")


LONG_FIELDS = ("User", "Account", "RawShares", "NormShares", "RawUsage", "Usage", "NormUsage", "EffectvUsage", "F",
               "FairShare", "FSprio", "HalvesAfter", "ImpliedHalving")


FAIR_TREE_FIELDS = ("Place", "Rank", "User", "Account", "Usage", "NormShares", "EffectvUsage", "LevelFS", "AccountLevelFS", "F",
                    "FairShare", "FSprio")


FAIR_TREE_LONG_FIELDS = ("Place", "Rank", "User", "Account", "RawShares", "NormShares", "RawUsage", "Usage", "EffectvUsage",
                         "LevelFS", "AccountLevelFS", "F", "FairShare", "FSprio")


def status_fields(spec: str | None = None, long: bool = False, tree: bool = False, fair_tree: bool = False) -> tuple[Field, ...]:
    """The columns: -o/--format's comma-separated names in any case (as sshare -o; it wins over
    -l), else -l's long set, else the default set (the tree's: Account first, as sshare's; Fair
    Tree's: rank and LevelFS instead of the halving). An unknown name is a ConfigError (exit 2)."""
    if spec is None:
        if fair_tree:
            names = FAIR_TREE_LONG_FIELDS if long else FAIR_TREE_FIELDS
            if tree:
                names = ("Account", "User", *(n for n in names if n not in ("Account", "User")))
            return tuple(_FIELDS_BY_NAME[n.lower()] for n in names)
        names = LONG_FIELDS if long else DEFAULT_FIELDS
        if tree:
            names = ("Account", "User", *names[2:])
        return tuple(_FIELDS_BY_NAME[n.lower()] for n in names)
    return pick_fields(spec, STATUS_FIELDS, ())


def format_fields_help(table: Sequence[Field] = STATUS_FIELDS) -> str:
    """--helpformat: every field -o takes, as sshare --helpformat lists them."""
    width = max(len(f.name) for f in table)
    return "\n".join(f"{f.name:<{width}}  {f.help}" for f in table)


def format_status(data: dict, fields: Sequence[Field] | None = None) -> str:
    return "\n".join(status_lines(data, fields))


def status_lines(data: dict, fields: Sequence[Field] | None = None) -> Iterator[str]:
    """`fscontrol status` as text, line by line (the table's lines are made as they are written:
    on 100,000 associations the report is never one string)."""
    if data["priority_mode"] == "fair_tree":
        yield from status_lines_fair_tree(data, fields)
        return
    head = [
        ("cluster", f"{data['cluster']} (Slurm {data['slurm_version']}), snapshot {data['snapshot_id']} at {data['taken_at']}"),
        ("priority", f"{data['priority_mode']} ({','.join(data['priority_flags']) or 'no flags'}), "
         f"damping factor d={data['damping_factor']}"
         + (f" (read back from slurmctld after the agent's last action; the snapshot read {data['damping_factor_snapshot']})"
            if data.get("damping_factor_snapshot") is not None else "")
         + f", half-life {_duration(data['half_life_s'])}, "
         f"decay every {_duration(data['calc_period_s'])}"),
        ("total decayed usage", f"{data['total_usage_core_hours']:,.2f} core-hours"),
        ("users", f"N={data['users']}, active M={data['active_users']}"),
        ("reference share", f"S_ref={_fmt(data['reference_share'], '.6f')} ({data['reference_share_rule']})"),
        ("fair-share halves every", f"{_fmt(data['halving_core_hours'], ',.2f')} core-hours (H = S_ref x d x total usage)"),
    ]
    if data.get("target_core_hours"):
        head.append(("target u*", f"{data['target_core_hours']:,.2f} core-hours "
                     f"(H at d={data['damping_factor']} on the snapshot's usage: {data['halving_error']:+.2%})" if data["halving_error"] is not None else ""))
    if data.get("dummy"):
        head.append(("padding (dummy)", f"{data['dummy']}: {data['dummy_usage_core_hours']:,.2f} core-hours "
                     f"(real usage {data['real_usage_core_hours']:,.2f})"))
    for k, v in head:
        yield f"{k + ':':<25}{v}"
    yield ""
    yield from table_lines(data["table"], fields or status_fields(), tree=bool(data.get("tree")))
    yield ""
    yield "F = 2^(-(EffectvUsage/NormShares)/d) with the controller's d; F sprio from pending jobs;"
    if data.get("total_held"):
        yield "halves after +: the extra usage of this user alone that halves its F: S d U, as the agent holds d U"
        yield "(control applied; the forecast's figure too); u/-log2 F (Yalim) only for a user alone in a first-tier account."
    else:
        yield "halves after +: the extra usage of this user alone that halves its F, exact for shared accounts"
        yield "(d S U / (1 - EffectvUsage - d S), d as it is now); u/-log2 F (Yalim) only for a user alone in a first-tier account."
    yield from cannot_halve_lines(data)
    hist = data.get("control") or []
    off = data.get("control_off")
    if off:
        yield ""
        yield (f"control off since {off['at']} ({off.get('by') or 'control off'}): the agent acts on nothing until "
               f"`fscontrol control on`; d is {data['damping_factor']}" + (", as the agent found it" if hist else ""))
    if hist:
        # what Slurm used at the passes (issue 30): never the snapshot's pre-action figure as "now"
        errs = [h["error_slurm"] for h in hist]
        last = hist[-1]
        used = next((h for h in reversed(hist) if h["error_slurm"] is not None), None)
        known = [abs(e) for e in errs if e is not None]
        pct = lambda v: "-" if v is None else format(v, "+.2%")  # noqa: E731
        yield ""
        yield (
            f"control ({last['method']}, last {len(hist)} decisions{' before it was turned off' if off else ''}), "
            f"target {last['target_core_hours']:,.2f} core-hours: "
            f"error Slurm used at the last pass {pct(used['error_slurm'] if used else None)}"
            f"{' (' + _pass_when(used) + ')' if used else ' (no pass seen yet)'}"
            + ("" if off else f", expected at the next pass {pct(last.get('error_next'))}")
            + f"; worst Slurm used {'-' if not known else format(max(known), '.2%')} over {len(known)} passes"
            + ("" if off else f"; d={last['damping_left']}, padding "
               f"{last['padding_core_hours']:,.2f} core-hours")
        )
        if known:
            yield f"  error Slurm used, by pass  {sparkline(errs)}  (after the decisions of {hist[0]['time']} .. {last['time']})"
    if data.get("model_comparison"):
        from tabulate import tabulate  # a few rows: tabulate pays here

        yield ""
        yield "model comparison (Yalim fig. 2): users with F < 1e-6 (underflow) and F <= 0.5"
        yield tabulate(
            [[m["model"], f"{m['damping']:.4g}", m["underflow"], m["f_le_half"]] for m in data["model_comparison"]],
            headers=["model", "d", "underflow", "F <= 0.5"],
            disable_numparse=True,
        )
    under = data["underflow_users"]
    yield f"underflow (F < 1e-6): {', '.join(under) if under else 'none'}"
    for w in data["warnings"]:
        yield f"warning: {w}"


def status_data_fair_tree(
    snap: StoredSnapshot,
    dummy: tuple[str, str] | None = None,
    only_users: Sequence[str] = (),
    only_accounts: Sequence[str] = (),
    tree: bool = False,
) -> dict:
    """`status` on a cluster that runs Fair Tree: every user association's rank, F = rank / N,
    its Level FS and its account's, recomputed from RawShares and RawUsage as slurmctld does
    (fscontrol.model.fairtree), beside sshare's and sprio's own F. Rows in rank order, best first.

    The keys of classic's status_data are kept (halving and damping ones None: Fair Tree has no
    halving usage and ignores FairShareDampeningFactor), so scripts and the metrics read both."""
    from fscontrol.model import fairtree

    cfg = snap.config
    ft = fairtree.compute_fair_tree(snap.shares)
    by = ft.by_key()
    root = by.get(fairshare.ROOT)
    total = root.raw_usage if root else 0.0
    keys = set(by)
    dummy = dummy if dummy in keys else None
    dummy_usage = by[dummy].raw_usage if dummy else 0.0
    sshare_f = {r.key: r.fairshare for r in snap.shares}
    real_users = [a for a in ft.assocs if a.is_user and a.user != "root" and a.key != dummy]
    active = [a for a in real_users if a.raw_usage > 0]
    # rank order, best first; --tree: sshare's order with the accounts (their users' fields blank)
    shown = [a for a in ft.assocs if a.key != fairshare.ROOT] if tree else [by[k] for k in ft.ranking]
    if only_users or only_accounts:
        keys, accounts = _select(ft.assocs, [a for a in ft.assocs if a.is_user and a.user != "root"], only_users,
                                 only_accounts, snap.cluster)
        shown = [a for a in shown if (a.key in keys if a.is_user else a.account in accounts)]

    def finite(x: float) -> float | None:
        return None if x == fairtree.NO_VAL else x  # JSON has no inf: None there, "inf" in the text

    rows = []
    for a in shown:
        acct = by.get((a.fs_parent, ""))
        rows.append(
            {
                "user": a.user,
                "account": a.account,
                "depth": a.depth,
                "raw_shares": a.raw_shares,
                "raw_usage": a.raw_usage,
                "usage_core_hours": a.raw_usage / HOUR,
                "norm_shares": a.norm_shares,
                "effective_usage": a.effective_usage,
                "level_fs": None if a.level_fs == float("inf") else finite(a.level_fs),
                "level_fs_idle": a.level_fs == float("inf"),
                "account_level_fs": None if acct is None or acct.key == fairshare.ROOT or acct.level_fs == float("inf")
                else finite(acct.level_fs),
                "account_level_fs_idle": acct is not None and acct.key != fairshare.ROOT and acct.level_fs == float("inf"),
                "rank": a.rank,
                "place_text": fairtree.place_text(a.rank, ft.n_users),
                "fairshare": a.fairshare,
                "fairshare_sshare": sshare_f.get(a.key),
                "fairshare_sprio": snap.prio_fairshare.get(a.key),
                "usage_to_halve_core_hours": None,
                "alone_at_first_tier": False,
                "implied_halving_core_hours": None,
                "underflow": False,
                "dummy": a.key == dummy,
            }
        )
    warnings = ["Fair Tree ranks users, it has no halving usage and ignores FairShareDampeningFactor: "
                "`control` has nothing to set here (PriorityFlags=NO_FAIR_TREE selects classic fair-share)."]
    if ft.stale_shares:
        warnings.append(stale_shares_warning("fair_tree", ft.shares_form))
    for group in ft.undecided:
        names = " and ".join(f"{u}@{a}" if u else a for a, u in group)
        affected = ", ".join(f"{u}@{a} {'/'.join(map(str, r))}" for (a, u), r in sorted((ft.rank_choices or {}).items()))
        warnings.append(f"sshare cannot order {names}: equal LevelFS to its 6 decimals, a tie slurmctld's rounding "
                        f"breaks either way or not at all; the ranks shown take the tie (possible ranks: {affected}).")
    if not privatedata.usage_public(cfg.private_data):
        warnings.append("PrivateData=usage: users see only their own rows; publish a snapshot for `forecast`.")
    return {
        **_snapshot_head(snap),
        "shares_form": ft.shares_form,
        "total_usage_core_hours": total / HOUR,
        "users": len(real_users),
        "user_associations": ft.n_users,
        "active_users": len(active),
        "dummy": "/".join(dummy) if dummy else None,
        "dummy_usage_core_hours": dummy_usage / HOUR,
        "real_usage_core_hours": (total - dummy_usage) / HOUR,
        "reference_share": None,
        "reference_share_rule": "none under Fair Tree",
        "halving_core_hours": None,
        "target_core_hours": None,
        "halving_error": None,
        "model_comparison": None,
        "underflow_users": [],
        "warnings": warnings,
        "table": rows,
        "tree": tree,
        "control": [],
    }


def stale_shares_warning(mode: str, form: str) -> str:
    """Why the NormShares slurmctld holds are not `mode`'s own (fairtree.held_shares)."""
    held = {"classic": "classic (products down the tree)", "fair_tree": "Fair Tree's (each level's)",
            "mixed": "both algorithms'"}[form]
    effect = ("the ranks are the same (every sibling's share is scaled alike)" if (mode, form) == ("fair_tree", "classic")
              else "F differs from the algorithm's own" if mode == "classic" else "the ranks can differ")
    return (f"slurmctld holds {held} NormShares, as sshare shows: PriorityFlags was switched by `scontrol reconfigure`, "
            f"which renormalises nothing in Slurm 22.05; {effect}, and fscontrol computes what slurmctld does. "
            "Restarting slurmctld renormalises them.")


def status_lines_fair_tree(data: dict, fields: Sequence[Field] | None = None) -> Iterator[str]:
    head = [
        ("cluster", f"{data['cluster']} (Slurm {data['slurm_version']}), snapshot {data['snapshot_id']} at {data['taken_at']}"),
        ("priority", f"Fair Tree ({','.join(data['priority_flags']) or 'no flags'}), half-life "
         f"{_duration(data['half_life_s'])}, ranking every {_duration(data['calc_period_s'])}"),
        ("total decayed usage", f"{data['total_usage_core_hours']:,.2f} core-hours"),
        ("users", f"N={data['user_associations']} user associations ranked, {data['users']} users, "
         f"active M={data['active_users']}"),
    ]
    for k, v in head:
        yield f"{k + ':':<25}{v}"
    yield ""
    yield from table_lines(data["table"], fields or status_fields(fair_tree=True, tree=bool(data.get("tree"))),
                           tree=bool(data.get("tree")))
    yield ""
    yield "Fair Tree: F = rank / N, users ranked by LevelFS = NormShares / EffectvUsage level by level from"
    yield "root (NormShares and EffectvUsage among siblings); a user ranks above every user of any account"
    yield "whose LevelFS is lower than their own account's at the level where the two meet. inf: no usage."
    for w in data["warnings"]:
        yield f"warning: {w}"

