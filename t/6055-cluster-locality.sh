#!/bin/sh
# 6055-cluster-locality: bottom-up placement (DESIGN 7.2). A head and two
# nodes on loopback addresses, one worker each. A task submitted on the
# head whose argument (16 MiB put by a driver on node 1) sits on node 1
# runs on node 1 (its directory, and the tasks view's node column), and
# no copy of the object is made; a task whose argument is on the head
# stays there. Then a long queue: twelve 400 ms tasks submitted at once
# on the head, which keeps two waiting per worker (LUX_SPILL_QUEUE=2):
# some of them run on the idle nodes.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576

LUX_SPILL_QUEUE=2 cluster_head --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 1 joins" || diag "$CL_OUT"
cluster_join 2 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 2 joins" || diag "$CL_OUT"
n1=$(cat "$CL_DIR/n1/run/node.joined")

cluster_hold hold $((16 * MB)) 1 put
ok $? "a driver on node 1 puts 16 MiB ($REF)" || diag "$(cat "$TAP_TMP/put.out")"
ref=$REF

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$ref" $((16 * MB)) - 2>&1)
is "$out" "echo ok (16777216 bytes) $CL_DIR/n1" \
    "a task submitted on the head whose argument sits on node 1 runs on node 1"
cluster_wait_sql "SELECT node_id FROM tasks WHERE function = 's_echo'" "$n1" 30
ok $? "the tasks view's node column says node 1" || diag "$CL_SQL"
cluster_wait_sql "SELECT count(*) FROM object_locations WHERE object_id = '$ref'" "1" 30
ok $? "no copy of the object was made" || diag "$CL_SQL"
touch "$TAP_TMP/put.done"

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" sum 1048576 - 2>&1)
set -- $out
ok $([ "$1" = sum ] && [ "$2" = "$4" ]; echo $?) "an argument on the head: the task stays ($out)"

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" naps 12 400 2>&1)
ok $? "twelve 400 ms tasks on the head finish" || diag "$out"
away=$(echo "$out" | grep -c -v "^$CL_DIR/head\$")
ok $([ "$away" -gt 0 ]; echo $?) "a long queue on the head spilled $away of them to the idle nodes"
is "$(echo "$out" | grep -c -v -e "^$CL_DIR/head\$" -e "^$CL_DIR/n1\$" -e "^$CL_DIR/n2\$")" 0 \
    "each ran on a node of the cluster"

done_testing
