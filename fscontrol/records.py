"""Plain, immutable records that flow between the stages.

Parsers produce them from Slurm's text, the store writes and reads them, the maths consumes
them. Times are POSIX seconds (float, UTC); usage is Slurm's RawUsage unit, billing-seconds
(decayed), unless a field name says core-hours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

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
    weights: dict[str, int] = field(default_factory=dict)  # PriorityWeight* by factor name
    raw: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

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


def _twin(cls: type) -> type:
    """A frozen slots dataclass's twin: the same slots in the same order, not frozen. A frozen
    dataclass's __init__ sets each field through object.__setattr__, which at 100,000
    associations is most of reading a snapshot; the twin's plain __init__ fills the same slots,
    and the object then takes the frozen class (the layouts are the same, so Python allows it):
    equal, hashable and frozen as cls(*values) is. None when the layouts differ.

    The twin is a plain class with only an __init__ (the dataclass's parameters, defaults
    included): a whole dataclass (make_dataclass: six generated methods) cost about half a
    millisecond a class."""
    import dataclasses

    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    ns: dict = {}
    params = []
    for f in fields:
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            ns[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    body = "".join(f"\n    self.{n} = {n}" for n in names) or "\n    pass"
    exec(f"def __init__(self, {', '.join(params)}):{body}", ns)  # noqa: S102 - field names only
    twin = type(f"_{cls.__name__}Twin", (), {"__slots__": cls.__slots__, "__init__": ns["__init__"],
                                               "__module__": cls.__module__})
    try:
        twin(*(None for f in fields if f.default is dataclasses.MISSING)).__class__ = cls
    except TypeError:  # pragma: no cover - a layout Python will not swap
        return None
    return twin if twin.__slots__ == cls.__slots__ else None


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


class JobRecord(NamedTuple):
    """One allocation from `sacct -a -X -T -P` over a window [start, end).

    With -T Slurm clips start/end to the window; `elapsed_s` is the clipped run time inside it
    (0 for a job that never started). `billing` comes from AllocTRES (`billing=N`).
    A NamedTuple, not a frozen dataclass: a window can hold a million jobs, and a frozen
    dataclass's __init__ (one object.__setattr__ per field) was a quarter of parsing them.
    """

    job_id: str
    user: str
    account: str
    partition: str
    qos: str
    state: str
    alloc_cpus: int
    billing: int
    nnodes: int
    submit: float | None
    start: float | None
    end: float | None
    elapsed_s: float


MARK_PREFIX = "fscontrol:"  # the AdminComment the gate marks its holds and demotions with (gate.HOLD_MARK, ...)


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
    admin_comment: str = ""  # where the agent marks the jobs it holds or demotes (gate.MARK)


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
    name: str
    usage_factor: float


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one collection read from a cluster, parsed, at time `taken_at`."""

    cluster: str
    taken_at: float
    config: SlurmConfig
    shares: tuple[ShareRow, ...]
    jobs: tuple[JobRecord, ...] = ()
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
