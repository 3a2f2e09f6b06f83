#!/bin/sh
# 6061-cluster-module-fetch: modules go between nodes by content hash
# (exec_rmodule.c). A task sent to another node names its module by hash
# only; a node that does not hold the module's bytes asks the node that
# sent the task for them (NODE_MODULE_GET), checks them against the hash
# and keeps them in DIR/modules/HASH.so.
#  - A kept file changed afterwards (bytes appended: it still loads) is
#    refused, not run: the task fails naming the hash (before: it ran the
#    changed file); a driver that brings the module's bytes mends it.
#  - A kept file removed: the next task sent there fetches the module
#    again and runs (before: the sender pushed the bytes only with its
#    first task to a node, so this failed, no module).
#  - A node that joins after the module was used runs its tasks.
# The workers of node 1 are killed after each change, so that fresh ones
# load the module again.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
run_head() { "$LUX" run --address "$CL_DIR/head" "$MOD" where "$1" disk=1 2>&1; }
fresh_workers() {
    _w=$(pgrep -P "$(cluster_node_pid 1)")
    ok $([ -n "$_w" ] && kill -9 $_w; echo $?) "kill -9 node 1's workers ($_w)"
}

cluster_up CPU=1 CPU=1,disk=1
is "$(run_head 1)" "$CL_DIR/n1" "a task of the head's driver needing disk=1 runs on node 1"
set -- "$CL_DIR"/head/modules/*.so
ok $([ $# -eq 1 ] && [ -f "$1" ]; echo $?) "the head keeps the driver's module ($*)"
good=$1
hash=$(basename "$good" .so)
kept="$CL_DIR/n1/modules/$hash.so"
cmp -s "$good" "$kept"
ok $? "node 1 holds the same bytes under the same hash"

printf 'changed' >>"$kept"
ok $? "node 1's copy of the module is changed"
fresh_workers
out=$(run_head 1)
ok $([ "$out" != "$CL_DIR/n1" ]; echo $?) "a task needing the changed module fails on node 1"
like "$out" "$hash" "... naming the module's hash: $out"
like "$out" "do not match its hash" "... and why"
is "$("$LUX" run --address "$CL_DIR/n1" "$MOD" where 1 - 2>&1)" "$CL_DIR/n1" \
    "a driver on node 1, which brings the module's bytes, runs its task there"
cmp -s "$good" "$kept"
ok $? "... and node 1's copy is the module again"

rm -f "$kept"
ok $? "node 1's copy of the module is removed"
fresh_workers
is "$(run_head 2)" "$CL_DIR/n1
$CL_DIR/n1" "the next tasks sent to node 1 run there: it fetched the module again"
cmp -s "$good" "$kept"
ok $? "... and keeps its bytes"

# a node that joins now; node 1 leaves, so the tasks go to node 2
LUX_FAKE_GPUS=none cluster_join 2 --workers 1 --store-mb 32 --resources CPU=1,disk=1
ok $CL_RC "node 2 joins, with disk=1" || diag "$CL_OUT"
"$LUX" stop --dir "$CL_DIR/n1" >/dev/null 2>&1
ok $? "node 1 leaves"
ok $([ ! -e "$CL_DIR/n2/modules/$hash.so" ]; echo $?) "node 2 has no copy of the module"
is "$(run_head 2)" "$CL_DIR/n2
$CL_DIR/n2" "tasks of the module run on node 2, which joined after it was used"
cmp -s "$good" "$CL_DIR/n2/modules/$hash.so"
ok $? "... which fetched and kept it"

done_testing
