#!/bin/sh
# 9151-compact-live: lux compact of a running cluster, while a job appends,
# and lux start --compact-after running it in the background:
#   - a cluster (2 shards x 2 replicas) takes hello_log jobs in a loop all
#     through the test; the answers about the events so far are recorded;
#   - a compaction killed with -9 at each of its steps (after the archive
#     is written, after a file's base moved, after a first batch of rows
#     deleted): each time lux audit verifies the log and lux sql gives the
#     same answers about the recorded events;
#   - a whole compaction while the jobs go on: the replica files lose
#     their old rows, the answers are the same, and no job failed;
#   - lux pull through the protocol reads the archives (the tails' readers
#     opened before the compaction see the rows gone and read the base again);
#   - a second lux compact while one runs is refused;
#   - the head restarted with --compact-after 1s compacts on its own;
#     restarted, the log audits and answers the same.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_cluster
loop=
cpid=
trap '[ -n "$cpid" ] && kill -9 $cpid 2>/dev/null; [ -n "$loop" ] && kill $loop 2>/dev/null;
      "$LUX" stop --dir "$D" >/dev/null 2>&1; tap_cleanup' EXIT

one() { "$LUX" sql --dir "$D" --csv "$1" | sed -n 2p; }
# wait_for PATTERN FILE: until FILE holds PATTERN (at most 120 s)
wait_for() {
    i=0
    while ! grep -q "$1" "$2" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt 1200 ] && return 1
        sleep 0.1
    done
}
# the answers about the events up to L0 (shard 0) and L1 (shard 1), into $1
answers() {
    w="(shard = 0 AND seq <= $L0) OR (shard = 1 AND seq <= $L1)"
    {
        "$LUX" sql --dir "$D" --csv "SELECT * FROM events WHERE $w ORDER BY shard, seq"
        "$LUX" sql --dir "$D" --csv "SELECT * FROM tasks WHERE job_id IN (SELECT job_id FROM
            events WHERE ($w) AND kind = 'job_finished') ORDER BY shard, task_id"
        "$LUX" sql --dir "$D" --csv "SELECT * FROM lineage('$obj')"
        "$LUX" sql --dir "$D" --csv "SELECT count(*) FROM events WHERE $w"
    } >"$1" 2>&1
}
same() { # same NAME DESCRIPTION: the answers now are those recorded
    answers "$tmp/$1"
    ok "$(cmp -s "$tmp/before" "$tmp/$1"; echo $?)" "$2"
    cmp -s "$tmp/before" "$tmp/$1" || diff "$tmp/before" "$tmp/$1" | head -5 | sed 's/^/#   /'
}
audits() {
    run "$LUX" audit --dir "$D"
    is "$rc" 0 "$1"
    [ "$rc" -ne 0 ] && echo "$out" | grep PROBLEM | head -3 | sed 's/^/#   /'
}
# kill_at STEP BEFORE: a compaction below BEFORE killed -9 at STEP
kill_at() {
    : >"$tmp/cerr"
    LUX_COMPACT_HOLD=$1 LUX_COMPACT_BATCH=20 "$LUX" compact --dir "$D" --before "$2" \
        >/dev/null 2>"$tmp/cerr" &
    cpid=$!
    wait_for "holding after step $1" "$tmp/cerr"
    ok $? "a compaction below $2 reaches step '$1' (pid $cpid)"
    kill -9 $cpid
    wait $cpid 2>/dev/null
    cpid=
}

run "$LUX" start --head --dir "$D" --shards 2 --replicas 2 --heartbeat-ms 50 --dead-ms 400
is "$rc" 0 "a head with 2 shards x 2 replicas"
for i in 1 2 3; do obj=$("$HELLO" --dir "$D" --iterations 8 --width 12 2>"$tmp/err") || break; done
ok $? "three jobs ($obj)"
# jobs in a loop until told to stop: each one's status in jobs.log
(
    while [ ! -f "$tmp/stop" ]; do
        "$HELLO" --dir "$D" --iterations 4 --width 12 >/dev/null 2>>"$tmp/jobs.err"
        echo "job $?" >>"$tmp/jobs.log"
    done
) &
loop=$!
wait_for "job 0" "$tmp/jobs.log"
ok $? "jobs append in a loop"
L0=$(one "SELECT max(seq) FROM events WHERE shard = 0")
L1=$(one "SELECT max(seq) FROM events WHERE shard = 1")
answers "$tmp/before"
ok "$([ "$(grep -c . "$tmp/before")" -gt 100 ]; echo $?)" \
    "the answers about seq 1..$L0 of shard 0 and 1..$L1 of shard 1 recorded"

kill_at archive $((L0 / 4))
audits "...killed there: the log audits"
same archive "...and answers the same"
kill_at base $((L0 / 2))
audits "...killed there: the log audits"
same base "...and answers the same"
kill_at delete $((L0 * 3 / 4))
audits "...killed there: the log audits"
same delete "...and answers the same"

