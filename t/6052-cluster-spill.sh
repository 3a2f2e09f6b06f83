#!/bin/sh
# 6052-cluster-spill: tasks across nodes (exec_remote.c, exec_gsched.c).
# A head and two nodes on loopback addresses; only node 2 has the
# resource disk. A task asking for disk=1, submitted on the head or on
# node 1, is spilled to the global scheduler, runs on node 2 (its
# directory is node 2's, the tasks view's node_id is node 2's) and its
# result reaches the driver that waits: small, from an argument put on
# the submitting node (1 MiB, its bytes summed there), and large (2 MiB,
# beyond the inline size, every byte checked). A resource no node has
# fails at once, the error naming it and the most any node has; plain
# tasks stay where they were submitted.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"

LUX_FAKE_GPUS=none cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
LUX_FAKE_GPUS=none cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "node 1 joins" || diag "$CL_OUT"
LUX_FAKE_GPUS=none cluster_join 2 --workers 2 --store-mb 32 --resources CPU=2,disk=2
ok $CL_RC "node 2 joins, with disk=2" || diag "$CL_OUT"
n2=$(cat "$CL_DIR/n2/run/node.joined")

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 6 disk=1 2>&1)
ok $? "six tasks needing disk=1, submitted on the head, finish" || diag "$out"
is "$(echo "$out" | sort -u)" "$CL_DIR/n2" "every one ran on node 2"
cluster_wait_sql "SELECT count(*) FROM tasks WHERE function = 's_where' AND node_id = '$n2'" \
    "6" 30
ok $? "the tasks view says node 2 ran all six" || diag "$CL_SQL"

out=$("$LUX" run --address "$CL_DIR/n1" "$MOD" where 3 disk=1 2>&1)
ok $? "submitted on node 1: they finish" || diag "$out"
is "$(echo "$out" | sort -u)" "$CL_DIR/n2" "... on node 2"

out=$("$LUX" run --address "$CL_DIR/n1" "$MOD" sum 1048576 disk=1 2>&1)
set -- $out
ok $([ "$1" = sum ] && [ "$2" = "$4" ]; echo $?) \
    "an argument of 1 MiB put on node 1 reaches node 2 whole ($out)"

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" big 2097152 disk=1 2>&1)
like "$out" "big ok (2097152 bytes)" "a 2 MiB result made on node 2 reaches the head's driver"

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 1 disk=5 2>&1)
ok $([ $? -ne 0 ]; echo $?) "disk=5, more than any node has: the driver's get fails"
like "$out" "no node of the cluster has disk=5 (the most any alive node has is 2)" \
    "... at once, naming the resource: $out"

out=$("$LUX" run --address "$CL_DIR/n1" "$MOD" where 2 - 2>&1)
is "$(echo "$out" | sort -u)" "$CL_DIR/n1" "tasks without it stay on the node they came to"

done_testing
