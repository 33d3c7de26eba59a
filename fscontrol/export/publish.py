"""The published snapshot: what the agent tells every user about the cluster's fair-share.

`fscontrol forecast` runs as a normal user. On a cluster with `PrivateData=usage` that user's
`sshare` shows only their own rows, and cannot show the numbers a forecast needs from the rest
of the cluster: the total decayed usage U, the damping factor d the *controller* uses (sshare's
FairShare column uses the client's slurm.conf d), the reference share and halving usage
H = S_ref x d x U, and the decay rate. The agent (as root, e.g. from cron) publishes them in a
small world-readable JSON file; the user's command reads it plus the user's own sshare row.

Privacy: with `usage` in PrivateData the file holds NO per-association rows (no user, and no
account either: an account's usage is its users' usage). Without it, the file holds the rows
`sshare -a` shows anyone anyway.

`build_published` is pure (no clock, no I/O); `write_published` writes atomically (temp file in
the same folder + os.replace, mode 0644); `read_published` reads and checks one. Standard
library only at import time (this module is on the forecast command's cold-start path).
"""

from __future__ import annotations

import math

import os
from datetime import datetime, timezone
from pathlib import Path
TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: ~5 ms of the forecast's start)

from fscontrol import jsontext
from fscontrol.errors import NotFoundError
from fscontrol.export.rowindex import INDEX_KEY, INDEX_LINE, ROWS_LINE, by_index as _by_index, on_paths  # noqa: F401 (publish.INDEX_LINE: the tests read it here)
from fscontrol.export import jobqos, runsorted
from fscontrol.slurm import privatedata

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterator
    from typing import Any

    from fscontrol.records import ShareRow
    from fscontrol.store.history import StoredSnapshot

FORMAT = "fscontrol-published"
VERSION = 1
HOUR = 3600.0
DEFAULT_DIR = "/var/lib/fscontrol/public"


class PublishedError(NotFoundError):
    """No published snapshot, or one that cannot be read."""


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_private(private_data: tuple[str, ...] | list[str]) -> bool:
    """True when PrivateData hides any of usage, users or accounts (or `all`): then no per-user
    row and no name is published (Slurm itself would not show them to other users). The policy
    is fscontrol.export.privacy's, on what slurm.privatedata says each flag hides."""
    return not privatedata.names_public(private_data)


