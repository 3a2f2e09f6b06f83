#!/bin/sh
# 6054-cluster-arg-third: a task's argument held on a third node
# (exec_node_far.c). A head (resource home) and three nodes on loopback
# addresses: node 1 and node 3 make objects (a driver there puts one, or
# runs a task whose output stays there, and holds it), node 2 alone has
# the resource disk. A task submitted on the head that needs disk (so it
# runs on node 2) and takes node 1's object as its argument gets it
# pulled from node 1 into node 2's store before it runs: its copy comes
# back byte for byte, and object_locations says node 2 holds a copy.
# Then the source dies mid-pull (SIGSTOP once the pull is under way,
# then kill -9 by pid): a put, which has no lineage, fails the task with
# an error naming the object and the node; a task's output, pulled to
# the head for a task needing home, is rebuilt from its lineage there and
# the task finishes. Pullers use 4 KiB chunks, one in flight, and give a
# silent source 3 s (LUX_XFER_*), so the pull is slow enough to be caught.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576

LUX_XFER_CHUNK=4096 LUX_XFER_WINDOW=1 LUX_XFER_TIMEOUT_MS=3000 \
    cluster_head --workers 1 --store-mb 160 --resources CPU=1,home=1
ok $CL_RC "the head starts, with home=1" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 96 --resources CPU=1
ok $CL_RC "node 1 joins" || diag "$CL_OUT"
LUX_XFER_CHUNK=4096 LUX_XFER_WINDOW=1 LUX_XFER_TIMEOUT_MS=3000 \
    cluster_join 2 --workers 1 --store-mb 96 --resources CPU=1,disk=1
ok $CL_RC "node 2 joins, with disk=1" || diag "$CL_OUT"
cluster_join 3 --workers 1 --store-mb 96 --resources CPU=1
ok $CL_RC "node 3 joins" || diag "$CL_OUT"
n2=$(cat "$CL_DIR/n2/run/node.joined")

hold() { cluster_hold "$@"; }

# pulling LOGDIR HEX: wait until LOGDIR's node log says it pulls HEX
pulling() {
    _i=0
    while [ $_i -lt 1200 ]; do
        grep -q "pulling object $2" "$1"/log/*.log 2>/dev/null && return 0
        sleep 0.05
        _i=$((_i + 1))
    done
    return 1
}

hold hold $((16 * MB)) 1 put16
ok $? "a driver on node 1 puts 16 MiB and holds it ($REF)" || diag "$(cat "$TAP_TMP/put16.out")"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$REF" $((16 * MB)) disk=1 2>&1)
is "$out" "echo ok (16777216 bytes) $CL_DIR/n2" \
    "a task needing disk, submitted on the head, reads node 1's object on node 2, byte for byte"
# (the copy goes once its task is done, and that is logged too: object_lost)
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_copied' AND node_id = '$n2'
    AND task_id = '$(echo "$REF" | cut -c1-32)'" 1 30
ok $? "the log: node 2 made a copy (object_copied)" || diag "$CL_SQL"
out=$("$LUX" run --address "$CL_DIR/n3" "$MOD" echo "$REF" $((16 * MB)) disk=1 2>&1)
is "$out" "echo ok (16777216 bytes) $CL_DIR/n2" "submitted on node 3: the same"
touch "$TAP_TMP/put16.done"

# echo_mid_pull TAG OBJ RES PULLER I DESC LOG...: a head driver's task
# needing RES echoes OBJ (24 MiB), which PULLER (a node's directory) pulls
# from node I (check DESC); node I is stopped (SIGSTOP) mid-pull, the
# puller's LOG shows the pull unfinished, then node I's daemon and its
# workers are killed (-9). Returns the driver's status; its output is in
# $TAP_TMP/TAG.echo.
echo_mid_pull() {
    _tag=$1 _obj=$2 _res=$3 _puller=$4 _n=$5 _desc=$6
    shift 6
    "$LUX" run --address "$CL_DIR/head" "$MOD" echo "$_obj" $((24 * MB)) "$_res" \
        >"$TAP_TMP/$_tag.echo" 2>&1 &
    _drv=$!
    pulling "$_puller" "$_obj"
    ok $? "$_desc"
    _p=$(cluster_node_pid "$_n")
    kill -STOP "$_p"
    ok $? "node $_n stopped in the middle ($_p)"
    ok $(grep -q "pulled object $_obj" "$@"; [ $? -ne 0 ]; echo $?) "before the transfer ended"
    kill -9 "$_p" $(pgrep -P "$_p" 2>/dev/null)
    ok $? "kill -9 node $_n's daemon and its workers"
    wait $_drv
}

# a task's output on node 3, needed on the head: node 3 dies mid-pull,
# the head rebuilds it from its lineage
hold make $((24 * MB)) 3 made24
ok $? "a task run by a driver on node 3 made 24 MiB there ($REF)" ||
    diag "$(cat "$TAP_TMP/made24.out")"
made=$REF
echo_mid_pull made "$made" home=1 "$CL_DIR/head" 3 \
    "the head pulls it from node 3 for a task needing home" "$CL_DIR"/head/log/*.log
ok $? "the task's driver returns" || diag "$(cat "$TAP_TMP/made.echo")"
is "$(cat "$TAP_TMP/made.echo")" "echo ok (25165824 bytes) $CL_DIR/head" \
    "the object was rebuilt from its lineage on the head and read byte for byte"
grep -q "object $made: .*rebuilding it from its lineage" "$CL_DIR"/head/log/*.log
ok $? "the head's log says it rebuilt it after the pull failed"

# a put on node 1, needed on node 2: node 1 dies mid-pull
hold hold $((24 * MB)) 1 put24
ok $? "a driver on node 1 puts 24 MiB ($REF)" || diag "$(cat "$TAP_TMP/put24.out")"
put=$REF
echo_mid_pull put "$put" disk=1 "$CL_DIR/n2" 1 "node 2 pulls it from node 1" \
    "$CL_DIR/n2/log/node.log"
ok $([ $? -ne 0 ]; echo $?) "the driver's get fails, it does not hang"
out=$(cat "$TAP_TMP/put.echo")
like "$out" "object $put" "the error names the object: $out"
like "$out" "127.0.0.2" "... and node 1, where it was"

done_testing
