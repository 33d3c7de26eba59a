"""sim.ftrank.Ranker.update (the K order of large groups and the span walk, issue #31 item 3) against
two independent rankings at every step: the ranker as it was (tests/ftrank_reference.py, which
evaluates every changed group in full and walks the whole tree) and fairtree.level_values +
fairtree.rank_users (the whole tree from dicts). Random trees (nested accounts, FairShare=parent,
share 0, users beside accounts, groups up to 24 children) and random usage sequences: charges along
a user's chain (as the engine's), values set anywhere, the parent's usage alone moved (the common
scale), exact ties, and near ties a few ulps apart (in the usage and in K = S/U). Every F the ranker
holds must be the references' to the bit, and what `update` returns must hold every F that changed.
The last tests inject bugs (no margin, no walk past the span, a wrong place) and check that these
comparisons catch them."""

from __future__ import annotations

import math
import random

import pytest

from fscontrol.model import fairshare, fairtree
from fscontrol.records import ShareRow
from fscontrol.sim import ftrank
from fscontrol.sim.ftrank import Ranker

from ftrank_reference import Ranker as OldRanker


def random_rows(rng: random.Random, max_kids: int = 24, depth: int = 3, flat: bool = False) -> tuple[ShareRow, ...]:
    """Rows (root first, depth first) of a random tree; `flat`: root -> accounts -> one user each
    (the SDSC logs' shape), equal shares."""
    rows = [ShareRow("root", "", "", 0, None, False, 1.0, 0, None, None, None)]
    count = [0]

    def shares() -> tuple[int | None, bool]:
        if flat:
            return 1, False
        x = rng.choice([1, 1, 1, 2, 3, 4, 0, -1]) if rng.random() < 0.3 else 1
        return (None, True) if x < 0 else (x, False)

    def account(parent: str, d: int) -> None:
        count[0] += 1
        name = f"a{count[0]}"
        s, sp = shares()
        rows.append(ShareRow(name, "", parent, d, s, sp, None, 0, None, None, None))
        nu = 1 if flat else rng.choice([0, 1, 1, 2, 3])
        for j in range(nu):
            s, sp = shares()
            rows.append(ShareRow(name, f"u{j}", name, d + 1, s, sp, None, 0, None, None, None))
        if not flat and d < depth:
            for _ in range(rng.choice([0, 0, 1, 2, rng.randint(2, max_kids)]) if d > 1 else rng.randint(0, 3)):
                account(name, d + 1)

    for _ in range(rng.randint(1, max_kids) if not flat else max_kids):
        account("root", 1)
    return tuple(rows)


def reference(t, keys, shares, kids, vals) -> dict[int, float]:
    usage = {k: vals[i] for i, k in enumerate(keys)}
    _, _, lf = fairtree.level_values(t, usage, shares=shares)
    ranks, _ = fairtree.rank_users(t, lf, kids)
    n = sum(1 for k in keys if k[1])
    kix = {k: i for i, k in enumerate(keys)}
    return {kix[k]: r / n for k, r in ranks.items()}


NEAR = [1.0, 2.0, 3.0, 0.1 + 0.2, 0.3, 7.5, 1e6, 1e6 + 1, 1e-300, 1e300, 5e-324]


