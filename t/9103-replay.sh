#!/bin/sh
# 9103-replay: lux replay --verify on a real run whose every input is in the
# log (t/9101-history-run --pure: values, a task of two returns, a task that
# raises, a task whose worker is killed on both attempts):
#   - on the untouched run, and on a file `lux pull` copied it into, every
#     task is replayed and matches (exit 0);
#   - a recorded output fingerprint altered in the file: exit 1 and the
#     task named as a mismatch;
#   - a module byte altered in the file: exit 1, the module's hash refused
#     before anything runs, the hash recorded named;
#   - --task replays one task and the tasks it depends on; with
#     --foreground it runs it once more in the lux process (a gdb
#     breakpoint in the function stops there), printing its arguments'
#     and outputs' fingerprints against the recorded one;
#   - a run with a put and an actor (checkpoints every 2 calls, its process
#     killed and restarted from a checkpoint, a call returning its pid): the
#     put is read from its event (a small put's bytes are there, t/3167),
#     the actor re-created
#     and its calls made in the recorded order, the restart re-enacted (the
#     re-created actor's process killed after the same call), each call
#     and checkpoint
#     compared; the pid call is reported as not deterministic (two replays
#     differ), every other task and call matches; exit 1;
#   - usage errors exit 2.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_replay # the replays' clusters go under tmp, removed with it

LUX_BUILDDIR=$B timeout -s KILL 180 "$B/t/9101-history-run" "$tmp/runs" --pure \
    >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "a job of values, a failure and a killed worker ran"
run=$(sed -n 1p "$tmp/run.out")
last=$(sed -n 2p "$tmp/run.out")

timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay RUN --verify: exit 0"
like "$(cat "$tmp/out")" "its hash verified" "...the module's bytes checked against their hash"
like "$(cat "$tmp/out")" "replayed 5 tasks" "...every task replayed"
like "$(cat "$tmp/out")" "5 matched, 0 mismatched, 0 not deterministic, 0 not replayable" \
    "...and every one matched"

"$LUX" pull --dir "$run" "$tmp/run.db" >/dev/null
timeout -s KILL 300 "$LUX" replay "$tmp/run.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay OUT.db --verify: exit 0"

split=$("$LUX" sql "$tmp/run.db" --csv "SELECT task_id FROM tasks WHERE function = 't_split'" |
    sed -n 2p)
cp "$tmp/run.db" "$tmp/fp.db"
sqlite3 "$tmp/fp.db" "UPDATE event SET fp = zeroblob(16) WHERE kind = 5 AND
    lower(hex(task)) = '$split'"
timeout -s KILL 300 "$LUX" replay "$tmp/fp.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a recorded output fingerprint altered: exit 1"
like "$(cat "$tmp/out")" "MISMATCH      $split t_split" "...naming the task and its function"
like "$(cat "$tmp/out")" "4 matched, 1 mismatched" "...and only that one"

cp "$tmp/run.db" "$tmp/mod.db"
sqlite3 "$tmp/mod.db" "UPDATE event SET body = substr(body, 1, 2000) || X'00' ||
    substr(body, 2002) WHERE kind = 3"
timeout -s KILL 300 "$LUX" replay "$tmp/mod.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a module byte altered: exit 1"
like "$(cat "$tmp/err")" "they were altered" "...the module's hash refused"
recorded=$(sqlite3 "$tmp/mod.db" "SELECT lower(hex(fp)) FROM event WHERE kind = 3 LIMIT 1")
like "$(cat "$tmp/err")" "not to the recorded $recorded:" "...naming the hash recorded ($recorded)"

timeout -s KILL 300 "$LUX" replay "$run" --task "$last" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay --task ID --verify"
like "$(cat "$tmp/out")" "replayed 3 tasks" "...that task and the two it depends on"

