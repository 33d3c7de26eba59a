"""The SFS gate: Steffen's two-pass scheduler as holds (or nice demotions) on a live Slurm.

Slurm's scheduling loop cannot be reordered from outside, so the agent gates it
(DESIGN.md, "SFS"):

* **pass-1 analogue** - while some account at or under its target occupancy has pending jobs
  that are *waiting* (eligible, pending for Priority/Resources), the waiting jobs of accounts
  *over* target are held (``scontrol hold``) or demoted (``scontrol update JobId=N Nice=K``);
* **pass-2 analogue** - the agent's own holds are released when their account drops to or under
  target (in priority order, while the account's running occupancy plus its waiting demand is
  still at or under target: the re-check after each placement of pass 1), and all of them are
  released as soon as nothing at or under target is waiting: a hold must never idle nodes for
  nobody.

Safety: a pending job held by a user (``JobHeldUser``) or an admin (``JobHeldAdmin``) that is
not in the agent's ledger is never touched; a job not in the ledger is never released or
un-niced; a job whose nice someone else set is never re-niced.

Ownership is marked in Slurm itself: the agent holds a job with one RPC that also sets its
AdminComment (``scontrol update JobId=N Priority=0 AdminComment=fscontrol:hold``; only an
operator can set AdminComment, so a user cannot forge the mark), and demotes with the Nice and
the mark together. It never marks a job whose AdminComment someone already set. A job is the
agent's to release only while its ledger row, its mark and its state (held, or the Nice the agent
set) all agree (:func:`reconcile_ledger`); a job someone else released or re-niced is left alone
for good (``hands_off``), and the agent clears its own mark from it. At most ``max_actions``
actions are planned per tick (releases first); the rest are counted as deferred.

Limits: the gate sees the queue, not the nodes. While an under-target account's waiting job
cannot start (too big for the free nodes: Slurm drains for it), the held jobs of over-target
accounts cannot backfill into the drain either; the nice mode keeps them visible to backfill.

Pure: no I/O, no clock (``now`` is an argument), deterministic order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from fscontrol.model.allocations import Allocation, allocations_unit
from fscontrol.errors import ConfigError, UnsafeActionError
from fscontrol.records import HOLD_MARK, MARK_PREFIX, mark_of, nice_mark  # noqa: F401 - the gate's marks
from fscontrol.snaprecords import LedgerEntry, QueueJob

ActionKind = Literal["hold", "release", "nice", "unnice", "unmark"]
GateMode = Literal["hold", "nice"]

RUNNING_STATES = frozenset({"RUNNING", "R", "CONFIGURING", "CF"})
PENDING_STATES = frozenset({"PENDING", "PD"})
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
AGENT_HOLD_REASON = "JobHeldAdmin"  # what an operator's hold leaves: no owner is recorded
# Pending reasons that mean "cannot run now whatever the scheduler does": not waiting for nodes.
_NOT_WAITING_PREFIXES = (
    "JobHeld",
    "Dependency",
    "BeginTime",
    "Assoc",
    "QOS",
    "JobArrayTaskLimit",
    "Partition",
    "Invalid",
    "BadConstraints",
    "ReqNodeNotAvail",
    "Reservation",
    "launch failed",
    "FrontEndDown",
    "NodeDown",
    "DeadLine",
)


@dataclass(frozen=True, slots=True)
class GateOptions:
    """How the gate acts.

    action: "hold" (scontrol hold/release; held jobs lose accrued age unless ACCRUE_ALWAYS) or
      "nice" (demote with Nice=nice_value; keeps age and backfill).
    nice_value: the Nice the agent sets (1..2147483645; Slurm subtracts it from the priority).
    max_actions: at most this many actions per tick (>= 1).
    node_cpus: cpus per node, to count a job in nodes when squeue gave no node count (unit
      "nodes"), or in cpus when it gave no cpu count (unit "cpus").
    """

    action: GateMode = "hold"
    nice_value: int = 10000
    max_actions: int = 50
    node_cpus: int | None = None

    def __post_init__(self) -> None:
        if self.action not in ("hold", "nice"):
            raise ConfigError(f"gate action must be 'hold' or 'nice', not {self.action!r}")
        if isinstance(self.nice_value, bool) or not isinstance(self.nice_value, int) or not (
            1 <= self.nice_value <= 2147483645
        ):
            raise ConfigError(f"gate nice value must be an integer in 1..2147483645, not {self.nice_value!r}")
        if isinstance(self.max_actions, bool) or not isinstance(self.max_actions, int) or self.max_actions < 1:
            raise ConfigError(f"gate max actions per tick must be an integer >= 1, not {self.max_actions!r}")
        if self.node_cpus is not None and (
            isinstance(self.node_cpus, bool) or not isinstance(self.node_cpus, int) or self.node_cpus < 1
        ):
            raise ConfigError(f"gate node size (cpus per node) must be an integer >= 1, not {self.node_cpus!r}")


@dataclass(frozen=True, slots=True)
class GateAction:
    """One planned change to one job, with a human reason."""

    kind: ActionKind
    job_id: str
    account: str
    reason: str
    nice: int | None = None  # the Nice to set (nice/unnice)

    @property
    def argv(self) -> tuple[str, ...]:
        """The Slurm command that carries the action out (an argument list, never a shell line).
        A hold or a demotion sets the agent's mark in the same RPC; an un-nice clears it."""
        if not JOB_ID.fullmatch(self.job_id):
            raise UnsafeActionError(f"refusing to act on {self.job_id!r}: not a Slurm job id")
        if self.kind == "hold":
            return ("scontrol", "update", f"JobId={self.job_id}", "Priority=0", f"AdminComment={HOLD_MARK}")
        if self.kind == "release":
            return ("scontrol", "release", self.job_id)
        if self.kind == "unmark":
            return ("scontrol", "update", f"JobId={self.job_id}", "AdminComment=")
        if self.kind == "nice":
            return ("scontrol", "update", f"JobId={self.job_id}", f"Nice={self.nice}", f"AdminComment={nice_mark(int(self.nice or 0))}")
        return ("scontrol", "update", f"JobId={self.job_id}", f"Nice={self.nice}", "AdminComment=")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"] = list(self.argv)
        return d


