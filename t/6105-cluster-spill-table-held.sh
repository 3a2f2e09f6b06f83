#!/bin/sh
# 6105-cluster-spill-table-held: a spilled task does not wait for the
# head's next table of nodes. The global scheduler asks the membership
# monitor again for its table once the one it holds is 100 ms old, and a
# decision meanwhile uses the one it holds, up to S_TABLE_STALE_MS (1 s)
# old. Here the monitor's answers reach the head's table 200 ms after each
# ask (test hook LUX_TEST_TABLE_SLOW_MS), twice the refresh period. A
# table is as old as its ask (t/6120), so a decision may hold one up to
# twice that, plus the gaps between two pairs of decisions: 400 ms and
# the gaps, under the 1 s (it was 300 ms when a table's age ran from its
# taking, which gave the same bound). Node 1 alone has the resource
# far; a driver on the head runs tasks needing it one at a time for 4 s,
# each placed by the head and run on node 1. The head counts the
# decisions that waited for the table (`lux status --json`: table_waits):
# after the first (no table yet), none may. Before 0b72c44 the held table
# served no longer than the refresh period (S_TABLE_STALE_MS was
# S_TABLE_MS, 100 ms), and a decision after each 100 ms waited on the
# head's loop for the monitor's answer. Last, the counter counts: a task
# needing a resource no node has is decided on a fresh table only, which
# it waits for (33f9110).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
SMOD=$(cluster_mod schedmod)
export LUX_TEST_TABLE_SLOW_MS=200

cluster_up CPU=1 CPU=1,far=1

now_ms() { date +%s%3N; }

out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 far=1 2>&1)
is "$out" "$CL_DIR/n1" "a task needing far, submitted at the head, runs on node 1" || diag "$out"

set -- $(cluster_head_beat "$(now_ms)")
s0=${2:-0}
# the run: its first task is the warm-up (its decision may wait: the
# table is older than 1 s by now); once the head's heartbeat counts the
# second task submitted, the first was placed
"$LUX" run --address "$CL_DIR/head" "$SMOD" lat 450 far=1 4000 >"$TAP_TMP/lat" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
set -- $(cluster_head_beat "$(now_ms)" $((s0 + 2)))
w0=$1
wait $drv
end=$(now_ms)
out=$(cat "$TAP_TMP/lat")
n=$(echo "$out" | sed -n 's/^lat \([0-9]*\) tasks, .*/\1/p')
ok $([ "${n:-0}" -ge 10 ]; echo $?) "tasks needing far ran one at a time for 4 s: ${n:-none}" ||
    diag "$out"
set -- $(cluster_head_beat "$end")
w1=$1
ok $([ -n "$w0" ] && [ -n "$w1" ] && [ "$w1" -eq "$w0" ]; echo $?) \
    "after the first, no placement waited for the monitor's table (table_waits ${w0:-?} -> ${w1:-?})" ||
    diag "$out"

# The first such task may find the answer to the run's last ask come
# meanwhile (a fresh table, no wait), and leaves no ask in flight; the
# second, 200 ms later (over S_TABLE_MS), asks and waits for the answer.
out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 nosuch=1 2>&1)
like "$out" "no node" "a task needing a resource no node has fails" || diag "$out"
sleep 0.2
out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 nosuch=1 2>&1)
like "$out" "no node" "... and another" || diag "$out"
set -- $(cluster_head_beat "$(now_ms)")
ok $([ -n "$1" ] && [ -n "$w1" ] && [ "$1" -gt "$w1" ]; echo $?) \
    "... decided on a fresh table, which they waited for: table_waits counts it (${w1:-?} -> ${1:-?})"

done_testing
