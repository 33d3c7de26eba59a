"""Association and QOS limits in the start estimate (issue #32 item 4): model/acctpolicy.py's
rules played through the plan.

A job squeue shows held by one of these limits (`REASONS`) is played only when the counters agree it
is held now; else (usage of jobs PrivateData hides, a limit not modelled, ...) it keeps the reason.
A job's limits are its QOS's and its partition's QOS's, in slurmctld's order (acctpolicy.qos_order).
Under PrivateData=jobs only the user's own limits are counted (MaxJobs, their association's Grp
limits, MaxJobsPU, MaxTRESPU): the others count jobs the user cannot see. `Gate` is a plan's view of
them (held jobs parked until their limit has room).

Pure but `read` (which runs sacctmgr and squeue).
"""

from __future__ import annotations

import heapq
import math
from bisect import insort
from itertools import filterfalse
from collections.abc import Mapping, Sequence

from fscontrol.model.acctpolicy import REASONS, Counts, Limits, counts  # noqa: F401  (REASONS: start.X)

# a job squeue shows held by a limit of REASONS that the limits read do not hold now
NOT_SEEN = ("the limits read do not hold it now (running jobs hidden from you, or a limit not modelled, may): "
            "not estimated")
# where slurmctld enforces limits but neither a shown reason nor a pending job's QOS led to reading them
ASSOC_NOT_READ = ("association limits not read: no pending job shows a limit's reason and no pending job's QOS (or its "
                  "partition's) sets a limit, so the associations' (an account's GrpTRES or GrpJobs, a user's MaxJobs) are "
                  "not read (every association, on every estimate); where one applies, a user's later jobs may start "
                  "later than estimated")
# every job's QOS (pending and running: the running ones are the usage)
SQUEUE_QOS_ARGS = ("squeue", "-a", "-h", "-t", "PD,R,CG", "-o", "%i|%q")