def steps(rng: random.Random, t, keys, n_steps: int, engine: bool = False):
    """A usage sequence: (vals, touched) pairs; touched: the associations changed (their chains
    implied), sometimes with extra ones, sometimes None (compare all). `engine`: as the engine's
    usage mostly moves (charges of random size, now and then a near tie or a move of the root)."""
    kix = {k: i for i, k in enumerate(keys)}
    chain = []
    for k in keys:
        c = [kix[k]]
        while keys[c[-1]] in t.parent:
            c.append(kix[t.parent[keys[c[-1]]]])
        chain.append(c)
    users = [i for i, k in enumerate(keys) if k[1]] or [0]
    vals = [0.0] * len(keys)
    for u in users:  # usage consistent along the chains, some users with none
        if rng.random() < 0.6:
            x = rng.random() * 10 if engine else rng.choice([1.0, 2.0, 3.0, rng.random() * 10, float(rng.randint(1, 5))])
            for c in chain[u]:
                vals[c] += x
    for _ in range(n_steps):
        touched: set[int] = set()
        for _ in range(rng.choice([1, 1, 2, 3])):
            how = rng.random() * (0.62 if engine else 1.0)
            if how < 0.45:  # a charge, as the engine's: the user's chain
                u = rng.choice(users)
                x = rng.random() if engine else rng.choice([1.0, 0.5, rng.random(), rng.random() * 1e-3, 2.0 ** -52])
                for c in chain[u]:
                    vals[c] = vals[c] + x
                touched.add(u)
            elif how < 0.6:  # the common scale: the parent's usage alone, by a little or by ulps
                p = 0 if engine else rng.choice([0] + [i for i, k in enumerate(keys) if not k[1]])
                v = vals[p]
                vals[p] = rng.choice([v * rng.uniform(1.0, 2.0), math.nextafter(v, math.inf),
                                      math.nextafter(math.nextafter(v, math.inf), math.inf), v + 1.0, 0.0])
                touched.add(p)
            elif how < 0.8:  # an exact tie or a near one with a sibling (same usage, or a few ulps off)
                i = rng.randrange(1, len(keys))
                sib = [j for j in range(1, len(keys)) if t.fs_parent.get(keys[j]) == t.fs_parent.get(keys[i]) and j != i]
                if sib:
                    v = vals[rng.choice(sib)]
                    if engine and v == 0.0:  # (5e-324 and such: out of the fast path's range)
                        continue
                    for _ in range(rng.choice([0, 0, 1, 2, 3])):
                        v = math.nextafter(v, rng.choice([math.inf, 0.0]))
                    vals[i] = v
                    touched.add(i)
            elif how < 0.9:  # a value set anywhere
                i = rng.randrange(len(keys))
                vals[i] = rng.choice(NEAR + [0.0, vals[i] * 2])
                touched.add(i)
            else:  # everything scaled (the engine's renormalisation)
                f = rng.choice([0.5, 1e-3, 3.0])
                vals = [v * f for v in vals]
                touched.update(range(len(keys)))
        sent = set(touched)
        if rng.random() < 0.2:
            sent.add(rng.randrange(len(keys)))  # (a superset is allowed)
        yield list(vals), (None if rng.random() < 0.15 else sent)


def first_mismatch(rows, seed: int, n_steps: int, fast_min: int, old: bool = True, engine: bool = False):
    """Run one sequence; the first step at which the ranker differs from a reference, else None."""
    rng = random.Random(seed)
    t = fairshare.build_tree(rows)
    keys = list(t.order)
    shares = fairtree.fair_tree_shares(t)
    kids = fairtree.children_lists(t)
    r = Ranker(t, keys, shares, kids)
    r.FAST_MIN = fast_min
    ref = OldRanker(t, keys, shares, kids) if old else None
    held: dict[int, float] = {}
    F: dict[int, float] = {}
    for step, (vals, touched) in enumerate(steps(rng, t, keys, n_steps, engine)):
        before = dict(F)
        got = r.update(vals, touched if step else None)
        F.update(got)
        if F != r.F:
            return step, "update missed a change"
        if any(before.get(k) == v for k, v in got.items()) and step and len(got) > len(r.F):
            return step, "update returned more than the users"
        if old:
            g = ref.rank(vals)
            if g is not None:
                held = dict(g)
            if F != held:
                return step, "differs from the previous ranker"
        if step % 4 == 0 or not old:
            if F != reference(t, keys, shares, kids, vals):
                return step, "differs from fairtree.rank_users"
    return None


@pytest.mark.parametrize("seed", range(120))
def test_update_matches_the_previous_ranker_and_rank_users_on_random_trees(seed):
    rng = random.Random(1000 + seed)
    rows = random_rows(rng, flat=seed % 5 == 0, max_kids=rng.choice([3, 8, 24]))
    assert first_mismatch(rows, seed, 40, fast_min=rng.choice([2, 3, 16])) is None


