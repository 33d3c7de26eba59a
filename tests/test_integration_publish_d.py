"""Against the real testbed (found there by an outside tester on 22.05): right after a tick applies
a new d, the file it publishes carries that d, the one slurmctld (sprio, `fscontrol why`) uses,
not the d its snapshot read at the tick's start; `control off --apply` publishes the d it put
back and that the agent no longer acts."""

from __future__ import annotations

import json

import pytest

from fscontrol.agent import config
from fscontrol.agent import pipeline
from fscontrol.store import history as store
from fscontrol.store import ledger

pytestmark = pytest.mark.slurm


def test_the_published_d_is_the_one_the_tick_left_in_slurmctld(slurm, tmp_path):
    slurm.cancel_all()
    slurm.reset_usage()
    slurm.scontrol("reconfigure")
    slurm.submit("bob", "flat", 8, 600)
    slurm.wait_for_pass()  # some real usage: the controller wants a d > 1
    public = tmp_path / "public"
    cfg = config.from_dict({"agent": {"apply": True, "publish_dir": str(public)},
                            "clusters": {"tbcluster": {"target_core_hours": 1.0, "method": "damping"}}})
    db = store.open_db(tmp_path / "h.db")

    def d_in_slurm() -> int:
        line = next(ln for ln in slurm.scontrol("show", "config").splitlines() if ln.startswith("FairShareDampeningFactor"))
        return int(line.split("=")[1])

    try:
        assert d_in_slurm() == 1
        tick = pipeline.agent_tick(slurm.source(), db, cfg, apply=True)
        assert tick.collected.snapshot.config.damping_factor == 1  # what the tick read at its start
        d_set = tick.control.verified_damping
        assert d_set is not None and d_set > 1 and d_in_slurm() == d_set
        data = json.loads((public / "tbcluster.json").read_text())
        assert data["config"]["damping_factor"] == d_set
        assert data["control"] == {"applying": True, "off": False}
        off = pipeline.run_tick(slurm.source(), db, cfg, apply=True,
                                stages=pipeline.Stages(off="control off", publish=True))
        assert [a.status for a in off.control.actions if a.kind == "set_damping"] == ["ok"]
        assert d_in_slurm() == 1
        data = json.loads((public / "tbcluster.json").read_text())
        assert data["config"]["damping_factor"] == 1
        assert data["control"] == {"applying": False, "off": True}
    finally:
        ledger.set_state(db, "tbcluster", "acting_off", None, 0.0)
        slurm.cancel_all()
        slurm.scontrol("reconfigure")
