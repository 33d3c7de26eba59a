"""`scontrol show assoc_mgr`, read for the limit a pending job waits on (issue #28): which field a
limit reason names, the call that shows it, the records it prints, and where the limit is set with
its value and what counts against it. Pure, but for the call's argv; `forecast/why.py` runs it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# (issue #28) an Assoc*/QOS* reason names the limit's kind; `scontrol show assoc_mgr` (what slurmctld
# enforces, as a user may read it) gives its value and what counts against it, as "limit(in use)"
_TRES = {"Cpu": "cpu", "CPU": "cpu", "Node": "node", "Mem": "mem", "Billing": "billing", "Energy": "energy"}
MAX_LEVELS = 16  # accounts walked up from the job's (a tree deeper than this is not one Slurm sites use)


def limit_field(reason: str) -> tuple[str, str | None] | None:
    """The assoc_mgr field and TRES a limit reason names: AssocGrpCpuLimit -> ("GrpTRES", "cpu"),
    AssocMaxJobsLimit -> ("MaxJobs", None), QOSMaxCpuPerUserLimit -> ("MaxTRESPU", "cpu"); None when
    the reason is no limit this reads."""
    m = re.match(r"^(Assoc|QOS)(Grp|Max)(.+?)(PerJob|PerUser|PerAccount|PerNode)?Limit$", reason or "")
    if not m:
        return None
    who, kind, res, per = m.groups()
    suffix = {"PerJob": "PJ", "PerUser": "PU", "PerAccount": "PA", "PerNode": "PN", None: ""}[per]
    for base in ("SubmitJobs", "SubmitJob", "Jobs", "Job"):
        if res == base:
            f = ("GrpSubmitJobs" if kind == "Grp" else "MaxSubmitJobs") if base.startswith("Submit") else (
                "GrpJobs" if kind == "Grp" else "MaxJobs")
            return f + (suffix if who == "QOS" and kind == "Max" else ""), None
    if res.startswith("WallDuration") or res == "Wall":
        return ("GrpWall" if kind == "Grp" else "MaxWallPJ"), None
    for key, tres in _TRES.items():
        if res.startswith(key):
            tail = res[len(key):]
            mins = {"": "", "Minutes": "Mins", "Mins": "Mins", "RunMinutes": "RunMins", "RunMins": "RunMins"}.get(tail)
            if mins is None:
                return None
            if kind == "Grp":
                return f"GrpTRES{mins}", tres
            return f"MaxTRES{mins}{suffix or 'PJ'}", tres
    return None


def assoc_mgr_args(reason: str, user: str, account: str, qos: str | None = None) -> tuple[str, ...] | None:
    """The `scontrol show assoc_mgr` call that shows the limit `reason` names (None: not a limit)."""
    if limit_field(reason) is None:
        return None
    if reason.startswith("QOS"):
        return ("scontrol", "show", "assoc_mgr", "flags=qos", f"qos={qos}") if qos else None
    return ("scontrol", "show", "assoc_mgr", "flags=assoc", f"users={user}", f"accounts={account}")


def parse_assoc_mgr(text: str) -> list[dict[str, str]]:
    """`scontrol show assoc_mgr`'s records (an association's or a QOS's), each its Key=Value
    fields; a QOS's per-account and per-user limits as "PA:<account>:<key>", "PU:<uid>:<key>"."""
    out: list[dict[str, str]] = []
    rec: dict[str, str] | None = None
    section, owner = "", ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("ClusterName=", "QOS=")):
            rec, section, owner = {}, "", ""
            out.append(rec)
        elif rec is None or not s:
            continue
        elif s in ("Account Limits", "User Limits"):
            section = "PA" if s.startswith("Account") else "PU"
            continue
        elif section and "=" not in s:
            owner = s
            continue
        for tok in s.split():
            k, eq, v = tok.partition("=")
            if eq:
                rec[f"{section}:{owner}:{k}" if section and owner else k] = v
    return out


def _value(text: str | None, tres: str | None) -> tuple[str, str | None] | None:
    """A field's "limit(in use)" (of one TRES in a TRES list); None when no limit is set ("N", "")."""
    if text is None:
        return None
    if tres is not None:
        for part in text.split(","):
            k, _, v = part.partition("=")
            if k == tres:
                text = v
                break
        else:
            return None
    m = re.fullmatch(r"([^()]*)(?:\(([^()]*)\))?", text.strip())
    if not m or m.group(1) in ("", "N"):
        return None
    return m.group(1), m.group(2)


def _owner_is(owner: str, user: str, uid: int | None) -> bool:
    """A QOS's "User Limits" owner line names the user: "1004" (22.05), "dave(1004)" (24.11, 26.05)."""
    m = re.fullmatch(r"([^()]*)(?:\((\d+)\))?", owner)
    if not m:
        return False
    name, num = m.groups()
    return name in (user, str(uid)) or (num is not None and num == str(uid))


def limit_values(reason: str, records: Sequence[Mapping[str, str]], user: str, account: str,
                 uid: int | None = None) -> list[dict]:
    """Where the limit `reason` names is set, from parse_assoc_mgr's records: the user's
    association, then the accounts above it (a Grp* limit of any of them holds the job), or the
    QOS (its per-user limit by `uid`, per-account by `account`). Each {"on", "field", "limit",
    "in_use"}; none when no record shows it set (PrivateData, or a limit set since)."""
    lf = limit_field(reason)
    if lf is None:
        return []
    field, tres = lf
    name = f"{field}{'' if tres is None else ' ' + tres}"
    out = []

    def add(on: str, text: str | None) -> None:
        v = _value(text, tres)
        if v is not None:
            out.append({"on": on, "field": name, "limit": v[0], "in_use": v[1]})

    if reason.startswith("QOS"):
        for r in records:
            q = r.get("QOS", "").split("(")[0]
            if field.endswith("PU"):
                add(f"QOS {q}, for {user}", next((v for k, v in r.items() if k.startswith("PU:") and k.endswith(f":{field}")
                                                  and _owner_is(k.split(":")[1], user, uid)), r.get(field)))
            elif field.endswith("PA"):
                add(f"QOS {q}, for account {account}", r.get(f"PA:{account}:{field}", r.get(field)))
            else:
                add(f"QOS {q}", r.get(field))
        return out
    by_account = {r.get("Account"): r for r in records if r.get("UserName", "") == ""}
    mine = next((r for r in records if r.get("UserName", "").split("(")[0] == user and r.get("Account") == account), None)
    if mine is not None:
        add(f"{user} in account {account}", mine.get(field))
    if field.startswith("Grp"):  # a Grp* limit of an account above counts its users' jobs too
        a, seen = account, set()
        while a in by_account and a not in seen and len(seen) < MAX_LEVELS:
            seen.add(a)
            add(f"account {a}", by_account[a].get(field))
            a = by_account[a].get("ParentAccount", "").split("(")[0]
    return out