@pytest.mark.parametrize("seed", range(6))
def test_a_large_flat_tree_on_the_fast_path_as_the_engine_charges_it(seed):
    # the SDSC logs' shape (root -> 300 accounts -> one user each), the default FAST_MIN: the root
    # group stays on the fast path for most steps (checked), the ranks exact at every one
    rng = random.Random(seed)
    rows = random_rows(rng, max_kids=300, flat=True)
    t = fairshare.build_tree(rows)
    keys = list(t.order)
    r = Ranker(t, keys, fairtree.fair_tree_shares(t), fairtree.children_lists(t))
    assert first_mismatch(rows, seed, 150, fast_min=Ranker.FAST_MIN, engine=True) is None
    for vals, touched in steps(random.Random(seed), t, keys, 150, engine=True):
        r.update(vals, touched)
    assert r.stats["fast"] >= 100  # (the fast path taken at most steps)


def test_near_ties_in_k_a_few_ulps_apart_are_evaluated_and_stay_exact():
    # two accounts with the same share whose usage is 1 ulp apart: K within the margin, so the
    # fast path evaluates their LevelFS (a cluster); as the root's usage moves they tie or part
    rows = random_rows(random.Random(7), max_kids=20, flat=True)
    t = fairshare.build_tree(rows)
    keys = list(t.order)
    shares, kids = fairtree.fair_tree_shares(t), fairtree.children_lists(t)
    r = Ranker(t, keys, shares, kids)
    a1, u1 = keys.index(("a1", "")), keys.index(("a1", "u0"))
    a2, u2 = keys.index(("a2", "")), keys.index(("a2", "u0"))
    vals = [0.0] * len(keys)
    for i, k in enumerate(keys[1:], 1):
        vals[i] = 1.01 + i / 7.3
    vals[a1] = vals[u1] = 3.0
    vals[a2] = vals[u2] = math.nextafter(3.0, math.inf)
    vals[0] = sum(v for k, v in zip(keys, vals) if k[1])
    F = dict(r.update(vals))
    seen_tie = seen_apart = False
    for j in range(400):
        vals[0] = math.nextafter(vals[0] * 1.0001, math.inf)
        F.update(r.update(vals, [0]))
        assert F == reference(t, keys, shares, kids, vals), j
        seen_tie |= F[u1] == F[u2]
        seen_apart |= F[u1] != F[u2]
    assert seen_tie and seen_apart  # (the near tie both ways: the case the margin exists for)
    assert r.infb[0] is not None and r.close[0] == {a1}  # (the fast path, with the one cluster)
    assert r.stats["fast"] >= 390


# ---------------------------------------------------------------- injected bugs are caught
def _caught(monkeypatch, seeds=range(60)) -> bool:
    for seed in seeds:
        rng = random.Random(1000 + seed)
        rows = random_rows(rng, flat=seed % 5 == 0, max_kids=rng.choice([3, 8, 24]))
        if first_mismatch(rows, seed, 40, fast_min=2) is not None:
            return True
    return False


def test_no_margin_is_caught(monkeypatch):
    # trust K's order even when two neighbours are within a few ulps (or exactly tied)
    monkeypatch.setattr(ftrank, "MARGIN", 1.0 - 1e-12)
    assert _caught(monkeypatch)


def test_no_walk_past_the_span_is_caught(monkeypatch):
    # stop the span walk at its end even when the next user is tied to the last one walked
    orig = Ranker._first_tied
    monkeypatch.setattr(Ranker, "_first_tied", lambda self, k, tied: False)
    assert _caught(monkeypatch)
    monkeypatch.setattr(Ranker, "_first_tied", orig)


def test_a_span_one_place_short_is_caught(monkeypatch):
    orig = Ranker._fast

    def short(self, p, vals, ch):
        r = orig(self, p, vals, ch)
        if isinstance(r, list):
            r = [(a + 1, b) for a, b in r if a + 1 <= b]
        return r
    monkeypatch.setattr(Ranker, "_fast", short)
    assert _caught(monkeypatch)
