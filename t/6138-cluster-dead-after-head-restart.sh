#!/bin/sh
# 6138-cluster-dead-after-head-restart: the membership monitor's table
# (`lux status`, and the global scheduler's table of nodes) is rebuilt
# from the log when the head starts again, dead nodes included (DESIGN
# 7.2: the global scheduler's state is rebuilt from the log and the
# heartbeats). A head and two nodes, dead after 2 s: node 1 (the only one
# with w=1) is killed -9 and declared dead (node_died); then the head's
# supervisor (chain master, membership monitor and the head's node
# manager inside) is killed -9, node 2 is killed -9 while the head is
# down (it never comes back), and the head is started again. Before, the
# monitor kept the log's dead nodes aside (only to refuse their beats):
# `lux status` did not list node 1 at all, and a task needing w failed as
# if no node had ever had it.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)

cluster_up -d 2000 CPU=1 CPU=1,w=1 CPU=1
id1=$(cat "$CL_DIR/n1/run/node.joined")
id2=$(cat "$CL_DIR/n2/run/node.joined")

# node_entry ID: node ID's entry in `lux status --json` (one line), or ""
node_entry() {
    "$LUX" status --dir "$CL_DIR/head" --json 2>/dev/null | tr '{' '\n' |
        grep "\"node\": \"$1\""
}
# wait_dead ID: wait up to 60 s for `lux status` to say node ID is dead
wait_dead() {
    _end=$(($(date +%s) + 60))
    while :; do
        ENTRY=$(node_entry "$1")
        case "$ENTRY" in *'"state": "dead"'*) return 0 ;; esac
        [ "$(date +%s)" -lt $_end ] || return 1
        sleep 0.2
    done
}

cluster_kill_node 1
ok $? "kill -9 node 1 ($id1), the only node with w"
cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$id1'" "dead" 60
ok $? "the log says node 1 died" || diag "$CL_SQL"
wait_dead "$id1"
ok $? "lux status lists node 1 as dead" || diag "$ENTRY"

sup=$(cat "$CL_DIR/head/run/supervisor.pid")
kill -9 "$sup"
ok $? "kill -9 the head's supervisor (pid $sup: chain master, monitor, node manager)"
while kill -0 "$sup" 2>/dev/null; do sleep 0.1; done
cluster_kill_node 2
ok $? "kill -9 node 2 ($id2) while the head is down: it never comes back"
out=$(LUX_NODE_DEAD_MS=2000 "$LUX" start --head --dir "$CL_DIR/head" 2>&1)
ok $? "the head starts again" || diag "$out"

wait_dead "$id1"
ok $? "lux status lists node 1, dead before the restart, as dead" ||
    diag "$("$LUX" status --dir "$CL_DIR/head" 2>&1)"
like "$ENTRY" '"resources": "CPU=1,w=1' "... with the resources the log says it had" ||
    diag "$ENTRY"
like "$ENTRY" "the log says it died before the head's restart: no heartbeat for" \
    "... and the log's reason" || diag "$ENTRY"
wait_dead "$id2"
ok $? "lux status lists node 2, which never came back, as dead" ||
    diag "$("$LUX" status --dir "$CL_DIR/head" 2>&1)"
cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$id2'" "dead" 60
ok $? "... and the log says it died" || diag "$CL_SQL"
st=$("$LUX" status --dir "$CL_DIR/head" 2>&1)
like "$st" "$(echo "$id1" | cut -c1-12) dead" "the table of lux status shows node 1 dead" ||
    diag "$st"

# the global scheduler's table is the monitor's: node 1 had w, and is dead
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 1 w=1 2>&1)
ok $([ $? -ne 0 ]; echo $?) "a task needing w fails" || diag "$out"
like "$out" "no node of the cluster has w=1" "... naming the resource" || diag "$out"
like "$out" "node $id1 (silent" "... and node 1, dead, which had it" || diag "$out"

done_testing
