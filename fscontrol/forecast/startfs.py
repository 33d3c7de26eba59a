"""The priority passes of `fscontrol start`'s estimate (forecast/start.py, issue #32 item 4): the age
term growing and classic fair-share decaying and charged through the horizon.

At each PriorityCalcPeriod pass within bf_window slurmctld (priority_multifactor.c `_decay_thread`)
decays every association's usage (1 - 0.693/T a second), charges each running job's billing x the
seconds it ran since the last pass (pre-decayed: `run_delta * pow(decay, run_delta)`, as
model.passes.slurm_pass) to its association and every parent up to root, and re-prices the pending
jobs with F = 2^(-(UE/S)/d) (model.fairshare's rules) of the usage *before* that pass's charges: F
lags RawUsage by one pass (seen on the testbed, 22.05 and 26.05: docs/start.md).

Decay alone moves no classic F (each NormUsage is usage over root's usage, both decay alike); only
the charges do: the running jobs and the jobs the estimate starts. A pass after one that charged
nothing computes no F. Each job's priority at a pass is its priority now (squeue's %Q) +
PriorityWeightFairShare x (F at the pass - F now). F now is sshare's FairShare column (the F in the
priorities now), or the model's F on sshare's RawUsage where the two agree to the column's 6
decimals: with nothing charged the delta is exactly 0. The queue is re-sorted only when its order
under the new priorities is not the one it has (a stable sort of the queue as it is, checked).

Fair Tree (PriorityFlags without NO_FAIR_TREE, Slurm's default since 19.05): the factor is a user's
rank over the whole tree (rank / users). fair_tree.c `fair_tree_decay` decays, charges the running
jobs and then ranks from the usage after those charges: no lag. The ranks are sim.ftrank's
incremental ranker (the simulator's, checked against model.fairtree.rank_users), on usage kept as
true usage / G (the decay since now), so only charges move a rank.

Pure (no Slurm, no clock) but `read_live`, which runs sshare and squeue.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any

from fscontrol.model.decay import decay_factor_per_second
from fscontrol.model.fairshare import TreeError, build_tree, effective_usage_rule, norm_shares_of
from fscontrol.records import ShareRow
from fscontrol.slurm.parse import parse_duration

# above this many pending jobs fair-share is held, so that one user's estimate stays under 1 s of CPU
# up to 10,000 pending (charged through the horizon: 0.82 s at 8,000, 1.10 s at 10,000; held at
# 10,000: 0.75 s; bench/bench_start.py on an idle machine, docs/start.md)
MAX_PENDING = 8_000
# under Fair Tree, above this many associations (the ranker's set-up and first ranking: ~1 s at
# 100,000, ~0.2 s at 20,000 on one core; docs/start.md)
MAX_FAIR_TREE_ASSOCS = 20000
# the billing each job is charged at (squeue: allocated TRES when running, requested when pending)
SQUEUE_TRES_ARGS = ("squeue", "-a", "-h", "-t", "PD,R,CG", "-O", "JobID:0|,Tres:0|")


class ArrayCache:
    """Where a FairShareModel keeps its tuples as numpy arrays once made (`arrays`): a mutable
    holder the frozen model refers to, so the model itself never changes."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: ModelArrays | None = None


@dataclass(frozen=True, slots=True)
class ModelArrays:
    """A FairShareModel's tuples as numpy arrays (`arrays`)."""

    kind: Any
    weight: Any
    fsp: Any
    levels: list  # one index array per level, root's first
    shares: Any
    desc: Any  # with anc: every (association, one of its chain) pair, for charging a chain at once
    anc: Any