def build_published(
    snap: StoredSnapshot,
    *,
    reference: str | float = "median",
    dummy: tuple[str, str] | None = None,
    target_core_hours: float | None = None,
    admins: tuple[str, ...] | list[str] = (),
    published_at: float | None = None,
    method: str | None = None,
    next_pass_at: float | None = None,
    gate: dict[str, Any] | None = None,
    secret: bytes | None = None,
    limits: dict[str, Any] | None = None,
    inflow: tuple | None = None,
    damping: int | None = None,
    control: dict[str, Any] | None = None,
    outlooks: bool = True,
    partitions: dict[str, dict] | None = None,
    job_qos: dict[str, dict] | None = None,
) -> dict[str, Any]:
    """The published snapshot of `snap` as a JSON-able dict.

    `partitions`: each partition's TRESBillingWeights, Default=YES, CPUs and GPUs (the agent's
    `scontrol show partition`: agent.publishing.partitions_billing), published with the flags, the
    release and the QOS UsageFactors as "billing" (billing_published), where the forecast bills a
    '4cpus+2gpus' plan. `job_qos`: each user's QOS without --qos (slurm.jobqos.read; export.jobqos).

    `reference`, `dummy` and `target_core_hours` are the cluster's halving settings from the
    agent's config (S_ref rule, the padding association left out of S_ref, u*). `admins` are
    user names `fscontrol forecast` lets ask for any user (root always may), published as HMAC
    tokens under the site `secret` (privacy.admin_token; none without a secret). `published_at`
    defaults to the snapshot's time (pure: no clock). `next_pass_at`: slurmctld's next decay pass
    after the snapshot, when the agent knows it (the Fair Tree forecast's pass times). `gate`: the
    SFS gate's state (:func:`gate_summary`), for `fscontrol why` on a job the gate holds. `limits`: the
    caps on one user's forecast request (export.limits.published_limits: the cluster's CPUs, the
    config's [forecast] caps); the defaults when not given. `damping`: the d in force in slurmctld
    when the agent set it after `snap` was taken (the tick's read-back; every F and the halving are
    at it); None: the snapshot's d. `control`: {"applying": bool, "off": bool}, whether the agent
    acts on the cluster (the forecast says the total usage is held only then); None: unknown.
    `outlooks`: under Fair Tree, every user's outlook in its row (export.outlook), so that a user's
    forecast reads only its own rows; False where the caller forecasts one user itself."""
    from fscontrol.export import privacy
    from fscontrol.model import effusage, fairshare
    from fscontrol.model.decay import decay_lambda

    cfg = snap.config
    d = cfg.damping_factor if damping is None else damping
    root = next((r for r in snap.shares if r.depth == 0), None)
    total = float(root.raw_usage) if root is not None else 0.0
    keys = {r.key for r in snap.shares}
    dummy = dummy if dummy in keys else None
    s_ref, rule = fairshare.choose_reference_share(snap.shares, d, dummy, reference)
    halving = s_ref * d * total if s_ref is not None and total > 0 else None
    private = is_private(cfg.private_data)
    lam = decay_lambda(cfg.half_life_s)
    out = {
        "format": FORMAT,
        "version": VERSION,
        "cluster": snap.cluster,
        "snapshot_id": snap.id,
        "taken_at": snap.taken_at,
        "taken_at_iso": _iso(snap.taken_at),
        "published_at": snap.taken_at if published_at is None else published_at,
        "config": {
            "slurm_version": cfg.slurm_version,
            "priority_mode": cfg.mode,
            "damping_factor": d,  # and the d sshare's FairShare is at (its slurm.conf's: forecast's own row)
            "sshare_damping": effusage.sshare_damping_of(snap.shares) if cfg.mode == "classic" else None,
            "half_life_s": cfg.half_life_s,
            "calc_period_s": cfg.calc_period_s,
            "private_data": sorted(f.lower() for f in cfg.private_data), "usage_reset_period": cfg.usage_reset_period,
        },
        "decay_lambda": lam,
        "total_usage": total,
        "total_usage_core_hours": total / HOUR,
        "reference_share": s_ref,
        "reference_share_rule": rule,
        "halving_usage": halving,
        "halving_core_hours": None if halving is None else halving / HOUR,
        "target_core_hours": target_core_hours,
        "dummy": "/".join(dummy) if dummy and not private else None,  # a name: only where names are public
        "admins_hmac": sorted({privacy.admin_token(secret, snap.cluster, a) for a in admins}) if secret else [],
        "control_method": method,
        "control": None if control is None else {"applying": bool(control.get("applying")), "off": bool(control.get("off"))},
        "per_association": not private,
        "next_pass_at": next_pass_at,
        "limits": limits or _default_limits(),
        "billing": billing_published(snap, partitions),
        "running": running_aggregates(snap),
        "gate": None if gate is None else {**gate, "accounts": gate.get("accounts", {}) if privatedata.jobs_public(cfg.private_data) else {},
                                           "accounts_published": privatedata.jobs_public(cfg.private_data)},
        "own_files": False,  # publish_latest: True once each user's own file is written beside it
        "inflow": None if inflow is None else inflow_aggregates(snap, *inflow),
        # last and one row a line (write_published): a forecast reads only its own rows (read_published)
        "associations": [] if private else _rows(snap.shares, d, total, dummy, cfg.mode == "fair_tree", snap.prio_fairshare, cfg.damping_factor),
    }
    jobqos.annotate_rows(out["associations"], job_qos, cfg.private_data)  # where PrivateData shows it
    if outlooks and cfg.mode == "fair_tree" and not private and out["associations"]:
        # every user's rank, path, neighbours and projection, in their own row (export.outlook)
        from fscontrol.export.outlook import published_outlooks, tree_from_published

        out["fair_tree_outlook"], ft = published_outlooks(out, tree_from_published(out))
        for r in out["associations"]:
            if r["user"]:
                r["ft"] = ft[f"{r['account']}/{r['user']}"]
    return out


