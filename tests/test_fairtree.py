"""Fair Tree recomputed from raw values: hand-worked trees, Slurm's tie rules, and properties.

The hand-worked figures follow slurmctld's fair_tree.c step by step (see fscontrol/model/fairtree.py);
the real-Slurm check is tests/test_integration_fairtree.py (sprio's FairShare to 5e-6)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.model.fairtree import NO_VAL, compute_fair_tree
from fscontrol.records import ShareRow


def tree(spec: str) -> tuple[ShareRow, ...]:
    """Rows from lines "depth account user shares usage" (shares "parent" for FairShare=parent).

    Only users' usage is read: an account's RawUsage is the sum of its users' below it, as
    slurmctld charges a job to the association and every ancestor."""
    raw = []
    stack: list[str] = []
    parent_of: dict[str, str] = {}
    for line in spec.strip().splitlines():
        depth, account, user, shares, usage = line.split()
        depth = int(depth)
        user = "" if user == "-" else user
        if user:
            parent = account
        else:
            del stack[depth:]
            parent = stack[depth - 1] if depth else ""
            stack.append(account)
            parent_of[account] = parent
        sp = shares == "parent"
        raw.append([account, user, parent, depth, None if sp or depth == 0 else int(shares), sp, int(usage) if user else 0])
    acc_row = {r[0]: r for r in raw if not r[1]}
    for r in raw:
        if r[1]:
            a = r[0]
            while a:
                acc_row[a][6] += r[6]
                a = parent_of[a]
    return tuple(ShareRow(a, u, p, d, s, sp, None, usage, None, None, None) for a, u, p, d, s, sp, usage in raw)


def factors(rows) -> dict[str, float]:
    ft = compute_fair_tree(rows)
    return {f"{a.user}@{a.account}": a.fairshare for a in ft.assocs if a.is_user}


def test_hand_worked_two_accounts():
    rows = tree("""
        0 root - 1 0
        1 root root 1 0
        1 A - 2 0
        2 A a1 1 40
        2 A a2 1 20
        1 B - 1 0
        2 B b1 1 40
        2 B b2 3 0
    """)
    ft = compute_fair_tree(rows)
    by = ft.by_key()
    # top level: shares 1 + 2 + 1 = 4, usage 100
    assert by[("A", "")].level_fs == pytest.approx((2 / 4) / (60 / 100))
    assert by[("B", "")].level_fs == pytest.approx((1 / 4) / (40 / 100))
    assert by[("root", "root")].level_fs == math.inf
    assert by[("A", "a2")].level_fs == pytest.approx(0.5 / (20 / 60))  # 1.5 beats a1's 0.75
    assert by[("B", "b2")].level_fs == math.inf
    assert ft.n_users == 5
    # walk: root (inf), A (0.83: a2, a1), B (0.625: b2, b1)
    assert factors(rows) == {"root@root": 1.0, "a2@A": 0.8, "a1@A": 0.6, "b2@B": 0.4, "b1@B": 0.2}
    assert ft.ranking == (("root", "root"), ("A", "a2"), ("A", "a1"), ("B", "b2"), ("B", "b1"))


def test_idle_users_and_accounts_tie_and_the_next_rank_skips():
    rows = tree("""
        0 root - 1 0
        1 root root 1 0
        1 A - 1 0
        2 A a1 1 0
        2 A a2 1 0
        1 B - 1 0
        2 B b1 1 50
        2 B b2 1 0
        1 root c 1 0
    """)
    f = factors(rows)
    # root and c (users, inf) tie; A (inf) ties with c, so its first user starts tied: all 6/6
    assert f["root@root"] == f["c@root"] == f["a1@A"] == f["a2@A"] == 1.0
    # B is not tied: its best user takes the no-tie rank, 2 of 6 (four ranks were shared)
    assert f["b2@B"] == pytest.approx(2 / 6)
    assert f["b1@B"] == pytest.approx(1 / 6)


def test_tied_accounts_are_walked_one_after_the_other_not_merged():
    """Slurm's `_count_tied_accounts` stops at the first account: the second of two tied
    accounts starts tied with the first one's last user (the docs say the children are merged;
    the code does not)."""
    rows = tree("""
        0 root - 1 0
        1 root root 1 0
        1 A - 1 0
        2 A a1 1 30
        1 B - 1 0
        2 B b1 1 20
        2 B b2 1 10
    """)
    by = compute_fair_tree(rows).by_key()
    assert by[("A", "")].level_fs == by[("B", "")].level_fs
    f = factors(rows)
    assert f == {"root@root": 1.0, "a1@A": 0.75, "b2@B": 0.75, "b1@B": 0.25}


def test_fairshare_parent_user_ranks_first_in_its_account():
    rows = tree("""
        0 root - 1 0
        1 A - 1 0
        2 A a1 1 10
        2 A a2 parent 500
        1 B - 1 0
        2 B b1 1 5
    """)
    by = compute_fair_tree(rows).by_key()
    assert by[("A", "a2")].level_fs == math.inf
    f = factors(rows)
    assert f["a2@A"] > f["a1@A"]
    # A used 510 of 515: B is far ahead, A's users last
    assert f["b1@B"] == 1.0 and f["a2@A"] == pytest.approx(2 / 3) and f["a1@A"] == pytest.approx(1 / 3)


def test_fairshare_parent_account_lifts_its_children_one_level():
    rows = tree("""
        0 root - 1 0
        1 A - 1 0
        2 P - parent 0
        3 P p1 1 30
        3 P p2 1 10
        2 A a1 2 30
        1 B - 1 0
        2 B b1 1 10
    """)
    by = compute_fair_tree(rows).by_key()
    # p1, p2 and a1 are siblings under A: level shares 1 + 1 + 2 = 4, A's usage 70
    assert by[("P", "")].level_fs == NO_VAL
    assert by[("P", "p1")].fs_parent == "A"
    assert by[("P", "p1")].norm_shares == pytest.approx(1 / 4)
    assert by[("P", "p1")].effective_usage == pytest.approx(30 / 70)
    assert by[("A", "a1")].level_fs == pytest.approx((2 / 4) / (30 / 70))
    assert by[("P", "p2")].level_fs == pytest.approx((1 / 4) / (10 / 70))
    # top: A 0.5/(70/80) = 0.571, B 0.5/(10/80) = 4: b1 first; then A's level: p2 1.75, a1 1.17, p1 0.58
    assert compute_fair_tree(rows).ranking == (("B", "b1"), ("P", "p2"), ("A", "a1"), ("P", "p1"))
    f = factors(rows)
    assert [f["b1@B"], f["p2@P"], f["a1@A"], f["p1@P"]] == [1.0, 0.75, 0.5, 0.25]


def test_a_user_in_two_accounts_has_two_ranks():
    rows = tree("""
        0 root - 1 0
        1 A - 1 0
        2 A alice 1 100
        2 A bob 1 0
        1 B - 1 0
        2 B alice 1 0
    """)
    f = factors(rows)
    assert f["alice@B"] == 1.0 and f["bob@A"] == pytest.approx(2 / 3) and f["alice@A"] == pytest.approx(1 / 3)


def test_zero_shares_rank_last():
    rows = tree("""
        0 root - 1 0
        1 A - 1 0
        2 A a1 0 0
        2 A a2 1 50
    """)
    f = factors(rows)
    assert f["a2@A"] == 1.0 and f["a1@A"] == 0.5


# ---------------------------------------------------------------------------- properties
@st.composite
def random_trees(draw):
    n_acc = draw(st.integers(1, 4))
    lines = ["0 root - 1 0"]
    for i in range(n_acc):
        lines.append(f"1 acc{i} - {draw(st.integers(1, 5))} 0")
        for j in range(draw(st.integers(1, 4))):
            lines.append(f"2 acc{i} u{j} {draw(st.integers(1, 5))} {draw(st.integers(0, 10**6))}")
    return "\n".join(lines)


@given(random_trees(), st.integers(1, 7))
@settings(max_examples=150, deadline=None)
def test_decay_never_changes_a_ranking(spec, factor):
    """Every association decays by the same factor: S/U, and so every rank, is unchanged.
    (Integer scaling keeps the sums exact, as slurmctld's long doubles nearly are.)"""
    rows = tree(spec)
    scaled = tuple(ShareRow(r.account, r.user, r.parent, r.depth, r.raw_shares, r.shares_parent, None,
                            r.raw_usage * factor, None, None, None) for r in rows)
    assert factors(rows) == factors(scaled)


@given(random_trees())
@settings(max_examples=150, deadline=None)
def test_the_best_user_has_one_and_accounts_order_their_users(spec):
    ft = compute_fair_tree(tree(spec))
    by = ft.by_key()
    fs = [a.fairshare for a in ft.assocs if a.is_user]
    assert max(fs) == 1.0 and all(0 < f <= 1 for f in fs)
    # Fair Tree's promise: of two sibling accounts with different LevelFS, every user of the
    # higher one ranks at or above every user of the lower one
    accts = [a for a in ft.assocs if not a.is_user and a.depth == 1]
    for x in accts:
        for y in accts:
            if x.level_fs > y.level_fs:
                lo_x = min(a.fairshare for a in ft.assocs if a.is_user and a.account == x.account)
                hi_y = max(a.fairshare for a in ft.assocs if a.is_user and a.account == y.account)
                assert lo_x >= hi_y, (x.account, y.account, by)


def test_classic_norm_shares_left_by_a_reconfigure_are_recognised_and_rank_alike():
    """Slurm 22.05 does not renormalise shares when `scontrol reconfigure` switches to Fair Tree
    (priority_p_reconfig compares the flags after _internal_setup has taken the new ones): sshare
    then prints classic NormShares. Seen on the testbed (CI, 2026-11-23). fscontrol recognises
    the form and ranks with it, as slurmctld does; every sibling's S is scaled alike, so the
    ranks are Fair Tree's own."""
    from fscontrol.model import fairshare

    rows = tree("""
        0 root - 1 0
        1 A - 1 0
        2 A a1 1 30
        2 A a2 3 10
        1 B - 3 0
        2 B b1 1 50
        2 B b2 1 0
    """)
    classic = fairshare.norm_shares(rows)
    stale = tuple(r._replace(norm_shares=classic[r.key]) for r in rows)
    own = compute_fair_tree(rows)
    ft_form = {a.key: a.norm_shares for a in own.assocs}
    fresh = tuple(r._replace(norm_shares=(1.0 if r.depth == 0 else ft_form[r.key])) for r in rows)
    assert compute_fair_tree(fresh).shares_form == "fair_tree"
    got = compute_fair_tree(stale)
    assert got.shares_form == "classic" and got.stale_shares
    assert got.by_key()[("A", "a2")].norm_shares == pytest.approx(0.25 * 0.75)  # classic: A's 1/4 x 3/4
    assert factors(stale) == factors(rows)
    from fscontrol.slurm.parse import check_share_tree

    check_share_tree(stale, fair_tree=True)  # not taken for a cut output
    check_share_tree(fresh, fair_tree=True)


def test_printed_levelfs_restores_an_exact_tie_that_integer_usage_splits():
    """Hand-worked: P has user u (2 shares) and account A (1 share, user a). slurmctld holds
    u = 1999.8, A = 999.9, P = 2999.7: LevelFS (2/3)/(1999.8/2999.7) = (1/3)/(999.9/2999.7) = 1
    exactly, a tie (u first, a shares its rank: both rank 2 of 2). sshare prints 1999, 999, 2998
    and LevelFS 1.000000 for both. From the integers alone A leads (1.00033 vs 0.99983)."""
    from fscontrol.model.fairtree import compute_fair_tree

    rows = tree("""
        0 root - 1 0
        1 P - 1 0
        2 P u 2 1999
        2 A - 1 0
        3 A a 1 999
    """)
    blind = compute_fair_tree(rows).by_key()
    assert (blind[("P", "u")].rank, blind[("A", "a")].rank) == (1, 2)
    printed = {("P", "u"): 1.0, ("A", ""): 1.0}
    seen = tuple(r._replace(level_fs=printed.get(r.key, r.level_fs)) for r in rows)
    ft = compute_fair_tree(seen).by_key()
    assert (ft[("P", "u")].rank, ft[("A", "a")].rank) == (2, 2)
    # the same printed value but integers no truncation can reconcile (u 1999 vs A 400): ordered by them
    far = tuple(r._replace(raw_usage=400) if r.key in (("A", ""), ("A", "a")) else r for r in seen)
    ft = compute_fair_tree(far).by_key()
    assert (ft[("P", "u")].rank, ft[("A", "a")].rank) == (1, 2)


def test_a_big_group_of_equal_users_is_ranked_in_bounded_memory():
    """15 users of one account with the same shares and the same usage: an undecided tie. Every
    strict order of the group (15! of them) was built before the first was tried, and the process
    was killed for memory. Now each user can take each place of the group (every rotation), in a
    process held to 1 GiB and 60 s."""
    code = (
        "import json, resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_fairtree import tree\n"
        "from fscontrol.model.fairtree import compute_fair_tree\n"
        "ft = compute_fair_tree(tree('\\n'.join(['0 root - 1 0', '1 big - 1 0', '2 big a 1 99999']"
        " + [f'2 big u{i} 1 10' for i in range(15)])))\n"
        "print(json.dumps([[len(g) for g in ft.undecided], {k[1]: v for k, v in ft.rank_choices.items()}]))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    groups, choices = json.loads(p.stdout)
    assert groups == [15]
    # a (the most usage) is last, rank 1; the 15 can each be anywhere in ranks 2-16
    assert sorted(choices) == sorted(f"u{i}" for i in range(15))
    assert all(v == list(range(2, 17)) for v in choices.values()), choices
