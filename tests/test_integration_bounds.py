"""The forecast's caps on the real testbed (issue 28, item 5): the agent publishes the cluster's
size from `sinfo -h -o %C` with the config's [forecast] caps, and a plain user's plan beyond them
is one line and exit 2; when the snapshot does not carry the size (published without a live
source), the user's own `sinfo` gives it."""

from __future__ import annotations

import json
import re

import pytest

from fscontrol.agent import config, pipeline, publishing
from fscontrol.store import history as store
from test_integration_forecast import _forecast_as, _public_dir

pytestmark = pytest.mark.slurm


def _cpus(slurm) -> int:
    """The testbed's CPUs, another way: the CPUTot of every node in `scontrol show node`."""
    out = slurm.scontrol("show", "node")
    out = out if isinstance(out, str) else out.stdout
    return sum(int(x) for x in re.findall(r"CPUTot=(\d+)", out))


def test_the_cluster_size_caps_a_plan(slurm, tmp_path):
    total = _cpus(slurm)
    assert total > 0
    cfg = config.from_dict({"forecast": {"max_horizon": "2d", "max_plan_steps": 4}})
    db = store.open_db(tmp_path / "h.db")
    pipeline.collect(slurm.source(), db)
    out = _public_dir(slurm) / "tbcluster.json"
    published, data = publishing.publish_latest(db, cfg, "tbcluster", out=out, source=slurm.source())
    assert data["limits"] == {"cluster_cpus": total, "max_cpus": total, "max_horizon_s": 2 * 86400.0, "max_plan_steps": 4}
    ok = _forecast_as(slurm, "carol", published, "--account", "chem", "--plan", f"{total}cpus:1h", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["plan"][0]["cores"] == total
    for plan, words in ((f"{total + 1}cpus:1h", f"more than the cluster's size, {total:,} CPUs"),
                        ("1cpus:3d", "at most 2 days are forecast"),
                        ("1cpus:1h," * 5, "5 steps: at most 4")):
        r = _forecast_as(slurm, "carol", published, "--account", "chem", "--plan", plan)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr
    # published without a live source (`fscontrol publish` from cron): the user's own sinfo
    publishing.publish_latest(db, cfg, "tbcluster", out=out)
    assert json.loads(out.read_text())["limits"]["cluster_cpus"] is None
    r = _forecast_as(slurm, "carol", out, "--account", "chem", "--plan", f"{total + 1}cpus:1h")
    assert r.returncode == 2 and f"more than the cluster's size, {total:,} CPUs" in r.stderr, r.stderr
