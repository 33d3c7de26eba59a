"""The agent's one configuration file (TOML), validated with errors that name the key.

    [agent]
    db = "/var/lib/fscontrol/history.db"
    apply = false                      # true: act; false (default): plan only (dry run)
    lock = "/run/fscontrol/agent.lock"   # one lock per cluster: agent.<cluster>.lock (default: <cluster>.lock beside db)
    metrics = "/var/lib/prometheus/node-exporter/fscontrol.prom"
    metrics_group = "prometheus"       # optional: the textfile 0640 root:GROUP, with per-user series under PrivateData
    publish_dir = "/var/lib/fscontrol/public"
    secret = "/var/lib/fscontrol/secret"  # default: beside db; made at the first publish (0600, root's alone)
    admins = ["hpcadmin"]              # may `fscontrol forecast --user` anyone (root always may)
    release_on_stop = false            # `fscontrol run`: release the agent's holds on SIGTERM
    on_stop = "keep"                   # `fscontrol run` on SIGTERM: keep what control set, or "restore" (= control off)
    slurm_timeout = "60s"
    tick_deadline = "5m"               # one tick's whole budget (keep it under the service's timeout)
    pass_lead = "3s"                   # `run`: control this long before each decay pass ("0s": on schedule.control)
    pass_trim = "0.5s"                 # `run`: d trimmed on root's usage this long before the pass ("0s": off)

    [forecast]                         # caps on one user's `forecast --plan` / web planner request
    max_horizon = "60d"                # the longest plan (and --horizon) a user may forecast
    max_cpus = 4096                    # CPUs per plan step (default: the cluster's size, from sinfo)
    max_plan_steps = 40                # steps of one plan

    [schedule]                         # `fscontrol run`: one interval per stage
    collect = "5m"
    fit = "1h"
    control = "5m"
    gate = "2m"
    watch = "15s"                      # `run`: d re-applied this soon after a reconfigure or restart

    [clusters.tbcluster]               # one table per cluster (-M name); the name is Slurm's
    target_core_hours = 10000          # u*: fair-share halves every u* core-hours
    method = "hybrid"                  # damping | padding | hybrid | none (report only)
    reference_share = "median"         # median | mean | min | max | a number in (0, 1]
    dummy = "fsadmin/fsdummy"          # ACCOUNT/USER of the padding association
    padding_mode = "steady"            # steady (default) | pulse | trim (hybrid: padding into the pass's own read)
    max_damping = 1000                 # d never above this (a cold start's ideal d is huge)
    persist = false                    # true: d also in slurm.conf, for a restart to start on it
    slurm_conf = "/etc/slurm/slurm.conf"  # default: SLURM_CONF from `scontrol show config`
    persist_tolerance = 0.1            # written only when a restart would start this far (relative) off
    persist_interval = "1h"            # and at most once in this long
    persist_reconfigure = false        # true: `scontrol reconfigure` after a write (restarts slurmctld >= 23.11)
    ...

Pure apart from `load` (which reads the file): everything else takes plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import math

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fscontrol.model.allocations import Allocation, parse_allocations, parse_period
from fscontrol.errors import ConfigError

METHODS = ("damping", "padding", "hybrid", "none")
PADDING_MODES = ("pulse", "steady", "trim")
REF_RULES = ("median", "mean", "min", "max")
GATE_ACTIONS = ("hold", "nice")


@dataclass(frozen=True, slots=True)
class GateConfig:
    enabled: bool = False
    action: str = "hold"  # hold | nice
    nice: int = 10000
    max_actions: int = 20
    node_cpus: int | None = None  # cpus per node, for allocations counted in nodes


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    name: str
    target_core_hours: float | None = None
    method: str = "none"
    reference_share: str | float = "median"
    dummy: str = "fsadmin/fsdummy"
    dummy_partition: str = "fsadmin"
    padding_mode: str = "steady"  # steady (measured closest, docs/control.md) | pulse
    padding_qos: str = "fspad"
    padding_reservation: str | None = None  # a reservation that keeps a core for the padding job on a full cluster
    padding_threshold: float = 0.02  # pulse when padding fell this fraction below its target
    hysteresis: float = 0.25  # damping: move d only when the ideal is this far past the midpoint
    persist: bool = False  # also write d into slurm.conf (atomically, validated), for a restart to start on it
    slurm_conf: str | None = None  # None: SLURM_CONF as `scontrol show config` reports it
    persist_tolerance: float = 0.1  # write slurm.conf only when its d would start a restart this far (relative) off
    persist_interval_s: float = 3600.0  # and at most once in this long (config: persist_interval = "1h")
    persist_reconfigure: bool = False  # `scontrol reconfigure` after a write (from Slurm 23.11 that restarts slurmctld)
    max_damping: int = 1000  # d never above this (a cold cluster's ideal d is huge: docs/control.md)
    gate: GateConfig = field(default_factory=GateConfig)
    allocations: dict[str, Allocation] = field(default_factory=dict)

    @property
    def dummy_key(self) -> tuple[str, str]:
        account, _, user = self.dummy.partition("/")
        return (account, user)

    @property
    def target_usage(self) -> float | None:
        """u* in RawUsage units (billing-seconds)."""
        return None if self.target_core_hours is None else self.target_core_hours * 3600.0


@dataclass(frozen=True, slots=True)
class AgentConfig:
    db: str | None = None
    apply: bool = False
    lock: str | None = None
    metrics: str | None = None
    publish_dir: str | None = None
    admins: tuple[str, ...] = ()  # users who may `forecast --user` anyone (root always may)
    release_on_stop: bool = False  # `fscontrol run`: release the agent's holds when it is stopped
    on_stop: str = "keep"  # `fscontrol run` stopped: "keep" d and padding, or "restore" (control off; on again at start)
    slurm_timeout_s: float = 60.0
    tick_deadline_s: float = 300.0  # a tick never runs a command past this (systemd's TimeoutSec is 600)
    pass_lead_s: float = 3.0  # `run`: control this long before each decay pass (0: every schedule.control)
    pass_trim_s: float = 0.5  # `run`: d trimmed on root's usage alone this long before the pass (0: off)
    schedule: dict[str, float] = field(default_factory=lambda: {"collect": 300.0, "fit": 3600.0, "control": 300.0, "gate": 120.0, "watch": 15.0})
    clusters: dict[str, ClusterConfig] = field(default_factory=dict)
    metrics_group: str | None = None  # node_exporter's group: the textfile 0640 root:GROUP (privacy.py)
    secret: str | None = None  # the site secret (HMAC key); None: `secret` beside the history
    # [forecast]: max_horizon_s, max_cpus (None: the cluster's size), max_plan_steps
    forecast: dict[str, Any] = field(default_factory=lambda: _forecast_defaults())

    def cluster(self, name: str | None) -> ClusterConfig:
        """The named cluster's settings; defaults for a cluster the file does not name."""
        if name is None:
            if len(self.clusters) == 1:
                return next(iter(self.clusters.values()))
            return ClusterConfig(name="")
        return self.clusters.get(name) or ClusterConfig(name=name)


