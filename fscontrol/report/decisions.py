"""`fscontrol decisions`: the control decisions one by one, each with the halving Slurm used at the
decay pass that followed it (issue 30: "decisions, history and status report the halving Slurm
used at each pass"), the pass's own time, and the actions the decision planned with their outcome.

Read from the history only (store.ledger.decisions_between); the period and the cluster are
chosen here, as `history` chooses them (period_start, pick_cluster)."""

from __future__ import annotations

from collections.abc import Iterator

from fscontrol.errors import NotFoundError
from fscontrol.report.control import acted, d_left
from fscontrol.report.table import HOUR, Field, _iso, pick_fields, table_lines


def period_start(since: str, now: float) -> float:
    """--since: a duration (7d, 12h, 90m, 3600) back from `now`, a date as sacct -S takes it
    (2026-11-23, 2026-11-23T13:15:00; local time unless it names a zone), or a POSIX time (>= 1e9)."""
    import math

    from fscontrol.errors import ConfigError
    from fscontrol.model.allocations import parse_period

    try:
        start = float(since)  # a POSIX time; a small number is a duration in seconds
    except ValueError:
        start = None
    if start is not None and not math.isfinite(start):
        raise ConfigError(f"--since {since!r}: not a duration (7d, 12h, 90m) nor a POSIX time")
    if start is None and any(c in since for c in "-:T"):  # a date, as sacct -S takes it (local time unless zoned)
        from datetime import datetime

        try:
            start = datetime.fromisoformat(since.strip()).timestamp()
        except ValueError:
            raise ConfigError(f"--since {since!r}: not a date (2026-11-23, 2026-11-23T13:15:00), a duration "
                              "(7d, 12h, 90m) nor a POSIX time") from None
    if start is None or start < 1e9:
        span = parse_period(since, where="--since")
        if not math.isfinite(span):
            raise ConfigError(f"--since {since!r}: not a duration (7d, 12h, 90m) nor a POSIX time")
        start = now - span
    if start > now + 366 * 86400.0:
        raise ConfigError(f"--since {since!r}: a POSIX time in the future")
    return max(start, 0.0)  # a duration longer than the epoch: everything


def pick_cluster(db, cluster: str | None) -> str:
    """-M's cluster (NotFoundError, exit 6, when the history has none of it), else the history's
    only one; with several, a ConfigError (exit 2: a usage error, as status's) naming them."""
    from fscontrol.errors import ConfigError
    from fscontrol.store import history as store

    names = store.clusters(db)
    if cluster:
        if cluster not in names and not store.has_cluster(db, cluster):
            raise NotFoundError(f"cluster {cluster!r} is not in this history"
                                + (f" (it holds: {', '.join(names)})" if names else " (no snapshot yet)"))
        return cluster
    if not names:
        raise NotFoundError("no history yet")
    if len(names) != 1:
        raise ConfigError(f"several clusters in the history, pick one with -M: {', '.join(names)}")
    return names[0]


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def decisions_data(db, cluster: str | None, since: str, now: float) -> dict:
    """Every control decision of `cluster` from `since` to `now`, oldest first, as plain data."""
    from fscontrol.store import ledger

    name = pick_cluster(db, cluster)
    start = period_start(since, now)
    rows = []
    for r in ledger.decisions_between(db, name, start, now):
        u = r["u_star"] or None
        h_slurm = r["h_slurm"]
        d_after = d_left(r)
        rows.append({
            "id": r["id"],
            "time": _iso(r["decided_at"]),
            "method": r["method"],
            "applied": acted(r),
            "advice_only": bool(r["advise_only"]),
            "damping_before": r["d_now"],
            "damping_after": d_after,
            "padding_core_hours": None if r["w_now"] is None else r["w_now"] / HOUR,
            "padding_target_core_hours": None if r["w_target"] is None else r["w_target"] / HOUR,
            "target_core_hours": None if u is None else u / HOUR,
            # the read the decision acted on, at the d in force then (before the decision acted)
            "halving_read_core_hours": None if r["h_now"] is None else r["h_now"] / HOUR,
            "error_read": None if r["h_now"] is None or not u else r["h_now"] / u - 1,
            # what the decision left for the coming pass: its d on the usage it read
            "error_expected": (None if r["h_now"] is None or not u or not r["d_now"]
                               else r["h_now"] * d_after / r["d_now"] / u - 1),
            # the halving Slurm's priorities used at the decay pass after it (None: no single pass seen)
            "pass_at": None if r["pass_at"] is None else _iso(r["pass_at"]),
            "pass_seen_at": None if r["pass_seen_at"] is None or h_slurm is None else _iso(r["pass_seen_at"]),
            "halving_slurm_core_hours": None if h_slurm is None else h_slurm / HOUR,
            "error_slurm": None if h_slurm is None or not u else h_slurm / u - 1,
            "actions": r["actions"],
        })
    known = [abs(x["error_slurm"]) for x in rows if x["error_slurm"] is not None]
    return {"cluster": name, "since": _iso(start), "until": _iso(now), "decisions": rows,
            "passes": len(known), "worst_error_slurm": max(known) if known else None,
            "within_1pct": sum(1 for e in known if e <= 0.01)}


