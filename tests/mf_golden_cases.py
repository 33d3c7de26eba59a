"""The multifactor engine's reference runs (tests/golden/mf_engine.json.gz, recorded from the engine
before the speed-up of issue #15): the SDSC excerpt under mf-classic (d static, hybrid control,
padding steady and pulse, a disturbance), mf-fairtree, and section 9 with the gate.

The deep-tree cases were added later, recorded with the same engine (7763dad) run beside.
Regenerate (only when the engine's behaviour is meant to change):
    .venv/bin/python -m tests.mf_golden_cases
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXCERPT = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln-first2000.swf"
GOLDEN = ROOT / "tests" / "golden" / "mf_engine.json.gz"
U_STAR = 400 * 3600.0


def deep_tree_case():
    """A three-level tree with FairShare=parent users and usage at the start, overloaded (32 nodes)."""
    import random

    from fscontrol.records import ShareRow
    from fscontrol.sim.workload import SimJob, Workload

    def row(a, u, p, d, sh, sp=False, ru=0):
        return ShareRow(a, u, p, d, sh, sp, None, ru, None, None, None)

    rows = (ShareRow("root", "", "", 0, None, False, 1.0, 0, None, 1.0, None),
            row("A", "", "root", 1, 3), row("A1", "", "A", 2, 2), row("A1", "x", "A1", 3, 1, ru=5000),
            row("A1", "y", "A1", 3, 4), row("A", "z", "A", 2, 1), row("B", "", "root", 1, 1),
            row("B", "b1", "B", 2, None, True), row("B", "b2", "B", 2, None, True, ru=90000),
            row("C", "", "root", 1, 2), row("C", "c1", "C", 2, 1),
            row("fsadmin", "", "root", 1, 1), row("fsadmin", "fsdummy", "fsadmin", 2, 1))
    rng = random.Random(5)
    users = [("A1", "x"), ("A1", "y"), ("A", "z"), ("B", "b1"), ("B", "b2"), ("C", "c1")]
    jobs, t = [], 0.0
    for k in range(600):
        t += rng.expovariate(1 / 200)
        a, u = rng.choice(users)
        run = rng.choice([60, 600, 3600, 7200, 20000])
        jobs.append(SimJob(job_id=k + 1, submit=t, run=float(run), estimate=float(run * rng.choice([1, 2, 3])),
                           size=rng.choice([1, 2, 4, 8, 16]), user=u, account=a))
    return Workload("deep", 32, jobs), rows


def cases() -> dict:
    """name -> a thunk running simulate_multifactor."""
    from fscontrol.act.gate import GateOptions
    from fscontrol.sim import get_policy, read_swf, section9_workload
    from fscontrol.sim.multifactor import ControlSpec, Disturbance, share_tree, simulate_multifactor

    ex = read_swf(EXCERPT)
    s9 = section9_workload(1)
    classic = get_policy("mf-classic").priority
    ft = get_policy("mf-fairtree").priority
    age_only = replace(classic, weight_fairshare=0)
    # the trace: root and a few users (every user's would make the file large)
    exk = [("root", "")] + [(r.account, r.user) for r in share_tree(ex, dummy=None) if r.user][:8]
    s9k = [("root", "")] + [(r.account, r.user) for r in share_tree(s9, dummy=None) if r.user]
    deep, deep_rows = deep_tree_case()
    hold = GateOptions(action="hold")
    nice = GateOptions(action="nice")
    return {
        "excerpt-classic-d1": lambda: simulate_multifactor(ex, classic, trace=True, trace_keys=exk),
        "excerpt-classic-d5": lambda: simulate_multifactor(ex, replace(classic, damping=5)),
        "excerpt-classic-d1-depth3": lambda: simulate_multifactor(ex, classic, depth=3),
        "excerpt-classic-hybrid": lambda: simulate_multifactor(ex, classic, control_spec=ControlSpec("hybrid", u_star=U_STAR)),
        "excerpt-classic-damping": lambda: simulate_multifactor(ex, classic, control_spec=ControlSpec("damping", u_star=U_STAR)),
        "excerpt-classic-padding": lambda: simulate_multifactor(ex, classic, control_spec=ControlSpec("padding", u_star=U_STAR)),
        "excerpt-classic-pulse": lambda: simulate_multifactor(
            ex, classic, control_spec=ControlSpec("padding", u_star=U_STAR, padding_mode="pulse")),
        "excerpt-classic-hybrid-disturbed": lambda: simulate_multifactor(
            ex, replace(classic, damping=3), control_spec=ControlSpec("hybrid", u_star=U_STAR),
            disturbances=[Disturbance("reconfigure", 3 * 86400 + 60), Disturbance("agent_down", 5 * 86400, 86400)]),
        "excerpt-fairtree": lambda: simulate_multifactor(ex, ft, trace=True, trace_keys=exk),
        "deep-tree-classic-d4": lambda: simulate_multifactor(deep, replace(classic, damping=4), tree=deep_rows, trace=True),
        "deep-tree-hybrid": lambda: simulate_multifactor(deep, classic, tree=deep_rows,
                                                         control_spec=ControlSpec("hybrid", u_star=2e6)),
        "deep-tree-fairtree": lambda: simulate_multifactor(deep, ft, tree=deep_rows),
        "section9-gate-hold-age": lambda: simulate_multifactor(s9, age_only, depth=2, gate=hold),
        "section9-gate-nice-age": lambda: simulate_multifactor(s9, age_only, depth=2, gate=nice),
        "section9-gate-hold-fs": lambda: simulate_multifactor(s9, classic, depth=2, gate=hold, trace=True, trace_keys=s9k),
    }


def _f(x: float):
    return None if x == math.inf else x


def summary(r) -> dict:
    """What the comparison covers: start and end times, the order, the counters, the pass records,
    the trace (usage and F per pass), the usage at the end."""
    return {
        "start": [_f(x) for x in r.start],
        "end": [_f(x) for x in r.end],
        "order": list(r.order),
        "counters": [r.passes, r.events, r.unfinished, r.control_ticks, r.d_changes, r.pulses, r.holds,
                     r.releases, r.nices, r.unnices, r.gate_ticks],
        "notes": list(r.notes),
        "s_ref": r.s_ref,
        "records": [[p.t, p.d, p.u_total, p.w, p.u_read] for p in r.records],
        "trace": [[t, sorted([list(k), v] for k, v in u.items()), sorted([list(k), v] for k, v in f.items())]
                  for t, u, f in r.trace],
        "final_usage": sorted([list(k), v] for k, v in r.final_usage.items()),
    }


def main() -> None:
    out = {name: summary(fn()) for name, fn in cases().items()}
    with gzip.open(GOLDEN, "wt") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
