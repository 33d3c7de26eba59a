"""`fscontrol why JOBID`: why a pending job waits, from sprio's breakdown, in plain words.

The question users ask most about priority. slurmctld's multifactor priority is a sum:
priority = site + age + association + fair-share + job size + partition + QOS + TRES - nice,
each term its factor (0..1) times its PriorityWeight*; sprio prints both for every pending,
eligible, non-held job. This module turns one job's line into: what each term gives, which
dominates, what would change each (age grows to its cap at PriorityMaxAge; fair-share is the
user's classic F or Fair Tree rank; size, partition and QOS are chosen at submission), and how
many pending jobs in the same partition rank above it.

Pure: no Slurm, no clock (the caller runs sprio, squeue and scontrol).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fscontrol.errors import FscontrolError, NotFoundError, ParseError
from fscontrol.slurm.assocmgr import MAX_LEVELS as _MAX_LEVELS
from fscontrol.slurm import jobid, privatedata
from fscontrol.slurm.jobid import job_state  # noqa: F401 (why.job_state; start uses it too)
from fscontrol.slurm.assocmgr import assoc_mgr_args, limit_field, limit_values, parse_assoc_mgr  # noqa: F401 (why.*)
from fscontrol.forecast.startqueue import MAX_JOB_ID, is_job_id  # noqa: F401  (why.is_job_id: its callers)

# sprio's format letters common to Slurm 22.05 .. 24.11 (24.11 adds %o account and %n QOS name)
SPRIO_WHY_FORMAT = "%i|%u|%r|%Y|%S|%A|%a|%B|%b|%F|%f|%J|%j|%P|%p|%Q|%q|%N"
TERMS = (  # (name in our output, sprio weighted column index, normalized column index, weight key)
    ("age", 5, 6, "age"),
    ("association", 7, 8, "assoc"),
    ("fair-share", 9, 10, "fairshare"),
    ("job size", 11, 12, "jobsize"),
    ("partition", 13, 14, "partition"),
    ("QOS", 15, 16, "qos"),
)


def sprio_args(job_id: str) -> tuple[str, ...]:
    return ("sprio", "-j", job_id, "-o", SPRIO_WHY_FORMAT)


@dataclass(frozen=True, slots=True)
class PrioLine:
    job_id: str
    user: str
    partition: str
    priority: float
    site: float
    weighted: dict[str, float]
    normalized: dict[str, float]
    nice: float


def parse_sprio_why(text: str, job_id: str, command: str = "sprio") -> PrioLine | None:
    """The job's line of `sprio -j JOBID -o SPRIO_WHY_FORMAT` (header line first); None when sprio
    lists no such job (running, held, not yet eligible, or gone)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    n = SPRIO_WHY_FORMAT.count("|") + 1
    for no, line in enumerate(lines[1:], start=2):
        f = [x.strip() for x in line.split("|")]
        if len(f) != n:
            raise ParseError(command, f"expected {n} fields, got {len(f)}", no, line)
        if f[0] != job_id and f[0].split("_")[0] != job_id:
            continue
        try:
            num = [float(x) if x else 0.0 for x in f[3:]]
        except ValueError:
            raise ParseError(command, "a priority field is not a number", no, line) from None
        weighted = {name: num[w - 3] for name, w, _, _ in TERMS}
        normalized = {name: num[z - 3] for name, _, z, _ in TERMS}
        return PrioLine(f[0], f[1], f[2], num[0], num[1], weighted, normalized, num[-1])
    return None


# squeue reasons under which a job is not eligible: its age does not grow
NOT_ELIGIBLE = frozenset({"PartitionDown", "PartitionInactive", "BeginTime", "Dependency", "DependencyNeverSatisfied",
                          "JobHeldUser", "JobHeldAdmin", "PartitionTimeLimit", "PartitionNodeLimit", "AssocGrpCPUMinutesLimit"})


def _per_hour_of_age(weight: int, max_age_s: float) -> float | None:
    return None if not weight or max_age_s <= 0 else weight / (max_age_s / 3600.0)


