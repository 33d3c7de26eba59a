#!/usr/bin/env bash
# A site install of fscontrol that every Unix user on the cluster can run (the admin runs it once,
# as root, on each login node or into a shared file system's prefix; again to upgrade in place):
#   - a virtual environment in PREFIX built from the system's Python (Debian's python3, which
#     every user may run; a venv made from a root-only Python, e.g. pyenv under /root, would not be);
#   - fscontrol with its plot extra (matplotlib: `history --png`, `forecast --plot`) installed into
#     it as a copy, not an editable link into this checkout;
#   - everything world-readable, nothing world-writable;
#   - BINDIR/fscontrol linked to it, and an Lmod/Environment Modules file PREFIX/modulefiles/fscontrol/VERSION.lua;
#   - the cron file and systemd units written for these paths in PREFIX/share/fscontrol (copy the
#     one you use to /etc/cron.d or /etc/systemd/system: nothing is scheduled by this script).
# It never deletes what it did not make: PREFIX must be new, empty, or an earlier install of this
# script (marked by PREFIX/.fscontrol-site); BINDIR/fscontrol must be absent or its own link.
# It never touches the config (/etc/fscontrol) or the history (/var/lib/fscontrol).
#
# Usage: sudo scripts/install-site.sh [--config FILE] [--log FILE] [--no-plot] [PREFIX] [BINDIR]
#        scripts/install-site.sh --check [PREFIX] [BINDIR]   # what it would do (install, upgrade
#                                                            # or refuse), changing nothing
#   PREFIX [/opt/fscontrol]  BINDIR [/usr/local/bin]
#   --config FILE  the config the cron file and units name   [/etc/fscontrol/fscontrol.toml]
#   --log FILE     the cron file's log                       [/var/log/fscontrol.log]
#   --no-plot      leave matplotlib out (`history --png` then says how to add it)
set -euo pipefail
MARK=.fscontrol-site
CONFIG=/etc/fscontrol/fscontrol.toml
LOG=/var/log/fscontrol.log
plot=1 check=0
args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --config) CONFIG=${2:?--config needs a file}; shift 2 ;;
    --config=*) CONFIG=${1#*=}; shift ;;
    --log) LOG=${2:?--log needs a file}; shift 2 ;;
    --log=*) LOG=${1#*=}; shift ;;
    --no-plot) plot=0; shift ;;
    --check) check=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "install-site: unknown option $1 (--help)" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ ${#args[@]} -le 2 ]] || { echo "install-site: at most PREFIX and BINDIR (--help)" >&2; exit 2; }
PREFIX=${args[0]:-/opt/fscontrol}
BINDIR=${args[1]:-/usr/local/bin}
PY=${PYTHON:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "install-site: $*" >&2; exit 1; }

for p in "$PREFIX" "$BINDIR" "$CONFIG" "$LOG"; do  # all checked before anything is written
  [[ $p == /* && $p =~ ^[A-Za-z0-9._/+-]+$ ]] || { echo "install-site: '$p': an absolute path of letters, digits and ._+-/ is needed" >&2; exit 2; }
done
PREFIX=${PREFIX%/} BINDIR=${BINDIR%/}
[[ -n $PREFIX && -n $BINDIR ]] || { echo "install-site: / is not a prefix" >&2; exit 2; }

# An earlier install: our mark, or (installs made before the mark existed) exactly the layout this
# script made: a venv with bin/fscontrol, its module files and nothing else.
ours() {
  local d=$1 e
  [[ -f $d/$MARK ]] && return 0
  [[ -f $d/pyvenv.cfg && -x $d/bin/fscontrol && -d $d/modulefiles/fscontrol ]] || return 1
  for e in "$d"/* "$d"/.[!.]*; do
    [[ -e $e ]] || continue
    case ${e##*/} in bin|include|lib|lib64|pyvenv.cfg|modulefiles|share) ;; *) return 1 ;; esac
  done
}
if [[ -L $PREFIX || ( -e $PREFIX && ! -d $PREFIX ) ]]; then
  die "refusing $PREFIX: it is not a folder (a link or a file); nothing was changed"
