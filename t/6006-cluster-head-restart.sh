#!/bin/sh
# 6006-cluster-head-restart: the head's membership monitor rebuilds its
# table from the log when the head starts again. The head's own node
# leaves at a clean stop (node_left); a node killed with -9 while the head
# is down is declared dead (node_died, with why) once the head is back,
# since it does not beat; a node that does beat stays alive.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
export LUX_NODE_DEAD_MS=2000

cluster_head --workers 1 --store-mb 16
ok $CL_RC "the head starts"
cluster_join 1 --workers 1 --store-mb 16 --resources CPU=1
ok $CL_RC "node 1 joins"
cluster_join 2 --workers 1 --store-mb 16 --resources CPU=1
ok $CL_RC "node 2 joins"
n1=$(cat "$TAP_TMP/n1/run/node.joined")
n2=$(cat "$TAP_TMP/n2/run/node.joined")
cluster_wait_sql "SELECT node_id, address, state FROM nodes WHERE address = '127.0.0.1'" \
    ",127.0.0.1,alive" 30
ok $? "the head's own node is in the log"
h1=$(echo "$CL_SQL" | sed -n 's/,127.0.0.1,alive//p')

out=$("$LUX" stop --dir "$TAP_TMP/head" 2>&1)
ok $? "the head stops: $out"
cluster_wait_sql "SELECT node_id, state FROM nodes" "$h1,left" 10
ok $? "its own node left (node_left)"
pid=$(cluster_node_pid 1)
kill -9 "$pid"
ok $? "kill -9 node 1's daemon (pid $pid) while the head is down"
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done

out=$("$LUX" start --head --dir "$TAP_TMP/head" 2>&1)
ok $? "the head starts again"
CL_HEAD_UP=1
cluster_wait_sql "SELECT node_id, state, why FROM nodes" "$n1,dead,no heartbeat for" 60
ok $? "node 1, dead while the head was down, gets node_died"
like "$CL_SQL" "$n2,alive" "node 2, which beats, stays alive"
ok $(kill -0 "$(cluster_node_pid 2)" 2>/dev/null && echo 0 || echo 1) "and runs on"

done_testing