def explain(
    line: PrioLine,
    *,
    weights: Mapping[str, int],
    max_age_s: float,
    favor_small: bool,
    mode: str,
    fairshare_detail: str | None = None,
    ahead: int | None = None,
    pending_in_partition: int | None = None,
    reason: str | None = None,
    account: str | None = None,
) -> dict:
    """The job's priority in words, as plain data. `weights`: PriorityWeight* by factor (the keys of
    SlurmConfig.weights); `fairshare_detail`: the user's F or rank in words, from the caller;
    `ahead`: pending jobs in the partition with a higher priority."""
    total = line.priority
    terms = []
    for name, _, _, key in TERMS:
        w = int(weights.get(key, 0) or 0)
        got = line.weighted[name]
        terms.append({"factor": name, "weight": w, "normalized": line.normalized[name], "points": got,
                      "share": (got / total) if total > 0 else None})
    if line.site:
        terms.append({"factor": "site", "weight": None, "normalized": None, "points": line.site,
                      "share": line.site / total if total > 0 else None})
    counted = [t for t in terms if t["points"] > 0]
    dominant = max(counted, key=lambda t: t["points"]) if counted else None
    levers = []
    age_w = int(weights.get("age", 0) or 0)
    if age_w:
        rate = _per_hour_of_age(age_w, max_age_s)
        left = age_w - line.weighted["age"]
        if left > 0.5 and rate:
            levers.append(f"age: +{rate:,.1f} an hour of waiting, {left:,.0f} more until it caps at "
                          f"{age_w:,} after PriorityMaxAge ({max_age_s / 86400:g} days of eligibility)"
                          + (f"; it counts only while the job is eligible, and now it waits for {reason}"
                             if reason in NOT_ELIGIBLE else ""))
        else:
            levers.append(f"age: at its cap ({age_w:,}): waiting longer adds nothing")
    else:
        levers.append("age: does not count here (PriorityWeightAge=0)")
    fs_w = int(weights.get("fairshare", 0) or 0)
    if fs_w:
        how = ("under Fair Tree it is your rank among all user associations: it rises only as others use the "
               "machine (decay changes no rank)") if mode == "fair_tree" else (
               "classic fair-share: it recovers as your usage decays (half-life), falls as you run")
        levers.append(f"fair-share: {fs_w:,} x your factor ({line.normalized['fair-share']:.4f}); {how}"
                      + (f"; {fairshare_detail}" if fairshare_detail else "") + " - see `fscontrol forecast`")
    js_w = int(weights.get("jobsize", 0) or 0)
    if js_w:
        levers.append(f"job size: {js_w:,} x size factor ({line.normalized['job size']:.4f}): "
                      + ("smaller jobs score higher (PriorityFavorSmall)" if favor_small else "larger jobs score higher")
                      + "; fixed at submission")
    for name, key, what in (("partition", "partition", "a partition with a higher PriorityJobFactor"),
                            ("QOS", "qos", "a QOS with a higher Priority")):
        w = int(weights.get(key, 0) or 0)
        if w:
            levers.append(f"{name}: {w:,} x {line.normalized[name]:.4f}; only {what} raises it")
    if line.nice:
        levers.append(f"nice: {line.nice:+,.0f} taken off (scontrol update job nice / sbatch --nice)")
    return {
        "job_id": line.job_id,
        "user": line.user,
        "account": account,
        "partition": line.partition,
        "priority": total,
        "priority_mode": mode,
        "terms": terms,
        "dominant": None if dominant is None else dominant["factor"],
        "levers": levers,
        "ahead_in_partition": ahead,
        "pending_in_partition": pending_in_partition,
        "reason": reason,
    }


