"""Parsers for the text Slurm 22.05 prints. Pure: text in, records out.

Every parser checks the header it is given against the columns it needs, and raises
ParseError naming the command, the line number and the line on anything it cannot read:
a missing column, a truncated line, a non-numeric number. Nothing is guessed.

Times: fscontrol runs Slurm's clients with SLURM_TIME_FORMAT=%s, so live output carries POSIX
seconds. Older captures carry Slurm's default local ISO time without a zone; those are read in
the zone passed as `tz` (default UTC).
"""

from __future__ import annotations

import gc
import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone, tzinfo

from fscontrol.errors import ParseError
from fscontrol.slurm import privatedata
from fscontrol.records import JobRecord, ShareRow, share_rows

TYPE_CHECKING = False
if TYPE_CHECKING:  # made where they are parsed (fscontrol.snaprecords): the forecast reads only sshare's rows
    from fscontrol.snaprecords import PrioRow, QosRow, QueueJob, SlurmConfig

# ---------------------------------------------------------------------------- commands
# The exact argument lists fscontrol runs (without the leading `-M cluster`), shared by the
# live source, the capture command and the parsers' error messages.
SSHARE_ARGS = ("sshare", "-a", "-l", "-P")
# -O (long names), not -o: the job's AdminComment (where the agent marks the jobs it holds or
# demotes) has no %-letter. ":0" prints each field whole; AdminComment is last, so a "|" inside it
# (free text) is rejoined by the parser.
SQUEUE_FORMAT = ("JobID:0|,UserName:0|,Account:0|,Partition:0|,QOS:0|,State:0|,NumNodes:0|,NumCPUs:0|,"
                 "PriorityLong:0|,Nice:0|,Reason:0|,SubmitTime:0|,StartTime:0|,TimeLimit:0|,admin_comment:0")
SQUEUE_ARGS = ("squeue", "-a", "-O", SQUEUE_FORMAT)
SPRIO_ARGS = ("sprio", "-n", "-o", "%i|%u|%r|%y|%f")
CONFIG_ARGS = ("scontrol", "show", "config")
# Slurm 26.05+: the same as JSON (slurm/configjson.py); 24.11 prints the text for it, 22.05 refuses it
CONFIG_JSON_ARGS = ("scontrol", "--json", "show", "config")
# MinPrioThreshold (header MinPrioThres) and Flags (OverPartQOS): the replay's per-QOS
# bf_min_prio_reserve (sim/history.py)
QOS_ARGS = ("sacctmgr", "-P", "show", "qos", "format=Name,UsageFactor,MinPrioThreshold,Flags")
SACCT_FIELDS = "JobID,User,Account,Partition,QOS,State,AllocCPUS,AllocTRES,NNodes,ElapsedRaw,Submit,Start,End"


def sacct_args(start_iso: str, end_iso: str) -> tuple[str, ...]:
    """sacct over [start, end): allocations only (-X), times clipped to the window (-T)."""
    return ("sacct", "-a", "-X", "-T", "-P", "-S", start_iso, "-E", end_iso, "-o", SACCT_FIELDS)


# `fscontrol capture --history`: what the simulator needs to replay a period (fscontrol.sim.history)
HISTORY_FIELDS = ("JobID,User,Account,Partition,QOS,State,Submit,Eligible,Start,End,ElapsedRaw,TimelimitRaw,"
                  "ReqCPUS,AllocCPUS,ReqNodes,NNodes,AllocTRES,NodeList,ReqTRES")  # AllocTRES: the billing the simulator
# charges and the GPUs a job had (gres/gpu); NodeList: where slurmctld put each job (checked against
# the replay's placement); ReqTRES: the GPUs a pending job asks for
NODES_ARGS = ("sinfo", "-h", "-N", "-o", "%N|%P|%c|%T|%G")  # %G: the node's GRES (its GPUs)
# the pending jobs' dependencies (capture --history: a replay starts no job before those it waits for)
DEPS_ARGS = ("squeue", "-a", "-h", "-t", "PD", "-o", "%i|%E")
CPUS_ARGS = ("sinfo", "-h", "-o", "%C")  # CPUs allocated/idle/other/total, summed over the partitions shown


def parse_cpu_total(text: str) -> int | None:
    """The cluster's CPUs from `sinfo -h -o %C` ("A/I/O/T" per line, one line unless -M adds a
    "CLUSTER:" header): the largest total; None when no line reads as one."""
    best = None
    for line in text.splitlines():
        parts = line.strip().split("/")
        if len(parts) == 4 and all(p.isdigit() for p in parts):
            best = max(best or 0, int(parts[3]))
    return best or None


def history_sacct_args(start_iso: str, end_iso: str) -> tuple[str, ...]:
    """sacct over [start, end) for a replay: allocations only (-X), times NOT clipped (no -T), with
    each job's eligible time, time limit and requested/allocated CPUs and nodes."""
    return ("sacct", "-a", "-X", "-P", "-S", start_iso, "-E", end_iso, "-o", HISTORY_FIELDS)


# ---------------------------------------------------------------------------- helpers
_EMPTY = {"", "N/A", "None", "(null)"}


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield i, line


