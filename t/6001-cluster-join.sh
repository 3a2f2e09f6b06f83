#!/bin/sh
# 6001-cluster-join: a cluster of a head and two nodes on this machine
# (t/lib/cluster.sh, loopback form). `lux start --head` writes a 0600
# token and prints the command that adds a machine; `lux start --address`
# joins a node (node_joined with its address, resources and store size);
# `lux status` lists every node alive with its resources, store and
# workers (text, JSON, from the head's directory, a node's, and an address
# with the token); `lux stop` of a node leaves (node_left, state left);
# kill -9 of a node's daemon, by its pid, gives node_died and says why.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
# a node that stops beating is dead after 2 s here (5 s by default)
export LUX_NODE_DEAD_MS=2000

out=$("$LUX" start --dir "$TAP_TMP/x" 2>&1)
ok $([ $? -eq 2 ] && echo 0 || echo 1) "lux start needs --head or --address (usage error)"
case "$out" in *"comes with the runtime"*) ok 1 "the old 'comes with the runtime' is gone" ;;
*) ok 0 "the old 'comes with the runtime' is gone" ;; esac

cluster_head --workers 1 --store-mb 32
ok $CL_RC "the head starts on $CL_ADDRESS"
like "$CL_OUT" "lux start --address $CL_ADDRESS --dir DIR --token-file TOKEN" \
    "it prints the command that adds a machine"
is "$(stat -c %a "$CL_TOKEN")" 600 "the token is mode 0600"

cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,B=2
ok $CL_RC "node 1 joins"
like "$CL_OUT" "as 127.0.0.2" "at its own address"
cluster_join 2 --workers 1 --store-mb 48
ok $CL_RC "node 2 joins"
n1=$(cat "$TAP_TMP/n1/run/node.joined")
n2=$(cat "$TAP_TMP/n2/run/node.joined")
ok $([ ${#n1} -eq 32 ] && [ ${#n2} -eq 32 ] && echo 0 || echo 1) "their IDs: $n1 $n2"

cluster_wait_sql "SELECT node_id, address, resources, store_bytes, state FROM nodes" \
    "$n1,127.0.0.2,\"CPU=1,B=2\",33554432" 30
ok $? "node_joined of node 1: its address, resources and store size"
cluster_wait_sql "SELECT node_id, address, store_bytes FROM nodes" "$n2,127.0.0.3,50331648" 30
ok $? "node_joined of node 2"

st=$("$LUX" status --dir "$TAP_TMP/head")
like "$st" "$(echo "$n1" | cut -c1-12) alive  127.0.0.2" "lux status on the head lists node 1 alive"
like "$st" "$(echo "$n2" | cut -c1-12) alive  127.0.0.3" "and node 2"
like "$st" "CPU=1,B=2" "with its resources"
js=$("$LUX" status --dir "$TAP_TMP/n1" --json)
like "$js" "\"node\": \"$n2\", \"state\": \"alive\", \"address\": \"127.0.0.3\"" \
    "lux status --json from a node's directory lists the other node"
like "$js" "\"store_bytes\": 50331648" "with its store's size"
like "$js" "\"role\": \"head+tail\"" "and the chains' replicas"
st=$("$LUX" status --address "$CL_ADDRESS" --token-file "$CL_TOKEN")
like "$st" "$(echo "$n1" | cut -c1-12) alive" "lux status --address with the token"

out=$("$LUX" stop --dir "$TAP_TMP/n1" 2>&1)
ok $? "lux stop of node 1: $out"
cluster_wait_sql "SELECT node_id, state, why FROM nodes" "$n1,left,it left (lux stop)" 30
ok $? "node_left: the nodes view says it left"
st=$("$LUX" status --dir "$TAP_TMP/head")
like "$st" "$(echo "$n1" | cut -c1-12) left" "lux status says it left"

pid=$(cluster_node_pid 2)
kill -9 "$pid"
ok $? "kill -9 node 2's daemon (pid $pid)"
cluster_wait_sql "SELECT node_id, state, why FROM nodes" "$n2,dead,no heartbeat for" 60
ok $? "node_died, with why"
st=$("$LUX" status --dir "$TAP_TMP/head")
like "$st" "$(echo "$n2" | cut -c1-12) dead" "lux status says it is dead"
cnt=$("$LUX" sql --dir "$TAP_TMP/head" --csv "SELECT count(*) AS n FROM event WHERE kind = 17 AND node = x'$n2'" | tail -1)
is "$cnt" 1 "node_died once"

done_testing
