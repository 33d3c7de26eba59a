"""A testbed of two nodes: two slurmd on this host, one per node, each on its own port
(`NodeName=... Port=`; scripts/testbed.sh TB_NODES). Debian's slurmd is built without
--enable-multiple-slurmd, yet 22.05, 24.11 and 26.05 each run several on one host when every
node has a port of its own and `-N` names it (each its spool, pid and log file through %n).

- A job of two nodes bills as slurmctld bills it: under CPU=1.0,Node=6.0,GRES/gpu=8.0 a
  2-node job of 8 CPUs and 2 GPUs a node (4 in all) bills MAX_TRES_GRES (26.05)
  4 x 8 + max(8, 2 x 6) = 44 and MAX_TRES (22.05, 24.11: they read MAX_TRES_GRES as MAX_TRES)
  max(8, 12, 32) = 32: over the job's totals, not node by node (tests/test_billing.py has the
  case worked by hand from assoc_mgr.c; this is slurmctld's own figure, from sacct's AllocTRES).
- A capture of the two-node machine holds both nodes, and `simulate CAPTURE` runs on two nodes
  of 16 CPUs (a reservation holds whole nodes), not one of 32.
- `fscontrol start` plays two partitions over one node each apart: a job waiting for its
  partition's busy node is not estimated "now" on the other's idle node (~90 s).

Its own testbed (a folder and ports beside the worker's), stopped at the end. In group testbed-c;
on 22.05, 24.11 and 26.05 (scripts/test.sh's lists)."""

from __future__ import annotations

import time

import pytest

from fscontrol.model import billing
from fscontrol.slurm import parse

pytestmark = pytest.mark.slurm

NODE_CPUS = 16
WEIGHTS = "CPU=1.0,Node=6.0,GRES/gpu=8.0"


@pytest.fixture(scope="module")
def two_nodes():
    from testbed import side_testbed

    yield from side_testbed("-nodes2", cpus=str(NODE_CPUS), nodes=2)


def _nodes(tb) -> dict[str, str]:
    out = tb.run("sinfo", "-h", "-N", "-p", "normal", "-o", "%N %c %t")
    return {f[0]: f[1] for f in (ln.split() for ln in out.splitlines() if ln.strip())}


def _alloc_tres(tb, job: str, timeout: float = 60) -> str:
    end = time.time() + timeout
    while True:
        out = tb.run("sacct", "-X", "-n", "-P", "-j", job, "-o", "JobID,State,AllocTRES").strip()
        f = out.split("|") if out else []
        if len(f) == 3 and "billing=" in f[2] or time.time() > end:
            return f[2] if len(f) == 3 else out
        time.sleep(1)


def test_two_slurmd_on_one_host_make_two_nodes(two_nodes):
    assert _nodes(two_nodes) == {"tbnode1": str(NODE_CPUS), "tbnode2": str(NODE_CPUS)}
    job = two_nodes.submit("alice", "flat", 2 * NODE_CPUS - 4, 5)
    tres = _alloc_tres(two_nodes, job)
    assert "node=2" in tres and f"cpu={2 * NODE_CPUS - 4}" in tres, tres


def test_a_two_node_job_bills_over_its_totals(two_nodes):
    from testbed import SLURM_VERSION

    has = billing.has_max_tres_gres(SLURM_VERSION)
    conf = two_nodes.conf.read_text()
    try:
        two_nodes.set_conf(PriorityFlags="NO_FAIR_TREE,MAX_TRES_GRES")
        for _ in range(60):  # (24.11+: the reconfigure restarts slurmctld)
            if two_nodes.controller_up():
                break
            time.sleep(1)
        two_nodes.scontrol("update", "partitionname=normal", f"TRESBillingWeights={WEIGHTS}")
        job = two_nodes.submit("alice", "flat", 8, 30, nodes="2", gres="gpu:2")
        tres = _alloc_tres(two_nodes, job)
        assert "node=2" in tres and "gres/gpu=4" in tres and "cpu=8" in tres, tres
        got = parse._billing(tres)
        assert got == (44 if has else 32), (SLURM_VERSION, tres)  # by hand, above
        flags = "NO_FAIR_TREE,MAX_TRES_GRES" if has else "NO_FAIR_TREE,MAX_TRES"
        model = billing.billing(billing.parse_tres(tres), billing.parse_weights(WEIGHTS), flags, release=SLURM_VERSION)
        assert model == got, (model, got, tres)
    finally:
        two_nodes.cancel_all()
        two_nodes.conf.write_text(conf)
        two_nodes.scontrol("reconfigure")
        for _ in range(60):
            if two_nodes.controller_up():
                break
            time.sleep(1)


