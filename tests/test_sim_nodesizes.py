"""Nodes of different sizes in the replay (issue #32 item 1), on the testbed's own runs:
tests/data/captures/nodesizes/VERSION/ holds what tests/test_integration_nodesizes.py captured on
each Slurm (tbnode1 of 24 CPUs, tbnode2 of 8). slurmctld put alice's job A (20 CPUs) on tbnode1,
dave's D (24) there when A ended, and backfilled alice's B1 (6) on tbnode2 beside D's plan, before
A's end; B2 (6) waited for B1. Independent of the model: the capture's own starts and NodeList
(sacct's), and its nodes.txt."""

from __future__ import annotations

from pathlib import Path

import pytest


from capture_rows import real_rows

DATA = Path(__file__).parent / "data" / "captures" / "nodesizes"
VERSIONS = sorted(p.name for p in DATA.iterdir() if p.is_dir())


def test_every_version_was_recorded():
    assert VERSIONS == ["22.05", "24.11", "26.05"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_replay_starts_and_places_each_job_as_slurmctld(version):
    from fscontrol.sim.command import SimulateOptions, simulate

    cap = DATA / version
    ids, start, where = real_rows(cap)  # (A, D, B1, B2)
    a, d, b1, b2 = ids
    assert where == {a: "tbnode1", d: "tbnode1", b1: "tbnode2", b2: "tbnode2"}  # slurmctld's nodes
    assert start[b1] < start[a] + 50 <= start[d] and start[b2] >= start[b1] + 40  # B1 backfilled beside D's plan
    (r,) = simulate(SimulateOptions(str(cap), policy=["mf-classic"], progress=False)).results
    sim = {j.job_id: s for j, s in zip(r.workload.jobs, r.start)}
    assert max(abs(sim[j] - start[j]) for j in ids) <= 3, ({j: sim[j] - start[a] for j in ids},
                                                            {j: start[j] - start[a] for j in ids})
    names = ["tbnode1", "tbnode2"]  # (nodes.txt's order, the engine's nodes)
    got = {j.job_id: ",".join(names[i] for i, x in enumerate(n) if x) for j, n in zip(r.workload.jobs, r.mf.nodes)}
    assert got == where
    assert r.workload.meta["machine"]["node_cpus_each"] == [24, 8]


def test_the_json_says_the_run_placed_jobs_on_nodes_and_refuses_a_host_list(tmp_path):
    """`simulate --json`: "scheduler" is slurmctld's scheduler as the run applied it (the node
    model, each node its size); a node of no CPUs holds no job and is left out (not pooling the
    rest); a nodes.txt line naming a host list (not sinfo -N's) is refused in one line."""
    import json
    import shutil

    from typer.testing import CliRunner

    from fscontrol.cli.app import app

    r = CliRunner().invoke(app, ["simulate", str(DATA / "22.05"), "--json"])
    assert r.exit_code == 0, r.output
    (res,) = json.loads(r.output)
    assert res["scheduler"]["node_model"] == "22.05" and res["scheduler"]["node_cpus"] == 24
    assert res["policy"]["slurm_sched"]["node_model"] == ""  # (the policy as given)
    cap = tmp_path / "cap"
    shutil.copytree(DATA / "22.05", cap)
    text = (cap / "nodes.txt").read_text()
    (cap / "nodes.txt").write_text(text + "tbnode0|normal*|0|idle\n")
    r = CliRunner().invoke(app, ["simulate", str(cap)])
    assert "nodes: 2 (1 of 24, 1 of 8 CPUs), each job placed on them" in r.output, r.output
    (cap / "nodes.txt").write_text("tbnode[1-2]|normal*|24|idle\n")
    r = CliRunner().invoke(app, ["simulate", str(cap)])
    assert r.exit_code != 0 and "is a host list" in r.output and "Traceback" not in r.output, r.output
