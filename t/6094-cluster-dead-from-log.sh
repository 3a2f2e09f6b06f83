#!/bin/sh
# 6094-cluster-dead-from-log: the global scheduler learns a node's death
# from the log's node_died event (the membership monitor's verdict) alone,
# whatever the age of its table of nodes. The head's table, once read,
# serves for 10 minutes here (test hook LUX_TEST_TABLE_HOLD_MS). Node 1 alone has the
# resource disk; a task needing it, submitted at the head, runs there
# (the head reads its table). Node 1 is killed (kill -9; dead after
# 1.5 s); no task of any node is on it, so no node's watch and no
# NODE_PLACE tells the head: only the log's node_died. A second such task
# must fail at once (no alive node has disk). Before, the head placed it
# on the dead node from its held table, and failed only when the head's
# watch saw its node dead (attempt 2: no node left with disk).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
SMOD=$(cluster_mod schedmod)
export LUX_TEST_TABLE_HOLD_MS=600000

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1

out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 disk=1 2>&1)
is "$out" "$CL_DIR/n1" "a task needing disk, submitted at the head, runs on node 1" || diag "$out"
nid=$(cat "$CL_DIR/n1/run/node.joined")
cluster_kill_node 1
ok $? "kill -9 node 1"
cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$nid'" "dead" 60
ok $? "the log says node 1 died" || diag "$CL_SQL"

cluster_run_fails "the next task needing disk fails" "no node of the cluster has disk=1" \
    "$SMOD" where 1 disk=1
sent=$(grep "where it ran, is dead" "$CL_DIR/head/log/supervisor.log")
is "$sent" "" "... never sent to the dead node (the head's watch saw no task there)"

done_testing
