"""Issue #33: trees with FairShare=parent are read (and still checked), and classic EffectvUsage is
exact beyond sshare's six decimals (fscontrol.model.effusage). The testbed's own check is
tests/test_integration_treezoo.py."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.errors import ParseError
from fscontrol.model import effusage, fairshare
from fscontrol.model.fairtree import fair_tree_shares
from fscontrol.records import ShareRow
from fscontrol.slurm import parse
from test_fairshare import row, trees

CAPTURE = Path(__file__).parent / "data" / "captures" / "tb" / "sshare_parent_classic.txt"


def parent_tree() -> tuple[ShareRow, ...]:
    """Slurm 22.05 on the testbed, classic: ops (FairShare=parent) under root, carol@physics parent."""
    return parse.parse_sshare(CAPTURE.read_text())


# ---------------------------------------------------------------------------- check_share_tree
def test_classic_tree_with_a_parent_account_and_a_parent_user_is_accepted():
    rows = parent_tree()
    by = {r.key: r for r in rows}
    # sshare's own figures: ops prints root's 1.000000, its users root's level (1/7 each)
    assert by[("ops", "")].shares_parent and by[("ops", "")].norm_shares == 1.0
    assert by[("ops", "alice")].norm_shares == 0.142857 and by[("physics", "carol")].shares_parent
    parse.check_share_tree(rows)  # main (8b2524e): "the NormShares under ops add up to 0.285714, not 1.000000"
    # and fscontrol's NormShares are sshare's
    s = fairshare.norm_shares(rows)
    assert all(abs(s[r.key] - r.norm_shares) <= 5e-7 for r in rows)


@pytest.mark.parametrize("drop", [("ops", "bob"), ("flat", "dave"), ("physics", "bob"), ("science", "")])
def test_a_row_missing_from_a_parent_tree_is_still_refused(drop):
    rows = tuple(r for r in parent_tree() if r.key != drop)
    with pytest.raises(ParseError, match="add up to"):
        parse.check_share_tree(rows)


def test_cut_after_a_parent_account_is_refused():
    rows = parent_tree()
    cut = rows[:[r.key for r in rows].index(("ops", "bob"))]  # ops's last user and everything after
    with pytest.raises(ParseError):
        parse.check_share_tree(cut)


def test_fair_tree_shares_with_parent_accounts_add_up_by_level():
    """Fair Tree's own NormShares of the same tree (RawShares / the level's, the children of ops at
    root's level), and a deeper parent account: accepted; one share changed: refused."""
    rows = list(parent_tree())
    extra = [row("bio", "", "science", 2, "parent", 0), row("bio", "dave", "bio", 3, 2, 0)]
    i = [r.key for r in rows].index(("chem", ""))
    rows[i:i] = extra
    rows = tuple(rows)
    ft = fair_tree_shares(fairshare.build_tree(rows))
    fresh = tuple(r._replace(norm_shares=1.0 if r.depth == 0 else ft[r.key]) for r in rows)
    by = {r.key: r for r in fresh}
    assert by[("ops", "alice")].norm_shares == pytest.approx(1 / 7)
    assert by[("bio", "dave")].norm_shares == pytest.approx(2 / 4)  # beside chem and physics, under science
    parse.check_share_tree(fresh, fair_tree=True)
    with pytest.raises(ParseError, match="under science"):
        parse.check_share_tree(tuple(r._replace(norm_shares=0.3) if r.key == ("bio", "dave") else r for r in fresh),
                               fair_tree=True)
    # classic NormShares of the same tree (22.05 keeps them after reconfigure switched to Fair Tree)
    classic = fairshare.norm_shares(rows)
    parse.check_share_tree(tuple(r._replace(norm_shares=classic[r.key]) for r in rows), fair_tree=True)
    parse.check_share_tree(tuple(r._replace(norm_shares=classic[r.key]) for r in rows))