def format_why(data: Mapping) -> str:
    lines = [f"job {data['job_id']} ({data['user']}"
             + (f", account {data['account']}" if data.get("account") else "")
             + f", partition {data['partition']}): priority {data['priority']:,.0f}"
             + (f", waiting for: {data['reason']}" if data.get("reason") else "")]
    for t in data["terms"]:
        if t["weight"] == 0 and not t["points"]:
            continue
        share = "" if t["share"] is None else f" ({t['share']:.0%})"
        if t["weight"] is None:
            lines.append(f"  {t['factor']:<12} {t['points']:>12,.0f}{share}")
        else:
            lines.append(f"  {t['factor']:<12} {t['points']:>12,.0f}{share}  = {t['normalized']:.4f} x weight {t['weight']:,}")
    zero = [t["factor"] for t in data["terms"] if t["weight"] == 0]
    if zero:
        lines.append(f"  (weight 0 here, so they do not count: {', '.join(zero)})")
    if data["dominant"]:
        lines.append(f"what dominates: {data['dominant']}")
    if data.get("ahead_in_partition") is not None:
        lines.append(f"ahead of it: {data['ahead_in_partition']} of the {data['pending_in_partition']} other pending "
                     f"job(s) in {data['partition']} have a higher priority (the scheduler also needs the resources free)")
    lines.append("what would change it:")
    lines += [f"  - {x}" for x in data["levers"]]
    return "\n".join(lines)


def count_ahead(squeue_text: str, job_id: str, priority: float) -> tuple[int, int]:
    """(pending jobs with a higher priority, other pending jobs) from `squeue -h -t PD -p PART -o %i|%Q`."""
    ahead = others = 0
    for line in squeue_text.splitlines():
        if not line.strip():
            continue
        jid, _, q = line.partition("|")
        if jid.strip() == job_id:
            continue
        others += 1
        try:
            if float(q) > priority:
                ahead += 1
        except ValueError:
            continue
    return ahead, others




def not_pending(job_id: str, state: str | None, reason: str | None, jobs_private: bool = False) -> NotFoundError:
    if state is None and jobs_private:  # squeue shows this user their own jobs alone
        return NotFoundError(f"job {job_id} is not in the queue you can see: finished, never existed, or another "
                             "user's (PrivateData=jobs shows you your own jobs alone)")
    if state is None:
        return NotFoundError(f"job {job_id} is not in the queue (finished, or never existed): nothing waits")
    return NotFoundError(f"job {job_id} is {state}" + (f" ({reason})" if reason else "")
                         + ": it is not waiting (why explains pending jobs)")


def parse_max_age(text: str | None) -> float:
    """PriorityMaxAge as `scontrol show config` prints it (7-00:00:00) in seconds (Slurm's default
    7 days when absent)."""
    from fscontrol.slurm.parse import parse_duration

    try:
        v = parse_duration(text) if text else None
    except ValueError:
        v = None
    return float(v) if v is not None else 7 * 86400.0


__all__: Sequence[str] = ("sprio_args", "parse_sprio_why", "explain", "format_why", "count_ahead", "job_state", "diagnose",
                          "format_all", "why_job")


def without_sprio(job, reason: str | None, account: str | None, mode: str) -> dict:
    """The data `explain` gives, for a pending job sprio does not list (held, not yet eligible):
    the priority squeue shows and no breakdown."""
    return {"job_id": job.job_id, "user": job.user, "account": account, "partition": job.partition,
            "priority": float(job.priority), "priority_mode": mode, "terms": [], "dominant": None, "levers": [],
            "ahead_in_partition": None, "pending_in_partition": None, "reason": reason}


