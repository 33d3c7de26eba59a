"""When will my job start: every pending job's start estimated from the live queue (issue #32 item 4).

The estimate plays the queue forward through Slurm's own scheduler model (sim/slurmsched.py: the
main scheduler on each job end and every `sched_interval`, stopping at the first job that does
not fit; backfill every `bf_interval` planning with time limits, whole-node reservations at
`bf_resolution` within `bf_window`, at most `bf_max_job_test` jobs and `bf_max_job_user` of a user), parameters from
`scontrol show config`'s SchedulerParameters:

* running jobs end at start + each user's typical fraction of the limit (the median of
  ElapsedRaw / TimelimitRaw over their jobs ended in sacct's window), pending jobs run that long
  too; a user with no history runs to the limit. The scheduler itself plans with the limits, as
  slurmctld's backfill does.
* the range: the same run with every job running to its limit (what `squeue --start` assumes)
  beside the typical-fraction run; the estimate is the typical-fraction one.
* pending jobs in the order of the priorities squeue shows now. Simplification: priorities are
  held through the horizon (fair-share does not decay nor age grow in this first version), one
  pool of CPUs (partitions are not told apart), no reservations; a job's GPUs count as their share
  of the CPUs (estimate's `total_gpus`).
* a job that cannot start for a reason other than resources and priority (held, dependency,
  partition down, a limit reached, ...) gets no estimate but that reason.
* PrivateData=jobs (a user who is not an operator): squeue shows that user's jobs alone. The
  estimate then uses only those and treats the CPUs others use now (sinfo's allocated count) as
  busy through the horizon: a job that needs them gets no estimate ("depends on jobs PrivateData
  hides"), so nothing about hidden jobs is revealed.

Pure: no Slurm, no clock (`now` is given); `read_live` runs the commands.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fscontrol.errors import EstimateTooCostly, NotFoundError, ParseError
from fscontrol.slurm.parse import parse_duration, parse_time
from fscontrol.sim.slurmsched import SlurmSched, backfill_starts

# %i as the user knows the job (123_[1-5], 123+1), %A last: its own id, which a named array task or
# het component resolves to (slurm.jobid)
SQUEUE_START_ARGS = ("squeue", "-a", "-h", "-t", "PD,R,CG", "-o", "%i|%u|%a|%P|%T|%C|%l|%S|%Q|%r|%V|%A")
SACCT_FRACTION_ARGS = ("sacct", "-a", "-X", "-n", "-P", "-S", "now-14days", "-E", "now", "-s", "CD,TO,F",
                       "-o", "User,ElapsedRaw,TimelimitRaw")
SINFO_CPUS_ARGS = ("sinfo", "-h", "-N", "-o", "%N|%c|%C")
# the GPUs each job asks for (per node x its nodes, and per job): 'gres:gpu:2' (22.05), 'gres/gpu:2' (26.05)
SQUEUE_GPU_ARGS = ("squeue", "-a", "-h", "-t", "PD,R,CG", "-O", "JobID:0|,tres-per-node:0|,tres-per-job:0|,NumNodes:0")
SINFO_GPU_ARGS = ("sinfo", "-h", "-N", "-o", "%N|%G")
HORIZON_S = 7 * 86400.0
# squeue reasons under which only priority and resources stand between a job and its start
WAITING = {"Priority", "Resources", "None", "BeginTime", "ReqNodeNotAvail", ""}


@dataclass(frozen=True, slots=True)
class QJob:
    job_id: str
    user: str
    account: str
    partition: str
    state: str
    cpus: int
    limit_s: float | None
    start: float | None  # running: when it started; pending: squeue's own expected start (or None)
    priority: float
    reason: str
    submit: float | None
    gpus: int = 0  # the GPUs it asks for (running: holds)
    own_id: str = ""  # squeue's %A (a pending array's: the array's id); "" from an 11-field listing


@dataclass(slots=True)
class Estimate:
    job_id: str
    user: str
    start: float | None = None
    early: float | None = None
    late: float | None = None
    reason: str = ""  # why no estimate, when start is None
    squeue_start: float | None = None
    extra: dict = field(default_factory=dict)


def parse_queue(text: str, command: str = " ".join(SQUEUE_START_ARGS)) -> list[QJob]:
    out = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        f = [x.strip() for x in line.split("|")]
        if len(f) not in (11, 12):
            raise ParseError(command, f"{len(f)} fields, expected 12", no, line)
        try:
            cpus = int(f[5])
            prio = float(f[8])
        except ValueError:
            raise ParseError(command, "CPUs or priority not a number", no, line) from None
        lim = parse_duration(f[6]) if f[6] not in ("UNLIMITED", "NOT_SET", "INVALID") else None
        start = parse_time(f[7]) if f[7] not in ("N/A", "Unknown", "") else None
        submit = parse_time(f[10]) if f[10] not in ("N/A", "Unknown", "") else None
        out.append(QJob(f[0], f[1], f[2], f[3], f[4], cpus, None if lim is None else float(lim), start, prio,
                        f[9], submit, own_id=f[11] if len(f) == 12 else ""))
    return out


def parse_fractions(text: str) -> dict[str, float]:
    """Each user's median ElapsedRaw / (TimelimitRaw minutes x 60) over `SACCT_FRACTION_ARGS`'s jobs."""
    by: dict[str, list[float]] = {}
    for line in text.splitlines():
        f = line.strip().split("|")
        if len(f) != 3 or not f[0]:
            continue
        try:
            el, lim = float(f[1]), float(f[2]) * 60.0
        except ValueError:
            continue  # UNLIMITED / Partition_Limit: no fraction
        if lim > 0 and el > 0:
            by.setdefault(f[0], []).append(min(1.0, el / lim))
    return {u: statistics.median(v) for u, v in by.items()}


def gpu_count(text: str) -> int:
    """The GPUs in a GRES/TRES string: 'gres:gpu:2', 'gres/gpu:a100:2', 'gpu:4(S:0-1)', 'gres/gpu=2',
    several comma-separated; 0 for none ('N/A', '(null)', other GRES)."""
    import re

    n = 0
    for item in re.split(r",(?![^(]*\))", text or ""):
        item = re.sub(r"\(.*?\)", "", item.strip())
        if "gpu" not in item.lower():
            continue
        m = re.search(r"[:=](\d+)$", item)
        n += int(m.group(1)) if m else 1
    return n


def parse_job_gpus(text: str) -> dict[str, int]:
    """job id -> the GPUs it asks for, from `SQUEUE_GPU_ARGS` (per node x nodes + per job)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) < 4 or not f[0]:
            continue
        try:
            nodes = max(1, int(f[3] or 1))
        except ValueError:
            nodes = 1
        g = gpu_count(f[1]) * nodes + gpu_count(f[2])
        if g:
            out[f[0]] = g
    return out


