"""Partitions in the start estimate (forecast/start.py; issue #32 item 4): a layer around `start.estimate`.

Jobs of partitions on different nodes never compete for CPUs. The partitions are grouped into
pools, the connected components of "shares a node" (sinfo -N's node-partition pairs), and a
pending job that lists partitions of several pools (`-p a,b`) joins them. Each pool is played on
its own: its nodes' CPUs (and GPUs), its running and pending jobs, the reservations on its nodes
(a reservation across pools: its CPUs shared by its nodes' CPUs in each), its largest node for the
backfill's whole-node reservations, and under PrivateData=jobs the CPUs others hold on its nodes.
With one pool (one partition, or all over the same nodes) it is `start.estimate` itself, untouched.

Approximations, said in the notes: partitions that share some nodes but not all are one pool (as if
each could use all of the pool's nodes); fair-share couples pools (a user's job in one lowers their
priority in the others): the running jobs of every pool are charged in each pool's passes (as
jobs of no CPUs there), the jobs the estimate starts only in their own pool's.

Pure but for `read_live`, which runs `SINFO_PARTS_ARGS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from fscontrol.errors import ParseError

# each node once per partition it is in, hidden partitions too (-a): its CPUs (A/I/O/T), GPUs and the
# partition's state (up, down, drain, inact)
SINFO_PARTS_ARGS = ("sinfo", "-a", "-h", "-N", "-o", "%N|%P|%C|%G|%a")
# partitions whose pending jobs slurmctld does not start (DOWN: queued, not started; INACTIVE: neither);
# UP and DRAIN (no new jobs queued, the pending ones started) do
_NOT_STARTING = {"down", "inact", "inactive"}
_STATES = {"up", "drain", *_NOT_STARTING}


@dataclass(slots=True)
class Node:
    cpus: int  # the CPUs jobs may use: sinfo's total less its "other" (a DOWN or DRAINED node's)
    alloc: int
    gpus: int
    parts: set[str]
    stopped: set[str] = field(default_factory=set)  # of its partitions, those DOWN or INACTIVE


def parse_nodes(text: str, command: str = " ".join(SINFO_PARTS_ARGS)) -> dict[str, Node]:
    """node -> its usable CPUs, CPUs allocated now, GPUs and partitions, from `SINFO_PARTS_ARGS`.
    Anything doubtful is a ParseError (the estimate is not made on it): a line of another shape,
    CPUs that are not four counts adding up (A + I + O = T), an empty name, an unknown partition
    state, no node at all."""
    from fscontrol.forecast.startqueue import gpu_count

    out: dict[str, Node] = {}
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        f = [x.strip() for x in line.split("|")]
        if len(f) != 5:
            raise ParseError(command, f"{len(f)} fields, expected 5", no, line)
        name, part, cpus, gres, state = f
        part = part.rstrip("*")
        if not name or not part:
            raise ParseError(command, "a node or partition without a name", no, line)
        try:
            a, i, o, t = (int(x) for x in cpus.split("/"))
        except ValueError:
            raise ParseError(command, "CPUs not A/I/O/T", no, line) from None
        if min(a, i, o, t) < 0 or a + i + o != t:
            raise ParseError(command, "CPUs A/I/O/T that do not add up", no, line)
        if state.lower() not in _STATES:
            raise ParseError(command, f"unknown partition state {state!r}", no, line)
        n = out.setdefault(name, Node(t - o, a, gpu_count(gres) if t > o else 0, set()))  # a DOWN node's GPUs neither
        n.parts.add(part)
        if state.lower() in _NOT_STARTING:
            n.stopped.add(part)
    if not out:
        raise ParseError(command, "no nodes listed")
    return out


_DIGITS = re.compile(r"[0-9]+\Z")


def expand_hostlist(s: str) -> list[str]:
    """Slurm's host list ("n[1-3,05],gpu1") as names (scontrol show hostnames' answer); a list it
    cannot read (an unclosed bracket, a range that runs down, a bound not a number) is a ParseError."""
    depth = 0
    for ch in s or "":
        depth += (ch == "[") - (ch == "]")
        if depth not in (0, 1):
            raise ParseError("scontrol -o show reservation", "a host list with unbalanced brackets", None, s)
    if depth:
        raise ParseError("scontrol -o show reservation", "a host list with unbalanced brackets", None, s)
    out: list[str] = []
    for item in re.findall(r"[^,\[]*(?:\[[^\]]*\][^,\[]*)*", s or ""):
        if not item:
            continue
        m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", item)
        if not m:
            out.append(item)
            continue
        pre, ranges, rest = m.groups()
        for r in ranges.split(","):
            lo, sep, hi = r.partition("-")
            if not _DIGITS.match(lo) or (sep and (not _DIGITS.match(hi) or int(hi) < int(lo))):
                raise ParseError("scontrol -o show reservation", f"a host range {r!r} that is not LO-HI", None, s)
            nums = [lo] if not hi else [str(k).zfill(len(lo)) for k in range(int(lo), int(hi) + 1)]
            out.extend(pre + x + tail for x in nums for tail in (expand_hostlist(rest) if rest else [""]))
    return out


@dataclass(frozen=True, slots=True)
class Pool:
    parts: tuple[str, ...]  # its partitions, sorted
    nodes: frozenset[str]
    cpus: int
    node_cpus: int  # its largest node's
    alloc: int  # CPUs allocated now on its nodes
    gpus: int
    partial: tuple[str, ...] = ()  # its partitions over only some of its nodes


def pools(nodes: Mapping[str, Node], jobs: Sequence) -> tuple[list[Pool], dict[str, int], str]:
    """(the pools, each job's pool by job id, "" or why the jobs are played as one pool: a job of a
    partition sinfo does not list). Only the partitions of `jobs` count: one without jobs joins no
    others (an "all" partition over every node, a DOWN one), its nodes those of the pools."""
    parent: dict[str, str] = {}
    of_node: dict[str, set[str]] = {}  # partition -> its nodes
    for name, n in nodes.items():
        for p in n.parts:
            of_node.setdefault(p, set()).add(name)

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    stopped = {p for n in nodes.values() for p in n.stopped}
    first: dict[str, str] = {}  # each job's partition that names its pool
    for j in jobs:
        ps = [p for p in j.partition.split(",") if p]
        unknown = [p for p in ps if p not in of_node]
        if unknown or not ps:
            return [], {}, f"job {j.job_id}'s partition {j.partition or '(none)'} is not in sinfo's nodes"
        if j.state == "PENDING":  # a pending job of `a,b` with b DOWN or INACTIVE starts in a alone
            ps = [p for p in ps if p not in stopped] or ps
        first[j.job_id] = ps[0]
        for p in ps:
            parent.setdefault(p, p)
        for p in ps[1:]:
            union(ps[0], p)
    for n in nodes.values():
        mine = [p for p in n.parts if p in parent]
        for p in mine[1:]:
            union(mine[0], p)
    roots = sorted({find(p) for p in parent})
    idx = {r: k for k, r in enumerate(roots)}
    out = []
    for r in roots:
        parts = tuple(sorted(p for p in parent if find(p) == r))
        names = set().union(*(of_node[p] for p in parts))
        mine = [nodes[x] for x in names]
        partial = tuple(p for p in parts if len(of_node[p]) < len(names))
        out.append(Pool(parts, frozenset(names), sum(n.cpus for n in mine), max(n.cpus for n in mine),
                        sum(n.alloc for n in mine), sum(n.gpus for n in mine), partial))
    return out, {j.job_id: idx[find(first[j.job_id])] for j in jobs}, ""


def pool_reservations(resvs: Sequence, pool: Pool, nodes: Mapping[str, Node]) -> list:
    """The reservations (slurm/resv.Reservation) on `pool`'s nodes, each with the CPUs it holds there:
    all of them when its nodes are all the pool's, else its CPUs x its nodes' CPUs there / all its
    nodes' (rounded up); one with no node list in every pool."""
    out = []
    for r in resvs:
        names = expand_hostlist(r.nodes)
        if not names:
            out.append(r)
            continue
        inside = [x for x in names if x in pool.nodes]
        if len(inside) == len(names):
            out.append(r)
        elif inside:
            whole = sum(nodes[x].cpus for x in names if x in nodes) or 1
            out.append(replace(r, cpus=math.ceil(r.cpus * sum(nodes[x].cpus for x in inside) / whole)))
    return out