def diagnose(job, queue, *, line: PrioLine | None, partitions, weights: Mapping[str, int], max_age_s: float,
             favor_small: bool, mode: str, now: float, fairshare_detail: str | None = None, gate_pub: Mapping | None = None,
             token: str | None = None, dummy: tuple[str, str] | None = None, names: Mapping[str, str] | None = None,
             jobs_private: bool = False) -> dict:
    """Everything `why` says about a pending job, as plain data: the priority's breakdown (when
    sprio lists the job), the reason in plain words, whose hold it is, its place in Slurm's order
    with ties, and the higher-tier partitions on its nodes. Pure (`now` for the times it names)."""
    from fscontrol.forecast import reasons, waits

    reason = job.reason or None
    if line is not None:
        d = explain(line, weights=weights, max_age_s=max_age_s, favor_small=favor_small, mode=mode,
                    fairshare_detail=fairshare_detail, reason=reason, account=job.account)
    else:
        d = without_sprio(job, reason, job.account, mode)
    run = [j for j in queue if j.state in ("RUNNING", "R", "CONFIGURING", "CF")]
    running = {"assoc": sum(1 for j in run if (j.user, j.account) == (job.user, job.account)),
               "user": sum(1 for j in run if j.user == job.user),
               "account": None if jobs_private else sum(1 for j in run if j.account == job.account)}
    category, text = reasons.plain_reason(reason, running)
    if category == "resources" and job.gres and (reason or "").split(",")[0].strip() == "Resources":
        text = reasons.resources_with_gres(job.gres)
    hold = waits.hold_of(job, gate_pub, token, now)
    if hold is not None:
        category = "fscontrol_hold" if hold["by"] == "fscontrol" and hold["kind"] == "hold" else (
            "fscontrol_demoted" if hold["by"] == "fscontrol" else category)
    order = None if job.held else waits.queue_place(job, queue, partitions)
    if order is not None:
        d["ahead_in_partition"], d["pending_in_partition"] = order["higher_priority"], order["pending"]
        order["only_own_jobs_seen"] = jobs_private  # PrivateData=jobs: squeue shows a user their own jobs alone
    tiers = None if job.held else waits.higher_tiers(job, queue, partitions, dummy, names)
    if tiers is not None and order is not None:
        order["higher_tier_ahead"] = sum(p["pending"] for p in tiers["partitions"])
        if category == "nodes" and order["higher_tier_ahead"] and "higher priority partitions" in (reason or ""):
            category = "higher_tier"
    d.update({"state": job.state, "category": category, "reason_text": text, "hold": hold, "order": order,
              "higher_tier": tiers, "now": now})
    return d


def format_all(d: Mapping) -> str:
    """`why`'s text: the wait in words, then the priority's breakdown when sprio gave one."""
    from fscontrol.forecast import waits

    head = (f"job {d['job_id']} ({d['user']}" + (f", account {d['account']}" if d.get("account") else "")
            + f", partition {d['partition']}): PENDING, priority {d['priority']:,.0f}")
    out = [head, *waits.format_waits(d, d["now"])]
    if d.get("limit_values") is not None:  # [] : assoc_mgr shows it set nowhere this user may see
        out.insert(2, "  " + (limits_text(d["limit_values"]) or "the limit's value: not shown to you (scontrol show assoc_mgr)"))
    if d["terms"]:
        body = format_why(d).splitlines()[1:]
        if d.get("order"):  # the place line above says it with the ties
            body = [ln for ln in body if not ln.startswith("ahead of it:")]
        out += ["the priority, term by term (sprio):", *body]
    elif d.get("hold"):
        out.append("(sprio lists no held job: its priority returns when the hold is lifted)")
    if d.get("start_estimate"):
        from fscontrol.forecast.startview import why_line

        out.append(why_line(d["start_estimate"], d["now"]))
    return "\n".join(out)


# ---------------------------------------------------------------------------- with Slurm
# `why` adds fscontrol start's estimate up to this many pending jobs (one job's estimate: about
# 1 s of CPU at 10,000 on bench_start's queue, docs/start.md; it was 94 s before the planner's cost
# work, and the cap 1,000); beyond, it says so and names `fscontrol start -j`
WHY_ESTIMATE_MAX_PENDING = 10_000