def parse_sinfo_gpus(text: str) -> int:
    """The cluster's GPUs, from `SINFO_GPU_ARGS` (a node in several partitions counted once)."""
    seen: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, gres = line.strip().partition("|")
        if sep:
            seen[name] = gpu_count(gres)
    return sum(seen.values())


def parse_sinfo(text: str) -> tuple[int, int, int]:
    """(total CPUs, CPUs of the largest node, CPUs allocated now) from `SINFO_CPUS_ARGS`."""
    seen: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        f = line.strip().split("|")
        if len(f) != 3:
            continue
        try:
            a, _i, _o, t = (int(x) for x in f[2].split("/"))
        except ValueError:
            raise ParseError(" ".join(SINFO_CPUS_ARGS), "CPUs not A/I/O/T", None, line) from None
        seen[f[0]] = (t, a)  # a node in several partitions is listed once per partition
    if not seen:
        raise ParseError(" ".join(SINFO_CPUS_ARGS), "no nodes listed")
    return sum(t for t, _ in seen.values()), max(t for t, _ in seen.values()), sum(a for _, a in seen.values())


def _plan(now: float, running: Sequence[tuple[float, float, int]], pending: Sequence[tuple[float, float, int, float]],
          total: int, sc: SlurmSched, blocked: int, stop_after: set[int] | None, horizon: float,
          owners: Sequence[str] | None = None) -> dict[int, float]:
    """Start times of the pending jobs (by index): `running` (real end, end at its limit, CPUs),
    `pending` in priority order (run time, limit, CPUs, not before), `blocked` CPUs never free.
    Stops once every job of `stop_after` has started (or at the horizon). Backfill cycles run
    within `bf_window` of now; past it every job that fits starts (first fit, a cheap stand-in
    for backfill without reservations; the cost: docs/start.md). `owners`: each pending job's
    user, for `bf_max_job_user` (backfill.c: a user's jobs past that many in a cycle are skipped,
    and do not count towards `bf_max_job_test`)."""
    n = len(pending)
    size = [p[2] for p in pending]
    limit = [p[1] for p in pending]
    est = limit
    psize = size[:]  # by key: pending jobs 0..n-1, then the running ones
    live: dict[int, float] = {}  # running key -> its end at the limit (what backfill plans with)
    runs: list[tuple[float, int]] = []  # (live end, key), sorted: kept as jobs start and end
    ends: list[tuple[float, int]] = []  # (real end, key)
    free = total - blocked
    for e, le, c in running:
        k = len(psize)
        psize.append(c)
        live[k] = max(le, e, now)
        runs.append((live[k], k))
        ends.append((max(now, e), k))
        free -= c
    heapq.heapify(ends)
    runs.sort()
    started: dict[int, float] = {}
    waiting = list(range(n))
    need = set(stop_after) if stop_after is not None else None
    t = now
    next_bf = now + sc.bf_interval_s / 2  # the cycle's phase is not known: half an interval on average
    next_main = now + sc.sched_interval_s / 2
    bf_until = now + sc.bf_window_s
    changed = True
    endt = now + horizon
    begins = any(p[3] > now for p in pending)
    smallest = min(size) if size else 0

    fresh: list[int] = []  # started since the last event's bookkeeping
    tree: list[float] = []  # past bf_window: a min-tree of the sizes of the jobs that may start (first fit)
    leaves = 1
    later: list[tuple[float, int]] = []  # past bf_window: (begin, job) of the jobs not yet begun

    def start(i: int, at: float) -> None:
        nonlocal free
        started[i] = at
        free -= size[i]
        heapq.heappush(ends, (at + pending[i][0], i))
        live[i] = at + limit[i]
        insort(runs, (at + limit[i], i))
        fresh.append(i)
        if tree:
            set_leaf(i, math.inf)

    def set_leaf(i: int, v: float) -> None:
        j = i + leaves
        tree[j] = v
        j >>= 1
        while j:
            a, b = tree[2 * j], tree[2 * j + 1]
            m = a if a < b else b
            if tree[j] == m:
                break
            tree[j] = m
            j >>= 1

    def first_fit(pos: int, cap: int) -> int:
        """The first job from `pos` on (in priority order) of at most `cap` CPUs that may start, or -1."""
        j = pos + leaves
        while True:
            if tree[j] <= cap:
                while j < leaves:
                    j = 2 * j if tree[2 * j] <= cap else 2 * j + 1
                return j - leaves
            while j & 1:
                j >>= 1
            if j == 0:
                return -1
            j += 1

    while waiting and t <= endt and (need is None or need):
        got = 0
        depth = 0
        if t >= bf_until:
            # past bf_window every job that fits starts, in priority order (first fit; no backfill
            # cycle): the next one is found in a min-tree of sizes, not by a scan of the queue
            if not tree:
                while leaves < max(1, n):
                    leaves *= 2
                tree = [math.inf] * (2 * leaves)
                for i in waiting:
                    if i in started:
                        continue
                    if pending[i][3] > t:
                        later.append((pending[i][3], i))
                    else:
                        tree[leaves + i] = size[i]
                for j in range(leaves - 1, 0, -1):
                    a, b = tree[2 * j], tree[2 * j + 1]
                    tree[j] = a if a < b else b
                later.sort(reverse=True)
            while later and later[-1][0] <= t:
                _, i = later.pop()
                set_leaf(i, size[i])
            pos = 0
            while free >= smallest:
                i = first_fit(pos, free)
                if i < 0:
                    break
                start(i, t)
                got += 1
                pos = i + 1
                if pos >= leaves:
                    break
        else:
            for i in waiting:  # the main scheduler: the prefix that fits
                if depth >= sc.default_queue_depth or free < smallest:
                    break
                if i in started:
                    continue
                depth += 1
                if pending[i][3] > t:
                    continue
                if size[i] > free:
                    break
                start(i, t)
                got += 1
        if t >= next_bf and t < bf_until:
            if changed and sc.backfill and free >= smallest:
                elig = []
                per_user: dict[str, int] | None = {} if (sc.bf_max_job_user and owners is not None) else None
                for i in waiting:
                    if i not in started and pending[i][3] <= t:
                        if per_user is not None:
                            u = owners[i]
                            c = per_user.get(u, 0)
                            if c >= sc.bf_max_job_user:
                                continue
                            per_user[u] = c + 1
                        elig.append(i)
                        if len(elig) >= sc.bf_max_job_test:
                            break
                small = min((size[i] for i in elig), default=free + 1)
                # a cycle's reservations are dropped at its end: one that can start nothing is skipped
                if free < small:
                    run = []
                elif not runs or runs[0][0] > t:
                    run = runs  # every live end is after t: max(end, t) is the end
                else:
                    run = sorted((max(e, t), k) for k, e in live.items())
                for i in (backfill_starts(t, elig, free, run, psize, est, total - blocked, sc, smallest=small)
                          if free >= small else ()):
                    start(i, t)
                    got += 1
            changed = False
            next_bf = t + sc.bf_interval_s
        if got:
            if begins:
                # the jobs with a begin time are looked for in waiting[:50]: its content kept as it was
                if len(started) * 4 > len(waiting) or waiting[0] in started:
                    waiting = [i for i in waiting if i not in started]
            elif len(fresh) * 64 > len(waiting):
                waiting = [i for i in waiting if i not in started]
            else:
                for i in sorted(fresh, reverse=True):  # waiting is in index order
                    k = bisect_left(waiting, i)
                    if k < len(waiting) and waiting[k] == i:
                        del waiting[k]
            changed = True
            if need is not None:
                need.difference_update(fresh)
            fresh.clear()
        if not waiting or (need is not None and not need):
            break
        nxt = min(next_bf if t < bf_until else math.inf, next_main, ends[0][0] if ends else math.inf)
        if begins:
            for i in waiting[:50]:
                if pending[i][3] > t:
                    nxt = min(nxt, pending[i][3])
        if nxt == math.inf:
            break
        t = max(nxt, t)
        while ends and ends[0][0] <= t:
            _, k = heapq.heappop(ends)
            free += psize[k]
            le = live.pop(k, None)
            if le is not None:
                j = bisect_left(runs, (le, k))
                del runs[j]
            changed = True
        if t >= next_main:
            next_main = t + sc.sched_interval_s
    return started