def billing_published(snap: StoredSnapshot, partitions: dict[str, dict] | None) -> dict[str, Any]:
    """The cluster's billing rules, for plans in Slurm's words (forecast.billingplan): cluster
    configuration, no user's data. The partitions go where PrivateData does not hide them
    (privatedata.partitions_public: Slurm shows them to anyone then); the QOS names and UsageFactors
    (`sacctmgr show qos` shows them to anyone), PriorityFlags as slurmctld shows them, the release."""
    cfg = snap.config
    parts = partitions if partitions is not None and privatedata.partitions_public(cfg.private_data) else None
    default = next((n for n, p in (parts or {}).items() if p.get("default")), None)
    return {
        "release": cfg.slurm_version or None,
        "priority_flags": ",".join(cfg.priority_flags),
        "default_partition": default,
        "partitions": parts,
        "cluster_gpus": None if parts is None else max((int(p.get("gpus") or 0) for p in parts.values()), default=0),
        "qos_usage_factor": {str(k): float(v) for k, v in (getattr(snap, "usage_factors", None) or {}).items()},
    }


def gate_summary(table: dict[str, Any], shares: tuple[ShareRow, ...], cluster: str, every_s: float) -> dict[str, Any]:
    """What `fscontrol why` tells a user whose job the SFS gate holds, and no more: per managed
    account, its occupancy against its target at the gate's latest decision (`table`, as the tick
    recorded it: agent.decide.gate_table, kept as agent_state "gate_table"), keyed by every account
    it covers (privacy.run_key; its sub-accounts too: an allocation on a parent counts their
    jobs), with the account that holds the allocation where it is a parent. Also when the gate decided, how often it runs, and how
    many accounts at or under target had jobs waiting (holds last only while some do). Pure, and
    unfiltered: an account's occupancy is its running jobs, so the accounts go where running jobs
    per account may go (build_published: the world-readable file only where privatedata.jobs_public;
    own_files: a member's own accounts, where privatedata.account_jobs_to_members)."""
    from fscontrol.export import privacy

    rows = table.get("accounts", {})
    parent = {r.account: r.parent for r in shares if not r.user and r.parent}
    names = {r.account for r in shares if not r.user} | set(rows)
    accounts: dict[str, dict[str, Any]] = {}
    for acct in sorted(names):
        a, hops = acct, 0
        while a not in rows and a in parent and hops < 64:
            a, hops = parent[a], hops + 1
        if a not in rows:
            continue
        occupancy, target, state = rows[a]
        accounts[privacy.run_key(acct)] = {"occupancy": occupancy, "target": target, "state": state,
                                                "allocation_on": a if a != acct else None}
    decided = table.get("decided_at")
    return {"decided_at": decided, "every_s": every_s, "next_at": None if decided is None else decided + every_s,
            "as_of": decided, "action": table.get("action"), "unit": table.get("unit"),
            "waiting_at_or_under": table.get("under_waiting"), "accounts": accounts}


def _default_limits() -> dict[str, Any]:
    from fscontrol.export.limits import published_limits

    return published_limits(None)


