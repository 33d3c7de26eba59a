#!/usr/bin/env bash
# Quick start 2: the whole test suite, with everything it needs installed on a fresh Debian 12:
# Slurm 22.05 + slurmdbd + MariaDB + munge from Debian, Debian 13's Slurm 24.11 and Debian
# unstable's Slurm 26.05 in cached roots beside it (scripts/install-slurm.sh 24.11 / 26.05), Prometheus + its node exporter and Chromium from
# Debian (root needed), a venv with the test extras, and the project's own single-host Slurm
# testbeds (started by the tests, loopback only).
# The real-Slurm tests must run here: FSCONTROL_REQUIRE_SLURM=1 turns a testbed that cannot start
# into a failure instead of a skip. Extra arguments go to pytest (the main run).
#
# Three Slurm versions run: the whole suite on 22.05 (five testbed groups, each on a Slurm of its
# own: tests/conftest.py), and beside it, one after the other, a short list on 24.11 (the readers,
# F against sprio on classic and Fair Tree, why: two groups, ports +1000) and the long list on 26.05
# (every testbed test that needs no long classic control, plus the short control experiments: three
# groups, ports +7000). docs/testing.md says why and what it costs. The last line adds the runs up.
# FSCONTROL_SLURM=24.11 or 26.05 runs the whole suite on that version instead;
# FSCONTROL_BOTH=0 runs only the one version; FSCONTROL_SIDE_ONLY=1 only the 24.11 and 26.05 lists.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-slurm.sh
scripts/install-slurm.sh 24.11
scripts/install-slurm.sh 26.05
scripts/install-prometheus.sh   # the dashboard's queries against a real Prometheus (tests/test_grafana_prometheus.py)
# the web pages' browser tests drive Debian's Chromium (no browser download at run time)
if ! command -v chromium >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
fi
scripts/bootstrap.sh test,plot,accel   # plot: the PNG tests run here, never skip; accel: the compiled engine
export FSCONTROL_REQUIRE_PLOT=1    # every test marked `plot` (matplotlib) runs: installed, never skipped (tests/plot_support.py)
export FSCONTROL_REQUIRE_ACCEL=1   # tests/test_sim_accel.py compares it with the Python engine: built, never skipped
export FSCONTROL_REQUIRE_SLURM=1
workers=${FSCONTROL_TEST_WORKERS:-5}   # FSCONTROL_TEST_WORKERS=0 runs serially
par=(); [[ $workers != 0 ]] && par=(-n "$workers" --dist loadgroup)
# run on 26.05 (its list, below) and not in the 22.05 suite, for CI's time: a QOS MinPrioThreshold
# (the bf_min_prio_reserve case beside it, the same main-pass rule, runs on 22.05); and on 24.11
# only: the start estimate and the replay under association and QOS limits, and under a partition's
# QOS (the first's 22.05 run is kept in tests/data/captures/acct-limits-22.05, the second's 24.11 run
# in part-qos-24.11, both replayed in the fast suite)
on_2605_only=(--deselect tests/test_integration_sim_limits.py::test_replay_applies_a_qos_min_prio_threshold_as_slurmctld
              --deselect tests/test_integration_start_limits.py::test_start_estimates_jobs_held_by_association_and_qos_limits
              --deselect tests/test_integration_start_limits.py::test_start_estimates_jobs_held_by_a_partition_qos
              --deselect tests/test_integration_start_limits.py::test_a_partition_qos_holds_jobs_before_any_shows_its_reason)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
