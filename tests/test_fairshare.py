"""Classic fair-share recomputed from raw values, checked against a real Slurm 22.05.

The captures (tests/data/captures/run2, each with its .cmd) come from the testbed run 2:
classic fair-share, half-life 300 s, calc period 60 s, tree root - {root user, chem, flat,
fsadmin, physics}, one share each. sprio's normalized fair-share factor is slurmctld's own F.
"""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fscontrol.model.passes import Charge, slurm_usage
from fscontrol.model.fairshare import (
    ROOT,
    TreeError,
    choose_reference_share,
    compute_fairshare,
    effective_usage,
    fairshare_factor,
    halving_usage,
    implied_halving,
    model_comparison,
    norm_shares,
    reference_share,
    remove_associations,
)
from fscontrol.records import ShareRow

RUN2 = Path(__file__).parent / "data" / "captures" / "run2"
HALF_LIFE = 300  # show_config_prio: PriorityDecayHalfLife = 00:05:00
PRINT = 5e-7  # half a unit of sshare's 6th decimal


# ---------------------------------------------------------------------------- tiny readers
def epoch(s: str) -> float:
    return datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()


def captured_at(name: str) -> float:
    head = (RUN2 / f"{name}.cmd").read_text()
    return epoch(head.split("captured ")[1][:19])


def read_sshare(name: str, shares: dict | None = None) -> list[ShareRow]:
    """`sshare -a -P -o ...` with a header; RawShares from `shares` when the capture lacks it."""
    lines = (RUN2 / f"{name}.txt").read_text().splitlines()
    hdr = lines[0].split("|")
    rows, stack = [], []
    for line in lines[1:]:
        f = dict(zip(hdr, line.split("|")))
        acct = f["Account"].strip()
        depth = len(f["Account"]) - len(f["Account"].lstrip(" "))
        user = f["User"]
        if user:
            parent = acct
        else:
            del stack[depth:]
            parent = stack[-1] if stack else ""
            stack.append(acct)
        if "RawShares" in f:
            raw = int(f["RawShares"]) if f["RawShares"] not in ("", "parent") else None
        else:
            raw = (shares or {}).get((acct, user))
        rows.append(
            ShareRow(
                account=acct,
                user=user,
                parent=parent,
                depth=depth,
                raw_shares=raw,
                shares_parent=f.get("RawShares") == "parent",
                norm_shares=float(f["NormShares"]),
                raw_usage=int(f["RawUsage"]),
                norm_usage=float(f["NormUsage"]) if f.get("NormUsage") else None,
                effective_usage=float(f["EffectvUsage"]),
                fairshare=float(f["FairShare"]),
            )
        )
    return rows


def read_sprio(name: str) -> dict[str, float]:
    """job id -> normalized fair-share factor (`sprio -h -n -o '%i|%u|%r|%y|%f'`)."""
    return {ln.split("|")[0]: float(ln.split("|")[4]) for ln in (RUN2 / f"{name}.txt").read_text().splitlines()}


def probes() -> dict[str, tuple[str, str]]:
    """job id -> (account, user) of the pending probe jobs that sprio reports."""
    with open(RUN2 / "probe_jobs.csv") as fh:
        return {r["jobid"]: (r["account"], r["user"]) for r in csv.DictReader(fh)}


SHARES = {r.key: r.raw_shares for r in read_sshare("final_sshare")}


def printed_tolerance(e: float, s: float, d: float) -> float:
    """How far 2^(-(E/S)/d) can move when E and S are only known to 6 decimals, plus the
    rounding of the value it is compared with: dF = F ln2/d (dE/S + E dS/S^2) + 5e-7."""
    f = fairshare_factor(e, s, d)
    return f * math.log(2) / d * (PRINT / s + e * PRINT / s**2) + PRINT + 1e-9  # same tree, has RawShares


# ---------------------------------------------------------------------------- NormShares
@pytest.mark.parametrize("name", ["final_sshare", "damp1_sshare", "pad_sshare_after_tick"])
def test_norm_shares_match_sshare(name):
    rows = read_sshare(name, SHARES)
    mine = norm_shares(rows)
    for r in rows:
        assert abs(mine[r.key] - r.norm_shares) <= PRINT, r.key


