"""A capture's limits, for its replay (sim/history.py): each QOS's MinPrioThreshold and each job's
(qos.txt, partitions.txt), and the association and QOS limits on running jobs and CPUs (assoc.txt,
qoslimits.txt; a partition's QOS's too, from partitions.txt), read where the capture's
AccountingStorageEnforce says slurmctld applies them (model/acctpolicy.py has the rules)."""

from __future__ import annotations

import math
from pathlib import Path

from fscontrol.model.acctpolicy import enforces_limits, job_prio_thresh
from fscontrol.errors import ParseError
from fscontrol.slurm import parse

from .workload import SimJob


def config_pairs(d: Path) -> dict[str, str]:
    """The capture's config.txt as pairs ({} without it, or garbled: the replay's own reading of
    it, sim/mfconfig.py, says so)."""
    try:
        return parse.parse_config_pairs((d / "config.txt").read_text()) if (d / "config.txt").is_file() else {}
    except ParseError:
        return {}


def min_prio(d: Path, commands: dict) -> tuple[dict[str, int], frozenset[str]]:
    """Each QOS's MinPrioThreshold (qos.txt) when the capture's AccountingStorageEnforce has limits
    (acctpolicy.enforces_limits), else {}; and the QOSes flagged OverPartQOS."""
    if not enforces_limits(config_pairs(d).get("AccountingStorageEnforce", "")):
        return {}, frozenset()
    text, cmd = (d / "qos.txt").read_text(), " ".join(commands.get("qos", {}).get("argv") or ["sacctmgr show qos"])
    return parse.parse_qos_min_prio(text, cmd), parse.parse_qos_over_part(text, cmd)


def limits(d: Path, commands: dict, jobs: list[SimJob], unit: str,
           parts: dict[str, dict] | None = None) -> dict[str, list] | None:
    """The association and QOS limits on running jobs and CPUs (model/acctpolicy.py) from a
    capture's assoc.txt and qoslimits.txt, where slurmctld applies them (AccountingStorageEnforce
    with limits): each job's SimJob.limit_keys set, and {"jobs": each limit's cap on running jobs,
    "cpus": on their CPUs (None: none), "kinds": its kind, "names": its name, "never": {job id: why
    it can never start under them}}; None without them (a capture made before, or none applies)."""
    from fscontrol.model import acctpolicy
    from fscontrol.slurm import tres

    if unit != "cpus" or not (d / "assoc.txt").is_file() or not (d / "qoslimits.txt").is_file():
        return None
    pairs = config_pairs(d)
    if not enforces_limits(pairs.get("AccountingStorageEnforce", "")):  # (the same setting: "limits")
        return None
    assocs = tres.parse_assoc_limits((d / "assoc.txt").read_text(), pairs.get("ClusterName") or None,
                                     " ".join(commands.get("assoc", {}).get("argv") or ["sacctmgr show assoc"]))
    text, cmd = (d / "qoslimits.txt").read_text(), " ".join(commands.get("qoslimits", {}).get("argv") or ["sacctmgr show qos"])
    qoss = tres.parse_qos_limits(text, cmd)
    # each job's QOSes in slurmctld's order (its partition's QOS and its own: acctpolicy.qos_order),
    # OverPartQOS from either file's Flags (qos.txt has them; qoslimits.txt since 2026-11-29)
    over, rel = parse.parse_qos_over_part(text, cmd), parse.parse_qos_flagged(text, "Relative", cmd)
    if (d / "qos.txt").is_file():
        qtext, qcmd = (d / "qos.txt").read_text(), " ".join(commands.get("qos", {}).get("argv") or ["sacctmgr show qos"])
        over |= parse.parse_qos_over_part(qtext, qcmd)
        rel |= parse.parse_qos_flagged(qtext, "Relative", qcmd)
    part_qos = {name: str(p.get("qos") or "") for name, p in (parts or {}).items()}
    if rel:  # (a Relative QOS's limits: a share of its partition's CPUs)
        qoss = acctpolicy.relative(qoss, rel, part_qos, {name: int(p.get("cpus") or 0) for name, p in (parts or {}).items()})
    keys = [(j.account, j.user, acctpolicy.qos_order(j.qos or "normal", j.partition or "", part_qos, over)) for j in jobs]
    lim = acctpolicy.model(assocs, qoss, set(keys))
    c = acctpolicy.counts(lim, keys, [j.size for j in jobs])
    if c is None:
        return None
    never = {}
    for k, (j, ks) in enumerate(zip(jobs, c.of)):
        j.limit_keys = ks
        j.limit_checks = c.chk[k]
        why = c.never(k)
        if why:
            never[j.job_id] = why
    return {"jobs": [None if v == math.inf else int(v) for v in c.capj],
            "cpus": [None if v == math.inf else int(v) for v in c.capc], "kinds": list(c.kinds),
            "names": list(c.names), "never": never}


def prio_thresholds(jobs: list[SimJob], thr: dict[str, int], over: frozenset[str], parts: dict[str, dict]) -> None:
    """Each job's MinPrioThreshold (SimJob.prio_thresh), acctpolicy.job_prio_thresh's rule."""
    part_qos = {name: str(p.get("qos") or "") for name, p in parts.items()}
    for j in jobs:
        j.prio_thresh = job_prio_thresh(j.qos or "", j.partition or "", thr, over, part_qos)
