"""PrivateData: what slurm.conf's PrivateData hides from a user who is not an operator, read in one place.

Each flag hides one of Slurm's views from such a user (slurm.conf(5): `accounts`, `jobs`,
`partitions`, `reservations`, `usage`, `users`, ...), `all` every one. Everything in fscontrol that
reads PrivateData goes through this module: the parser (`parse_config`'s SlurmConfig.private_data),
the doctor (PrivateData=usage), `status`'s warning, the privacy policy of what the agent publishes
(export/privacy.py: what may reach a file a user reads) and the user's commands (`why` and
`start`: squeue shows a user their own jobs alone). A value is either the parsed config's flags
(SlurmConfig.private_data, lower case) or the raw text of `scontrol show config`
(`PrivateData = jobs,usage`, as a user reads it themselves); Slurm's empty values (`none`,
`(null)`, `N/A`) hide nothing. Pure: no Slurm, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable

EMPTY = frozenset({"", "none", "(null)", "n/a"})  # what `scontrol show config` prints for no flag

HIDES_USAGE = frozenset({"usage", "all"})  # sshare shows a user their own associations' usage alone
HIDES_NAMES = frozenset({"usage", "users", "accounts", "all"})  # sshare -a names no one else
HIDES_JOBS = frozenset({"jobs", "all"})  # squeue shows a user their own jobs alone
HIDES_ACCOUNT_JOBS = frozenset({"jobs", "accounts", "all"})  # nor the jobs of the accounts above them
HIDES_RESERVATIONS = frozenset({"reservations", "all"})  # scontrol shows only the reservations one is in
HIDES_PARTITIONS = frozenset({"partitions", "all"})  # scontrol show partition hides them
HIDES_ASSOCIATIONS = frozenset({"associations", "all"})  # sacctmgr show assoc / show user: one's own alone


def flag_list(private_data: Iterable[str] | str | None) -> tuple[str, ...]:
    """The PrivateData flags, lower case, in the order written: from the parsed config
    (SlurmConfig.private_data) or the raw `jobs,usage` value; () for Slurm's empty values."""
    if private_data is None:
        return ()
    if isinstance(private_data, str):
        if private_data.strip().lower() in EMPTY:
            return ()
        private_data = private_data.split(",")
    return tuple(f.strip().lower() for f in private_data if f.strip() and f.strip().lower() not in EMPTY)


def flags(private_data: Iterable[str] | str | None) -> frozenset[str]:
    """The PrivateData flags as a set, lower case (flag_list)."""
    return frozenset(flag_list(private_data))


def usage_hidden(private_data: Iterable[str] | str | None) -> bool:
    """PrivateData hides usage (`usage` or `all`): sshare shows a user their own rows alone, so
    their forecast needs the agent's published snapshot."""
    return bool(flags(private_data) & HIDES_USAGE)


def usage_public(private_data: Iterable[str] | str | None) -> bool:
    """Slurm shows a user the usage of associations other than their own (PrivateData hides no
    usage): e.g. their account's usage against a Grp limit (export.publish._own_limits)."""
    return not usage_hidden(private_data)


def jobs_hidden(private_data: Iterable[str] | str | None) -> bool:
    """PrivateData hides jobs (`jobs` or `all`): squeue shows a user their own jobs alone."""
    return bool(flags(private_data) & HIDES_JOBS)


def reservations_hidden(private_data: Iterable[str] | str | None) -> bool:
    """PrivateData hides reservations: scontrol shows a user only the reservations they are in."""
    return bool(flags(private_data) & HIDES_RESERVATIONS)


def partitions_public(private_data: Iterable[str] | str | None) -> bool:
    """Slurm shows every partition, its TRESBillingWeights included, to anyone (`scontrol show
    partition`)."""
    return not flags(private_data) & HIDES_PARTITIONS


def names_public(private_data: Iterable[str] | str | None) -> bool:
    """Slurm shows every association's name and usage to anyone (`sshare -a`)."""
    return not flags(private_data) & HIDES_NAMES


def associations_public(private_data: Iterable[str] | str | None) -> bool:
    """Slurm shows every association's settings (its DefaultQOS, `sacctmgr show assoc`) and every
    user's default account (`sacctmgr show user`) to anyone: names are public and PrivateData hides
    no associations."""
    return names_public(private_data) and not flags(private_data) & HIDES_ASSOCIATIONS


def jobs_public(private_data: Iterable[str] | str | None) -> bool:
    """Anyone sees who runs what: names are public and PrivateData hides no jobs."""
    return names_public(private_data) and not jobs_hidden(private_data)


def account_jobs_to_members(private_data: Iterable[str] | str | None) -> bool:
    """A user sees the jobs of the accounts above them (other people's jobs): PrivateData hides
    neither jobs nor accounts."""
    return not flags(private_data) & HIDES_ACCOUNT_JOBS
