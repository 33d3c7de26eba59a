"""What differs between the Slurm releases fscontrol runs on, in one place.

fscontrol is tested against two real Slurms, the project's testbed (scripts/testbed.sh) on
Debian 12's Slurm 22.05.8 and on Debian 13's 24.11.5 (TB_SLURM=24.11). RELEASES says, per
release, how the output fscontrol could read behaves there; tests/test_parse.py checks every
entry against the output recorded from that release (tests/data/captures/tb and tb-24.11).

None of these differences needs a branch in the parsers: fscontrol asks every command for its
columns by name (`sprio -o`, `sacct -o`, `squeue -O`, `sshare -o` / `-l -P`) and charges a job
from its AllocTRES, so the same argument lists and parsers serve both releases. The entries are
kept so that a parser change is checked against them and the next release is compared field by
field. Also differing, and read nowhere in fscontrol: `scontrol show config` lost keys (Epilog,
Prolog, LaunchType, PowerPlugin, RoutePlugin, ...) and gained others (TLSType, CertmgrType,
HashPlugin, ...); parse.parse_config reads none of them.

Checked the same on both (testbed, 2026-11-23), so no entry is needed:
- without `limits` in AccountingStorageEnforce a job that starts and ends between two decay
  passes is never charged (report.py warns); with it, it is;
- `sshare`'s FairShare column uses the d of the client's own slurm.conf, not the controller's
  after `scontrol fsdampeningfactor` (fscontrol computes F itself);
- `sbatch --uid/--gid` as root submits as the dummy user (actions.submit_dummy);
- sshare -l -P, squeue -O, sprio -o and sacctmgr's QOS table print the same columns.
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
    ),
}

TESTED = tuple(RELEASES)

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
    return (f"Slurm {version}: fscontrol is tested on Slurm {' and '.join(TESTED)} only; "
            "its readings of this release's output are unchecked.")
