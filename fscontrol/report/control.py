"""`fscontrol control` and `control off`: the plan (or what was done) as data and text; and the control record `status` shows (what Slurm used at each pass, what the agent expects next). Pure."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from fscontrol.report.table import Field, HOUR, _fmt, _iso, pick_fields


FAIR_TREE_ADVICE = (
    "Fair Tree ranks users (F = rank / N among the {n} user associations), so there is no usage at which "
    "F halves and no u* to keep; it ignores FairShareDampeningFactor, so fscontrol changes nothing here.",
    "Shape Fair Tree with the account shares (sacctmgr modify account NAME set fairshare=N): at each level "
    "an account's LevelFS = its share of the shares / its share of the usage; `fscontrol status` shows them.",
    "Set how long usage counts with PriorityDecayHalfLife, and weigh fair-share against age, size and QOS with "
    "PriorityWeightFairshare (Slurm's Fair Tree page: as low as 1-2 x the number of user associations).",
    "Or run classic fair-share (PriorityFlags=NO_FAIR_TREE, then scontrol reconfigure): there fscontrol keeps "
    "F halving every u* core-hours with the damping factor, padding, or both.",
)


def control_data(res) -> dict:
    if getattr(res, "priority_mode", "classic") == "fair_tree":
        return _control_data_fair_tree(res)
    d = res.decision
    h = lambda v: None if v is None else v / HOUR  # noqa: E731
    return {
        "cluster": res.cluster,
        "snapshot_id": res.snapshot_id,
        "decision_id": res.decision_id,
        "method": d.method,
        "mode": "apply" if res.applied else "dry-run",
        "advise_only": d.advise_only,
        "target_core_hours": h(d.u_star),
        "reference_share": d.s_ref,
        "real_usage_core_hours": h(d.u_real),
        "real_usage_next_core_hours": h(d.u_real_next),
        "padding_core_hours": h(d.w_now),
        "padding_target_core_hours": h(d.w_target),
        "damping_now": d.d_now,
        "damping_target": d.d_target,
        "damping_ideal": d.d_ideal,
        "usage_factor": d.usage_factor,
        "pulse_usage_factor": d.pulse_usage_factor,
        "halving_now_core_hours": h(d.h_now),
        "halving_planned_core_hours": h(d.h_planned),
        "error_now": d.error_now,  # before acting: the usage read at the d in force then
        "halving_next_core_hours": h(d.h_next),
        "error_next": d.error_next,  # at the coming pass, once d_target is set
        "error_planned": d.error_planned,
        "rounding_bound": d.bound,
        "verified_damping": res.verified_damping,
        "notes": list(d.notes),
        "actions": [
            {"kind": a.kind, "command": list(a.argv), "reason": a.reason, "status": a.status, "output": a.output}
            for a in res.actions
        ],
    }


def _control_data_fair_tree(res) -> dict:
    """Control under Fair Tree: no plan, no classic figures; what an admin can do instead."""
    d = res.decision
    return {
        "cluster": res.cluster,
        "snapshot_id": res.snapshot_id,
        "decision_id": res.decision_id,
        "priority_mode": "fair_tree",
        "method": d.method if d is not None else None,
        "mode": "apply" if res.applied else "dry-run",
        "advise_only": True,
        "target_core_hours": None if d is None or d.u_star is None else d.u_star / HOUR,
        "advice": [a.format(n=res.user_associations) for a in FAIR_TREE_ADVICE],
        "notes": [],
        "actions": [],
    }


CONTROL_FIELDS: tuple[Field, ...] = (
    Field("Status", "status", "status", None, False, "planned (dry run), pending, ok, failed, unknown, skipped or refused"),
    Field("Kind", "kind", "kind", None, False, "what the command does (set_damping, set_usage_factor, submit_dummy, ...)"),
    Field("Command", "command", "command_line", None, False, "the Slurm command, quoted as a shell would take it"),
    Field("Reason", "reason", "reason", None, False, "why the plan has it"),
    Field("Output", "output", "output", None, False, "what the command printed (after --apply)"),
)


CONTROL_DEFAULT_FIELDS = ("Status", "Command", "Reason")


def control_rows(data: dict) -> list[dict]:
    """The control plan's commands as the table's rows (one line each: -P reads a line a row)."""
    def one_line(v) -> str | None:
        return None if v is None else " ".join(str(v).split("\n"))

    return [{"status": a["status"], "kind": a["kind"], "command_line": shlex.join(a["command"]),
             "reason": one_line(a["reason"]), "output": one_line(a.get("output"))} for a in data["actions"]]


def control_notes(data: dict) -> list[str]:
    """What the control report says besides its table (for -P/-n, which print the table alone)."""
    if data.get("priority_mode") == "fair_tree":
        return [f"{data['cluster']} runs Fair Tree: advice only, no plan (fscontrol control without -P/-n shows the advice)"]
    advice = [n[len("advice only: "):] for n in data["notes"] if n.startswith("advice only: ")]
    dry = ["dry run: nothing was changed; --apply carries the plan out"] if data["mode"] == "dry-run" and data["actions"] else []
    return [f"ADVICE ONLY, nothing can be done here: {a}" for a in advice[:1]] + \
        [n for n in data["notes"] if not n.startswith("advice only: ")] + dry


def format_control(data: dict, fields: Sequence[Field] | None = None) -> str:
    if data.get("priority_mode") == "fair_tree":
        lines = [f"ADVICE ONLY, nothing can be done here: {data['cluster']} runs Fair Tree, where a halving "
                 f"target u* does not exist"]
        lines += [f"  - {a}" for a in data["advice"]]
        lines.append("plan: none")
        return "\n".join(lines)
    pct = lambda v: "-" if v is None else f"{v:+.2%}"  # noqa: E731
    lines = [
        f"{data['cluster']}: method {data['method']} ({data['mode']}{', advice only' if data['advise_only'] else ''}), "
        f"target u* = {_fmt(data['target_core_hours'], ',.2f')} core-hours, S_ref = {_fmt(data['reference_share'], '.6f')}",
        f"real usage {_fmt(data['real_usage_core_hours'], ',.2f')} core-hours "
        f"(after the next pass ~{_fmt(data['real_usage_next_core_hours'], ',.2f')}), "
        f"padding {_fmt(data['padding_core_hours'], ',.2f')} -> {_fmt(data['padding_target_core_hours'], ',.2f')} core-hours",
        f"damping factor {data['damping_now']} -> {data['damping_target']} (ideal {_fmt(data['damping_ideal'], '.3f')})",
        f"halving expected at the coming pass {_fmt(data.get('halving_next_core_hours'), ',.2f')} core-hours "
        f"({pct(data.get('error_next'))} vs u*), planned for the pass after {_fmt(data['halving_planned_core_hours'], ',.2f')} "
        f"({pct(data['error_planned'])})" + (f", integer-d bound ±{data['rounding_bound']:.2%}" if data.get("rounding_bound") else ""),
        f"(before acting: {_fmt(data['halving_now_core_hours'], ',.2f')} core-hours, {pct(data['error_now'])}: the usage "
        "read at the d in force then)",
    ]
    advice = [n for n in data["notes"] if n.startswith("advice only: ")]
    if advice:  # first, so nobody reads the figures above as a plan: nothing will be done
        lines.insert(0, f"ADVICE ONLY, nothing can be done here: {advice[0][len('advice only: '):]}")
    for n in data["notes"]:
        if n not in advice:
            lines.append(f"note: {n}")
    if not data["actions"]:
        lines.append("plan: none (advice only)" if data["advise_only"] else "plan: nothing to do")
    else:
        from tabulate import tabulate

        fields = fields or pick_fields(None, CONTROL_FIELDS, CONTROL_DEFAULT_FIELDS)
        lines.append("")
        lines.append(
            tabulate(
                [["-" if r[f.key] is None else r[f.key] for f in fields] for r in control_rows(data)],
                headers=[f.header for f in fields],
                disable_numparse=True,
                maxcolwidths=[60 if f.name in ("Command", "Reason", "Output") else None for f in fields],  # not 350 columns
            )
        )
        if data["mode"] == "dry-run":
            lines.append("(dry run: nothing was changed; --apply carries the plan out)")
    return "\n".join(lines)


def on_data(cluster: str | None, *, was_off: bool) -> dict:
    """`fscontrol control on`: the cluster, acting now; `was_off`: it was off and acts again (False:
    it was not off, and nothing changed)."""
    return {"cluster": cluster, "acting": True, "was_off": was_off}


def format_on(data: dict) -> str:
    if data.get("was_off", True):
        return f"{data['cluster']}: the agent acts again from its next tick (control and gate, as configured)"
    return (f"{data['cluster']}: the agent was not off; nothing changed (it acts at its ticks: control and gate, "
            "as configured)")


def off_data(tick) -> dict:
    """`fscontrol control off`: what it undoes (or did undo), command by command."""
    acts = list(tick.control.actions if tick.control else ()) + list(tick.gate.actions if tick.gate else ())
    applied = bool(tick.control and tick.control.applied)
    return {
        "cluster": tick.cluster,
        "mode": "apply" if applied else "dry-run",
        "acting": not applied,
        "actions": [{"kind": a.kind, "argv": list(a.argv), "reason": a.reason, "status": a.status, "output": a.output}
                    for a in acts],
    }


def format_off(data: dict) -> str:
    lines = [f"{data['cluster']}: control off ({data['mode']})"]
    if not data["actions"]:
        lines.append("  nothing to undo: Slurm holds what it held before the agent first acted")
    for a in data["actions"]:
        lines.append(f"  {a['status']:9} {' '.join(a['argv'])}  ({a['reason']})")
        if a["status"] in ("refused", "failed"):
            lines.append(f"            {a['output']}")
    lines.append("  the agent no longer acts on this cluster; `fscontrol control on` resumes"
                 if data["mode"] == "apply" else "  (dry run: nothing was changed; --apply carries it out)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- status's control line
def damping_after(agent_state: dict | None, taken_at: float) -> int | None:
    """The d read back from slurmctld after the agent acted on the snapshot taken at `taken_at`
    (or later), or None: the snapshot's d is the d in force."""
    rec = (agent_state or {}).get("damping_in_force")
    if isinstance(rec, dict) and rec.get("d") is not None and float(rec.get("at") or 0.0) >= taken_at:
        return int(rec["d"])
    return None


