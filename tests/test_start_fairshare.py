"""Fair-share charged and decayed through the start estimate's horizon (issue #32 item 4;
fscontrol/forecast/startfs.py). Hand-worked: a running job (or a job the estimate starts) charges
its account past the other's F and the order flips; one charge short of it, it does not. With
nothing charged the estimates are exactly those with fair-share held."""

from __future__ import annotations

import random

import pytest

from fscontrol.forecast import start as st
from fscontrol.forecast import startfs
from fscontrol.model.fairshare import compute_fairshare
from fscontrol.records import ShareRow
from fscontrol.sim.slurmsched import SlurmSched

NOW = 1_000_000.0
SC = SlurmSched(node_cpus=128)
# classic, d = 1, PriorityWeightFairShare 1000, a pass every minute, no decay (half-life 0)
PAIRS = {"PriorityWeightFairShare": "1000", "PriorityFlags": "NO_FAIR_TREE", "FairShareDampeningFactor": "1",
         "PriorityCalcPeriod": "00:01:00", "PriorityDecayHalfLife": "0"}


def rows(ua: float = 100_000, ub: float = 100_000) -> list[ShareRow]:
    # two accounts of one share each, one user in each: NormShares 0.5 for all four
    return [ShareRow("root", "", "", 0, None, False, 1.0, int(ua + ub), 1.0, 1.0, None),
            ShareRow("A", "", "root", 1, 1, False, None, int(ua), None, None, None),
            ShareRow("A", "alice", "A", 2, 1, False, None, int(ua), None, None, None),
            ShareRow("B", "", "root", 1, 1, False, None, int(ub), None, None, None),
            ShareRow("B", "bob", "B", 2, 1, False, None, int(ub), None, None, None)]


def job(i, user, acct, state, cpus, limit, start=None, prio=0.0):
    return st.StartJob(str(i), user, acct, "normal", state, cpus, limit, start, prio, "Priority" if state == "PENDING" else "None",
                   NOW)


def F(mine: float, total: float) -> float:
    # alice alone in A: her EffectvUsage is A's NormUsage; F = 2^(-(UE / 0.5) / 1)
    return 2.0 ** (-(mine / total) / 0.5)


def starts(jobs, fs=True, pairs=PAIRS, usage=(100_000, 100_000), billing=None):
    m, why = startfs.fairshare_model(rows(*usage), pairs)
    assert m is not None, why
    fair = (m, billing if billing is not None else {}) if fs else None
    return {e.job_id: e.start for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, fairshare=fair)}


def test_a_running_job_charges_its_account_past_the_other_and_the_order_flips():
    # alice's job holds the node (128 CPUs, billing 128) to NOW + 180. Passes at NOW + 30, 90, 150
    # (the phase half a period on). Each pass prices the jobs with the F of the usage before its own
    # charges (slurmctld's F lags RawUsage by one pass): the pass at +30 charges 30 s x 128 = 3,840,
    # the one at +90 prices with it and charges 60 s more, the one at +150 prices with A's usage
    # 111,520 over root's 211,520. Bob's job is `gap` below alice's: it goes first if
    # 1000 x (F_bob - F_alice) > gap at that pass.
    lead = 1000 * (F(100_000, 211_520) - F(111_520, 211_520))
    assert 37 < lead < 38  # the hand-worked figure: 37.76
    assert 1000 * (F(100_000, 203_840) - F(103_840, 203_840)) < 37  # at NOW + 90: not yet (13.07)
    for gap, first in ((37, "3"), (38, "2")):
        jobs = [job(1, "alice", "A", "RUNNING", 128, 180, start=NOW),
                job(2, "alice", "A", "PENDING", 128, 600, prio=1500 + gap), job(3, "bob", "B", "PENDING", 128, 600, prio=1500)]
        got = starts(jobs)
        other = "2" if first == "3" else "3"
        assert (got[first], got[other]) == (NOW + 180, NOW + 780), gap
        held = starts(jobs, fs=False)  # fair-share held: alice's job first whatever the gap
        assert (held["2"], held["3"]) == (NOW + 180, NOW + 780)


