#!/bin/sh
# 9001-cli: the lux command as a user meets it: start, status (table and
# JSON), sql (table, CSV, JSON, lineage, refusals), audit, stop, restart of
# a stopped cluster, and the errors for wrong arguments.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_cluster

run "$LUX"
is "$rc" 2 "lux with no command exits 2"
like "$err" "usage: lux COMMAND" "and prints the usage"
run "$LUX" frobnicate
is "$rc" 2 "an unknown command exits 2"
run "$LUX" start --dir "$D"
is "$rc" 2 "start without --head exits 2"
run "$LUX" start --head
like "$err" "--dir DIR is required" "start without --dir says so"
run "$LUX" start --head --dir "$D" --shards 0
is "$rc" 2 "--shards 0 exits 2"
like "$err" "--shards must be a number from 1" "naming the option"
run "$LUX" status --dir "$tmp/nothing"
is "$rc" 1 "status of a directory without a cluster fails"
like "$err" "no cluster here" "saying so"

run "$LUX" start --head --dir "$D" --shards 2 --replicas 3 --heartbeat-ms 50 --dead-ms 400
is "$rc" 0 "start a head with 2 shards x 3 replicas"
like "$out" "started the head of cluster" "and says so"
run "$LUX" start --head --dir "$D"
is "$rc" 1 "starting it twice fails"
like "$err" "already running" "because it is already running"

run "$LUX" status --dir "$D"
is "$rc" 0 "status"
is "$(echo "$out" | grep -c ' serving ')" 6 "six replicas serving"
like "$out" "head" "with a head"
like "$out" "tail" "and a tail"
run "$LUX" status --dir "$D" --json
is "$rc" 0 "status --json"
replicas=$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(1 for c in d["components"] if c["kind"]=="replica" and c["state"]=="serving"))' 2>&1)
is "$replicas" 6 "is JSON listing six serving replicas"

obj=$("$HELLO" --dir "$D")
is "$?" 0 "hello_log appends a job's events"
run "$LUX" sql --dir "$D" "SELECT count(*) FROM tasks"
like "$out" " 27" "27 tasks (3 iterations of 8 rollouts and an update)"
run "$LUX" sql --dir "$D" --csv "SELECT function, count(*) AS n FROM tasks GROUP BY function ORDER BY function"
is "$out" "function,n
es.rollout,24
es.update,3" "CSV output"
run "$LUX" sql --dir "$D" --json "SELECT function, count(*) AS n FROM tasks GROUP BY function ORDER BY function"
n=$(echo "$out" | python3 -c 'import json,sys; print(sum(r["n"] for r in json.load(sys.stdin)))' 2>&1)
is "$n" 27 "JSON output"
run "$LUX" sql --dir "$D" "SELECT task_id, attempt, reason FROM retries"
like "$out" "worker died: retry 2 of 3" "retries say why"
run "$LUX" sql --dir "$D" --csv "SELECT count(*) FROM lineage('$obj')"
is "$out" "count(*)
28" "the lineage of the final weights is every task and the put"
run "$LUX" sql --dir "$D" "SELECT * FROM lineage('xyz')"
is "$rc" 1 "lineage of a malformed ID fails"
like "$err" "40 hex digits" "saying what it expects"
run "$LUX" sql --dir "$D" "SELECT shard, count(*) FROM event GROUP BY shard"
is "$(echo "$out" | grep -c '^ *[01] ')" 2 "events are spread over both shards"

for q in "DELETE FROM event" "INSERT INTO tasks VALUES (1)" "DROP VIEW tasks" \
    "ATTACH '$tmp/x.db' AS x" "PRAGMA query_only = 0"; do
    run "$LUX" sql --dir "$D" "$q"
    is "$rc" 1 "refused: $q"
    like "$err" "read-only" "  as read-only"
done
[ ! -e "$tmp/x.db" ]
ok $? "ATTACH created no file"
run "$LUX" sql --dir "$D" "SELEKT 1"
is "$rc" 1 "a malformed query fails"
like "$err" "syntax error" "with SQLite's message"
run "$LUX" sql --dir "$D"
is "$rc" 2 "sql without a query exits 2"

