"""The scheduling steps both engines call (fscontrol/sim/easycore.py, issue #29 "one engine").

Independent checks, not the engines' own output: the backfill pick against the rule written out
job by job with a loop that starts each job as it goes (the engines' former inline form), on
random queues; its early stop (`smin`) changes nothing; both engines call the one copy; and the
compiled engine's source has the steps in it, so its loop never calls interpreted code."""

from __future__ import annotations

import inspect
import math
import random

from fscontrol.sim import accel, easycore, engine, mfcore

STEPS = ("easy_backfill", "drop_started", "general_pick", "gate_stall")


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


def test_both_engines_call_the_one_copy():
    for name in STEPS:
        assert getattr(mfcore, name) is getattr(easycore, name)
        if name != "drop_started":  # (the static engine deletes its few started entries inline)
            assert getattr(engine, name) is getattr(easycore, name)
        assert f"def {name}(" not in inspect.getsource(engine)
        assert f"def {name}(" not in inspect.getsource(mfcore)


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
