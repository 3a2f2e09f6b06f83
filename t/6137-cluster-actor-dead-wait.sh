#!/bin/sh
# 6137-cluster-actor-dead-wait: an actor whose creation needs a resource
# only a lately dead node had waits for one to come back, as a spilled
# task does (exec_table.c s_no_place, DESIGN 7.2), and fails after the
# bound. A head and two nodes, dead after 4 s (a creation waits until
# 16 s after the dead node's last beat); node 1 alone has w=1. Counters
# (t/lib/actormod.c "own") are homed on node 2: their drivers run there,
# and node 2 asks the head where each goes.
#   1. node 1 killed -9 and declared dead: a counter needing w is created
#      on node 2; its creation waits (node 2's log says so); node 1 is
#      started again in its directory (a new node, with w): the counter
#      is made there and answers.
#   2. a counter with one restart lives on the new node 1, which is
#      killed -9: its placing again waits; node 1 is started again: the
#      counter is made there again and its next call answers from there.
#   3. node 1 killed -9 again and left dead: a counter needing w, created
#      on node 2, fails after the bound, naming the resource, the dead
#      nodes and the bound.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
GO="$TAP_TMP/go"
CL_ON_EXIT='for _g in "$GO"1 "$GO"2; do touch "$_g" "$_g.end"; done'

cluster_up -d 4000 CPU=1 CPU=1,w=1 CPU=1

# dead_of ID: wait until the log says node ID died
dead_of() {
    cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$1'" "dead" 60
}
# waits_seen N: wait up to 30 s for node 2's log to say a creation waits
# to be placed for the Nth time
waits_seen() {
    _i=0
    while [ $_i -lt 300 ]; do
        [ "$(grep -c "waits to be placed" "$CL_DIR"/n2/log/node.log 2>/dev/null)" -ge "$1" ] &&
            return 0
        sleep 0.1
        _i=$((_i + 1))
    done
    return 1
}

# 1. a first creation waits for the node that had w
id1=$(cat "$CL_DIR/n1/run/node.joined")
cluster_kill_node 1
ok $? "kill -9 node 1 ($id1), the only node with w"
dead_of "$id1"
ok $? "the log says node 1 died" || diag "$CL_SQL"
"$LUX" run --address "$CL_DIR/n2" "$MOD" own ctr1 w=1 0 1 "$GO"1 >"$TAP_TMP/a1" 2>&1 &
a1=$!
CL_DRIVERS="$CL_DRIVERS $a1"
waits_seen 1
ok $? "a counter needing w, created on node 2, waits to be placed" ||
    diag "$(cat "$TAP_TMP/a1")"
ok $(kill -0 $a1 2>/dev/null; echo $?) "... and is not dead" || diag "$(cat "$TAP_TMP/a1")"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,w=1
ok $CL_RC "node 1 starts again in its directory, a new node with w" || diag "$CL_OUT"
id1b=$(cat "$CL_DIR/n1/run/node.joined")
cluster_wait_file "$GO"1.ready 120
ok $? "the counter answers" || diag "$(cat "$TAP_TMP/a1")"
is "$(head -n 1 "$TAP_TMP/a1")" "$CL_DIR/n1 1" "... from the new node 1"
touch "$GO"1 "$GO"1.end
wait $a1
ok $? "its driver ends well" || diag "$(cat "$TAP_TMP/a1")"

# 2. placing again, after the node that held it died, waits the same way
"$LUX" run --address "$CL_DIR/n2" "$MOD" own ctr2 w=1 1 1 "$GO"2 >"$TAP_TMP/a2" 2>&1 &
a2=$!
CL_DRIVERS="$CL_DRIVERS $a2"
cluster_wait_file "$GO"2.ready 120
ok $? "a counter with one restart answers" || diag "$(cat "$TAP_TMP/a2")"
is "$(head -n 1 "$TAP_TMP/a2")" "$CL_DIR/n1 1" "... from node 1"
cluster_kill_node 1
ok $? "kill -9 node 1 ($id1b), which holds it"
dead_of "$id1b"
ok $? "the log says it died" || diag "$CL_SQL"
touch "$GO"2
waits_seen 2
ok $? "the counter's placing again waits (node 2's log)" || diag "$(cat "$TAP_TMP/a2")"
ok $(kill -0 $a2 2>/dev/null; echo $?) "... and it is not dead" || diag "$(cat "$TAP_TMP/a2")"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,w=1
ok $CL_RC "node 1 starts again, a new node with w" || diag "$CL_OUT"
id1c=$(cat "$CL_DIR/n1/run/node.joined")
cluster_wait_file "$GO"2.done 120
ok $? "the counter's next call answers" || diag "$(cat "$TAP_TMP/a2")"
like "$(sed -n 2p "$TAP_TMP/a2")" "$CL_DIR/n1 " "... from the new node 1" ||
    diag "$(cat "$TAP_TMP/a2")"
touch "$GO"2.end
wait $a2
ok $? "its driver ends well" || diag "$(cat "$TAP_TMP/a2")"

# 3. no node comes back: the creation fails after the bound
cluster_kill_node 1
ok $? "kill -9 node 1 ($id1c) again"
dead_of "$id1c"
ok $? "the log says it died" || diag "$CL_SQL"
t0=$(date +%s)
out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" own ctr3 w=1 0 1 "$GO"3 2>&1)
rc=$?
t=$(($(date +%s) - t0))
ok $([ $rc -ne 0 ]; echo $?) "a counter needing w, created on node 2, fails" || diag "$out"
like "$out" "no node of the cluster has w=1" "... naming the resource" || diag "$out"
like "$out" "node $id1c (silent" "... and the dead node that had it" || diag "$out"
like "$out" "none came back within 16000 ms" "... and the bound" || diag "$out"
# it waited (node 1 had been dead 4 s when logged, the bound is 16 s),
# and not for the driver's 120 s get (load 20: generous)
ok $([ $t -ge 3 ] && [ $t -lt 90 ]; echo $?) "not at once, and within 90 s ($t s)"
waits_seen 3
ok $? "node 2's log said it waited first"

done_testing
