"""Advance reservations in the start estimate (issue #32 item 4): `scontrol -o show reservation`
read from real output (22.05 and 26.05), and the queue played around them. Each case's expected
start is worked out by hand in its comment (SlurmSched's defaults: backfill every 30 s, the first
cycle at NOW + 15; the main scheduler at every event)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fscontrol.errors import ParseError
from fscontrol.forecast import resvplan
from fscontrol.forecast import start as st
from fscontrol.forecast import startview as sv
from fscontrol.sim.slurmsched import SlurmSched
from fscontrol.slurm.parse import parse_time
from fscontrol.slurm.resv import Reservation, parse_reservations

CAP = Path(__file__).parent / "data" / "captures"
NOW = 1_000_000.0
SC = SlurmSched(node_cpus=128)


def job(i, user, state, cpus, limit, start=None, prio=0.0, reason="Priority", resv=""):
    return st.StartJob(str(i), user, "a", "normal", state, cpus, limit, start, prio, reason, NOW - 100, reservation=resv)


def resv(name, begin, end, cpus, *flags):
    return Reservation(name, NOW + begin, NOW + end, "tbnode1", 1, cpus, frozenset(flags))


def plan(jobs, resvs, total=128, **kw):
    wins, skipped, notes = resvplan.windows(resvs, NOW)
    ests = st.estimate(jobs, now=NOW, total_cpus=total, sched=SC, windows=wins, skipped=skipped, **kw)
    return {e.job_id: e for e in ests}, notes


@pytest.mark.parametrize("release", ["tb", "tb-26.05"])
def test_reservations_parsed_from_real_scontrol_output(release):
    text = (CAP / release / "show_reservation.txt").read_text()
    maint, part = parse_reservations(text)
    assert maint.name == "fsc_maint" and part.name == "fsc_part"
    assert maint.flags == {"MAINT", "IGNORE_JOBS", "SPEC_NODES", "ALL_NODES"}
    assert part.flags == frozenset()  # 26.05 prints "Flags=   NodeName=tbnode1 CoreIDs=0-31"
    assert (maint.cpus, maint.node_count, maint.nodes) == (128, 1, "tbnode1")
    assert part.cpus == 32 and part.users == "alice,bob" and part.partition == "normal"
    assert maint.end - maint.start == 20 * 60 and part.end - part.start == 30 * 60
    assert maint.start == parse_time(text.split("StartTime=")[1].split()[0])
    assert parse_reservations((CAP / "tb" / "show_reservation_none.txt").read_text()) == []
    # a job submitted with --reservation: squeue's %v, reason Reservation
    (j,) = st.parse_queue((CAP / release / "squeue_start_resv.txt").read_text())
    assert (j.reservation, j.reason, j.state) == ("fsc_part", "Reservation", "PENDING")
    with pytest.raises(ParseError):
        parse_reservations("ReservationName=x StartTime=soon EndTime=later\n")
    with pytest.raises(ParseError):
        parse_reservations("StartTime=2026-11-27T05:07:08\n")


def test_a_job_whose_limit_overlaps_a_reservation_waits_for_its_end_and_one_that_fits_before_it_runs():
    # the whole 128-CPU node reserved from NOW + 600 to NOW + 1800. Job 2 (64 CPUs, 900 s) would
    # run across the start: the main scheduler stops at it; job 3 (64 CPUs, 300 s) ends before it and
    # the first backfill cycle starts it (NOW + 15). Job 2 starts at the first cycle after the
    # reservation's end: 15 + 30k >= 1800 -> NOW + 1815, named as what delayed it.
    # Without the reservation both would start now (64 + 64 = 128).
    jobs = [job(2, "bob", "PENDING", 64, 900, prio=100), job(3, "carol", "PENDING", 64, 300, prio=50)]
    free, _ = plan(jobs, [])
    assert free["2"].start == free["3"].start == NOW
    e, notes = plan(jobs, [resv("maint", 600, 1800, 128, "MAINT")])
    assert e["3"].start == NOW + 15 and "reservation" not in e["3"].extra
    assert e["2"].start == NOW + 1815
    assert (e["2"].extra["reservation"], e["2"].extra["reservation_role"]) == ("maint", "delayed by")
    assert any("maint (128 CPUs" in n for n in notes)
    d = st.to_dict(list(e.values()), now=NOW, sched=SC, notes=notes)
    row = next(r for r in d["jobs"] if r["job_id"] == "2")
    assert row["reservation"] == "maint" and "delayed by reservation maint" in sv.render(d)
    assert "delayed by reservation maint" in sv.why_line(row, NOW)


def test_running_jobs_past_the_start_hold_cpus_outside_the_reservation():
    # two nodes (256 CPUs). Alice's job holds 128 CPUs to NOW + 3000, past the reservation's start
    # (NOW + 600), so it is on the other node; the 128 reserved CPUs are free now, but a 64-CPU,
    # 900-s job would run into the reservation: 256 - 128 - 128 = 0 CPUs for it until NOW + 1800
    # (first cycle after: NOW + 1815). Under IGNORE_JOBS her job may be on the reserved CPUs: not
    # counted, 256 - 128 = 128 >= 64 and it starts now.
    jobs = [job(1, "alice", "RUNNING", 128, 3000, NOW), job(2, "bob", "PENDING", 64, 900, prio=100)]
    e, _ = plan(jobs, [resv("maint", 600, 1800, 128)], total=256)
    assert e["2"].start == NOW + 1815
    e, _ = plan(jobs, [resv("maint", 600, 1800, 128, "IGNORE_JOBS")], total=256)
    assert e["2"].start == NOW


def test_a_job_in_a_reservation_runs_only_inside_it_and_others_keep_the_rest():
    # reservation r2: 32 of 128 CPUs from NOW + 600 to NOW + 1200. Dave's 8-CPU job in it starts
    # at its start, NOW + 600: the reservation's begin is an event of the main scheduler (slurmctld
    # started such a job at StartTime to the second on the testbed, 22.05 and 26.05). Bob's 128-CPU, 300-s job does not fit beside
    # the reservation once it begins, and ends before it: it starts now. Carol's 100-CPU, 900-s job
    # (lower priority) would run into r2 where only 96 CPUs are left: after Bob's ends it waits,
    # and starts at the first cycle after r2's end, NOW + 1215.
    jobs = [job(4, "dave", "PENDING", 8, 300, prio=200, reason="Reservation", resv="r2"),
            job(2, "bob", "PENDING", 128, 300, prio=100), job(3, "carol", "PENDING", 100, 900, prio=50)]
    e, _ = plan(jobs, [resv("r2", 600, 1200, 32)])
    assert e["2"].start == NOW
    assert e["4"].start == NOW + 600 and e["4"].extra["reservation_role"] == "in"
    assert e["3"].start == NOW + 1215 and e["3"].extra["reservation"] == "r2"
    # a job in it larger than it: that reason
    e, _ = plan([job(5, "dave", "PENDING", 64, 300, prio=1, reason="Reservation", resv="r2")], [resv("r2", 600, 1200, 32)])
    assert e["5"].start is None and "more than the 32 of reservation r2" in e["5"].reason


def test_flags_not_modelled_are_named_and_their_jobs_get_the_reason():
    jobs = [job(4, "dave", "PENDING", 8, 300, prio=200, reason="Reservation", resv="flex"),
            job(2, "bob", "PENDING", 128, 900, prio=100)]
    e, notes = plan(jobs, [resv("flex", 600, 1200, 32, "FLEX"), resv("hourly", 7200, 9000, 16, "HOURLY")])
    assert e["4"].start is None and "flex" in e["4"].reason and "FLEX" in e["4"].reason
    assert e["2"].start == NOW  # the FLEX one is left out; the hourly one begins after bob's limit
    assert any("reservation flex not modelled" in n for n in notes)
    assert any("hourly repeats (HOURLY)" in n for n in notes)
    # an ended reservation is dropped
    assert plan(jobs[1:], [resv("old", -900, -1, 128)])[0]["2"].start == NOW


def test_reservations_far_ahead_hold_past_the_backfill_window():
    # past bf_window (1 day) every job that fits starts (first fit): a reservation two days ahead
    # still keeps a 3-day job off its CPUs. The node is busy for 1.5 days; then the 3-day job would
    # cross the reservation (NOW + 2 d .. NOW + 2.5 d) and waits for its end; the 1-hour job behind it starts.
    day = 86400
    jobs = [job(1, "alice", "RUNNING", 128, 1.5 * day, NOW), job(2, "bob", "PENDING", 128, 3 * day, prio=100),
            job(3, "carol", "PENDING", 128, 3600, prio=50)]
    e, _ = plan(jobs, [resv("maint", 2 * day, 2.5 * day, 128)])
    assert e["3"].start == NOW + 1.5 * day
    assert NOW + 2.5 * day <= e["2"].start <= NOW + 2.5 * day + SC.sched_interval_s
    assert e["2"].extra["reservation"] == "maint"


def test_a_job_in_a_reservation_is_tried_behind_one_outside_it_that_does_not_fit():
    # job_scheduler.c: a job outside reservations that does not fit stops the others of its
    # partition, not those in a reservation (failed_resv apart). Bob's 128-CPU, 900-s job (first)
    # would run into r2 (32 CPUs, NOW + 600 .. 1200): it waits for r2's end (first cycle after:
    # NOW + 1215). Dave's job in r2, behind it, still starts as r2 begins: NOW + 600.
    jobs = [job(2, "bob", "PENDING", 128, 900, prio=100), job(4, "dave", "PENDING", 8, 300, prio=50,
                                                               reason="Reservation", resv="r2")]
    e, _ = plan(jobs, [resv("r2", 600, 1200, 32)])
    assert e["4"].start == NOW + 600
    assert e["2"].start == NOW + 1215 and e["2"].extra["reservation"] == "r2"
    # squeue's reason for a job kept off a reservation's nodes is a wait for CPUs here
    e, _ = plan([job(2, "bob", "PENDING", 128, 900, prio=100, reason="ReqNodeNotAvail, Reserved for maintenance")],
                [resv("r2", 600, 1200, 32)])
    assert e["2"].start == NOW + 1215


def test_a_job_whose_begin_time_passes_behind_a_blocked_head_is_backfilled_at_the_next_cycle():
    # (found by the testbed test around a reservation) alice holds 64 CPUs to NOW + 1000; bob's
    # 100-CPU head waits for them. Carol's 32-CPU, 300-s job may begin at NOW + 20: the main
    # scheduler stops at bob, and the cycle at NOW + 15 came before her begin. slurmctld marks the
    # queue changed when her BeginTime clears, so the next cycle (NOW + 45) backfills her (she ends
    # before bob's reservation). Before: no cycle ran until alice's end, and she started after bob.
    jobs = [job(1, "alice", "RUNNING", 64, 1000, NOW), job(2, "bob", "PENDING", 100, 600, prio=100, reason="Resources"),
            job(3, "carol", "PENDING", 32, 300, start=NOW + 20, prio=50, reason="BeginTime")]
    e, _ = plan(jobs, [])
    assert e["3"].start == NOW + 45 and e["2"].start == NOW + 1000


def test_the_web_card_names_the_reservation():
    from fscontrol.web.userpage import _starts_card

    jobs = [job(2, "bob", "PENDING", 64, 900, prio=100)]
    e, notes = plan(jobs, [resv("maint", 600, 1800, 128, "MAINT")])
    html = _starts_card(st.to_dict(list(e.values()), now=NOW, sched=SC, notes=notes))
    assert "delayed by reservation maint" in html and "reservations modelled: maint" in html


def test_a_daily_reservation_repeats_through_the_horizon():
    # the whole node reserved daily from NOW + 1 h for 1 h (scontrol shows the next occurrence).
    # Alice's job holds the node to NOW + 23.5 h; bob's 2-hour job would then cross the second
    # occurrence (NOW + 25 h .. 26 h): it waits for its end, and starts within a scheduler pass of it
    # (past bf_window: the main scheduler every sched_interval). Before: the first occurrence alone
    # was modelled and he started at NOW + 23.5 h.
    h = 3600
    jobs = [job(1, "alice", "RUNNING", 128, 23.5 * h, NOW), job(2, "bob", "PENDING", 128, 2 * h, prio=100)]
    e, notes = plan(jobs, [resv("daily", h, 2 * h, 128, "DAILY")])
    assert NOW + 26 * h <= e["2"].start <= NOW + 26 * h + SC.sched_interval_s, (e["2"].start - NOW) / h
    assert e["2"].extra["reservation"] == "daily"
    assert any("daily repeats every 1 day(s): 7 occurrences" in n for n in notes), notes
