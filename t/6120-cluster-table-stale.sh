#!/bin/sh
# 6120-cluster-table-stale: the head's table of nodes is as old as its
# ask, not its taking. The global scheduler asks the membership monitor
# for its table ahead, at a decision that uses the table it holds, and
# takes the answer at a later decision (exec_table.c). Before, a table
# was stamped with the time it was taken: an answer asked before an idle
# spell and taken after it counted as fresh, and a "no" was said on it
# (a task no node of it fits is infeasible on a fresh table only,
# 33f9110), though a node had joined since the ask.
# A head (CPU) and node 1 (disk); the head holds a table up to 10 minutes
# old (test hook LUX_TEST_TABLE_STALE_MS, for S_TABLE_STALE_MS, 1 s), so
# that its second decision uses the held table and asks ahead whatever
# the load. Then node 2 joins with far, and a task needing far=1 is
# placed: it runs on node 2, decided on a table asked after it joined.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
SMOD=$(cluster_mod schedmod)
export LUX_TEST_TABLE_STALE_MS=600000
now_ms() { date +%s%3N; }

cluster_up CPU=1 CPU=1,disk=1
out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 disk=1 2>&1)
is "$out" "$CL_DIR/n1" "a task needing disk, submitted at the head, runs on node 1 (no table: read)"
set -- $(cluster_head_beat "$(now_ms)")
w0=$1
sleep 0.2 # the table is older than S_TABLE_MS (100 ms): the next decision asks ahead
out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 disk=1 2>&1)
is "$out" "$CL_DIR/n1" "another, 200 ms or more later, runs on node 1 too"
set -- $(cluster_head_beat "$(now_ms)")
w1=$1
ok $([ -n "$w0" ] && [ -n "$w1" ] && [ "$w1" -eq "$w0" ]; echo $?) \
    "... on the held table: it did not wait (table_waits ${w0:-?} -> ${w1:-?}), it asked ahead"

cluster_join 2 --workers 1 --store-mb 32 --resources CPU=1,far=1
ok $CL_RC "node 2 joins, with far" || diag "$CL_OUT"
listed() { # node 2 alive with far in the monitor's table
    "$LUX" status --dir "$CL_DIR/head" --json 2>/dev/null | tr '{' '\n' |
        grep "\"dir\": \"$CL_DIR/n2\"" | grep '"state": "alive"' | grep -q 'far=1'
}
_end=$(($(date +%s) + 60))
while [ "$(date +%s)" -lt $_end ] && ! listed; do
    sleep 0.2
done
listed
ok $? "the membership monitor lists node 2 alive, with far"

out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 far=1 2>&1)
is "$out" "$CL_DIR/n2" "a task needing far runs on node 2: the answer asked before it joined is not fresh"

done_testing
