#!/bin/sh
# 9157-history-runs: every history command on the three real runs issue 29
# names, each as a user runs it: the ES quick start (lux run es.so --env
# CartPole-v1 --seed 1), the actor parameter server (ps.so, 2 workers), and
# a random task graph with nested tasks, failures and retries
# (t/9112-graph-run). For each run:
#   - lux pull RUN OUT.db, then again: the second pulls 0 new events;
#     lux audit OUT.db verifies it;
#   - lux timeline: t/9101-trace-check.py checks the file against the
#     format and the log (every task attempt a slice, every dependency on
#     a task that ran a flow);
#   - lux lineage --dot of its last finished task's output, parsed by
#     graphviz's dot (skipped without it);
#   - lux compact of every event, then the README's queries answer as
#     before, and the log audits.
# lux replay --verify of the same runs: t/9110 (ES), t/9111 (ps), t/9112.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_replay
S=${LUX_SRCDIR:-.}
DOT=$(command -v dot)

q() { "$LUX" sql --dir "$run" --csv "$1"; }
# the README's "Querying the history" queries, into $1
readme() {
    {
        q "SELECT function, count(*), avg(duration_ms) FROM tasks GROUP BY function ORDER BY 1"
        q "SELECT task_id, attempt, reason FROM retries ORDER BY 1, 2"
        q "SELECT * FROM lineage('$obj') ORDER BY 1"
        q "SELECT kind, count(*) FROM events GROUP BY kind ORDER BY 1"
        q "SELECT shard, count(*), max(seq) FROM events GROUP BY shard"
    } >"$1" 2>&1
}

# every command on the run in $run, named $1
commands() {
    name=$1
    o=$tmp/$name.db
    obj=$(q "SELECT task_id || '00000000' FROM events WHERE kind = 'task_finished'
             ORDER BY ts DESC LIMIT 1" | sed -n 2p)
    out=$("$LUX" pull --dir "$run" "$o" 2>&1)
    ok $? "$name: lux pull RUN OUT.db"
    out=$("$LUX" pull --dir "$run" "$o" 2>&1)
    like "$out" "pulled 0 new events" "$name: ...again: nothing new"
    "$LUX" audit "$o" >"$tmp/$name.audit" 2>&1
    ok $? "$name: lux audit OUT.db: $(tail -1 "$tmp/$name.audit")"

    "$LUX" timeline "$run" -o "$tmp/$name.json" 2>"$tmp/err"
    ok $? "$name: lux timeline: $(cat "$tmp/err")"
    q "SELECT shard, seq FROM event WHERE (kind IN (5, 6) AND t_start > 0)
       OR (kind = 7 AND info LIKE 'worker %')" >"$tmp/attempts.csv"
    q "WITH ran AS (SELECT DISTINCT task_id FROM events
                    WHERE kind IN ('task_finished', 'task_failed') AND t_start > 0)
       SELECT d.task_id, d.object_id FROM task_deps d
       JOIN ran a ON a.task_id = d.task_id JOIN ran b ON b.task_id = d.dep_task_id" \
        >"$tmp/deps.csv"
    python3 "$S/t/9101-trace-check.py" --any-run "$tmp/$name.json" "$tmp/attempts.csv" \
        "$tmp/deps.csv" >"$tmp/check.tap"
    ok "$(grep -q '^not ok' "$tmp/check.tap"; [ $? -eq 1 ] && grep -q '^ok' "$tmp/check.tap"
          echo $?)" "$name: the trace checks pass ($(grep -c '^ok' "$tmp/check.tap") of $(grep -c 'ok [0-9]' "$tmp/check.tap"); $(($(grep -c . "$tmp/deps.csv") - 1)) dependencies on tasks that ran)"
    grep -A3 "^not ok" "$tmp/check.tap" | head -12 | sed 's/^/#   /'

    "$LUX" lineage "$run" "$obj" --dot >"$tmp/$name.dot" 2>"$tmp/err"
    ok $? "$name: lux lineage RUN $obj --dot"
    if [ -n "$DOT" ]; then
        "$DOT" -Tsvg "$tmp/$name.dot" >/dev/null 2>"$tmp/err"
        ok $? "$name: ...parsed by dot $(cat "$tmp/err")"
    else
        skip "graphviz's dot is not installed"
    fi

    readme "$tmp/$name.before"
    last=$(q "SELECT max(seq) + 1 FROM event" | sed -n 2p)
    "$LUX" compact --dir "$run" --before "$last" >"$tmp/err" 2>&1
    ok $? "$name: lux compact --before $last: $(cat "$tmp/err")"
    readme "$tmp/$name.after"
    ok "$(cmp -s "$tmp/$name.before" "$tmp/$name.after"; echo $?)" \
        "$name: ...the README's queries answer as before ($(grep -c . "$tmp/$name.before") lines)"
    cmp -s "$tmp/$name.before" "$tmp/$name.after" ||
        diff "$tmp/$name.before" "$tmp/$name.after" | head -5 | sed 's/^/#   /'
    "$LUX" audit --dir "$run" >"$tmp/err" 2>&1
    ok $? "$name: ...and the compacted log audits"
}

"$LUX" run --dir "$tmp/es" "$B/examples/es/es.so" --env CartPole-v1 --seed 1 \
    >"$tmp/es.out" 2>&1
ok $? "the ES quick start ran"
run=$(ls -d "$tmp"/es/*/ | head -1)
run=${run%/}
commands es

"$LUX" run --dir "$tmp/ps" "$B/examples/actors/ps.so" --workers 2 --steps 100 \
    >"$tmp/ps.out" 2>&1
ok $? "the parameter server ran (2 workers, 100 steps)"
run=$(ls -d "$tmp"/ps/*/ | head -1)
run=${run%/}
commands ps

LUX_BUILDDIR=$B timeout -s KILL 300 "$B/t/9112-graph-run" "$tmp/graph" 5 40 \
    >"$tmp/graph.out" 2>"$tmp/graph.err"
ok $? "a random graph of 40 nodes ran, with a crash, a failure and retries"
run=$(sed -n 1p "$tmp/graph.out")
ok "$([ "$(q "SELECT count(*) FROM retries" | sed -n 2p)" -gt 0 ]; echo $?)" "...its log has retries"
commands graph
done_testing
