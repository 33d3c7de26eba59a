from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from testbed import Testbed, TestbedUnavailable, ensure_testbed, stop_testbed  # noqa: E402

REQUIRE_SLURM = os.environ.get("FSCONTROL_REQUIRE_SLURM") == "1" or os.environ.get("CI") == "true"


LOCK_WAIT_S = 3600.0


def _exclusive_testbed_lock():
    """One test session at a time on the testbed: the tests cancel jobs and reset usage."""
    from testbed import DEFAULT_DIR

    DEFAULT_DIR.parent.mkdir(parents=True, exist_ok=True)  # FSCONTROL_TESTBED_DIR may name a new folder
    fh = open(f"{DEFAULT_DIR}.lock", "w")
    deadline = time.time() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fh
        except BlockingIOError:
            if time.time() > deadline:
                raise TestbedUnavailable("another test session held the testbed for an hour") from None
            time.sleep(2)


@pytest.fixture(scope="session")
def slurm() -> Testbed:
    """The real single-host Slurm. Skips on a laptop without it; FAILS in CI (FSCONTROL_REQUIRE_SLURM=1)."""
    try:
        lock = _exclusive_testbed_lock()
        tb = ensure_testbed()
    except TestbedUnavailable as e:
        if REQUIRE_SLURM:
            pytest.fail(f"real-Slurm tests must run here but the testbed is unavailable: {e}", pytrace=False)
        pytest.skip(f"Slurm testbed unavailable: {e}")
    _BASELINE[tb.dir] = tb.conf.read_text()  # slurm.conf as the session found it (testbed.sh's)
    _LIMITS[tb.dir] = tb.limits()  # and the associations' and QOS's limits
    yield tb
    tb.cancel_all()
    if tb.started_here and os.environ.get("FSCONTROL_KEEP_TESTBED") != "1":
        stop_testbed(tb)
    lock.close()


_BASELINE: dict[Path, str] = {}
_LIMITS: dict[Path, dict] = {}


@pytest.fixture(autouse=True)
def _testbed_as_started(request):
    """Before each testbed test: the testbed as the session found it (Testbed.restore_baseline).
    Two groups may share a worker's Slurm in turn, so one test's leftovers must not reach the next
    group's tests. What had to be put back is reported as a warning, by test."""
    if "slurm" in request.fixturenames:
        tb = request.getfixturevalue("slurm")
        fixed = tb.restore_baseline(_BASELINE[tb.dir], _LIMITS[tb.dir])
        if fixed:
            import warnings

            warnings.warn(f"testbed {tb.dir.name} put back before {request.node.name}: {'; '.join(fixed)}", stacklevel=1)
    yield


