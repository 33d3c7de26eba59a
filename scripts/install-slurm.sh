#!/usr/bin/env bash
# Install what the Slurm testbed needs from Debian's packages (idempotent; root).
#
#   install-slurm.sh [22.05]   Debian 12's own Slurm 22.05 (+ munge, MariaDB) on this machine
#   install-slurm.sh 24.11     Debian 13's Slurm 24.11 in a cached Debian 13 ("trixie") root,
#                              made with debootstrap, beside the host's packages; the testbed
#                              runs its daemons in that root (TB_SLURM=24.11 scripts/testbed.sh).
#                              The root is $FSCONTROL_TRIXIE_ROOT [/var/cache/fscontrol/trixie].
#   install-slurm.sh 26.05     Debian unstable's ("sid") Slurm 26.05 the same way, in a cached sid
#                              root $FSCONTROL_SID_ROOT [/var/cache/fscontrol/sid]. The archive's sid
#                              Release file may be past its Valid-Until date (apt then refuses it), so
#                              apt runs with -o Acquire::Check-Valid-Until=false there.
#                              A finished root carries a stamp; then this returns at once.
set -euo pipefail
VERSION=${1:-22.05}

host_need=(munge mariadb-server python3 faketime)  # faketime: the clock-step fault test; python3: Debian's 3.11, which the testbed's normal users can run (tests)
case $VERSION in
  22.05) host_need+=(slurm-wlm slurmdbd) ;;
  24.11|26.05) host_need+=(debootstrap) ;;   # both keep the host's munged and MariaDB (version-independent wire protocols)
  *) echo "install-slurm: unknown Slurm version '$VERSION' (22.05, 24.11 or 26.05)" >&2; exit 2 ;;
esac

# ---------------------------------------------------------------- host packages
missing=()
for p in "${host_need[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
if ((${#missing[@]} > 0)); then
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
fi
[[ $VERSION == 22.05 ]] && exit 0

# ---------------------------------------------------------------- Slurm 24.11 / 26.05 in a Debian root
case $VERSION in
  24.11) SUITE=trixie; ROOT=${FSCONTROL_TRIXIE_ROOT:-/var/cache/fscontrol/trixie}; apt_opts=() ;;
  # sid's Release file is past its Valid-Until on the mirror these machines reach
  26.05) SUITE=sid; ROOT=${FSCONTROL_SID_ROOT:-/var/cache/fscontrol/sid}; apt_opts=(-o Acquire::Check-Valid-Until=false) ;;
esac
# what goes into the root; the stamp names it, so a changed list rebuilds the root
pkgs=(slurmctld slurmd slurmdbd slurm-client slurm-wlm-basic-plugins slurm-wlm-mysql-plugin)
stamp="slurm $VERSION: ${pkgs[*]}"
if [[ -s $ROOT/.fscontrol-ready && $(head -1 "$ROOT/.fscontrol-ready") == "$stamp" ]]; then exit 0; fi
[[ $EUID -eq 0 ]] || { echo "install-slurm: run as root to build $ROOT" >&2; exit 1; }
t0=$SECONDS
# built in a side folder and renamed at the end: an interrupted build never looks finished
NEW=$ROOT.new
if [[ -e $NEW ]]; then
  # a mount left in it by an interrupted build would make rm -rf reach the host's files
  if grep -q " $NEW/" /proc/self/mounts; then echo "install-slurm: mounts under $NEW; unmount them first" >&2; exit 1; fi
  rm -rf --one-file-system "$NEW"
fi
mkdir -p "$(dirname "$ROOT")"
echo "install-slurm: debootstrap $SUITE into $NEW" >&2
debootstrap --variant=minbase "$SUITE" "$NEW" > "$ROOT.debootstrap.log" 2>&1 \
  || { tail -20 "$ROOT.debootstrap.log" >&2; echo "install-slurm: debootstrap failed (log: $ROOT.debootstrap.log)" >&2; exit 1; }
printf '#!/bin/sh\nexit 101\n' > "$NEW/usr/sbin/policy-rc.d"; chmod +x "$NEW/usr/sbin/policy-rc.d"
echo "install-slurm: apt-get install ${pkgs[*]} in $NEW" >&2
chroot "$NEW" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${pkgs[@]}" \
  > "$ROOT.apt.log" 2>&1 || { tail -20 "$ROOT.apt.log" >&2; echo "install-slurm: apt-get in the root failed (log: $ROOT.apt.log)" >&2; exit 1; }
chroot "$NEW" apt-get clean
v=$(chroot "$NEW" dpkg-query -W -f='${Version}' slurmctld)
[[ $v == "$VERSION".* ]] || { echo "install-slurm: $SUITE gave slurmctld $v, not $VERSION" >&2; exit 1; }
{ echo "$stamp"; echo "slurmctld $v, built $(date -u +%FT%TZ) in $((SECONDS - t0)) s"; } > "$NEW/.fscontrol-ready"
if [[ -e $ROOT ]]; then
  if grep -q " $ROOT/" /proc/self/mounts; then echo "install-slurm: mounts under $ROOT (a running $VERSION testbed?)" >&2; exit 1; fi
  rm -rf --one-file-system "$ROOT"
fi
mv "$NEW" "$ROOT"
echo "install-slurm: Slurm $v ready in $ROOT ($((SECONDS - t0)) s)" >&2