def test_root_user_association_is_a_top_level_sibling():
    rows = read_sshare("final_sshare")
    s = norm_shares(rows)
    # five first-tier siblings with one share each: root user, chem, flat, fsadmin, physics
    assert s[("root", "root")] == pytest.approx(1 / 5)
    assert s[("flat", "alice")] == pytest.approx(1 / 5 / 3)


# ---------------------------------------------------------------------------- EffectvUsage
def test_effective_usage_rule_on_sshare_norm_usage():
    """The tree rule alone: from sshare's own NormUsage column (6 decimals), to its EffectvUsage.

    final_sshare is in a pure-decay period, so its lagging columns are consistent."""
    rows = read_sshare("final_sshare")
    norm = {r.key: (r.norm_usage if r.norm_usage is not None else 1.0) for r in rows}
    ue = effective_usage(rows, norm)
    for r in rows:
        # UE = (1-w) UN + w UE_parent: input errors <= PRINT each, plus the output's rounding
        assert abs(ue[r.key] - r.effective_usage) <= 2 * PRINT + 1e-12, r.key


@pytest.mark.parametrize("name", ["final_sshare", "damp1_sshare", "damp4_sshare", "pad_sshare_after_tick"])
def test_effective_usage_from_raw_usage_within_truncation(name):
    """From RawUsage alone. sshare prints RawUsage truncated to an integer: each NormUsage is
    then off by at most (1 + u/R)/R <= 2/R, and UE, a convex combination, by no more."""
    rows = read_sshare(name, SHARES)
    total = rows[0].raw_usage
    by_key = {r.key: r for r in compute_fairshare(rows, 1)}
    for r in rows:
        assert abs(by_key[r.key].effective_usage - r.effective_usage) <= 2 / total + PRINT, r.key


# ---------------------------------------------------------------------------- F against sprio
def test_formula_on_printed_columns_matches_sprio():
    """F = 2^(-(UE/S)/d) from sshare's 6-decimal E and S matches sprio (README: <= 2.3e-6)."""
    ss = {r.key: r for r in read_sshare("damp1_sshare", SHARES)}
    for d, sprio_name in ((1, "damp1_sprio"), (2, "damp2_reconf_sprio_after_tick"), (4, "damp4_sprio")):
        sprio = read_sprio(sprio_name)
        for job, key in probes().items():
            e, sh = ss[key].effective_usage, ss[key].norm_shares
            assert abs(fairshare_factor(e, sh, d) - sprio[job]) <= printed_tolerance(e, sh, d), (d, key)


def _jobs() -> list[tuple[tuple[str, str], Charge]]:
    lines = (RUN2 / "sacct_X_hdr.txt").read_text().splitlines()
    hdr = lines[0].split("|")
    out = []
    for line in lines[1:]:
        f = dict(zip(hdr, line.split("|")))
        if f["State"] != "COMPLETED":
            continue
        billing = float(f["AllocTRES"].split("billing=")[1].split(",")[0])
        out.append(((f["Account"], f["User"]), Charge(epoch(f["Start"]), epoch(f["End"]), billing)))
    return out


def _passes() -> list[float]:
    """Decay pass instants: slurmctld logs them; Slurm takes time(NULL), whole seconds."""
    logged = [
        math.floor(epoch(ln[1:20]))
        for ln in (RUN2 / "slurmctld_decay_log_lines.txt").read_text().splitlines()
        if "Decay factor over" in ln
    ]
    return [logged[0] - 60.0] + logged  # the pass before the first logged one: usage was 0


def modelled_rows(capture: str) -> list[ShareRow]:
    """The capture's tree with RawUsage re-derived exactly (no truncation) from sacct and the
    decay passes by Slurm's step model, rolled up from users to accounts and root."""
    rows = read_sshare(capture, SHARES)
    at = captured_at(capture)
    usage: dict[tuple[str, str], float] = {}
    for key, ch in _jobs():
        u = slurm_usage([at], _passes(), [ch], HALF_LIFE)[0]
        for k in (key, (key[0], ""), ROOT):
            usage[k] = usage.get(k, 0.0) + u
    out = []
    for r in rows:
        m = usage.get(r.key, 0.0)
        assert abs(m - r.raw_usage) < 1.0 + 1e-9, (capture, r.key, m, r.raw_usage)  # sshare truncates
        out.append(ShareRow(**{**r._asdict(), "raw_usage": m}))
    return out