class Gate:
    """A plan's view of the limits (Counts, nothing in use to begin with). A job found held by a
    limit stays held while that limit's use has not gone down since (starts only add to it): it is
    not tested anew at each event, and it is parked under that limit (the cost at 10,000 pending).
    `ended` notes the limits a job's end gave room; `candidates` / `next_free` walk their parked
    jobs in the plan's order for its first-fit part past bf_window, as far as each limit's room goes
    (the jobs past it stay held, untested)."""

    __slots__ = ("c", "hx", "hd", "fa", "adds", "parked", "groups", "head", "incoming", "downs", "opened", "key", "cheld",
                 "cwait", "act", "act_gen", "cgen", "act_cycles", "act_of", "rank")

    def __init__(self, counts: Counts) -> None:
        self.c = counts.fresh()
        n = len(self.c.cpus)
        self.hx = [-1] * n  # job -> the limit that held it (-1: none)
        self.hd = [0] * n  # job -> that limit's downs then
        self.fa = [-1] * n  # job -> `adds` when it was found not held (it stays so until a start adds use)
        self.adds = 0  # starts counted so far
        # (limit, CPUs; 0 under a limit on running jobs alone) -> the jobs it held, in the plan's order
        self.parked: dict[tuple[int, int], list[int]] = {}
        self.groups: dict[int, set[int]] = {}  # limit -> the CPUs of its lists
        self.head: dict[tuple[int, int], int] = {}  # (limit, CPUs) -> its list's first entry that may still be held
        self.incoming: dict[int, list[int]] = {}  # limit -> jobs parked since its list was last walked
        self.downs = [0] * len(self.c.capj)  # each limit's use gone down so far (job ends)
        self.opened: set[int] = set()  # limits given room since the last `candidates`
        self.key = None  # the plan's order of the jobs (None: by index)
        self.cheld: set[int] = set()  # jobs a limit on running jobs holds (backfill's pass-by), until it has room
        self.cwait: dict[int, list[int]] = {}  # limit -> those of cheld it holds
        # a backfill cycle's read of the queue (`active`): the waiting jobs not in cheld, in the
        # queue's order (and some since held or started, passed by as read); `act_gen` counts its
        # makings (each leaves out the cheld), `cgen` the making a job joined cheld under
        self.act: list[int] | None = None
        self.act_of = 0  # the queue's order it follows (`active`)
        self.rank = None  # then: job -> its place (None: by index)
        self.act_gen = 0
        self.cgen = [0] * n
        self.act_cycles = 0

    def over(self, i: int) -> bool:
        """Whether pending job i is held now."""
        h = self.hx[i]
        if h >= 0:
            if self.downs[h] == self.hd[i]:
                return True
        elif self.fa[i] == self.adds:
            return False
        x = self.c.blocking(i)
        self.hx[i] = x
        if x < 0:
            self.fa[i] = self.adds
            return False
        if h != x:  # (merged in when x's list is next walked; a job let go and held again by x may be there twice)
            self.incoming.setdefault(x, []).append(i)
        self.hd[i] = self.downs[x]
        return True

    def pre(self, i: int) -> bool:
        """Whether a limit on running jobs holds pending job i now (backfill passes it by before it
        counts towards bf_max_job_test: acctpolicy.Counts.count_blocking); one found so is in `cheld`
        until that limit has room (a cycle skips those in C: the cost of a queue of held jobs).
        `over` and the count check in one call (a cycle asks it of every job it reads)."""
        hx = self.hx
        h = hx[i]
        c = self.c
        if h >= 0:
            fresh = self.downs[h] != self.hd[i]
        elif self.fa[i] == self.adds:
            return False
        else:
            fresh = True
        if fresh:  # as `over` tests it anew
            cp, uj, uc = c.cpus[i], c.usej, c.usec
            x = -1
            for y, cj, cc in c.chk[i]:
                if uj[y] >= cj or uc[y] + cp > cc:
                    x = y
                    break
            hx[i] = x
            if x < 0:
                self.fa[i] = self.adds
                return False
            if h != x:
                self.incoming.setdefault(x, []).append(i)
            self.hd[i] = self.downs[x]
        uj = c.usej
        for y, cj, _ in c.chk[i]:
            if uj[y] >= cj:
                self.cheld.add(i)
                self.cgen[i] = self.act_gen
                self.cwait.setdefault(y, []).append(i)
                return True
        return False

    def active(self, waiting: Sequence[int], started, order: int) -> Sequence[int]:
        """What a backfill cycle reads of `waiting` (its pending jobs in the queue's order, some
        started): those not in cheld, kept between cycles (a queue mostly held by limits on running
        jobs was read whole at each cycle: 0.5 ms at 10,000 pending, ~1,500 cycles a plan); a job
        let go from cheld is put back in its place. The caller still passes by the started and the
        cheld (those held since it was made). `order`: how many times a priority pass has re-sorted
        the queue (0: in index order); after one it is sorted anew (the same jobs), and kept only
        while most of the queue is in cheld (else `waiting` itself: a cycle reads ~500 jobs of it,
        fewer than a sort)."""
        if order and len(self.cheld) * 2 < len(waiting):
            self.act = None
            return waiting
        act = self.act
        if act is None or order != self.act_of:
            if order:  # each job's place in the new order (numpy's scatter: 10,000 jobs in ~0.1 ms)
                import numpy as np

                w = np.asarray(waiting, dtype=np.int64)
                r = np.zeros(len(self.hx), dtype=np.int64)
                r[w] = np.arange(len(w), dtype=np.int64)
                self.rank = r.tolist().__getitem__
            else:
                self.rank = None
            src = waiting if act is None else act  # (a re-sort moves the jobs, the same ones)
            act = list(filterfalse(self.cheld.__contains__, filterfalse(started.__contains__, src)))
            if src is not waiting:
                act.sort(key=self.rank)
            self.act = act
            self.act_of = order
            self.act_gen += 1
            self.act_cycles = 0
        elif self.act_cycles >= 16:  # those held or started since, out
            act = self.act = list(filterfalse(self.cheld.__contains__, filterfalse(started.__contains__, act)))
            self.act_gen += 1
            self.act_cycles = 0
        self.act_cycles += 1
        return act

    def count_blocked(self, i: int) -> bool:
        return self.c.count_blocked(i)

    def add(self, k: int) -> None:
        self.c.add(k)
        self.adds += 1

    def ended(self, k: int) -> None:
        """Job key k ended: its limits have room again."""
        self.c.add(k, -1)
        for x in self.c.of[k]:
            self.downs[x] += 1
            w = self.cwait.pop(x, None)
            if w:
                self.cheld.difference_update(w)
                act = self.act
                if act is not None:  # back into the cycles' read, at their place in the queue (by index)
                    g, cgen = self.act_gen, self.cgen
                    for i in w:
                        if cgen[i] != g:  # (left out of it since it joined cheld)
                            cgen[i] = g
                            insort(act, i, key=self.rank)
            if self.groups.get(x) or self.incoming.get(x):
                self.opened.add(x)

    def _merge(self, x: int, key) -> None:
        """x's jobs parked since, into its lists by CPUs (each job once, those no longer held by x out)."""
        hx, cpus = self.hx, self.c.cpus
        new = self.incoming.pop(x, [])
        groups = self.groups.setdefault(x, set())
        by: dict[int, list[int]] = {}
        sized = self.c.capc[x] != math.inf  # (a limit on running jobs alone: one list, its jobs' CPUs do not matter)
        for i in new:
            if hx[i] == x:
                by.setdefault(cpus[i] if sized else 0, []).append(i)
        for cc in (groups | set(by)) if key is not self.key else set(by):
            g = (x, cc)
            lst = self.parked.get(g, [])[self.head.get(g, 0):]
            self.parked[g] = sorted({i for i in (*lst, *by.get(cc, ())) if hx[i] == x}, key=key)
            self.head[g] = 0
            groups.add(cc)

    def reorder(self, key) -> None:
        """The plan's order is now `key` (a rank by job): the parked lists sorted by it."""
        for x in set(self.groups) | set(self.incoming):
            self._merge(x, key)
        self.key = key

    def candidates(self) -> list[tuple[int, int, int, int]]:
        """A heap over the parked jobs of the limits given room since the last call, each limit's by
        their CPUs (only those that fit in its room are walked): (rank, limit, CPUs, position)."""
        out = []
        c = self.c
        for x in self.opened:
            if x in self.incoming:
                self._merge(x, self.key)
            if c.usej[x] >= c.capj[x]:
                continue
            room = c.capc[x] - c.usec[x]
            for cc in self.groups.get(x, ()):
                if cc > room:
                    continue
                lst = self.parked[(x, cc)]
                p = self.head.get((x, cc), 0)
                if p < len(lst):
                    out.append((lst[p] if self.key is None else self.key(lst[p]), x, cc, p))
        self.opened.clear()
        heapq.heapify(out)
        return out

    def next_free(self, heap: list[tuple[int, int, int, int]], before: float) -> int:
        """The next job of `heap` (candidates'), ranked before `before`, that no limit holds now, or -1;
        those a limit still holds stay parked (re-parked under another limit that holds them)."""
        c = self.c
        while heap and heap[0][0] < before:
            _, x, cc, p = heapq.heappop(heap)
            g = (x, cc)
            lst = self.parked[g]
            i = lst[p]
            if self.hx[i] != x:  # let go since: out of the list's live part if at its head
                if self.head.get(g, 0) == p:
                    self.head[g] = p + 1
                if p + 1 < len(lst):
                    heapq.heappush(heap, (lst[p + 1] if self.key is None else self.key(lst[p + 1]), x, cc, p + 1))
                continue
            if c.usej[x] >= c.capj[x] or c.usec[x] + cc > c.capc[x]:
                continue  # no room left in x for these: it holds the rest of this list (not walked)
            if p + 1 < len(lst):
                heapq.heappush(heap, (lst[p + 1] if self.key is None else self.key(lst[p + 1]), x, cc, p + 1))
            if not self.over(i):
                return i
        return -1


