#!/bin/sh
# 6131-cluster-spill-dead-wait: a spilled task that only dead nodes could
# run waits for one to come back, for a bounded time, instead of failing
# at once (exec_table.c s_no_place, DESIGN 7.2). A head (no w, dead time
# 3 s: a task waits until 12 s after the dead nodes' last beats) and two
# nodes: node 1 alone has w=1, node 2 none. Before, with node 1 dead, a
# task needing w failed at once, "no node of the cluster has w=1" (as
# every spilled task of t/6091 did while all its nodes restarted after a
# kill -9).
#   1. node 1 is killed -9; once the head has declared it dead, a task
#      needing w is submitted on node 2 (it asks the head over the wire);
#      node 1 is started again in its directory (a new node, with w=1):
#      the task runs there.
#   2. the new node 1 is killed -9 and declared dead; a task needing w
#      submitted on the head (which decides in place) is not started
#      again: it fails once the bound has passed, naming the resource and
#      the dead nodes that had it.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)

cluster_up -d 3000 CPU=1 CPU=1,w=1 CPU=1
id1=$(cat "$CL_DIR/n1/run/node.joined")

# dead_of ID: wait until the head's log says node ID died
dead_of() {
    cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'node_died' AND node_id = '$1'" 1 60
}

cluster_kill_node 1
ok $? "kill -9 node 1 ($id1), the only node with w"
dead_of "$id1"
ok $? "the head declares it dead" || diag "$CL_SQL"
"$LUX" run --address "$CL_DIR/n2" "$MOD" where 1 w=1 >"$TAP_TMP/w1.out" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
cluster_wait_line "waits to be placed" "$CL_DIR"/n2/log/node.log 30
ok $? "a task needing w=1, submitted on node 2, waits to be placed" ||
    diag "$(cat "$TAP_TMP/w1.out")"
ok $(kill -0 $drv 2>/dev/null; echo $?) "... and has not failed" || diag "$(cat "$TAP_TMP/w1.out")"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,w=1
ok $CL_RC "node 1 starts again in its directory, a new node with w=1" || diag "$CL_OUT"
id1b=$(cat "$CL_DIR/n1/run/node.joined")
wait $drv
ok $? "the task's driver returns" || diag "$(cat "$TAP_TMP/w1.out")"
is "$(cat "$TAP_TMP/w1.out")" "$CL_DIR/n1" "the task ran on the new node 1"

cluster_kill_node 1
ok $? "kill -9 the new node 1 ($id1b)"
dead_of "$id1b"
ok $? "the head declares it dead" || diag "$CL_SQL"
t0=$(date +%s)
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 1 w=1 2>&1)
rc=$?
t=$(($(date +%s) - t0))
ok $([ $rc -ne 0 ]; echo $?) "a task needing w=1, submitted on the head, fails: $out"
like "$out" "no node of the cluster has w=1" "the error names the resource"
like "$out" "node $id1b (silent" "... and the dead node that had it"
like "$out" "none came back within 12000 ms" "... and the bound"
ok $([ $t -ge 3 ] && [ $t -lt 60 ]; echo $?) "not at once, and within the bound ($t s)"
grep -q "waits to be placed: no node of the cluster has w=1" "$CL_DIR"/head/log/*.log
ok $? "the head's log said the task waited"
done_testing