def estimate(jobs: Sequence[QJob], *, now: float, total_cpus: int, sched: SlurmSched,
             fractions: Mapping[str, float] | None = None, hidden_cpus: int = 0,
             users: set[str] | None = None, job_ids: set[str] | None = None,
             horizon_s: float = HORIZON_S, total_gpus: int = 0) -> list[Estimate]:
    """An Estimate for each pending job (those of `users` / `job_ids` when given; the others are
    still played, they hold the queue). `hidden_cpus`: CPUs in use by jobs the caller cannot see
    (PrivateData), busy through the horizon. `total_gpus`: the cluster's GPUs; a job that asks for
    GPUs takes the larger of its CPUs and its GPUs' share of the CPUs (g x CPUs / GPUs): a GPU-bound
    job waits for the GPUs, a CPU-bound one for the CPUs; conservative where both mix on a node."""
    fr = dict(fractions or {})

    def size(j: QJob) -> int:
        if j.gpus and total_gpus:
            return max(j.cpus, min(total_cpus, math.ceil(j.gpus * total_cpus / total_gpus)))
        return j.cpus

    run_jobs = [j for j in jobs if j.state in ("RUNNING", "COMPLETING")]
    pend = [j for j in jobs if j.state == "PENDING"]
    pend.sort(key=lambda j: (-j.priority, int(j.job_id.split("_")[0]) if j.job_id.split("_")[0].isdigit() else 0))
    out: dict[str, Estimate] = {}
    playable: list[QJob] = []
    for j in pend:
        e = Estimate(j.job_id, j.user, squeue_start=j.start if j.reason in WAITING else None)
        out[j.job_id] = e
        if j.reason not in WAITING:
            e.reason = f"waits for {j.reason}, not only for CPUs and priority"
        elif j.limit_s is None:
            e.reason = "no time limit: the jobs behind it cannot be planned"
        elif j.gpus > total_gpus:
            e.reason = f"needs {j.gpus} GPUs, more than the {total_gpus} there are"
        elif j.cpus > total_cpus - hidden_cpus:
            e.reason = ("needs CPUs that jobs hidden from you by PrivateData hold" if hidden_cpus
                        else f"needs {j.cpus} CPUs, more than the {total_cpus} there are")
        else:
            playable.append(j)
    want = [i for i, j in enumerate(playable)
            if (users is None or j.user in users) and (job_ids is None or j.job_id in job_ids)]
    stop = set(want)
    if want and (users is not None or job_ids is not None):
        # jobs behind the last one asked about only backfill, which delays no reservation made
        # ahead of them (Slurm's rule): they are not played (the cost at 10,000 jobs)
        playable = playable[: max(want) + 1]
    runs = {}
    for name, use_fr in (("typical", True), ("limits", False)):
        running = []
        for j in run_jobs:
            lim = j.limit_s if j.limit_s is not None else horizon_s
            st = j.start if j.start is not None else now
            f = fr.get(j.user, 1.0) if use_fr else 1.0
            running.append((st + f * lim, st + lim, size(j)))
        pending = []
        for j in playable:
            f = fr.get(j.user, 1.0) if use_fr else 1.0
            nb = j.start if (j.reason == "BeginTime" and j.start) else now
            pending.append((f * j.limit_s, j.limit_s, size(j), nb))
        runs[name] = _plan(now, running, pending, total_cpus, sched, hidden_cpus, stop, horizon_s,
                           [j.user for j in playable])
    for i in want:
        j = playable[i]
        e = out[j.job_id]
        a, b = runs["typical"].get(i), runs["limits"].get(i)
        if a is None and b is None:
            e.reason = f"does not start within the {horizon_s / 86400:g}-day horizon"
            continue
        e.start = a if a is not None else b
        vals = [v for v in (a, b) if v is not None]
        e.early, e.late = min(vals), max(vals) if b is not None else None
        e.extra["fraction"] = fr.get(j.user)
    sel = [e for e in out.values() if (users is None or e.user in users) and (job_ids is None or e.job_id in job_ids)]
    return sel


