"""What Slurm's limits leave a user to run: one read per tick of the associations' and QOS's TRES
and job limits (sacctmgr), the TRES-minutes each association has used (sshare's GrpTRESRaw and
TRESRunMins) and the jobs each one has in the queue (squeue), for "how much can I still run?".

A separate read from the snapshot's own sshare/squeue (fscontrol.agent.pipeline reads this after
it): a failing limits read never fails the tick. Pure parsers plus `read(run)`, which runs the
four commands with the source's `run` (argument lists, timeouts).

What each figure is, in Slurm's terms (checked on 22.05, 24.11 and 26.05 by
tests/test_integration_limits.py):
* GrpTRESMins / MaxTRESMins / GrpTRESRunMins: TRES-minutes (cpu=600000 is 10,000 CPU-hours);
  GrpTRESMins is held against the association's decayed usage, sshare's GrpTRESRaw (minutes);
  GrpTRESRunMins against the minutes its running jobs have still to run (sshare's TRESRunMins);
  MaxTRESMins is per job (nothing is "used" of it);
* GrpTRES: TRES in use at once by the running jobs of the association and everything below it;
* GrpJobs / MaxJobs: running jobs (the subtree's / the association's own);
  MaxSubmitJobs: running and pending jobs;
* a QOS's MaxJobsPU / MaxSubmitPU count one user's jobs in that QOS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fscontrol.errors import ParseError
from fscontrol.slurm import parse

ASSOC_FIELDS = ("Cluster", "Account", "User", "ParentName", "GrpTRESMins", "GrpTRESRunMins", "MaxTRESMins",
                "GrpTRES", "GrpJobs", "MaxJobs", "MaxSubmitJobs", "QOS")
ASSOC_ARGS = ("sacctmgr", "-P", "show", "assoc", "format=" + ",".join(ASSOC_FIELDS))
QOS_FIELDS = ("Name", "GrpTRESMins", "GrpTRESRunMins", "MaxTRESMins", "GrpTRES", "GrpJobs", "MaxJobsPU",
              "MaxSubmitPU")
QOS_ARGS = ("sacctmgr", "-P", "show", "qos", "format=" + ",".join(QOS_FIELDS))
SSHARE_ARGS = ("sshare", "-a", "-P", "-o", "Account,User,GrpTRESRaw,TRESRunMins")
SQUEUE_ARGS = ("squeue", "-a", "-h", "-t", "PD,R,S,CG,CF", "-o", "%a|%u|%q|%T|%C|%i|%r")

TRES_LIMITS = ("GrpTRESMins", "GrpTRESRunMins", "MaxTRESMins", "GrpTRES")
JOB_LIMITS = ("GrpJobs", "MaxJobs", "MaxSubmitJobs")
QOS_JOB_LIMITS = ("GrpJobs", "MaxJobsPU", "MaxSubmitPU")
# read where the header has them: per user / account (QOS_LIMITS_ARGS, model/acctpolicy.py's limits)
QOS_OPT_TRES = ("MaxTRESPU", "MaxTRESPA")
QOS_OPT_JOBS = ("MaxJobsPA",)
# (and Flags: OverPartQOS, which puts a QOS's limits before its partition's QOS's: model/acctpolicy.qos_order)
QOS_LIMITS_ARGS = ("sacctmgr", "-P", "show", "qos", "format=" + ",".join((*QOS_FIELDS, *QOS_OPT_TRES, *QOS_OPT_JOBS, "Flags")))
HEADER_ALIASES = {"MaxSubmit": "MaxSubmitJobs"}  # sacctmgr prints format=MaxSubmitJobs under "MaxSubmit"
_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)$")
_MEM_MB = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 ** 2, "P": 1024 ** 3}


@dataclass(frozen=True, slots=True)
class AssocLimits:
    """One association's (user "" for an account) or QOS's limits, as sacctmgr prints them."""

    account: str  # the QOS's name for a QOS
    user: str
    parent: str
    tres: dict  # limit name -> {tres: value} (GrpTRESMins etc.)
    jobs: dict  # limit name -> count (GrpJobs, MaxJobs, MaxSubmitJobs)
    qos: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LimitsRead:
    """One tick's read: the limits and what is used of them."""

    assocs: tuple[AssocLimits, ...]
    qos: tuple[AssocLimits, ...]
    used_mins: dict  # (account, user) -> {tres: decayed TRES-minutes} (sshare GrpTRESRaw)
    run_mins: dict  # (account, user) -> {tres: TRES-minutes still to run} (sshare TRESRunMins)
    jobs: tuple  # (account, user, qos, running: bool, cpus, job id, reason)
    read_at: float


def parse_tres(text: str, command: str = "", no: int = 0, line: str = "") -> dict[str, float]:
    """"cpu=600000,mem=10G,gres/gpu=4" -> {tres: number} (memory in MB); "" -> {}."""
    out: dict[str, float] = {}
    for part in text.strip().split(","):
        if not part.strip():
            continue
        name, eq, value = part.strip().partition("=")
        m = _MEM.match(value.strip())
        if not eq or not name or not m:
            raise ParseError(command, f"not a TRES list: {text.strip()!r}", no, line)
        out[name.strip()] = float(m.group(1)) * _MEM_MB[m.group(2)]
    return out


