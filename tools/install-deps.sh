#!/bin/sh
# install-deps.sh - install the Debian 12 packages Lux needs to build and to
# run its tests, skipping those already installed. Used by ./quickstart and
# .ci/run. Needs root or sudo. iproute2 is for t/9002-tcp-wildcard.sh (a
# private network namespace), which skips without it. python3-distributed is for
# t/9501-bench-compare.sh (Dask, the peer Lux is measured against), which
# skips without it. graphviz draws `lux lineage --svg` and checks the
# graphs of `lux lineage --dot` in t/9101-history.sh, which skips that part
# without it. valgrind is for t/9158-hist-snapshot-fails.sh, which skips
# without it.
set -e
PKGS="build-essential autoconf automake libtool pkg-config
libsqlite3-dev libczmq-dev libzmq3-dev liblz4-dev libsodium-dev libxxhash-dev libssl-dev
sqlite3 python3 python3-zmq iproute2 graphviz valgrind
python3-distributed"
missing=
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
