#!/usr/bin/env bash
# Install what the Slurm testbed needs from Debian's packages (idempotent; root).
set -euo pipefail
need=(slurm-wlm slurmdbd munge mariadb-server python3 faketime)  # faketime: the clock-step fault test; python3: Debian's 3.11, which the testbed's normal users can run (tests)
missing=()
for p in "${need[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
if ((${#missing[@]} == 0)); then exit 0; fi
[[ $EUID -eq 0 ]] || { echo "install-slurm: run as root to install: ${missing[*]}" >&2; exit 1; }
# the testbed starts its own daemons; keep apt from starting the packaged services
created_policy=0
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f /usr/sbin/policy-rc.d' EXIT
echo "install-slurm: apt-get install ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
