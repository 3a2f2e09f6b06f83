#!/bin/sh
# 6129-cluster-head-node-dead: the head's own node and its silence
# (exec_members.h, tools/lux_head.c). Its beats come from the head's
# supervisor loop; at load 24 with a dead time of 2 s (the cluster long
# form, t/6091 seeds 6227, 6247, 6253, 6267) that loop starved, the head's
# monitor declared the head's own node dead, and the supervisor beat on for
# an ID that stayed dead: the head ran no placed task again, and with the
# other nodes dead a task failed "no node of the cluster has CPU=1 (the
# most any alive node has is 0)". A test hook (LUX_TEST_HEAD_BEAT_GAP_MS)
# makes the supervisor send no heartbeat for that long once its node has
# joined; the dead time is 1 s.
# 1. The monitor does not judge the head's own node by its silence: it
#    stays alive, and a driver on the head runs on through the gap.
# 2. Judged like any node (LUX_TEST_MEMBERS_JUDGE_OWN=1), a head's node
#    told it is dead starts again under a new ID, as a node daemon
#    started again does, and the head runs tasks again.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"

LUX_NODE_DEAD_MS=1000 LUX_TEST_HEAD_BEAT_GAP_MS=3000 LUX_FAKE_GPUS=none \
    cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" lat 100000 - 5000 2>&1)
ok $? "a driver on the head calls tasks one at a time for 5 s, through the gap" || diag "$out"
like "$out" "lat " "... and says how many ran: $out"
like "$(cat "$CL_DIR/head/log/supervisor.log")" "LUX_TEST_HEAD_BEAT_GAP_MS: no heartbeat for 3000 ms" \
    "the supervisor did not beat for 3 s"
cluster_wait_value "SELECT count(*) FROM nodes WHERE state = 'alive'" 1 5
ok $? "its node is still alive" || diag "$CL_SQL"
cluster_wait_value "SELECT count(*) FROM nodes WHERE state != 'alive'" 0 5
ok $? "... and no node is dead" || diag "$CL_SQL"
cluster_down
rm -rf "$CL_DIR/head"

LUX_NODE_DEAD_MS=1000 LUX_TEST_HEAD_BEAT_GAP_MS=3000 LUX_TEST_MEMBERS_JUDGE_OWN=1 \
    LUX_FAKE_GPUS=none cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "judged like any node: the head starts" || diag "$CL_OUT"
cluster_wait_value "SELECT count(*) FROM nodes WHERE state = 'dead'" 1 30
ok $? "its node, silent for 3 s, is declared dead" || diag "$CL_SQL"
old=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT node_id FROM nodes WHERE state = 'dead'" |
    tail -n 1)
cluster_wait_value "SELECT count(*) FROM nodes WHERE state = 'alive' AND node_id != '$old'" 1 60
ok $? "the head's node joins again under a new ID" || diag "$CL_SQL"
cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$old'" dead 5
ok $? "the old ID stays dead" || diag "$CL_SQL"

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 3 - 2>&1)
ok $? "three tasks submitted on the head finish" || diag "$out"
is "$(echo "$out" | sort -u)" "$CL_DIR/head" "... on the head"

log=$(cat "$CL_DIR/head/log/supervisor.log")
like "$log" "declared node $old dead" "the supervisor's log says the head declared its node dead"
like "$log" "starting its node manager again" "... and that it starts its node again"

done_testing
