"""The submissions that keep coming, as the agent's history reads them (store_loaders.window_inflow,
decay.arrival_inflow, decay.left_ratio) and publishes them (publish.inflow_aggregates): by hand."""

from __future__ import annotations

import json

import pytest

from fscontrol.export import publish as pub
from fscontrol.model.decay import arrival_inflow, left_ratio
from fscontrol.store import history as store
from fscontrol.store import loaders as store_loaders


def test_arrival_inflow_counts_the_work_of_jobs_that_started_in_the_window_by_hand():
    # snapshots at 0, 10, ..., 100 (tick 10): a job running since before (not counted), one that
    # started and ended (seen 20..50: ran 15..55, 40 s x 2 CPUs), one still running (seen 70..100,
    # 30 s to its limit, typical end q = 0.5: runs 65..115, 50 s x 4 CPUs)
    visits = [("a", "x", 8.0, 0.0, 100.0, 500.0), ("a", "x", 2.0, 20.0, 50.0, 100.0), ("a", "y", 4.0, 70.0, 100.0, 30.0)]
    rates, var = arrival_inflow(visits, 0.0, 100.0, 10.0, q=0.5)
    assert rates == {("a", "x"): pytest.approx(2 * 40 / 100), ("a", "y"): pytest.approx(4 * 50 / 100)}
    assert var == {("a", "x"): pytest.approx((2 * 40 / 100) ** 2), ("a", "y"): pytest.approx((4 * 50 / 100) ** 2)}
    # no typical end known: to its limit; no limit: it counts only to now
    assert arrival_inflow(visits[2:], 0.0, 100.0, 10.0)[0][("a", "y")] == pytest.approx(4 * (35 + 30) / 100)
    assert arrival_inflow([("a", "y", 4.0, 70.0, 100.0, None)], 0.0, 100.0, 10.0)[0][("a", "y")] == pytest.approx(4 * 35 / 100)


def test_left_ratio_is_the_share_of_the_time_to_the_limit_jobs_still_ran():
    assert left_ratio([(100.0, 50.0), (300.0, 150.0)]) == pytest.approx(0.5)
    assert left_ratio([(100.0, 200.0)]) == 1.0  # clipped at the limit
    assert left_ratio([]) is None


def _db_with_jobs(tmp_path):
    db = store.open_db(tmp_path / "h.db")
    for i in range(11):  # snapshots every 15 s
        db.execute("INSERT INTO snapshots (id, cluster, taken_at) VALUES (?, 'c', ?)", [i + 1, 1000.0 + 15 * i])
    rows = []
    for i in range(11):
        t = 1000.0 + 15 * i
        rows.append((i + 1, "1", "flat", "bob", 4.0, 5000.0))  # runs all along: started before the window
        if 2 <= i <= 5:  # started between snapshots 1 and 2, ended between 5 and 6; its limit at 1300
            rows.append((i + 1, "2", "flat", "carol", 2.0, 1300.0))
        if i >= 8:  # started between 7 and 8, still running; limit at 1400
            rows.append((i + 1, "3", "phys", "dave", 1.0, 1400.0))
    db.conn.executemany("INSERT INTO running_jobs (snapshot_id, job_id, account, user, rate, ends_at) VALUES (?,?,?,?,?,?)", rows)
    db.conn.commit()
    return db


def test_window_inflow_reads_the_history_by_hand(tmp_path):
    db = _db_with_jobs(tmp_path)
    n, span, rates, var, q, ended = store_loaders.window_inflow(db, "c", 0.0, 2000.0)
    assert (n, span, ended) == (11, 150.0, 1)
    # job 2 ran 1022.5 .. 1082.5; seen at 1030..1075 with its limit at 1300: still ran 52.5..7.5 of 270..225
    t_seen = [1030.0 + 15 * k for k in range(4)]
    assert q == pytest.approx(sum(1082.5 - t for t in t_seen) / sum(1300.0 - t for t in t_seen))
    assert rates[("flat", "carol")] == pytest.approx(2.0 * 60.0 / 150.0)
    # job 3: from 1112.5, runs on q x (1400 - 1150) after the last snapshot
    assert rates[("phys", "dave")] == pytest.approx(1.0 * (1150 - 1112.5 + q * 250) / 150.0)
    assert ("flat", "bob") not in rates  # running before the window: its work came earlier
    assert var[("flat", "carol")] == pytest.approx(rates[("flat", "carol")] ** 2)
    assert store_loaders.window_inflow(db, "c", 1100.0, 1120.0)[0] == 0  # fewer than 3 snapshots: nothing


def test_published_inflow_is_keyed_like_the_running_jobs_and_private_where_they_are():
    from test_forecast_busy_offline import Sim, _snapshot  # a small shared tree

    sim = Sim(1, 8.0, 0.0)
    for k in range(1, 6):
        sim.pass_at(k * 60.0)
    snap = _snapshot(sim, 300.0, dict(sim.raw))
    rates = {("flat", "bob"): 2.0, ("flat", "carol"): 1.0, ("other", "zed"): 4.0}
    var = {k: v * v for k, v in rates.items()}
    inflow = pub.build_published(snap, inflow=(20, 285.0, rates, var, 0.6, 9))["inflow"]
    assert inflow["cluster"] == 7.0 and inflow["cluster_var"] == 21.0
    assert inflow["accounts"]["flat"] == 3.0 and inflow["accounts_var"]["flat"] == 5.0  # privacy.run_key
    assert inflow["users"]["flat/bob"] == 2.0 and inflow["users_published"]
    assert (inflow["left_ratio"], inflow["left_ratio_jobs"], inflow["snapshots"]) == (0.6, 9, 20)
    # where PrivateData hides names or jobs: the cluster's figures only, as for the running jobs
    from fscontrol.snaprecords import SlurmConfig

    c = snap.config
    for flag in ("jobs", "usage", "users", "accounts", "all"):
        private = SlurmConfig(**{f: getattr(c, f) for f in c.__slots__ if f != "private_data"}, private_data=(flag,))
        snap2 = type(snap)(id=1, cluster=snap.cluster, taken_at=snap.taken_at, config=private, shares=snap.shares,
                           usage_factors={}, source="sim", running=snap.running)
        data = pub.build_published(snap2, inflow=(20, 285.0, rates, var, 0.6, 9))
        hidden = data["inflow"]
        assert not hidden["users_published"] and hidden["cluster"] == 7.0
        assert hidden["accounts"] == hidden["users"] == hidden["accounts_var"] == hidden["users_var"] == {}
        assert not any(name in json.dumps(hidden) for name in ("bob", "carol", "zed", "flat", "other"))
        assert data["running"]["accounts"] == {}  # the same policy as the running jobs'
