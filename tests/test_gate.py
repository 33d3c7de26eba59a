from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.model.allocations import parse_allocations
from dataclasses import replace

from fscontrol.errors import ConfigError, UnsafeActionError
from fscontrol.act.gate import (HOLD_MARK, GateAction, GateOptions, LedgerEntry, apply_to_ledger, is_waiting, job_size,
                            plan_gate, plan_release_all, reconcile_ledger)
from fscontrol.snaprecords import QueueJob

NOW = 1_700_000_000.0

# targets: alice 288 nodes, bob 58 nodes (Steffen section 5)
ALLOCS = parse_allocations(
    {
        "defaults": {"unit": "nodes", "period": "1h", "factor": 2},
        "alice": {"award": 144},
        "bob": {"award": 29},
    }
)


def qj(job_id, account, state="PENDING", nodes=1, priority=100, reason="Priority", nice=0, cpus=None, submit=0.0, comment=""):
    return QueueJob(
        job_id=str(job_id),
        user=account,
        account=account,
        partition="batch",
        qos="normal",
        state=state,
        nodes=nodes,
        cpus=cpus if cpus is not None else nodes * 8,
        priority=priority,
        nice=nice,
        reason=reason,
        submit=submit,
        start=None,
        time_limit_s=3600,
        admin_comment=comment,
    )


def running(job_id, account, nodes):
    return qj(job_id, account, "RUNNING", nodes, priority=0, reason="None")


def base_queue():
    """Alice runs 400 nodes (> 288), Bob runs 0 with 2 waiting: Alice's waiting jobs must be held."""
    return [
        running(1, "alice", 200),
        running(2, "alice", 200),
        qj(3, "alice", nodes=200, priority=500),
        qj(4, "alice", nodes=200, priority=700),
        qj(5, "alice", nodes=200, priority=600),
        qj(11, "bob", nodes=50, priority=100),
        qj(12, "bob", nodes=50, priority=90),
    ]


def test_holds_over_target_jobs_in_priority_order_while_under_target_wait():
    plan = plan_gate(base_queue(), ALLOCS, set(), now=NOW)
    assert [(a.kind, a.job_id) for a in plan.actions] == [("hold", "4"), ("hold", "5"), ("hold", "3")]
    assert all(a.account == "alice" for a in plan.actions)
    assert "over target (400 > 288 nodes)" in plan.actions[0].reason and "bob" in plan.actions[0].reason
    assert plan.actions[0].argv == ("scontrol", "update", "JobId=4", "Priority=0", "AdminComment=fscontrol:hold")
    assert plan.under_waiting == ("bob",)
    table = {r.account: r for r in plan.accounts}
    assert table["alice"].occupancy == 400 and table["alice"].target == pytest.approx(288)
    assert table["alice"].state == "over" and table["alice"].over_by == pytest.approx(112)
    assert table["alice"].pending_demand == 600 and table["alice"].waiting_jobs == 3
    assert table["bob"].occupancy == 0 and table["bob"].ideal == pytest.approx(29) and table["bob"].state == "under"
    assert table["bob"].pending_demand == 100 and table["bob"].running_jobs == 0
    assert plan.deferred == 0
    json.dumps(plan.to_dict())


def test_no_holds_when_nothing_under_target_waits():
    q = [running(1, "alice", 400), qj(3, "alice", nodes=200), running(11, "bob", 50)]
    plan = plan_gate(q, ALLOCS, set(), now=NOW)
    assert plan.actions == () and plan.under_waiting == ()


def test_bob_over_target_is_not_waiting_under_target():
    # Bob at 100 > 58 with waiting jobs: he is over target too; nobody under target waits.
    q = [running(1, "alice", 400), qj(3, "alice", nodes=200), running(11, "bob", 100), qj(12, "bob", nodes=50)]
    assert plan_gate(q, ALLOCS, set(), now=NOW).actions == ()


