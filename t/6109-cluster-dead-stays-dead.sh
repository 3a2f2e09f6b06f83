#!/bin/sh
# 6109-cluster-dead-stays-dead: a node the log says is dead stays dead
# after the head restarts. Node 1 is stopped (SIGSTOP) until the head's
# monitor declares it dead (node_died); the head is stopped, node 1 goes on
# (SIGCONT) and beats into the void, and the head starts again. Its monitor
# rebuilt its table from the log's alive nodes only, so node 1's next beat
# looked like a new node's first: it was taken back, silently, under the
# ID the log says is dead (lux status: alive; the log: dead). Now the
# monitor refuses it with DEAD, as the head that declared it would have:
# the node logs why and stops, and a node started again joins as a new node
# (doc/DESIGN.md 7.2).
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
pid=
trap '[ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null; cluster_down; tap_cleanup' EXIT
export LUX_NODE_DEAD_MS=2000

cluster_head --workers 1 --store-mb 16
ok $CL_RC "the head starts" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 16 --resources CPU=1
ok $CL_RC "node 1 joins" || diag "$CL_OUT"
n1=$(cat "$TAP_TMP/n1/run/node.joined")
pid=$(cluster_node_pid 1)

kill -STOP "$pid"
ok $? "node 1's daemon (pid $pid) stopped: no beats"
cluster_wait_sql "SELECT node_id, state, why FROM nodes" "$n1,dead,no heartbeat for" 60
ok $? "the head declares it dead (node_died)"

out=$("$LUX" stop --dir "$TAP_TMP/head" 2>&1)
ok $? "the head stops: $out"
kill -CONT "$pid"
ok $? "node 1 goes on, beating to a head that is down"
out=$("$LUX" start --head --dir "$TAP_TMP/head" 2>&1)
ok $? "the head starts again" || diag "$out"
CL_HEAD_UP=1

# its beats reach the new monitor within a second of its start; give it 30 s
end=$(($(date +%s) + 30))
while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do sleep 0.2; done
ok $(kill -0 "$pid" 2>/dev/null && echo 1 || echo 0) \
    "node 1, dead in the log, is refused by the restarted head and stops"
log=$(grep "declared node $n1 dead" "$TAP_TMP/n1/log/node.log")
like "$log" "no heartbeat for" "its log says why: the log's reason" || diag "$log"
st=$("$LUX" status --dir "$TAP_TMP/head" 2>&1)
like "$st" "$(echo "$n1" | cut -c1-12) dead" "lux status on the head says it is dead" ||
    diag "$st"
ok $(case "$st" in *"$(echo "$n1" | cut -c1-12) alive"*) echo 1 ;; *) echo 0 ;; esac) "not alive"
cluster_wait_sql "SELECT node_id, state FROM nodes" "$n1,dead" 10
ok $? "the nodes view still says dead"
cnt=$("$LUX" sql --dir "$TAP_TMP/head" --csv \
    "SELECT count(*) AS n FROM event WHERE kind IN (17, 24) AND node = x'$n1'" | tail -1)
is "$cnt" 1 "one death, no departure logged for it"
pid=

# the same directory started again is a new node, and it is taken
cluster_join 1 --workers 1 --store-mb 16 --resources CPU=1
ok $CL_RC "node 1's directory started again joins" || diag "$CL_OUT"
n1b=$(cat "$TAP_TMP/n1/run/node.joined")
ok $([ -n "$n1b" ] && [ "$n1b" != "$n1" ]; echo $?) "as a new node"
cluster_wait_sql "SELECT node_id, state FROM nodes" "$n1b,alive" 30
ok $? "alive in the nodes view"

done_testing
