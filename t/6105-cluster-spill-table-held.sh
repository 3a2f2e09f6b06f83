#!/bin/sh
# 6105-cluster-spill-table-held: a spilled task does not wait for the
# head's next table of nodes. The global scheduler asks the membership
# monitor again for its table once the one it holds is 100 ms old, and a
# decision meanwhile uses the one it holds, up to S_TABLE_STALE_MS old.
# Here the monitor's answers reach the head's table 600 ms after each ask
# (test hook LUX_TEST_TABLE_SLOW_MS). Node 1 alone has the resource far;
# a driver on the head runs tasks needing it one at a time for 4 s, each
# placed by the head and run on node 1. Before, the held table served no
# longer than the refresh period (S_TABLE_STALE_MS was S_TABLE_MS, 100
# ms): a decision after each 100 ms waited on the head's loop for the
# monitor's answer, so one task every ~700 ms took over 600 ms.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
SMOD=$(cluster_mod schedmod)
export LUX_TEST_TABLE_SLOW_MS=600

cluster_up CPU=1 CPU=1,far=1

out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 far=1 2>&1)
is "$out" "$CL_DIR/n1" "a task needing far, submitted at the head, runs on node 1" || diag "$out"

out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" lat 450 far=1 4000 2>&1)
n=$(echo "$out" | sed -n 's/^lat \([0-9]*\) tasks, .*/\1/p')
over=$(echo "$out" | sed -n 's/^lat [0-9]* tasks, \([0-9]*\) over .*/\1/p')
ok $([ "${n:-0}" -ge 10 ]; echo $?) "tasks needing far ran one at a time for 4 s: ${n:-none}" ||
    diag "$out"
ok $([ -n "$over" ] && [ "$over" -le 1 ]; echo $?) \
    "no task waited for the monitor's table (at most 1 over 450 ms, under load): $over" ||
    diag "$out"

done_testing