second=0
if [[ ${FSCONTROL_SLURM:-22.05} == 22.05 && ${FSCONTROL_BOTH:-1} == 1 ]]; then
  base=${FSCONTROL_TESTBED_DIR:-/tmp/fscontrol-testbed}
  # Slurm 24.11 (short): the readers on its output (collect), classic F against sprio at d=1 and at a
  # runtime d, Fair Tree against sprio, why, the limits read (how much can I still run), and the two files
  # shown on 24.11 by their authors (persist without a restart, the doctor; the doctor runs on 26.05 too),
  # and GPUs: MAX_TRES_GRES read as MAX_TRES, Fair Tree under GPU weights (~2 min; the 4-min billing and
  # UsageFactor test of the same file runs on 22.05 and 26.05), and the replay on nodes of two sizes
  # (a testbed of its own, ~2 min; its GPU case runs in the 22.05 suite, and its 24.11 and 26.05 runs are
  # kept in tests/data/captures/gpus/, replayed in the fast suite), and the start estimate and the replay
  # under association and QOS limits (~3 min) and under a partition's QOS (~2.5 min; a job QOS's limit before
  # any job shows its reason runs in the 22.05 suite)
  list_2411=(tests/test_integration_collect.py tests/test_integration_fairshare.py tests/test_integration_fairtree.py
             tests/test_integration_why.py tests/test_integration_persist.py tests/test_integration_doctor.py
             tests/test_integration_limits.py tests/test_integration_tres.py::test_max_tres_gres_billing_is_models
             tests/test_integration_tres.py::test_fair_tree_f_matches_sprio_under_gpu_billing
             tests/test_integration_nodesizes.py::test_a_replay_places_jobs_on_nodes_of_their_own_sizes_as_slurmctld
             tests/test_integration_start_limits.py::test_start_estimates_jobs_held_by_association_and_qos_limits
             tests/test_integration_start_limits.py::test_start_estimates_jobs_held_by_a_partition_qos
             tests/test_integration_start_limits.py::test_a_partition_qos_holds_jobs_before_any_shows_its_reason)
  # Slurm 26.05 (long): every testbed test that does not need a long classic control experiment
  # (collection, classic F and Fair Tree against sprio, the Fair Tree forecast, forecast -j and a
  # PrivateData user's classic forecast, the fit,
  # the gate, why, the agent and its fault matrix, control off, privacy, the site install as a user,
  # the doctor, GPUs: MAX_TRES_GRES (billed as 26.05 alone does), Fair Tree under GPU weights and a
  # '4cpus+2gpus' plan billed as sbatch's job (16 s on 22.05), ~2 min
  # in group c; the 4-min billing and UsageFactor test runs on 22.05, where the formula is the same but
  # for MAX_TRES_GRES)
  # and the short control experiments (halving, padding, trim), the start estimate around a reservation
  # (4.5 min), a testbed of two nodes (a 2-node job billed MAX_TRES_GRES, the start estimate over two
  # partitions on separate nodes; 2.5 min), the start estimate's fair-share
  # classic (its Fair Tree case, 4 min, on 22.05 only), a QOS's MinPrioThreshold in the replay (1 min,
  # here only); the control holds (21 min) and the
  # classic forecast's hybrid hold (17 min) run on 22.05 only
  list_2605=(tests/test_integration_collect.py tests/test_integration_fairshare.py tests/test_integration_fairtree.py
             tests/test_integration_fairtree_forecast.py tests/test_integration_forecast_job.py
             tests/test_integration_forecast.py::test_private_data_user_forecasts_own_fairshare_only tests/test_integration_fit.py
             tests/test_site_install.py tests/test_integration_gate.py tests/test_integration_why.py
             tests/test_integration_agent.py tests/test_integration_faults.py tests/test_integration_off.py
             tests/test_integration_privacy.py tests/test_integration_halving.py tests/test_integration_padding_full.py
             tests/test_integration_trim.py tests/test_integration_limits.py
             tests/test_integration_doctor.py tests/test_integration_tres.py::test_max_tres_gres_billing_is_models
             tests/test_integration_tres.py::test_fair_tree_f_matches_sprio_under_gpu_billing
             tests/test_integration_tres.py::test_a_gpu_plan_bills_what_slurm_bills
             tests/test_integration_tres.py::test_a_plan_without_qos_bills_the_association_s_default_qos
             tests/test_integration_start.py::test_start_an_array_task_and_a_heterogeneous_component
             "tests/test_integration_start.py::test_fair_share_charged_through_the_horizon_orders_the_queue[classic]"
             tests/test_integration_start_resv.py tests/test_integration_multinode.py
             tests/test_integration_sim_limits.py::test_replay_applies_a_qos_min_prio_threshold_as_slurmctld)
  # one after the other, beside the 22.05 suite: two cores serve three Slurms better in turn than at once
  (
    t0=$SECONDS
    FSCONTROL_SLURM=24.11 FSCONTROL_TESTBED_DIR="$base-24.11" \
      .venv/bin/python -m pytest -n 2 --dist loadgroup -m slurm --durations=10 --junitxml="$out/2411.xml" \
      "${list_2411[@]}" > "$out/2411.log" 2>&1 || r=$?
    echo "${r:-0}" > "$out/2411.rc"; unset r; echo "(24.11: $((SECONDS - t0)) s)" >> "$out/2411.log"
    t0=$SECONDS
    FSCONTROL_SLURM=26.05 FSCONTROL_TESTBED_DIR="$base-26.05" \
      .venv/bin/python -m pytest -n 3 --dist loadgroup -m slurm --durations=10 --junitxml="$out/2605.xml" \
      "${list_2605[@]}" > "$out/2605.log" 2>&1 || r=$?
    echo "${r:-0}" > "$out/2605.rc"; unset r; echo "(26.05: $((SECONDS - t0)) s)" >> "$out/2605.log"
  ) &
  second=$!
fi
set +e
rc=0
if [[ ${FSCONTROL_SIDE_ONLY:-0} != 1 ]]; then   # FSCONTROL_SIDE_ONLY=1: only the 24.11 + 26.05 lists (their time)
  .venv/bin/python -m pytest "${par[@]}" "${on_2605_only[@]}" --durations=25 --junitxml="$out/main.xml" "$@"
  rc=$?
fi
rc2=0
if [[ $second != 0 ]]; then
  wait "$second"
  for v in 2411 2605; do
    echo "================ the testbed list on Slurm ${v:0:2}.${v:2} (run beside the suite) ================"
    cat "$out/$v.log" 2>/dev/null
    r=$(cat "$out/$v.rc" 2>/dev/null || echo 1)
    (( r != 0 )) && rc2=$r
  done
fi
set -e
# one closing line for all the runs (every Slurm version)
.venv/bin/python - "$out"/*.xml <<'PY'
import sys
import xml.etree.ElementTree as ET
p = f = s = 0
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        continue
    for suite in root.iter("testsuite"):
        n, fail, err, skip = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
        p += n - fail - err - skip
        f += fail + err
        s += skip
print(f"total: {p} passed, {f} failed" + (f", {s} skipped" if s else ""))
PY
(( rc != 0 )) && exit $rc
exit $rc2
