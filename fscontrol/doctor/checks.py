"""Every reason fair-share, or fscontrol's control, cannot do what the admin expects: pure rules
over what fscontrol.slurm.survey read (no command runs here). docs/doctor.md lists each check,
its severity and its fix; tests/test_doctor.py holds one fast test per check on edited recorded
text, tests/test_integration_doctor.py one on a testbed set up that way.

Severities:
  fatal    fair-share has no effect on the order jobs start in, or the control method the config
           names cannot work (the agent then only advises, saying why);
  warning  fair-share works, but not as an admin expects (part of the usage uncharged, another
           factor outweighs it, a d that will not stay);
  info     worth knowing; nothing is wrong.
"""

from __future__ import annotations

import math

from collections.abc import Mapping

from dataclasses import dataclass

from fscontrol.errors import ConfigError
from fscontrol.model import billing
from fscontrol.records import ShareRow
from fscontrol.slurm import privatedata, versions
from fscontrol.slurm.parse import parse_duration
from fscontrol.slurm.survey import Survey

SEVERITIES = ("fatal", "warning", "info")
PADDING_JOB_S = 86400  # the steady padding job's time limit (act.actions.PADDING_LIMIT_S, a layer above)
CONTROL_METHODS = ("damping", "padding", "hybrid")
# the other factors of the multifactor priority, by their PriorityWeight* name
OTHER_FACTORS = ("Age", "JobSize", "Partition", "QOS", "Assoc")
# Slurm reads every PriorityWeight* but TRES as uint32 (read_config.c: s_p_get_uint32 into
# slurm_conf.priority_weight_*); a larger value is refused ("out of range"). 4294967295 is also
# INFINITE there, so the largest weight worth suggesting is one below it.
MAX_WEIGHT = 0xFFFFFFFE


@dataclass(frozen=True, slots=True)
class Finding:
    check: str  # the check's name (docs/doctor.md)
    severity: str  # fatal | warning | info
    scope: str  # "fair-share" (Slurm's own) | "control" (fscontrol's) | "doctor" (what could not be read)
    message: str  # one line: what is wrong
    fix: str  # the exact change that fixes it

    def as_dict(self) -> dict:
        return {"check": self.check, "severity": self.severity, "scope": self.scope,
                "message": self.message, "fix": self.fix}

    def line(self) -> str:
        """The one line `fscontrol doctor` prints for it (and the agent's first tick logs)."""
        return line(self.as_dict())


def line(f: Mapping) -> str:
    """One finding (Finding.as_dict) as one line: `SEVERITY check: message -> fix: fix`."""
    return f"{f['severity'].upper():7} {f['check']}: {f['message']} -> fix: {f['fix']}"


@dataclass(frozen=True, slots=True)
class Intent:
    """What the admin asked fscontrol to do (the config's [clusters.NAME] table), as plain values."""

    method: str = "none"
    dummy: tuple[str, str] = ("fsadmin", "fsdummy")
    dummy_partition: str = "fsadmin"
    padding_qos: str = "fspad"
    padding_mode: str = "pulse"
    persist: bool = False
    clusters: tuple[str, ...] = ()  # the [clusters.NAME] tables of the config (none: no config)

    @classmethod
    def of(cls, cc, clusters=()) -> "Intent":
        """From an agent.config.ClusterConfig (or anything with its attributes); `clusters`: the
        names of the config's [clusters.NAME] tables."""
        if cc is None:
            return cls(clusters=tuple(clusters))
        return cls(method=cc.method, dummy=tuple(cc.dummy_key), dummy_partition=cc.dummy_partition,
                   padding_qos=cc.padding_qos, padding_mode=cc.padding_mode, persist=bool(cc.persist),
                   clusters=tuple(clusters))


