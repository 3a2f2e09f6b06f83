#!/bin/sh
# 6153-cluster-actor-replay-holder-lives: the node that holds an actor
# again after its holder died lives on. A head and two nodes, dead after
# 5 s; node 1 alone has w; a counter needing w is homed on the head (its
# driver there) and called in a loop by a driver on node 2 (a handle
# there). Node 1 is killed -9 with calls in flight and started again in
# its directory once the head logged it dead (a new node, on the same
# address): the home
# makes the counter there again and re-applies the calls the log has
# (NODE_TASK with the replay flag), and node 2's calls go on.
# Before, each re-applied call stayed in the new holder's table of tasks
# after it was freed (exec_ractor.c nm_ractor_taken: a replayed run is not
# in nm->tasks, and is freed as if not), and the next walk of that table
# read freed memory: its daemon died within seconds (a general protection
# fault or a segfault, in nm_ractor_lost from the watch, or in
# nm_client_gone when the counter's driver ended; 5 runs of 5, one of
# them on main), and node 2's calls failed 30 s later, "no live node of the
# cluster holds actor". The calls in flight at the kill may be applied
# twice (DESIGN 7.4's limits): no count is checked.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
GO="$TAP_TMP/go"
CL_ON_EXIT='touch "$GO" "$GO.end" "$GO.stop"'
export LUX_NODE_DEAD_MS=5000

cluster_up CPU=1 CPU=1,w=1 CPU=1

lines() { wc -l <"$1" 2>/dev/null || echo 0; }
more() { # more F N: wait up to 60 s for F to have more than N lines
    _i=0
    while [ "$(lines "$1")" -le "$2" ] && [ $_i -lt 600 ]; do sleep 0.1; _i=$((_i + 1)); done
    [ "$(lines "$1")" -gt "$2" ]
}

"$LUX" run --address "$CL_DIR/head" "$MOD" own ctr w=1 1 1 "$GO" >"$TAP_TMP/own" 2>&1 &
own=$!
CL_DRIVERS="$CL_DRIVERS $own"
cluster_wait_file "$GO".ready 120
ok $? "a counter needing w, homed on the head, answers" || diag "$(cat "$TAP_TMP/own")"
"$LUX" run --address "$CL_DIR/n2" "$MOD" loop ctr "$GO".stop >"$TAP_TMP/loop" 2>&1 &
loop=$!
CL_DRIVERS="$CL_DRIVERS $loop"
more "$TAP_TMP/loop" 0
ok $? "a driver on node 2 calls it in a loop" || diag "$(cat "$TAP_TMP/loop")"
id1=$(cat "$CL_DIR/n1/run/node.joined")
cluster_kill_node 1
ok $? "kill -9 node 1, which holds it, calls in flight"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'node_died' AND node_id = '$id1'" 1 60
ok $? "the head logs node 1 dead (node_died), about 5 s later"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,w=1
ok $CL_RC "node 1 starts again in its directory, a new node with w" || diag "$CL_OUT"
node=$(cluster_node_pid 1)
n=$(lines "$TAP_TMP/loop")
more "$TAP_TMP/loop" "$n"
ok $? "node 2's calls answer again" || diag "$(tail -n 3 "$TAP_TMP/loop")"
like "$(tail -n 1 "$TAP_TMP/loop")" "$CL_DIR/n1 " "... from the new node 1" ||
    diag "$(tail -n 3 "$TAP_TMP/loop")"
sleep 5
ok $(kill -0 "$node" 2>/dev/null; echo $?) "5 s later the new node 1's daemon (pid $node) lives" ||
    diag "$(tail -n 5 "$CL_DIR/n1/log/node.log")"
n=$(lines "$TAP_TMP/loop")
more "$TAP_TMP/loop" "$n"
like "$(tail -n 1 "$TAP_TMP/loop")" "$CL_DIR/n1 " "... and answers node 2's calls" ||
    diag "$(tail -n 3 "$TAP_TMP/loop")"
touch "$GO".stop
wait $loop
ok $? "node 2's driver ends well" || diag "$(tail -n 3 "$TAP_TMP/loop")"
touch "$GO" "$GO".end
wait $own
ok $? "the counter's driver on the head ends well" || diag "$(cat "$TAP_TMP/own")"
sleep 3
ok $(kill -0 "$node" 2>/dev/null; echo $?) "node 1's daemon lives after the counter ends" ||
    diag "$(tail -n 5 "$CL_DIR/n1/log/node.log")"
done_testing
