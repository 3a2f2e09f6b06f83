#!/bin/sh
# 6070-cluster-actor: actors on other nodes (exec_ractor.c). A head and two
# nodes on loopback addresses; only node 1 has the resource disk. A driver
# on the head creates a counter that asks for disk=1: the global scheduler
# places it on node 1, which holds it (lux_dir in its answers, the actors
# view's node_id); the driver's calls go there and their results come back
# in order. Drivers on node 2 (which neither made nor holds it) and on
# node 1 find it by name and call it: one counter, every call counted
# once, in the order made. An actor asking for a resource no node has
# fails with the reason.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/actormod.so"
export LUX_FAKE_GPUS=none

cluster_up CPU=1 CPU=1,disk=1 CPU=1
n1=$(cat "$CL_DIR/n1/run/node.joined")

GO="$TAP_TMP/go"
"$LUX" run --address "$CL_DIR/head" "$MOD" own ctr disk=1 0 3 "$GO" >"$TAP_TMP/own" 2>&1 &
own=$!
cluster_wait_file "$GO.ready"
ok $? "the head's driver made its first three calls" || diag "$(cat "$TAP_TMP/own")"
is "$(cat "$TAP_TMP/own")" "$CL_DIR/n1 1
$CL_DIR/n1 2
$CL_DIR/n1 3" "the counter lives on node 1 (the only one with disk) and counts the calls in order"

out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" use ctr 2 2>&1)
ok $? "a driver on node 2 finds the counter by name and calls it" || diag "$out"
is "$out" "$CL_DIR/n1 4
$CL_DIR/n1 5" "... node 2's calls went to node 1, the same counter"

out=$("$LUX" run --address "$CL_DIR/n1" "$MOD" use ctr 1 2>&1)
is "$out" "$CL_DIR/n1 6" "a driver on node 1 calls it too"

touch "$GO" "$GO.end"
wait $own
ok $? "the head's driver ends" || diag "$(cat "$TAP_TMP/own")"
is "$(tail -n 3 "$TAP_TMP/own")" "$CL_DIR/n1 7
$CL_DIR/n1 8
$CL_DIR/n1 9" "its later calls come after the other drivers' (7, 8, 9)"

cluster_wait_sql "SELECT node_id, calls FROM actors WHERE class = 'Counter'" "$n1,9" 30
ok $? "the actors view: created on node 1, 9 calls applied there" || diag "$CL_SQL"
cluster_wait_sql "SELECT 'n=' || count(*) FROM actors" "n=" 10
is "$(echo "$CL_SQL" | tail -n 1)" "n=1" "one actor_created event: the head, its home, logged none"

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" own bad tape=1 0 1 "$TAP_TMP/bad" 2>&1)
ok $([ $? -ne 0 ]; echo $?) "a counter asking for tape=1, which no node has: its call fails"
like "$out" "no node of the cluster has tape=1" "... naming the resource: $out"

done_testing