def running_aggregates(snap: StoredSnapshot) -> dict[str, Any]:
    """What runs now, for forecasts that know the cluster keeps running: for the cluster and for
    each account's whole subtree, every running job as [seconds to its time limit (None: no
    limit), rate in billing-seconds per second, its place in slurmctld's job list (a pass charges
    the jobs in that order, see forecast.classic.project_running): its job id, or under PrivateData=jobs
    its rank among the running jobs (`order`, privacy.running_order)]. The cluster's list names no
    one and is always here, per job only where PrivateData hides no jobs (else in groups of
    several jobs, `cluster_grouped`: privacy.grouped_running); the lists keyed by account (privacy.run_key: the account, or
    account/user) only where privatedata.jobs_public allows (PrivateData hides no names and no jobs:
    squeue and sshare show them to anyone). Otherwise each user finds their own (and, where
    allowed, their accounts') in their own file (own_files, written by publish_latest)."""
    from fscontrol.export import privacy

    cluster, accounts, users = privacy.running_maps(snap, lambda job, order: _entry(snap, job, order))
    public = privatedata.jobs_public(snap.config.private_data)
    grouped = privatedata.jobs_hidden(snap.config.private_data)  # no entry is one job (privacy.grouped_running)
    if grouped:  # (the jobs' users decide the groups: none holds one user's jobs)
        cluster, withheld = privacy.grouped_running((_entry(snap, job, None)[0], job[3], job[2]) for job in snap.running)
    return {"as_of": snap.taken_at, "order": privacy.running_order(snap.config.private_data),
            "cluster": cluster if grouped else sorted(cluster, key=_end_key),
            "cluster_grouped": grouped, "cluster_withheld": withheld if grouped else 0,
            "accounts": {k: sorted(v, key=_end_key) for k, v in sorted(accounts.items())} if public else {},
            "users": {k: sorted(v, key=_end_key) for k, v in sorted(users.items())} if public else {},
            "users_published": public}


def own_files(snap: StoredSnapshot, *, secret: bytes | None, admins: tuple[str, ...] | list[str] = (),
              gate: dict[str, Any] | None = None, tres_limits: dict[str, Any] | None = None,
              job_qos: dict[str, dict] | None = None) -> dict[str, dict]:
    """Each user's own file (user -> content), beside the published snapshot: where the world-
    readable file cannot carry them, the user's own running jobs (and their accounts', where
    PrivateData allows: privacy.own_running) and the gate's entries (gate_summary) of the accounts
    they have an association in (where PrivateData lets members see their accounts' jobs); for an
    admin, their admin token."""
    from fscontrol.export import privacy

    out: dict[str, dict] = {}
    pd = snap.config.private_data
    if gate and gate.get("accounts") and not privatedata.jobs_public(pd) and privatedata.account_jobs_to_members(pd):
        for user in sorted({r.user for r in snap.shares if r.user}):
            mine = {privacy.run_key(r.account) for r in snap.shares if r.user == user}
            entries = {k: v for k, v in gate["accounts"].items() if k in mine}
            if entries:
                out[user] = {"format": privacy.OWN_FORMAT, "user": user, "cluster": snap.cluster, "snapshot_id": snap.id,
                             "gate_accounts": entries}
    if not privatedata.jobs_public(snap.config.private_data) and snap.running:
        _, accounts, users = privacy.running_maps(snap, lambda job, order: _entry(snap, job, order))
        running_users = {job[2] for job in snap.running}
        for user in sorted({r.user for r in snap.shares if r.user}):
            mine = privacy.own_running(snap, user, accounts, users)
            if user in running_users or mine["accounts"]:
                out.setdefault(user, {"format": privacy.OWN_FORMAT, "user": user, "cluster": snap.cluster,
                                      "snapshot_id": snap.id})["running"] = {"users": {k: sorted(v, key=_end_key) for k, v in mine["users"].items()},
                                         "accounts": {k: sorted(v, key=_end_key) for k, v in mine["accounts"].items()}}
    if tres_limits and tres_limits.get("entries"):
        _own_limits(out, snap, tres_limits)
    jobqos.add_own(out, snap, job_qos)  # the QOS the user's jobs get without --qos (export.jobqos)
    if secret:
        for a in admins:
            out.setdefault(a, {"format": privacy.OWN_FORMAT, "user": a})["admin_token"] = privacy.admin_token(secret, snap.cluster, a)
    return out


