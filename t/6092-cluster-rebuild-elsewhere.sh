#!/bin/sh
# 6092-cluster-rebuild-elsewhere: an object no live node holds, needed by
# a task on a node that is not the head, is made again from its lineage
# (exec_xfer.c s_make), as it is for a task on the head.
# A head, node 1 (the only one with disk) and node 2. Found by
# t/6091-cluster-harsh.sh (seeds 6093 and 6095), where such tasks failed
# for good:
#   (a) the object's only copy was on a node that died: "no live node
#       holds it, as far as the log says";
#   (b) the node the log lists let its copy go (its driver freed it):
#       "node ... does not hold object ... (freed or never here)"; its
#       going is logged now (object_lost), so no node is listed and the
#       head makes it at once.
# In both, a task needing disk (so it runs on node 1) reads the object;
# node 1 pulls it, finds no holder, and asks the head, which rebuilds it
# and serves it.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576

# a dead time of 4 s: at 1.5 s, node 1 was declared dead at load 30 (stop
# 44) and the task needing its disk failed; node 2 is killed, so the wait
# for its death is what the test pays
LUX_NODE_DEAD_MS=4000 cluster_head --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1,disk=1
ok $CL_RC "node 1 joins, with disk=1" || diag "$CL_OUT"
cluster_join 2 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 2 joins" || diag "$CL_OUT"
n1=$(cat "$CL_DIR/n1/run/node.joined")
n2=$(cat "$CL_DIR/n2/run/node.joined")

# (b) the listed holder let it go
cluster_hold freed $((8 * MB)) 2 freed
ok $? "a driver on node 2 runs a task making 8 MiB there, reads it, frees it ($REF)" ||
    diag "$(cat "$TAP_TMP/freed.out")"
freed=$REF
cluster_wait_value "SELECT count(*) FROM object_locations WHERE object_id = '$freed'" 0 30
ok $? "object_locations no longer lists node 2 for it (its going is logged: t/6110)" ||
    diag "$CL_SQL"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$freed" $((8 * MB)) disk=1 2>&1)
is "$out" "echo ok (8388608 bytes) $CL_DIR/n1" \
    "a task on node 1 reads it: node 2 has let it go, the head makes it again, byte for byte"
cluster_wait_sql "SELECT count(*) > 0 FROM retries WHERE instr(reason, 'rebuild') > 0" "1" 30
ok $? "the retries view shows the rebuild" || diag "$CL_SQL"
touch "$TAP_TMP/freed.done"

# (a) its only holder died
cluster_hold make $((8 * MB)) 2 made
ok $? "a driver on node 2 runs a task making 8 MiB there and holds it ($REF)" ||
    diag "$(cat "$TAP_TMP/made.out")"
made=$REF
cluster_kill_node 2
ok $? "kill -9 node 2's daemon and its workers"
cluster_wait_sql "SELECT node_id, state FROM nodes" "$n2,dead" 60
ok $? "the head says node 2 died" || diag "$CL_SQL"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$made" $((8 * MB)) disk=1 2>&1)
is "$out" "echo ok (8388608 bytes) $CL_DIR/n1" \
    "a task on node 1 reads it: no live node holds it, the head makes it again"
cluster_wait_sql "SELECT 'at ' || n.address FROM object_locations o JOIN nodes n
    ON n.node_id = o.node_id WHERE o.object_id = '$made' AND o.how = 'made'" "at $(cl_ip 0)" 30
ok $? "object_locations: made again on the head" || diag "$CL_SQL"

done_testing
