"""Steffen (2019) section 9 re-run: four configurations of the paper plus the fscontrol gate.

Regenerate the table in docs/simulator.md with::

    .venv/bin/python -m fscontrol.sim.experiment --seeds 20            # paper-like (no backfill)
    .venv/bin/python -m fscontrol.sim.experiment --seeds 20 --backfill # with EASY-style backfill

Each configuration runs on the same ``seeds`` (one workload per seed, :func:`section9_workload`);
the table gives the mean over seeds (and min..max) of Bob's and Chris's first-start latency and
mean wait, in days, beside the paper's figures.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Optional

import typer

from . import cmdline
from .policies import get_policy
from .run import run_simulation
from .workload import Section9Params, section9_workload

DAY = 86400.0

# (configuration, preset, what the paper reports: Bob first start, Chris first start)
CONFIGS: tuple[tuple[str, str, str, str], ...] = (
    ("linear, eligible-time dominant", "linear-eligible", "~1.5 d", "6-7 d"),
    ("linear, node-count dominant", "linear-size", "~2.5-3 d", "< 1 d"),
    ("SFS, eligible-time dominant", "sfs-eligible", "immediate", "6-7 d"),
    ("SFS, node-count dominant", "sfs-size", "immediate", "< 1 d"),
    ("gate hold, eligible-time dominant", "gate-hold-eligible", "", ""),
    ("gate nice, eligible-time dominant", "gate-nice-eligible", "", ""),
    ("gate hold, node-count dominant", "gate-hold-size", "", ""),
    ("gate nice, node-count dominant", "gate-nice-size", "", ""),
)
WATCH = ("bob", "chris")


def run_section9(
    seeds: Iterable[int] = range(20),
    *,
    backfill: bool = False,
    configs: Sequence[tuple[str, str, str, str]] = CONFIGS,
    params: Section9Params | None = None,
    gate_interval_s: float | None = None,
) -> list[dict[str, Any]]:
    """One row per configuration: per watched user, the per-seed first-start latency and mean wait (s)."""
    seeds = list(seeds)
    workloads = [section9_workload(s, params) for s in seeds]
    rows = []
    for label, preset, paper_bob, paper_chris in configs:
        over: dict[str, Any] = {"backfill": "easy" if backfill else "none"}
        if gate_interval_s is not None and preset.startswith("gate"):
            over["gate_interval_s"] = gate_interval_s
        pol = get_policy(preset, **over)
        per: dict[str, dict[str, list[float]]] = {u: {"first": [], "wait": []} for u in WATCH}
        util: list[float] = []
        for w in workloads:
            r = run_simulation(w, pol, per_user=False)
            for u in WATCH:
                m = r.by_account[u]
                per[u]["first"].append(m["first_start_latency_s"])
                per[u]["wait"].append(m["mean_wait_s"])
            util.append(r.overall["utilization"])
        rows.append(
            {
                "config": label,
                "preset": preset,
                "backfill": pol.backfill,
                "paper_bob_first": paper_bob,
                "paper_chris_first": paper_chris,
                "seeds": len(seeds),
                "utilization": statistics.fmean(util),
                **{f"{u}_{k}": v for u in WATCH for k, v in per[u].items()},
            }
        )
    return rows


def _days(xs: list[float]) -> str:
    """Mean (min-max) in days; under 0.05 d in minutes (the gate acts on a 5-minute tick)."""
    m = statistics.fmean(xs) / DAY
    lo, hi = min(xs) / DAY, max(xs) / DAY
    if hi < 0.05:
        return f"{m * 1440:.0f} min" if hi - lo < 1 / 1440 else f"{m * 1440:.0f} min ({lo * 1440:.0f}-{hi * 1440:.0f})"
    return f"{m:.2f} ({lo:.2f}-{hi:.2f})" if hi - lo >= 0.005 else f"{m:.2f}"


def format_section9(rows: list[dict[str, Any]], *, fmt: str = "github") -> str:
    table = [
        [
            r["config"],
            _days(r["bob_first"]),
            r["paper_bob_first"],
            _days(r["bob_wait"]),
            _days(r["chris_first"]),
            r["paper_chris_first"],
            f"{r['utilization'] * 100:.1f}%",
        ]
        for r in rows
    ]
    headers = [
        "configuration",
        "Bob first start, d",
        "paper",
        "Bob mean wait, d",
        "Chris first start, d",
        "paper",
        "utilization",
    ]
    from tabulate import tabulate  # here: only the text tables need it
    return tabulate(table, headers=headers, tablefmt=fmt, disable_numparse=True)


def main(argv: Sequence[str] | None = None) -> int:
    return cmdline.run(section9, argv, "python -m fscontrol.sim.experiment", __doc__.splitlines()[0])


def section9(
    seeds: Annotated[int, typer.Option("--seeds", help="number of seeds (0..N-1), default 20")] = 20,
    backfill: Annotated[bool, typer.Option("--backfill", help="backfill behind the reservations (EASY-style)")] = False,
    gate_interval: Annotated[Optional[float], typer.Option("--gate-interval", help="gate interval in minutes (default 5)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="tabulate format (github, simple, ...)")] = "github",
) -> int:
    rows = run_section9(
        range(seeds),
        backfill=backfill,
        gate_interval_s=None if gate_interval is None else gate_interval * 60.0,
    )
    bf = "EASY-style backfill behind depth-2 reservations" if backfill else "no backfill, reservation depth 2"
    print(f"Steffen section 9, {seeds} seeds, {bf}; mean (min-max) over seeds, days\n")
    print(format_section9(rows, fmt=fmt))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
