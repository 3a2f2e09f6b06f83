#!/bin/sh
# 6100-cluster-rebuild-nowait: in a cluster, an object the log says was
# made and is now held by no live node is made again at once, not after
# the wait for an event that may be on its way (LUX_XFER_LOCATE_MS, 2 s
# by default; an hour here, so that a read that waited so fails on its
# own 120 s get: no time is asserted).
# Found by t/6091-cluster-harsh.sh seed 6093 with 800 tasks: the head
# rebuilt evicted objects one every 2 s (each a pull that waited for a
# location the log would never have), 1,237 rebuilds in 17 minutes at 1%
# CPU, and the run ended in a HANG.
#   (a) a task on the head whose argument's chain was evicted: each link
#       is rebuilt at once;
#   (b) a task on node 1 whose argument was evicted on the head: the head
#       makes it again when node 1 first asks.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
export LUX_XFER_LOCATE_MS=3600000

cluster_head --workers 1 --store-mb 16 --resources CPU=1
ok $CL_RC "the head starts, with a 16 MiB store" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1,disk=1
ok $CL_RC "node 1 joins, with disk=1" || diag "$CL_OUT"

# chain NAME K: a driver on the head makes a chain of 10 links of 3 MiB
# and writes link K's ref to $TAP_TMP/NAME; 0 once written
chain() {
    "$LUX" run --address "$CL_DIR/head" "$MOD" chain 10 $((3 * MB)) "$2" "$TAP_TMP/$1" \
        >"$TAP_TMP/$1.out" 2>&1 &
    CL_DRIVERS="$CL_DRIVERS $!"
    eval "pid_$1=$!"
    cluster_wait_file "$TAP_TMP/$1" 120 && REF=$(cat "$TAP_TMP/$1") && [ -n "$REF" ]
}
evicted() { # evicted HEX: 0 once the log says the head evicted it
    cluster_wait_sql "SELECT count(*) > 0 FROM events WHERE kind = 'object_lost' AND
        task_id || printf('%08x', idx) = '$1'" 1 30
}

# (b) first: link 0 holds schedmod's plain pattern, which echo checks
chain b 0
ok $? "a driver on the head made a chain of 10 links of 3 MiB ($REF)" ||
    diag "$(cat "$TAP_TMP/b.out")"
evicted "$REF"
ok $? "its link 0 was evicted from the head's store" || diag "$CL_SQL"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$REF" $((3 * MB)) disk=1 2>&1)
is "$out" "echo ok (3145728 bytes) $CL_DIR/n1" \
    "(b) a task on node 1 reads it, made again without waiting for the log's location"
cluster_wait_sql "SELECT count(*) > 0 FROM retries WHERE reason = 'rebuild: object $REF was lost'" 1 30
ok $? "(b) the retries view shows its rebuild" || diag "$CL_SQL"
touch "$TAP_TMP/b.done"
wait "$pid_b"
like "$(cat "$TAP_TMP/b.out")" "chain ok" "the driver then reads link 0 itself"

# (a) link 4 of a new chain, and links 0-3 before it, all evicted
chain a 4
ok $? "a driver on the head made another chain ($REF)" || diag "$(cat "$TAP_TMP/a.out")"
evicted "$REF"
ok $? "its link 4 was evicted" || diag "$CL_SQL"
touch "$TAP_TMP/a.done"
wait "$pid_a"
out=$(cat "$TAP_TMP/a.out")
like "$out" "chain ok" \
    "(a) the driver on the head reads link 4, rebuilt with the links before it, none waiting"
diag "$out"
cluster_wait_sql "SELECT count(*) > 0 FROM retries WHERE reason = 'rebuild: object $REF was lost'" 1 30
ok $? "(a) the retries view shows link 4's rebuild" || diag "$CL_SQL"

done_testing