# ---------------------------------------------------------------------------- EffectvUsage
def big_tree(n_accounts: int = 1000, users: int = 100, busy: int = 40_000, total: int = 10**9) -> list[ShareRow]:
    """Hand-worked: 1,000 one-share accounts under root, 100 one-share users each. a0 ran `busy`
    billing-seconds (all of account a0's), the rest of `total` is in the other accounts' first users."""
    rest = (total - busy) // (n_accounts - 1)
    extra = total - busy - rest * (n_accounts - 1)  # to a1: root's RawUsage is `total`
    rows = [row("root", "", "", 0, None, total)]
    for a in range(n_accounts):
        u = busy if a == 0 else rest + (extra if a == 1 else 0)
        rows.append(row(f"a{a}", "", "root", 1, 1, u))
        rows += [row(f"a{a}", f"u{i}", f"a{a}", 2, 1, u if i == 0 else 0) for i in range(users)]
    return rows


def printed(rows: list[ShareRow], ue: dict) -> list[ShareRow]:
    """The rows as sshare prints them: EffectvUsage to 6 decimals."""
    return [r._replace(effective_usage=float(f"{ue[r.key]:.6f}")) for r in rows]


def test_hand_worked_idle_user_in_a_large_tree():
    """u1 in a0 has no usage: UE = UE_a0 * 1/100 = (40,000 / 10^9) / 100 = 4e-7, which sshare prints
    0.000000; S = 1/1000 * 1/100 = 1e-5, so F = 2^(-0.04) = 0.972655 where the printed column
    gives 1.000000 (the issue's F=1.000000 against sshare's 0.995405, at 100,000 associations)."""
    rows = big_tree()
    total = rows[0].raw_usage
    assert total == 10**9
    exact = fairshare.effective_usage(rows)
    assert exact[("a0", "u1")] == pytest.approx(4e-7, rel=1e-12)
    shown = printed(rows, exact)
    i = next(i for i, r in enumerate(shown) if r.key == ("a0", "u1"))
    assert shown[i].effective_usage == 0.0  # what sshare prints
    ue = effusage.refined_effective_usage(shown)
    assert ue[i] == pytest.approx(4e-7, rel=1e-12)
    s = 1 / 1000 / 100
    assert fairshare.fairshare_factor(ue[i], s, 1) == pytest.approx(2 ** -0.04, abs=1e-12)
    assert round(2 ** -0.04, 6) == 0.972655
    assert fairshare.fairshare_factor(shown[i].effective_usage, s, 1) == 1.0  # main's F


def test_refined_keeps_slurmctlds_value_where_the_raw_figures_disagree():
    """Running jobs: sshare's NormUsage of ops's users were set against root's RawUsage of another
    moment (1777 / 0.449256 = 3955, not 4634): the recomputed 0.383 is not used; the value stays
    within the printed EffectvUsage's rounding and gives sshare's own FairShare (its 6 decimals,
    d = 1), the two figures slurmctld printed of it."""
    rows = parent_tree()
    ue = effusage.refined_effective_usage(rows)
    by = dict(zip((r.key for r in rows), ue))
    alice = next(r for r in rows if r.key == ("ops", "alice"))
    assert abs(by[("ops", "alice")] - 0.449256) <= 5e-7 and abs(by[("ops", "alice")] - 1777 / 4634) > 0.06
    assert round(2 ** -(by[("ops", "alice")] / fairshare.norm_shares(rows)[("ops", "alice")]), 6) == alice.fairshare
    # everywhere, within the printed rounding
    assert all(abs(u - r.effective_usage) <= 5e-7 * (1 + 1e-9) for u, r in zip(ue, rows))
    # the computed values follow Slurm's rules: a parent user takes its account's UE
    comp = dict(zip((r.key for r in rows), effusage.computed_effective_usage(rows)))
    assert comp[("physics", "carol")] == comp[("physics", "")] and comp[("ops", "alice")] == pytest.approx(1777 / 4634)


def test_refined_without_a_whole_tree_is_the_printed_column():
    rows = [r for r in parent_tree() if r.depth != 0]
    assert effusage.refined_effective_usage(rows) == [r.effective_usage for r in rows]


