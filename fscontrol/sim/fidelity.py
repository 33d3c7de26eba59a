"""A replay against the real run: how close the simulator's start times are to slurmctld's
(issue #32; bench/sim_fidelity.py measures it on the testbed, docs/simulator-fidelity.md).

`real_starts(folder)` reads a capture's jobs.txt (each job's real submit/eligible, start and
account); `replay(folder)` runs `fscontrol simulate FOLDER` as a library call (the capture's own
config: its priority settings, SchedulerParameters and decay-pass phase); `compare` gives:

- `within_60s`: the share of jobs the replay starts within 60 s of their real start;
- `pairs_in_order`: of the pairs of jobs that waited together in the real run (each submitted
  before the other started, both waited) and started at different times, the share the replay
  starts in the same order (a tie in the replay counts one half);
- the mean wait, replayed against real, overall and per account, and the start errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def real_starts(folder: str | Path) -> dict[str, dict[str, Any]]:
    """{job id: {"arrival", "start", "account", "user"}} of the jobs that started, from a capture's
    jobs.txt (`capture --history`: sacct with POSIX times); arrival = eligible, else submit."""
    d = Path(folder)
    path = d / "jobs.txt"
    if not path.is_file():
        raise ConfigError(f"{d} has no jobs.txt: capture it with --history")
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    if not lines:
        raise ConfigError(f"{path} is empty")
    head = lines[0].split("|")
    out: dict[str, dict[str, Any]] = {}
    for ln in lines[1:]:
        row = dict(zip(head, ln.split("|")))
        try:
            start = float(row["Start"])
            submit = float(row["Submit"])
        except (KeyError, ValueError):
            continue  # never started (Unknown)
        try:
            elig = float(row.get("Eligible", ""))
        except ValueError:
            elig = submit
        out[row["JobID"]] = {"arrival": max(submit, elig), "start": start, "account": row.get("Account", ""),
                             "user": row.get("User", "")}
    return out


def replay(folder: str | Path, **options: Any) -> dict[str, float]:
    """{job id: simulated start} of `fscontrol simulate FOLDER` (its own config)."""
    from .command import SimulateOptions, simulate

    out = simulate(SimulateOptions(str(folder), policy=["mf-classic"], progress=False, **options))
    (r,) = out.results
    return {j.job_id: s for j, s in zip(r.workload.jobs, r.start)}


def as_other_run(real: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]]) -> dict[str, float]:
    """{job id of `real`: its start had it waited as in `other`}: two real runs of one workload
    (the same jobs submitted in the same order, so their ids in the same order), each job of
    `other` matched to `real`'s by that order and its wait put after `real`'s arrival. What
    `compare(real, as_other_run(real, other))` gives is slurmctld against itself: how closely a
    second run of the same jobs repeats the first (the figures a replay is held to)."""
    a = sorted(real, key=int)
    b = sorted(other, key=int)
    who = [(real[j]["user"], real[j]["account"]) for j in a]
    if len(a) != len(b) or who != [(other[j]["user"], other[j]["account"]) for j in b]:
        raise ConfigError("the two runs do not hold the same jobs in the same order (users and accounts differ)")
    return {ja: real[ja]["arrival"] + other[jb]["start"] - other[jb]["arrival"] for ja, jb in zip(a, b)}


def compare(real: dict[str, dict[str, Any]], sim: dict[str, float], *, tol_s: float = 60.0) -> dict[str, Any]:
    """The figures of the module doc over the jobs both have."""
    ids = sorted(set(real) & set(sim), key=lambda j: (real[j]["arrival"], j))
    if not ids:
        raise ConfigError("no job both in the real run and in the replay")
    n = len(ids)
    err = [sim[j] - real[j]["start"] for j in ids]
    within = sum(1 for e in err if abs(e) <= tol_s) / n
    agree = 0.0
    pairs = 0
    for a in range(n):
        ja = ids[a]
        ra = real[ja]
        for b in range(a + 1, n):
            jb = ids[b]
            rb = real[jb]
            # waited together: both waited, and each arrived before the other started
            if not (ra["start"] > ra["arrival"] and rb["start"] > rb["arrival"]):
                continue
            if not (ra["arrival"] < rb["start"] and rb["arrival"] < ra["start"]):
                continue
            if ra["start"] == rb["start"]:
                continue
            pairs += 1
            rs = ra["start"] < rb["start"]
            if sim[ja] == sim[jb]:
                agree += 0.5
            elif (sim[ja] < sim[jb]) == rs:
                agree += 1
    wait_r = {j: real[j]["start"] - real[j]["arrival"] for j in ids}
    wait_s = {j: sim[j] - real[j]["arrival"] for j in ids}
    accts: dict[str, list[str]] = {}
    for j in ids:
        accts.setdefault(real[j]["account"], []).append(j)

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    per = {}
    for a, js in sorted(accts.items()):
        mr, ms = mean([wait_r[j] for j in js]), mean([wait_s[j] for j in js])
        per[a] = {"jobs": len(js), "real_mean_wait_s": mr, "sim_mean_wait_s": ms,
                  "error": (ms / mr - 1) if mr > 0 else None}
    mr, ms = mean(list(wait_r.values())), mean(list(wait_s.values()))
    ae = sorted(abs(e) for e in err)
    return {
        "jobs": n,
        "within_60s": within,
        "pairs": pairs,
        "pairs_in_order": agree / pairs if pairs else None,
        "real_mean_wait_s": mr,
        "sim_mean_wait_s": ms,
        "mean_wait_error": (ms / mr - 1) if mr > 0 else None,
        "per_account": per,
        "mean_abs_start_error_s": mean(ae),
        "p90_abs_start_error_s": ae[min(n - 1, int(0.9 * n))],
        "max_abs_start_error_s": ae[-1],
    }


def format_compare(c: dict[str, Any]) -> str:
    """The figures as text, each against its target (issue #32)."""
    lines = [
        f"jobs compared: {c['jobs']}",
        f"started within 60 s of the real start: {c['within_60s']:.1%} (target >= 90%)",
        "pairs that waited together, in the real order: "
        + ("-" if c["pairs_in_order"] is None else f"{c['pairs_in_order']:.1%} of {c['pairs']}") + " (target >= 90%)",
        f"mean wait: replay {c['sim_mean_wait_s']:.1f} s, real {c['real_mean_wait_s']:.1f} s"
        + ("" if c["mean_wait_error"] is None else f" ({c['mean_wait_error']:+.1%}; target within 5%)"),
    ]
    for a, m in c["per_account"].items():
        e = "" if m["error"] is None else f" ({m['error']:+.1%}; target within 10%)"
        lines.append(f"  {a} ({m['jobs']} jobs): replay {m['sim_mean_wait_s']:.1f} s, real {m['real_mean_wait_s']:.1f} s{e}")
    lines.append(f"start error: mean {c['mean_abs_start_error_s']:.1f} s, p90 {c['p90_abs_start_error_s']:.0f} s, "
                 f"max {c['max_abs_start_error_s']:.0f} s")
    return "\n".join(lines)


def dump(c: dict[str, Any]) -> str:
    return json.dumps(c, indent=1)