def why_job(source, job_id: str, published: str | None = None, now: float | None = None) -> dict:
    """Run what `why` needs on `source` (a LiveSlurm: squeue, scontrol show config and partition,
    sinfo, sprio and, under Fair Tree, sshare; the published snapshot for the gate's state and the
    padding association) and explain the job. NotFoundError (exit 6) when the job is not pending."""
    from fscontrol.export import privacy  # the one privacy policy
    import time

    from fscontrol.errors import ConfigError, SlurmCommandError
    from fscontrol.export import publish as pub
    from fscontrol.forecast import waits
    from fscontrol.slurm import parse

    if not is_job_id(job_id):
        raise ConfigError(f"not a Slurm job id: {job_id!r} (a number 1..{MAX_JOB_ID}, an array task 123_4 or a "
                          "heterogeneous job's component 123+1)")
    cfg_out = source.config()
    cfg = parse.parse_config(cfg_out.stdout, " ".join(cfg_out.argv))
    queue = waits.parse_queue(source.run(waits.QUEUE_ARGS).stdout)
    job = next((j for j in queue if j.job_id == job_id), None)
    if job is None and not job_id.isdigit():
        # an array task (123_4) or a heterogeneous job's component (123+1): squeue -O JobID lists
        # it under its own job id (%A), which -j finds (an outside tester: it was "PENDING: not waiting")
        raw = jobid.resolve(source.run, job_id)  # 123+5 lists all of 123: only its own row
        if raw is not None:
            job = next((j for j in queue if j.job_id == raw), None)
    if job is None:
        try:  # not listed with -a -t PD,R,CF: ask for it alone (a finished one is still known for a while)
            state, reason, _, _ = job_state(source.run(jobid.state_args(job_id)).stdout, job_id)
        except SlurmCommandError:
            state = reason = None
        raise not_pending(job_id, state, reason,
                          privatedata.jobs_hidden(cfg.private_data) and _not_operator())
    if job.state not in ("PENDING", "PD"):
        raise not_pending(job_id, job.state, job.reason or None)
    line = None
    if not job.held:
        try:  # sprio fails (or prints its header alone) for a job it does not list
            line = parse_sprio_why(source.run(sprio_args(job.job_id)).stdout, job.job_id, " ".join(sprio_args(job.job_id)))
        except SlurmCommandError:
            line = None
    try:
        partitions = waits.parse_partitions(source.run(waits.PARTITION_ARGS).stdout, source.run(waits.NODES_ARGS).stdout)
    except SlurmCommandError:
        partitions = {}
    gate_pub = dummy = None
    try:
        from fscontrol.forecast.service import invoker

        data, path = pub.read_published(published or pub.default_path(cfg.cluster), cfg.cluster, head_only=True)
        me, uid = invoker()
        data = privacy.merge_own(data, privacy.read_own(path, me, uid))  # the gate's entries of one's own accounts
        gate_pub = data.get("gate")
        if data.get("dummy") and "/" in data["dummy"]:
            a, u = data["dummy"].split("/", 1)
            dummy = (a, u)
    except pub.PublishedError:
        pass
    detail = None
    if cfg.mode == "fair_tree" and line is not None:
        try:
            from fscontrol.model.fairtree import compute_fair_tree

            rows = parse.parse_sshare(source.run(("sshare", "-a", "-l", "-P")).stdout)
            a = compute_fair_tree(rows).by_key().get((job.account, line.user))
            if a is not None and a.rank is not None:
                n = sum(1 for r in rows if r.user)
                from fscontrol.model.fairtree import place_text

                detail = f"{place_text(a.rank, n)} (Slurm's rank {a.rank} of {n})"
        except (SlurmCommandError, ParseError, ValueError):
            detail = None  # PrivateData: the tree is not visible to this user
    names = _padding_names(source, job, queue, partitions)
    pq = partitions[job.partition.split(",")[0]].qos if job.partition.split(",")[0] in partitions else ""
    limits = read_limits(source, job, job.reason or None, pq)
    d = diagnose(job, queue, line=line, partitions=partitions, weights=cfg.weights,
                    max_age_s=parse_max_age(cfg.raw.get("PriorityMaxAge")),
                    favor_small=str(cfg.raw.get("PriorityFavorSmall", "No")).lower().startswith("y"), mode=cfg.mode,
                    now=time.time() if now is None else now, fairshare_detail=detail, gate_pub=gate_pub,
                    token=privacy_key(job.account), dummy=dummy, names=names,
                    jobs_private=privatedata.jobs_hidden(cfg.private_data) and _not_operator())
    if limits is not None:
        d["limit_values"] = limits
    d["job_id"] = job_id  # as asked (an array task 123_4, a component 123+1), not squeue's own id
    from fscontrol.forecast import start as startmod

    pending = sum(1 for j in queue if j.state in ("PENDING", "PD"))
    if pending > WHY_ESTIMATE_MAX_PENDING:  # why stays a login node's quick answer (docs/start.md: the cost)
        d["start_estimate"] = {"start": None, "reason": (
            f"not estimated by why: {pending:,} jobs pending, over {WHY_ESTIMATE_MAX_PENDING:,} (`fscontrol start -j "
            f"{job_id}` estimates it, at more cost)")}
        return d
    try:  # when it may start (fscontrol start): the estimate, or why there is none
        est = startmod.read_live(source, now=d["now"], job_ids={job_id})
        d["start_estimate"] = est["jobs"][0] if est["jobs"] else None
    except (FscontrolError, IndexError) as e:
        d["start_estimate"] = {"start": None, "reason": f"no estimate: {e}"}
    return d