def bind(limits: Limits, qos: Mapping[str, str], pending: Sequence, running: Sequence,
         hidden: bool = False) -> tuple[Counts | None, dict[str, str]]:
    """(the counters of a plan of `pending` then `running` (StartJob), or None when no limit
    applies; {pending job id: why it keeps its reason} for the jobs squeue shows held by a limit
    of REASONS that the counters do not hold now). `qos`: job id -> its QOS (squeue %q); `hidden`:
    PrivateData=jobs (only the user's own limits are counted)."""
    both = [*pending, *running]
    # (a COMPLETING job counts towards none: slurmctld gives its limits back as it ends, deallocate_nodes'
    # acct_policy_job_fini, before its epilog)
    keys = [(j.account, j.user, qos.get(j.job_id, "")) if j.state != "COMPLETING" else ("", "", "") for j in both]
    c = counts(limits, keys, [j.cpus for j in both], hidden)
    if c is None:
        return None, {j.job_id: NOT_SEEN for j in pending if j.reason in REASONS}
    n = len(pending)
    for k in range(len(running)):
        c.add(n + k)
    held = {}
    for i, j in enumerate(pending):
        never = c.never(i)
        if never:
            held[j.job_id] = f"never starts under its limits: {never}"
        elif j.reason in REASONS and not c.holds(i, j.reason):
            held[j.job_id] = NOT_SEEN
    return c, held


