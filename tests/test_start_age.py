"""The age term growing through the start estimate's horizon (issue #32 item 4: priorities are
recomputed every PriorityCalcPeriod, the age factor min(1, age / PriorityMaxAge) x
PriorityWeightAge). Hand-worked: the order flips within the horizon."""

from __future__ import annotations

from fscontrol.forecast import start as st
from fscontrol.sim.slurmsched import SlurmSched

NOW = 1_000_000.0
SC = SlurmSched(node_cpus=128)
AGE = (1000.0, 600.0, 60.0)  # PriorityWeightAge 1000, PriorityMaxAge 10 min, PriorityCalcPeriod 1 min


def job(i, user, state, cpus, limit, start=None, prio=0.0, submit=NOW, reason="Priority"):
    return st.StartJob(str(i), user, "a", "normal", state, cpus, limit, start, prio, reason, submit)


def test_a_younger_job_overtakes_one_at_the_maximum_age():
    # alice holds the node to NOW + 300. A (1500 now) has been eligible 10 minutes: its age factor
    # is at 1 and stays. B (1400 now) was submitted now: at a pass at tau it is 1400 + 1000 tau / 600.
    # Passes at NOW + 30 + 60k: at NOW + 90 B is 1550 > 1500 and heads the queue. At NOW + 300
    # the node frees: B starts, A after B's limit (NOW + 900). Held priorities: A at 300, B at 900.
    jobs = [job(1, "alice", "RUNNING", 128, 300, NOW), job(2, "bob", "PENDING", 128, 600, prio=1500, submit=NOW - 600),
            job(3, "carol", "PENDING", 128, 600, prio=1400, submit=NOW)]
    held = {e.job_id: e.start for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC)}
    assert (held["2"], held["3"]) == (NOW + 300, NOW + 900)
    aged = {e.job_id: e.start for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, age=AGE)}
    assert (aged["3"], aged["2"]) == (NOW + 300, NOW + 900)
    # B 150 below A: 1400 + 1000 tau / 600 > 1550 needs tau > 90; the pass at 90 gives exactly
    # 1550 (not above: ties go to the earlier job), the pass at 150 flips them, still before 300
    jobs[2] = job(3, "carol", "PENDING", 128, 600, prio=1350, submit=NOW)
    aged = {e.job_id: e.start for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, age=AGE)}
    assert (aged["3"], aged["2"]) == (NOW + 300, NOW + 900)
    # 500 below: B reaches 1000 + 1000 x 270 / 600 = 1450 at the last pass before 300 (NOW + 270): no flip
    jobs[2] = job(3, "carol", "PENDING", 128, 600, prio=1000, submit=NOW)
    aged = {e.job_id: e.start for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, age=AGE)}
    assert (aged["2"], aged["3"]) == (NOW + 300, NOW + 900)


def test_jobs_all_under_the_maximum_age_keep_their_order():
    # both gain alike (neither reaches 10 minutes before the node frees): the order is kept
    jobs = [job(1, "alice", "RUNNING", 128, 300, NOW), job(2, "bob", "PENDING", 128, 600, prio=1500, submit=NOW - 60),
            job(3, "carol", "PENDING", 128, 600, prio=1400, submit=NOW)]
    aged = {e.job_id: e.start for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=SC, age=AGE)}
    assert (aged["2"], aged["3"]) == (NOW + 300, NOW + 900)


def test_the_age_parameters_from_the_config():
    assert st.age_params({"PriorityWeightAge": "20000", "PriorityMaxAge": "00:20:00", "PriorityCalcPeriod": "5"}) \
        == (20000.0, 1200.0, 300.0)
    assert st.age_params({"PriorityWeightAge": "1000"}) == (1000.0, 7 * 86400.0, 300.0)  # Slurm's defaults
    assert st.age_params({}) is None and st.age_params({"PriorityWeightAge": "0"}) is None


def test_past_bf_window_the_first_fit_keeps_the_re_sorted_order():
    # bf_window 200 s: the re-sort at NOW + 90 (as above), then past NOW + 200 the first fit's
    # min-tree is built in the queue's new order (by rank, not by index): B first at NOW + 300
    # (alice's end), A after B's limit. Indexed by job instead, A would take the node first.
    sc = SlurmSched(node_cpus=128, bf_window_s=200.0)
    jobs = [job(1, "alice", "RUNNING", 128, 300, NOW), job(2, "bob", "PENDING", 128, 600, prio=1500, submit=NOW - 600),
            job(3, "carol", "PENDING", 128, 600, prio=1400, submit=NOW)]
    aged = {e.job_id: e.start for e in st.estimate(jobs, now=NOW, total_cpus=128, sched=sc, age=AGE)}
    assert (aged["3"], aged["2"]) == (NOW + 300, NOW + 900)
