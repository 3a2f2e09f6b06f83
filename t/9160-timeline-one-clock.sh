#!/bin/sh
# 9160-timeline-one-clock: lux timeline draws a run on one clock (issue 29).
# The log's ts is taken at the head when an append arrives; a node holds
# its events back while a put's bytes are recorded for replay (and behind
# what they depend on), so in the ES quick start every event after the
# first put reached the head seconds after it happened, and the timeline,
# which drew slices at the workers' times and instants at ts, drew the
# puts, the retry and the killed attempt after the retried attempt had run.
# On two real runs with a worker killed by kill -9 -- the README's
# `lux run es.so --env CartPole-v1 --seed 1 --kill-workers` (run again, at
# most 3 times, until a kill hit a task: the kills are random) and a random
# task graph with nested tasks, puts small and large, and a task that kills
# its own worker (t/9112-graph-run) -- t/9160-trace-order.py checks orders
# that causality fixes: each retry after the attempt it ends and before the
# next; each killed attempt before its task's next one; each put before
# every attempt reading it; each attempt after its job started.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_replay
S=${LUX_SRCDIR:-.}

# check NAME RUN: the timeline of RUN, checked
check() {
    "$LUX" timeline "$2" -o "$tmp/$1.json" 2>"$tmp/err"
    ok $? "$1: lux timeline: $(cat "$tmp/err")"
    python3 "$S/t/9160-trace-order.py" "$1" "$tmp/$1.json" >"$tmp/$1.tap" 2>&1
    ok $? "$1: the trace's checks ran"
    while IFS= read -r line; do
        case $line in
        "ok "*) ok 0 "${line#ok [0-9]* - }" ;;
        "not ok "*) ok 1 "${line#not ok [0-9]* - }" ;;
        *) printf '%s\n' "$line" ;;
        esac
    done <"$tmp/$1.tap"
}

i=0
while :; do
    i=$((i + 1))
    rm -rf "$tmp/es"
    "$LUX" run --dir "$tmp/es" "$B/examples/es/es.so" --env CartPole-v1 --seed 1 \
        --kill-workers >"$tmp/es.out" 2>&1
    rc=$?
    run=$(ls -d "$tmp"/es/*/ 2>/dev/null | head -1)
    run=${run%/}
    retries=$("$LUX" sql --dir "$run" --csv "SELECT count(*) FROM event WHERE kind = 7
              AND info LIKE 'worker %'" 2>/dev/null | sed -n 2p)
    [ "$rc" -ne 0 ] || [ "${retries:-0}" -gt 0 ] || [ $i -ge 3 ] && break
    echo "# the ES run's kills hit no task (run $i): again"
done
ok $rc "the ES quick start ran with --kill-workers (run $i; $retries attempts killed)"
[ "$rc" -eq 0 ] || sed 's/^/#   /' "$tmp/es.out" | tail -5
check es "$run"

LUX_BUILDDIR=$B timeout -s KILL 300 "$B/t/9112-graph-run" "$tmp/graph" 5 40 \
    >"$tmp/graph.out" 2>"$tmp/graph.err"
ok $? "a random graph of 40 nodes ran, with nested tasks, puts and a killed worker"
check graph "$(sed -n 1p "$tmp/graph.out")"
done_testing