# The testbed tests run in groups, each group on one pytest-xdist worker with a Slurm of its own
# (tests/testbed.py): the groups run side by side, the tests inside a group one after another.
# Groups are balanced by measured length (minutes, 2-core machine; `--durations=0` prints them).
TESTBED_GROUPS = {  # measured 2026-11-23 (scripts/test.sh, 3 testbeds side by side)
    "test_integration_forecast.py": "testbed-a",  # 17.5 (hybrid held 15 min)
    "test_integration_collect.py": "testbed-a",  # 1.4
    "test_integration_start_resv.py": "testbed-a",  # ~4.5 (a reservation 3 min ahead: three jobs to their real starts)
    "test_integration_start.py": "testbed-d",  # ~9.5 (the fair-share test classic and Fair Tree, 8 min on 22.05 2026-11-27) (in d since the 4-min fair-share test: a is ~30 without it) (fscontrol start: two jobs behind a running one to their real starts; -j an array task and a het component: 8-10 s; fair-share charged: a pass waited for, two jobs behind a 150-s one, ~4 min)
    "test_integration_sim_fidelity.py": "testbed-a",  # 6 (5 decay passes of the simulator against slurmctld)
    "test_integration_sim_tier.py": "testbed-a",  # ~2 (a second partition of a higher PriorityTier: four jobs behind a full node)
    "test_integration_control.py": "testbed-b",  # 21.0 (padding, damping held 1 half-life each)
    "test_integration_doctor.py": "testbed-b",  # 1.1 (each doctor check set up: reconfigures, slurmctld restarts; 0.4 on 24.11)
    "test_integration_fit.py": "testbed-c",  # 9.0
    "test_integration_gate.py": "testbed-c",  # 5.0
    "test_integration_fairshare.py": "testbed-c",  # 3.0
    # switches the testbed to Fair Tree and back (restarting slurmctld): on a slurmctld of its own
    "test_integration_fairtree.py": "testbed-e",  # 4-7
    "test_integration_agent.py": "testbed-d",  # 4.9
    "test_integration_faults.py": "testbed-d",  # 4.5
    "test_integration_off.py": "testbed-d",  # 2.3 (2:21 with its start, 2026-11-26: the admin-line test added ~1)
    "test_integration_halving.py": "testbed-d",  # 4.8 (one user runs the usage that halves F)
    "test_integration_padding_full.py": "testbed-d",  # 0.3
    "test_integration_trim.py": "testbed-d",  # 3
    "test_integration_persist.py": "testbed-d",  # ~6 (fscontrol run 4 min under a busy load, persist on)
    "test_integration_pass_record.py": "testbed-b",  # ~15 (a record against sprio; 6 passes of hybrid at d 5-35; 3 of trim padding)
    "test_site_install.py": "testbed-c",  # 1.5 (a venv and a pip install, the README checklist, ticks, a user)
    "test_integration_why.py": "testbed-d",  # 1.5 (the weights set and back; a gate hold, a tie, the padding job, other reasons)
    "test_integration_fairtree_forecast.py": "testbed-e",  # ~14 (switches to Fair Tree, watches 10 min)
    # FairShare=parent shapes and a 2,000-association tree, classic then Fair Tree (restarts slurmctld)
    "test_integration_treezoo.py": "testbed-e",  # 7.6 (with the busy phase: 7:38 on 22.05, 8:00 on 26.05)
    # the halving by experiment in each setting: parent and gpu in CI, the rest opt-in (FSCONTROL_ZOO_HALVING=1)
    "test_integration_zoohalving.py": "testbed-e",  # 10.2 (parent_user 302 s + gpu 296 s, 22.05 after the rebase); opt-in set ~55
    "test_integration_privacy.py": "testbed-c",  # 0.5 (carol reads all she can under two PrivateData settings)
    "test_integration_bounds.py": "testbed-c",
    "test_integration_publish_d.py": "testbed-c",
    # GPUs and TRES billing: PriorityFlags MAX_TRES and a partition's weights set and put back (reconfigures)
    "test_integration_tres.py": "testbed-c",  # ~6: billing + UsageFactor 4 (22.05), Fair Tree under GPU weights 2, MAX_TRES_GRES 0.1 (22.05, 24.11, 26.05), a GPU plan 0.3 (22.05, 26.05), a plan at the DefaultQOS 1.5-2 (22.05 86 s, 26.05 121 s; issue #33 D6)
    "test_integration_forecast_job.py": "testbed-c",  # 1.5 (forecast -j against carol's real pending and held jobs)  # 1.3 (an applying tick, then control off: the published d is slurmctld's)  # 0.3 (the published CPU count; carol's plans beyond the caps)
    "test_integration_forecast_busy.py": "testbed-f",  # ~15, opt-in (FSCONTROL_BUSY_FORECAST=1): not passing yet
    "test_integration_limits.py": "testbed-c",  # 0.6 (limits set with sacctmgr, one decay pass; 24.11 0.7, 26.05 0.7)
    "test_integration_simsweep.py": "testbed-a",  # ~1 (a 4-task job array of simulations, a capture --history)
    # a testbed of its own with two nodes (two slurmd on this host): a 2-node job's billing, a capture of 2 nodes
    "test_integration_multinode.py": "testbed-nodes",  # ~1.1 (22.05 68 s)
    # a testbed of its own with two nodes of 24 and 8 CPUs: a replay on nodes of different sizes
    "test_integration_nodesizes.py": "testbed-nodes",  # ~3
}


