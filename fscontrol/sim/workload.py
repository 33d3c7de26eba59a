"""Workloads for the simulator: SWF logs, hand-made scenarios, and Steffen's section-9 generator.

A :class:`Workload` is a machine size (nodes) and a list of :class:`SimJob` sorted by submit
time, plus (optionally) the accounts' allocations, used by the SFS and gate policies.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import tomllib
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fscontrol.model.allocations import Allocation, parse_allocations
from ..errors import ConfigError
from ..records import ShareRow

DAY = 86400.0
HOUR = 3600.0


@dataclass(slots=True)
class SimJob:
    """One job of a workload. Times in seconds; ``size`` in nodes (the simulator's unit)."""

    job_id: str
    submit: float
    run: float  # actual run time
    estimate: float  # the user's time limit (what the scheduler sees)
    size: int  # nodes (or CPUs: a workload replayed from sacct in CPU units, Workload.meta["unit"])
    user: str = ""
    account: str = ""
    # from a site's own history (fscontrol.sim.history); SWF and scenarios leave them empty
    partition: str = ""
    qos: str = ""
    cpus: int = 0  # CPUs the job had (allocated, else requested)
    nodes: int = 0  # nodes the job had
    submitted: float | None = None  # the real submit time when ``submit`` is the eligible time
    after: tuple[str, ...] = ()  # job ids it waits for to end (afterok/afterany/...: run.py orders the replay)
    # what RawUsage is charged a second (sacct's AllocTRES billing: TRESBillingWeights, GPUs);
    # 0 = not recorded: the job's size, as Slurm bills a partition without weights
    billing: float = 0.0
    # its QOS's UsageFactor (a capture's qos.txt): Slurm charges RawUsage billing x UsageFactor
    usage_factor: float = 1.0
    gpus: int = 0  # GPUs it takes on each of its nodes (a capture's TRES: gres/gpu over its nodes)
    gpu_nodes: int = 0  # a GPU job's nodes (sacct's ReqNodes or NNodes, > 1): the node model places it on that many
    prio_thresh: int = 0  # its MinPrioThreshold (its partition's or its own QOS's): bf_min_prio_reserve for it
    # the association and QOS limits it counts towards (indices into Workload.meta["limits"]: a
    # capture's assoc.txt and qoslimits.txt, model/acctpolicy.py)
    limit_keys: tuple[int, ...] = ()
    # those it is checked against, with its own caps (its QOS may mask an association's): (limit,
    # running jobs at most, CPUs at most)
    limit_checks: tuple[tuple[int, float, float], ...] = ()


def billing_rates(jobs) -> list[float]:
    """What each job charges RawUsage a second while it runs: its recorded billing (AllocTRES,
    SimJob.billing), else its size (a partition without TRESBillingWeights bills its CPUs), times
    its QOS's UsageFactor (Slurm's priority/multifactor: usage x billing x UsageFactor)."""
    return [(float(j.billing) if j.billing > 0 else float(j.size)) * j.usage_factor for j in jobs]


@dataclass(slots=True)
class Workload:
    name: str
    nodes: int
    jobs: list[SimJob]
    allocations: dict[str, Allocation] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    # the association tree with its shares (sshare -a -l -P, in tree order), for a fair-share
    # engine; empty unless the workload was recorded from a cluster (fscontrol.sim.history)
    shares: tuple[ShareRow, ...] = ()

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ConfigError(f"workload {self.name!r}: machine must have >= 1 node")
        self.jobs.sort(key=lambda j: j.submit)


# --------------------------------------------------------------------------- SWF

SWF_FIELDS = 18


@dataclass(frozen=True, slots=True)
class SwfStats:
    records: int
    kept: int
    skipped_no_runtime: int
    skipped_no_procs: int
    skipped_too_big: int
    overrun: int  # run time > request (kept; see ``overrun``)


def read_swf(
    path: str | Path,
    *,
    procs_per_node: int | None = None,
    nodes: int | None = None,
    overrun: str = "extend",
    processors: str = "allocated",
    limit: int | None = None,
    name: str | None = None,
) -> Workload:
    """Read a Standard Workload Format log (plain or .gz).

    Each job: size = ceil(processors / procs_per_node) with processors = field 5 (allocated),
    falling back to field 8 (requested) when field 5 is -1 (``processors="requested"``: field 8
    first, as AccaSim reads it; the two differ on 710 jobs of the SDSC log); estimate = field 9
    (requested time), falling back to the run time when unknown. Jobs without a known run time (field 4 <
    0) or processor count are skipped (they never ran). Users: field 12; accounts: field 13
    (group) when known, else the user.

    overrun: what to do with jobs that ran longer than requested: "extend" (the estimate is
    raised to the run time: the scheduler is never surprised, the usual choice in simulation
    studies) or "kill" (the run time is cut at the request, as a Slurm time limit would).
    procs_per_node: default MaxProcs / MaxNodes from the header when both are given and divide
      (SDSC Blue Horizon: 1152 / 144 = 8; KTH SP2: 100 / 100 = 1), else 8.
    nodes: machine size; default from the header's MaxNodes (else MaxProcs / procs_per_node).
    limit: read at most this many job records (for quick tests).
    """
    _check_overrun(overrun)
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rt", encoding="utf-8", errors="replace") as fh:  # type: ignore[operator]
            return parse_swf(fh, procs_per_node=procs_per_node, nodes=nodes, overrun=overrun, processors=processors,
                             limit=limit, name=name or p.name)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ConfigError(f"{p}: not a readable gzip file ({e or type(e).__name__}): truncated or corrupt") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read ({e.strerror or e})") from None


def _swf_num(v: str, name: str, line_no: int, field: int, what: str, integer: bool = False) -> float:
    """One SWF field as a number: finite, and >= 0 or -1 (SWF's "unknown"); else a ConfigError
    naming the line and the field (1-based, as the SWF standard numbers them)."""
    try:
        x = float(v)
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or (integer and x != int(x)) or (x < 0 and x != -1):
        raise ConfigError(f"{name}: line {line_no}: field {field} ({what}) is {v!r}: SWF wants a number >= 0 "
                          "(or -1 for unknown)")
    return x


def _header_ppn(header: Mapping[str, str]) -> int:
    """Processors per node from the header (MaxProcs / MaxNodes when both divide), else 8."""
    max_nodes, max_procs = _header_int(header, "MaxNodes"), _header_int(header, "MaxProcs")
    if max_nodes and max_procs and max_procs % max_nodes == 0:
        return max_procs // max_nodes
    return 8


def parse_swf(
    lines: Iterable[str],
    *,
    procs_per_node: int | None = None,
    nodes: int | None = None,
    overrun: str = "extend",
    processors: str = "allocated",
    limit: int | None = None,
    name: str = "swf",
) -> Workload:
    """Parse SWF text (see :func:`read_swf`)."""
    _check_overrun(overrun)
    if processors not in ("allocated", "requested"):
        raise ConfigError(f"SWF processors must be 'allocated' or 'requested', not {processors!r}")
    first, second = (4, 7) if processors == "allocated" else (7, 4)
    if procs_per_node is not None and procs_per_node < 1:
        raise ConfigError("procs_per_node must be >= 1")
    header: dict[str, str] = {}
    jobs: list[SimJob] = []
    append = jobs.append
    records = no_rt = no_p = overruns = 0
    kill = overrun == "kill"
    ppn = procs_per_node or 0  # 0: decided from the header at the first job record
    for line_no, line in enumerate(lines, 1):
        if not line or line[0] == ";":
            if line.startswith(";") and ":" in line:
                k, _, v = line[1:].partition(":")
                header.setdefault(k.strip(), v.strip())
            continue
        f = line.split()
        if not f:
            continue
        if len(f) < SWF_FIELDS:
            raise ConfigError(f"{name}: line {line_no}: {len(f)} fields, SWF has {SWF_FIELDS}")
        records += 1
        if not ppn:
            ppn = _header_ppn(header)
        run = _swf_num(f[3], name, line_no, 4, "run time")
        procs = int(_swf_num(f[first], name, line_no, first + 1, "processors", integer=True))
        if procs <= 0:
            procs = int(_swf_num(f[second], name, line_no, second + 1, "processors", integer=True))
        if run < 0:
            no_rt += 1
        elif procs <= 0:
            no_p += 1
        else:
            est = _swf_num(f[8], name, line_no, 9, "requested time")
            submit = _swf_num(f[1], name, line_no, 2, "submit time")
            if est <= 0:
                est = run
            elif run > est:
                overruns += 1
                if kill:
                    run = est
                else:
                    est = run
            user = f[11]
            group = f[12]
            append(
                SimJob(
                    f[0],
                    submit,
                    run,
                    est,
                    (procs + ppn - 1) // ppn,
                    user,
                    group if group != "-1" else user,
                )
            )
        if limit is not None and records >= limit:
            break
    if not ppn:
        ppn = _header_ppn(header)
    if nodes is None:
        max_nodes, max_procs = _header_int(header, "MaxNodes"), _header_int(header, "MaxProcs")
        if max_nodes:
            nodes = max_nodes
        elif max_procs:
            nodes = max_procs // ppn
        else:
            nodes = max((j.size for j in jobs), default=1)
    too_big = sum(1 for j in jobs if j.size > nodes)
    if too_big:
        jobs = [j for j in jobs if j.size <= nodes]
    stats = SwfStats(records, len(jobs), no_rt, no_p, too_big, overruns)
    return Workload(
        name=name,
        nodes=nodes,
        jobs=jobs,
        meta={
            "source": "swf",
            "header": header,
            "stats": asdict(stats),
            "procs_per_node": ppn,
            "overrun": overrun,
            "processors": processors,
        },
    )


def _check_overrun(overrun: str) -> None:
    if overrun not in ("extend", "kill"):
        raise ConfigError(f"SWF overrun handling must be 'extend' or 'kill', not {overrun!r}")


def _header_int(header: Mapping[str, str], key: str) -> int:
    try:
        return max(0, int(header.get(key, "").split()[0]))
    except (ValueError, IndexError):
        return 0


# --------------------------------------------------------------------------- scenarios

def load_scenario(path: str | Path) -> Workload:
    """A hand-made scenario from TOML or JSON (by suffix). See :func:`scenario_from_dict`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read scenario {p}: {e}") from e
    try:
        data = json.loads(text) if p.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"scenario {p}: {e}") from e
    return scenario_from_dict(data, name=p.stem)


def _dur(v: Any, where: str) -> float:
    from fscontrol.model.allocations import parse_period

    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0:
        return 0.0
    return parse_period(v, account=where, key="time")


def scenario_from_dict(data: Mapping[str, Any], *, name: str = "scenario") -> Workload:
    """A scenario from a parsed table::

        name = "sfs-example"
        nodes = 1000
        [allocations.alice]          # as in fscontrol's config (unit "nodes" here)
        award = 144
        period = "1h"
        unit = "nodes"
        [[jobs]]                     # one job ...
        id = "A"; account = "alice"; user = "alice"; nodes = 200
        submit = 0; run = "1h"; limit = "2h"
        [[batches]]                  # ... or many alike: ids given, or count + prefix
        ids = ["M", "N", "P"]; account = "bob"; nodes = 50; submit = 0; run = 3600; limit = 7200

    Times are seconds or durations ("2h", "1d"). ``user`` defaults to the account, ``limit``
    to ``run``. Allocations must use unit "nodes" (the simulator counts nodes).
    """
    if not isinstance(data, Mapping):
        raise ConfigError("scenario must be a table")
    name = str(data.get("name", name))
    try:
        nodes = int(data["nodes"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"scenario {name!r}: 'nodes' (machine size) is required and must be an integer") from None
    allocs = parse_allocations(data.get("allocations"))
    bad = [a.account for a in allocs.values() if a.unit != "nodes"]
    if bad:
        raise ConfigError(f"scenario {name!r}: allocations {bad} must use unit 'nodes' in the simulator")
    jobs: list[SimJob] = []

    def make(spec: Mapping[str, Any], job_id: str, where: str) -> SimJob:
        acct = str(spec.get("account", spec.get("user", "")))
        user = str(spec.get("user", acct))
        try:
            size = int(spec["nodes"])
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"scenario {name!r}: {where}: 'nodes' is required (integer)") from None
        if size < 1 or size > nodes:
            raise ConfigError(f"scenario {name!r}: {where}: nodes={size} outside 1..{nodes}")
        if "run" not in spec:
            raise ConfigError(f"scenario {name!r}: {where}: 'run' (run time) is required")
        run = _dur(spec["run"], f"{name}:{where}")
        limit = _dur(spec.get("limit", spec["run"]), f"{name}:{where}")
        submit = float(_dur(spec.get("submit", 0), f"{name}:{where}")) if spec.get("submit", 0) else 0.0
        return SimJob(job_id, submit, min(run, limit), limit, size, user, acct)

    for i, spec in enumerate(data.get("jobs", []) or []):
        jobs.append(make(spec, str(spec.get("id", f"j{i + 1}")), f"jobs[{i}]"))
    for b, spec in enumerate(data.get("batches", []) or []):
        ids = spec.get("ids")
        if ids is None:
            count = int(spec.get("count", 0))
            prefix = str(spec.get("prefix", spec.get("account", "b")))
            ids = [f"{prefix}{k + 1}" for k in range(count)]
        for jid in ids:
            jobs.append(make(spec, str(jid), f"batches[{b}]"))
    ids_seen: set[str] = set()
    for j in jobs:
        if j.job_id in ids_seen:
            raise ConfigError(f"scenario {name!r}: duplicate job id {j.job_id!r}")
        ids_seen.add(j.job_id)
    # keep the file's order for equal submit times (stable sort in Workload)
    return Workload(name=name, nodes=nodes, jobs=jobs, allocations=allocs, meta={"source": "scenario"})


# --------------------------------------------------------------------------- Steffen section 9

@dataclass(frozen=True, slots=True)
class Section9Params:
    """Steffen (2019) section 9.2, with the gaps the paper leaves filled in (see docs/simulator.md).

    From the paper: 1400 nodes; days 1-7: Alice 12 x 250-node jobs/day, Bob 6 x 65-node
    jobs/day; day 7: Chris one 750-node job; run time uniform in 70-95% of the request; empty
    machine at day 1 with the first batches submitted at once.
    Not in the paper (our choice): the request (24 h for every job: the paper's Blue Waters had
    a 48 h maximum; 24 h reproduces its Bob and Chris latencies), the batches arriving at the
    start of each day, Chris with the day-7 batch, and the allocations (targets in nodes).
    """

    nodes: int = 1400
    days: int = 7
    alice_jobs_per_day: int = 12
    alice_nodes: int = 250
    bob_jobs_per_day: int = 6
    bob_nodes: int = 65
    chris_day: int = 7
    chris_nodes: int = 750
    request_s: float = 24 * HOUR
    run_fraction: tuple[float, float] = (0.70, 0.95)
    # target occupancies (nodes); awards are derived as target/2 x period
    alice_target: float = 700.0
    bob_target: float = 260.0
    chris_target: float = 750.0
    period: str = "14d"


def section9_workload(seed: int = 0, params: Section9Params | None = None) -> Workload:
    """The section-9 experiment's jobs for one seed (``random.Random(seed)``)."""
    p = params or Section9Params()
    rng = random.Random(seed)
    lo, hi = p.run_fraction
    jobs: list[SimJob] = []

    def job(jid: str, user: str, size: int, submit: float) -> SimJob:
        return SimJob(jid, submit, round(p.request_s * rng.uniform(lo, hi)), p.request_s, size, user, user)

    for day in range(1, p.days + 1):
        t = (day - 1) * DAY
        for k in range(p.alice_jobs_per_day):
            jobs.append(job(f"a{day}.{k + 1}", "alice", p.alice_nodes, t))
        for k in range(p.bob_jobs_per_day):
            jobs.append(job(f"b{day}.{k + 1}", "bob", p.bob_nodes, t))
        if day == p.chris_day:
            jobs.append(job("c1", "chris", p.chris_nodes, t))
    period_h = _dur(p.period, "section9") / HOUR
    allocs = parse_allocations(
        {
            name: {"award": target / 2.0 * period_h, "period": p.period, "unit": "nodes", "factor": 2}
            for name, target in (("alice", p.alice_target), ("bob", p.bob_target), ("chris", p.chris_target))
        }
    )
    return Workload(
        name=f"steffen-s9-seed{seed}",
        nodes=p.nodes,
        jobs=jobs,
        allocations=allocs,
        meta={"source": "section9", "seed": seed, "params": {k: getattr(p, k) for k in p.__slots__}},
    )


def excerpt_swf(src: str | Path, dst: str | Path, n: int) -> None:
    """Write the header and the first ``n`` job records of an SWF log to ``dst`` (gz by suffix)."""
    s, d = Path(src), Path(dst)
    sopen = gzip.open if s.suffix == ".gz" else open
    dopen = gzip.open if d.suffix == ".gz" else open
    count = 0
    with sopen(s, "rt") as fi, dopen(d, "wt") as fo:  # type: ignore[operator]
        for line in fi:
            if line.startswith(";"):
                fo.write(line)
                continue
            if count >= n:
                break
            fo.write(line)
            count += 1
