#!/bin/sh
# 9112-replay-graph: lux replay --verify of a random task graph with
# nested tasks, puts small and large, failures and retries (t/9112-graph-run:
# t_crash kills its own worker on both attempts, t_fail raises, and a worker
# of the run is killed with SIGKILL by its pid while the graph runs):
#   - the untouched run replays with every task verified, the nested ones
#     (found under their replayed parents) among them, and the puts read
#     from the blob store: exit 0;
#   - lux pull copies the recorded puts beside the file, which then replays
#     on its own; compacted (lux compact), the run replays the same, and a
#     pull of the compacted run audits and replays;
#   - a nested task's recorded output fingerprint altered (in a file lux
#     pull wrote): exit 1, that task named as the one mismatch;
#   - a driver's task's recorded fingerprint altered: exit 1, named;
#   - a module byte altered: exit 1, refused before anything runs;
#   - the recorded puts' blobs altered: exit 1, the tasks that read them
#     named as not replayable, with the blob.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_replay # the replays' clusters go under tmp, removed with it
sqlv() { # sqlv WHERE QUERY: one value
    "$LUX" sql "$1" --csv "$2" | sed -n 2p
}

LUX_BUILDDIR=$B timeout -s KILL 300 "$B/t/9112-graph-run" "$tmp/runs" 7 150 \
    >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "a random graph of 150 nodes ran with a worker killed, a crash and a failure"
run=$(sed -n 1p "$tmp/run.out")
killed=$(sed -n 2p "$tmp/run.out")
ok "$([ "${killed:-0}" -gt 0 ]; echo $?)" "...a worker of the run killed by its pid ($killed)"
"$LUX" pull --dir "$run" "$tmp/run.db" >"$tmp/out"
match "$(cat "$tmp/out")" "; [1-9][0-9]* recorded puts copied into blobs/ \\([0-9]+ bytes\\)$" \
    "lux pull copies the recorded puts into blobs/ beside the file"
ntasks=$(sqlv "$tmp/run.db" "SELECT count(*) FROM tasks")
nested=$(sqlv "$tmp/run.db" "SELECT count(*) FROM tasks WHERE parent_id IN (SELECT task_id FROM tasks)")
twice=$(sqlv "$tmp/run.db" "SELECT count(*) - count(DISTINCT task_id) FROM events WHERE kind = 'task_submitted'")
is "$(sqlv "$tmp/run.db" "SELECT count(DISTINCT task_id) FROM tasks")" "$ntasks" \
    "the tasks view gives one row per task ($twice submitted twice, by a killed parent and its retry)"
retries=$(sqlv "$tmp/run.db" "SELECT count(*) FROM retries")
ok "$([ "${nested:-0}" -gt 0 ]; echo $?)" "...with nested tasks ($nested of $ntasks)"
ok "$([ "${retries:-0}" -gt 0 ]; echo $?)" "...and retries ($retries)"

timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay RUN --verify: exit 0"
like "$(cat "$tmp/out")" "replayed $ntasks tasks of job" "...every one of its $ntasks tasks replayed"
like "$(cat "$tmp/out")" "(0 actor calls, $nested nested): $ntasks matched, 0 mismatched, 0 not deterministic, 0 not replayable" \
    "...the nested ones under their replayed parents, and every one matched"
match "$(cat "$tmp/out")" "[1-9][0-9]* recorded puts \\([0-9]+ bytes\\) read from $run/blobs" \
    "...the puts read from the blob store"

# the pulled file replays on its own: its puts from blobs/ beside it
timeout -s KILL 300 "$LUX" replay "$tmp/run.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay of the pulled file --verify: exit 0"
match "$(cat "$tmp/out")" "$ntasks matched, 0 mismatched, 0 not deterministic, 0 not replayable; .* recorded puts \\([0-9]+ bytes\\) read from $tmp/blobs" \
    "...every task matched, the puts read from the blobs lux pull copied"

# compacted: the run's events moved into its archive, it replays the same,
# and a pull of it (through its files, reading the archive) too
"$LUX" compact --dir "$run" --before 1000000000 >"$tmp/out" 2>&1
ok $? "lux compact of the run: $(cat "$tmp/out")"
timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay of the compacted run --verify: exit 0"
like "$(cat "$tmp/out")" "(0 actor calls, $nested nested): $ntasks matched, 0 mismatched, 0 not deterministic, 0 not replayable" \
    "...every one of its $ntasks tasks matched"
mkdir "$tmp/c"
"$LUX" pull --dir "$run" "$tmp/c/run.db" >"$tmp/out" 2>"$tmp/err"
ok $? "lux pull of the compacted run"
"$LUX" audit "$tmp/c/run.db" >"$tmp/out" 2>&1
ok $? "...the file audits"
timeout -s KILL 300 "$LUX" replay "$tmp/c/run.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "...and replays with every task verified"
like "$(cat "$tmp/out")" "$ntasks matched, 0 mismatched" "...all $ntasks"