def test_at_target_counts_as_under():
    allocs = parse_allocations({"a": {"award": 50, "period": "1h", "unit": "nodes", "factor": 2},
                                "b": {"award": 10, "period": "1h", "unit": "nodes", "factor": 1}})
    q = [running(1, "a", 100), qj(2, "a", nodes=10), running(3, "b", 200), qj(4, "b", nodes=5)]
    plan = plan_gate(q, allocs, set(), now=NOW)
    assert {r.account: r.state for r in plan.accounts} == {"a": "at", "b": "over"}
    assert [(a.kind, a.job_id) for a in plan.actions] == [("hold", "4")]


def test_never_touches_jobs_held_by_users_or_admins():
    q = base_queue() + [
        qj(6, "alice", nodes=200, priority=900, reason="JobHeldUser"),
        qj(7, "alice", nodes=200, priority=950, reason="JobHeldAdmin"),
    ]
    plan = plan_gate(q, ALLOCS, set(), now=NOW)
    touched = {a.job_id for a in plan.actions}
    assert "6" not in touched and "7" not in touched
    assert plan.foreign_held == ("6", "7")
    # ... and never releases them when nothing waits either
    q2 = [running(1, "alice", 400), qj(7, "alice", nodes=200, reason="JobHeldAdmin")]
    assert plan_gate(q2, ALLOCS, set(), now=NOW).actions == ()


def test_user_held_under_target_job_is_not_waiting():
    q = [running(1, "alice", 400), qj(3, "alice", nodes=200), qj(11, "bob", nodes=50, reason="JobHeldUser"),
         qj(12, "bob", nodes=50, reason="Dependency")]
    plan = plan_gate(q, ALLOCS, set(), now=NOW)
    assert plan.actions == () and plan.under_waiting == ()


def test_releases_own_holds_when_nothing_under_target_waits():
    q = [
        running(1, "alice", 400),
        qj(3, "alice", nodes=200, priority=500, reason="JobHeldAdmin"),
        qj(4, "alice", nodes=200, priority=700, reason="JobHeldAdmin"),
        qj(8, "alice", nodes=200, priority=800, reason="JobHeldAdmin"),  # not ours: stays
        running(11, "bob", 50),
    ]
    plan = plan_gate(q, ALLOCS, {"3", "4"}, now=NOW)
    assert [(a.kind, a.job_id) for a in plan.actions] == [("release", "4"), ("unmark", "4"), ("release", "3"), ("unmark", "3")]
    assert "idle" in plan.actions[0].reason
    assert plan.actions[0].argv == ("scontrol", "release", "4")


def test_keeps_holds_while_over_target_and_others_wait():
    q = base_queue()
    q[2] = qj(3, "alice", nodes=200, priority=500, reason="JobHeldAdmin")
    plan = plan_gate(q, ALLOCS, {"3"}, now=NOW)
    assert [(a.kind, a.job_id) for a in plan.actions] == [("hold", "4"), ("hold", "5")]
    assert {r.account: r.agent_held for r in plan.accounts}["alice"] == 1


def test_release_when_account_drops_to_target_like_pass_one():
    # Alice runs 200 (< 288) with 3 of her jobs held by us; Bob waits. Pass 1 would place one
    # more Alice job (200 <= 288, then 400 > 288): release exactly the top one.
    q = [
        running(1, "alice", 200),
        qj(3, "alice", nodes=200, priority=500, reason="JobHeldAdmin"),
        qj(4, "alice", nodes=200, priority=700, reason="JobHeldAdmin"),
        qj(5, "alice", nodes=200, priority=600, reason="JobHeldAdmin"),
        qj(11, "bob", nodes=50),
    ]
    plan = plan_gate(q, ALLOCS, {"3", "4", "5"}, now=NOW)
    assert [(a.kind, a.job_id) for a in plan.actions] == [("release", "4"), ("unmark", "4")]
    assert "at/under target" in plan.actions[0].reason