@dataclass(frozen=True)
class FairShareModel:
    """Classic fair-share of an association tree (sshare's rows) as arrays in tree order."""

    index: dict[tuple[str, str], int]  # (account, user) -> position
    usage: tuple[float, ...]  # RawUsage now
    anc: tuple[tuple[int, ...], ...]  # each association's chain: itself, its parents, root
    fsp: tuple[int, ...]  # its fs parent (-1 for root)
    kind: tuple[int, ...]  # fairshare.effective_usage_rule's kind and weight
    weight: tuple[float, ...]
    shares: tuple[float, ...]  # NormShares
    levels: tuple[tuple[int, ...], ...]  # the positions by depth, root's level first
    printed: tuple[float, ...]  # sshare's FairShare of each user association (nan: an account, or none)
    damping: float
    w_fs: float  # PriorityWeightFairshare
    half_life_s: float
    calc_s: float
    # Fair Tree (PriorityFlags without NO_FAIR_TREE): the tree the ranks are taken over (F is then
    # sim.ftrank's rank / users, not the classic formula, and kind/weight/shares/levels are empty)
    tree: object | None = None
    cache: ArrayCache = field(default_factory=ArrayCache, compare=False, repr=False)


def fairshare_model(rows: Sequence[ShareRow], pairs: Mapping[str, str]) -> tuple[FairShareModel | None, str]:
    """The model from sshare's rows and `scontrol show config`'s pairs, or None and why it is held."""
    try:
        w = float(pairs.get("PriorityWeightFairShare", pairs.get("PriorityWeightFairshare", "0")) or 0)
    except ValueError:
        return None, "PriorityWeightFairshare unreadable"
    if w <= 0:
        return None, "no PriorityWeightFairshare"
    fair_tree = "NO_FAIR_TREE" not in pairs.get("PriorityFlags", "").upper()
    try:
        d = float(pairs.get("FairShareDampeningFactor", "1") or 1)
        hl = parse_duration(pairs.get("PriorityDecayHalfLife", "7-00:00:00") or "7-00:00:00")
        calc = parse_duration(pairs.get("PriorityCalcPeriod", "00:05:00") or "00:05:00")
    except ValueError:
        return None, "FairShareDampeningFactor, PriorityDecayHalfLife or PriorityCalcPeriod unreadable"
    if d <= 0 or not calc:
        return None, "no damping factor or no PriorityCalcPeriod"
    try:
        t = build_tree(rows)
    except TreeError as e:
        return None, f"sshare's associations do not form a tree ({e})"
    order = t.order
    index = {k: i for i, k in enumerate(order)}
    if fair_tree:
        anc = [(0,)]
        for k in order[1:]:
            anc.append((index[k],) + anc[index[t.parent[k]]])
        printed = tuple(float(t.rows[k].fairshare) if (k[1] and t.rows[k].fairshare is not None) else math.nan
                        for k in order)
        return FairShareModel(index, tuple(float(t.rows[k].raw_usage) for k in order), tuple(anc), (), (), (), (), (),
                              printed, 1.0, w, float(hl or 0), float(calc), tree=t), ""
    s = norm_shares_of(t)
    depth = [0] * len(order)
    anc: list[tuple[int, ...]] = [(0,)]
    fsp, kind, weight = [-1], [0], [0.0]
    for i, k in enumerate(order[1:], start=1):
        p = index[t.parent[k]]
        depth[i] = depth[p] + 1
        anc.append((i,) + anc[p])
        fsp.append(index[t.fs_parent[k]])
        kd, wt = effective_usage_rule(t, k)
        kind.append(kd)
        weight.append(wt)
    levels = tuple(tuple(i for i in range(len(order)) if depth[i] == lv) for lv in range(1, max(depth) + 1))
    printed = tuple(float(t.rows[k].fairshare) if (k[1] and t.rows[k].fairshare is not None) else math.nan for k in order)
    return FairShareModel(index, tuple(float(t.rows[k].raw_usage) for k in order), tuple(anc), tuple(fsp), tuple(kind),
                          tuple(weight), tuple(s[k] for k in order), levels, printed, d, w, float(hl or 0), float(calc)), ""


