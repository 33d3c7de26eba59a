"""The multifactor engine's inputs and outputs: slurm.conf's priority settings, the controller's
and the disturbances' specs, the share tree, and the per-pass record of a run (sim/multifactor.py
runs it; sim/mfcore.py is the engine). A module of its own so the engine imports no module that
imports it back."""

from __future__ import annotations

import math
from operator import itemgetter
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from fscontrol.act import control
from fscontrol.model.decay import decay_factor_per_second
from ..errors import ConfigError, ParseError
from fscontrol.slurm import configjson
from fscontrol.slurm.parse import parse_duration
from ..records import ShareRow
from .workload import Workload

INF = math.inf
DUMMY: tuple[str, str] = ("fsadmin", "fsdummy")
ProgressFn = Callable[[int, int], None]
_second = itemgetter(1)


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class PriorityConfig:
    """The priority settings of slurm.conf the simulator uses (defaults: Slurm's)."""

    weight_age: float = 0.0
    weight_fairshare: float = 0.0
    weight_jobsize: float = 0.0
    weight_partition: float = 0.0
    weight_qos: float = 0.0
    max_age_s: float = 7 * 86400.0
    calc_period_s: float = 300.0
    half_life_s: float = 7 * 86400.0
    damping: int = 1
    fair_tree: bool = True  # Slurm's default since 19.05; PriorityFlags=NO_FAIR_TREE: classic
    favor_small: bool = False
    partition_factor: tuple[tuple[str, int], ...] = ()  # PartitionName -> PriorityJobFactor
    qos_priority: tuple[tuple[str, int], ...] = ()
    limits: bool = True  # AccountingStorageEnforce has `limits`: a job's end charges its last stretch

    def __post_init__(self) -> None:
        if self.calc_period_s <= 0:
            raise ConfigError(f"PriorityCalcPeriod must be positive, not {self.calc_period_s!r}")
        if not 1 <= self.damping <= control.D_MAX:
            raise ConfigError(f"FairShareDampeningFactor must be in 1..{control.D_MAX}, not {self.damping!r}")
        if self.max_age_s < 0 or self.half_life_s < 0:
            raise ConfigError("PriorityMaxAge and PriorityDecayHalfLife must be >= 0")
        decay_factor_per_second(self.half_life_s)  # raises on a half-life Slurm cannot decay by

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_CONF_LINE = re.compile(r"^\s*([A-Za-z]+)\s*=\s*(.*?)\s*$")


def _conf_duration(key: str, value: str) -> float:
    try:
        v = parse_duration(value)
    except ValueError:
        raise ConfigError(f"slurm.conf: {key}={value!r} is not a Slurm time ([D-]HH:MM:SS or minutes)") from None
    return float(v or 0)