run "$LUX" audit --dir "$D"
is "$rc" 0 "audit"
is "$(echo "$out" | grep -c 'events, hash chain verified')" 6 "verifies all six replicas"

run "$LUX" stop --dir "$D"
is "$rc" 0 "stop"
run "$LUX" status --dir "$D"
like "$out" "stopped" "status of a stopped cluster"
run "$LUX" sql --dir "$D" --csv "SELECT count(*) FROM tasks"
is "$out" "count(*)
27" "sql works on a stopped cluster"
run "$LUX" stop --dir "$D"
is "$rc" 1 "stopping a stopped head fails"
like "$err" "no head is running" "saying so"
run "$LUX" start --head --dir "$D" --shards 3
is "$rc" 1 "restarting with other settings fails"
like "$err" "options do not change them" "saying why"
run "$LUX" start --head --dir "$D"
is "$rc" 0 "restart the stopped cluster"
run "$LUX" sql --dir "$D" --csv "SELECT count(*) FROM tasks"
is "$out" "count(*)
27" "with its log intact"
"$HELLO" --dir "$D" >/dev/null
run "$LUX" sql --dir "$D" --csv "SELECT count(DISTINCT job_id) FROM jobs"
is "$out" "count(DISTINCT job_id)
2" "and it takes new events"

run "$LUX" bench --list
is "$rc" 0 "bench --list"
like "$out" "log_append" "lists log_append"
run "$LUX" bench no_such_bench
is "$rc" 2 "an unknown benchmark exits 2"
run "$LUX" bench --quick --json --dir "$D" single_client_tasks_sync
is "$rc" 0 "bench --dir runs a task benchmark against the running cluster"
like "$out" '"name": "single_client_tasks_sync"' "...reporting it"
run "$LUX" sql --dir "$D" --csv "SELECT count(DISTINCT job_id) FROM jobs"
is "$out" "count(DISTINCT job_id)
3" "...whose tasks are in that cluster's log"
run "$LUX" bench --quick --dir "$D" log_append
is "$rc" 1 "bench --dir refuses a benchmark that needs a cluster of its own"
like "$err" "without --dir" "...saying so"
run "$LUX" bench --quick --json idle_head_cpu
is "$rc" 0 "bench idle_head_cpu"
ok "$(printf '%s\n' "$out" | grep -Eq '"name": "idle_head_cpu", "value": [0-9.e+]+, "unit": "%", "processes": [1-9]'; echo $?)" \
    "...reports the CPU of the head's processes"
run "$LUX" bench --quick --json es_cartpole_overhead
is "$rc" 0 "bench es_cartpole_overhead"
ok "$(printf '%s\n' "$out" | grep -Eq '"name": "es_cartpole_overhead", "value": [0-9.e+]+, "unit": "x", .*"pairs": 2, .*"same_weights": true'; echo $?)" \
    "...reports es.so over es_local, with the same weights in every run"
run "$LUX" bench --quick --json head_r1_actor_calls_sync head_r3_actor_calls_sync
is "$rc" 0 "bench head_r1/head_r3_actor_calls_sync"
is "$(printf '%s\n' "$out" | grep -Ec '"name": "head_r[13]_actor_calls_sync", "value": [0-9.e+]+, "unit": "calls/s", .*"replicas": [13]')" 2 \
    "...one row for a head with 1 replica and one for 3"

# lux run of a module without LUX_MAIN fails before any cluster starts.
runs="$tmp/runs"
run "$LUX" run --dir "$runs" "$LUX_BUILDDIR/t/lib/.libs/testmod.so"
is "$rc" 1 "run of a module without an entry point exits 1"
like "$err" "has no entry point (LUX_MAIN)" "...saying why"
ok "$([ ! -e "$runs" ] || [ -z "$(ls -A "$runs")" ]; echo $?)" "...before a run directory was made"

done_testing