def _own_limits(out: dict[str, dict], snap: StoredSnapshot, tres_limits: dict[str, Any]) -> None:
    """Each user's limits (model.quota.user_entries: their own associations', their accounts' and
    QOS's), in their own file only: the account's usage of a Grp limit only where PrivateData lets
    users see others' usage (no `usage` flag)."""
    from fscontrol.export import privacy
    from fscontrol.model import quota

    others = privatedata.usage_public(snap.config.private_data)
    for user in sorted({r.user for r in snap.shares if r.user}):
        accounts = {r.account for r in snap.shares if r.user == user}
        mine = quota.user_entries(tres_limits["entries"], tres_limits.get("parent") or {}, user, accounts,
                                  accounts_usage=others)
        if mine:
            parent = tres_limits.get("parent") or {}
            out.setdefault(user, {"format": privacy.OWN_FORMAT, "user": user, "cluster": snap.cluster,
                                  "snapshot_id": snap.id})["tres_limits"] = {
                "read_at": tres_limits.get("read_at"), "entries": mine,
                "lines": {r.account: quota.ancestors(parent, r.account) for r in snap.shares if r.user == user}}


def _entry(snap: StoredSnapshot, job, order: int | None) -> list:  # order: privacy.running_order
    _, _, _, rate, ends_at = job
    return [None if ends_at is None else max(0.0, ends_at - snap.taken_at), rate, order]


def inflow_aggregates(snap: StoredSnapshot, snapshots: int, span_s: float, rates: dict[tuple[str, str], float],
                      variances: dict[tuple[str, str], float], left_ratio: float | None = None,
                      ended: int = 0) -> dict[str, Any]:
    """The submissions that keep coming (the inflow c of du/dt = c - lambda u): the work the jobs
    that started over the recent snapshots bring per second (billing-seconds per second), for the
    cluster and each account's whole subtree and account/user, keyed as `running` is
    (privacy.run_key) and published where `running`'s are (privatedata.jobs_public; the cluster's
    figures name no one and are always here). `snapshots` and `span_s` say how much history it is
    read from: the forecast trusts it in proportion, and each rate's variance (`*_var`,
    decay.arrival_inflow) says how far from "their usage stays where it is" it may be taken
    (forecast.loaded). `left_ratio`: how much of its time to the limit a running job typically
    still runs, read from `ended` jobs (store.loaders.window_inflow; None: to the limit)."""
    from fscontrol.export import privacy

    parent = {r.account: r.parent for r in snap.shares if not r.user}
    accounts: dict[str, float] = {}
    users: dict[str, float] = {}
    accounts_var: dict[str, float] = {}
    users_var: dict[str, float] = {}
    for (account, user), rate in sorted(rates.items()):
        var = variances.get((account, user), 0.0)
        for a in privacy.account_path(parent, account):
            k = privacy.run_key(a)
            accounts[k] = accounts.get(k, 0.0) + rate
            accounts_var[k] = accounts_var.get(k, 0.0) + var
        k = privacy.run_key(account, user)
        users[k] = users.get(k, 0.0) + rate
        users_var[k] = users_var.get(k, 0.0) + var
    public = privatedata.jobs_public(snap.config.private_data)
    return {"snapshots": snapshots, "span_s": span_s, "cluster": math.fsum(rates.values()),
            "cluster_var": math.fsum(variances.values()), "left_ratio": left_ratio, "left_ratio_jobs": ended,
            "accounts": dict(sorted(accounts.items())) if public else {},
            "accounts_var": dict(sorted(accounts_var.items())) if public else {},
            "users": dict(sorted(users.items())) if public else {},
            "users_var": dict(sorted(users_var.items())) if public else {},
            "users_published": public}