def estimate_pools(jobs: Sequence, nodes: Mapping[str, Node], estimate, *, now: float, total_cpus: int, sched,
                   hidden_cpus: int = 0, private: bool = False, users: set[str] | None = None,
                   job_ids: set[str] | None = None, total_gpus: int = 0, resvs: Sequence = (),
                   windows: Sequence = (), skipped: Mapping[str, str] | None = None, fairshare=None,
                   **kw) -> tuple[list, list[str]]:
    """(`estimate`'s answer, notes) with each pool of partitions played on its own (the module's
    docstring); `estimate` is start.estimate (given: start calls this module). `total_cpus`,
    `hidden_cpus`, `total_gpus`, `windows`, `skipped`: the cluster's, as start.read_live reads them,
    used as they are with one pool; `resvs`: the reservations (slurm/resv.py), cut by pool with
    several; `private`: PrivateData=jobs hides others' jobs (each pool's hidden CPUs: its nodes'
    allocated CPUs less the jobs seen there)."""
    from fscontrol.forecast import resvplan
    from fscontrol.forecast.startdeps import played as plays

    deps = kw.get("deps") or {}

    def played(j) -> bool:  # start.estimate's test: the pending jobs it plays (the others get a reason)
        return j.state != "PENDING" or plays(j, windows, deps, kw.get("limits") is not None)

    jobs = _by_partition_state(jobs, nodes)
    part = {j.job_id: j.partition for j in jobs}
    live = [j for j in jobs if played(j)]
    groups, of, why = pools(nodes, live) if nodes else ([], {}, "sinfo listed no nodes")
    if not groups or (len(groups) == 1 and groups[0].nodes == frozenset(nodes)):
        # one pool of every node: start.estimate itself, as before
        ests = estimate(jobs, now=now, total_cpus=total_cpus, sched=sched, hidden_cpus=hidden_cpus, users=users,
                        job_ids=job_ids, total_gpus=total_gpus, windows=windows, skipped=skipped,
                        fairshare=fairshare, **kw)
        notes = [f"partitions played as one pool of CPUs: {why}"] if why and len({*part.values()}) > 1 else []
        if groups and groups[0].partial:
            notes.append(_partial_note(groups[0]))
        for e in ests:
            e.extra["partition"] = part.get(e.job_id)
        return ests, notes
    # the pending jobs it does not play get their reason (no CPUs, no time): as start.estimate gives it
    rest = [j for j in jobs if not played(j)]
    ests: list = estimate(rest, now=now, total_cpus=total_cpus, sched=sched, users=users, job_ids=job_ids,
                          total_gpus=total_gpus, windows=windows, skipped=skipped, **kw) if rest else []
    for e in ests:
        e.extra["partition"] = part.get(e.job_id)
    jobs = live
    run = [j for j in jobs if j.state in ("RUNNING", "COMPLETING")]
    run_ids = {j.job_id for j in run}
    held = ""
    # the pools played: those with a pending job asked about (the others' estimates are not asked for)
    played = {of[j.job_id] for j in jobs if j.state == "PENDING" and (users is None or j.user in users)
              and (job_ids is None or j.job_id in job_ids)}
    if fairshare is not None:
        from fscontrol.forecast.startfs import MAX_PENDING

        # each pool played runs its own backfill cycles through the horizon, so the cost grows with
        # the pools (ten pools of 1,000 pending jobs each: 2.3 s with fair-share charged, one pool of
        # the 10,000: 1.2 s): charged only where pending jobs x pools played stays within MAX_PENDING
        pending = sum(j.state == "PENDING" and of[j.job_id] in played for j in jobs)
        if len(played) > 1 and pending * len(played) > MAX_PENDING:
            fairshare = None
            held = (f"fair-share held at its present value: {pending:,} jobs pending in the {len(played)} pools played "
                    f"apart, {pending * len(played):,} (pending x pools) over the {MAX_PENDING:,} for which it is "
                    "recomputed at each pass (the cost)")
    if fairshare is not None:  # the other pools' running jobs charge fair-share too (no CPUs here)
        model, billing = fairshare
        billing = {**billing, **{j.job_id: billing.get(j.job_id, float(j.cpus)) for j in run}}
        fairshare = (model, billing)
    notes = [f"partitions played on their own nodes, {len(groups)} pool(s) of partitions over separate nodes: "
             + "; ".join(f"{','.join(g.parts)} ({g.cpus} CPUs)" for g in groups)
             + (" (fair-share: every pool's running jobs are charged in each, the jobs the estimate starts only in "
                "their own pool's)" if fairshare is not None else "")]
    notes += [_partial_note(g) for g in groups if g.partial]
    if held:
        notes.append(held)
    if private:
        notes.append("PrivateData=jobs, by pool: the CPUs counted busy in each are those allocated on its nodes "
                     "less your own jobs there")
    for k, g in enumerate(groups):
        if k not in played:
            continue
        mine = [j for j in jobs if of[j.job_id] == k]
        hidden = max(0, g.alloc - sum(j.cpus for j in mine if j.job_id in run_ids)) if private else 0
        # the other pools' running jobs with no CPUs here: fair-share charges them, and a job here may wait
        # on one (a dependency: its end is known)
        ghosts = [replace(j, cpus=0, gpus=0) for j in run if of[j.job_id] != k] if (fairshare is not None or deps) else []
        wins, skip, _ = resvplan.windows(pool_reservations(resvs, g, nodes), now)
        got = estimate(mine + ghosts, now=now, total_cpus=g.cpus, sched=replace(sched, node_cpus=g.node_cpus),
                       hidden_cpus=hidden, users=users, job_ids=job_ids, total_gpus=g.gpus if total_gpus else 0,
                       windows=wins, skipped={**(skipped or {}), **skip}, fairshare=fairshare, **kw)
        for e in got:
            e.extra["partition"] = part.get(e.job_id)
            e.extra["pool"] = ",".join(g.parts)
        ests += got
    return ests, notes


