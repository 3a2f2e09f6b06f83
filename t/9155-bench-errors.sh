#!/bin/sh
# 9155-bench-errors: a benchmark that fails after its private head started
# reports what failed in its own work, not the complaint of the stop that
# follows ("no head is running"). LUX_TEST_BENCH_HEAD_GONE=1 stops each
# private head as soon as it started, as if it had died there. And the
# pull benchmark passes on a log with checkpoint events among its own.
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
# pull_events on a log that also holds the cluster's own signed
# checkpoint events (kind 20): LUX_BENCH_CHECKPOINTS=500 makes one every
# 500 events, as a full-size run (a million events, one every 100,000 or
# 10 s) does; the benchmark still counts what it appended (it failed with
# "lux pull copied 50003 events of 50000", and at full size always)
for b in pull_events; do
    out=$(LUX_BENCH_CHECKPOINTS=500 TMPDIR=$tmp timeout 300 "$LUX" bench --quick --json "$b" 2>&1)
    is "$?" 0 "$b passes on a log with checkpoint events"
    [ -n "$(why "$b")" ] && echo "#   $(why "$b")"
    ck=$(printf '%s\n' "$out" | grep "\"name\": \"$b\"" | sed -n 's/.*"checkpoint_events": \([0-9]*\).*/\1/p')
    if [ -z "$ck" ]; then
        ok 1 "$b: reports how many checkpoint events the log held (none said)"
    elif [ "$ck" -eq 0 ]; then
        skip "$b: the supervisor signed no checkpoint before this run's end, so it did not test that"
    else
        ok 0 "$b: reports the $ck checkpoint events the log held beside its own"
    fi
done
# without the hook the same benchmark passes (the hook is what failed it)
out=$(TMPDIR=$tmp timeout 300 "$LUX" bench --quick log_ack_latency 2>&1)
is "$?" 0 "log_ack_latency passes without the hook"
like "$out" "log_ack_latency" "and reports its figure"
done_testing