def _end_key(e: list) -> float:
    return math.inf if e[0] is None else e[0]


def _rows(shares: tuple[ShareRow, ...], d: int, total: float, dummy: tuple[str, str] | None,
          fair_tree: bool = False, sprio: dict | None = None, sprio_d: int | None = None) -> list[dict]:
    """The rows `sshare -a -l` shows anyone (no PrivateData=usage), with F at the controller's d (classic) or
    F = rank / N (Fair Tree). `sprio`: the snapshot's sprio factors, at its d `sprio_d` (model/effusage.py)."""
    from fscontrol.model.fairshare import fairshare_factor

    ft = None
    ue: list = [r.effective_usage for r in shares]
    held: list = [r.norm_shares for r in shares]
    if fair_tree:
        from fscontrol.model.fairtree import compute_fair_tree

        ft = compute_fair_tree(shares).by_key()
    else:  # as `status`: the digits sshare's 6 decimals drop, from RawUsage, RawShares and the tree
        from fscontrol.model import effusage, fairtree

        fast = fairtree.held_shares_in_order(shares, "classic")
        if fast is not None:
            held = fast[0]
        ue = effusage.refined_effective_usage(shares, norm_shares=held if fast is not None else None, d=sprio_d or d, sprio=sprio)
    out = []
    for r, e, s in zip(shares, ue, held):
        if ft is not None:
            f = ft[r.key].fairshare
        else:
            f = fairshare_factor(e, s, d) if e is not None and s is not None else None
        out.append(
            {
                "account": r.account,
                "user": r.user,
                "parent": r.parent,
                "depth": r.depth,
                "raw_shares": r.raw_shares,
                "shares_parent": r.shares_parent,
                "norm_shares": r.norm_shares if ft is not None else s,
                "raw_usage": r.raw_usage,
                "usage_core_hours": r.raw_usage / HOUR,
                "norm_usage": r.norm_usage,
                "effective_usage": r.effective_usage if ft is not None else e,
                "fairshare": f,
                "halving_core_hours": (s * d * total / HOUR) if s and total > 0 and ft is None
                else None,
                "dummy": r.key == dummy,
            }
        )
    return out


def default_path(cluster: str | None, publish_dir: str | None = None) -> Path:
    """Where the agent publishes (and `forecast` looks): $FSCONTROL_PUBLISHED if it names a
    file; else <dir>/<cluster>.json, dir = $FSCONTROL_PUBLISHED (a folder), `publish_dir`, or
    /var/lib/fscontrol/public. Without a cluster name the folder itself is returned (the reader
    takes its only .json file)."""
    env = os.environ.get("FSCONTROL_PUBLISHED")
    if env and not Path(env).is_dir():
        return Path(env)
    folder = Path(env or publish_dir or DEFAULT_DIR)
    return folder / f"{cluster}.json" if cluster else folder


def write_published(data: dict[str, Any], path: Path | str) -> Path:
    """Write atomically: a temp file in the same folder, fsync, chmod 0644, os.replace.

    Readers see the old file or the new one, never a half-written one. The text is written in
    pieces (published_chunks), never held whole (issue #31: ~70 MB at 1M jobs)."""
    from fscontrol.atomic import write_chunks

    return write_chunks(path, published_chunks(data))




def published_text(data: dict[str, Any], sorted_running: bool = True) -> str:
    """The file's JSON whole (export/pubwrite.py's published_chunks joined: its layout)."""
    return "".join(published_chunks(data, sorted_running))


def published_chunks(data: dict[str, Any], sorted_running: bool = True) -> Iterator[str]:
    """The file's JSON in pieces (export/pubwrite.py)."""
    from fscontrol.export import pubwrite

    return pubwrite.published_chunks(data, sorted_running)