def _table(text: str, command: str, required: Iterable[str], free_last: bool = False) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Split pipe-separated output into (header, [(line_no, fields)]), checking the header.

    Skips `CLUSTER: name` lines (printed by -M even with -P). `free_last`: the last column is
    free text that may hold "|" (rejoined), so a row may not have fewer fields than the header."""
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    for no, line in _lines(text):
        if line.startswith("CLUSTER: "):
            continue
        fields = line.split("|")
        if header is None:
            header = [f.strip() for f in fields]
            missing = [c for c in required if c not in header]
            if missing:
                raise ParseError(command, f"missing column(s) {', '.join(missing)} in header", no, line)
            continue
        if free_last and len(fields) > len(header):
            fields = fields[: len(header) - 1] + ["|".join(fields[len(header) - 1:])]
        if len(fields) != len(header):
            raise ParseError(command, f"expected {len(header)} fields, got {len(fields)} (truncated?)", no, line)
        rows.append((no, fields))
    if header is None:
        raise ParseError(command, "no header line (empty output)")
    return header, rows


# The two big tables (sshare at 100k associations, sacct at 1M jobs) are parsed line by line
# instead of through _table: no list of all split rows is held, and the per-field helpers are
# called only when the fast conversion fails, so results and errors are exactly _table's + _num's.
def _header(lines: Iterable[str], command: str, required: Iterable[str]) -> tuple[list[str], Iterator[str], int]:
    """(header, the lines after it as an iterator, index of the first of them), checking the header
    as _table does. `lines`: a text's splitlines, or spool.file_lines of an output on disk."""
    it = iter(lines)
    for i, line in enumerate(it):
        if not line or line.isspace() or line.startswith("CLUSTER: "):
            continue
        header = [f.strip() for f in line.split("|")]
        missing = [c for c in required if c not in header]
        if missing:
            raise ParseError(command, f"missing column(s) {', '.join(missing)} in header", i + 1, line)
        return header, it, i + 1
    raise ParseError(command, "no header line (empty output)")


def _count_error(lines: Iterable[str], start: int, n: int, command: str) -> None:
    """Raise the field-count error _table would have raised first for lines[start:], if any.

    _table checks every line's field count before any value is read: a streaming parser that
    meets a bad value calls this first (over the lines read anew), so the same error wins."""
    for i, line in enumerate(itertools.islice(lines, start, None), start):
        if not line or line.isspace() or line.startswith("CLUSTER: "):
            continue
        got = line.count("|") + 1
        if got != n:
            raise ParseError(command, f"expected {n} fields, got {got} (truncated?)", i + 1, line)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a bulk step allocates one object per row.

    The records hold no reference cycles, so a collection during the loop only re-scans the
    records made so far: at a million sacct lines that was a third of the parse time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _billing(value: str) -> int | None:
    """_tres(value, "billing"), with a fast path for the usual `...,billing=N,...`."""
    p = value.find("billing")
    if p >= 0 and value.startswith("billing=", p) and (p == 0 or value[p - 1] == ","):
        e = value.find(",", p)
        return _tres_int(value[p + 8:] if e < 0 else value[p + 8:e])
    return _tres(value, "billing")


def _tres_int(v: str) -> int:
    """A TRES count as Slurm prints it (an integer, at times with a fraction): ValueError otherwise."""
    if v.isdigit() and v.isascii():
        return int(v)
    if not re.fullmatch(_FLOAT_TEXT, v) or v.startswith("-"):
        raise ValueError(f"bad TRES count {v!r}")
    x = float(v)
    if x - x != 0:
        raise ValueError(f"bad TRES count {v!r}")
    return int(x)


JOB_ID = r"[0-9]{1,10}(?:_[0-9]{1,10})?(?:\+[0-9]{1,5})?"  # a job, an array task, a het component (compiled where squeue is read)
# the slow paths' patterns (the fast ones read plain digits without them): compiled by `re` on first use
_INT_TEXT = r"-?[0-9]+"
_FLOAT_TEXT = r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"


def _num(value: str, kind: type, command: str, col: str, no: int, line: str, *, allow_empty: bool = False,
         allow_inf: bool = False, minimum: float | None = None):
    """A number as Slurm prints it: ASCII digits only (Python's int() would also take "5_908" or
    other scripts' digits), finite (no nan; inf only where Slurm prints it), at least `minimum`."""
    v = value.strip()
    if v in _EMPTY:
        if allow_empty:
            return None
        raise ParseError(command, f"empty {col}", no, line)
    if allow_inf and kind is float and v.lower() == "inf":
        return math.inf
    if not re.fullmatch(_INT_TEXT if kind is int else _FLOAT_TEXT, v):
        raise ParseError(command, f"{col} is not a number: {v!r}", no, line)
    x = kind(v)
    if minimum is not None and x < minimum:
        raise ParseError(command, f"{col} out of range: {v} (must be >= {minimum:g})", no, line)
    return x


def _unit(x: float, command: str, col: str, no: int, line: str) -> float:
    if not 0 <= x <= 1:
        raise ParseError(command, f"{col} out of range: {x} (a factor lies in 0..1)", no, line)
    return x


def _flt(v: str, command: str, col: str, no: int, line: str, allow_empty: bool = False, minimum: float | None = 0.0):
    """Fast path of _num for floats: float() when the text is plain ASCII and the value finite."""
    try:
        x = float(v)
        if x - x == 0 and v.isascii() and "_" not in v and (minimum is None or x >= minimum):  # nan and inf fail x - x == 0
            return x
    except ValueError:
        pass
    return _num(v, float, command, col, no, line, allow_empty=allow_empty, minimum=minimum)


def _int(v: str, command: str, col: str, no: int, line: str, allow_empty: bool = False, minimum: int | None = 0):
    """Fast path of _num for non-negative integers."""
    if v.isdigit() and v.isascii():
        return int(v)
    return _num(v, int, command, col, no, line, allow_empty=allow_empty, minimum=minimum)


def _count_field(v: str, command: str, col: str, no: int, line: str) -> int:
    """A count (AllocCPUS, NNodes) that is not plain digits: _int's, then _num's reading."""
    try:
        return _int(v, command, col, no, line)
    except ValueError:
        return _num(v, int, command, col, no, line, minimum=0)


