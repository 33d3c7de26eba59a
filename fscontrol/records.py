"""Plain, immutable records that flow between the stages.

Parsers produce them from Slurm's text, the store writes and reads them, the maths consumes
them. Times are POSIX seconds (float, UTC); usage is Slurm's RawUsage unit, billing-seconds
(decayed), unless a field name says core-hours.
"""

from __future__ import annotations

from collections import namedtuple
from operator import attrgetter

# `typing` is for type checkers only on the collect path: importing it costs a collect ~5 ms
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    PriorityMode = Literal["classic", "fair_tree", "depth_oblivious", "basic", "unknown"]

set_field = object.__setattr__  # a frozen record's __init__ fills its slots past its own __setattr__


class _DataclassFields:
    """A record class's (@record) `__dataclass_fields__`, made by the dataclasses module itself (from a
    dataclass of the same fields, defaults, types and compare/repr flags) the first time something
    asks: dataclasses.replace, fields, asdict and is_dataclass then treat the record as the frozen
    dataclass it was. Nothing on the collect path asks."""

    def __get__(self, obj: object, cls: type) -> dict:
        made = cls.__dict__.get("_dataclass_fields")
        if made is None:
            import dataclasses

            init = cls.__init__
            defaults = dict(zip(reversed(cls.__slots__), reversed(init.__defaults__ or ())))
            specs = [(name, cls.__annotations__.get(name, "object"),
                      dataclasses.field(default=defaults.get(name, dataclasses.MISSING),
                                        compare=name not in cls._not_compared, repr=name not in cls._not_compared))
                     for name in cls.__slots__]
            made = dataclasses.make_dataclass(cls.__name__, specs, frozen=True).__dataclass_fields__
            cls._dataclass_fields = made
        return made


def _frozen_setattr(self, name: str, value: object) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name: str) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _eq(self, other: object) -> bool:
    if other.__class__ is self.__class__:
        return self._compared(self) == self._compared(other)
    return NotImplemented


def _hash(self) -> int:
    return hash(self._compared(self))


def _repr(self) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__ if n not in self._not_compared)
    return f"{self.__class__.__qualname__}({shown})"


def _reduce(self) -> tuple:
    return (self.__class__, self._values(self))


def replace(obj, /, **changes):
    """dataclasses.replace for a record (a new one with `changes`), without building the record's
    __dataclass_fields__; a real dataclass goes to dataclasses.replace."""
    cls = obj.__class__
    if cls.__dict__.get("__reduce__") is _reduce:
        unknown = changes.keys() - set(cls.__slots__)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field(s) {', '.join(sorted(unknown))}")
        return cls(**{**dict(zip(cls.__slots__, cls._values(obj))), **changes})
    from dataclasses import replace as dataclass_replace

    return dataclass_replace(obj, **changes)


def record(cls: type) -> type:
    """What `@dataclass(frozen=True, slots=True)` gave the records, written once instead of
    generated at every import: a dataclass compiles its methods from source text when its module
    is imported (about 1 ms a class on a slow machine), and `dataclasses` imports `inspect` (about
    13 ms), so the records cost a `fscontrol collect` about a tenth of its run before it read
    anything (docs/benchmarks.md).

    The class declares `__slots__` (its fields, in order), an `__init__` taking them in that order
    and setting each through `set_field` (object.__setattr__, as a frozen dataclass's does), and in
    `_not_compared` the fields that equality, hashing and repr leave out. This adds what the
    dataclass did: equality by class and fields, the fields' hash, a repr, assigning or deleting
    raises dataclasses.FrozenInstanceError, pickling and copying through __init__, and
    `__dataclass_fields__` (_DataclassFields) for the dataclasses module's functions. The class
    stays a direct subclass of object, as the dataclass was, so its twin (_twin) can take it."""
    names = cls.__slots__
    not_compared = cls.__dict__.get("_not_compared", ())
    compared = tuple(n for n in names if n not in not_compared)
    cls._not_compared = not_compared
    cls._values = staticmethod(attrgetter(*names))  # every record has two fields or more: a tuple
    cls._compared = staticmethod(attrgetter(*compared))
    cls.__match_args__ = names
    cls.__setattr__ = _frozen_setattr
    cls.__delattr__ = _frozen_delattr
    cls.__eq__ = _eq
    cls.__hash__ = _hash
    cls.__repr__ = _repr
    cls.__reduce__ = _reduce
    cls.__dataclass_fields__ = _DataclassFields()
    return cls


