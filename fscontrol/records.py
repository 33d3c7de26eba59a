"""Plain, immutable records that flow between the stages.

Parsers produce them from Slurm's text, the store writes and reads them, the maths consumes
them. Each is a frozen dataclass with slots (like the records of the other modules), except the
few that every command or a hot loop makes (ShareRow, JobRecord: named tuples, each says why); a snapshot's
own (Snapshot, SlurmConfig, QueueJob, PrioRow, QosRow) and the ledger's are in fscontrol.snaprecords
(the forecast's start builds none of them), what one Slurm command printed (CommandOutput) in
fscontrol.slurm.source, which runs them (a forecast from the published rows runs none); the few made
by the hundred thousand go through a twin (_twin) or are named tuples (JobRecord). Times are POSIX seconds (float, UTC); usage is Slurm's RawUsage unit, billing-seconds
(decayed), unless a field name says core-hours.
"""

from __future__ import annotations

from collections import namedtuple

# `typing` is for type checkers only on the collect path: importing it costs a collect ~5 ms
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    PriorityMode = Literal["classic", "fair_tree", "depth_oblivious", "basic", "unknown"]


class ShareRow(namedtuple("ShareRow", (
    "account",  # str
    "user",  # str: "" for an account row
    "parent",  # str: the parent account, "" for the root row
    "depth",  # int
    "raw_shares",  # int | None: None for root, and for `parent` shares (then shares_parent)
    "shares_parent",  # bool
    "norm_shares",  # float | None
    "raw_usage",  # int: sshare truncates RawUsage to an integer
    "norm_usage",  # float | None
    "effective_usage",  # float | None
    "fairshare",  # float | None
    "billing_run_mins",  # int | None: TRESRunMins billing=N: billing-minutes still to run
    "level_fs",  # float | None: LevelFS, slurmctld's own Fair Tree value, 6 decimals (None: not printed)
), defaults=(None, None), module=__name__)):
    """One association as `sshare -a -l -P` prints it.

    A named tuple, not a frozen dataclass (issue #29's exception: a cost a user notices): every
    command reads these, and the dataclass's generated methods, compiled from source when the
    class is built, were ~7 M instructions of each `fscontrol forecast`'s start, 2% of it
    (issue #31 item 5). Immutable, equal and hashable by value as the dataclass was; a changed
    copy is `row._replace(...)`, the fields `ShareRow._fields`.
    """

    __slots__ = ()

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
    ShareRow(*v) makes them: each row a tuple of the class, built without a call of ShareRow's
    own (a snapshot reads 100,000). A list or tuple of shorter rows (the defaults left out) takes
    ShareRow's own call; a stream (parse.parse_sshare's) gives whole rows."""
    new, cls, yes, no = tuple.__new__, ShareRow, True, False
    try:
        return tuple([new(cls, (a, u, p, d, rs, yes if sp else no, ns, ru, nu, eu, fs, br, lf))
                      for a, u, p, d, rs, sp, ns, ru, nu, eu, fs, br, lf in values])
    except ValueError:  # a row of other than 13 values
        if not isinstance(values, (list, tuple)):
            raise
        return tuple([cls(*v[:5], bool(v[5]), *v[6:]) for v in values])


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
