#!/usr/bin/env bash
# The cron file and systemd units for a site install, written for its paths: the shipped ones in
# cron/ are for the defaults (PREFIX /opt/fscontrol, config /etc/fscontrol/fscontrol.toml, log
# /var/log/fscontrol.log); this writes the same files with the given paths into OUTDIR.
# scripts/install-site.sh runs it into PREFIX/share/fscontrol. Needs no root.
# Usage: scripts/site-units.sh PREFIX CONFIG LOG OUTDIR
set -euo pipefail
[[ $# -eq 4 ]] || { sed -n '2,6p' "$0" >&2; exit 2; }
PREFIX=$1 CONFIG=$2 LOG=$3 OUT=$4
HERE=$(cd "$(dirname "$0")/.." && pwd)
for p in "$PREFIX" "$CONFIG" "$LOG"; do
  # the paths go into a cron line and an ExecStart: absolute, and nothing a shell or systemd would read
  [[ $p == /* && $p =~ ^[A-Za-z0-9._/+-]+$ && $p != */ ]] \
    || { echo "site-units: '$p': an absolute path of letters, digits and ._+-/ is needed" >&2; exit 2; }
done
mkdir -p "$OUT"
for f in fscontrol.cron fscontrol-tick.service fscontrol-tick.timer fscontrol.service; do
  sed -e "s|/opt/fscontrol/|$PREFIX/|g" -e "s|/etc/fscontrol/fscontrol.toml|$CONFIG|g" \
      -e "s|/var/log/fscontrol.log|$LOG|g" "$HERE/cron/$f" > "$OUT/$f.tmp"
  chmod 644 "$OUT/$f.tmp"
  mv -f "$OUT/$f.tmp" "$OUT/$f"
done
