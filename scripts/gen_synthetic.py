#!/usr/bin/env python3
"""Generate a SYNTHETIC sample folder in the format `fscontrol.slurm.source.RecordedSlurm` reads.

Nothing here comes from a real Slurm. The generator writes the same files `fscontrol capture`
records (config.txt, sshare.txt, squeue.txt, sprio.txt, qos.txt, sacct.txt, meta.json) in the
exact text formats of the real recording in samples/testbed-basic/, for a large classic
fair-share cluster shaped like ASU's Agave in Yalim (PEARC'20):

* N users, each with one user association and RawShares 1; about N/20 top-level accounts, some
  of them split into two-level sub-accounts; account RawShares = the number of users below it,
  so every user's NormShares is 1/(N+1) (the `root` user association holds the +1), as on Agave.
* Pareto-like RawUsage: a fraction of the users is active, their usage Pareto (Lomax) distributed
  and scaled to a mean of `--mean-core-hours` per user; a few power users hold most of it.
* NormShares, NormUsage, EffectvUsage and FairShare computed here with Slurm's classic formulas
  (PriorityFlags=NO_FAIR_TREE): S = product of RawShares / siblings' RawShares, NormUsage =
  RawUsage / root RawUsage, UE = UN at the first tier and UN + (UE_parent - UN) * s / s_siblings
  below it, F = 2^(-(UE/S)/d) with d from the config; printed with sshare's 6 decimals and one
  leading space per tree level. RawUsage is an integer; an account's is the sum of its children.
* sacct: a window of `--jobs` allocations (-X -T: times clipped to the window, pending jobs with
  Start=End=window end), squeue/sprio of the running and pending ones (priority =
  PriorityWeightFairShare x F, as the copied config weighs nothing else).
* config.txt: the real `scontrol show config` of samples/testbed-basic with ClusterName,
  PriorityDecayHalfLife (7-00:00:00), PriorityCalcPeriod (00:05:00), FairShareDampeningFactor
  (--damping) and the "Configuration data as of" time changed.

Output is a pure function of the options (no wall clock): the same --seed gives the same bytes.

    .venv/bin/python scripts/gen_synthetic.py --users 2500 --jobs 5000 --seed 1 --out samples/synthetic-agave
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT_DIR = Path(__file__).resolve().parent.parent
CONFIG_TEMPLATE = ROOT_DIR / "samples" / "testbed-basic" / "config.txt"

DEFAULT_NOW = 1795287815  # 2026-11-21T19:03:35Z, the testbed recording's time: fixed, not the clock
SLURM_VERSION = "22.05.8"
CPUS_PER_NODE = 28  # Agave's standard node
PRIORITY_WEIGHT_FS = 100000  # PriorityWeightFairShare of the copied config (all other weights 0)

SSHARE_HEADER = "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins"
SACCT_HEADER = "JobID|User|Account|Partition|QOS|State|AllocCPUS|AllocTRES|NNodes|ElapsedRaw|Submit|Start|End"
SQUEUE_HEADER = "JOBID|USER|ACCOUNT|PARTITION|QOS|STATE|NODES|CPUS|PRIORITY|NICE|REASON|SUBMIT_TIME|START_TIME|TIME_LIMIT"
SPRIO_HEADER = "JOBID|USER|PARTITION|PRIORITY|FAIRSHARE"
QOS = (("normal", 1.0), ("debug", 1.0), ("wildfire", 0.5))
PARTITIONS = ("serial", "parallel", "htc", "gpu")

# the argv fscontrol runs (fscontrol.slurm.parse), repeated here so the generator needs no fscontrol
ARGV = {
    "config": ["scontrol", "show", "config"],
    "sshare": ["sshare", "-a", "-l", "-P"],
    "squeue": ["squeue", "-a", "-o", "%i|%u|%a|%P|%q|%T|%D|%C|%Q|%y|%r|%V|%S|%l"],
    "sprio": ["sprio", "-n", "-o", "%i|%u|%r|%y|%f"],
    "qos": ["sacctmgr", "-P", "show", "qos", "format=Name,UsageFactor"],
}
SACCT_FIELDS = "JobID,User,Account,Partition,QOS,State,AllocCPUS,AllocTRES,NNodes,ElapsedRaw,Submit,Start,End"


# ---------------------------------------------------------------------------- the tree
@dataclass
class Assoc:
    """One association. `parent` is the index of the parent association (-1 for root)."""

    account: str
    user: str
    parent: int
    depth: int
    raw_shares: int | None
    raw_usage: int = 0
    children: list[int] = field(default_factory=list)
    norm_shares: float = 0.0
    norm_usage: float = 0.0
    effective_usage: float = 0.0
    fairshare: float = 0.0
    run_billing_mins: int = 0
    run_node_mins: int = 0


def build_tree(n_users: int, n_accounts: int, rng: np.random.Generator, nested_frac: float = 0.15) -> list[Assoc]:
    """Associations in sshare's order: root, root's user, then each account with its users first
    and its sub-accounts after (alphabetical). Returns the list; index 0 is root."""
    n_accounts = max(1, min(n_accounts, n_users))
    # leaf accounts: most top-level accounts hold users directly, some split into 2-4 labs
    n_sub = np.where(rng.random(n_accounts) < nested_frac, rng.integers(2, 5, n_accounts), 0)
    leaves: list[tuple[int, int]] = []  # (top index, sub index or -1)
    for a in range(n_accounts):
        if n_sub[a]:
            leaves.extend((a, s) for s in range(int(n_sub[a])))
        else:
            leaves.append((a, -1))
    leaves = leaves[: n_users] if len(leaves) > n_users else leaves
    # users per leaf: one each, the rest spread with lognormal weights (a few large groups)
    w = rng.lognormal(0.0, 0.9, len(leaves))
    extra = rng.multinomial(n_users - len(leaves), w / w.sum())
    per_leaf = extra + 1
    user_ids = rng.permutation(n_users)  # user names not ordered by account

    width = len(str(n_accounts))
    uwidth = max(5, len(str(n_users)))
    tops: dict[int, dict[int, list[str]]] = {}
    k = 0
    for (a, s), n in zip(leaves, per_leaf):
        names = [f"u{user_ids[k + i]:0{uwidth}d}" for i in range(int(n))]
        k += int(n)
        tops.setdefault(a, {})[s] = sorted(names)

    out: list[Assoc] = [Assoc("root", "", -1, 0, None)]

    def add(a: Assoc) -> int:
        out.append(a)
        if a.parent >= 0:
            out[a.parent].children.append(len(out) - 1)
        return len(out) - 1

    add(Assoc("root", "root", 0, 1, 1))
    for a in sorted(tops):
        name = f"acct{a + 1:0{width}d}"
        groups = tops[a]
        n_top = sum(len(v) for v in groups.values())
        top = add(Assoc(name, "", 0, 1, n_top))
        if -1 in groups:
            for u in groups[-1]:
                add(Assoc(name, u, top, 2, 1))
        else:
            for s in sorted(groups):
                sub_name = f"{name}-lab{s + 1}"
                sub = add(Assoc(sub_name, "", top, 2, len(groups[s])))
                for u in groups[s]:
                    add(Assoc(sub_name, u, sub, 3, 1))
    return out


def assign_usage(
    tree: list[Assoc],
    rng: np.random.Generator,
    *,
    active_frac: float = 0.35,
    alpha: float = 0.4,
    cap_ratio: float = 1e4,
    mean_core_hours: float = 700.0,
) -> None:
    """Pareto-like RawUsage (billing-seconds, integer) for the users; accounts get the sums.

    A fraction `active_frac` of the users has usage drawn from a Pareto law of index `alpha`
    truncated at `cap_ratio` times its minimum, scaled to a mean of `mean_core_hours` over all
    users. The defaults give Yalim's Agave shape: ubar = 700 core-hours, the top user ~150 ubar,
    ~6% of users above ubar, ~1.5% above 20 ubar (F underflows at d=1), top 20% hold ~99%."""
    users = [i for i, a in enumerate(tree) if a.user and a.account != "root"]
    n = len(users)
    active = rng.random(n) < active_frac
    q = rng.random(n)
    raw = np.where(active, (1.0 - q * (1.0 - cap_ratio**-alpha)) ** (-1.0 / alpha), 0.0)
    if raw.sum() > 0:
        raw *= mean_core_hours * 3600.0 * n / raw.sum()
    for i, u in zip(users, np.floor(raw).astype(np.int64)):
        tree[i].raw_usage = int(u)
    for i in range(len(tree) - 1, 0, -1):  # children come after their parent: sum bottom-up
        if not tree[i].user:
            tree[i].raw_usage = sum(tree[c].raw_usage for c in tree[i].children)
    tree[0].raw_usage = sum(tree[c].raw_usage for c in tree[0].children)


def classic_fairshare(tree: list[Assoc], damping: float) -> None:
    """Slurm's classic NormShares, NormUsage, EffectvUsage and FairShare, in place.

    No FairShare=parent associations are generated, so every association's fs parent is its
    direct parent and its siblings are its parent's children."""
    root = tree[0]
    total = float(root.raw_usage)
    root.norm_shares, root.norm_usage, root.effective_usage = 1.0, 1.0, 1.0
    root.fairshare = 2.0 ** (-1.0 / damping)
    for p, a in enumerate(tree):
        if not a.children:
            continue
        level = sum(tree[c].raw_shares or 0 for c in a.children)
        for c in a.children:
            ch = tree[c]
            s = ch.raw_shares or 0
            ch.norm_shares = a.norm_shares * s / level if level else 0.0
            un = min(1.0, ch.raw_usage / total) if total > 0 else 0.0
            ch.norm_usage = un
            if p == 0:
                ch.effective_usage = un
            else:
                ch.effective_usage = un + (a.effective_usage - un) * s / level if level else a.effective_usage
            ch.fairshare = 2.0 ** (-(ch.effective_usage / ch.norm_shares) / damping) if ch.norm_shares > 0 else 0.0


