"""The live queue as fscontrol start reads it (forecast/start.py, issue #32 item 4): the commands
and their parsers (squeue's jobs with their reservation, sacct's run-time fractions, sinfo's
CPUs and GPUs, squeue's GPUs).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fscontrol.errors import ParseError
from fscontrol.slurm.parse import parse_duration, parse_time

# %i as the user knows the job (123_[1-5], 123+1), %v its reservation, %A last: its own id, which a
# named array task or het component resolves to (slurm.jobid)
SQUEUE_START_ARGS = ("squeue", "-a", "-h", "-t", "PD,R,CG", "-o", "%i|%u|%a|%P|%T|%C|%l|%S|%Q|%r|%V|%v|%A")
SACCT_FRACTION_ARGS = ("sacct", "-a", "-X", "-n", "-P", "-S", "now-14days", "-E", "now", "-s", "CD,TO,F",
                       "-o", "User,ElapsedRaw,TimelimitRaw")
SINFO_CPUS_ARGS = ("sinfo", "-h", "-N", "-o", "%N|%c|%C")
# the GPUs each job asks for (per node x its nodes, and per job): 'gres:gpu:2' (22.05), 'gres/gpu:2' (26.05)
SQUEUE_GPU_ARGS = ("squeue", "-a", "-h", "-t", "PD,R,CG", "-O", "JobID:0|,tres-per-node:0|,tres-per-job:0|,NumNodes:0")
SINFO_GPU_ARGS = ("sinfo", "-h", "-N", "-o", "%N|%G")
# each pending job's QOS, read only where some QOS has a MinPrioThreshold (start.read_live)
SQUEUE_QOS_ARGS = ("squeue", "-a", "-h", "-t", "PD", "-o", "%i|%q")
# squeue reasons under which only priority and resources stand between a job and its start
WAITING = {"Priority", "Resources", "None", "BeginTime", "ReqNodeNotAvail", ""}
# what squeue's %r shows instead of "Resources" when slurmctld's main pass finds too few of the
# partition's nodes free (job_scheduler.c: state_reason WAIT_RESOURCES with this state_desc; 24.11
# and later may add ", REBOOTING"): a job waiting for CPUs, as "Resources" is
NODES_BUSY_DESC = "Nodes required for job are DOWN, DRAINED"


def waiting(reason: str) -> bool:
    """Whether squeue's reason (%r) leaves only priority and resources between a job and its start."""
    return reason in WAITING or reason.startswith(NODES_BUSY_DESC)


MAX_JOB_ID = 2**32 - 1  # Slurm's job ids are uint32_t
_JOB_ID = re.compile(r"[0-9]+(?:_[0-9]+|\+[0-9]+)?", re.ASCII)


def is_job_id(job_id: str) -> bool:
    """A job id as squeue prints it: ASCII digits (str.isdigit also takes other scripts' digits,
    which Slurm does not), 1..2^32-1, with an array task (_N) or a het component (+N)."""
    if not _JOB_ID.fullmatch(job_id):
        return False
    head, *rest = (int(x) for x in re.split(r"[_+]", job_id))
    return 1 <= head <= MAX_JOB_ID and all(x <= MAX_JOB_ID for x in rest)


def selection(user: str | None, jobs: str | None) -> tuple[set[str] | None, set[str] | None]:
    """`start`'s -u and -j (comma-separated, as squeue's) as (users, job ids), None for all; a job
    id that is not one, an empty item ("1,,") or a user the host does not know (squeue -u: "Invalid
    user") raises ConfigError."""
    import pwd

    from fscontrol.errors import ConfigError

    ids = None if jobs is None else {x.strip() for x in jobs.split(",")}
    if ids is not None and not all(is_job_id(x) for x in ids):
        raise ConfigError(f"-j {jobs!r}: not a comma-separated list of job ids")
    users = None if user is None else {x.strip() for x in user.split(",")}
    if users is not None and not all(users):
        raise ConfigError(f"-u {user!r}: an empty user name")
    unknown = []
    for u in sorted(users or ()):
        try:
            pwd.getpwnam(u)
        except KeyError:
            if not u.isdigit():  # (a uid: squeue takes one)
                unknown.append(u)
    if unknown:
        raise ConfigError(f"-u: no such user: {', '.join(unknown)}")
    return users, ids