class _Conf(dict):
    """`scontrol show config`'s lines, looked up without regard to case (it prints
    PriorityWeightFairShare where slurm.conf(5) writes PriorityWeightFairshare)."""

    def __init__(self, pairs: dict[str, str]) -> None:
        super().__init__((k.lower(), v) for k, v in pairs.items())

    def get(self, key: str, default=None):
        return super().get(key.lower(), default)


def _flags(v: str | None) -> set[str]:
    if not v or v.strip() in ("", "(null)", "N/A", "None", "NONE"):
        return set()
    return {x.strip().upper() for x in v.split(",") if x.strip()}


def _calc_period(config: dict) -> int | None:
    try:
        return parse_duration(_Conf(config).get("PriorityCalcPeriod", "")) or None
    except ValueError:
        return None


def _int(v: str | None) -> int | None:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def _plain(x: float) -> str:
    """A weight as slurm.conf writes it: 1000000, not 1e+06."""
    return str(int(x)) if float(x).is_integer() else f"{x:f}".rstrip("0")


def _tres_weight_sum(v: str | None) -> float:
    """PriorityWeightTRES (`CPU=1000,Mem=2000,GRES/gpu=3000`): the sum of the weights."""
    total = 0.0
    for part in (v or "").split(","):
        _, sep, w = part.partition("=")
        if sep:
            try:
                total += float(w)
            except ValueError:
                pass
    return total


def check(s: Survey, intent: Intent | None = None) -> list[Finding]:
    """Every finding for the surveyed cluster, the fatal ones first, each check at most once."""
    intent = intent or Intent()
    c = _Conf(s.config)
    out: list[Finding] = []

    def add(check: str, severity: str, scope: str, message: str, fix: str) -> None:
        out.append(Finding(check, severity, scope, message, fix))

    name = c.get("ClusterName")
    if intent.clusters and name and name not in intent.clusters:
        add("cluster-name", "fatal", "control",
            f"the config names [clusters.{', '.join(sorted(intent.clusters))}], but slurmctld's ClusterName is {name}: "
            "`fscontrol tick` refuses to act, and these checks judged the cluster without the config's settings.",
            f"rename the table to [clusters.{name}] in the fscontrol config.")
    controlling = intent.method in CONTROL_METHODS
    ptype = c.get("PriorityType", "")
    multifactor = ptype == "priority/multifactor"
    if not multifactor:
        add("priority-type", "fatal", "fair-share",
            f"PriorityType is {ptype or '(unset)'}: jobs start in submission order (FIFO) and no fair-share factor "
            "is computed.",
            "slurm.conf: PriorityType=priority/multifactor, then restart slurmctld.")
    elif s.pending and s.sprio_ids is not None and not s.sprio_ids:
        add("priority-not-loaded", "fatal", "fair-share",
            f"`scontrol show config` says priority/multifactor, but sprio lists none of the {len(s.pending)} eligible "
            f"pending job(s) ({', '.join(s.pending[:3])}): slurmctld still runs the plugin it started with (it loads "
            "the priority plugin only at start, a reconfigure only re-reads slurm.conf), so jobs keep FIFO "
            "priorities.",
            "restart slurmctld (`systemctl restart slurmctld`).")
    storage = c.get("AccountingStorageType", "")
    if storage != "accounting_storage/slurmdbd":
        add("accounting-storage", "fatal", "fair-share",
            f"AccountingStorageType is {storage or '(unset)'}: without slurmdbd there are no associations and no "
            "usage, so every fair-share factor is the same.",
            "run slurmdbd and set slurm.conf: AccountingStorageType=accounting_storage/slurmdbd, then restart "
            "slurmctld.")
    pflags = _flags(c.get("PriorityFlags"))
    if multifactor:
        _weights(c, s, pflags, add)
        _decay(c, controlling, add)
    enforce = _flags(c.get("AccountingStorageEnforce"))
    if storage == "accounting_storage/slurmdbd":
        if not enforce & {"ASSOCIATIONS", "LIMITS", "QOS", "SAFE", "WCKEYS", "ALL"}:
            add("enforce-associations", "warning", "fair-share",
                f"AccountingStorageEnforce is {c.get('AccountingStorageEnforce') or '(unset)'}: jobs of users with no "
                "association run anyway, and their usage is charged to no one's share.",
                "slurm.conf: AccountingStorageEnforce=associations,limits,qos, then restart slurmctld.")
        if not enforce & {"LIMITS", "SAFE", "ALL"}:
            add("enforce-limits", "warning", "fair-share",
                "AccountingStorageEnforce lacks 'limits': Slurm (22.05 and 24.11 measured) then never charges the "
                "last PriorityCalcPeriod of a job, so usage is under-counted.",
                "slurm.conf: add limits to AccountingStorageEnforce (e.g. associations,limits,qos), then restart "
                "slurmctld.")
    if multifactor:
        _algorithm(pflags, intent, add, _int(c.get("FairShareDampeningFactor")))
    _reads(s, controlling, intent, add)
    if s.shares is not None:
        _tree(s.shares, add)
    if controlling and multifactor:
        _damping(s, intent, add)
        if intent.method in ("padding", "hybrid"):
            _padding(s, intent, add)
    _tiers(s, intent, add)
    if multifactor:
        _max_tres_gres(c, s, add)
    _info(c, s, add)
    order = {v: i for i, v in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order[f.severity])


