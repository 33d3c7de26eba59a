"""The scheduling steps both engines call (fscontrol/sim/easycore.py, issue #29 "one engine").

Independent checks, not the engines' own output: the backfill pick against the rule written out
job by job with a loop that starts each job as it goes (the engines' former inline form), on
random queues; its early stop (`smin`) changes nothing; the gate's plan applied to a queue against
the rule written out action by action, on random plans; the gate's stall rule against the rule
written out, and both engines stopping a run where it holds at the same tick; both engines call the
one copy and hold none of their own; and the compiled engine's source has the steps in it, so its
loop never calls interpreted code."""

from __future__ import annotations

import inspect
import itertools
import math
import random
from bisect import insort

from fscontrol.act.gate import AGENT_HOLD_REASON, GateAction, GatePlan, _prio_key
from fscontrol.snaprecords import QueueJob
from fscontrol.sim import Policy, SimJob, Workload, accel, easycore, engine, get_policy, mfcore
from fscontrol.sim.engine import RawRun
from fscontrol.sim.run import run_simulation

STEPS = ("easy_arrivals", "easy_backfill", "easy_fits", "easy_search", "drop_started", "general_pick", "gate_tick", "gate_stall", "gate_stop")


def _inline_easy(q, size, est, t, free, running, smin=1):
    """EASY at one pass, as a loop that starts each job as it goes (free and running updated). No
    shadow is made when fewer than `smin` nodes are left free after the head run (nothing queued
    fits in them: no backfill can start)."""
    running = list(running)
    started = []
    k = 0
    while k < len(q) and size[q[k]] <= free:
        free -= size[q[k]]
        running.append((t + est[q[k]], q[k]))
        started.append(q[k])
        k += 1
    if k == len(q) or free < smin:
        return started, None
    running.sort()
    need, avail = size[q[k]], free
    shadow = extra = None
    for e, i in running:  # the shadow: the first predicted end with enough nodes, ties included
        avail += size[i]
        if avail >= need and shadow is None:
            shadow = e
        if shadow is not None and e != shadow:
            avail -= size[i]
            break
    extra = avail - need
    for i in q[k + 1:]:
        s = size[i]
        if s > free:
            continue
        if t + est[i] <= shadow:
            pass
        elif s <= extra:
            extra -= s
        else:
            continue
        free -= s
        started.append(i)
    return started, (shadow, extra)


def _shared_easy(q, size, est, t, free, running, mask=-1, smin=1):
    """As the engines call it: the head run started by the caller (into free and running), then
    one call for the head's shadow and the pick behind it."""
    running = list(running)
    k = 0
    while k < len(q) and size[q[k] & mask] <= free:
        free -= size[q[k] & mask]
        running.append((t + est[q[k] & mask], q[k] & mask))
        k += 1
    started = [kq & mask for kq in q[:k]]
    if k == len(q) or free < smin:
        return started, None
    picked, shadow, extra = easycore.easy_backfill(q[k:], mask, size, est, t, free, smin, sorted(running))
    return started + [kq & mask for kq in picked], (shadow, extra)


def _arrivals(new, size, est, t, free, shadow, extra):
    """The arrival-only pass written out: each new job in order against the kept shadow and extra."""
    started = []
    for i in new:
        s = size[i]
        if s <= free and (t + est[i] <= shadow or s <= extra):
            if t + est[i] > shadow:
                extra -= s
            free -= s
            started.append(i)
    return started, extra


