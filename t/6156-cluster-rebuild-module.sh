#!/bin/sh
# 6156-cluster-rebuild-module: the head's node makes an object again from
# its lineage (no live node holds it) with a module only another node
# ever had: the module is written from the log first, and the rebuilt
# task runs. A driver on node 1 makes a task's output there (its module
# registered by node 1; the head never ran a task of it) and holds it;
# node 1 dies (kill -9); a driver on node 2 gets the object: the head
# rebuilds it. Before, the rebuilt task failed in the head's worker,
# "module HASH: module HEAD/modules/HASH.so: ... No such file or
# directory" (t/6091 --harsh seed 1: a rebuild on the head failed so once,
# and ran only when a task spilled there had brought the module).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
CL_ON_EXIT='touch "$TAP_TMP/made.done"'

cluster_up -d 2000 CPU=1 CPU=1 CPU=1
id1=$(cat "$CL_DIR/n1/run/node.joined")

cluster_hold make 3000000 1 made
ok $? "a driver on node 1 makes a task's output of 3,000,000 bytes and holds it"
ls "$CL_DIR/head/modules" >"$TAP_TMP/mods" 2>/dev/null
is "$(cat "$TAP_TMP/mods")" "" "the head has no module file yet"

cluster_kill_node 1
ok $? "kill -9 node 1 and its workers"
cluster_wait_value "SELECT state FROM nodes WHERE node_id = '$id1'" dead 60
ok $? "the head says node 1 died" || diag "$CL_SQL"

out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" get 3000000 "$REF" 2>&1)
is "$out" "get ok (3000000 bytes)" "node 2 gets it: the head made it again" ||
    diag "$("$LUX" sql --dir "$CL_DIR/head" "SELECT time, kind, substr(info, 1, 160) FROM events WHERE kind IN ('task_failed', 'task_retried')" 2>&1)"

done_testing