def test_never_releases_a_job_not_in_the_ledger():
    q = [running(1, "alice", 100), qj(3, "alice", nodes=200, reason="JobHeldAdmin")]
    plan = plan_gate(q, ALLOCS, set(), now=NOW)
    assert plan.actions == ()
    plan = plan_gate(q, ALLOCS, {"99"}, now=NOW)
    assert plan.actions == () and plan.stale_ledger == ("99",)


def test_stale_ledger_entries():
    q = [running(3, "alice", 200), qj(4, "alice", nodes=200, reason="Priority")]
    plan = plan_gate(q, ALLOCS, {"3", "4", "5"}, now=NOW)
    # 3 runs, 4 was released by someone else, 5 is gone: none is ours any more
    assert plan.stale_ledger == ("3", "4", "5")
    assert plan.actions == ()


def test_action_bound_releases_first():
    q = [running(1, "alice", 1000)] + [qj(100 + k, "alice", nodes=10, priority=k) for k in range(10)]
    q += [qj(11, "bob", nodes=50)]
    q += [qj(200, "alice", nodes=10, reason="JobHeldAdmin")]
    allocs = parse_allocations({"defaults": {"unit": "nodes", "period": "1h"}, "alice": {"award": 144},
                                "bob": {"award": 29}, "carol": {"award": 500}})
    # make the ledger job carol's so it is released (carol is under target)
    q[-1] = qj(200, "carol", nodes=10, reason="JobHeldAdmin")
    plan = plan_gate(q, allocs, {"200"}, GateOptions(max_actions=3), now=NOW)
    # the bound counts jobs: a release and the clearing of its mark are one
    assert [(a.kind, a.job_id) for a in plan.actions] == [("release", "200"), ("unmark", "200"), ("hold", "109"), ("hold", "108")]
    assert plan.deferred == 8


def test_deterministic_whatever_the_input_order():
    q = base_queue() + [qj(20 + k, "alice", nodes=10, priority=500, submit=float(k % 3)) for k in range(12)]
    ref = plan_gate(q, ALLOCS, {"21"}, now=NOW)
    rng = random.Random(7)
    for _ in range(10):
        rng.shuffle(q)
        assert plan_gate(q, ALLOCS, {"21"}, now=NOW) == ref
    ids = [a.job_id for a in ref.actions]
    assert ids[:4] == ["4", "5", "3", "20"]  # priority, then submit time, then natural job id


def test_nice_mode_demotes_and_restores():
    opts = GateOptions(action="nice", nice_value=5000)
    plan = plan_gate(base_queue(), ALLOCS, {}, opts, now=NOW)
    assert [(a.kind, a.job_id, a.nice) for a in plan.actions] == [("nice", "4", 5000), ("nice", "5", 5000),
                                                                     ("nice", "3", 5000)]
    assert plan.actions[0].argv == ("scontrol", "update", "JobId=4", "Nice=5000", "AdminComment=fscontrol:nice:5000")
    ledger = apply_to_ledger({}, plan)
    assert ledger == {"4": 0, "5": 0, "3": 0}
    # Bob's jobs are running now: nothing waits under target -> un-nice, restoring the old nice
    q = [running(1, "alice", 400), qj(4, "alice", nodes=200, nice=5000), qj(5, "alice", nodes=200, nice=5000),
         running(11, "bob", 50)]
    plan = plan_gate(q, ALLOCS, {"4": 0, "5": 10}, opts, now=NOW)
    assert [(a.kind, a.job_id, a.nice) for a in plan.actions] == [("unnice", "4", 0), ("unnice", "5", 10)]
    assert apply_to_ledger({"4": 0, "5": 10}, plan) == {}