@record
class CommandOutput:
    """What one Slurm command printed, with how and when it was asked."""

    __slots__ = ("argv", "stdout", "started_at", "finished_at")
    argv: tuple[str, ...]
    stdout: str
    started_at: float
    finished_at: float

    def __init__(self, argv: tuple[str, ...], stdout: str, started_at: float, finished_at: float) -> None:
        set_field(self, "argv", argv)
        set_field(self, "stdout", stdout)
        set_field(self, "started_at", started_at)
        set_field(self, "finished_at", finished_at)


@record
class SlurmConfig:
    """The priority-related part of `scontrol show config`."""

    __slots__ = ("cluster", "slurm_version", "priority_type", "priority_flags", "damping_factor", "half_life_s",
                 "calc_period_s", "usage_reset_period", "private_data", "enforce", "weights", "raw")
    _not_compared = ("raw",)
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
    weights: dict[str, int]  # PriorityWeight* by factor name (default: none)
    raw: dict[str, str]  # every line of `scontrol show config` (default: none); not compared, not shown

    def __init__(self, cluster: str, slurm_version: str, priority_type: str, priority_flags: tuple[str, ...],
                 damping_factor: int, half_life_s: int, calc_period_s: int, usage_reset_period: str,
                 private_data: tuple[str, ...], enforce: tuple[str, ...], weights: dict[str, int] | None = None,
                 raw: dict[str, str] | None = None) -> None:
        set_field(self, "cluster", cluster)
        set_field(self, "slurm_version", slurm_version)
        set_field(self, "priority_type", priority_type)
        set_field(self, "priority_flags", priority_flags)
        set_field(self, "damping_factor", damping_factor)
        set_field(self, "half_life_s", half_life_s)
        set_field(self, "calc_period_s", calc_period_s)
        set_field(self, "usage_reset_period", usage_reset_period)
        set_field(self, "private_data", private_data)
        set_field(self, "enforce", enforce)
        set_field(self, "weights", {} if weights is None else weights)
        set_field(self, "raw", {} if raw is None else raw)

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


@record
class ShareRow:
    """One association as `sshare -a -l -P` prints it.

    `user` is "" for an account row. `parent` is the parent account, "" for the root row.
    `raw_shares` is None for root, and for `parent` shares (then `shares_parent` is True).
    sshare truncates RawUsage to an integer.
    """

    __slots__ = ("account", "user", "parent", "depth", "raw_shares", "shares_parent", "norm_shares", "raw_usage",
                 "norm_usage", "effective_usage", "fairshare", "billing_run_mins", "level_fs")
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
    billing_run_mins: int | None  # TRESRunMins billing=N: billing-minutes still to run
    level_fs: float | None  # LevelFS: slurmctld's own Fair Tree value, 6 decimals (None: not printed)

    def __init__(self, account: str, user: str, parent: str, depth: int, raw_shares: int | None, shares_parent: bool,
                 norm_shares: float | None, raw_usage: int, norm_usage: float | None, effective_usage: float | None,
                 fairshare: float | None, billing_run_mins: int | None = None, level_fs: float | None = None) -> None:
        set_field(self, "account", account)
        set_field(self, "user", user)
        set_field(self, "parent", parent)
        set_field(self, "depth", depth)
        set_field(self, "raw_shares", raw_shares)
        set_field(self, "shares_parent", shares_parent)
        set_field(self, "norm_shares", norm_shares)
        set_field(self, "raw_usage", raw_usage)
        set_field(self, "norm_usage", norm_usage)
        set_field(self, "effective_usage", effective_usage)
        set_field(self, "fairshare", fairshare)
        set_field(self, "billing_run_mins", billing_run_mins)
        set_field(self, "level_fs", level_fs)

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