@pytest.mark.parametrize(
    "d,sshare_name,sprio_name",
    [
        (1, "damp1_sshare", "damp1_sprio"),
        (2, "damp2_reconf_sshare_after_tick", "damp2_reconf_sprio_after_tick"),
        (4, "damp4_sshare", "damp4_sprio"),
    ],
)
def test_fairshare_matches_sprio_at_d_1_2_4(d, sshare_name, sprio_name):
    """End to end: sacct + decay passes -> RawUsage -> NormShares/EffectvUsage -> F at d,
    against slurmctld's own F (sprio). Also the 6-decimal sshare columns."""
    rows = modelled_rows(sshare_name)
    mine = {r.key: r for r in compute_fairshare(rows, d)}
    sprio = read_sprio(sprio_name)
    worst = 0.0
    for job, key in probes().items():
        worst = max(worst, abs(mine[key].fairshare - sprio[job]))
        assert 0.0 <= mine[key].fairshare <= 1.0
    assert worst <= 1e-5
    for r in rows:
        assert abs(mine[r.key].norm_shares - r.norm_shares) <= PRINT
        assert abs(mine[r.key].effective_usage - r.effective_usage) <= PRINT + 1e-9, r.key


def test_fairshare_matches_sprio_with_padding_from_printed_raw_usage():
    """With the 46e6 padding, truncation is negligible: printed RawUsage alone gives sprio's F."""
    rows = read_sshare("pad_sshare_after_tick", SHARES)
    mine = {r.key: r for r in compute_fairshare(rows, 1)}
    sprio = read_sprio("pad_sprio_after_tick")
    for job, key in probes().items():
        assert abs(mine[key].fairshare - sprio[job]) <= 1e-6, key
    # fsdummy: 2^(-0.999908/0.2) printed by both
    assert mine[("fsadmin", "fsdummy")].fairshare == pytest.approx(0.03126, abs=PRINT)


def test_sshare_fairshare_column_follows_its_own_config():
    """damp2_edit_*: slurm.conf edited to d=2, slurmctld not yet told. sshare's FairShare column
    already uses d=2 (the sshare process computes it), sprio (slurmctld) still d=1. That is why
    fscontrol computes F itself with the d slurmctld uses."""
    rows = read_sshare("damp2_edit_sshare", SHARES)
    sprio = read_sprio("damp2_edit_sprio")
    by_key = {r.key: r for r in rows}
    for r in rows:
        e, sh = r.effective_usage, r.norm_shares
        assert abs(fairshare_factor(e, sh, 2) - r.fairshare) <= printed_tolerance(e, sh, 2)
    for job, key in probes().items():
        r = by_key[key]
        e, sh = r.effective_usage, r.norm_shares
        assert abs(fairshare_factor(e, sh, 1) - sprio[job]) <= printed_tolerance(e, sh, 1)
        if r.effective_usage > 0:
            assert abs(r.fairshare - sprio[job]) > 0.01


# ---------------------------------------------------------------------------- small trees
def row(acct, user, parent, depth, shares, usage) -> ShareRow:
    return ShareRow(
        account=acct,
        user=user,
        parent=parent,
        depth=depth,
        raw_shares=None if shares in (None, "parent") else shares,
        shares_parent=shares == "parent",
        norm_shares=None,
        raw_usage=usage,
        norm_usage=None,
        effective_usage=None,
        fairshare=None,
    )