def test_status_shows_the_exact_f():
    """`status`'s F on a hand-worked tree printed as sshare prints it (config: the testbed's,
    classic, d = 1): the idle user's F is the exact one, not 1.000000."""
    from fscontrol.report import status as rstatus
    from fscontrol.store.history import StoredSnapshot

    rows = big_tree(n_accounts=200, users=50, busy=8_000, total=10**9)
    exact = fairshare.effective_usage(rows)
    s = fairshare.norm_shares(rows)
    shown = tuple(r._replace(norm_shares=float(f"{s[r.key]:.6f}")) for r in printed(rows, exact))
    conf = "\n".join(ln for ln in (CAPTURE.parent / "show_config.txt").read_text().splitlines() if not ln.startswith("#"))
    cfg = parse.parse_config(conf)
    assert cfg.mode == "classic" and cfg.damping_factor == 1
    snap = StoredSnapshot(1, "tbcluster", 0.0, cfg, shown, {}, "test")
    f = {(r["account"], r["user"]): r["fairshare"] for r in rstatus.status_data(snap)["table"]}
    key = ("a0", "u1")
    assert next(r for r in shown if r.key == key).effective_usage == 0.0  # 4e-7 / 50 * ... printed 0.000000
    want = fairshare.fairshare_factor(exact[key], s[key], 1)
    assert want < 1 - 1e-3 and abs(f[key] - want) < 1e-9


@settings(max_examples=200, deadline=None)
@given(trees(), st.sampled_from([1, 10**7]), st.integers(1, 1000))
def test_refined_is_exact_where_printed_is_consistent(rows, scale, d):
    """Printed to 6 decimals from slurmctld's exact values (RawUsage whole, as here): refined is
    always within the print's 5e-7 of slurmctld's value, and on a cluster whose RawUsage is fine
    enough (root's over 4e6: the truncation bound 2/T under 5e-7) it is that value, and F with it."""
    rows = [r._replace(raw_usage=r.raw_usage * scale) for r in rows]
    exact = fairshare.effective_usage(rows)
    shown = printed(rows, exact)
    ue = effusage.refined_effective_usage(shown)
    s = fairshare.norm_shares(rows)
    fine = rows[0].raw_usage > 4e6
    for r, u in zip(shown, ue):
        assert abs(u - exact[r.key]) <= 5e-7 * (1 + 1e-9)
        if fine or r.raw_usage == 0 and exact[r.key] == 0:
            assert abs(u - exact[r.key]) <= 1e-12
            f, f_exact = fairshare.fairshare_factor(u, s[r.key], d), fairshare.fairshare_factor(exact[r.key], s[r.key], d)
            assert abs(f - f_exact) <= 1e-9


@settings(max_examples=200, deadline=None)
@given(trees(), st.floats(1e-5, 0.5))
def test_refined_never_leaves_the_printed_rounding(rows, shift):
    """Printed values of another moment (every UE shifted): refined stays within 5e-7 of each."""
    exact = fairshare.effective_usage(rows)
    shown = [r._replace(effective_usage=round(min(1.0, exact[r.key] + shift), 6)) for r in rows]
    for r, u in zip(shown, effusage.refined_effective_usage(shown)):
        assert abs(u - r.effective_usage) <= 5e-7 * (1 + 1e-9)
        assert not math.isnan(u)