@record
class QueueJob:
    """One job from `squeue` (pending or running)."""

    __slots__ = ("job_id", "user", "account", "partition", "qos", "state", "nodes", "cpus", "priority", "nice",
                 "reason", "submit", "start", "time_limit_s", "admin_comment")
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
    admin_comment: str  # where the agent marks the jobs it holds or demotes (gate.MARK); default ""

    def __init__(self, job_id: str, user: str, account: str, partition: str, qos: str, state: str, nodes: int,
                 cpus: int, priority: int, nice: int, reason: str, submit: float | None, start: float | None,
                 time_limit_s: int | None, admin_comment: str = "") -> None:
        set_field(self, "job_id", job_id)
        set_field(self, "user", user)
        set_field(self, "account", account)
        set_field(self, "partition", partition)
        set_field(self, "qos", qos)
        set_field(self, "state", state)
        set_field(self, "nodes", nodes)
        set_field(self, "cpus", cpus)
        set_field(self, "priority", priority)
        set_field(self, "nice", nice)
        set_field(self, "reason", reason)
        set_field(self, "submit", submit)
        set_field(self, "start", start)
        set_field(self, "time_limit_s", time_limit_s)
        set_field(self, "admin_comment", admin_comment)


def new_queue_job(*values) -> QueueJob:
    """QueueJob(*values) (positional, in its field order) through its twin (see _twin)."""
    twin = _TWINS.get(QueueJob) if QueueJob in _TWINS else twin_of(QueueJob)
    if twin is None:  # pragma: no cover
        return QueueJob(*values)
    o = twin(*values)
    o.__class__ = QueueJob
    return o


@record
class PrioRow:
    """One pending job from `sprio`: its normalized priority and fair-share factor."""

    __slots__ = ("job_id", "user", "partition", "priority_norm", "fairshare_norm")
    job_id: str
    user: str
    partition: str
    priority_norm: float
    fairshare_norm: float

    def __init__(self, job_id: str, user: str, partition: str, priority_norm: float, fairshare_norm: float) -> None:
        set_field(self, "job_id", job_id)
        set_field(self, "user", user)
        set_field(self, "partition", partition)
        set_field(self, "priority_norm", priority_norm)
        set_field(self, "fairshare_norm", fairshare_norm)


@record
class QosRow:
    """One QOS from `sacctmgr show qos`: its name and UsageFactor."""

    __slots__ = ("name", "usage_factor")
    name: str
    usage_factor: float

    def __init__(self, name: str, usage_factor: float) -> None:
        set_field(self, "name", name)
        set_field(self, "usage_factor", usage_factor)


@record
class Snapshot:
    """Everything one collection read from a cluster, parsed, at time `taken_at`."""

    __slots__ = ("cluster", "taken_at", "config", "shares", "jobs", "window", "queue", "prio", "qos", "usage_at")
    cluster: str
    taken_at: float
    config: SlurmConfig
    shares: tuple[ShareRow, ...]
    jobs: tuple[JobRecord, ...]  # default ()
    window: tuple[float, float] | None  # sacct window the jobs cover
    queue: tuple[QueueJob, ...]
    prio: tuple[PrioRow, ...]
    qos: tuple[QosRow, ...]
    # when the decay pass whose RawUsage sshare printed ran (slurmctld's own record of it), or
    # None where it cannot be read: RawUsage moves only at passes (pipeline.usage_time)
    usage_at: float | None

    def __init__(self, cluster: str, taken_at: float, config: SlurmConfig, shares: tuple[ShareRow, ...],
                 jobs: tuple[JobRecord, ...] = (), window: tuple[float, float] | None = None,
                 queue: tuple[QueueJob, ...] = (), prio: tuple[PrioRow, ...] = (), qos: tuple[QosRow, ...] = (),
                 usage_at: float | None = None) -> None:
        set_field(self, "cluster", cluster)
        set_field(self, "taken_at", taken_at)
        set_field(self, "config", config)
        set_field(self, "shares", shares)
        set_field(self, "jobs", jobs)
        set_field(self, "window", window)
        set_field(self, "queue", queue)
        set_field(self, "prio", prio)
        set_field(self, "qos", qos)
        set_field(self, "usage_at", usage_at)

    @property
    def root(self) -> ShareRow | None:
        for row in self.shares:
            if row.depth == 0:
                return row
        return None

    @property
    def users(self) -> tuple[ShareRow, ...]:
        return tuple(r for r in self.shares if r.is_user)
