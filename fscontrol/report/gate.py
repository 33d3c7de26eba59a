"""`fscontrol gate`: the SFS gate's accounts and actions as tables, its --json and its report. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from fscontrol.report.table import Field, pick_fields


GATE_FIELDS: tuple[Field, ...] = (
    Field("Account", "account", "account", None, False, "the account"),
    Field("State", "state", "state", None, False, "over, at or under its target, or unmanaged (no allocation)"),
    Field("Occupancy", "occupancy", "occupancy", None, True, "what its running jobs hold now, in the allocations' unit"),
    Field("Ideal", "ideal", "ideal", None, True, "its award over its period: the occupancy it is due"),
    Field("Target", "target", "target", None, True, "factor x ideal: above this it is over"),
    Field("OverBy", "over by", "over_by", None, True, "occupancy - target"),
    Field("Running", "running", "running_jobs", "d", True, "its running jobs"),
    Field("Pending", "pending", "pending_jobs", "d", True, "its pending jobs"),
    Field("PendingDemand", "pending demand", "pending_demand", None, True, "what its pending jobs ask for"),
    Field("Waiting", "waiting", "waiting_jobs", "d", True, "pending jobs that could start (not held, no dependency)"),
    Field("WaitingDemand", "waiting demand", "waiting_demand", None, True, "what the waiting jobs ask for"),
    Field("AgentHeld", "agent held", "agent_held", "d", True, "its jobs the agent holds (or demotes) now"),
)


GATE_DEFAULT_FIELDS = ("Account", "State", "Occupancy", "Ideal", "Target", "Running", "Pending", "PendingDemand",
                       "Waiting", "AgentHeld")


GATE_ACTION_FIELDS: tuple[Field, ...] = (
    Field("Kind", "kind", "kind", None, False, "hold, release, nice or unnice"),
    Field("JobId", "job", "job_id", None, False, "the job"),
    Field("Account", "account", "account", None, False, "its account"),
    Field("Nice", "nice", "nice", "d", True, "the Nice a demotion sets"),
    Field("Reason", "reason", "reason", None, False, "why"),
)


GATE_ACTION_DEFAULT_FIELDS = ("Kind", "JobId", "Account", "Reason")


def gate_fields(plan, spec: str | None, actions: bool = False) -> tuple[Field, ...]:
    """-o for `fscontrol gate`: the accounts table's fields (headers naming the plan's unit and
    its action, as the plain report does), or with --actions the actions table's."""
    from dataclasses import replace as with_

    if actions:
        return pick_fields(spec, GATE_ACTION_FIELDS, GATE_ACTION_DEFAULT_FIELDS)
    heads = {"Occupancy": f"occupancy ({plan.unit})", "AgentHeld": f"agent {'held' if plan.action == 'hold' else 'demoted'}"}
    return tuple(with_(f, header=heads[f.name]) if f.name in heads else f
                 for f in pick_fields(spec, GATE_FIELDS, GATE_DEFAULT_FIELDS))


def gate_rows(plan, actions: bool = False) -> list[dict]:
    """The gate's accounts (or actions) as the table's rows; sizes as the plain report prints them."""
    from fscontrol.act.gate import _fmt

    if actions:
        return [{"kind": a.kind, "job_id": a.job_id, "account": a.account, "nice": a.nice, "reason": a.reason}
                for a in plan.actions]
    out = []
    for a in plan.accounts:
        row = a.to_dict()
        for k in ("occupancy", "ideal", "target", "over_by", "pending_demand", "waiting_demand"):
            row[k] = None if row[k] is None else _fmt(row[k])
        out.append(row)
    return out


def format_gate(plan, fields: Sequence[Field]) -> str:
    """The gate's report with -o's fields in its accounts table (the rest as the plain report)."""
    from tabulate import tabulate

    table = tabulate([["-" if r[f.key] is None else r[f.key] for f in fields] for r in gate_rows(plan)],
                     headers=[f.header for f in fields], tablefmt="simple", disable_numparse=True)
    return format_gate_plan(plan, table=table)


