"""Slurm's pending reasons (squeue's %r) in plain words, for `fscontrol why`.

The names are slurmctld's job_state_reason strings (slurm.h / src/common/slurm_protocol_defs.c,
the same in 22.05 and 24.11; src/common/job_state_reason.c from 25.05 on: 25.05 dropped FrontEndDown,
25.11 added NvidiaImexChannels). Slurm 26.05 also puts the scheduler's topology error in the reason
of a job that waits for Resources ("No suitable topology unit found", ...: squeue prints a job's
state_desc where it has one), told here as a resources wait with Slurm's words kept. The association and QOS limits (AssocGrpCpuLimit,
QOSMaxJobsPerUserLimit, ... several dozen of them) are read from their names: who sets the limit
(your association or your QOS), over whom it counts (Grp: the whole association or QOS together;
Max: per job or per user) and which resource. A reason not known here is passed on verbatim.

Pure: a table and string work.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# category: what kind of wait it is (the JSON's "category"; scripts branch on it)
#   priority   - other jobs go first          resources - next, but the resources are busy
#   dependency - waits for other jobs         begin_time - its start time has not come
#   user_hold / admin_hold / fscontrol_hold   - held (why.py tells whose hold it is)
#   limit      - an association/QOS/partition limit     partition - the partition is not usable
#   nodes      - the nodes it needs are down, drained or reserved   reservation - an advanced reservation
#   never      - it will never start as it is              other / unknown
REASONS: dict[str, tuple[str, str]] = {
    "None": ("other", "the scheduler has not looked at it yet (it was submitted since its last pass): wait a minute"),
    "Priority": ("priority", "jobs that come before it in the queue (a higher priority, or an equal one that wins "
                 "the tie) are served first; it starts when they have started or when backfill finds it a gap"),
    "Resources": ("resources", "it is next in line, but the CPUs, nodes or memory it asks for are not free yet: it "
                  "starts as soon as running jobs end and free them"),
    "Dependency": ("dependency", "it waits for the jobs it depends on (--dependency) to reach the state it asks for"),
    "DependencyNeverSatisfied": ("never", "a job it depends on ended in a way that can never satisfy its dependency: "
                                 "it will never start; cancel it (scancel) or change the dependency (scontrol update)"),
    "BeginTime": ("begin_time", "its start time (--begin) has not come yet"),
    "JobHeldUser": ("user_hold", "held by its owner (scontrol hold): `scontrol release JOBID` lets it go"),
    "JobHeldAdmin": ("admin_hold", "held by an administrator or operator: only they can release it"),
    "PartitionDown": ("partition", "its partition is DOWN: no job of it starts until an administrator brings it up"),
    "PartitionInactive": ("partition", "its partition is INACTIVE: it accepts no job start until it is set UP"),
    "PartitionNodeLimit": ("limit", "it asks for more or fewer nodes than its partition allows (MinNodes/MaxNodes)"),
    "PartitionTimeLimit": ("limit", "its time limit is longer than its partition's MaxTime: it will not start there"),
    "PartitionConfig": ("limit", "it asks for something its partition does not allow (e.g. more CPUs or memory than "
                        "its nodes have, or a QOS/account the partition denies)"),
    "ReqNodeNotAvail": ("nodes", "a node it needs is down, drained, or reserved (a maintenance reservation or a job "
                        "of a higher-priority partition)"),
    "NodeDown": ("nodes", "a node it needs is down"),
    "BadConstraints": ("never", "its constraints (--constraint, --nodelist, sizes) can never be met by this cluster"),
    "Reservation": ("reservation", "it waits for its advanced reservation (--reservation) to become active"),
    "Licenses": ("resources", "the licenses it asks for (--licenses) are all in use"),
    "JobArrayTaskLimit": ("limit", "its job array already runs as many tasks at once as it allows (--array=...%N)"),
    "InvalidAccount": ("never", "its account is not valid (or you are not in it): it will not start"),
    "InvalidQOS": ("never", "its QOS is not valid for it: it will not start"),
    "QOSUsageThreshold": ("limit", "its QOS's usage threshold (UsageThreshold) is passed: it waits for usage to decay"),
    "QOSJobLimit": ("limit", "its QOS's job limit is reached"),
    "QOSResourceLimit": ("limit", "its QOS's resource limit is reached"),
    "QOSTimeLimit": ("limit", "its QOS's time limit is reached"),
    "FrontEndDown": ("nodes", "no front end node is available"),
    "BurstBufferResources": ("resources", "its burst buffer space is not available yet"),
    "BurstBufferStageIn": ("other", "its burst buffer is being staged in"),
    "Cleaning": ("other", "it was requeued and Slurm is still cleaning up its previous run"),
    "Prolog": ("other", "its prolog is running: it is about to start"),
    "Requeued": ("other", "it was requeued and waits to be scheduled again"),
    "launch failed requeued held": ("admin_hold", "its launch failed; Slurm requeued it held: an administrator must release it"),
    "JobHoldMaxRequeue": ("admin_hold", "it was requeued more often than MaxBatchRequeue allows and is held"),
    "MaxRequeueExceeded": ("admin_hold", "it was requeued more often than allowed and is held"),
    "DeadLine": ("never", "it can no longer finish before its --deadline"),
    "SchedDefer": ("other", "the scheduler defers it (SchedulerParameters=defer): the next scheduling pass looks at it"),
    "OutOfMemory": ("other", "its last run ran out of memory"),
    "SystemFailure": ("other", "a system failure stopped its last run"),
    "WaitingForScheduling": ("other", "the scheduler has not looked at it yet"),
    # Slurm 25.11 (switch/nvidia_imex)
    "NvidiaImexChannels": ("resources", "the NVIDIA IMEX channels it needs (switch/nvidia_imex) are all in use: it "
                           "starts when a running job frees one"),
}

# Slurm 26.05: a job whose resources the topology plugin cannot place waits with reason Resources,
# and squeue prints the topology's error instead (slurm_strerror of ESLURM_TOPO_*, slurm_errno.c)
TOPOLOGY_REASONS = (
    "Required nodes lack available resources", "Required nodes do not fit topology", "No suitable topology unit found",
    "No suitable topology unit found for segment", "Insufficient resources in topology unit",
    "Weight-based selection could not satisfy request within topology unit",
    "Exceeded maximum node limit during topology allocation", "No available nodes in topology",
)

_WHO = {"Assoc": "your association (your user in this account)", "QOS": "the job's QOS (or its partition's QOS)"}
# squeue's AssocGrp* reasons do not say which level of the tree set the limit: a Grp* limit set on
# an account counts the jobs of all its users (and sub-accounts) together
_WHO_GRP = {"Assoc": "an association limit of your user or of an account above it (Grp* limits count the whole "
                     "account's jobs)", "QOS": "the job's QOS (or its partition's QOS)"}
_BASE = (  # longest first
    ("SubmitJobs", "jobs submitted (pending and running)"), ("SubmitJob", "jobs submitted (pending and running)"),
    ("WallDuration", "wall time"), ("Billing", "billing units (TRESBillingWeights)"), ("License", "licenses"),
    ("Energy", "energy"), ("Jobs", "jobs running"), ("Job", "jobs running"), ("GRES", "generic resources (GPUs, ...)"),
    ("Gres", "generic resources (GPUs, ...)"), ("Node", "nodes"), ("Wall", "wall time"), ("Cpu", "CPUs"),
    ("CPU", "CPUs"), ("Mem", "memory"), ("BB", "burst buffer"), ("Unk", "an unknown resource"),
)
_LIMIT = re.compile(r"^(Assoc|QOS)(Grp|Max|Min)(.+?)(PerJob|PerUser|PerAccount|PerNode)?(Limit|NotSatisfied)?$")


def _resource(res: str) -> str | None:
    """'CPURunMinutes' -> 'CPU-minutes of the running jobs (CPUs x their remaining time)'."""
    for key, words in _BASE:
        if res.startswith(key):
            tail = res[len(key):]
            if tail == "":
                return words + ("" if key.startswith(("Job", "SubmitJob", "Wall")) else " in use")
            if tail in ("RunMinutes", "RunMins"):
                return f"{words} x minutes of the running jobs (what they hold for their remaining time)"
            if tail in ("Minutes", "Mins"):
                return f"{words} x minutes used (decaying usage)"
            return None
    return None


def _limit(reason: str, running: Mapping[str, int | None] | None = None) -> str | None:
    """AssocGrpCpuLimit -> words; None when the name does not read as a limit. `running`: the
    running jobs that count against a Max* limit, as the caller sees them ("assoc": the user's in
    the job's account, "user": the user's anywhere, "account": the account's; None when not known)."""
    m = _LIMIT.match(reason)
    if not m:
        return None
    who, kind, res, per, end = m.groups()
    what = _resource(res)
    if what is None:
        return None
    if kind == "Max":
        what = what.replace(" used (decaying usage)", " (the size times the time limit)")
    scope = {"PerJob": "for one job", "PerUser": "for one user", "PerAccount": "for one account",
             "PerNode": "per node", None: ""}[per]
    if end == "NotSatisfied" or kind == "Min":
        return f"{_WHO[who]} sets a minimum of {what}{' ' + scope if scope else ''} that this job does not reach: it will not start as it is"
    if kind == "Grp":
        return (f"{_WHO_GRP[who]}: a limit on the {what} of all the jobs under it together, and it is reached: this job "
                "starts when the group's other jobs have ended"
                + (" or the usage has decayed" if "Minutes" in res and "Run" not in res else ""))
    if per in ("PerJob", "PerNode"):
        return f"{_WHO[who]} caps the {what} {scope}: this job asks for more than the cap, so it will not start as it is"
    head = f"{_WHO[who]} caps the {what}{' ' + scope if scope else ''}"
    counted = _counted(who, per, running)
    if counted == 0 and not res.startswith(("SubmitJob", "Wall")) and "Minutes" not in res and "Mins" not in res:
        if res.startswith("Job"):
            return (f"{head}, and the limit is 0: none of your jobs runs under it, yet it is reached, so this job "
                    "will not start as it is (it can never start under it until an administrator raises it)")
        return (f"{head}, and this job alone asks for more than it (none of your jobs runs under it, yet it is "
                "reached; the limit may be 0): it will not start as it is (until an administrator raises it, or "
                "you ask for less)")
    if counted is None:
        return (f"{head}: the cap is reached; it starts when enough of the running jobs that count against it end "
                "(if the limit is 0, it can never start under it until an administrator raises it)")
    return f"{head}: the cap is reached; it starts when enough of your {counted} running job(s) under it end"


def _counted(who: str, per: str | None, running: Mapping[str, int | None] | None) -> int | None:
    """The running jobs that count against a Max* limit of `who` over `per` (None: not known)."""
    if not running:
        return None
    if per == "PerAccount":
        return running.get("account")
    if who == "Assoc":  # the association is the user in the job's account
        return running.get("assoc")
    return running.get("user") if per == "PerUser" else None


def resources_with_gres(gres: str) -> str:
    """Reason Resources for a job that asks for GRES (`gres`: what squeue's tres-per-node/-job
    print, e.g. "gres/gpu:2 per node"): the GPUs are what it most likely waits for."""
    what = "GPUs" if "gpu" in gres.lower() else "generic resources (GRES)"
    return (f"it is next in line, but the {what} it asks for ({gres}), or its CPUs, nodes or memory, are not free yet: "
            "it starts as soon as running jobs end and free them (`scontrol show node` shows each node's GRES in use)")


def plain_reason(reason: str | None, running: Mapping[str, int | None] | None = None) -> tuple[str, str]:
    """(category, plain words) for squeue's reason; unknown reasons verbatim with category 'unknown'.
    `running`: see _limit (the Max* limits reached with none of the jobs they count running are
    told as never starting)."""
    r = (reason or "None").strip()
    if r in REASONS:
        return REASONS[r]
    head = r.split(",", 1)[0].strip()  # "ReqNodeNotAvail, UnavailableNodes:n1" / "ReqNodeNotAvail, Reserved for maintenance"
    if head in REASONS:
        cat, text = REASONS[head]
        rest = r[len(head):].lstrip(", ").strip()
        return cat, text + (f" ({rest})" if rest else "")
    if r in TOPOLOGY_REASONS:
        return "resources", (f"it waits for resources, and the cluster's topology cannot place it yet (Slurm: {r}): it "
                             "starts when running jobs end and free a place that fits the topology")
    if r.startswith("Nodes_required_for_job_are_DOWN") or r.startswith("Nodes required for job are DOWN"):
        return "nodes", ("the nodes it needs are down, drained, or reserved for jobs of a higher-priority partition "
                         "(PriorityTier), which Slurm always schedules first")
    words = _limit(r, running)
    if words is not None:
        return ("never" if "will not start as it is" in words else "limit"), words
    return "unknown", f"Slurm says {r!r} (a reason fscontrol has no words for: see `man squeue`, JOB REASON CODES)"
