"""How much is used and how much is left of each limit Slurm holds a user to (pure).

From one limits read (fscontrol.slurm.tres.LimitsRead) to plain entries, one per limit and TRES:

    {"scope": "account" | "user" | "qos", "account": ..., "user": ..., "qos": ...,
     "limit": "GrpTRESMins", "tres": "cpu", "max": 600000.0, "used": 1234.5 | None, "unit": "min"}

`used` None: Slurm prints nothing to measure it by here (MaxTRESMins is per job; a QOS's Grp
usage is not in sshare). `left` is max - used, never below 0. Where each used figure comes from:
fscontrol.slurm.tres's docstring.

A user is held to their own associations' limits, every ancestor account's Grp limits (the
subtree's usage), the Max limits an account sets for the associations below it where theirs set
none, and their QOS's limits. `user_entries` picks those, `describe` says each in plain words.
"""

from __future__ import annotations

import math

GRP_TRES = ("GrpTRESMins", "GrpTRESRunMins", "GrpTRES")
PER_ASSOC = ("MaxTRESMins", "MaxJobs", "MaxSubmitJobs")  # an account's value is its children's default


def _subtree_jobs(read) -> dict[str, list]:
    """account -> the queue's jobs of every association under it (itself included)."""
    parent = {a.account: a.parent for a in read.assocs if not a.user}
    out: dict[str, list] = {}
    for job in read.jobs:
        acct, seen = job[0], set()
        while acct and acct not in seen:
            seen.add(acct)
            out.setdefault(acct, []).append(job)
            acct = parent.get(acct, "")
    return out


def _job_used(limit: str, jobs: list) -> float:
    if limit in ("MaxSubmitJobs", "MaxSubmitPU"):
        return float(len(jobs))
    return float(sum(1 for j in jobs if j[3]))  # GrpJobs, MaxJobs: running


def _tres_used(limit: str, tres: str, key: tuple[str, str], read, jobs: list) -> float | None:
    if limit == "GrpTRESMins":
        return (read.used_mins.get(key) or {}).get(tres, 0.0 if key in read.used_mins else None)
    if limit == "GrpTRESRunMins":
        return (read.run_mins.get(key) or {}).get(tres, 0.0 if key in read.run_mins else None)
    if limit == "GrpTRES" and tres == "cpu":
        return float(sum(j[4] for j in jobs if j[3]))
    return None


def entries(read) -> list[dict]:
    """Every association's own limits with what is used of them, and each QOS's per user of it."""
    out: list[dict] = []
    subtree = _subtree_jobs(read)
    for a in read.assocs:
        key = (a.account, a.user)
        if a.user:
            jobs = [j for j in read.jobs if j[0] == a.account and j[1] == a.user]
        else:
            jobs = subtree.get(a.account, [])
        scope = "user" if a.user else "account"
        for limit, tres in sorted(a.tres.items()):
            for t, mx in sorted(tres.items()):
                used = None if limit == "MaxTRESMins" else _tres_used(limit, t, key, read, jobs)
                out.append(_entry(scope, a.account, a.user, "", limit, t, mx, used))
        for limit, mx in sorted(a.jobs.items()):
            used = _job_used(limit, jobs) if (a.user or limit == "GrpJobs") else None
            out.append(_entry(scope, a.account, a.user, "", limit, "jobs", float(mx), used))
    users_of = {}
    for a in read.assocs:
        if a.user:
            for q in a.qos:
                users_of.setdefault(q, set()).add(a.user)
    for q in read.qos:
        for user in sorted(users_of.get(q.account, ())):
            jobs = [j for j in read.jobs if j[1] == user and j[2] == q.account]
            for limit, tres in sorted(q.tres.items()):
                for t, mx in sorted(tres.items()):
                    out.append(_entry("qos", "", user, q.account, limit, t, mx, None))
            for limit, mx in sorted(q.jobs.items()):
                used = None if limit == "GrpJobs" else _job_used(limit, jobs)  # GrpJobs: everyone's, not published
                out.append(_entry("qos", "", user, q.account, limit, "jobs", float(mx), used))
    return out + job_counts(read) + held_jobs(read)


def _entry(scope, account, user, qos, limit, tres, mx, used) -> dict:
    return {"scope": scope, "account": account, "user": user, "qos": qos, "limit": limit, "tres": tres,
            "max": float(mx), "used": None if used is None else float(used),
            "left": None if used is None else max(0.0, float(mx) - float(used))}


def ancestors(parent: dict[str, str], account: str) -> list[str]:
    """`account` and its ancestors up to root (root included), nearest first."""
    out, seen = [], set()
    while account and account not in seen:
        seen.add(account)
        out.append(account)
        account = parent.get(account, "")
    return out


