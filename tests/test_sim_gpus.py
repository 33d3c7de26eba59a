"""GPUs in the replay (issue #32 item 1: "Nodes with their CPUs (and GRES where the site has
them)"), on the testbed's own runs: tests/data/captures/gpus/VERSION/ holds what
tests/test_integration_nodesizes.py captured on each Slurm (tbnode1 of 24 CPUs, tbnode2 of 8, 4
GPUs each). slurmctld ran alice's G1 and G2 (2 CPUs, 4 GPUs each) one on each node; dave's G3
(2 CPUs, 1 GPU) waited for a GPU about 60 s though 28 CPUs were free; his C1 (4 CPUs, no GPU)
behind it was backfilled. Independent of the model: the capture's own starts and NodeList
(sacct's), its nodes.txt (sinfo's %G) and the jobs' TRES."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fscontrol.sim import fidelity, history
from fscontrol.sim.gres import gres_count, job_gpus_per_node, tres_gpus

from capture_rows import real_rows

DATA = Path(__file__).parent / "data" / "captures" / "gpus"
VERSIONS = sorted(p.name for p in DATA.iterdir() if p.is_dir())


def test_every_version_was_recorded():
    assert VERSIONS == ["22.05", "24.11", "26.05"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_replay_waits_for_gpus_as_slurmctld(version, tmp_path):
    from fscontrol.sim.command import SimulateOptions, simulate

    cap = DATA / version
    ids, start, where = real_rows(cap)  # (G1, G2, G3, C1)
    g1, g2, g3, c1 = ids
    assert start[g3] >= start[g1] + 55 and start[c1] < start[g3]  # G3 waited for a GPU; C1 went round it
    assert {where[g1], where[g2]} == {"tbnode1", "tbnode2"}  # 4 GPUs each: one on each node
    w = history.read_history(cap, partitions=["normal"])
    assert w.meta["machine"]["node_gpus_each"] == [4, 4]
    assert [j.gpus for j in w.jobs] == [4, 4, 1, 0]
    (r,) = simulate(SimulateOptions(str(cap), policy=["mf-classic"], progress=False)).results
    sim = {j.job_id: s for j, s in zip(r.workload.jobs, r.start)}
    assert max(abs(sim[j] - start[j]) for j in (g1, g2, g3)) <= 4, ({j: sim[j] - start[g1] for j in ids},
                                                                     {j: start[j] - start[g1] for j in ids})
    assert abs(sim[c1] - start[c1]) <= 35  # (backfill: its agent's phase, which no capture holds)
    names = ["tbnode1", "tbnode2"]
    got = {j.job_id: ",".join(names[i] for i, x in enumerate(n) if x) for j, n in zip(r.workload.jobs, r.mf.nodes)}
    if version != "26.05":  # best fit: G1 on tbnode2 (8 CPUs), G2 on tbnode1; G3 on tbnode2
        assert got == where == {g1: "tbnode2", g2: "tbnode1", g3: "tbnode2", c1: "tbnode1"}
    else:  # 26.05 put G1 and G3 (2 tasks, GPUs) on tbnode1, the first node, not the best fit: not modelled
        assert where[g1] == where[g3] == "tbnode1" and got[g1] == got[g3] == "tbnode2"
    blind = tmp_path / "blind"  # nodes.txt without %G (a capture made before it): no GPUs, G3 at once
    shutil.copytree(cap, blind)
    text = (cap / "nodes.txt").read_text()
    (blind / "nodes.txt").write_text("".join(ln.rsplit("|", 1)[0] + "\n" for ln in text.splitlines() if ln.strip()))
    assert "node_gpus_each" not in history.read_history(blind, partitions=["normal"]).meta["machine"]
    assert fidelity.replay(blind)[g3] <= start[g1] + 10


def test_gres_texts_as_slurm_prints_them():
    """sinfo's %G and sacct's TRES, as each Slurm prints them (the man pages' forms)."""
    assert gres_count("gpu:4") == 4
    assert gres_count("(null)") == 0
    assert gres_count("gpu:a100:2(S:0-1),gpu:v100:2(S:0,1)") == 4
    assert gres_count("gpu:tesla:2,mps:200") == 2
    assert gres_count("mps:100") == 0
    with pytest.raises(ValueError):
        gres_count("gpu:a100:lots")
    assert tres_gpus("billing=2,cpu=2,gres/gpu=4,node=1") == 4
    assert tres_gpus("billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,node=1") == 2  # the untyped total wins
    assert tres_gpus("billing=2,cpu=2,gres/gpu:a100=1,gres/gpu:v100=2,node=1") == 3
    assert tres_gpus("billing=4,cpu=4,mem=1M,node=1") == 0
    assert job_gpus_per_node(4, 2) == 2 and job_gpus_per_node(3, 2) == 2 and job_gpus_per_node(2, 0) == 2
    assert job_gpus_per_node(0, 3) == 0


def test_simulate_names_the_gpus_and_says_when_it_cannot_model_them(tmp_path):
    """`fscontrol simulate CAPTURE` says the GPUs are modelled (the node model), and with
    --machine (a machine that is not the capture's nodes: the CPUs pooled) that they are not."""
    from typer.testing import CliRunner

    from fscontrol.cli.app import app

    out = CliRunner().invoke(app, ["simulate", str(DATA / "22.05")])
    assert out.exit_code == 0, out.output
    assert "GPUs: 2 nodes of 4; 3 jobs ask for GPUs, each placed and backfilled only on nodes" in out.output
    out = CliRunner().invoke(app, ["simulate", str(DATA / "22.05"), "--machine", "64"])
    assert out.exit_code == 0, out.output
    assert "note: 3 jobs ask for GPUs (2 nodes of 4), not modelled: the CPUs are pooled" in out.output


def _edited(tmp_path: Path, name: str, rows: list[str], nodes_txt: str | None = None) -> Path:
    """The 22.05 capture with jobs.txt's rows replaced (an outside tester's cases, 2026-11-29)."""
    d = tmp_path / name
    shutil.copytree(DATA / "22.05", d)
    head = (d / "jobs.txt").read_text().splitlines()[0]
    (d / "jobs.txt").write_text("\n".join([head, *rows]) + "\n")
    if nodes_txt is not None:
        (d / "nodes.txt").write_text(nodes_txt)
    return d


def test_a_gpu_job_of_two_nodes_holds_the_gpus_of_both(tmp_path):
    """`sbatch -N2 -n4 --gres=gpu:4` (sacct: ReqNodes 2, NNodes 2, gres/gpu=8) runs 60 s on both
    nodes' 4 GPUs: dave's 1-GPU job waits for its end (slurmctld: cons_tres gives a -N2 job two
    nodes, each with its 4 GPUs). Before, the replay put its 4 CPUs on one node and held 4 GPUs:
    dave's job started at once."""
    d = _edited(tmp_path, "multi", [
        "17|alice|flat|normal|normal|COMPLETED|1795944562|1795944562|1795944563|1795944623|60|2|4|4|2|2|"
        "billing=4,cpu=4,gres/gpu=8,node=2|tbnode[1-2]|billing=4,cpu=4,gres/gpu=8,mem=2M,node=2",
        "19|dave|flat|normal|normal|COMPLETED|1795944564|1795944564|1795944626|1795944646|20|2|2|2|1|1|"
        "billing=2,cpu=2,gres/gpu=1,node=1|tbnode2|billing=2,cpu=2,gres/gpu=1,mem=1M,node=1"])
    w = history.read_history(d, partitions=["normal"])
    assert [(j.gpus, j.gpu_nodes) for j in w.jobs] == [(4, 2), (1, 0)]
    from fscontrol.sim.command import SimulateOptions, simulate

    (r,) = simulate(SimulateOptions(str(d), policy=["mf-classic"], progress=False)).results
    assert [sum(1 for x in n if x) for n in r.mf.nodes] == [2, 1]  # on two nodes
    assert r.start[1] >= r.start[0] + 55, r.start
    # `sbatch -n2 --gpus=8` that Slurm spread over both nodes (ReqNodes 1, NNodes 2): the same
    d = _edited(tmp_path, "spread", [
        "17|alice|flat|normal|normal|COMPLETED|1795944562|1795944562|1795944563|1795944623|60|2|2|2|1|2|"
        "billing=2,cpu=2,gres/gpu=8,node=2|tbnode[1-2]|billing=2,cpu=2,gres/gpu=8,mem=1M,node=1",
        "19|dave|flat|normal|normal|COMPLETED|1795944564|1795944564|1795944626|1795944646|20|2|2|2|1|1|"
        "billing=2,cpu=2,gres/gpu=1,node=1|tbnode2|billing=2,cpu=2,gres/gpu=1,mem=1M,node=1"])
    assert [(j.gpus, j.gpu_nodes) for j in history.read_history(d, partitions=["normal"]).jobs] == [(4, 2), (1, 0)]
    sim = fidelity.replay(d)
    assert sim["19"] >= sim["17"] + 55, sim


def test_a_pending_job_of_more_gpus_than_a_node_is_left_out_not_the_capture(tmp_path):
    """`sbatch -n2 --gpus=8` pending at the capture (ReqNodes 1, ReqTRES gres/gpu=8; Slurm spreads a
    job's --gpus over nodes, which the replay does not model): the replay leaves it out and says
    so, and replays the rest; a nodes.txt without %G (a capture made before it) says the GPUs the
    jobs ask for are not modelled."""
    from typer.testing import CliRunner

    from fscontrol.cli.app import app

    d = _edited(tmp_path, "pend", [
        "17|alice|flat|normal|normal|COMPLETED|1795944562|1795944562|1795944563|1795944623|60|2|2|2|1|1|"
        "billing=2,cpu=2,gres/gpu=4,node=1|tbnode2|billing=2,cpu=2,gres/gpu=4,mem=1M,node=1",
        "21|dave|flat|normal|normal|PENDING|1795944600|1795944600|Unknown|Unknown|0|5|2|0|1|1||None assigned|"
        "billing=2,cpu=2,gres/gpu=8,mem=1M,node=1"])
    out = CliRunner().invoke(app, ["simulate", str(d)])
    assert out.exit_code == 0, out.output
    assert "left out: 1 jobs asking for more GPUs a node than their nodes give with their CPUs" in out.output
    text = (DATA / "22.05" / "nodes.txt").read_text()
    old = _edited(tmp_path, "old", (DATA / "22.05" / "jobs.txt").read_text().splitlines()[1:],
                  "".join(ln.rsplit("|", 1)[0] + "\n" for ln in text.splitlines()))
    out = CliRunner().invoke(app, ["simulate", str(old)])
    assert out.exit_code == 0 and "note: 3 jobs ask for GPUs, and nodes.txt gives no node GPUs" in out.output, out.output
    import re

    untracked = _edited(tmp_path, "untracked", [re.sub(r",gres/gpu=\d+", "", ln) for ln in
                                                (DATA / "22.05" / "jobs.txt").read_text().splitlines()[1:]])
    conf = (untracked / "config.txt").read_text()  # Slurm's default AccountingStorageTRES: no gres/gpu
    (untracked / "config.txt").write_text(conf.replace(",gres/gpu", ""))
    out = CliRunner().invoke(app, ["simulate", str(untracked)])
    assert "the capture's AccountingStorageTRES does not record gres/gpu" in out.output, out.output
    bad = _edited(tmp_path, "bad", [], text.replace("gpu:4", "gpu:4.5"))
    out = CliRunner().invoke(app, ["simulate", str(bad)])
    assert out.exit_code != 0 and out.output.count("\n") == 1 and "GRES count '4.5'" in out.output, out.output