def test_nice_mode_leaves_foreign_nice_alone():
    q = base_queue()
    q[3] = qj(4, "alice", nodes=200, priority=700, nice=100)  # someone else's nice
    plan = plan_gate(q, ALLOCS, set(), GateOptions(action="nice"), now=NOW)
    assert "4" not in {a.job_id for a in plan.actions}
    # a ledger job whose nice someone changed is no longer ours
    q2 = [running(1, "alice", 400), qj(4, "alice", nodes=200, nice=7), qj(11, "bob", nodes=50)]
    plan = plan_gate(q2, ALLOCS, {"4"}, GateOptions(action="nice", nice_value=10000), now=NOW)
    assert plan.stale_ledger == ("4",) and all(a.job_id != "4" for a in plan.actions if a.kind == "unnice")


def test_unmanaged_accounts_are_neither_held_nor_trigger_holds():
    q = [running(1, "alice", 400), qj(3, "alice", nodes=200), qj(30, "zed", nodes=1000), running(31, "zed", 5000)]
    plan = plan_gate(q, ALLOCS, set(), now=NOW)
    assert plan.actions == ()
    assert {r.account: r.state for r in plan.accounts}["zed"] == "unmanaged"
    # a held job of an account whose allocation was removed is released
    q = [running(1, "alice", 400), qj(3, "alice", nodes=200), qj(11, "bob", nodes=50),
         qj(30, "zed", nodes=10, reason="JobHeldAdmin")]
    plan = plan_gate(q, ALLOCS, {"30"}, now=NOW)
    assert ("release", "30") in [(a.kind, a.job_id) for a in plan.actions]


def test_units_and_sizes():
    allocs = parse_allocations({"a": {"award": 100, "period": "1h"}, "b": {"award": 1, "period": "1h"}})  # cpus
    q = [qj(1, "a", "RUNNING", nodes=2, cpus=64), qj(2, "b", nodes=1, cpus=8)]
    plan = plan_gate(q, allocs, set(), now=NOW)
    assert {r.account: r.occupancy for r in plan.accounts} == {"a": 64, "b": 0}
    j = qj(1, "a", nodes=0, cpus=20)
    assert job_size(j, "nodes", 8) == 3 and job_size(j, "nodes") == 0
    assert job_size(qj(1, "a", nodes=2, cpus=0), "cpus", 16) == 32
    assert job_size(qj(1, "a", "R", nodes=2), "nodes") == 2
    assert is_waiting(qj(1, "a", reason="Resources")) and not is_waiting(qj(1, "a", reason="QOSMaxJobsPerUserLimit"))
    assert not is_waiting(running(1, "a", 1))


@pytest.mark.parametrize(
    "kw", [{"action": "kill"}, {"nice_value": 0}, {"nice_value": True}, {"max_actions": 0}, {"node_cpus": 0}]
)
def test_options_validated(kw):
    with pytest.raises(ConfigError):
        GateOptions(**kw)


def test_apply_to_ledger_partial_success():
    plan = plan_gate(base_queue(), ALLOCS, {"77"}, now=NOW)
    assert apply_to_ledger({"77"}, plan, done={"4"}) == {"4": 0}


# ---------------------------------------------------------------- properties

reasons = st.sampled_from(["Priority", "Resources", "JobHeldUser", "JobHeldAdmin", "Dependency", "None"])
jobs_st = st.lists(
    st.tuples(
        st.integers(1, 40),  # id
        st.sampled_from(["alice", "bob", "carol", "zed"]),
        st.sampled_from(["PENDING", "RUNNING"]),
        st.integers(1, 300),
        st.integers(0, 1000),
        reasons,
    ),
    max_size=30,
    unique_by=lambda t: t[0],
)


