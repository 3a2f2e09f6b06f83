#!/bin/sh
# 6140-cluster-place-unrecorded: a task whose argument's event has not
# reached the log yet is placed where that argument was made (issue 28).
# A put's object_put waits in its node's log queue until its bytes are
# written to blobs/ (exec_node_blob.c); meanwhile the global scheduler's
# locality, which reads the log, found no holder and placed the task by
# load, and it pulled the object across (locality_placement: a 64 MiB
# pull). The head now reads who made the ref from its ID (exec_xfer_who.c)
# and counts the maker's node as holding it: a driver's node here. Node
# 1's blob writer is held (LUX_TEST_BLOB_GATE) so that the put's event
# stays out of the log; four tasks needing w, which nodes 1 and 2 both
# have, are submitted on the head at once, each reading the put. By load
# alone they spread over both nodes; those on node 2 would wait for the
# event to pull the object.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
GATE=$TAP_TMP/blobgate
CL_ON_EXIT='touch "$GATE" "$TAP_TMP/put.done"'

cluster_head --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "the head starts, without w" || diag "$CL_OUT"
LUX_TEST_BLOB_GATE=$GATE cluster_join 1 --workers 2 --store-mb 64 --resources CPU=8,w=8
ok $CL_RC "node 1 joins with w=8, its blob writer held at a gate" || diag "$CL_OUT"
cluster_join 2 --workers 2 --store-mb 64 --resources CPU=8,w=8
ok $CL_RC "node 2 joins with w=8" || diag "$CL_OUT"

cluster_hold hold $((4 * MB)) 1 put
ok $? "a driver on node 1 puts 4 MiB ($REF)" || diag "$(cat "$TAP_TMP/put.out")"
P=$REF
T=$(echo "$P" | cut -c1-32)
cluster_wait_file "$GATE.waiting" 60
ok $? "its bytes wait at the blob writer's gate: its object_put is not in the log"
pids=
for i in 1 2 3 4; do
    "$LUX" run --address "$CL_DIR/head" "$MOD" echo "$P" $((4 * MB)) w=1 \
        >"$TAP_TMP/echo.$i" 2>&1 &
    pids="$pids $!"
    CL_DRIVERS="$CL_DRIVERS $!"
done
i=0
while [ $i -lt 600 ]; do
    left=0
    for p in $pids; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
    [ $left -eq 0 ] && break
    sleep 0.1; i=$((i + 1))
done
ok $([ $left -eq 0 ]; echo $?) "the four tasks end while the put's event is held ($left left after $((i / 10)) s)"
is "$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT count(*) FROM events
    WHERE kind = 'object_put' AND task_id = '$T'" | tail -n 1)" 0 \
    "meanwhile the log had no event of the put"
touch "$GATE"
for p in $pids; do wait "$p"; done
on1=0
for i in 1 2 3 4; do
    [ "$(cat "$TAP_TMP/echo.$i")" = "echo ok (4194304 bytes) $CL_DIR/n1" ] && on1=$((on1 + 1))
done
is $on1 4 "each ran on node 1, where the put was made, with its bytes" ||
    diag "$(cat "$TAP_TMP"/echo.[1-4])"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_put' AND task_id = '$T'" 1 60
ok $? "once the gate opens, the put's event reaches the log" || diag "$CL_SQL"
is "$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT count(*) FROM events
    WHERE kind = 'object_copied' AND task_id = '$T'" | tail -n 1)" 0 \
    "and no node made a copy of it (nothing was pulled)"
done_testing
