"""A job's billing under a partition's TRESBillingWeights, as slurmctld computes it (pure).

RawUsage grows by billing x seconds x the QOS UsageFactor, so every plan in CPUs (the control's
padding, the forecast's `--plan`, the simulator) is right only where billing equals CPUs. Slurm's
formula (src/common/assoc_mgr.c `assoc_mgr_tres_weighted`, docs tres.html "TRESBillingWeights"):

- no TRESBillingWeights on the partition: billing = the job's CPUs;
- otherwise each TRES count times its weight (memory counted in MB; a weight with a suffix
  K/M/G/T/P is per that many: `Mem=0.25G` is 0.25 a GB, i.e. 0.25/1024 a MB), and:
  - default: the SUM of them;
  - PriorityFlags=MAX_TRES: the MAX of the node TRES (cpu, mem, node, gres/*) + the SUM of the
    global ones (licenses, burst buffers);
  - PriorityFlags=MAX_TRES_GRES (25.05 and later): the SUM of the GRES + the MAX of the other node
    TRES + the SUM of the global ones.
- The `billing=` slurmctld shows in AllocTRES is that number truncated to an integer.

Before 25.05 slurmctld finds its flags in PriorityFlags by substring (read_config.c `xstrcasestr`),
so `MAX_TRES_GRES` in the slurm.conf of a 22.05 or 24.11 is read as MAX_TRES (and `scontrol show
config` prints MAX_TRES): `billing(..., release="24.11")` does the same (seen on the testbed,
tests/test_integration_tres.py). Flags read from `scontrol show config` are already slurmctld's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from fscontrol.errors import ConfigError

_SUFFIX = {"": 1.0, "K": 1.0 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 ** 2, "P": 1024.0 ** 3}
_NODE_TRES = ("cpu", "mem", "node")


def parse_weights(text: str | None) -> dict[str, float]:
    """`CPU=1.0,Mem=0.25G,GRES/gpu=8.0` as {tres (lower case): weight per base unit (memory: per MB)}.
    "" or None: {} (no weights: billing = CPUs). ConfigError on anything else."""
    out: dict[str, float] = {}
    for part in (text or "").replace(" ", "").split(","):
        if not part:
            continue
        name, eq, value = part.partition("=")
        if not eq or not name or not value:
            raise ConfigError(f"TRESBillingWeights part {part!r}: expected TRES=weight, e.g. GRES/gpu=8.0")
        unit = value[-1].upper() if value[-1].isalpha() else ""
        if unit and unit not in _SUFFIX:
            raise ConfigError(f"TRESBillingWeights part {part!r}: unknown unit {value[-1]!r} (K, M, G, T or P)")
        try:
            w = float(value[:-1] if unit else value)
        except ValueError:
            raise ConfigError(f"TRESBillingWeights part {part!r}: {value!r} is not a number") from None
        if not math.isfinite(w) or w < 0:
            raise ConfigError(f"TRESBillingWeights part {part!r}: the weight must be a number >= 0")
        # memory and burst buffers are counted in MB: a weight per GB is per 1024 MB
        out[name.lower()] = w / _SUFFIX[unit] if unit else w
    return out


def parse_tres(text: str) -> dict[str, float]:
    """AllocTRES / ReqTRES (`billing=24,cpu=8,gres/gpu=2,mem=1000M,node=1`) as {tres: count};
    memory in MB (a count with a suffix K/M/G/T/P is converted). ConfigError on a bad part."""
    out: dict[str, float] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, value = part.partition("=")
        unit = value[-1:].upper() if value[-1:].isalpha() else ""
        try:
            n = float(value[:-1] if unit else value)
        except ValueError:
            raise ConfigError(f"TRES part {part!r}: expected name=count") from None
        if not eq or unit not in _SUFFIX:
            raise ConfigError(f"TRES part {part!r}: expected name=count")
        out[name.lower()] = n * _SUFFIX[unit] if unit else n
    return out


def _kind(tres: str) -> str:
    """"node" (tied to a node: cpu, mem, node), "gres" (gres/...) or "global" (license/, bb/, ...)."""
    if tres in _NODE_TRES:
        return "node"
    return "gres" if tres.startswith("gres/") else "global"


MAX_TRES_GRES_SINCE = (25, 5)  # CHANGELOG/slurm-25.05.md: "Add new MAX_TRES_GRES PriorityFlags option"


def has_max_tres_gres(release: str) -> bool:
    """Does this Slurm release ("24.11", "26.05.5") know PriorityFlags=MAX_TRES_GRES?"""
    try:
        major, minor = (int(x) for x in release.split(".")[:2])
    except ValueError:
        raise ConfigError(f"Slurm release {release!r}: expected MAJOR.MINOR, e.g. 26.05") from None
    return (major, minor) >= MAX_TRES_GRES_SINCE


def billing(tres: Mapping[str, float], weights: Mapping[str, float], flags: str = "",
            release: str | None = None) -> float:
    """The billable TRES of a job with these TRES counts (`tres`: {cpu: 8, mem: MB, gres/gpu: 2, ...})
    in a partition with these weights (parse_weights), under PriorityFlags `flags` (a comma list).
    `release` (the Slurm release, "24.11"): where it predates MAX_TRES_GRES, that flag is read as
    MAX_TRES, as its slurmctld does. Unrounded, as slurmctld charges RawUsage; AllocTRES shows int() of it."""
    if not weights:
        return float(tres.get("cpu", 0.0))
    fl = {f.strip().upper() for f in flags.split(",") if f.strip()}
    if release is not None and "MAX_TRES_GRES" in fl and not has_max_tres_gres(release):
        fl = (fl - {"MAX_TRES_GRES"}) | {"MAX_TRES"}
    max_gres = "MAX_TRES_GRES" in fl
    max_tres = "MAX_TRES" in fl or max_gres
    node = summed = 0.0
    for name, count in tres.items():
        name = name.lower()
        if name == "billing":
            continue
        v = count * weights.get(name, 0.0)
        kind = _kind(name)
        if max_tres and (kind == "node" or (kind == "gres" and not max_gres)):
            node = max(node, v)
        else:
            summed += v
    return node + summed


def billing_per_gpu(weights: Mapping[str, float], flags: str = "", cpus_per_gpu: float = 0.0) -> float:
    """What one GPU (with `cpus_per_gpu` CPUs beside it) bills under these weights and flags: the
    rate in billing units a `Ngpus` plan runs at, per GPU."""
    return billing({"gres/gpu": 1.0, "cpu": cpus_per_gpu}, weights, flags)
