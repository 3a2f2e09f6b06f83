#!/bin/sh
# 6057-cluster-pull-priority: pulls from another node are admitted to the
# store by priority, a lux_get's before a lux_wait's (then task
# arguments'). Node 1 holds two 32 MiB puts, W and G. Node 2's store (48
# MiB) is filled by a pinned 40 MiB put of another driver, so no pull
# fits. A driver on node 2 asks for G with lux_get, then for W with
# lux_wait, both without waiting: both pulls wait for room. Once the
# pinned put goes, room for one comes: G (the get) is pulled first (node
# 2's log: "pulling object"). Before, lux_wait pulled at get priority, and
# of two pulls of one priority the newer went first: W.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'touch "$TAP_TMP/w.done" "$TAP_TMP/g.done" "$TAP_TMP/pin.done" "$TAP_TMP/asked.done"; cluster_down; tap_cleanup' EXIT
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"
export LUX_FAKE_GPUS=none
MIB=1048576

cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 96 --resources CPU=1
ok $CL_RC "node 1 joins" || diag "$CL_OUT"
LUX_STORE_WAIT_MS=120000 cluster_join 2 --workers 1 --store-mb 48 --resources CPU=1
ok $CL_RC "node 2 joins, with a 48 MiB store" || diag "$CL_OUT"

"$LUX" run --address "$CL_DIR/n1" "$MOD" hold $((32 * MIB)) "$TAP_TMP/w" >/dev/null 2>&1 &
"$LUX" run --address "$CL_DIR/n1" "$MOD" hold $((32 * MIB)) "$TAP_TMP/g" >/dev/null 2>&1 &
"$LUX" run --address "$CL_DIR/n2" "$MOD" pin $((40 * MIB)) "$TAP_TMP/pin" >"$TAP_TMP/pin.out" 2>&1 &
cluster_wait_file "$TAP_TMP/w" && cluster_wait_file "$TAP_TMP/g" &&
    cluster_wait_file "$TAP_TMP/pin"
ok $? "W and G are put on node 1, 40 MiB pinned on node 2" || diag "$(cat "$TAP_TMP/pin.out")"
w=$(cat "$TAP_TMP/w")
g=$(cat "$TAP_TMP/g")
# both objects are on record before node 2 asks where they live
cluster_wait_sql "SELECT count(*) FROM event WHERE kind = 8 AND instr('$w $g', lower(hex(task))) > 0" \
    "2" 30

"$LUX" run --address "$CL_DIR/n2" "$MOD" prio "$w" "$g" "$TAP_TMP/asked" >"$TAP_TMP/prio" 2>&1 &
drv=$!
cluster_wait_file "$TAP_TMP/asked"
ok $? "node 2's driver asked for G (get), then W (wait)"
# both pulls queued for room before any comes: the driver's calls return
# at once, while each pull still asks the head where its object lives and
# opens it at node 1 (it failed 1 run in 3 so: W queued, and was admitted, before G)
i=0
while [ $i -lt 600 ] && [ "$(grep -c "waits for room" "$CL_DIR/n2/log/node.log")" -lt 2 ]; do
    sleep 0.1
    i=$((i + 1))
done
is "$(sed -n 's/.*object \([0-9a-f]*\) .* waits for room, priority \([a-z]*\).*/\1 \2/p' \
    "$CL_DIR/n2/log/node.log" | sort | tr '\n' ' ')" \
    "$(printf '%s get\n%s wait\n' "$g" "$w" | sort | tr '\n' ' ')" \
    "node 2 queued both pulls for room: G at get priority, W at wait priority"
touch "$TAP_TMP/pin.done" # the pinned put goes: room for one of them
i=0
while [ $i -lt 600 ] && ! grep -q "pulling object" "$CL_DIR/n2/log/node.log"; do
    sleep 0.1
    i=$((i + 1))
done
order=$(sed -n 's/.*pulling object \([0-9a-f]*\) .*/\1/p' "$CL_DIR/n2/log/node.log" | tr '\n' ' ')
is "$(echo "$order" | cut -d' ' -f1)" "$g" "G (asked by a get) was pulled first, W (a wait) after"
touch "$TAP_TMP/asked.done"
wait $drv
ok $? "node 2's driver ends"
touch "$TAP_TMP/w.done" "$TAP_TMP/g.done"

done_testing
