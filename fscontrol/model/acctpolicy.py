"""Association and QOS limits on running jobs and CPUs, as slurmctld applies them (pure).

slurmctld holds a pending job back while starting it would put one of its limits over
(acct_policy.c): the running jobs of its association (MaxJobs, GrpJobs), of each account above it
(GrpJobs) and their CPUs (GrpTRES=cpu=N); its QOS's (GrpJobs, GrpTRES=cpu), the user's in that QOS
(MaxJobsPU, MaxTRESPU=cpu), the account's in it (MaxJobsPA, MaxTRESPA=cpu); and its partition's
QOS's, read before the job's own QOS's unless that one has OverPartQOS (`qos_order`: of each kind
the first QOS that sets one applies). A QOS's limit of a kind masks the associations' of that kind
(`qos_rec.grp_jobs == INFINITE && ...`; MaxJobsPU or MaxJobsPA mask MaxJobs); an account's MaxJobs
is the default of the associations below it that set none (slurmctld propagates it). Such a job is
passed by, never stopping the main pass, and backfill makes no plan for it (backfill.c:
`acct_policy_job_runnable_pre_select` / `_post_select`, `continue`); it starts once a job of the
limit ends, if it is then first.

`model` turns sacctmgr's rows (slurm/tres.py) into each (account, user, QOS)'s limits; `counts`
gives a schedule the counters (`Counts`) of its jobs. `enforces_limits` and `job_prio_thresh`:
a QOS's MinPrioThreshold, where acct_policy_get_prio_thresh finds it. The start estimate (forecast/startlimits.py)
and the replay (sim/mfcore.py, from a capture's assoc.txt and qoslimits.txt) play them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

# squeue's reasons for the limits modelled (slurm_protocol_defs.c job_reason_string): the kinds of
# limit (Limit.kind) that give each, and whether on jobs or on CPUs
REASON_KINDS = {"AssocMaxJobsLimit": ({"association"}, "jobs"), "AssocGrpJobsLimit": ({"association", "account"}, "jobs"),
                "AssocGrpCpuLimit": ({"association", "account"}, "cpus"), "QOSMaxJobsPerUserLimit": ({"qos-user"}, "jobs"),
                "QOSGrpJobsLimit": ({"qos"}, "jobs"), "QOSGrpCpuLimit": ({"qos"}, "cpus"),
                "QOSMaxCpuPerUserLimit": ({"qos-user"}, "cpus"), "MaxJobsPerAccount": ({"qos-account"}, "jobs"),
                "MaxCpuPerAccount": ({"qos-account"}, "cpus")}
REASONS = frozenset(REASON_KINDS)
@dataclass(frozen=True, slots=True)
class Limit:
    name: str  # "association physics/alice", "account physics", "qos normal", "qos normal, user alice", ...
    kind: str  # "association", "account", "qos", "qos-user", "qos-account"
    jobs: float = math.inf  # running jobs at most
    cpus: float = math.inf  # CPUs of the running jobs at most


@dataclass(frozen=True, slots=True)
class Limits:
    """Each (account, user, QOS)'s limits, from sacctmgr (`model`)."""

    of: Mapping[tuple[str, str, str], tuple[Limit, ...]]  # the limits a job is checked against (its caps)
    own: Mapping[tuple[str, str, str], frozenset[str]]  # of those, the ones that count the user's own jobs alone
    # the counters a job's use goes to, whatever its QOS masks (acct_policy.c `_adjust_limit_usage`:
    # every association up its chain, its QOS, the QOS's per-user and per-account records)
    scopes: Mapping[tuple[str, str, str], tuple[str, ...]] = field(default_factory=dict)