@dataclass(frozen=True, slots=True)
class StartJob:
    """A job as the start-time estimate reads it (SQUEUE_START_ARGS): its size, time limit, start
    and priority, for the replay of the queue (forecast/start.py). forecast/waits.WaitJob is the
    job as `why` reads it."""

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
    reservation: str = ""  # the advance reservation it runs in (squeue's %v), "" for none
    own_id: str = ""  # squeue's %A (a pending array's: the array's id); "" from a shorter listing



def parse_queue(text: str, command: str = " ".join(SQUEUE_START_ARGS)) -> list[StartJob]:
    out = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        f = [x.strip() for x in line.split("|")]
        if len(f) not in (11, 12, 13):
            raise ParseError(command, f"{len(f)} fields, expected 13", no, line)
        try:
            cpus = int(f[5])
            prio = float(f[8])
        except ValueError:
            raise ParseError(command, "CPUs or priority not a number", no, line) from None
        lim = parse_duration(f[6]) if f[6] not in ("UNLIMITED", "NOT_SET", "INVALID") else None
        start = parse_time(f[7]) if f[7] not in ("N/A", "Unknown", "") else None
        submit = parse_time(f[10]) if f[10] not in ("N/A", "Unknown", "") else None
        resv = f[11] if len(f) >= 12 and f[11] not in ("(null)", "N/A") else ""
        out.append(StartJob(f[0], f[1], f[2], f[3], f[4], cpus, None if lim is None else float(lim), start, prio,
                        f[9], submit, reservation=resv, own_id=f[12] if len(f) == 13 else ""))
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


def parse_job_qos(text: str, command: str = " ".join(SQUEUE_QOS_ARGS)) -> dict[str, str]:
    """job id -> its QOS, from `SQUEUE_QOS_ARGS`."""
    out: dict[str, str] = {}
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        f = [x.strip() for x in line.split("|")]
        if len(f) != 2 or not f[0]:
            raise ParseError(command, f"{len(f)} fields, expected 2 (job id and QOS)", no, line)
        out[f[0]] = f[1]
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
    """(total CPUs, CPUs of the largest node, CPUs allocated now) from `SINFO_CPUS_ARGS`; the total
    is of the CPUs jobs may use: each node's less sinfo's "other" (a DOWN or DRAINED node's CPUs,
    counted free before 2026-11-28)."""
    seen: dict[str, tuple[int, int]] = {}
    usable: dict[str, int] = {}
    for line in text.splitlines():
        f = line.strip().split("|")
        if len(f) != 3:
            continue
        try:
            a, _i, _o, t = (int(x) for x in f[2].split("/"))
        except ValueError:
            raise ParseError(" ".join(SINFO_CPUS_ARGS), "CPUs not A/I/O/T", None, line) from None
        seen[f[0]] = (t, a)  # a node in several partitions is listed once per partition
        usable[f[0]] = max(0, t - _o)
    if not seen:
        raise ParseError(" ".join(SINFO_CPUS_ARGS), "no nodes listed")
    return sum(usable.values()), max(t for t, _ in seen.values()), sum(a for _, a in seen.values())


def age_params(pairs: Mapping[str, str]) -> tuple[float, float, float] | None:
    """(PriorityWeightAge, PriorityMaxAge s, PriorityCalcPeriod s) from `scontrol show config`'s
    pairs (Slurm's defaults: weight 0, 7 days, 5 minutes); None without an age weight."""
    try:
        w = float(pairs.get("PriorityWeightAge", "0") or 0)
        m = parse_duration(pairs.get("PriorityMaxAge", "7-00:00:00") or "7-00:00:00")
        p = parse_duration(pairs.get("PriorityCalcPeriod", "00:05:00") or "00:05:00")
    except ValueError:
        return None
    return (w, float(m or 7 * 86400), float(p or 300)) if w > 0 else None


