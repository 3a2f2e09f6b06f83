#!/bin/sh
# 6071-cluster-actor-death: the node holding an actor dies (kill -9 by
# pid, its workers too). A head without the resource disk and two nodes
# with it (nodes are declared dead after 1.5 s: LUX_NODE_DEAD_MS). A
# counter with max_restarts 1, created from the head, lives on one of the
# nodes; once that node is killed, the head (the actor's home) places it
# again on the other node, which fits, and the driver's next calls are
# answered there, the constructor run again and the three calls the log
# has re-applied, so the count goes on (t/6073: from a checkpoint); a
# driver on node 3 (no disk), whose node kept a handle
# from before, finds it on its new node. Then two counters live on the last node with disk, one with
# no restarts left and one with a restart but no node left to hold it:
# killing that node fails each one's next call with its reason.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/actormod.so"
export LUX_FAKE_GPUS=none

cluster_up -d 1500 CPU=1 CPU=1,disk=2 CPU=1,disk=2 CPU=1

GO="$TAP_TMP/go"
"$LUX" run --address "$CL_DIR/head" "$MOD" own ctr disk=1 1 2 "$GO" >"$TAP_TMP/own" 2>&1 &
own=$!
cluster_wait_file "$GO.ready"
ok $? "the head's driver made its first two calls" || diag "$(cat "$TAP_TMP/own")"
held=$(head -n 1 "$TAP_TMP/own" | sed -n "s|^$CL_DIR/n\([12]\) 1\$|\1|p")
ok $([ -n "$held" ]; echo $?) "the counter lives on node ${held:-?}" || diag "$(cat "$TAP_TMP/own")"
held=${held:-1}
other=$((3 - held))
out=$("$LUX" run --address "$CL_DIR/n3" "$MOD" use ctr 1 2>&1)
is "$out" "$CL_DIR/n$held 3" "a driver on node 3 calls it there (node 3 keeps its handle)"
cluster_kill_node "$held"
ok $? "kill -9 node $held, which holds it"
touch "$GO"
cluster_wait_file "$GO.done"
ok $? "the driver's later calls are answered" || diag "$(cat "$TAP_TMP/own")"
is "$(tail -n 2 "$TAP_TMP/own")" "$CL_DIR/n$other 4
$CL_DIR/n$other 5" "... by node $other, where it was made again (its 3 calls re-applied)"
out=$("$LUX" run --address "$CL_DIR/n3" "$MOD" use ctr 1 2>&1)
is "$out" "$CL_DIR/n$other 6" "node 3's handle finds it on node $other" || diag "$out"
touch "$GO.end"
wait $own
ok $? "the head's driver ends"
nid=$(cat "$CL_DIR/n$other/run/node.joined")
hid=$(cat "$CL_DIR/n$held/run/node.joined")
cluster_wait_sql "SELECT group_concat(node_id, ' ') FROM (SELECT node_id FROM actors
    WHERE class = 'Counter' ORDER BY seq)" "$hid $nid" 30
ok $? "the actors view: created on node $held, then on node $other" || diag "$CL_SQL"

# node $other is the last with disk: a counter without restarts, and one
# with a restart but nowhere to go
"$LUX" run --address "$CL_DIR/head" "$MOD" own solo disk=1 0 1 "$GO.2" >"$TAP_TMP/solo" 2>&1 &
solo=$!
"$LUX" run --address "$CL_DIR/head" "$MOD" own spare disk=1 1 1 "$GO.3" >"$TAP_TMP/spare" 2>&1 &
spare=$!
cluster_wait_file "$GO.2.ready" && cluster_wait_file "$GO.3.ready"
ok $? "two more counters answer, on node $other" || diag "$(cat "$TAP_TMP/solo" "$TAP_TMP/spare")"
cluster_kill_node "$other"
ok $? "kill -9 node $other"
touch "$GO.2" "$GO.3" "$GO.2.end" "$GO.3.end"
wait $solo
ok $([ $? -ne 0 ]; echo $?) "the counter without restarts: its next call fails"
like "$(cat "$TAP_TMP/solo")" "which held it, died, and it has no restarts left (max_restarts 0)" \
    "... saying why: $(tail -n 1 "$TAP_TMP/solo")"
wait $spare
ok $([ $? -ne 0 ]; echo $?) "the counter with a restart: its next call fails"
like "$(cat "$TAP_TMP/spare")" "which held it, died, and no other node can hold it: no node" \
    "... saying why: $(tail -n 1 "$TAP_TMP/spare")"

done_testing