def read_published(path: Path | str, cluster: str | None = None, users: set[str] | frozenset[str] | None = None,
                   head_only: bool = False, ancestors: bool = False) -> tuple[dict[str, Any], Path]:
    """Read a published snapshot. `path` is the file, or a folder holding <cluster>.json (or a
    single .json file when no cluster is named). PublishedError (exit 6) when there is none.

    `users`: keep only these users' association rows and the accounts' (user ""), in the file's
    order: their rows are found through the file's index and read by seek (a file without one,
    from before it, is read line by line), and other rows are never parsed, so time and memory
    stay small however big the cluster (the file's layout: published_text). None: every row.
    `ancestors` (with `users`): of the accounts' rows only those on these users' paths (each row's
    account, its parent, up to root: what a user's own sshare shows and the forecast reads;
    on_paths). `head_only`: no rows at all ("associations" is empty: `why` reads the gate and the
    padding).
    The index itself is never part of what is returned."""
    p = locate(path, cluster)
    if not p.is_file():
        raise PublishedError(f"{p} is not a regular file: not a published snapshot")
    try:
        data = _load(p, frozenset() if head_only else users, head_only, ancestors and users is not None)
    except (OSError, ValueError, TypeError, KeyError, IndexError, OverflowError) as e:
        raise PublishedError(f"published snapshot {p} is unreadable: {e}") from None
    except (RecursionError, MemoryError):
        raise PublishedError(f"published snapshot {p} is unreadable: nested too deep or too big for a snapshot") from None
    data = check_published(data, p, cluster)
    if users is not None and not head_only:
        _check_rows(data.get("associations"), p)
    return data, p


def _check_rows(rows: Any, p: Path) -> None:
    """The rows a user's reading took are as the writer (pubwrite) writes them: objects, every number
    finite (allow_nan=False), every name printable (Slurm's). Else PublishedError, one line (a NaN
    in a user's row ended the forecast in a traceback)."""
    for r in rows if isinstance(rows, list) else [None]:
        bad = next(((k, v) for k, v in r.items() if (v.__class__ is float and not math.isfinite(v))
                    or (v.__class__ is str and _unprintable(v))), None) if isinstance(r, dict) else ("row", r)
        if bad is not None:
            raise PublishedError(f"published snapshot {p} is unreadable: an association holds {bad[0]} = {bad[1]!r}, "
                                 "which its writer never writes (a damaged file)".encode("utf-8", "backslashreplace").decode())


_unprintable = lambda text: text.encode("utf-8", "surrogatepass") != text.encode("utf-8", "replace")  # noqa: E731 (a lone surrogate)
MAX_LINE = 64 << 20  # a published file's lines are short (the head indented, a row a line): longer is no snapshot
MAX_WHOLE = 1 << 30  # a file read whole (not in the rows-a-line layout): 100,000 associations are ~80 MB


def _line(fh) -> bytes:
    line = fh.readline(MAX_LINE)
    if len(line) >= MAX_LINE and not line.endswith(b"\n"):
        raise ValueError(f"a line of over {MAX_LINE >> 20} MiB: not a published snapshot")
    return line


def locate(path: Path | str, cluster: str | None = None) -> Path:
    """The published file `path` names (read_published's rules); PublishedError when there is none."""
    p = Path(path)
    hint = "the agent publishes it (`fscontrol publish`, as root, e.g. from cron): ask your admin"
    if p.is_dir():
        if cluster:
            p = p / f"{cluster}.json"
        else:
            found = sorted(x for x in p.glob("*.json") if not x.name.startswith("."))
            if not found:
                raise PublishedError(f"no published snapshot yet in {p}: {hint}")
            if len(found) > 1:
                names = ", ".join(x.stem for x in found)
                raise PublishedError(f"several clusters are published in {p} ({names}): choose one with -M")
            p = found[0]
    if not p.exists():
        raise PublishedError(f"no published snapshot yet at {p}: {hint}")
    return p


