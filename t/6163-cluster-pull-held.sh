#!/bin/sh
# 6163-cluster-pull-held: the head's node, answering a NODE_LOCATE with its
# own copy first, holds that copy (pinned) until the asker's OPEN, so a
# store under pressure cannot evict it in between. Before, a copy could go
# between the answer and the OPEN each time: the OPEN was refused
# ("evicted"), the puller asked the head to make it again, the head made
# it and answered with itself, and the copy went again, until the 8 rounds
# a pull allows were spent and the pull failed (the other way t/6091's
# seeds 21, 93 and 130 could end "(evicted)" at load 20, beside t/6162's).
#
# LUX_TEST_LOCATE_EVICT=FILE (exec_xfer_loc.c) forces the worst moment:
# while FILE exists, the head evicts the object it has just answered with
# its own copy, as to make room, and adds a line to FILE: "evicted", or
# "not evicted" when the copy is held.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
E="$TAP_TMP/evict"
CL_ON_EXIT='touch "$TAP_TMP/x.done"'

LUX_TEST_LOCATE_EVICT="$E" cluster_head --workers 1 --store-mb 64 --resources CPU=1,head=1
ok $CL_RC "the head starts, with LUX_TEST_LOCATE_EVICT" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 1 joins" || diag "$CL_OUT"

# a driver on the head has s_big make 4 MiB there and waits for it
# without reading it (nothing pinned: the head may evict it)
"$LUX" run --address "$CL_DIR/head" "$MOD" waited $((4 * MB)) head=1 "$TAP_TMP/x" \
    >"$TAP_TMP/x.out" 2>&1 &
CL_DRIVERS="$CL_DRIVERS $!"
cluster_wait_file "$TAP_TMP/x" 120
X=$(cat "$TAP_TMP/x" 2>/dev/null)
cluster_wait_sql "SELECT count(*) FROM object_locations WHERE object_id = '$X'" 1 60
ok $? "a driver on the head makes 4 MiB there (a task's output, not read)" ||
    diag "$(cat "$TAP_TMP/x.out") $CL_SQL"

: >"$E"
out=$("$LUX" run --address "$CL_DIR/n1" "$MOD" get $((4 * MB)) "$X" 2>&1)
is "$out" "get ok (4194304 bytes)" \
    "node 1 gets it, byte for byte, while the head would evict it after each answer"
ok "$(grep -q . "$E"; echo $?)" "... the head was asked where it lives (the hook ran)"
is "$(grep -c '^evicted' "$E")" 0 "... and never evicted its copy between its answer and the OPEN" ||
    diag "$(cat "$E")"
rm -f "$E"

touch "$TAP_TMP/x.done"

done_testing
