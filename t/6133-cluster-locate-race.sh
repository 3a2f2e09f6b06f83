#!/bin/sh
# 6133-cluster-locate-race: a put whose event reaches the log while the
# head's locator reads it is listed, not made again (exec_xfer_loc.c
# nm_xfer_locate). The locator asks the log for the object's live
# holders, and when there are none, whether the log records its making;
# a put's object_put committed between the two reads made it "made, and
# held by nobody", and the head tried to make it again: a put cannot be,
# and the task that needed it failed at once, "was made by lux_put and
# then freed" (locality_placement at load 25, 2 runs of 4 after the
# unrecorded-object fix). Here the race is held open: node 1's blob
# writer is held (LUX_TEST_BLOB_GATE) so that its put's event stays out
# of the log; node 2 pulls it for a task needing disk; the head's
# locator, answering node 2, stops between its two reads
# (LUX_TEST_LOCATE_GATE); the put's event is let into the log; then the
# locator goes on. Node 2 asks only plainly (LUX_XFER_LOCATE_MS=60000), so
# the answer is the one to that ask.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
BG=$TAP_TMP/blobgate
LG=$TAP_TMP/locategate
CL_ON_EXIT='touch "$BG" "$LG" "$TAP_TMP/put.done"'

LUX_TEST_LOCATE_GATE=$LG cluster_head --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "the head starts, its locator to stop between its reads" || diag "$CL_OUT"
LUX_TEST_BLOB_GATE=$BG cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 1 joins, its blob writer held at a gate" || diag "$CL_OUT"
LUX_XFER_LOCATE_MS=60000 cluster_join 2 --workers 1 --store-mb 64 --resources CPU=1,disk=1
ok $CL_RC "node 2 joins, with disk=1" || diag "$CL_OUT"

cluster_hold hold $((4 * MB)) 1 put
ok $? "a driver on node 1 puts 4 MiB ($REF)" || diag "$(cat "$TAP_TMP/put.out")"
P=$REF
T=$(echo "$P" | cut -c1-32)
cluster_wait_file "$BG.waiting" 60
ok $? "its bytes wait at the blob writer's gate: its object_put is not in the log"
"$LUX" run --address "$CL_DIR/head" "$MOD" echo "$P" $((4 * MB)) disk=1 >"$TAP_TMP/echo.out" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
cluster_wait_file "$LG.waiting" 60
ok $? "node 2 asks the head where it is; the locator found no holder and stops"
touch "$BG"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_put' AND task_id = '$T'" 1 60
ok $? "the put's event reaches the log meanwhile" || diag "$CL_SQL"
touch "$LG"
wait $drv
ok $? "the task's driver returns" || diag "$(cat "$TAP_TMP/echo.out")"
is "$(cat "$TAP_TMP/echo.out")" "echo ok (4194304 bytes) $CL_DIR/n2" \
    "the task ran on node 2 with node 1's put, byte for byte"
done_testing