def test_a_job_the_estimate_starts_is_charged_too():
    # no running job: alice's 64-CPU job starts now and charges A 64 a second until NOW + 300; her
    # 128-CPU job and bob's wait for the node. The last pass before NOW + 300 (at +270) prices with
    # A's usage after the pass at +210: 100,000 + 210 x 64 = 113,440 of 213,440; the one before
    # (+210) with 109,600 of 209,600. Bob overtakes her if the fair-share gap exceeds the priority gap.
    lead = 1000 * (F(100_000, 213_440) - F(113_440, 213_440))
    lead_before = 1000 * (F(100_000, 209_600) - F(109_600, 209_600))
    assert lead_before < 40 < lead < 50  # 31.8 and 46.8
    for gap, first in ((40, "3"), (50, "2")):
        jobs = [job(1, "alice", "A", "PENDING", 64, 300, prio=3000),
                job(2, "alice", "A", "PENDING", 128, 600, prio=1500 + gap), job(3, "bob", "B", "PENDING", 128, 600, prio=1500)]
        got = starts(jobs)
        assert got["1"] == NOW
        other = "2" if first == "3" else "3"
        assert (got[first], got[other]) == (NOW + 300, NOW + 900), gap
    assert starts(jobs, fs=False)["2"] == NOW + 300


def test_billing_sets_the_charge():
    # the same job billed 2 a CPU (squeue's billing=256) charges twice as fast: the pass at +150
    # prices with A at 100,000 + 90 x 256 = 123,040 of 223,040, and a 60-point gap is overtaken
    # (71.5); billed 128 (its CPUs), 37.8: not
    assert 1000 * (F(100_000, 223_040) - F(123_040, 223_040)) > 60
    jobs = [job(1, "alice", "A", "RUNNING", 128, 180, start=NOW),
            job(2, "alice", "A", "PENDING", 128, 600, prio=1560), job(3, "bob", "B", "PENDING", 128, 600, prio=1500)]
    assert starts(jobs)["2"] == NOW + 180
    assert starts(jobs, billing={"1": 256.0})["3"] == NOW + 180


def test_the_present_factor_is_sshare_s_and_the_next_pass_applies_the_last_charge():
    # slurmctld's F lags RawUsage by one pass: sshare's FairShare column is the F in the priorities
    # now, its RawUsage already holds the last real pass's charges. A at 111,520 of 211,520 but both
    # printed 0.5 (the last pass charged A): the first modelled pass (+30) moves F to the model's,
    # bob's lead 37.76 > 37 and he goes first when alice's job ends at +60. Printed as the model
    # computes them, nothing moves and alice's job stays first.
    def tree(fa, fb):
        r = rows(111_520, 100_000)
        return [x._replace(fairshare=fa) if x.user == "alice" else x._replace(fairshare=fb) if x.user == "bob" else x
                for x in r]
    jobs = [job(1, "alice", "A", "RUNNING", 128, 60, start=NOW),
            job(2, "alice", "A", "PENDING", 128, 600, prio=1537), job(3, "bob", "B", "PENDING", 128, 600, prio=1500)]
    for printed, first in (((0.5, 0.5), "3"), ((round(F(111_520, 211_520), 6), round(F(100_000, 211_520), 6)), "2")):
        m, _ = startfs.fairshare_model(tree(*printed), PAIRS)
        got = {e.job_id: e.start for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, fairshare=(m, {}))}
        assert got[first] == NOW + 60, printed


