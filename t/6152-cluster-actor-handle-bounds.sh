#!/bin/sh
# 6152-cluster-actor-handle-bounds: a handle on an actor held by another
# node (a stub: the actor's home is elsewhere) whose node dies waits as
# long as the actor's home waits for a node to place it on, and no
# longer. The home waits for a lately dead node that had the actor's
# resources up to 4 x LUX_NODE_DEAD_MS after its last beat (exec_table.c
# s_no_place); the stub gave up S_LOST_MS (30 s) after it lost the
# actor, whatever the home did. A head and two nodes, every one dead after
# 5 s; node 1 alone has w (w=2: room for both counters of the test);
# counters needing w=1 are made by a driver on
# the head (their home), and a driver on node 2 calls them by name (a
# stub there). LUX_TEST_ACTOR_LOST_MS=2000 shortens S_LOST_MS, as a dead
# time above 7.5 s would make the home's wait outlast the stub's 30 s.
# The driver on node 2 calls one at a time, when the test says (actormod
# "steps"): a call is made just after node 1 is killed, none is in flight
# at the kill (a call in flight that the dead node had logged is applied
# twice, DESIGN 7.4's limits).
#   1. node 1 killed -9, a call made; it waits (before: failed 2 s after
#      the stub lost the actor while the home still waited, "no live
#      node of the cluster holds actor"); node 1 is started again (a new
#      node with w): the counter is made there and the call answers, and
#      the next one. The call made while node 1 was dead is applied after
#      the calls its home re-applies from the log (answer 3); before, it
#      was applied first (answer 1): node 2's DEALER to the dead node held
#      it and delivered it to the new node 1, on the same address, before
#      the actor's creation (now dropped when node 2 learns of the death,
#      nm_peer_forget, then sent again once the actor is found).
#   2. node 1 killed -9 and left dead, a call made: once the home gives
#      up (the actor_died in the log), the call fails at once with the
#      home's reason (before: it waited out the stub's own bound and said
#      only that nobody holds the actor; with S_LOST_MS, 30 s past the
#      home's end).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
GO="$TAP_TMP/go"
ST="$TAP_TMP/step"
CL_ON_EXIT='for _g in "$GO"1 "$GO"2; do touch "$_g" "$_g.end"; done; for _i in 1 2 3; do touch "$ST"1.$_i "$ST"2.$_i; done'
DEAD=5000
export LUX_NODE_DEAD_MS=$DEAD LUX_TEST_ACTOR_LOST_MS=2000

cluster_up CPU=1 CPU=1,w=2 CPU=1

# lines F: how many lines the file F has
lines() { wc -l <"$1" 2>/dev/null || echo 0; }
# more F N: wait up to 60 s for F to have more than N lines
more() {
    _i=0
    while [ "$(lines "$1")" -le "$2" ] && [ $_i -lt 600 ]; do sleep 0.1; _i=$((_i + 1)); done
    [ "$(lines "$1")" -gt "$2" ]
}

# 1. the node comes back within the home's wait
id1=$(cat "$CL_DIR/n1/run/node.joined")
"$LUX" run --address "$CL_DIR/head" "$MOD" own ctr1 w=1 1 1 "$GO"1 >"$TAP_TMP/o1" 2>&1 &
o1=$!
CL_DRIVERS="$CL_DRIVERS $o1"
cluster_wait_file "$GO"1.ready 120
ok $? "a counter needing w, homed on the head, answers" || diag "$(cat "$TAP_TMP/o1")"
"$LUX" run --address "$CL_DIR/n2" "$MOD" steps ctr1 "$ST"1 3 >"$TAP_TMP/l1" 2>&1 &
l1=$!
CL_DRIVERS="$CL_DRIVERS $l1"
touch "$ST"1.1
more "$TAP_TMP/l1" 0
ok $? "a driver on node 2 calls it by name" || diag "$(cat "$TAP_TMP/l1")"
like "$(head -n 1 "$TAP_TMP/l1")" "$CL_DIR/n1 2" "... and node 1 answers" ||
    diag "$(cat "$TAP_TMP/l1")"
