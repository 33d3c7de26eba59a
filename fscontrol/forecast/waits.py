"""`fscontrol why`: why a pending job waits, beyond its priority: whose hold it is (the SFS gate's,
with its account against its target, or an admin's or the user's), where it stands in Slurm's
queue order (ties included), and which jobs of higher-tier partitions go first on its nodes (the
agent's padding job included).

Slurm's queue order, as slurmctld's main and backfill schedulers sort it (sort_job_queue2 in
src/slurmctld/job_scheduler.c; the same comparison in 22.05, 24.11 and 26.05, where 25.11 put a
job in expedited requeue (--requeue=expedite, after a node failure) before every other): a job that may preempt
the other first (only with preemption on), then a job with an advanced reservation, then the
partition's PriorityTier (higher first), then the job's priority (higher first), then the submit
time (earlier first), then the job id (lower first; an array task by its array's id, then its
task id).

Pure: the caller reads squeue, `scontrol show partition`, sinfo and the published snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from fscontrol.errors import ParseError
from fscontrol.records import HOLD_MARK, MARK_PREFIX

NICE_MARK = "fscontrol:nice:"
PADDING_NAME = "fscontrol-padding"  # actions.DUMMY_JOB_NAME

# squeue -O: AdminComment last (free text: a "|" inside is rejoined); the GRES a job asks for per node
# and per job (tres-per-node "gres/gpu:2" (26.05) or "gres:gpu:2" (22.05), tres-per-job; N/A when none)
QUEUE_FORMAT = ("JobID:0|,UserName:0|,Account:0|,Partition:0|,State:0|,NumCPUs:0|,PriorityLong:0|,Nice:0|,Reason:0|,"
                "SubmitTime:0|,Reservation:0|,tres-per-node:0|,tres-per-job:0|,admin_comment:0")
QUEUE_ARGS = ("squeue", "-a", "-h", "-t", "PD,R,CF", "-O", QUEUE_FORMAT)
PARTITION_ARGS = ("scontrol", "show", "partition", "-o")
NODES_ARGS = ("sinfo", "-h", "-N", "-o", "%N|%P")
TIE_RULE = ("Slurm orders the queue (sort_job_queue2 in slurmctld's job_scheduler.c, 22.05 to 26.05 alike) by: "
            "a job in expedited requeue first (--requeue=expedite, Slurm 25.11 and later), jobs that may preempt others first (only with preemption on), jobs in an advanced reservation first, the "
            "partition's PriorityTier (higher first), the priority (higher first), then the submit time (earlier first), "
            "then the job id (lower first; an array's tasks by the array's id, then the task id)")
_HOLD_REASONS = ("JobHeldUser", "JobHeldAdmin")


@dataclass(frozen=True, slots=True)
class WaitJob:
    """A job as `why` reads it (QUEUE_ARGS): its priority, nice, reason, hold and marks, for why it
    waits. forecast/startqueue.StartJob is the job as the start-time estimate reads it."""

    job_id: str
    user: str
    account: str
    partition: str
    state: str
    cpus: int
    priority: int
    nice: int
    reason: str
    submit: str  # Slurm's ISO time, as printed (sorts as time)
    reservation: str
    admin_comment: str
    gres: str = ""  # what it asks for beyond CPUs, e.g. "gres/gpu:2 per node" ("" for none)

    @property
    def held(self) -> bool:
        return self.reason in _HOLD_REASONS or self.reason.startswith("launch failed requeued held")


def _id_key(job_id: str) -> tuple[int, int]:
    head, _, task = job_id.partition("_")
    head = head.split("+", 1)[0]
    return (int(head) if head.isdigit() else 0, int(task) if task.isdigit() else -1)


def parse_queue(text: str, command: str = " ".join(QUEUE_ARGS)) -> list[WaitJob]:
    """The rows of QUEUE_ARGS (no header)."""
    n = QUEUE_FORMAT.count(",") + 1
    out = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        f = line.split("|")
        if len(f) < n:
            raise ParseError(command, f"expected {n} fields, got {len(f)}", no, line)
        f = [*f[: n - 1], "|".join(f[n - 1:])]
        v = [x.strip() for x in f]
        try:
            cpus, prio, nice = int(v[5] or 0), int(v[6] or 0), int(v[7] or 0)
        except ValueError:
            raise ParseError(command, "CPUs, priority or nice is not a number", no, line) from None
        empty = ("", "(null)", "N/A", "None")
        gres = [f"{x} per node" if i == 0 else f"{x} per job" for i, x in enumerate(v[11:13]) if x not in empty]
        out.append(WaitJob(v[0], v[1], v[2], v[3], v[4], cpus, prio, nice, v[8], v[9],
                        "" if v[10] in empty else v[10], "" if v[13] in empty else v[13], ", ".join(gres)))
    return out


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    tier: int
    state: str
    nodes: frozenset[str]
    qos: str = ""  # its QOS (QoS=; "" for N/A), whose limits apply to its jobs too


def parse_partitions(show_text: str, sinfo_text: str) -> dict[str, Partition]:
    """`scontrol show partition -o` (PriorityTier, State) and `sinfo -h -N -o %N|%P` (its nodes, one
    by one: no hostlist expressions to expand)."""
    nodes: dict[str, set[str]] = {}
    for line in sinfo_text.splitlines():
        node, _, part = line.partition("|")
        if node.strip() and part.strip():
            nodes.setdefault(part.strip().rstrip("*"), set()).add(node.strip())
    out = {}
    for line in show_text.splitlines():
        kv = dict(x.split("=", 1) for x in line.split() if "=" in x)
        name = kv.get("PartitionName")
        if not name:
            continue
        try:
            tier = int(kv.get("PriorityTier", "1"))
        except ValueError:
            tier = 1
        q = kv.get("QoS", "")
        out[name] = Partition(name, tier, kv.get("State", "UP"), frozenset(nodes.get(name, ())),
                              "" if q in ("N/A", "(null)") else q)
    return out


def order_key(j: WaitJob, tier: int) -> tuple:
    """Slurm's queue order (sort_job_queue2, without preemption): smaller comes first."""
    return (0 if j.reservation else 1, -tier, -j.priority, j.submit, _id_key(j.job_id))


