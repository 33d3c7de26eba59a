#!/usr/bin/env bash
# Record samples/testbed-basic from the project's real Slurm testbed (scripts/testbed.sh).
# Runs a small workload in the flat and two-level accounts, waits for decay passes so that
# finished and running jobs have been charged, then `fscontrol capture`s the cluster.
# Usage (as root): scripts/record-sample.sh [TESTBED_DIR] [OUT_DIR]
set -euo pipefail
TB=${1:-/tmp/fscontrol-testbed}
OUT=${2:-samples/testbed-basic}
. "$(dirname "$0")/testbed-jobs.sh"
probes
sub alice -A flat    -n 16 -t 10 --wrap 'sleep 300' >/dev/null
sub bob   -A flat    -n 32 -t 10 --wrap 'sleep 70'  >/dev/null
sub dave  -A flat    -n 4  -t 10 --wrap 'sleep 20'  >/dev/null
sub alice -A physics -n 24 -t 10 --wrap 'sleep 90'  >/dev/null
sub carol -A chem    -n 8  -t 10 --wrap 'sleep 300' >/dev/null
sub bob   -A physics -n 48 -t 10 --wrap 'sleep 300' >/dev/null
sub carol -A flat    -n 64 -t 10 --wrap 'sleep 300' >/dev/null   # pends: not enough CPUs left
echo "workload submitted; waiting 150 s for decay passes" >&2
sleep 150
"$FSC" capture "$OUT" --force --window 900 \
  --note "${NOTE:-}scripts/record-sample.sh: flat + two-level accounts, 2 finished, 4 running, 1 pending job, 7 probe jobs in the DOWN partition 'parked'"
