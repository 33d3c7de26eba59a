"""Nodes of different sizes in the replay (issue #32 item 1): a testbed of two nodes, tbnode1 of
24 CPUs and tbnode2 of 8 (two slurmd on this host, scripts/testbed.sh TB_NODES=2 TB_CPUS=24,8).

Alice's job A (20 CPUs, a 2-minute limit, runs 60 s) lands on tbnode1 (the smallest node that holds
it). Dave's job D (24 CPUs) waits for it, first in the queue; backfill plans D on tbnode1 alone
(the only node of 24 CPUs) at A's limit. Alice's jobs B1 and B2 (6 CPUs each, 5-minute limits)
come behind D: the main pass stops at D, and backfill starts B1 at once on tbnode2, the node D's
plan leaves free; B2 waits for B1. The replay (the capture's nodes.txt: each node's CPUs) starts
each job within 5 s of slurmctld; the same capture as two nodes of 16 (D's plan then holds both
nodes) starts B1 only when A ends (so the nodes' sizes, not chance, decide).

Its own testbed (a folder beside the worker's, its second ports: the two-node module's, which runs
before it in the same group), stopped at the end. In CI on 22.05 (the suite) and 24.11 (its list)."""

from __future__ import annotations

import os
import time

import pytest

pytestmark = pytest.mark.slurm

SIZES = (24, 8)


@pytest.fixture(scope="module")
def sized():
    from testbed import side_testbed

    yield from side_testbed("-sizes", cpus=",".join(map(str, SIZES)), nodes=len(SIZES))


def _sbatch(tb, user: str, cpus: int, minutes: int, sleep: int, gpus: int = 0) -> str:
    """A job of `user` in account flat, partition normal (with `gpus` GPUs per node if any)."""
    return tb.run("sbatch", "--parsable", f"--chdir={tb.dir / 'jobs'}", "-o", "/dev/null", "-A", "flat",
                  "-p", "normal", "-n", str(cpus), *([f"--gres=gpu:{gpus}"] if gpus else []), "-t", str(minutes),
                  "--wrap", f"sleep {sleep}", user=user).strip().split(";")[0]


def _captured(tb, tmp_path, mine: list[str], t0: float):
    """The jobs waited for to end, then `capture --history` of the run (kept with
    FSCONTROL_KEEP_CAPTURE=DIR: tests/data/captures/nodesizes-*, gpus/), as a Workload of the
    partition normal and the capture's folder."""
    import shutil

    from fscontrol.sim import history
    from fscontrol.slurm.source import capture

    tb.wait_gone(mine)
    capture(tb.source(), tmp_path / "cap", history_s=time.time() - t0 + 5)
    cap = tmp_path / "cap"
    if os.environ.get("FSCONTROL_KEEP_CAPTURE"):
        shutil.copytree(cap, os.environ["FSCONTROL_KEEP_CAPTURE"], dirs_exist_ok=True)
    return history.read_history(cap, partitions=["normal"]), cap


def test_a_replay_places_jobs_on_nodes_of_their_own_sizes_as_slurmctld(sized, tmp_path):
    import re
    import shutil

    from fscontrol.sim import fidelity

    tb = sized
    out = tb.run("sinfo", "-h", "-N", "-p", "normal", "-o", "%N %c")
    assert dict(ln.split() for ln in out.splitlines() if ln.strip()) == {"tbnode1": "24", "tbnode2": "8"}, out
    tb.cancel_all()
    tb.reset_usage()

    t0 = time.time()
    try:
        a = _sbatch(tb, "alice", 20, 2, 60)
        tb.wait_running(a)
        d = _sbatch(tb, "dave", 24, 2, 20)
        time.sleep(1)
        b1 = _sbatch(tb, "alice", 6, 5, 45)
        b2 = _sbatch(tb, "alice", 6, 5, 45)
        mine = [a, d, b1, b2]
        w, cap = _captured(tb, tmp_path, mine, t0)
    finally:
        tb.cancel_all()
    assert w.meta["machine"]["node_cpus_each"] == list(SIZES), w.meta["machine"]
    real = fidelity.real_starts(cap)
    r = {j: real[j]["start"] for j in mine}
    assert r[b1] < r[a] + 50, r  # backfilled beside D's plan, before A's end
    assert r[d] >= r[a] + 55 and r[b2] >= r[b1] + 40, r
    sim = fidelity.replay(cap)
    worst = max(abs(sim[j] - r[j]) for j in mine)
    assert worst <= 5, ({j: sim[j] - r[a] for j in mine}, {j: r[j] - r[a] for j in mine})
    even = tmp_path / "even"  # the same capture, as two nodes of 16 CPUs
    shutil.copytree(cap, even)
    text = (cap / "nodes.txt").read_text()
    (even / "nodes.txt").write_text(re.sub(r"^(tbnode\d\|[^|]*\|)\d+\|", r"\g<1>16|", text, flags=re.M))
    old = fidelity.replay(even)
    assert old[b1] >= r[a] + 55, (old, r)  # D's plan holds both nodes: B1 waits for A's end
    print(f"\nslurmctld: D at +{r[d] - r[a]:.0f} s, B1 at +{r[b1] - r[a]:.0f} s, B2 at +{r[b2] - r[a]:.0f} s "
          f"(from A); the replay within {worst:.0f} s; as two nodes of 16: B1 at +{old[b1] - r[a]:.0f} s")


