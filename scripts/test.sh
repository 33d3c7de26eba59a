#!/usr/bin/env bash
# Quick start 2: the whole test suite, with everything it needs installed on a fresh Debian 12:
# Slurm 22.05 + slurmdbd + MariaDB + munge from Debian (root needed), a venv with the test extras,
# and the project's own single-host Slurm testbed (started by the tests, loopback only).
# The real-Slurm tests must run here: FSCONTROL_REQUIRE_SLURM=1 turns a testbed that cannot start
# into a failure instead of a skip. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-slurm.sh
scripts/bootstrap.sh test
export FSCONTROL_REQUIRE_SLURM=1
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
exit $rc
