#!/usr/bin/env bash
# Record samples/testbed-series from the project's real Slurm testbed (scripts/testbed.sh): the
# same cluster captured once a decay pass (1 minute) for N passes while jobs start, run and end,
# so `fscontrol fit` has a history to fit and the demo can show it. Each snapshot is a folder
# 00, 01, ... that `fscontrol collect --source` replays, in order.
# Usage (as root): scripts/record-series.sh [TESTBED_DIR] [OUT_DIR] [N]
set -euo pipefail
TB=${1:-/tmp/fscontrol-testbed}
OUT=${2:-samples/testbed-series}
N=${3:-10}
. "$(dirname "$0")/testbed-jobs.sh"
scancel -u alice -u bob -u carol -u dave >/dev/null 2>&1 || true
probes
sub alice -A flat    -n 16 -t 15 --wrap 'sleep 600' >/dev/null
sub bob   -A flat    -n 32 -t 15 --wrap 'sleep 150' >/dev/null
sub alice -A physics -n 24 -t 15 --wrap 'sleep 270' >/dev/null
sub carol -A chem    -n 8  -t 15 --wrap 'sleep 600' >/dev/null
sub dave  -A flat    -n 4  -t 15 --wrap 'sleep 400' >/dev/null
rm -rf "$OUT"
since=$(date +%s)
for i in $(seq 0 $((N - 1))); do
  sleep 60
  dir=$OUT/$(printf %02d "$i")
  # each sacct window starts where the previous one ended: the charges between snapshots, once
  "$FSC" capture "$dir" --since "$since" \
    --note "scripts/record-series.sh: snapshot $((i + 1)) of $N, one a decay pass (PriorityCalcPeriod 1 min, half-life 5 min); jobs of 1.5 to 10 minutes in the flat and two-level accounts, 7 probe jobs in the DOWN partition 'parked'" >&2
  since=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sacct_window'][1])" "$dir/meta.json")
done
scancel -u alice -u bob -u carol -u dave >/dev/null 2>&1 || true