set -- $("$LUX" sql "$tmp/run.db" --csv "SELECT task_id, function FROM tasks WHERE status =
    'finished' AND parent_id IN (SELECT task_id FROM tasks) ORDER BY seq LIMIT 1" | sed -n 2p | tr , ' ')
ntask=$1 nfn=$2
cp "$tmp/run.db" "$tmp/n.db"
sqlite3 "$tmp/n.db" "UPDATE event SET fp = zeroblob(16) WHERE kind = 5 AND lower(hex(task)) = '$ntask'"
timeout -s KILL 300 "$LUX" replay "$tmp/n.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a nested task's recorded output altered: exit 1"
like "$(cat "$tmp/out")" "MISMATCH      $ntask $nfn (attempt" "...naming it ($nfn)"
like "$(cat "$tmp/out")" "$((ntasks - 1)) matched, 1 mismatched, 0 not deterministic" "...and only it"

# A task submitted again by its parent's retry (the parent killed
# after the first submission): its task_submitted event twice, the second
# later in its shard. Still one row of tasks, the same edges and locations.
dtask=$(sqlv "$tmp/run.db" "SELECT task_id FROM tasks WHERE status = 'finished' AND num_deps > 0
    ORDER BY parent_id IN (SELECT task_id FROM tasks) DESC, seq LIMIT 1")
cp "$tmp/run.db" "$tmp/d.db"
ndeps=$(sqlv "$tmp/d.db" "SELECT count(*) FROM task_deps")
nlocs=$(sqlv "$tmp/d.db" "SELECT count(*) FROM object_locations")
sqlite3 "$tmp/d.db" "CREATE TEMP TABLE d AS SELECT * FROM event WHERE kind = 4 AND lower(hex(task)) = '$dtask';
    UPDATE d SET seq = (SELECT max(seq) + 1 FROM event e WHERE e.shard = d.shard), cseq = cseq + 1000000;
    INSERT INTO event SELECT * FROM d"
is "$(sqlv "$tmp/d.db" "SELECT count(*) FROM events WHERE kind = 'task_submitted' AND task_id = '$dtask'")" 2 \
    "a task with arguments submitted twice (as by a killed parent and its retry)"
is "$(sqlv "$tmp/d.db" "SELECT count(*) FROM tasks")" "$ntasks" "...is one row of tasks"
is "$(sqlv "$tmp/d.db" "SELECT count(*) FROM task_deps")" "$ndeps" "...its edges once in task_deps"
is "$(sqlv "$tmp/d.db" "SELECT count(*) FROM object_locations")" "$nlocs" "...its outputs once in object_locations"

set -- $("$LUX" sql "$tmp/run.db" --csv "SELECT task_id, function FROM tasks WHERE status =
    'finished' AND parent_id NOT IN (SELECT task_id FROM tasks) ORDER BY seq DESC LIMIT 1" |
    sed -n 2p | tr , ' ')
ttask=$1 tfn=$2
cp "$tmp/run.db" "$tmp/t.db"
sqlite3 "$tmp/t.db" "UPDATE event SET fp = zeroblob(16) WHERE kind = 5 AND lower(hex(task)) = '$ttask'"
timeout -s KILL 300 "$LUX" replay "$tmp/t.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a driver's task's recorded output altered: exit 1"
like "$(cat "$tmp/out")" "MISMATCH      $ttask $tfn (attempt" "...naming it ($tfn)"

cp "$tmp/run.db" "$tmp/mod.db"
sqlite3 "$tmp/mod.db" "UPDATE event SET body = substr(body, 1, 3000) ||
    CASE WHEN substr(body, 3001, 1) = X'00' THEN X'01' ELSE X'00' END || substr(body, 3002) WHERE kind = 3"
timeout -s KILL 300 "$LUX" replay "$tmp/mod.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a module byte altered: exit 1"
like "$(cat "$tmp/err")" "they were altered" "...the module's hash refused"

for f in "$tmp"/blobs/*.lz4; do
    size=$(stat -c %s "$f")
    printf '\377' | dd of="$f" bs=1 seek=$((size - 5)) conv=notrunc 2>/dev/null
done
timeout -s KILL 300 "$LUX" replay "$tmp/run.db" --blobs "$tmp/blobs" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "every recorded put's blob altered: exit 1"
match "$(cat "$tmp/out")" "not replayed  [0-9a-f]{32} t_[a-z]+: argument [0-9]: put [0-9a-f]{40} \\([0-9]+ bytes\\): recorded put $tmp/blobs/[0-9a-f]{32}.lz4" \
    "...the tasks that read them named, with the blob"
match "$(cat "$tmp/out")" "0 mismatched, 0 not deterministic, [1-9][0-9]* not replayable" "...and counted"

done_testing
