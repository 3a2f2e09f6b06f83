#!/bin/sh
# build.sh - configure (once) and build Lux in the source tree.
set -e
cd "$(dirname "$0")/.."
[ -x configure ] || autoreconf -fi >/dev/null 2>&1
[ -f Makefile ] || ./configure -q "$@"
make -j"$(nproc)" >/dev/null
