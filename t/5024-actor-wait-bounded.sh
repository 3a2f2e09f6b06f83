#!/bin/sh
# 5024-actor-wait-bounded: a client's wait for its node's answer to an
# actor request (lux_actor_checkpoint here) is bounded: when the node
# manager does not answer, it returns LUX_ETIMEDOUT after
# LUX_ACTOR_WAIT_MS, naming the request, the actor and the node, and the
# connection goes on (the late answer is dropped). A head and a node; a
# driver on node 1 (LUX_ACTOR_WAIT_MS=3000) makes a counter and calls it;
# node 1's daemon is stopped (SIGSTOP), the driver queues 4 calls and asks
# for a checkpoint; the node is let go 12 s later.
# Before, the wait had no bound (exec_client_actor.c s_actor_op, waiting
# with no timeout): the driver waited as long as the node did not answer
# (checks 5-7 failed).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
GO="$TAP_TMP/go"
CL_ON_EXIT='kill -CONT "$node" 2>/dev/null; touch "$GO"'

cluster_up -d 600000 CPU=1 CPU=1

LUX_ACTOR_WAIT_MS=3000 "$LUX" run --address "$CL_DIR/n1" "$MOD" asks ctr 4 "$GO" \
    >"$TAP_TMP/asks" 2>&1 &
drv=$!
CL_DRIVERS=$drv
cluster_wait_file "$GO.ready" 120
ok $? "a counter made by a driver on node 1 answers 4 calls" || diag "$(cat "$TAP_TMP/asks")"
node=$(cluster_node_pid 1)
kill -STOP "$node"
ok $? "SIGSTOP node 1's daemon (pid $node)"
t0=$(date +%s)
touch "$GO"
cluster_wait_line checkpoint "$TAP_TMP/asks" 30
ok $? "lux_actor_checkpoint returns within 30 s, the node stopped ($(($(date +%s) - t0)) s)" ||
    diag "$(cat "$TAP_TMP/asks")"
out=$(grep checkpoint "$TAP_TMP/asks")
like "$out" "checkpoint error: no answer from the node manager at $CL_DIR/n1 within 3000 ms: waited for lux_actor_checkpoint of actor " \
    "... LUX_ETIMEDOUT, naming the node, the bound and the request"
like "$out" "(LUX_ACTOR_WAIT_MS): its checkpoint, after the calls made before it" "... and what it waits for"
diag "$out"
sleep 9
kill -CONT "$node"
ok $? "SIGCONT node 1, 12 s after the checkpoint was asked"
i=0
while kill -0 "$drv" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
wait "$drv"
ok $? "the driver then gets its 4 calls and ends well (the late answer dropped)" ||
    diag "$(cat "$TAP_TMP/asks")"
like "$(tail -n 1 "$TAP_TMP/asks")" "$CL_DIR/n1 8" "... the last one's count 8"

done_testing
