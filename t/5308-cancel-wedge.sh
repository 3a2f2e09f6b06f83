#!/bin/sh
# 5308-cancel-wedge: a task that never returns must not wedge a shared
# head (issue 25, item 3). On a head with 2 workers, a driver calls two
# tasks that pause() for ever, waits 1 s for each and exits; a second
# driver's trivial task must then complete, and the hung tasks must be
# cancelled (status 'cancelled' in the tasks view), not retried. The same
# after a driver that is killed with -9 while its hung tasks run, and
# killing a worker after that resurrects nothing. A detached job's task
# (lux run --detach) runs on after its driver left, and finishes.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
MOD=${LUX_BUILDDIR:-.}/t/lib/.libs/cancelmod.so
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
hold=
trap '[ -n "$hold" ] && kill -9 "$hold" 2>/dev/null; "$LUX" stop --dir "$D" >/dev/null 2>&1; tap_cleanup' EXIT

# a query's single value, from the tasks view
q() { "$LUX" sql --dir "$D" --csv "$1" 2>/dev/null | tail -n 1; }

run "$LUX" start --head --dir "$D" --workers 2 --heartbeat-ms 50 --dead-ms 400
is "$rc" 0 "start a head with 2 workers"

# 1. a driver gives up on two hung tasks and exits
mkdir "$tmp/r1" "$tmp/r2"
run timeout -s KILL 120 "$LUX" run --address "$D" "$MOD" hang 2 "$tmp/r1"
is "$rc" 0 "a driver that gave up on two hung tasks exits"
like "$out" "c_pause 1: timed out" "its waits timed out"

# 2. the next driver's trivial task completes (30 s: the wedge is for ever)
run timeout -s KILL 120 "$LUX" run --address "$D" "$MOD" one 30000
is "$rc" 0 "a later driver's trivial task completes after the first driver left"
is "$out" "c_one: 1" "with its value"

# 3. the departed driver's tasks are cancelled, never retried
n=0
while [ "$(q "SELECT count(*) FROM tasks WHERE function = 'c_pause' AND status = 'cancelled'")" != 2 ] &&
    [ $n -lt 200 ]; do
    sleep 0.1
    n=$((n + 1))
done
is "$(q "SELECT count(*) FROM tasks WHERE function = 'c_pause' AND status = 'cancelled'")" 2 \
    "both hung tasks show as cancelled in the tasks view"
is "$(q "SELECT count(*) FROM events e JOIN tasks t ON e.task_id = t.task_id
         WHERE t.function = 'c_pause' AND e.kind = 'task_retried'")" 0 "and were never retried"

# 4. a driver killed with -9 while its two hung tasks run
"$LUX" run --address "$D" "$MOD" hold 2 "$tmp/r2" >"$tmp/hold" 2>&1 &
hold=$!
# wait until both run (each makes a file named by its worker's pid)
n=0
while [ "$(ls "$tmp/r2" | wc -l)" -lt 2 ] && [ $n -lt 600 ]; do
    sleep 0.1
    n=$((n + 1))
done
is "$(ls "$tmp/r2" | wc -l)" 2 "a second driver's two hung tasks run, on both workers"
kill -9 "$hold"
wait "$hold" 2>/dev/null
hold=
run timeout -s KILL 120 "$LUX" run --address "$D" "$MOD" one 30000
is "$rc" 0 "after a driver killed with -9, a trivial task completes"
n=0
while [ "$(q "SELECT count(*) FROM tasks WHERE function = 'c_pause' AND status = 'cancelled'")" != 4 ] &&
    [ $n -lt 200 ]; do
    sleep 0.1
    n=$((n + 1))
done
is "$(q "SELECT count(*) FROM tasks WHERE function = 'c_pause' AND status = 'cancelled'")" 4 \
    "the killed driver's hung tasks are cancelled too"

# 5. killing every worker now resurrects none of the departed drivers' tasks
sup=$(cat "$D/run/supervisor.pid" 2>/dev/null)
for p in $(pgrep -P "$sup" 2>/dev/null); do
    case "$(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null)" in
    *" worker "*) kill -9 "$p" ;;
    esac
done
run timeout -s KILL 120 "$LUX" run --address "$D" "$MOD" one 30000
is "$rc" 0 "after its workers were killed, the head still runs a trivial task"
is "$(q "SELECT count(*) FROM events e JOIN tasks t ON e.task_id = t.task_id
         WHERE t.function = 'c_pause' AND e.kind = 'task_retried'")" 0 \
    "and no departed driver's task was retried"

# 6. a detached job's task outlives its driver
run timeout -s KILL 120 "$LUX" run --address "$D" --detach "$MOD" gate "$tmp/open" "$tmp"
is "$rc" 0 "a detached driver submits a task that waits for a file, and exits"
n=0
while [ "$(q "SELECT count(*) FROM jobs WHERE args LIKE '%--detach%' AND state != 'running'")" != 1 ] &&
    [ $n -lt 200 ]; do
    sleep 0.1
    n=$((n + 1))
done
is "$(q "SELECT count(*) FROM tasks WHERE function = 'c_gate' AND status = 'pending'")" 1 \
    "after its job ended, its task is still pending"
touch "$tmp/open"
n=0
while [ "$(q "SELECT status FROM tasks WHERE function = 'c_gate'")" = pending ] && [ $n -lt 600 ]; do
    sleep 0.1
    n=$((n + 1))
done
is "$(q "SELECT status FROM tasks WHERE function = 'c_gate'")" finished \
    "and finishes once the file is there"

done_testing
