"""`fscontrol tick` and `fscontrol history`: one tick's outcome per cluster, and the record over a period. Pure."""

from __future__ import annotations


from fscontrol.report.control import acted, control_data, d_left, format_control
from fscontrol.report.table import HOUR, _fmt, _iso, sparkline


def tick_data(outcomes) -> dict:
    """A tick over the agent's clusters (agent.ClusterOutcome list), as plain data."""
    out = []
    for o in outcomes:
        row: dict = {"cluster": o.cluster, "ok": o.error is None,
                     "error": str(o.error) if o.error else None, "exit_code": o.error.exit_code if o.error else 0}
        r = o.result
        if r is not None:
            row["snapshot_id"] = r.snapshot_id
            row["control"] = control_data(r.control) if r.control is not None else None
            row["fit"] = ({"half_life_s": r.fit.half_life_s, "half_life_se_s": r.fit.half_life_se_s, "drifted": r.fit.drifted}
                          if r.fit is not None else None)
            row["gate"] = ({"actions": [{"job_id": a.job_id, "kind": a.kind, "status": a.status} for a in r.gate.actions],
                            "mode": "apply" if r.gate.applied else "dry-run", "note": getattr(r.gate, "note", None)}
                           if r.gate is not None else None)
            row["published"] = r.published
            row["settled"] = [{"what": w, "from": a, "to": b, "why": why} for w, a, b, why in r.reconciled]
        out.append(row)
    return {"ok": all(r["ok"] for r in out), "clusters": out}


def format_tick(data: dict) -> str:
    lines = []
    for c in data["clusters"]:
        if not c["ok"]:
            continue  # errors go to stderr, one line each (cli)
        if c["control"] is not None:
            lines.append(format_control(c["control"]))
            lines += [f"  WARNING: {a['kind']} refused: {a['output']}" for a in c["control"]["actions"]
                      if a["status"] == "refused"]  # (persist cannot write slurm.conf: said at every tick)
        else:
            lines.append(f"{c['cluster']}: collected snapshot {c['snapshot_id']} (control not due)")
        if c["fit"] is not None:
            f = c["fit"]
            lines.append(f"  fit: half-life {_fmt(f['half_life_s'], ',.1f')} s ± {_fmt(f['half_life_se_s'], '.1f')}"
                         + (" (drifted from Slurm's setting)" if f["drifted"] else ""))
        if c["gate"] is not None:
            g = c["gate"]
            done = sum(a["status"] == "ok" for a in g["actions"])
            lines.append(f"  gate ({g['mode']}): {len(g['actions'])} action(s) planned, {done} done")
            if g.get("note"):
                lines.append(f"  {g['note']}")
        if c["published"]:
            lines.append(f"  published {c['published']}")
        for x in c.get("settled", []):  # what an earlier tick left open, settled against Slurm
            lines.append(f"  settled {x['what']}: {x['from']} -> {x['to'] or 'dropped'} ({x['why']})")
    return "\n".join(lines)


def history_data(cluster: str, since: float, until: float, rec: dict) -> dict:
    """`fscontrol history`: the agent's record over a period, as plain data (store.history)."""
    decisions = []
    for d in rec["decisions"]:
        u = d["u_star"] or None
        decisions.append({
            "time": _iso(d["decided_at"]), "method": d["method"], "applied": acted(d), "advice_only": bool(d["advise_only"]),
            "damping_now": d["d_now"], "damping_target": d["d_target"], "damping_left": d_left(d),
            "padding_core_hours": None if d["w_now"] is None else d["w_now"] / HOUR,
            "halving_core_hours": None if d["h_now"] is None else d["h_now"] / HOUR,
            "halving_slurm_core_hours": None if d["h_slurm"] is None else d["h_slurm"] / HOUR,
            "target_core_hours": None if u is None else u / HOUR,
            "error": None if d["h_now"] is None or not u else d["h_now"] / u - 1,
            "error_slurm": None if d["h_slurm"] is None or not u else d["h_slurm"] / u - 1,
        })
    errs = [abs(x["error_slurm"]) for x in decisions if x["error_slurm"] is not None]
    return {
        "cluster": cluster, "since": _iso(since), "until": _iso(until), "decisions": decisions,
        "worst_error_slurm": max(errs) if errs else None,
        "actions": rec["actions"], "failed_actions": [dict(a, planned_at=_iso(a["planned_at"])) for a in rec["failed_actions"]],
        "ticks": rec["ticks"], "failed_ticks": [dict(t, started_at=_iso(t["started_at"])) for t in rec["failed_ticks"]],
    }


def format_history(data: dict, width: int = 72) -> str:
    def thin(values: list) -> list:  # one character per bucket: the chart fits a terminal
        if len(values) <= width:
            return values
        step = len(values) / width
        return [values[int(i * step)] for i in range(width)]

    dec = data["decisions"]
    lines = [f"{data['cluster']}: the agent's record from {data['since']} to {data['until']}"]
    if dec:
        def row(label: str, values: list, fmt: str) -> str:
            vals = [v for v in values if v is not None]
            rng = f"{format(min(vals), fmt)} .. {format(max(vals), fmt)}" if vals else "-"
            return f"  {label:<26}{sparkline(thin(values))}  {rng}"

        lines += [f"{len(dec)} decisions ({dec[0]['time']} .. {dec[-1]['time']}), method {dec[-1]['method']}",
                  row("halving / u* - 1 (Slurm)", [d["error_slurm"] for d in dec], "+.2%"),
                  row("  (its read, before acting)", [d["error"] for d in dec], "+.2%"),
                  row("d left in slurmctld", [d["damping_left"] for d in dec], "d"),
                  row("padding (core-hours)", [d["padding_core_hours"] for d in dec], ",.2f")]
        if data["worst_error_slurm"] is not None:
            lines.append(f"  worst |halving / u* - 1| as Slurm used it: {data['worst_error_slurm']:.2%}")
    else:
        lines.append("no control decisions in this period")
    if data["ticks"]:
        lines.append("ticks: " + ", ".join(f"{t['stage']} {t['status']} {t['n']}" for t in data["ticks"]))
    if data["actions"]:
        lines.append("actions: " + ", ".join(f"{a['stage']}/{a['kind']} {a['status']} {a['n']}" for a in data["actions"]))
    for t in data["failed_ticks"][-10:]:
        lines.append(f"  failed tick {t['started_at']} {t['stage']}: {t['error']}")
    for a in data["failed_actions"][-10:]:
        lines.append(f"  {a['status']} action {a['planned_at']} {a['stage']}/{a['kind']}: {a['output'] or a['reason']}")
    return "\n".join(lines)
