#!/bin/sh
# 6150-cluster-stopped-headless-dies: a node that stops while its head is
# gone cannot log that it left (its LEAVE has no monitor to go to, the
# log's chain master is the head's): the head, when it starts again,
# decides by the node's silence and logs node_died, with a reason that
# says the node was not heard from since the restart. A head and two
# nodes, dead after 2 s; the head's supervisor (chain master, membership
# monitor, node manager) is killed -9; node 1 is stopped (`lux stop`,
# as t/5022) while the head is down; the head starts again. Node 2 lives
# on and must stay alive.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"

cluster_up -d 2000 CPU=1 CPU=1 CPU=1
id1=$(cat "$CL_DIR/n1/run/node.joined")
id2=$(cat "$CL_DIR/n2/run/node.joined")

# node_entry ID: node ID's entry in `lux status --json` (one line), or ""
node_entry() {
    "$LUX" status --dir "$CL_DIR/head" --json 2>/dev/null | tr '{' '\n' |
        grep "\"node\": \"$1\""
}

sup=$(cat "$CL_DIR/head/run/supervisor.pid")
kill -9 "$sup"
ok $? "kill -9 the head's supervisor (pid $sup)"
cluster_wait_gone "$sup"
ok $? "it is gone (30 s at most)"
out=$("$LUX" stop --dir "$CL_DIR/n1" 2>&1)
ok $? "lux stop of node 1 ($id1) while the head is down" || diag "$out"
like "$(cat "$CL_DIR/n1/log/node.log")" "the head is gone" \
    "... its log says it could not tell the head" ||
    diag "$(tail -n 20 "$CL_DIR/n1/log/node.log")"
is "$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT state FROM nodes WHERE node_id = '$id1'" |
    tail -n 1)" alive "the log says node 1 is alive while the head is down"

t0=$(date +%s)
out=$(LUX_NODE_DEAD_MS=2000 "$LUX" start --head --dir "$CL_DIR/head" 2>&1)
ok $? "the head starts again" || diag "$out"
cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$id1'" "dead" 60
ok $? "the log says node 1 died ($(($(date +%s) - t0)) s after the restart)" || diag "$CL_SQL"
why=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT why FROM nodes WHERE node_id = '$id1'" |
    tail -n 1)
like "$why" "not heard from since the head started again" "... with why: $why"
like "$why" "the log said it was alive when the head stopped" "... and what the log said"
ENTRY=$(node_entry "$id1")
like "$ENTRY" '"state": "dead"' "lux status lists node 1 dead" || diag "$ENTRY"
like "$ENTRY" "not heard from since the head started again" "... with the same reason" ||
    diag "$ENTRY"
like "$ENTRY" '"resources": "CPU=1' "... and the resources the log says it had" ||
    diag "$ENTRY"

# node 2 beat on through the restart: alive in the log and in lux status
sleep 3
is "$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT state FROM nodes WHERE node_id = '$id2'" |
    tail -n 1)" alive "node 2, which beat on, is alive in the log"
like "$(node_entry "$id2")" '"state": "alive"' "... and in lux status"
done_testing
