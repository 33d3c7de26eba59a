"""What `fscontrol doctor` reads from Slurm: the live configuration, every association, the QOS
with their flags, the partitions and slurm.conf's own FairShareDampeningFactor line.

Reading only; the rules that judge it are pure functions in fscontrol.doctor. `scontrol show
config` must answer (without it there is nothing to judge: SlurmCommandError, exit 3). Every
other read that fails is kept as its error line, because a failing read is itself a finding
(no slurmdbd: sshare and sacctmgr fail). A recorded sample (RecordedSlurm) holds config, sshare
and qos (Name and UsageFactor only): what it lacks is None, and the checks that need it are
skipped, saying so.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

from fscontrol.errors import FscontrolError, NotFoundError, ParseError, SlurmCommandError
from fscontrol.records import ShareRow
from fscontrol.slurm import command, parse

# The QOS with what the checks need beyond Name,UsageFactor (parse.QOS_ARGS): their priority (the
# QOS factor), flags, and the limits that can stop the padding job (MaxWall, GrpTRESMins).
QOS_ARGS = ("sacctmgr", "-P", "show", "qos", "format=Name,UsageFactor,Priority,Flags,MaxWall,GrpTRESMins")
# Every association's QOS list (may the padding user run in the padding QOS?)
ASSOC_ARGS = ("sacctmgr", "-P", "show", "assoc", "format=Cluster,Account,User,QOS")
PARTITION_ARGS = ("scontrol", "-o", "show", "partition")
# Where Slurm's commands read slurm.conf without SLURM_CONF: Debian's build (--sysconfdir=/etc/slurm),
# then the copy slurmd keeps in configless mode (slurm.conf(5), "configless": /run/slurm/conf).
DEFAULT_SLURM_CONF = "/etc/slurm/slurm.conf"
CONFIGLESS_CACHE = "/run/slurm/conf/slurm.conf"
# squeue reasons of a pending job sprio never lists (not eligible yet, or held)
NOT_LISTED_REASONS = frozenset({"begintime", "dependency", "dependencyneversatisfied", "jobheldadmin",
                                "jobhelduser", "held"})


@dataclass(frozen=True, slots=True)
class QosInfo:
    name: str
    usage_factor: float | None
    priority: int | None = None  # None: not read (a recorded sample)
    flags: tuple[str, ...] = ()  # lower case
    max_wall_s: int | None = None  # MaxWall in seconds (None: none, or not read)
    grp_tres_mins: str = ""  # GrpTRESMins as sacctmgr prints it ("": none, or not read)


@dataclass(frozen=True, slots=True)
class Survey:
    """What the doctor read. None means "not read" (with the reason in `errors` when a read failed)."""

    config: dict[str, str]  # every `Key = Value` line of `scontrol show config`
    shares: tuple[ShareRow, ...] | None = None
    qos: tuple[QosInfo, ...] | None = None
    assoc_qos: dict[tuple[str, str], tuple[str, ...]] | None = None  # (account, user) -> its QOS, lower case
    partitions: dict[str, dict[str, str]] | None = None  # name -> its `Key=Value` fields
    conf_path: str | None = None  # the slurm.conf read for its d line
    conf_damping: str | None = None  # that file's FairShareDampeningFactor value (None: no line, or not read)
    conf_read: bool = False  # the file was read (conf_damping None then means: no such line)
    conf_priority_flags: str | None = None  # that file's PriorityFlags value (as written: older Slurm shows it changed)
    agent_damping: int | None = None  # the d the agent itself last set (its history), when known
    agent_history: str | None = None  # the history the doctor looked in for that d (agent.diagnose)
    agent_sign: str | None = None  # a trace an fscontrol agent left on the cluster although that history said nothing
    # the priority plugin slurmctld runs (it loads it only at start; `show config` shows the file):
    pending: tuple[str, ...] | None = None  # jobs sprio must list (pending, eligible, not held), from squeue
    sprio_ids: frozenset[str] | None = None  # a job sprio listed (read before squeue; the first is enough), or none
    errors: dict[str, str] = field(default_factory=dict)  # read -> its one-line error
    source: str = ""


def parse_qos_full(text: str, command: str = " ".join(QOS_ARGS)) -> tuple[QosInfo, ...]:
    """`sacctmgr -P show qos format=Name,UsageFactor[,Priority,Flags]` (the last two optional)."""
    header, rows = parse._table(text, command, ("Name", "UsageFactor"))
    ix = {name: i for i, name in enumerate(header)}
    out = []
    for no, f in rows:
        line = "|".join(f)
        uf = parse._num(f[ix["UsageFactor"]], float, command, "UsageFactor", no, line, allow_empty=True, minimum=0)
        prio = (parse._num(f[ix["Priority"]], int, command, "Priority", no, line, allow_empty=True, minimum=0)
                if "Priority" in ix else None)
        flags = tuple(x.strip().lower() for x in f[ix["Flags"]].split(",") if x.strip()) if "Flags" in ix else ()
        wall = None
        if "MaxWall" in ix and f[ix["MaxWall"]].strip() not in ("", "UNLIMITED", "INFINITE", "Partition_Limit"):
            try:
                wall = parse.parse_duration(f[ix["MaxWall"]].strip())
            except ValueError:
                raise ParseError(command, f"MaxWall is not a duration: {f[ix['MaxWall']].strip()!r}", no, line) from None
        grp = f[ix["GrpTRESMins"]].strip() if "GrpTRESMins" in ix else ""
        out.append(QosInfo(f[ix["Name"]].strip(), uf, prio, flags, wall, grp))
    return tuple(out)


def parse_assoc_qos(text: str, cluster: str | None = None,
                    command: str = " ".join(ASSOC_ARGS)) -> dict[tuple[str, str], tuple[str, ...]]:
    """(account, user) -> the association's QOS names (lower case) from `sacctmgr -P show assoc`,
    of `cluster` only when named (slurmdbd serves every cluster; sacctmgr has no -M)."""
    header, rows = parse._table(text, command, ("Account", "User", "QOS"))
    ix = {name: i for i, name in enumerate(header)}
    return {(f[ix["Account"]].strip(), f[ix["User"]].strip()):
            tuple(q.strip().lower() for q in f[ix["QOS"]].split(",") if q.strip()) for _no, f in rows
            if cluster is None or "Cluster" not in ix or f[ix["Cluster"]].strip() == cluster}


def parse_partitions(text: str) -> dict[str, dict[str, str]]:
    """`scontrol -o show partition`: one line per partition, `Key=Value` fields."""
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if "PartitionName" in fields:
            out[fields["PartitionName"]] = fields
    return out


def conf_damping_value(text: str) -> tuple[str | None, bool]:
    """slurm.conf's FairShareDampeningFactor value (the last line wins, as in Slurm) and whether the
    file has an Include line (the value in force may then come from another file). The same
    reading as act.slurmconf.conf_damping_value (the writer's), kept here below it."""
    value, include = None, False
    for line in text.splitlines():
        key, _, v = line.split("#", 1)[0].strip().partition("=")
        k = key.strip().lower()
        if k == "fairsharedampeningfactor":
            value = v.strip()
        elif k.startswith("include"):
            include = True
    return value, include


def conf_line_value(text: str, key: str) -> str | None:
    """slurm.conf's value for `key` (case-insensitive; the last line wins, as in Slurm), or None."""
    value, want = None, key.lower()
    for line in text.splitlines():
        k, _, v = line.split("#", 1)[0].strip().partition("=")
        if k.strip().lower() == want:
            value = v.strip()
    return value


def conf_file_problem(env: dict[str, str]) -> str | None:
    """Why Slurm's commands will find no slurm.conf under `env` (one line), or None.

    Without the file each command spends about a minute in Slurm's own retries before it fails
    (measured on 22.05: `fscontrol doctor` took 2 minutes, `config check` timed out), so the doctor
    looks first: SLURM_CONF where set, else the default path, else slurmd's configless copy."""
    named = env.get("SLURM_CONF")
    path = named or DEFAULT_SLURM_CONF
    if os.path.isfile(path):
        if os.access(path, os.R_OK):
            return None
        return f"slurm.conf {path} is not readable by this user: Slurm's commands cannot read their configuration"
    if not named and os.path.isfile(CONFIGLESS_CACHE):
        return None
    where = "SLURM_CONF names it" if named else (f"Slurm's commands read it without SLURM_CONF; no configless copy "
                                                  f"in {os.path.dirname(CONFIGLESS_CACHE)} either")
    return (f"slurm.conf not found: {path} ({where}): Slurm's commands cannot reach slurmctld; set SLURM_CONF to "
            "the cluster's slurm.conf")


PING_ARGS = ("scontrol", "ping")
PING_TIMEOUT_S = 30.0


def controller_problem(source) -> str | None:
    """Why slurmctld cannot answer (one line), or None: `scontrol ping` (0.0 s where nothing
    listens; `scontrol show config` then spends 9 s in its own retries, twice with the JSON try).
    Only where no controller says UP: a backup that is down while the primary answers is no
    reason to stop."""
    argv = [PING_ARGS[0], *source._cluster_args(PING_ARGS[0]), *PING_ARGS[1:]]
    env = dict(os.environ if source.env is None else source.env)
    try:
        raw = command.run(argv, timeout=min(source.timeout_s, PING_TIMEOUT_S), env=env)
    except FileNotFoundError:
        return "`scontrol` not found: is the Slurm client installed and on PATH?"
    except subprocess.TimeoutExpired:
        return f"slurmctld does not answer: `{' '.join(argv)}` gave no answer within {min(source.timeout_s, PING_TIMEOUT_S):g} s"
    out = raw.stdout.decode(errors="replace")
    if " is UP" in out:
        return None
    said = next((ln.strip() for ln in out.splitlines() if " is " in ln), None) or \
        (raw.stderr.decode(errors="replace").strip().splitlines() or ["no answer"])[-1]
    return (f"slurmctld does not answer (`{' '.join(argv)}`: {said}): nothing to judge; start slurmctld, and read "
            "its log for why it stopped")


def _pending_listed(queue, sprio_started: float) -> tuple[str, ...]:
    """The pending jobs sprio must have listed: eligible (no begin time or dependency to wait for),
    not held (priority > 0), submitted before sprio ran."""
    return tuple(j.job_id for j in queue if j.state == "PENDING" and j.priority > 0
                 and j.reason.strip().lower() not in NOT_LISTED_REASONS
                 and (j.submit is None or j.submit < sprio_started))


def read(source, slurm_conf: str | None = None, agent_damping: int | None = None) -> Survey:
    """Read everything the doctor judges from `source` (LiveSlurm or RecordedSlurm).

    `slurm_conf`: the file to read for its d line (default: the SLURM_CONF that `scontrol show
    config` names); read only where this process can read it. A live source whose slurm.conf is
    missing raises SlurmCommandError at once (conf_file_problem), before any command runs."""
    run = getattr(source, "run", None)
    if run is not None:
        env = getattr(source, "env", None)
        problem = conf_file_problem(os.environ if env is None else env)
        if problem is None and hasattr(source, "_cluster_args"):
            problem = controller_problem(source)
        if problem:
            raise SlurmCommandError(problem)
    config = parse.parse_config_pairs(source.config().stdout)  # raises: nothing to judge without it
    errors: dict[str, str] = {}

    def attempt(name: str, fn):
        try:
            return fn()
        except NotFoundError as e:  # a recorded sample without this output: not read, no finding
            errors[name] = f"not recorded ({e})"
            return None
        except FscontrolError as e:
            errors[name] = str(e)
            return None

    shares = attempt("sshare", lambda: parse.parse_sshare(source.sshare().stdout))
    if run is not None:
        qos = attempt("qos", lambda: parse_qos_full(run(QOS_ARGS).stdout))
        assoc = attempt("assoc", lambda: parse_assoc_qos(run(ASSOC_ARGS).stdout, config.get("ClusterName")))
        parts = attempt("partitions", lambda: parse_partitions(run(PARTITION_ARGS).stdout))
    else:
        qos = attempt("qos", lambda: parse_qos_full(source.qos().stdout))
        assoc = parts = None
    pending = sprio_ids = None
    if (config.get("PriorityType") or "").strip() == "priority/multifactor":
        prio = attempt("sprio", lambda: source.sprio())  # first: a job squeue then lists was there before
        # one job listed is enough: slurmctld runs the multifactor plugin, and the queue (370,000 jobs
        # cost 2 s and 215 MiB here) is not read; sprio listing none is when squeue's pending jobs count
        first = attempt("sprio", lambda: next(parse.iter_sprio(prio.stdout), None)) if prio is not None else None
        if first is not None:
            sprio_ids, pending = frozenset((first.job_id,)), ()
        elif prio is not None and "sprio" not in errors:
            queue = attempt("squeue", lambda: parse.parse_squeue(source.squeue().stdout))
            if queue is not None:
                sprio_ids, pending = frozenset(), _pending_listed(queue, prio.started_at)
    path = slurm_conf or config.get("SLURM_CONF")
    conf_damping, conf_read, conf_flags = None, False, None
    # a recorded sample's SLURM_CONF is another machine's file: read only when named (--slurm-conf)
    if path and (run is not None or slurm_conf):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            conf_damping, include = conf_damping_value(text)
            conf_flags = conf_line_value(text, "PriorityFlags")
            conf_read = not include
            if include:
                errors["slurm.conf"] = f"{path} has Include lines: the d in force may come from another file"
        except OSError as e:
            errors["slurm.conf"] = f"{path}: {e.strerror or e}"
    return Survey(config=config, shares=shares, qos=qos, assoc_qos=assoc, partitions=parts,
                  conf_path=os.fspath(path) if path else None, conf_damping=conf_damping, conf_read=conf_read,
                  conf_priority_flags=conf_flags, agent_damping=agent_damping, pending=pending, sprio_ids=sprio_ids, errors=errors,
                  source=source.describe())


def from_snapshot(snap, agent_damping: int | None = None) -> Survey:
    """A survey from what a tick already read (no extra command): config, sshare, QOS factors."""
    return Survey(config=dict(snap.config.raw), shares=tuple(snap.shares),
                  qos=tuple(QosInfo(q.name, q.usage_factor) for q in snap.qos), agent_damping=agent_damping,
                  source="the tick's snapshot")
