#!/bin/sh
# 6151-cluster-unconfirmed-after-head-restart: after a head restart, a
# node the log says is alive but that has not beaten to the new monitor
# yet is alive-but-unconfirmed: listed with the resources the log says it
# has, and a spilled task that only such a node could run waits for it
# (bounded) rather than fails. A head and two nodes, dead after 8 s: node
# 1 has w=1, node 2 has v=1. The head's supervisor is killed -9; while it
# is down node 1 is stopped (SIGSTOP: its beats held) and node 2 killed
# -9 (it never comes back); the head starts again.
# - `lux status` lists node 1 alive, unconfirmed, with CPU=1,w=1;
# - a task needing w, run while node 1 is held, still waits 2 s later
#   (before: failed at once, "no node of the cluster has w=1", the
#   table having no resources for a node until its first beat); node 1
#   goes on, beats, and the task runs there;
# - a task needing v (only node 2, dead) waits too, and fails once node 2
#   has been silent for 4 x LUX_NODE_DEAD_MS, naming it.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
DEAD=8000

cluster_up -d $DEAD CPU=1 CPU=1,w=1 CPU=1,v=1
id1=$(cat "$CL_DIR/n1/run/node.joined")
id2=$(cat "$CL_DIR/n2/run/node.joined")
pid1=$(cluster_node_pid 1)

node_entry() { # node_entry ID: node ID's entry in `lux status --json` (one line), or ""
    "$LUX" status --dir "$CL_DIR/head" --json 2>/dev/null | tr '{' '\n' |
        grep "\"node\": \"$1\""
}

sup=$(cat "$CL_DIR/head/run/supervisor.pid")
kill -9 "$sup"
ok $? "kill -9 the head's supervisor (pid $sup)"
cluster_wait_gone "$sup"
ok $? "it is gone (30 s at most)"
kill -STOP "$pid1"
ok $? "node 1 ($id1, the only one with w) held by SIGSTOP: no beats"
cluster_kill_node 2
ok $? "kill -9 node 2 ($id2, the only one with v) while the head is down"
out=$(LUX_NODE_DEAD_MS=$DEAD "$LUX" start --head --dir "$CL_DIR/head" 2>&1)
ok $? "the head starts again" || { diag "$out"; kill -CONT "$pid1"; }
t0=$(date +%s%3N)

ENTRY=$(node_entry "$id1")
like "$ENTRY" '"state": "alive"' "lux status lists node 1 alive" || diag "$ENTRY"
like "$ENTRY" '"unconfirmed": 1' "... unconfirmed" || diag "$ENTRY"
like "$ENTRY" '"resources": "CPU=1,w=1' "... with the resources the log says it has" ||
    diag "$ENTRY"
like "$("$LUX" status --dir "$CL_DIR/head" 2>&1)" "unconfirmed: not heard from since the head" \
    "... and its table says so"

"$LUX" run --address "$CL_DIR/head" "$MOD" where 1 w=1 >"$TAP_TMP/w.out" 2>&1 &
wpid=$!
"$LUX" run --address "$CL_DIR/head" "$MOD" where 1 v=1 >"$TAP_TMP/v.out" 2>&1 &
vpid=$!
sleep 2
ok $(kill -0 $wpid 2>/dev/null; echo $?) "the task needing w still waits 2 s later" ||
    diag "$(cat "$TAP_TMP/w.out")"
held=$(($(date +%s%3N) - t0))
kill -CONT "$pid1"
ok $? "node 1 goes on, ${held} ms after the head started (the monitor's dead time: $DEAD)"
wait $wpid
rc=$?
is "$rc" 0 "the task needing w ends well" || diag "$(cat "$TAP_TMP/w.out")"
like "$(cat "$TAP_TMP/w.out")" "$CL_DIR/n1" "... on node 1"
is "$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT state FROM nodes WHERE node_id = '$id1'" |
    tail -n 1)" alive "node 1 is alive in the log"
like "$(node_entry "$id1")" '"unconfirmed": null' "... and confirmed in lux status"

wait $vpid
rc=$?
ms=$(($(date +%s%3N) - t0))
vout=$(cat "$TAP_TMP/v.out")
ok $([ $rc -ne 0 ]; echo $?) "the task needing v fails" || diag "$vout"
like "$vout" "no node of the cluster has v=1" "... naming the resource" || diag "$vout"
like "$vout" "node $id2 (silent" "... and node 2, which had it, dead" || diag "$vout"
ok $([ $ms -ge $((3 * DEAD)) ]; echo $?) \
    "... once it had been silent 4 x LUX_NODE_DEAD_MS since the restart (${ms} ms)"
ok $([ $ms -le 120000 ]; echo $?) "... not waiting for ever"
cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$id2'" "dead" 10
ok $? "the log says node 2 died" || diag "$CL_SQL"
why=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT why FROM nodes WHERE node_id = '$id2'" |
    tail -n 1)
like "$why" "not heard from since the head started again" "... not heard from: $why"
done_testing