def test_parent_shares_follow_slurm_rules():
    """A FairShare=parent account's children compete at the grandparent's level
    (assoc_mgr.c: fs_assoc_ptr, level_shares); a parent-share user takes its account's F."""
    rows = [
        row("root", "", "", 0, None, 1000),
        row("a", "", "root", 1, 3, 600),
        row("a", "u1", "a", 2, 1, 600),
        row("b", "", "root", 1, 1, 400),
        row("sub", "", "b", 2, "parent", 400),
        row("sub", "x", "sub", 3, 2, 300),
        row("sub", "y", "sub", 3, 2, 100),
        row("b", "p", "b", 2, "parent", 0),
    ]
    r = {x.key: x for x in compute_fairshare(rows, 1)}
    assert r[("a", "")].norm_shares == pytest.approx(3 / 4)
    assert r[("b", "")].norm_shares == pytest.approx(1 / 4)
    # x and y are siblings under b (sub is skipped): level_shares = 2 + 2
    assert r[("sub", "x")].norm_shares == pytest.approx(1 / 4 * 2 / 4)
    assert r[("sub", "")].norm_shares == pytest.approx(1 / 4)  # parent: b's
    ue_b = 400 / 1000
    assert r[("sub", "x")].effective_usage == pytest.approx(0.3 + (ue_b - 0.3) * 2 / 4)
    assert r[("b", "p")].effective_usage == pytest.approx(ue_b)
    assert r[("b", "p")].fairshare == pytest.approx(r[("b", "")].fairshare)


def test_zero_shares_zero_usage_and_no_usage_users():
    rows = [
        row("root", "", "", 0, None, 0),
        row("a", "", "root", 1, 1, 0),
        row("a", "u", "a", 2, 1, 0),
        row("a", "z", "a", 2, 0, 0),
    ]
    r = {x.key: x for x in compute_fairshare(rows, 1)}
    assert r[("a", "u")].fairshare == 1.0 and r[("a", "u")].halving is None
    assert r[("a", "z")].fairshare == 0.0  # Slurm: no shares, F = 0
    # once the account has usage, a user of it without own usage inherits part of it
    rows2 = [row("root", "", "", 0, None, 100), row("a", "", "root", 1, 1, 100), row("a", "u", "a", 2, 1, 0), row("a", "w", "a", 2, 1, 100)]
    r2 = {x.key: x for x in compute_fairshare(rows2, 1)}
    assert r2[("a", "u")].effective_usage == pytest.approx(0 + (1.0 - 0) * 1 / 2)
    assert r2[("a", "u")].fairshare < 1.0


def test_tree_errors():
    with pytest.raises(TreeError):
        compute_fairshare([row("a", "", "root", 1, 1, 0)], 1)
    with pytest.raises(TreeError):
        compute_fairshare([row("root", "", "", 0, None, 0), row("a", "u", "a", 2, 1, 0)], 1)
    with pytest.raises(TreeError):
        compute_fairshare([row("root", "", "", 0, None, 0), row("root", "", "", 0, None, 0)], 1)
    with pytest.raises(ValueError):
        fairshare_factor(0.1, 0.1, 0)


# ---------------------------------------------------------------------------- properties
@st.composite
def trees(draw):
    """Random two-level trees: accounts under root, users under accounts (some parent shares)."""
    n_acct = draw(st.integers(1, 5))
    rows = []
    total = 0
    for a in range(n_acct):
        acct_shares = draw(st.sampled_from([0, 1, 1, 2, 5, "parent"]))
        users = []
        for u in range(draw(st.integers(1, 4))):
            usage = draw(st.sampled_from([0, 0, 1, 10, 1000, 10**6, 10**9]))
            users.append(row(f"a{a}", f"u{u}", f"a{a}", 2, draw(st.sampled_from([0, 1, 1, 3, "parent"])), usage))
        acct_usage = sum(x.raw_usage for x in users)
        total += acct_usage
        rows.append(row(f"a{a}", "", "root", 1, acct_shares, acct_usage))
        rows.extend(users)
    return [row("root", "", "", 0, None, total), *rows]


@settings(max_examples=150, deadline=None)
@given(trees(), st.integers(1, 65535))
def test_fairshare_in_unit_interval(rows, d):
    for r in compute_fairshare(rows, d):
        assert 0.0 <= r.fairshare <= 1.0
        assert 0.0 <= r.norm_usage <= 1.0
        assert -1e-12 <= r.effective_usage <= 1.0 + 1e-12
        assert 0.0 <= r.norm_shares <= 1.0


