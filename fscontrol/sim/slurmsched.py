"""Slurm's scheduler as slurmctld runs it (sched/backfill, 22.05 and 24.11): the main scheduler
and the backfill cycle, for the multifactor engine (mfcore.py calls `backfill_starts`).

What slurmctld does, and what the engine does with it (slurm.conf(5), SchedulerParameters;
src/slurmctld/job_scheduler.c `schedule`, src/plugins/sched/backfill/backfill.c):

* **The main scheduler** runs at every event that may let a job start (a submission, a job's end)
  over at most `default_queue_depth` jobs (100), and every `sched_interval` (60 s) over them all.
  It walks the pending jobs in priority order and starts each that fits; once one job of a
  partition is left pending, no later job of that partition starts ("Priority"): what it starts
  is a prefix of the queue. The engine runs it at every arrival and end and on its own timer.
* **Backfill** runs every `bf_interval` (30 s; -1 or SchedulerType=sched/builtin: never; the first
  cycle where the backfill agent's chain puts it, `bf_first_cycle`). It walks
  at most `bf_max_job_test` (500) jobs in priority order against a plan of the machine
  (`backfill_starts`, after backfill.c `_attempt_backfill`): the running jobs end at their start
  plus their time limit; a job may start at the earliest time T when they leave its CPUs free
  and no reservation made earlier in the cycle holds its nodes in [T, T + limit]. T = now: it
  starts. Later, within `bf_window` (1440 minutes): its nodes are reserved from T to T + limit,
  both rounded DOWN to a multiple of `bf_resolution` (60 s) counted from the epoch. A
  reservation holds **whole nodes** (backfill's node_space map is by node): on a one-node
  machine nothing runs beside a reserved job, even in CPUs it leaves free.
* A backfill cycle runs only if something changed since the last one began (backfill.c
  `_more_work`: last_job_update >= last_backfill_time, in whole seconds, so a change at the very
  time of the last cycle counts). The changes: a job's arrival, start, end or completion, a decay
  pass (it resets the pending jobs' priorities), a main pass that passes a job by behind the one
  that does not fit (Reason=Priority, job_scheduler.c). A skipped cycle is not a no-op: a later
  now moves bf_window's end and the bf_resolution rounding, so the engine and the reference skip
  the same ones.
* **Count limits** (SchedulerParameters, 0 = none): a cycle tests at most `bf_max_job_user` jobs
  of one user (`bf_max_job_assoc` of one association, `bf_max_job_part` of one partition,
  `bf_max_job_user_part` of one user in one partition), skipping the rest (`bf_tested`), and ends
  once it started `bf_max_job_start`; a main pass ends once it started `sched_max_job_start`.
* `bf_continue` (keep walking the cycle's list after yielding locks) changes nothing here: the
  engine's cycle does not yield.

* **PriorityTier**: both walk the queue by the job's partition's PriorityTier first, then by
  priority (job_scheduler.c `sort_job_queue2`, used by the main scheduler and by backfill). The
  engine folds the tier's rank x 2^32 into the priority (mfcore.py, from a capture's
  partitions.txt: Workload.meta["partition_tiers"]). A job that does not fit stops the main pass
  for its partition and the partition's nodes (`failed_parts`, `avail_node_bitmap`): with
  partitions over the same nodes, for all, as the engine's one queue does.

Simplifications (docs/simulator-fidelity.md): one queue (partitions over different nodes are
modelled on nodes, mfcore.py's `main_pass_parts` and nodesched.backfill_nodes' masks;
not in the pool; no preemption between tiers), the machine as `node_cpus`-CPU nodes whose free CPUs are
pooled here (a job's CPUs are not placed on particular nodes; a reservation takes ceil(CPUs /
node_cpus) whole nodes) unless `node_model` is set: then the engine places each job on nodes and
backfills with nodesched.backfill_nodes instead of `backfill_starts` (a capture of several nodes,
each its own size). SchedulerParameters' count limits are applied: per user, association, partition and
user in a partition on the jobs a cycle tests (`bf_tested`), bf_max_job_start on a cycle's
starts, sched_max_job_start on a main pass's, partition_job_depth on the jobs a main pass tests
of one partition (mfcore.py); bf_min_age_reserve and bf_min_prio_reserve keep a job from a
backfill plan (`no_reserve`).
"""