t0=$(date +%s%3N)
cluster_kill_node 1
ok $? "kill -9 node 1 ($id1)"
touch "$ST"1.2
sleep 11
ok $(kill -0 $l1 2>/dev/null; echo $?) \
    "a call made then still waits $(($(date +%s%3N) - t0)) ms after (the home waits $((4 * DEAD)))" ||
    diag "$(tail -n 3 "$TAP_TMP/l1")"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,w=2
ok $CL_RC "node 1 starts again, a new node with w ($(($(date +%s%3N) - t0)) ms after the kill)" ||
    diag "$CL_OUT"
more "$TAP_TMP/l1" 1
ok $? "the call answers" || diag "$(tail -n 3 "$TAP_TMP/l1")"
is "$(sed -n 2p "$TAP_TMP/l1")" "$CL_DIR/n1 3" \
    "... from the new node 1, after the 2 calls of the log re-applied (before: 1)" ||
    diag "$(tail -n 3 "$TAP_TMP/l1")"
touch "$ST"1.3
wait $l1
ok $? "the next call answers too, and the driver ends well" || diag "$(tail -n 3 "$TAP_TMP/l1")"
c2=$(sed -n 2p "$TAP_TMP/l1" | cut -d' ' -f2)
is "$(sed -n 3p "$TAP_TMP/l1")" "$CL_DIR/n1 $((c2 + 1))" "... and the next, once"
node=$(cluster_node_pid 1)

# 2. the node does not come back: the stub ends with the home
id1=$(cat "$CL_DIR/n1/run/node.joined")
"$LUX" run --address "$CL_DIR/head" "$MOD" own ctr2 w=1 1 1 "$GO"2 >"$TAP_TMP/o2" 2>&1 &
o2=$!
CL_DRIVERS="$CL_DRIVERS $o2"
cluster_wait_file "$GO"2.ready 120
ok $? "a second counter needing w, one restart, answers" || diag "$(cat "$TAP_TMP/o2")"
"$LUX" run --address "$CL_DIR/n2" "$MOD" steps ctr2 "$ST"2 2 >"$TAP_TMP/l2" 2>&1 &
l2=$!
CL_DRIVERS="$CL_DRIVERS $l2"
touch "$ST"2.1
more "$TAP_TMP/l2" 0
ok $? "node 2 calls it by name" || diag "$(cat "$TAP_TMP/l2")"
ok $(kill -0 "$node" 2>/dev/null; echo $?) "node 1's daemon (pid $node) lives on"
t0=$(date +%s%3N)
cluster_kill_node 1
ok $? "kill -9 node 1 ($id1), for good"
touch "$ST"2.2
wait $l2
rc=$?
ms=$(($(date +%s%3N) - t0))
out=$(tail -n 1 "$TAP_TMP/l2")
ok $([ $rc -ne 0 ]; echo $?) "the call made then fails (${ms} ms after the kill)" || diag "$out"
like "$out" "no other node can hold it" "... with the home's reason" || diag "$out"
like "$out" "none came back within $((4 * DEAD)) ms" "... naming the home's bound" || diag "$out"
ok $([ $ms -ge $((3 * DEAD)) ]; echo $?) "... not before the home gave up"
ok $([ $ms -le $((4 * DEAD + 2000 + 30000)) ]; echo $?) \
    "... nor long after (the stub's own bound: 2000 + 4 x $DEAD ms from its loss)"
cluster_wait_value "SELECT count(*) FROM event WHERE kind = 15 AND info LIKE '%no other node can hold it%'" 1 10
ok $? "the log has the actor's death, from its home" || diag "$CL_SQL"
for g in "$GO"1 "$GO"2; do touch "$g" "$g.end"; done
wait $o1 $o2
done_testing
