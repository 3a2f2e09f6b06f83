#!/bin/sh
# 9110-replay-es: the ES quick start's run (lux run es.so, default options)
# replays with every task verified, through its recorded puts (the noise
# table and the policies are puts: the table's bytes are in RUN/blobs, not in
# the log; a policy, about 1 KiB, is small enough to be in its own event):
#   - lux replay --verify exits 0, every task of the run counted as matched,
#     and the puts read back with their hashes checked;
#   - a rollout's recorded output fingerprint altered (in a file lux pull
#     wrote): exit 1, that task named; a module byte altered: refused;
#   - a byte of the recorded noise table's blob altered: exit 1, the put and
#     the tasks that read it named as not replayable;
#   - the blob replaced by a well-formed frame of other bytes: refused by
#     its hash ("it was altered"), not only by the frame's checksum;
#   - --record-puts=1M: the 64 MiB table is not recorded, the policies are;
#     replay names the table's put and why (over record_puts), exit 1;
#   - --record-puts=bogus: a usage error, exit 2.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/es.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh" # match
TMPDIR=$tmp # the replays' clusters go here, and with it
export TMPDIR

es --env CartPole-v1 --seed 1
case $rc in 0|1) ok 0 "the ES quick start ran (exit $rc)" ;; *) ok 1 "the ES run: exit $rc" ;; esac
run=$(ls -d "$tmp"/runs/*/ | sed -n 1p)
run=${run%/}
ntasks=$(sql "$run" "SELECT count(*) FROM tasks")
ok "$([ "${ntasks:-0}" -gt 2 ]; echo $?)" "the run has tasks ($ntasks)"
like "$(cat "$run/cluster.conf")" "record_puts 268435456" "...with the default policy: puts up to 256 MiB"

timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/rep" 2>"$tmp/rep.err"
is $? 0 "lux replay RUN --verify of the ES run: exit 0"
like "$(cat "$tmp/rep")" "replayed $ntasks tasks" "...every one of its $ntasks tasks replayed"
like "$(cat "$tmp/rep")" "$ntasks matched, 0 mismatched, 0 not deterministic, 0 not replayable" "...and matched"
match "$(cat "$tmp/rep")" " 1 recorded puts \\([0-9]+ bytes\\) read from $run/blobs and [1-9][0-9]* \\([0-9]+ bytes\\) from their events, their hashes verified" \
    "...the table read from the blob store, the policies from their events"

"$LUX" pull --dir "$run" "$tmp/run.db" >/dev/null
roll=$(sql "$run" "SELECT task_id FROM tasks WHERE function = 'es_rollouts' ORDER BY seq LIMIT 1 OFFSET 3")
cp "$tmp/run.db" "$tmp/fp.db"
sqlite3 "$tmp/fp.db" "UPDATE event SET fp = zeroblob(16) WHERE kind = 5 AND lower(hex(task)) = '$roll'"
timeout -s KILL 300 "$LUX" replay "$tmp/fp.db" --blobs "$run/blobs" --verify >"$tmp/rep" 2>"$tmp/rep.err"
is $? 1 "a rollout task's recorded output altered: exit 1"
like "$(cat "$tmp/rep")" "MISMATCH      $roll es_rollouts (attempt" "...that task named"
like "$(cat "$tmp/rep")" "$((ntasks - 1)) matched, 1 mismatched, 0 not deterministic" "...and only it"
cp "$tmp/run.db" "$tmp/mod.db"
sqlite3 "$tmp/mod.db" "UPDATE event SET body = substr(body, 1, 5000) ||
    CASE WHEN substr(body, 5001, 1) = X'00' THEN X'01' ELSE X'00' END || substr(body, 5002) WHERE kind = 3"
timeout -s KILL 300 "$LUX" replay "$tmp/mod.db" --blobs "$run/blobs" --verify >"$tmp/rep" 2>"$tmp/rep.err"
is $? 1 "a module byte of es.so altered: exit 1"
like "$(cat "$tmp/rep.err")" "they were altered" "...the module's hash refused"

# the noise table: the largest blob
table=$(ls -S "$run/blobs" | sed -n 1p)
fp=${table%.lz4}
cp "$run/blobs/$table" "$tmp/table.keep"
size=$(stat -c %s "$run/blobs/$table")
printf '\377' | dd of="$run/blobs/$table" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/rep" 2>"$tmp/rep.err"
is $? 1 "a byte of the noise table's blob altered: exit 1"
match "$(cat "$tmp/rep")" "not replayed  [0-9a-f]{32} es_[a-z_]+: argument [0-9]: put [0-9a-f]{40} \\(67108864 bytes\\): recorded put .*$fp.lz4" \
    "...the tasks that read it named, with the put and its blob"
match "$(cat "$tmp/rep")" "0 mismatched, 0 not deterministic, [1-9][0-9]* not replayable" "...counted as not replayable"

head -c 67108864 /dev/zero | lz4 -q -z -c --content-size >"$run/blobs/$table"
timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/rep" 2>"$tmp/rep.err"
is $? 1 "the blob replaced by a valid frame of other bytes: exit 1"
match "$(cat "$tmp/rep")" "its bytes hash to [0-9a-f]{32}, not to its name: it was altered" \
    "...refused by its hash"
cp "$tmp/table.keep" "$run/blobs/$table"

rm -rf "$tmp/runs"

rm -rf "$tmp/runs"
timeout -s KILL 120 "$LUX" run --dir "$tmp/runs" --record-puts=1M "$ES" --json --no-report \
    --env CartPole-v1 --seed 1 >"$tmp/out" 2>"$tmp/err"
case $? in 0|1) ok 0 "lux run --record-puts=1M es.so" ;; *) ok 1 "lux run --record-puts=1M: exit $?" ;; esac
run=$(ls -d "$tmp"/runs/*/ | sed -n 1p)
run=${run%/}
like "$(cat "$run/cluster.conf")" "record_puts 1048576" "...recorded in cluster.conf"
timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/rep" 2>"$tmp/rep.err"
is $? 1 "a run whose noise table was over the limit: exit 1"
match "$(cat "$tmp/rep")" "put [0-9a-f]{40} \\(67108864 bytes\\): not recorded: 67108864 bytes, over record_puts 1048576" \
    "...naming the put and why it was not recorded"

timeout -s KILL 60 "$LUX" run --dir "$tmp/runs" --record-puts=bogus "$ES" >/dev/null 2>"$tmp/err"
is $? 2 "lux run --record-puts=bogus: exit 2"
like "$(cat "$tmp/err")" "not a size" "...saying why"

done_testing