def parse_billing(text: str) -> dict[str, float]:
    """job id -> its billing, from `SQUEUE_TRES_ARGS` ('cpu=4,mem=...,billing=4'); absent where none."""
    out = {}
    for line in text.splitlines():
        f = line.strip().split("|")
        if len(f) < 2 or not f[0]:
            continue
        for kv in f[1].split(","):
            k, _, v = kv.partition("=")
            if k.strip() == "billing":
                try:
                    out[f[0].strip()] = float(v)
                except ValueError:
                    pass
    return out


def arrays(m: FairShareModel, np) -> ModelArrays:
    """The model's tuples as numpy arrays, made once (kept in the model's cache)."""
    a = m.cache.value
    if a is None:
        desc = [d for d, c in enumerate(m.anc) for _ in c]
        a = m.cache.value = ModelArrays(np.asarray(m.kind), np.asarray(m.weight), np.asarray(m.fsp),
                                        [np.asarray(lv, dtype=np.intp) for lv in m.levels], np.asarray(m.shares),
                                        np.asarray(desc, dtype=np.intp),
                                        np.asarray([x for c in m.anc for x in c], dtype=np.intp))
    return a


def _ranker(m: FairShareModel):
    """sim.ftrank's incremental Fair Tree ranker over the model's tree (the simulator's, the same
    ranks as model.fairtree.rank_users)."""
    from fscontrol.model import fairtree
    from fscontrol.sim.ftrank import Ranker

    t = m.tree
    return Ranker(t, t.order, fairtree.fair_tree_shares(t), fairtree.children_lists(t))


def factors(m: FairShareModel, usage, np):
    """F of every association (numpy) at these RawUsages: model.fairshare's classic rules."""
    a = arrays(m, np)
    total = usage[0]
    un = np.minimum(1.0, usage / total) if total > 0 else np.zeros_like(usage)
    ue = np.empty_like(usage)
    ue[0] = 1.0
    kind, w, fsp = a.kind, a.weight, a.fsp
    for lv in a.levels:
        par = ue[fsp[lv]]
        u = un[lv]
        k = kind[lv]
        ue[lv] = np.where(k == 0, u, np.where(k == 2, u + (par - u) * w[lv], par))
    s = a.shares
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(s > 0, np.exp2(-(ue / np.where(s > 0, s, 1.0)) / m.damping), 0.0)
    return f


@dataclass(frozen=True, slots=True)
class Bound:
    """A FairShareModel bound to the estimate's jobs: each key's association (-1: held) and billing
    rate (pending 0..n-1, then the running), and each running job's start."""

    model: FairShareModel
    assoc: tuple[int, ...]
    rate: tuple[float, ...]
    run_start: tuple[float, ...]


def bind(m: FairShareModel, pending: Sequence, running: Sequence, billing: Mapping[str, float], now: float) -> Bound:
    """`pending` / `running`: the StartJobs in the estimate's key order; billing from `parse_billing`
    (a job without one is billed its CPUs, as TRESBillingWeights' default)."""
    assoc, rate = [], []
    for j in list(pending) + list(running):
        assoc.append(m.index.get((j.account, j.user), -1))
        rate.append(billing.get(j.job_id, float(j.cpus)))
    return Bound(m, tuple(assoc), tuple(rate), tuple(j.start if j.start is not None else now for j in running))


