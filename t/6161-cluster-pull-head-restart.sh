#!/bin/sh
# 6161-cluster-pull-head-restart: a pull whose only source is the head's
# node, killed -9 mid-transfer and started again, asks the head again
# (which makes the object again from its lineage) instead of failing. A
# head and a node (LUX_XFER_TIMEOUT_MS=3000 everywhere); a driver on
# the head makes 3,000,000 bytes by a task there and holds them: only the
# head has them. A driver on node 1 gets them; the head's bulk port holds
# after one chunk (LUX_TEST_BULK_HOLD), the head is killed -9 and started
# again, the hold let go.
# Before, node 1's pull tried its one source, found it gone and failed
# the get for good: "the bulk connection to 127.0.0.1:P ended after
# 1048576 of 3000000 bytes (it closed the connection)" (t/6091 --harsh
# seeds 6 and 7 failed so, "it sent nothing for 10009 ms (dead, or cut
# off)"; DESIGN 7.3 said the error was final on another node).
# (Checks 9-10 failed before the fix.)
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
HOLD="$TAP_TMP/hold"
CL_ON_EXIT='rm -f "$HOLD"; touch "$TAP_TMP/made.done" "$TAP_TMP/go"'
export LUX_XFER_TIMEOUT_MS=3000 LUX_TEST_BULK_HOLD="$HOLD"

cluster_up -d 600000 CPU=1 CPU=1

"$LUX" run --address "$CL_DIR/head" "$MOD" make 3000000 "$TAP_TMP/made" \
    >"$TAP_TMP/made.out" 2>&1 &
CL_DRIVERS=$!
cluster_wait_file "$TAP_TMP/made" 120
ok $? "a driver on the head has a task there make 3,000,000 bytes, and holds them" ||
    diag "$(cat "$TAP_TMP/made.out")"
REF=$(cat "$TAP_TMP/made")
touch "$HOLD"
"$LUX" run --address "$CL_DIR/n1" "$MOD" get 3000000 "$REF" "$TAP_TMP/go" >"$TAP_TMP/get" 2>&1 &
get=$!
CL_DRIVERS="$CL_DRIVERS $get"
cluster_wait_file "$TAP_TMP/go.ready"
ok $? "a driver on node 1 is connected"
touch "$TAP_TMP/go"
cluster_wait_line "after its first chunk" "$CL_DIR/head/log/supervisor.log" 60
ok $? "its get's pull from the head holds after one chunk"
sup=$(cat "$CL_DIR/head/run/supervisor.pid")
kill -9 "$sup"
ok $? "kill -9 the head (pid $sup), its bulk port holding after one chunk"
t0=$(date +%s)
cluster_wait_gone "$sup"
ok $? "it is gone (30 s at most)"
rm -f "$HOLD"
out=$(LUX_NODE_DEAD_MS=600000 "$LUX" start --head --dir "$CL_DIR/head" --workers 1 \
    --store-mb 32 --resources CPU=1 2>&1)
ok $? "the head starts again" || diag "$out"
wait $get
ok $? "node 1's get ends well" || diag "$(cat "$TAP_TMP/get")"
is "$(cat "$TAP_TMP/get")" "get ok (3000000 bytes)" "... with the object, $(($(date +%s) - t0)) s after the kill"

done_testing