def test_easy_steps_match_the_rule_written_out_on_random_queues():
    rng = random.Random(29)
    seen = {"shadow": 0, "no shadow": 0, "arrivals started": 0}
    for _ in range(400):
        n = rng.randint(1, 40)
        size = [rng.choice([1, 1, 2, 3, 4, 8, 16]) for _ in range(n)]
        est = [float(rng.choice([60, 600, 3600, 7200])) for _ in range(n)]
        nr = rng.randint(0, 8)
        running = [(100.0 + rng.choice([60, 600, 600, 3600]), n + r) for r in range(nr)]
        size += [rng.choice([1, 2, 4, 8]) for _ in range(nr)]
        total = sum(size[n:]) + rng.randint(0, 16)
        free = total - sum(size[n:])
        q = list(range(n))
        rng.shuffle(q)
        if max(size[:n]) > total:
            continue
        want = _inline_easy(q, size, est, 100.0, free, running)
        assert _shared_easy(q, size, est, 100.0, free, running) == want
        # the same through keys (mfcore's queue: key & mask is the job), and with the early stop
        # at the smallest queued size: the same jobs start
        QM = (1 << 8) - 1
        keys = [(-(p + 1) << 8) | i for p, i in enumerate(q)]
        keys.sort(reverse=True)  # (the order of q)
        assert [k & QM for k in keys] == q
        smin = min(size[:n])
        want_m = _inline_easy(q, size, est, 100.0, free, running, smin)
        assert want_m[0] == want[0]
        assert _shared_easy(keys, size, est, 100.0, free, running, QM, smin) == want_m
        seen["shadow" if want[1] is not None else "no shadow"] += 1
        if want[1] is None or size[q[0]] <= free:
            continue
        # a head that does not fit now: alone, it gives the same shadow (the static engine's indexed
        # path and mfcore's skipped passes; the extra nodes before any pick took some)
        p0, shadow, extra = easycore.easy_backfill([q[0]], -1, size, est, 100.0, free, 0, sorted(running))
        assert (p0, shadow) == ([], want[1][0])
        assert extra >= want[1][1] and (extra == want[1][1] or want[0])
        # then jobs arrive behind it: picked against the kept shadow and extra as the rule says
        m = len(size)
        size2 = size + [rng.choice([1, 1, 1, 2, 4, 8]) for _ in range(6)]
        est2 = est + [0.0] * (m - n) + [float(rng.choice([60, 60, 600, 3600, 7200])) for _ in range(6)]
        new = list(range(m, m + 6))
        f = free - sum(size[i] for i in want[0])
        got = easycore.easy_backfill(new, -1, size2, est2, 100.0, f, 0, None, *want[1])
        want_a = _arrivals(new, size2, est2, 100.0, f, *want[1])
        assert (got[0], got[2]) == want_a
        seen["arrivals started"] += bool(want_a[0])
    assert min(seen.values()) > 10, seen  # (each case met often)


def _fits_written_out(s, limit, f, t, shadow, extra):
    """Behind the head, a job starts when it fits in the free nodes and either ends by the head's
    shadow time or fits in the extra nodes the head leaves spare then."""
    return s <= f and (t + limit <= shadow or s <= extra)


def test_easy_search_picks_as_the_walk_does_on_random_queues():
    """The large queues' form (the engines search their own structure for the next job): with a
    search that scans the queue for the first job passing the rule written out, the same jobs start
    in the same order, with the same shadow and extra nodes, as the rule's walk (_inline_easy)."""
    rng = random.Random(2930)
    met = 0
    for _ in range(400):
        n = rng.randint(2, 40)
        size = [rng.choice([1, 1, 2, 3, 4, 8, 16]) for _ in range(n)]
        est = [float(rng.choice([60, 600, 3600, 7200])) for _ in range(n)]
        nr = rng.randint(1, 8)
        running = [(100.0 + rng.choice([60, 600, 600, 3600]), n + r) for r in range(nr)]
        size += [rng.choice([1, 2, 4, 8]) for _ in range(nr)]
        total = max(max(size[:n]), sum(size[n:])) + rng.randint(0, 4)
        free = total - sum(size[n:])
        q = list(range(n))
        rng.shuffle(q)
        want = _inline_easy(q, size, est, 100.0, free, running)
        if want[1] is None:
            continue
        run = sorted(running)
        k = 0
        while size[q[k]] <= free:  # the head run, as the engines walk it
            free -= size[q[k]]
            insort(run, (100.0 + est[q[k]], q[k]))
            k += 1
        left = q[k + 1:]
        got = q[:k]

        def first(t, f, shadow, extra):
            return next((i for i in left if _fits_written_out(size[i], est[i], f, t, shadow, extra)), -1)

        def start(i, t):
            left.remove(i)
            got.append(i)

        shadow_extra = easycore.easy_search(q[k], size, est, 100.0, free, run, first, start)
        assert (got, shadow_extra) == want
        met += len(got) > k
    assert met > 50, met