class Passes:
    """The priority passes of one estimate run: call `started` for each job the plan starts,
    `due(t)` at each event and then `run(t, ...)`, which gives the queue's new order or None."""

    def __init__(self, now: float, bf_until: float, n: int, aging, fs: Bound | None, prio0: Sequence[float],
                 elig: Sequence[float], run_ends: Sequence[float]):
        self.now = now
        self.n = n
        self.until = bf_until
        self.aging = aging  # (PriorityWeightAge, PriorityMaxAge s, PriorityCalcPeriod s) or None
        self.fs = fs
        calc = aging[2] if aging is not None else fs.model.calc_s
        self.calc = calc
        self.next = now + calc / 2  # the passes' phase is not known
        self.last = self.next - calc  # the pass before: sshare's usage is as of it
        self.emin = min(elig, default=now)
        self.np = None  # numpy, imported once a pass needs it (a CLI start without an age term or
        self._raw = (prio0, elig, run_ends)  # fair-share does not pay for it; a user's copy may not have it)
        self._started: list[int] = []
        self.dfs = None
        if fs is not None:
            self._numpy()

    def _numpy(self) -> None:
        import numpy as np

        self.np = np
        prio0, elig, _ = self._raw
        n, now, aging = self.n, self.now, self.aging
        self.st_mask = np.zeros(n, dtype=bool)
        self.st_mask[self._started] = True
        self.fresh = True  # a job started since the queue (order) was last set: it drops out at the next
        self.e = np.asarray(elig, dtype=float)
        p = np.asarray(prio0, dtype=float)
        if aging is not None:
            w_age, max_age, _ = aging
            p = p - w_age * np.minimum(1.0, np.maximum(0.0, now - self.e) / max_age)
        self.p0 = p  # each job's priority less its age term now
        self.order = np.arange(n)
        self.dfs = None  # PriorityWeightFairshare x (F at the last pass - F now) of each pending job
        fs = self.fs
        if fs is not None:
            run_ends = self._raw[2]
            m = fs.model
            arrays(m, np)
            self.usage = np.asarray(m.usage, dtype=float)
            # the F in the priorities now: slurmctld's F lags RawUsage by one pass (it is computed
            # from the usage before the pass's charges), so sshare's RawUsage is the next pass's F.
            # sshare's FairShare column is the present one: where it differs from the model's F on
            # RawUsage by more than its 6 decimals, the last real pass charged, and the next
            # modelled pass moves F by the difference
            if m.tree is not None:  # Fair Tree: ranks over usage kept scaled by the decay (x G)
                self.G = 1.0
                self.ranker = _ranker(m)
                fm = np.zeros(len(m.usage))
                for i, f in self.ranker.update(self.usage.tolist()).items():
                    fm[i] = f
                self.fa = fm.copy()
            else:
                fm = factors(m, self.usage, np)
            pr = np.asarray(m.printed, dtype=float)
            keep = np.isnan(pr) | (np.abs(pr - fm) <= 1.5e-6)
            self.f0 = np.where(keep, fm, pr)
            self.dirty = not bool(keep.all())  # the next pass computes F anew
            a = np.asarray(fs.assoc, dtype=np.intp)
            self.ok = a >= 0
            self.a = np.where(self.ok, a, 0)
            self.ok_n, self.a_n = self.ok[:n], self.a[:n]  # the pending jobs'
            # each pending job's association, or one past the last for a job held (its delta 0): a
            # pass's deltas by job are one gather of the associations' with a 0 appended
            self.a_x = np.where(self.ok_n, self.a_n, len(m.usage))
            self.d_x = np.zeros(len(m.usage) + 1)  # the associations' deltas and that 0
            self.rate = np.asarray(fs.rate, dtype=float)
            k = n + len(run_ends)
            self.k_start = np.full(k, np.inf)
            self.k_end = np.full(k, np.inf)
            self.k_start[n:] = fs.run_start
            self.k_end[n:] = run_ends
            # the keys that may still charge, ascending: the running jobs', those started since
            # added (`_new`), those ended by a pass dropped (the charge reads these, not every key)
            self.cand = np.arange(n, k)
            self._new: list[int] = []
            self.decay = decay_factor_per_second(m.half_life_s)  # Slurm's 1 - 0.693 / T

    def started(self, i: int, at: float, end: float) -> None:
        if self.np is None:
            self._started.append(i)
            return
        self.st_mask[i] = True
        self.fresh = True
        if self.fs is not None:
            self.k_start[i] = at
            self.k_end[i] = end
            self._new.append(i)

    def due(self, t: float) -> bool:
        return t >= self.next and t < self.until

    def _charge(self, tp: float) -> bool:
        """Slurm's pass at `tp`: decay, charge the jobs run since the last; True if any F moved."""
        np = self.np
        dt = tp - self.last
        # only the jobs that ran since the last pass charge: the others' overlap is 0 (the cost at
        # 10,000 pending jobs, most of them not started). In key order, so each association's sum
        # adds the same terms in the same order as over every key (a 0 added changes no sum)
        ks, ke = self.k_start, self.k_end
        c = self.cand
        if self._new:
            c = np.sort(np.concatenate((c, np.asarray(self._new, dtype=c.dtype))))
            self._new = []
        kc = ke[c]
        keys = c[(ks[c] < tp) & (kc > self.last)]  # as flatnonzero over every key: a key not in c never started or has ended
        self.cand = c[kc > tp]  # one that ends by tp charges no more (the passes after it start from tp)
        ov = np.minimum(ke[keys], tp) - np.maximum(ks[keys], self.last)
        ov = np.where(self.ok[keys], np.maximum(ov, 0.0), 0.0)
        self.last = tp
        return self._apply(ov, dt, keys)

    def _apply(self, ov, dt, keys=None) -> bool:
        """Decay by `dt` and charge each key's overlap `ov` (those of `keys`, else every key)."""
        np = self.np
        m = self.fs.model
        f = self.decay
        if m.tree is not None:
            return self._apply_fair_tree(ov, dt, keys)
        if f != 1.0:
            self.usage *= f ** dt
        moved = self.dirty
        if moved:
            # this pass's F: from the usage before its charges (slurmctld's lag; decay alone moves no F)
            fa = factors(m, self.usage, np)
            d = m.w_fs * (fa - self.f0)
            self.d_x[:-1] = d
            self.dfs = self.d_x[self.a_x]
        self.dirty = bool(ov.any())
        if self.dirty:  # charged: the next pass's F moves
            a, rate = (self.a, self.rate) if keys is None else (self.a[keys], self.rate[keys])
            ch = ov * rate * (f ** ov if f != 1.0 else 1.0)
            per = np.bincount(a, weights=ch, minlength=len(self.usage))
            pairs = arrays(m, np)
            desc, anc = pairs.desc, pairs.anc
            self.usage += np.bincount(anc, weights=per[desc], minlength=len(self.usage))
        return moved

    def _apply_fair_tree(self, ov, dt, keys=None) -> bool:
        """Fair Tree's pass (fair_tree.c `fair_tree_decay`): the decay, the running jobs' charges,
        then the ranks from the usage after them: no lag, unlike classic. The usage is kept as
        true usage / G (G the decay since now), as the simulator's engine keeps it, so a pass that
        charges nothing changes no rank."""
        np = self.np
        m = self.fs.model
        f = self.decay
        if f != 1.0:
            self.G *= f ** dt
        touched = None
        if ov.any():
            a, rate = (self.a, self.rate) if keys is None else (self.a[keys], self.rate[keys])
            ch = ov * rate * (f ** ov if f != 1.0 else 1.0) / self.G
            per = np.bincount(a, weights=ch, minlength=len(self.usage))
            pairs = arrays(m, np)
            desc, anc = pairs.desc, pairs.anc
            self.usage += np.bincount(anc, weights=per[desc], minlength=len(self.usage))
            touched = np.nonzero(per)[0].tolist()
        changed = self.ranker.update(self.usage.tolist(), touched) if touched else {}
        for i, fv in changed.items():
            self.fa[i] = fv
        first = self.dfs is None
        if changed or (first and self.dirty):
            d = m.w_fs * (self.fa - self.f0)
            self.d_x[:-1] = d
            self.dfs = self.d_x[self.a_x]
            self.dirty = False
            return True
        return False

    def run(self, t: float, waiting_len: int) -> MutableSequence[int] | None:
        """The pass(es) due by t: the new queue (every pending job not started, by priority, ties to
        the earlier job) when it must be set, else None (as the age-only re-sort before it)."""
        while self.next <= t:
            tp = self.next
            self.next += self.calc
            if self.fs is not None:
                self._charge(tp)
        aging = self.aging
        age_due = aging is not None and t - self.emin >= aging[1]
        if not age_due and self.dfs is None:
            return None  # all gain alike: the order is the one the queue has
        if self.np is None:
            self._numpy()
        np = self.np
        key = self.p0
        if aging is not None:
            key = key + aging[0] * np.minimum(1.0, np.maximum(0.0, t - self.e) / aging[1])  # (0 until eligible)
        if self.dfs is not None:
            key = key + self.dfs
        o = self.order
        if self.fresh:  # the queue as it is: every pending job not started
            o = o[~self.st_mask[o]]
            self.fresh = False
        ko = key[o]
        # by priority, ties to the earlier job (the order a lexsort gives): a stable sort of the queue
        # as it is (timsort: linear where little moved), checked for ties that newly met out of order
        p = np.argsort(-ko, kind="stable")
        o, ko = o[p], ko[p]
        if len(o) > 1 and bool(np.any((ko[:-1] == ko[1:]) & (o[:-1] > o[1:]))):
            o = o[np.lexsort((o, -ko))]
        self.order = o
        if len(o) != waiting_len or (len(o) > 1 and not bool(np.all(o[:-1] < o[1:]))):
            # not in index order (or started jobs to drop): the queue is set anew, as an array of
            # machine ints (a list would make 10,000 int objects at each pass, the pass's main cost;
            # the planner reads only the queue's head within bf_window)
            return array("q", o.astype(np.int64, copy=False).tobytes())
        return None