@settings(max_examples=100, deadline=None)
@given(trees(), st.integers(1, 100))
def test_first_tier_implied_halving_equals_halving(rows, d):
    """At the first tier UE = u/U, so u / -log2 F = S d U exactly (Yalim table 2 vs eq. 2-4); not for a
    FairShare=parent user there, who takes root's UE (1), as sprio shows (docs/halving.md)."""
    for r in compute_fairshare(rows, d):
        # away from F = 1, where -log2(F) of a double loses the relative precision asked here
        if r.depth == 1 and not (r.shares_parent and r.user) and r.implied_halving is not None and 1e-300 < r.fairshare < 1 - 1e-6:
            assert r.implied_halving == pytest.approx(r.halving, rel=1e-6)


@settings(max_examples=100, deadline=None)
@given(trees())
def test_sibling_norm_shares_add_up(rows):
    """First-tier competitors split the whole (when any has shares). They are the non-parent
    accounts under root and the non-parent users of FairShare=parent accounts (lifted a level)."""
    res = compute_fairshare(rows, 1)
    s = {r.key: r.norm_shares for r in res}
    lifted = {r.account for r in res if r.depth == 1 and r.shares_parent}
    top = [
        r
        for r in res
        if not r.shares_parent and (r.depth == 1 or (r.depth == 2 and r.account in lifted))
    ]
    if any(r.raw_shares for r in top):
        assert sum(s[r.key] for r in top) == pytest.approx(1.0)


def test_halving_helpers():
    assert halving_usage(0.01, 3, 1e6) == pytest.approx(3e4)
    assert implied_halving(2.0, 0.25) == pytest.approx(1.0)
    assert implied_halving(0.0, 0.5) is None and implied_halving(5.0, 1.0) is None and implied_halving(5.0, 0.0) is None
    # Yalim section 2.1.3: F = 0.131575 after 29,793.799 core-hours -> about 10,182 core-hours
    assert implied_halving(29793.799, 0.131575) == pytest.approx(10182.3, abs=0.5)


# ---------------------------------------------------------------------------- Yalim figure 2
def flat_population(usages: list[float], dummy: float) -> list[ShareRow]:
    """Agave's layout: every user alone in its own one-share account, plus a dummy account."""
    rows = [row("root", "", "", 0, None, sum(usages) + dummy)]
    for i, u in enumerate(usages):
        rows += [row(f"acc{i}", "", "root", 1, 1, u), row(f"acc{i}", f"user{i}", f"acc{i}", 2, 1, u)]
    rows += [row("fsadmin", "", "root", 1, 1, dummy), row("fsadmin", "fsdummy", "fsadmin", 2, 1, dummy)]
    return rows


def test_model_comparison_counts():
    usages = [0.0] * 40 + [float(3 * 1.5**k) for k in range(60)]  # Pareto-like: few heavy users
    u_star = sum(usages) / 10
    n_acc = len(usages) + 1  # first-tier siblings, the dummy's account included
    s = 1 / n_acc
    real = sum(usages)
    dummy = u_star / s - real  # padding that makes H = u* at d = 1 (Yalim eq. 5)
    rows = flat_population(usages, dummy)
    cmp = model_comparison(rows, configured_damping=1, target_halving=u_star, exclude=[("fsadmin", "fsdummy")])
    assert cmp.n_users == 100 and cmp.n_active == 60
    assert cmp.reference_share == pytest.approx(s)

    def count(d, total):
        fs = [2 ** (-(u / total) / (s * d)) for u in usages]
        return sum(f < 1e-6 for f in fs), sum(f <= 0.5 for f in fs)

    d_star = u_star / (s * real)
    expected = {
        "d=1": (1.0, count(1, real)),
        "d=N/M": (float(round(100 / 60)), count(round(100 / 60), real)),
        "d=u*/ubar": (d_star, count(d_star, real)),
        "configured": (1.0, count(1, real + dummy)),
    }
    for m in cmp.models:
        d, (n_under, n_half) = expected[m.name]
        assert m.damping == pytest.approx(d)
        assert (m.n_underflow, m.n_half) == (n_under, n_half), m.name
    # padding and d = u*/ubar are the same control: same users at or below one half
    by = {m.name: m for m in cmp.models}
    assert by["configured"].n_half == by["d=u*/ubar"].n_half
    assert by["d=1"].n_underflow > by["configured"].n_underflow == 0