def user_entries(all_entries: list[dict], parent: dict[str, str], user: str, accounts: set[str] | None = None,
                 accounts_usage: bool = True) -> list[dict]:
    """The limits `user` is held to: their associations' own, their accounts' Grp limits (with the
    account's usage only when `accounts_usage`: PrivateData=usage hides others' usage), the Max
    limits an ancestor account sets where their association sets none (with their own usage), and
    their QOS's. `parent`: account -> its parent account; `accounts`: the accounts `user` has an
    association in (default: those with limits of their own)."""
    own = [e for e in all_entries if e["scope"] == "user" and e["user"] == user]
    mine = {(e["account"], e["limit"], e["tres"]) for e in own}
    accounts = set(accounts or ()) | {e["account"] for e in own}
    acct = {(e["account"], e["limit"], e["tres"]): e for e in all_entries if e["scope"] == "account"}
    out = list(own)
    seen = set()
    for a in sorted(accounts):
        for anc in ancestors(parent, a):
            for (acc, limit, tres), e in acct.items():
                if acc != anc:
                    continue
                if limit in PER_ASSOC:  # the nearest setting wins: it is this association's own limit
                    if (a, limit, tres) in mine:
                        continue
                    mine.add((a, limit, tres))
                    used = None if limit == "MaxTRESMins" else _own_job_used(all_entries, a, user, limit)
                    out.append({**_entry("user", a, user, "", limit, tres, e["max"], used), "from_account": anc})
                elif (anc, limit, tres) not in seen:
                    seen.add((anc, limit, tres))
                    out.append(e if accounts_usage else {**e, "used": None, "left": None, "usage_private": True})
    out += [e for e in all_entries if e["scope"] == "qos" and e["user"] == user]
    return _with_held(out, [h for h in all_entries if h["scope"] == "held" and h["user"] == user], parent)


def _with_held(out: list[dict], held: list[dict], parent: dict[str, str]) -> list[dict]:
    """Each entry with the user's pending jobs its limit holds ("holding": job ids): the reason
    names the limit, not the level, so a job is put on each of its account line's entries of it."""
    res = []
    for e in out:
        ids = []
        for h in held:
            scope, limit, tres = h["on"]
            if limit != e["limit"] or tres != e["tres"]:
                continue
            if scope == "qos" and e["scope"] == "qos" and e["qos"] == h["qos"]:
                ids.append(h["job"])
            elif scope == "assoc" and e["scope"] in ("user", "account") and e["account"] in ancestors(parent, h["account"]):
                ids.append(h["job"])
        res.append({**e, "holding": sorted(ids, key=lambda x: (len(x), x)), "holding_reason": sorted({h["reason"] for h in held if h["job"] in ids})} if ids else e)
    return res


def _own_job_used(all_entries, account, user, limit) -> float:
    """The user's own job count in `account` (job_counts' entries; none: no jobs), for an inherited limit."""
    for e in all_entries:
        if e["scope"] == "user_jobs" and e["account"] == account and e["user"] == user:
            return e["running"] if limit == "MaxJobs" else e["submitted"]
    return 0.0


_TRES_WORD = {"cpu": "cpu", "mem": "mem", "memory": "mem", "node": "node", "billing": "billing", "energy": "energy",
              "gres": "gres"}


def reason_limit(reason: str) -> tuple[str, str, str] | None:
    """squeue's pending reason -> (scope "assoc"|"qos", limit, tres) of the limit holding the job:
    AssocGrpCpuLimit -> ("assoc", "GrpTRES", "cpu"), AssocGrpCPUMinutesLimit -> GrpTRESMins,
    AssocGrpCPURunMinutesLimit -> GrpTRESRunMins, AssocMaxJobsLimit -> MaxJobs,
    QOSMaxJobsPerUserLimit -> MaxJobsPU, AssocGrpBillingMinutes -> GrpTRESMins billing. None: not a limit."""
    import re

    m = re.fullmatch(r"(Assoc|QOS)(Grp|Max)(\w+?)(Limit)?", reason or "")
    if not m:
        return None
    scope, kind, rest = ("assoc" if m.group(1) == "Assoc" else "qos"), m.group(2), m.group(3)
    if rest in ("Jobs", "JobsPerUser", "SubmitJob", "SubmitJobPerUser", "SubmitJobs", "SubmitJobsPerUser"):
        if m.group(1) == "QOS" and rest.endswith("PerUser"):
            return scope, "MaxJobsPU" if rest == "JobsPerUser" else "MaxSubmitPU", "jobs"
        return scope, kind + ("SubmitJobs" if "Submit" in rest else "Jobs"), "jobs"
    for suffix, limit in (("RunMinutes", "TRESRunMins"), ("MinutesPerJob", "TRESMins"), ("Minutes", "TRESMins"), ("", "TRES")):
        if rest.endswith(suffix):
            word = rest[: len(rest) - len(suffix)] if suffix else rest
            tres = _TRES_WORD.get(word.lower())
            if tres is not None:
                return scope, kind + limit, tres
    return None


