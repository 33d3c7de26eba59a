#!/usr/bin/env bash
# Quick start 2: the whole test suite, with everything it needs installed on a fresh Debian 12:
# Slurm 22.05 + slurmdbd + MariaDB + munge, Prometheus + its node exporter and Chromium from Debian (root needed),
# a venv with the test extras,
# and the project's own single-host Slurm testbed (started by the tests, loopback only).
# The real-Slurm tests must run here: FSCONTROL_REQUIRE_SLURM=1 turns a testbed that cannot start
# into a failure instead of a skip. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-slurm.sh
scripts/install-prometheus.sh   # the dashboard's queries against a real Prometheus (tests/test_grafana_prometheus.py)
# the web pages' browser tests drive Debian's Chromium (no browser download at run time)
if ! command -v chromium >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
fi
scripts/bootstrap.sh test,plot   # plot: the PNG tests run here, never skip
export FSCONTROL_REQUIRE_SLURM=1
# Five workers: each group of testbed tests gets its own Slurm (tests/conftest.py), and the
# groups run side by side; the fast tests fill the gaps. FSCONTROL_TEST_WORKERS=0 runs serially.
workers=${FSCONTROL_TEST_WORKERS:-5}
par=(); [[ $workers != 0 ]] && par=(-n "$workers" --dist loadgroup)
set +e
.venv/bin/python -m pytest "${par[@]}" --durations=25 "$@"
rc=$?
set -e
exit $rc
