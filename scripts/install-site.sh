#!/usr/bin/env bash
# A site install of fscontrol that every Unix user on the cluster can run (the admin runs it once,
# as root, on each login node; or into a shared file system's prefix):
#   - a virtual environment under PREFIX built from the system's Python (Debian's python3, which
#     every user may run; a venv made from a root-only Python, e.g. pyenv under /root, would not be);
#   - fscontrol installed into it (a copy, not an editable link into this checkout);
#   - everything world-readable, nothing world-writable;
#   - BINDIR/fscontrol linked to it, and an Lmod/Environment Modules file PREFIX/modulefiles/fscontrol/VERSION.lua.
# Usage: sudo scripts/install-site.sh [PREFIX=/opt/fscontrol] [BINDIR=/usr/local/bin]
set -euo pipefail
PREFIX=${1:-/opt/fscontrol}
BINDIR=${2:-/usr/local/bin}
PY=${PYTHON:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
[[ $EUID -eq 0 ]] || { echo "install-site: run as root (it writes $PREFIX and $BINDIR)" >&2; exit 1; }
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "install-site: $PY is not Python 3.11+" >&2; exit 1; }
if ! "$PY" -m venv --help >/dev/null 2>&1 || ! "$PY" -c 'import ensurepip' 2>/dev/null; then
  command -v apt-get >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
umask 022
"$PY" -m venv --clear "$PREFIX"
"$PREFIX/bin/python" -m pip install -q --disable-pip-version-check "$HERE"
chmod -R a+rX,go-w "$PREFIX"
version=$("$PREFIX/bin/fscontrol" --version | awk '{print $2}')
mkdir -p "$PREFIX/modulefiles/fscontrol"
cat > "$PREFIX/modulefiles/fscontrol/$version.lua" <<LUA
-- fscontrol $version: the fair-share forecast and the admin's reports (scripts/install-site.sh)
whatis("fscontrol $version: why is my fair-share low, and when will it recover?")
prepend_path("PATH", "$PREFIX/bin")
LUA
chmod 644 "$PREFIX/modulefiles/fscontrol/$version.lua"
mkdir -p "$BINDIR"
ln -sfn "$PREFIX/bin/fscontrol" "$BINDIR/fscontrol"
echo "fscontrol $version installed in $PREFIX; $BINDIR/fscontrol; module file $PREFIX/modulefiles/fscontrol/$version.lua" >&2