def order_own_first(ests: Sequence[Estimate], me: str | None) -> list[Estimate]:
    return sorted(ests, key=lambda e: (e.user != me, math.inf if e.start is None else e.start, e.job_id))


def _hm(t: float | None, now: float) -> str:
    if t is None:
        return "-"
    d = t - now
    if d < 60:
        return "now" if d < 1 else f"in {d:.0f} s"
    return f"in {d / 60:.0f} min" if d < 3 * 3600 else f"in {d / 3600:.1f} h"


def why_line(e: Mapping, now: float) -> str:
    """`why`'s line: the estimate with its range and squeue --start's, or why there is none."""
    sq = f"; squeue --start: {_hm(e.get('squeue_start'), now)}"
    if e.get("start") is None:
        return f"estimated start: none ({e.get('reason') or 'unknown'})" + (sq if "squeue_start" in e else "")
    late = _hm(e["late"], now) if e.get("late") is not None else "?"
    return (f"estimated start: {_hm(e['start'], now)} ({_hm(e['early'], now)} .. {late}; "
            "fscontrol start explains the model)" + sq)


def render(d: Mapping) -> str:
    now = d["now"]
    lines = [f"start estimates at {d['now_iso']} ({d['model']})"]
    for note in d.get("notes", []):
        lines.append("  note: " + note)
    lines.append(f"{'JOBID':>10} {'USER':<10} {'ESTIMATE':>12} {'RANGE':>24}  {'SQUEUE --START':>14}")
    for e in d["jobs"]:
        if e["start"] is None:
            lines.append(f"{e['job_id']:>10} {e['user']:<10} {'-':>12} {'':>24}  {_hm(e['squeue_start'], now):>14}  {e['reason']}")
            continue
        rng = f"{_hm(e['early'], now)} .. {_hm(e['late'], now) if e['late'] is not None else '?'}"
        lines.append(f"{e['job_id']:>10} {e['user']:<10} {_hm(e['start'], now):>12} {rng:>24}  {_hm(e['squeue_start'], now):>14}")
    return "\n".join(lines)