def holds_total(last_decision: dict | None, d: int, agent_state: dict | None = None) -> bool:
    """Whether the agent holds the halving (S_ref d U) as usage grows, by its last decision: one it
    applied, not advice only, with a method that controls, and d above its floor (1), as the
    forecast judges from the published snapshot (forecast.classic.total_held). Never once
    `control off --apply` has stopped it (agent_state's `off`)."""
    if (agent_state or {}).get("off"):
        return False
    if not last_decision or not last_decision.get("apply") or last_decision.get("advise_only"):
        return False
    method = last_decision.get("method")
    return method in ("damping", "padding", "hybrid") and not (method in ("damping", "hybrid") and d <= 1)


def acted(r: dict) -> bool:
    """Whether a decision row acted on slurmctld: applied, and not advice only (a doctor's
    finding, control off, Fair Tree). An outside tester saw decisions taken while `control off`
    held reported as applied, with the d they would have set."""
    return bool(r.get("apply")) and not r.get("advise_only")


def d_left(r: dict) -> int | None:
    """The d a decision row left in slurmctld: its target when it acted, else the d it read."""
    return r["d_target"] if acted(r) and r.get("d_target") else r.get("d_now")


def _error_next(r: dict) -> float | None:
    """The halving error a decision expected at the coming pass: S_ref x the d it left x the
    usage it read (h_now x d_target / d_now; a dry run leaves d_now)."""
    h, u, d0 = r.get("h_now"), r.get("u_star"), r.get("d_now")
    if h is None or not u or not d0:
        return None
    d = d_left(r)
    return h * d / d0 / u - 1