timeout -s KILL 300 "$LUX" replay "$run" --task "$last" --foreground >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay --task ID --foreground: exit 0"
like "$(cat "$tmp/out")" "--foreground: task $last, t_mix of 3 arguments" "...runs that task"
like "$(cat "$tmp/out")" "in this process (pid" "...in the lux process"
like "$(cat "$tmp/out")" "  argument 2: " "...printing its arguments"
like "$(cat "$tmp/out")" "  output 0: 8 bytes, fingerprint " "...and its output's fingerprint"
fp=$("$LUX" sql "$tmp/run.db" --csv "SELECT lower(hex(fp)) FROM event WHERE kind = 5 AND
    lower(hex(task)) = '$last'" | sed -n 2p)
like "$(cat "$tmp/out")" "--foreground: recorded finished $fp, this process finished $fp: the same" \
    "...against the recorded fingerprint"
if command -v gdb >/dev/null 2>&1 && [ -x "$B/libtool" ]; then
    timeout -s KILL 300 "$B/libtool" --mode=execute gdb -batch -ex 'set breakpoint pending on' \
        -ex 'break t_mix' -ex run -ex bt -ex kill --args "$LUX" replay "$run" --task "$last" \
        --foreground >"$tmp/gdb" 2>&1
    like "$(cat "$tmp/gdb")" "hit Breakpoint 1, t_mix" "under gdb, a breakpoint in the function stops there"
    like "$(grep '^#1' "$tmp/gdb")" "s_foreground" "...called by lux replay itself"
else
    ok 0 "# SKIP gdb is not installed"
    ok 0 "# SKIP gdb is not installed"
fi
cp "$tmp/run.db" "$tmp/fg.db"
sqlite3 "$tmp/fg.db" "UPDATE event SET fp = zeroblob(16) WHERE kind = 5 AND lower(hex(task)) = '$last'"
timeout -s KILL 300 "$LUX" replay "$tmp/fg.db" --task "$last" --foreground >"$tmp/out" 2>"$tmp/err"
is $? 1 "--foreground of a task whose recorded fingerprint was altered: exit 1"
like "$(cat "$tmp/out")" "this process finished $fp: DIFFERENT" "...saying it differs"
"$LUX" replay "$run" --foreground >/dev/null 2>"$tmp/err"
is $? 2 "--foreground without --task: status 2"

LUX_BUILDDIR=$B timeout -s KILL 180 "$B/t/9101-history-run" "$tmp/runs2" \
    >"$tmp/run2.out" 2>"$tmp/run.err"
run2=$(sed -n 1p "$tmp/run2.out")
timeout -s KILL 300 "$LUX" replay "$run2" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a run with a put, an actor restarted and a pid call: exit 1"
like "$(cat "$tmp/out")" "0 recorded puts (0 bytes) read from $run2/blobs and 1 (8 bytes) from their events" \
    "...the put (8 bytes) read from its event"
like "$(cat "$tmp/out")" "(5 actor calls, 0 nested): 11 matched, 0 mismatched, 1 not deterministic, 0 not replayable; 1 actors re-created, 2 of 2 checkpoints matched; 1 of 1 recorded actor restarts re-enacted" \
    "...every task and call replayed, the calls after the restart and the checkpoints matched"
like "$(cat "$tmp/out")" "NOT DETERMINISTIC" "...the pid call reported as not deterministic"
like "$(sed -n '/NOT DETERMINISTIC/p' "$tmp/out")" " pid (call): the same inputs gave finished" \
    "...naming the method"

"$LUX" replay >/dev/null 2>"$tmp/err"
is $? 2 "lux replay without RUN: status 2"
"$LUX" replay "$run" --job nope >/dev/null 2>"$tmp/err"
is $? 2 "lux replay --job nope: status 2"
"$LUX" replay "$run" --task 00000000000000000000000000000001 >/dev/null 2>"$tmp/err"
is $? 1 "lux replay --task of a task not in the job: status 1"
"$LUX" replay --help >"$tmp/out"
like "$(cat "$tmp/out")" "usage: lux replay" "lux replay --help"

done_testing
