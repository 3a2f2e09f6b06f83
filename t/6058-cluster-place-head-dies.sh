#!/bin/sh
# 6058-cluster-place-head-dies: every wait of a spilled task ends when the
# peer it waits on dies. A task submitted on node 2 that needs disk=1
# (which only node 1 has) waits for the global scheduler's answer
# (NODE_PLACE to the head's node manager). The head dies (kill -9 of its
# supervisor: the head's node manager and its membership monitor) before
# it answers: the task fails within about 10 s of the monitor's silence
# (S_HEADLESS_MS, 30 s, made 10 s here by LUX_HEADLESS_MS: the wait is
# not what this checks) with LUX_EDEAD naming the head it asked, instead of
# waiting for ever (before: the driver's own 120 s get timeout, "not
# ready"). An actor whose creation waits for that answer the same way
# dies with the reason, and its call fails saying so. The head is stopped
# (SIGSTOP) first, so that no answer can come whatever the order of the
# submits and the kill.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
AMOD=$(cluster_mod actormod)

export LUX_HEADLESS_MS=10000

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1

out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" where 1 disk=1 2>&1)
is "$out" "$CL_DIR/n1" "with the head up, node 2's task needing disk=1 runs on node 1"

sup=$(cat "$CL_DIR/head/run/supervisor.pid")
kill -STOP "$sup"
ok $? "SIGSTOP the head's supervisor (it answers nothing now)"
"$LUX" run --address "$CL_DIR/n2" "$MOD" where 1 disk=1 >"$TAP_TMP/out" 2>&1 &
drv=$!
"$LUX" run --address "$CL_DIR/n2" "$AMOD" own ctr disk=1 0 1 "$TAP_TMP/go" >"$TAP_TMP/act" 2>&1 &
act=$!
kill -9 "$sup"
ok $? "kill -9 the head's supervisor"
# bounded: the driver's own get gives up after 120 s
wait $drv
rc=$?
out=$(cat "$TAP_TMP/out")
ok $([ $rc -ne 0 ]; echo $?) "the task waiting to be placed fails" || diag "$out"
like "$out" "global scheduler" "... saying the global scheduler did not answer: $out"
like "$out" "127.0.0.1" "... naming the head it asked"
case "$out" in *"not ready within"*) late=1 ;; *) late=0 ;; esac
ok $late "... before the driver's own timeout"
wait $act
rc=$?
out=$(cat "$TAP_TMP/act")
ok $([ $rc -ne 0 ]; echo $?) "the call of an actor whose creation waits to be placed fails" ||
    diag "$out"
like "$out" "global scheduler" "... saying the global scheduler did not answer: $out"
case "$out" in *"not ready within"*) late=1 ;; *) late=0 ;; esac
ok $late "... before the driver's own timeout"

done_testing
