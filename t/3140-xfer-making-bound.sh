#!/bin/sh
# 3140-xfer-making-bound: a puller waiting while the head makes an object
# again (NODE_LOCATE answered "being made", asked every 200 ms) waits
# LUX_XFER_MAKING_MS in all, then fails with an error naming the object
# and how long it waited. Before, nothing bounded it: a rebuild that never
# ended, or whose output kept going before the pull came, was asked about
# for ever (issue 24).
# A head, node 1 (the only one with disk, LUX_XFER_MAKING_MS=3000) and
# node 2. An object made on node 2, which dies; a task on node 1 reads it;
# the head rebuilds it with a task that does not end (schedmod's s_big
# waits while big.slow exists and big.go does not).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576

LUX_NODE_DEAD_MS=1500 cluster_head --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
LUX_XFER_MAKING_MS=3000 cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1,disk=1
ok $CL_RC "node 1 joins, with disk=1 and LUX_XFER_MAKING_MS=3000" || diag "$CL_OUT"
cluster_join 2 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 2 joins" || diag "$CL_OUT"
n2=$(cat "$CL_DIR/n2/run/node.joined")

cluster_hold make $((8 * MB)) 2 made
ok $? "a driver on node 2 runs a task making 8 MiB there and holds it ($REF)" ||
    diag "$(cat "$TAP_TMP/made.out")"
made=$REF
# from now on s_big does not end on the head or node 1 (where a rebuild runs)
touch "$CL_DIR/head/big.slow" "$CL_DIR/n1/big.slow"
cluster_kill_node 2
ok $? "kill -9 node 2's daemon and its workers"
cluster_wait_sql "SELECT node_id, state FROM nodes" "$n2,dead" 60
ok $? "the head says node 2 died" || diag "$CL_SQL"

t0=$(date +%s)
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$made" $((8 * MB)) disk=1 2>&1)
rc=$?
t1=$(date +%s)
ok $([ $rc -ne 0 ] && echo 0 || echo 1) "a task on node 1 reading it fails while its rebuild does not end"
like "$out" "object $made: the head has been making it again for " \
    "the error names the object" || diag "$out"
like "$out" " ms (LUX_XFER_MAKING_MS 3000) and no node holds it yet" \
    "and says how long it waited" || diag "$out"
ok $([ $((t1 - t0)) -lt 90 ] && echo 0 || echo 1) \
    "it failed in $((t1 - t0)) s (3 s bound; at most 90 s under load)"
ok $(kill -0 "$(cluster_node_pid 1)" 2>/dev/null && echo 0 || echo 1) "node 1's daemon lives"

# the rebuild ends: the object is there again, and read
touch "$CL_DIR/head/big.go" "$CL_DIR/n1/big.go"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$made" $((8 * MB)) disk=1 2>&1)
is "$out" "echo ok (8388608 bytes) $CL_DIR/n1" \
    "once its rebuild ends, a task on node 1 reads it, byte for byte" || diag "$out"
touch "$TAP_TMP/made.done"

done_testing
