"""Moldable jobs (issue #16, part 2): the scheduler picks each job's size.

After Srinivasan, Krishnamoorthy and Sadayappan, "A Robust Scheduling Strategy for Moldable
Jobs" (Cluster 2003; the slides are the spec, see docs/moldable.md). This module holds the
pieces that do not schedule: Downey's speedup model, the run-time transform, the allowed size
range (Range Factor), the load factor, the fair-share size limits (work-proportional and
square-root), the job categories, and the strategies' definitions. The scheduler itself is
:mod:`fscontrol.sim.moldable_sched`.

Units: the simulator's unit is the node (SDSC Blue Horizon: 8 processors per node, jobs get
whole nodes); sizes and the machine are in nodes. Categories are in processor-seconds, as in the
paper (processors = nodes x ``procs_per_node``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..errors import ConfigError

# --------------------------------------------------------------------------- Downey's model


def downey_speedup(n: float, A: float, sigma: float) -> float:
    """Downey's speedup S(n) on ``n`` processors of a job of average parallelism ``A`` and
    variance of parallelism ``sigma`` (A. B. Downey, "A model for speedup of parallel programs",
    UC Berkeley CSD-97-933, 1997).

    Low variance (sigma <= 1)::

        S(n) = A n / (A + sigma (n - 1) / 2)              1 <= n <= A
        S(n) = A n / (sigma (A - 1/2) + n (1 - sigma/2))  A <= n <= 2A - 1
        S(n) = A                                          n >= 2A - 1

    High variance (sigma >= 1)::

        S(n) = n A (sigma + 1) / (sigma (n + A - 1) + A)  1 <= n <= A + A sigma - sigma
        S(n) = A                                          n >= A + A sigma - sigma

    sigma = 0 gives S(n) = min(n, A); the two forms agree at sigma = 1. S(1) = 1 always.
    """
    if n < 1:
        raise ConfigError(f"Downey speedup: n must be >= 1, not {n!r}")
    if A < 1:
        raise ConfigError(f"Downey speedup: A (average parallelism) must be >= 1, not {A!r}")
    if sigma < 0:
        raise ConfigError(f"Downey speedup: sigma must be >= 0, not {sigma!r}")
    if sigma <= 1:
        if n <= A:
            return A * n / (A + sigma * (n - 1) / 2)
        if n <= 2 * A - 1:
            return A * n / (sigma * (A - 0.5) + n * (1 - sigma / 2))
        return float(A)
    if n <= A + A * sigma - sigma:
        return n * A * (sigma + 1) / (sigma * (n + A - 1) + A)
    return float(A)


def scaled_time(t0: float, n0: int, n: int, A: float, sigma: float) -> float:
    """A time measured on ``n0`` processors, moved to ``n``: t0 * S(n0) / S(n)."""
    if n == n0:
        return t0
    return t0 * downey_speedup(n0, A, sigma) / downey_speedup(n, A, sigma)


def size_range(n0: int, machine: int, rf: float) -> tuple[int, int]:
    """The sizes a job of trace size ``n0`` may take under Range Factor ``rf`` (>= 1).

    The paper: RF = 1 allows 1..P (P the machine), RF = 2 allows [(n0+1)/2 .. (n0+P)/2]: the
    range reaches 1/RF of the way from n0 to each end, lo = n0 - (n0 - 1)/RF and
    hi = n0 + (P - n0)/RF, rounded inwards (lo up, hi down) so it always contains n0.
    """
    if rf < 1:
        raise ConfigError(f"range factor must be >= 1, not {rf!r}")
    if not 1 <= n0 <= machine:
        raise ConfigError(f"job size {n0} outside 1..{machine}")
    lo = math.ceil(n0 - (n0 - 1) / rf - 1e-9)
    hi = math.floor(n0 + (machine - n0) / rf + 1e-9)
    return max(1, min(lo, n0)), min(machine, max(hi, n0))


def candidate_sizes(lo: int, hi: int, n0: int) -> tuple[int, ...]:
    """The partition sizes tried for a job allowed lo..hi: the powers of two inside the range,
    both ends, and the trace size (the paper: "several possible partition sizes"; trying every
    size would cost 144 profile searches per decision on SDSC Blue). Ascending."""
    s = {lo, hi}
    if lo <= n0 <= hi:
        s.add(n0)
    p = 1
    while p <= hi:
        if p >= lo:
            s.add(p)
        p *= 2
    return tuple(sorted(s))


# --------------------------------------------------------------------------- fair-share limits

FS_CAP = 0.9  # Maxprocs(i) = min(0.9 N, FS(i))


def wpfs_limit(w: float, sum_w: float, machine: int) -> int:
    """Work-proportional fair share: min(0.9 N, N w_i / sum_j w_j), at least 1 node.

    ``sum_w`` is over the jobs in the system (queued and running) including job i: high limits
    at light load, low ones at heavy load."""
    fs = machine * w / sum_w if sum_w > 0 else machine
    return max(1, math.floor(min(FS_CAP * machine, fs) + 1e-9))


def sqrt_limit(w: float, sum_sqrt_w: float, machine: int) -> int:
    """Square-root fair share: min(0.9 N, N sqrt(w_i) / sum_j sqrt(w_j)), at least 1 node.

    The 0.9 N cap is carried over from the WPFS slide (the sqrt slide gives only the share)."""
    fs = machine * math.sqrt(w) / sum_sqrt_w if sum_sqrt_w > 0 else machine
    return max(1, math.floor(min(FS_CAP * machine, fs) + 1e-9))


# --------------------------------------------------------------------------- categories

# Decade bins of processor-seconds. The slides plot per "Category (Processor Seconds)" without
# giving the edges; decades are our choice (docs/moldable.md), the last one open: on the SDSC
# Blue Horizon log a 1e8 bin would hold 4 jobs of 232,562.
CATEGORY_EDGES: tuple[float, ...] = (1e3, 1e4, 1e5, 1e6, 1e7)


def category_of(proc_seconds: float, edges: tuple[float, ...] = CATEGORY_EDGES) -> int:
    """0 for < edges[0], k for edges[k-1] <= x < edges[k], len(edges) for the heaviest."""
    k = 0
    for e in edges:
        if proc_seconds < e:
            return k
        k += 1
    return k


def category_labels(edges: tuple[float, ...] = CATEGORY_EDGES) -> list[str]:
    def f(x: float) -> str:
        e = round(math.log10(x))
        return f"1e{e}" if abs(10**e - x) < 1e-9 * x else f"{x:g}"

    out = [f"<{f(edges[0])}"]
    out += [f"{f(a)}-{f(b)}" for a, b in zip(edges, edges[1:])]
    out.append(f">={f(edges[-1])}")
    return out


# --------------------------------------------------------------------------- parameters & strategies


@dataclass(frozen=True, slots=True)
class MoldParams:
    """How the rigid trace becomes a moldable workload (the paper's sigma, RF and LF).

    sigma: Downey's variance of parallelism (0: S(n) = n up to A).
    rf: range factor (1: any size 1..N; 2: half the range around the trace size).
    lf: load factor: every run time and request multiplied by it (1.25 = "LF 125%").
    avg_par: A, Downey's average parallelism: "machine" (A = the machine's node count, the
      default: the slides' "sigma = 0 => S(n) = n"), "trace" (A = the job's trace size), or a
      number (the same A for every job).
    xfactor: the Xfactor-reservation threshold, (ESRT + wait) / ESRT.
    estimates: what the scheduler plans with: "user" (the log's requests, moved to each size by
      the model) or "exact" (the actual run times: a perfect-estimate world).
    backfill: schedule-time strategies, a job without a reservation: "best" (the default) - it
      starts only if its earliest-completion size starts now (else it waits for a wider
      partition that no reservation guarantees); "now" - it starts if any allowed size fits now
      without touching a reservation, on the largest such size.
    share_over: the jobs a fair-share limit's sum runs over: "system" (waiting and running, the
      default) or "queue" (the waiting jobs, the job itself included).
    """

    sigma: float = 0.0
    rf: float = 1.0
    lf: float = 1.0
    avg_par: str | float = "machine"
    xfactor: float = 2.0
    estimates: str = "user"
    backfill: str = "best"
    share_over: str = "system"

    def __post_init__(self) -> None:
        if self.share_over not in ("system", "queue"):
            raise ConfigError(f"share_over must be 'system' or 'queue', not {self.share_over!r}")
        if self.backfill not in ("now", "best"):
            raise ConfigError(f"backfill must be 'now' or 'best', not {self.backfill!r}")
        if self.estimates not in ("user", "exact"):
            raise ConfigError(f"estimates must be 'user' or 'exact', not {self.estimates!r}")
        if not (isinstance(self.sigma, (int, float)) and self.sigma >= 0 and math.isfinite(self.sigma)):
            raise ConfigError(f"sigma must be a number >= 0, not {self.sigma!r}")
        if not (isinstance(self.rf, (int, float)) and self.rf >= 1 and math.isfinite(self.rf)):
            raise ConfigError(f"range factor must be a number >= 1, not {self.rf!r}")
        if not (isinstance(self.lf, (int, float)) and self.lf > 0 and math.isfinite(self.lf)):
            raise ConfigError(f"load factor must be a number > 0, not {self.lf!r}")
        if not (isinstance(self.xfactor, (int, float)) and self.xfactor > 1 and math.isfinite(self.xfactor)):
            raise ConfigError(f"Xfactor threshold must be a number > 1, not {self.xfactor!r}")
        if isinstance(self.avg_par, str):
            if self.avg_par not in ("machine", "trace"):
                try:
                    v = float(self.avg_par)
                except ValueError:
                    raise ConfigError(f"avg_par must be 'machine', 'trace' or a number >= 1, not {self.avg_par!r}") from None
                object.__setattr__(self, "avg_par", v)
        if not isinstance(self.avg_par, str) and not (self.avg_par >= 1 and math.isfinite(self.avg_par)):
            raise ConfigError(f"avg_par must be >= 1, not {self.avg_par!r}")

    def A_for(self, n0: int, machine: int) -> float:
        if self.avg_par == "machine":
            return float(machine)
        if self.avg_par == "trace":
            return float(n0)
        return float(self.avg_par)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


When = Literal["submit", "schedule"]
Limit = Literal["none", "wpfs", "sqrt", "sqrt-par"]


@dataclass(frozen=True, slots=True)
class Strategy:
    """One moldable (or rigid) scheduling strategy.

    when: "submit" - the size is chosen at submission (earliest completion among the candidate
      sizes against the current schedule), frozen, and the job keeps a reservation: conservative
      backfill (Cirne's greedy; the paper's submit-time conservative WPFS). "schedule" - the
      size is chosen when the job is considered in a scheduling pass (at every event), and only
      some jobs hold reservations: aggressive backfill.
    moldable: False keeps the trace size (the rigid baselines).
    limit: the largest size allowed: none, wpfs (work-proportional), sqrt (square root over all
      jobs in the system), sqrt-par (over the parallel jobs only).
    head: the first waiting job holds a reservation (EASY's; schedule-time only).
    category: the first waiting job of each weight category holds one.
    xfactor: every job whose (ESRT + wait) / ESRT exceeds the threshold holds one.
    """

    name: str
    when: When = "schedule"
    moldable: bool = True
    limit: Limit = "none"
    head: bool = True
    category: bool = False
    xfactor: bool = False
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy("rigid-cons", "submit", moldable=False, description="rigid (trace sizes), conservative backfill"),
        Strategy("rigid-easy", "schedule", moldable=False, description="rigid (trace sizes), EASY (aggressive) backfill"),
        Strategy("greedy", "submit", description="submit-time greedy: earliest completion, conservative backfill (Cirne)"),
        Strategy("wpfs-cons", "submit", limit="wpfs", description="submit-time conservative work-proportional fair share"),
        Strategy("wpfs", "schedule", limit="wpfs", description="schedule-time aggressive work-proportional fair share (the base)"),
        Strategy("wpfs-cat-xf", "schedule", limit="wpfs", category=True, xfactor=True,
                 description="WPFS + category and Xfactor reservations"),
        Strategy("sqrtfs", "schedule", limit="sqrt", description="schedule-time aggressive square-root fair share (all jobs)"),
        Strategy("sqrtfs-par", "schedule", limit="sqrt-par", description="square-root fair share over parallel jobs only"),
        Strategy("sqrtfs-cat", "schedule", limit="sqrt", category=True, description="sqrt-FS + category reservations"),
        Strategy("sqrtfs-xf", "schedule", limit="sqrt", xfactor=True, description="sqrt-FS + Xfactor reservations"),
        Strategy("sqrtfs-cat-xf", "schedule", limit="sqrt", category=True, xfactor=True,
                 description="sqrt-FS + category and Xfactor reservations (the paper's robust strategy)"),
    )
}

PREFIX = "mold-"


def get_strategy(name: str) -> Strategy:
    """A strategy by name, with or without the ``mold-`` prefix the CLI uses."""
    base = name[len(PREFIX):] if name.startswith(PREFIX) else name
    if base not in STRATEGIES:
        raise ConfigError(f"unknown moldable strategy {name!r}: choose one of {', '.join(PREFIX + s for s in STRATEGIES)}")
    return STRATEGIES[base]


def is_moldable_policy(name: str) -> bool:
    return name.startswith(PREFIX)
