#!/bin/sh
# 6061-cluster-module-fetch: modules are fetched by content hash. A task
# sent to another node names its module by hash only; a node that does
# not hold the module's bytes asks the node that sent the task for them
# (NODE_MODULE_GET), checks them against the hash and keeps them
# (exec_rmodule.c). Node 1 gets the module with its first task; then its
# copy is removed (and its workers killed, so they load it again): the
# next task still runs there (before: the sender pushed the bytes only
# with its first task to a node, so this failed, no module). A node that
# joins after the module was used runs its tasks too, fetching it.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"
export LUX_FAKE_GPUS=none

cluster_up CPU=1 CPU=1,disk=1

out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 1 disk=1 2>&1)
is "$out" "$CL_DIR/n1" "a task of the head's driver needing disk=1 runs on node 1"
set -- "$CL_DIR"/head/modules/*.so
ok $([ $# -eq 1 ] && [ -f "$1" ]; echo $?) "the head keeps the driver's module ($*)"
hash=$(basename "$1" .so)
cmp -s "$1" "$CL_DIR/n1/modules/$hash.so"
ok $? "node 1 holds the same bytes under the same hash"

rm -f "$CL_DIR/n1/modules/$hash.so"
ok $? "node 1's copy of the module is removed"
w=$(pgrep -P "$(cluster_node_pid 1)")
ok $([ -n "$w" ] && kill -9 $w; echo $?) "kill -9 node 1's workers ($w)"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 2 disk=1 2>&1)
is "$out" "$CL_DIR/n1
$CL_DIR/n1" "the next tasks sent to node 1 run there: it fetched the module again"
cmp -s "$CL_DIR/head/modules/$hash.so" "$CL_DIR/n1/modules/$hash.so"
ok $? "... and keeps its bytes"

# a node that joins now; node 1 leaves, so the tasks go to node 2
LUX_FAKE_GPUS=none cluster_join 2 --workers 1 --store-mb 32 --resources CPU=1,disk=1
ok $CL_RC "node 2 joins, with disk=1" || diag "$CL_OUT"
"$LUX" stop --dir "$CL_DIR/n1" >/dev/null 2>&1
ok $? "node 1 leaves"
ok $([ ! -e "$CL_DIR/n2/modules/$hash.so" ]; echo $?) "node 2 has no copy of the module"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 2 disk=1 2>&1)
is "$out" "$CL_DIR/n2
$CL_DIR/n2" "tasks of the module run on node 2, which joined after it was used"
cmp -s "$CL_DIR/head/modules/$hash.so" "$CL_DIR/n2/modules/$hash.so"
ok $? "... which fetched and kept it"

done_testing
