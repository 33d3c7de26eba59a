"""Issue #28 (an outside tester): in a replay, jobs' dependencies were not ordered: a job pending
with Dependency=afterok:N started in the simulation before N ended. Every engine (EASY/FCFS,
conservative, multifactor) now starts no job before the jobs it depends on have ended, and a
capture's pending jobs carry their dependencies (deps.txt: squeue %E)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fscontrol.sim.history import parse_dependencies, read_history
from fscontrol.sim.run import run_simulation
from fscontrol.sim.workload import SimJob, Workload

ROOT = Path(__file__).resolve().parents[1]


def _workload(with_deps: bool = True) -> Workload:
    """4 nodes: job 1 (2 nodes, 100 s); 2 waits for 1, 3 for 2 (both 1 node, fit at once); 4 free."""
    def job(i, submit, run, size, after=()):
        return SimJob(str(i), submit, run, run, size, user=f"u{i}", account="a", after=after if with_deps else ())

    return Workload("deps", 4, [job(1, 0.0, 100.0, 2), job(2, 0.0, 10.0, 1, ("1",)), job(3, 5.0, 10.0, 1, ("2",)),
                                job(4, 1.0, 50.0, 1)])


@pytest.mark.parametrize("policy", ["fcfs", "easy", "linear-eligible", "conservative", "mf-classic", "mf-fairtree"])
def test_no_job_starts_before_the_jobs_it_depends_on_end(policy):
    free = run_simulation(_workload(with_deps=False), policy)
    by = {j.job_id: k for k, j in enumerate(free.workload.jobs)}
    assert free.start[by["2"]] < free.end[by["1"]]  # unordered, it starts at once: the case the test is about
    res = run_simulation(_workload(), policy)
    by = {j.job_id: k for k, j in enumerate(res.workload.jobs)}
    assert res.start[by["2"]] >= res.end[by["1"]] == pytest.approx(100.0, abs=1e-6)
    assert res.end[by["2"]] <= res.start[by["3"]] < float("inf")
    assert res.start[by["4"]] == pytest.approx(1.0, abs=1e-6)  # the others go on as before
    assert sorted(res.start_order) == list(range(4)) and not [x for x in res.stats["notes"] if "depend" in x]
    assert res.overall["mean_wait_s"] > free.overall["mean_wait_s"]  # the wait for a dependency counts


def test_squeue_dependencies_are_read():
    """squeue's %E as the 22.05 testbed prints it: met parts dropped, the rest marked."""
    text = ("21|afterok:18(failed)?afterok:19(unfulfilled)\n20|afterany:19(unfulfilled)\n"
            "22|afterok:19(unfulfilled),afternotok:20(unfulfilled)\n23|after:19(unfulfilled)\n24|singleton\n25|(null)\n")
    assert parse_dependencies(text) == {"21": ("19",), "20": ("19",), "22": ("19", "20")}


def test_a_captured_dependency_orders_the_replay(tmp_path):
    """A capture whose pending job 11 (alice) waits on carol's running job 15: read_history gives
    it the dependency, and the replay starts it after 15 ends."""
    d = tmp_path / "cap"
    shutil.copytree(ROOT / "samples" / "testbed-basic", d)
    q = d / "squeue.txt"
    q.write_text(q.read_text().replace("|Resources|", "|Dependency|", 1))
    assert "11|alice|flat|normal|normal|PENDING|1|16|3036|0|Dependency|" in q.read_text()
    plain = read_history(d, machine=128)
    assert plain.meta["stats"]["dependency_ignored"] == 1 and not any(j.after for j in plain.jobs)
    (d / "deps.txt").write_text("11|afterok:15(unfulfilled)\n")
    wl = read_history(d, machine=128)
    st = wl.meta["stats"]
    assert (st["dependency_ordered"], st["dependency_ignored"]) == (1, 0)
    assert [j.after for j in wl.jobs if j.job_id == "11"] == [("15",)]
    res = run_simulation(wl, "easy")
    by = {j.job_id: k for k, j in enumerate(wl.jobs)}
    assert res.start[by["11"]] >= res.end[by["15"]]
    free = run_simulation(plain, "easy")
    byp = {j.job_id: k for k, j in enumerate(plain.jobs)}
    assert free.start[byp["11"]] < free.end[byp["15"]]