def test_a_capture_of_two_nodes_replays_on_two_nodes(two_nodes, tmp_path):
    from fscontrol.sim import history
    from fscontrol.sim.run import _node_sched
    from fscontrol.sim.nodesched import node_rule
    from fscontrol.sim.slurmsched import SlurmSched
    from fscontrol.slurm.source import capture

    two_nodes.cancel_all()
    t0 = time.time()
    a = two_nodes.submit("alice", "flat", NODE_CPUS + 4, 20)   # two nodes
    b = two_nodes.submit("bob", "flat", NODE_CPUS, 20)
    for _ in range(120):
        if not two_nodes.run("squeue", "-h", "-p", "normal", "-o", "%A").strip():
            break
        time.sleep(1)
    time.sleep(2)
    folder = tmp_path / "cap"
    capture(two_nodes.source(), folder, history_s=time.time() - t0 + 2, note="two nodes")
    nodes = history.parse_nodes((folder / "nodes.txt").read_text())
    assert {k: v[0] for k, v in nodes.items()} == {"tbnode1": NODE_CPUS, "tbnode2": NODE_CPUS}
    w = history.read_history(folder, partitions=["normal"])
    m = dict(w.meta["machine"])
    assert m.pop("partition_nodes")["normal"] == [0, 1]  # each partition's nodes, by index
    # (4 GPUs a node: testbed.sh TB_GPUS, nodes.txt's %G since 2026-11-29)
    assert m == {"nodes": 2, "cpus": 2 * NODE_CPUS, "node_cpus": [NODE_CPUS], "node_gpus_each": [4, 4]}, w.meta["machine"]
    assert w.nodes == 2 * NODE_CPUS
    assert {a, b} <= {j.job_id for j in w.jobs}, (a, b, [j.job_id for j in w.jobs])
    sc = _node_sched(SlurmSched(), w)
    assert sc.node_cpus == NODE_CPUS and sc.node_model == node_rule(w.meta["slurm_version"])  # placed on nodes


def test_a_replay_keeps_each_partition_on_its_nodes_as_slurmctld(two_nodes, tmp_path):
    """Partitions over different nodes in the replay (issue #32 item 1): pa on tbnode1, pb on
    tbnode2. Alice's job 1 fills pa's node for 40 s; her job 2 (pa, the whole node, the older)
    waits for it; her job 3 (pb, 4 CPUs) comes behind it in the queue. slurmctld's main pass fails
    pa at job 2 and goes on (job_scheduler.c `failed_parts`): job 3 starts at its request's pass,
    on tbnode2; job 2 when job 1 ends, on tbnode1. The replay (the capture's nodes.txt: each
    partition's nodes) starts each within 5 s of slurmctld; the same capture with both partitions
    over both nodes starts job 2 at once on tbnode2 (so the partitions' nodes, not chance, decide)."""
    import re
    import shutil

    from fscontrol.sim import fidelity
    from fscontrol.slurm.source import capture

    tb = two_nodes
    tb.cancel_all()
    made = []
    t0 = time.time()
    try:
        for name, node in (("pa", "tbnode1"), ("pb", "tbnode2")):
            tb.scontrol("create", f"PartitionName={name}", f"Nodes={node}", "MaxTime=INFINITE", "State=UP")
            made.append(name)
        j1 = tb.submit("alice", "flat", NODE_CPUS, 40, partition="pa")
        tb.wait_running(j1)
        j2 = tb.submit("alice", "flat", NODE_CPUS, 5, partition="pa")
        j3 = tb.submit("alice", "flat", 4, 10, partition="pb")
        mine = [j1, j2, j3]
        tb.wait_gone(mine)
        capture(tb.source(), tmp_path / "cap", history_s=time.time() - t0 + 5)
    finally:
        tb.cancel_all()
        for name in made:
            tb.scontrol("delete", f"PartitionName={name}")
    cap = tmp_path / "cap"
    real = fidelity.real_starts(cap)
    r = {j: real[j]["start"] for j in mine}
    assert r[j3] - real[j3]["arrival"] <= 5, real[j3]  # not held back behind pa's job 2
    assert r[j2] >= r[j1] + 38, r  # on its partition's node only
    sim = fidelity.replay(cap)
    worst = max(abs(sim[j] - r[j]) for j in mine)
    assert worst <= 5, (sim, r)
    both = tmp_path / "both"  # the same capture, both partitions over both nodes
    shutil.copytree(cap, both)
    text = (cap / "nodes.txt").read_text()
    lines = [ln for ln in text.splitlines() if ln and not re.match(r"tbnode\d\|p[ab]\|", ln)]
    lines += [f"tbnode{k}|{p}|{NODE_CPUS}|idle" for k in (1, 2) for p in ("pa", "pb")]
    (both / "nodes.txt").write_text("\n".join(lines) + "\n")
    old = fidelity.replay(both)
    assert old[j2] <= r[j1] + 5, (old, r)  # on tbnode2 at once
    print(f"\nslurmctld: job 2 at +{r[j2] - r[j1]:.0f} s, job 3 at +{r[j3] - r[j1]:.0f} s (from job 1); the replay "
          f"within {worst:.0f} s; both partitions over both nodes: job 2 at +{old[j2] - r[j1]:.0f} s")


