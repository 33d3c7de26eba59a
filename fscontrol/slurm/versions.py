"""What differs between the Slurm releases fscontrol runs on, in one place.

fscontrol is tested against three real Slurms, the project's testbed (scripts/testbed.sh) on
Debian 12's Slurm 22.05.8, Debian 13's 24.11.5 (TB_SLURM=24.11) and Debian unstable's 26.05.5
(TB_SLURM=26.05). RELEASES says, per release, how the output fscontrol could read behaves there;
tests/test_slurm_versions.py checks every entry against the output recorded from that release
(tests/data/captures/tb, tb-24.11 and tb-26.05). CHANGES lists, from the release notes and change
logs of the releases in between (25.05 and 25.11 too, which no test runs), what touches fscontrol.

Only one of these differences needs a branch in the readers: 26.05's `scontrol show config` comes as
JSON where the Slurm has it (slurm/configjson.py; the text stays the fallback). Otherwise fscontrol
asks every command for its columns by name (`sprio -o`, `sacct -o`, `squeue -O`, `sshare -o` /
`-l -P`) and charges a job from its AllocTRES, so the same argument lists and parsers serve every
release. The entries are kept so that a parser change is checked against them and the next release
is compared field by field. Also differing, and read nowhere in fscontrol: `scontrol show config`
lost keys (Epilog, Prolog, LaunchType, PowerPlugin, RoutePlugin, ...) and gained others (TLSType,
CertmgrType, HashPlugin, ...); parse.parse_config reads none of them.

Checked the same on all three (testbed, 2026-11-23 and 2026-11-26), so no entry is needed:
- without `limits` in AccountingStorageEnforce a job that starts and ends between two decay
  passes is never charged (report.py warns); with it, it is (22.05, 24.11);
- `sbatch --uid/--gid` as root submits as the dummy user (actions.submit_dummy);
- sshare -l -P, squeue -O (an empty AdminComment prints "(null)"), sprio -o and sacctmgr's QOS
  table print the same columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    """How one Slurm release prints what fscontrol could read (recorded from the testbed)."""

    name: str  # "24.11"
    tested: str  # the exact version the project's tests ran, "24.11.5"
    # `sprio -l`'s columns (fscontrol passes its own -o, parse.SPRIO_ARGS); 24.11 added ACCOUNT and
    # QOSNAME. sprio's default columns are those of the non-zero weights on both.
    sprio_long_columns: tuple[str, ...]
    # sacct's field for the time a job waited for its resources: `Reserved` became `Planned` in
    # 23.02, and each release refuses the other name (not among parse.SACCT_FIELDS)
    sacct_planned_field: str
    # sacct's AllocCPUS of a job that has not started: 22.05 prints the CPUs it asks for, 24.11
    # prints 0. Neither has AllocTRES, so parse_sacct charges it 0 on both.
    pending_alloc_cpus: str  # "requested" or "zero"
    # a job asking for more CPUs than any node has: 22.05 accepts it and it pends (Reason
    # PartitionConfig); 24.11 refuses the submission (sbatch fails) yet leaves a FAILED job with no
    # allocation and Submit=Start=End in accounting, which parse_sacct charges 0 for 0 s.
    refused_submission_in_sacct: bool
    # `scontrol reconfigure`: 24.11 starts a new slurmctld (new pid, new BOOT_TIME; the old one
    # hands over and exits), which runs a decay pass at once, and the passes keep that new phase
    # (one PriorityCalcPeriod apart from the restart); 22.05 rereads slurm.conf in the same process
    # and the passes keep their phase (scripts/record-reconfigure.py). fscontrol reconfigures when
    # it persists d (persist = true) and on `control off`: on 24.11 that brings a pass forward, to
    # the moment of the reconfigure, so the loop's trim before "the next pass" misses that one pass
    # (agent.py reads the pass times afresh every cycle, so only that one).
    reconfigure_restarts_slurmctld: bool
    # `scontrol --json show config`: 26.05 prints JSON (slurm/configjson.py reads it, and
    # source.LiveSlurm.config asks for it first); 24.11 prints the text for it, 22.05 refuses --json
    show_config_json: str  # "json", "text" or "refused"
    # sshare's FairShare column after `scontrol fsdampeningfactor D`: 22.05 and 24.11 compute it in the
    # client with slurm.conf's d; 26.05 prints it with the controller's d (what sprio schedules with).
    # fscontrol computes F itself with the controller's d on every release.
    sshare_fairshare_runtime_d: bool


RELEASES: dict[str, Release] = {
    "22.05": Release(
        name="22.05",
        tested="22.05.8",
        sprio_long_columns=("JOBID", "PARTITION", "USER", "PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE",
                            "JOBSIZE", "PARTITION", "QOS", "NICE", "TRES"),
        sacct_planned_field="Reserved",
        pending_alloc_cpus="requested",
        refused_submission_in_sacct=False,
        reconfigure_restarts_slurmctld=False,
        show_config_json="refused",
        sshare_fairshare_runtime_d=False,
    ),
    "24.11": Release(
        name="24.11",
        tested="24.11.5",
        sprio_long_columns=("JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE",
                            "JOBSIZE", "PARTITION", "QOSNAME", "QOS", "NICE", "TRES"),
        sacct_planned_field="Planned",
        pending_alloc_cpus="zero",
        refused_submission_in_sacct=True,
        reconfigure_restarts_slurmctld=True,
        show_config_json="text",
        sshare_fairshare_runtime_d=False,
    ),
    "26.05": Release(
        name="26.05",
        tested="26.05.5",
        sprio_long_columns=("JOBID", "PARTITION", "USER", "ACCOUNT", "PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE",
                            "JOBSIZE", "PARTITION", "QOSNAME", "QOS", "NICE", "TRES"),
        sacct_planned_field="Planned",
        pending_alloc_cpus="zero",
        refused_submission_in_sacct=False,
        reconfigure_restarts_slurmctld=True,
        show_config_json="json",
        sshare_fairshare_runtime_d=True,
    ),
}

TESTED = tuple(RELEASES)

# What changed in each release since 24.11 that touches fscontrol, from SchedMD's RELEASE_NOTES.md
# and CHANGELOG/slurm-RELEASE.md of that release (the slurm repository's tags slurm-25-05-0-1,
# slurm-25-11-0-1, slurm-26-05-3-1), with what fscontrol does about it. "recorded": seen on the testbed
# (tests/data/captures/tb-26.05); 25.05 and 25.11 run on no testbed here.
CHANGES: dict[str, tuple[str, ...]] = {
    "25.05": (
        "PriorityFlags=MAX_TRES_GRES: billable TRES = MAX(node TRES) + node GRES + SUM(global TRES); the "
        "billing feeds RawUsage. fscontrol charges a job the billing of its AllocTRES, whatever the formula, "
        "and reads the flag (configjson/parse keep it in priority_flags).",
        "FrontEnd mode removed, and with it the pending reason FrontEndDown (forecast/reasons.py keeps its words "
        "for older clusters).",
        "Backwards compatibility of RESPONSE_BUILD_INFO (`scontrol show config`) fixed; sacctmgr dumps and loads QOS.",
        "REST API v0.0.43 added, v0.0.40 deprecated (removed in 25.11): fscontrol reads the clients, not the REST API.",
    ),
    "25.11": (
        "slurmctld serves OpenMetrics (Prometheus) on SlurmctldPort: jobs, nodes, partitions, scheduler; no "
        "fair-share series, so fscontrol's own metrics (export/metrics.py) stay the source for F and d.",
        "REST: fs_factor was 0 under PriorityFlags=NO_FAIR_TREE; fixed (fscontrol computes F from sshare).",
        "slurmctld no longer removes a requeued job's accounting usage twice (COMPLETED/COMPLETING jobs), and a "
        "failed reconfigure no longer underflows association/QOS usage: RawUsage on 25.11+ is the one to trust; "
        "on older releases a requeue can lower RawUsage (the fit and the forecast read what sshare prints).",
        "New pending reason NvidiaImexChannels (switch/nvidia_imex); `--requeue=expedite` jobs are 'the highest "
        "priority job in the system' whatever their F (why and the forecast order by priority as printed).",
        "REST API v0.0.44 added, v0.0.41 deprecated.",
    ),
    "26.05": (
        "`scontrol show config --json` / `--yaml` and GET /slurm/v0.0.45/conf: read where it exists "
        "(source.LiveSlurm.config, slurm/configjson.py). Its PriorityFlags lists the FAIR_TREE bit where the text "
        "prints NO_FAIR_TREE for classic (recorded): configjson turns it back into the text's words.",
        "SLUIDs: every client accepts them, sacct --json gains .jobs[].sluid, cgroup paths use them; the text "
        "columns fscontrol reads (JobID) are unchanged (recorded).",
        "Topology plugins put their rejection (\"No suitable topology unit found\", ...) in squeue's reason of a job "
        "waiting for Resources (forecast/reasons.py: TOPOLOGY_REASONS).",
        "sshare's FairShare column is slurmctld's, with a d set by `scontrol fsdampeningfactor`, from the next "
        "decay pass (recorded; 24.11 computed it in the client with slurm.conf's d): sshare_fairshare_runtime_d.",
        "sbatch takes a job larger than any node and it pends (PartitionConfig), as 22.05 did; 24.11 refused it "
        "(recorded): refused_submission_in_sacct.",
        "`sacctmgr show config` drops BOOT_TIME; Exclusive= replaces ExclusiveUser/ExclusiveTopo on partitions.",
        "REST API v0.0.45 added, v0.0.42 deprecated.",
    ),
}

_VERSION = re.compile(r"(?<![\d.])(\d{2})\.(\d{2})(?:\.\d+)?")


def release_of(version: str) -> str | None:
    """"24.11.5", "slurm-wlm 24.11.5" (sinfo --version), "slurm 22.05.8" -> "24.11" / "22.05";
    None for text without a Slurm version (e.g. "unknown")."""
    m = _VERSION.search(version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def release(version: str) -> Release | None:
    """The table's entry for the release of `version`, None for a release fscontrol was not tested on."""
    r = release_of(version)
    return RELEASES.get(r) if r else None


def untested_warning(version: str) -> str | None:
    """A line for `status`/report when the cluster runs a release outside the tested ones."""
    r = release_of(version)
    if r is None or r in RELEASES:
        return None
    return (f"Slurm {version}: fscontrol is tested on Slurm {', '.join(TESTED[:-1])} and {TESTED[-1]} only; "
            "its readings of this release's output are unchecked.")
