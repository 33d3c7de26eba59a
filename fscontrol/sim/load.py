"""A workload from a command-line spec: a log, a scenario, the section-9 generator or a capture."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .history import read_history
from .workload import Workload, load_scenario, read_swf, section9_workload


def load_workload(
    spec: str | Path,
    *,
    procs_per_node: int | None = None,
    overrun: str = "extend",
    processors: str = "allocated",
    limit: int | None = None,
    history: Mapping[str, Any] | None = None,
) -> Workload:
    """A workload from a command-line spec: an SWF log (``.swf``, ``.swf.gz``), a scenario
    (``.toml``, ``.json``), ``section9`` / ``section9:SEED`` (Steffen's generator), or a folder
    recorded by ``fscontrol capture`` (a site's own history: :func:`fscontrol.sim.history.read_history`,
    ``history`` its keyword arguments). One with no jobs is a ConfigError (exit 2): nothing to
    simulate is one line, never an empty table (issue 28)."""
    w = _load_workload(spec, procs_per_node=procs_per_node, overrun=overrun, processors=processors, limit=limit,
                       history=history)
    if not w.jobs:
        what = "it holds no job"
        if str(spec).endswith((".swf", ".swf.gz")):
            st = w.meta.get("stats", {})
            n = st.get("records", 0)
            what = ("its SWF has no job lines" if not n else
                    f"its {n} job line(s) all lack a run time or processor count (-1), or are larger than the machine")
        raise ConfigError(f"workload {str(spec)!r} has no jobs to simulate: {what}")
    return w


def _load_workload(spec: str | Path, *, procs_per_node: int | None, overrun: str, processors: str, limit: int | None,
                   history: Mapping[str, Any] | None) -> Workload:
    s = str(spec)
    if s == "section9" or s.startswith("section9:"):
        seed_text = s.partition(":")[2] or "0"
        try:
            seed = int(seed_text)
        except ValueError:
            raise ConfigError(f"section9 seed must be an integer, not {seed_text!r}") from None
        return section9_workload(seed)
    p = Path(s)
    if not p.exists():
        raise ConfigError(f"workload {s!r}: no such file (or use section9[:SEED])")
    if p.is_dir():
        return read_history(p, **(history or {}))
    if p.suffix in (".toml", ".json"):
        return load_scenario(p)
    if p.name.endswith((".swf", ".swf.gz")):
        return read_swf(p, procs_per_node=procs_per_node, overrun=overrun, processors=processors, limit=limit)
    raise ConfigError(f"workload {s!r}: expected .swf, .swf.gz, .toml, .json, a captured folder or section9[:SEED]")