from __future__ import annotations

import math
import re
from itertools import accumulate, compress, count, repeat
from operator import itemgetter, le
from bisect import bisect_left, bisect_right, insort
from dataclasses import asdict, dataclass
from typing import Any, Collection, Iterable, Iterator, Mapping, Sequence

from fscontrol.model.acctpolicy import one_more

from ..errors import ConfigError
from .availability import Profile


@dataclass(frozen=True)
class SlurmSched:
    """SchedulerType and SchedulerParameters (Slurm's defaults) and the node size."""

    sched_interval_s: float = 60.0
    default_queue_depth: int = 100
    batch_sched_delay_s: float = 3.0  # a submission's main pass: at least this long after the background loop's last
    backfill: bool = True  # SchedulerType=sched/backfill (and bf_interval != -1)
    main_sched: bool = True  # the main scheduler runs (sched_interval=-1: `_schedule` returns at once, events too)
    bf_interval_s: float = 30.0
    bf_window_s: float = 1440 * 60.0
    bf_resolution_s: float = 60.0
    bf_max_job_test: int = 500
    bf_continue: bool = False
    # per-cycle limits (0: none; `bf_tested`): at most this many jobs of one user, one association
    # (account and user; set beside bf_max_job_user, it wins, as slurmctld says), one partition, one
    # user in one partition are tested in a cycle; a cycle ends once it started bf_max_job_start
    bf_max_job_user: int = 0
    bf_max_job_assoc: int = 0
    bf_max_job_part: int = 0
    bf_max_job_user_part: int = 0
    bf_max_job_start: int = 0
    sched_max_job_start: int = 0  # a main pass ends once it started this many (0: no limit)
    partition_job_depth: int = 0  # a main pass tests at most this many jobs of one partition (0: no limit)
    # backfill reserves nothing for a job pending (since its begin time) less than this long, or of a
    # priority below this (0: none): it starts if it fits now, else the cycle goes on without a plan
    # for it (backfill.c `job_no_reserve = TEST_NOW_ONLY`; `no_reserve`)
    bf_min_age_reserve_s: float = 0.0
    bf_min_prio_reserve: int = 0
    # the same two as the main scheduler reads them (job_scheduler.c: atoi > 0 with no upper bound;
    # atoll > 0 cast to 32 bits): a job that does not fit does not fail its partition when it is
    # younger than main_min_age_s, or its priority below main_min_prio (`fail_by_part = false`: the
    # pass goes on to the partition's next jobs). -1: the bf_ value (sched_from_config sets both)
    main_min_age_s: float = -1.0
    main_min_prio: int = -1
    node_cpus: int = 0  # the CPUs of a node (0: the whole machine is one node; nodes of several sizes: the largest's)
    # "" (the pool: free CPUs as one count, a reservation ceil(CPUs / node_cpus) nodes' CPUs), or a
    # nodeplace.VERSIONS rule: the engine keeps each node's CPUs (nodeplace.place) and backfills on
    # nodes (nodesched.backfill_nodes) by that version's rule, on a machine of several nodes (of
    # different sizes: the workload's meta "machine", "node_cpus_each", read by mfcore)
    node_model: str = ""
    complete_s: float = 0.0  # a job's CPUs are free this long after its end (COMPLETING: the epilog)
    unmodelled: tuple[str, ...] = ()  # SchedulerParameters items the model does not apply (named in the output)
    source: str = "Slurm's defaults"

    def __post_init__(self) -> None:
        if self.default_queue_depth < 0 or self.bf_max_job_test < 1:
            raise ConfigError("default_queue_depth must be >= 0 and bf_max_job_test >= 1")
        if self.bf_interval_s <= 0 or self.bf_resolution_s <= 0 or self.bf_window_s <= 0:
            raise ConfigError("bf_interval, bf_resolution and bf_window must be > 0")
        if self.complete_s < 0:
            raise ConfigError("complete_s must be >= 0")
        if self.batch_sched_delay_s < 0:
            raise ConfigError("batch_sched_delay must be >= 0")
        for name in _LIMITS:
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0")
        if self.node_cpus < 0:
            raise ConfigError("node_cpus must be >= 0")
        if self.main_min_age_s == -1:
            object.__setattr__(self, "main_min_age_s", self.bf_min_age_reserve_s)
        if self.main_min_prio == -1:
            object.__setattr__(self, "main_min_prio", self.bf_min_prio_reserve)
        if min(self.bf_min_age_reserve_s, self.bf_min_prio_reserve, self.main_min_age_s, self.main_min_prio) < 0:
            raise ConfigError("bf_min_age_reserve and bf_min_prio_reserve must be >= 0")
        if self.node_model not in ("", "22.05", "24.11", "25.11", "26.05"):
            raise ConfigError(f"node_model {self.node_model!r}: '' (the pool) or one of 22.05, 24.11, 25.11, 26.05")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def bf_limited(self) -> bool:
        """A per-user, -association or -partition limit on the jobs a backfill cycle tests."""
        return bool(self.bf_max_job_user or self.bf_max_job_assoc or self.bf_max_job_part or self.bf_max_job_user_part)

    def limits_text(self) -> str:
        """The limits set, as SchedulerParameters writes them ("" for none)."""
        own = [f"{k}={getattr(self, k)}" for k in _LIMITS if getattr(self, k)]
        if self.bf_min_age_reserve_s:
            own.append(f"bf_min_age_reserve={self.bf_min_age_reserve_s:g}")
        if self.bf_min_prio_reserve:
            own.append(f"bf_min_prio_reserve={self.bf_min_prio_reserve}")
        return ",".join(own)

    @property
    def no_reserve_set(self) -> bool:
        """bf_min_age_reserve or bf_min_prio_reserve: some jobs may get no backfill plan (`no_reserve`)."""
        return bool(self.bf_min_age_reserve_s or self.bf_min_prio_reserve)


