#!/bin/sh
# 6053-cluster-spill-death: a node dies holding a task spilled to it; the
# task is placed again on another node and its driver gets the result.
# A head without the resource disk and two nodes with it (the head
# declares nodes dead after 1.5 s: LUX_NODE_DEAD_MS). A long task needing
# disk=1 is submitted on the head and spilled; once it runs (it makes
# DIR/napping in its node's directory), that node's daemon is killed
# (kill -9 by its pid, its workers by the pids of their files): the
# membership monitor says node_died, the head's node manager sees the
# task's node dead and places it again, on the other node, where it
# finishes; the driver prints that node's directory. The tasks view counts
# it as attempt 2 after one retry, whose reason names the dead node.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1,disk=1

"$LUX" run --address "$CL_DIR/head" "$MOD" nap 3000 disk=1 >"$TAP_TMP/out" 2>&1 &
drv=$!
ran=
i=0
while [ $i -lt 600 ] && [ -z "$ran" ]; do
    for n in 1 2; do
        [ -e "$CL_DIR/n$n/napping" ] && ran=$n
    done
    [ -z "$ran" ] && sleep 0.1
    i=$((i + 1))
done
ok $([ -n "$ran" ]; echo $?) "the task was spilled and runs on node ${ran:-?}"
other=$((3 - ${ran:-1}))
rm -f "$CL_DIR/n$other/napping"
pid=$(cluster_node_pid "$ran")
# the node's workers too: a machine that dies takes them with it
wpids=$(pgrep -P "$pid" 2>/dev/null)
kill -9 "$pid" $wpids
ok $? "kill -9 node $ran's daemon ($pid) and its workers"
wait $drv
rc=$?
ok $rc "the driver's get returns" || diag "$(cat "$TAP_TMP/out")"
is "$(cat "$TAP_TMP/out")" "$CL_DIR/n$other" "the task ran again, on node $other"
nid=$(cat "$CL_DIR/n$ran/run/node.joined")
cluster_wait_sql "SELECT node_id, state FROM nodes" "$nid,dead" 30
ok $? "the nodes view says node $ran died" || diag "$CL_SQL"
oid=$(cat "$CL_DIR/n$other/run/node.joined")
cluster_wait_sql "SELECT attempts, retries, node_id FROM tasks WHERE function = 's_nap'" \
    "2,1,$oid" 30
ok $? "the tasks view: attempt 2 ran on node $other, after one retry" || diag "$CL_SQL"
cluster_wait_sql "SELECT attempt, instr(reason, '$nid') > 0 FROM retries" "2,1" 30
ok $? "the retries view: attempt 2, naming node $ran, which died" || diag "$CL_SQL"

done_testing