def test_remove_and_reference_share():
    rows = flat_population([10.0, 30.0], 60.0)
    out = {r.key: r for r in remove_associations(rows, [("fsadmin", "fsdummy")])}
    assert ("fsadmin", "fsdummy") not in out
    assert out[ROOT].raw_usage == 40.0 and out[("fsadmin", "")].raw_usage == 0.0
    assert reference_share(compute_fairshare(rows, 1), exclude=[("fsadmin", "fsdummy")]) == pytest.approx(1 / 3)
    with pytest.raises(TreeError):
        remove_associations(rows, [("fsadmin", "")])


def test_choose_reference_share():
    rows = read_sshare("final_sshare")  # users: 1/15 x3 (flat), 1/10 x2 (physics), 1/5 (chem, fsdummy)
    dummy = ("fsadmin", "fsdummy")
    assert choose_reference_share(rows, 1, dummy, "median")[0] == pytest.approx((1 / 15 + 1 / 10) / 2)
    assert choose_reference_share(rows, 1, dummy, "min")[0] == pytest.approx(1 / 15)
    assert choose_reference_share(rows, 1, dummy, "max")[0] == pytest.approx(1 / 5)
    assert choose_reference_share(rows, 1, dummy, "mean")[0] == pytest.approx((3 / 15 + 2 / 10 + 1 / 5) / 6)
    assert choose_reference_share(rows, 1, None, "mean")[0] == pytest.approx((3 / 15 + 2 / 10 + 2 / 5) / 7)
    s, why = choose_reference_share(rows, 1, dummy, 0.01)
    assert s == 0.01 and why == "set in the config"
    assert choose_reference_share(rows, 1, dummy)[1] == "median NormShares of the user associations (dummy left out)"
    # a user's own view (no root, no parents): falls back to sshare's printed NormShares
    partial = [r for r in rows if r.is_user and r.account == "flat"]
    s, why = choose_reference_share(partial, 1, None, "median")
    assert s == pytest.approx(0.066667) and "incomplete" in why
    assert choose_reference_share([r for r in rows if not r.is_user], 1)[0] is None
    for bad in (0, 1.5, "mode"):
        with pytest.raises(ValueError):
            choose_reference_share(rows, 1, dummy, bad)


# ---------------------------------------------------------------------------- the usage that halves F
def _charge(rows, key, x):
    """The tree after `key` used x more: the user, every ancestor and root all gain x."""
    by = {r.key: r for r in rows}
    path = {key}
    acct = key[0]
    while acct:
        path.add((acct, ""))
        acct = by[(acct, "")].parent
    return [r._replace(raw_usage=r.raw_usage + x) if r.key in path else r for r in rows]


def _check_halving(rows, d):
    from fscontrol.model.fairshare import usage_to_halve

    base = {r.key: r for r in compute_fairshare(rows, d)}
    total = float(next(r.raw_usage for r in rows if r.depth == 0))
    checked = 0
    for k, r in base.items():
        if not k[1] or r.norm_shares <= 0:
            continue
        x = usage_to_halve(r.effective_usage, r.norm_shares, d, total)
        if x is None:  # then no usage of its own halves F: even a huge one leaves it above half
            far = {q.key: q for q in compute_fairshare(_charge(rows, k, total * 1e9), d)}[k]
            assert far.fairshare > r.fairshare / 2 * (1 - 1e-6)
            continue
        after = {q.key: q for q in compute_fairshare(_charge(rows, k, x), d)}[k]
        assert after.fairshare == pytest.approx(r.fairshare / 2, rel=1e-9, abs=1e-300)
        checked += 1
    return checked


@settings(max_examples=150, deadline=None)
@given(trees(), st.integers(1, 50))
def test_usage_to_halve_halves_f_exactly_anywhere_in_the_tree(rows, d):
    """Checked against the tree model itself (validated against sprio to 5e-6): charge the user
    exactly that much more (and its ancestors and root, as Slurm does) and F is half."""
    if next(r.raw_usage for r in rows if r.depth == 0) > 0:
        _check_halving(rows, d)