@settings(max_examples=300, deadline=None)
@given(jobs_st, st.sets(st.integers(1, 45).map(str), max_size=10), st.integers(1, 8), st.sampled_from(["hold", "nice"]))
def test_gate_safety_properties(rows, ledger, bound, mode):
    allocs = parse_allocations({"defaults": {"unit": "nodes", "period": "1h"}, "alice": {"award": 144},
                                "bob": {"award": 29}, "carol": {"award": 100}})
    q = [qj(i, a, s, n, p, r if s == "PENDING" else "None") for i, a, s, n, p, r in rows]
    plan = plan_gate(q, allocs, ledger, GateOptions(action=mode, max_actions=bound), now=NOW)
    by_id = {}
    for j in q:
        by_id.setdefault(j.job_id, j)
    acting = [a for a in plan.actions if a.kind != "unmark"]
    assert len(acting) <= bound
    assert len({a.job_id for a in acting}) == len(acting)
    for k, a in enumerate(plan.actions):  # a release is always followed by the clearing of its mark
        assert (a.kind == "release") == (k + 1 < len(plan.actions) and plan.actions[k + 1] == replace(a, kind="unmark", reason=plan.actions[k + 1].reason))
    for a in acting:
        j = by_id[a.job_id]
        assert j.state == "PENDING"  # never a running job
        if a.kind in ("release", "unnice"):
            assert a.job_id in ledger  # never release what is not ours
        else:
            assert a.job_id not in ledger
            assert j.reason not in ("JobHeldUser", "JobHeldAdmin")  # never touch others' holds
            assert j.account in allocs and plan.under_waiting
    if not plan.under_waiting:
        assert all(a.kind in ("release", "unnice", "unmark") for a in plan.actions)


def test_format_gate_plan():
    from fscontrol.report.gate import format_gate_plan

    text = format_gate_plan(plan_gate(base_queue(), ALLOCS, {"9"}, GateOptions(max_actions=2), now=NOW))
    assert "occupancy (nodes)" in text and "alice" in text and "over" in text
    assert "2 action(s):" in text and "hold     4" in text
    assert "1 more action(s) deferred" in text and "ledger rows dropped: 9 (the job left the queue or started)" in text
    quiet = format_gate_plan(plan_gate([], ALLOCS, (), now=NOW))
    assert "no action" in quiet


# ---------------------------------------------------------------------------- ownership marks
def held_by_agent(job_id, account="alice"):
    return qj(job_id, account, reason="JobHeldAdmin", priority=0, comment=HOLD_MARK)


def test_reconcile_settles_every_intent_against_the_marks():
    """Each row of the ledger against what Slurm shows, one case per line (a kill or a timeout
    can leave any of these states behind)."""
    q = [
        held_by_agent(1),  # holding, and Slurm has it: confirmed
        qj(2, "alice"),  # holding, but the hold never reached Slurm: dropped
        qj(3, "alice", comment=HOLD_MARK),  # held, someone released it: hands off, our mark comes off
        qj(4, "alice", reason="JobHeldAdmin", priority=0, comment="admin: keep"),  # held, an admin took it over
        held_by_agent(5),  # releasing, the release did not happen: held again
        qj(6, "alice", comment=HOLD_MARK),  # releasing, released: dropped, mark comes off
        running(7, "alice", 1),  # held, then started: dropped
        held_by_agent(9),  # our mark, no ledger row (a lost history): an orphan
    ]
    ledger = {"1": LedgerEntry("hold", state="holding"), "2": LedgerEntry("hold", state="holding"),
              "3": LedgerEntry("hold"), "4": LedgerEntry("hold"), "5": LedgerEntry("hold", state="releasing"),
              "6": LedgerEntry("hold", state="releasing"), "7": LedgerEntry("hold"), "8": LedgerEntry("hold")}
    rec = reconcile_ledger(q, ledger)
    assert {j: e.state for j, e in rec.ledger.items()} == {"1": "held", "3": "hands_off", "4": "hands_off", "5": "held"}
    assert rec.held == {"1": 0, "5": 0}
    assert rec.hands_off == {"3", "4"}
    assert [(a.kind, a.job_id) for a in rec.cleanup] == [("unmark", "3"), ("unmark", "6")]
    assert rec.orphans == ("9",)
    dropped = {j for j, old, new, why in rec.changes if new is None}
    assert dropped == {"2", "6", "7", "8"}