# the kinds of wait (reasons.plain_reason's categories) of a job that cannot start now: slurmctld's
# schedulers do not walk it (build_job_queue leaves out held jobs and those whose dependency or begin
# time is not met) or pass it by (an association/QOS/partition limit, a down partition, a reservation
# not yet active), so it is not ahead of anyone
INELIGIBLE = frozenset({"dependency", "begin_time", "never", "user_hold", "admin_hold", "limit", "partition",
                        "reservation"})


def eligible(j: WaitJob) -> bool:
    """A pending job that the scheduler may start now (not held, not waiting on a dependency, a begin
    time, a limit, its partition or its reservation)."""
    from fscontrol.forecast.reasons import plain_reason

    return not j.held and plain_reason(j.reason)[0] not in INELIGIBLE


def queue_place(job: WaitJob, queue: Sequence[WaitJob], partitions: Mapping[str, Partition]) -> dict:
    """Where the job stands among the pending jobs of its partition that may start now, in Slurm's
    order: how many have a higher priority, how many the same (and which of those win the tie), its
    place; and how many pending jobs that cannot start now (eligible() is false) were set aside."""
    tier = partitions[job.partition].tier if job.partition in partitions else 1
    pending = [j for j in queue if j.state in ("PENDING", "PD") and j.partition == job.partition
               and j.job_id != job.job_id]
    rivals = [j for j in pending if eligible(j)]
    mine = order_key(job, tier)
    higher = [j for j in rivals if j.priority > job.priority]
    tied = [j for j in rivals if j.priority == job.priority]
    tied_ahead = [j for j in tied if order_key(j, tier) < mine]
    before = [j for j in rivals if order_key(j, tier) < mine]
    return {
        "partition": job.partition,
        "partition_tier": tier,
        "pending": len(rivals),
        "ineligible": len(pending) - len(rivals),
        "eligible": eligible(job),
        "higher_priority": len(higher),
        "tied": len(tied),
        "tied_ahead": len(tied_ahead),
        "tied_behind": len(tied) - len(tied_ahead),
        "tied_ahead_ids": [j.job_id for j in sorted(tied_ahead, key=lambda j: order_key(j, tier))][:10],
        "place": len(before) + 1,
        "in_reservation_ahead": sum(1 for j in before if j.reservation and not job.reservation),
        "tie_rule": TIE_RULE,
    }


def higher_tiers(job: WaitJob, queue: Sequence[WaitJob], partitions: Mapping[str, Partition],
                 dummy: tuple[str, str] | None, names: Mapping[str, str] | None = None) -> dict | None:
    """The partitions with a higher PriorityTier that share a node with the job's partition, their
    jobs, and the agent's padding job among them (by the published dummy association, else by its
    job name). None when there is no such partition."""
    own = partitions.get(job.partition)
    if own is None:
        return None
    names = names or {}
    out, padding = [], None
    for p in sorted(partitions.values(), key=lambda p: (-p.tier, p.name)):
        shared = p.nodes & own.nodes
        if p.tier <= own.tier or not shared:
            continue
        jobs = [j for j in queue if j.partition == p.name]
        pend = [j for j in jobs if j.state in ("PENDING", "PD") and eligible(j)]
        run = [j for j in jobs if j.state not in ("PENDING", "PD")]
        if not pend and not run:
            continue  # nothing of it on the nodes now: it takes nothing from this job
        out.append({"partition": p.name, "tier": p.tier, "shared_nodes": sorted(shared), "pending": len(pend),
                    "running": len(run), "running_cpus": sum(j.cpus for j in run)})
        for j in pend + run:
            if padding is None and ((dummy is not None and (j.account, j.user) == dummy) or names.get(j.job_id) == PADDING_NAME):
                padding = {"job_id": j.job_id, "state": j.state, "partition": p.name, "tier": p.tier, "cpus": j.cpus,
                           "reservation": j.reservation or None, "user": j.user}
    if not out:
        return None
    if padding is not None:
        padding["advice"] = padding_advice(padding, job.partition)
    return {"partition_tier": own.tier, "partitions": out, "padding": padding}