def test_easy_fits_is_the_rule_written_out():
    rng = random.Random(2931)
    for _ in range(2000):
        a = (rng.randint(1, 9), float(rng.choice([60, 600, 3600])), rng.randint(0, 9), 100.0,
             rng.choice([-math.inf, 160.0, 700.0, 3700.0, math.inf]), rng.randint(-1, 9))
        assert easycore.easy_fits(*a) is _fits_written_out(*a)


class _Queue:
    """A queue as the engines keep one: sorted keys made from the job's nice and age (the key the
    job had when it joined must be the one it leaves by), and a log of the calls."""

    def __init__(self, nice, eligible):
        self.nice, self.eligible, self.keys, self.log = nice, eligible, [], []

    def key(self, i):
        return (self.nice[i], -self.eligible[i], i)

    def leave(self, i):
        self.keys.remove(self.key(i))  # (ValueError: the job's key changed before it left)
        self.log.append(("leave", i))

    def join(self, i, t):
        insort(self.keys, self.key(i))
        self.log.append(("join", i, t))


def _gate_written_out(actions, stale, t, nice_value, held, ledger, eligible, nice, queue):
    """The gate's plan applied, action by action, as the rule says (the engines' former inline form)."""
    counts = {"hold": 0, "release": 0, "nice": 0, "unnice": 0}
    for i in stale:
        ledger.discard(i)
    for kind, i in actions:
        if kind == "hold":  # out of the queue, held, in the ledger
            queue.leave(i)
            held.add(i)
            ledger.add(i)
        elif kind == "release":  # not held, out of the ledger, its age from now, queued again
            held.discard(i)
            ledger.discard(i)
            eligible[i] = t
            queue.join(i, t)
        elif kind in ("nice", "unnice"):  # re-keyed with its new nice; in the ledger while niced
            queue.leave(i)
            nice[i] = nice_value if kind == "nice" else 0
            (ledger.add if kind == "nice" else ledger.discard)(i)
            queue.join(i, t)
        else:  # "unmark": the AdminComment cleared, nothing the scheduler sees
            assert kind == "unmark"
            continue
        counts[kind] += 1
    return tuple(counts.values())


def test_gate_apply_matches_the_rule_written_out_on_random_plans():
    rng = random.Random(2929)
    seen = dict.fromkeys(("hold", "release", "nice", "unnice", "unmark", "stale"), 0)
    for _ in range(300):
        n = rng.randint(1, 30)
        ids = [f"{1000 + i}" for i in range(n)]
        state = []
        for _copy in range(2):  # the same start twice: one for gate_apply, one for the rule
            eligible = [float(random.Random(i).randint(0, 500)) for i in range(n)]
            nice = [0] * n
            state.append((set(), set(), eligible, nice, _Queue(nice, eligible)))
        held_now, niced_now, queued_now = set(), set(), set(range(n))
        # a start: some jobs held, some niced (in the ledger), the others queued
        for i in range(n):
            r = rng.random()
            for held, ledger, eligible, nice, q in state:
                if r < 0.25:
                    held.add(i)
                    ledger.add(i)
                elif r < 0.45:
                    nice[i] = 7
                    ledger.add(i)
                if r >= 0.25:
                    insort(q.keys, q.key(i))
            if r < 0.25:
                held_now.add(i)
                queued_now.discard(i)
            elif r < 0.45:
                niced_now.add(i)
        # a plan of actions that fit that state, as plan_gate's are (a release followed by its unmark)
        acts = []
        for _ in range(rng.randint(0, 12)):
            kind = rng.choice(["hold", "release", "nice", "unnice"])
            pool = {"hold": queued_now - niced_now, "release": held_now, "nice": queued_now - niced_now,
                    "unnice": niced_now}[kind]
            if not pool:
                continue
            i = rng.choice(sorted(pool))
            if kind == "hold":
                queued_now.discard(i)
                held_now.add(i)
            elif kind == "release":
                held_now.discard(i)
                queued_now.add(i)
            elif kind == "nice":
                niced_now.add(i)
            else:
                niced_now.discard(i)
            acts.append((kind, i))
            if kind == "release":
                acts.append(("unmark", i))
        stale = rng.sample(range(n), rng.randint(0, min(2, n)))
        plan = GatePlan(100.0, "hold", "nodes", (), tuple(GateAction(k, ids[i], "acct", "r") for k, i in acts),
                        stale_ledger=tuple(ids[i] for i in stale))
        id_ix = {jid: i for i, jid in enumerate(ids)}
        t = 900.0
        held, ledger, eligible, nice, q = state[0]
        tally = RawRun([], [])  # (the static engine's record; mfcore's MFRun has the same counters)
        easycore.gate_apply(plan, id_ix, t, 7, held, ledger, eligible, nice, q.leave, q.join, tally)
        got = (tally.holds, tally.releases, tally.nices, tally.unnices)
        held_w, ledger_w, eligible_w, nice_w, q_w = state[1]
        want = _gate_written_out(acts, stale, t, 7, held_w, ledger_w, eligible_w, nice_w, q_w)
        assert got == want
        assert (held, ledger, eligible, nice, q.keys, q.log) == (held_w, ledger_w, eligible_w, nice_w, q_w.keys, q_w.log)
        for k, _i in acts:
            seen[k] += 1
        seen["stale"] += bool(stale)
    assert min(seen.values()) > 20, seen  # (each kind met often)


