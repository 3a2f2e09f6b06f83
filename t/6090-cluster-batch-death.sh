#!/bin/sh
# 6090-cluster-batch-death: many spilled tasks travel to a node together
# (one NODE_TASK per node and dispatch pass), run there in batches on its
# worker (tasks asking for the same resources share a batch) and their
# results come back together (NODE_TASK_DONE per turn, held while more
# come); a node killed in the middle of such a batch loses none of them
# and runs none twice where a driver could see it.
# A head without the resource disk and two nodes with it, one worker each
# (the head declares nodes dead after 1.5 s: LUX_NODE_DEAD_MS). A driver
# on the head submits 24 steps at once, each needing disk=1: a step makes
# DIR/step.I in its node's directory (failing if it is there already:
# twice on one node), sleeps 500 ms and returns "I DIR". Once a node has
# begun its third step, it is killed -9 (its daemon and workers, by pid).
# Then: the driver gets all 24 results, each the one of its own step, in
# the order submitted; a result that came from the killed node was not
# run again on the other; the steps the kill cut ran again on the other
# node; the tasks view says every step finished, and the retried ones
# ran their attempt 2 on the survivor after one retry naming the dead node.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
N=24

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1,disk=1

"$LUX" run --address "$CL_DIR/head" "$MOD" steps $N 500 disk=1 >"$TAP_TMP/out" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
# the node that begins its third step first (at most 120 s)
ran=
i=0
while [ $i -lt 1200 ] && [ -z "$ran" ]; do
    for n in 1 2; do
        k=$(ls "$CL_DIR/n$n" 2>/dev/null | grep -c '^step\.')
        [ "$k" -ge 3 ] && [ -z "$ran" ] && ran=$n
    done
    [ -z "$ran" ] && sleep 0.1
    i=$((i + 1))
done
ok $([ -n "$ran" ]; echo $?) "a batch of steps runs on node ${ran:-?}"
other=$((3 - ${ran:-1}))
cluster_kill_node "$ran"
ok $? "kill -9 node $ran's daemon and its workers in the middle of its batch"
wait $drv
rc=$?
ok $rc "the driver gets every result" || diag "$(cat "$TAP_TMP/out")"

# each line the result of its own step, in order, from one of the nodes
want=$(i=0; while [ $i -lt $N ]; do echo $i; i=$((i + 1)); done)
is "$(cut -d' ' -f1 "$TAP_TMP/out")" "$want" "$N results, each its own step's, in the order submitted"
bad=$(grep -v -e " $CL_DIR/n1\$" -e " $CL_DIR/n2\$" "$TAP_TMP/out")
is "$bad" "" "every result names the node that ran it"

# a result that came back from the killed node: not run again elsewhere
twice=
for s in $(grep " $CL_DIR/n$ran\$" "$TAP_TMP/out" | cut -d' ' -f1); do
    [ -e "$CL_DIR/n$other/step.$s" ] && twice="$twice $s"
done
is "$twice" "" "no step whose result came from node $ran ran again on node $other"
# the cut ones ran again on the survivor; none ran there twice (its
# steps fail when their file is there already: no 'error' line above)
cut_n=$(grep -c " $CL_DIR/n$other\$" "$TAP_TMP/out")
ran_n=$(grep -c " $CL_DIR/n$ran\$" "$TAP_TMP/out")
is "$((cut_n + ran_n))" "$N" "$ran_n results from node $ran, $cut_n from node $other: none lost"
moved=0
for s in $(ls "$CL_DIR/n$ran" | sed -n 's/^step\.//p'); do
    [ -e "$CL_DIR/n$other/step.$s" ] && moved=$((moved + 1))
done
ok $([ $moved -ge 1 ]; echo $?) "$moved steps the kill cut on node $ran ran again on node $other"

nid=$(cat "$CL_DIR/n$ran/run/node.joined")
oid=$(cat "$CL_DIR/n$other/run/node.joined")
cluster_wait_value "SELECT count(*) FROM tasks WHERE function = 's_step' AND status = 'finished'" \
    "$N" 60
ok $? "the tasks view: all $N steps finished" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) >= $moved FROM tasks WHERE function = 's_step' AND
                    retries > 0" 1 30
ok $? "the tasks view: at least the $moved cut steps were retried" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) FROM tasks WHERE function = 's_step' AND retries > 0 AND
                    (attempts != 2 OR node_id != '$oid')" 0 30
ok $? "the tasks view: each retried step ran its attempt 2 on node $other" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) >= $moved FROM retries WHERE function = 's_step'" 1 30
ok $? "the retries view has a retry for each cut step at least" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) FROM retries WHERE function = 's_step' AND
                    instr(reason, '$nid') = 0" 0 30
ok $? "the retries view: every retry names node $ran, which died" || diag "$CL_SQL"

done_testing
