#!/bin/sh
# 6160-cluster-ckpt-head-restart: lux_actor_checkpoint of an actor held
# by a node that is not the head returns, done or with an error naming
# why, within 120 s, when the head is killed -9 around it and started
# again, and what the checkpoint waits behind does not end. A counter
# lives on node 1 (its driver there); the head is stopped (SIGSTOP); the
# driver runs a task that sleeps 10 minutes, calls the counter with its
# output (the call waits for it), and asks for a checkpoint (which waits
# behind the call); the head is killed -9, its asks unread, and started
# again. The nodes run with LUX_ACTOR_CKPT_MS=5000: a checkpoint that
# waits in its actor's queue that long fails, saying what holds it.
# Before, nothing bounded it: the node answered when the call was sent
# (10 minutes here), or never when what held the queue never moved, and
# the client waited with no bound (exec_client_actor.c s_actor_op): in
# t/6091 --harsh seed 6 a driver on node 3 waited in it 22 minutes.
# (Checks 9 and 10 failed before the fix.)
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
GO="$TAP_TMP/go"
CL_ON_EXIT='kill -CONT "$sup" 2>/dev/null; touch "$GO"'
export LUX_ACTOR_CKPT_MS=5000

cluster_up -d 600000 CPU=1 CPU=1

"$LUX" run --address "$CL_DIR/n1" "$MOD" behind ctr 600000 "$GO" >"$TAP_TMP/behind" 2>&1 &
drv=$!
CL_DRIVERS=$drv
cluster_wait_file "$GO.ready" 120
ok $? "a counter made by a driver on node 1 answers" || diag "$(cat "$TAP_TMP/behind")"
like "$(tail -n 1 "$TAP_TMP/behind")" "$CL_DIR/n1 1" "... from node 1"
sup=$(cat "$CL_DIR/head/run/supervisor.pid")
kill -STOP "$sup"
ok $? "SIGSTOP the head's supervisor (pid $sup)"
t0=$(date +%s)
touch "$GO"
sleep 2
kill -9 "$sup"
ok $? "kill -9 the stopped head: the driver's task, call and checkpoint are asked"
cluster_wait_gone "$sup"
ok $? "it is gone (30 s at most)"
out=$(LUX_NODE_DEAD_MS=600000 "$LUX" start --head --dir "$CL_DIR/head" 2>&1)
ok $? "the head starts again" || diag "$out"
i=0
while kill -0 "$drv" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
ok $(kill -0 "$drv" 2>/dev/null && echo 1 || echo 0) \
    "lux_actor_checkpoint returns within 120 s ($(($(date +%s) - t0)) s after it was asked)" ||
    diag "$(cat "$TAP_TMP/behind")"
out=$(grep checkpoint "$TAP_TMP/behind")
like "$out" "checkpoint error: lux_actor_checkpoint: actor " \
    "... with an error: its checkpoint did not start" || diag "$(cat "$TAP_TMP/behind")"
like "$out" "(LUX_ACTOR_CKPT_MS 5000): a call before it (add) waits for 1 of its arguments" \
    "... naming the bound and what held it"
diag "$out"

done_testing
