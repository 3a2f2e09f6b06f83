#!/bin/sh
# 6059-cluster-watch-headless: a node whose tasks are away asks the head's
# membership monitor who is alive once a second (its watch). While the
# head is stopped (SIGSTOP of its supervisor), that ask has no answer;
# the node must go on serving its own clients meanwhile. The ask's wait
# is made long here (LUX_WATCH_WAIT_MS=600000 on the nodes) so that a
# watch that waits on the node's loop shows: a driver of node 2 running
# local tasks then gets nothing (before: its gets ran into their 120 s
# timeout); a watch that asks without waiting serves it. Then the head
# goes on (SIGCONT) and the task away finishes.
# The head's membership monitor stops with it, and on SIGCONT it counts
# the nodes' silence from their last beat it read: a stop longer than
# LUX_NODE_DEAD_MS (5 s), which the four naps and a driver's start take
# at load 20 and more, had it declare them dead (node 2, whose driver
# waits for the task away, then went, and checks 9-10 failed). Deaths are
# not what this checks: the head's dead-node time is 10 minutes here.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
CL_ON_EXIT='kill -CONT "$sup" 2>/dev/null'
MOD=$(cluster_mod schedmod)
export LUX_WATCH_WAIT_MS=600000

cluster_up -d 600000 CPU=1 CPU=1,disk=1 CPU=1
sup=$(cat "$CL_DIR/head/run/supervisor.pid")

# a task of node 2 away on node 1 (disk=1) while the head is stopped
"$LUX" run --address "$CL_DIR/n2" "$MOD" nap 30000 disk=1 >"$TAP_TMP/away" 2>&1 &
away=$!
cluster_wait_file "$CL_DIR/n1/napping"
ok $? "node 2's task needing disk=1 runs on node 1"
kill -STOP "$sup"
ok $? "SIGSTOP the head's supervisor (its monitor answers nothing now)"

# local tasks on node 2, one after the other over a few of the watch's
# asks; bounded: the gets give up after 120 s, the run is killed at 240 s
out=$(timeout -s KILL 240 "$LUX" run --address "$CL_DIR/n2" "$MOD" naps 4 1000 - 2>&1)
ok $? "node 2 serves its driver while the head is stopped" || diag "$out"
is "$(echo "$out" | sort -u)" "$CL_DIR/n2" "... its tasks ran on node 2"

kill -CONT "$sup"
ok $? "SIGCONT the head's supervisor"
wait $away
ok $? "the task away finishes" || diag "$(cat "$TAP_TMP/away")"
is "$(cat "$TAP_TMP/away")" "$CL_DIR/n1" "... on node 1"

done_testing