def _tres_run_mins(billing: int, nodes: int) -> str:
    return f"cpu={billing},mem=0,energy=0,node={nodes},billing={billing},fs/disk=0,vmem=0,pages=0"


def format_sshare(tree: list[Assoc]) -> str:
    """`sshare -a -l -P` under classic fair-share: one leading space per level on Account."""
    lines = [SSHARE_HEADER]
    r = tree[0]
    lines.append(
        f"root|||{r.norm_shares:.6f}|{r.raw_usage}||{r.effective_usage:.6f}|{r.fairshare:.6f}||"
        f"{_tres_run_mins(r.run_billing_mins, r.run_node_mins)}"
    )
    for a in tree[1:]:
        lines.append(
            f"{' ' * a.depth}{a.account}|{a.user}|{a.raw_shares}|{a.norm_shares:.6f}|{a.raw_usage}|"
            f"{a.norm_usage:.6f}|{a.effective_usage:.6f}|{a.fairshare:.6f}||"
            f"{_tres_run_mins(a.run_billing_mins, a.run_node_mins)}"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- jobs
@dataclass
class Jobs:
    """Column arrays of the sacct window (one entry per allocation)."""

    job_id: list[str]
    assoc: np.ndarray  # index into the tree
    partition: np.ndarray
    qos: np.ndarray
    state: list[str]
    cpus: np.ndarray
    nodes: np.ndarray
    submit: np.ndarray
    start: np.ndarray  # actual start (not clipped); -1 for pending
    end: np.ndarray  # actual end; -1 while running or pending
    limit_s: np.ndarray
    reason: list[str]


_STATES = ("COMPLETED", "RUNNING", "PENDING", "FAILED", "CANCELLED", "TIMEOUT")
_STATE_P = (0.55, 0.22, 0.15, 0.04, 0.03, 0.01)
_CPUS = np.array([1, 1, 1, 2, 4, 8, 12, 16, 20, 28, 56, 84, 112, 224])
_CPUS_P = np.array([18, 10, 8, 8, 10, 10, 4, 8, 3, 10, 5, 2, 3, 1], dtype=float)
_LIMITS = np.array([600, 3600, 4 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400])
_LIMITS_P = np.array([10, 20, 25, 15, 15, 10, 5], dtype=float)


def generate_jobs(
    tree: list[Assoc], n_jobs: int, window: tuple[int, int], rng: np.random.Generator, first_id: int = 12_000_000
) -> Jobs:
    """Allocations seen by `sacct -a -X -T` over `window`: who runs follows usage (power users
    submit most), plus some pending jobs of users without usage."""
    w0, w1 = window
    users = np.array([i for i, a in enumerate(tree) if a.user and a.account != "root"])
    usage = np.array([tree[i].raw_usage for i in users], dtype=float)
    weight = np.where(usage > 0, usage**0.6, 0.0)
    weight = weight / weight.sum() if weight.sum() > 0 else np.full(len(users), 1.0 / len(users))
    state_ix = rng.choice(len(_STATES), size=n_jobs, p=_STATE_P)
    who = users[rng.choice(len(users), size=n_jobs, p=weight)]
    idle_pending = (state_ix == _STATES.index("PENDING")) & (rng.random(n_jobs) < 0.2)
    who[idle_pending] = users[rng.integers(0, len(users), int(idle_pending.sum()))]
    cpus = _CPUS[rng.choice(len(_CPUS), size=n_jobs, p=_CPUS_P / _CPUS_P.sum())]
    nodes = -(-cpus // CPUS_PER_NODE)
    limit = _LIMITS[rng.choice(len(_LIMITS), size=n_jobs, p=_LIMITS_P / _LIMITS_P.sum())]
    part = rng.choice(len(PARTITIONS), size=n_jobs, p=(0.45, 0.3, 0.15, 0.1))
    part[nodes > 1] = 1  # multi-node jobs run in "parallel"
    qos = rng.choice(len(QOS), size=n_jobs, p=(0.85, 0.05, 0.10))
    wait = np.floor(rng.exponential(1800.0, n_jobs)).astype(np.int64)

    start = np.full(n_jobs, -1, dtype=np.int64)
    end = np.full(n_jobs, -1, dtype=np.int64)
    running = state_ix == 1
    pending = state_ix == 2
    done = ~(running | pending)
    # running: started up to its limit (at most 2 days) before the window's end
    start[running] = w1 - 1 - np.floor(rng.random(int(running.sum())) * np.minimum(limit[running], 2 * 86400)).astype(np.int64)
    # finished: ended inside the window after running a fraction of the limit (TIMEOUT: all of it)
    nd = int(done.sum())
    end[done] = w0 + np.floor(rng.random(nd) * (w1 - w0)).astype(np.int64)
    frac = np.where(state_ix[done] == _STATES.index("TIMEOUT"), 1.0, rng.beta(0.7, 2.0, nd))
    start[done] = end[done] - np.maximum(1, np.floor(frac * limit[done]).astype(np.int64))
    submit = np.where(pending, w1 - 1 - np.floor(rng.random(n_jobs) * 2 * 86400).astype(np.int64), start - wait)

    reason = [""] * n_jobs
    pend_ix = np.flatnonzero(pending)
    r = rng.random(len(pend_ix))
    for k, j in enumerate(pend_ix):
        reason[j] = "Priority" if r[k] < 0.8 else "Resources" if r[k] < 0.9 else "Dependency" if r[k] < 0.95 else "JobHeldUser"
    for j in np.flatnonzero(running):
        reason[j] = "None"
    states = [_STATES[k] for k in state_ix]
    # a few "CANCELLED by <uid>" as sacct prints them
    for j in np.flatnonzero(state_ix == _STATES.index("CANCELLED")):
        states[j] = f"CANCELLED by {int(rng.integers(1000, 60000))}"
    # job ids sequential in submit order (sacct's order), some array tasks "<array id>_<task>"
    o = np.argsort(submit, kind="stable")
    is_array = rng.random(n_jobs) < 0.05
    ids = [f"{first_id + k - 1}_{k % 97}" if is_array[k] else str(first_id + k) for k in range(n_jobs)]
    return Jobs(
        ids, who[o], part[o], qos[o], [states[j] for j in o], cpus[o], nodes[o], submit[o], start[o], end[o],
        limit[o], [reason[j] for j in o],
    )


def charge_running(tree: list[Assoc], jobs: Jobs, now: int) -> None:
    """TRESRunMins: billing-minutes (and node-minutes) the running jobs still have to run."""
    for j in np.flatnonzero(jobs.start >= 0):
        if jobs.end[j] >= 0:
            continue
        left = max(0, int(jobs.start[j] + jobs.limit_s[j] - now)) // 60
        i = int(jobs.assoc[j])
        while i >= 0:
            tree[i].run_billing_mins += int(jobs.cpus[j]) * left
            tree[i].run_node_mins += int(jobs.nodes[j]) * left
            i = tree[i].parent


def format_sacct(tree: list[Assoc], jobs: Jobs, window: tuple[int, int]) -> str:
    """`sacct -a -X -T -P -o SACCT_FIELDS` with SLURM_TIME_FORMAT=%s: times clipped to the window."""
    w0, w1 = window
    lines = [SACCT_HEADER]
    for j in range(len(jobs.job_id)):
        a = tree[int(jobs.assoc[j])]
        c, n = int(jobs.cpus[j]), int(jobs.nodes[j])
        st = int(jobs.start[j])
        if st < 0:  # pending: -T gives Start = End = the window's end
            s = e = w1
            tres, el = "", 0
        else:
            s = max(st, w0)
            e = int(jobs.end[j]) if jobs.end[j] >= 0 else w1
            tres, el = f"billing={c},cpu={c},node={n}", e - s
        lines.append(
            f"{jobs.job_id[j]}|{a.user}|{a.account}|{PARTITIONS[jobs.partition[j]]}|{QOS[jobs.qos[j]][0]}|"
            f"{jobs.state[j]}|{c}|{tres}|{n}|{el}|{int(jobs.submit[j])}|{s}|{e}"
        )
    return "\n".join(lines) + "\n"


def _limit(s: int) -> str:
    d, rest = divmod(int(s), 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{sec:02d}"
    if h:
        return f"{h}:{m:02d}:{sec:02d}"
    return f"{m}:{sec:02d}"


def _queued(jobs: Jobs) -> list[int]:
    """squeue's order: running first, then pending by priority (both stable on job id)."""
    return [j for j in range(len(jobs.job_id)) if jobs.state[j] == "RUNNING"] + [
        j for j in range(len(jobs.job_id)) if jobs.state[j] == "PENDING"
    ]


def format_squeue(tree: list[Assoc], jobs: Jobs) -> str:
    lines = [SQUEUE_HEADER]
    for j in _queued(jobs):
        a = tree[int(jobs.assoc[j])]
        running = jobs.state[j] == "RUNNING"
        prio = int(PRIORITY_WEIGHT_FS * a.fairshare)
        lines.append(
            f"{jobs.job_id[j]}|{a.user}|{a.account}|{PARTITIONS[jobs.partition[j]]}|{QOS[jobs.qos[j]][0]}|"
            f"{jobs.state[j]}|{int(jobs.nodes[j])}|{int(jobs.cpus[j])}|{prio}|0|{jobs.reason[j]}|"
            f"{int(jobs.submit[j])}|{int(jobs.start[j]) if running else 'N/A'}|{_limit(jobs.limit_s[j])}"
        )
    return "\n".join(lines) + "\n"


def format_sprio(tree: list[Assoc], jobs: Jobs) -> str:
    """`sprio -n`: pending jobs that are eligible (not held, no dependency); normalized priority
    = weight x F / 2^32, F with 7 decimals."""
    lines = [SPRIO_HEADER]
    for j in _queued(jobs):
        if jobs.state[j] != "PENDING" or jobs.reason[j] in ("JobHeldUser", "Dependency"):
            continue
        a = tree[int(jobs.assoc[j])]
        lines.append(
            f"{jobs.job_id[j]}|{a.user}|{PARTITIONS[jobs.partition[j]]}|"
            f"{PRIORITY_WEIGHT_FS * a.fairshare / 2**32:.14f}|{a.fairshare:.7f}"
        )
    return "\n".join(lines) + "\n"


def format_qos() -> str:
    return "Name|UsageFactor\n" + "".join(f"{n}|{f:.6f}\n" for n, f in QOS)


def format_config(cluster: str, now: int, damping: int, template: Path = CONFIG_TEMPLATE) -> str:
    """The real recorded `scontrol show config` with the cluster's own settings swapped in."""
    text = template.read_text()
    changes = {
        "ClusterName": cluster,
        "PriorityDecayHalfLife": "7-00:00:00",
        "PriorityCalcPeriod": "00:05:00",
        "FairShareDampeningFactor": str(damping),
    }
    for key, value in changes.items():
        text, n = re.subn(
            rf"^({re.escape(key)}\s* = ).*$", lambda m, v=value: m.group(1) + v, text, count=1, flags=re.MULTILINE
        )
        if n != 1:
            raise SystemExit(f"{template}: no {key} line to change")
    text = re.sub(r"^Configuration data as of \d+$", f"Configuration data as of {now}", text, count=1, flags=re.MULTILINE)
    return text


# ---------------------------------------------------------------------------- the folder
@dataclass
class Sample:
    tree: list[Assoc]
    jobs: Jobs
    window: tuple[int, int]
    texts: dict[str, str]
    meta: dict


def command_line(users: int, accounts: int, jobs: int, seed: int, out: str, extra: list[str] | None = None) -> str:
    return " ".join(
        ["scripts/gen_synthetic.py", "--users", str(users), "--accounts", str(accounts), "--jobs", str(jobs), "--seed", str(seed),
         *(extra or []), "--out", shlex.quote(str(out))]
    )


def generate(
    users: int = 2500,
    accounts: int | None = None,
    jobs: int = 5000,
    seed: int = 1,
    *,
    cluster: str = "agave-synth",
    damping: int = 1,
    now: int = DEFAULT_NOW,
    window_s: int = 3600,
    active_frac: float = 0.35,
    alpha: float = 0.4,
    mean_core_hours: float = 700.0,
    out: str = "samples/synthetic-agave",
    sshare_only: bool = False,
) -> Sample:
    """Everything of one synthetic sample in memory (texts by file stem, and meta.json)."""
    accounts = accounts if accounts is not None else max(1, round(users / 20))
    rng = np.random.default_rng(seed)
    tree = build_tree(users, accounts, rng)
    assign_usage(tree, rng, active_frac=active_frac, alpha=alpha, mean_core_hours=mean_core_hours)
    classic_fairshare(tree, damping)
    window = (now - window_s, now)
    job_rng = np.random.default_rng([seed, 1])
    jb = generate_jobs(tree, jobs, window, job_rng) if jobs and not sshare_only else None
    if jb is not None:
        charge_running(tree, jb, now)
    texts = {"sshare": format_sshare(tree)}
    if not sshare_only:
        texts["config"] = format_config(cluster, now, damping)
        texts["squeue"] = format_squeue(tree, jb) if jb else SQUEUE_HEADER + "\n"
        texts["sprio"] = format_sprio(tree, jb) if jb else SPRIO_HEADER + "\n"
        texts["qos"] = format_qos()
        texts["sacct"] = format_sacct(tree, jb, window) if jb else SACCT_HEADER + "\n"
    extra = []
    if damping != 1:
        extra += ["--damping", str(damping)]
    cmd = command_line(users, accounts, jobs, seed, out, extra)
    n_users = sum(1 for a in tree if a.user and a.account != "root")
    n_under = sum(1 for a in tree if a.user and a.account != "root" and a.fairshare < 5e-7)
    def iso(t: float) -> str:
        return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")

    times = {}
    t = float(now)
    for name in ("config", "sshare", "squeue", "sprio", "qos", "sacct"):
        times[name] = (t, t + 0.01)
        t += 0.01
    meta = {
        "cluster": cluster,
        "slurm_version": SLURM_VERSION,
        "synthetic": True,
        "generated_by": cmd,
        "captured_at": datetime.fromtimestamp(now, tz=UTC).isoformat(),
        "captured_by": "SYNTHETIC: scripts/gen_synthetic.py (not recorded from Slurm)",
        "environment": {"SLURM_TIME_FORMAT": "%s"},
        "sacct_window": [float(window[0]), float(window[1])],
        "note": (
            "SYNTHETIC sample generated by scripts/gen_synthetic.py, NOT recorded from a Slurm cluster. "
            f"Agave-like classic fair-share cluster: {n_users} users (1 share each), {len(tree)} associations, "
            f"Pareto-like usage (truncated Pareto, index {alpha}, {active_frac:.0%} active, mean {mean_core_hours:g} core-hours/user), "
            f"d={damping}; {n_under} users print FairShare 0.000000 (underflow). "
            "Fair-share columns computed with Slurm's classic formulas; config.txt is the testbed's real "
            "scontrol output with ClusterName, PriorityDecayHalfLife, PriorityCalcPeriod changed."
        ),
        "stats": {
            "users": n_users,
            "associations": len(tree),
            "accounts": sum(1 for a in tree if not a.user) - 1,
            "top_level_accounts": sum(1 for a in tree if not a.user and a.depth == 1),
            "active_users": sum(1 for a in tree if a.user and a.account != "root" and a.raw_usage > 0),
            "underflow_users": n_under,
            "users_f_below_1e-6": sum(1 for a in tree if a.user and a.account != "root" and a.fairshare < 1e-6),
            "users_f_at_most_half": sum(1 for a in tree if a.user and a.account != "root" and a.fairshare <= 0.5),
            "jobs": jobs if jb is not None else 0,
            "seed": seed,
        },
        "commands": {
            name: {
                "argv": ARGV[name] if name != "sacct" else
                ["sacct", "-a", "-X", "-T", "-P", "-S", iso(window[0]), "-E", iso(window[1]), "-o", SACCT_FIELDS],
                "started_at": times[name][0],
                "finished_at": times[name][1],
            }
            for name in ("config", "sshare", "squeue", "sprio", "qos", "sacct")
        },
    }
    return Sample(tree, jb, window, texts, meta)


README = """# {name}: SYNTHETIC sample (not recorded from Slurm)

This folder was **generated** by `scripts/gen_synthetic.py`; it is **NOT** recorded from a Slurm
cluster. It has the files and exact text formats of a real `fscontrol capture` (see
`samples/testbed-basic/`), so `RecordedSlurm` and `fscontrol collect --source {path}` read it like
a recording, and `meta.json` says `"synthetic": true`.

Regenerate (byte for byte identical):

    .venv/bin/python {cmd}

What it is: an Agave-like cluster (Yalim, PEARC'20) under classic fair-share
(`PriorityFlags=NO_FAIR_TREE`, d = {damping}): {users} users with one share each in {top}
top-level accounts, some split into two-level sub-accounts ({accounts} account rows; an account's
RawShares is the number of users below it, so every user's NormShares is 1/(N+1)), {assocs}
associations. Usage is Pareto-like ({active} of the users have usage, a few power users hold most
of it). NormShares, NormUsage, EffectvUsage and FairShare are computed by the generator with
Slurm's classic formulas and printed like sshare (6 decimals): {under} users' FairShare
underflows to 0.000000, and {half} users have F <= 0.5 (classic fair-share gives an idle user a
share of its account's usage, so busy accounts pull all their members down). `sacct.txt` is a
one-hour window of {jobs} synthetic allocations; `squeue.txt`/`sprio.txt` list its running and
pending jobs. `config.txt` is the testbed's real `scontrol show config` with ClusterName,
PriorityDecayHalfLife (7-00:00:00), PriorityCalcPeriod (00:05:00) and the timestamp changed; its
other lines (paths, NEXT_JOB_ID, ...) still describe the testbed.

Use it for scale and shape (parsing, storage, status at 2,500 users), never as evidence of how
a real Slurm behaves.
"""


def write_sample(sample: Sample, out: Path) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in sample.texts.items():
        (out / f"{name}.txt").write_text(text)
    (out / "meta.json").write_text(json.dumps(sample.meta, indent=2) + "\n")
    st = sample.meta["stats"]
    (out / "README.md").write_text(
        README.format(
            name=out.name,
            path=sample.meta["generated_by"].split("--out ", 1)[1],
            cmd=sample.meta["generated_by"],
            damping=sample.meta["generated_by"].split("--damping ")[1].split()[0] if "--damping" in sample.meta["generated_by"] else 1,
            users=f"{st['users']:,}",
            accounts=st["accounts"],
            top=st["top_level_accounts"],
            half=f"{st['users_f_at_most_half']:,}",
            assocs=f"{st['associations']:,}",
            active=f"{st['active_users']:,}",
            under=st["underflow_users"],
            jobs=f"{st['jobs']:,}",
        )
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=2500)
    ap.add_argument("--accounts", type=int, default=None, help="top-level accounts (default users/20)")
    ap.add_argument("--jobs", type=int, default=5000, help="allocations in the sacct window")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--damping", type=int, default=1, help="FairShareDampeningFactor written to the config")
    ap.add_argument("--out", default="samples/synthetic-agave")
    args = ap.parse_args(argv)
    if args.users < 1 or args.jobs < 0 or not 1 <= args.damping <= 65535:
        ap.error("need --users >= 1, --jobs >= 0, 1 <= --damping <= 65535")
    s = generate(args.users, args.accounts, args.jobs, args.seed, damping=args.damping, out=args.out)
    write_sample(s, Path(args.out))
    st = s.meta["stats"]
    print(
        f"wrote SYNTHETIC sample {args.out}: {st['associations']} associations ({st['users']} users, "
        f"{st['active_users']} active), {st['jobs']} jobs, {st['underflow_users']} users with FairShare 0.000000",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
