"""The Fair Tree forecast: what moves a rank, checked by re-ranking the tree (fairtree), and the
recorded Fair Tree sample, where fscontrol's F must equal sshare's and sprio's (a real Slurm)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fscontrol.forecast import fairtree as ftf
from fscontrol.model import ftoutlook as fo
from fscontrol.agent import pipeline, publishing
from fscontrol.report import status as rstatus
from fscontrol.store import history as store
from fscontrol.model.fairtree import compute_fair_tree
from fscontrol.slurm.source import RecordedSlurm
from test_fairtree import tree

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "testbed-fairtree"

ROWS = tree("""
    0 root - 1 0
    1 A - 2 0
    2 A a1 1 400
    2 A a2 1 100
    1 B - 1 0
    2 B b1 1 100
    2 B b2 2 30
""")


def _add(rows, key, x):
    """`x` more usage on association `key` and every ancestor."""
    parent = {r.key: ((r.account, "") if r.user else (r.parent, "")) for r in rows}
    path, k = set(), key
    while k[0]:
        path.add(k)
        if k == ("root", ""):
            break
        k = parent[k]
    return [r._replace(raw_usage=r.raw_usage + x) if r.key in path else r for r in rows]


def _rank(rows, key):
    return compute_fair_tree(rows).by_key()[key].rank


def test_next_above_and_the_usage_that_swaps_them():
    ft = compute_fair_tree(ROWS)
    # top: A 2/3 / (500/630) = 0.84, B 1/3 / (130/630) = 1.62: B's users first
    assert ft.ranking[:2] == (("B", "b2"), ("B", "b1"))
    above, below = fo.TreeIndex(ft).neighbours(("A", "a2"))
    assert above.key == ("B", "b1") and above.level_of == "root" and (above.mine, above.theirs) == ("A", "B")
    # the closed form, checked by re-ranking: a bit less leaves a2 below b1, a bit more puts it above
    x = above.usage
    assert x == pytest.approx((1 / 3) * 500 / (2 / 3) - 130)
    assert _rank(_add(ROWS, ("B", "b1"), x * 0.99), ("A", "a2")) < _rank(ROWS, ("B", "b1"))
    moved = _add(ROWS, ("B", "b1"), x * 1.01)
    assert _rank(moved, ("A", "a2")) > _rank(moved, ("B", "b1"))
    assert below.key == ("A", "a1") and below.level_of == "A"


def test_budget_is_the_first_usage_that_lets_someone_below_pass():
    ft = compute_fair_tree(ROWS)
    y = fo.TreeIndex(ft).budget(("B", "b2"))
    # b2 (2/3 / (30/130) = 2.9) vs b1 (1/3 / (100/130) = 0.43) in B: b1 passes when b2 reaches 200;
    # at the top, B (1.62) vs A (0.84): A passes B when B reaches 250 (+120): the smaller wins
    assert y == pytest.approx(min((2 / 3) * 100 / (1 / 3) - 30, (1 / 3) * 500 / (2 / 3) - 130))
    before = {k: _rank(ROWS, k) for k in [("B", "b2")]}
    assert _rank(_add(ROWS, ("B", "b2"), y * 0.99), ("B", "b2")) == before[("B", "b2")]
    assert _rank(_add(ROWS, ("B", "b2"), y * 1.01), ("B", "b2")) < before[("B", "b2")]
    assert fo.TreeIndex(ft).budget(("A", "a1")) is None  # last: nobody below


def test_decay_alone_never_moves_a_rank_and_running_jobs_do():
    idle = fo.project_ranks(ROWS, {}, [("A", "a2")], passes=30, period_s=60, half_life_s=300, first_pass_in_s=60)
    assert {p.rank for p in idle[("A", "a2")]} == {_rank(ROWS, ("A", "a2"))}
    # b1 runs 0.9 units per second: 54 a pass; A gets ahead at the top once B passes 250
    busy = fo.project_ranks(ROWS, {("B", "b1"): [(None, 0.9)]}, [("A", "a2")], passes=30, period_s=60,
                             half_life_s=10**9, first_pass_in_s=60)
    ranks = [p.rank for p in busy[("A", "a2")]]
    assert ranks[0] == _rank(ROWS, ("A", "a2"))
    assert max(ranks) == 4  # above both of B's users
    first = next(p for p in busy[("A", "a2")] if p.rank != ranks[0])
    # each pass charges the minute since the pass before (the snapshot's usage is as of the pass
    # one period before the first): B = 184, 238, 292 after the passes at 60, 120, 180 s
    assert first.in_s == 180.0


def test_recorded_fair_tree_sample_matches_sshare_and_sprio(tmp_path):
    """samples/testbed-fairtree: recorded from the testbed running Fair Tree (meta.json). Every
    user association's F equals sshare's FairShare column, and each probe's equals sprio's."""
    snap = pipeline.read_snapshot(RecordedSlurm(SAMPLE))
    assert snap.config.mode == "fair_tree"
    ft = compute_fair_tree(snap.shares)
    sshare = {r.key: r.fairshare for r in snap.shares}
    users = [a for a in ft.assocs if a.is_user]
    assert all(abs(a.fairshare - sshare[a.key]) <= 5e-6 for a in users)
    assert snap.prio and len(snap.prio) >= 7
    db = store.open_db(tmp_path / "h.db")
    sid = pipeline.collect(RecordedSlurm(SAMPLE), db).snapshot_id
    stored = store.load_snapshot(db, sid)
    assert stored.prio_fairshare and all(abs(ft.by_key()[k].fairshare - f) <= 5e-6 for k, f in stored.prio_fairshare.items())
    data = rstatus.status_data(stored)
    golden = ROOT / "tests" / "golden" / "status_fairtree.txt"
    text = rstatus.format_status(data) + "\n"
    if not golden.exists():  # first run writes it; the checks above are its independent check
        golden.write_text(text)
    assert text == golden.read_text()


def test_forecast_command_on_the_sample(tmp_path):
    db = tmp_path / "h.db"
    pub = tmp_path / "pub.json"
    fsc = [sys.executable, "-m", "fscontrol"]
    for argv in (["collect", "--source", str(SAMPLE), "--db", str(db)], ["publish", "--db", str(db), "--out", str(pub)]):
        subprocess.run(fsc + argv, check=True, capture_output=True, timeout=120, cwd=ROOT)
    p = subprocess.run(fsc + ["forecast", "--published", str(pub), "--source", str(SAMPLE), "-u", "dave", "--json"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["priority_mode"] == "fair_tree"
    (a,) = data["associations"]
    assert (a["account"], a["rank"], a["of"]) == ("flat", 3, 9)
    assert a["fairshare"] == pytest.approx(a["fairshare_sshare"], abs=5e-6)
    assert [s["name"] for s in a["path"]] == ["flat", "dave"]
    assert a["above"]["user"] == "carol" and a["below"]["user"] == "alice"
    text = subprocess.run(fsc + ["forecast", "--published", str(pub), "--source", str(SAMPLE), "-u", "dave"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT).stdout
    assert "rank 3 of 9" in text and "idle time alone changes nothing" in text
    # the place in words (issue 28: "rank 1 of 10" read as first); --json keeps the numbers, adds the words
    assert (a["place"], a["place_text"]) == (7, "7th of 9")
    assert "  7th of 9 of the user associations: Slurm's rank 3 of 9 (rank 9 is the first)" in text
    assert "next above: carol@flat (6th of 9)" in text and "next below: alice@flat, 8th of 9" in text
    bob = subprocess.run(fsc + ["forecast", "--published", str(pub), "--source", str(SAMPLE), "-u", "bob", "-A", "flat",
                                "--json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    (b,) = json.loads(bob.stdout)["associations"]
    assert (b["rank"], b["place_text"]) == (1, "9th of 9 (lowest)")  # the worst place, F = 1/9
    bad = subprocess.run(fsc + ["forecast", "--published", str(pub), "--source", str(SAMPLE), "-u", "dave",
                                "--run", "8cpus:1h"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert bad.returncode == 2 and "Fair Tree" in bad.stderr and "Traceback" not in bad.stderr


def test_metrics_under_fair_tree_carry_rank_and_level_fs(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    from fscontrol.agent import config

    db = store.open_db(tmp_path / "h.db")
    pipeline.collect(RecordedSlurm(SAMPLE), db)
    text = publishing.metrics_text(db, config.from_dict({}))
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    ft = compute_fair_tree(store.load_snapshot(db).shares).by_key()
    f = {(s.labels["account"], s.labels["user"]): s.value for s in fams["fscontrol_user_fairshare"].samples}
    rank = {(s.labels["account"], s.labels["user"]): s.value for s in fams["fscontrol_user_fairtree_rank"].samples}
    assert f[("flat", "dave")] == pytest.approx(ft[("flat", "dave")].fairshare) == pytest.approx(3 / 9)
    assert rank[("flat", "dave")] == 3
    lfs = {(s.labels["account"], s.labels["user"]): s.value for s in fams["fscontrol_user_level_fs"].samples}
    assert lfs[("flat", "carol")] == float("inf") and lfs[("flat", "dave")] == pytest.approx(ft[("flat", "dave")].level_fs)


@pytest.mark.parametrize("name", ["testbed-fairtree", "testbed-fairtree-tie", "testbed-2411-fairtree", "testbed-2411-classic",
                                  "testbed-2605-classic"])
def test_recordings_of_both_versions_match_slurm_own_factors(name, tmp_path):
    """The recordings of 22.05, 24.11 and 26.05 (samples/*/meta.json: command, version, note; 26.05's
    config.txt is `scontrol --json show config`): F for
    every probe job equals sprio's (and, under Fair Tree, every user association's sshare's),
    Fair Tree's F from the ranking walk, classic's from 2^(-UE/(S d)) at the d in force."""
    db = store.open_db(tmp_path / "h.db")
    sid = pipeline.collect(RecordedSlurm(ROOT / "samples" / name), db).snapshot_id
    snap = store.load_snapshot(db, sid)
    data = rstatus.status_data(snap)
    assert data["priority_mode"] == ("classic" if name.endswith("classic") else "fair_tree")
    rows = [r for r in data["table"] if r["fairshare_sprio"] is not None]
    assert len(rows) >= 7
    for r in rows:
        assert abs(r["fairshare"] - r["fairshare_sprio"]) <= 5e-6, r
    if data["priority_mode"] == "fair_tree":
        assert all(abs(r["fairshare"] - r["fairshare_sshare"]) <= 5e-6 for r in data["table"])


TIE = ROOT / "samples" / "testbed-fairtree-tie"


def test_an_exact_tie_that_truncated_usage_hides_is_read_off_sshare_levelfs(tmp_path):
    """samples/testbed-fairtree-tie (22.05, meta.json): dave@genomics (16 CPUs, 2 shares) and the
    account lab (8 CPUs, 1 share) started in the same second, so slurmctld holds their LevelFS
    exactly equal (sshare prints 1.166667 for both) and ranks bob@lab with dave (rule 3 of Fair
    Tree's ties). sshare's RawUsage is truncated (3607 and 1803, not 2:1): recomputed from it
    alone, dave sorts ahead of lab by a hair and the tie is lost. sprio is the check."""
    db = store.open_db(tmp_path / "h.db")
    snap = store.load_snapshot(db, pipeline.collect(RecordedSlurm(TIE), db).snapshot_id)  # LevelFS kept in the history
    prio = snap.prio_fairshare
    assert len(prio) == 12
    rows = {r.key: r for r in snap.shares}
    assert rows[("genomics", "dave")].level_fs == rows[("lab", "")].level_fs == pytest.approx(1.166667)
    assert rows[("genomics", "dave")].raw_usage != 2 * rows[("lab", "")].raw_usage  # the truncation shows
    ft = compute_fair_tree(snap.shares).by_key()
    for k, f in prio.items():
        assert abs(ft[k].fairshare - f) <= 5e-6, (k, ft[k].fairshare, f)
    assert ft[("genomics", "dave")].rank == ft[("lab", "bob")].rank == 6 and ft[("lab", "alice")].rank == 4
    blind = compute_fair_tree([r._replace(level_fs=None) for r in snap.shares]).by_key()
    assert abs(blind[("genomics", "dave")].fairshare - prio[("genomics", "dave")]) > 0.1  # what #17 saw


def test_a_tie_stays_while_the_tied_keep_running_alike():
    """Projected: the tied pair keeps running 2:1 (as its shares), so slurmctld keeps them tied
    at every pass; the projection keeps the tie while the truncation's slack can explain it."""
    snap = pipeline.read_snapshot(RecordedSlurm(TIE))
    running = {("genomics", "dave"): [(None, 16.0)], ("lab", "alice"): [(None, 6.0)], ("lab", "bob"): [(None, 2.0)]}
    watch = [("genomics", "dave"), ("lab", "bob")]
    pts = fo.project_ranks(snap.shares, running, watch, passes=5, period_s=60, half_life_s=300, first_pass_in_s=30)
    dave, bob = ([p.rank for p in pts[k]] for k in watch)
    assert dave == bob  # tied at every pass (dave@bio, idle here, passes both: they move together)
    assert dave == [5] * 5
    # lab running faster than its share: the tie breaks at the first pass, dave ahead of lab
    faster = {**running, ("lab", "bob"): [(None, 6.0)]}
    pts = fo.project_ranks(snap.shares, faster, watch, passes=5, period_s=60, half_life_s=300, first_pass_in_s=30)
    assert all(d.rank > b.rank for d, b in zip(pts[watch[0]], pts[watch[1]]))


def test_a_tie_slurmctld_arithmetic_breaks_is_among_the_alternatives(tmp_path):
    """samples/testbed-2411-fairtree-tie (24.11.5, meta.json): the same mathematical tie, but
    slurmctld's long double held lab 1.2e-17 ahead of dave@genomics (its Priority debug log), so
    sprio ranks alice@lab above dave. sshare prints 1.166667 for both: fscontrol reports the pair as
    undecided and sprio's F is one of the ranks its resolutions give (tie, either order)."""
    folder = ROOT / "samples" / "testbed-2411-fairtree-tie"
    db = store.open_db(tmp_path / "h.db")
    snap = store.load_snapshot(db, pipeline.collect(RecordedSlurm(folder), db).snapshot_id)
    ft = compute_fair_tree(snap.shares)
    assert ft.undecided == ((("genomics", "dave"), ("lab", "")),)
    by = ft.by_key()
    off = {k for k, f in snap.prio_fairshare.items() if abs(by[k].fairshare - f) > 5e-6}
    assert off == {("genomics", "dave"), ("lab", "alice")}  # the tie is not what 24.11 held here
    for k, f in snap.prio_fairshare.items():
        ranks = ft.rank_choices.get(k, (by[k].rank,))
        assert any(abs(r / ft.n_users - f) <= 5e-6 for r in ranks), (k, ranks, f)
    assert ft.rank_choices[("genomics", "dave")] == (4, 6)
    # and the 22.05 recording, where slurmctld held the pair bit-equal: the tie is the rank sprio shows
    tie22 = compute_fair_tree(pipeline.read_snapshot(RecordedSlurm(TIE)).shares)
    assert tie22.by_key()[("genomics", "dave")].rank == 6 and 6 in tie22.rank_choices[("genomics", "dave")]
    data = rstatus.status_data(snap)
    assert any("cannot order" in w for w in data["warnings"])


def test_place_in_words_is_the_rank_counted_from_the_top(tmp_path):
    """Slurm's rank N is the first place and rank 1 the last (F = rank / N): the words count from
    the top, ties share a place. Independent of the code: the order of F, highest first."""
    from fscontrol.model.fairtree import ordinal, place_text

    assert [place_text(r, 10) for r in (10, 9, 8, 7, 1)] == [
        "1st of 10 (highest)", "2nd of 10", "3rd of 10", "4th of 10", "10th of 10 (lowest)"]
    assert [ordinal(k) for k in (11, 12, 13, 21, 22, 23, 101, 111, 1000)] == [
        "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th", "1,000th"]
    db = store.open_db(tmp_path / "h.db")
    data = rstatus.status_data(store.load_snapshot(db, pipeline.collect(RecordedSlurm(SAMPLE), db).snapshot_id))
    rows = [r for r in data["table"] if r.get("rank") is not None]
    by_f = sorted({r["fairshare"] for r in rows}, reverse=True)
    n = max(r["rank"] for r in rows)
    for r in rows:  # place = 1 + the number of users with a strictly higher F (rank N: F = 1)
        higher = sum(1 for x in rows if x["fairshare"] > r["fairshare"] + 1e-12)
        assert r["place_text"].startswith(ordinal(higher + 1) + f" of {n}"), r
    assert rows[-1]["place_text"] == f"{ordinal(n)} of {n} (lowest)" and by_f[-1] == rows[-1]["fairshare"]


def test_a_stale_snapshot_shows_past_rank_changes_as_passed():
    """Issue #28 (an outside tester): from a snapshot taken at t0 and shown at now, the whole-tree
    path showed a rank change that came at a pass between t0 and now as "in 0 min". It is said to
    have passed (how long ago), and the next change, if any, is the one still to come."""
    meta = json.loads((SAMPLE / "meta.json").read_text())
    taken = max(meta["sacct_window"])  # the recording's time (its squeue's, sshare's)

    def run(after: float) -> tuple[dict, str]:
        base = [sys.executable, "-m", "fscontrol", "forecast", "--source", str(SAMPLE), "-u", "alice", "-A", "flat",
                "--now", str(taken + after), "--stale-ok"]
        j = subprocess.run([*base, "--json"], capture_output=True, text=True, check=True, cwd=ROOT)
        t = subprocess.run(base, capture_output=True, text=True, check=True, cwd=ROOT)
        return json.loads(j.stdout)["associations"][0], t.stdout

    fresh, _ = run(0)
    first = fresh["rank_changes"][0]
    assert first["in_s"] > 0 and not first["passed"]
    for after in (first["in_s"] + 30, first["in_s"] + 400):
        a, text = run(after)
        assert all(c["passed"] == (c["in_s"] < 0) for c in a["rank_changes"] + a["projection"])
        assert any(c["passed"] for c in a["rank_changes"]), a["rank_changes"]
        assert "in 0 min" not in text, text
        assert "ago (already passed)" in text
        # the web page's summary of the same forecast
        from fscontrol.web.app import make_app

        app = make_app(source=str(SAMPLE), identity="remote_user", now=taken + after)
        out = []
        body = b"".join(app({"REQUEST_METHOD": "GET", "PATH_INFO": "/", "QUERY_STRING": "account=flat",
                             "REMOTE_USER": "alice"}, lambda status, headers: out.append(status))).decode()
        assert out == ["200 OK"] and "already passed" in body and "in 0 min" not in body
