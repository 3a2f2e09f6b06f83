#!/bin/sh
# 6129-cluster-head-node-dead: the head's own node, declared dead by the
# head's membership monitor, starts again as a new node (tools/lux_head.c).
# A node the head declares dead stops and never comes back under its ID
# (t/6109); a node daemon then exits and its operator starts it again. The
# head's node is run by the head's supervisor, which went on beating for a
# node that stayed dead: the head ran no task again, and with the other
# nodes dead too a task failed "no node of the cluster has CPU=1 (the most
# any alive node has is 0)" (the cluster long form, t/6091 seed 6227, load
# 24: the supervisor starved past the dead time). A test hook
# (LUX_TEST_HEAD_BEAT_GAP_MS) makes the supervisor send no heartbeat for
# that long once its node has joined, with a dead time of 1 s.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"

LUX_NODE_DEAD_MS=1000 LUX_TEST_HEAD_BEAT_GAP_MS=3000 LUX_FAKE_GPUS=none \
    cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"

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