def _weights(c: dict, s: Survey, pflags: set[str], add) -> None:
    w_fs = _int(c.get("PriorityWeightFairshare")) or 0
    others = _other_weights(c, s, pflags)
    if w_fs <= 0:
        top = max(others.values(), default=0)
        add("weight-fairshare", "fatal", "fair-share",
            "PriorityWeightFairshare is 0 (Slurm's default): the fair-share factor adds nothing to any job's priority.",
            _fs_weight_fix(max(100000, 10 * top), others) + ", then `scontrol reconfigure`.")
        return
    big = {k: v for k, v in others.items() if v > w_fs}
    if big:
        name, w = max(big.items(), key=lambda kv: kv[1])
        add("weight-dwarfed", "warning", "fair-share",
            f"PriorityWeightFairshare={w_fs} is outweighed by PriorityWeight{name}={_plain(w)}"
            + (f" (and {', '.join(sorted(set(big) - {name}))})" if len(big) > 1 else "")
            + f": the {name} factor alone can move a job past any fair-share difference, so fair-share orders jobs "
            "only among those it leaves even.",
            _fs_weight_fix(10 * w, big) + "; then `scontrol reconfigure`.")
    normal = sorted(f for f in pflags if f.startswith("NO_NORMAL_"))
    if normal:
        add("no-normal", "warning", "fair-share",
            f"PriorityFlags={','.join(normal)}: those factors are not scaled to 0..1, so their weights no longer "
            "compare with PriorityWeightFairshare and can outweigh fair-share by any amount.",
            f"slurm.conf: remove {','.join(normal)} from PriorityFlags, then `scontrol reconfigure`.")


def _fs_weight_fix(want: float, others: dict[str, float]) -> str:
    """The slurm.conf change that gives fair-share `want` (ten times the largest of `others`):
    PriorityWeightFairshare=want where Slurm's uint32 holds it; else the largest weight that
    fits, with each of `others` lowered to a tenth of it (the TRES weights to sum to that)."""
    want = int(want)
    top = max(others, key=others.get) if others else None
    if want <= MAX_WEIGHT:
        return (f"slurm.conf: PriorityWeightFairshare={want}"
                + (f" (ten times PriorityWeight{top}), or lower PriorityWeight{top}" if top else
                   " (larger than every other PriorityWeight*)"))
    cap = MAX_WEIGHT // 10
    lower = [f"PriorityWeight{n}={cap}" for n in sorted(others) if n != "TRES" and others[n] > cap]
    if others.get("TRES", 0) > cap:
        lower.append(f"the PriorityWeightTRES weights scaled to sum to at most {cap}")
    return (f"slurm.conf: PriorityWeightFairshare={MAX_WEIGHT} and {', '.join(lower)} (ten times "
            f"PriorityWeight{top}={_plain(others[top])} would be {want}, past Slurm's uint32 weights: "
            "no valid PriorityWeightFairshare alone outweighs it)")


