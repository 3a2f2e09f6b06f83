#!/bin/sh
# 9155-bench-errors: a benchmark that fails after its private head started
# reports what failed in its own work, not the complaint of the stop that
# follows ("no head is running"). LUX_TEST_BENCH_HEAD_GONE=1 stops each
# private head as soon as it started, as if it had died there.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT

# the failure line of benchmark NAME in the output of the last run
why() { printf '%s\n' "$out" | grep "^lux bench: $1: " | tail -1; }

for b in log_append queued_tasks_memory cluster_join_ms; do
    out=$(LUX_TEST_BENCH_HEAD_GONE=1 TMPDIR=$tmp timeout 300 "$LUX" bench --quick "$b" 2>&1)
    rc=$?
    is "$rc" 1 "$b: lux bench fails when its head is gone"
    line=$(why "$b")
    ok "$([ -n "$line" ]; echo $?)" "$b: the failure is reported: $line"
    case "$line" in
    *"no head is running"*) ok 1 "$b: the cause is the benchmark's, not the stop's" ;;
    *) ok 0 "$b: the cause is the benchmark's, not the stop's" ;;
    esac
done
# without the hook the same benchmark passes (the hook is what failed it)
out=$(TMPDIR=$tmp timeout 300 "$LUX" bench --quick log_ack_latency 2>&1)
is "$?" 0 "log_ack_latency passes without the hook"
like "$out" "log_ack_latency" "and reports its figure"
done_testing
