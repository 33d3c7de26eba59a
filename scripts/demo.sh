#!/usr/bin/env bash
# Quick start 1: fscontrol's main job (collect + status) on a bundled sample cluster, no Slurm needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh >&2
db=$(mktemp -d)/history.db
sample=${1:-samples/testbed-basic}
.venv/bin/fscontrol collect --source "$sample" --db "$db"
.venv/bin/fscontrol status --db "$db"
echo "(history kept in $db)" >&2
