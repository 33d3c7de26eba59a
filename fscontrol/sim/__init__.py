"""A fast discrete-event batch-scheduler simulator (pure Python).

Policies: FCFS, EASY backfill, multifactor linear priority with reservation depth and
backfill, Steffen's Simultaneous Fair-Share (two passes), and linear priority gated by
fscontrol's own gate (:mod:`fscontrol.act.gate`) every N minutes (hold or nice). Workloads: SWF
logs, hand-made scenarios (TOML/JSON), and the SFS paper's section-9 generator.

    from fscontrol.sim import read_swf, run_simulation, format_report
    w = read_swf("samples/traces/SDSC-BLUE-2000-4.2-cln.swf.gz")
    r = run_simulation(w, "easy", progress=True)
    print(format_report(r))
"""

from .gantt import render_gantt_png, render_gantt_text
from .policies import PRESETS, Policy, get_policy
from .report import format_comparison, format_report
from .result import SimResult
from .run import run_simulation
from .load import load_workload
from .workload import (
    Section9Params,
    SimJob,
    Workload,
    load_scenario,
    parse_swf,
    read_swf,
    scenario_from_dict,
    section9_workload,
)

__all__ = [
    "PRESETS",
    "Policy",
    "Section9Params",
    "SimJob",
    "SimResult",
    "Workload",
    "format_comparison",
    "format_report",
    "get_policy",
    "load_scenario",
    "load_workload",
    "parse_swf",
    "read_swf",
    "render_gantt_png",
    "render_gantt_text",
    "run_simulation",
    "scenario_from_dict",
    "section9_workload",
]