def _unknown(section: str, got: Mapping[str, Any], known: set[str]) -> None:
    for k in got:
        if k not in known:
            import difflib

            near = difflib.get_close_matches(k, sorted(known), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(sorted(known))})"
            raise ConfigError(f"config: unknown key '{section}{k}'{hint}")


def _type(section: str, key: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise ConfigError(f"config: '{section}{key}' must be {kinds[0].__name__}, not a boolean")
    if not isinstance(value, kinds):
        raise ConfigError(f"config: '{section}{key}' must be {' or '.join(k.__name__ for k in kinds)}, got {value!r}")
    return value


def _choice(section: str, key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"config: '{section}{key}' must be one of {', '.join(choices)}, got {value!r}")
    return value


def _gate(section: str, raw: Mapping[str, Any]) -> GateConfig:
    _unknown(section, raw, set(GateConfig.__slots__))
    g = GateConfig()
    out: dict[str, Any] = {}
    if "enabled" in raw:
        out["enabled"] = _type(section, "enabled", raw["enabled"], bool)
    if "action" in raw:
        out["action"] = _choice(section, "action", raw["action"], GATE_ACTIONS)
    for k in ("nice", "max_actions", "node_cpus"):
        if k in raw:
            v = _type(section, k, raw[k], int)
            if v < (0 if k == "nice" else 1):
                raise ConfigError(f"config: '{section}{k}' must be positive, got {v}")
            out[k] = v
    return replace(g, **out)


def _cluster(name: str, raw: Mapping[str, Any]) -> ClusterConfig:
    sec = f"clusters.{name}."
    known = (set(ClusterConfig.__slots__) - {"name", "persist_interval_s"}) | {"persist_interval"}
    _unknown(sec, raw, known)
    out: dict[str, Any] = {"name": name}
    if "target_core_hours" in raw:
        v = float(_type(sec, "target_core_hours", raw["target_core_hours"], (int, float)))
        if not (math.isfinite(v) and v > 0):
            raise ConfigError(f"config: '{sec}target_core_hours' must be a finite number > 0, got {v:g}")
        out["target_core_hours"] = v
    if "method" in raw:
        out["method"] = _choice(sec, "method", raw["method"], METHODS)
    if out.get("method", "none") != "none" and "target_core_hours" not in out:
        raise ConfigError(f"config: '{sec}method' = {out['method']!r} needs '{sec}target_core_hours'")
    if "reference_share" in raw:
        v = raw["reference_share"]
        if isinstance(v, str):
            _choice(sec, "reference_share", v, REF_RULES)
        else:
            v = float(_type(sec, "reference_share", v, (int, float)))
            if not 0 < v <= 1:
                raise ConfigError(f"config: '{sec}reference_share' must be in (0, 1], got {v:g}")
        out["reference_share"] = v
    if "dummy" in raw:
        v = _type(sec, "dummy", raw["dummy"], str)
        a, slash, u = v.partition("/")
        if not (a and slash and u):
            raise ConfigError(f"config: '{sec}dummy' must be ACCOUNT/USER, got {v!r}")
        out["dummy"] = v
    for k in ("dummy_partition", "padding_qos", "slurm_conf", "padding_reservation"):
        if k in raw:
            out[k] = _type(sec, k, raw[k], str)
    if "padding_mode" in raw:
        out["padding_mode"] = _choice(sec, "padding_mode", raw["padding_mode"], PADDING_MODES)
        if out["padding_mode"] == "trim" and out.get("method") not in ("hybrid", "none", None):
            raise ConfigError(f"config: '{sec}padding_mode' = \"trim\" goes with method = \"hybrid\" "
                              f"(it pads the rest of d's step), not {out['method']!r}")
    for k in ("padding_threshold", "hysteresis"):
        if k in raw:
            v = float(_type(sec, k, raw[k], (int, float)))
            if not 0 <= v < 1:
                raise ConfigError(f"config: '{sec}{k}' must be in [0, 1), got {v:g}")
            out[k] = v
    for k in ("persist", "persist_reconfigure"):
        if k in raw:
            out[k] = _type(sec, k, raw[k], bool)
    if "persist_tolerance" in raw:
        v = float(_type(sec, "persist_tolerance", raw["persist_tolerance"], (int, float)))
        if not 0 <= v < 1:
            raise ConfigError(f"config: '{sec}persist_tolerance' must be in [0, 1), got {v:g}")
        out["persist_tolerance"] = v
    if "persist_interval" in raw:
        v = parse_period(raw["persist_interval"], where=f"config: '{sec}persist_interval'")
        if v < 60:
            raise ConfigError(f"config: '{sec}persist_interval' must be at least 60 s, got {v:g} s")
        out["persist_interval_s"] = v
    if "max_damping" in raw:
        v = _type(sec, "max_damping", raw["max_damping"], int)
        if not 1 <= v <= 65535:
            raise ConfigError(f"config: '{sec}max_damping' must be an integer in 1..65535, got {v}")
        out["max_damping"] = v
    if "gate" in raw:
        out["gate"] = _gate(sec + "gate.", _type(sec, "gate", raw["gate"], dict))
    if "allocations" in raw:
        out["allocations"] = parse_allocations(_type(sec, "allocations", raw["allocations"], dict))
    return ClusterConfig(**out)


def _forecast_defaults() -> dict[str, Any]:
    from fscontrol.export import limits

    return {"max_horizon_s": limits.DEFAULT_MAX_HORIZON_S, "max_cpus": None, "max_plan_steps": limits.DEFAULT_MAX_PLAN_STEPS}


def _forecast(raw: Mapping[str, Any]) -> dict[str, Any]:
    """[forecast]: the caps on one user's forecast request (fscontrol.export.limits)."""
    from fscontrol.export import limits

    _unknown("forecast.", raw, {"max_horizon", "max_cpus", "max_plan_steps"})
    out = _forecast_defaults()
    if "max_horizon" in raw:
        h = parse_period(raw["max_horizon"], where="config: 'forecast.max_horizon'")
        if not 3600 <= h <= limits.HARD_MAX_HORIZON_S:
            raise ConfigError(f"config: 'forecast.max_horizon' must be between 1 h and 366 d, got {h / 86400:g} d")
        out["max_horizon_s"] = h
    for k, hi in (("max_cpus", 10**7), ("max_plan_steps", limits.HARD_MAX_PLAN_STEPS)):
        if k in raw:
            v = _type("forecast.", k, raw[k], int)
            if not 1 <= v <= hi:
                raise ConfigError(f"config: 'forecast.{k}' must be between 1 and {hi}, got {v}")
            out[k] = v
    return out


def from_dict(raw: Mapping[str, Any]) -> AgentConfig:
    """Validate a parsed TOML document into an AgentConfig."""
    _unknown("", raw, {"agent", "schedule", "clusters", "forecast"})
    agent = _type("", "agent", raw.get("agent", {}), dict)
    _unknown("agent.", agent, {"db", "apply", "lock", "metrics", "metrics_group", "secret", "publish_dir", "admins", "release_on_stop", "slurm_timeout",
                               "tick_deadline", "on_stop", "pass_lead", "pass_trim"})
    out: dict[str, Any] = {}
    for k in ("db", "lock", "metrics", "metrics_group", "secret", "publish_dir"):
        if k in agent:
            out[k] = _type("agent.", k, agent[k], str)
    for k in ("apply", "release_on_stop"):
        if k in agent:
            out[k] = _type("agent.", k, agent[k], bool)
    if "admins" in agent:
        admins = _type("agent.", "admins", agent["admins"], list)
        for a in admins:
            _type("agent.", "admins", a, str)
        out["admins"] = tuple(admins)
    if "slurm_timeout" in agent:
        out["slurm_timeout_s"] = parse_period(agent["slurm_timeout"], where="config: 'agent.slurm_timeout'")
    if "on_stop" in agent:
        out["on_stop"] = _choice("agent.", "on_stop", agent["on_stop"], ("keep", "restore"))
    if "tick_deadline" in agent:
        out["tick_deadline_s"] = parse_period(agent["tick_deadline"], where="config: 'agent.tick_deadline'")
    if "pass_lead" in agent:
        v = agent["pass_lead"]
        lead = 0.0 if v in (0, "0", "0s") else parse_period(v, where="config: 'agent.pass_lead'")
        if not 0 <= lead <= 60:
            raise ConfigError(f"config: 'agent.pass_lead' must be between 0 s and 60 s, got {lead:g} s")
        out["pass_lead_s"] = lead
    if "pass_trim" in agent:
        v = agent["pass_trim"]
        trim = 0.0 if v in (0, "0", "0s") else parse_period(v, where="config: 'agent.pass_trim'")
        out["pass_trim_s"] = trim
    default = AgentConfig()
    lead, trim = out.get("pass_lead_s", default.pass_lead_s), out.get("pass_trim_s", default.pass_trim_s)
    if trim and not 0 < trim < lead:
        raise ConfigError(f"config: 'agent.pass_trim' ({trim:g} s) must be shorter than 'agent.pass_lead' ({lead:g} s)")
    if out.get("tick_deadline_s", default.tick_deadline_s) <= out.get("slurm_timeout_s", default.slurm_timeout_s):
        raise ConfigError("config: 'agent.tick_deadline' must be longer than 'agent.slurm_timeout' (one command must fit in a tick)")
    sched = _type("", "schedule", raw.get("schedule", {}), dict)
    defaults = AgentConfig().schedule
    _unknown("schedule.", sched, set(defaults))
    schedule = dict(defaults)
    for k, v in sched.items():
        s = parse_period(v, where=f"config: 'schedule.{k}'")
        if k == "watch":  # one RPC (scontrol show config): the reconfigure watch may run often
            if s < 5:
                raise ConfigError(f"config: 'schedule.watch' must be at least 5 s, got {s:g} s")
        elif s < 60:
            raise ConfigError(f"config: 'schedule.{k}' must be at least 60 s (every Slurm command is an RPC to slurmctld), got {s:g} s")
        schedule[k] = s
    for stage in ("control", "fit"):  # `fscontrol run` wakes every collect; these run at a wake-up once due
        if schedule[stage] < schedule["collect"]:
            raise ConfigError(
                f"config: 'schedule.{stage}' ({schedule[stage]:g} s) is shorter than 'schedule.collect' "
                f"({schedule['collect']:g} s): {stage} runs at a collect, so it cannot run more often"
            )
    out["schedule"] = schedule
    out["forecast"] = _forecast(_type("", "forecast", raw.get("forecast", {}), dict))
    clusters = _type("", "clusters", raw.get("clusters", {}), dict)
    out["clusters"] = {name: _cluster(name, _type("clusters.", name, c, dict)) for name, c in clusters.items()}
    return AgentConfig(**out)


def load(path: Path | str | None) -> AgentConfig:
    """Read and validate the config file; None (no file given) means all defaults."""
    if path is None:
        return AgentConfig()
    import tomllib  # here: a command given no config file never parses TOML

    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist") from None
    except OSError as e:
        raise ConfigError(f"config file {p} is unreadable: {e}") from None
    except UnicodeDecodeError as e:  # TOML is UTF-8 (e.g. a comment saved as Latin-1)
        raise ConfigError(f"config file {p} is not UTF-8: byte 0x{e.object[e.start]:02x} at offset {e.start} "
                          "(TOML files are UTF-8)") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {p} is not valid TOML: {e}") from None
    try:
        return from_dict(raw)
    except ConfigError as e:
        raise ConfigError(f"{p}: {e}") from None


def effective(cfg: AgentConfig) -> dict[str, Any]:
    """The settings in force, defaults filled in, as plain data (for `fscontrol config check`)."""

    def plain(v: Any) -> Any:
        if isinstance(v, Allocation):
            return v.to_dict()
        if isinstance(v, (AgentConfig, ClusterConfig, GateConfig)):
            return {name: plain(getattr(v, name)) for name in v.__slots__}
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(cfg)


_UNSET = {"db": "(default: $FSCONTROL_DB, else /var/lib/fscontrol/history.db for root)", "lock": "(default: <cluster>.lock beside db)",
          "slurm_conf": "(default: SLURM_CONF from `scontrol show config`)", "secret": "(default: beside db)"}


def effective_lines(cfg: AgentConfig) -> list[str]:
    """Every setting in force, one `key = value` a line in the file's own sections (for `fscontrol
    config check`): what the admin set and the default of what they did not."""
    import json

    def show(key: str, v: Any) -> str:
        if v is None and key == "db":  # the history in force: $FSCONTROL_DB or the running user's default
            return f"(default: {history_path(cfg)})"
        if v is None:
            return _UNSET.get(key, "(not set)")
        if key.endswith("_s") and isinstance(v, float):
            return f'"{int(v)}s"' if v.is_integer() else f'"{v:g}s"'
        return json.dumps(v) if isinstance(v, (str, bool, list, tuple)) else f"{v:g}" if isinstance(v, float) else str(v)

    def name(key: str) -> str:  # the file's key (persist_interval, not persist_interval_s)
        return key[:-2] if key.endswith("_s") else key

    out = ["[agent]"]
    for k in AgentConfig.__slots__:
        if k not in ("schedule", "clusters", "forecast"):
            out.append(f"  {name(k)} = {show(k, getattr(cfg, k))}")
    out.append("[schedule]")
    out += [f'  {k} = "{v:g}s"' for k, v in cfg.schedule.items()]
    out.append("[forecast]")
    for k, v in cfg.forecast.items():
        out.append(f"  {name(k)} = {show(k, v)}" if v is not None else f"  {name(k)} = (default: the cluster's size)")
    for cname, cc in sorted(cfg.clusters.items()):
        out.append(f"[clusters.{cname}]")
        for k in ClusterConfig.__slots__:
            if k in ("name", "gate", "allocations"):
                continue
            out.append(f"  {name(k)} = {show(k, getattr(cc, k))}")
        g = cc.gate
        out.append(f"  gate: enabled = {str(g.enabled).lower()}, action = {g.action}, nice = {g.nice}, "
                   f"max_actions = {g.max_actions}; {len(cc.allocations)} allocation(s)")
    return out


def history_path(cfg: AgentConfig, db: Path | str | None = None) -> Path:
    """The history a command reads or writes: --db, else the config's agent.db, else
    store.history.default_db_path() ($FSCONTROL_DB, root's or the user's). The one place this
    choice is written (the agent's setup and agent.commands)."""
    from fscontrol.store import history as store

    return Path(db or (Path(cfg.db) if cfg.db else None) or store.default_db_path())
