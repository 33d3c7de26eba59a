"""The multifactor engine against an independent reference (tests/mf_reference.py: Slurm's
documented algorithm written plainly, none of the engine's code), pass by pass on random
workloads: every job's start time, and every user's RawUsage and F after every decay pass.
Both the Python engine and, where it is built, the compiled one (fscontrol.sim.accel)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from fscontrol.sim import accel
from fscontrol.sim.mfconfig import PriorityConfig, share_tree
from fscontrol.sim.workload import SimJob, Workload

from mf_reference import simulate_reference


def _engines():
    out = [("python", accel.python_engine())]
    compiled = accel.compiled_engine()
    if compiled is not None:
        out.append(("compiled", compiled))
    return out


@st.composite
def workloads(draw):
    machine = draw(st.sampled_from([8, 16, 32]))
    n_acct = draw(st.integers(1, 3))
    shared = draw(st.booleans())  # a user in several accounts (the per-user and per-association limits differ)
    users = [(f"a{a}", f"u{u}" if shared else f"u{a}{u}") for a in range(n_acct) for u in range(draw(st.integers(1, 3)))]
    n = draw(st.integers(5, 45))
    t = 0.0
    jobs = []
    for i in range(n):
        t += draw(st.sampled_from([0.0, 0.0, 7.0, 30.0, 61.0, 150.0, 400.0, 1000.0]))
        acct, user = draw(st.sampled_from(users))
        run = float(draw(st.integers(1, 60)) * 30 + draw(st.sampled_from([0, 7, 13])))
        est = run + float(draw(st.sampled_from([0, 0, 60, 600, 3600])))
        size = draw(st.integers(1, machine))
        part = draw(st.sampled_from(["", "", "b"]))  # (the per-partition limits; no partition factor)
        jobs.append(SimJob(str(i + 1), t, run, est, size, user=user, account=acct, partition=part))
    return Workload("random", machine, jobs)


@st.composite
def configs(draw):
    return PriorityConfig(
        weight_age=float(draw(st.sampled_from([0, 1000, 5000]))),
        weight_fairshare=float(draw(st.sampled_from([10000, 100000]))),
        weight_jobsize=float(draw(st.sampled_from([0, 0, 500]))),
        max_age_s=float(draw(st.sampled_from([600, 3600, 86400]))),
        calc_period_s=float(draw(st.sampled_from([60, 300]))),
        half_life_s=float(draw(st.sampled_from([600, 3600]))),
        damping=draw(st.sampled_from([1, 1, 3])),
        fair_tree=draw(st.booleans()),
        favor_small=draw(st.booleans()),
        limits=draw(st.booleans()),
    )


def near_tied_users(rows, usage: dict, rel: float = 1e-9) -> set:
    """The user associations under siblings whose Fair Tree LevelFS (S / (U / the parent's U), from
    the users' usage; an account's is the sum of its users') are equal to within rel but not 0 or
    infinite: a mathematical tie, which slurmctld decides by the last bits of its long-double S/U
    (fair_tree.c `_cmp_level_fs`, `_calc_tree_fs`: `==` on level_fs) and the engine (usage scaled by
    the decay, S = usage / G) and the reference (usage decayed in place) by their own rounding."""
    kids: dict = {}
    for r in rows:
        if r.depth:
            kids.setdefault((r.parent, ""), []).append((r.account, r.user))
    raw = {(r.account, r.user): (r.raw_shares or 0) for r in rows}
    memo: dict = {}

    def use(k):
        if k not in memo:
            memo[k] = usage.get(k, 0.0) if k[1] else sum(use(c) for c in kids.get(k, []))
        return memo[k]

    def users_under(k):
        return {k} if k[1] else set().union(*[users_under(c) for c in kids.get(k, [])])

    out: set = set()
    for p, ch in kids.items():
        level, pu = sum(raw[c] for c in ch), use(p)
        lf = {c: raw[c] / level / (use(c) / pu) for c in ch if raw[c] and pu > 0 and use(c) > 0}
        for a in lf:
            for b in lf:
                if a < b and math.isclose(lf[a], lf[b], rel_tol=rel):
                    out |= users_under(a) | users_under(b)
    return out


def check_same(w: Workload, prio: PriorityConfig, sched=None) -> set:
    """The engines against the reference: every start and end, and RawUsage and F after every pass.
    Under Fair Tree, a pass where they rank mathematically tied siblings differently (see
    `near_tied_users`: only those siblings' users' F may differ) ends the comparison there: from it
    on the runs may part, and the jobs started before it must agree. Returns the engines that parted."""
    rows = share_tree(w, dummy=None)
    ref = simulate_reference(w, prio, rows, sched=sched)
    t0 = w.jobs[0].submit if w.jobs else 0.0
    parted = set()
    for name, eng in _engines():
        run = eng.simulate(w, prio, tree=rows, trace=True, sched=sched)
        horizon = math.inf
        for (t1, u1, f1), (t2, u2, f2) in zip(run.trace, ref.trace):
            assert math.isclose(t1, t2, abs_tol=1e-9), name
            for k in u2:
                assert math.isclose(u1[k], u2[k], rel_tol=1e-9, abs_tol=1e-6), (name, t1, k, u1[k], u2[k])
            bad = {k for k in u2 if not math.isclose(f1[k], f2[k], rel_tol=1e-9, abs_tol=1e-12)}
            if bad and prio.fair_tree:
                tied = near_tied_users(rows, u2)
                assert bad <= tied, (name, t1, {k: (f1[k], f2[k]) for k in bad}, "not a tie", tied)
                horizon = t0 + t2
                parted.add(name)
                break
            for k in bad:
                assert math.isclose(f1[k], f2[k], rel_tol=1e-9, abs_tol=1e-12), (name, t1, k, f1[k], f2[k])
        if horizon == math.inf:
            assert run.start == ref.start, f"{name}: start times differ from the reference"
            assert run.end == ref.end, name
            assert len(run.trace) == len(ref.trace), f"{name}: {len(run.trace)} passes, the reference {len(ref.trace)}"
        else:
            before = [i for i, s in enumerate(ref.start) if s < horizon]
            assert [run.start[i] for i in before] == [ref.start[i] for i in before], f"{name}: starts before the tie"
            assert [run.end[i] for i in before] == [ref.end[i] for i in before], name
            assert not any(s < horizon for i, s in enumerate(run.start) if i not in set(before)), name
    return parted


def _tie_case_6_vs_4_2() -> tuple[Workload, PriorityConfig]:
    """Found at 800 examples: u10's one 6-CPU job and u11's 4- and 2-CPU jobs start together at
    1297 (Fair Tree, a1's two users): mathematically equal usage at the pass at 1320."""
    rows = [(0, 1297, 13, "u00", "a0"), (0, 30, 1, "u00", "a0"), (0, 30, 4, "u11", "a1"), (0, 30, 1, "u00", "a0"),
            (0, 427, 2, "u00", "a0"), (0, 30, 6, "u10", "a1"), (0, 840, 2, "u00", "a0"), (0, 30, 1, "u00", "a0"),
            (1000, 30, 2, "u11", "a1")] + [(1000, 30, 1, "u00", "a0")] * 24
    jobs = [SimJob(str(k + 1), float(s), float(r), float(r), z, user=u, account=a)
            for k, (s, r, z, u, a) in enumerate(rows)]
    prio = PriorityConfig(weight_age=0.0, weight_fairshare=10000.0, weight_jobsize=0.0, max_age_s=600.0,
                          calc_period_s=60.0, half_life_s=600.0, damping=1, fair_tree=True, favor_small=False,
                          limits=False)
    return Workload("random", 16, jobs), prio


def _tie_case_start_times() -> tuple[Workload, PriorityConfig]:
    """Found at 800 examples: u10's 6-CPU job and u12's 4- and 2-CPU jobs start together at 1740;
    at the pass at 1800 their usage is mathematically equal, and the order decides job 12's start
    (2014 if u12 ties with u10, 2100 if it ranks below)."""
    rows = [(0, 1740, 1740, 13, "u00", "a0"), (0, 30, 30, 1, "u00", "a0"), (7, 450, 4050, 4, "u12", "a1"),
            (37, 30, 3630, 2, "u11", "a1"), (98, 643, 1243, 3, "u00", "a0"), (248, 823, 1423, 6, "u10", "a1"),
            (309, 1243, 4843, 3, "u00", "a0"), (709, 30, 30, 1, "u10", "a1"), (1709, 1080, 1080, 2, "u12", "a1"),
            (1709, 30, 30, 11, "u10", "a1"), (1709, 73, 73, 1, "u00", "a0"), (1859, 37, 3637, 4, "u12", "a1")]
    rows += [(2859, 30, 30, 1, "u00", "a0")] * 21
    jobs = [SimJob(str(k + 1), float(s), float(r), float(e), z, user=u, account=a)
            for k, (s, r, e, z, u, a) in enumerate(rows)]
    prio = PriorityConfig(weight_age=0.0, weight_fairshare=10000.0, weight_jobsize=500.0, max_age_s=600.0,
                          calc_period_s=300.0, half_life_s=3600.0, damping=1, fair_tree=True, favor_small=True,
                          limits=False)
    return Workload("random", 16, jobs), prio


@settings(max_examples=int(__import__("os").environ.get("FSCONTROL_REF_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), configs())
@example(*_tie_case_6_vs_4_2())
@example(*_tie_case_start_times())
def test_the_engine_is_the_reference_pass_by_pass(w, prio):
    if check_same(w, prio):
        event("parted at a Fair Tree tie decided by rounding")


@pytest.mark.parametrize("case, users, at", [(_tie_case_6_vs_4_2, {("a1", "u10"), ("a1", "u11")}, 1320.0),
                                             (_tie_case_start_times, {("a1", "u10"), ("a1", "u12")}, 1800.0)])
def test_fair_tree_ties_decided_by_rounding_end_the_comparison(case, users, at):
    """The two cases Hypothesis found: a 6-CPU job against a 4- and a 2-CPU job of the sibling user,
    started in the same second, give the two users mathematically equal usage (6x = 4x + 2x), and
    Fair Tree ranks them by `==` on LevelFS: the engine's S = usage / G rounds them apart (u10 in the first,
    u12 in the second ranked one place lower: F 2/3 instead of 1, 1/2 instead of 3/4), the reference's
    in-place decay keeps them equal (tied). slurmctld's own arithmetic (priority_multifactor.c
    `_apply_new_usage`: double d x pow(f, d) x CPUs added to long-double usage_raw), done with numpy's
    long double, breaks the first (4x + 2x below 6x: the engine's order) and keeps the second: neither
    model is Slurm to the bit. Both are such a tie at that pass, agree before it, and the comparison stops there."""
    w, prio = case()
    ref = simulate_reference(w, prio, share_tree(w, dummy=None))
    usage = next(u for t, u, f in ref.trace if t == at)
    assert users <= near_tied_users(share_tree(w, dummy=None), usage)
    a, b = sorted(users)
    assert usage[a] != 0.0 and math.isclose(usage[a], usage[b], rel_tol=1e-12)
    assert "python" in check_same(w, prio)  # the Python engine parts from the reference at the tie


def test_a_hand_sized_case_has_passes_and_backfill():
    """The comparison is not empty: this case has decay passes, waiting and a backfilled job."""
    jobs = [
        SimJob("1", 0.0, 1200.0, 1800.0, 12, user="u1", account="a"),
        SimJob("2", 10.0, 600.0, 900.0, 16, user="u2", account="b"),  # waits for job 1: the head
        SimJob("3", 20.0, 300.0, 300.0, 4, user="u2", account="b"),  # ends before the shadow: backfilled
        SimJob("4", 30.0, 900.0, 1200.0, 8, user="u1", account="a"),
    ]
    w = Workload("hand", 16, jobs)
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    ref = simulate_reference(w, prio, share_tree(w, dummy=None))
    assert ref.start[2] == 20.0 and ref.start[1] > 20.0  # 3 backfilled beside the waiting head 2
    assert len(ref.trace) > 10
    check_same(w, prio)


@pytest.mark.parametrize("fair_tree", [False, True])
def test_section9_jobs_are_the_reference(fair_tree):
    """A slice of Steffen's section-9 workload (bursts of many users), both fair-share algorithms."""
    from fscontrol.sim.workload import section9_workload

    w = section9_workload(3)
    w = Workload(w.name, w.nodes, w.jobs[:150])
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=100000.0, max_age_s=86400.0, calc_period_s=300.0,
                          half_life_s=3600.0, fair_tree=fair_tree)
    check_same(w, prio)


def test_arrivals_at_one_time_are_backfilled_in_queue_order():
    """Found by the reference: two jobs arrive at once behind a blocked head with room for one of
    them in the head's extra nodes; the higher-priority one (here the later in the list) gets it,
    as in a full pass. The engines tried them in arrival order (the lower-priority one first)."""
    jobs = [SimJob("1", 0.0, 157.0, 157.0, 4, user="u10", account="a1")]
    jobs += [SimJob(str(i), 0.0, 30.0, 30.0, 13 if i == 3 else 1, user="u00", account="a0") for i in range(2, 9)]
    jobs += [SimJob("9", 150.0, 30.0, 30.0, 2, user="u10", account="a1"),
             SimJob("10", 150.0, 30.0, 30.0, 2, user="u00", account="a0")]
    w = Workload("two-at-once", 16, jobs)
    prio = PriorityConfig(weight_fairshare=10000.0, max_age_s=600.0, calc_period_s=60.0, half_life_s=600.0,
                          fair_tree=False, limits=False)
    ref = simulate_reference(w, prio, share_tree(w, dummy=None))
    assert (ref.start[8], ref.start[9]) == (180.0, 150.0)  # u00's job (F 1.0) before u10's (F 0.25)
    check_same(w, prio)


# ----------------------------------------------------------------- slurmctld's scheduler (issue #32)
@st.composite
def scheds(draw):
    from fscontrol.sim.slurmsched import SlurmSched

    return SlurmSched(
        sched_interval_s=float(draw(st.sampled_from([60, 60, 7, 100]))),
        default_queue_depth=draw(st.sampled_from([100, 100, 2])),
        batch_sched_delay_s=float(draw(st.sampled_from([3, 3, 0, 7]))),
        backfill=draw(st.sampled_from([True, True, True, False])),
        bf_interval_s=float(draw(st.sampled_from([30, 30, 45, 13]))),
        bf_window_s=float(draw(st.sampled_from([1440 * 60, 1440 * 60, 600]))),
        bf_resolution_s=float(draw(st.sampled_from([60, 60, 1, 25]))),
        bf_max_job_test=draw(st.sampled_from([500, 500, 3])),
        node_cpus=draw(st.sampled_from([0, 0, 4, 8])),
        complete_s=float(draw(st.sampled_from([0, 0, 1, 2.5]))),
        **draw(st.sampled_from([{}, {}, {}, {}, {}, {}, {"bf_max_job_user": 1}, {"bf_max_job_user": 2}, {"bf_max_job_assoc": 1},
                                {"bf_max_job_part": 2}, {"bf_max_job_user_part": 1}, {"bf_max_job_start": 1},
                                {"bf_max_job_start": 2, "bf_max_job_user": 1}, {"sched_max_job_start": 1},
                                {"sched_max_job_start": 2, "bf_max_job_assoc": 2, "bf_max_job_user": 1},
                                {"partition_job_depth": 1}, {"partition_job_depth": 2, "sched_max_job_start": 1}])),
        **draw(st.sampled_from([{}, {}, {}, {"bf_min_age_reserve_s": 120.0}, {"bf_min_age_reserve_s": 30.0},
                                {"bf_min_prio_reserve": 2**32 - 1}, {"bf_min_prio_reserve": 1500},
                                {"bf_min_prio_reserve": 400, "bf_min_age_reserve_s": 60.0},
                                {"main_min_prio": 1500, "bf_min_prio_reserve": 0}, {"main_min_age_s": 90.0}])),
    )


def check_same_sched(w: Workload, prio: PriorityConfig, sc) -> set:
    return check_same(w, prio, sched=sc)


@settings(max_examples=int(__import__("os").environ.get("FSCONTROL_REF_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), configs(), scheds())
def test_slurm_scheduler_is_the_reference_pass_by_pass(w, prio, sc):
    if check_same_sched(w, prio, sc):
        event("parted at a Fair Tree tie decided by rounding")


def test_slurm_scheduler_hand_case_main_stops_and_backfill_waits_for_its_cycle():
    """One 16-CPU node. Job 1 (12 CPUs) runs; job 2 (16 CPUs, the head) waits for it; job 3 (4
    CPUs, 300 s, ends before job 1's limit) fits beside it. EASY starts 3 at its arrival; slurmctld's
    main scheduler stops at the head, and backfill starts 3 at its next cycle (t = 30). Job 4
    (2 CPUs, 1,000 s: it would end after the head's reservation) never starts beside the head,
    though 0 CPUs are promised to it: the reservation holds the whole node."""
    from fscontrol.sim.slurmsched import SlurmSched

    jobs = [
        SimJob("1", 0.0, 1200.0, 1800.0, 12, user="u1", account="a"),
        SimJob("2", 10.0, 600.0, 900.0, 16, user="u2", account="b"),
        SimJob("3", 20.0, 300.0, 300.0, 4, user="u2", account="b"),
    ]
    w = Workload("hand", 16, jobs)
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    easy = simulate_reference(w, prio, share_tree(w, dummy=None))
    assert easy.start[2] == 20.0
    sc = SlurmSched()
    ref = simulate_reference(w, prio, share_tree(w, dummy=None), sched=sc)
    assert ref.start[:3] == [0.0, 1200.0, 30.0], ref.start
    check_same_sched(w, prio, sc)
    # a 2-CPU job whose limit reaches past the head's reservation, on a 20-CPU node with a 16-CPU
    # head: EASY backfills it into the head's 4 extra CPUs; slurmctld's whole-node reservation does
    # not (it starts with the head, when job 1 ends)
    w2 = Workload("hand2", 20, [jobs[0], SimJob("2", 10.0, 600.0, 900.0, 16, user="u2", account="b"),
                                SimJob("4", 20.0, 1000.0, 3000.0, 2, user="u2", account="b")])
    easy2 = simulate_reference(w2, prio, share_tree(w2, dummy=None))
    assert easy2.start[2] == 20.0  # beside the head, in its extra CPUs
    ref2 = simulate_reference(w2, prio, share_tree(w2, dummy=None), sched=sc)
    assert ref2.start[2] == ref2.start[1] == 1200.0, ref2.start  # not before the head
    check_same_sched(w2, prio, sc)


def test_fair_tree_jobs_after_a_pass_with_nothing_pending_read_its_ranks():
    """Found by issue #32's scheduler work: under Fair Tree a pass with nothing pending did not
    rank the tree (unless traced), so jobs that arrived before the next pass read older ranks (here
    none: F 0 for both users, and u10's job went first by its index). slurmctld ranks at every
    pass: u10 has used CPUs, u00 has not, so u00's job starts first. The engines ran with
    trace=True in the tests above, where they always ranked: here without."""
    jobs = [SimJob("1", 61.0, 397.0, 457.0, 3, user="u10", account="a1"),
            SimJob("2", 122.0, 343.0, 943.0, 2, user="u10", account="a1"),
            SimJob("3", 122.0, 240.0, 240.0, 4, user="u00", account="a0")]
    w = Workload("fair-tree-empty-pass", 8, jobs)
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=True, limits=False)
    rows = share_tree(w, dummy=None)
    ref = simulate_reference(w, prio, rows)
    assert ref.start == [61.0, 362.0, 122.0]
    for name, eng in _engines():
        assert eng.simulate(w, prio, tree=rows).start == ref.start, name


def test_a_cycle_after_a_change_in_the_last_cycles_second_runs():
    """Found by the reference (issue #32): at t=3300 jobs end, a decay pass runs and a backfill
    cycle runs; nothing happens until 3330. backfill.c's `_more_work` compares whole seconds with
    >= (last_job_update >= last_backfill_time), so the 3330 cycle runs: its bf_window (600 s) now
    reaches the 20-CPU job's start (3930), whose reservation pushes the two 13-CPU jobs past the
    window, and the 1-CPU, 270 s job starts at 3330. The engine skipped the cycle ("nothing
    changed since the last") and started it at 3360; the reference ran every cycle."""
    from fscontrol.sim.slurmsched import SlurmSched

    rows = [(0, 450, 24, "u01"), (0, 570, 13, "u01"), (0, 1477, 2, "u01"), (0, 1327, 16, "u02"),
            (0, 1710, 7, "u02")] + [(0, 30, 1, "u00")] * 5 + [
            (0, 360, 13, "u02"), (0, 810, 20, "u00"), (0, 30, 1, "u00"), (0, 960, 13, "u00"),
            (0, 30, 20, "u00"), (0, 30, 1, "u00"), (0, 630, 8, "u00"), (0, 360, 13, "u00"), (0, 30, 1, "u00"),
            (400, 30, 1, "u00"), (800, 30, 1, "u00"), (1200, 30, 1, "u00"), (2200, 30, 1, "u00"),
            (3200, 270, 1, "u02")] + [(3200, 30, 1, "u00")] * 13
    jobs = [SimJob(str(k + 1), float(s), float(r), float(r), z, user=u, account="a0")
            for k, (s, r, z, u) in enumerate(rows)]
    w = Workload("same-second", 32, jobs)
    prio = PriorityConfig(weight_age=0.0, weight_fairshare=10000.0, max_age_s=600.0, calc_period_s=60.0,
                          half_life_s=3600.0, fair_tree=False, limits=False)
    sc = SlurmSched(bf_window_s=600.0, node_cpus=4)
    ref = simulate_reference(w, prio, share_tree(w, dummy=None), sched=sc)
    assert ref.start[23] == 3330.0, ref.start[23]
    check_same_sched(w, prio, sc)


def test_slurm_scheduler_batch_sched_delay_is_the_reference():
    """test_sim_slurmsched's batch_sched_delay case, the engines against the reference (with
    the timer's full pass serving a request, and with no delay)."""
    from fscontrol.sim.slurmsched import SlurmSched

    from test_sim_slurmsched import batch_case

    prio, w = batch_case()
    for iv, delay, want in ((1000.0, 3.0, [0.0, 3.0, 30.0, 33.0, 43.0, 53.0]), (2.0, 3.0, None),
                            (1000.0, 0.0, [0.0, 1.0, 30.0, 31.0, 41.0, 51.0])):
        sc = SlurmSched(bf_interval_s=1000.0, sched_interval_s=iv, batch_sched_delay_s=delay)
        ref = simulate_reference(w, prio, share_tree(w, dummy=None), sched=sc)
        if want is not None:
            assert ref.start == want, ref.start
        check_same_sched(w, prio, sc)


def test_slurm_scheduler_will_run_batches_are_the_reference():
    """test_sim_slurmsched's will-run batch case (H planned from the end of its batch's last job),
    the engines against the reference."""
    from fscontrol.sim.slurmsched import SlurmSched

    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    jobs = [SimJob("A", 0.0, 100.0, 100.0, 8, user="u2", account="b"),
            SimJob("B", 0.0, 125.0, 125.0, 4, user="u2", account="b"),
            SimJob("H", 1.0, 50.0, 50.0, 12, user="u1", account="a"),
            SimJob("S", 2.0, 50.0, 90.0, 2, user="u1", account="a")]
    w = Workload("batches", 16, jobs)
    sc = SlurmSched(bf_resolution_s=1.0)
    assert simulate_reference(w, prio, share_tree(w, dummy=None), sched=sc).start == [0.0, 0.0, 100.0, 30.0]
    check_same_sched(w, prio, sc)
