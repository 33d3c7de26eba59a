#!/usr/bin/env bash
# Make .venv with fscontrol installed (editable). Usage: scripts/bootstrap.sh [EXTRAS]
#   EXTRAS: e.g. "test" -> pip install -e '.[test]'; with "accel", the compiled multifactor engine
#   is built too (python -m fscontrol.sim.accel build: mypyc, gcc and Python's headers)
# On Debian, `python3 -m venv` needs the python3-venv package: installed here when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=${1:-}
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || { echo "bootstrap: $PY not found: install Python 3.11+" >&2; exit 1; }
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "bootstrap: Python 3.11+ needed, found $("$PY" -V)" >&2; exit 1; }
if [[ ! -x .venv/bin/python ]]; then
  if ! "$PY" -m venv .venv 2>/dev/null; then
    rm -rf .venv
    if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
      echo "bootstrap: installing python3-venv (Debian)" >&2
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      "$PY" -m venv .venv
    else
      echo "bootstrap: '$PY -m venv' failed: install python3-venv (sudo apt-get install python3-venv)" >&2; exit 1
    fi
  fi
fi
spec=.; [[ -n $extras ]] && spec=".[$extras]"
.venv/bin/python -m pip install -q --disable-pip-version-check -e "$spec"
if [[ ,$extras, == *,accel,* ]]; then
  .venv/bin/python -m fscontrol.sim.accel build >/dev/null
  .venv/bin/python -m fscontrol.sim.accel status
fi
