"""Slurm's own step model of usage, pass by pass: what slurmctld's decay passes do to an
association's usage (see fscontrol.model.decay for the rule). The reference the tests compare
the continuous model (decay's ODE), the fit and the simulator with; no command's path uses it, so
its record (Charge) is not built when `forecast` or `why` start (decay is on their path).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fscontrol.model.decay import decay_factor_per_second


@dataclass(frozen=True, slots=True)
class Charge:
    """A job charging `rate` (billing x UsageFactor per second) while it runs in [start, end)."""

    start: float
    end: float
    rate: float


def slurm_pass(usage: float, dt: float, charges: Iterable[tuple[float, float]], half_life_s: float) -> float:
    """One decay pass: usage * f^dt, then + d * rate * f^d for every (d, rate) running job,
    d being the seconds that job ran since the previous pass (Slurm pre-decays them)."""
    f = decay_factor_per_second(half_life_s)
    u = usage * f**dt
    for d, rate in charges:
        u += d * rate * f**d
    return u


def slurm_usage(
    at: Sequence[float],
    passes: Sequence[float],
    charges: Sequence[Charge],
    half_life_s: float,
    u0: float = 0.0,
    limits: bool = True,
) -> list[float]:
    """RawUsage at the times `at` under Slurm's step model.

    `passes` are the decay pass times, ascending; the first one is the reference pass at which
    the usage is `u0` (charges before it are ignored). Between passes the usage is a
    staircase: it changes only at passes and, with `limits`, at job ends (the tail
    d * rate * f^d, d = end - max(last pass, start)). Slurm uses whole seconds.
    """
    if not passes:
        raise ValueError("need at least one decay pass time")
    f = decay_factor_per_second(half_life_s)
    # (time, kind, charge index): kind 0 = a job's end (before a pass at the same instant), 1 = a pass
    events: list[tuple[float, int, int]] = [(p, 1, -1) for p in passes[1:]]
    if limits:
        events += [(c.end, 0, i) for i, c in enumerate(charges) if passes[0] < c.end and c.start < c.end]
    events.sort()
    order = sorted(range(len(at)), key=lambda i: at[i])
    out = [0.0] * len(at)
    u, last, j = u0, passes[0], 0
    for t, kind, i in events:
        while j < len(order) and at[order[j]] < t:
            out[order[j]] = u
            j += 1
        if kind == 1:
            u *= f ** (t - last)
            for c in charges:
                if c.start <= t < c.end and c.end > last:
                    d = t - max(last, c.start)
                    u += d * c.rate * f**d
            last = t
        else:
            d = t - max(last, charges[i].start)
            if d > 0:
                u += d * charges[i].rate * f**d
    while j < len(order):
        out[order[j]] = u
        j += 1
    return out
