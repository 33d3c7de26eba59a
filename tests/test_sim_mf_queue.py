"""The multifactor engine's merged queue (`pm` mode in sim/mfcore.py: under EASY with the presets'
classic priorities, each association's pending jobs in index order, keyed at the pass on demand,
each pending user's F at a pass computed only when read, the associations' first keys taken in
order from bounds that hold for mfcore.LZ_W passes,
instead of every job re-keyed and the queue re-sorted at every pass; taken and left at passes as the
queue grows and shrinks) against the engine with the mode off (mfcore.PM_ON = False: the re-keyed, re-sorted queue, as before the change), on the
same jobs: every start and end time, the start order, every association's final usage, the pass
records and counters, identical (repr of the whole run). Both ways of picking the job that
backfills are run (mfcore.PM_ENUM: 0, the queue walked in order; large, the candidates keyed), and
the mode taken at every pass or switched in and out often (mfcore.PM_QUEUE_ON/OFF), on
overloaded logs (arrivals 2x and 4x faster: long queues, many backfill picks) and random
overloaded workloads with several accounts and users. Fair Tree too (the SDSC prefix and the random
trees): its F from the ranker, each association's bound held while the ranker leaves its F as it
was (a ranking that changes it drops the bound: mfcore's ft_drop). The compiled engine too where
it is built."""

from __future__ import annotations

import random
from dataclasses import asdict
from pathlib import Path

import pytest

from fscontrol.sim import accel, get_policy, read_swf
from fscontrol.sim.mfconfig import PriorityConfig
from fscontrol.sim.multifactor import ControlSpec, simulate_multifactor
from fscontrol.sim.workload import SimJob, Workload

ROOT = Path(__file__).resolve().parents[1]
SWF = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"


def _engines():
    out = [accel.python_engine()]
    if accel.compiled_engine() is not None:
        out.append(accel.compiled_engine())
    return out


def compressed(w: Workload, factor: float) -> Workload:
    jobs = [SimJob(j.job_id, j.submit / factor, j.run, j.estimate, j.size, j.user, j.account) for j in w.jobs]
    return Workload(f"{w.name} x{factor:g}", w.nodes, jobs)


VARIANTS = (  # label, PM_ON, PM_ENUM, PM_QUEUE_ON, PM_QUEUE_OFF, LZ_W (None: the module's)
    ("off", False, None, None, None, None),
    ("walk", True, 0, 1, 0, None),  # the mode at every pass with a queue, the queue walked for each pick
    ("keyed", True, 10**9, 1, 0, None),  # ... the candidates keyed
    ("switching", True, None, 6, 3, None),  # in and out of the mode as the queue grows and shrinks
    ("bound-1", True, None, 1, 0, 1),  # the first keys' bounds renewed at every pass
    ("bound-1000", True, None, 1, 0, 1000),  # ... kept 1,000 passes (loose: many keyed)
    ("default", True, None, None, None, None),
)


def _runs(mod, monkeypatch, thunk):
    """The run with the mode off, and with it on in each way."""
    saved = {k: getattr(mod, k) for k in ("PM_ON", "PM_ENUM", "PM_QUEUE_ON", "PM_QUEUE_OFF", "LZ_W")}
    out = {}
    for label, *vals in VARIANTS:
        for k, v in zip(saved, vals):
            monkeypatch.setattr(mod, k, saved[k] if v is None else v)
        with accel.using(mod):
            out[label] = thunk()
    return out


def _same(runs) -> None:
    off = runs["off"]
    assert len(off.order) > 0 and off.passes > 0
    for label, *_ in VARIANTS[1:]:
        assert repr(asdict(runs[label])) == repr(asdict(off)), label