def too_costly(m: FairShareModel, max_assocs: int = MAX_FAIR_TREE_ASSOCS) -> str:
    """Why fair-share is held for this model's cost ("" when it is not): Fair Tree over more than
    `max_assocs` associations."""
    if m.tree is not None and len(m.usage) > max_assocs:
        return (f"Fair Tree over {len(m.usage):,} associations, above the {max_assocs:,} for which its ranks are "
                "recomputed at each pass (the cost of one estimate)")
    return ""


def read_live(source, pairs: Mapping[str, str], pending: int = 0,
              max_pending: int | None = None) -> tuple[tuple[FairShareModel, dict[str, float]] | None, str]:
    """sshare's rows and the jobs' billing from `source` (LiveSlurm): (model, billing) for
    start.estimate's `fairshare`, or None; and the note the output gives either way. Over
    `max_pending` (MAX_PENDING) pending jobs, held (the cost), and the note says so."""
    from fscontrol.errors import FscontrolError
    from fscontrol.slurm.parse import SSHARE_ARGS, parse_sshare

    cap = MAX_PENDING if max_pending is None else max_pending
    try:
        import numpy  # noqa: F401  (the passes' arithmetic)
    except ImportError:
        return None, "fair-share held at its present value: numpy is not installed where this runs"
    if pending > cap:
        return None, (f"fair-share held at its present value: {pending:,} jobs pending, over the {cap:,} for which it "
                      f"is recomputed at each pass (the cost of one estimate: about 0.8 s of CPU at {MAX_PENDING:,})")

    try:
        rows = parse_sshare(source.run(SSHARE_ARGS).stdout)
        m, why = fairshare_model(rows, pairs)
        if m is None:
            return None, "fair-share held at its present value: " + why
        why = too_costly(m)
        if why:
            return None, "fair-share held at its present value: " + why
        billing = parse_billing(source.run(SQUEUE_TRES_ARGS).stdout)
    except FscontrolError as e:
        return None, f"fair-share held at its present value: sshare or squeue failed ({str(e).splitlines()[0][:120]})"
    what = "Fair Tree's ranks" if m.tree is not None else "classic F"
    return (m, billing), (f"fair-share: {what} recomputed at each priority pass within bf_window (every "
                          f"{m.calc_s:g} s), usage decaying (half-life {m.half_life_s / 3600:g} h) and charged with "
                          "the running jobs and those the estimate starts (billing from squeue)")