def padding_advice(p: Mapping, partition: str) -> str:
    """What the agent's padding job does to a job of `partition`, and what the admin's
    padding_reservation (docs/control.md) would change."""
    if p["state"] in ("PENDING", "PD"):
        if p["reservation"]:
            return (f"it waits for its reservation {p['reservation']}: it can start only on the core kept there, so it takes "
                    "no core this job could get")
        return (f"it waits for a free core, and Slurm gives it the next one that frees on {partition}'s nodes before any job "
                f"of {partition}, whatever their priority (its partition's PriorityTier {p['tier']} is higher). With the admin's padding_reservation "
                "(a 1-core reservation for the padding user, docs/control.md) it would start at once on the core kept for it "
                "and never go ahead of this job again; that core would then never be this job's")
    if p["reservation"]:
        return (f"it runs in reservation {p['reservation']}, on a core kept aside for it (the admin's padding_reservation): "
                "it takes nothing this job could get when cores free")
    return (f"it runs on {p['cpus']} CPU outside any reservation: that core is taken either way, so the admin's "
            "padding_reservation would not shorten this wait; it would only keep the padding job from waiting ahead of "
            f"{partition}'s jobs when the agent submits it again (each day, or after it ends)")


def hold_of(job: WaitJob, gate_pub: Mapping | None, token: str | None, now: float) -> dict | None:
    """Whose hold or demotion it is, and for the SFS gate's: the account against its target from
    the published snapshot (`token`: the job's account's key there, privacy.run_key), and when the
    gate lifts it. None when the job is neither held nor demoted."""
    mark = job.admin_comment
    ours_hold = mark == HOLD_MARK and job.reason == "JobHeldAdmin"
    ours_nice = mark.startswith(NICE_MARK) and job.nice != 0 and not job.held
    if not (job.held or ours_nice):
        return None
    if not (ours_hold or ours_nice):
        by = "user" if job.reason == "JobHeldUser" else "admin"
        how = ("its owner held it (scontrol hold): `scontrol release " + job.job_id + "` lets it go" if by == "user" else
               "an administrator or operator held it (Priority=0): only they can release it; ask them why")
        out: dict = {"by": by, "kind": "hold", "mark": mark or None, "how": how, "gate": None}
        if mark.startswith(MARK_PREFIX):
            out["how"] += " (it carries fscontrol's mark, but the hold is not the agent's any more: the agent will not release it)"
        return out
    kind = "hold" if ours_hold else "nice"
    entry = (gate_pub or {}).get("accounts", {}).get(token) if token else None
    g = None
    if gate_pub and entry:
        g = {"account": entry.get("allocation_on") or job.account, "via_parent": bool(entry.get("allocation_on")),
             "occupancy": entry["occupancy"], "target": entry["target"], "unit": gate_pub.get("unit", "cpus"),
             "over_by": entry["occupancy"] - entry["target"], "state": entry["state"],
             "as_of": gate_pub.get("as_of"), "decided_at": gate_pub.get("decided_at"), "every_s": gate_pub.get("every_s"),
             "next_at": gate_pub.get("next_at"), "waiting_at_or_under": gate_pub.get("waiting_at_or_under")}
    what = "holds" if kind == "hold" else f"demotes (Nice {job.nice}, taken off its priority)"
    lifted = (f"the gate {'releases' if kind == 'hold' else 'restores'} it at its first tick after the account's running "
              "jobs are back at or under its target with room left for its waiting jobs and its held ones before this one "
              "(in priority order), or as soon as no account at or under its target has jobs waiting (a hold must not "
              "idle nodes)")
    if g is not None:
        if g["waiting_at_or_under"] is not None:
            lifted += f"; at its last decision {g['waiting_at_or_under']} such account(s) had jobs waiting"
        if g["next_at"] is not None:
            lifted += (f"; it runs every {_dur(g['every_s'])} (schedule.gate), the next time at the earliest "
                       f"{_when(g['next_at'], now)}")
        if g["over_by"] > 0:
            lifted += f"; {g['account']}'s running jobs must first come down by at least {_num(g['over_by'])} {g['unit']}"
    return {"by": "fscontrol", "kind": kind, "mark": mark,
            "how": f"fscontrol's fair-share gate (the agent's SFS scheduler) {what} it: its account is over its target "
                   "share of the machine while accounts at or under theirs have jobs waiting",
            "gate": g, "lifted_when": lifted,
            "gate_unknown": None if g is not None else (
                "the agent's latest gate decision is not published here (no published snapshot with the gate's state): "
                "ask your admin" if not gate_pub or gate_pub.get("accounts_published", True) else
                "the gate's numbers for your account are not published to you (PrivateData hides jobs or accounts)")}


