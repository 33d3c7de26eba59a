"""The gate turned off (or its section removed): the agent's ledgered holds are released at the next
tick, on a recorded sample (no Slurm). The testbed run is
tests/test_integration_gate.py::test_turning_the_gate_off_releases_the_agents_holds_at_the_next_tick.

The review of #29 (item 5): agent_tick decided the release only `if name`; a tick with no -M on a
config naming no cluster (its [clusters.X] removed) had no name: the holds stayed, nothing said."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fscontrol.act.gate import AGENT_HOLD_REASON, HOLD_MARK, LedgerEntry
from fscontrol.agent import config, pipeline
from fscontrol.slurm.source import RecordedSlurm
from fscontrol.store import history as store
from fscontrol.store import ledger as store_ledger

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "testbed-2411-classic"


def _held_sample(tmp_path: Path) -> tuple[RecordedSlurm, str]:
    """The sample with its pending job 14 held by the agent (its mark, JobHeldAdmin, priority 0)."""
    folder = tmp_path / "sample"
    shutil.copytree(SAMPLE, folder)
    lines = (folder / "squeue.txt").read_text().splitlines(keepends=True)
    for i, ln in enumerate(lines):
        f = ln.rstrip("\n").split("|")
        if f[0] == "14":
            f[5], f[8], f[10], f[-1] = "PENDING", "0", AGENT_HOLD_REASON, HOLD_MARK
            lines[i] = "|".join(f) + "\n"
            break
    else:
        raise AssertionError("the sample has no job 14")
    (folder / "squeue.txt").write_text("".join(lines))
    return RecordedSlurm(folder), "14"


@pytest.mark.parametrize("named", [True, False], ids=["-M tbcluster", "no -M, no [clusters] table"])
def test_a_tick_releases_the_agents_holds_once_the_gate_is_off_named_or_not(tmp_path, named):
    source, job = _held_sample(tmp_path)
    assert source.cluster == "tbcluster"
    if not named:
        source.cluster = None  # a live tick without -M: the cluster is the one the snapshot names
    db = store.open_db(tmp_path / "h.db")
    with store.transaction(db):
        store_ledger.write_ledger(db, "tbcluster", {job: LedgerEntry("hold", 0, None, "held")}, {job: "the gate's hold"},
                                  1795452000.0)
    cfg = config.from_dict({})  # the [clusters.tbcluster] table (and its gate) removed
    res = pipeline.agent_tick(source, db, cfg, apply=False)
    assert res.cluster == "tbcluster"
    assert res.gate is not None, "the gate-off release did not run"
    assert res.gate.note == ("the gate is off ([clusters.tbcluster.gate] enabled = false): 1 agent hold(s) to release; "
                             "nothing done (dry run: --apply or agent.apply = true)")
    assert [(a.kind, a.job_id) for a in res.gate.actions] == [("release", job), ("unmark", job)]