FIELDS: tuple[Field, ...] = (
    Field("Time", "decided (UTC)", "time", None, False, "when the decision was taken (its snapshot's time)"),
    Field("Method", "method", "method", None, False, "damping, padding, hybrid, or none"),
    Field("Applied", "applied", "applied_text", None, False, "yes: the agent acted; plan: a dry run; advice: it only advised"),
    Field("DBefore", "d before", "damping_before", "d", True, "the d slurmctld held when the decision read"),
    Field("DAfter", "d after", "damping_after", "d", True, "the d the decision left (the same as before for a plan)"),
    Field("Padding", "padding (core-h)", "padding_core_hours", ",.2f", True, "the dummy's usage at the read"),
    Field("ErrorRead", "read err %", "error_read_pct", "+.2f", True,
          "halving / u* - 1 at the read, with the d in force then (before acting), in percent"),
    Field("ErrorExpected", "expected err %", "error_expected_pct", "+.2f", True,
          "what the decision's d leaves at the next pass, on the usage it read, in percent"),
    Field("PassAt", "pass (UTC)", "pass_text", None, False,
          "the decay pass after the decision: slurmctld's own time of it (seen: when the agent saw it)"),
    Field("HalvingSlurm", "halving, Slurm (core-h)", "halving_slurm_core_hours", ",.2f", True,
          "the halving Slurm's priorities used at that pass: S_ref x d x the usage the pass read"),
    Field("ErrorSlurm", "Slurm err %", "error_slurm_pct", "+.2f", True, "that halving / u* - 1, in percent"),
    Field("Actions", "actions", "actions_text", None, False, "what the decision planned, each kind:outcome"),
)

DEFAULT = tuple(f.name for f in FIELDS)


def fields(spec: str | None) -> tuple[Field, ...]:
    return pick_fields(spec, FIELDS, DEFAULT)


def _row(x: dict) -> dict:
    when = x["pass_at"] or (f"seen {x['pass_seen_at']}" if x["pass_seen_at"] else None)
    return dict(x, applied_text="yes" if x["applied"] else ("advice" if x["advice_only"] else "plan"),
                error_read_pct=_pct(x["error_read"]), error_expected_pct=_pct(x["error_expected"]),
                error_slurm_pct=_pct(x["error_slurm"]), pass_text=when,
                actions_text=",".join(f"{a['kind']}:{a['status']}" for a in x["actions"]) or None)


def decisions_lines(data: dict, cols: tuple[Field, ...], *, parsable: bool = False, header: bool = True) -> Iterator[str]:
    """The table (as status's: plain, or -P's | fields, -n no header), then a summary line unless
    -P or -n asked for the rows alone."""
    rows = [_row(x) for x in data["decisions"]]
    if header and not parsable:
        yield f"{data['cluster']}: {len(rows)} control decision(s) from {data['since']} to {data['until']}"
    if rows:
        yield from table_lines(rows, cols, parsable=parsable, header=header)
    if header and not parsable:
        if data["passes"]:
            yield (f"passes with Slurm's halving known: {data['passes']}; within 1% of u*: {data['within_1pct']}; "
                   f"worst |halving / u* - 1| as Slurm used it: {data['worst_error_slurm']:.2%}")
        elif rows:
            yield "no decay pass seen after these decisions yet (or more than one between two decisions)"
