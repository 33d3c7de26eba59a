#!/usr/bin/env bash
# Record samples/testbed-history from the project's real Slurm testbed (scripts/testbed.sh): a
# short busy period the simulator can replay (`fscontrol simulate samples/testbed-history`).
# Jobs of 4 to 96 CPUs on the 128-CPU node, with time limits longer than their run, more than
# fit at once (some wait), one held back with --begin and one behind a dependency; when all have
# ended, `fscontrol capture --history 1h` records them with their eligible times and limits.
# Usage (as root): scripts/record-history.sh [TESTBED_DIR] [OUT_DIR]
set -euo pipefail
TB=${1:-/tmp/fscontrol-testbed}
OUT=${2:-samples/testbed-history}
. "$(dirname "$0")/testbed-jobs.sh"
scancel -u alice -u bob -u carol -u dave >/dev/null 2>&1 || true
sub alice -A flat    -n 64 -t 3 --wrap 'sleep 60'  >/dev/null
sub bob   -A flat    -n 32 -t 2 --wrap 'sleep 30'  >/dev/null
sub carol -A chem    -n 48 -t 3 --wrap 'sleep 45'  >/dev/null   # waits: 64 + 32 + 48 > 128
sub dave  -A flat    -n 4  -t 1 --wrap 'sleep 20'  >/dev/null
sub alice -A physics -n 96 -t 2 --wrap 'sleep 40'  >/dev/null   # waits for the 64
first=$(sub bob -A physics -n 16 -t 2 --wrap 'sleep 25')
sub carol -A chem    -n 8  -t 2 --dependency="afterok:${first%%;*}" --wrap 'sleep 15' >/dev/null
sub dave  -A flat    -n 24 -t 2 --begin=now+50 --wrap 'sleep 20' >/dev/null
sub bob   -A flat    -n 12 -t 5 --wrap 'sleep 70'  >/dev/null
sub alice -A flat    -n 4  -t 1 --wrap 'sleep 10'  >/dev/null
echo "workload submitted; waiting for every job to end" >&2
for _ in $(seq 1 60); do
  [[ -z $(squeue -h -u alice,bob,carol,dave -o %A) ]] && break
  sleep 5
done
rm -rf "$OUT"
"$FSC" capture "$OUT" --window 900 --history 1h \
  --note "${NOTE:-}scripts/record-history.sh: 10 jobs of 4-96 CPUs on 128, some waiting, one --begin, one dependency, all ended"