# the count limits (SchedulerParameters, each 0 for none); slurmctld logs an error for a negative
# one, or a bf_max_job_start over 10,000 (backfill.c MAX_BF_MAX_JOB_START), and takes 0
_LIMITS = ("bf_max_job_user", "bf_max_job_assoc", "bf_max_job_part", "bf_max_job_user_part", "bf_max_job_start",
           "sched_max_job_start", "partition_job_depth")
BF_MAX_JOB_START_MAX = 10_000
# the values slurmctld logs as invalid and replaces by its default (backfill.c `_load_config`,
# job_scheduler.c `_schedule`, 22.05.8)
_INVALID = {"bf_interval": lambda v: v < 1 or v > 10800, "bf_resolution": lambda v: v < 1 or v > 3600,
            "bf_window": lambda v: v < 1 or v * 60 > 30 * 86400, "bf_max_job_test": lambda v: v < 1 or v > 1_000_000,
            "default_queue_depth": lambda v: v < 0, "batch_sched_delay": lambda v: v < 0,
            "sched_interval": lambda v: v < -1, "bf_min_age_reserve": lambda v: v < 0 or v > 30 * 86400}


_INT_KEYS = {"sched_interval": "sched_interval_s", "default_queue_depth": "default_queue_depth",
             "batch_sched_delay": "batch_sched_delay_s",
             "bf_interval": "bf_interval_s", "bf_resolution": "bf_resolution_s",
             "bf_max_job_test": "bf_max_job_test", "bf_window": "bf_window_s", "bf_min_age_reserve": "bf_min_age_reserve_s",
             **{k: k for k in _LIMITS}}