def _num(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{x:.1f}"


def _dur(s: float | None) -> str:
    if s is None:
        return "?"
    return f"{s / 60:g} min" if s < 3600 else f"{s / 3600:g} h"


def _when(t: float, now: float) -> str:
    at = datetime.fromtimestamp(t, tz=timezone.utc).strftime("%H:%M:%S UTC")
    d = t - now
    return f"at {at} (in {d / 60:.0f} min)" if d >= 60 else (f"at {at} (in {d:.0f} s)" if d >= 0 else
                                                              f"due since {at} (the agent runs it late or not at all)")


def _ago(t: float | None, now: float) -> str:
    if t is None:
        return "?"
    at = datetime.fromtimestamp(t, tz=timezone.utc).strftime("%H:%M:%S UTC")
    d = max(0.0, now - t)
    return f"{at} ({d / 60:.0f} min ago)" if d >= 60 else f"{at} ({d:.0f} s ago)"


def format_waits(d: Mapping, now: float) -> list[str]:
    """The lines `fscontrol why` prints about the wait (before the priority's breakdown)."""
    h = d.get("hold")
    out = [f"why it waits ({d['reason'] or 'None'}): {h['how'] if h else d['reason_text'].replace('JOBID', d['job_id'])}"]
    if h:
        g = h.get("gate")
        if g:
            via = " (the allocation is on this parent of your account)" if g["via_parent"] else ""
            out.append(f"  account {g['account']}{via}: {_num(g['occupancy'])} {g['unit']} running against a target of "
                       f"{_num(g['target'])} ({'over by ' + _num(g['over_by']) if g['over_by'] > 0 else g['state']}), "
                       f"as of {_ago(g['as_of'], now)}")
        elif h.get("gate_unknown"):
            out.append(f"  {h['gate_unknown']}")
        if h.get("lifted_when"):
            out.append(f"  when it is lifted: {h['lifted_when']}")
    o = d.get("order")
    if o:
        line = ("" if o.get("eligible", True) else "it cannot start now itself (above); once it may, ") + (
                f"its place: {o['place']} of {o['pending'] + 1} pending job(s) in {o['partition']} that may start now: "
                f"{o['higher_priority']} with a higher priority")
        if o["tied"]:
            line += (f"; {o['tied']} with the same priority ({d['priority']:,.0f}): a tie, which Slurm breaks by submit "
                     f"time, then job id: {o['tied_ahead']} of them go first, this job before the other {o['tied_behind']}")
        out.append(line)
        if o.get("ineligible"):
            out.append(f"  ({o['ineligible']} other pending job(s) in {o['partition']} cannot start now - held, or waiting "
                       "for a dependency, a begin time, a limit, the partition or a reservation - and are set aside: "
                       "Slurm's scheduler passes them by, so they are not ahead of this job)")
        if o.get("only_own_jobs_seen"):
            out.append("  (PrivateData=jobs: squeue shows you your own jobs alone, so only they are counted here)")
        if o.get("higher_tier_ahead"):
            out.append(f"  and before all of them: {o['higher_tier_ahead']} pending job(s) of higher-tier partitions on its nodes (below)")
        if o["tied"]:
            out.append(f"  ({TIE_RULE})")
    t = d.get("higher_tier")
    if t:
        for p in t["partitions"]:
            out.append(f"higher-tier partition {p['partition']} (PriorityTier {p['tier']} > {t['partition_tier']}) shares "
                       f"{', '.join(p['shared_nodes'][:5])}{' ...' if len(p['shared_nodes']) > 5 else ''} with "
                       f"{d['partition']}: its {p['pending']} pending job(s) are scheduled before any job of "
                       f"{d['partition']}, whatever the priority; {p['running']} running hold {p['running_cpus']} CPU(s)")
        pad = t.get("padding")
        if pad:
            out.append(f"  the agent's padding job {pad['job_id']} ({pad['user']}, {pad['state']}, partition "
                       f"{pad['partition']}) is one of them: {pad['advice']}")
    return out