def to_dict(ests: Sequence[Estimate], *, now: float, sched: SlurmSched, notes: list[str]) -> dict:
    import datetime as _dt

    return {"now": now, "now_iso": _dt.datetime.fromtimestamp(now, _dt.timezone.utc).isoformat(timespec="seconds"),
            "model": "Slurm's scheduler model, " + sched.source + "; runs: each user's typical fraction of the limit "
                     "(sacct, 14 days), range up to limits as run times; priorities held as now",
            "notes": notes,
            "jobs": [{"job_id": e.job_id, "user": e.user, "start": e.start, "early": e.early, "late": e.late,
                      "reason": e.reason, "squeue_start": e.squeue_start, "fraction": e.extra.get("fraction")}
                     for e in ests]}


def read_live(source, *, now: float, users: set[str] | None = None, job_ids: set[str] | None = None,
              me: str | None = None, private_jobs: bool | None = None, max_pending: int | None = None) -> dict:
    """Run squeue, sinfo, sacct and scontrol show config on `source` (LiveSlurm) and estimate.
    `max_pending`: with more jobs pending than that, EstimateTooCostly (before any estimate)."""
    from fscontrol.sim.slurmsched import sched_from_config
    from fscontrol.slurm.parse import parse_config_pairs

    conf_text = source.run(("scontrol", "show", "config")).stdout
    jobs = parse_queue(source.run(SQUEUE_START_ARGS).stdout)
    if max_pending is not None:
        pending = sum(1 for j in jobs if j.state == "PENDING")
        if pending > max_pending:
            raise EstimateTooCostly(f"{pending:,} jobs pending, over the {max_pending:,} estimated here "
                                    "(`fscontrol start` estimates them, at more cost)")
    total, node_cpus, alloc = parse_sinfo(source.run(SINFO_CPUS_ARGS).stdout)
    sc = sched_from_config(conf_text, node_cpus=node_cpus)
    fr = parse_fractions(source.run(SACCT_FRACTION_ARGS).stdout)
    pairs = parse_config_pairs(conf_text)
    notes = []
    named: dict[str, list[str]] = {}  # the queue's row -> the ids asked for that are it
    if job_ids is not None:
        for x in sorted(job_ids):
            named.setdefault(pending_row(source, jobs, x), []).append(x)
        job_ids = set(named)
    hidden = 0
    if private_jobs is None:
        import os
        private_jobs = "jobs" in pairs.get("PrivateData", "").lower() and os.geteuid() != 0
    if private_jobs:
        seen = sum(j.cpus for j in jobs if j.state in ("RUNNING", "COMPLETING"))
        hidden = max(0, alloc - seen)
        notes.append("PrivateData=jobs: squeue shows you your own jobs alone; the estimate uses them, and the "
                     f"{hidden} CPUs others use now are counted busy throughout (their queue is not seen)")
    unknown = sorted({j.user for j in jobs if j.state == "PENDING" and j.user not in fr})
    if unknown:
        notes.append("no ended jobs in sacct (14 days) for " + ", ".join(unknown[:5])
                     + ("..." if len(unknown) > 5 else "") + ": their jobs are taken to run to their limits")
    total_gpus = 0
    gpus = parse_job_gpus(source.run(SQUEUE_GPU_ARGS).stdout)
    if gpus:
        from dataclasses import replace

        jobs = [replace(j, gpus=gpus[j.job_id]) if j.job_id in gpus else j for j in jobs]
        total_gpus = parse_sinfo_gpus(source.run(SINFO_GPU_ARGS).stdout)
        notes.append(f"GPUs: {total_gpus} on the cluster; a job with GPUs counts as the larger of its CPUs and its "
                     "GPUs' share of the CPUs (GPUs x CPUs / GPUs), so it waits for the GPUs it needs")
    ests = estimate(jobs, now=now, total_cpus=total, sched=sc, fractions=fr, hidden_cpus=hidden,
                    users=users, job_ids=job_ids, total_gpus=total_gpus)
    if named:  # each under the id it was asked by (an array task 123_4, a component 123+1), as `why` says it
        from dataclasses import replace

        ests = [replace(e, job_id=x) for e in ests for x in named.get(e.job_id, [e.job_id])]
    return to_dict(order_own_first(ests, me), now=now, sched=sc, notes=notes)


def pending_row(source, jobs: Sequence[QJob], job_id: str) -> str:
    """The row of the queue (`jobs`, SQUEUE_START_ARGS's) that is the pending job `job_id` names: its
    own row, else the one whose own id (%A) squeue gives that name (slurm.jobid: an array task
    123_4 of a pending 123_[1-5], a het component 123+1 by its own id); NotFoundError (exit 6) with
    its state when it is not pending, as `why` says it."""
    from fscontrol.slurm import jobid

    pending = [j for j in jobs if j.state == "PENDING"]
    row = next((j.job_id for j in pending if j.job_id == job_id), None)
    if row is None:
        raw = jobid.resolve(source.run, job_id)
        row = next((j.job_id for j in pending if raw is not None and j.own_id == raw), None)
    if row is not None:
        return row
    from fscontrol.errors import SlurmCommandError

    try:
        state, reason, _, _ = jobid.job_state(source.run(jobid.state_args(job_id)).stdout, job_id)
    except SlurmCommandError:
        state = reason = None
    if state is None:
        raise NotFoundError(f"job {job_id} is not pending (or not visible to you)")
    raise NotFoundError(f"job {job_id} is {state}" + (f" ({reason})" if reason and reason != "None" else "") + ": it is not pending")