def read(source, pairs: Mapping[str, str], jobs: Sequence) -> tuple[Limits | None, dict[str, str], str, dict[str, str]]:
    """(the limits, each job's QOSes as their limits apply (acctpolicy.qos_order: its partition's QOS and
    its own), a note, {pending job id: why it is not estimated}) on `source` (LiveSlurm), read where
    a pending job is held by one of REASONS, or (AccountingStorageEnforce with limits) a pending job's
    QOS or its partition's sets a limit: such a limit holds jobs before any shows its reason (a
    user's jobs behind a full node, pending with Priority, that MaxJobsPU=1 will start one at a
    time; an outside tester's case). Their cost: scontrol show partition, sacctmgr's QOSes and
    squeue's QOS of each job, then the associations (100,000 at a large site) only where a limit
    is found. A
    Relative QOS's limits are made absolute against its partition's CPUs (acctpolicy.relative). A
    job of several partitions whose QOSes differ is not estimated (slurmctld tries each partition
    with its own QOS; the plan plays one). A failed or garbled command leaves the limits out (the
    jobs keep their reasons) and the note says so."""
    from fscontrol.errors import ParseError, SlurmCommandError
    from fscontrol.forecast.startqueue import parse_job_qos
    from fscontrol.model.acctpolicy import enforces_limits, model, qos_order, relative
    from fscontrol.slurm import parse, tres
    from fscontrol.slurm.partitions import PARTITIONS_ARGS, parse_partitions

    pend = [j for j in jobs if j.state == "PENDING"]
    held = any(j.reason in REASONS for j in pend)
    if not pend or not (held or enforces_limits(pairs.get("AccountingStorageEnforce", ""))):
        return None, {}, "", {}  # (slurmctld enforces none of them without AccountingStorageEnforce=limits)
    try:
        parts = parse_partitions(source.run(PARTITIONS_ARGS).stdout)
        part_qos = {p.name: p.qos for p in parts}
        text, cmd = source.run(tres.QOS_LIMITS_ARGS).stdout, " ".join(tres.QOS_LIMITS_ARGS)
        qoss = tres.parse_qos_limits(text, cmd)
        limited = {q.account.lower() for q in qoss if q.jobs or any(q.tres.values())}
        if not held and not limited:
            return None, {}, ASSOC_NOT_READ, {}
        jq = parse_job_qos(source.run(SQUEUE_QOS_ARGS).stdout, " ".join(SQUEUE_QOS_ARGS))
        if not held and not any(q.lower() in limited for j in pend
                                for q in (jq.get(j.job_id, ""), *(part_qos.get(x, "") for x in j.partition.split(",")))):
            return None, {}, ASSOC_NOT_READ, {}  # (no pending job's QOS sets a limit: the associations, 100k at a large site)
        over = parse.parse_qos_over_part(text, cmd)
        rel = parse.parse_qos_flagged(text, "Relative", cmd)
        assocs = tres.parse_assoc_limits(source.run(tres.ASSOC_ARGS).stdout, pairs.get("ClusterName") or None)
    except (SlurmCommandError, ParseError) as e:
        return None, {}, f"association and QOS limits not read ({e}): the jobs they hold keep their reason", {}
    if rel:
        qoss = relative(qoss, rel, part_qos, {p.name: p.cpus for p in parts})
    qos = {j.job_id: qos_order(jq.get(j.job_id, ""), j.partition, part_qos, over) for j in jobs}
    apart = {}
    for j in pend:
        ps = [x for x in j.partition.split(",") if x]
        qs = {part_qos.get(x, "").lower() for x in ps}
        if len(qs) > 1 and qs & limited:
            apart[j.job_id] = ("its partitions' QOSes differ (" + ", ".join(f"{x}: {part_qos.get(x) or 'none'}" for x in ps)
                               + "), and slurmctld tries each partition with its own: not estimated")
    keys = {(j.account, j.user, qos[j.job_id]) for j in jobs}
    return model(assocs, qoss, keys), qos, "", apart
