#!/bin/sh
# soak-rejoin.sh - the long form of t/5007-rejoin-loop: a 3-replica chain
# under appends from two clients, its head killed -9 over and over (every
# third kill the middle), KILLS times (default 120), then the checks of the
# test: every replica rejoined, no replica failed, all replicas identical up
# to the committed seq, no file holding an event the tail does not.
# Run from a build tree after `make check` built the test:
#     tools/soak-rejoin.sh [KILLS]
# The scratch directory is kept when a check fails (LUX_KEEP=1 keeps it
# always). Takes 5 to 10 s a kill on a loaded 2-core machine (each waits
# for the chain to be whole again), plus the final checks.
set -e
cd "$(dirname "$0")/.."
[ -x t/5007-rejoin-loop.t ] || make -j2 t/5007-rejoin-loop.t >/dev/null
export LUX_BIN="${LUX_BIN:-$PWD/lux}" LUX_BUILDDIR="${LUX_BUILDDIR:-$PWD}" \
       LUX_SRCDIR="${LUX_SRCDIR:-$PWD}" LUX_REJOIN_KILLS="${1:-120}" \
       LUX_REJOIN_PACE_US="${LUX_REJOIN_PACE_US:-2000}"
# a bound that only a stuck run reaches: 30 s a kill
exec timeout -s KILL $((LUX_REJOIN_KILLS * 30 + 600)) ./t/5007-rejoin-loop.t