def _stuck_written_out(running, arriving, waiting, changed):
    """A queue that can make no progress without the gate: nothing runs or will arrive, jobs wait,
    and nothing happened at this tick (no end, no arrival, no gate action)."""
    return not running and not arriving and waiting and not changed


def test_gate_stall_is_the_rule_written_out():
    for running, arriving, waiting, changed in itertools.product((False, True), repeat=4):
        stuck = _stuck_written_out(running, arriving, waiting, changed)
        for stall in (0, 1, 3):
            assert easycore.gate_stall(stall, running, arriving, waiting, changed) == (stall + 1 if stuck else 0)


def test_both_engines_stop_a_stuck_gate_at_the_same_tick():
    """A job larger than the machine stays queued once the others are done: no end, arrival or gate
    action can ever start it. Both engines stop the run at the fourth stuck gate tick after the last
    end (mfcore ran on until max_time here before the stall rule was one: it counted only a queue
    of held jobs); a queue that still moves (the small job) is never cut short."""
    jobs = [SimJob("a", 0, 600, 900, 2, "u1", "a1"), SimJob("big", 10, 600, 900, 9, "u1", "a1"),
            SimJob("s", 20, 700, 900, 1, "u2", "a2")]
    w = Workload("w", 8, jobs)
    last_end = 720.0  # s: backfilled at 20 (EASY), 700 s
    want = 900 + 3 * 300  # gate ticks every 300 s: the first after the last end, and three more
    static = run_simulation(w, Policy("gate", depth=1, age_weight=1.0, size_weight=0.0), max_time=10**6)
    mf = run_simulation(w, get_policy("mf-classic", depth=1, gate=True), max_time=10**6)
    for r in (static, mf):
        assert r.start[:3] == [0.0, math.inf, 20.0] and max(e for e in r.end if e < math.inf) == last_end
        (note,) = r.stats["notes"]
        assert note.startswith(f"stopped at t={want}") and "the gate does not act" in note
    assert static.stats["gate_ticks"] == mf.stats["gate_ticks"] == want // 300 + 1


def test_both_engines_call_the_one_copy():
    for name in STEPS:
        assert getattr(mfcore, name) is getattr(easycore, name)
        if name != "drop_started":  # (the static engine deletes its few started entries inline)
            assert getattr(engine, name) is getattr(easycore, name)
        assert f"def {name}(" not in inspect.getsource(engine)
        assert f"def {name}(" not in inspect.getsource(mfcore)
    for src in (inspect.getsource(engine), inspect.getsource(mfcore)):
        # no copy of the gate's action loop (the action kinds, the stale ledger) ...
        for word in ('"hold"', '"release"', '"nice"', '"unnice"', '"unmark"', "stale_ledger"):
            assert word not in src
        # ... nor of the gate's tick, its view of the queue (a held job's priority: one rule) ...
        assert "JobHeldAdmin" not in src and "AGENT_HOLD_REASON" not in src and "plan_gate(" not in src
        assert src.count("gate_tick(") == 1
        # ... nor of the stall stop (its threshold, its note)
        assert src.count("gate_stop(") == 1 and "stall > 3" not in src and "stall_ticks > 3" not in src
        assert "stopped at" not in src
        # ... nor of the stall rule (each engine names its facts once, in its one call)
        assert src.count("gate_stall(") == 1  # (its one call)
        assert "not heap and ai >= n" not in src
        # ... nor of EASY's pick on the fast paths (the engines only search for the next job)
        for part in ("extra -= ", "t + est[i] <", "t + est[i] >", "> shadow"):
            assert part not in src


