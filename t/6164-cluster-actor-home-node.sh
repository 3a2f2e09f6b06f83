#!/bin/sh
# 6164-cluster-actor-home-node: an actor whose home is a node that is not
# the head keeps its state when the node holding it dies and it is placed
# again. A head and two nodes, dead after 5 s; node 1 alone has w. A
# driver on node 2 makes a counter needing w (its home node 2, held by
# node 1; 2 restarts) and adds 1 three times (3). Node 1 is killed -9 and
# started again once the head logged it dead, while the head's node drops
# every request for an actor's calls (LUX_TEST_ACTOR_CALLS_DROP) for 3 s:
# the home asks again. It places the counter there again and re-applies
# the calls the log has (all three: no checkpoint); the driver's next
# three adds must answer 4, 5 and 6. Then node 1 is killed again with the
# requests dropped for good: the home's wait for them is bounded
# (LUX_TEST_ACTOR_CALLS_MS, 6 s), and the counter dies saying why (its
# actor_died), not answered from a state that lost calls.
# Before, the home read those calls from the log's files, which only the
# head's machine has; it could not, said so in a warning, and placed the
# counter again from its constructor with its calls in flight only: it
# answered 1, 2 and 3, its state silently lost.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
GO="$TAP_TMP/go"
DROP="$TAP_TMP/drop"
CL_ON_EXIT='touch "$GO" "$GO.end"'
export LUX_NODE_DEAD_MS=5000 LUX_TEST_ACTOR_CALLS_DROP="$DROP" LUX_TEST_ACTOR_CALLS_MS=6000

cluster_up CPU=1 CPU=1,w=1 CPU=1

"$LUX" run --address "$CL_DIR/n2" "$MOD" own ctr w=1 2 3 "$GO" >"$TAP_TMP/own" 2>&1 &
own=$!
CL_DRIVERS="$CL_DRIVERS $own"
cluster_wait_file "$GO".ready 120
is "$(cat "$TAP_TMP/own" | tr '\n' ' ')" "$CL_DIR/n1 1 $CL_DIR/n1 2 $CL_DIR/n1 3 " \
    "a counter needing w, its home on node 2, held by node 1, counts 3" ||
    diag "$(cat "$TAP_TMP/own")"
dead() { # dead ID: the head logs node ID dead
    cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'node_died' AND node_id = '$1'" 1 60
}
id1=$(cat "$CL_DIR/n1/run/node.joined")
touch "$DROP"
cluster_kill_node 1
ok $? "kill -9 node 1, which holds it, the head's node dropping requests for calls"
dead "$id1"
ok $? "the head logs node 1 dead (node_died)"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,w=1
ok $CL_RC "node 1 starts again in its directory, a new node with w" || diag "$CL_OUT"
sleep 3
rm -f "$DROP"
touch "$GO"
cluster_wait_file "$GO".done 120
ok $? "the driver's next three adds are answered" || diag "$(cat "$TAP_TMP/own")"
is "$(tail -n 3 "$TAP_TMP/own" | tr '\n' ' ')" "$CL_DIR/n1 4 $CL_DIR/n1 5 $CL_DIR/n1 6 " \
    "... 4, 5 and 6, from the new node 1: the three calls before the kill re-applied" ||
    diag "$(cat "$TAP_TMP/own"; grep -h 'actor' "$CL_DIR/n2/log/node.log" | tail -n 5)"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'actor_restarted'" 1 30
ok $? "the log has the counter's restart (actor_restarted)" || diag "$CL_SQL"

# the head's node silent for good on the calls: bounded, and said
id1=$(cat "$CL_DIR/n1/run/node.joined")
touch "$DROP"
cluster_kill_node 1
ok $? "kill -9 node 1 again, the requests for calls dropped for good"
dead "$id1"
ok $? "the head logs it dead"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,w=1
ok $CL_RC "node 1 starts again" || diag "$CL_OUT"
cluster_wait_line "did not answer within 6000 ms" "$CL_DIR/n2/log/node.log" 60
ok $? "the home gives up on the head's answer after 6 s" ||
    diag "$(grep -h 'actor' "$CL_DIR/n2/log/node.log" | tail -n 5)"
cluster_wait_sql "SELECT info FROM events WHERE kind = 'actor_died'" \
    "its calls cannot be read from the log to place it again (restart 2): the head's node" 30
ok $? "the log has the counter's death, naming why it could not be placed again" ||
    diag "$CL_SQL"
touch "$GO".end
wait $own
ok $? "the driver on node 2 ends" || diag "$(cat "$TAP_TMP/own")"
done_testing