def _other_weights(c: dict, s: Survey, pflags: set[str]) -> dict[str, float]:
    """The other factors' weights that can reorder jobs (a QOS or partition factor that is the
    same for every job cannot)."""
    others: dict[str, float] = {}
    for name in OTHER_FACTORS:
        w = _int(c.get(f"PriorityWeight{name}")) or 0
        if name == "QOS" and s.qos is not None and all(q.priority is not None for q in s.qos):
            if len({q.priority for q in s.qos}) <= 1 and "NO_NORMAL_QOS" not in pflags and "NO_NORMAL_ALL" not in pflags:
                continue  # every QOS has the same priority: the QOS factor moves no job past another
        if name == "Partition" and s.partitions is not None:
            tiers = {p.get("PriorityJobFactor", "1") for p in s.partitions.values()}
            if len(tiers) <= 1:
                continue  # one PriorityJobFactor everywhere: the partition factor is the same for every job
        if w > 0:
            others[name] = w
    tres = _tres_weight_sum(c.get("PriorityWeightTRES"))
    if tres > 0:
        others["TRES"] = tres
    return others


def _decay(c: dict, controlling: bool, add) -> None:
    try:
        half = parse_duration(c.get("PriorityDecayHalfLife", "")) or 0
    except ValueError:
        half = None
    reset = (c.get("PriorityUsageResetPeriod") or "NONE").strip().upper()
    if half == 0 and reset == "NONE":
        add("decay-off", "fatal", "fair-share",
            "PriorityDecayHalfLife is 0 and PriorityUsageResetPeriod is NONE: usage never decays and is never reset, "
            "so fair-share ranks users by their usage since accounting began and a heavy user never recovers "
            "(Slurm's slurm.conf(5): with 0, a reset period must be set).",
            "slurm.conf: PriorityDecayHalfLife=7-0 (or keep 0 and set PriorityUsageResetPeriod=MONTHLY for hard "
            "quotas), then `scontrol reconfigure`.")
    elif half == 0:
        add("decay-off-reset", "fatal" if controlling else "warning", "control",
            f"PriorityDecayHalfLife is 0 (usage reset {reset.lower()} instead): fscontrol's halving, control and "
            "forecast assume usage decays, so they do not hold here.",
            "slurm.conf: PriorityDecayHalfLife=7-0, or method = \"none\" in the fscontrol config.")
    elif reset != "NONE":
        add("usage-reset", "warning", "control",
            f"PriorityUsageResetPeriod is {reset}: every association's usage drops to 0 at each reset, which "
            "fscontrol's forecasts and control do not foresee.",
            "slurm.conf: PriorityUsageResetPeriod=NONE (decay alone forgets usage), then `scontrol reconfigure`.")