@settings(max_examples=300, deadline=None)
@given(trees(), st.sampled_from([1, 10**4, 10**7]), st.sampled_from([1, 2, 7, 40]), st.data())
def test_refined_holds_slurmctlds_f_when_its_figures_are_of_another_moment(rows, scale, d, data):
    """A busy cluster (issue #33, the outside tester's 10,516-user tree): slurmctld set NormUsage,
    EffectvUsage and F at a pass's start, then charged running jobs and jobs ended, so sshare's
    RawUsage is later than its other columns. Printed as sshare prints them (6 decimals; FairShare
    = 2^(-(UE/S)/d) from the full values), the refined EffectvUsage stays within the printed one's
    rounding and gives slurmctld's F within 1e-6 (the two prints' rounding) on every row with
    shares."""
    rows = [r._replace(raw_usage=r.raw_usage * scale) for r in rows]
    exact = fairshare.effective_usage(rows)
    total = rows[0].raw_usage
    s = fairshare.norm_shares(rows)
    # later RawUsage: some users' jobs ran on (charged to their account and root too)
    later = {r.key: r.raw_usage for r in rows}
    for r in rows:
        g = data.draw(st.sampled_from([0, 0, 1, 10**3, 10**6])) * scale if r.user else 0
        for k in ((r.key, (r.account, ""), fairshare.ROOT) if g else ()):
            later[k] += g

    def p6(x):
        return float(f"{x:.6f}")

    shown = []
    for r in rows:
        n = (r.raw_usage / total) if total else 0.0
        f = fairshare.fairshare_factor(exact[r.key], s[r.key], d) if s[r.key] > 0 else 0.0
        shown.append(r._replace(raw_usage=later[r.key], norm_usage=None if r.depth == 0 else p6(min(1.0, n)),
                             effective_usage=p6(exact[r.key]),
                             fairshare=None if r.shares_parent or r.depth == 0 else p6(f)))
    ue = effusage.refined_effective_usage(shown, d=d)
    for r, u in zip(shown, ue):
        assert abs(u - r.effective_usage) <= 5e-7 * (1 + 1e-9) + 1e-15, (r, u, exact[r.key])  # the print's rounding
        if r.shares_parent or not s[r.key] > 0 or r.depth == 0:
            continue
        f, f_exact = fairshare.fairshare_factor(u, s[r.key], d), fairshare.fairshare_factor(exact[r.key], s[r.key], d)
        assert abs(f - f_exact) <= 1e-6 * (1 + 1e-9) + 1e-15, (r, u, exact[r.key], f, f_exact)


@pytest.mark.parametrize("d_sshare", [1, 3])
def test_refined_uses_sshares_own_d(d_sshare):
    """sshare computes FairShare with the d of its own slurm.conf, which `scontrol
    fsdampeningfactor` does not change: with slurmctld at d = 5 and sshare's FairShare printed at
    d_sshare, the idle user's EffectvUsage is still exact (found from the rows), and it is the same
    whichever d the caller says slurmctld holds."""
    rows = big_tree()
    exact = fairshare.effective_usage(rows)
    s = fairshare.norm_shares(rows)
    shown = [r._replace(effective_usage=float(f"{exact[r.key]:.6f}"),
                     fairshare=None if r.depth == 0 else float(f"{fairshare.fairshare_factor(exact[r.key], s[r.key], d_sshare):.6f}"))
             for r in rows]
    assert effusage.sshare_damping(shown, [s[r.key] for r in shown]) == d_sshare
    i = next(i for i, r in enumerate(shown) if r.key == ("a0", "u1"))
    for d in (1, 5):
        ue = effusage.refined_effective_usage(shown, d=d)
        assert ue[i] == pytest.approx(4e-7, rel=1e-9)


def test_published_rows_carry_the_exact_f():
    """What `publish` writes for users' `forecast`: the same F as status (main: 1.000000)."""
    from fscontrol.export import publish

    rows = big_tree()
    exact = fairshare.effective_usage(rows)
    s = fairshare.norm_shares(rows)
    shown = tuple(r._replace(norm_shares=float(f"{s[r.key]:.6f}")) for r in printed(rows, exact))
    out = {(a["account"], a["user"]): a for a in publish._rows(shown, 1, float(rows[0].raw_usage), None)}
    a = out[("a0", "u1")]
    assert a["fairshare"] == pytest.approx(2 ** -0.04, abs=1e-12) and a["norm_shares"] == pytest.approx(1e-5, rel=1e-12)
    assert a["effective_usage"] == pytest.approx(4e-7, rel=1e-12)


