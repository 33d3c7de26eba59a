"""A site's own history as a simulator workload: "replay my last month".

``fscontrol capture FOLDER --history 30d`` records, beside the usual sample, what a replay needs
(fscontrol.slurm.parse: ``HISTORY_FIELDS``, ``NODES_ARGS``):

- ``jobs.txt``: ``sacct -a -X -P -S .. -E .. -o JobID,User,Account,Partition,QOS,State,Submit,
  Eligible,Start,End,ElapsedRaw,TimelimitRaw,ReqCPUS,AllocCPUS,ReqNodes,NNodes`` (times not
  clipped to the window, POSIX seconds);
- ``nodes.txt``: ``sinfo -h -N -o %N|%P|%c|%T|%G`` (each node's partitions, CPUs and GPUs: the
  machine; a capture before %G has no GPUs);
- ``partitions.txt``: ``scontrol -o show partition`` (each partition's PriorityTier and
  PriorityJobFactor: the replay's queue order and partition factor; a capture without it replays
  one tier, and the partition factor from the config's PartitionName lines only);
- ``sshare.txt`` (every capture has it): the association tree with its shares, carried on the
  workload (``Workload.shares``) for a fair-share engine.

:func:`read_history` turns such a folder into a :class:`~fscontrol.sim.workload.Workload`. A
plain sample (no ``jobs.txt``) works too: its ``sacct.txt`` (``-T``: times clipped to a short
window, no time limits) gives the jobs, each with its run time as its limit.

The rules, each counted in ``meta["stats"]``:

- The simulator's arrival (``SimJob.submit``) is the job's **eligible** time (after ``--begin``,
  a dependency or a hold; Slurm's ``Eligible``), the real submit time is kept in
  ``SimJob.submitted``: dependencies replay at their recorded times, not the simulated ones.
- A job still PENDING at the capture is replayed: it arrives at its eligible (else submit) time
  and runs for its time limit (what it may use; from sacct's ``TimelimitRaw``, else from the
  capture's ``squeue.txt``, which also gives its CPUs and nodes where sacct shows none); one with
  no limit anywhere (UNLIMITED) is left out and counted (``pending_no_limit``). Pending jobs in
  ``squeue.txt`` that sacct's window missed are added the same way.
- A job that never started and is gone (CANCELLED with no elapsed time, or no ``Start``) is left
  out. A job still RUNNING at the capture runs for what it had run so far.
- Billing: sacct's AllocTRES ``billing=`` (where the capture has it: ``capture --history`` records
  it): the fair-share engine charges it, not the size, as slurmctld charges RawUsage under the
  partitions' TRESBillingWeights (GPUs); ``billed_not_cpus`` counts the jobs where it differs from
  the CPUs. A capture without it charges the size (CPUs: billing where there are no weights).
  Each job's charge is times its QOS's UsageFactor from the capture's ``qos.txt`` (``usage_factor``
  counts the jobs whose factor is not 1), as slurmctld charges RawUsage.
- Size: CPUs (``unit="cpus"``, the default: allocated, else requested; the machine is the sum of
  the nodes' CPUs) or nodes (``unit="nodes"``: the machine is the node count).
- Limit: ``TimelimitRaw`` (minutes); none recorded (UNLIMITED, or a plain sample): the run time.
  A job that ran past its limit (Slurm's ``OverTimeLimit``) has its limit raised to its run time.
- Jobs larger than the machine (a partition subset, ``partitions=``) are left out.
- What Slurm would not start (from the pending job's ``Reason`` in the capture's ``squeue.txt``):
  a job held at the capture (``JobHeldAdmin``, ``JobHeldUser``: ``held``) or waiting on a DOWN or
  inactive partition (``PartitionDown``, ``PartitionInactive``: ``partition_down``), or on a
  dependency that can never be satisfied (``DependencyNeverSatisfied``: ``held``), is not started
  in the replay: the hold or the partition is assumed to last past the replayed period
  (``start_blocked=True``, ``simulate --start-blocked``: replayed as if released at once).
- A pending job waiting for its begin time (``BeginTime``) arrives no earlier than it (squeue's
  ``StartTime`` for such a job is its begin time). A job waiting on a dependency (``Dependency``)
  waits in the replay for the jobs it depends on to END (``SimJob.after``, from the capture's
  ``deps.txt``: squeue's ``%E``; afterok, afterany, afternotok and aftercorr alike, as the replay
  does not fail jobs; of an "any of" list, ``?``, all: the replay waits for the last) and is
  counted (``dependency_ordered``); run.run_simulation starts no job before they end. One whose
  dependencies are not recorded (a capture without ``deps.txt``, or only ``after:`` start
  dependencies or on jobs outside the replay) is replayed WITHOUT them and counted
  (``dependency_ignored``). A job that ran after a dependency or a begin time replays at its
  recorded ``Eligible`` time (above).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from fscontrol.slurm import parse
from ..errors import ConfigError, ParseError
from ..records import ShareRow
from .gres import job_gpus_per_node, tres_gpus
from .histlimits import config_pairs as _config_pairs, limits as _limits, min_prio as _min_prio
from .histlimits import prio_thresholds as _prio_thresholds
from .machine import gpu_misfits, nodes_out, parse_nodes, read_machine  # noqa: F401  (parse_nodes, nodes_out: read here before)
from .workload import SimJob, Workload

UNITS = ("cpus", "nodes")
_NEED = ("JobID", "User", "Account", "State", "Submit", "Start", "ElapsedRaw")
_NONE = {"", "Unknown", "None", "N/A", "(null)"}
# squeue reasons for a pending job Slurm will not start (sim/history.py module doc)
_HELD = frozenset({"JobHeldAdmin", "JobHeldUser", "DependencyNeverSatisfied"})
_PART_DOWN = frozenset({"PartitionDown", "PartitionInactive"})


def squeue_id(job_id: str) -> str:
    """The id squeue's JobID column prints for a job sacct names `job_id`: a pending array's record
    `47_[1-3]` (or `47_[1-3%2]`) is job 47; a heterogeneous job's component `48+1` is job 49 (its
    components get consecutive job ids, the leader first); anything else as it is."""
    head, sep, rest = job_id.partition("_")
    if sep and rest.startswith("[") and head.isdigit():
        return head
    lead, sep, k = job_id.partition("+")
    if sep and lead.isdigit() and k.isdigit():
        return str(int(lead) + int(k))
    return job_id


def array_tasks(job_id: str) -> list[str]:
    """The task ids of a pending array's record (`47_[1-3,7]`, `47_[0-9%2]`: 47_1, 47_2, ...), or
    [] for any other id (or a range over 100,000 tasks)."""
    head, sep, rest = job_id.partition("_")
    if not (sep and head.isdigit() and rest.startswith("[") and rest.endswith("]")):
        return []
    out: list[str] = []
    for part in rest[1:-1].split("%")[0].split(","):
        a, dash, b = part.partition("-")
        if not a.isdigit() or (dash and not b.isdigit()):
            return []
        lo, hi = int(a), int(b) if dash else int(a)
        if hi < lo or len(out) + hi - lo + 1 > 100_000:
            return []
        out += [f"{head}_{k}" for k in range(lo, hi + 1)]
    return out


def _time(v: str) -> float | None:
    v = v.strip()
    if v in _NONE:
        return None
    return float(int(v))


def _count(v: str) -> int:
    """ReqCPUS, AllocCPUS, NNodes, ReqNodes: an integer (a range "2-4" counts its first)."""
    v = v.strip()
    if v in _NONE:
        return 0
    head = v.split("-", 1)[0]
    if head.endswith(("K", "k")):
        return int(float(head[:-1]) * 1024)
    return int(head)


def _limit_s(v: str) -> float | None:
    v = v.strip()
    if v in _NONE or not v.isdigit():  # UNLIMITED, Partition_Limit
        return None
    return float(int(v)) * 60.0


def jobs_from_sacct(lines: Iterable[str], command: str, *, unit: str = "cpus", partitions: frozenset[str] | None = None,
                    queue: dict[str, Any] | None = None, seen: set[str] | None = None, start_blocked: bool = False,
                    walk: list[dict[str, Any]] | None = None) -> tuple[list[SimJob], dict[str, int]]:
    """SimJobs from sacct -P text with a header (the history fields, or a sample's SACCT_FIELDS).
    `queue`: the capture's squeue rows by job id (snaprecords.QueueJob): the pending jobs' time limits
    and sizes where sacct has none. `seen`: filled with every job id read (kept or not).
    start_blocked: replay the jobs held or in a DOWN partition at the capture too (as if released).
    `walk`: filled with the pending jobs left out that slurmctld's decay pass still walks (_pending)."""
    if unit not in UNITS:
        raise ConfigError(f"unit must be one of {', '.join(UNITS)}, not {unit!r}")
    it = iter(enumerate(lines, 1))
    header: list[str] | None = None
    for no, line in it:
        if not line.strip() or line.startswith("CLUSTER: "):
            continue
        header = [h.strip() for h in line.split("|")]
        missing = [c for c in _NEED if c not in header]
        if missing:
            raise ParseError(command, f"missing column(s) {', '.join(missing)} in header", no, line)
        break
    stats = {"records": 0, "kept": 0, "never_started": 0, "pending": 0, "pending_no_limit": 0, "running_at_capture": 0,
             "other_partition": 0, "no_limit": 0, "overrun": 0, "zero_size": 0, "held": 0, "partition_down": 0,
             "dependency_ignored": 0, "dependency_ordered": 0, "begin_time": 0, "billed_not_cpus": 0,
             "usage_factor": 0, "array_tasks": 0}
    if header is None:
        return [], stats
    ix = {h: i for i, h in enumerate(header)}
    n = len(header)

    def col(f: list[str], name: str) -> str:
        k = ix.get(name)
        return f[k] if k is not None else ""

    jobs: list[SimJob] = []
    for no, line in it:
        if not line.strip() or line.startswith("CLUSTER: "):
            continue
        f = line.split("|")
        if len(f) != n:
            raise ParseError(command, f"{len(f)} fields, header has {n}", no, line)
        stats["records"] += 1
        qid = squeue_id(col(f, "JobID"))
        if seen is not None:
            seen.add(col(f, "JobID"))
            seen.add(qid)
        try:
            state = col(f, "State").split(" ", 1)[0]
            start = _time(col(f, "Start"))
            elapsed = float(int(col(f, "ElapsedRaw") or 0))
            submit = _time(col(f, "Submit"))
            eligible = _time(col(f, "Eligible"))
            limit = _limit_s(col(f, "TimelimitRaw"))
            cpus = _count(col(f, "AllocCPUS")) or _count(col(f, "ReqCPUS"))
            nodes = _count(col(f, "NNodes")) or _count(col(f, "ReqNodes"))
            bill = parse._billing(col(f, "AllocTRES")) or 0
            gpus = job_gpus_per_node(tres_gpus(col(f, "AllocTRES")) or tres_gpus(col(f, "ReqTRES")), nodes)
            # its GPUs are per node over the nodes it had: held on each of them (-N, or --gpus spread)
            gnodes = max(_count(col(f, "ReqNodes")), _count(col(f, "NNodes"))) if gpus else 0
            gnodes = gnodes if gnodes > 1 else 0
        except ValueError as e:
            raise ParseError(command, f"bad value ({e})", no, line) from None
        if state == "PENDING":
            job = _pending(col(f, "JobID"), col(f, "User"), col(f, "Account"), col(f, "Partition"), col(f, "QOS"),
                           submit, eligible, limit, cpus, nodes, (queue or {}).get(qid), unit, partitions,
                           stats, start_blocked, walk)
            if job is not None:
                job.gpus, job.gpu_nodes = gpus, gnodes
                tasks = array_tasks(job.job_id)  # a pending array's record: each task is a job of its own
                if tasks:
                    stats["array_tasks"] += len(tasks) - 1
                    stats["pending"] += len(tasks) - 1
                    stats["kept"] += len(tasks) - 1
                    jobs += [replace(job, job_id=t) for t in tasks]
                else:
                    jobs.append(job)
            continue
        if start is None or submit is None or (elapsed == 0 and state == "CANCELLED"):
            stats["never_started"] += 1
            continue
        part = col(f, "Partition")
        if partitions is not None and not (set(part.split(",")) & partitions):
            stats["other_partition"] += 1
            continue
        if state == "RUNNING":
            stats["running_at_capture"] += 1
        size = cpus if unit == "cpus" else nodes
        if size <= 0:
            stats["zero_size"] += 1
            continue
        arrival = submit if eligible is None or eligible < submit else eligible
        if arrival > start:  # clocks: never arrive after the recorded start
            arrival = start
        if limit is None:
            stats["no_limit"] += 1
            est = elapsed
        elif elapsed > limit:
            stats["overrun"] += 1
            est = elapsed
        else:
            est = limit
        jobs.append(SimJob(col(f, "JobID"), arrival, elapsed, est, size, col(f, "User"), col(f, "Account"),
                           part, col(f, "QOS"), cpus, nodes, submit, billing=float(bill), gpus=gpus, gpu_nodes=gnodes))
        stats["kept"] += 1
        if bill and bill != cpus:
            stats["billed_not_cpus"] += 1
    return jobs, stats


def _pending(job_id: str, user: str, account: str, part: str, qos: str, submit: float | None, eligible: float | None,
             limit: float | None, cpus: int, nodes: int, q, unit: str, partitions: frozenset[str] | None,
             stats: dict[str, int], start_blocked: bool = False, walk: list[dict[str, Any]] | None = None
             ) -> SimJob | None:
    """A job pending at the capture as a SimJob: it arrives when it became eligible (else when
    submitted) and runs for its time limit. `q`: its squeue row (limit, CPUs, nodes, submit, and
    the reason it waits: held or DOWN partition, not started; begin time, not before it). A job
    left out in a DOWN partition (priority > 0: not held) goes to `walk` (job id, account, user,
    since its submit): slurmctld's classic decay pass computes its user's EffectvUsage at it
    (multifactor.py), so the replay keeps its place in that walk."""
    begin, dep = None, False

    def walked() -> None:  # left out of the replay, but in the pass's walk unless held (priority 0)
        since = submit if submit is not None else (q.submit if q is not None else None)
        if walk is not None and q is not None and (q.priority or 0) > 0 and since is not None:
            walk.append({"job_id": job_id, "account": account, "user": user, "since": since})

    if q is not None:
        reason = (q.reason or "").strip()
        if reason in _HELD and not start_blocked:
            stats["held"] += 1
            walked()  # (DependencyNeverSatisfied keeps its priority: handle_invalid_dependency)
            return None
        if reason in _PART_DOWN and not start_blocked:
            stats["partition_down"] += 1
            walked()
            return None
        if reason == "BeginTime":
            begin = q.start
        elif reason.startswith("Dependency"):
            dep = True

        limit = limit if limit is not None else (None if q.time_limit_s is None else float(q.time_limit_s))
        cpus, nodes = cpus or q.cpus, nodes or q.nodes
        submit = submit if submit is not None else q.submit
    if submit is None:
        stats["never_started"] += 1
        return None
    if partitions is not None and not (set(part.split(",")) & partitions):
        stats["other_partition"] += 1
        return None
    if limit is None or limit <= 0:
        stats["pending_no_limit"] += 1
        walked()
        return None
    size = cpus if unit == "cpus" else nodes
    if size <= 0:
        stats["zero_size"] += 1
        return None
    stats["pending"] += 1
    stats["kept"] += 1
    arrival = submit if eligible is None or eligible < submit else eligible
    if begin is not None and begin > arrival:
        stats["begin_time"] += 1
        arrival = begin
    stats["dependency_ignored"] += dep
    return SimJob(job_id, arrival, limit, limit, size, user, account, part, qos, cpus, nodes, submit)


def parse_dependencies(text: str) -> dict[str, tuple[str, ...]]:
    """`squeue -a -h -t PD -o %i|%E` (parse.DEPS_ARGS): by pending job, the jobs it waits for to
    end (afterok, afterany, afternotok, aftercorr: the replay fails no job, so all mean "after it
    ends"; squeue drops the parts already met and marks the rest "(unfulfilled)"). `after:N`
    (N started) and `singleton` are not read."""
    out: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        job, _, dep = line.strip().partition("|")
        ids = []
        for part in re.split(r"[,?]", dep):
            kind, _, rest = part.strip().partition(":")
            if kind not in ("afterok", "afterany", "afternotok", "aftercorr"):
                continue
            for x in rest.split(":"):
                m = re.fullmatch(r"([^()]+)(?:\(([^)]*)\))?", x.strip())
                if m and (m.group(2) or "unfulfilled") == "unfulfilled":
                    ids.append(m.group(1).split("_")[0] if m.group(1).endswith(("_*", "_[*]")) else m.group(1))
        if job.strip() and ids:
            out[job.strip()] = tuple(ids)
    return out


def _order(jobs: list[SimJob], deps: dict[str, tuple[str, ...]], stats: dict[str, int]) -> None:
    """Each pending job that waits on a dependency gets the jobs it waits for (those in the replay)."""
    ids = {j.job_id for j in jobs}
    for j in jobs:
        after = tuple(x for x in deps.get(j.job_id, ()) if x in ids and x != j.job_id)
        if after:
            j.after = after
            stats["dependency_ordered"] += 1
            stats["dependency_ignored"] = max(0, stats["dependency_ignored"] - 1)


def completion_lag(path: Path) -> float | None:
    """How long after a job's end its CPUs start the next job, as slurmctld ran it: the median,
    over the jobs that waited and started within 10 s of another job's end, of that delay (the
    job completing: its epilog, then the scheduler's pass). From a capture's jobs.txt (sacct with
    POSIX times); None with fewer than 5 such starts."""
    gaps = completion_gaps(path)
    if gaps is None or len(gaps) < 5:
        return None
    gaps.sort()
    return gaps[len(gaps) // 2]


def completion_gaps(path: Path) -> list[float] | None:
    """completion_lag's delays, one for each job that waited and started within 10 s of a job's
    end: the seconds from the last end at or before its start (bench/ctld_latency.py shows them);
    None where jobs.txt is missing or has no Start, End and Submit."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if len(lines) < 2:
        return None
    head = lines[0].split("|")
    if not {"Start", "End", "Submit"} <= set(head):
        return None
    ix = {k: head.index(k) for k in ("Start", "End", "Submit", "Eligible") if k in head}
    rows = []
    for ln in lines[1:]:
        f = ln.split("|")
        try:
            st, en, sub = float(f[ix["Start"]]), float(f[ix["End"]]), float(f[ix["Submit"]])
        except (ValueError, IndexError):
            continue
        el = sub
        if "Eligible" in ix:
            try:
                el = max(sub, float(f[ix["Eligible"]]))
            except (ValueError, IndexError):
                pass
        rows.append((st, en, el))
    ends = sorted(en for _, en, _ in rows)
    from bisect import bisect_right

    gaps = []
    for st, _, el in rows:
        k = bisect_right(ends, st)
        if st > el + 1 and k and st - ends[k - 1] <= 10:
            gaps.append(st - ends[k - 1])
    return gaps


def _queue(d: Path, commands: dict) -> dict[str, Any]:
    """The capture's squeue.txt (every capture has it): its rows by job id; {} without it."""
    path = d / "squeue.txt"
    if not path.is_file():
        return {}
    return {q.job_id: q for q in parse.parse_squeue(path.read_text(), " ".join(commands.get("squeue", {}).get("argv")
                                                                               or ["squeue"]))}


def _reservations(d: Path, commands: dict, window: list | None) -> list[dict[str, Any]]:
    """The capture's advance reservations (``reservations.txt``, scontrol -o show reservation) that
    reach into its history window or later: name, start, end, CPUs, nodes, flags, users, accounts."""
    path = d / "reservations.txt"
    if not path.is_file():
        return []
    from fscontrol.slurm.resv import parse_reservations

    since = float(window[0]) if window else float("-inf")
    rs = parse_reservations(path.read_text(), " ".join(commands.get("reservations", {}).get("argv") or ["scontrol"]))
    return [{"name": r.name, "start": r.start, "end": r.end, "cpus": r.cpus, "nodes": r.nodes,
             "flags": sorted(r.flags), "users": r.users, "accounts": r.accounts}
            for r in rs if r.end > since]


def _partitions(d: Path, commands: dict) -> dict[str, dict[str, int]]:
    """The capture's partitions (``partitions.txt``, scontrol -o show partition): name ->
    {"tier": PriorityTier, "job_factor": PriorityJobFactor}; {} without it."""
    path = d / "partitions.txt"
    if not path.is_file():
        return {}
    from fscontrol.slurm.partitions import parse_partitions

    ps = parse_partitions(path.read_text(), " ".join(commands.get("partitions", {}).get("argv") or ["scontrol"]))
    return {p.name: {"tier": p.tier, "job_factor": p.job_factor, "qos": p.qos, "cpus": p.cpus} for p in ps}


def read_history(
    folder: str | Path,
    *,
    unit: str = "cpus",
    machine: int | None = None,
    partitions: Iterable[str] | None = None,
    start_blocked: bool = False,
) -> Workload:
    """A folder recorded by ``fscontrol capture`` (best with ``--history``) as a Workload.

    machine: the machine's size in ``unit`` (default: from ``nodes.txt``; a folder without it
    needs it given). partitions: only jobs (and nodes) of these partitions. start_blocked: also
    replay the jobs held or waiting on a DOWN partition at the capture, as if released at once.
    """
    d = Path(folder)
    meta_path = d / "meta.json"
    if not meta_path.is_file():
        raise ConfigError(f"{d} is not a folder recorded by `fscontrol capture` (no meta.json)")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{meta_path}: unreadable ({e})") from None
    commands = meta.get("commands", {})
    parts = frozenset(partitions) if partitions else None
    source = "jobs" if (d / "jobs.txt").is_file() else "sacct"
    path = d / f"{source}.txt"
    if not path.is_file():
        raise ConfigError(f"{d} has neither jobs.txt (capture --history) nor sacct.txt")
    argv = commands.get(source, {}).get("argv") or [source]
    command = " ".join(argv)
    queue = _queue(d, commands)
    seen: set[str] = set()  # every job sacct printed: one pending in both is read once
    walk: list[dict[str, Any]] = []  # left out, in the pass's walk (_pending)
    with open(path, encoding="utf-8", errors="strict") as fh:
        try:
            jobs, stats = jobs_from_sacct((ln.rstrip("\n") for ln in fh), command, unit=unit, partitions=parts,
                                          queue=queue, seen=seen, start_blocked=start_blocked, walk=walk)
        except UnicodeDecodeError as e:
            raise ConfigError(f"{path} holds bytes that are not UTF-8 (at byte {e.start})") from None
    for q in queue.values():  # pending at the capture, outside sacct's window
        if q.state == "PENDING" and q.job_id not in seen:
            job = _pending(q.job_id, q.user, q.account, q.partition, q.qos, q.submit, None, None, 0, 0, q, unit, parts,
                           stats, start_blocked, walk)
            if job is not None:
                jobs.append(job)
    if (d / "deps.txt").is_file():
        _order(jobs, parse_dependencies((d / "deps.txt").read_text()), stats)
    if (d / "qos.txt").is_file():  # each QOS's UsageFactor, as the capture read it
        factors = {q.name: q.usage_factor for q in parse.parse_qos(
            (d / "qos.txt").read_text(), " ".join(commands.get("qos", {}).get("argv") or ["sacctmgr show qos"]))}
        for j in jobs:
            f = factors.get(j.qos or "normal", 1.0)
            if f != 1.0:
                j.usage_factor = f
                stats["usage_factor"] += 1
        qos_min_prio, over_part = _min_prio(d, commands)
    else:
        qos_min_prio, over_part = {}, frozenset()
    node_info: dict[str, Any] = {}
    down: list[str] = []
    nodes: dict[str, tuple[int, frozenset[str]]] = {}
    if (d / "nodes.txt").is_file():
        node_info, nodes, down = read_machine(d / "nodes.txt", " ".join(commands.get("nodes", {}).get("argv") or ["sinfo"]),
                                              parts)
        size = node_info["cpus"] if unit == "cpus" else node_info["nodes"]
    else:
        size = None
    if machine is not None:
        if machine < 1:
            raise ConfigError(f"machine size must be >= 1 {unit}, not {machine}")
        size = machine
    if not size:
        raise ConfigError(f"{d} has no nodes.txt (`fscontrol capture --history` records it): give the machine's size "
                          f"in {unit} (--machine N)")
    too_big = [j for j in jobs if j.size > size]
    pnodes = node_info.get("partition_nodes")
    if pnodes and unit == "cpus" and machine is None:  # nor more than its partition's nodes hold
        ncpus = [c for c, _ in nodes.values()]
        held = {pname: sum(ncpus[k] for k in ks) for pname, ks in pnodes.items()}
        for j in jobs:
            listed = (j.partition or "").split(",")
            known = [pname for pname in listed if pname in held]
            if known and len(known) == len(listed) and size >= j.size > max(held[pname] for pname in known):
                too_big.append(j)
    gpu_big = gpu_misfits(jobs, node_info) if unit == "cpus" and machine is None else []
    if too_big or gpu_big:
        big = {id(j) for j in too_big + gpu_big}
        jobs = [j for j in jobs if id(j) not in big]
    stats["too_big"] = len(too_big)
    stats["gpus_too_many"] = len({id(j) for j in gpu_big} - {id(j) for j in too_big})
    stats["kept"] = len(jobs)
    jobs.sort(key=lambda j: (int(m.group()) if (m := re.match(r"\d+", j.job_id)) else 0, j.job_id))  # (ties: by job id)
    shares: tuple[ShareRow, ...] = ()
    if (d / "sshare.txt").is_file():
        shares = parse.parse_sshare((d / "sshare.txt").read_text(), " ".join(commands.get("sshare", {}).get("argv") or ["sshare"]))
    window = meta.get("history_window") if source == "jobs" else meta.get("sacct_window")
    reservations = _reservations(d, commands, window)
    part_info = _partitions(d, commands)
    if qos_min_prio:
        _prio_thresholds(jobs, qos_min_prio, over_part, part_info)
    limits = _limits(d, commands, jobs, unit, part_info)
    if limits and limits["never"]:  # (slurmctld keeps them pending for ever: left out, as a job too big is)
        jobs = [j for j in jobs if j.job_id not in limits["never"]]
        stats["kept"] = len(jobs)
    stats["never_start_limits"] = len(limits["never"]) if limits else 0
    if node_info.get("node_gpus_each") and "gres/gpu" not in _config_pairs(d).get("AccountingStorageTRES", "gres/gpu"):
        node_info["gpus_unaccounted"] = True  # (sacct's TRES hold no job's GPUs: named in the output)
    return Workload(
        name=d.name,
        nodes=size,
        jobs=jobs,
        shares=shares,
        meta={
            "source": "slurm",
            "folder": str(d),
            "cluster": meta.get("cluster"),
            "slurm_version": meta.get("slurm_version"),
            "captured_at": meta.get("captured_at"),
            "last_decay_pass": meta.get("priority_last_decay_ran"),  # the decay passes' phase (capture)
            "completion_lag_s": completion_lag(path) if source == "jobs" else None,
            "jobs_from": f"{source}.txt",
            "command": command,
            "window": window,
            "unit": unit,
            "machine": node_info,
            "partitions": sorted(parts) if parts else None,
            "reservations": reservations,
            # the partitions' PriorityTier (the engine's queue: tier first) and PriorityJobFactor
            # (the priority's partition factor, where the config's PartitionName lines are not)
            "partition_tiers": {k: v["tier"] for k, v in part_info.items()},
            "partition_factors": {k: v["job_factor"] for k, v in part_info.items()},
            "walk_pending": walk,
            "qos_min_prio": qos_min_prio,  # each QOS's MinPrioThreshold, where slurmctld applies it (SimJob.prio_thresh)
            "limits": limits,  # the association and QOS limits on running jobs and CPUs (SimJob.limit_keys)
            "nodes_down": down,
            "stats": stats,
        },
    )
