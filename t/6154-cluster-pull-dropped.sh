#!/bin/sh
# 6154-cluster-pull-dropped: a get on a node that is not the head, whose
# pull brought the object here but whose copy went before the get was
# told (let go: nothing held it yet, as when the task that shared the
# pull was killed or failed first), pulls it again and has it. Before,
# the node looked for the object's lineage in the log's files, which only
# the head's machine has, and the get failed: "... was lost and the log's
# record of its task cannot be read: reading the log: .../n2/shard-0/
# replica-0.db: unable to open database file" (t/6091 seed 33 with 1,391
# tasks: a nested task's get of the ref passed to it failed so, 11 ms
# after its copy came and went). LUX_TEST_PULL_DROP=FILE (exec_xfer.c)
# drops a pulled copy before its requesters are told, once, when FILE
# exists. Both an object with lineage (a task's output) and a put.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
export LUX_TEST_PULL_DROP="$TAP_TMP/drop"
CL_ON_EXIT='touch "$TAP_TMP/made.done" "$TAP_TMP/put.done"'

cluster_up CPU=1 CPU=1 CPU=1

# get_dropped WHAT NAME: node 2 gets the object whose ref is $REF, held
# on node 1, its first pulled copy dropped
get_dropped() {
    : >"$TAP_TMP/drop"
    out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" get 3000000 "$REF" 2>&1)
    is "$out" "get ok (3000000 bytes)" "node 2 gets $1 held on node 1, its first copy dropped"
    ok "$([ ! -e "$TAP_TMP/drop" ]; echo $?)" "... the copy was dropped (the hook ran)"
}

cluster_hold make 3000000 1 made
ok $? "a driver on node 1 makes a task's output of 3,000,000 bytes and holds it"
get_dropped "a task's output" made

cluster_hold hold 3000000 1 put
ok $? "a driver on node 1 puts 3,000,000 bytes and holds them"
get_dropped "a put" put

done_testing