def _algorithm(pflags: set[str], intent: Intent, add, damping: int | None = None) -> None:
    fair_tree = "NO_FAIR_TREE" not in pflags and "DEPTH_OBLIVIOUS" not in pflags
    if fair_tree and damping is not None and damping != 1:
        add("damping-ignored", "warning", "fair-share",
            f"FairShareDampeningFactor is {damping}, but Fair Tree (PriorityFlags lacks NO_FAIR_TREE) never reads it: "
            "it softens nothing here.",
            "slurm.conf: FairShareDampeningFactor=1 (or drop the line), or PriorityFlags=NO_FAIR_TREE where the "
            "damping is meant.")
    if "INCR_ONLY" in pflags:
        add("incr-only", "warning", "fair-share",
            "PriorityFlags=INCR_ONLY: a pending job's priority never decreases, so a user's new usage does not "
            "lower the jobs they already have waiting.",
            "slurm.conf: remove INCR_ONLY from PriorityFlags, then `scontrol reconfigure`.")
    if intent.method not in CONTROL_METHODS:
        return
    if "DEPTH_OBLIVIOUS" in pflags:
        add("control-depth-oblivious", "fatal", "control",
            f"PriorityFlags=DEPTH_OBLIVIOUS: fscontrol's classic maths do not hold, so method {intent.method} "
            "cannot control the halving (the agent only advises).",
            "slurm.conf: PriorityFlags=NO_FAIR_TREE without DEPTH_OBLIVIOUS, or method = \"none\" in the config.")
    elif "NO_FAIR_TREE" not in pflags:
        add("control-fair-tree", "fatal", "control",
            f"Fair Tree is in use (PriorityFlags lacks NO_FAIR_TREE): it ranks users and never reads "
            f"FairShareDampeningFactor or a halving usage, so method {intent.method} cannot act (the agent only "
            "advises).",
            "slurm.conf: PriorityFlags=NO_FAIR_TREE (classic fair-share) and restart slurmctld, or method = "
            "\"none\" in the fscontrol config.")


def _reads(s: Survey, controlling: bool, intent: Intent, add) -> None:
    for what, err in sorted(s.errors.items()):
        if err.startswith("not recorded"):
            continue
        if what in ("sshare", "qos", "assoc"):
            add(f"read-{what}", "fatal" if (controlling or what == "sshare") else "warning", "fair-share",
                f"`{'sshare' if what == 'sshare' else 'sacctmgr'}` failed: {err} (is slurmdbd running and reachable?).",
                "start slurmdbd (`systemctl start slurmdbd`) and check AccountingStorageHost/Port in slurm.conf.")
        elif what == "slurm.conf" and intent.method in ("damping", "hybrid"):
            if intent.persist:  # (issue #30: an info line while every tick's persist did nothing)
                add("persist-slurm-conf", "warning", "control",
                    f"persist = true, but slurm.conf cannot be persisted to: {err}. The runtime d still follows "
                    "every pass; slurmctld's next start reads the file's d.",
                    "set slurm_conf to the file slurmctld reads (SLURM_CONF in `scontrol show config`), set "
                    "FairShareDampeningFactor in the included file yourself, or persist = false.")
            else:
                add("read-slurm-conf", "info", "doctor",
                    f"slurm.conf not read for its FairShareDampeningFactor line: {err}; the d-by-hand check was skipped.",
                    "run `fscontrol doctor` as root on the controller (or --slurm-conf FILE).")
    if (intent.persist and intent.method in ("damping", "hybrid") and s.conf_path is None
            and s.source.startswith("live")):
        add("persist-slurm-conf", "warning", "control",
            "persist = true, but there is no slurm.conf to write: the config sets no slurm_conf and slurmctld "
            "reports no SLURM_CONF.", "set slurm_conf in the cluster's table, or persist = false.")


def _tree(shares: tuple[ShareRow, ...], add) -> None:
    users = [r for r in shares if r.is_user]
    if not users:
        add("no-user-associations", "fatal", "fair-share",
            "sshare lists no user association: no user is charged any usage, so fair-share has no one to order.",
            "sacctmgr add user NAME account=ACCOUNT (one association per user and account).")
        return
    accounts = [r for r in shares if not r.is_user and r.account != "root" and r.raw_shares == 0
                and not r.shares_parent]
    if accounts:
        names = ", ".join(r.account for r in accounts[:3]) + (f" and {len(accounts) - 3} more" if len(accounts) > 3 else "")
        add("zero-shares-account", "warning", "fair-share",
            f"{len(accounts)} account(s) have FairShare=0 ({names}): every association under them gets a fair-share "
            "factor of 0 whatever it uses, so their jobs come after everyone else's.",
            f"sacctmgr modify account where name={accounts[0].account} set fairshare=1 (the same for each account "
            "named).")
    zero = [r for r in users if r.raw_shares == 0 and not r.shares_parent]
    if zero:
        names = ", ".join(f"{r.account}/{r.user}" for r in zero[:3]) + (f" and {len(zero) - 3} more" if len(zero) > 3 else "")
        add("zero-shares", "warning", "fair-share",
            f"{len(zero)} user association(s) have FairShare=0 ({names}): their fair-share factor is 0 whatever "
            "they use, so their jobs come after everyone else's.",
            "sacctmgr modify user where name=USER account=ACCOUNT set fairshare=1 (or remove the association).")


