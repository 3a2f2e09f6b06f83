#!/bin/sh
# 6093-cluster-place-dead: the global scheduler never places on a node it
# knows is dead, whatever the age of its table of nodes. The head's table,
# once read, serves for 10 minutes here (test hook LUX_TEST_TABLE_HOLD_MS),
# so it says node 1 is alive long after node 1 is killed (kill -9; nodes
# are declared dead after 1.5 s). Node 1 alone has the resource disk. A
# counter with one restart, homed on node 2 (its driver runs there),
# lives on node 1; node 1 is killed; node 2 sees the death (the monitor
# says so) and asks the head where the counter goes now, naming the dead
# node in its NODE_PLACE: no node can hold it, and its next call fails
# saying so. Before, the head placed it again on the dead node from its
# held table, and the call failed later with "no restarts left". Then a
# task needing disk, submitted at the head, fails at once (no alive node
# has disk) instead of going to the dead node and failing its attempts.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
SMOD=$(cluster_mod schedmod)
GO="$TAP_TMP/go"
CL_ON_EXIT='touch "$GO" "$GO.end"'
export LUX_TEST_TABLE_HOLD_MS=600000

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1

"$LUX" run --address "$CL_DIR/n2" "$MOD" own spare disk=1 1 1 "$GO" >"$TAP_TMP/spare" 2>&1 &
spare=$!
CL_DRIVERS=$spare
cluster_wait_file "$GO.ready"
ok $? "a counter homed on node 2 answers" || diag "$(cat "$TAP_TMP/spare")"
is "$(head -n 1 "$TAP_TMP/spare")" "$CL_DIR/n1 1" "... from node 1, the only one with disk"
cluster_kill_node 1
ok $? "kill -9 node 1"
touch "$GO" "$GO.end"
wait $spare
ok $([ $? -ne 0 ]; echo $?) "the counter's next call fails"
like "$(cat "$TAP_TMP/spare")" "which held it, died, and no other node can hold it: no node" \
    "... because no alive node can hold it: $(tail -n 1 "$TAP_TMP/spare")"
nid=$(cat "$CL_DIR/n1/run/node.joined")
cluster_wait_sql "SELECT count(*) FROM actors WHERE class = 'Counter' AND node_id = '$nid'" "1" 10
ok $? "the actors view: created once on node 1, never again there" || diag "$CL_SQL"

cluster_run_fails "a task needing disk, submitted at the head, fails" \
    "no node of the cluster has disk=1" "$SMOD" where 1 disk=1

done_testing
