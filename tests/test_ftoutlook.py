"""The Fair Tree outlook, indexed and for every user at once (fscontrol.model.ftoutlook), against
the one-user-at-a-time version it replaced (tests/ft_reference.py: every question scans the whole
tree); and a forecast from the outlooks the agent publishes in each row against the same forecast
ranked from every row, on random trees, deep trees, ties, FairShare=parent and a real recording."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ft_reference as ref
from fscontrol.export import publish as pub
from fscontrol.forecast import fairtree as ftf
from fscontrol.model import ftoutlook as fo
from fscontrol.model.fairtree import compute_fair_tree
from test_fairtree import tree

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "testbed-fairtree"


@st.composite
def trees(draw):
    """Two levels of accounts, users with shares 1-4 (ties likely), some idle, some
    FairShare=parent users and sub-accounts."""
    lines = ["0 root - 1 0"]
    for i in range(draw(st.integers(1, 4))):
        lines.append(f"1 a{i} - {draw(st.integers(1, 3))} 0")
        for j in range(draw(st.integers(0, 2))):
            lines.append(f"2 a{i}s{j} - {draw(st.sampled_from(['1', '2', 'parent']))} 0")
            for k in range(draw(st.integers(1, 3))):
                lines.append(f"3 a{i}s{j} u{k} {draw(st.sampled_from(['1', '2', '4', 'parent']))} "
                             f"{draw(st.sampled_from([0, 10, 100, 1000, draw(st.integers(0, 10**5))]))}")
        for k in range(draw(st.integers(1, 3))):
            lines.append(f"2 a{i} u{k} {draw(st.sampled_from(['1', '2', '4']))} "
                         f"{draw(st.sampled_from([0, 50, 500, draw(st.integers(0, 10**5))]))}")
    return "\n".join(lines)


@given(trees())
@settings(max_examples=150, deadline=None)
def test_indexed_answers_equal_the_whole_tree_scans(spec):
    rows = tree(spec)
    ft = compute_fair_tree(rows)
    ix = fo.TreeIndex(ft)
    for a in ft.assocs:
        if not a.is_user:
            continue
        assert ix.explain(a.key) == ref.explain(ft, a.key)
        assert ix.neighbours(a.key) == ref.neighbours(ft, a.key)
        assert ix.budget(a.key) == ref.budget(ft, a.key)


@given(trees(), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_every_users_rank_changes_give_the_one_user_projection(spec, seed):
    rows = tree(spec)
    ft = compute_fair_tree(rows)
    rnd = random.Random(seed)
    users = [a.key for a in ft.assocs if a.is_user]
    running = {k: [(rnd.choice([None, 30.0, 200.0, 900.0]), float(rnd.randint(1, 64)))] for k in rnd.sample(users, k=min(3, len(users)))}
    p = fo.Plan(first_pass_in_s=40.0, period_s=60.0, step=rnd.choice([1, 3]), points=12)
    out = fo.outlooks(ft, rows, running, users, p, half_life_s=600.0)
    for k in users:
        want = ref.project_ranks(rows, running, [k], passes=p.points, period_s=p.period_s * p.step, half_life_s=600.0,
                                 first_pass_in_s=p.first_pass_in_s)[k]
        got = fo.points(p, out[k].changes, ft.by_key()[k].rank, ft.n_users)
        assert [(q.in_s, q.rank) for q in got] == [(q.in_s, q.rank) for q in want]


def _published(rows, *, running: dict | None, taken: float = 1_000_000.0, period: float = 300.0) -> dict:
    """A published snapshot as build_published writes it under Fair Tree (rows, running jobs)."""
    ft = compute_fair_tree(rows).by_key()
    assoc = [{"account": r.account, "user": r.user, "parent": r.parent, "depth": r.depth, "raw_shares": r.raw_shares,
              "shares_parent": r.shares_parent, "norm_shares": r.norm_shares, "raw_usage": r.raw_usage,
              "usage_core_hours": r.raw_usage / 3600, "norm_usage": None, "effective_usage": None,
              "fairshare": ft[r.key].fairshare, "halving_core_hours": None, "dummy": False} for r in rows]
    users = {} if running is None else {f"{k[0]}/{k[1]}": [[left, rate, i] for i, (left, rate) in enumerate(v)]
                                        for k, v in running.items()}
    return {"format": pub.FORMAT, "version": pub.VERSION, "cluster": "c", "taken_at": taken, "taken_at_iso": "x",
            "published_at": taken, "next_pass_at": taken + 100.0,
            "config": {"priority_mode": "fair_tree", "half_life_s": 3600.0, "calc_period_s": period, "private_data": []},
            "per_association": True,
            "running": {"as_of": taken, "cluster": [], "accounts": {}, "users": users, "users_published": running is not None},
            "associations": assoc}


def _with_outlooks(data: dict) -> dict:
    from fscontrol.export.outlook import published_outlooks, tree_from_published

    out = json.loads(json.dumps(data))
    out["fair_tree_outlook"], ft = published_outlooks(out, tree_from_published(out))
    for r in out["associations"]:
        if r["user"]:
            r["ft"] = ft[f"{r['account']}/{r['user']}"]
    return json.loads(json.dumps(out, allow_nan=False))  # through JSON, as a user reads it


@given(trees(), st.integers(0, 2**32 - 1), st.sampled_from([0.0, 250.0, 3599.0]), st.booleans())
@settings(max_examples=60, deadline=None)
def test_a_forecast_from_the_published_outlook_is_the_forecast_from_every_row(spec, seed, later, jobs_known):
    rows = tree(spec)
    rnd = random.Random(seed)
    users = [r.key for r in rows if r.user]
    running = {k: [(rnd.choice([None, 600.0, 5000.0]), float(rnd.randint(1, 64)))] for k in rnd.sample(users, k=min(3, len(users)))}
    plain = _published(rows, running=running if jobs_known else None)
    full = _with_outlooks(plain)
    now = plain["taken_at"] + later
    assert ftf.can_use_published(full) and not ftf.can_use_published(plain)
    for user in sorted({k[1] for k in users}):
        own = {**full, "associations": [r for r in full["associations"] if r["user"] in (user, "")]}  # read_published(users=)
        assert ftf.forecast_data(own, user=user, now=now) == ftf.forecast_data(plain, user=user, now=now)


def test_a_horizon_of_its_own_is_cut_to_the_published_projection_and_says_so():
    rows = tree("""
        0 root - 1 0
        1 A - 2 0
        2 A a1 1 400
        2 A a2 1 100
        1 B - 1 0
        2 B b1 1 100
    """)
    full = _with_outlooks(_published(rows, running={("B", "b1"): [(None, 8.0)]}))
    own = {**full, "associations": [r for r in full["associations"] if r["user"] in ("a2", "")]}
    t = full["taken_at"]
    head = full["fair_tree_outlook"]
    end = t + head["first_pass_in_s"] + (head["points"] - 1) * head["period_s"] * head["step"]
    short = ftf.forecast_data(own, user="a2", now=t + 60, horizon_s=1800.0)
    assert short["associations"][0]["projection"] and all(q["in_s"] <= 1800 + 300 * head["step"]
                                                          for q in short["associations"][0]["projection"])
    assert not short["warnings"]
    whole = ftf.forecast_data(full, user="a2", now=t + 60)
    assert whole["associations"][0]["rank_changes"], whole  # b1's job passes a2 within the day
    assert short["associations"][0]["projection"] == whole["associations"][0]["projection"][:len(short["associations"][0]["projection"])]
    long = ftf.forecast_data(own, user="a2", now=t + 60, horizon_s=30 * 86400.0)
    assert any("the agent's projection reaches" in w for w in long["warnings"]), long["warnings"]
    assert long["associations"][0]["projection"][-1]["in_s"] == end - (t + 60)
    # ranked from every row (no outlook published): the month is projected
    plain = {k: v for k, v in full.items() if k != "fair_tree_outlook"}
    month = ftf.forecast_data(plain, user="a2", now=t + 60, horizon_s=30 * 86400.0)
    assert month["associations"][0]["projection"][-1]["in_s"] > 29 * 86400 and not month["warnings"]


def test_the_published_file_of_a_real_fair_tree_recording(tmp_path):
    """The testbed's Fair Tree sample, collected and published as the agent does: every user's
    forecast from its own rows equals the forecast from every row."""
    db, out = tmp_path / "h.db", tmp_path / "p.json"
    fsc = [sys.executable, "-m", "fscontrol"]
    for argv in (["collect", "--source", str(SAMPLE), "--db", str(db)], ["publish", "--db", str(db), "--out", str(out)]):
        subprocess.run(fsc + argv, check=True, capture_output=True, cwd=ROOT)
    whole, _ = pub.read_published(out)
    assert whole["fair_tree_outlook"]["n_users"] == sum(1 for r in whole["associations"] if r["user"])
    plain = {k: v for k, v in whole.items() if k != "fair_tree_outlook"}
    for user in sorted({r["user"] for r in whole["associations"] if r["user"]}):
        mine, _ = pub.read_published(out, users={user})
        assert len(mine["associations"]) < len(whole["associations"])
        now = whole["taken_at"] + 60
        assert ftf.forecast_data(mine, user=user, now=now, stale_ok=True) == ftf.forecast_data(plain, user=user, now=now,
                                                                                            stale_ok=True)


def test_the_index_on_a_flat_account_of_many_users_is_linear_enough():
    """A flat account of 3,000 users: every user's outlook at once, compared with the scans on a
    sample of users (the scans alone are quadratic: that is why they were replaced)."""
    rnd = random.Random(7)
    lines = ["0 root - 1 0", "1 big - 1 0"] + [f"2 big u{i} {rnd.choice([1, 2])} {rnd.choice([0, 10, rnd.randint(0, 10**6)])}"
                                                for i in range(3000)]
    rows = tree("\n".join(lines))
    ft = compute_fair_tree(rows)
    out = fo.outlooks(ft, rows, {}, [a.key for a in ft.assocs if a.is_user], fo.Plan(10.0, 60.0, 1, 3), 600.0)
    for k in rnd.sample(sorted(out), 25):
        o = out[k]
        assert list(o.path) == ref.explain(ft, k)
        assert (o.above, o.below) == ref.neighbours(ft, k)
        assert o.budget == ref.budget(ft, k)
        assert o.changes == ()  # nothing runs: nobody moves


# ---------------------------------------------------------------------------- an outside tester's cases
FSC = [sys.executable, "-m", "fscontrol"]


@pytest.fixture(scope="module")
def ft_published(tmp_path_factory):
    """The Fair Tree recording collected and published as the agent does (with outlooks)."""
    d = tmp_path_factory.mktemp("ftpub")
    db, out = d / "h.db", d / "p.json"
    for argv in (["collect", "--source", str(SAMPLE), "--db", str(db)], ["publish", "--db", str(db), "--out", str(out)]):
        subprocess.run(FSC + argv, check=True, capture_output=True, cwd=ROOT)
    return out


def _forecast(path, *extra):
    return subprocess.run(FSC + ["forecast", "--published", str(path), "--source", "published", "-u", "carol",
                                 "--stale-ok", *extra], capture_output=True, text=True, cwd=ROOT, timeout=120)


def _rewrite(src, dst, edit) -> None:
    data, _ = pub.read_published(src)
    edit(data)
    pub.write_published(data, dst)


def test_a_damaged_outlook_is_one_line_and_a_missing_one_is_ranked_not_dropped(ft_published, tmp_path):
    def damage(d):
        next(r for r in d["associations"] if r["user"] == "carol")["ft"] = {"rank": "x"}

    _rewrite(ft_published, tmp_path / "bad.json", damage)
    p = _forecast(tmp_path / "bad.json")
    assert p.returncode == 6 and "outlook is damaged" in p.stderr and "Traceback" not in p.stderr, p.stderr
    whole = _forecast(ft_published, "--json")
    accounts = [a["account"] for a in json.loads(whole.stdout)["associations"]]

    def drop(d):
        next(r for r in d["associations"] if r["user"] == "carol").pop("ft")

    _rewrite(ft_published, tmp_path / "partial.json", drop)
    p = _forecast(tmp_path / "partial.json", "--json")
    assert p.returncode == 0, p.stderr
    assert [a["account"] for a in json.loads(p.stdout)["associations"]] == accounts  # ranked itself, none dropped


def test_a_big_tree_without_outlooks_is_refused_not_ranked_on_a_login_node(ft_published, tmp_path):
    def older(d):
        d.pop("fair_tree_outlook")
        for r in d["associations"]:
            r.pop("ft", None)
        d["padding"] = "x" * (ftf.MAX_WHOLE_TREE_BYTES + 1)  # the size of ~10,000 associations' rows

    _rewrite(ft_published, tmp_path / "old.json", older)
    p = _forecast(tmp_path / "old.json")
    assert p.returncode == 6 and "has no Fair Tree outlook" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_files_that_are_no_snapshot_are_one_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": ' + "[" * 100_000 + "]" * 100_000 + "}")
    huge = tmp_path / "huge.json"
    with huge.open("wb") as fh:  # a 70 MB line, sparse: no newline anywhere
        fh.truncate(70 << 20)
    for path in (deep, huge, Path("/dev/zero")):
        p = _forecast(path)
        assert p.returncode == 6 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, (path, p.stderr)


def test_the_web_api_answers_under_fair_tree_with_its_planner_fields(ft_published):
    from wsgiref.util import setup_testing_defaults

    from fscontrol.web.app import make_app

    app = make_app(published=str(ft_published), source=str(SAMPLE), identity="remote_user")
    env = {"PATH_INFO": "/api/forecast", "QUERY_STRING": "cpus=8&length=2&unit=h&runs=2&gap=30&target=0.6",
           "REQUEST_METHOD": "GET", "REMOTE_USER": "carol"}
    setup_testing_defaults(env)
    got = {}
    body = b"".join(app(env, lambda status, headers: got.update(status=status))).decode()
    assert got["status"] == "200 OK", body
    assert json.loads(body)["forecast"]["priority_mode"] == "fair_tree"
