"""The QOS Slurm gives a job submitted without --qos, per association, and each user's default
account: what a plan is billed at (issue #33 D6: a plan without -q was billed at UsageFactor 1
where Slurm charges the job's QOS's).

slurmctld's rule (job_mgr.c `_determine_and_validate_qos`, the same from 22.05 to 26.05): a job
with no QOS gets its association's DefaultQOS; else, when the association may use exactly one QOS,
that one; else the root association's DefaultQOS; else the QOS named `normal`. `sacctmgr show
assoc` prints each association's DefaultQOS with what it inherits from the accounts above it
(checked on the testbed: `sacctmgr modify account physics set defaultqos=...` shows on every user
row of physics, and a job of alice@physics without --qos runs under it). A job with no -A runs in
the user's default account (`sacctmgr show user format=DefaultAccount`).

Pure parsers, plus `read(run, cluster)`, the agent's read at each publish (two sacctmgr calls,
argument lists with the source's timeouts).
"""

from __future__ import annotations

from fscontrol.slurm import parse

ASSOC_ARGS = ("sacctmgr", "-P", "show", "assoc", "format=Cluster,Account,User,DefaultQOS,QOS")
USER_ARGS = ("sacctmgr", "-P", "show", "user", "format=User,DefaultAccount")
NORMAL = "normal"


def parse_assoc_qos(text: str, cluster: str | None = None, command: str = " ".join(ASSOC_ARGS)) -> dict:
    """{(account, user): (DefaultQOS or "", (QOS names...))} of `cluster`'s associations (all when
    None; sacctmgr has no -M). sacctmgr prints DefaultQOS under "Def QOS"."""
    header, rows = parse._table(text, command, ("Account", "User", "QOS"))
    ix = {h: i for i, h in enumerate(header)}
    dq = ix.get("Def QOS", ix.get("DefaultQOS"))
    if dq is None:
        from fscontrol.errors import ParseError

        raise ParseError(command, "missing column Def QOS in header", 1, "|".join(header))
    out = {}
    for _, f in rows:
        if cluster is not None and "Cluster" in ix and f[ix["Cluster"]].strip() != cluster:
            continue
        qos = tuple(q.strip() for q in f[ix["QOS"]].split(",") if q.strip())
        out[(f[ix["Account"]].strip(), f[ix["User"]].strip())] = (f[dq].strip(), qos)
    return out


def parse_default_accounts(text: str, command: str = " ".join(USER_ARGS)) -> dict[str, str]:
    """{user: DefaultAccount} (sacctmgr prints it under "Def Acct")."""
    header, rows = parse._table(text, command, ("User",))
    ix = {h: i for i, h in enumerate(header)}
    da = ix.get("Def Acct", ix.get("DefaultAccount"))
    if da is None:
        from fscontrol.errors import ParseError

        raise ParseError(command, "missing column Def Acct in header", 1, "|".join(header))
    return {f[ix["User"]].strip(): f[da].strip() for _, f in rows if f[ix["User"]].strip() and f[da].strip()}


def job_qos(default_qos: str, qos: tuple[str, ...], root_default: str = "") -> tuple[str, str]:
    """(the QOS, why) of a job submitted without --qos in an association with this DefaultQOS and
    QOS list (slurmctld's rule, above): why is "DefaultQOS", "only QOS", "root's DefaultQOS" or
    "default" (the QOS named normal)."""
    if default_qos:
        return default_qos, "DefaultQOS"
    if len(qos) == 1:
        return qos[0], "only QOS"
    if root_default:
        return root_default, "root's DefaultQOS"
    return NORMAL, "default"


def users_job_qos(assocs: dict, default_accounts: dict[str, str]) -> dict[str, dict]:
    """{user: {"default_account": account or None, "accounts": {account: {"qos": name, "from": why}}}}
    for every user association (job_qos of each)."""
    root = assocs.get(("root", ""), ("", ()))[0]
    out: dict[str, dict] = {}
    for (account, user), (dq, qos) in sorted(assocs.items()):
        if not user:
            continue
        name, why = job_qos(dq, qos, root)
        e = out.setdefault(user, {"default_account": default_accounts.get(user), "accounts": {}})
        e["accounts"][account] = {"qos": name, "from": why}
    return out


def read(run, cluster: str | None) -> dict[str, dict]:
    """users_job_qos read live (`run`: a source's run); SlurmCommandError/ParseError propagate."""
    return users_job_qos(parse_assoc_qos(run(ASSOC_ARGS).stdout, cluster), parse_default_accounts(run(USER_ARGS).stdout))
