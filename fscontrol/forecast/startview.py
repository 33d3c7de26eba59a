"""The start estimate as text (`fscontrol start`, `why`'s line, the web card's times): the
estimates of fscontrol.forecast.start, as start.to_dict gives them."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["hm", "why_line", "render"]



def hm(t: float | None, now: float) -> str:
    if t is None:
        return "-"
    d = t - now
    if d < 60:
        return "now" if d < 1 else f"in {d:.0f} s"
    return f"in {d / 60:.0f} min" if d < 3 * 3600 else f"in {d / 3600:.1f} h"


def why_line(e: Mapping, now: float) -> str:
    """`why`'s line: the estimate with its range and squeue --start's, or why there is none."""
    sq = f"; squeue --start: {hm(e.get('squeue_start'), now)}"
    if e.get("start") is None:
        return f"estimated start: none ({e.get('reason') or 'unknown'})" + (sq if "squeue_start" in e else "")
    late = hm(e["late"], now) if e.get("late") is not None else "?"
    rv = (f"; {e['reservation_role']} reservation {e['reservation']}" if e.get("reservation") else "") + (
        f"; partition {e['partition']}, played apart from the partitions on other nodes" if e.get("pool") else "") + (
        f"; after its dependency ({e['dependency']}) is met in the plan" if e.get("dependency") else "")
    return (f"estimated start: {hm(e['start'], now)} ({hm(e['early'], now)} .. {late}; "
            "fscontrol start explains the model)" + rv + sq)


def render(d: Mapping) -> str:
    now = d["now"]
    lines = [f"start estimates at {d['now_iso']} ({d['model']})"]
    for note in d.get("notes", []):
        lines.append("  note: " + note)
    lines.append(f"{'JOBID':>10} {'USER':<10} {'ESTIMATE':>12} {'RANGE':>24}  {'SQUEUE --START':>14}")
    for e in d["jobs"]:
        if e["start"] is None:
            lines.append(f"{e['job_id']:>10} {e['user']:<10} {'-':>12} {'':>24}  {hm(e['squeue_start'], now):>14}  {e['reason']}")
            continue
        rng = f"{hm(e['early'], now)} .. {hm(e['late'], now) if e['late'] is not None else '?'}"
        lines.append(f"{e['job_id']:>10} {e['user']:<10} {hm(e['start'], now):>12} {rng:>24}  {hm(e['squeue_start'], now):>14}"
                     + (f"  {e['reservation_role']} reservation {e['reservation']}" if e.get("reservation") else "")
                     + (f"  partition {e['partition']}" if e.get("pool") else "")
                     + (f"  after {e['dependency']}" if e.get("dependency") else ""))
    return "\n".join(lines)