@pytest.mark.parametrize("mod", _engines(), ids=lambda m: m.__name__)
@pytest.mark.parametrize("policy", ["mf-classic", "mf-classic+hybrid", "mf-fairtree"])
@pytest.mark.parametrize("factor", [1.0, 2.0, 4.0])
def test_sdsc_prefix_same_schedule_with_the_merged_queue(monkeypatch, mod, policy, factor):
    w = compressed(read_swf(SWF, limit=4000), factor)
    name, _, ctl = policy.partition("+")
    pol = get_policy(name, control=ControlSpec(ctl, u_star=20000 * 3600.0) if ctl else None)

    def run():
        return simulate_multifactor(w, pol.priority, control_spec=pol.control, depth=pol.depth,
                                    backfill=pol.backfill == "easy")

    runs = _runs(mod, monkeypatch, run)
    _same(runs)
    if factor >= 2:  # overloaded: a tenth of the jobs wait over 2 hours (long queues to pick from)
        r = runs["off"]
        waits = sorted(s - j.submit for s, j in zip(r.start, w.jobs))
        assert waits[len(waits) * 9 // 10] > 7200


def random_overloaded(seed: int) -> Workload:
    rng = random.Random(seed)
    nodes = rng.choice([16, 32, 64])
    users = [(f"a{a}", f"u{a}{u}") for a in range(rng.randint(1, 4)) for u in range(rng.randint(1, 5))]
    t = 0.0
    jobs = []
    for i in range(rng.randint(200, 600)):
        t += rng.choice([0.0, 0.0, 5.0, 30.0, 60.0, 120.0])
        acct, user = rng.choice(users)
        run = float(rng.randint(1, 120) * 60 + rng.choice([0, 7, 13]))
        est = run + float(rng.choice([0, 0, 60, 600, 3600, 86400]))
        size = rng.choice([1, 1, 1, 2, 2, 3, 4, 8, rng.randint(1, nodes)])
        jobs.append(SimJob(str(i + 1), t, run, est, size, user=user, account=acct))
    return Workload(f"random-{seed}", nodes, jobs)


@pytest.mark.parametrize("mod", _engines(), ids=lambda m: m.__name__)
@pytest.mark.parametrize("seed", range(12))
def test_random_overloaded_same_schedule_with_the_merged_queue(monkeypatch, mod, seed):
    w = random_overloaded(seed)
    rng = random.Random(1000 + seed)
    prio = PriorityConfig(weight_age=float(rng.choice([1000, 5000])), weight_fairshare=float(rng.choice([10000, 100000])),
                          max_age_s=float(rng.choice([600, 3600, 86400])), calc_period_s=float(rng.choice([60, 300])),
                          half_life_s=float(rng.choice([600, 3600])), damping=rng.choice([1, 3]), fair_tree=False,
                          limits=rng.choice([True, False]))
    backfill = seed % 4 != 3

    def run():
        return simulate_multifactor(w, prio, backfill=backfill)

    _same(_runs(mod, monkeypatch, run))


def random_tree_workload(seed: int):
    """A random overloaded workload on a random association tree: accounts under root and under
    other accounts (FS_LEVEL users below the first tier), RawShares 1-5, FairShare=parent users,
    many associations (the pass's walk keys every pending user's first job; the backfill pick
    takes each association's least candidate), random usage at the start, and the controller's
    dummy association."""
    from fscontrol.records import ShareRow
    from fscontrol.sim.mfconfig import DUMMY

    rng = random.Random(seed)
    nodes = rng.choice([16, 32, 64])
    rows = [ShareRow("root", "", "", 0, None, False, 1.0, 0, None, 1.0, None)]
    users: list[tuple[str, str]] = []
    accounts: list[tuple[str, int]] = [("root", 0)]
    for k in range(rng.randint(3, 8)):
        parent, depth = rng.choice(accounts)
        acct = f"acc{k}"
        rows.append(ShareRow(acct, "", parent if parent != "root" else "root", depth + 1, rng.randint(1, 5), False,
                             None, 0, None, None, None))
        accounts.append((acct, depth + 1))
        for u in range(rng.randint(1, 6)):
            parent_share = rng.random() < 0.2
            rows.append(ShareRow(acct, f"u{k}_{u}", acct, depth + 2, None if parent_share else rng.randint(1, 5),
                                 parent_share, None, 0, None, None, None))
            users.append((acct, f"u{k}_{u}"))
    rows.append(ShareRow(DUMMY[0], "", "root", 1, 1, False, None, 0, None, None, None))
    rows.append(ShareRow(DUMMY[0], DUMMY[1], DUMMY[0], 2, 1, False, None, 0, None, None, None))
    usage = {k: float(rng.choice([0, 0, rng.randint(1, 10**6)])) for k in users}
    t = 0.0
    jobs = []
    for i in range(rng.randint(300, 700)):
        t += rng.choice([0.0, 0.0, 5.0, 30.0, 60.0, 120.0])
        acct, user = rng.choice(users)
        run = float(rng.randint(1, 120) * 60 + rng.choice([0, 7, 13]))
        est = run + float(rng.choice([0, 0, 60, 600, 3600, 86400]))
        size = rng.choice([1, 1, 1, 2, 2, 3, 4, 8, rng.randint(1, nodes)])
        jobs.append(SimJob(str(i + 1), t, run, est, size, user=user, account=acct))
    return Workload(f"random-tree-{seed}", nodes, jobs), tuple(rows), usage


@pytest.mark.parametrize("mod", _engines(), ids=lambda m: m.__name__)
@pytest.mark.parametrize("fair_tree", [False, True], ids=["classic", "fairtree"])
@pytest.mark.parametrize("seed", range(10))
def test_random_tree_same_schedule_with_the_merged_queue(monkeypatch, mod, fair_tree, seed):
    w, rows, usage = random_tree_workload(seed)
    rng = random.Random(2000 + seed)
    prio = PriorityConfig(weight_age=float(rng.choice([1000, 5000])), weight_fairshare=float(rng.choice([10000, 100000])),
                          max_age_s=float(rng.choice([600, 3600, 86400])), calc_period_s=float(rng.choice([60, 300])),
                          half_life_s=float(rng.choice([600, 3600])), damping=rng.choice([1, 3]), fair_tree=fair_tree,
                          limits=rng.choice([True, False]))
    # every other seed with the hybrid controller (d and the dummy's padding change under the queue)
    ctl = ControlSpec("hybrid", u_star=float(rng.choice([10**4, 10**6]))) if seed % 2 else None

    def run():
        return simulate_multifactor(w, prio, tree=rows, initial_usage=usage, control_spec=ctl)

    runs = _runs(mod, monkeypatch, run)
    _same(runs)
    assert max(runs["off"].start[i] - j.submit for i, j in enumerate(w.jobs)) > 3600  # a queue formed