def gate_data(res) -> dict:
    """`fscontrol gate --json`: the plan, the mode and each action's outcome (`res`: the gate
    tick's result: plan, actions, applied)."""
    data = res.plan.to_dict()
    data["mode"] = "apply" if res.applied else "dry-run"
    data["results"] = [{"job_id": a.job_id, "kind": a.kind, "status": a.status, "output": a.output} for a in res.actions]
    return data


def gate_table_notes(res, actions_table: bool = False) -> list[str]:
    """-P/-n: the report's lines beside the table (on stderr): what was planned, the plan's notes,
    what was done (or that nothing was)."""

    plan = res.plan
    notes = ([] if actions_table else [f"{len(plan.actions)} action(s) planned (--actions lists them)"]) + gate_notes(plan)
    if res.applied:
        notes += [f"{a.status} {' '.join(a.argv)}  {a.output}" for a in res.actions]
    elif res.actions:
        notes.append("dry run: nothing was changed; --apply carries the plan out")
    return notes


def gate_lines(res, fields: str | None = None, actions_table: bool = False) -> list[str]:
    """The plain report: the plan (-o: its accounts table with those fields; with --actions the
    actions table alone, padded), then what was done (or that nothing was)."""
    from fscontrol.report.table import table_lines

    plan = res.plan
    if actions_table:
        lines = list(table_lines(gate_rows(plan, True), gate_fields(plan, fields, True)))
    else:
        lines = [format_gate_plan(plan) if fields is None else format_gate(plan, gate_fields(plan, fields))]
    if res.applied:
        lines += [f"{a.status:8} {' '.join(a.argv)}  {a.output}" for a in res.actions]
    elif res.actions:
        lines.append("(dry run: nothing was changed; --apply carries the plan out)")
    return lines


def format_gate_plan(plan, table: str | None = None) -> str:
    """The plan as text: the per-account table (`table`: another rendering of it, -o's fields),
    then the actions with their reasons."""
    if plan.note and not plan.accounts and not plan.actions:
        return "\n".join(gate_notes(plan))
    if table is None:
        from tabulate import tabulate

        from fscontrol.act.gate import _fmt

        def num(x: float | None) -> str:
            return "-" if x is None else _fmt(x)

        rows = [
            [a.account, a.state, num(a.occupancy), num(a.ideal), num(a.target), a.running_jobs, a.pending_jobs,
             num(a.pending_demand), a.waiting_jobs, a.agent_held]
            for a in plan.accounts
        ]
        headers = ["account", "state", f"occupancy ({plan.unit})", "ideal", "target", "running", "pending",
                   "pending demand", "waiting", f"agent {'held' if plan.action == 'hold' else 'demoted'}"]
        table = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)
    out = [table, ""]
    if plan.actions:
        out.append(f"{len(plan.actions)} action(s):")
        out.extend(f"  {a.kind:<8} {a.job_id:<12} {a.account:<12} {a.reason}" for a in plan.actions)
    else:
        out.append("no action")
    out.extend(gate_notes(plan))
    return "\n".join(out)


def gate_notes(plan) -> list[str]:
    """What the gate report says after its tables: deferred actions, the ledger, others' holds."""
    out = [plan.note] if plan.note else []
    if plan.deferred:
        out.append(f"{plan.deferred} more action(s) deferred to the next tick (max actions per tick)")
    if plan.stale_ledger:
        why = dict(getattr(plan, "stale_why", ()) or ())
        out.append("ledger rows dropped: " + ", ".join(f"{j} ({why[j]})" if j in why else j for j in plan.stale_ledger))
    if plan.foreign_held:
        out.append(f"held by users/admins, left alone: {', '.join(plan.foreign_held)}")
    return out
