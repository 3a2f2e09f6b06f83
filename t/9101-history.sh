#!/bin/sh
# 9101-history - the history commands on a real run with failures and
# retries (t/9101-history-run: a dependency chain from a put, a task whose
# worker is killed on each of its two attempts and a task downstream of it,
# a task that raises, an actor killed with SIGKILL and restarted from its
# checkpoint):
#   - lux timeline writes the Chrome trace event format: checked by
#     t/9101-trace-check.py against the format and against the log (every
#     task attempt a slice, every dependency on a task that ran a flow
#     bound to both slices, instants for retries, failures, restarts and
#     checkpoints); --job keeps one job; usage errors exit 2, runtime 1;
#   - lux lineage: the text names every task lineage() finds in SQL, and the
#     actor, the put, the failed and the retried task; --dot is parsed by
#     graphviz's dot (skipped where it is not installed), with a node for
#     every task and failed/retried tasks marked; --svg draws it;
#   - both give the same from a file `lux pull` copied the run into.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
LUX=${LUX_BIN:-./lux}
B=${LUX_BUILDDIR:-.}
S=${LUX_SRCDIR:-.}
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT

LUX_BUILDDIR=$B timeout -s KILL 180 "$B/t/9101-history-run" "$tmp/runs" >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "a job with killed workers, a failure and an actor restart ran"
run=$(sed -n 1p "$tmp/run.out")
obj=$(sed -n 2p "$tmp/run.out")
crashed=$(sed -n 3p "$tmp/run.out")
[ -n "$LUX_TEST_VERBOSE" ] && sed 's/^/# /' "$tmp/run.err"
ok "$([ -d "$run" ] && [ ${#obj} -eq 40 ]; echo $?)" "...its directory ($run) and its last object ($obj)"

q() { # q QUERY > CSV
    "$LUX" sql --dir "$run" --csv "$1"
}
retries=$(q "SELECT count(*) FROM retries" | sed -n 2p)
ok "$([ "${retries:-0}" -gt 0 ]; echo $?)" "the log has $retries retries"

# --- lux timeline -----------------------------------------------------------------------------
"$LUX" timeline "$run" -o "$tmp/trace.json" 2>"$tmp/err"
ok $? "lux timeline RUN -o trace.json"
q "SELECT shard, seq FROM event WHERE (kind IN (5, 6) AND t_start > 0)
   OR (kind = 7 AND info LIKE 'worker %')" >"$tmp/attempts.csv"
q "WITH ran AS (SELECT DISTINCT task_id FROM events
                WHERE kind IN ('task_finished', 'task_failed') AND t_start > 0)
   SELECT d.task_id, d.object_id FROM task_deps d
   JOIN ran a ON a.task_id = d.task_id JOIN ran b ON b.task_id = d.dep_task_id" >"$tmp/deps.csv"
python3 "$S/t/9101-trace-check.py" "$tmp/trace.json" "$tmp/attempts.csv" "$tmp/deps.csv" \
    >"$tmp/check.tap"
ok $? "the trace checker ran"
# relay its lines, renumbered
while IFS= read -r line; do
    case "$line" in
    "ok "*) ok 0 "trace: ${line#ok * - }" ;;
    "not ok "*) ok 1 "trace: ${line#not ok * - }" ;;
    *) echo "$line" ;;
    esac
done <"$tmp/check.tap"

job=$(q "SELECT job_id FROM jobs" | sed -n 2p)
"$LUX" timeline "$run" --job "$job" -o - >"$tmp/job.json"
ok $? "lux timeline --job $job -o - (standard output)"
n_all=$(grep -c '"ph": "X"' "$tmp/trace.json")
n_job=$(grep -c '"ph": "X"' "$tmp/job.json")
is "$n_job" "$n_all" "...has every slice of the run's one job ($n_all)"
"$LUX" timeline "$run" --job 00000000000000000000000000000001 -o - >"$tmp/none.json"
is "$(grep -c '"ph": "X"' "$tmp/none.json")" 0 "...and none of a job that is not in the log"

"$LUX" timeline >/dev/null 2>"$tmp/err"
is $? 2 "lux timeline without arguments: usage error, status 2"
like "$(cat "$tmp/err")" "usage: lux timeline" "...with the usage"
"$LUX" timeline "$run" 2>"$tmp/err"
is $? 2 "lux timeline without -o: status 2"
"$LUX" timeline "$run" --job xyz -o - 2>"$tmp/err" >/dev/null
is $? 2 "lux timeline --job xyz: status 2"
"$LUX" timeline "$tmp/nothing" -o "$tmp/x.json" 2>"$tmp/err"
is $? 1 "lux timeline of a missing directory: status 1"
like "$(cat "$tmp/err")" "no such directory or file" "...saying so"
echo "not a database" >"$tmp/junk.db"
"$LUX" timeline "$tmp/junk.db" -o "$tmp/x.json" 2>"$tmp/err"
is $? 1 "lux timeline of a file that is not a pulled log: status 1"
"$LUX" timeline "$run" -o "$tmp/no/such/dir/x.json" 2>"$tmp/err"
is $? 1 "lux timeline to a file it cannot write: status 1"
like "$(cat "$tmp/err")" "cannot write" "...saying so"
"$LUX" timeline --help >"$tmp/out"
like "$(cat "$tmp/out")" "flow" "lux timeline --help"

