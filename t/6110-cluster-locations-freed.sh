#!/bin/sh
# 6110-cluster-locations-freed: object_locations says where an object
# lives now, also after a node let its copy go without an eviction, and
# for the outputs of a task another node ran. Before, only pulled copies
# and evictions were logged as gone (object_lost):
#   (a) a task output its driver freed (lux_free), and a put whose driver
#       ended (its objects go with it), were listed on their node for ever;
#   (b) the output of a task spilled to another node was listed on the node
#       that ran it (its task_finished), which sends the bytes back to the
#       submitting node and drops its copy, and not on the submitting
#       node, which holds it for its driver.
# A head (CPU), node 1 (disk) and node 2 (ssd).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
cluster_up CPU=1 CPU=1,disk=1 CPU=1,ssd=1
h=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT node_id FROM nodes WHERE address = '127.0.0.1'" |
    tail -n 1)
n1=$(cat "$CL_DIR/n1/run/node.joined")
n2=$(cat "$CL_DIR/n2/run/node.joined")
at() { # at OBJECT: 'at ' and the nodes object_locations lists for it
    echo "SELECT 'at ' || coalesce(group_concat(node_id), 'none') FROM object_locations \
        WHERE object_id = '$1'"
}

# (a) a freed task output
cluster_hold freed $((2 * MB)) 1 freed
ok $? "a driver on node 1 makes 2 MiB there by a task, reads it and frees it ($REF)" ||
    diag "$(cat "$TAP_TMP/freed.out")"
freed=$REF
cluster_wait_value "$(at "$freed")" "at none" 20
ok $? "object_locations no longer lists node 1 for it" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_lost' AND node_id = '$n1' \
    AND task_id = '$(echo "$freed" | cut -c1-32)'" 1 10
ok $? "... one object_lost for it, on node 1" || diag "$CL_SQL"
touch "$TAP_TMP/freed.done"

# (a) a put whose driver ends
cluster_hold hold $((2 * MB)) 1 put
ok $? "a driver on node 1 puts 2 MiB ($REF)" || diag "$(cat "$TAP_TMP/put.out")"
put=$REF
cluster_wait_value "$(at "$put")" "at $n1" 20
ok $? "object_locations lists node 1 for it while the driver lives" || diag "$CL_SQL"
touch "$TAP_TMP/put.done"
cluster_wait_value "$(at "$put")" "at none" 20
ok $? "the driver ended: no longer listed" || diag "$CL_SQL"

# (b) the output of a spilled task
"$LUX" run --address "$CL_DIR/head" "$MOD" makeon $((2 * MB)) disk=1 "$TAP_TMP/spilled" \
    >"$TAP_TMP/spilled.out" 2>&1 &
CL_DRIVERS="$CL_DRIVERS $!"
cluster_wait_file "$TAP_TMP/spilled" 120
ok $? "a driver on the head has a task needing disk=1 make 2 MiB, and holds it" ||
    diag "$(cat "$TAP_TMP/spilled.out")"
spilled=$(cat "$TAP_TMP/spilled")
cluster_wait_sql "SELECT node_id FROM tasks WHERE task_id = '$(echo "$spilled" | cut -c1-32)'" \
    "$n1" 20
ok $? "the task ran on node 1" || diag "$CL_SQL"
cluster_wait_value "$(at "$spilled")" "at $h" 20
ok $? "object_locations lists the head, which holds it, not node 1, which sent it back" ||
    diag "$CL_SQL"
out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" echo "$spilled" $((2 * MB)) ssd=1 2>&1)
is "$out" "echo ok ($((2 * MB)) bytes) $CL_DIR/n2" "a task on node 2 reads it, byte for byte"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_copied' \
    AND node_id = '$n2' AND task_id = '$(echo "$spilled" | cut -c1-32)' \
    AND info = 'from $h'" 1 20
ok $? "... pulled from the head, the node the log names" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) FROM retries WHERE instr(reason, 'rebuild') > 0" 0 1
ok $? "... not made again" || diag "$CL_SQL"
is "$(grep -c "object $spilled: no listed node holds it" "$CL_DIR/n2/log/node.log")" 0 \
    "... at the first ask: no listed node said it did not hold it"
touch "$TAP_TMP/spilled.done"
cluster_wait_value "$(at "$spilled")" "at none" 20
ok $? "its driver ended: listed nowhere" || diag "$CL_SQL"

done_testing