def _count(value: str, command: str, col: str, no: int, line: str) -> int | None:
    return parse._num(value, int, command, col, no, line, allow_empty=True, minimum=0)


def parse_assoc_limits(text: str, cluster: str | None = None, command: str = " ".join(ASSOC_ARGS)) -> tuple[AssocLimits, ...]:
    """`sacctmgr -P show assoc format=...`: every association of `cluster` (all when None)."""
    header, rows = parse._table(text, command, ("Account", "User", *TRES_LIMITS, "GrpJobs", "MaxJobs"))
    ix = {HEADER_ALIASES.get(h, h): i for i, h in enumerate(header)}
    if "MaxSubmitJobs" not in ix:
        raise ParseError(command, "missing column MaxSubmitJobs (MaxSubmit) in header", 1, "|".join(header))
    out = []
    for no, f in rows:
        line = "|".join(f)
        if cluster is not None and "Cluster" in ix and f[ix["Cluster"]].strip() != cluster:
            continue
        tres = {k: t for k in TRES_LIMITS if (t := parse_tres(f[ix[k]], command, no, line))}
        jobs = {k: n for k in JOB_LIMITS if (n := _count(f[ix[k]], command, k, no, line)) is not None}
        qos = tuple(q.strip() for q in f[ix["QOS"]].split(",") if q.strip()) if "QOS" in ix else ()
        parent = f[ix["ParentName"]].strip() if "ParentName" in ix else ""
        out.append(AssocLimits(f[ix["Account"]].strip(), f[ix["User"]].strip(), parent, tres, jobs, qos))
    return tuple(out)


def parse_qos_limits(text: str, command: str = " ".join(QOS_ARGS)) -> tuple[AssocLimits, ...]:
    """`sacctmgr -P show qos format=...`: each QOS's limits (MaxJobsPU/MaxSubmitPU: per user; MaxTRESPU,
    MaxJobsPA and MaxTRESPA where the format asks for them)."""
    header, rows = parse._table(text, command, ("Name", *TRES_LIMITS, *QOS_JOB_LIMITS))
    ix = {h: i for i, h in enumerate(header)}
    out = []
    for no, f in rows:
        line = "|".join(f)
        tres = {k: t for k in TRES_LIMITS + QOS_OPT_TRES if k in ix and (t := parse_tres(f[ix[k]], command, no, line))}
        jobs = {k: n for k in QOS_JOB_LIMITS + QOS_OPT_JOBS
                if k in ix and (n := _count(f[ix[k]], command, k, no, line)) is not None}
        out.append(AssocLimits(f[ix["Name"]].strip(), "", "", tres, jobs))
    return tuple(out)


def parse_tres_usage(text: str, command: str = " ".join(SSHARE_ARGS)) -> tuple[dict, dict]:
    """`sshare -a -P -o Account,User,GrpTRESRaw,TRESRunMins`: ((account, user) -> {tres: minutes
    used, decayed}, (account, user) -> {tres: minutes still to run})."""
    header, rows = parse._table(text, command, ("Account", "User", "GrpTRESRaw", "TRESRunMins"))
    ix = {h: i for i, h in enumerate(header)}
    used, run = {}, {}
    for no, f in rows:
        line = "|".join(f)
        key = (f[ix["Account"]].strip(), f[ix["User"]].strip())
        used[key] = parse_tres(f[ix["GrpTRESRaw"]], command, no, line)
        run[key] = parse_tres(f[ix["TRESRunMins"]], command, no, line)
    return used, run


def parse_queue_counts(text: str, command: str = " ".join(SQUEUE_ARGS)) -> tuple:
    """`squeue -h -o %a|%u|%q|%T|%C|%i|%r`: (account, user, qos, running, cpus, job id, reason) per job."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("CLUSTER: "):
            continue
        f = line.split("|")
        if len(f) != 7:
            raise ParseError(command, "expected 7 fields", no, line)
        cpus = parse._num(f[4], int, command, "CPUs", no, line, minimum=0)
        out.append((f[0].strip(), f[1].strip(), f[2].strip(), f[3].strip() != "PENDING", cpus, f[5].strip(),
                    f[6].strip()))
    return tuple(out)


def read(run, cluster: str | None = None) -> LimitsRead:
    """The four commands, run with `run` (LiveSlurm.run: -M where it applies, timeouts), parsed."""
    import time

    assoc_out = run(ASSOC_ARGS)
    qos_out = run(QOS_ARGS)
    share_out = run(SSHARE_ARGS)
    queue_out = run(SQUEUE_ARGS)
    used, left = parse_tres_usage(share_out.stdout)
    return LimitsRead(parse_assoc_limits(assoc_out.stdout, cluster), parse_qos_limits(qos_out.stdout), used, left,
                      parse_queue_counts(queue_out.stdout), getattr(share_out, "finished_at", time.time()))