def _pass_when(h: dict) -> str:
    """When the pass a decision's "error Slurm used" belongs to ran: slurmctld's own record of it
    (priority_last_decay_ran, read with the snapshot that saw it), else when the agent saw it."""
    if h.get("pass_at"):
        return f"pass at {h['pass_at']}"
    if h.get("pass_seen_at"):
        return f"pass seen at {h['pass_seen_at']}"
    return f"decided {h['time']}"


def _control_history(rows: list[dict]) -> list[dict]:
    """The controller's record: halving achieved vs target over time, d and padding."""
    out = []
    for r in rows:
        h = r["h_now"]
        out.append(
            {
                "time": _iso(r["taken_at"]),
                "method": r["method"],
                "damping": r["d_now"],
                "damping_target": r.get("d_target"),
                "damping_left": d_left(r),
                "padding_core_hours": (r["w_now"] or 0.0) / HOUR,
                "halving_core_hours": None if h is None else h / HOUR,
                "target_core_hours": (r["u_star"] or 0.0) / HOUR,
                # before the decision acted (the snapshot's usage at the d in force then): not what Slurm used
                "error": None if h is None or not r["u_star"] else h / r["u_star"] - 1,
                # what the decision left for the coming pass (its d on the usage it read)
                "error_next": _error_next(r),
                # the halving Slurm's priorities used at the next decay pass (none seen: None)
                "halving_slurm_core_hours": None if r.get("h_slurm") is None else r["h_slurm"] / HOUR,
                "error_slurm": None if r.get("h_slurm") is None or not r["u_star"] else r["h_slurm"] / r["u_star"] - 1,
                # the pass that error belongs to: when slurmctld ran it, else when the agent saw it
                "pass_at": None if r.get("pass_at") is None else _iso(r["pass_at"]),
                "pass_seen_at": None if r.get("pass_seen_at") is None else _iso(r["pass_seen_at"]),
                "applied": acted(r),
            }
        )
    return out
