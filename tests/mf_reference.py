"""An independent reference for the simulator's multifactor engine (fscontrol/sim/mfcore.py):
Slurm's priority/multifactor with classic fair-share, written plainly and slowly from the
documented algorithm, sharing none of the engine's code nor of fscontrol's model (Fair Tree's
ranking too is written again here from Slurm's fair_tree.c: `fair_tree_factors`).

What it models, in the order slurmctld does it (priority_multifactor.c `_decay_thread` and
`priority_p_job_end`; docs/simulator.md; ../DESIGN.md's Slurm facts):

* Time moves from event to event. At one time t: the jobs that end by t end (with `limits` in
  AccountingStorageEnforce their last stretch since the last pass is charged: d * size *
  f^d, d = end - max(last pass, start)); then the jobs submitted by t arrive (a priority at
  submission: age 0, F as it stands); then, if a decay pass falls at or before t, the pass; then
  one scheduling pass if anything ended, arrived or was reprioritised.
* A decay pass at t (every PriorityCalcPeriod from the first submission): every usage is
  multiplied by f^(t - last pass), f = 1 - ln2/half-life (Slurm's 0.693). Classic: the accounts'
  EffectvUsage is taken from the usage as the pass starts (decayed, nothing charged yet); then
  slurmctld walks its job list in creation order: each running job is charged dt * size * f^dt
  (dt = t - max(last pass, its start)) to its association and every ancestor, and at each user's
  first pending job the user's EffectvUsage is computed from the usage as it stands then
  (UN = own / root, UE = UN + (UE_parent - UN) * shares / level shares; at the first tier
  UE = UN), and F = 2^(-UE/NormShares/d). Fair Tree: every running job is charged, then the
  whole tree is ranked (F = rank / users). Every pending job's priority is then recomputed.
* A user whose F is needed between passes and was not computed at the last pass (a new job of
  a user who had nothing pending) gets it from the usage as it stands then, with the accounts'
  EffectvUsage as of the pass.
* Priority = w_age * min(1, age / PriorityMaxAge) + w_fs * F + w_js * size / machine, floored at
  1 and truncated to an integer. The queue is ordered by priority, then by submission order.
* Scheduling is EASY backfill: start jobs in queue order while they fit; the first that does not
  is the head; its shadow time is when enough nodes are free by the running jobs' time limits,
  and the extra nodes are those free then beyond the head's size; a later job starts now if it
  fits in the free nodes and ends (by its limit) before the shadow, or fits in the extra nodes
  (which it then uses up).

With `sched` (a fscontrol.sim.slurmsched.SlurmSched, only its fields are read), scheduling is
slurmctld's instead of EASY at every event:

* the main scheduler at every end (not at a decay pass) over the first default_queue_depth + 1 jobs
  of the queue, and every sched_interval from the first submission over all of them: jobs start in
  queue order while they fit; the first that does not ends the pass. An arrival makes a request,
  served (the main scheduler over default_queue_depth + 1 jobs) batch_sched_delay after the last
  time the background loop scheduled (a timer's full pass, which serves a request made by its
  time, or a request served), or at once if that is past; a pass at an end runs over every
  pending job, the new ones too;
* backfill every bf_interval from the first submission: for each of the first bf_max_job_test
  jobs in queue order, the earliest time T (now, the end of a running job by its limit, or the
  end of a reservation) at which the CPUs not running anything are enough for it and the
  reservations made before it in the cycle that overlap [T, T + limit] leave enough CPUs (the
  running jobs' time as the select plugin's will-run test batches them, see `will_run`): now:
  it starts (and counts as running to its limit); later, within bf_window: a reservation of its
  whole nodes (ceil(size / node CPUs) x node CPUs, at most the machine; node_cpus 0: the
  machine) from floor(T / bf_resolution) x bf_resolution (not before now) to floor((T + limit) /
  bf_resolution) x bf_resolution (at least one bf_resolution long). A cycle is skipped when
  nothing changed since the last one began, in whole seconds as backfill.c's `_more_work` compares
  them (last_job_update >= last_backfill_time): a change at the very time of the last cycle counts.
  The changes: a job's arrival, start, end or completion, a decay pass (it sets the pending jobs'
  priorities), a main pass that passes a job by behind the one that does not fit.

* with complete_s, a job's CPUs are free complete_s after its end (its usage is charged at the
  end itself); the main scheduler runs then, not at the end.

Slow on purpose: everything is recomputed from the job list at every event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fscontrol.records import ShareRow


@dataclass
class RefRun:
    start: list[float]
    end: list[float]
    trace: list[tuple[float, dict, dict]] = field(default_factory=list)  # (t - t0, usage, F) per pass


def _norm_shares(rows: list[ShareRow]) -> tuple[dict, dict, dict]:
    """(parent, level shares, NormShares) by (account, user): NormShares is the product of
    RawShares / siblings' RawShares down the tree (Slurm's classic NormShares)."""
    parent: dict = {}
    kids: dict = {}
    for r in rows:
        k = (r.account, r.user)
        if r.depth == 0:
            continue
        p = (r.parent, "")
        parent[k] = p
        kids.setdefault(p, []).append(k)
    raw = {(r.account, r.user): (r.raw_shares or 0) for r in rows}
    level = {k: sum(raw[s] for s in kids[parent[k]]) for k in parent}
    norm: dict = {("root", ""): 1.0}
    for r in rows:  # tree order: a parent before its children
        k = (r.account, r.user)
        if k in parent:
            norm[k] = norm[parent[k]] * (raw[k] / level[k] if level[k] else 0.0)
    return parent, level, norm


NO_VAL = float(0xFFFFFFFE)  # slurm.h's NO_VAL: an account with FairShare=parent's level_fs


def fair_tree_factors(rows: list[ShareRow], parent: dict, raw: dict, usage: dict) -> dict:
    """Fair Tree's F of every user association, written again from Slurm's fair_tree.c, not from
    fscontrol's model (which the engine ranks with): `_calc_assoc_fs` (S = RawShares / the
    siblings' RawShares, FairShare=parent ones left out; U = usage / the usage of the nearest
    ancestor that is not FairShare=parent; LF = S / U, 0 where S is 0, infinite where U is 0; a
    FairShare=parent user infinite, such an account NO_VAL), `_cmp_level_fs` (higher LF first,
    users before accounts on a tie, stable otherwise: qsort is not, but slurmctld's children
    lists and sshare's rows come in one order), `_count_tied_accounts` (as written, it counts the
    following users tied with an account: none, so `_merge_accounts` merges nothing) and
    `_calc_tree_fs` (the rank starts at the number of user associations and falls by one a user,
    tied users keep the rank before, an account tied with the sibling before starts its children
    tied; F = rank / users)."""
    keys = [(r.account, r.user) for r in rows]
    use_parent = {(r.account, r.user) for r in rows if r.shares_parent}

    def fs_parent(k):
        p = parent[k]
        while p in use_parent:
            p = parent[p]
        return p

    # the level an association's S is taken in: every association whose usage is measured against
    # the same ancestor (a FairShare=parent account's children share its parent's level), the
    # FairShare=parent ones left out
    fsp = {k: fs_parent(k) for k in parent}
    level_of: dict = {}
    for k, p in fsp.items():
        if k not in use_parent:
            level_of[p] = level_of.get(p, 0) + raw[k]
    level = {k: level_of.get(p, 0) for k, p in fsp.items()}
    # slurmctld's children lists are by that ancestor too (assoc_mgr: an association joins the
    # children list of its fs_assoc_ptr): a FairShare=parent account's children are its parent's
    kids: dict = {}
    for k in keys:
        if k in fsp:
            kids.setdefault(fsp[k], []).append(k)

    def level_fs(k) -> float:
        if k in use_parent:
            return math.inf if k[1] else NO_VAL
        s = raw[k] / level[k] if level[k] else 0.0
        if s == 0:
            return 0.0
        pu = usage[fs_parent(k)]
        u = usage[k] / pu if pu else 0.0
        return s / u if u else math.inf

    n = sum(1 for k in keys if k[1])
    state = {"rank": n, "rnt": n}
    out: dict = {}

    def walk(siblings: list, account_tied: bool) -> None:
        lf = {k: level_fs(k) for k in siblings}
        order = sorted(siblings, key=lambda k: (-lf[k], 0 if k[1] else 1))
        prev = NO_VAL
        i = 0
        while i < len(order):
            k = order[i]
            tied = True if (i == 0 and account_tied) else prev == lf[k]
            if k[1]:
                if not tied:
                    state["rank"] = state["rnt"]
                out[k] = state["rank"] / n
                state["rnt"] -= 1
            else:
                # `_count_tied_accounts` counts the FOLLOWING USERS tied with the account, and users
                # sort before accounts on a tie: none, so no accounts are merged; an account tied
                # with the one before starts its children tied (account_tied)
                walk(list(kids.get(k, [])), tied)
            prev = lf[k]
            i += 1

    walk(kids.get(("root", ""), []), False)
    return out


def simulate_reference(workload, prio, rows: tuple[ShareRow, ...], sched=None) -> RefRun:
    jobs = workload.jobs
    n = len(jobs)
    rows = list(rows)
    parent, level, norm = _norm_shares(rows)
    raw = {(r.account, r.user): (r.raw_shares or 0) for r in rows}
    keys = [(r.account, r.user) for r in rows]
    users = [k for k in keys if k[1]]
    root = ("root", "")
    usage = {k: 0.0 for k in keys}
    assoc = [(j.account, j.user) for j in jobs]
    f = 1.0 - 0.693 / prio.half_life_s if prio.half_life_s > 0 else 1.0
    P = prio.calc_period_s
    machine = workload.nodes
    t0 = jobs[0].submit if n else 0.0
    start = [math.inf] * n
    end = [math.inf] * n
    pending: list[int] = []
    running: list[int] = []
    prio_of: dict[int, int] = {}
    out = RefRun(start, end)

    def ancestors(k):
        chain = [k]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        return chain  # the association, its accounts, root

    def charge(k, x):
        for c in ancestors(k):
            usage[c] += x

    acct_ue: dict = {}  # the accounts' EffectvUsage as of the last pass
    user_f: dict = {}  # F computed at the last pass (or since)
    pass_usage: dict = {}  # the usage as the last pass started

    def account_ue(a):
        if a == root:
            return 1.0
        if a not in acct_ue:
            tot = pass_usage.get(root, 0.0)
            un = min(1.0, pass_usage.get(a, 0.0) / tot) if tot > 0 else 0.0
            p = parent[a]
            acct_ue[a] = un if p == root else un + (account_ue(p) - un) * (raw[a] / level[a])
        return acct_ue[a]

    def classic_f(u):
        tot = usage[root]
        un = min(1.0, usage[u] / tot) if tot > 0 else 0.0
        p = parent[u]
        ue = un if p == root else un + (account_ue(p) - un) * (raw[u] / level[u])
        return 2.0 ** (-(ue / norm[u]) / prio.damping) if norm[u] > 0 else 0.0

    def fs(u):
        if prio.fair_tree:
            return user_f.get(u, 0.0)
        if u not in user_f:
            user_f[u] = classic_f(u)
        return user_f[u]

    def priority(i, t):
        age = t - jobs[i].submit
        p = 0.0
        if prio.weight_jobsize:
            x = jobs[i].size / machine
            p += prio.weight_jobsize * ((1.0 - min(1.0, x)) if prio.favor_small else min(1.0, x))
        if prio.weight_age:
            if prio.max_age_s <= 0:
                p += prio.weight_age
            elif age > 0:
                p += prio.weight_age * min(1.0, age / prio.max_age_s)
        if prio.weight_fairshare:
            p += prio.weight_fairshare * fs(assoc[i])
        return int(p) if p >= 1 else 1

    last_pass = t0
    next_pass = t0 + P

    def do_pass(t):
        nonlocal last_pass
        dt = t - last_pass
        for k in usage:
            usage[k] *= f ** dt
        acct_ue.clear()
        user_f.clear()
        pass_usage.clear()
        pass_usage.update(usage)
        if prio.fair_tree:
            for r in sorted(running):
                d = t - max(last_pass, start[r])
                charge(assoc[r], d * jobs[r].size * f ** d)
            user_f.update(fair_tree_factors(rows, parent, raw, usage))
        else:
            seen: set = set()
            for i in range(n):  # the job list in creation order
                if i in running:
                    d = t - max(last_pass, start[i])
                    charge(assoc[i], d * jobs[i].size * f ** d)
                elif i in pending and assoc[i] not in seen:
                    seen.add(assoc[i])
                    user_f[assoc[i]] = classic_f(assoc[i])
        last_pass = t
        for i in pending:
            prio_of[i] = priority(i, t)
        out.trace.append((t - t0, {u: usage[u] for u in users}, {u: fs(u) for u in users}))

    def queue():
        return sorted(pending, key=lambda i: (-prio_of[i], i))

    completing: list = []  # (when its CPUs are free: end + complete_s, CPUs) of ended jobs (sched only)

    def free_nodes():
        return machine - sum(jobs[i].size for i in running) - sum(c for ft, c in completing)

    def main_sched(t, depth):
        """In priority order, each started while it fits; after the first that does not, none (a job
        tested behind it is passed by: a change), unless that one is young or of a low priority
        (main_min_age_s, main_min_prio: it is passed by and the pass goes on). partition_job_depth: a partition's jobs past that
        many are passed by before anything else is counted (job_scheduler.c `max_jobs_per_part`)."""
        nonlocal last_change
        pdepth = getattr(sched, "partition_job_depth", 0)
        per: dict = {}
        tested = started = 0
        failed = False
        for i in queue():
            if getattr(sched, "sched_max_job_start", 0) and started >= sched.sched_max_job_start:
                return  # sched_max_job_start: it started that many, it stops (no job passed by)
            if pdepth:
                part = (jobs[i].partition or "").split(",")[0]
                per[part] = per.get(part, 0) + 1
                if per[part] > pdepth:
                    continue
            if tested >= depth:
                return
            tested += 1
            if failed:
                last_change = t  # a job passed by behind it (Reason=Priority): a change
                return
            if jobs[i].size > free_nodes():
                # job_scheduler.c: a job younger than bf_min_age_reserve, or below bf_min_prio_reserve,
                # does not fail the partition (`fail_by_part = false`): the pass goes on
                young = sched.main_min_age_s and t - jobs[i].submit < sched.main_min_age_s
                low = sched.main_min_prio and prio_of[i] < sched.main_min_prio
                if not (young or low):
                    failed = True
                continue
            begin(i, t)
            started += 1

    def tested_by_backfill():
        """The queue's jobs a cycle tests: one is skipped when the jobs tested before it include
        the limit's count of its user (of its account and user, of its partition, of its user in
        its partition); bf_max_job_assoc, when set, replaces bf_max_job_user."""
        lim = {"user": sched.bf_max_job_user if not sched.bf_max_job_assoc else 0, "assoc": sched.bf_max_job_assoc,
               "part": sched.bf_max_job_part, "user_part": sched.bf_max_job_user_part}
        who = {"user": lambda i: jobs[i].user or "user", "assoc": lambda i: (jobs[i].account or "default", jobs[i].user or "user"),
               "part": lambda i: jobs[i].partition, "user_part": lambda i: (jobs[i].user or "user", jobs[i].partition)}
        out = []
        for i in queue():
            if len(out) == sched.bf_max_job_test:
                break
            if all(not n or sum(who[k](x) == who[k](i) for x in out) < n for k, n in lim.items()):
                out.append(i)
        return out

    def backfill(t):
        res = sched.bf_resolution_s
        busy = [(start[i] + jobs[i].estimate, jobs[i].size) for i in running]  # (end by its limit, CPUs)
        busy += completing  # (the CPUs of a completing job: free when it has completed)
        resv = []  # (begin, end, CPUs held): this cycle's reservations

        def cpus_free_at(x):
            return machine - sum(c for e, c in busy if e > x)

        def held_in(a, b):
            return sum(w for rb, re, w in resv if re > a and rb <= b)

        def will_run(s):
            """When the running jobs leave s CPUs free, as the select plugin's will-run test finds
            it (cons_common/job_test.c `_will_run_test`): now if they are free; else the jobs
            (by end) are removed in batches, the first up to E + 30 s (E: the first end rounded up
            to a multiple of 30 s), the window doubling before each next batch until the next job
            ends within it; after the batch where s CPUs are free, the end of its last job."""
            if cpus_free_at(t) >= s:
                return t
            ends = sorted(e for e, c in busy)
            e0 = ends[0] + (30 - ends[0] % 30)
            w = 30
            k = 0
            while k < len(ends):
                last = ends[k]
                k += 1
                while k < len(ends) and ends[k] <= e0 + w:
                    last = ends[k]
                    k += 1
                if cpus_free_at(last) >= s:
                    return last
                w *= 2
                while k < len(ends) and ends[k] > e0 + w:
                    w *= 2
            return None

        n_started = 0
        for i in tested_by_backfill():
            if sched.bf_max_job_start and n_started == sched.bf_max_job_start:
                break
            s, d = jobs[i].size, jobs[i].estimate
            # bf_min_prio_reserve / bf_min_age_reserve (backfill.c TEST_NOW_ONLY): now or no plan
            no_plan = ((sched.bf_min_prio_reserve and prio_of[i] < sched.bf_min_prio_reserve)
                       or (sched.bf_min_age_reserve_s and t - jobs[i].submit < sched.bf_min_age_reserve_s))
            T0 = will_run(s)
            if T0 is None or (no_plan and T0 > t):
                continue
            when = sorted({T0} | {re for rb, re, w in resv if re > T0})
            T = next((x for x in when if machine - held_in(x, x + d) >= s), None)
            if T is None:
                continue
            if T == t:
                begin(i, t)
                busy.append((t + d, s))
                n_started += 1
            elif T <= t + sched.bf_window_s and not no_plan:
                b = max(t, math.floor(T / res) * res)
                e = max(math.floor((T + d) / res) * res, b + res)
                nc = sched.node_cpus
                resv.append((b, e, machine if nc <= 0 else min(machine, -(-s // nc) * nc)))

    def schedule(t):
        q = queue()
        k = 0
        while k < len(q) and jobs[q[k]].size <= free_nodes():
            begin(q[k], t)
            k += 1
        if k == len(q):
            return
        head = q[k]
        free = free_nodes()
        ends = sorted((start[i] + jobs[i].estimate, i) for i in running)
        avail = free
        shadow, extra = math.inf, 0
        for m, (e, i) in enumerate(ends):
            avail += jobs[i].size
            if avail >= jobs[head].size:
                avail += sum(jobs[i2].size for e2, i2 in ends[m + 1:] if e2 == e)
                shadow, extra = e, avail - jobs[head].size
                break
        for i in q[k + 1:]:
            s = jobs[i].size
            if s > free:
                continue
            if t + jobs[i].estimate <= shadow:
                pass
            elif s <= extra:
                extra -= s
            else:
                continue
            begin(i, t)
            free -= s

    def begin(i, t):
        nonlocal last_change
        last_change = t
        pending.remove(i)
        running.append(i)
        start[i] = t
        end[i] = t + jobs[i].run

    ai = 0
    si = sched.sched_interval_s if sched is not None else math.inf
    bi = sched.bf_interval_s if sched is not None and sched.backfill else math.inf
    k_main = k_bf = 1  # the timers' next ticks: t0 + k x interval
    last_change = last_bf = -math.inf  # the last change (a job's arrival, start, end, completion, a
    # decay pass, a main pass passing jobs by) and the last backfill cycle
    bg_last = -math.inf  # the background loop's last scheduling (a full pass or a request served)
    req = due = math.inf  # the pending request: when made, when served
    while True:
        t = min([jobs[ai].submit] if ai < n else [math.inf])
        if running:
            t = min(t, min(end[i] for i in running))
        if completing:
            t = min(t, min(ft for ft, c in completing))
        if (ai < n or running or pending or completing) and next_pass < t:
            t = next_pass
        if pending:
            t = min(t, t0 + k_main * si, t0 + k_bf * bi, due)
        if t == math.inf:
            break
        if sched is not None:  # (a timer passed while nothing was pending: its next tick)
            # the background loop's schedulings before t, in time order (nothing was pending: they
            # started nothing): the timer's full passes, each serving a request made by its time,
            # and a request served at its due time
            while min(t0 + k_main * si, due) < t:
                if t0 + k_main * si <= due:
                    bg_last = t0 + k_main * si
                    if req <= bg_last:
                        req = due = math.inf
                    k_main += 1
                else:
                    bg_last = due
                    req = due = math.inf
            while t0 + k_bf * bi < t:
                k_bf += 1
        changed = False
        lag = sched.complete_s if sched is not None else 0.0
        for i in sorted(running, key=lambda i: (end[i], i)):
            if end[i] <= t:
                running.remove(i)
                last_change = t
                if lag > 0:
                    completing.append((end[i] + lag, jobs[i].size))
                if prio.limits:
                    d = end[i] - max(last_pass, start[i])
                    if d > 0:
                        charge(assoc[i], d * jobs[i].size * f ** d)
                changed = changed or lag == 0  # (with complete_s: when its CPUs are free)
        for ft, c in list(completing):
            if ft <= t:
                completing.remove((ft, c))
                changed = True
                last_change = t
        arrived = False
        while ai < n and jobs[ai].submit <= t:
            pending.append(ai)
            prio_of[ai] = priority(ai, t)
            ai += 1
            arrived = True
            last_change = t
        if sched is None:
            changed = changed or arrived
        elif arrived and req == math.inf:
            req, due = t, max(t, bg_last + sched.batch_sched_delay_s)
        if next_pass <= t:
            do_pass(t)
            last_change = t
            next_pass += P
            if sched is None:  # (slurmctld's scheduler does not run at a decay pass)
                changed = True
        if sched is not None:
            if changed and pending:
                main_sched(t, sched.default_queue_depth + 1)
            if t0 + k_main * si <= t:
                k_main += 1
                bg_last = t
                req = due = math.inf
                if pending:
                    main_sched(t, n)
            elif due <= t:
                bg_last = t
                req = due = math.inf
                if pending:
                    main_sched(t, sched.default_queue_depth + 1)
            if t0 + k_bf * bi <= t:
                k_bf += 1
                if pending and last_change >= last_bf:  # else skipped: nothing changed since the last
                    last_bf = t
                    backfill(t)
        elif changed and pending:
            schedule(t)
    return out