def test_a_job_someone_released_is_never_held_again():
    q = [running(1, "alice", 400), qj(3, "alice", priority=900), qj(11, "bob", nodes=50)]
    assert [a.job_id for a in plan_gate(q, ALLOCS, {}, now=NOW).holds] == ["3"]
    assert plan_gate(q, ALLOCS, {}, now=NOW, hands_off={"3"}).holds == ()


def test_a_job_with_someone_elses_admin_comment_is_never_marked_or_held():
    q = [running(1, "alice", 400), qj(3, "alice", priority=900, comment="ticket 4711"), qj(11, "bob", nodes=50)]
    assert plan_gate(q, ALLOCS, {}, now=NOW).holds == ()


def test_nice_ownership_follows_the_mark_not_the_config():
    """The Nice the agent set is in its mark: changing gate.nice later strands nothing."""
    q = [qj(4, "alice", nice=5000, comment="fscontrol:nice:5000")]
    plan = plan_gate(q, ALLOCS, {"4": 0}, GateOptions(action="nice", nice_value=9999), now=NOW)
    assert [(a.kind, a.job_id, a.nice) for a in plan.actions] == [("unnice", "4", 0)]
    assert plan.actions[0].argv == ("scontrol", "update", "JobId=4", "Nice=0", "AdminComment=")


def test_release_all_undoes_ledger_holds_and_marked_orphans_only():
    q = [held_by_agent(1), held_by_agent(9), qj(10, "alice", reason="JobHeldAdmin", priority=0),
         qj(11, "bob", reason="JobHeldUser", priority=0)]
    rec = reconcile_ledger(q, {"1": LedgerEntry("hold")})
    plan = plan_release_all(q, rec, now=NOW)
    assert [(a.kind, a.job_id) for a in plan.actions] == [("release", "1"), ("unmark", "1"), ("release", "9"), ("unmark", "9")]


@pytest.mark.parametrize("bad", ["11;rm -rf /", "12 13", "-1", "", "1e5", "abc"])
def test_a_command_is_never_built_from_something_that_is_not_a_job_id(bad):
    with pytest.raises(UnsafeActionError):
        GateAction("hold", bad, "alice", "x").argv


def test_a_failed_release_keeps_its_mark(tmp_path):
    """The sequencing inside a gate tick's apply: when `scontrol release` does not go through,
    the clearing of the mark after it is skipped, so the job stays marked as the agent's (else
    it would be held with no mark: an admin's hold, for ever). The runner stands in for Slurm's
    answer; what it checks is fscontrol's own order of commands."""
    import time as _time

    from fscontrol.act import actions as act
    from fscontrol.store import history as store
    from fscontrol.store import ledger as store_ledger
    from fscontrol.errors import SlurmCommandError

    db = store.open_db(tmp_path / "h.db")
    plan = [act.Action(a.kind, a.argv, a.reason, job_id=a.job_id) for a in (
        GateAction("release", "7", "alice", "x"), GateAction("unmark", "7", "alice", "y"),
        GateAction("release", "8", "alice", "x"), GateAction("unmark", "8", "alice", "y"))]
    with store.transaction(db):
        ids = store_ledger.write_actions(db, "c", None, "gate", plan, 0.0)
    calls = []

    class Out:
        stdout = ""

    def run(argv, timeout=None):
        calls.append(argv)
        if argv == ("scontrol", "release", "7"):
            raise SlurmCommandError("release failed")
        return Out()

    from fscontrol.act import executor

    done = executor.apply(db, run, plan, ids, _time.monotonic() + 60, dependent=False, cluster="c")
    assert [(a.kind, a.job_id, a.status) for a in done] == [
        ("release", "7", "failed"), ("unmark", "7", "skipped"), ("release", "8", "ok"), ("unmark", "8", "ok")]
    assert ("scontrol", "update", "JobId=7", "AdminComment=") not in calls


