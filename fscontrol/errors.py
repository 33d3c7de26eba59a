"""Named exceptions. The library raises them; only the CLI turns them into messages and exit codes."""

from __future__ import annotations


class FscontrolError(Exception):
    """Base class: a clear one-line message, and the exit code the CLI should use."""

    exit_code = 1


class ConfigError(FscontrolError):
    """The fscontrol configuration (file or options) is invalid."""

    exit_code = 2


class SlurmCommandError(FscontrolError):
    """A Slurm command failed, timed out or could not be run."""

    exit_code = 3


class SlurmTimeoutError(SlurmCommandError):
    """A Slurm command ran past its timeout: it may or may not have acted (the next tick checks)."""


class ParseError(FscontrolError):
    """A Slurm command printed something we cannot read (garbled, truncated, unknown columns)."""

    exit_code = 3

    def __init__(self, command: str, message: str, line_no: int | None = None, line: str | None = None):
        self.command = command
        self.line_no = line_no
        self.line = line
        where = f" at line {line_no}" if line_no is not None else ""
        shown = f": {line[:120]!r}" if line is not None else ""
        super().__init__(f"cannot parse `{command}` output{where}: {message}{shown}")


class StoreError(FscontrolError):
    """The history database is locked, unreadable or of an unknown schema."""

    exit_code = 4


class LockedError(FscontrolError):
    """Another tick holds the agent's lock."""

    exit_code = 5


class NotFoundError(FscontrolError):
    """An unknown user, account, cluster, or no snapshot yet."""

    exit_code = 6


class UnsafeActionError(FscontrolError):
    """An action was refused because it would be unsafe (stale data, invalid value, not ours)."""

    exit_code = 7


class OutputError(FscontrolError):
    """A file fscontrol was asked to write (the published snapshot, the metrics) could not be written."""

    exit_code = 1


class InternalError(FscontrolError):
    """A fault inside fscontrol itself (a bug): the tick is recorded as failed, other clusters go on."""

    exit_code = 1


class ProfileError(FscontrolError):
    """An availability profile was asked for the impossible: more processors than are free, giving back
    more than was taken, a job wider than the machine, a negative size or an interval that ends first."""

    exit_code = 2


class PlanError(ConfigError, ValueError):
    """A user's campaign plan could not be read, or asks for more than one request may (exit 2)."""


class EstimateTooCostly(FscontrolError):
    """A start estimate over a queue longer than the caller affords (the web page): said instead."""

    exit_code = 2