def _looked(s: Survey) -> str:
    return f"looked in {s.agent_history}" if s.agent_history else "no history named"


def _damping(s: Survey, intent: Intent, add) -> None:
    runtime = _int(_Conf(s.config).get("FairShareDampeningFactor"))
    if runtime is None:
        return
    conf = _int(s.conf_damping) if s.conf_damping is not None else (1 if s.conf_read else None)
    agent = s.agent_damping
    if agent is not None and runtime != agent:
        if conf == runtime:
            why = (f"slurm.conf says {conf}, and slurmctld re-reads it at every `scontrol reconfigure` or restart "
                   "(a plain reconfigure is enough")
            why += (f"; with persist = true the file should say {agent}: something rewrote it, config management "
                    "or an admin)" if intent.persist and conf != agent else
                    ", or config management that reconfigures)")
        else:
            why = "someone else set it (an admin or a script running `scontrol fsdampeningfactor`)"
        add("damping-reverted", "warning", "control",
            f"FairShareDampeningFactor is {runtime}, not the {agent} the agent last set: {why}.",
            ("nothing if it was a one-off reconfigure (the next control tick sets d again); if config management "
             "rewrites slurm.conf, leave FairShareDampeningFactor out of its template (or persist = true so the file "
             "carries the agent's d).") if not intent.persist else
            ("let fscontrol own slurm.conf's FairShareDampeningFactor line: leave it out of config management's "
             "template (or template the agent's value)."))
    elif agent is None and s.agent_sign:
        # an agent this doctor cannot see (another history) owns d: never advise undoing its d,
        # nor call it the site's own setting (slurm.conf then carries the agent's d)
        add("damping-agent-unseen", "warning", "control",
            f"FairShareDampeningFactor is {runtime} in slurmctld and {conf if conf is not None else 'unset'} in "
            f"{s.conf_path}, and {s.agent_sign}: most likely a running agent's d, set from a history this doctor "
            f"did not read ({_looked(s)}).",
            "run the doctor with that agent's own config (`fscontrol doctor --config` naming its agent.db), which "
            "checks its d; do not set d by hand while an agent controls it (the agent would set it again).")
    elif agent is None and conf is not None and runtime != conf:
        add("damping-by-hand", "warning", "control",
            f"FairShareDampeningFactor is {runtime} in slurmctld but {conf} in {s.conf_path}, and no fscontrol "
            f"history read here set it ({_looked(s)}): set by hand (`scontrol fsdampeningfactor`) or by an agent "
            f"with another history; the next reconfigure or restart puts back {conf}, and method "
            f"{intent.method} will set its own d.",
            "if an fscontrol agent with another history controls d, run the doctor with its config (its agent.db) "
            f"and change nothing; if it was set by hand, `scontrol fsdampeningfactor {conf}` (or write "
            f"FairShareDampeningFactor={runtime} in slurm.conf), and let the agent set d from then on.")
    elif agent is None and runtime != 1 and intent.method in ("damping", "hybrid"):
        add("damping-preset", "info", "control",
            f"FairShareDampeningFactor is already {runtime} (not Slurm's default 1): the agent will move it; "
            "`fscontrol control off` puts back the value it found.",
            "nothing to change, unless d is managed elsewhere: then method = \"padding\" or \"none\".")


