#!/bin/sh
# 6060-cluster-module-tamper: a node keeps the modules it was given in
# DIR/modules/HASH.so (a spilled task's module comes with the first task
# a node sends it). A cached file changed afterwards (bytes appended: it
# still loads) must be refused, not run: a task that needs it fails with
# an error naming the module's hash (before: it ran the changed file).
# A driver that brings the module's own bytes mends the cache.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"
export LUX_FAKE_GPUS=none

cluster_up CPU=1 CPU=1,disk=1

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 1 disk=1 2>&1)
is "$out" "$CL_DIR/n1" "a task of the head's driver needing disk=1 runs on node 1"
set -- "$CL_DIR"/n1/modules/*.so
ok $([ $# -eq 1 ] && [ -f "$1" ]; echo $?) "node 1 keeps the module it was sent ($*)"
cached=$1
hash=$(basename "$cached" .so)
cp "$cached" "$TAP_TMP/good.so"
printf 'changed' >>"$cached"
ok $? "the cached module of node 1 is changed"
# node 1's workers loaded the module already: fresh ones load it again
w=$(pgrep -P "$(cluster_node_pid 1)")
ok $([ -n "$w" ] && kill -9 $w; echo $?) "kill -9 node 1's workers ($w)"

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 1 disk=1 2>&1)
ok $([ $? -ne 0 ]; echo $?) "a task needing the changed module fails on node 1" || diag "$out"
like "$out" "$hash" "... naming the module's hash: $out"
like "$out" "do not match its hash" "... and why"

out=$("$LUX" run --address "$CL_DIR/n1" "$MOD" where 1 - 2>&1)
is "$out" "$CL_DIR/n1" "a driver on node 1, which brings the module's bytes, runs its task there"
cmp -s "$cached" "$TAP_TMP/good.so"
ok $? "... and the cached file is the module again"

done_testing
