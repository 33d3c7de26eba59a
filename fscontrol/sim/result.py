"""A finished simulation: per-job times and the metrics (what run_simulation and run_moldable return)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .policies import Policy
from .workload import Workload


@dataclass
class SimResult:
    """A finished run: per-job times (aligned with ``workload.jobs``) and the metrics."""

    workload: Workload
    policy: Policy
    start: list[float]
    end: list[float]
    overall: dict[str, Any]
    by_account: dict[str, dict[str, Any]]
    by_user: dict[str, dict[str, Any]]
    wall_s: float
    stats: dict[str, Any] = field(default_factory=dict)
    start_order: list[int] = field(default_factory=list)  # job indices in the order they started
    reservation: list[float] = field(default_factory=list)  # conservative: each job's reservation at arrival
    by_size: dict[str, dict[str, Any]] = field(default_factory=dict)  # multifactor runs: per size class
    halving: dict[str, Any] | None = None  # multifactor runs under control: H vs u* (multifactor.halving_summary)
    mf: Any = None  # the multifactor engine's raw run (its per-pass records), for the charts
    scheduler: Any = None  # slurmctld's scheduler as the run applied it (run._node_sched of the policy's), if any

    @property
    def jobs_per_second(self) -> float:
        return len(self.workload.jobs) / self.wall_s if self.wall_s > 0 else math.inf

    def job_rows(self) -> list[dict[str, Any]]:
        """One dict per job; times in seconds from the workload's origin (``*_s``); under
        conservative backfilling also ``reservation_s``, the reservation the job got at arrival."""
        rows = []
        res = self.reservation
        for k, (j, s, e) in enumerate(zip(self.workload.jobs, self.start, self.end)):
            ok = s != math.inf
            rows.append(
                {
                    "id": j.job_id,
                    "user": j.user,
                    "account": j.account,
                    "nodes": j.size,
                    "submit_s": j.submit,
                    "start_s": s if ok else None,
                    "end_s": e if ok else None,
                    "wait_s": s - j.submit if ok else None,
                    "run_s": e - s if ok else j.run,
                    "limit_s": j.estimate,
                }
            )
            if res:
                r = res[k]
                rows[-1]["reservation_s"] = r if r != math.inf else None
        return rows

    def to_dict(self, *, jobs: bool = False) -> dict[str, Any]:
        """JSON-able (no inf/NaN): workload, policy, metrics, run statistics [, per-job rows]."""
        w = self.workload
        d: dict[str, Any] = {
            "workload": {"name": w.name, "nodes": w.nodes, "jobs": len(w.jobs),
                         "meta": {k: v for k, v in w.meta.items() if k != "header"}},
            "policy": self.policy.to_dict(),
            "allocations": {a: al.to_dict() for a, al in sorted(w.allocations.items())},
            "overall": self.overall,
            "by_account": self.by_account,
            "by_user": self.by_user,
            "wall_s": self.wall_s,
            "jobs_per_second": self.jobs_per_second,
            "stats": self.stats,
        }
        if self.scheduler is not None:  # slurmctld's scheduler as the run applied it: the node model, the completion latency
            d["scheduler"] = self.scheduler.to_dict()
        if self.by_size:
            d["by_size"] = self.by_size
        if self.halving is not None:
            d["halving"] = self.halving
        if jobs:
            d["jobs"] = self.job_rows()
        return _clean(d)


def _clean(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x
