#!/bin/sh
# 6004-cluster-netns: the namespace form of the one-box cluster
# (t/lib/cluster.sh): a head and a node each in a network namespace of its
# own, routed through a hub namespace. The node joins over the hub; a
# one-way partition (ip -n HUB rule ... blackhole) from the node to the
# head stops its heartbeats, and the head records node_died; once healed,
# the node hears that it was declared dead and stops by itself. Needs root
# and iproute2: skipped with the reason otherwise.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
why=$(cluster_netns_why)
[ -z "$why" ] || { tap_cleanup; skip_all "$why"; }
trap 'cluster_down; tap_cleanup' EXIT
export LUX_NODE_DEAD_MS=2000

cluster_netns_up 1
ok $? "namespaces $CL_NS-0 (head), $CL_NS-1 (node) and $CL_NS-hub"
cluster_head --workers 1 --store-mb 32
ok $CL_RC "the head starts in its namespace on $CL_ADDRESS"
cluster_join 1 --workers 1 --store-mb 32
ok $CL_RC "the node joins from its own namespace"
like "$CL_OUT" "as $(cl_ip 1)" "at its own address"
n1=$(cat "$TAP_TMP/n1/run/node.joined")
pid=$(cluster_node_pid 1)
cluster_wait_sql "SELECT node_id, address, state FROM nodes" "$n1,$(cl_ip 1),alive" 30
ok $? "node_joined names its address"

cluster_partition 1 0
ok $? "partition: the node's packets to the head are dropped"
cluster_wait_sql "SELECT node_id, state FROM nodes" "$n1,dead" 60
ok $? "the head records node_died"
ok $(kill -0 "$pid" 2>/dev/null && echo 0 || echo 1) "the node still runs, cut off"
cluster_heal 1 0
ok $? "heal"
end=$(($(date +%s) + 60))
while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do sleep 0.2; done
ok $(kill -0 "$pid" 2>/dev/null && echo 1 || echo 0) \
    "healed, the node hears it was declared dead and stops"
like "$(cat "$TAP_TMP/n1/log/node.log")" "declared node $n1 dead" "its log says why"

done_testing
