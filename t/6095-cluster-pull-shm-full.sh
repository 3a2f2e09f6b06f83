#!/bin/sh
# 6095-cluster-pull-shm-full: a pull into a store whose /dev/shm has no
# room for the object's pages fails with a clear error, and the node lives.
# Node 2 runs in a private mount namespace whose /dev/shm is a 64 MiB
# tmpfs; its 32 MiB store fits at start (the store file is sparse), then a
# 48 MiB file fills that /dev/shm, so 16 MiB are left. Node 1 holds a
# 24 MiB object. A task needing small=1 (node 2 alone has it) takes that
# object as its argument: node 2 pulls it, and the store has a free block
# for it, but /dev/shm has not the pages. The pull must fail with an error
# naming the object and the room, and node 2 must live and run the task
# once the file is gone. Before, the puller wrote the chunks into pages
# it had not reserved: the node manager died of SIGBUS (or its bulk
# receive failed on EFAULT and the pull went to the next source).
# Needs root (or the right to unshare and mount); skips without it.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MIB=1048576

if ! unshare -m sh -c "mount -t tmpfs -o size=1m tmpfs /dev/shm" >/dev/null 2>&1; then
    skip_all "cannot mount a small tmpfs on /dev/shm in a private mount namespace (needs root)"
fi

cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "node 1 joins" || diag "$CL_OUT"
# node 2, in a mount namespace of its own with a 64 MiB /dev/shm
CL_OUT=$(unshare -m sh -c "mount -t tmpfs -o size=64m tmpfs /dev/shm || exit 9
    exec '$LUX' start --address '$CL_ADDRESS' --dir '$CL_DIR/n2' --token-file '$CL_TOKEN' \
        --node-ip '$(cl_ip 2)' --workers 1 --store-mb 32 --resources CPU=1,small=1" 2>&1)
CL_RC=$?
CL_NODES="$CL_NODES 2"
ok $CL_RC "node 2 joins, its /dev/shm a 64 MiB tmpfs" || diag "$CL_OUT"
n2=$(cluster_node_pid 2)
in_n2() { nsenter -t "$n2" -m "$@"; }

cluster_hold hold $((24 * MIB)) 1 obj
ok $? "node 1 holds a 24 MiB object" || diag "$(cat "$TAP_TMP/obj.out")"
obj=$REF
in_n2 dd if=/dev/zero of=/dev/shm/filler bs=1M count=48 >/dev/null 2>&1
ok $? "a 48 MiB file in node 2's /dev/shm leaves 16 MiB free" || diag "$(in_n2 df -m /dev/shm)"

out=$(timeout -s KILL 180 "$LUX" run --address "$CL_DIR/head" "$MOD" echo "$obj" $((24 * MIB)) small=1 2>&1)
rc=$?
[ "$rc" -ne 0 ]
ok $? "the task whose argument node 2 cannot hold fails" || diag "$out"
kill -0 "$n2" 2>/dev/null
ok $? "node 2's daemon lives" || diag "$(tail -20 "$CL_DIR/n2/log/node.log")"
why=$(grep "object $obj: no room" "$CL_DIR/n2/log/node.log" | head -1)
like "$why" "its $((24 * MIB)) bytes" "node 2 says it has no room for the object's 24 MiB" ||
    diag "$(grep -i "error\|no room\|full\|bus" "$CL_DIR/n2/log/node.log" | tail -10)"
like "$why" "/dev/shm had" "... and says what /dev/shm had free"
like "$out" "no room" "the driver's error says there was no room" || diag "$out"

in_n2 rm -f /dev/shm/filler
out=$(timeout -s KILL 180 "$LUX" run --address "$CL_DIR/head" "$MOD" echo "$obj" $((24 * MIB)) small=1 2>&1)
like "$out" "echo ok ($((24 * MIB)) bytes) $CL_DIR/n2" \
    "with the file gone, node 2 pulls it and runs the task" || diag "$out"

done_testing