def parse_time(value: str, tz: tzinfo = timezone.utc) -> float | None:
    """POSIX seconds from Slurm's `%s` format or its zone-less ISO format; None for Unknown/N/A."""
    v = value.strip()
    if v in _EMPTY or v in ("Unknown", "NONE"):
        return None
    if v.isdigit() and v.isascii():
        return float(v)
    dt = datetime.strptime(v, "%Y-%m-%dT%H:%M:%S")
    return dt.replace(tzinfo=tz).timestamp()


# a pattern, compiled by `re` (and cached) when a duration is first read: the forecast reads none
_DURATION = r"(?:[0-9]+-)?[0-9]+(?::[0-9]+){0,2}"


def parse_duration(value: str) -> int | None:
    """Seconds from Slurm's [D-]HH:MM:SS, MM:SS or minutes; None for UNLIMITED/INFINITE/NONE."""
    v = value.strip()
    if v.upper() in ("UNLIMITED", "INFINITE", "NONE", "N/A", ""):
        return None
    if not re.fullmatch(_DURATION, v):
        raise ValueError(f"bad duration {value!r}")
    days = 0
    if "-" in v:
        d, v = v.split("-", 1)
        days = int(d)
    parts = [int(p) for p in v.split(":")]
    if len(parts) == 3:
        h, m, s = parts
    elif len(parts) == 2:
        h, (m, s) = 0, parts
    elif len(parts) == 1:
        h, m, s = 0, parts[0], 0
    else:
        raise ValueError(f"bad duration {value!r}")
    return ((days * 24 + h) * 60 + m) * 60 + s


def _tres(value: str, name: str) -> int | None:
    for part in value.split(","):
        k, _, v = part.partition("=")
        if k == name:
            return _tres_int(v)
    return None


