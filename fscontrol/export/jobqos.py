"""The QOS a user's job gets without --qos, published for the forecast's plans (issue #33 D6).

The agent reads it at each publish (slurm.jobqos.read: every association's DefaultQOS and QOS list,
every user's default account) and publishes it where Slurm would show it:

* in each user row of the world-readable file ("job_qos": {"qos", "from", "default"}) only where
  privatedata.associations_public (anyone's `sacctmgr show assoc` / `show user` shows them then);
* always in each user's own file ("job_qos": {"default_account", "accounts": {account: {"qos",
  "from"}}}), which only that user reads (Slurm shows a user their own associations).

`of_user` gives the forecast one user's entry from either (forecast.request).
"""

from __future__ import annotations

from typing import Any


def annotate_rows(rows: list[dict], job_qos: dict[str, dict] | None, private_data) -> None:
    """Add "job_qos" to each user row of `rows` (the world-readable file's), where allowed."""
    from fscontrol.slurm import privatedata

    if not job_qos or not privatedata.associations_public(private_data):
        return
    for r in rows:
        e = job_qos.get(r.get("user") or "")
        a = (e or {}).get("accounts", {}).get(r["account"])
        if a is not None:
            r["job_qos"] = {"qos": a["qos"], "from": a["from"], "default": e.get("default_account") == r["account"]}


def add_own(out: dict[str, dict], snap, job_qos: dict[str, dict] | None) -> None:
    """Each user's entry in their own file (`out`: user -> own file content, publish.own_files)."""
    from fscontrol.export import privacy

    for user, e in sorted((job_qos or {}).items()):
        out.setdefault(user, {"format": privacy.OWN_FORMAT, "user": user, "cluster": snap.cluster,
                              "snapshot_id": snap.id})["job_qos"] = e


def of_user(data_pub: dict, user: str) -> dict[str, Any] | None:
    """`user`'s entry: from their own file (merged into `data_pub` by privacy.merge_own) or from
    their rows of the world-readable file; None where neither has it (an older agent's file, a
    recording, another user's forecast under PrivateData=associations)."""
    own = data_pub.get("job_qos")
    if isinstance(own, dict) and own.get("accounts"):
        return own
    rows = [r for r in data_pub.get("associations") or () if r.get("user") == user and r.get("job_qos")]
    if not rows:
        return None
    return {"default_account": next((r["account"] for r in rows if r["job_qos"].get("default")), None),
            "accounts": {r["account"]: {"qos": r["job_qos"]["qos"], "from": r["job_qos"]["from"]} for r in rows}}


WHY = {"DefaultQOS": "the DefaultQOS of {a}", "only QOS": "the only QOS of {a}",
       "root's DefaultQOS": "root's DefaultQOS ({a} has none of its own)",
       "default": "Slurm's default QOS: {a} has no DefaultQOS"}


def for_plan(data_pub: dict, user: str, account: str | None) -> tuple[str, str] | None:
    """(QOS, why in words) that a plan of `user` without -q is billed at: the QOS Slurm gives their
    job in `account` (-A), else in their default account (or their only one). Without a published
    entry: `normal`, saying the association's DefaultQOS is not known; None where `user` has no
    association in `account` to speak of (the plan stays at UsageFactor 1, as before)."""
    e = of_user(data_pub, user)
    if e is None:
        where = f"{user}@{account}" if account else user
        return "normal", f"Slurm's default QOS; the agent published no DefaultQOS for {where}"
    acct = account or e.get("default_account")
    if acct is None and len(e["accounts"]) == 1:
        acct = next(iter(e["accounts"]))
    a = e["accounts"].get(acct) if acct else None
    if a is None:
        return None
    why = WHY.get(a["from"], "{a}'s").format(a=f"{user}@{acct}")
    if not account:
        why += f" ({user}'s default account)" if acct == e.get("default_account") else ""
    return a["qos"], why
