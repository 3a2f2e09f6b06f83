#!/bin/sh
# 6067-cluster-copy-dropped: a copy a node pulled (object_copied) that it
# lets go (the task that read it ended, the driver that got it left) is
# logged as gone (object_lost), so object_locations stops listing that
# node and no later pull asks it for bytes it no longer has. Before, the
# copy went without an event: the view listed the node for ever, and a
# pull that asked it was told "node ... does not hold object".
# Node 1 holds a 2 MiB put; a task needing disk=1 reads it on node 2,
# which pulls a copy and lets it go when the task ends.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
cluster_up CPU=1 CPU=1 CPU=1,disk=1
n1=$(cat "$CL_DIR/n1/run/node.joined")
n2=$(cat "$CL_DIR/n2/run/node.joined")
cluster_hold hold $((2 * MB)) 1 x
ok $? "node 1 holds a 2 MiB put ($REF)" || diag "$(cat "$TAP_TMP/x.out")"
CL_ON_EXIT=': >"$TAP_TMP/x.done"'
task=$(echo "$REF" | cut -c1-32)

for round in 1 2; do
    out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" echo "$REF" $((2 * MB)) disk=1 2>&1)
    is "$out" "echo ok ($((2 * MB)) bytes) $CL_DIR/n2" \
        "round $round: a task on node 2 reads node 1's put, byte for byte"
    cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_copied' \
        AND task_id = '$task' AND node_id = '$n2'" "$round"
    ok $? "... node 2 pulled a copy (object_copied)" || diag "$CL_SQL"
    cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_lost' \
        AND task_id = '$task' AND node_id = '$n2' AND info LIKE 'its copy here let go%'" "$round"
    ok $? "... and, the task done, let it go (object_lost)" || diag "$CL_SQL"
    cluster_wait_value "SELECT 'at ' || group_concat(node_id) FROM object_locations \
        WHERE object_id = '$REF'" "at $n1"
    ok $? "... object_locations lists node 1 alone" || diag "$CL_SQL"
done

done_testing