# ---------------------------------------------------------------------------- sshare
def split_clusters(text: str) -> dict[str | None, str]:
    """Split multi-cluster (`-M a,b`) output into per-cluster texts; key None without CLUSTER lines."""
    out: dict[str | None, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("CLUSTER: "):
            current = line[len("CLUSTER: "):].strip()
            out.setdefault(current, [])
            continue
        out.setdefault(current, []).append(line)
    return {k: "\n".join(v) for k, v in out.items() if any(x.strip() for x in v)}


def _level_fs(v: str, command: str, no: int, line: str) -> float | None:
    """sshare's LevelFS: slurmctld's value printed "%f"; "inf" for no usage; empty where it has none
    (root, FairShare=parent, classic)."""
    v = v.strip()
    if v == "inf":
        return math.inf
    return _flt(v, command, "LevelFS", no, line, allow_empty=True)


def parse_sshare(text: str | Iterable[str], command: str = " ".join(SSHARE_ARGS),
                 again: Callable[[], Iterable[str]] | None = None) -> tuple[ShareRow, ...]:
    """`sshare -a -l -P` (or `-a -P`): associations in tree order, depth from the indentation.

    `text`: the output, or its lines (spool.file_lines: read from disk a block at a time, never
    held whole: issue #31); then `again()` gives the lines anew, read only when a line is bad (the
    first field-count error in the whole output wins, as _table's). Each row becomes its ShareRow
    as it is read (no list of value tuples beside the records) and the accounts' names are one
    string each."""
    if isinstance(text, str):
        lines = text.splitlines()
        again = lambda: lines  # noqa: E731
    else:
        lines = text
    header, rest, first = _header(lines, command, ("Account", "User", "RawShares", "NormShares", "RawUsage", "EffectvUsage"))
    ix = {name: i for i, name in enumerate(header)}
    n = len(header)
    i_acc, i_user, i_shares, i_norm, i_raw, i_eff = (
        ix[c] for c in ("Account", "User", "RawShares", "NormShares", "RawUsage", "EffectvUsage")
    )
    i_nu, i_fs, i_run = ix.get("NormUsage"), ix.get("FairShare"), ix.get("TRESRunMins")
    i_lfs = ix.get("LevelFS")
    stack: list[str] = []  # account names by depth
    runs: dict[str, int | None] = {}  # _billing of each distinct TRESRunMins text (idle associations print the same)
    names: dict[str, str] = {}  # one string an account name
    i = first

    def values() -> Iterator[tuple]:
        nonlocal i
        for i, line in enumerate(rest, first):
            if not line or line.isspace() or line.startswith("CLUSTER: "):
                continue
            f = line.split("|")
            no = i + 1
            if len(f) != n:
                raise ParseError(command, f"expected {n} fields, got {len(f)} (truncated?)", no, line)
            raw_account = f[i_acc]
            account = raw_account.lstrip(" ")
            depth = len(raw_account) - len(account)
            account = account.rstrip()
            account = names.setdefault(account, account)
            user = f[i_user].strip()
            if not account:
                raise ParseError(command, "empty Account", no, line)
            if depth == 0 and (account != "root" or user):
                raise ParseError(command, "first-level row that is not root", no, line)
            if depth > len(stack):
                raise ParseError(command, f"indentation jumps to depth {depth} under depth {len(stack) - 1}", no, line)
            if user:
                # a user row sits one level below its account, whose row came just before at depth-1
                if depth == 0 or len(stack) < depth or stack[depth - 1] != account:
                    raise ParseError(command, f"user row of account {account!r} outside that account", no, line)
                parent = account
            else:
                del stack[depth:]
                parent = stack[depth - 1] if depth > 0 else ""
                stack.append(account)
            shares_txt = f[i_shares].strip()
            shares_parent = shares_txt == "parent"
            if shares_parent:
                raw_shares = None
            else:
                raw_shares = _int(shares_txt, command, "RawShares", no, line, allow_empty=True)
            run_mins = None
            if i_run is not None:
                v = f[i_run]
                if v in runs:
                    run_mins = runs[v]
                else:
                    try:
                        run_mins = runs[v] = _billing(v)
                    except ValueError as e:
                        raise ParseError(command, f"TRESRunMins: {e}", no, line) from None
            norm_shares = _flt(f[i_norm], command, "NormShares", no, line, allow_empty=True)
            raw_usage = _int(f[i_raw], command, "RawUsage", no, line)
            norm_usage = _flt(f[i_nu], command, "NormUsage", no, line, allow_empty=True) if i_nu is not None else None
            effective_usage = _flt(f[i_eff], command, "EffectvUsage", no, line, allow_empty=True)
            fairshare = _flt(f[i_fs], command, "FairShare", no, line, allow_empty=True) if i_fs is not None else None
            level_fs = _level_fs(f[i_lfs], command, no, line) if i_lfs is not None else None
            if (norm_shares or 0) > 1 + 1e-6 or (fairshare or 0) > 1 + 1e-6:
                raise ParseError(command, "NormShares and FairShare must lie in 0..1", no, line)
            yield (account, user, parent, depth, raw_shares, shares_parent, norm_shares, raw_usage, norm_usage,
                   effective_usage, fairshare, run_mins, level_fs)

    with gc_paused():
        try:
            out = share_rows(values())  # ShareRow(*values) each, through its twin, as they are read
        except Exception:
            if again is not None:
                _count_error(again(), i, n, command)
            raise
    if not out or out[0].depth != 0:
        raise ParseError(command, "no root row: is this `sshare -a` as an admin (PrivateData may hide it)?")
    return out


def check_share_tree(rows: tuple[ShareRow, ...], command: str = " ".join(SSHARE_ARGS), fair_tree: bool = False) -> None:
    """The whole tree as an admin's `sshare -a` prints it, or an error: no association twice, and
    the NormShares of every level add up (rows cut off at a line boundary, a whole account or an
    account's last users, break the sum; sshare prints 6 decimals).

    A level is slurmctld's: the associations with the same fs parent, the first ancestor account
    that is not FairShare=parent (`assoc_mgr.c` `_find_assoc_parent`), so the children of a
    FairShare=parent account are counted with that account's siblings. A FairShare=parent
    association holds its fs parent's NormShares and adds nothing to its level. Classic: a level
    adds up to its fs parent's NormShares (1 under root); Fair Tree: to 1 (or to the classic
    figure, which 22.05 keeps after a switch by reconfigure: model.fairtree.FairTree.shares_form).

    Not for a user's own `sshare` under PrivateData, which shows only part of the tree."""
    seen: set[tuple[str, str]] = set()
    children: dict[str, list[ShareRow]] = {}
    accounts: dict[str, ShareRow] = {}
    for r in rows:
        if r.key in seen:
            raise ParseError(command, f"association {r.account}/{r.user or '-'} listed twice")
        seen.add(r.key)
        if r.user:
            children.setdefault(r.account, []).append(r)
        else:
            accounts[r.account] = r
            if r.parent:
                children.setdefault(r.parent, []).append(r)
    root = next((r for r in rows if r.depth == 0), None)
    if root is None or not children.get(root.account):
        raise ParseError(command, "no association under root: output cut short?")
    for r in accounts.values():
        # usage is charged to users: an account with usage and no user row lost its users in the
        # output (a cut leaves the last account so). Slurm leaves one so only when an admin
        # deleted every user of the account; `sacctmgr modify account NAME set rawusage=0` ends it
        if r.depth > 0 and r.raw_usage > 0 and not children.get(r.account):
            raise ParseError(command, f"account {r.account} has usage ({r.raw_usage}) but no users or sub-accounts: "
                             "output cut short? (if its users were deleted: sacctmgr modify account "
                             f"{r.account} set rawusage=0)")
    levels: dict[str, list[ShareRow]] = {}  # fs parent -> the associations that compete under it
    for name, kids in children.items():
        fs = accounts.get(name)
        hops = 0
        while fs is not None and fs.shares_parent and fs.depth > 0 and hops <= len(accounts):
            fs, hops = accounts.get(fs.parent), hops + 1
        if fs is None:
            continue  # an account row missing above: nothing to check the level against
        levels.setdefault(fs.account, []).extend(kids)
    for name, kids in levels.items():
        parent = accounts[name]
        shared = [k.norm_shares for k in kids if not k.shares_parent and k.norm_shares is not None]
        if parent.norm_shares is None or not shared:
            continue
        wants = [1.0] if parent.depth == 0 else [parent.norm_shares]
        if fair_tree and parent.depth > 0:
            # Fair Tree's own NormShares add up to 1 at each level; slurmctld may still hold the
            # classic ones after PriorityFlags was switched by reconfigure (model.fairtree.FairTree.shares_form)
            wants.insert(0, 1.0)
        total = sum(shared)
        want = min(wants, key=lambda w: abs(total - w))
        if abs(total - want) > 1e-6 * (len(shared) + 1) + 1e-9:
            raise ParseError(command, f"the NormShares under {name} add up to {total:.6f}, not {want:.6f}: "
                             "output cut short or rows missing")


# ---------------------------------------------------------------------------- sacct
def _state(v: str) -> str:
    # "CANCELLED by 0" -> "CANCELLED"
    return v.split(" ", 1)[0].strip()


def parse_sacct(text: str, command: str = "sacct -a -X -T -P", tz: tzinfo = timezone.utc) -> tuple[JobRecord, ...]:
    """`sacct -a -X -T -P -o SACCT_FIELDS`: billing from AllocTRES, run time clipped to the window.

    With -T, sacct gives a PENDING job Start=End=the window's end: such a job ran 0 s here."""
    with gc_paused():
        return tuple(iter_sacct(text.splitlines(), command, tz))


_SACCT_NEED = ("JobID", "User", "Account", "Partition", "State", "AllocCPUS", "AllocTRES", "Start", "End")


def iter_sacct(lines: Iterable[str], command: str = "sacct -a -X -T -P", tz: tzinfo = timezone.utc, *,
               plain: bool = False) -> Iterator[JobRecord]:
    """parse_sacct one line at a time: `lines` as str.splitlines gives them (a file read line by
    line: collect streams a million jobs without holding them). The same records and the same
    errors: a bad value is reported only after the rest is checked for a wrong field count.
    `plain`: each record as a plain tuple in JobRecord's field order (what the spool keeps and
    write_snapshot binds), not a JobRecord."""
    new = tuple.__new__  # JobRecord is a NamedTuple: JobRecord(*t) is tuple.__new__(JobRecord, t)
    need = _SACCT_NEED
    it = iter(lines)
    header = None
    no = 0
    for no, line in enumerate(it, start=1):
        if not line or line.isspace() or line.startswith("CLUSTER: "):
            continue
        header = [f.strip() for f in line.split("|")]
        missing = [c for c in need if c not in header]
        if missing:
            raise ParseError(command, f"missing column(s) {', '.join(missing)} in header", no, line)
        break
    if header is None:
        raise ParseError(command, "no header line (empty output)")
    ix = {name: i for i, name in enumerate(header)}
    n = len(header)
    i_id, i_user, i_acc, i_part, i_state, i_cpus, i_tres, i_start, i_end = (ix[c] for c in need)
    i_sub, i_qos, i_nn = ix.get("Submit"), ix.get("QOS"), ix.get("NNodes")
    # user, account, partition, QOS, state and AllocTRES repeat: convert each distinct text once
    # (and share the resulting str objects: a million jobs hold a few thousand distinct names)
    names: dict[str, str] = {}
    states: dict[str, str] = {}
    bills: dict[str, int | None] = {}
    try:
        for no, line in enumerate(it, start=no + 1):
            if not line or line.isspace() or line.startswith("CLUSTER: "):
                continue
            f = line.split("|")
            if len(f) != n:
                raise ParseError(command, f"expected {n} fields, got {len(f)} (truncated?)", no, line)
            v = f[i_state]
            state = states.get(v)
            if state is None:
                state = states[v] = _state(v)
            try:
                submit = None
                if i_sub is not None:
                    v = f[i_sub]
                    submit = float(v) if v.isdigit() and v.isascii() else parse_time(v, tz)
                v = f[i_start]
                start = float(v) if v.isdigit() and v.isascii() else parse_time(v, tz)
                v = f[i_end]
                end = float(v) if v.isdigit() and v.isascii() else parse_time(v, tz)
            except ValueError as e:
                raise ParseError(command, f"bad time: {e}", no, line) from None
            v = f[i_cpus]
            if v.isdigit() and v.isascii():  # _int's fast path, inline
                cpus = int(v)
            else:
                cpus = _count_field(v, command, "AllocCPUS", no, line)
            v = f[i_tres]
            if v in bills:
                billing = bills[v]
            else:
                tres = v.strip()
                try:
                    billing = _billing(tres) if tres else None
                except ValueError:
                    raise ParseError(command, f"bad AllocTRES {tres!r}", no, line) from None
                if billing is not None and billing < 0:
                    raise ParseError(command, f"negative billing in AllocTRES {tres!r}", no, line)
                bills[v] = billing
            if start is not None and end is not None and end < start:
                if state != "RUNNING":
                    raise ParseError(command, "End is before Start", no, line)
                # -T truncates End to -E; a job that started in the second after -E (22.05 lists it,
                # seen on the testbed) shows Start after End: it ran nothing in the window
                end = start
            if state == "PENDING" or start is None:
                start = end = None if state == "PENDING" else start
                elapsed = 0.0
            else:
                elapsed = max(0.0, (end if end is not None else start) - start)
            nnodes = 1
            if i_nn is not None:
                v = f[i_nn]
                if v.isdigit() and v.isascii():
                    nnodes = int(v)
                else:
                    nnodes = _count_field(v, command, "NNodes", no, line)
            user, account, partition = f[i_user], f[i_acc], f[i_part]
            qos = f[i_qos] if i_qos is not None else ""
            t = (
                f[i_id].strip(),
                names.get(user) or names.setdefault(user, user.strip()),
                names.get(account) or names.setdefault(account, account.strip()),
                names.get(partition) or names.setdefault(partition, partition.strip()),
                names.get(qos) or names.setdefault(qos, qos.strip()),
                state,
                cpus,
                billing if billing is not None else (0 if state == "PENDING" else cpus),
                nnodes,
                submit,
                start,
                end,
                elapsed,
            )
            yield t if plain else new(JobRecord, t)
    except Exception:
        _count_error_iter(itertools.chain((line,), it), no, n, command)
        raise


def _count_error_iter(lines: Iterator[str], no: int, n: int, command: str) -> None:
    """_count_error for the lines still to come of an iterator (`no`: the first one's number)."""
    for no, line in enumerate(lines, start=no):
        if not line or line.isspace() or line.startswith("CLUSTER: "):
            continue
        got = line.count("|") + 1
        if got != n:
            raise ParseError(command, f"expected {n} fields, got {got} (truncated?)", no, line)


# ---------------------------------------------------------------------------- squeue / sprio
def _stream_table(lines: Iterable[str], command: str, required: Iterable[str], free_last: bool | None = False
                  ) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """_table over lines (a text's splitlines, or spool.file_lines of an output on disk), the rows
    split one at a time as the caller asks for them, never all held: the same header check, field
    counts and errors as _table. `free_last` None: the last column is free text when the header's
    last column is ADMIN_COMMENT (squeue's)."""
    it = iter(lines)
    no = 0
    for line in it:
        no += 1
        if not line.strip() or line.startswith("CLUSTER: "):
            continue
        fields = line.split("|")
        header = [f.strip() for f in fields]
        missing = [c for c in required if c not in header]
        if missing:
            raise ParseError(command, f"missing column(s) {', '.join(missing)} in header", no, line)
        break
    else:
        raise ParseError(command, "no header line (empty output)")
    if free_last is None:
        free_last = header[-1] == "ADMIN_COMMENT"
    n = len(header)

    def rows() -> Iterator[tuple[int, list[str]]]:
        k = no
        for line in it:
            k += 1
            if not line.strip() or line.startswith("CLUSTER: "):
                continue
            fields = line.split("|")
            if free_last and len(fields) > n:
                fields = fields[: n - 1] + ["|".join(fields[n - 1:])]
            if len(fields) != n:
                raise ParseError(command, f"expected {n} fields, got {len(fields)} (truncated?)", k, line)
            yield k, fields

    return header, rows()


def parse_squeue(text: str | Iterable[str], command: str = " ".join(SQUEUE_ARGS), tz: tzinfo = timezone.utc
                 ) -> tuple[QueueJob, ...]:
    """`squeue` (SQUEUE_ARGS) as records. `text`: the output, or its lines (spool.file_lines: the
    output read from disk a block at a time). The rows are split one at a time and the repeated
    texts (user, account, partition, QOS, state, reason) are one string each, so memory is the
    records' (issue #31: at 370,000 queued jobs every split row held at once took ~400 MiB)."""
    return tuple(iter_squeue(text, command, tz))


def iter_squeue(text: str | Iterable[str], command: str = " ".join(SQUEUE_ARGS), tz: tzinfo = timezone.utc,
                make=None) -> Iterator:
    """parse_squeue's records one at a time, each `make(*fields)` (QueueJob's order; `tuple`-like
    makers let spool.Spooled keep them on disk; default a QueueJob, snaprecords.new_queue_job);
    its errors raised as the parse reaches them."""
    if make is None:
        from fscontrol.snaprecords import new_queue_job as make
    need = ("JOBID", "USER", "ACCOUNT", "PARTITION", "STATE", "NODES", "CPUS", "PRIORITY", "REASON")
    if isinstance(text, str):
        comment_last = text.lstrip().split("\n", 1)[0].rstrip().endswith("|ADMIN_COMMENT")
        header, rows = _stream_table(text.splitlines(), command, need, free_last=comment_last)
    else:
        header, rows = _stream_table(text, command, need, free_last=None)
    ix = {name: i for i, name in enumerate(header)}
    job_id_ok = re.compile(JOB_ID).fullmatch
    i_id, i_user, i_acct, i_part, i_state, i_nodes, i_cpus, i_prio, i_reason = (ix[c] for c in need)
    i_comment, i_submit, i_start, i_limit, i_qos, i_nice = (
        ix.get(c) for c in ("ADMIN_COMMENT", "SUBMIT_TIME", "START_TIME", "TIME_LIMIT", "QOS", "NICE"))

    def count(v: str, col: str, no: int, f: list[str], minimum: int | None = 0) -> int:
        # _num's result, and its error (with the line), for what is not plain ASCII digits
        if v.isdigit() and v.isascii():
            return int(v)
        return _num(v, int, command, col, no, "|".join(f), minimum=minimum)

    one: dict[str, str] = {}  # each repeated text once (a few hundred distinct among 10^5 jobs)
    same = one.setdefault
    seen: set = set()  # the job ids so far (plain numbers as ints: a third of the memory of their texts)
    limits: dict[str, int | None] = {}  # parse_duration of each distinct TimeLimit text (a few per queue)
    # the fast paths of parse_time and count inline: plain ASCII digits (what %s and the counts print)
    with gc_paused():  # a record a job, no reference cycles (as parse_sshare)
        for no, f in rows:
            comment = f[i_comment].strip() if i_comment is not None else ""
            job_id = f[i_id].strip()
            if not job_id_ok(job_id):
                raise ParseError(command, f"JOBID is not a Slurm job id: {job_id!r}", no, "|".join(f))
            key = int(job_id) if job_id.isdigit() and job_id.isascii() and job_id[0] != "0" else job_id
            if key in seen:
                raise ParseError(command, f"job {job_id} listed twice", no, "|".join(f))
            seen.add(key)
            try:
                submit = start = limit = None
                if i_submit is not None:
                    v = f[i_submit]
                    submit = float(v) if v.isdigit() and v.isascii() else parse_time(v, tz)
                if i_start is not None:
                    v = f[i_start]
                    start = float(v) if v.isdigit() and v.isascii() else parse_time(v, tz)
                if i_limit is not None:
                    v = f[i_limit]
                    if v in limits:
                        limit = limits[v]
                    else:
                        limit = limits[v] = parse_duration(v)
            except ValueError as e:
                raise ParseError(command, str(e), no, "|".join(f)) from None
            v = f[i_nodes]
            nodes = int(v) if v.isdigit() and v.isascii() else count(v, "NODES", no, f)
            v = f[i_cpus]
            cpus = int(v) if v.isdigit() and v.isascii() else count(v, "CPUS", no, f)
            v = f[i_prio]
            prio = int(v) if v.isdigit() and v.isascii() else count(v, "PRIORITY", no, f)
            nice = 0
            if i_nice is not None:
                v = f[i_nice]
                nice = int(v) if v.isdigit() and v.isascii() else count(v, "NICE", no, f, minimum=None)
            user, acct, part = f[i_user].strip(), f[i_acct].strip(), f[i_part].strip()
            qos = f[i_qos].strip() if i_qos is not None else ""
            state, reason = f[i_state].strip(), f[i_reason].strip()
            yield make(
                job_id,
                same(user, user),
                same(acct, acct),
                same(part, part),
                same(qos, qos),
                same(state, state),
                nodes,
                cpus,
                prio,
                nice,
                same(reason, reason),
                submit,
                start,
                limit,
                "" if comment == "(null)" else comment,
            )


ROOT_USAGE_ARGS = ("sshare", "-n", "-P", "-A", "root", "-o", "Account,User,RawUsage")


def root_usage_args(accounts: Sequence[str] = ()) -> tuple[str, ...]:
    """ROOT_USAGE_ARGS, with these accounts' rows too (`-A root,a,b`: one RPC; without -a sshare
    prints the accounts' own rows, not their users')."""
    if not accounts:
        return ROOT_USAGE_ARGS
    return ("sshare", "-n", "-P", "-A", ",".join(("root", *accounts)), "-o", "Account,User,RawUsage")


def parse_account_usage(text: str, command: str = " ".join(ROOT_USAGE_ARGS)) -> dict[str, int]:
    """Each account row's RawUsage (rows with no user) from `root_usage_args`'s output, root's included."""
    out: dict[str, int] = {}
    for no, line in _lines(text):
        f = line.split("|")
        if len(f) == 3 and f[0].strip() and not f[1].strip():
            out[f[0].strip()] = _int(f[2].strip(), command, "RawUsage", no, line)
    return out


def parse_root_usage(text: str, command: str = " ".join(ROOT_USAGE_ARGS)) -> int:
    """Root's RawUsage from `sshare -n -P -A root -o Account,User,RawUsage` (root's row has no user)."""
    for no, line in _lines(text):
        f = line.split("|")
        if len(f) == 3 and f[0].strip() == "root" and not f[1].strip():
            return _int(f[2].strip(), command, "RawUsage", no, line)
    raise ParseError(command, "no root row")


def parse_sprio(text: str | Iterable[str], command: str = " ".join(SPRIO_ARGS)) -> tuple[PrioRow, ...]:
    """`sprio -n -o '%i|%u|%r|%y|%f'`. sprio lists only pending, eligible, non-held jobs. `text`:
    the output, or its lines (as parse_squeue: split one at a time, repeated texts shared)."""
    return tuple(iter_sprio(text, command))


def iter_sprio(text: str | Iterable[str], command: str = " ".join(SPRIO_ARGS), make=None) -> Iterator:
    """parse_sprio's rows one at a time, each `make(*fields)` (as iter_squeue; default a PrioRow)."""
    if make is None:
        from fscontrol.snaprecords import PrioRow as make
    if isinstance(text, str):
        if not text.strip() or text.strip().startswith("You have no pending jobs") or "No pending jobs" in text:
            return
        lines: Iterable[str] = text.splitlines()
    else:
        it = iter(text)
        first = list(itertools.islice(it, 64))  # sprio's "no pending jobs" message comes first (or nothing at all)
        body = "\n".join(first)
        if not body.strip() or body.strip().startswith("You have no pending jobs") or "No pending jobs" in body:
            return
        lines = itertools.chain(first, it)
    header, rows = _stream_table(lines, command, ("JOBID", "USER", "PARTITION", "PRIORITY", "FAIRSHARE"))
    ix = {name: i for i, name in enumerate(header)}
    i_id, i_user, i_part, i_prio, i_fs = (ix[c] for c in ("JOBID", "USER", "PARTITION", "PRIORITY", "FAIRSHARE"))
    one: dict[str, str] = {}
    same = one.setdefault
    float_text = re.compile(_FLOAT_TEXT).fullmatch
    for no, f in rows:
        # _num's value where it has one (_plain_num), else _num itself raises its error with the line
        prio = _plain_num(f[i_prio], 0, float_text)
        if prio is None:
            prio = _num(f[i_prio], float, command, "PRIORITY", no, "|".join(f), minimum=0)
        fs = _plain_num(f[i_fs], None, float_text)
        if fs is None or not 0 <= fs <= 1:
            fs = _unit(_num(f[i_fs], float, command, "FAIRSHARE", no, "|".join(f)), command, "FAIRSHARE", no, "|".join(f))
        user, part = f[i_user].strip(), f[i_part].strip()
        yield make(f[i_id].strip(), same(user, user), same(part, part), prio, fs)


def _plain_num(value: str, minimum: float | None, float_text) -> float | None:
    """_num(value, float, ..., minimum=minimum)'s value when it returns one; None where it raises
    (`float_text`: _FLOAT_TEXT's compiled fullmatch)."""
    v = value.strip()
    if v in _EMPTY or not float_text(v):
        return None
    x = float(v)
    return None if minimum is not None and x < minimum else x


def parse_qos(text: str, command: str = " ".join(QOS_ARGS)) -> tuple[QosRow, ...]:
    from fscontrol.snaprecords import QosRow

    header, rows = _table(text, command, ("Name", "UsageFactor"))
    ix = {name: i for i, name in enumerate(header)}
    return tuple(
        QosRow(
            name=f[ix["Name"]].strip(),
            usage_factor=_num(f[ix["UsageFactor"]], float, command, "UsageFactor", no, "|".join(f), minimum=0),
        )
        for no, f in rows
    )


def parse_qos_flagged(text: str, flag: str, command: str = " ".join(QOS_ARGS)) -> frozenset[str]:
    """The QOSes with `flag` (OverPartQOS, Relative, ...) in the `Flags` column; none without it."""
    header, rows = _table(text, command, ("Name",))
    if "Flags" not in header:
        return frozenset()
    k, n = header.index("Flags"), header.index("Name")
    return frozenset(f[n].strip() for _, f in rows if flag.lower() in {x.strip().lower() for x in f[k].split(",")})


def parse_qos_over_part(text: str, command: str = " ".join(QOS_ARGS)) -> frozenset[str]:
    """The QOSes with the OverPartQOS flag (their limits before the partition QOS's)."""
    return parse_qos_flagged(text, "OverPartQOS", command)


def parse_qos_min_prio(text: str, command: str = " ".join(QOS_ARGS)) -> dict[str, int]:
    """Each QOS's MinPrioThreshold (`MinPrioThres`; blank: none) where it is set, {} for a text
    without the column (a capture made before it)."""
    header, rows = _table(text, command, ("Name",))
    if "MinPrioThres" not in header:
        return {}
    k, n = header.index("MinPrioThres"), header.index("Name")
    out: dict[str, int] = {}
    for no, f in rows:
        v = _num(f[k], int, command, "MinPrioThres", no, "|".join(f), allow_empty=True, minimum=0)
        if v:
            out[f[n].strip()] = v
    return out


# ---------------------------------------------------------------------------- scontrol show config
def parse_config_pairs(text: str, command: str = " ".join(CONFIG_ARGS)) -> dict[str, str]:
    """`Key = Value` pairs of `scontrol show config`, from its text or its --json form (26.05+)."""
    from fscontrol.slurm import configjson  # here: the forecast parses sshare alone

    if configjson.looks_like_json(text):
        return configjson.config_pairs_from_json(text, command)
    pairs: dict[str, str] = {}
    for _no, line in _lines(text):
        if line.startswith("Configuration data as of") or line.startswith("CLUSTER: "):
            continue
        key, sep, value = line.partition(" = ")
        if not sep:
            # sections such as "Cgroup Support Configuration:" and plugin blocks have no " = "
            if line.rstrip().endswith(":") or line.startswith(" "):
                continue
            continue
        pairs[key.strip()] = value.strip()
    if not pairs:
        raise ParseError(command, "no `Key = Value` lines (empty or garbled output)")
    return pairs


def parse_config(text: str, command: str = " ".join(CONFIG_ARGS)) -> SlurmConfig:
    """The priority settings fscontrol needs from `scontrol show config`."""
    from fscontrol.snaprecords import SlurmConfig

    p = parse_config_pairs(text, command)

    def need(key: str) -> str:
        if key not in p:
            raise ParseError(command, f"no {key} line")
        return p[key]

    def flags(key: str) -> tuple[str, ...]:
        v = p.get(key, "")
        if v in _EMPTY or v.lower() == "none":
            return ()
        return tuple(x.strip().lower() for x in v.split(",") if x.strip())

    damp = _num(need("FairShareDampeningFactor"), int, command, "FairShareDampeningFactor", None, None)
    if not 1 <= damp <= 65535:  # Slurm's own range (uint16; 0 would divide by zero)
        raise ParseError(command, f"FairShareDampeningFactor = {damp} is outside Slurm's 1..65535")
    try:
        half = parse_duration(need("PriorityDecayHalfLife")) or 0
        calc = parse_duration(need("PriorityCalcPeriod")) or 0
    except ValueError as e:
        raise ParseError(command, str(e)) from None
    if calc <= 0:
        raise ParseError(command, f"PriorityCalcPeriod = {need('PriorityCalcPeriod')} is not a positive period")
    pflags = p.get("PriorityFlags", "")
    weights = {}
    for k, v in p.items():
        if k.startswith("PriorityWeight") and k != "PriorityWeightTRES":
            try:
                weights[k[len("PriorityWeight"):].lower()] = int(v)
            except ValueError:
                pass
    return SlurmConfig(
        cluster=need("ClusterName"),
        slurm_version=p.get("SLURM_VERSION", "unknown"),
        priority_type=need("PriorityType"),
        priority_flags=tuple(x.strip() for x in pflags.split(",") if x.strip() and pflags not in _EMPTY),
        damping_factor=damp,
        half_life_s=half,
        calc_period_s=calc,
        usage_reset_period=p.get("PriorityUsageResetPeriod", "NONE"),
        private_data=privatedata.flag_list(p.get("PrivateData")),
        enforce=flags("AccountingStorageEnforce"),
        weights=weights,
        raw=p,
    )


_SCONTROL_PAIR = r"([A-Za-z][A-Za-z0-9_]*)=(.*?)(?= [A-Za-z][A-Za-z0-9_]*=|$)"  # compiled by `re` on first use, as _DURATION


def scontrol_records(text: str, command: str, name_key: str, none_prefix: str) -> Iterator[tuple[int, str, dict[str, str]]]:
    """`scontrol -o show ...`'s records: (line number, line, its Key=Value pairs) of each line but
    the empty ones and the "No ..." one (`none_prefix`); a record without `name_key`: ParseError."""
    for no, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith(none_prefix):
            continue
        kv = dict(re.findall(_SCONTROL_PAIR, s))
        if not kv.get(name_key):
            raise ParseError(command, f"no {name_key}", no, line)
        yield no, line, kv