# a whole one, the jobs still going
run "$LUX" compact --dir "$D" --before "$L0"
is "$rc" 0 "lux compact --before $L0 of the running cluster"
[ "$rc" -ne 0 ] && echo "# $err"
audits "...the log audits"
same whole "...the answers are the same"
# the replica writers keep rows above their last client table (seen_seq): a
# second run, once they moved on, deletes what the first left
wait_for "job 0" "$tmp/jobs.log"
run "$LUX" compact --dir "$D" --before "$L0"
is "$rc" 0 "...a second run finishes it"
tail0=$(awk '$1 == "shard" && $2 == 0 { print $NF }' "$D/master.state")
is "$(sqlite3 "$D/shard-0/replica-$tail0.db" "SELECT count(*) FROM event WHERE seq < $L0")" 0 \
    "...shard 0's tail file holds no event below $L0"
if command -v lz4 >/dev/null 2>&1; then
    lz4 -q -d -c "$D/shard-0/archive.db.lz4" >"$tmp/a0.db"
    is "$(sqlite3 "$tmp/a0.db" "SELECT min(seq) || '..' || max(seq) FROM event")" \
        "1..$((L0 - 1))" "...its archive (an lz4 frame) holds 1..$((L0 - 1))"
else
    ok 0 "# SKIP the lz4 program is not installed"
fi

# the tails' readers opened before the compaction read the archive now
n=$(one "SELECT count(*) FROM events WHERE $w")
run "$LUX" pull --address "$D" "$tmp/pulled.db"
is "$rc" 0 "lux pull of the running, compacted cluster, from seq 1"
[ "$rc" -ne 0 ] && echo "# $err"
is "$(sqlite3 "$tmp/pulled.db" "SELECT count(*) FROM event WHERE $w")" "$n" \
    "...every recorded event ($n) is in the file"
run "$LUX" audit "$tmp/pulled.db"
is "$rc" 0 "...and the file audits"

# one at a time
: >"$tmp/cerr"
LUX_COMPACT_HOLD=archive "$LUX" compact --dir "$D" --before "$((L0 + 1))" >/dev/null \
    2>"$tmp/cerr" &
cpid=$!
wait_for "holding after step archive" "$tmp/cerr"
run "$LUX" compact --dir "$D" --before "$((L0 + 1))"
is "$rc" 1 "a second lux compact while one runs: refused"
like "$err" "another lux compact runs on" "...saying so"
kill -9 $cpid
wait $cpid 2>/dev/null
cpid=

touch "$tmp/stop"
wait $loop
loop=
jobs=$(grep -c . "$tmp/jobs.log")
is "$(grep -vc '^job 0$' "$tmp/jobs.log")" 0 "none of the $jobs jobs run meanwhile failed"
[ -s "$tmp/jobs.err" ] && head -3 "$tmp/jobs.err" | sed 's/^/#   /'
run "$LUX" stop --dir "$D"
is "$rc" 0 "the head stops"
audits "...the stopped log audits"
same stopped "...and answers the same"

# retention: the head compacts on its own
run "$LUX" start --head --dir "$D" --compact-after 1s
is "$rc" 0 "lux start --compact-after 1s"
[ "$rc" -ne 0 ] && echo "# $err"
for i in 1 2 3; do "$HELLO" --dir "$D" >/dev/null 2>"$tmp/err" || break; done
ok $? "...takes jobs"
L0=$(one "SELECT max(seq) FROM events WHERE shard = 0")
L1=$(one "SELECT max(seq) FROM events WHERE shard = 1")
answers "$tmp/before"
# wait until a compaction moved shard 0's base past L0
i=0
while :; do
    b=$(sqlite3 "$D/shard-0/replica-$tail0.db" \
        "SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM meta WHERE key = 'base_seq'" \
        2>/dev/null)
    [ "${b:-0}" -ge "$L0" ] && break
    i=$((i + 1))
    [ $i -gt 1200 ] && break
    "$HELLO" --dir "$D" --iterations 1 --width 1 >/dev/null 2>&1
    sleep 0.1
done
ok "$([ "${b:-0}" -ge "$L0" ]; echo $?)" "...and moves shard 0's base to $b (>= $L0) on its own"
grep -q "compacting events older than 1s" "$D/log/supervisor.log"
ok $? "...the supervisor says it compacts"
audits "...the log audits"
same retention "...and answers the same"
run "$LUX" stop --dir "$D"
is "$rc" 0 "the head stops (and its compaction, if one runs)"
audits "...the log audits"

run "$LUX" start --head --dir "$D" --compact-after soon
is "$rc" 2 "--compact-after soon: status 2"
like "$err" "--compact-after takes an age" "...naming the option"

done_testing