@dataclass(frozen=True, slots=True)
class AccountGate:
    """One account's line in the gate table (sizes in the allocations' unit)."""

    account: str
    unit: str
    occupancy: float  # sum of the sizes of its RUNNING jobs
    ideal: float | None  # None: no allocation (unmanaged)
    target: float | None
    running_jobs: int
    pending_jobs: int
    pending_demand: float  # sum of the sizes of all its pending jobs
    waiting_jobs: int  # pending and eligible (not held, no dependency/limit reason)
    waiting_demand: float
    agent_held: int  # its jobs held/demoted by the agent (ledger), still pending
    state: Literal["over", "at", "under", "unmanaged"]

    @property
    def over_by(self) -> float | None:
        return None if self.target is None else self.occupancy - self.target

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["over_by"] = self.over_by
        return d


@dataclass(frozen=True, slots=True)
class GatePlan:
    """The gate's decision at ``now``: the per-account table and the actions, in order."""

    now: float
    action: GateMode
    unit: str
    accounts: tuple[AccountGate, ...]
    actions: tuple[GateAction, ...]
    deferred: int = 0  # actions beyond max_actions, left for the next tick
    under_waiting: tuple[str, ...] = ()  # accounts at/under target with waiting jobs
    stale_ledger: tuple[str, ...] = ()  # ledger ids no longer held/demoted by us: their rows leave the ledger
    stale_why: tuple[tuple[str, str], ...] = ()  # (id, why) for each of stale_ledger
    foreign_held: tuple[str, ...] = field(default=())  # held by a user/admin: left alone
    note: str | None = None  # why there is nothing to gate (no allocations configured)

    @property
    def holds(self) -> tuple[GateAction, ...]:
        return tuple(a for a in self.actions if a.kind in ("hold", "nice"))

    @property
    def releases(self) -> tuple[GateAction, ...]:
        return tuple(a for a in self.actions if a.kind in ("release", "unnice"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "action": self.action,
            "unit": self.unit,
            "accounts": [a.to_dict() for a in self.accounts],
            "actions": [a.to_dict() for a in self.actions],
            "deferred": self.deferred,
            "under_waiting": list(self.under_waiting),
            "stale_ledger": list(self.stale_ledger),
            "stale_why": [list(x) for x in self.stale_why],
            "foreign_held": list(self.foreign_held),
            "note": self.note,
        }


_ID_PART = re.compile(r"(\d+)")
JOB_ID = re.compile(r"[0-9]{1,10}(_[0-9]{1,10})?(\+[0-9]{1,5})?")  # job, array task, het component


def _id_key(job_id: str) -> tuple:
    """Natural order of job ids ("9" < "10", "12_3" < "12_10")."""
    return tuple(int(p) if p.isdigit() else p for p in _ID_PART.split(job_id) if p != "")


def _prio_key(job: QueueJob) -> tuple:
    """Highest priority first, then oldest, then job id: a deterministic total order."""
    submit = job.submit if job.submit is not None else math.inf
    return (-job.priority, submit, _id_key(job.job_id))


def job_size(job: QueueJob, unit: str, node_cpus: int | None = None) -> float:
    """A job's size in the unit: nodes or cpus (converted with node_cpus when one is missing)."""
    if unit == "nodes":
        if job.nodes > 0:
            return float(job.nodes)
        if node_cpus and job.cpus > 0:
            return float(math.ceil(job.cpus / node_cpus))
        return 0.0
    if job.cpus > 0:
        return float(job.cpus)
    if node_cpus and job.nodes > 0:
        return float(job.nodes * node_cpus)
    return 0.0


def is_running(job: QueueJob) -> bool:
    return job.state.upper() in RUNNING_STATES


def is_pending(job: QueueJob) -> bool:
    return job.state.upper() in PENDING_STATES


def is_waiting(job: QueueJob) -> bool:
    """Pending and eligible: it waits for nodes or priority, not for a hold, dependency or limit."""
    if not is_pending(job):
        return False
    reason = job.reason or ""
    return not reason.startswith(_NOT_WAITING_PREFIXES)


def plan_gate(
    queue: Iterable[QueueJob],
    allocations: Mapping[str, Allocation],
    ledger: Collection[str] | Mapping[str, int] = (),
    options: GateOptions | None = None,
    *,
    now: float,
    hands_off: Collection[str] = (),
    parents: Mapping[str, str] | None = None,
    kinds: Mapping[str, str] | None = None,
) -> GatePlan:
    """Plan one gate tick.

    queue: squeue's jobs (pending and running; others are ignored).
    allocations: account -> Allocation (one unit for all). Accounts without one are unmanaged:
      never held, and their waiting jobs do not trigger holds.
    ledger: ids of the jobs the agent itself holds (hold mode) or demoted (nice mode). In nice
      mode it may be a mapping id -> the Nice the job had before, restored on un-nice (else 0).
    now: the time of the decision (recorded in the plan; the policy does not depend on it).
    hands_off: jobs the agent once held that someone else released or re-niced: never again.
    parents: account -> parent account (from sshare). A job counts for the nearest account on
      its path that has an allocation, so an allocation on a parent account covers the jobs of
      its sub-accounts (its occupancy is theirs).
    kinds: ledger id -> its row's kind ("hold" | "nice"; else its mark's, else the mode's). A job of
      the other kind (`[gate] action` changed) is undone per its kind, gated per the mode later.
    """
    opts = options or GateOptions()
    unit = allocations_unit(allocations)
    mode = opts.action
    ours = set(ledger)
    restore = dict(ledger) if isinstance(ledger, Mapping) else {}

    jobs = sorted(queue, key=_prio_key)

    def managed(account: str) -> str:
        """The nearest account on the path up from `account` with an allocation (else itself)."""
        a, hops = account, 0
        while parents and a not in allocations and a in parents and hops < 64:
            a, hops = parents[a], hops + 1
        return a if a in allocations else account

    seen: set[str] = set()
    running: dict[str, list[QueueJob]] = {}
    pending: dict[str, list[QueueJob]] = {}
    for j in jobs:
        if j.job_id in seen:
            continue
        seen.add(j.job_id)
        if is_running(j):
            running.setdefault(managed(j.account), []).append(j)
        elif is_pending(j):
            pending.setdefault(managed(j.account), []).append(j)

    def size(j: QueueJob) -> float:
        return job_size(j, unit, opts.node_cpus)

    # Which ledger jobs are still ours (held / demoted by us, pending)? Each by its own kind, not
    # the mode: after `[gate] action` changed, those of the other kind come off first (switched).
    agent_jobs: dict[str, list[QueueJob]] = {}
    switched: list[QueueJob] = []
    stale: list[tuple[str, str]] = []
    pending_ids = set()
    for acct, pjobs in pending.items():
        for j in pjobs:
            pending_ids.add(j.job_id)
            if j.job_id not in ours:
                continue
            kind = _kind_of(j, kinds, mode)
            if kind == "hold":
                still = j.reason == AGENT_HOLD_REASON
            else:  # the Nice the agent set: its mark records it, so a config change strands nothing
                still = j.nice == opts.nice_value or (j.admin_comment == nice_mark(j.nice) and j.nice != 0)
            if not still:  # released / re-niced by someone else: not ours any more
                stale.append((j.job_id, "someone else released or re-niced it"))
            elif kind != mode:
                switched.append(j)
            else:
                agent_jobs.setdefault(acct, []).append(j)
    stale.extend((i, "the job left the queue or started") for i in ours if i not in pending_ids)

    foreign: list[str] = []
    accounts = sorted(set(running) | set(pending) | set(allocations))
    table: list[AccountGate] = []
    state_of: dict[str, str] = {}
    occ_of: dict[str, float] = {}
    waiting_of: dict[str, list[QueueJob]] = {}
    gateable_of: dict[str, set[str]] = {}
    for acct in accounts:
        r = running.get(acct, [])
        p = pending.get(acct, [])
        occ = sum(size(j) for j in r)
        waiting = [j for j in p if j.job_id not in ours and is_waiting(j)]
        gateable = {j.job_id for j in waiting if j.job_id not in hands_off and not j.admin_comment}
        foreign.extend(j.job_id for j in p if j.job_id not in ours and j.reason in HELD_REASONS)
        alloc = allocations.get(acct)
        if alloc is None:
            state = "unmanaged"
            ideal = target = None
        else:
            ideal, target = alloc.ideal, alloc.target
            state = "over" if occ > target else ("at" if occ == target else "under")
        state_of[acct] = state
        occ_of[acct] = occ
        waiting_of[acct] = waiting
        gateable_of[acct] = gateable
        table.append(
            AccountGate(
                account=acct,
                unit=unit,
                occupancy=occ,
                ideal=ideal,
                target=target,
                running_jobs=len(r),
                pending_jobs=len(p),
                pending_demand=sum(size(j) for j in p),
                waiting_jobs=len(waiting),
                waiting_demand=sum(size(j) for j in waiting),
                agent_held=len(agent_jobs.get(acct, [])) + sum(1 for j in switched if managed(j.account) == acct),
                state=state,  # type: ignore[arg-type]
            )
        )

    under_waiting = tuple(a for a in accounts if state_of[a] in ("at", "under") and waiting_of[a])
    undo: ActionKind = "release" if mode == "hold" else "unnice"
    do: ActionKind = "hold" if mode == "hold" else "nice"

    def undo_action(j: QueueJob, why: str) -> GateAction:
        nice = None if mode == "hold" else int(restore.get(j.job_id, 0))
        return GateAction(undo, j.job_id, j.account, why, nice)

    releases: list[GateAction] = []
    for j in switched:  # (priority order) the mode changed: the agent's mark of the other kind comes off first
        was = "hold" if mode == "nice" else "nice"
        why = f"the gate's action is now {mode!r}: the agent's {was} comes off (gated as {mode} at a later tick)"
        if was == "hold":
            releases.append(GateAction("release", j.job_id, j.account, why))
        else:
            releases.append(GateAction("unnice", j.job_id, j.account, why, int(restore.get(j.job_id, 0))))
    for acct in sorted(agent_jobs):
        held = agent_jobs[acct]  # already in priority order
        state = state_of[acct]
        if not under_waiting:
            why = "nothing at or under target is waiting: a hold must not idle nodes"
            releases.extend(undo_action(j, why) for j in held)
        elif state == "unmanaged":
            releases.extend(undo_action(j, f"account {acct} has no allocation any more") for j in held)
        elif state in ("at", "under"):
            alloc = allocations[acct]
            proj = occ_of[acct] + sum(size(j) for j in waiting_of[acct])
            for j in held:
                if proj > alloc.target:
                    break
                releases.append(
                    undo_action(
                        j,
                        f"account {acct} at/under target ({_fmt(proj)} <= {_fmt(alloc.target)} {unit} "
                        "with its running and waiting jobs)",
                    )
                )
                proj += size(j)

    holds: list[GateAction] = []
    if under_waiting:
        waiting_names = ", ".join(under_waiting[:3]) + (" ..." if len(under_waiting) > 3 else "")
        over = [a for a in accounts if state_of[a] == "over"]
        # Most over target (relative) first, then by name: their top jobs are in the way.
        over.sort(key=lambda a: (-(occ_of[a] / allocations[a].target), a))
        for acct in over:
            alloc = allocations[acct]
            for j in waiting_of[acct]:
                if j.job_id not in gateable_of[acct]:
                    continue  # someone's AdminComment on it, or released by someone after an agent hold
                if mode == "nice" and j.nice != 0:
                    continue  # someone else set its nice: leave it alone
                why = (
                    f"account {acct} over target ({_fmt(occ_of[acct])} > {_fmt(alloc.target)} {unit}) "
                    f"while {waiting_names} at/under target wait"
                )
                holds.append(GateAction(do, j.job_id, acct, why, None if mode == "hold" else opts.nice_value))

    # max_actions counts jobs: a release is two commands (release, then clear the mark; an
    # un-nice clears the mark in its own one), never cut apart
    unmark = "clear the agent's mark after its release"
    units = [((a, GateAction("unmark", a.job_id, a.account, unmark)) if a.kind == "release" else (a,)) for a in releases + holds]
    kept = tuple(a for u in units[: opts.max_actions] for a in u)
    return GatePlan(
        now=now,
        action=mode,
        unit=unit,
        accounts=tuple(table),
        actions=kept,
        deferred=max(0, len(units) - opts.max_actions),
        under_waiting=under_waiting,
        stale_ledger=tuple(sorted({i for i, _ in stale}, key=_id_key)),
        stale_why=tuple(sorted(set(stale), key=lambda x: _id_key(x[0]))),
        foreign_held=tuple(sorted(foreign, key=_id_key)),
    )


def _kind_of(j: QueueJob, kinds: Mapping[str, str] | None, mode: str) -> str:
    """The kind of the agent's mark on a ledger job: its row's, else its mark's, else the mode."""
    if kinds and j.job_id in kinds:
        return kinds[j.job_id]
    if j.admin_comment == HOLD_MARK:
        return "hold"
    if j.admin_comment.startswith(MARK_PREFIX + "nice:"):
        return "nice"
    return mode


def _fmt(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{x:.1f}"


def apply_to_ledger(
    ledger: Mapping[str, int] | Collection[str], plan: GatePlan, *, done: Iterable[str] | None = None
) -> dict[str, int]:
    """The ledger after a plan was carried out (``done``: ids whose action succeeded; default all).

    Returns a mapping id -> the Nice to restore (0 for holds): stale ids are dropped, ids the
    agent released/un-niced are removed, ids it held/demoted are added.
    """
    out: dict[str, int] = dict(ledger) if isinstance(ledger, Mapping) else {i: 0 for i in ledger}
    ok = None if done is None else set(done)
    for i in plan.stale_ledger:
        out.pop(i, None)
    for a in plan.actions:
        if ok is not None and a.job_id not in ok:
            continue
        if a.kind in ("release", "unnice"):
            out.pop(a.job_id, None)
        else:
            out.setdefault(a.job_id, 0)
    return out


@dataclass(frozen=True, slots=True)
class Reconciled:
    ledger: dict[str, LedgerEntry]  # the ledger as Slurm shows it now
    changes: tuple[tuple[str, str, str | None, str], ...]  # (job, old state, new state or None: dropped, why)
    cleanup: tuple[GateAction, ...]  # the agent's own marks left on jobs it no longer holds
    orphans: tuple[str, ...]  # held jobs with the agent's mark and no ledger row (a lost history)

    @property
    def held(self) -> dict[str, int]:
        """job -> Nice to restore, for the jobs that are the agent's to release."""
        return {j: e.restore_nice for j, e in self.ledger.items() if e.state == "held"}

    @property
    def hands_off(self) -> frozenset[str]:
        return frozenset(j for j, e in self.ledger.items() if e.state == "hands_off")


def in_marked_state(job: QueueJob, entry: LedgerEntry) -> bool:
    """The job is pending exactly as the agent left it: its mark, and held / at the Nice it set."""
    if not is_pending(job) or job.admin_comment != entry.mark:
        return False
    return job.reason == AGENT_HOLD_REASON if entry.kind == "hold" else job.nice == entry.set_nice


def reconcile_ledger(queue: Iterable[QueueJob], ledger: Mapping[str, LedgerEntry]) -> Reconciled:
    """Settle the ledger against what Slurm shows (the first thing a tick does with its read).

    A hold whose outcome was unknown (killed mid-tick, a command that timed out after acting) is
    confirmed by its mark, or dropped when Slurm never applied it; a release likewise. A job that
    someone else released or re-niced is ours no more: hands off, and the agent's mark comes off.
    Jobs that left the queue leave the ledger. Pure."""
    jobs = {j.job_id: j for j in queue}
    out: dict[str, LedgerEntry] = {}
    changes: list[tuple[str, str, str | None, str]] = []
    cleanup: list[GateAction] = []

    def unmark_if_marked(j: QueueJob, why: str) -> None:
        if j.admin_comment.startswith(MARK_PREFIX) and is_pending(j):
            cleanup.append(GateAction("unmark", j.job_id, j.account, why))

    for jid, e in ledger.items():
        j = jobs.get(jid)
        if j is None or not is_pending(j):
            changes.append((jid, e.state, None, "job left the queue or started"))
            if j is not None:
                unmark_if_marked(j, "the agent's mark on a job that is no longer pending")
            continue
        marked = in_marked_state(j, e)
        if e.state == "hands_off":
            out[jid] = e
        elif e.state in ("holding", "held"):
            if marked:
                out[jid] = replace(e, state="held")
                if e.state != "held":
                    changes.append((jid, e.state, "held", "Slurm shows the agent's mark and hold"))
            elif e.state == "holding" and j.admin_comment != e.mark:
                changes.append((jid, e.state, None, "the hold never reached Slurm (no mark)"))
            else:
                out[jid] = replace(e, state="hands_off")
                why = ("someone changed its AdminComment" if j.admin_comment != e.mark
                       else "someone else released or re-niced it")
                changes.append((jid, e.state, "hands_off", why))
                if j.admin_comment == e.mark:
                    cleanup.append(GateAction("unmark", jid, j.account, f"{why}: the agent's mark comes off"))
        elif e.state == "releasing":
            if marked:
                out[jid] = replace(e, state="held")
                changes.append((jid, e.state, "held", "the release never reached Slurm"))
            else:
                changes.append((jid, e.state, None, "released"))
                if j.admin_comment == e.mark:
                    cleanup.append(GateAction("unmark", jid, j.account, "clear the agent's mark after its release"))
        else:
            out[jid] = e
    orphans = tuple(sorted((j.job_id for j in jobs.values() if j.job_id not in ledger and is_pending(j)
                            and j.admin_comment.startswith(MARK_PREFIX)), key=_id_key))
    return Reconciled(out, tuple(changes), tuple(cleanup), orphans)


def plan_release_all(queue: Iterable[QueueJob], rec: Reconciled, *, now: float, mode: GateMode = "hold",
                     orphans: bool = True, why: str = "release-all: undo every hold the agent placed") -> GatePlan:
    """Undo every hold and demotion of the agent: its ledger's jobs still in the state it left them
    in, and (`orphans`) held jobs that carry its mark with no ledger row (a lost history: the mark
    is proof). Without `orphans` only the jobs whose ledger row, mark and hold agree (the tick's
    release when the gate is turned off)."""
    acts: list[GateAction] = []
    jobs = {j.job_id: j for j in queue}
    for jid in sorted(rec.held, key=_id_key):
        e = rec.ledger[jid]
        acct = jobs[jid].account if jid in jobs else ""
        if e.kind == "hold":
            acts += [GateAction("release", jid, acct, why), GateAction("unmark", jid, acct, "clear the agent's mark after its release")]
        else:
            acts.append(GateAction("unnice", jid, acct, why, nice=e.restore_nice))
    for jid in rec.orphans if orphans else ():
        j = jobs[jid]
        if j.admin_comment == HOLD_MARK and j.reason == AGENT_HOLD_REASON:
            acts += [GateAction("release", jid, j.account, why + " (marked, not in the ledger)"),
                     GateAction("unmark", jid, j.account, "clear the agent's mark after its release")]
        elif j.admin_comment.startswith("fscontrol:nice:") and str(j.nice) == j.admin_comment.rsplit(":", 1)[1]:
            acts.append(GateAction("unnice", jid, j.account, why + " (marked, not in the ledger)", nice=0))
    return GatePlan(now=now, action=mode, unit="cpus", accounts=(), actions=tuple(rec.cleanup) + tuple(acts))


def unconfigured_plan(cluster: str, now: float, action: GateMode, held: int = 0) -> GatePlan:
    """The gate on a cluster with no allocations: nothing to gate, and no failure (a dry run on a
    cluster the admin has not configured yet is the normal first step). Holds of an earlier
    configuration stay until `gate --release-all` (said when there are any)."""
    note = (f"no allocations configured for cluster {cluster}: nothing to gate "
            f"(add [clusters.{cluster}.allocations.ACCOUNT] to the config)")
    if held:
        note += f"; {held} job(s) the agent held earlier stay held until `fscontrol gate --release-all`"
    return GatePlan(now=now, action=action, unit="cpus", accounts=(), actions=(), note=note)
