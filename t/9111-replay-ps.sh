#!/bin/sh
# 9111-replay-ps: lux replay --verify of the actor parameter server example
# (examples/actors/ps.so: an actor Ps checkpointing every 100 calls, worker
# tasks that pull from it and push to it through its handle, the driver
# polling it):
#   - one worker, 50 steps: the actor re-created, its calls (the driver's
#     polling and the 100 its worker task made) made again in the recorded
#     order, every call, the task and the checkpoint matched: exit 0;
#   - a recorded push's output fingerprint altered: exit 1, that call named;
#   - the checkpoint's recorded state altered: exit 1, named with its call;
#   - a module byte altered: exit 1;
#   - two workers, 200 steps, the server's process killed with SIGKILL
#     halfway and restarted from its checkpoint: the restart re-enacted
#     (the replay kills the re-created server's process after the same
#     call), every call matches (the ones after the restart too), the pid call and the workers (whose pulls
#     race with the other's pushes) are reported as not deterministic:
#     exit 1, no call mismatched;
#   - ES --ps (the policy in an actor the rollout tasks pull from and push
#     to, the driver updating it after each iteration): exit 0, every task
#     and call matched.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
LUX=${LUX_BIN:-./lux}
B=${LUX_BUILDDIR:-.}
PS=$B/examples/actors/ps.so
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT
TMPDIR=$tmp # the replays' clusters go here, and with it
export TMPDIR
sqlv() { # sqlv WHERE QUERY: one value
    "$LUX" sql "$1" --csv "$2" | sed -n 2p
}

timeout -s KILL 180 "$LUX" run --dir "$tmp/runs" "$PS" --workers 1 --steps 50 \
    >"$tmp/run.out" 2>"$tmp/run.err"
is $? 0 "ps.so --workers 1 --steps 50 ran"
run=$(ls -d "$tmp"/runs/*/ | sed -n 1p)
run=${run%/}
"$LUX" pull --dir "$run" "$tmp/run.db" >/dev/null
calls=$(sqlv "$tmp/run.db" "SELECT count(*) FROM actor_calls")
ok "$([ "${calls:-0}" -ge 102 ]; echo $?)" "...its actor calls recorded: $calls (50 gets and 50 pushes by the worker, the driver's polling gets)"
nested=$(sqlv "$tmp/run.db" "SELECT count(*) FROM actor_calls WHERE call_id IN (SELECT c.call_id FROM actor_calls c
    JOIN event e ON e.kind = 12 AND lower(hex(e.task)) = c.call_id WHERE lower(hex(e.parent)) IN (SELECT task_id FROM tasks))")
is "$nested" 100 "...100 of them made by the worker task"

timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay RUN --verify: exit 0"
like "$(cat "$tmp/out")" "replayed $((calls + 1)) tasks of job" "...the task and every call replayed"
like "$(cat "$tmp/out")" "($calls actor calls, 100 nested): $((calls + 1)) matched, 0 mismatched, 0 not deterministic, 0 not replayable; 1 actors re-created, 1 of 1 checkpoints matched" \
    "...in the recorded order, every one matched, and the checkpoint"

push=$(sqlv "$tmp/run.db" "SELECT call_id FROM actor_calls WHERE method = 'push' ORDER BY seq LIMIT 1 OFFSET 20")
cp "$tmp/run.db" "$tmp/c.db"
sqlite3 "$tmp/c.db" "UPDATE event SET fp = zeroblob(16) WHERE kind = 5 AND lower(hex(task)) = '$push'"
timeout -s KILL 300 "$LUX" replay "$tmp/c.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a push's recorded output altered: exit 1"
like "$(cat "$tmp/out")" "MISMATCH      $push push (call) (attempt" "...that call named"
like "$(cat "$tmp/out")" "$calls matched, 1 mismatched, 0 not deterministic" "...and only it"

cp "$tmp/run.db" "$tmp/k.db"
sqlite3 "$tmp/k.db" "UPDATE event SET fp = zeroblob(16) WHERE kind = 13"
timeout -s KILL 300 "$LUX" replay "$tmp/k.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "the checkpoint's recorded state altered: exit 1"
like "$(cat "$tmp/out")" "CHECKPOINT MISMATCH actor" "...the checkpoint named"
like "$(cat "$tmp/out")" "(Ps) after call 100: recorded state 00000000000000000000000000000000" \
    "...with its actor's class and call"

cp "$tmp/run.db" "$tmp/m.db"
sqlite3 "$tmp/m.db" "UPDATE event SET body = substr(body, 1, 1000) ||
    CASE WHEN substr(body, 1001, 1) = X'00' THEN X'01' ELSE X'00' END || substr(body, 1002) WHERE kind = 3"
timeout -s KILL 300 "$LUX" replay "$tmp/m.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a module byte altered: exit 1"
like "$(cat "$tmp/err")" "they were altered" "...the module's hash refused"

rm -rf "$tmp/runs"
timeout -s KILL 180 "$LUX" run --dir "$tmp/runs" "$PS" --workers 2 --steps 200 --kill \
    >"$tmp/run.out" 2>"$tmp/run.err"
is $? 0 "ps.so --workers 2 --steps 200 --kill ran"
like "$(cat "$tmp/run.out")" "killed the server's process" "...its server killed with SIGKILL"
run=$(ls -d "$tmp"/runs/*/ | sed -n 1p)
run=${run%/}
timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "replay of that run: exit 1"
is "$(grep -c 'MISMATCH .* (call)' "$tmp/out")" 0 "...no call mismatched: those after the restart matched too"
like "$(cat "$tmp/out")" "checkpoints matched" "...and the checkpoints were compared"
is "$(grep -c 'CHECKPOINT MISMATCH' "$tmp/out")" 0 "...every one matched"
like "$(sed -n '/NOT DETERMINISTIC/p' "$tmp/out")" " pid (call): the same inputs gave" \
    "...the pid call reported as not deterministic"
like "$(cat "$tmp/out")" "1 of 1 recorded actor restarts re-enacted" "...the restart re-enacted (its process killed after the same call)"

# ES with its policy in a parameter-server actor: the driver updates it
# after each iteration's rollout tasks have pushed to it; the replay's
# driver waits as the recorded one did, so the tasks' twin of the actor
# sees the same updates
rm -rf "$tmp/runs"
timeout -s KILL 180 "$LUX" run --dir "$tmp/runs" "$B/examples/es/es.so" --env CartPole-v1 \
    --seed 1 --ps --json --no-report >"$tmp/run.out" 2>"$tmp/run.err"
case $? in 0|1) ok 0 "es.so --ps ran" ;; *) ok 1 "es.so --ps: exit $?" ;; esac
run=$(ls -d "$tmp"/runs/*/ | sed -n 1p)
run=${run%/}
"$LUX" pull --dir "$run" "$tmp/es.db" >/dev/null
n=$(sqlv "$tmp/es.db" "SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM actor_calls)")
timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay of the ES --ps run --verify: exit 0"
like "$(cat "$tmp/out")" "replayed $n tasks of job" "...its $n tasks and calls replayed"
like "$(cat "$tmp/out")" "$n matched, 0 mismatched, 0 not deterministic, 0 not replayable" "...every one matched"

done_testing