# ---------------------------------------------------------------------------- [gate] action changed


def _mode_switch(row_kind: str, mode: str):
    """One job the agent marked as `row_kind` while the gate now runs as `mode`; nothing at or under
    target waits, and the tick's ledger intent (executor.ledger_intent) after the plan."""
    import types

    from fscontrol.act import executor

    if row_kind == "hold":
        marked = qj(2, "alice", reason="JobHeldAdmin", comment=HOLD_MARK)
        row = LedgerEntry("hold", 0, None, "held")
    else:
        marked = qj(2, "alice", nice=10000, comment="fscontrol:nice:10000")
        row = LedgerEntry("nice", 5, 10000, "held")
    q = [qj(1, "alice", state="RUNNING", nodes=400), marked]
    rec = reconcile_ledger(q, {"2": row})
    assert rec.held == {"2": row.restore_nice}
    kinds = {j: rec.ledger[j].kind for j in rec.held}
    plan = plan_gate(q, ALLOCS, rec.held, GateOptions(action=mode), now=NOW, kinds=kinds)
    return plan, executor.ledger_intent(rec, plan, types.SimpleNamespace(queue=q))


@pytest.mark.parametrize("row_kind,mode", [("hold", "nice"), ("nice", "hold")])
def test_mode_change_releases_the_other_kind(row_kind, mode):
    plan, ledger = _mode_switch(row_kind, mode)
    assert plan.stale_ledger == ()
    if row_kind == "hold":
        assert [(a.kind, a.job_id) for a in plan.actions] == [("release", "2"), ("unmark", "2")]
    else:
        assert [(a.kind, a.job_id, a.nice) for a in plan.actions] == [("unnice", "2", 5)]  # its own Nice back
    assert f"now {mode!r}" in plan.actions[0].reason
    assert ledger["2"].state == "releasing" and ledger["2"].kind == row_kind


@pytest.mark.parametrize("row_kind,mode", [("hold", "nice"), ("nice", "hold")])
def test_mode_change_while_gating_releases_first(row_kind, mode):
    """Even while someone under target waits (the hold would stay in its own mode), a job of the
    other kind comes off: the next tick gates it per the new mode."""
    if row_kind == "hold":
        marked = qj(5, "alice", reason="JobHeldAdmin", comment=HOLD_MARK)
    else:
        marked = qj(5, "alice", nice=10000, comment="fscontrol:nice:10000")
    q = [qj(1, "alice", state="RUNNING", nodes=400), qj(3, "bob", reason="Resources"), marked]
    plan = plan_gate(q, ALLOCS, {"5": 0}, GateOptions(action=mode), now=NOW)  # kind from the job's mark
    assert plan.actions[0].kind == ("release" if row_kind == "hold" else "unnice") and plan.actions[0].job_id == "5"
    assert not any(a.kind in ("hold", "nice") and a.job_id == "5" for a in plan.actions)
    assert plan.stale_ledger == ()


def test_stale_rows_leave_the_ledger_with_why():
    import types

    from fscontrol.act import executor
    from fscontrol.report.gate import gate_notes

    q = [qj(1, "alice", state="RUNNING", nodes=400), qj(4, "alice", reason="Priority", comment="")]
    plan = plan_gate(q, ALLOCS, {"4": 0, "8": 0}, GateOptions(), now=NOW)
    assert plan.stale_ledger == ("4", "8")
    assert dict(plan.stale_why) == {"4": "someone else released or re-niced it", "8": "the job left the queue or started"}
    rec = types.SimpleNamespace(ledger={"4": LedgerEntry("hold"), "8": LedgerEntry("hold")})
    assert executor.ledger_intent(rec, plan, types.SimpleNamespace(queue=q)) == {}
    note = [n for n in gate_notes(plan) if n.startswith("ledger rows dropped")]
    assert note == ["ledger rows dropped: 4 (someone else released or re-niced it), 8 (the job left the queue or started)"]
