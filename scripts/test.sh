#!/usr/bin/env bash
# Quick start 2: the whole test suite, with everything it needs installed on a fresh Debian 12:
# Slurm 22.05 + slurmdbd + MariaDB + munge from Debian, Debian 13's Slurm 24.11 in a cached root
# beside it (scripts/install-slurm.sh 24.11), Prometheus + its node exporter and Chromium from
# Debian (root needed), a venv with the test extras, and the project's own single-host Slurm
# testbeds (started by the tests, loopback only).
# The real-Slurm tests must run here: FSCONTROL_REQUIRE_SLURM=1 turns a testbed that cannot start
# into a failure instead of a skip. Extra arguments go to pytest (the main run).
#
# Both Slurm versions run, side by side: the whole suite on 22.05 (five testbed groups, each on a
# Slurm of its own: tests/conftest.py), and at the same time the testbed tests that need no
# classic-only control on 24.11 (three groups, their own folders, ports +1000). The last line adds
# the two runs up. FSCONTROL_SLURM=24.11 runs the whole suite on 24.11 instead;
# FSCONTROL_BOTH=0 runs only the one version.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-slurm.sh
scripts/install-slurm.sh 24.11
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
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
second=0
if [[ ${FSCONTROL_SLURM:-22.05} == 22.05 && ${FSCONTROL_BOTH:-1} == 1 ]]; then
  # Slurm 24.11: every testbed test that does not need classic control (collection, classic F and
  # Fair Tree against sprio, the Fair Tree forecast, the fit, the gate, why, the agent and its fault
  # matrix, control off, the site install as a user, persist without a restart, the doctor); the classic control experiments (control
  # holds, the classic forecast, halving, padding, trim) run on 22.05 here
  FSCONTROL_SLURM=24.11 FSCONTROL_TESTBED_DIR="${FSCONTROL_TESTBED_DIR:-/tmp/fscontrol-testbed}-24.11" \
    .venv/bin/python -m pytest -n 3 --dist loadgroup -m slurm --durations=10 --junitxml="$out/2411.xml" \
    tests/test_integration_collect.py tests/test_integration_fairshare.py tests/test_integration_fairtree.py \
    tests/test_integration_fairtree_forecast.py tests/test_integration_fit.py tests/test_site_install.py \
    tests/test_integration_gate.py tests/test_integration_why.py tests/test_integration_agent.py \
    tests/test_integration_faults.py tests/test_integration_off.py tests/test_integration_privacy.py \
    tests/test_integration_persist.py tests/test_integration_doctor.py > "$out/2411.log" 2>&1 &
  second=$!
fi
set +e
.venv/bin/python -m pytest "${par[@]}" --durations=25 --junitxml="$out/main.xml" "$@"
rc=$?
rc2=0
if [[ $second != 0 ]]; then
  wait "$second"; rc2=$?
  echo "================ the same tests on Slurm 24.11 (run beside the suite) ================"
  cat "$out/2411.log"
fi
set -e
# one closing line for both runs (both Slurm versions)
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
