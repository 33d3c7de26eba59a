"""sim.ftrank.Ranker (the engine's incremental Fair Tree ranking) against fairtree.level_values +
fairtree.rank_users, the whole tree ranked from scratch, on random trees and random sequences of
usage (some values changed between calls, all scaled, none changed): the same F for every user."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.model import fairshare, fairtree
from fscontrol.records import ShareRow
from fscontrol.sim.ftrank import Ranker

SHARES = st.one_of(st.integers(0, 4), st.just(-1))  # -1: FairShare=parent


@st.composite
def trees(draw):
    """Rows (root first, depth first) of a tree of up to 3 account levels, users under accounts."""
    rows = [ShareRow("root", "", "", 0, None, False, 1.0, 0, None, None, None)]
    count = [0]

    def shares():
        s = draw(SHARES)
        return (None, True) if s < 0 else (s, False)

    def account(parent: str, depth: int) -> None:
        count[0] += 1
        name = f"a{count[0]}"
        s, sp = shares()
        rows.append(ShareRow(name, "", parent, depth, s, sp, None, 0, None, None, None))
        for j in range(draw(st.integers(0, 3))):
            s, sp = shares()
            rows.append(ShareRow(name, f"u{j}", name, depth + 1, s, sp, None, 0, None, None, None))
        if depth < 3:
            for _ in range(draw(st.integers(0, 2))):
                account(name, depth + 1)

    for _ in range(draw(st.integers(1, 4))):
        account("root", 1)
    return tuple(rows)


def reference(t, keys, shares, kids, vals) -> dict[int, float]:
    usage = {k: vals[i] for i, k in enumerate(keys)}
    _, _, lf = fairtree.level_values(t, usage, shares=shares)
    ranks, _ = fairtree.rank_users(t, lf, kids)
    n = sum(1 for k in keys if k[1])
    kix = {k: i for i, k in enumerate(keys)}
    return {kix[k]: r / n for k, r in ranks.items()}


USAGE = st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0, 1e-300, 7.5, 1e6, 1e6 + 1, 0.1 + 0.2, 0.3])


@given(trees(), st.data())
@settings(max_examples=300, deadline=None)
def test_incremental_ranks_are_the_whole_trees(rows, data):
    t = fairshare.build_tree(rows)
    keys = list(t.order)
    shares = fairtree.fair_tree_shares(t)
    kids = fairtree.children_lists(t)
    ranker = Ranker(t, keys, shares, kids)
    vals = [data.draw(USAGE) for _ in keys]
    held: dict[int, float] = {}
    for step in range(data.draw(st.integers(1, 8))):
        got = ranker.rank(vals)
        if got is not None:
            held = dict(got)
        else:
            assert step > 0  # (the first call always ranks)
        assert held == reference(t, keys, shares, kids, vals), (step, vals)
        how = data.draw(st.sampled_from(["some", "scale", "none", "one"]))
        vals = list(vals)
        if how == "some":
            for i in data.draw(st.lists(st.integers(0, len(keys) - 1), max_size=4)):
                vals[i] = data.draw(USAGE)
        elif how == "one":
            i = data.draw(st.integers(0, len(keys) - 1))
            vals[i] = vals[i] + 1.0
        elif how == "scale":
            vals = [v * 0.5 for v in vals]


def test_an_unchanged_usage_is_not_ranked_again_and_a_charge_that_keeps_the_order_is_not_walked():
    rows = (ShareRow("root", "", "", 0, None, False, 1.0, 0, None, None, None),
            ShareRow("a", "", "root", 1, 1, False, None, 0, None, None, None),
            ShareRow("a", "x", "a", 2, 1, False, None, 0, None, None, None),
            ShareRow("b", "", "root", 1, 1, False, None, 0, None, None, None),
            ShareRow("b", "y", "b", 2, 1, False, None, 0, None, None, None))
    t = fairshare.build_tree(rows)
    keys = list(t.order)
    r = Ranker(t, keys, fairtree.fair_tree_shares(t), fairtree.children_lists(t))
    assert keys == [("root", ""), ("a", ""), ("b", ""), ("a", "x"), ("b", "y")]
    vals = [10.0, 4.0, 6.0, 4.0, 6.0]  # a used less: x ranks first
    assert r.rank(vals) == {3: 1.0, 4: 0.5}
    assert r.rank(list(vals)) is None
    assert r.rank([12.0, 4.0, 8.0, 4.0, 8.0]) is None  # b charged: still behind a
    assert r.rank([20.0, 14.0, 6.0, 14.0, 6.0]) == {3: 0.5, 4: 1.0}  # a charged past b