def _padding(s: Survey, intent: Intent, add) -> None:
    account, user = intent.dummy
    key = f"{account}/{user}"
    if s.shares is not None:
        rows = {r.key: r for r in s.shares}
        if intent.dummy not in rows:
            add("dummy-missing", "fatal", "control",
                f"the padding association {key} does not exist: method {intent.method} has no one to charge the "
                "padding to (the agent only advises).",
                f"sacctmgr -i add account {account} parent=root fairshare=1; sacctmgr -i add user {user} "
                f"account={account} defaultaccount={account} (docs/deploy.md: padding setup).")
        else:
            acct = rows.get((account, ""))
            if acct is None or acct.parent != "root":
                add("dummy-not-top-level", "fatal", "control",
                    f"the padding account {account} is under {acct.parent if acct else '?'}, not root: its padding "
                    "would be charged to that parent's share too.",
                    f"a top-level padding account: sacctmgr -i add account fsadmin parent=root fairshare=1, and "
                    "dummy = \"fsadmin/USER\" in the config.")
            others = [r for r in s.shares if r.parent == account and r.key != intent.dummy]
            if others:
                add("dummy-not-alone", "fatal", "control",
                    f"the padding account {account} holds {len(others)} other association(s) "
                    f"({', '.join('/'.join(r.key).strip('/') for r in others[:3])}): classic fair-share charges "
                    "siblings a share of the padding.",
                    f"give the padding user an account of its own (sacctmgr -i add account fsadmin parent=root) and "
                    "name it in the config's dummy.")
    if s.qos is not None:
        q = {x.name.lower(): x for x in s.qos}.get(intent.padding_qos.lower())
        if q is None:
            add("padding-qos-missing", "fatal", "control",
                f"the padding QOS {intent.padding_qos} does not exist: the padding job cannot be submitted.",
                f"sacctmgr -i add qos {intent.padding_qos}; sacctmgr -i modify user where name={user} set "
                f"qos+={intent.padding_qos}.")
        else:
            need = PADDING_JOB_S if intent.padding_mode == "steady" else _calc_period(s.config)
            if intent.padding_mode == "trim" and need is not None:  # three passes, at least 2 minutes
                need = int(max(120, 60 * math.ceil(3 * need / 60)))  # (act.actions.trim_pad_limit_s)
            if q.max_wall_s is not None and need is not None and q.max_wall_s < need:
                add("padding-qos-maxwall", "fatal", "control",
                    f"the padding QOS {q.name} has MaxWall {q.max_wall_s} s, shorter than the {need} s the "
                    f"{intent.padding_mode} padding job asks: Slurm refuses or never starts it.",
                    f"sacctmgr -i modify qos {q.name} set maxwall=-1 (no limit).")
            if q.grp_tres_mins:
                add("padding-qos-quota", "warning", "control",
                    f"the padding QOS {q.name} has GrpTRESMins={q.grp_tres_mins}: the padding job stops starting "
                    f"once that quota is used{' (for good: Flags=NoDecay)' if 'nodecay' in q.flags else ''}.",
                    f"sacctmgr -i modify qos {q.name} set grptresmins=cpu=-1 (no quota on the padding QOS).")
            if s.assoc_qos is not None and intent.dummy in s.assoc_qos and q.name.lower() not in s.assoc_qos[intent.dummy]:
                add("padding-qos-access", "fatal", "control",
                    f"the padding user {key} may not use QOS {q.name} (its QOS: "
                    f"{','.join(s.assoc_qos[intent.dummy]) or 'none'}): the padding job would be refused.",
                    f"sacctmgr -i modify user where name={user} account={account} set qos+={q.name}.")
    if s.partitions is not None and intent.dummy_partition not in s.partitions:
        add("padding-partition-missing", "fatal", "control",
            f"the padding partition {intent.dummy_partition} does not exist: the padding job cannot be submitted.",
            f"slurm.conf: PartitionName={intent.dummy_partition} Nodes=... AllowGroups={user},root PriorityTier=10 "
            "TRESBillingWeights=CPU=1.0, then `scontrol reconfigure` (docs/deploy.md).")


