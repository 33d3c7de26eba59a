"""A plan step in Slurm's words ('4cpus+2gpus:10h'), billed as slurmctld would bill that job.

The agent publishes the cluster's billing rules ("billing" in the published snapshot:
export.publish.billing_published): each partition's TRESBillingWeights, its CPUs and GPUs, the
default partition, PriorityFlags, the Slurm release and each QOS's UsageFactor. A plan step's
rate, in billing units a second, is model.billing.billing of the job's TRES under the chosen
partition's weights (`-p/--partition`, else the Default=YES partition) and flags, times the
chosen QOS's UsageFactor (`-q/--qos`, else the QOS Slurm gives the user's job without --qos:
`default_qos`, export.jobqos.for_plan). `--billing-per-core` overrides it for CPU plans,
as before. Without published rules (an older agent's file) a plan is in CPUs, as before, and a
GPU is refused with how to write its billing.
"""

from __future__ import annotations

import math
from typing import Any

from fscontrol.errors import PlanError


class Biller:
    """Bills plan steps for one forecast request; `lines` says under what (one line a job kind)."""

    def __init__(self, published: dict, partition: str | None = None, qos: str | None = None,
                 billing_per_core: float | None = None, default_qos: tuple[str, str] | None = None):
        self.rules = published.get("billing") or None
        self.override = billing_per_core
        self.partition = partition
        self.asked = partition
        self.qos = qos
        self.runs: dict[str, dict[str, Any]] = {}
        self.part: dict | None = None
        self.usage_factor = 1.0
        self.qos_why: str | None = None  # why this QOS, when -q did not name it
        if self.rules is None or (partition and self.rules.get("partitions") is None):
            if partition or qos:
                raise PlanError(f"--{'partition' if partition else 'qos'}: the published snapshot has no billing rules "
                                "(an older agent's file, or PrivateData=partitions): give --billing-per-core instead")
            return
        parts = self.rules.get("partitions") or {}
        name = partition or self.rules.get("default_partition")
        if partition is not None and partition not in parts:
            have = ", ".join(sorted(parts)) or "none published"
            raise PlanError(f"--partition {_short(partition)}: no such partition on {published.get('cluster')} (has: {have})")
        if name is not None and name in parts:
            self.partition, self.part = name, parts[name]
        if qos is not None:
            factors = self.rules.get("qos_usage_factor") or {}
            if qos not in factors:
                raise PlanError(f"--qos {_short(qos)}: no such QOS on {published.get('cluster')} (has: {', '.join(sorted(factors)) or 'none published'})")
            self.usage_factor = float(factors[qos])
        elif default_qos is not None:  # no -q: the QOS Slurm gives the job (issue #33 D6: it was UsageFactor 1)
            factors = self.rules.get("qos_usage_factor") or {}
            if default_qos[0] in factors:
                self.qos, self.qos_why = default_qos
                self.usage_factor = float(factors[self.qos])

    @property
    def weights_text(self) -> str:
        return (self.part or {}).get("weights") or ""

    def rate_of(self, tres: dict[str, float], what: str) -> float:
        """The rate of one step's job, in billing units a second (classic.parse_plan's rate_of)."""
        gpus = tres.get("gres/gpu", 0.0)
        if self.override is not None:
            if gpus or tres.get("node", 1.0) != 1.0:
                raise PlanError("--billing-per-core prices CPUs only: leave it out to bill GPUs and nodes under the "
                                "partition's TRESBillingWeights")
            rate = tres["cpu"] * self.override
            self.runs.setdefault(what, {"what": what, "billing": rate, "rate": rate, "under": "--billing-per-core"})
            return rate
        if self.part is None:  # no weights to bill under: CPUs, as before
            if gpus or tres.get("node", 1.0) != 1.0:
                if self.rules is not None and self.rules.get("partitions"):
                    raise PlanError("no partition to bill GPUs and nodes under: the cluster has no Default=YES "
                                    "partition; name one with -p/--partition")
                raise PlanError("GPUs and nodes are billed under the partition's TRESBillingWeights, which this forecast "
                                "does not have (an older agent's file, a recording, or PrivateData=partitions): write the "
                                "job's billing as cpus, e.g. 4 CPUs + 2 GPUs under TRESBillingWeights=CPU=1.0,GRES/gpu=8.0 "
                                "bill '20cpus' (docs/billing.md)")
            return tres["cpu"] * self.usage_factor
        have_gpus = self.part.get("gpus")
        if gpus and not have_gpus:
            raise PlanError(f"{what!r} asks for GPUs, but partition {self.partition} has none: name a partition "
                            "with GPUs (-p/--partition)")
        from fscontrol.model import billing  # here: a plan billed per core or without weights needs none of it

        weights = billing.parse_weights(self.weights_text)
        types = self.part.get("gpu_types") or []
        if gpus and len(types) == 1:  # one GPU type on the partition: Slurm counts the job's GPUs under it too
            tres = {**tres, f"gres/gpu:{types[0]}": gpus}
        elif gpus and len(types) > 1 and any(k.startswith("gres/gpu:") for k in weights):
            raise PlanError(f"partition {self.partition} has GPUs of types {', '.join(types)}, weighted by type: a plan "
                            "cannot say which it gets; write the job's billing as cpus (docs/billing.md)")
        one = billing.billing(tres, weights, self.rules.get("priority_flags") or "", release=self.rules.get("release"))
        rate = one * self.usage_factor
        if not math.isfinite(rate) or rate > MAX_RATE:
            raise PlanError(f"{what!r} bills {rate:g} a second under partition {self.partition}'s weights: more than "
                            f"the forecast models ({MAX_RATE:g}; check the partition's TRESBillingWeights)")
        self.runs.setdefault(what, {"what": what, "tres": dict(tres), "billing": one, "rate": rate})
        return rate

    def max_gpus(self) -> float | None:
        """The GPUs a plan step may ask for: the partition's (its nodes'), where published."""
        if self.part is None:
            return None
        g = self.part.get("gpus")
        return float(g) if isinstance(g, (int, float)) else None

    def summary(self) -> dict[str, Any] | None:
        """What the forecast's data says of the billing ("billing"), with its lines; None without a run."""
        if not self.runs:
            return None
        flags = (self.rules or {}).get("priority_flags") or ""
        max_flag = next((f for f in ("MAX_TRES_GRES", "MAX_TRES") if f in {x.strip().upper() for x in flags.split(",")}), None)
        lines = []
        for r in self.runs.values():
            if r.get("under") == "--billing-per-core":
                lines.append(f"billed at --billing-per-core {self.override:g}: {r['what']} -> {_n(r['rate'])} per run")
                continue
            if self.rules is None:
                continue
            w = self.weights_text or "none (billing = CPUs)"
            extra = (f", PriorityFlags={max_flag}" if max_flag and self.weights_text else "")
            why = f": {self.qos_why}" if self.qos_why else ""
            uf = f" x UsageFactor {self.usage_factor:g} (QOS {self.qos}{why})" if self.qos and self.usage_factor != 1.0 else ""
            lines.append(f"billed under partition {self.partition}: {w}{extra}: {r['what']} -> {_n(r['billing'])}{uf} per run"
                         + (f" = {_n(r['rate'])}" if uf else "")
                         + (f" (QOS {self.qos}{why}, UsageFactor 1)" if self.qos_why and not uf else ""))
        return {"partition": self.partition, "asked_partition": self.asked, "weights": self.weights_text if self.rules else None,
                "priority_flags": flags or None, "release": (self.rules or {}).get("release"), "qos": self.qos,
                "qos_from": self.qos_why if self.qos_why else ("--qos" if self.qos else None),
                "usage_factor": self.usage_factor, "billing_per_core": self.override,
                "runs": list(self.runs.values()), "lines": lines}


# The most billing a second one plan step may bill: a million cores at a weight of a million. Past
# it the projection's sums overflow (an outside tester: a weight of 1e308 gave a NaN traceback).
MAX_RATE = 1e12


def _short(name: str) -> str:
    return repr(name) if len(name) <= 40 else f"{name[:40]!r}... ({len(name):,} characters)"


def _n(x: float) -> str:
    return f"{x:,.6g}"
