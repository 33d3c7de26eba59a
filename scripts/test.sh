#!/usr/bin/env bash
# Quick start 2: the whole test suite, with everything it needs installed on a fresh Debian 12:
# Slurm 22.05 + slurmdbd + MariaDB + munge from Debian (root needed), Debian 13's Slurm 24.11 in a
# cached root beside it (scripts/install-slurm.sh 24.11), a venv with the test extras, and the
# project's own single-host Slurm testbed (started by the tests, loopback only).
# The real-Slurm tests must run here: FSCONTROL_REQUIRE_SLURM=1 turns a testbed that cannot start
# into a failure instead of a skip. Extra arguments go to pytest.
# FSCONTROL_SLURM=24.11 runs the whole suite on Slurm 24.11; by default it runs on 22.05, after a
# first short run of the collection tests on a 24.11 testbed (FSCONTROL_SMOKE_2411=0 skips that).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-slurm.sh
scripts/install-slurm.sh 24.11
scripts/bootstrap.sh test
export FSCONTROL_REQUIRE_SLURM=1
if [[ ${FSCONTROL_SLURM:-22.05} == 22.05 && ${FSCONTROL_SMOKE_2411:-1} == 1 ]]; then
  # Slurm 24.11: collection from a live 24.11 cluster end to end (its own testbed, ports +1000)
  FSCONTROL_SLURM=24.11 .venv/bin/python -m pytest -q -m slurm tests/test_integration_collect.py
fi
# Four workers: each group of testbed tests gets its own Slurm (tests/conftest.py), and the
# groups run side by side; the fast tests fill the gaps. FSCONTROL_TEST_WORKERS=0 runs serially.
workers=${FSCONTROL_TEST_WORKERS:-4}
par=(); [[ $workers != 0 ]] && par=(-n "$workers" --dist loadgroup)
set +e
.venv/bin/python -m pytest "${par[@]}" --durations=25 "$@"
rc=$?
set -e
exit $rc