elif [[ -d $PREFIX && -n $(ls -A "$PREFIX") ]]; then
  ours "$PREFIX" || die "refusing $PREFIX: it is not empty and not an earlier fscontrol site install (no $PREFIX/$MARK); nothing was changed. Choose a new or empty folder, e.g. $PREFIX/fscontrol"
  action=upgrade
else
  action=install
fi
link=$BINDIR/fscontrol
if [[ -L $link ]]; then
  target=$(readlink "$link")
  [[ $target == "$PREFIX/bin/fscontrol" ]] || { [[ $target == /*/bin/fscontrol ]] && ours "${target%/bin/fscontrol}"; } \
    || die "refusing $link: it links to $target, not to an fscontrol site install; nothing was changed"
elif [[ -e $link ]]; then
  die "refusing $link: it exists and is not a link this script made; nothing was changed"
fi
if [[ $check == 1 ]]; then
  echo "install-site: would ${action} fscontrol in $PREFIX, link $link"
  exit 0
fi

[[ $EUID -eq 0 ]] || die "run as root (it writes $PREFIX and $BINDIR)"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "$PY is not Python 3.11+"
if ! "$PY" -m venv --help >/dev/null 2>&1 || ! "$PY" -c 'import ensurepip' 2>/dev/null; then
  command -v apt-get >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
umask 022
mkdir -p "$PREFIX"
# the mark first: an install that stops half-way is still ours, and a re-run finishes it
[[ -f $PREFIX/$MARK ]] || printf 'fscontrol site install (scripts/install-site.sh); a re-run upgrades it in place\n' > "$PREFIX/$MARK"
"$PY" -m venv "$PREFIX"      # no --clear: an upgrade keeps the venv and replaces fscontrol in it
spec=$HERE; [[ $plot == 1 ]] && spec="$HERE[plot]"
# a copy (not a link into this checkout), rebuilt from it even at the same version number
"$PREFIX/bin/python" -m pip install -q --disable-pip-version-check --upgrade "$spec"
chmod -R a+rX,go-w "$PREFIX"
version=$("$PREFIX/bin/fscontrol" --version | awk '{print $2}')
mkdir -p "$PREFIX/modulefiles/fscontrol"
for old in "$PREFIX"/modulefiles/fscontrol/*.lua; do  # the module files of versions this upgrade replaced
  [[ -e $old && $old != "$PREFIX/modulefiles/fscontrol/$version.lua" ]] && grep -q 'scripts/install-site.sh' "$old" && rm -f "$old"
done
cat > "$PREFIX/modulefiles/fscontrol/$version.lua" <<LUA
-- fscontrol $version: the fair-share forecast and the admin's reports (scripts/install-site.sh)
whatis("fscontrol $version: why is my fair-share low, and when will it recover?")
prepend_path("PATH", "$PREFIX/bin")
LUA
chmod 644 "$PREFIX/modulefiles/fscontrol/$version.lua"
share=$PREFIX/share/fscontrol
"$HERE/scripts/site-units.sh" "$PREFIX" "$CONFIG" "$LOG" "$share"
install -m 644 "$HERE/docs/deploy.md" "$share/deploy.md"
mkdir -p "$BINDIR"
ln -sfn "$PREFIX/bin/fscontrol" "$link"
cat >&2 <<EOF
install-site: fscontrol $version ${action%e}ed in $PREFIX$([[ $plot == 1 ]] && echo " (with matplotlib)"); $link
  module file: $PREFIX/modulefiles/fscontrol/$version.lua
  scheduling (for $CONFIG): $share/fscontrol.cron (to /etc/cron.d/fscontrol), or
    $share/fscontrol-tick.service and .timer, or $share/fscontrol.service (to /etc/systemd/system)
EOF
