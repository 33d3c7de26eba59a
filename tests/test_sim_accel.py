"""The compiled multifactor engine (fscontrol.sim.accel: mypyc's build of mfcore.py) against the
Python one, on the same jobs: every field of the run identical, to the last bit of every float and
the type of every value (repr of the whole run), on the engine's reference cases (classic at d 1
and 5, depth 3, each control method, a disturbance, Fair Tree, the gate, the deep tree) and on the
first 3,000 jobs of the SDSC-BLUE log under mf-classic, the hybrid controller and Fair Tree.

CI builds the compiled engine (scripts/test.sh: `python -m fscontrol.sim.accel build`) and sets
FSCONTROL_REQUIRE_ACCEL=1: there, a missing or stale build fails these tests."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import pytest

from fscontrol.sim import accel, get_policy, read_swf
from fscontrol.sim.multifactor import ControlSpec, simulate_multifactor
from fscontrol.sim.workload import Workload
from tests.mf_golden_cases import cases

ROOT = Path(__file__).resolve().parents[1]
SWF = ROOT / "samples" / "traces" / "SDSC-BLUE-2000-4.2-cln.swf.gz"


@pytest.fixture(scope="module")
def compiled():
    mod = accel.compiled_engine()
    if mod is None:
        if os.environ.get("FSCONTROL_REQUIRE_ACCEL") == "1":
            pytest.fail(f"FSCONTROL_REQUIRE_ACCEL=1 but {accel.status()}")
        pytest.skip(f"no compiled engine: {accel.status()}")
    return mod


def _both(compiled, thunk):
    with accel.using(accel.python_engine()):
        py = thunk()
    with accel.using(compiled):
        c = thunk()
    return py, c


@pytest.mark.parametrize("name", sorted(cases()))
def test_compiled_engine_matches_python_on_the_reference_cases(compiled, name):
    py, c = _both(compiled, cases()[name])
    assert py.passes > 0 and len(py.order) > 0
    assert repr(asdict(py)) == repr(asdict(c))


@pytest.mark.parametrize("policy", ["mf-classic", "mf-classic+hybrid", "mf-fairtree"])
def test_compiled_engine_matches_python_on_sdsc_blue(compiled, policy):
    whole = read_swf(SWF)
    w = Workload(whole.name, whole.nodes, list(whole.jobs[:3000]), meta=whole.meta)
    name, _, ctl = policy.partition("+")
    pol = get_policy(name, control=ControlSpec(ctl, u_star=20000 * 3600.0) if ctl else None)

    def run():
        return simulate_multifactor(w, pol.priority, control_spec=pol.control, depth=pol.depth,
                                    backfill=pol.backfill == "easy")

    py, c = _both(compiled, run)
    assert sum(1 for x in py.start if x != float("inf")) > 2900
    assert repr(asdict(py)) == repr(asdict(c))


@pytest.mark.parametrize("name", ["mf-classic", "mf-fairtree"])
def test_compiled_engine_matches_python_under_slurmctlds_scheduler(compiled, name):
    """Issue #32: slurmctld's scheduler (main scheduler on events and its timer, backfill cycles
    with whole-node reservations, a completion latency) on the same 3,000 jobs."""
    from fscontrol.sim.slurmsched import SlurmSched

    whole = read_swf(SWF)
    w = Workload(whole.name, whole.nodes, list(whole.jobs[:3000]), meta=whole.meta)
    pol = get_policy(name)
    sc = SlurmSched(node_cpus=1, complete_s=1.0)
    py, c = _both(compiled, lambda: simulate_multifactor(w, pol.priority, sched=sc))
    assert sum(1 for x in py.start if x != float("inf")) > 2900
    assert repr(asdict(py)) == repr(asdict(c))


def test_compiled_engine_matches_python_on_nodes(compiled):
    """Issue #32 item 1: the same scheduler on nodes (SlurmSched.node_model: each job placed on
    nodes, backfill on nodes), the log's machine cut into nodes of 8."""
    from fscontrol.sim.slurmsched import SlurmSched

    whole = read_swf(SWF)
    w = Workload(whole.name, whole.nodes, list(whole.jobs[:3000]), meta=whole.meta)
    assert w.nodes % 8 == 0 and w.nodes > 8
    sc = SlurmSched(node_cpus=8, complete_s=1.0, node_model="22.05")
    py, c = _both(compiled, lambda: simulate_multifactor(w, get_policy("mf-classic").priority, sched=sc))
    assert sum(1 for x in py.start if x != float("inf")) > 2900
    assert repr(asdict(py)) == repr(asdict(c))
    pooled = simulate_multifactor(w, get_policy("mf-classic").priority, sched=SlurmSched(node_cpus=8, complete_s=1.0))
    assert pooled.start != py.start  # (the node model changes the schedule)