def _printed_and_published(rows, d: int):
    """big_tree's rows as sshare prints them (6 decimals; FairShare at slurm.conf's d = 1), and the
    file the agent publishes from them with slurmctld at d: (exact UE, NormShares, rows, file)."""
    from test_forecast_cli import T0, _config

    from fscontrol.export import publish as pub
    from fscontrol.store.history import StoredSnapshot

    exact = fairshare.effective_usage(rows)
    s = fairshare.norm_shares(rows)
    shown = tuple(r._replace(norm_shares=float(f"{s[r.key]:.6f}"), effective_usage=float(f"{exact[r.key]:.6f}"),
                          norm_usage=None if r.depth == 0 else float(f"{r.raw_usage / rows[0].raw_usage:.6f}"),
                          fairshare=float(f"{fairshare.fairshare_factor(exact[r.key], s[r.key], 1):.6f}"))
                  for r in rows)
    snap = StoredSnapshot(id=1, cluster="agave", taken_at=T0, config=replace(_config(()), damping_factor=d), shares=shown,
                          usage_factors={"normal": 1.0}, source="test")
    published = pub.build_published(snap, target_core_hours=10_000, method="damping", control={"applying": False, "off": False})
    return exact, s, shown, published


def test_the_forecast_from_the_users_own_sshare_row_is_exact_on_a_large_tree():
    """`forecast` reads the user's own row live (`sshare -l -P -u`): EffectvUsage 0.000000 and
    NormShares 0.000010 printed, where slurmctld holds 4e-7 and 1e-5. F from that printed pair is
    1.000000; the row's FairShare (0.972655) and the published tree's exact NormShares pin
    slurmctld's 2^(-0.04) (model/effusage.own_effective_usage), to the prints' rounding."""
    from test_forecast_cli import T0

    from fscontrol.forecast import service as uf

    rows = big_tree()
    exact, s, shown, published = _printed_and_published(rows, 1)
    own = [r for r in shown if r.user == "u1" and r.account in ("a0", "a1")]  # what `sshare -l -P -u u1` shows of u1
    mine = own[0]
    assert mine.effective_usage == 0.0 and fairshare.fairshare_factor(mine.effective_usage, mine.norm_shares, 1) == 1.0
    got = {a["account"]: a for a in uf.forecast_data(published, own, user="u1", now=T0, stale_ok=True)["associations"]}
    assert got["a0"]["fairshare"] == pytest.approx(2 ** -0.04, abs=1e-6) and got["a0"]["norm_shares"] == pytest.approx(1e-5, rel=1e-12)
    # the same as from the published rows (the agent's refined values)
    pub_rows = uf.rows_from_published(published, "u1")
    via_pub = uf.forecast_data(published, pub_rows, user="u1", now=T0, stale_ok=True, rows_from="published")
    assert {a["account"]: a["fairshare"] for a in via_pub["associations"]}["a0"] == pytest.approx(got["a0"]["fairshare"], abs=1e-6)


def _runtime_d_tree(d: int):
    """A 1,000-account tree (big_tree) where u0@a0 ran much more: UE/S about 30, so sshare's
    FairShare, computed at its slurm.conf's d = 1, prints 0.000000 (2^-30); slurmctld runs at d (set with
    `scontrol fsdampeningfactor`), and u0's RawUsage grew after the pass set its NormUsage."""
    rows = big_tree(busy=312_345)
    exact = fairshare.effective_usage(rows)
    s = fairshare.norm_shares(rows)
    total = rows[0].raw_usage
    shown = [r._replace(effective_usage=float(f"{exact[r.key]:.6f}"),
                     norm_usage=None if r.depth == 0 else float(f"{r.raw_usage / total:.6f}"),
                     fairshare=None if r.depth == 0 else float(f"{fairshare.fairshare_factor(exact[r.key], s[r.key], 1):.6f}"))
             for r in rows]
    grown = {("a0", "u0"), ("a0", ""), ("root", "")}  # a job of u0's charged after the pass
    shown = [r._replace(raw_usage=r.raw_usage + 700_000) if r.key in grown else r for r in shown]
    key = ("a0", "u0")
    sprio = {key: float(f"{fairshare.fairshare_factor(exact[key], s[key], d):.7f}")}
    return shown, exact, s, key, sprio