# --- lux lineage ------------------------------------------------------------------------------
"$LUX" lineage "$run" "$obj" >"$tmp/lineage.txt" 2>"$tmp/err"
ok $? "lux lineage RUN OBJ"
missing=
for t in $(q "SELECT task_id FROM lineage('$obj')" | sed 1d); do
    grep -q "$t" "$tmp/lineage.txt" || missing="$missing $t"
done
is "$missing" "" "...names every task lineage('$obj') finds ($(q "SELECT count(*) FROM lineage('$obj')" | sed -n 2p))"
like "$(cat "$tmp/lineage.txt")" "t_split  finished" "...with their functions and outcomes"
like "$(cat "$tmp/lineage.txt")" "put, 8 bytes" "...the put it started from"
like "$(cat "$tmp/lineage.txt")" "Acc  actor" "...the actor whose state a call read"
like "$(cat "$tmp/lineage.txt")" "restart 1:" "...and its restart"
"$LUX" lineage "$run" "$crashed" >"$tmp/crashed.txt"
like "$(cat "$tmp/crashed.txt")" "t_crash  failed, 2 attempts" "the lineage of a failed task's output: the task that failed"
like "$(cat "$tmp/crashed.txt")" "retried, to attempt 2: worker " "...its retry after its worker was killed, and why"
like "$(cat "$tmp/crashed.txt")" "FAILED, attempt 1: its argument from task" "...and why its consumer failed"

"$LUX" lineage "$run" "$obj" --dot >"$tmp/lineage.dot"
ok $? "lux lineage --dot"
if command -v dot >/dev/null 2>&1; then
    dot -Tcanon "$tmp/lineage.dot" >"$tmp/canon.dot" 2>"$tmp/err"
    ok $? "...parsed by graphviz's dot"
    missing=
    for t in $(q "SELECT task_id FROM lineage('$obj') WHERE function IS NOT NULL" | sed 1d); do
        grep -q "t$t[\"[:space:]]" "$tmp/canon.dot" || missing="$missing $t"
    done
    is "$missing" "" "...a node for every task"
    is "$(grep -c -- '->' "$tmp/canon.dot")" \
       "$(grep -c -- '->' "$tmp/lineage.dot")" "...and every edge"
    "$LUX" lineage "$run" "$crashed" --dot | dot -Tcanon >"$tmp/crashed.dot"
    ok $? "the failed task's lineage --dot, parsed by dot"
    like "$(tr -d '\n\\' <"$tmp/crashed.dot")" "retried, to attempt 2" "...with the retry marked"
    like "$(cat "$tmp/crashed.dot")" "f4b0b0" "...and the failed tasks filled red"
    "$LUX" lineage "$run" "$obj" --svg -o "$tmp/lineage.svg"
    ok $? "lux lineage --svg -o FILE"
    like "$(head -c 300 "$tmp/lineage.svg")" "<svg" "...an SVG"
else
    for i in 1 2 3 4 5 6 7 8; do skip "graphviz's dot is not installed"; done
fi

# --- the same from a pulled file ------------------------------------------------------------
"$LUX" pull --dir "$run" "$tmp/run.db" >/dev/null 2>"$tmp/err"
ok $? "lux pull --dir RUN OUT.db"
"$LUX" timeline "$tmp/run.db" -o "$tmp/pulled.json" 2>/dev/null
sed 's/"source": "[^"]*"//' "$tmp/trace.json" >"$tmp/a.json"
sed 's/"source": "[^"]*"//' "$tmp/pulled.json" >"$tmp/b.json"
ok "$(cmp -s "$tmp/a.json" "$tmp/b.json"; echo $?)" "lux timeline OUT.db: the same trace as from the run"
"$LUX" lineage "$tmp/run.db" "$obj" | sed 1d >"$tmp/b.txt"
sed 1d "$tmp/lineage.txt" >"$tmp/a.txt"
ok "$(cmp -s "$tmp/a.txt" "$tmp/b.txt"; echo $?)" "lux lineage OUT.db OBJ: the same lineage as from the run"

"$LUX" lineage "$run" >/dev/null 2>"$tmp/err"
is $? 2 "lux lineage without an object: status 2"
"$LUX" lineage "$run" 1234 2>"$tmp/err"
is $? 2 "lux lineage of a malformed object ID: status 2"
like "$(cat "$tmp/err")" "40 hex digits" "...saying what an object ID is"
"$LUX" lineage "$run" ffffffffffffffffffffffffffffffff00000000 2>"$tmp/err"
is $? 1 "lux lineage of an object not in the log: status 1"
like "$(cat "$tmp/err")" "no task made it" "...saying so"
"$LUX" lineage --help >"$tmp/out"
like "$(cat "$tmp/out")" "--dot" "lux lineage --help"

done_testing