def test_decay_alone_moves_no_factor():
    # with a half-life, every usage decays alike (Slurm's factor 1 - 0.693 / T a second): the F of
    # each association does not move, and the F after a charge is model.fairshare's on the decayed
    # and charged usage (an independent code)
    import numpy as np

    pairs = dict(PAIRS, PriorityDecayHalfLife="00:05:00")
    m, _ = startfs.fairshare_model(rows(100_000, 50_000), pairs)
    jobs = [job(1, "alice", "A", "RUNNING", 128, 120, start=NOW), job(2, "bob", "B", "PENDING", 8, 600, prio=1)]
    b = startfs.bind(m, jobs[1:], jobs[:1], {}, NOW)
    p = startfs.Passes(NOW, NOW + 86400, 1, None, b, [1.0], [NOW], [NOW + 120])
    f = 1 - 0.693 / 300
    assert not p._apply(np.zeros(2), 60.0) and p.dfs is None and not p.dirty
    assert p.usage[0] == pytest.approx(150_000 * f ** 60)
    assert not p._apply(np.array([0.0, 30.0]), 60.0) and p.dirty  # charged: this pass's F is the old one
    assert p._apply(np.zeros(2), 0.0)  # the next pass prices with the charged usage
    x = m.index  # tree order: breadth-first (root, A, B, alice, bob)
    u = {k: p.usage[i] for k, i in x.items()}
    new = compute_fairshare([ShareRow("root", "", "", 0, None, False, 1.0, u[("root", "")], 1.0, 1.0, None),
                             ShareRow("A", "", "root", 1, 1, False, None, u[("A", "")], None, None, None),
                             ShareRow("A", "alice", "A", 2, 1, False, None, u[("A", "alice")], None, None, None),
                             ShareRow("B", "", "root", 1, 1, False, None, u[("B", "")], None, None, None),
                             ShareRow("B", "bob", "B", 2, 1, False, None, u[("B", "bob")], None, None, None)], 1.0)
    charge = 30 * 128 * f ** 30  # alice's job, 30 s at billing 128, pre-decayed as Slurm's pass
    assert u[("A", "alice")] == pytest.approx(100_000 * f ** 120 + charge)
    assert u[("B", "bob")] == pytest.approx(50_000 * f ** 120)
    fa = startfs.factors(m, p.usage, np)
    assert [fa[x[a.key]] for a in new] == pytest.approx([a.fairshare for a in new], rel=1e-12)
    assert p.dfs[0] == pytest.approx(1000 * (fa[x[("B", "bob")]] - p.f0[x[("B", "bob")]]))


def test_factors_match_model_fairshare_on_random_trees():
    # FairShare=parent links, zero shares, users deep and at the first tier: the vectorised F is
    # model.fairshare.compute_fairshare's (the agent's code, tested against sshare)
    import numpy as np

    for seed in range(40):
        rng = random.Random(seed)
        out = [ShareRow("root", "", "", 0, None, False, 1.0, 0, None, None, None)]
        accts = ["root"]
        for k in range(rng.randint(1, 6)):
            par = rng.choice(accts)
            depth = next(r.depth for r in out if r.account == par and not r.user) + 1
            sp = rng.random() < 0.2
            out.append(ShareRow(f"a{k}", "", par, depth, None if sp else rng.randint(0, 5), sp, None,
                                rng.randint(0, 10**6), None, None, None))
            accts.append(f"a{k}")
        for k in range(rng.randint(1, 8)):
            par = rng.choice(accts)
            depth = next(r.depth for r in out if r.account == par and not r.user) + 1
            sp = rng.random() < 0.1
            out.append(ShareRow(par, f"u{k}", par, depth, None if sp else rng.randint(0, 3), sp, None,
                                rng.randint(0, 10**6), None, None, None))
        # each account's usage at least its children's, root the total
        use = {r.key: r.raw_usage for r in out}
        for r in reversed(out[1:]):
            key = (r.parent, "") if not r.user else (r.account, "")
            use[key] = use[key] + use[r.key] if key != r.key else use[key]
        out = [r._replace(raw_usage=use[r.key]) for r in out]
        d = rng.choice([1, 2, 5])
        m, why = startfs.fairshare_model(out, dict(PAIRS, FairShareDampeningFactor=str(d)))
        assert m is not None, why
        want = {a.key: a.fairshare for a in compute_fairshare(out, float(d))}
        got = startfs.factors(m, np.asarray(m.usage, dtype=float), np)
        for k, i in m.index.items():
            assert got[i] == pytest.approx(want[k], rel=1e-12, abs=1e-300), (seed, k)