def test_usage_to_halve_in_a_deep_shared_tree_by_hand():
    """A hand-worked case: science (2 shares) > physics (1), chem (1); physics has alice (1) and
    bob (1); flat (1) has dave alone. U = 100: bob 40, alice 10, chem/carol 20, dave 30."""
    rows = [
        row("root", "", "", 0, None, 100),
        row("flat", "", "root", 1, 1, 30), row("flat", "dave", "flat", 2, 1, 30),
        row("science", "", "root", 1, 2, 70),
        row("physics", "", "science", 2, 1, 50), row("physics", "alice", "physics", 3, 1, 10),
        row("physics", "bob", "physics", 3, 1, 40),
        row("chem", "", "science", 2, 1, 20), row("chem", "carol", "chem", 3, "parent", 20),
    ]
    r = {q.key: q for q in compute_fairshare(rows, 1)}
    # alice: UE = 0.1 + (UE_physics - 0.1)/2, UE_physics = 0.5 + (0.7 - 0.5)/2 = 0.6 -> UE = 0.35;
    # S = 2/3 * 1/2 * 1/2 = 1/6; x = (1/6)(100) / (1 - 0.35 - 1/6) = 34.48...
    assert r[("physics", "alice")].effective_usage == pytest.approx(0.35)
    assert r[("physics", "alice")].norm_shares == pytest.approx(1 / 6)
    from fscontrol.model.fairshare import usage_to_halve

    assert usage_to_halve(0.35, 1 / 6, 1, 100.0) == pytest.approx(100 / 6 / (1 - 0.35 - 1 / 6))
    assert _check_halving(rows, 1) == 4  # dave, alice, bob and carol (FairShare=parent) all checked
    # dave, alone at the first tier: Yalim's u / -log2 F = S d U, and the exact x = that / (1 - UE - S d)
    dave = r[("flat", "dave")]
    assert dave.implied_halving == pytest.approx(1 / 3 * 100)
    assert usage_to_halve(dave.effective_usage, dave.norm_shares, 1, 100.0) == pytest.approx((100 / 3) / (1 - 0.3 - 1 / 3))


@settings(max_examples=100, deadline=None)
@given(trees())
def test_path_weights_rebuild_effective_usage_and_add_up_to_one(rows):
    """The forecast's weights (from NormShares alone, as a user's own sshare shows them) give
    back the model's EffectvUsage as sum_j w_j NormUsage_j, for every user."""
    from fscontrol.forecast.classic import path_weights

    res = compute_fairshare(rows, 1)
    ns = {q.key: q.norm_shares for q in res}
    shown = [r._replace(norm_shares=ns[r.key]) for r in rows]
    un = {q.key: q.norm_usage for q in res}
    for q in res:
        if not q.user:
            continue
        w = path_weights(shown, q.key)
        if w is None:  # a zero share on the path: no ratio to take (F is 0 or the row has no say)
            continue
        assert sum(w.values()) == pytest.approx(1.0)
        assert sum(x * un[k] for k, x in w.items()) == pytest.approx(q.effective_usage, abs=1e-12)


def test_projection_charges_account_mates_with_their_weight_by_hand():
    """One pass, 60 s, T = 300 s: u' = u f^60 + w rate 60 f^60 for a job that runs through."""
    from fscontrol.model.decay import decay_factor_per_second
    from fscontrol.forecast.classic import project_running

    f = decay_factor_per_second(300) ** 60
    out = project_running(1000.0, 5000.0, passes=2, period_s=60, half_life_s=300, weighted_jobs=[(None, 4.0, 0.25)],
                          cluster_jobs=[(30.0, 8.0)])
    assert out[0][0] == pytest.approx(1000 * f + 0.25 * 4 * 60 * f)  # the pass just past: it ran then too
    assert out[1][0] == pytest.approx(out[0][0] * f + 0.25 * 4 * 60 * f)
    g = decay_factor_per_second(300)
    assert out[1][1] == pytest.approx((5000 * f + 8 * 60 * f) * f + 8 * 30 * g ** 60)  # the job ends 30 s into the next
