#!/bin/sh
# 6074-cluster-head-dies: the head dies (kill -9 of its supervisor: the
# chain master, the membership monitor and the head's node manager) while
# a driver on node 2 uses a counter that lives on node 1 (it asks for
# disk=1, which only node 1 has; node 2 is its home). Calls to the live
# node 1 go on being answered without the head. Then node 1 dies too
# (kill -9): nothing can say so any more, and a call sent to it fails
# within about 10 s (S_HEADLESS_MS, 30 s, made 10 s here by
# LUX_HEADLESS_MS: the wait is not what this checks; the calls to node 1
# answered meanwhile take well under it) with an error that says the head's
# monitor does not answer and names node 1, instead of waiting for ever
# (before: the driver's get ran into its own 120 s timeout).
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'touch "$TAP_TMP/go" "$TAP_TMP/go.end"; cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/actormod.so"
export LUX_FAKE_GPUS=none LUX_HEADLESS_MS=10000

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1
n1=$(cat "$CL_DIR/n1/run/node.joined")

GO="$TAP_TMP/go"
"$LUX" run --address "$CL_DIR/n2" "$MOD" own ctr disk=1 0 2 "$GO" >"$TAP_TMP/own" 2>&1 &
own=$!
cluster_wait_file "$GO.ready"
is "$(cat "$TAP_TMP/own")" "$CL_DIR/n1 1
$CL_DIR/n1 2" "node 2's driver calls the counter on node 1"
kill -9 "$(cat "$CL_DIR/head/run/supervisor.pid")"
ok $? "kill -9 the head's supervisor"
touch "$GO"
cluster_wait_file "$GO.done"
ok $? "calls made after the head died are answered" || diag "$(cat "$TAP_TMP/own")"
is "$(tail -n 2 "$TAP_TMP/own")" "$CL_DIR/n1 3
$CL_DIR/n1 4" "... by node 1"
cluster_kill_node 1
ok $? "kill -9 node 1, which holds the counter"
start=$(date +%s)
out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" use ctr 1 2>&1)
rc=$?
took=$(($(date +%s) - start))
ok $([ $rc -ne 0 ]; echo $?) "a call sent to the dead node 1 fails (after $took s)" || diag "$out"
like "$out" "the head's membership monitor has not answered" "... saying the head does not answer"
like "$out" "node $n1" "... and naming node 1"
touch "$GO.end"
wait $own
ok $? "the first driver ends"

done_testing