@pytest.mark.parametrize("aged", [False, True])
def test_with_nothing_charged_the_estimates_are_those_with_fair_share_held(aged):
    # every job billed 0: no pass moves any F, and every start time is the held one, exactly (and
    # billed their CPUs, some estimates move: the comparison is not idle). bf_window 2 h: passes
    # within it only, the test's cost
    sc = SlurmSched(node_cpus=128, bf_window_s=7200.0)
    moved = 0
    for seed in range(40):
        rng = random.Random(seed)
        jobs, used, i = [], 0, 0
        while used < 96:
            c = rng.randint(1, 64)
            lim = rng.uniform(60, 3600)
            jobs.append(job(i, rng.choice(["alice", "bob"]), "", "RUNNING", c, lim, start=NOW - rng.uniform(0, lim)))
            used += c
            i += 1
        for _ in range(rng.randint(1, 40)):
            u = rng.choice(["alice", "bob"])
            jobs.append(job(i, u, "", "PENDING", rng.randint(1, 128), rng.uniform(60, 7200), prio=float(rng.randrange(3000))))
            i += 1
        from dataclasses import replace

        jobs = [replace(j, account="A" if j.user == "alice" else "B",
                        submit=NOW - rng.uniform(0, 1200)) for j in jobs]
        age = (1000.0, 600.0, 60.0) if aged else None
        m, _ = startfs.fairshare_model(rows(), PAIRS)
        kw = dict(now=NOW, total_cpus=128, sched=sc, fractions={"alice": 0.5}, age=age)
        held = [(e.job_id, e.start, e.early, e.late) for e in st.estimate(jobs, **kw)]
        zero = [(e.job_id, e.start, e.early, e.late)
                for e in st.estimate(jobs, fairshare=(m, {j.job_id: 0.0 for j in jobs}), **kw)]
        assert zero == held, seed
        charged = [(e.job_id, e.start, e.early, e.late) for e in st.estimate(jobs, fairshare=(m, {}), **kw)]
        moved += charged != held
    assert moved >= 3


FT = dict(PAIRS, PriorityFlags="")  # Fair Tree, Slurm's default


def test_fair_tree_a_running_job_flips_the_order_at_the_first_pass():
    # Fair Tree: F = rank / users over the tree. A and B tied (LevelFS 0.5 / (100,000 / 200,000) = 1
    # each): alice and bob share the top rank, F 1.0 each. The pass at +30 charges A 30 s x 128 =
    # 3,840 and ranks from the usage after it (fair_tree.c: no lag, unlike classic): LevelFS A =
    # 0.5 / (103,840 / 203,840) = 0.9815 < B's 1.0192, so bob ranks 2 (F 1.0), alice 1 (F 0.5):
    # alice's job loses 1000 x 0.5 = 500 points. Her job 1000, bob's 900: bob's goes first when the
    # node frees; bob's at 400 (600 below): not.
    assert abs(0.5 / (103_840 / 203_840) - 0.9815) < 1e-4 and abs(0.5 / (100_000 / 203_840) - 1.0192) < 1e-4
    for bob_prio, first in ((900, "3"), (400, "2")):
        jobs = [job(1, "alice", "A", "RUNNING", 128, 180, start=NOW), job(2, "alice", "A", "PENDING", 128, 60, prio=1000),
                job(3, "bob", "B", "PENDING", 128, 60, prio=bob_prio)]
        got = starts(jobs, pairs=FT)
        held = starts(jobs, fs=False, pairs=FT)
        assert held == {"2": NOW + 180, "3": NOW + 240}
        assert min(got, key=got.get) == first, (bob_prio, got)
    # no lag: alice's job ends at +40, after the first pass. Fair Tree has flipped by then; classic
    # (F from the usage before the pass's charges) flips a pass later, so alice's goes first there
    jobs = [job(1, "alice", "A", "RUNNING", 128, 40, start=NOW), job(2, "alice", "A", "PENDING", 128, 60, prio=1000),
            job(3, "bob", "B", "PENDING", 128, 60, prio=900)]
    assert starts(jobs, pairs=FT) == {"3": NOW + 40, "2": NOW + 100}
    assert starts(jobs, pairs=PAIRS) == {"2": NOW + 40, "3": NOW + 100}