def test_compiled_engine_matches_python_with_partition_tiers(compiled):
    """PriorityTier (a capture's partitions.txt: Workload.meta["partition_tiers"]): every third job
    of the 3,000 in a partition of a higher tier, under slurmctld's scheduler."""
    from dataclasses import replace

    from fscontrol.sim.slurmsched import SlurmSched

    whole = read_swf(SWF)
    jobs = [replace(j, partition="hi" if k % 3 == 0 else "normal") for k, j in enumerate(whole.jobs[:3000])]
    w = Workload(whole.name, whole.nodes, jobs, meta={**whole.meta, "partition_tiers": {"hi": 10, "normal": 1}})
    sc = SlurmSched(node_cpus=1, complete_s=1.0)
    py, c = _both(compiled, lambda: simulate_multifactor(w, get_policy("mf-classic").priority, sched=sc))
    assert sum(1 for x in py.start if x != float("inf")) > 2900
    assert repr(asdict(py)) == repr(asdict(c))
    one = simulate_multifactor(Workload(w.name, w.nodes, jobs, meta=whole.meta), get_policy("mf-classic").priority, sched=sc)
    assert one.start != py.start  # (the tiers change the schedule)


def test_compiled_engine_matches_python_with_partitions_over_some_nodes(compiled):
    """Partitions over different nodes (Workload.meta["machine"]["partition_nodes"]): the log's
    machine cut into nodes of 8, a partition `lo` over the first half, `all` over every node,
    jobs no bigger than lo's nodes in lo one time in three, and bf_max_job_user=3."""
    from dataclasses import replace

    from fscontrol.sim.slurmsched import SlurmSched

    whole = read_swf(SWF)
    nn = whole.nodes // 8
    half = nn // 2 * 8
    jobs = [replace(j, partition="lo" if (k % 3 == 0 and j.size <= half) else "all")
            for k, j in enumerate(whole.jobs[:3000])]
    machine = {"nodes": nn, "cpus": whole.nodes, "node_cpus": [8],
               "partition_nodes": {"lo": list(range(nn // 2)), "all": list(range(nn))}}
    w = Workload(whole.name, whole.nodes, jobs, meta={**whole.meta, "machine": machine})
    sc = SlurmSched(node_cpus=8, complete_s=1.0, node_model="22.05", bf_max_job_user=3)
    py, c = _both(compiled, lambda: simulate_multifactor(w, get_policy("mf-classic").priority, sched=sc))
    assert sum(1 for x in py.start if x != float("inf")) > 2900
    assert repr(asdict(py)) == repr(asdict(c))
    lo = [k for k, j in enumerate(jobs) if j.partition == "lo"]
    assert lo and all(not any(py.nodes[k][nn // 2:]) for k in lo)  # lo's jobs on lo's nodes
    flat = simulate_multifactor(Workload(w.name, w.nodes, jobs, meta={**whole.meta, "machine": {**machine, "partition_nodes": {}}}),
                                get_policy("mf-classic").priority, sched=sc)
    assert flat.start != py.start  # (the partitions change the schedule)


def test_compiled_engine_matches_python_on_nodes_of_different_sizes(compiled):
    """Nodes of different sizes (Workload.meta["machine"]["node_cpus_each"], a capture's nodes.txt):
    the log's machine as nodes of 16, 8, 4 and 24 CPUs in turn. The two engines agree; no node ever
    holds more CPUs than it has (each job's CPUs per node, summed over the jobs running at each
    start); and the schedule is not the one of nodes of one size."""
    from dataclasses import replace

    from fscontrol.sim.slurmsched import SlurmSched

    whole = read_swf(SWF)
    caps: list[int] = []
    while sum(caps) < whole.nodes:
        caps.append(min((16, 8, 4, 24)[len(caps) % 4], whole.nodes - sum(caps)))
    jobs = list(whole.jobs[:3000])
    machine = {"nodes": len(caps), "cpus": whole.nodes, "node_cpus": sorted(set(caps)), "node_cpus_each": caps}
    w = Workload(whole.name, whole.nodes, jobs, meta={**whole.meta, "machine": machine})
    sc = SlurmSched(node_cpus=max(caps), complete_s=1.0, node_model="24.11")
    py, c = _both(compiled, lambda: simulate_multifactor(w, get_policy("mf-classic").priority, sched=sc))
    assert sum(1 for x in py.start if x != float("inf")) > 2900
    assert repr(asdict(py)) == repr(asdict(c))
    ran = [k for k in range(len(jobs)) if py.start[k] != float("inf")]
    for k in ran:
        assert len(py.nodes[k]) == len(caps) and sum(py.nodes[k]) == jobs[k].size
        busy = [0] * len(caps)
        for q in ran:
            if py.start[q] <= py.start[k] < py.end[q]:
                busy = [b + a for b, a in zip(busy, py.nodes[q])]
        assert all(b <= cap for b, cap in zip(busy, caps)), (k, busy)
    even = {**machine, "node_cpus_each": []}
    one = simulate_multifactor(replace(w, meta={**whole.meta, "machine": even}), get_policy("mf-classic").priority,
                               sched=replace(sc, node_cpus=8))
    assert one.start != py.start


def test_compiled_engine_matches_python_with_gpus(compiled):
    """GPUs (Workload.meta["machine"]["node_gpus_each"], SimJob.gpus a node): the log's machine as
    nodes of 16 CPUs with 4 GPUs each (every third node none), one job in four asking for 1 or 2
    GPUs a node (those of at most 64 CPUs). The two engines agree; no node ever gives more GPUs (or CPUs) than it has; and
    the schedule is not the one without the GPUs."""
    from dataclasses import replace

    from fscontrol.sim.slurmsched import SlurmSched

    whole = read_swf(SWF)
    nn = whole.nodes // 16
    gcaps = [0 if k % 3 == 2 else 4 for k in range(nn)]
    jobs = [replace(j, gpus=(1 + k % 2 if k % 4 == 0 and j.size <= 64 else 0)) for k, j in enumerate(whole.jobs[:3000])]
    machine = {"nodes": nn, "cpus": whole.nodes, "node_cpus": [16], "node_gpus_each": gcaps}
    w = Workload(whole.name, whole.nodes, jobs, meta={**whole.meta, "machine": machine})
    sc = SlurmSched(node_cpus=16, complete_s=1.0, node_model="22.05")
    py, c = _both(compiled, lambda: simulate_multifactor(w, get_policy("mf-classic").priority, sched=sc))
    assert sum(1 for x in py.start if x != float("inf")) > 2900
    assert repr(asdict(py)) == repr(asdict(c))
    ran = [k for k in range(len(jobs)) if py.start[k] != float("inf")]
    for k in ran:
        assert sum(py.nodes[k]) == jobs[k].size
        busy, gbusy = [0] * nn, [0] * nn
        for q in ran:
            if py.start[q] <= py.start[k] < py.end[q]:
                busy = [b + a for b, a in zip(busy, py.nodes[q])]
                gbusy = [g + (jobs[q].gpus if a else 0) for g, a in zip(gbusy, py.nodes[q])]
        assert all(b <= 16 for b in busy) and all(g <= cap for g, cap in zip(gbusy, gcaps)), (k, busy, gbusy)
    blind = simulate_multifactor(replace(w, meta={**whole.meta, "machine": {**machine, "node_gpus_each": []}}),
                                 get_policy("mf-classic").priority, sched=sc)
    assert blind.start != py.start


def test_a_stale_build_is_not_used(compiled, monkeypatch):
    """An mfcore.py edited after the build: the Python engine runs, and status says why."""
    monkeypatch.setattr(accel, "source_sha", lambda: "0" * 64)
    monkeypatch.setattr(accel, "_cache", {})
    assert accel.engine() is accel.python_engine()
    assert "rebuild" in accel.status()
    assert accel.compiled_engine() is None


def test_the_environment_can_force_the_python_engine(compiled, monkeypatch):
    monkeypatch.setattr(accel, "_cache", {})
    monkeypatch.setenv("FSCONTROL_SIM_ENGINE", "python")
    assert accel.engine() is accel.python_engine()
    assert accel.status().startswith("python (FSCONTROL_SIM_ENGINE=python)")
    assert accel.compiled_engine() is compiled


def test_build_checks_the_file_without_importing_it(compiled, monkeypatch, capsys):
    """`build` is a no-op while the file on disk was built from this mfcore.py (the check reads the
    file: an imported extension cannot be reloaded, so importing it would report the old build)."""
    assert accel.built_file() is not None and accel.built_file().name.startswith("_mfcore_accel.")
    assert accel.main(["build"]) == 0
    assert "up to date" in capsys.readouterr().out
    monkeypatch.setattr(accel, "source_sha", lambda: "f" * 64)
    assert accel.built_file() is None
    assert accel.main(["nonsense"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Usage: python -m fscontrol.sim.accel") and "No such command 'nonsense'" in err
    assert accel.main(["status"]) == 0
    assert capsys.readouterr().out.startswith("multifactor engine: ")


def test_the_engine_does_not_import_the_command_line():
    """`python -m fscontrol.sim.accel` is a typer command line (the project's one framework); the
    engine imports fscontrol.sim.accel to pick its engine, and that import loads no typer or click."""
    import subprocess
    import sys

    code = "import sys, fscontrol.sim.accel as a; a.engine(); print(sorted({'typer', 'click'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120,
                         cwd=ROOT).stdout
    assert out.strip() == "[]"
