#!/bin/sh
# 6119-cluster-locations-actor: object_locations says where the outputs of
# actor calls live on a tcp cluster, as t/6110 does for tasks. A head
# (CPU), node 1 (disk) and node 2 (ssd); a counter asking for disk=1
# lives on node 1 (exec_ractor.c). Its call's output lives where the
# caller is: a driver on the head gets it sent back from node 1 (the head
# holds it, node 1 lets its copy go); a driver on node 1 keeps it where
# it was made. Either is read byte for byte by a task on node 2, which
# pulls it from the node the log names, and once freed it is listed
# nowhere.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
SMOD=$(cluster_mod schedmod)
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
task() { # task OBJECT: its task's (the call's) ID
    echo "$1" | cut -c1-32
}
# hold I RES NAME: a driver on machine I (0: the head) calls fill on the
# counter (RES: created with RES; '=': found by name); its ref in $REF
hold() {
    if [ "$1" -eq 0 ]; then _d=head; else _d=n$1; fi
    "$LUX" run --address "$CL_DIR/$_d" "$MOD" hold ctr "$2" $((2 * MB)) "$TAP_TMP/$3" \
        >"$TAP_TMP/$3.out" 2>&1 &
    CL_DRIVERS="$CL_DRIVERS $!"
    cluster_wait_file "$TAP_TMP/$3" 120
    _rc=$?
    REF=$(cat "$TAP_TMP/$3" 2>/dev/null)
    return $_rc
}
# echo2 REF: a task on node 2 (ssd=1) reads REF; its answer
echo2() {
    "$LUX" run --address "$CL_DIR/n2" "$SMOD" echo "$1" $((2 * MB)) ssd=1 2>&1
}

# a driver on the head
hold 0 disk=1 a
ok $? "a driver on the head makes the counter (on node 1) and 2 MiB by a call of it" ||
    diag "$(cat "$TAP_TMP/a.out")"
a=$REF
cluster_wait_sql "SELECT node_id FROM events WHERE kind = 'task_finished' \
    AND task_id = '$(task "$a")'" "$n1" 20
ok $? "the call ran on node 1" || diag "$CL_SQL"
cluster_wait_value "$(at "$a")" "at $h" 20
ok $? "object_locations lists the head, which holds it, not node 1, which sent it back" ||
    diag "$CL_SQL"
out=$(echo2 "$a")
is "$out" "echo ok ($((2 * MB)) bytes) $CL_DIR/n2" "a task on node 2 reads it, byte for byte"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_copied' \
    AND node_id = '$n2' AND task_id = '$(task "$a")' AND info = 'from $h'" 1 20
ok $? "... pulled from the head, the node the log names" || diag "$CL_SQL"
is "$(grep -c "object $a: no listed node holds it" "$CL_DIR/n2/log/node.log")" 0 \
    "... at the first ask: no listed node said it did not hold it"

# a driver on node 1, where the counter lives
hold 1 = b
ok $? "a driver on node 1 finds the counter and makes 2 MiB by a call of it" ||
    diag "$(cat "$TAP_TMP/b.out")"
b=$REF
cluster_wait_value "$(at "$b")" "at $n1" 20
ok $? "object_locations lists node 1, where it was made and is held" || diag "$CL_SQL"
out=$(echo2 "$b")
is "$out" "echo ok ($((2 * MB)) bytes) $CL_DIR/n2" "a task on node 2 reads it, byte for byte"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_copied' \
    AND node_id = '$n2' AND task_id = '$(task "$b")' AND info = 'from $n1'" 1 20
ok $? "... pulled from node 1" || diag "$CL_SQL"

# frees: listed nowhere (node 2's pulled copies went when its tasks ended)
touch "$TAP_TMP/a.free" "$TAP_TMP/b.free"
cluster_wait_file "$TAP_TMP/a.freed" 60 && cluster_wait_file "$TAP_TMP/b.freed" 60
ok $? "both drivers free their outputs"
cluster_wait_value "$(at "$a")" "at none" 20
ok $? "the head's output: listed nowhere" || diag "$CL_SQL"
cluster_wait_value "$(at "$b")" "at none" 20
ok $? "node 1's output: listed nowhere" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_lost' AND node_id = '$h' \
    AND task_id = '$(task "$a")'" 1 10
ok $? "... one object_lost for the head's, on the head" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) FROM retries WHERE instr(reason, 'rebuild') > 0" 0 10
ok $? "nothing was made again" || diag "$CL_SQL"
touch "$TAP_TMP/b.done" "$TAP_TMP/a.done"

done_testing
