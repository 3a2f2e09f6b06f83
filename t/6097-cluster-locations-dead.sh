#!/bin/sh
# 6097-cluster-locations-dead: object_locations says where copies live
# now, as far as the log knows: a copy on a node the log says died (or
# left) is gone with the node's store, whichever shard holds the node's
# death. Before, the view listed the dead node's copy for ever (it had no
# node_died filter, and the object's shard need not hold the death).
# Node 1 makes and holds a 2 MiB put; node 1 is killed (kill -9, dead
# after 1.5 s). Both `lux sql` over the live shards and a pulled file are
# asked.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
cluster_up -d 1500 CPU=1 CPU=1 CPU=1
n1=$(cat "$CL_DIR/n1/run/node.joined")
cluster_hold hold $((2 * MB)) 1 x
ok $? "node 1 holds a 2 MiB put ($REF)" || diag "$(cat "$TAP_TMP/x.out")"
CL_ON_EXIT=': >"$TAP_TMP/x.done"'

cluster_wait_value "SELECT 'at ' || group_concat(node_id) FROM object_locations \
    WHERE object_id = '$REF'" "at $n1"
ok $? "object_locations lists node 1 for it" || diag "$CL_SQL"

cluster_kill_node 1
ok $? "kill -9 node 1"
cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$n1'" "dead" 60
ok $? "the log says node 1 died" || diag "$CL_SQL"

sqlv() { # sqlv WHERE QUERY: the last line of `lux sql WHERE --csv QUERY`
    "$LUX" sql "$1" --csv "$2" 2>&1 | tail -n 1
}
out=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT count(*) FROM object_locations \
    WHERE object_id = '$REF'" 2>&1 | tail -n 1)
is "$out" 0 "lux sql: object_locations no longer lists the dead node's copy"
out=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT count(*) FROM object_locations \
    WHERE node_id = '$n1'" 2>&1 | tail -n 1)
is "$out" 0 "... nor any copy on node 1"

"$LUX" pull --dir "$CL_DIR/head" "$TAP_TMP/p.db" >"$TAP_TMP/pull.out" 2>&1
ok $? "lux pull of the log" || diag "$(cat "$TAP_TMP/pull.out")"
is "$(sqlv "$TAP_TMP/p.db" "SELECT count(*) FROM events WHERE kind = 'object_put' \
    AND task_id = '$(echo "$REF" | cut -c1-32)'")" 1 \
    "the pulled file holds the put"
is "$(sqlv "$TAP_TMP/p.db" "SELECT count(*) FROM object_locations WHERE node_id = '$n1'")" 0 \
    "... and its object_locations lists no copy on the dead node 1"

done_testing