def check_published(data: Any, p: Path, cluster: str | None = None) -> dict[str, Any]:
    """`data` (read from `p`) when it is a published snapshot of this version (of `cluster`, if named)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PublishedError(f"{p} is not an fscontrol published snapshot (no format {FORMAT!r})")
    if data.get("version") != VERSION:
        raise PublishedError(f"{p} has published-snapshot version {data.get('version')!r}; this fscontrol reads {VERSION}")
    if cluster and data.get("cluster") != cluster:
        raise PublishedError(f"{p} is for cluster {data.get('cluster')!r}, not {cluster!r}")
    name = data.get("cluster")
    if not isinstance(name, str) or _unprintable(name):
        raise PublishedError(f"published snapshot {p} is unreadable: its cluster name {name!r} is not text it can print"
                             .encode("utf-8", "backslashreplace").decode())
    return data


def _whole(p: Path) -> Any:
    if p.stat().st_size > MAX_WHOLE:
        raise ValueError(f"{p.stat().st_size >> 20} MiB, not in the published layout: not a published snapshot")
    data = jsontext.loads(p.read_bytes())
    if isinstance(data, dict):
        data.pop(INDEX_KEY, None)
        data.pop(runsorted.KEY, None)  # (every row and "running" whole: its sorted copy is not the data's)
        data.pop("row_index", None)
    return data


def _load(p: Path, users: set[str] | frozenset[str] | None, head_only: bool = False, ancestors: bool = False) -> Any:
    """The file's JSON, with the rows of `users` (and of accounts) only when the file is in
    published_text's layout (through its index where it has one); a file in another layout is
    read whole, as is every row (one json.loads shares the rows' key strings; one json.loads a
    row does not)."""
    if users is None:
        return _whole(p)
    with p.open("rb") as fh:
        parsed: list = []
        maps: dict[str, bytes] = {}  # the inflow's long maps, read by need (export/headmaps.py)
        head, at, run_at, found = runsorted.read_head(fh, ROWS_LINE.encode(), _line, parsed, maps)  # where the rows' line starts
        if not found:
            return _whole(p)
        data = runsorted.head_json(head, parsed)
        if not isinstance(data, dict):
            return data
        if maps:
            from fscontrol.export.headmaps import EntryMap

            inflow = data.get("inflow")
            if not isinstance(inflow, dict) or any(inflow.get(k, 0) is not None for k in maps):
                raise ValueError("the inflow's maps are not where the published layout writes them")
            inflow.update({k: EntryMap(raw, k, PublishedError) for k, raw in maps.items()})
        size = data.pop(INDEX_KEY, None)
        if head_only:
            data["associations"] = []
            return runsorted.fill(data, [], run_at, None)
        wanted = {*users, ""}
        try:
            rows = _by_index(fh, at, size, wanted, ancestors) if type(size) is int else None
        except (ValueError, TypeError, KeyError, IndexError):
            rows = None
        if rows is None:  # no index (a file from before it), or one that does not fit the file: every line
            fh.seek(at)
            fh.readline()
            rows = _scan(fh, wanted)
            if rows is None:
                return _whole(p)
            if ancestors:
                rows = on_paths(rows, users)
        data = runsorted.fill(data, rows, run_at, lambda o, n: (fh.seek(o), fh.read(n))[1])
    data["associations"] = rows
    return data


def _scan(fh, wanted: set[str]) -> list[dict] | None:
    """The rows of `wanted` users, line by line; None when the rows are not one a line."""
    rows: list[dict] = []
    needles = tuple(f',"user":{jsontext.dumps_str(u)},'.encode() for u in wanted)
    while line := _line(fh):
        row = line.strip().removesuffix(b",")
        if row == b"":
            continue
        if row in (b"]", b"}"):
            break
        if not (row.startswith(b"{") and row.endswith(b"}")):
            return None
        if any(n in row for n in needles):
            r = jsontext.loads(row)
            if r.get("user") in wanted:
                rows.append(r)
    return rows
