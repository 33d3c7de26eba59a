#!/usr/bin/env bash
# Quick start 1: fscontrol's main jobs on bundled samples recorded from a real Slurm, no Slurm needed:
# a history of ten snapshots (one a decay pass) -> status, the decay fit, a user's forecast.
# Leaves the history in .demo/history.db for the README's next commands.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh plot >&2   # plot: matplotlib, for `history --png` and `forecast --plot`
series=${1:-samples/testbed-series}
fsc=.venv/bin/fscontrol
rm -rf .demo
mkdir -p .demo
db=.demo/history.db
for snap in "$series"/*/; do
  "$fsc" collect --source "$snap" --db "$db" >/dev/null
done
last=$(ls -d "$series"/*/ | tail -n 1)
echo "== fscontrol status  (the admin's view of the latest snapshot)"
"$fsc" status --db "$db"
echo
echo "== fscontrol fit  (the decay rate fitted to the $(ls -d "$series"/*/ | wc -l) snapshots)"
"$fsc" fit --db "$db"
echo
echo "== fscontrol forecast -u carol -A chem --source $last --plan 8cpus:10m  (a user's view, as of that snapshot)"
"$fsc" forecast -u carol -A chem --source "$last" --plan 8cpus:10m
echo
echo "The history is in .demo/history.db. Next, for example:"
echo "  export FSCONTROL_DB=\$PWD/.demo/history.db PATH=\$PWD/.venv/bin:\$PATH"
echo "  fscontrol status -A science      # one account's subtree"
echo "  fscontrol status --json          # for scripts"
echo "  fscontrol forecast -u dave --source published   # a forecast from the history's latest snapshot"
echo "  fscontrol history --since 30d --png history.png   # the record over time, as a chart"