def test_the_compiled_engine_compiles_the_steps_in():
    src = accel.compiled_source()
    assert "from .easycore import" not in src
    for name in STEPS:
        assert src.count(f"\ndef {name}(") == 1
    compile(src, "_mfcore_accel.py", "exec")  # one module, valid as it stands
    mod = accel.compiled_engine()
    if mod is not None:  # (built: its steps are its own compiled functions, not easycore's)
        assert mod.easy_backfill is not easycore.easy_backfill
        assert type(mod.easy_backfill).__name__ == "builtin_function_or_method"


def _starts(jobs, policy):
    r = engine.simulate(Workload("w", 16, jobs), policy)
    return {jobs[i].job_id: r.start[i] for i in range(len(jobs))}


def test_simultaneous_arrivals_in_any_order_give_one_schedule():
    """Jobs that arrive at one time are one set: the order the workload lists them in changes no
    start (their queue order is their priority's). Random small workloads under linear priority,
    depth 1 (the static engine's indexed path, whose arrivals step once tried them in list order:
    about 1 workload in 100 started differently), each against its simultaneous arrivals shuffled;
    sizes differ within a submit time, so no two sort alike."""
    rng = random.Random(1)
    policy = get_policy("linear-size", depth=1)
    differ = 0
    tried = 0
    for _ in range(1000):
        jobs, t = [], 0.0
        for k in range(rng.randint(4, 12)):
            if rng.random() < 0.6:
                t += rng.choice([0, 10, 30, 60])
            est = float(rng.choice([30, 60, 100, 200]))
            used = {j.size for j in jobs if j.submit == t}
            size = rng.choice([x for x in range(1, 17) if x not in used])
            jobs.append(SimJob(str(k), t, est * rng.choice([0.5, 1.0]), est, size, user="u", account="a"))
        groups: dict[float, list[SimJob]] = {}
        for j in jobs:
            groups.setdefault(j.submit, []).append(j)
        if all(len(g) == 1 for g in groups.values()):
            continue
        tried += 1
        shuffled = []
        for s in sorted(groups):
            g = groups[s][:]
            rng.shuffle(g)
            shuffled += g
        if _starts(jobs, policy) != _starts(shuffled, policy):
            differ += 1
    assert tried > 500
    assert differ == 0


def test_the_gate_sees_held_jobs_at_priority_0_as_slurm_shows_them():
    """The gate's view of a simulated queue (both engines build it with gate_queue): a held job's
    priority is 0 whatever it would be queued by (Slurm's: plan_gate then releases the held jobs
    oldest first), a queued job's its own, a running job's 0."""
    prio = {0: 50, 1: 70, 2: 90, 3: 10}
    made = []

    def job(i, state, reason, p):
        made.append((i, state, reason, p))
        return QueueJob(str(i), "u", "a", "sim", "normal", state, 1, 1, p, 0, reason, float(i), None, 60)

    qj = easycore.gate_queue([3], [0], [2, 1], prio.__getitem__, job)
    assert [(j.job_id, j.state, j.reason, j.priority) for j in qj] == [
        ("3", "RUNNING", "None", 0), ("0", "PENDING", "Priority", 50),
        ("2", "PENDING", AGENT_HOLD_REASON, 0), ("1", "PENDING", AGENT_HOLD_REASON, 0)]
    # the gate's order: held jobs by age (priority 0 each), not by the priority they were queued by
    plan_order = sorted(qj[2:], key=_prio_key)
    assert [j.job_id for j in plan_order] == ["1", "2"]