def sched_from_config(text: str, *, node_cpus: int = 0) -> SlurmSched:
    """SlurmSched from slurm.conf's text or `scontrol show config`'s (`Key = Value` lines):
    SchedulerType, SchedulerParameters; what they do not set is Slurm's default. `scontrol show
    config`'s --json form (what a 26.05 capture records) is read through its pairs."""
    kv: dict[str, str] = {}
    from fscontrol.slurm import configjson

    if configjson.looks_like_json(text):
        kv = {k.lower(): v for k, v in configjson.config_pairs_from_json(text, "scontrol show config --json").items()}
        text = ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        key, sep, val = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            kv[key.strip().lower()] = val.strip()
    args: dict[str, Any] = {"node_cpus": node_cpus, "main_min_age_s": 0.0, "main_min_prio": 0}
    stype = kv.get("schedulertype", "sched/backfill")
    params = kv.get("schedulerparameters", "")
    if params in ("(null)", "none"):
        params = ""
    low = params.lower()
    if "bf_continue" in low:
        args["bf_continue"] = True
    for name in _INT_KEYS:  # as slurmctld reads them: the first "name=" anywhere, atoi of what follows
        at = low.find(name + "=")
        if at < 0:
            continue
        m = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", params[at + len(name) + 1:])
        v = min(max(int(m.group(1)), -2**63), 2**63 - 1) if m else 0  # atoi: (int) strtol, its long saturated
        v = (v + 2**31) % 2**32 - 2**31
        if name == "bf_interval" and v == -1:
            args["backfill"] = False
            continue
        if name == "bf_min_age_reserve" and v > 0:
            args["main_min_age_s"] = float(v)  # (the main scheduler's own reading: any value > 0)
        bad = _INVALID.get(name)
        if bad is not None and bad(v):
            continue  # "Invalid SchedulerParameters ...": slurmctld keeps its default
        if name in _LIMITS and (v < 0 or (name == "bf_max_job_start" and v > BF_MAX_JOB_START_MAX)):
            v = 0  # backfill.c / job_scheduler.c: "Invalid SchedulerParameters ...", no limit
        if name == "sched_interval" and v == -1:
            args["main_sched"] = False  # job_scheduler.c: `_schedule` returns at once, on events too
        if name == "sched_interval":
            v = 10**9 if v == -1 else max(v, 1)  # (-1: no pass at all, above; 0: at every tick of the loop)
        args[_INT_KEYS[name]] = v * 60.0 if name == "bf_window" else (float(v) if name.endswith(("interval", "resolution", "delay", "age_reserve")) else v)
    at = low.find("bf_min_prio_reserve=")
    if at >= 0:  # strtoull: a leading minus negates (a huge value); 0 or over INFINITE (2^32 - 1) is invalid
        m = re.match(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)", params[at + 20:])
        u = int(m.group(2)) if m else 0  # strtoull: over ULLONG_MAX saturates (ERANGE), the sign then ignored
        v = (2**64 - 1 if u > 2**64 - 1 else (-u % 2**64 if m.group(1) == "-" else u)) if m else 0
        if 0 < v <= 0xFFFFFFFF:
            args["bf_min_prio_reserve"] = v
        # the main scheduler's: atoll (a minus is a negative number; saturated), > 0, cast to uint32_t
        ll = (-int(m.group(2)) if m.group(1) == "-" else int(m.group(2))) if m else 0
        ll = min(ll, 2**63 - 1)
        if ll > 0 and ll % 2**32:
            args["main_min_prio"] = ll % 2**32
    known = set(_INT_KEYS) | {"bf_continue", "bf_min_prio_reserve"}
    other = [x.strip() for x in params.split(",") if x.strip() and x.strip().split("=")[0].strip().lower() not in known]
    if other:
        args["unmodelled"] = tuple(other)
    if args.get("bf_max_job_assoc") and args.get("bf_max_job_user"):
        args["bf_max_job_user"] = 0  # backfill.c: "bf_max_job_assoc taking precedence"
    if stype.strip() != "sched/backfill":
        args["backfill"] = False
    args["source"] = "SchedulerParameters=" + (params or "(Slurm's defaults)") + ("" if stype == "sched/backfill" else f", {stype}")
    return SlurmSched(**args)


