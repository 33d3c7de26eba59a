"""`fscontrol history`: the agent's record over a period, built by real ticks on the recorded
series (control planned at every snapshot), as text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fscontrol.agent import config
from fscontrol.agent import pipeline
from fscontrol.store import history as store
from fscontrol.cli.app import app
from fscontrol.slurm.source import RecordedSlurm

SERIES = Path(__file__).resolve().parent.parent / "samples" / "testbed-series"


def test_history_of_the_series(tmp_path):
    db_path = tmp_path / "h.db"
    db = store.open_db(db_path)
    cfg = config.from_dict({"clusters": {"tbcluster": {"target_core_hours": 2, "method": "hybrid", "padding_mode": "steady"}}})
    folders = sorted(p for p in SERIES.iterdir() if p.is_dir())
    for f in folders:
        pipeline.control_tick(RecordedSlurm(f), db, cfg, apply=False)
    first = store.load_snapshot(db, cluster="tbcluster")  # the latest; the series spans 9 minutes
    db.close()
    since = str(int(first.taken_at - 3600))
    r = CliRunner().invoke(app, ["history", "--db", str(db_path), "--since", since, "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert len(data["decisions"]) == len(folders)
    assert all(d["method"] == "hybrid" and not d["applied"] for d in data["decisions"])
    # the halving the agent saw, S_ref d U, against u*: recomputed from the decision's own fields
    d0 = data["decisions"][0]
    assert abs(d0["error"] - (d0["halving_core_hours"] / 2 - 1)) < 1e-12
    assert {t["stage"] for t in data["ticks"]} == {"control"} and data["ticks"][0]["n"] == len(folders)
    text = CliRunner().invoke(app, ["history", "--db", str(db_path), "--since", since])
    assert text.exit_code == 0 and f"{len(folders)} decisions" in text.output and "d left in slurmctld" in text.output
    bad = CliRunner().invoke(app, ["history", "--db", str(db_path), "--since", "soon"])
    assert bad.exit_code == 2 and "--since" in bad.output