def _tiers(s: Survey, intent: Intent, add) -> None:
    """Partitions of different PriorityTier (the padding partition aside: its tier is by design)."""
    if not s.partitions:
        return
    tier = {n: _int(p.get("PriorityTier")) or 0 for n, p in s.partitions.items() if n != intent.dummy_partition}
    if len(set(tier.values())) > 1:
        top = max(tier.values())
        first = sorted(n for n, t in tier.items() if t == top)
        add("partition-tiers", "info", "fair-share",
            f"partitions have different PriorityTier ({', '.join(f'{n}={t}' for n, t in sorted(tier.items()))}): Slurm "
            f"considers every pending job of {', '.join(first)} before any job of a lower tier, whatever its fair-share, "
            "so fair-share orders jobs only within a tier.",
            "none if intended; else one PriorityTier for the partitions users share (scontrol update "
            "PartitionName=NAME PriorityTier=1, and the same in slurm.conf).")


def _max_tres_gres(c: dict, s: Survey, add) -> None:
    """PriorityFlags=MAX_TRES_GRES on a Slurm before 25.05: read_config.c finds MAX_TRES inside the
    name (xstrcasestr) and bills MAX_TRES, silently, and `scontrol show config` prints MAX_TRES
    (docs/billing.md, measured on 22.05 and 24.11): only slurm.conf's own text shows what was asked."""
    version = c.get("SLURM_VERSION", "")
    try:
        old = not billing.has_max_tres_gres(version)
    except ConfigError:  # (a version that is not MAJOR.MINOR: nothing to say)
        return
    asked = s.conf_priority_flags if s.conf_priority_flags is not None else c.get("PriorityFlags")
    if old and "MAX_TRES_GRES" in _flags(asked):
        add("max-tres-gres", "warning", "fair-share",
            f"slurm.conf's PriorityFlags names MAX_TRES_GRES, which Slurm {version} does not have (25.05 and later): "
            "it bills MAX_TRES instead, silently (the largest weighted node TRES, GPUs among them; not the GRES "
            "summed on top), and `scontrol show config` shows MAX_TRES.",
            "slurm.conf: write MAX_TRES in place of MAX_TRES_GRES (what is in force), or upgrade Slurm to 25.05+ "
            "for MAX_TRES_GRES; then `scontrol reconfigure`.")


def _info(c: dict, s: Survey, add) -> None:
    untested = versions.untested_warning(c.get("SLURM_VERSION", "unknown"))
    if untested:
        add("slurm-version", "info", "control", untested, "none needed; docs/testing.md lists the tested releases.")
    if privatedata.usage_hidden(c.get("PrivateData")):
        add("private-usage", "info", "fair-share",
            f"PrivateData={c.get('PrivateData')}: users see only their own sshare rows, so their forecasts need the agent's published "
            "snapshot.",
            "set [agent] publish_dir in the fscontrol config (docs/deploy.md).")
    if s.qos is not None:
        odd = [q for q in s.qos if q.usage_factor is not None and q.usage_factor != 1.0]
        if odd:
            add("qos-usage-factor", "info", "fair-share",
                "QOS with UsageFactor other than 1: " + ", ".join(f"{q.name}={q.usage_factor:g}" for q in odd[:5])
                + ": their jobs are charged that multiple of their use.",
                "none needed if intended.")


def worst(findings: list[Finding]) -> str | None:
    """The most severe severity among `findings`, or None for none."""
    for sev in SEVERITIES:
        if any(f.severity == sev for f in findings):
            return sev
    return None


def control_blocker(findings: list[Finding]) -> Finding | None:
    """The first fatal finding: the agent's control only advises while one stands."""
    return next((f for f in findings if f.severity == "fatal"), None)