def whole_nodes(size: int, node_cpus: int, total: int) -> int:
    """The CPUs a reservation of `size` CPUs holds: its nodes, whole."""
    if node_cpus <= 0:
        return total
    return min(total, -(-size // node_cpus) * node_cpus)


def bf_first_cycle(t0: float, interval: float, pending_since: Sequence[float], pass_at: float,
                   period: float) -> float:
    """When slurmctld's backfill agent runs its first cycle at or after the first submission t0,
    from what a capture knows of the time before it: the jobs pending then (`pending_since`: their
    submissions; they stay pending) and the decay passes (every `period` from `pass_at`).

    backfill.c `backfill_agent` (22.05): after a cycle it sleeps bf_interval, then runs a cycle if
    anything changed since the last one ended (`_more_work`: last_job_update >= last_backfill_time),
    else polls every second and runs at the first poll after a change. A submission is a change
    (last_job_update), and so is every decay pass while a job is pending: the pass recomputes each
    pending job's priority and sets last_job_update, changed or not (priority_multifactor.c
    `decay_apply_weighted_factors`, called for every job by classic's `_decay_thread` and Fair
    Tree's `fair_tree_decay`). With nothing pending before t0 nothing changed: the agent polls and
    the first submission wakes it (t0 returned). With jobs pending, the agent runs at the first
    of them (taken to be idle before it), then bf_interval after each cycle if a change fell in
    between, else at the next change (a pass, another submission, t0): the cycle this returns is
    the first of that chain at or after t0, and the agent's cycles then fall every bf_interval
    from it while the workload keeps changing things."""
    before = sorted(s for s in pending_since if s < t0)
    if not before or not interval > 0 or interval == math.inf:
        return t0
    changes = list(before)
    if period > 0:
        p = pass_at - math.floor((pass_at - before[0]) / period) * period  # the first pass at or after it
        if p <= before[0]:
            p += period  # (a pass in the same second as the first submission: its cycle covers both)
        while p < t0:
            changes.append(p)
            p += period
    changes.append(t0)
    changes.sort()
    c = before[0]
    k = 0
    while c < t0:
        check = c + interval
        while k < len(changes) and changes[k] <= c:
            k += 1
        if changes[k] <= check:  # a change since the last cycle: it runs when the sleep ends
            c = check
        else:  # none: it polls every second and runs at the next change
            c = changes[k]
    return c


def bf_tested(queue: Iterable[int], sc: SlurmSched, user: Sequence[Any], account: Sequence[Any],
              part: Sequence[Any], mask: int = -1) -> list[int]:
    """The jobs of `queue` (pending, in priority order: indices, or keys whose `mask` bits are the
    index) that a backfill cycle tests under SchedulerParameters' count limits, at most
    `bf_max_job_test` of them; `user`, `account`, `part`: each job's, by index.

    backfill.c `_job_exceeds_max_bf_param` (22.05, 24.11 and 26.05 alike): a job whose user has
    had `bf_max_job_user` jobs tested in this cycle (its association, account and user:
    `bf_max_job_assoc`; its partition: `bf_max_job_part`; its user in its partition:
    `bf_max_job_user_part`) is skipped. Every limit is checked before any count is taken, so a
    skipped job counts towards none of them, nor towards `bf_max_job_test` (the jobs that reach
    `_try_sched`). With bf_max_job_assoc set, bf_max_job_user is not applied (its parser: "bf_max_job_assoc
    taking precedence"). An association here is (account, user): one defined per partition is not
    told apart."""
    lup, lp, la = sc.bf_max_job_user_part, sc.bf_max_job_part, sc.bf_max_job_assoc
    lu = 0 if la else sc.bf_max_job_user
    cup: dict[Any, int] = {}
    cp: dict[Any, int] = {}
    ca: dict[Any, int] = {}
    cu: dict[Any, int] = {}
    cap = sc.bf_max_job_test
    out: list[int] = []
    for key in queue:
        i = key & mask if mask != -1 else key
        u = user[i]
        kup = (u, part[i])
        ka = (account[i], u)
        if ((lup and cup.get(kup, 0) >= lup) or (lp and cp.get(part[i], 0) >= lp)
                or (la and ca.get(ka, 0) >= la) or (lu and cu.get(u, 0) >= lu)):
            continue
        if lup:
            cup[kup] = cup.get(kup, 0) + 1
        if lp:
            cp[part[i]] = cp.get(part[i], 0) + 1
        if la:
            ca[ka] = ca.get(ka, 0) + 1
        if lu:
            cu[u] = cu.get(u, 0) + 1
        out.append(key)
        if len(out) >= cap:
            break
    return out


WILL_RUN_WINDOW_S = 30  # cons_common/job_test.c `_will_run_test`: time_window = 30


def will_run_batches(ends: Sequence[float]) -> list[int]:
    """For running jobs sorted by their end (start + time limit), the index of the last job of the
    batch each is removed in by the select plugin's will-run test (select/cons_tres, 22.05
    cons_common/job_test.c `_will_run_test`): the first batch is the first job and those that end
    by E + 30 s, E the first job's end rounded up to the next multiple of 30 s from the epoch
    (`end_time + (time_window - end_time % time_window)`); the window then doubles (60, 120, ...)
    until the next job ends within it, and the next batch takes the jobs that end by E + window.
    The job is tested after each batch; where it fits, its start is the end of the LAST job of
    that batch, not of the job that freed the CPUs it needed: backfill reserves from there."""
    n = len(ends)
    out = [0] * n
    if not n:
        return out
    w = float(WILL_RUN_WINDOW_S)
    e = ends[0] + (w - ends[0] % w)
    i = 0
    while i < n:
        j = i
        while j + 1 < n and ends[j + 1] <= e + w:
            j += 1
        for k in range(i, j + 1):
            out[k] = j
        i = j + 1
        w *= 2
        while i < n and ends[i] > e + w:
            w *= 2
    return out


def backfill_starts(t: float, queue: list[int], free: int, running: list[tuple[float, int]], size: list[int],
                    est: list[float], total: int, sc: SlurmSched, mask: int = -1, smallest: int = 0,
                    completing: list[tuple[float, int]] | None = None,
                    fixed: Sequence[tuple[float, float, int]] = (), batched: bool = False,
                    busy0: Sequence[tuple[float, int]] | None = None, no_reserve: Collection[int] = (), limits=None,
                    more: Iterator[int] | None = None) -> list[int]:
    """One backfill cycle at t: the jobs it starts now (indices, in the order it starts them).
    `queue`: the pending jobs in priority order (their indices, or keys whose `mask` bits are the
    index); `running`: (end = start + time limit, index) of the running jobs, sorted; `free`: the
    CPUs free now; `smallest`: no pending job is smaller (the cycle ends once fewer CPUs are free);
    `completing`: (when its CPUs are free, CPUs) of the jobs ended but not yet completed; `fixed`:
    (begin, end, CPUs) held besides the cycle's own reservations (the cluster's advance
    reservations, forecast/start.py), each ending after t. `batched`: the earliest time the running
    jobs leave a job's CPUs free is the select plugin's (`will_run_batches`: the end of the last
    job of the batch where it fits), as slurmctld computes it (the replay; the start estimate,
    forecast/start.py, still takes the end of the job that frees the CPUs). `busy0`: (end, CPUs) of
    each of `running`, in its order, where the caller keeps it (made from `running` when not given).
    `no_reserve`: the jobs (indices) that get no plan (bf_min_age_reserve, bf_min_prio_reserve:
    backfill.c's TEST_NOW_ONLY): each starts if it may now, else the cycle goes on without it.
    `limits`: the association and QOS limits (model/acctpolicy.Counts by index): a job that would put one over
    is passed by, no plan (backfill.c, acct_policy_job_runnable_*); a job the cycle starts is added to them.
    One a limit on running jobs holds does not count towards bf_max_job_test: for each, the next of `more`.

    As backfill.c does it: a job may start at the earliest time T >= now when the running jobs
    (ending at their limits, the select plugin's will-run test) leave its CPUs free and no
    reservation of this cycle holds its nodes in [T, T + limit] (both ends included). T = now:
    it starts (and runs on as a running job). Later, within bf_window: its nodes are reserved
    from T to T + limit, both rounded DOWN to a multiple of bf_resolution (from the epoch),
    the start no earlier than now and the reservation at least one bf_resolution long.

    How (the same answers as a scan of every reservation per job, tests/start_reference.py, at a
    fraction of the cost; docs/start.md):
    * the CPUs the reservations hold over [T, T + d] are W_begin(T + d) - W_end(T), the CPUs of
      those that begin by T + d less those that end by T (one that ends by T began before it),
      from two sorted lists. What they hold drops only at a reservation's end, so the T sought is
      T itself or the first reservation end after it where they leave s CPUs: a walk along the
      two lists (the scan tried fewer ends, but every end it skipped fails too) that jumps, in C,
      to the first end by which enough have ended with the begins by T + d as they are (the ends
      before it fail: their begins are no fewer), then takes the begins by the new T + d;
    * once no job left in the cycle may start now (each asks for more CPUs than are free, or the
      reservations beginning within its limit hold its nodes), nothing more starts (their
      reservations are dropped at the cycle's end): the cycle stops there."""
    nq = min(len(queue), sc.bf_max_job_test)
    if nq <= 0:
        return []
    res = sc.bf_resolution_s
    horizon = t + sc.bf_window_s
    smax = sc.bf_max_job_start
    keys = [queue[k] & mask for k in range(nq)] if mask != -1 else list(queue[:nq])
    busy: list[tuple[float, int]] | None = None  # (end, size), sorted: running, and started by this cycle
    cum: list[int] = []  # the CPUs free once busy[0..m] have ended, by m
    bend: list[int] = []  # (batched) the last job of busy[m]'s will-run batch, by m
    out: list[int] = []
    nc = sc.node_cpus
    # the last job of the cycle that may still start now: one that asks for more CPUs than are
    # free, or whose nodes the reservations beginning within its limit hold, never starts later in
    # the cycle (reservations are only added, free CPUs only taken), and the reservations of the
    # jobs after the last one that may are dropped unused: the cycle stops there. Exact only while
    # no running job ends by t (one that does frees CPUs at t itself) and no limit is 0.
    first_end = min(running[0][0] if running else math.inf, min((c[0] for c in completing), default=math.inf)
                    if completing else math.inf)
    prune = first_end > t and min(map(est.__getitem__, keys)) > 0
    fit_pos = [k for k in range(nq) if size[keys[k]] <= free] if prune else []
    last = len(fit_pos) - 1
    dirty = True
    # the walk back over the jobs that fit (~250 checks a cycle at 10,000 pending) checks the last
    # one with hl, the CPUs of the reservations that begin by xl (its t + limit), kept as
    # reservations are added (no prefix sums made anew at each: they cost more than the checks)
    wtot = 0  # the CPUs of every reservation (rbw's sum)
    hl_at = -1  # the position in fit_pos of the job whose hl is kept
    hl = 0
    xl = 0.0
    # the reservations, as two sorted lists: their begins and their ends (with the CPUs they hold)
    rb: list[float] = []
    rbw: list[int] = []
    re_: list[float] = []
    rew: list[int] = []
    if fixed:
        for b0, e0, w0 in sorted(fixed):
            rb.append(b0)
            rbw.append(w0)
            wtot += w0
        for b0, e0, w0 in sorted(fixed, key=itemgetter(1)):
            re_.append(e0)
            rew.append(w0)

    k = -1
    while k + 1 < nq:
        k += 1
        if free < smallest:
            break  # nothing more starts in this cycle
        if prune and dirty:
            cwb = None
            while last >= 0:
                j = fit_pos[last]
                if j < k:
                    last = -1
                    break
                ij = keys[j]
                sj = size[ij]
                if sj <= free:
                    if not rb:
                        break
                    if hl_at != last:  # the CPUs of the reservations that begin within its limit
                        xl = t + est[ij]
                        if cwb is None:  # rbw's prefix sums, for this walk (down through every job
                            cwb = list(accumulate(rbw, initial=0))  # that fits where the cycle ends)
                        hl = cwb[bisect_right(rb, xl)]
                        hl_at = last
                    if hl + sj <= total:
                        break
                last -= 1
            if last < 0:
                break  # nothing more starts in this cycle
            dirty = False
        i = keys[k]
        if limits is not None and limits.over(i):
            if one_more(limits, i, more, keys, mask):
                nq += 1
                if prune and est[keys[-1]] <= 0:
                    prune = False
                if prune and size[keys[-1]] <= free:
                    fit_pos.append(nq - 1)
                    last = len(fit_pos) - 1
                    dirty = True
            continue  # held by a limit: no start, no plan
        s = size[i]
        d = est[i]
        # the earliest time the jobs running (to their limits) leave s CPUs free: the end of the
        # first of them (by end) after which the CPUs freed are enough (jobs ending together: the
        # same time)
        T = t
        nr = i in no_reserve if no_reserve else False
        if free < s:
            if nr:
                continue  # (TEST_NOW_ONLY: it does not fit now)
            if busy is None:
                busy = list(busy0) if busy0 is not None else [(e, size[j]) for e, j in running]
                if completing:
                    busy = sorted(busy + completing)
            if not cum:
                cum = list(accumulate(map(itemgetter(1), busy), initial=free))
                del cum[0]
                if batched:
                    bend = will_run_batches([x[0] for x in busy])
            m = bisect_left(cum, s)
            if m == len(cum):
                continue
            T = busy[bend[m]][0] if batched else busy[m][0]
            if T > horizon:
                continue  # too far in the future: no reservation (reservations only push it later)
        # no reservation may hold its nodes in [T, T + d]: the first T (T itself or a reservation's
        # end after it: what they hold drops only there) where those that hold them leave s CPUs
        if rb:
            q = bisect_right(rb, T + d)
            p = bisect_right(re_, T)
            held = wtot - sum(rbw[q:]) - (sum(rew[:p]) if p else 0)
            lim = total - s  # held > lim: too few CPUs left (ints: total - held < s)
            while held > lim:
                # the first end by which those that end free enough with the begins by T + d as they
                # are: the ends before it fail (their begins by then are no fewer); found in C, not
                # walked end by end (the cost: ~18 ends where a walk is needed)
                n = next(compress(count(1), map(le, repeat(held - lim), accumulate(rew[p:bisect_right(re_, horizon, p)]))), 0)
                if not n:  # none by bf_window's end (the walk stopped at the first end past it)
                    T = math.inf
                    break
                p2 = p + n
                T = re_[p2 - 1]
                if T > horizon:
                    break
                p3 = bisect_right(re_, T, p2)  # every end at T
                held -= sum(rew[p:p3])
                p = p3
                q2 = bisect_right(rb, T + d, q)
                if q2 > q:
                    held += sum(rbw[q:q2])
                    q = q2
        if T <= t:
            out.append(i)
            if limits is not None:
                limits.add(i)
            if len(out) == smax:
                break  # bf_max_job_start: the cycle ends
            free -= s
            if busy is None:
                busy = list(busy0) if busy0 is not None else [(e, size[j]) for e, j in running]
                if completing:
                    busy = sorted(busy + completing)
            insort(busy, (t + d, s))
            cum = []
            dirty = True
            continue
        if T > horizon or nr:
            continue  # too far in the future, or a job that gets no plan: no reservation
        b = math.floor(T / res) * res  # max(t, ...) and whole_nodes(s, nc, total), inline (the cost)
        if b < t:
            b = t
        e = math.floor((T + d) / res) * res
        if e < b + res:
            e = b + res
        w = -(-s // nc) * nc if nc > 0 else total
        if w > total:
            w = total
        j = bisect_right(rb, b)
        rb.insert(j, b)
        rbw.insert(j, w)
        wtot += w
        if b <= xl:
            hl += w
        j = bisect_right(re_, e)
        re_.insert(j, e)
        rew.insert(j, w)
        dirty = True
    return out
