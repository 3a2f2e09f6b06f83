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
. "${LUX_SRCDIR:-.}/t/lib/ckpt.sh"

touch "$TAP_TMP/go1"
"$LUX" run --address "$CL_DIR/head" "$MOD" ckpt plain disk=1 3 5 "$TAP_TMP/go1" \
    >"$TAP_TMP/plain" 2>&1
ok $? "a run without a kill" || diag "$(cat "$TAP_TMP/plain")"
want=$(ckpt_counts "$TAP_TMP/plain")
is "$want" "1 3 6 10 15 21 28 36 45 55 " "... counts 1 3 6 ... 55"

ckpt_start
ckpt_kill "$want"

done_testing