def test_fair_tree_ranks_match_model_fairtree_on_random_trees():
    # the ranker startfs uses (sim.ftrank, over the model's tree and order) against
    # model.fairtree.compute_fair_tree on the same rows, after random charges
    from fscontrol.model.fairshare import build_tree
    from fscontrol.model.fairtree import compute_fair_tree

    rng = random.Random(7)
    for _ in range(40):
        rws = [ShareRow("root", "", "", 0, None, False, 1.0, 0, 1.0, 1.0, None)]
        accts = []
        for a in range(rng.randint(2, 5)):
            name = f"a{a}"
            parent = rng.choice(["root"] + [x for x, d in accts if d == 1])
            depth = 1 if parent == "root" else 2
            accts.append((name, depth))
            rws.append(ShareRow(name, "", parent, depth, rng.randint(1, 4), False, None, 0, None, None, None))
            for u in range(rng.randint(1, 3)):
                rws.append(ShareRow(name, f"u{u}", name, depth + 1, rng.randint(1, 4), False, None, 0, None, None, None))
        # usage: each user's random, accounts and root the sums (as sshare prints them)
        t = build_tree(rws)
        use = {k: (rng.randint(1, 10**6) if k[1] else 0) for k in t.order}
        for k in reversed(t.order[1:]):
            use[t.parent[k]] += use[k]
        rws = [r._replace(raw_usage=use[(r.account, r.user)]) for r in rws]
        m, why = startfs.fairshare_model(rws, FT)
        assert m is not None, why
        got = startfs._ranker(m).update([float(u) for u in m.usage])
        want = {(a.account, a.user): a.fairshare for a in compute_fair_tree(rws).assocs if a.user}
        assert {m.tree.order[i]: f for i, f in got.items()} == want


def test_held_where_it_cannot_be_built():
    m, why = startfs.fairshare_model(rows(), dict(PAIRS, PriorityWeightFairShare="0"))
    assert m is None and "PriorityWeightFairshare" in why
    m, why = startfs.fairshare_model(rows()[1:], PAIRS)  # no root row (PrivateData=usage, say)
    assert m is None and "tree" in why


def test_billing_from_squeue():
    # real 22.05 output of startfs.SQUEUE_TRES_ARGS (the testbed): running jobs' allocated TRES,
    # pending jobs' requested
    text = "4|cpu=32,mem=1M,node=1,billing=32|\n3|cpu=64,mem=1M,node=1,billing=64|\n1|cpu=64,node=1,billing=64|\n9|N/A|\n"
    assert startfs.parse_billing(text) == {"4": 32.0, "3": 64.0, "1": 64.0}


def test_over_the_cap_fair_share_is_held_and_said():
    # over startfs.MAX_PENDING pending jobs no command is run (source None is never touched): held,
    # with the note the output prints
    fs, note = startfs.read_live(None, PAIRS, pending=startfs.MAX_PENDING + 1)
    assert fs is None and f"{startfs.MAX_PENDING + 1:,} jobs pending" in note and "held" in note


def test_fair_tree_over_the_association_cap_is_held_and_said():
    # the ranker's set-up and first ranking grow with the tree (~0.2 s at 20,000 associations, ~1 s
    # at 100,000): above startfs.MAX_FAIR_TREE_ASSOCS Fair Tree is held, with the reason; classic not
    rws = rows()
    m, _ = startfs.fairshare_model(rws, FT)
    assert startfs.too_costly(m) == ""
    why = startfs.too_costly(m, max_assocs=len(rws) - 1)
    assert why.startswith(f"Fair Tree over {len(rws)} associations, above the {len(rws) - 1}") and "cost" in why
    m, _ = startfs.fairshare_model(rws, PAIRS)
    assert startfs.too_costly(m, max_assocs=1) == ""