def test_sprio_pins_f_where_sshares_fairshare_is_of_another_d():
    """Slurm 22.05 after `scontrol fsdampeningfactor 20` (an outside tester, issue #33): sshare's
    FairShare is at slurm.conf's d = 1 and prints 0.000000 for u0@a0, and her NormUsage is of an
    earlier moment than RawUsage, so only EffectvUsage's 6 decimals bound her value: F at d = 20
    off by more than 5e-6. sprio's factor (7 decimals, slurmctld's own at d = 20) pins it."""
    d = 20
    shown, exact, s, key, sprio = _runtime_d_tree(d)
    i = next(i for i, r in enumerate(shown) if r.key == key)
    assert shown[i].fairshare == 0.0 and effusage.sshare_damping(shown, [s[r.key] for r in shown]) == 1
    f_exact = fairshare.fairshare_factor(exact[key], s[key], d)
    without = effusage.refined_effective_usage(shown, d=d)[i]
    with_sprio = effusage.refined_effective_usage(shown, d=d, sprio=sprio)[i]
    assert abs(fairshare.fairshare_factor(without, s[key], d) - f_exact) > 5e-6
    assert abs(fairshare.fairshare_factor(with_sprio, s[key], d) - f_exact) <= 1e-7
    assert effusage.sprio_lags(shown, sprio, d) == 0


def test_sprio_of_the_old_d_is_not_used_and_status_says_why():
    """Between `scontrol fsdampeningfactor 20` and the next decay pass the pending jobs keep the
    factors of the old d, 10 here (the tester's 22.05 run: 52 of 60 off by up to 0.53): those
    factors are not used, and status says why sprio differs."""
    from test_forecast_cli import T0, _config

    from fscontrol.report import status as rstatus
    from fscontrol.store.history import StoredSnapshot

    d = 20
    shown, exact, s, key, _ = _runtime_d_tree(d)
    old = {key: float(f"{fairshare.fairshare_factor(exact[key], s[key], 10):.7f}")}
    assert effusage.sprio_lags(shown, old, d) == 1
    i = next(i for i, r in enumerate(shown) if r.key == key)
    assert effusage.refined_effective_usage(shown, d=d, sprio=old)[i] == effusage.refined_effective_usage(shown, d=d)[i]
    snap = StoredSnapshot(id=1, cluster="agave", taken_at=T0, config=replace(_config(()), damping_factor=d),
                          shares=tuple(shown), usage_factors={"normal": 1.0}, source="test", prio_fairshare=old)
    assert any("d changed since the last decay pass" in w for w in rstatus.status_data(snap)["warnings"])


def test_the_forecast_reads_sshares_fairshare_at_sshares_own_d():
    """The second outside tester (22.05, `scontrol fsdampeningfactor 5` with slurm.conf at d = 1):
    a user's own `sshare -u` row prints FairShare at slurm.conf's d, so read at slurmctld's d it
    disagreed and the forecast fell back to the printed EffectvUsage (w00000@wide: 0.7426443 where
    status and sprio had 0.7426780). The published file carries the d sshare's FairShare is at."""
    from test_forecast_cli import T0

    from fscontrol.forecast import service as uf

    d = 5
    rows = big_tree(busy=2_123_457)
    exact, s, shown, published = _printed_and_published(rows, d)
    assert published["config"]["sshare_damping"] == 1 and published["config"]["damping_factor"] == d
    own = [r for r in shown if r.user == "u1" and r.account == "a0"]
    want = fairshare.fairshare_factor(exact[("a0", "u1")], s[("a0", "u1")], d)
    printed_f = fairshare.fairshare_factor(own[0].effective_usage, s[("a0", "u1")], d)
    assert abs(printed_f - want) > 5e-6  # what the forecast said before
    got = uf.forecast_data(published, own, user="u1", now=T0, stale_ok=True)["associations"][0]["fairshare"]
    assert got == pytest.approx(want, abs=1e-6)