def privacy_key(account: str) -> str:
    """How the published gate entries are keyed (fscontrol.export.privacy.run_key)."""
    from fscontrol.export.privacy import run_key

    return run_key(account)


def _not_operator() -> bool:
    """Not root nor SlurmUser: under PrivateData=jobs squeue then shows this user's jobs alone (an
    operator's Slurm role is not known here: counted as a plain user, the note errs on the safe side)."""
    import os

    return os.geteuid() != 0


def _padding_names(source, job, queue, partitions) -> dict[str, str]:
    """The names of the jobs in higher-tier partitions on the job's nodes (the padding job is known
    by its name when nothing is published): one squeue for those jobs alone, the name last."""
    from fscontrol.errors import SlurmCommandError

    own = partitions.get(job.partition)
    if own is None:
        return {}
    higher = {p.name for p in partitions.values() if p.tier > own.tier and p.nodes & own.nodes}
    ids = [j.job_id for j in queue if j.partition in higher][:200]
    if not ids:
        return {}
    try:
        text = source.run(("squeue", "-h", "-j", ",".join(ids), "-O", "JobID:0|,Name:0")).stdout
    except SlurmCommandError:
        return {}
    out = {}
    for ln in text.splitlines():
        jid, _, name = ln.partition("|")
        if jid.strip():
            out[jid.strip()] = name.strip()
    return out


# ---------------------------------------------------------------------------- the limit a job waits on
def limits_text(values: Sequence[Mapping]) -> str:
    """'the limit: GrpTRES cpu=1 on carol in account chem (in use: 1)'."""
    return ("the limit: " + "; ".join(f"{v['field']}={v['limit']} on {v['on']}" + (
        f" (in use: {v['in_use']})" if v.get("in_use") not in (None, "") else "") for v in values)) if values else ""


def read_limits(source, job, reason: str | None, part_qos: str = "") -> list[dict] | None:
    """The limit the job waits on, with its value, from `scontrol show assoc_mgr` run on `source`
    (walking up the accounts for a Grp* limit; for a QOS limit, its QOS's and its partition's QOS's,
    `part_qos`, whose limits apply too); None when the reason is no limit or Slurm will not say."""
    import pwd

    from fscontrol.errors import SlurmCommandError

    if not reason or limit_field(reason) is None:
        return None
    try:
        qos = None
        if reason.startswith("QOS"):
            qos = ",".join(dict.fromkeys(x for x in (part_qos, source.run(("squeue", "-h", "-j", job.job_id, "-o", "%q"))
                                                           .stdout.strip().split(",")[0]) if x)) or None
        args = assoc_mgr_args(reason, job.user, job.account, qos)
        if args is None:
            return None
        records = parse_assoc_mgr(source.run(args).stdout)
        if reason.startswith("Assoc") and limit_field(reason)[0].startswith("Grp"):
            up = {r.get("Account"): r.get("ParentAccount", "").split("(")[0] for r in records if not r.get("UserName")}
            a = up.get(job.account)
            while a and a not in up and len(up) < _MAX_LEVELS:  # the accounts above: one call a level
                more = [r for r in parse_assoc_mgr(source.run(("scontrol", "show", "assoc_mgr", "flags=assoc",
                                                                 f"accounts={a}")).stdout) if not r.get("UserName")]
                if not more:
                    break
                records += more
                up.update({r.get("Account"): r.get("ParentAccount", "").split("(")[0] for r in more})
                a = up.get(a)
    except SlurmCommandError:
        return None
    try:
        uid = pwd.getpwnam(job.user).pw_uid
    except KeyError:
        uid = None
    return limit_values(reason, records, job.user, job.account, uid)