def priority_config_from_slurm_conf(text: str, **overrides: Any) -> PriorityConfig:
    """PriorityConfig from slurm.conf's text: the Priority* weights, PriorityMaxAge,
    PriorityCalcPeriod, PriorityDecayHalfLife, FairShareDampeningFactor, PriorityFavorSmall,
    PriorityFlags (NO_FAIR_TREE), AccountingStorageEnforce (limits), the partitions'
    PriorityJobFactor. Keys are case-insensitive, as Slurm's; later lines win."""
    if configjson.looks_like_json(text):  # a Slurm 26.05 capture's `scontrol --json show config`
        try:
            pairs = configjson.config_pairs_from_json(text, "scontrol --json show config")
        except ParseError as e:
            raise ConfigError(str(e)) from None
        text = "\n".join(f"{k} = {v}" for k, v in pairs.items())
    kv: dict[str, str] = {}
    parts: list[tuple[str, int]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.lower().startswith("partitionname="):
            fields = dict(x.split("=", 1) for x in line.split() if "=" in x)
            low = {k.lower(): v for k, v in fields.items()}
            try:
                parts.append((low["partitionname"], int(low.get("priorityjobfactor", low.get("priority", "1")))))
            except ValueError:
                raise ConfigError(f"slurm.conf: bad PriorityJobFactor in {line!r}") from None
            continue
        m = _CONF_LINE.match(line)
        if m:
            kv[m.group(1).lower()] = m.group(2)
    args: dict[str, Any] = {}

    def num(key: str, name: str) -> None:
        if key in kv:
            try:
                args[name] = float(int(kv[key]))
            except ValueError:
                raise ConfigError(f"slurm.conf: {key} must be an integer, not {kv[key]!r}") from None

    num("priorityweightage", "weight_age")
    num("priorityweightfairshare", "weight_fairshare")
    num("priorityweightjobsize", "weight_jobsize")
    num("priorityweightpartition", "weight_partition")
    num("priorityweightqos", "weight_qos")
    if "prioritymaxage" in kv:
        args["max_age_s"] = _conf_duration("PriorityMaxAge", kv["prioritymaxage"])
    if "prioritycalcperiod" in kv:
        args["calc_period_s"] = _conf_duration("PriorityCalcPeriod", kv["prioritycalcperiod"])
    if "prioritydecayhalflife" in kv:
        args["half_life_s"] = _conf_duration("PriorityDecayHalfLife", kv["prioritydecayhalflife"])
    if "fairsharedampeningfactor" in kv:
        try:
            args["damping"] = int(kv["fairsharedampeningfactor"])
        except ValueError:
            raise ConfigError(f"slurm.conf: FairShareDampeningFactor must be an integer, not {kv['fairsharedampeningfactor']!r}") from None
    flags = {x.strip().upper() for x in kv.get("priorityflags", "").split(",") if x.strip()}
    args["fair_tree"] = "NO_FAIR_TREE" not in flags
    args["favor_small"] = kv.get("priorityfavorsmall", "no").lower() in ("yes", "1", "true")
    if "accountingstorageenforce" in kv:
        args["limits"] = "limits" in kv["accountingstorageenforce"].lower()
    if parts:
        args["partition_factor"] = tuple(parts)
    args.update({k: v for k, v in overrides.items() if v is not None})
    return PriorityConfig(**args)


METHODS = ("none", "damping", "padding", "hybrid")


@dataclass(frozen=True)
class ControlSpec:
    """The agent in the loop: `control.plan_control` `lead_s` before every pass (or every
    `interval_s` at an arbitrary phase when given), with the agent's defaults."""

    method: str = "hybrid"
    u_star: float = 0.0  # usage units (the workload's node- or CPU-seconds), for S_ref
    padding_mode: str = "steady"
    lead_s: float = 3.0
    interval_s: float | None = None
    interval_phase_s: float = 0.0  # with interval_s: the ticks fall at a pass time + this + k * interval_s
    hysteresis: float = 0.25
    padding_threshold: float = 0.02
    reference: str | float = "median"
    dummy: tuple[str, str] = DUMMY

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"control method must be one of {', '.join(METHODS)}, not {self.method!r}")
        if self.padding_mode not in ("steady", "pulse"):
            raise ConfigError(f"padding mode must be steady or pulse, not {self.padding_mode!r}")
        if self.u_star < 0:
            raise ConfigError("u* must be >= 0")
        if self.interval_s is not None and self.interval_s <= 0:
            raise ConfigError("control interval must be > 0 seconds")

    @property
    def label(self) -> str:
        if self.method == "none":
            return "static d"
        return f"{self.method}" + (f"-{self.padding_mode}" if self.method in ("padding", "hybrid") else "")


@dataclass(frozen=True)
class Disturbance:
    """`reconfigure` at `at_s` (seconds from the first submission): slurm.conf's d comes back;
    `agent_down` from `at_s` for `duration_s`: no control ticks."""

    kind: str
    at_s: float
    duration_s: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("reconfigure", "agent_down"):
            raise ConfigError(f"disturbance must be reconfigure or agent_down, not {self.kind!r}")


