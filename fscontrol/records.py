"""Plain, immutable records that flow between the stages.

Parsers produce them from Slurm's text, the store writes and reads them, the maths consumes
them. Each is a frozen dataclass with slots (like the records of the other modules); the few made
by the hundred thousand go through a twin (_twin) or are named tuples (JobRecord). Times are POSIX seconds (float, UTC); usage is Slurm's RawUsage unit, billing-seconds
(decayed), unless a field name says core-hours.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field

# `typing` is for type checkers only on the collect path: importing it costs a collect ~5 ms
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    PriorityMode = Literal["classic", "fair_tree", "depth_oblivious", "basic", "unknown"]


@dataclass(frozen=True, slots=True)
class CommandOutput:
    """What one Slurm command printed, with how and when it was asked."""

    argv: tuple[str, ...]
    stdout: str
    started_at: float
    finished_at: float


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
class ShareRow:
    """One association as `sshare -a -l -P` prints it.

    `user` is "" for an account row. `parent` is the parent account, "" for the root row.
    `raw_shares` is None for root, and for `parent` shares (then `shares_parent` is True).
    sshare truncates RawUsage to an integer.
    """

    account: str
    user: str
    parent: str
    depth: int
    raw_shares: int | None
    shares_parent: bool
    norm_shares: float | None
    raw_usage: int
    norm_usage: float | None
    effective_usage: float | None
    fairshare: float | None
    billing_run_mins: int | None = None  # TRESRunMins billing=N: billing-minutes still to run
    level_fs: float | None = None  # LevelFS: slurmctld's own Fair Tree value, 6 decimals (None: not printed)

    @property
    def is_user(self) -> bool:
        return self.user != ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.account, self.user)


def _twin(cls: type) -> type | None:
    """A frozen record's twin: the same slots in the same order, not frozen. A frozen record's
    __init__ sets each field through object.__setattr__, which at 100,000 associations is most of
    reading a snapshot; the twin's plain __init__ fills the same slots, and the object then takes
    the frozen class (the layouts are the same, so Python allows it): equal, hashable and frozen
    as cls(*values) is. None when the layouts differ.

    The twin is a plain class with only an __init__ (the record's parameters, defaults included),
    compiled when a command first needs it."""
    names = cls.__slots__
    defaults = cls.__init__.__defaults__ or ()
    required = len(names) - len(defaults)
    ns: dict = {f"_default_{n}": d for n, d in zip(names[required:], defaults)}
    params = [*names[:required], *(f"{n}=_default_{n}" for n in names[required:])]
    body = "".join(f"\n    self.{n} = {n}" for n in names) or "\n    pass"
    exec(f"def __init__(self, {', '.join(params)}):{body}", ns)  # noqa: S102 - field names only
    twin = type(f"_{cls.__name__}Twin", (), {"__slots__": names, "__init__": ns["__init__"], "__module__": cls.__module__})
    try:
        twin(*(None for _ in range(required))).__class__ = cls
    except TypeError:  # pragma: no cover - a layout Python will not swap
        return None
    return twin


_TWINS: dict[type, type | None] = {}


def twin_of(cls: type) -> type | None:
    """_twin(cls), made the first time a command needs it (each costs a class build at import)."""
    if cls not in _TWINS:
        _TWINS[cls] = _twin(cls)
    return _TWINS[cls]


def share_rows(values) -> tuple[ShareRow, ...]:
    """ShareRows from tuples in ShareRow's field order (shares_parent as 0/1 or a bool), as
    ShareRow(*v) would make them, at about a third of the cost (_twin)."""
    twin = twin_of(ShareRow)
    if twin is None:  # pragma: no cover - a ShareRow whose layout no longer matches the twin's
        return tuple(ShareRow(*v[:5], bool(v[5]), *v[6:]) for v in values)
    cls = ShareRow
    out = []
    add = out.append
    for v in values:
        o = twin(*v)
        o.shares_parent = bool(o.shares_parent)  # SQLite's 0/1
        o.__class__ = cls
        add(o)
    return tuple(out)


JobRecord = namedtuple("JobRecord", (
    "job_id",  # str
    "user",  # str
    "account",  # str
    "partition",  # str
    "qos",  # str
    "state",  # str
    "alloc_cpus",  # int
    "billing",  # int
    "nnodes",  # int
    "submit",  # float | None
    "start",  # float | None
    "end",  # float | None
    "elapsed_s",  # float
), module=__name__)
JobRecord.__doc__ = """One allocation from `sacct -a -X -T -P` over a window [start, end).

    With -T Slurm clips start/end to the window; `elapsed_s` is the clipped run time inside it
    (0 for a job that never started). `billing` comes from AllocTRES (`billing=N`).
    A named tuple, not a frozen record: a window can hold a million jobs, and a frozen record's
    __init__ (one object.__setattr__ per field) was a quarter of parsing them. (collections'
    namedtuple, not typing's NamedTuple: the same class, without importing typing.)
    """


MARK_PREFIX = "fscontrol:"  # the AdminComment the gate marks its holds and demotions with (gate.HOLD_MARK, ...)
HOLD_MARK = "fscontrol:hold"  # the gate's hold


def nice_mark(nice: int) -> str:
    """The gate's demotion by Nice `nice`."""
    return f"fscontrol:nice:{nice}"


def mark_of(kind: str, nice: int | None) -> str:
    """The AdminComment the agent leaves on a job it holds ("hold") or demotes ("nice")."""
    return HOLD_MARK if kind == "hold" else nice_mark(int(nice or 0))


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
