#!/bin/sh
# 3169-ractor-ckpt-spilled: an actor placed on another node restarts from
# its checkpoint when that node dies, even when its home holds that
# checkpoint on disk (spilled, rule 10 of DESIGN 7), not in its store.
# As t/6073 (a head without disk, two nodes with it, dead after 1.5 s; a
# counter with checkpoint_every 3 on a node with disk, add(1) ... add(5),
# kill -9 of that node, add(6) ... add(10)), but the driver, on the head,
# puts 40 MiB (4 MiB each, held) into the head's 32 MiB store after call 5,
# so the checkpoint of call 3 that the head keeps is spilled before the
# kill; the counter's checkpoints carry 256 KiB (held in the store, not
# inline). The counts must be those of the run without the kill. Before,
# the home sent the creation without the checkpoint (only one in the
# store went), the new node warned "its checkpoint of call 3 did not come
# with it: it starts from its constructor", and the calls after the kill
# were never answered (checks 9-12 and 14 failed).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
CL_ON_EXIT='touch "$TAP_TMP/go1" "$TAP_TMP/go2"'
MOD=$(cluster_mod actormod)

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1,disk=1

counts() { grep -v '^at ' "$1" | tr '\n' ' '; }
want="1 3 6 10 15 21 28 36 45 55 "

"$LUX" run --address "$CL_DIR/head" "$MOD" ckpt ctr disk=1 3 5 "$TAP_TMP/go2" 40 \
    >"$TAP_TMP/ctr" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
cluster_wait_file "$TAP_TMP/go2.ready" 180
ok $? "the driver made its first five calls and its puts" || diag "$(cat "$TAP_TMP/ctr")"
held=$(sed -n "s|^at $CL_DIR/n\([12]\)\$|\1|p" "$TAP_TMP/ctr" | head -n 1)
ok $([ -n "$held" ]; echo $?) "its counter lives on node ${held:-?}" || diag "$(cat "$TAP_TMP/ctr")"
held=${held:-1}
other=$((3 - held))
cluster_wait_sql "SELECT lower(hex(actor)) FROM event WHERE kind = 11 AND info LIKE 'name=ctr%'" \
    "" 30
aid=$(echo "$CL_SQL" | tail -n 1)
cluster_wait_sql "SELECT idx FROM event WHERE kind = 13 AND lower(hex(actor)) = '$aid'" "3" 60
ok $? "the checkpoint after call 3 is logged" || diag "$CL_SQL"
# the checkpoint's object, from its record ("object HEX"): its spill file on the head
cluster_wait_sql "SELECT substr(info, 8) FROM event WHERE kind = 13 AND lower(hex(actor)) = '$aid'" \
    "" 30
obj=$(echo "$CL_SQL" | tail -n 1)
cluster_wait_file "$CL_DIR/head/spill/$obj.lz4" 60
ok $? "the head holds the checkpoint spilled ($obj)" ||
    diag "$(ls "$CL_DIR/head/spill" 2>&1)"
cluster_kill_node "$held"
ok $? "kill -9 node $held, which holds the counter"
touch "$TAP_TMP/go2"
cluster_wait_file "$TAP_TMP/go2.done" 180
ok $? "the later calls are answered" || diag "$(cat "$TAP_TMP/ctr")"
wait $drv
ok $? "the driver ends" || diag "$(cat "$TAP_TMP/ctr")"
is "$(counts "$TAP_TMP/ctr")" "$want" "the counts are those of a run without the kill"
is "$(sed -n 's/^at //p' "$TAP_TMP/ctr" | tail -n 1)" "$CL_DIR/n$other" \
    "... the last answered by node $other, where it was placed again"
cluster_wait_sql "SELECT restart, checkpoint_call, calls_replayed FROM actor_restarts
    WHERE actor_id = '$aid'" "1,3,2" 30
ok $? "actor_restarts: restart 1 from the checkpoint of call 3, calls 4-5 re-applied" ||
    diag "$CL_SQL"
grep -q 'did not come with it' "$CL_DIR/n$other/log/node.log"
ok $([ $? -ne 0 ]; echo $?) "node $other does not say its checkpoint did not come" ||
    diag "$(grep 'did not come' "$CL_DIR/n$other/log/node.log")"

done_testing
