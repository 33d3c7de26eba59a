"""slurmctld's scheduler in the simulator (fscontrol.sim.slurmsched, issue #32): SchedulerParameters
read as Slurm reads them, the backfill cycle's rules on hand-sized cases, a capture's config winning
over a preset (named in the output), and waits printed in a unit that fits the run. The engine
against the independent reference on random workloads: tests/test_sim_mf_reference.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.errors import ConfigError, ParseError
from fscontrol.sim import run_simulation
from fscontrol.slurm import parse
from fscontrol.sim.load import load_workload
from fscontrol.sim.multifactor import PriorityConfig, simulate_multifactor
from fscontrol.sim.policies import get_policy
from fscontrol.sim.slurmsched import SlurmSched, backfill_starts, bf_first_cycle, sched_from_config, will_run_batches
from fscontrol.sim.workload import SimJob, Workload

ROOT = Path(__file__).resolve().parent.parent
HISTORY = ROOT / "samples" / "testbed-history"


def test_scheduler_parameters_as_slurm_reads_them():
    d = sched_from_config("SchedulerType           = sched/backfill\nSchedulerParameters     = (null)\n")
    assert (d.sched_interval_s, d.default_queue_depth, d.bf_interval_s, d.bf_window_s, d.bf_resolution_s,
            d.bf_max_job_test, d.backfill) == (60.0, 100, 30.0, 86400.0, 60.0, 500, True)  # slurm.conf(5)'s defaults
    s = sched_from_config("SchedulerParameters=bf_interval=45,bf_window=60,bf_resolution=120,bf_max_job_test=7,"
                          "default_queue_depth=9,sched_interval=20,bf_continue,defer\n", node_cpus=32)
    assert (s.bf_interval_s, s.bf_window_s, s.bf_resolution_s, s.bf_max_job_test, s.default_queue_depth,
            s.sched_interval_s, s.bf_continue, s.node_cpus) == (45.0, 3600.0, 120.0, 7, 9, 20.0, True, 32)
    assert d.batch_sched_delay_s == 3.0  # controller.c's default
    assert sched_from_config("SchedulerParameters=batch_sched_delay=0\n").batch_sched_delay_s == 0.0
    assert sched_from_config("SchedulerParameters=batch_sched_delay=-2\n").batch_sched_delay_s == 3.0  # Slurm: the default
    assert not sched_from_config("SchedulerType=sched/builtin\n").backfill
    assert not sched_from_config("SchedulerParameters=bf_interval=-1\n").backfill
    # as slurmctld reads them (xstrcasestr, atoi): the first occurrence, the digits that follow, a
    # value it logs as invalid replaced by its default; no comma needed, no space before "="
    assert sched_from_config("SchedulerParameters=bf_window=soon\n").bf_window_s == 86400.0  # atoi 0: invalid
    odd = sched_from_config("SchedulerParameters=bf_max_job_user=2,bf_max_job_user=5 bf_max_job_part=3,"
                            "BF_INTERVAL=40x,bf_max_job_test=0,default_queue_depth=-4,sched_interval=0\n")
    assert (odd.bf_max_job_user, odd.bf_max_job_part, odd.bf_interval_s, odd.bf_max_job_test,
            odd.default_queue_depth, odd.sched_interval_s) == (2, 3, 40.0, 500, 100, 1.0)
    assert sched_from_config("SchedulerParameters=bf_max_job_user = 2\n").bf_max_job_user == 0  # no "name=": unset
    assert sched_from_config("SchedulerParameters=bf_max_job_user=abc\n").bf_max_job_user == 0
    assert sched_from_config("SchedulerParameters=bf_max_job_test=2000000,bf_resolution=0\n").bf_max_job_test == 500
    assert sched_from_config("SchedulerParameters=default_queue_depth=0\n").default_queue_depth == 0


def test_a_job_kept_from_a_plan_starts_now_or_not_at_all():
    """bf_min_age_reserve / bf_min_prio_reserve (backfill.c `job_no_reserve = TEST_NOW_ONLY`): the
    head (16 CPUs, no plan) leaves the node to job 2 (2 CPUs, 3,000 s), which its plan from 1800
    kept out (the case above); a job without a plan that does not fit now is passed by and holds
    nothing (job 2 of 6 CPUs: job 3 still starts in the 4 free). Read from SchedulerParameters as
    slurmctld reads them: bf_min_age_reserve 0..30 days (atoi), bf_min_prio_reserve 1..2^32 - 1
    (strtoull: "-3" is a huge number, invalid), else none."""
    size = [16, 2, 2, 1, 12]
    est = [900.0, 300.0, 3000.0, 60.0]
    running = [(1800.0, 4)]
    assert backfill_starts(0.0, [0, 1, 2, 3], 4, running, size, est, 16, SlurmSched(), no_reserve={0}) == [1, 2]
    assert backfill_starts(0.0, [0, 1, 2, 3], 4, running, size, est, 16, SlurmSched(), no_reserve={1, 2, 3}) == [1, 3]
    big = [16, 2, 6, 1, 12]
    assert backfill_starts(0.0, [0, 2, 3], 4, running, big, est, 16, SlurmSched(), no_reserve={0, 2}) == [3]
    sc = sched_from_config("SchedulerParameters=bf_min_age_reserve=600,bf_min_prio_reserve=5000\n")
    assert (sc.bf_min_age_reserve_s, sc.bf_min_prio_reserve, sc.unmodelled) == (600.0, 5000, ())
    assert sc.limits_text() == "bf_min_age_reserve=600,bf_min_prio_reserve=5000" and sc.no_reserve_set
    for bad in ("bf_min_age_reserve=-1,bf_min_prio_reserve=0", "bf_min_age_reserve=2592001,bf_min_prio_reserve=-3",
                "bf_min_prio_reserve=4294967296"):
        sc = sched_from_config(f"SchedulerParameters={bad}\n")
        assert (sc.bf_min_age_reserve_s, sc.bf_min_prio_reserve, sc.no_reserve_set) == (0.0, 0, False), bad
    assert sched_from_config("SchedulerParameters=bf_min_prio_reserve=4294967295\n").bf_min_prio_reserve == 2**32 - 1


def test_the_main_scheduler_reads_bf_min_reserve_as_job_scheduler_c():
    """job_scheduler.c reads the two settings itself: bf_min_age_reserve with atoi, any value > 0
    (backfill.c caps it at 30 days); bf_min_prio_reserve with atoll, > 0, cast to 32 bits (backfill
    reads strtoull up to 2^32 - 1). Worked from the C: "-3" is none for both; 2^32 + 5 is none for
    backfill and 5 for the main pass; 2^32 is 0 after the cast: none."""
    def both(params: str) -> tuple:
        sc = sched_from_config(f"SchedulerParameters={params}\n")
        return sc.bf_min_age_reserve_s, sc.main_min_age_s, sc.bf_min_prio_reserve, sc.main_min_prio

    assert both("bf_min_age_reserve=600,bf_min_prio_reserve=5000") == (600.0, 600.0, 5000, 5000)
    assert both("bf_min_age_reserve=2592001") == (0.0, 2592001.0, 0, 0)
    assert both("bf_min_age_reserve=-1,bf_min_prio_reserve=-3") == (0.0, 0.0, 0, 0)
    assert both("bf_min_prio_reserve=4294967301") == (0.0, 0.0, 0, 5)
    assert both("bf_min_prio_reserve=4294967296") == (0.0, 0.0, 0, 0)
    assert both("bf_min_prio_reserve=99999999999999999999999") == (0.0, 0.0, 0, 2**32 - 1)  # (saturated)
    assert both("bf_min_prio_reserve= +12x") == (0.0, 0.0, 12, 12)
    # built directly (the presets, tests): the main pass follows the bf_ values
    assert (SlurmSched(bf_min_age_reserve_s=60.0).main_min_age_s, SlurmSched(bf_min_prio_reserve=7).main_min_prio) == (60.0, 7)


def _three(sizes: tuple[int, int, int], runs: tuple[float, float, float], weight_fairshare: float = 0.0):
    """starts(thr=0, **SlurmSched) of three jobs on a 16-CPU node: job 1 at 0, job 2 (priority
    threshold `thr`) at 10, job 3 at 20, each of `sizes` CPUs running its `runs` (its limit)."""
    prio = PriorityConfig(weight_age=0.0, weight_fairshare=weight_fairshare, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)

    def starts(thr: int = 0, **kw) -> list[float]:
        jobs = [SimJob(str(k + 1), 10.0 * k, r, r, c, user=f"u{k + 1}", account="a", prio_thresh=thr if k == 1 else 0)
                for k, (c, r) in enumerate(zip(sizes, runs))]
        return simulate_multifactor(Workload("three", 16, jobs), prio, sched=SlurmSched(**kw)).start

    return starts


def test_a_young_or_low_priority_head_does_not_stop_the_main_pass():
    """job_scheduler.c `fail_by_part = false`: on a 16-CPU node job 1 (12 CPUs) runs 1000 s; job 2
    (16 CPUs) arrives at 10 and waits; job 3 (2 CPUs, 5000 s, behind it by job id at one priority)
    at 20. Without the settings the main pass stops at job 2 and backfill keeps job 3 off its plan's
    node: job 3 waits for job 2 (1000 + 500). With bf_min_age_reserve=600 (or main_min_age_s alone,
    backfill kept as it was) job 2 is young at t = 20-23: the pass goes on and starts job 3 at
    its first pass (batch_sched_delay after its arrival), long before job 2's plan would let
    backfill; with bf_min_prio_reserve above every priority, the same."""
    starts = _three((12, 16, 2), (1000.0, 500.0, 5000.0))
    plain = starts()
    assert plain[1] == 1000.0 and plain[2] >= 1500.0, plain
    for kw in ({"bf_min_age_reserve_s": 600.0}, {"main_min_age_s": 600.0, "bf_min_age_reserve_s": 0.0},
               {"bf_min_prio_reserve": 2**32 - 1}):
        got = starts(**kw)
        assert got[2] <= 30.0 and got[1] == got[2] + 5000.0, (kw, got)
    assert starts(main_min_age_s=5.0) == plain  # old enough at the first pass that tests it


def test_a_qos_min_prio_threshold_is_the_job_s_own_bf_min_prio_reserve():
    """acct_policy_get_prio_thresh: a job's QOS MinPrioThreshold (SimJob.prio_thresh, from a
    capture's qos.txt and partitions.txt under AccountingStorageEnforce=limits) replaces
    bf_min_prio_reserve for it, in the main pass and in backfill. The case above with job 2 of a
    threshold over every priority: job 3 starts at once; job 2 with none: as without. Read from a
    capture: the partition's QOS first, the job's own first when it has OverPartQOS."""
    starts = _three((12, 16, 2), (1000.0, 500.0, 5000.0))
    got = starts(2**32 - 1)
    assert got[2] <= 30.0 and got[1] == got[2] + 5000.0, got
    plain = starts(0)
    assert plain[2] >= 1500.0, plain
    # the QOS's threshold wins over bf_min_prio_reserve (here 1: no job below it)
    assert starts(2**32 - 1, bf_min_prio_reserve=1) == got
    from fscontrol.sim.history import _prio_thresholds

    parts = {"gpu": {"qos": "pq"}, "cpu": {"qos": ""}}
    js = [SimJob(str(k), 0.0, 1.0, 1.0, 1, qos=q, partition=p) for k, (q, p) in
          enumerate([("normal", "gpu"), ("normal", "cpu"), ("boost", "gpu"), ("plain", "gpu")])]
    _prio_thresholds(js, {"normal": 7, "pq": 5, "boost": 9}, frozenset({"boost", "plain"}), parts)
    assert [j.prio_thresh for j in js] == [5, 7, 9, 5]  # partition QOS first; OverPartQOS: the job's (none: the partition's)
    assert parse.parse_qos_over_part("Name|UsageFactor|MinPrioThres|Flags\nnormal|1||\nboost|1|9|DenyOnLimit,OverPartQOS\n") \
        == frozenset({"boost"})
    assert parse.parse_qos_min_prio("Name|UsageFactor|MinPrioThres\nnormal|1.000000|\nlow|1.000000|5000\n") == {"low": 5000}
    assert parse.parse_qos_min_prio("Name|UsageFactor\nnormal|1.000000\n") == {}
    with pytest.raises(ParseError):
        parse.parse_qos_min_prio("Name|UsageFactor|MinPrioThres\nlow|1|-5\n")


def test_a_job_of_several_partitions_has_its_best_partition_s_priority():
    """PriorityWeightPartition: a job listing `lo,hi` is priced at hi's PriorityJobFactor (its best
    queue record, as the tier), not at none (a lookup of "lo,hi" found no factor: priority 1, an
    outside tester's head job sorted behind a later one). On a full node, the `lo,hi` job and a
    `lo` job submitted together wait; the first to start when the node frees is the `lo,hi` one."""
    prio = PriorityConfig(weight_age=0.0, weight_fairshare=0.0, weight_partition=1000.0, max_age_s=3600.0,
                          calc_period_s=60.0, half_life_s=600.0, fair_tree=False,
                          partition_factor=(("lo", 1), ("hi", 2)))
    jobs = [SimJob("1", 0.0, 100.0, 100.0, 16, user="u1", account="a", partition="lo"),
            SimJob("2", 10.0, 100.0, 100.0, 16, user="u2", account="a", partition="lo"),
            SimJob("3", 10.0, 100.0, 100.0, 16, user="u3", account="a", partition="lo,hi")]
    r = simulate_multifactor(Workload("parts", 16, jobs), prio, sched=SlurmSched())
    assert r.start[2] == 100.0 and r.start[1] == 200.0, r.start


def test_the_replay_makes_no_plan_for_a_job_younger_than_bf_min_age_reserve():
    """The engine: job 1 (8 CPUs, limit 1000) runs on a 16-CPU node; job 2 (16 CPUs) waits for it
    from t=10; job 3 (8 CPUs, limit 2000) from t=20 fits beside job 1 but would run past job 2's
    plan (from 1000): it waits for job 2's end (1000 + 500). With bf_min_age_reserve=600 job 2,
    pending 20-50 s at the first cycles, gets no plan: job 3 starts at the first cycle and job 2
    waits for it (2000 + its start); with bf_min_age_reserve=5 it is old enough: as without; with
    bf_min_prio_reserve over every priority: as with 600."""
    starts = _three((8, 16, 8), (1000.0, 500.0, 2000.0), weight_fairshare=1000.0)
    plain = starts()
    assert plain[1] == 1000.0 and plain[2] >= 1500.0, plain
    young = starts(bf_min_age_reserve_s=600.0)
    assert young[2] <= 60.0 and young[1] == young[2] + 2000.0, young
    assert starts(bf_min_age_reserve_s=5.0) == plain
    assert starts(bf_min_prio_reserve=2**32 - 1) == young
    assert starts(bf_min_prio_reserve=1) == plain  # (every priority is at least 1)


def test_backfill_reserves_whole_nodes_and_respects_its_limits():
    size = [16, 2, 2, 1, 12]
    est = [900.0, 300.0, 3000.0, 60.0]
    running = [(1800.0, 4)]  # job 4 (12 CPUs) runs until t = 1800 (its limit)
    sc = SlurmSched()
    # the head (16 CPUs) is reserved from 1800 on the whole node: job 1 ends before it (starts),
    # job 2 would run past it (does not start, though 2 CPUs are free now), job 3 ends before it
    assert backfill_starts(0.0, [0, 1, 2, 3], 4, running, size, est, 16, sc) == [1, 3]
    # 4-CPU nodes (a 16-CPU machine of four): the head holds all four nodes; the same
    assert backfill_starts(0.0, [0, 1, 2, 3], 4, running, size, est, 16, SlurmSched(node_cpus=4)) == [1, 3]
    # bf_max_job_test=2: only the head and job 1 are tried
    assert backfill_starts(0.0, [0, 1, 2, 3], 4, running, size, est, 16, SlurmSched(bf_max_job_test=2)) == [1]
    # a head beyond bf_window gets no reservation: job 2 may run past its start (and takes the
    # last 2 free CPUs: job 3 does not fit)
    assert backfill_starts(0.0, [0, 1, 2, 3], 4, running, size, est, 16, SlurmSched(bf_window_s=600.0)) == [1, 2]
    # bf_resolution: a reservation's start is rounded down to it (from the epoch): job 1 (1,745 s)
    # ends before the head's start at 1750 at 1 s, but not before 1740 at 60 s
    r2 = [(1750.0, 4)]
    assert backfill_starts(0.0, [0, 1], 4, r2, size, [900.0, 1745.0], 16, SlurmSched(bf_resolution_s=1.0)) == [1]
    assert backfill_starts(0.0, [0, 1], 4, r2, size, [900.0, 1745.0], 16, SlurmSched()) == []
    # the window is closed: a job ending exactly when the head's reservation begins does not start
    assert backfill_starts(0.0, [0, 1], 4, r2, size, [900.0, 1740.0], 16, SlurmSched()) == []
    assert backfill_starts(0.0, [0, 1], 4, r2, size, [900.0, 1739.0], 16, SlurmSched()) == [1]


def _jobs() -> Workload:
    jobs = [SimJob("1", 0.0, 1200.0, 1800.0, 12, user="u1", account="a"),
            SimJob("2", 10.0, 600.0, 900.0, 16, user="u2", account="b"),
            SimJob("3", 20.0, 300.0, 300.0, 4, user="u2", account="b")]
    return Workload("hand", 16, jobs)


def test_the_main_scheduler_waits_for_backfill_where_easy_starts_at_once():
    """EASY at every event starts job 3 at its arrival (t = 20) beside the waiting head; slurmctld's
    main scheduler stops at the head and backfill starts job 3 at its cycle (t = 30)."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    assert simulate_multifactor(_jobs(), prio).start == [0.0, 1200.0, 20.0]
    assert simulate_multifactor(_jobs(), prio, sched=SlurmSched()).start == [0.0, 1200.0, 30.0]
    # no backfill (sched/builtin): job 3 waits behind the head, which takes the whole node at 1200
    assert simulate_multifactor(_jobs(), prio, sched=SlurmSched(backfill=False)).start == [0.0, 1200.0, 1800.0]


def batch_case():
    """The hand case of batch_sched_delay (the test below; test_sim_mf_reference.py runs it
    against the reference): one 16-CPU node, six jobs of two users."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    jobs = [SimJob("1", 0.0, 20.0, 60.0, 4, user="u1", account="a"),
            SimJob("2", 1.0, 20.0, 60.0, 4, user="u1", account="a"),
            SimJob("3", 30.0, 10.0, 60.0, 4, user="u2", account="b"),
            SimJob("4", 31.0, 10.0, 60.0, 4, user="u2", account="b"),
            SimJob("5", 40.0, 10.0, 60.0, 16, user="u2", account="b"),
            SimJob("6", 41.0, 10.0, 60.0, 2, user="u1", account="a")]
    w = Workload("batch", 16, jobs)
    return prio, w


def test_a_submission_waits_for_the_background_loops_batch_sched_delay():
    """A batch job does not start in its submission RPC (job_allocate with allocate=0 is
    test_only): the submission queues a request that slurmctld's background loop serves once
    batch_sched_delay (3 s) has passed since the loop last scheduled (controller.c
    `_slurmctld_background`); a job's end (its epilog complete) runs the main scheduler at once,
    over every pending job. One 16-CPU node, no timer inside the case:
    job 1 (t=0) starts at once (the loop has not scheduled yet), job 2 (t=1) at 3; job 3 (t=30)
    at once, job 4 (t=31) at 33; job 5 (t=40, the whole node) is served at 40 and finds job 4
    running: it starts when 4 ends (33 + 10 = 43, the epilog's pass); job 6 (t=41) waits behind
    it (until 53). With batch_sched_delay=0 (the engine before): 2 at 1, 4 at 31, 5 at 41, 6 at 51."""
    prio, w = batch_case()
    sc = SlurmSched(bf_interval_s=1000.0, sched_interval_s=1000.0)
    assert simulate_multifactor(w, prio, sched=sc).start == [0.0, 3.0, 30.0, 33.0, 43.0, 53.0]
    sc0 = SlurmSched(bf_interval_s=1000.0, sched_interval_s=1000.0, batch_sched_delay_s=0.0)
    assert simulate_multifactor(w, prio, sched=sc0).start == [0.0, 1.0, 30.0, 31.0, 41.0, 51.0]
    # the timer's full pass serves a request too: with sched_interval 2 s, job 2's request
    # (t=1) is served by the pass at 2, and job 4's (t=31) by the pass at 32
    sc2 = SlurmSched(bf_interval_s=1000.0, sched_interval_s=2.0)
    assert simulate_multifactor(w, prio, sched=sc2).start[:4] == [0.0, 2.0, 30.0, 32.0]


def test_will_run_batches_as_the_select_plugin_removes_running_jobs():
    """cons_common/job_test.c `_will_run_test`: E = the first end rounded up to 30 s; batches up
    to E + 30, then the window doubles (60, 120, ...) until the next end is in it. Seed 23's
    Fair Tree capture at t=120 (relative to its first submission, 1795707658, 28 s past a
    multiple of 30): running jobs ending at 209 (57 CPUs), 232, 240, 242, 245, 265, 268; E = 212,
    the first batch is 209..242, so the 48-CPU job that fits once 209 has ended is planned from
    242 (the end of the batch's last job), an absolute minute: backfill's reservation starts at 242
    and every 2-minute job (ending at 240) started beside it, the longer ones did not."""
    t0 = 1795707658.0
    ends = [t0 + x for x in (209, 232, 240, 242, 245, 265, 268)]
    b = will_run_batches(ends)
    assert b == [3, 3, 3, 3, 6, 6, 6]  # E + 30 = 242; then window 60: E + 60 = 272 takes the rest
    assert (ends[b[0]] - t0, (ends[b[0]]) % 60) == (242.0, 0.0)
    assert will_run_batches([]) == [] and will_run_batches([90.0]) == [0]
    # a long gap: the window doubles until the next job ends within it (30, 60, 120, 240, 480)
    assert will_run_batches([0.0, 40.0, 400.0]) == [1, 1, 2]


def test_backfill_plans_from_the_end_of_the_will_run_batch():
    """One 16-CPU node, bf_resolution 1 s. Jobs A (8 CPUs, limit 100 s) and B (4, limit 125 s)
    run from 0; H (12 CPUs) waits, S (2 CPUs, limit 90 s) behind it. At the first backfill cycle
    (t=30) H fits once A ends (100), but the will-run test removes A and B in one batch (E = 120,
    batch to 150): H is planned from 125 (B's end), so S (ending by 120) starts at 30 beside it.
    Planned from 100 (the end of the job that frees the CPUs: the replay before), S would wait
    until 125."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    jobs = [SimJob("A", 0.0, 100.0, 100.0, 8, user="u2", account="b"),
            SimJob("B", 0.0, 125.0, 125.0, 4, user="u2", account="b"),
            SimJob("H", 1.0, 50.0, 50.0, 12, user="u1", account="a"),
            SimJob("S", 2.0, 50.0, 90.0, 2, user="u1", account="a")]
    w = Workload("batches", 16, jobs)
    sc = SlurmSched(bf_resolution_s=1.0)
    assert simulate_multifactor(w, prio, sched=sc).start == [0.0, 0.0, 100.0, 30.0]
    # the start estimate keeps the end of the freeing job (backfill_starts without `batched`)
    running = [(100.0, 0), (125.0, 1)]
    size, est = [8, 4, 12, 2], [100.0, 125.0, 50.0, 90.0]
    assert backfill_starts(30.0, [2, 3], 4, running, size, est, 16, sc) == []
    assert backfill_starts(30.0, [2, 3], 4, running, size, est, 16, sc, batched=True) == [3]


def test_the_backfill_agents_first_cycle_follows_the_changes_before_the_first_submission():
    """backfill.c `backfill_agent`: a cycle, then a sleep of bf_interval; then a cycle if anything
    changed since (`_more_work`), else a poll every second until something does. A decay pass is a
    change while a job is pending (priority_multifactor.c `decay_apply_weighted_factors` sets
    last_job_update for every pending job). Worked by hand, bf_interval 30, passes at -2 + 60 k,
    the first submission at 0:
    * nothing pending before it: the submission wakes the agent (0);
    * a job pending since -58 (seed 44's probes): a cycle at -58; at -28 nothing has changed (the
      pass at -62 came before), so the agent polls until the pass at -2 and runs there; at 28 the
      submissions have changed things: a cycle at 28, 2 s before the grid from the first
      submission (slurmctld started seed 44's jobs 69-73 at +28, the replay at +30);
    * pending since -25 (seed 52's): a cycle at -25; at 5 the pass at -2 and the submission at 0
      have changed things: 5;
    * pending since -100 and -58: cycles at -100, -62 (the pass: nothing since -100 by -70),
      -32 (the submission at -58 fell in between), then nothing by -2 but the pass at -2 itself:
      -2, then 28."""
    assert bf_first_cycle(0.0, 30.0, [], -2.0, 60.0) == 0.0
    assert bf_first_cycle(0.0, 30.0, [5.0], -2.0, 60.0) == 0.0  # (pending from after it: none before)
    assert bf_first_cycle(0.0, 30.0, [-58.0], -2.0, 60.0) == 28.0
    assert bf_first_cycle(0.0, 30.0, [-58.0], 1798.0, 60.0) == 28.0  # (the passes' phase from any pass)
    assert bf_first_cycle(0.0, 30.0, [-25.0], -2.0, 60.0) == 5.0
    assert bf_first_cycle(0.0, 30.0, [-100.0, -58.0], -2.0, 60.0) == 28.0
    assert bf_first_cycle(0.0, 30.0, [-100.0], -2.0, 0.0) == 0.0  # no passes: the submission wakes it


def test_a_replay_runs_backfill_in_the_agents_phase_when_jobs_pended_before_it():
    """The hand case above (job 3 backfilled beside the waiting head): with a job pending since
    -58 (a DOWN partition's, walk_pending) and the decay passes at -2 + 60 k, slurmctld's backfill
    agent runs at -2 (the pass), then at 28: job 3 (submitted at 20) starts at 28, not at the
    cycle 30 s after the first submission; pending since -25, the cycles fall at 5, 35, ...: 35.
    Nothing pending before the first submission: 30, as before. The Python engine and the one in
    use (compiled in CI) alike."""
    from dataclasses import replace

    from fscontrol.sim import mfcore
    from fscontrol.sim.multifactor import walk_positions

    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    sc = SlurmSched()
    w = _jobs()
    for since, start3 in ((None, 30.0), (-58.0, 28.0), (-25.0, 35.0)):
        wl = w if since is None else replace(w, meta={"walk_pending": [
            {"job_id": "0", "account": "a", "user": "u1", "since": since}]})
        assert simulate_multifactor(wl, prio, sched=sc, first_pass=-2.0).start == [0.0, 1200.0, start3], since
        r = mfcore.simulate(wl, prio, sched=sc, first_pass=-2.0, walk_pending=walk_positions(wl))
        assert r.start == [0.0, 1200.0, start3], since


def _sim(*args: str):
    return CliRunner().invoke(app, ["simulate", *args, "--no-progress"])


def test_a_captures_config_wins_over_a_preset_and_says_so():
    """Issue #32: `simulate CAPTURE -p mf-classic` ran the preset (5-minute passes, a one-week
    half-life) and silently dropped the capture's config.txt (1-minute passes, 5-minute half-life)."""
    r = _sim(str(HISTORY), "-p", "mf-classic", "--json")
    assert r.exit_code == 0, r.output
    (run,) = json.loads(r.output)
    pr = run["policy"]["priority"]
    assert (pr["half_life_s"], pr["calc_period_s"]) == (300.0, 60.0)  # the capture's, not the preset's
    assert run["policy"]["slurm_sched"]["bf_interval_s"] == 30.0  # slurmctld's scheduler, its parameters
    text = _sim(str(HISTORY), "-p", "mf-classic")
    assert text.exit_code == 0, text.output
    assert "a capture's config wins over a preset" in text.output and "config.txt" in text.output
    assert "scheduler: slurmctld's" in text.output
    mixed = _sim(str(HISTORY), "--fairshare", "fairtree")
    assert mixed.exit_code == 0, mixed.output
    assert re.search(r"mixed settings: .*config.txt with --fairshare fairtree", mixed.output), mixed.output


def test_waits_are_printed_in_a_unit_that_fits_the_run():
    """A 30-minute replay printed its waits as 0.00-0.13 hours (issue #32): seconds under an hour."""
    w = Workload("short", 16, [SimJob(str(i), 10.0 * i, 300.0, 300.0, 8, user="u", account="a") for i in range(6)])
    from fscontrol.sim.report import format_report

    r = run_simulation(w, "easy")
    assert r.overall["makespan_s"] < 3600
    text = format_report(r)
    assert "mean wait (s)" in text and "(h)" not in text
    wait = r.overall["mean_wait_s"]
    assert re.search(rf"mean wait \(s\)\s+{wait:,.0f}\b", text), text


def test_a_replay_starts_its_passes_in_the_captured_phase(tmp_path):
    """A capture records slurmctld's last decay pass (priority_last_decay_ran); the replay's passes
    fall in its phase (every PriorityCalcPeriod from it), not at the first submission."""
    import shutil

    folder = tmp_path / "cap"
    shutil.copytree(HISTORY, folder)
    meta = json.loads((folder / "meta.json").read_text())
    w0 = load_workload(str(folder))
    t0 = min(j.submit for j in w0.jobs)
    meta["priority_last_decay_ran"] = t0 + 3600 + 17.0  # a pass 17 s into a minute, after the jobs
    (folder / "meta.json").write_text(json.dumps(meta))
    w = load_workload(str(folder))
    assert w.meta["last_decay_pass"] == t0 + 3617.0
    from fscontrol.sim.sweep import multifactor_specs

    (spec,) = multifactor_specs(slurm_conf=folder / "config.txt", controls=())
    res = run_simulation(w, spec.policy())
    first = res.mf.t0
    from fscontrol.sim.run import _first_pass

    fp = _first_pass(spec.policy(), w)
    assert fp is not None and fp <= first and (t0 + 3617.0 - fp) % 60 == 0 and first - fp < 60
    # (and the preset, with no capture's settings, keeps its passes at the first submission)
    assert _first_pass(get_policy("mf-classic"), w) is None


# ------------------------------------------------ SchedulerParameters' count limits (issue #32 item 1)
def test_the_count_limits_as_slurm_reads_them():
    """backfill.c `_load_config` and job_scheduler.c: each limit 0 (none) by default; a negative
    one, or bf_max_job_start over 10,000, is logged as invalid and taken as 0; bf_max_job_assoc
    set beside bf_max_job_user wins ("bf_max_job_assoc taking precedence")."""
    d = sched_from_config("SchedulerParameters=(null)\n")
    assert (d.bf_max_job_user, d.bf_max_job_assoc, d.bf_max_job_part, d.bf_max_job_user_part, d.bf_max_job_start,
            d.sched_max_job_start, d.bf_limited, d.limits_text()) == (0, 0, 0, 0, 0, 0, False, "")
    s = sched_from_config("SchedulerParameters=bf_max_job_user=3,bf_max_job_part=9,bf_max_job_user_part=2,"
                          "bf_max_job_start=5,sched_max_job_start=4,bf_continue\n")
    assert (s.bf_max_job_user, s.bf_max_job_part, s.bf_max_job_user_part, s.bf_max_job_start, s.sched_max_job_start,
            s.bf_limited) == (3, 9, 2, 5, 4, True)
    assert s.limits_text() == "bf_max_job_user=3,bf_max_job_part=9,bf_max_job_user_part=2,bf_max_job_start=5,sched_max_job_start=4"
    both = sched_from_config("SchedulerParameters=bf_max_job_user=3,bf_max_job_assoc=2\n")
    assert (both.bf_max_job_user, both.bf_max_job_assoc) == (0, 2)
    bad = sched_from_config("SchedulerParameters=bf_max_job_user=-1,bf_max_job_start=10001,sched_max_job_start=-3\n")
    assert (bad.bf_max_job_user, bad.bf_max_job_start, bad.sched_max_job_start, bad.bf_limited) == (0, 0, 0, False)
    assert sched_from_config("SchedulerParameters=bf_max_job_start=10000\n").bf_max_job_start == 10000
    with pytest.raises(ConfigError, match="bf_max_job_part must be >= 0"):
        SlurmSched(bf_max_job_part=-1)


def test_bf_tested_skips_a_users_jobs_past_the_limit_and_counts_them_nowhere():
    """Eight pending jobs in priority order; each limit on its own, worked by hand."""
    from fscontrol.sim.slurmsched import bf_tested

    user = ["u1", "u1", "u2", "u1", "u2", "u1", "u3", "u1"]
    acct = ["a", "b", "a", "a", "a", "b", "a", "a"]
    part = ["p", "p", "q", "q", "p", "p", "q", "q"]
    q = list(range(8))

    def tested(**lim):
        return bf_tested(q, SlurmSched(**lim), user, acct, part)

    assert tested() == q  # no limit: every job, up to bf_max_job_test
    assert tested(bf_max_job_test=3) == [0, 1, 2]
    assert tested(bf_max_job_user=1) == [0, 2, 6]  # u1's first, u2's first, u3's
    assert tested(bf_max_job_user=2) == [0, 1, 2, 4, 6]
    # (the skipped jobs do not count towards bf_max_job_test: u1's 3, 5, 7 skipped, 6 still tested)
    assert tested(bf_max_job_user=1, bf_max_job_test=3) == [0, 2, 6]
    assert tested(bf_max_job_assoc=1) == [0, 1, 2, 6]  # a/u1, b/u1, a/u2, a/u3
    assert tested(bf_max_job_assoc=1, bf_max_job_user=1) == [0, 1, 2, 6]  # the association's limit wins
    assert tested(bf_max_job_part=2) == [0, 1, 2, 3]  # p: 0, 1; q: 2, 3
    assert tested(bf_max_job_user_part=1) == [0, 2, 3, 4, 6]  # u1 in p, u2 in q, u1 in q, u2 in p, u3 in q
    # a job skipped by one limit takes no count of another: with user_part=1, jobs 1 and 5 (u1 in p
    # again) are skipped and leave p's count at 2 (jobs 0, 4), q's reaches 3 with job 6; with part=2
    # job 6 is the third of q and is skipped too
    assert tested(bf_max_job_user_part=1, bf_max_job_part=3) == [0, 2, 3, 4, 6]
    assert tested(bf_max_job_user_part=1, bf_max_job_part=2) == [0, 2, 3, 4]
    # keys: the index in the mask's bits
    assert bf_tested([(9 << 8) | 0, (7 << 8) | 1, (5 << 8) | 3], SlurmSched(bf_max_job_user=1), user, acct, part,
                     mask=0xFF) == [(9 << 8) | 0]


def test_bf_max_job_start_ends_a_cycle_after_that_many_starts():
    """One 16-CPU node, nothing running: four 2-CPU jobs all start in one cycle, or the first two
    with bf_max_job_start=2, on the pool and on nodes."""
    from fscontrol.sim.nodesched import backfill_nodes

    size, est = [2, 2, 2, 2], [60.0] * 4
    assert backfill_starts(100.0, [0, 1, 2, 3], 16, [], size, est, 16, SlurmSched()) == [0, 1, 2, 3]
    assert backfill_starts(100.0, [0, 1, 2, 3], 16, [], size, est, 16, SlurmSched(bf_max_job_start=2)) == [0, 1]
    got = backfill_nodes(100.0, [0, 1, 2, 3], [8, 8], [], size, est, SlurmSched(bf_max_job_start=3))
    assert [j for j, _ in got] == [0, 1, 2]
    assert len(backfill_nodes(100.0, [0, 1, 2, 3], [8, 8], [], size, est, SlurmSched())) == 4


def limits_case(small_users=("u3", "u3", "u3"), small_accts=("c", "c", "c"), small_part=""):
    """One 16-CPU node: job 1 (8 CPUs, limit 600 s, runs 300 s) starts at 0; job 2 (the whole node)
    waits for it at the head of the queue (backfill reserves the node from 600); three 2-CPU
    jobs of 60-s limits (20-s runs) behind it fit before that reservation: backfill starts them."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    jobs = [SimJob("1", 0.0, 300.0, 600.0, 8, user="u1", account="a"),
            SimJob("2", 1.0, 300.0, 600.0, 16, user="u2", account="b")]
    jobs += [SimJob(str(3 + k), 2.0 + k, 20.0, 60.0, 2, user=u, account=a, partition=small_part)
             for k, (u, a) in enumerate(zip(small_users, small_accts))]
    return prio, Workload("limits", 16, jobs)


def test_the_replay_applies_the_count_limits_cycle_by_cycle():
    """limits_case, worked by hand. Backfill's cycles fall at 0, 30, 60, ... (the first
    submission); the main scheduler stops at job 2 (it does not fit), so the small jobs start only
    by backfill. No limit: all three at the cycle of 30. bf_max_job_user=1: one of u3's a cycle
    (30, 60, 90: each start is a change, so the next cycle runs). Three users: all at 30 again.
    bf_max_job_start=2: two at 30, the third at 60. bf_max_job_assoc=1 with u3's jobs in c, c, d:
    3 and 5 at 30, 4 at 60. bf_max_job_part=2: job 2 and one small job a cycle in the one
    partition (30, 60, 90); the small jobs in a partition of their own: two at 30, one at 60.
    Job 2 starts when job 1 ends (300), its reservation honoured throughout."""
    prio, w = limits_case()
    sim = lambda w, **lim: simulate_multifactor(w, prio, sched=SlurmSched(**lim)).start  # noqa: E731
    assert sim(w) == [0.0, 300.0, 30.0, 30.0, 30.0]
    assert sim(w, bf_max_job_user=1) == [0.0, 300.0, 30.0, 60.0, 90.0]
    assert sim(limits_case(("u3", "u4", "u5"))[1], bf_max_job_user=1) == [0.0, 300.0, 30.0, 30.0, 30.0]
    assert sim(w, bf_max_job_start=2) == [0.0, 300.0, 30.0, 30.0, 60.0]
    assert sim(limits_case(small_accts=("c", "c", "d"))[1], bf_max_job_assoc=1) == [0.0, 300.0, 30.0, 60.0, 30.0]
    assert sim(w, bf_max_job_part=2) == [0.0, 300.0, 30.0, 60.0, 90.0]
    assert sim(limits_case(small_part="p")[1], bf_max_job_part=2) == [0.0, 300.0, 30.0, 30.0, 60.0]


def test_sched_max_job_start_ends_a_main_pass_after_that_many_starts():
    """Without backfill, three 2-CPU jobs submitted at 0 on an empty 16-CPU node: the first
    submission's main pass starts all three; with sched_max_job_start=1 it starts one, and each
    other waits for the next main pass: the timer's (sched_interval 60 s: 60, 120), as no job
    ends before (limits and runs of 1,000 s)."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    w = Workload("smax", 16, [SimJob(str(k), 0.0, 1000.0, 1000.0, 2, user="u1", account="a") for k in (1, 2, 3)])
    assert simulate_multifactor(w, prio, sched=SlurmSched(backfill=False)).start == [0.0, 0.0, 0.0]
    assert simulate_multifactor(w, prio, sched=SlurmSched(backfill=False, sched_max_job_start=1)).start == [0.0, 60.0, 120.0]


# ------------------------------------------------ partitions over different nodes (issue #32 item 1)
def parts_case(partition_nodes):
    """Two nodes of 8 CPUs; partition A on node 0, B on node 1 (or none known: every job anywhere).
    Job 1 (A) fills node 0 from 0 to 100; job 2 (A, the whole node, the older) waits for it; job 3
    (B, 4 CPUs) comes behind it in the queue."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    jobs = [SimJob("1", 0.0, 100.0, 200.0, 8, user="u1", account="a", partition="A"),
            SimJob("2", 1.0, 50.0, 200.0, 8, user="u1", account="a", partition="A"),
            SimJob("3", 2.0, 50.0, 200.0, 4, user="u1", account="a", partition="B")]
    machine = {"nodes": 2, "cpus": 16, "node_cpus": [8]}
    if partition_nodes is not None:
        machine["partition_nodes"] = partition_nodes
    return prio, Workload("parts", 16, jobs, meta={"machine": machine})


def test_the_main_pass_stops_per_partition_on_partitions_over_different_nodes():
    """Worked by hand. The loop serves the requests of jobs 2 and 3 at 3 (batch_sched_delay after
    job 1's pass at 0). Job 2 does not fit on A's node: A fails (job_scheduler.c `failed_parts`,
    its nodes out of `avail_node_bitmap`), and the pass goes on: job 3 starts at 3 on B's node;
    job 2 starts at 100 on node 0. With no partition known every job may use both nodes: job 2
    starts at 3 on node 1 and job 3 waits for it (53). With A and B both over both nodes (one
    pool): the same as none."""
    sc = SlurmSched(node_cpus=8, node_model="22.05")
    prio, w = parts_case({"A": [0], "B": [1]})
    r = simulate_multifactor(w, prio, sched=sc)
    assert (r.start, r.nodes) == ([0.0, 100.0, 3.0], [[8, 0], [8, 0], [0, 4]])
    prio, w = parts_case(None)
    r = simulate_multifactor(w, prio, sched=sc)
    assert (r.start, r.nodes) == ([0.0, 3.0, 53.0], [[8, 0], [0, 8], [0, 4]])
    prio, w = parts_case({"A": [0, 1], "B": [0, 1]})
    assert simulate_multifactor(w, prio, sched=sc).start == [0.0, 3.0, 53.0]
    # A over both nodes, B over node 1: job 2 takes node 1 at 3 (A's nodes hold it), job 3 waits for it
    prio, w = parts_case({"A": [0, 1], "B": [1]})
    assert simulate_multifactor(w, prio, sched=sc).start == [0.0, 3.0, 53.0]


def test_backfill_and_the_main_pass_keep_each_job_on_its_partitions_nodes():
    """Worked by hand. Node 0 is A's, node 1 B's. Job 1 (B) fills node 1 until 100; job 2 (B, the
    whole node) waits for it; job 3 (B, 2 CPUs, a 60-s limit) behind it would fit now on node 0,
    which is free, but not on B's: neither backfill (its plan is on node 1, after job 2's) nor
    the main pass starts it there; it starts when job 2 ends (150). Job 4 (A, 2 CPUs) comes
    after them in the queue and starts at its request's pass (3): A did not fail. With no
    partition known, the main pass starts job 2 on node 0 at 3, and jobs 3 and 4 wait for its
    end (53): both nodes full."""
    sc = SlurmSched(node_cpus=8, node_model="22.05")
    prio = PriorityConfig(weight_age=0.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    jobs = [SimJob("1", 0.0, 100.0, 200.0, 8, user="u1", account="a", partition="B"),
            SimJob("2", 1.0, 50.0, 200.0, 8, user="u1", account="a", partition="B"),
            SimJob("3", 2.0, 30.0, 60.0, 2, user="u1", account="a", partition="B"),
            SimJob("4", 2.0, 30.0, 60.0, 2, user="u1", account="a", partition="A")]
    machine = {"nodes": 2, "cpus": 16, "node_cpus": [8]}
    w = Workload("bf", 16, jobs, meta={"machine": {**machine, "partition_nodes": {"A": [0], "B": [1]}}})
    r = simulate_multifactor(w, prio, sched=sc)
    assert (r.start, r.nodes) == ([0.0, 100.0, 150.0, 3.0], [[0, 8], [0, 8], [0, 2], [2, 0]])
    r0 = simulate_multifactor(Workload("bf", 16, jobs, meta={"machine": machine}), prio, sched=sc)
    assert r0.start == [0.0, 3.0, 53.0, 53.0]


def test_a_capture_gives_each_partition_its_nodes_and_leaves_out_jobs_they_cannot_hold(tmp_path):
    """The tier capture (one node of 128 CPUs) with its nodes.txt made two nodes of 64: `hi` on
    the first only. Its jobs of 128 CPUs in `hi` cannot run there (slurmctld would have refused
    them): left out, and said so; the others replay on both nodes."""
    import shutil

    from fscontrol.sim import history

    cap = tmp_path / "cap"
    shutil.copytree(ROOT / "tests" / "data" / "captures" / "tier-22.05", cap)
    (cap / "nodes.txt").write_text("tbnode1|normal*|64|idle\ntbnode1|hi|64|idle\ntbnode2|normal*|64|idle\n")
    w = history.read_history(cap)
    assert w.meta["machine"]["partition_nodes"] == {"hi": [0], "normal": [0, 1]}
    assert sorted(j.partition for j in w.jobs if j.size > 64) == ["normal"] * 3
    assert w.meta["stats"]["too_big"] == 2 and not any(j.partition == "hi" and j.size > 64 for j in w.jobs)
    r = CliRunner().invoke(app, ["simulate", str(cap)])
    assert r.exit_code == 0 and "left out: 2 jobs bigger than the machine or their partition's nodes" in r.output, r.output


def test_scheduler_parameters_from_the_configs_json_form():
    """26.05 captures record `scontrol show config --json`: its SchedulerParameters (a list) are
    read too (they were taken as Slurm's defaults)."""
    text = (ROOT / "tests" / "data" / "captures" / "tb-26.05" / "show_config_json.txt").read_text()
    assert sched_from_config(text) == sched_from_config("SchedulerType=sched/backfill\n")  # none set there
    d = json.loads(text[text.index("{"):])
    d["slurm_conf"]["SchedulerParameters"] = ["bf_max_job_user=2", "bf_interval=45", "bf_continue"]
    s = sched_from_config(json.dumps(d))
    assert (s.bf_max_job_user, s.bf_interval_s, s.bf_continue) == (2, 45.0, True)
    d["slurm_conf"]["SchedulerType"] = "sched/builtin"
    assert not sched_from_config(json.dumps(d)).backfill


def test_a_job_bigger_than_its_partitions_nodes_is_refused_not_waited_for():
    prio, w = parts_case({"A": [0], "B": [1]})
    jobs = list(w.jobs)
    jobs[2] = SimJob("3", 2.0, 50.0, 200.0, 12, user="u1", account="a", partition="B")
    with pytest.raises(ConfigError, match="job 3: 12 CPUs, more than its partition's nodes hold"):
        simulate_multifactor(Workload("big", 16, jobs, meta=w.meta), prio, sched=SlurmSched(node_cpus=8, node_model="22.05"))


def test_a_job_of_several_partitions_runs_within_one():
    """Four nodes of 8 CPUs, A on nodes 0-1, B on 2-3. Jobs 1 (A) and 2 (B) each fill a node until
    100; job 3, submitted to "A,B", needs 16 CPUs: free are 8 on A's node 1 and 8 on B's node 3,
    but a job never spans two partitions (slurmctld tries it as a record per partition): it
    starts at 100, on A's two nodes (the first listed that holds it). A job bigger than any one
    of its partitions is refused (history.py leaves it out of a capture's replay)."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    jobs = [SimJob("1", 0.0, 100.0, 200.0, 8, user="u1", account="a", partition="A"),
            SimJob("2", 0.0, 100.0, 200.0, 8, user="u1", account="a", partition="B"),
            SimJob("3", 1.0, 50.0, 200.0, 16, user="u1", account="a", partition="A,B")]
    meta = {"machine": {"nodes": 4, "cpus": 32, "node_cpus": [8], "partition_nodes": {"A": [0, 1], "B": [2, 3]}}}
    sc = SlurmSched(node_cpus=8, node_model="22.05")
    r = simulate_multifactor(Workload("multi", 32, jobs, meta=meta), prio, sched=sc)
    assert r.start[2] == 100.0 and r.nodes[2] == [8, 8, 0, 0], (r.start, r.nodes)
    big = [*jobs[:2], SimJob("3", 1.0, 50.0, 200.0, 24, user="u1", account="a", partition="A,B")]
    with pytest.raises(ConfigError, match="job 3: 24 CPUs, more than its partition's nodes hold"):
        simulate_multifactor(Workload("multi", 32, big, meta=meta), prio, sched=sc)


def test_an_events_main_pass_tests_default_queue_depth_plus_one_jobs():
    """job_scheduler.c `_schedule`: `if (!full_queue && (job_depth++ > def_job_limit)) break;`
    tests def_job_limit + 1 jobs. default_queue_depth=1, no backfill, no timer: three 2-CPU jobs
    submitted at 0 on an empty 16-CPU node; the submission's pass starts two, the third starts at
    the next event, the first job's end (1000)."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    w = Workload("depth", 16, [SimJob(str(k), 0.0, 1000.0, 2000.0, 2, user="u1", account="a") for k in (1, 2, 3)])
    sc = SlurmSched(backfill=False, default_queue_depth=1, sched_interval_s=1e9)
    assert simulate_multifactor(w, prio, sched=sc).start == [0.0, 0.0, 1000.0]


def test_the_replay_says_where_partitions_are_not_told_apart(tmp_path):
    """Nodes of different sizes are placed apart, each its own size; pooled (a --machine that is not
    the nodes' CPUs), partitions over different nodes are named as not told apart; a job whose
    partition nodes.txt does not list is named too (it may run anywhere)."""
    import shutil

    cap = tmp_path / "cap"
    shutil.copytree(ROOT / "tests" / "data" / "captures" / "tier-22.05", cap)
    (cap / "nodes.txt").write_text("tbnode1|normal*|64|idle\ntbnode2|normal*|64|idle\ntbnode2|hi|64|idle\n"
                                   "tbnode3|gpu|32|idle\n")
    r = CliRunner().invoke(app, ["simulate", str(cap)])
    assert r.exit_code == 0, r.output
    assert "nodes: 3 (2 of 64, 1 of 32 CPUs), each job placed on them" in r.output, r.output
    assert "not told apart" not in r.output, r.output
    r = CliRunner().invoke(app, ["simulate", str(cap), "--machine", "300"])
    assert r.exit_code == 0, r.output
    assert "partitions over different nodes are not told apart" in r.output, r.output
    jobs = (cap / "jobs.txt").read_text().replace("|normal|", "|nosuch|")
    (cap / "jobs.txt").write_text(jobs)
    r = CliRunner().invoke(app, ["simulate", str(cap)])
    assert "note: jobs in partitions nodes.txt does not list (nosuch): each may run on every node" in r.output, r.output


def test_sched_interval_minus_one_turns_the_main_scheduler_off():
    """job_scheduler.c `_schedule`: sched_interval=-1 returns at once (`goto out`), on events too:
    only backfill starts jobs (three 4-CPU jobs at 1, 2, 3 start at the cycle of 31, the first
    submission + bf_interval); with no backfill either nothing would ever start: refused."""
    prio = PriorityConfig(weight_age=1000.0, weight_fairshare=10000.0, max_age_s=3600.0, calc_period_s=60.0,
                          half_life_s=600.0, fair_tree=False)
    w = Workload("off", 16, [SimJob(str(k), float(k), 100.0, 200.0, 4, user="u1", account="a") for k in (1, 2, 3)])
    off = sched_from_config("SchedulerParameters=sched_interval=-1\n")
    assert not off.main_sched and off.backfill
    assert simulate_multifactor(w, prio, sched=off).start == [31.0, 31.0, 31.0]
    assert simulate_multifactor(w, prio, sched=SlurmSched()).start == [1.0, 4.0, 4.0]  # (the loop's batch_sched_delay)
    with pytest.raises(ConfigError, match="slurmctld starts no job"):
        simulate_multifactor(w, prio, sched=sched_from_config("SchedulerParameters=sched_interval=-1,bf_interval=-1\n"))


def test_parameters_the_model_does_not_apply_are_named():
    s = sched_from_config("SchedulerParameters=bf_max_job_user=2,partition_job_depth=1,bf_min_age_reserve=600,defer\n")
    assert s.unmodelled == ("defer",)  # (partition_job_depth and bf_min_age_reserve are modelled)
    assert s.partition_job_depth == 1 and s.limits_text() == "bf_max_job_user=2,partition_job_depth=1,bf_min_age_reserve=600"
    assert sched_from_config("SchedulerParameters=partition_job_depth=-2\n").partition_job_depth == 0  # ("ignoring")
    assert sched_from_config("SchedulerParameters=bf_continue,bf_interval=40\n").unmodelled == ()


def test_a_job_listing_a_partition_nodes_txt_does_not_know_may_run_anywhere(tmp_path):
    """`normal,ghost`: ghost's nodes are unknown, so the job may run on every node (as `ghost`
    alone), and is not left out as bigger than normal's nodes; the output names ghost, and the
    jobs of several partitions (counted once towards the limits)."""
    import shutil

    from fscontrol.sim import history

    cap = tmp_path / "cap"
    shutil.copytree(ROOT / "tests" / "data" / "captures" / "tier-22.05", cap)
    (cap / "nodes.txt").write_text("tbnode1|normal*|64|idle\ntbnode1|hi|64|idle\ntbnode2|hi|64|idle\n")
    (cap / "jobs.txt").write_text((cap / "jobs.txt").read_text().replace("|normal|", "|normal,ghost|"))
    w = history.read_history(cap)
    assert any(j.partition == "normal,ghost" and j.size > 64 for j in w.jobs)
    r = CliRunner().invoke(app, ["simulate", str(cap)])
    assert r.exit_code == 0, r.output
    assert "does not list (ghost)" in r.output and "jobs of several partitions" in r.output, r.output
    r = CliRunner().invoke(app, ["simulate", str(cap), "--unit", "nodes"])
    assert r.exit_code == 0 and "note: --unit nodes: partitions over different nodes are not told apart" in r.output, r.output
