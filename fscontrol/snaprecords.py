"""The records of one collection and of the agent's ledger: Snapshot and its parts (SlurmConfig,
QueueJob, PrioRow, QosRow), LedgerEntry. Each is a frozen dataclass with slots, as in
fscontrol.records; they live here so a command that reads no snapshot (`forecast`, `why`) does not
build them at start-up (each dataclass `exec`s its generated methods: these six counted ~30 M
instructions of the forecast's start, callgrind).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fscontrol.records import _TWINS, JobRecord, ShareRow, mark_of, twin_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fscontrol.records import PriorityMode


@dataclass(frozen=True, slots=True)
class SlurmConfig:
    """The priority-related part of `scontrol show config`."""

    cluster: str
    slurm_version: str
    priority_type: str  # e.g. "priority/multifactor"
    priority_flags: tuple[str, ...]
    damping_factor: int  # FairShareDampeningFactor, 1..65535
    half_life_s: int  # PriorityDecayHalfLife in seconds (0 = no decay)
    calc_period_s: int  # PriorityCalcPeriod in seconds
    usage_reset_period: str  # PriorityUsageResetPeriod, e.g. "NONE"
    private_data: tuple[str, ...]  # PrivateData flags, lower case
    enforce: tuple[str, ...]  # AccountingStorageEnforce flags, lower case
    weights: dict[str, int] = field(default_factory=dict)  # PriorityWeight* by factor name (default: none)
    raw: dict[str, str] = field(default_factory=dict, compare=False, repr=False)  # every line of `scontrol show config` (default: none); not compared, not shown

    @property
    def mode(self) -> PriorityMode:
        if self.priority_type != "priority/multifactor":
            return "basic" if self.priority_type == "priority/basic" else "unknown"
        flags = {f.upper() for f in self.priority_flags}
        if "DEPTH_OBLIVIOUS" in flags:
            return "depth_oblivious"
        if "NO_FAIR_TREE" in flags:
            return "classic"
        return "fair_tree"



@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One job in the agent's ledger. state: "holding" (intent written, hold not yet confirmed),
    "held" (confirmed: ledger, mark and state agree), "releasing" (release intent written),
    "hands_off" (someone else released or re-niced it: never touched again)."""

    kind: str  # hold | nice
    restore_nice: int = 0
    set_nice: int | None = None  # the Nice the agent set (nice mode)
    state: str = "held"

    @property
    def mark(self) -> str:
        return mark_of(self.kind, self.set_nice)




@dataclass(frozen=True, slots=True)
class QueueJob:
    """One job from `squeue` (pending or running)."""

    job_id: str
    user: str
    account: str
    partition: str
    qos: str
    state: str
    nodes: int
    cpus: int
    priority: int
    nice: int
    reason: str
    submit: float | None
    start: float | None
    time_limit_s: int | None  # None = UNLIMITED
    admin_comment: str = ""  # where the agent marks the jobs it holds or demotes (HOLD_MARK, nice_mark); default ""


def new_queue_job(*values) -> QueueJob:
    """QueueJob(*values) (positional, in its field order) through its twin (see _twin)."""
    twin = _TWINS.get(QueueJob) if QueueJob in _TWINS else twin_of(QueueJob)
    if twin is None:  # pragma: no cover
        return QueueJob(*values)
    o = twin(*values)
    o.__class__ = QueueJob
    return o


@dataclass(frozen=True, slots=True)
class PrioRow:
    """One pending job from `sprio`: its normalized priority and fair-share factor."""

    job_id: str
    user: str
    partition: str
    priority_norm: float
    fairshare_norm: float


@dataclass(frozen=True, slots=True)
class QosRow:
    """One QOS from `sacctmgr show qos`: its name and UsageFactor."""

    name: str
    usage_factor: float


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one collection read from a cluster, parsed, at time `taken_at`."""

    cluster: str
    taken_at: float
    config: SlurmConfig
    shares: tuple[ShareRow, ...]
    jobs: tuple[JobRecord, ...] = ()  # default ()
    window: tuple[float, float] | None = None  # sacct window the jobs cover
    queue: tuple[QueueJob, ...] = ()
    prio: tuple[PrioRow, ...] = ()
    qos: tuple[QosRow, ...] = ()
    # when the decay pass whose RawUsage sshare printed ran (slurmctld's own record of it), or
    # None where it cannot be read: RawUsage moves only at passes (pipeline.usage_time)
    usage_at: float | None = None

    @property
    def root(self) -> ShareRow | None:
        for row in self.shares:
            if row.depth == 0:
                return row
        return None

    @property
    def users(self) -> tuple[ShareRow, ...]:
        return tuple(r for r in self.shares if r.is_user)
