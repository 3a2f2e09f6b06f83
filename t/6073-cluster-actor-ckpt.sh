#!/bin/sh
# 6073-cluster-actor-ckpt: an actor placed on another node restarts from
# its last checkpoint when that node dies, as a local actor does. A head
# without the resource disk and two nodes with it (nodes are declared
# dead after 1.5 s: LUX_NODE_DEAD_MS). A counter with max_restarts 1 and
# checkpoint_every 3 is created from the head (its home) and lives on a
# node with disk; its driver calls add(1), ..., add(5) (a checkpoint after
# call 3), then the node holding it is killed (kill -9 by pid, its workers
# too), then add(6), ..., add(10). The counts are those of the same run
# without the kill (1 3 6 10 15 21 28 36 45 55): the counter was placed
# again on the other node from its checkpoint of call 3 with calls 4 and 5
# re-applied from the log (the actor_restarts view says so); before, it
# started from its constructor and counted 6 13 21 30 40.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
CL_ON_EXIT='touch "$TAP_TMP/go1" "$TAP_TMP/go2"'
MOD=$(cluster_mod actormod)

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1,disk=1

# the counts of a run, without the "at DIR" lines
counts() { grep -v '^at ' "$1" | tr '\n' ' '; }

touch "$TAP_TMP/go1"
"$LUX" run --address "$CL_DIR/head" "$MOD" ckpt plain disk=1 3 5 "$TAP_TMP/go1" \
    >"$TAP_TMP/plain" 2>&1
ok $? "a run without a kill" || diag "$(cat "$TAP_TMP/plain")"
want=$(counts "$TAP_TMP/plain")
is "$want" "1 3 6 10 15 21 28 36 45 55 " "... counts 1 3 6 ... 55"

"$LUX" run --address "$CL_DIR/head" "$MOD" ckpt ctr disk=1 3 5 "$TAP_TMP/go2" \
    >"$TAP_TMP/ctr" 2>&1 &
drv=$!
cluster_wait_file "$TAP_TMP/go2.ready"
ok $? "the second run made its first five calls" || diag "$(cat "$TAP_TMP/ctr")"
held=$(sed -n "s|^at $CL_DIR/n\([12]\)\$|\1|p" "$TAP_TMP/ctr" | head -n 1)
ok $([ -n "$held" ]; echo $?) "its counter lives on node ${held:-?}" || diag "$(cat "$TAP_TMP/ctr")"
held=${held:-1}
other=$((3 - held))
# the counter's ID, from its creation's record
cluster_wait_sql "SELECT lower(hex(actor)) FROM event WHERE kind = 11 AND info LIKE 'name=ctr%'" \
    "" 30
aid=$(echo "$CL_SQL" | tail -n 1)
# its checkpoint of call 3 is on record before the kill
cluster_wait_sql "SELECT idx FROM event WHERE kind = 13 AND lower(hex(actor)) = '$aid'" "3" 60
ok $? "the checkpoint after call 3 is logged" || diag "$CL_SQL"
cluster_kill_node "$held"
ok $? "kill -9 node $held, which holds it"
touch "$TAP_TMP/go2"
cluster_wait_file "$TAP_TMP/go2.done"
ok $? "the later calls are answered" || diag "$(cat "$TAP_TMP/ctr")"
wait $drv
ok $? "the driver ends" || diag "$(cat "$TAP_TMP/ctr")"
is "$(counts "$TAP_TMP/ctr")" "$want" "the counts are those of the run without the kill"
is "$(sed -n 's/^at //p' "$TAP_TMP/ctr" | tail -n 1)" "$CL_DIR/n$other" \
    "... the last answered by node $other, where it was placed again"
cluster_wait_sql "SELECT restart, checkpoint_call, calls_replayed FROM actor_restarts
    WHERE actor_id = '$aid'" "1,3,2" 30
ok $? "actor_restarts: restart 1 from the checkpoint of call 3, calls 4-5 re-applied" ||
    diag "$CL_SQL"

done_testing