def test_start_plays_partitions_on_separate_nodes_apart(two_nodes):
    """`fscontrol start` with two partitions over one node each (issue #32 item 4, forecast/startparts.py):
    dave's job fills tbnode1 (partition pa) to its 1-minute limit (it sleeps longer: killed at the
    limit, so its run is the limit whatever his history); carol's job of pa waits for it while
    tbnode2 (pb) is idle. Played as one pool it started "now" on pb's idle CPUs; by pool it waits
    for dave's limit, and slurmctld starts it then: the estimate within 60 s of the real start."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from fscontrol.slurm.parse import parse_time

    tb = two_nodes
    tb.cancel_all()

    def sbatch(user: str, partition: str, minutes: int, sleep: int) -> str:
        return tb.run("sbatch", "--parsable", f"--chdir={tb.dir / 'jobs'}", "-o", "/dev/null", "-A",
                      "flat" if user == "dave" else "chem", "-p", partition, "-n", str(NODE_CPUS), "-t", str(minutes),
                      "--wrap", f"sleep {sleep}", user=user).strip().split(";")[0]

    def state_start(job: str) -> tuple[str, float | None]:
        s = tb.run("squeue", "-h", "-j", job, "-o", "%T|%S").strip()
        if not s:  # left the queue: sacct's start
            return "DONE", parse_time(tb.run("sacct", "-X", "-n", "-P", "-j", job, "-o", "Start").strip())
        st, _, t = s.partition("|")
        return st, parse_time(t) if st in ("RUNNING", "COMPLETING") else None

    made = []
    try:
        for name, node in (("pa", "tbnode1"), ("pb", "tbnode2")):
            tb.scontrol("create", f"PartitionName={name}", f"Nodes={node}", "MaxTime=INFINITE", "State=UP")
            made.append(name)
        dave = sbatch("dave", "pa", 1, 600)
        s0 = None
        for _ in range(100):
            st, s0 = state_start(dave)
            if s0 is not None:
                break
            time.sleep(0.3)
        assert s0 is not None, "dave's job did not start"
        carol = sbatch("carol", "pa", 1, 10)
        time.sleep(3)
        p = subprocess.run([sys.executable, "-m", "fscontrol.cli.main", "start", "--json"], capture_output=True,
                           text=True, timeout=120, env=tb.env, cwd=Path(__file__).resolve().parents[1])
        assert p.returncode == 0, p.stderr
        d = json.loads(p.stdout)
        e = next(x for x in d["jobs"] if x["job_id"] == carol)
        sq = tb.run("squeue", "--start", "-h", "-j", carol, "-o", "%i %P %S %r").strip()
        assert e["start"] is not None, e
        assert e["partition"] == "pa" and e["pool"] == "pa", e
        assert any("own nodes" in n for n in d["notes"]), d["notes"]
        # not "now" on pb's idle node: at dave's limit (s0 + 60), the range's end too
        assert e["start"] >= d["now"] + 40 and abs(e["late"] - (s0 + 60)) <= 31, (e, s0, d["now"])
        real = None
        for _ in range(240):
            st, real = state_start(carol)
            if real is not None:
                break
            time.sleep(1)
        assert real is not None, "carol's job did not start"
        now = d["now"]
        sqs = "-" if e["squeue_start"] is None else f"+{e['squeue_start'] - now:.0f} s"
        print(f"\nstart estimate for carol's job {carol} (partition pa) at now = {now:.0f}: +{e['start'] - now:.0f} s "
              f"(range +{e['early'] - now:.0f} .. +{e['late'] - now:.0f}); squeue --start: {sqs} ({sq}); "
              f"real start: +{real - now:.0f} s; dave's job started at {s0 - now:+.0f} s")
        assert abs(e["start"] - real) <= 60, (e["start"], real, d["now"])
    finally:
        tb.cancel_all()
        for name in made:
            tb.scontrol("delete", f"PartitionName={name}")