@dataclass(slots=True)
class Counts:
    """A plan's counters: `of[k]` the counters (indices) job key k's use goes to (pending 0..n-1,
    then running), `chk[k]` the (counter, cap on running jobs, cap on CPUs) it is checked against
    (a counter's cap may differ from job to job: a QOS masks an association's limit for its own
    jobs alone; default: each of `of` at capj / capc), `cpus[k]` its CPUs; capj / capc each
    counter's largest cap, and what is in use."""

    of: list[tuple[int, ...]]
    cpus: list[int]
    capj: list[float]
    capc: list[float]
    usej: list[int] = field(default_factory=list)
    usec: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    chk: list[tuple[tuple[int, float, float], ...]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.chk:
            self.chk = [tuple((x, self.capj[x], self.capc[x]) for x in ks) for ks in self.of]

    def fresh(self) -> Counts:
        """The same limits, nothing in use (a plan adds its running jobs)."""
        return Counts(self.of, self.cpus, self.capj, self.capc, [0] * len(self.capj), [0] * len(self.capj), self.kinds,
                      self.names, self.chk)

    def never(self, k: int) -> str:
        """Why job key k can never start under its limits ("" if it can): a limit that allows no
        running job, or fewer CPUs than it asks for (slurmctld keeps it pending: acct_policy.c,
        `TRES_USAGE_REQ_EXCEEDS_LIMIT`)."""
        c = self.cpus[k]
        for x, cj, cc in self.chk[k]:
            name = self.names[x] if x < len(self.names) else f"limit {x}"
            if cj < 1:
                return f"{name} allows no running job"
            if c > cc:
                return f"it asks for {c} CPUs, more than the {cc:g} {name} allows running at once"
        return ""

    def count_blocking(self, k: int) -> int:
        """The first limit on running jobs (not CPUs) that holds job key k now, or -1: slurmctld's
        backfill passes such a job by before it counts towards bf_max_job_test or bf_max_job_user
        (backfill.c, `acct_policy_job_runnable_pre_select`)."""
        for x, cj, _ in self.chk[k]:
            if self.usej[x] >= cj:
                return x
        return -1

    def count_blocked(self, k: int) -> bool:
        return self.count_blocking(k) >= 0

    def holds(self, k: int, reason: str) -> bool:
        """Whether a limit of the kind squeue's `reason` names holds job key k now."""
        kinds, what = REASON_KINDS[reason]
        c = self.cpus[k]
        for x, cj, cc in self.chk[k]:
            if self.kinds[x] in kinds and (self.usej[x] >= cj if what == "jobs" else self.usec[x] + c > cc):
                return True
        return False

    def over(self, k: int) -> bool:
        """Whether starting job key k now would put one of its limits over."""
        c = self.cpus[k]
        uj, uc = self.usej, self.usec
        for x, cj, cc in self.chk[k]:
            if uj[x] >= cj or uc[x] + c > cc:
                return True
        return False

    def blocking(self, k: int) -> int:
        """The first of job key k's limits that starting it now would put over, or -1."""
        c = self.cpus[k]
        for x, cj, cc in self.chk[k]:
            if self.usej[x] >= cj or self.usec[x] + c > cc:
                return x
        return -1

    def add(self, k: int, sign: int = 1) -> None:
        c = self.cpus[k] * sign
        for x in self.of[k]:
            self.usej[x] += sign
            self.usec[x] += c


def _cpu(tres: Mapping[str, Mapping[str, float]], limit: str) -> float | None:
    v = (tres.get(limit) or {}).get("cpu")
    return None if v is None else float(v)


def model(assocs: Sequence, qoss: Sequence, keys: set[tuple[str, str, str]]) -> Limits:
    """The limits of each (account, user, QOSes) of `keys`, from tres.parse_assoc_limits' and
    parse_qos_limits' rows (one cluster's). QOSes: the job's QOS, or its QOSes in slurmctld's order
    (`qos_order`: "part>normal", the partition's QOS first unless the job's has OverPartQOS); of
    each kind of limit (GrpJobs, GrpTRES=cpu, MaxJobsPU, MaxTRESPU=cpu, MaxJobsPA, MaxTRESPA=cpu)
    the first QOS that sets it applies, on that QOS's usage (acct_policy.c's qos_rec: the second
    fills only what the first leaves INFINITE), and a kind either sets masks the associations'."""
    acct = {a.account: a for a in assocs if not a.user}
    user = {}
    for a in assocs:
        if a.user:
            user.setdefault((a.account, a.user), a)  # (per-partition associations: the first)
    qos = {q.account.lower(): q for q in qoss}  # (names as slurmctld matches them: whatever their case)
    of: dict[tuple[str, str, str], tuple[Limit, ...]] = {}
    own: dict[tuple[str, str, str], frozenset[str]] = {}
    scopes: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for a_, u_, q_ in keys:
        out: list[Limit] = []
        mine: set[str] = set()
        names = [x for x in q_.split(">")]
        won: dict[str, tuple[str, float]] = {}  # kind of limit -> (the QOS whose it is, its value)
        for name in names:
            q = qos.get(name.lower())
            if q is None:
                continue
            for kind, v in (("GrpJobs", q.jobs.get("GrpJobs")), ("GrpCpu", _cpu(q.tres, "GrpTRES")),
                            ("MaxJobsPU", q.jobs.get("MaxJobsPU")), ("MaxCpuPU", _cpu(q.tres, "MaxTRESPU")),
                            ("MaxJobsPA", q.jobs.get("MaxJobsPA")), ("MaxCpuPA", _cpu(q.tres, "MaxTRESPA"))):
                if v is not None and kind not in won:
                    won[kind] = (name, v)

        def mine_of(name: str, j: str, c: str) -> tuple[float | None, float | None]:
            return (won[j][1] if j in won and won[j][0] == name else None,
                    won[c][1] if c in won and won[c][0] == name else None)

        for name in names:
            gj, gc = mine_of(name, "GrpJobs", "GrpCpu")
            if gj is not None or gc is not None:
                out.append(Limit(f"qos {name}", "qos", _inf(gj), _inf(gc)))
            pj, pc = mine_of(name, "MaxJobsPU", "MaxCpuPU")
            if pj is not None or pc is not None:
                out.append(Limit(f"qos {name}, user {u_}", "qos-user", _inf(pj), _inf(pc)))
                mine.add(out[-1].name)
            aj, ac = mine_of(name, "MaxJobsPA", "MaxCpuPA")
            if aj is not None or ac is not None:
                out.append(Limit(f"qos {name}, account {a_}", "qos-account", _inf(aj), _inf(ac)))
        # the association and the accounts above it: Grp limits at each level, unless a QOS sets one
        # of the kind; MaxJobs at the association's (its own or the nearest account's)
        chain = []
        if (a_, u_) in user:
            chain.append(user[(a_, u_)])
        x, seen = a_, set()
        while x and x not in seen and x in acct:
            seen.add(x)
            chain.append(acct[x])
            x = acct[x].parent
        max_jobs = next((r.jobs["MaxJobs"] for r in chain if "MaxJobs" in r.jobs), None)
        if "MaxJobsPU" in won or "MaxJobsPA" in won:
            max_jobs = None
        for r in chain:
            gj = r.jobs.get("GrpJobs") if "GrpJobs" not in won else None
            gc = _cpu(r.tres, "GrpTRES") if "GrpCpu" not in won else None
            if r.user:
                mj = max_jobs
                j = min(_inf(gj), _inf(mj))
                if j < math.inf or gc is not None:
                    out.append(Limit(f"association {a_}/{u_}", "association", j, _inf(gc)))
                    mine.add(out[-1].name)
            elif gj is not None or gc is not None:
                out.append(Limit(f"account {r.account}", "account", _inf(gj), _inf(gc)))
        if not chain or not chain[0].user:  # (no association row for the user: the account's MaxJobs as theirs)
            if max_jobs is not None:
                out.append(Limit(f"association {a_}/{u_}", "association", float(max_jobs)))
                mine.add(out[-1].name)
        of[(a_, u_, q_)] = tuple(out)
        own[(a_, u_, q_)] = frozenset(mine)
        scopes[(a_, u_, q_)] = (*(y for name in names for y in (f"qos {name}", f"qos {name}, user {u_}",
                                                                   f"qos {name}, account {a_}")),
                                f"association {a_}/{u_}", *(f"account {r.account}" for r in chain if not r.user))
    return Limits(of, own, scopes)


def relative(qoss: Sequence, rel: Collection[str], part_qos: Mapping[str, str], part_cpus: Mapping[str, int]) -> list:
    """parse_qos_limits' rows with the QOSes flagged Relative (`rel`) made absolute as slurmctld
    does (assoc_mgr.c `_foreach_tres_pos_set_cnt`: each TRES limit, at most 100, times the count
    of the partition whose QOS it is, / 100, rounded down: GrpTRES=cpu=5 on 128 CPUs is 6); a
    Relative QOS that is no partition's QOS keeps its numbers (slurmctld's relative count is
    unset), limits on jobs too."""
    home = {q.lower(): p for p, q in part_qos.items() if q}
    rl = {x.lower() for x in rel}
    out = []
    for q in qoss:
        p = home.get(q.account.lower())
        if q.account.lower() in rl and p is not None and part_cpus.get(p):
            c = int(part_cpus[p])
            q = replace(q, tres={k: ({**v, "cpu": int(min(float(v["cpu"]), 100.0)) * c // 100} if "cpu" in v else v)
                                 for k, v in q.tres.items()})
        out.append(q)
    return out


def qos_order(qos: str, partition: str, part_qos: Mapping[str, str], over: Collection[str]) -> str:
    """A job's QOSes as slurmctld reads their limits (acct_policy_set_qos_order), for `model`'s
    keys: its partition's QOS first, unless its own QOS has the OverPartQOS flag (`over`), joined
    by ">"; its own alone where the partition has none or the same. `qos`: squeue's %q (of
    several, "high,normal" on 24.11 and later for a pending job's --qos list: its first); a job of
    several partitions: its first listed. Names lower-case (slurmctld matches them whatever their
    case: sacctmgr keeps them so, a partition's QOS= is printed as written)."""
    jq = qos.split(",")[0].strip().lower()
    pq = (part_qos.get(partition.split(",")[0], "") if partition else "").strip().lower()
    if not pq or pq == jq:
        return jq
    if not jq:
        return pq
    return f"{jq}>{pq}" if jq in {x.lower() for x in over} else f"{pq}>{jq}"


def _inf(v) -> float:
    return math.inf if v is None else float(v)


def counts(limits: Limits, keys: Sequence[tuple[str, str, str]], cpus: Sequence[int],
           hidden: bool = False) -> Counts | None:
    """The counters (nothing in use) of jobs with these (account, user, QOS) and CPUs, or None when
    no limit applies to any; `hidden`: only the limits that count the user's own jobs. A counter is
    one a job is checked against; every job whose scope it is counts towards it, whatever caps that
    job is checked against (its QOS may mask them)."""
    names: dict[str, int] = {}
    capj: list[float] = []
    capc: list[float] = []
    kinds: list[str] = []
    chk: list[tuple[tuple[int, float, float], ...]] = []
    seen: dict[tuple[str, str, str], tuple[tuple[int, float, float], ...]] = {}  # (10,000 jobs, a few hundred keys)
    for key in keys:
        got = seen.get(key)
        if got is not None:
            chk.append(got)
            continue
        ks = []
        for lim in limits.of.get(key, ()):
            if hidden and lim.name not in limits.own.get(key, frozenset()):
                continue
            x = names.get(lim.name)
            if x is None:
                x = names[lim.name] = len(capj)
                capj.append(lim.jobs)
                capc.append(lim.cpus)
                kinds.append(lim.kind)
            else:  # (the largest cap, the bound a walk of its held jobs uses)
                capj[x] = max(capj[x], lim.jobs)
                capc[x] = max(capc[x], lim.cpus)
            ks.append((x, lim.jobs, lim.cpus))
        chk.append(seen.setdefault(key, tuple(ks)))
    if not capj:
        return None
    of = []
    ofs: dict[tuple[str, str, str], tuple[int, ...]] = {}
    for key, ks in zip(keys, chk):
        o = ofs.get(key)
        if o is None:
            sc = limits.scopes.get(key)
            o = ofs[key] = (tuple(x for name in sc if (x := names.get(name)) is not None) if sc is not None
                            else tuple(x for x, _, _ in ks))
        of.append(o)
    return Counts(of, list(cpus), capj, capc, [0] * len(capj), [0] * len(capj), kinds,
                  sorted(names, key=names.__getitem__), chk)


def enforces_limits(enforce: str) -> bool:
    """Whether slurmctld enforces association and QOS limits under this AccountingStorageEnforce
    ("limits", "safe" or "all" among its values, read_config.c's ACCOUNTING_ENFORCE_LIMITS: without
    it acct_policy_job_runnable_pre_select passes every job, and acct_policy_get_prio_thresh
    returns 0, so MinPrioThreshold is not read either)."""
    return bool({x.strip().lower() for x in enforce.split(",")} & {"limits", "2", "safe", "all"})


def job_prio_thresh(qos: str, partition: str, thr: Mapping[str, int], over: Collection[str],
                    part_qos: Mapping[str, str]) -> int:
    """A job's MinPrioThreshold as acct_policy_get_prio_thresh finds it: its partition's QOS first
    unless its own QOS has the OverPartQOS flag, the first of the two that sets one (`thr`: each
    QOS's; `over`: the QOSes flagged OverPartQOS; `part_qos`: each partition's QOS). A job of
    several partitions: its first listed; of several QOSes (squeue's %q of a pending job on 24.11
    and later is the --qos asked for, "high,normal"): its first. Its QOS "" is `normal`. QOS names
    are matched whatever their case, as slurmctld looks them up (assoc_mgr's xstrcasecmp:
    sacctmgr keeps them lower-case, a partition's QOS= and a job's --qos are printed as written).
    0: none (the job is held to bf_min_prio_reserve alone)."""
    low = {k.lower(): v for k, v in thr.items()}
    order = qos_order(qos.split(",")[0].strip() or "normal", partition, part_qos, over).split(">")
    return next((low[q] for q in order if q and low.get(q)), 0)


def one_more(limits: Any, i: int, more: Iterator[int] | None, keys: list[int], mask: int) -> bool:
    """A backfill cycle's job i is held by a limit on running jobs (one the cycle's own starts may
    have filled): it counts towards no bf_max_job_test (backfill.c, pre_select before
    `bf_last_depth_try++`), so the next candidate of `more` joins `keys`; whether one did."""
    if more is None or not limits.count_blocked(i):
        return False
    nx = next(more, None)
    if nx is None:
        return False
    keys.append(nx & mask if mask != -1 else nx)
    return True
