#!/bin/sh
# 6155-cluster-locate-head-restart: a node's ask where an object lives
# (NODE_LOCATE to the head's node) that the head never answers because it
# died with the ask unread is asked again, and the restarted head answers:
# the get has its object. Before, the pull waited for that one answer and
# failed after LUX_XFER_TIMEOUT_MS, "the head's node did not say where it
# lives within 10000 ms" (t/6091 --harsh, seeds 1-3: every one failed so,
# a task or nested get each time the head was killed -9 during the graph).
# The head is stopped (SIGSTOP) before node 2's driver asks, so that the
# ask waits unread in its socket, then killed -9 and started again.
# (Before the fix checks 10-11 failed.)
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
CL_ON_EXIT='kill -CONT "$sup" 2>/dev/null; touch "$TAP_TMP/made.done" "$TAP_TMP/go"'

cluster_up -d 600000 CPU=1 CPU=1 CPU=1

cluster_hold make 3000000 1 made
ok $? "a driver on node 1 makes a task's output of 3,000,000 bytes and holds it"

# a first get: node 2's connection to the head's node is up from now on
# (a first ask to a stopped head would wait in node 2's own queue for the
# connection's handshake, and reach the head that comes back); the copy
# it pulled goes with that driver
out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" get 3000000 "$REF" 2>&1)
is "$out" "get ok (3000000 bytes)" "a first get on node 2, with the head up"
"$LUX" run --address "$CL_DIR/n2" "$MOD" get 3000000 "$REF" "$TAP_TMP/go" >"$TAP_TMP/get" 2>&1 &
get=$!
CL_DRIVERS=$get
cluster_wait_file "$TAP_TMP/go.ready"
ok $? "a driver on node 2 is connected (its start needs the head)"
sup=$(cat "$CL_DIR/head/run/supervisor.pid")
kill -STOP "$sup"
ok $? "SIGSTOP the head's supervisor (pid $sup)"
t0=$(date +%s)
touch "$TAP_TMP/go"
# the driver gets, its node asks the stopped head at its next tick: the
# ask waits unread in the head's socket
sleep 2
kill -9 "$sup"
ok $? "kill -9 the stopped head, the ask unread"
cluster_wait_gone "$sup"
ok $? "it is gone (30 s at most)"
out=$(LUX_NODE_DEAD_MS=600000 "$LUX" start --head --dir "$CL_DIR/head" 2>&1)
ok $? "the head starts again" || diag "$out"
wait $get
ok $? "node 2's get ends well" || diag "$(cat "$TAP_TMP/get")"
is "$(cat "$TAP_TMP/get")" "get ok (3000000 bytes)" "... with the object, $(($(date +%s) - t0)) s after it asked"

done_testing