def share_tree(workload: Workload, *, dummy: tuple[str, str] | None = DUMMY,
               account_shares: Mapping[str, int] | None = None) -> tuple[ShareRow, ...]:
    """An association tree for a workload: root, one account per workload account (RawShares 1,
    or `account_shares`), one user association per (account, user) with RawShares 1, and the
    controller's dummy account and user (RawShares 1)."""
    root = ShareRow("root", "", "", 0, None, False, 1.0, 0, None, 1.0, None)
    accts: dict[str, set[str]] = {}
    for j in workload.jobs:
        accts.setdefault(j.account or "default", set()).add(j.user or "user")
    if dummy is not None:
        accts.setdefault(dummy[0], set()).add(dummy[1])
    rows = [root]
    for a in sorted(accts):
        rows.append(ShareRow(a, "", "root", 1, int((account_shares or {}).get(a, 1)), False, None, 0, None, None, None))
        rows.extend(ShareRow(a, u, a, 2, 1, False, None, 0, None, None, None) for u in sorted(accts[a]))
    return tuple(rows)


def captured_tree(workload: Workload, *, dummy: tuple[str, str] | None = DUMMY) -> tuple[ShareRow, ...]:
    """The association tree a capture recorded (`Workload.shares`, sshare's rows: the site's real
    RawShares, FairShare=parent and depth), with every RawUsage set to 0 (sshare gives the usage at
    the end of the period, not at its start: a replay starts from none, its first half-lives are
    warm-up), plus an association for each job's (account, user) the tree lacks (RawShares 1; an
    account missing too goes under root) and the controller's dummy account and user."""
    rows = [r._replace(raw_usage=0, norm_usage=None, effective_usage=None, fairshare=None, level_fs=None)
            for r in workload.shares]
    have = {r.key for r in rows}
    accounts = {r.account for r in rows if not r.user}
    want: dict[str, set[str]] = {}
    for j in workload.jobs:
        key = (j.account or "default", j.user or "user")
        if key not in have:
            want.setdefault(key[0], set()).add(key[1])
    if dummy is not None and dummy not in have:
        want.setdefault(dummy[0], set()).add(dummy[1])
    for a in sorted(want):
        if a in accounts:
            i = max(k for k, r in enumerate(rows) if r.account == a)  # after the account's last row
            depth = next(r.depth for r in rows if r.key == (a, "")) + 1
            for u in sorted(want[a]):
                i += 1
                rows.insert(i, ShareRow(a, u, a, depth, 1, False, None, 0, None, None, None))
        else:
            rows.append(ShareRow(a, "", "root", 1, 1, False, None, 0, None, None, None))
            rows.extend(ShareRow(a, u, a, 2, 1, False, None, 0, None, None, None) for u in sorted(want[a]))
    return tuple(rows)


# --------------------------------------------------------------------------- results
@dataclass
class PassRecord:
    t: float  # seconds from the first submission
    d: int  # the d the pass used
    u_total: float  # root's RawUsage at the start of the pass (what EffectvUsage was computed from)
    w: float  # the dummy's RawUsage then
    u_read: float | None = None  # root's RawUsage as the agent's last control tick read it (sshare's integer)


@dataclass
class MFRun:
    start: list[float]
    end: list[float]
    order: list[int] = field(default_factory=list)
    ran: list[float] | None = None  # (engine.RawRun's field: the workload's run times are simulated as they are)
    passes: int = 0
    events: int = 0
    unfinished: int = 0
    control_ticks: int = 0
    d_changes: int = 0
    pulses: int = 0
    holds: int = 0
    releases: int = 0
    nices: int = 0
    unnices: int = 0
    gate_ticks: int = 0
    notes: list[str] = field(default_factory=list)
    records: list[PassRecord] = field(default_factory=list)
    s_ref: float | None = None
    t0: float = 0.0  # the first submission: PassRecord.t and the trace's times count from it
    # per pass, when `trace` is set: (t, {(account, user): RawUsage}, {(account, user): F})
    trace: list[tuple[float, dict, dict]] = field(default_factory=list)
    final_usage: dict[tuple[str, str], float] = field(default_factory=dict)
    # on nodes (SlurmSched.node_model on several nodes): each job's CPUs per node (empty: never started)
    nodes: list[list[int]] | None = None


# --------------------------------------------------------------------------- the engine
