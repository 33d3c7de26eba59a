"""A replay's inputs that the recorded captures do not have (issue #32, from an outside review that
wrote these tests before the fixes, each failing then for the reason its docstring states):
pending arrays and heterogeneous jobs, a job in a DOWN partition among the walk, Slurm 25.11's
backfill rule, nodes of different sizes or down, and `simulate CAPTURE` without -p. The captures
here are EDITED copies of samples/fidelity/ (rows added or changed in a temporary folder), not
recordings of slurmctld."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from typer.testing import CliRunner

from fscontrol.cli.app import app
from fscontrol.sim import get_policy
from fscontrol.sim.load import load_workload
from fscontrol.sim.multifactor import simulate_multifactor
from fscontrol.sim.nodesched import node_rule
from fscontrol.sim.slurmsched import SlurmSched
from fscontrol.sim.workload import SimJob, Workload

ROOT = Path(__file__).resolve().parents[1]
CAP = ROOT / "samples" / "fidelity" / "seed41-classic-4x32"  # 4 nodes x 32 CPUs, 22.05.8, no pending jobs


def _copy(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(CAP, d)
    return d


def _append(path: Path, text: str) -> None:
    with open(path, "a") as fh:
        fh.write(text)


def _read(d: Path):
    return load_workload(str(d), history={"unit": "cpus", "machine": None, "start_blocked": False})


def _simulate(*args: str) -> str:
    r = CliRunner().invoke(app, ["simulate", *args, "--no-progress"])
    assert r.exit_code == 0, r.output
    return r.output


def test_a_pending_array_in_a_down_partition_is_not_replayed(tmp_path):
    """sacct -X prints a pending job array's meta record as `47_[1-3]`; `squeue -O JobID` prints
    its job_id, `47` (squeue/print.c `_print_job_job_id2`). history.py looks the squeue row up by
    sacct's text, finds none, and replays the array although squeue says PartitionDown; squeue's
    row `47` is then read again as a job sacct missed and goes to the pass's walk. The report says
    "partition down 1 ... assumed to stay so" and the same job starts in the replay."""
    d = _copy(tmp_path, "arrdown")
    _append(d / "jobs.txt", "47_[1-3]|bob|flat|parked|normal|PENDING|1795766301|1795766301|Unknown|Unknown|0|10|16|0|1|1|\n")
    _append(d / "squeue.txt", "47|bob|flat|parked|normal|PENDING|1|16|1000|0|PartitionDown|1795766301|N/A|10:00|(null)\n")
    w = _read(d)
    assert w.meta["stats"]["partition_down"] == 1
    replayed = [j.job_id for j in w.jobs if j.job_id.split("_")[0] == "47"]
    assert replayed == [], f"a job squeue shows in a DOWN partition is replayed: {replayed}"


def test_a_pending_array_or_het_job_is_read_once(tmp_path):
    """The same id mismatch on an UP partition: sacct's `47_[1-3]` and squeue's `47`, sacct's
    `48+0`/`48+1` and squeue's `48`/`49` (a het job's components have job ids 48 and 49) are each
    replayed twice: 3 pending jobs become 6 (and the array is one job, not 3 tasks)."""
    d = _copy(tmp_path, "arr")
    _append(d / "jobs.txt",
            "47_[1-3]|bob|flat|normal|normal|PENDING|1795766301|1795766301|Unknown|Unknown|0|10|16|0|1|1|\n"
            "48+0|carol|chem|normal|normal|PENDING|1795766302|1795766302|Unknown|Unknown|0|10|8|0|1|1|\n"
            "48+1|carol|chem|normal|normal|PENDING|1795766302|1795766302|Unknown|Unknown|0|10|8|0|1|1|\n")
    _append(d / "squeue.txt",
            "47|bob|flat|normal|normal|PENDING|1|16|1000|0|Priority|1795766301|N/A|10:00|(null)\n"
            "48|carol|chem|normal|normal|PENDING|1|8|1000|0|Priority|1795766302|N/A|10:00|(null)\n"
            "49|carol|chem|normal|normal|PENDING|1|8|1000|0|Priority|1795766302|N/A|10:00|(null)\n")
    w = _read(d)
    pending = sorted(j.job_id for j in w.jobs if j.submit >= 1795766301)
    # each once: the array's three tasks (Slurm runs each as a job) and the two components
    assert pending == ["47_1", "47_2", "47_3", "48+0", "48+1"], pending
    assert w.meta["stats"]["pending"] == 5 and w.meta["stats"]["array_tasks"] == 2


def _walk_workload(x_id: str) -> Workload:
    """User u (account a) has a job in a DOWN partition, id 13 (walk_pending), running jobs 11 and
    14, a pending job 16; u2 (a) and v (b) run jobs; job `x_id` (v, account b) arrives at t=2000,
    after the passes looked at."""
    jobs = [SimJob("11", 0.0, 5000.0, 5000.0, 2, "u", "a"),
            SimJob("12", 1.0, 5000.0, 5000.0, 2, "v", "b"),
            SimJob("14", 2.0, 5000.0, 5000.0, 2, "u", "a"),
            SimJob("16", 3.0, 100.0, 100.0, 8, "u", "a"),
            SimJob("18", 4.0, 5000.0, 5000.0, 1, "u2", "a"),
            SimJob(x_id, 2000.0, 10.0, 10.0, 1, "v", "b")]
    return Workload("w", 9, jobs, meta={"walk_pending": [{"job_id": "13", "account": "a", "user": "u", "since": 0.0}]})


def test_a_walk_jobs_place_does_not_move_with_a_later_jobs_id():
    """slurmctld walks its job list by job id: job 13 (u's, DOWN partition) comes after 11 and 12
    and before 14 whatever the id of v's job that arrives at t=2000, so u's fair-share at the
    passes before t=2000 is the same with that job numbered 17 or 10. walk_positions counts the
    jobs with a lower id (2, then 3) but the engine reads the count as an index in ARRIVAL order,
    where job 10 is last: with it, the walk job sits after job 14 and u's F at t=300 drops from
    0.499 to 0.397."""
    pol = get_policy("mf-classic")
    fs = []
    for x in ("17", "10"):
        r = simulate_multifactor(_walk_workload(x), pol.priority, trace=True, trace_keys=[("a", "u")])
        fs.append([f[("a", "u")] for t, _, f in r.trace if t < 2000])
    assert fs[0] == fs[1]


def test_slurm_25_11_backfill_plans_by_the_last_relevant_job():
    """`_get_last_relevant_job` (cons_tres/job_test.c; commit 977bb2ee4f, 2025-05-09) is in
    slurm-25-11-0-1 and not in slurm-25-05-0-1: a 25.11 capture plans like 26.05 (its own rule,
    "25.11": 26.05's backfill, 24.11's placement of a one-task job)."""
    assert node_rule("25.05.3") == "24.11"
    assert node_rule("25.11.2") == "25.11"


def test_the_report_names_nodes_of_different_sizes(tmp_path):
    """Nodes 2 x 32 + 2 x 16 CPUs: the replay places jobs on them, each node its own size (it
    pooled them before, and the report said nothing about it)."""
    d = _copy(tmp_path, "mixed")
    text = (d / "nodes.txt").read_text().replace("tbnode3|fsadmin|32|", "tbnode3|fsadmin|16|")
    for n in ("tbnode3", "tbnode4"):
        for p in ("fsadmin", "parked", "normal*"):
            text = text.replace(f"{n}|{p}|32|", f"{n}|{p}|16|")
    (d / "nodes.txt").write_text(text)
    out = _simulate(str(d), "-p", "mf-classic")
    assert "96 CPUs" in out
    assert "nodes: 4 (2 of 32, 2 of 16 CPUs), each job placed on them" in out, out[:600]


def test_the_report_says_when_the_capture_has_nodes_down(tmp_path):
    """tbnode4 DOWN and tbnode3 DRAINED in nodes.txt (sinfo's %T): parse_nodes drops the state,
    the replay schedules on 4 x 32 CPUs and the output does not say that half of them were not
    usable at the capture."""
    d = _copy(tmp_path, "nodestate")
    lines = []
    for ln in (d / "nodes.txt").read_text().splitlines():
        if ln.startswith("tbnode4|"):
            ln = ln.rsplit("|", 1)[0] + "|down*"
        elif ln.startswith("tbnode3|"):
            ln = ln.rsplit("|", 1)[0] + "|drained"
        lines.append(ln)
    (d / "nodes.txt").write_text("\n".join(lines) + "\n")
    out = "\n".join(ln for ln in _simulate(str(d), "-p", "mf-classic").splitlines() if not ln.startswith("note: settings"))
    assert re.search(r"\bdown\b|drain", out.lower()) or "64 CPUs" in out, out[:600]


def test_the_report_names_nodes_powered_down_at_the_capture(tmp_path):
    """Power saving: tbnode2 `idle~` (powered down) and tbnode3 `idle#` (powering up) in nodes.txt.
    slurmctld puts powered-down nodes in a node set of a higher weight (node_scheduler.c: "we avoid
    scheduling jobs on powered down nodes where possible") and boots one for a job; the replay
    (no node weights) treats them as up, and says so, naming them; a `down~` node is down, not
    named twice."""
    d = _copy(tmp_path, "nodestate")
    lines = []
    for ln in (d / "nodes.txt").read_text().splitlines():
        head, state = ln.rsplit("|", 1)
        state = {"tbnode2": "idle~", "tbnode3": "idle#", "tbnode4": "down~"}.get(ln.split("|")[0], state)
        lines.append(f"{head}|{state}")
    (d / "nodes.txt").write_text("\n".join(lines) + "\n")
    out = _simulate(str(d), "-p", "mf-classic")
    assert "note: 2 node(s) powered down at the capture (tbnode2, tbnode3; power saving), replayed as up" in out, out[:900]
    assert "note: 1 node(s) down or drained at the capture (tbnode4)" in out, out[:900]


def test_simulate_on_a_capture_replays_its_slurmctld_by_default():
    """The user story: `fscontrol simulate DIR` replays the capture. Without -p it runs EASY (no
    decay passes of the capture's config, no nodes, no walk) and says only `policy easy`."""
    out = _simulate(str(CAP))
    assert "scheduler: slurmctld's" in out, out[:400]