def pending_row(source, jobs: Sequence[StartJob], job_id: str) -> str:
    """The row of the queue (`jobs`, SQUEUE_START_ARGS's) that is the pending job `job_id` names: its
    own row, else the one whose own id (%A) squeue gives that name (slurm.jobid: an array task
    123_4 of a pending 123_[1-5], a het component 123+1 by its own id); NotFoundError (exit 6) with
    its state when it is not pending, as `why` says it."""
    from fscontrol.errors import NotFoundError, SlurmCommandError
    from fscontrol.slurm import jobid

    pending = [j for j in jobs if j.state == "PENDING"]
    row = next((j.job_id for j in pending if j.job_id == job_id), None)
    if row is None:
        raw = jobid.resolve(source.run, job_id)
        row = next((j.job_id for j in pending if raw is not None and j.own_id == raw), None)
    if row is not None:
        return row
    try:
        state, reason, _, _ = jobid.job_state(source.run(jobid.state_args(job_id)).stdout, job_id)
    except SlurmCommandError:
        state = reason = None
    if state is None:
        raise NotFoundError(f"job {job_id} is not pending (or not visible to you)")
    raise NotFoundError(f"job {job_id} is {state}" + (f" ({reason})" if reason and reason != "None" else "") + ": it is not pending")


def read_prio_thresh(source, pairs: Mapping[str, str], jobs: Sequence[StartJob]) -> tuple[dict[str, int], str]:
    """({pending job id: its MinPrioThreshold}, a note) on `source`: read where slurmctld reads it
    (AccountingStorageEnforce with limits) and some QOS sets one: sacctmgr's QOS, then squeue's
    QOS of each pending job and each partition's QOS (acctpolicy.job_prio_thresh). Any of the three
    failed or garbled (slurmdbd out of reach from a login node) leaves the thresholds out, and the
    note says so; a job squeue's %q does not list (it left the queue in between) gets none."""
    from fscontrol.errors import SlurmCommandError
    from fscontrol.model.acctpolicy import enforces_limits, job_prio_thresh
    from fscontrol.slurm import parse
    from fscontrol.slurm.partitions import PARTITIONS_ARGS, parse_partitions

    if not enforces_limits(pairs.get("AccountingStorageEnforce", "")) or not any(j.state == "PENDING" for j in jobs):
        return {}, ""
    try:
        text = source.run(parse.QOS_ARGS).stdout
        thr = parse.parse_qos_min_prio(text)
        if not thr:
            return {}, ""
        over = parse.parse_qos_over_part(text)
        qos = parse_job_qos(source.run(SQUEUE_QOS_ARGS).stdout)
        part_qos = {p.name: p.qos for p in parse_partitions(source.run(PARTITIONS_ARGS).stdout)}
    except (SlurmCommandError, ParseError) as e:  # (a refinement of the estimate: left out, and said)
        return {}, f"QOS MinPrioThreshold not read ({e}): the estimate holds no job to one"
    out = {j.job_id: v for j in jobs if j.state == "PENDING" and j.job_id in qos
           and (v := job_prio_thresh(qos[j.job_id], j.partition, thr, over, part_qos))}
    below = sum(1 for j in jobs if j.job_id in out and j.priority < out[j.job_id])
    note = ("QOS MinPrioThreshold (" + ", ".join(f"{q} {v:,}" for q, v in sorted(thr.items()))
            + f"): {below:,} pending job(s) below their QOS's threshold now: backfill plans nothing for them and "
            "the main pass does not stop at them (slurmctld's rule with AccountingStorageEnforce=limits; the "
            "priority compared is squeue's of now, not as the age term grows)")
    return out, note
