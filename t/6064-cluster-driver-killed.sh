#!/bin/sh
# 6064-cluster-driver-killed: `lux run --address HOST:PORT` brings a node
# of its own (tools/lux_run_remote.c), which it stops when the driver
# ends. A driver killed -9 cannot stop it: before, that node ran on for
# ever (its daemon, its worker, its membership entry alive, its private
# directory in TMPDIR). Now the node is told the driver's pid and leaves
# the cluster when that process is gone (tools/lux_node.c): its daemon
# ends, the nodes view says it left, its directory is removed, and what
# the driver owned on it ends with it.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
AMOD=$(cluster_mod actormod)
export TMPDIR="$TAP_TMP"
cluster_up CPU=1 CPU=1,disk=1

GO=$TAP_TMP/go
"$LUX" run --address "$CL_ADDRESS" --token-file "$CL_TOKEN" --node-ip 127.0.0.3 \
    "$AMOD" own ctr - 0 1 "$GO" >"$TAP_TMP/drv" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
cluster_wait_file "$GO.ready"
ok $? "a remote driver's actor (on its own node) is made and answers" ||
    diag "$(cat "$TAP_TMP/drv")"
set -- "$TAP_TMP"/lux-driver-*
ddir=$1
dpid=$(cat "$ddir/node/run/node.pid" 2>/dev/null)
did=$(cat "$ddir/node/run/node.joined" 2>/dev/null)
ok $([ -n "$dpid" ] && [ -n "$did" ] && kill -0 "$dpid"; echo $?) \
    "its node runs (pid $dpid, node $did)"
wk=$(pgrep -P "$dpid" | tr '\n' ' ')
ok $([ -n "$wk" ]; echo $?) "... with its workers ($wk)"

kill -9 "$drv"
ok $? "kill -9 the driver (pid $drv)"
wait "$drv" 2>/dev/null
n=0
while kill -0 "$dpid" 2>/dev/null && [ $n -lt 600 ]; do
    sleep 0.1
    n=$((n + 1))
done
ok $(kill -0 "$dpid" 2>/dev/null && echo 1 || echo 0) "the driver's node daemon ends"
left=0
for w in $wk; do
    n=0
    while kill -0 "$w" 2>/dev/null && [ $n -lt 300 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    kill -0 "$w" 2>/dev/null && left=1
done
ok $left "... and its workers, the actor's among them"
cluster_wait_sql "SELECT state FROM nodes WHERE node_id = '$did'" "left" 30
ok $? "the nodes view says the driver's node left" || diag "$CL_SQL"
cluster_wait_sql "SELECT state FROM actors WHERE node_id = '$did'" "dead" 30
ok $? "the actors view says the driver's actor is dead" || diag "$CL_SQL"
n=0
while [ -e "$ddir" ] && [ $n -lt 300 ]; do
    sleep 0.1
    n=$((n + 1))
done
ok $([ ! -e "$ddir" ]; echo $?) "its private directory ($ddir) is removed"

done_testing
