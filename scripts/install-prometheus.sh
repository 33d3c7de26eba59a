#!/usr/bin/env bash
# Install what the Prometheus dashboard test needs from Debian's packages (idempotent; root):
# prometheus and prometheus-node-exporter. The test starts its own copies (loopback, temp dirs);
# the packaged services must not start, so apt runs under a policy-rc.d that refuses them, and
# any that started anyway (systemd's presets) are stopped and disabled.
set -euo pipefail
need=(prometheus prometheus-node-exporter)
missing=()
for p in "${need[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
if ((${#missing[@]} == 0)); then exit 0; fi
[[ $EUID -eq 0 ]] || { echo "install-prometheus: run as root to install: ${missing[*]}" >&2; exit 1; }
created_policy=0
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f /usr/sbin/policy-rc.d' EXIT
echo "install-prometheus: apt-get install ${missing[*]}" >&2
apt-get update -qq
# --no-install-recommends: prometheus recommends the whole exporter family, which we do not run
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [[ -d /run/systemd/system ]]; then
  for s in prometheus prometheus-node-exporter; do
    systemctl disable --now "$s.service" >/dev/null 2>&1 || true
  done
  # node-exporter's helper timers (apt/smartmon textfile collectors) are not ours either
  systemctl disable --now 'prometheus-node-exporter-*.timer' >/dev/null 2>&1 || true
fi
