"""The replay's fair-share factor against sprio's, pass by pass (issue #32 item 3's last target:
"F per pass within 1% of sprio, in the replay itself, not only given the real starts").

bench/sim_fidelity.py records, during the real run, after every decay pass (slurmctld's
StateSaveLocation/priority_last_decay_ran), sshare's and sprio's text into the capture's
`passes.json`; sprio shows F through one probe job per association, pending in the testbed's DOWN
partition. Here:

- `real_passes(folder)`: per pass, sshare's RawUsage and sprio's F of each probed association;
- `replay_passes(folder)`: the replay of `simulate FOLDER` (the capture's own config, as
  `fidelity.replay`) run with the engine's `trace`, so its F and RawUsage at each of its passes
  come from its OWN schedule; `given_real_starts=True` instead starts every job at its real start
  (the control: the maths alone, as tests/test_integration_sim_fidelity.py);
- `compare_passes`: passes compared, the share of (association, pass) pairs within 1% of sprio,
  the worst error, and for each miss the jobs whose charge by that pass moved most between the
  real run and the replay (`moved_charges`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..errors import ConfigError

Key = tuple[str, str]


def real_passes(folder: str | Path) -> dict[str, Any]:
    """{"passes": [(pass time, {key: RawUsage}, {key: F})], "probes": {job id: key}} from a
    capture's passes.json (bench/sim_fidelity.py), parsed with fscontrol's own sshare/sprio parsers."""
    from fscontrol.slurm import parse

    path = Path(folder) / "passes.json"
    if not path.is_file():
        raise ConfigError(f"{folder} has no passes.json: a run of bench/sim_fidelity.py records it")
    d = json.loads(path.read_text())
    probes = {j: (k[0], k[1]) for j, k in d["probes"].items()}
    out = []
    for p in d["passes"]:
        usage = {r.key: float(r.raw_usage) for r in parse.parse_sshare(p["sshare"])}
        prio = {r.job_id: r.fairshare_norm for r in parse.parse_sprio(p["sprio"])}
        out.append((int(p["pass"]), usage, {k: prio[j] for j, k in probes.items() if j in prio}))
    return {"passes": out, "probes": probes, "slurm_version": d.get("slurm_version")}


def _workload_and_policy(folder: str | Path) -> tuple[Any, Any]:
    """The workload and policy `fscontrol simulate FOLDER` replays (fidelity.replay: the capture's
    own config.txt, its history read with the command's defaults)."""
    from .load import load_workload
    from .sweep import multifactor_specs

    wl = load_workload(str(folder), procs_per_node=None, overrun="extend", processors="allocated", limit=None,
                       history={"unit": "cpus", "machine": None, "start_blocked": False})
    (spec,) = multifactor_specs(slurm_conf=Path(folder) / "config.txt", controls=())
    return wl, spec.policy()


def replay_passes(folder: str | Path, keys: list[Key], *, given_real_starts: bool = False) -> dict[str, Any]:
    """The replay's schedule and its F/RawUsage of `keys` at every one of its passes:
    {"start": {id: s}, "end": {id: e}, "trace": {pass time (int): ({key: U}, {key: F})}, "jobs": [SimJob]}.
    The run is run.run_simulation's multifactor run (the same engine call, scheduler, first pass
    and dependency ordering) with the engine's `trace` on. `given_real_starts`: every job arrives
    at its real start with an unlimited time limit under the plain engine (no Slurm scheduler
    model), so it starts then: F from the real schedule."""
    from dataclasses import replace

    from . import run as simrun
    from .multifactor import simulate_multifactor

    wl, pol = _workload_and_policy(folder)
    jobs = list(wl.jobs)
    if given_real_starts:
        from .fidelity import real_starts

        real = real_starts(folder)
        jobs = [replace(j, submit=real[j.job_id]["start"], estimate=1e9, after=()) for j in jobs if j.job_id in real]
        wl = replace(wl, jobs=jobs)
        jobs = list(wl.jobs)  # (sorted by the new arrivals: the run's lists are in this order)
        first = simrun._first_pass(replace(pol, first_pass=wl.meta.get("last_decay_pass")), wl)
        mf = simulate_multifactor(wl, pol.priority, trace=True, trace_keys=keys, first_pass=first,
                                  backfill=True, depth=pol.depth)
    else:
        mf = simrun.ordered(wl, lambda w: simulate_multifactor(
            w, pol.priority, control_spec=pol.control, disturbances=pol.disturbances, depth=pol.depth,
            backfill=pol.backfill == "easy", sched=simrun._node_sched(pol.slurm_sched, w),
            first_pass=simrun._first_pass(pol, w), trace=True, trace_keys=keys))
    trace = {round(t + mf.t0): (u, f) for t, u, f in mf.trace}
    return {"start": {j.job_id: s for j, s in zip(jobs, mf.start)},
            "end": {j.job_id: e for j, e in zip(jobs, mf.end)}, "trace": trace, "jobs": jobs}


def _charge(rate: float, a: float, b: float, t: float, half_life: float) -> float:
    """The charge of [a, b] at `rate` as seen at time t, decayed (continuously) with `half_life`."""
    b = min(b, t)
    if not b > a:
        return 0.0
    if half_life <= 0:
        return rate * (b - a)
    k = math.log(2) / half_life
    return rate * (math.exp(-k * (t - b)) - math.exp(-k * (t - a))) / k


def moved_charges(jobs: list, real: dict[str, tuple[float, float]], sim: dict[str, tuple[float, float]], t: float,
                  half_life: float) -> list[dict[str, Any]]:
    """Per job, its charge to RawUsage by time t in the real run and in the replay ((start, end)
    each; decayed to t), largest difference first: which job's start or end moved which charge."""
    from .workload import billing_rates

    out = []
    for j, rate in zip(jobs, billing_rates(jobs)):
        if j.job_id not in real or j.job_id not in sim:
            continue
        (rs, re_), (ss, se) = real[j.job_id], sim[j.job_id]
        cr, cs = _charge(rate, rs, re_, t, half_life), _charge(rate, ss, se, t, half_life)
        if abs(cs - cr) > 0.5:
            out.append({"job": j.job_id, "key": (j.account, j.user), "cpus": j.size, "real": (rs, re_), "sim": (ss, se),
                        "real_charge": cr, "sim_charge": cs})
    return sorted(out, key=lambda m: -abs(m["sim_charge"] - m["real_charge"]))


def ended_in_pass_second(jobs: list, real: dict[str, tuple[float, float]], passes: list[float]) -> list[dict[str, Any]]:
    """The jobs whose real end (sacct's whole second) is the second of one of `passes` (a pass and
    those before it: the charge's difference is carried on, decayed), with that pass: whether each ended
    before the pass (its last stretch charged, then decayed by the pass, and in the accounts'
    EffectvUsage and the walk's usage from the top) or after it (charged in the walk, at its place
    in the job list) is finer than sacct's seconds; the replay ends it before (an end at a pass's
    time is handled first). slurmctld's log has the order (`_job_complete` in ms against the decay
    thread's phase): seed 45 at +297 s, job 32 ended 40 ms after the pass."""
    secs = {int(t) for t in passes}
    out = []
    for j in jobs:
        if j.job_id in real and int(real[j.job_id][1]) in secs and real[j.job_id][1] > real[j.job_id][0]:
            out.append({"job": j.job_id, "key": (j.account, j.user), "cpus": j.size, "pass": int(real[j.job_id][1])})
    return sorted(out, key=lambda x: -x["pass"])


def compare_passes(folder: str | Path, *, tol: float = 0.01, given_real_starts: bool = False) -> dict[str, Any]:
    """The replay's F (and RawUsage) at the real run's passes against sprio's (and sshare's)."""
    from .fidelity import real_starts

    rp = real_passes(folder)
    keys = sorted(set(rp["probes"].values()))
    rep = replay_passes(folder, keys, given_real_starts=given_real_starts)
    wl, pol = _workload_and_policy(folder)
    half_life = pol.priority.half_life_s
    rs = real_starts(folder)
    real_se = {j.job_id: (rs[j.job_id]["start"], rs[j.job_id]["start"] + j.run) for j in rep["jobs"] if j.job_id in rs}
    sim_se = {j: (rep["start"][j], rep["end"][j]) for j in rep["start"]}
    t_first = min(s for s, _ in real_se.values()) if real_se else 0.0
    pairs = within = 0
    worst = 0.0
    worst_at: tuple | None = None
    u_pairs = u_within = 0
    u_worst = 0.0
    unmatched: list[int] = []
    misses: list[dict[str, Any]] = []
    passes = 0
    for t, usage, fs in rp["passes"]:
        if t not in rep["trace"]:
            unmatched.append(t)
            continue
        su, sf = rep["trace"][t]
        passes += 1
        for k, real_f in sorted(fs.items()):
            if not real_f > 0.001 or k not in sf:
                continue
            e = sf[k] / real_f - 1
            pairs += 1
            if abs(e) <= tol:
                within += 1
            else:
                moved = moved_charges(rep["jobs"], real_se, sim_se, t, half_life)
                misses.append({"pass": t, "key": k, "real_f": real_f, "sim_f": sf[k], "error": e,
                               "moved": moved[:3], "own": [m for m in moved if m["key"] == k][:2],
                               "tied": ended_in_pass_second(rep["jobs"], real_se, [p for p, _, _ in rp["passes"] if p <= t])})
            if abs(e) > abs(worst):
                worst, worst_at = e, (t, k)
        for k, ru in usage.items():
            if k in su and ru >= 100:  # sshare truncates to integers: 1% needs 100 units
                u_pairs += 1
                u_e = su[k] / ru - 1
                u_within += abs(u_e) <= tol
                u_worst = max(u_worst, abs(u_e))
    return {"passes_read": len(rp["passes"]), "passes": passes, "unmatched": unmatched, "pairs": pairs,
            "within": within / pairs if pairs else None, "worst_error": worst, "worst_at": worst_at,
            "usage_pairs": u_pairs, "usage_within": u_within / u_pairs if u_pairs else None, "usage_worst": u_worst,
            "misses": misses, "t0": t_first, "given_real_starts": given_real_starts}


def format_passes(c: dict[str, Any], *, max_misses: int = 6) -> str:
    """The figures of `compare_passes` as text, with each miss's moved charges (times from the
    first real start)."""
    what = "given the real starts" if c["given_real_starts"] else "on the replay's own schedule"
    t0 = c["t0"]
    lines = [f"F per pass, {what}: {c['passes']} passes compared (of {c['passes_read']} read"
             + (f"; {len(c['unmatched'])} with no replay pass at that second" if c["unmatched"] else "") + ")"]
    if c["pairs"]:
        wt, wk = c["worst_at"]
        lines.append(f"  (association, pass) pairs within 1% of sprio: {c['within']:.1%} of {c['pairs']} "
                     f"(target 100%); worst {c['worst_error']:+.3%} ({wk[0]}/{wk[1]} at +{wt - t0:.0f} s)")
    if c["usage_pairs"]:
        lines.append(f"  RawUsage within 1% of sshare: {c['usage_within']:.1%} of {c['usage_pairs']} pairs "
                     f"(>= 100 units), worst {c['usage_worst']:.3%}")
    for m in c["misses"][:max_misses]:
        why = "; ".join(
            f"job {x['job']} ({x['key'][0]}/{x['key'][1]}, {x['cpus']} CPUs) real {x['real'][0] - t0:+.0f}..{x['real'][1] - t0:+.0f} s, "
            f"replay {x['sim'][0] - t0:+.0f}..{x['sim'][1] - t0:+.0f} s: charge {x['real_charge']:.0f} -> {x['sim_charge']:.0f}"
            for x in (m["own"] or m["moved"])[:2])
        tied = ", ".join(f"job {x['job']} ({x['key'][0]}/{x['key'][1]}, {x['cpus']} CPUs) ended in the second of the pass "
                         f"at +{x['pass'] - t0:.0f} s" for x in m.get("tied", ())[:3])
        if tied:  # (sacct's seconds cannot order it against the pass: ended_in_pass_second)
            why = (why + "; " if why else "") + tied + " (before or after that pass: finer than sacct's seconds)"
        why = why or "no job's charge moved (the maths, not the schedule)"
        lines.append(f"  miss at +{m['pass'] - t0:.0f} s, {m['key'][0]}/{m['key'][1]}: F {m['sim_f']:.4f} vs sprio "
                     f"{m['real_f']:.4f} ({m['error']:+.2%}): {why}")
    if len(c["misses"]) > max_misses:
        lines.append(f"  ... and {len(c['misses']) - max_misses} more misses")
    return "\n".join(lines)
