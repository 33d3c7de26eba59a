"""The cluster's partitions: `scontrol -o show partition`, one line each (issue #32 item 1 of fscontrol).

Each line is `Key=value` pairs separated by spaces ("PartitionName=normal AllowGroups=ALL ...
PriorityJobFactor=1 PriorityTier=1 ... Nodes=tbnode1 ..."), the same keys on 22.05, 24.11 and
26.05. The replay reads two: PriorityTier (slurmctld's main scheduler and backfill order their
queue by the job's partition's tier first, then by priority: job_scheduler.c sort_job_queue2)
and PriorityJobFactor (the partition factor of the job's priority, PriorityWeightPartition x the
factor / the largest factor of any partition: priority/multifactor).
"""

from __future__ import annotations

from dataclasses import dataclass

from fscontrol.errors import ParseError
from fscontrol.slurm.parse import scontrol_records

PARTITIONS_ARGS = ("scontrol", "-o", "show", "partition")


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    tier: int  # PriorityTier
    job_factor: int  # PriorityJobFactor
    nodes: str  # scontrol's host list ("tbnode[1-4]"), "" for none
    qos: str = ""  # the partition's QOS (QoS=; "" for N/A)
    cpus: int = 0  # its CPUs (TotalCPUs=; 0 where not shown): what a Relative QOS's limits are a share of


def parse_partitions(text: str, command: str = " ".join(PARTITIONS_ARGS)) -> list[Partition]:
    """The partitions in `scontrol -o show partition`'s output, in its order."""
    out = []
    for no, line, kv in scontrol_records(text, command, "PartitionName", "No partitions"):
        name = kv["PartitionName"]
        try:
            tier = int(kv.get("PriorityTier", "1"))
            factor = int(kv.get("PriorityJobFactor", "1"))
        except ValueError:
            raise ParseError(command, "PriorityTier and PriorityJobFactor must be integers", no, line) from None
        nodes = kv.get("Nodes", "")
        qos = kv.get("QoS", "")
        cpus = kv.get("TotalCPUs", "0")
        out.append(Partition(name, tier, factor, "" if nodes == "(null)" else nodes, "" if qos in ("N/A", "(null)") else qos,
                             int(cpus) if cpus.isdigit() else 0))
    return out
