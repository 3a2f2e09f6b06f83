#!/bin/sh
# 6130-cluster-pull-unrecorded: a put whose object_put event has not
# reached the log yet is waited for by the node that pulls it, not taken
# for lost (exec_xfer_loc.c). A put's event waits in its node's log queue
# until its bytes are recorded in blobs/ (exec_node_blob.c): a first put of
# 64 MiB at load 27 took 2 s, as long as a puller waited for an event
# before asking the head to make the object again, and a put cannot be
# made again: locality_placement failed 4 runs of 5 at load 23-31 (stop
# 43), "no live node holds it, and the head cannot make it again: ... was
# never created". Here node 1's blob writer is held (LUX_TEST_BLOB_GATE)
# so that its puts' events stay out of the log; nodes 2 and 3 ask the
# head again after 300 ms (LUX_XFER_LOCATE_MS). Node 3 gives an object
# the log has no record of 3 s (LUX_XFER_UNRECORDED_MS): its task fails
# then, naming the object and why, not at once. Node 2 keeps the default
# (60 s): its task waits, and runs once the gate opens and the event
# lands, its argument pulled from node 1 byte for byte.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
GATE=$TAP_TMP/blobgate
CL_ON_EXIT='touch "$GATE" "$TAP_TMP/putA.done" "$TAP_TMP/putB.done"'

cluster_head --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
LUX_TEST_BLOB_GATE=$GATE cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 1 joins, its blob writer held at a gate" || diag "$CL_OUT"
LUX_XFER_LOCATE_MS=300 cluster_join 2 --workers 1 --store-mb 64 --resources CPU=1,disk=1
ok $CL_RC "node 2 joins, with disk=1" || diag "$CL_OUT"
LUX_XFER_LOCATE_MS=300 LUX_XFER_UNRECORDED_MS=3000 \
    cluster_join 3 --workers 1 --store-mb 64 --resources CPU=1,tape=1
ok $CL_RC "node 3 joins, with tape=1 (an unrecorded object waited for 3 s)" || diag "$CL_OUT"
n2=$(cat "$CL_DIR/n2/run/node.joined")

# node 3: the log never records the put while it asks
cluster_hold hold $((4 * MB)) 1 putA
ok $? "a driver on node 1 puts 4 MiB ($REF)" || diag "$(cat "$TAP_TMP/putA.out")"
A=$REF
cluster_wait_file "$GATE.waiting" 60
ok $? "its bytes wait at the blob writer's gate: its object_put is not in the log"
t0=$(date +%s)
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$A" $((4 * MB)) tape=1 2>&1)
rc=$?
t=$(($(date +%s) - t0))
ok $([ $rc -ne 0 ]; echo $?) "a task needing tape, on node 3, fails" || diag "$out"
like "$out" "object $A: the log has no record of it" \
    "the error names the object and says the log has no record of it: $out"
like "$out" "LUX_XFER_UNRECORDED_MS 3000" "... and the bound it waited"
ok $([ $t -lt 60 ]; echo $?) "within a bound ($t s), not the 60 s node 2 gives"
grep -q "object $A: the log has no record of it yet" "$CL_DIR"/n3/log/node.log
ok $? "node 3's log said it waited for the log"

# node 2: the event lands while it asks
cluster_hold hold $((5 * MB)) 1 putB
ok $? "a driver on node 1 puts 5 MiB ($REF)" || diag "$(cat "$TAP_TMP/putB.out")"
B=$REF
"$LUX" run --address "$CL_DIR/head" "$MOD" echo "$B" $((5 * MB)) disk=1 >"$TAP_TMP/B.echo" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
cluster_wait_line "object $B: the log has no record of it yet" "$CL_DIR"/n2/log/node.log 60
ok $? "node 2 pulls it and waits for the log to record it"
sleep 3 # ten times its LUX_XFER_LOCATE_MS
ok $(kill -0 $drv 2>/dev/null; echo $?) "3 s later its task still waits" ||
    diag "$(cat "$TAP_TMP/B.echo")"
touch "$GATE"
ok $? "the gate opens: node 1 records the puts, their events go to the log"
wait $drv
ok $? "the task's driver returns" || diag "$(cat "$TAP_TMP/B.echo")"
is "$(cat "$TAP_TMP/B.echo")" "echo ok (5242880 bytes) $CL_DIR/n2" \
    "the task ran on node 2 with node 1's put, byte for byte"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_copied' AND node_id = '$n2'
    AND task_id = '$(echo "$B" | cut -c1-32)'" 1 30
ok $? "the log: node 2 made a copy (object_copied)" || diag "$CL_SQL"
done_testing