def held_jobs(read) -> list[dict]:
    """The pending jobs a limit holds (their squeue reason names one): for the limit's explanation."""
    out = []
    for j in read.jobs:
        lim = None if j[3] else reason_limit(j[6])
        if lim is not None:
            out.append({"scope": "held", "account": j[0], "user": j[1], "qos": j[2], "job": j[5], "reason": j[6],
                        "on": list(lim)})
    return out


def job_counts(read) -> list[dict]:
    """Each association's own jobs in the queue (running, running+pending): what an inherited
    MaxJobs/MaxSubmitJobs is held against."""
    counts: dict[tuple[str, str], list[int]] = {}
    for j in read.jobs:
        c = counts.setdefault((j[0], j[1]), [0, 0])
        c[0] += 1 if j[3] else 0
        c[1] += 1
    return [{"scope": "user_jobs", "account": a, "user": u, "running": float(r), "submitted": float(s)}
            for (a, u), (r, s) in sorted(counts.items())]


UNITS = {"cpu": "CPU", "billing": "billing", "mem": "MB", "node": "node", "energy": "joule"}


def _amount(limit: str, tres: str, x: float, down: bool = False) -> str:
    """`x` in words; `down`: rounded down (what is left is never overstated)."""
    if tres == "jobs":
        return f"{x:,.0f} job{'s' if x != 1 else ''}"
    name = UNITS.get(tres, tres.split("/")[-1].upper() if tres.startswith("gres/") else tres)
    if limit.endswith("Mins"):
        h = x / 60.0
        if h >= 100 or h == int(h):
            return f"{math.floor(h) if down else round(h):,} {name}-hours"
        return f"{math.floor(h * 10) / 10 if down else h:,.1f} {name}-hours"
    return f"{x:,.0f} {name}{'s' if tres in ('cpu', 'node') and x != 1 else ''}"


def _figure(limit: str, tres: str, x: float, down: bool = False) -> str:
    """The number alone, in the unit _amount names (hours for TRES-minutes)."""
    return _amount(limit, tres, x, down).split(" ")[0]


def _raw(x: float) -> str:
    return f"{x:.0f}" if math.isfinite(x) and x == int(x) else f"{x:g}"


def describe(e: dict) -> str:
    """One limit in plain words: "account physics: 1,234 of 10,000 CPU-hours left (GrpTRESMins
    cpu=600000)", and the user's jobs it holds pending."""
    text = _describe(e)
    if e.get("holding"):
        ids = e["holding"]
        text += (f"; it holds your pending job{'s' if len(ids) > 1 else ''} {', '.join(ids)} "
                 f"(squeue: {', '.join(e.get('holding_reason') or ())})")
    return text


def _describe(e: dict) -> str:
    who = {"account": f"account {e['account']}", "user": f"you in account {e['account']}",
           "qos": f"QOS {e['qos']}"}[e["scope"]]
    setting = f"{e['limit']} {e['tres'] + '=' + _raw(e['max']) if e['tres'] != 'jobs' else _raw(e['max'])}"
    if e["tres"] == "jobs":
        setting = f"{e['limit']}={_raw(e['max'])}"
    if e.get("from_account"):
        setting += f", set on account {e['from_account']}"
    if e["limit"] == "MaxTRESMins":
        return f"{who}: at most {_amount(e['limit'], e['tres'], e['max'])} per job ({setting})"
    if e["limit"] == "GrpTRESRunMins":
        what = "still to run at once"
    elif e["limit"] == "GrpTRES":
        what = "in use at once"
    elif e["limit"] in ("MaxSubmitJobs", "MaxSubmitPU"):
        what = "running or pending"
    elif e["limit"] in ("GrpJobs", "MaxJobs", "MaxJobsPU"):
        what = "running at once"
    else:
        what = "left"
    if e.get("used") is None:
        why = " (usage private)" if e.get("usage_private") else ""
        return f"{who}: at most {_amount(e['limit'], e['tres'], e['max'])} {what if what != 'left' else 'in all'} ({setting}); usage not known{why}"
    if what == "left":
        return f"{who}: {_figure(e['limit'], e['tres'], e['left'], True)} of {_amount(e['limit'], e['tres'], e['max'])} left ({setting})"
    return (f"{who}: {_figure(e['limit'], e['tres'], e['used'])} of {_amount(e['limit'], e['tres'], e['max'])} {what}, "
            f"{_figure(e['limit'], e['tres'], e['left'], True)} more ({setting})")


def text_block(limits: dict | None) -> str:
    """The forecast's "how much can I still run?" section: one plain line per limit ("" when none)."""
    if not limits or not limits.get("entries"):
        return ""
    lines = ["", "how much you can still run (Slurm's limits):"]
    lines += [f"  {e.get('text') or describe(e)}" for e in limits["entries"]]
    return "\n".join(lines)