def test_a_replay_waits_for_gpus_where_cpus_are_free_as_slurmctld(sized, tmp_path):
    """GPUs (the testbed's nodes have 4 each: testbed.sh TB_GPUS). Alice's G1 and G2 (2 CPUs and
    `--gres=gpu:4` each, 2-minute limits, run 60 s) take every GPU: G1 on tbnode2, G2 on tbnode1.
    Dave's G3 (2 CPUs, gpu:1) then waits though 28 CPUs are free: the main pass stops at it. His C1
    behind it (4 CPUs, no GPU, 5 minutes) is backfilled on tbnode1, beside G3's plan (tbnode2 from
    G1's limit). The replay (nodes.txt's %G, each job's gres/gpu from sacct's TRES) starts G1-G3
    within 5 s of slurmctld, and C1 within one bf_interval (backfill's agent cycles in a phase no
    capture holds); the same capture with the GPUs left out starts G3 at once (so the GPUs, not
    chance, decide). G3 and C1 are one user's: their order is their age, whatever usage slurmctld
    still has from earlier tests."""
    import shutil

    from fscontrol.sim import fidelity

    tb = sized
    tb.cancel_all()
    tb.reset_usage()
    time.sleep(6)  # (the capture's window opens 5 s before t0: none of the module's earlier jobs in it)

    t0 = time.time()
    try:
        g1 = _sbatch(tb, "alice", 2, 2, 60, gpus=4)
        g2 = _sbatch(tb, "alice", 2, 2, 60, gpus=4)
        tb.wait_running(g1)
        tb.wait_running(g2)
        g3 = _sbatch(tb, "dave", 2, 2, 20, gpus=1)
        time.sleep(1)
        c1 = _sbatch(tb, "dave", 4, 5, 30)
        mine = [g1, g2, g3, c1]
        w, cap = _captured(tb, tmp_path, mine, t0)
    finally:
        tb.cancel_all()
    assert w.meta["machine"]["node_gpus_each"] == [4, 4], w.meta["machine"]
    assert {j.job_id: j.gpus for j in w.jobs if j.job_id in mine} == {g1: 4, g2: 4, g3: 1, c1: 0}
    real = fidelity.real_starts(cap)
    r = {j: real[j]["start"] for j in mine}
    assert r[g3] >= r[g1] + 55, r  # waited for GPUs, not CPUs
    assert r[c1] < r[g3], r
    sim = fidelity.replay(cap)
    worst = max(abs(sim[j] - r[j]) for j in (g1, g2, g3))
    assert worst <= 5 and abs(sim[c1] - r[c1]) <= 35, ({j: sim[j] - r[g1] for j in mine}, {j: r[j] - r[g1] for j in mine})
    blind = tmp_path / "blind"  # the same capture without the nodes' GPUs
    shutil.copytree(cap, blind)
    text = (cap / "nodes.txt").read_text()
    (blind / "nodes.txt").write_text("".join(ln.rsplit("|", 1)[0] + "\n" for ln in text.splitlines() if ln.strip()))
    old = fidelity.replay(blind)
    assert old[g3] <= r[g1] + 10, (old, r)  # started on the free CPUs
    print(f"\nslurmctld: G2 at +{r[g2] - r[g1]:.0f} s, G3 at +{r[g3] - r[g1]:.0f} s, C1 at +{r[c1] - r[g1]:.0f} s "
          f"(from G1); the replay within {worst:.0f} s (C1 {sim[c1] - r[c1]:+.0f} s); without the GPUs: G3 at "
          f"+{old[g3] - r[g1]:.0f} s")