SLOW = {  # the fast suite's slowest tests (seconds, `--durations`, 2 workers, machine loaded: 2026-11-27):
    # marked `slow`: CI runs them (scripts/test.sh runs everything); the fast suite is -m "not slurm and not slow".
    # Kept in the fast suite however long: the multifactor engine's independent reference and one
    # compiled/plain identity case (issue #29 item 7), the layering tests.
    "tests/test_fuzz_parsers.py::test_ten_thousand_mutations_are_refused_cleanly_or_read_whole": 31.9,
    "tests/test_published_index.py::test_a_user_s_rows_through_the_index_are_the_whole_file_s": 30.4,
    "tests/test_sim_mf_queue.py::test_random_tree_same_schedule_with_the_merged_queue": 22.6,
    "tests/test_forecast_bounds.py::test_a_synthetic_cluster_has_the_size_asked": 19.8,
    "tests/test_published_index.py::test_the_web_index_answers_many_requests_at_once_as_one_at_a_time": 10.4,
    "tests/test_grafana_prometheus.py::test_every_panel_query_returns_its_series": 9.5,
    "tests/test_published_index.py::test_the_web_index_reads_the_file_s_row_index_with_the_scan_s_answers": 8.8,
    "tests/test_treezoo.py::test_the_forecast_from_the_users_own_sshare_row_is_exact_on_a_large_tree": 7.3,
    "tests/test_spool.py::test_streaming_memory_does_not_grow_with_jobs": 6.6,
    "tests/test_forecast_fairtree.py::test_a_stale_snapshot_shows_past_rank_changes_as_passed": 6.6,
    "tests/test_treezoo.py::test_refined_uses_sshares_own_d": 6.5,
    "tests/test_sim_accel.py::test_compiled_engine_matches_python_under_slurmctlds_scheduler": 6.0,
    "tests/test_forecast_projection.py::test_closed_form_is_the_walk_to_1e9": 5.8,
    "tests/test_sim_accel.py::test_compiled_engine_matches_python_on_sdsc_blue": 5.6,
    "tests/test_treezoo.py::test_published_rows_carry_the_exact_f": 5.2,
    "tests/test_treezoo.py::test_sprio_of_the_old_d_is_not_used_and_status_says_why": 4.8,
    "tests/test_sim_mf_queue.py::test_sdsc_prefix_same_schedule_with_the_merged_queue": 4.8,
    "tests/test_agent_loop.py::test_loop_ticks_on_its_schedule_and_stops_cleanly": 4.5,
    "tests/test_treezoo.py::test_the_forecast_reads_sshares_fairshare_at_sshares_own_d": 4.4,
    "tests/test_treezoo.py::test_sprio_pins_f_where_sshares_fairshare_is_of_another_d": 4.2,
    "tests/test_sim_swf.py::test_peers_lowest_mean_wait_is_cqsims_backfill_by_actual_run_time": 4.0,
    "tests/test_forecast_fairtree.py::test_forecast_command_on_the_sample": 4.0,
    "tests/test_forecast_bounds.py::test_the_web_page_answers_as_a_fresh_read_of_the_file": 3.8,
    "tests/test_history_chart.py::test_png_with_the_json_and_the_text": 3.6,
    "tests/test_history_chart.py::test_a_long_history_keeps_the_png_size": 3.5,
    "tests/test_web_browser.py::test_planner_bills_gpus_under_the_published_weights": 3.4,
    "tests/test_sim_swf.py::test_easy_matches_the_naive_reference_on_the_whole_log": 3.3,
    "tests/test_published_index.py::test_an_index_that_does_not_fit_the_file_is_not_trusted": 3.2,
    "tests/test_start.py::test_why_and_the_web_card_estimate_up_to_their_caps_at_a_login_node_cost": 3.1,
}


def pytest_collection_modifyitems(config, items):
    # the opt-in tier: a test marked optin("ENV") runs only with ENV=1, and is deselected otherwise (not a skip)
    keep, dropped = [], []
    for item in items:
        m = item.get_closest_marker("optin")
        (keep if m is None or os.environ.get(m.args[0]) == "1" else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    for item in items:
        if item.nodeid.split("[")[0] in SLOW:
            item.add_marker(pytest.mark.slow)
        if "slurm" in getattr(item, "fixturenames", ()) or item.get_closest_marker("slurm") is not None:
            # a test on the testbed is a `slurm` test, marked or not (-m slurm lists, -m "not slurm" the fast
            # suite); one on a testbed of its own (marked) keeps its group too: its module's tests on one worker
            if item.get_closest_marker("slurm") is None:
                item.add_marker(pytest.mark.slurm)
            group = TESTBED_GROUPS.get(item.path.name, "testbed-" + item.path.stem)
            item.add_marker(pytest.mark.xdist_group(group))


# matplotlib: the `plot` marker and its checks (tests/plot_support.py)
from plot_support import _matplotlib_only_where_marked, check_plot_marker  # noqa: E402,F401


def pytest_runtest_setup(item):
    check_plot_marker(item)
