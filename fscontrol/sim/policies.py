"""Scheduling policies the simulator runs, and their named presets.

kinds:
  fcfs    first come first served (queue order = submit time). With ``backfill="easy"`` and
          ``depth=1`` this is EASY backfilling; with ``backfill="none"`` plain FCFS.
  linear  multifactor linear priority ``age_weight * eligible_hours + size_weight * nodes - nice``
          (no PriorityMaxAge cap), ``depth`` jobs get reservations, then backfill (or not).
  sfs     Steffen's Simultaneous Fair-Share: pass 1 places, in priority order, only jobs of
          accounts at/under target occupancy, re-checking after each placement (no
          reservations); pass 2 is the ``linear`` pass over the full list.
  gate    ``linear`` plus fscontrol's gate (:func:`fscontrol.act.gate.plan_gate`) every
          ``gate_interval_s``: hold (held jobs lose their accrued age, as in Slurm without
          ACCRUE_ALWAYS) or nice (demote by ``gate_nice`` priority points).

backfill: "easy" - a job behind the reserved ones may start now if it does not delay any
reservation (for depth 1 this is exactly EASY: shadow time and extra nodes of the head job);
"none" - the pass stops at the ``depth``-th job that does not fit; "conservative" - every job
gets a reservation on arrival and backfills only where it violates none, the queue order
(fcfs or linear) deciding the order of re-planning (:mod:`fscontrol.sim.conservative`; depth
does not apply).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from ..errors import ConfigError

Kind = Literal["fcfs", "linear", "sfs", "gate", "multifactor"]
KINDS = ("fcfs", "linear", "sfs", "gate", "multifactor")

# Priority weights (points per hour of eligible age, points per node).
ELIGIBLE_DOMINANT = (100.0, 1.0)  # 1 h of age outweighs ~100 nodes: age decides (Blue Waters-like)
SIZE_DOMINANT = (6.0, 1.0)  # ~31 h of age make up Bob's 185-node deficit; 500 nodes (Chris) ~ 3.5 days


BACKFILLS = ("easy", "none", "conservative")
SUFFIXES = {"nobf": "none", "bf": "easy", "cons": "conservative"}


@dataclass(frozen=True, slots=True)
class Policy:
    kind: Kind = "fcfs"
    backfill: Literal["easy", "none", "conservative"] = "easy"
    depth: int = 1
    age_weight: float = 0.0
    size_weight: float = 0.0
    gate_action: Literal["hold", "nice"] = "hold"
    gate_interval_s: float = 300.0
    gate_nice: int = 1_000_000
    gate_max_actions: int = 1000
    schedule_interval_s: float = 0.0  # 0: schedule on every event; > 0: only on this tick
    name: str = ""
    # multifactor only (fscontrol.sim.multifactor): slurm.conf's priority settings, the agent's
    # control in the loop (None: d stays as configured), disturbances
    priority: Any = None
    control: Any = None
    disturbances: tuple = ()
    gate: bool = False  # multifactor: the agent's gate on top (gate_action, gate_interval_s, ...)
    slurm_sched: Any = None  # multifactor: a slurmsched.SlurmSched (Slurm's scheduler, not EASY at every event)
    first_pass: float | None = None  # multifactor: a decay pass's time (the capture's priority_last_decay_ran)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"policy kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.backfill not in BACKFILLS:
            raise ConfigError(f"backfill must be one of {', '.join(BACKFILLS)}, not {self.backfill!r}")
        if self.backfill == "conservative" and self.kind not in ("fcfs", "linear"):
            raise ConfigError(
                f"conservative backfilling takes a priority order (fcfs or linear), not {self.kind!r}: "
                "SFS's first pass and the gate's holds start or stop jobs outside the reservations"
            )
        if self.backfill == "conservative" and self.schedule_interval_s:
            raise ConfigError("conservative backfilling decides at every event: schedule_interval_s must be 0")
        if not isinstance(self.depth, int) or self.depth < 1:
            raise ConfigError(f"reservation depth must be an integer >= 1, not {self.depth!r}")
        if self.gate_action not in ("hold", "nice"):
            raise ConfigError(f"gate action must be 'hold' or 'nice', not {self.gate_action!r}")
        if self.gate_interval_s <= 0:
            raise ConfigError("gate interval must be > 0 seconds")
        if self.schedule_interval_s < 0:
            raise ConfigError("schedule interval must be >= 0 seconds")
        if self.kind == "fcfs" and (self.age_weight or self.size_weight):
            raise ConfigError("fcfs orders by submit time: it takes no priority weights")
        if self.kind == "multifactor" and self.priority is None:
            raise ConfigError("a multifactor policy needs its priority settings (PriorityConfig)")

    @property
    def label(self) -> str:
        return self.name or describe(self)

    @property
    def uses_priority(self) -> bool:
        return self.kind != "fcfs"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["label"] = self.label
        return d


def describe(p: Policy) -> str:
    if p.kind == "multifactor":
        pc = p.priority
        algo = "fairtree" if pc.fair_tree else f"classic,d={pc.damping}"
        ctl = f",{p.control.label}" if p.control is not None else ""
        ctl += f",gate-{p.gate_action}/{p.gate_interval_s / 60:g}min" if p.gate else ""
        sched = ",slurm-sched" if p.slurm_sched is not None else f",depth={p.depth},bf={p.backfill}"
        return f"multifactor({algo}{ctl},hl={pc.half_life_s / 86400:g}d{sched})"
    if p.backfill == "conservative":
        if p.kind == "fcfs":
            return "conservative"
        return f"conservative-{p.kind}(age={p.age_weight:g}/h,size={p.size_weight:g}/node)"
    if p.kind == "fcfs":
        return "easy" if p.backfill == "easy" and p.depth == 1 else f"fcfs(bf={p.backfill},depth={p.depth})"
    w = f"age={p.age_weight:g}/h,size={p.size_weight:g}/node"
    base = f"{p.kind}({w},depth={p.depth},bf={p.backfill}"
    if p.kind == "gate":
        base += f",{p.gate_action}/{p.gate_interval_s / 60:g}min"
    return base + ")"


def _mf(fair_tree: bool) -> Any:
    from .mfconfig import PriorityConfig

    # fair-share dominant, an age term that breaks ties within a week (PriorityMaxAge 7 days), and
    # Slurm's defaults for the rest: 5-minute passes, a one-week half-life, d = 1
    return PriorityConfig(weight_age=1000, weight_fairshare=10000, fair_tree=fair_tree)


PRESETS: dict[str, Policy] = {
    "fcfs": Policy("fcfs", backfill="none", name="fcfs"),
    "easy": Policy("fcfs", backfill="easy", name="easy"),
    "linear-eligible": Policy("linear", depth=2, age_weight=ELIGIBLE_DOMINANT[0], size_weight=ELIGIBLE_DOMINANT[1], name="linear-eligible"),
    "linear-size": Policy("linear", depth=2, age_weight=SIZE_DOMINANT[0], size_weight=SIZE_DOMINANT[1], name="linear-size"),
    "sfs-eligible": Policy("sfs", depth=2, age_weight=ELIGIBLE_DOMINANT[0], size_weight=ELIGIBLE_DOMINANT[1], name="sfs-eligible"),
    "sfs-size": Policy("sfs", depth=2, age_weight=SIZE_DOMINANT[0], size_weight=SIZE_DOMINANT[1], name="sfs-size"),
    "gate-hold-eligible": Policy("gate", depth=2, age_weight=ELIGIBLE_DOMINANT[0], size_weight=ELIGIBLE_DOMINANT[1], gate_action="hold", name="gate-hold-eligible"),
    "gate-nice-eligible": Policy("gate", depth=2, age_weight=ELIGIBLE_DOMINANT[0], size_weight=ELIGIBLE_DOMINANT[1], gate_action="nice", name="gate-nice-eligible"),
    "gate-hold-size": Policy("gate", depth=2, age_weight=SIZE_DOMINANT[0], size_weight=SIZE_DOMINANT[1], gate_action="hold", name="gate-hold-size"),
    "gate-nice-size": Policy("gate", depth=2, age_weight=SIZE_DOMINANT[0], size_weight=SIZE_DOMINANT[1], gate_action="nice", name="gate-nice-size"),
    "conservative": Policy("fcfs", backfill="conservative", name="conservative"),
    "conservative-linear-eligible": Policy("linear", backfill="conservative", age_weight=ELIGIBLE_DOMINANT[0], size_weight=ELIGIBLE_DOMINANT[1], name="conservative-linear-eligible"),
    "conservative-linear-size": Policy("linear", backfill="conservative", age_weight=SIZE_DOMINANT[0], size_weight=SIZE_DOMINANT[1], name="conservative-linear-size"),
    "mf-classic": Policy("multifactor", priority=_mf(False), name="mf-classic"),
    "mf-fairtree": Policy("multifactor", priority=_mf(True), name="mf-fairtree"),
}


def get_policy(preset: str, /, **overrides: Any) -> Policy:
    """A preset by name (see PRESETS), with fields overridden (e.g. ``backfill="none"``, ``depth=4``).

    A suffix ``+nobf`` / ``+bf`` / ``+cons`` sets backfill "none" / "easy" / "conservative" (e.g.
    "linear-eligible+nobf", "easy+cons" is "conservative").
    The label is the preset name when nothing else changed, else ``name=`` or a description.
    """
    base, _, suffix = preset.partition("+")
    if base not in PRESETS:
        raise ConfigError(f"unknown policy {base!r}: choose one of {', '.join(PRESETS)}")
    p = PRESETS[base]
    if suffix:
        if suffix not in SUFFIXES:
            raise ConfigError(f"unknown policy suffix {suffix!r} (use +nobf, +bf or +cons)")
        overrides.setdefault("backfill", SUFFIXES[suffix])
    overrides = {k: v for k, v in overrides.items() if v is not None}
    name = overrides.pop("name", None)
    try:
        q = replace(p, **overrides) if overrides else p
    except TypeError as e:
        raise ConfigError(f"policy {preset!r}: {e}") from None
    if name:
        return replace(q, name=name)
    if q == p:
        return q
    if suffix and set(overrides) == {"backfill"}:
        return replace(q, name=preset)
    return replace(q, name=describe(q))