def _by_partition_state(jobs: Sequence, nodes: Mapping[str, Node]) -> list:
    """The pending jobs' reasons as the partitions' states make them: one whose every partition is
    DOWN or INACTIVE waits for that (PartitionDown), whatever squeue's reason still says (slurmctld
    updates it when it reaches the job); one of `a,b` with b DOWN and a up is started in a, even
    while squeue says PartitionDown (its reason flips from pass to pass: seen on the testbed)."""
    from fscontrol.forecast.startqueue import waiting

    stopped = {p for n in nodes.values() for p in n.stopped}
    if not stopped:
        return list(jobs)
    out = []
    for j in jobs:
        ps = [p for p in j.partition.split(",") if p]
        if j.state == "PENDING" and ps:
            down = all(p in stopped for p in ps)
            if down and j.reason != "PartitionDown" and waiting(j.reason):
                j = replace(j, reason="PartitionDown")
            elif not down and j.reason == "PartitionDown":
                j = replace(j, reason="Priority")
        out.append(j)
    return out


def _partial_note(g: Pool) -> str:
    return (f"partition(s) {', '.join(g.partial)} over only some of the nodes of the pool {','.join(g.parts)}: "
            "played as one pool, as if each of its partitions could use all of them")


def read_live(source, jobs: Sequence, estimate, **kw) -> tuple[list, list[str]]:
    """`estimate_pools` over the nodes `SINFO_PARTS_ARGS` lists on `source` (LiveSlurm)."""
    return estimate_pools(jobs, parse_nodes(source.run(SINFO_PARTS_ARGS).stdout), estimate, **kw)
