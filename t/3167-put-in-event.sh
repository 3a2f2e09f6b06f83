#!/bin/sh
# 3167-put-in-event: a small put is recorded for lux replay in its own
# object_put event (its bytes in the event's body), not in the blob store:
# no blob file, no writer thread, no event held behind its write (DESIGN
# "Recording puts"). The limit is 2,048 bytes (EXEC_BLOB_IN_EVENT_MAX).
#   - puts of 8, 100 and 2,048 bytes carry their bytes in their events
#     (info "recorded in this event"), and no blob is written for them;
#     one of 2,049 bytes goes to the blob store as before (its event has
#     no body); the blob store holds that one file only;
#   - the job replays and every task matches, 3 puts read from their
#     events and 1 from the blob store;
#   - a byte of a put's body altered in a pulled copy: the task that reads
#     it is not replayable, the reason naming the put and its fingerprint;
#   - a log of the form written before (the small put's bytes in a blob,
#     its event without a body) still replays from the blob;
#   - under a record_puts of 1,000 bytes, a put of 1,000 bytes is in its
#     event and one of 1,001 is not recorded at all (the policy's limit
#     below this one holds too), and replay says so;
#   - with record_puts none, nothing is recorded: no body, no blob, the
#     events say "not recorded".
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_replay # the replays' clusters go under tmp, removed with it
q() { # q DB QUERY: one value
    sqlite3 "$1" "$2"
}
# the object_put of object ID $2 (40 hex digits) in $1: FIELD
putq() { # putq DB OBJ FIELD
    q "$1" "SELECT $3 FROM event WHERE kind = 8 AND lower(hex(task)) = substr('$2', 1, 32)
        AND idx = $((0x$(printf %s "$2" | cut -c33-40)))"
}
nblobs() { # nblobs DIR: the blob files in DIR (0 when there is no DIR)
    ls "$1" 2>/dev/null | grep -c '\.lz4$'
}

LUX_BUILDDIR=$B timeout -s KILL 180 "$B/t/3167-put-run" "$tmp/runs" 0 8 100 2048 2049 \
    >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "a job of puts of 8, 100, 2048 and 2049 bytes, each read by a task, ran"
[ -s "$tmp/run.err" ] && sed 's/^/# /' "$tmp/run.err"
run=$(sed -n 1p "$tmp/run.out")
p8=$(sed -n 2p "$tmp/run.out") p100=$(sed -n 3p "$tmp/run.out")
plim=$(sed -n 4p "$tmp/run.out") pover=$(sed -n 5p "$tmp/run.out")
"$LUX" pull --dir "$run" "$tmp/run.db" >"$tmp/pull.out" 2>"$tmp/pull.err"
ok $? "lux pull of the run"
db=$tmp/run.db

for x in "8 $p8" "100 $p100" "2048 $plim"; do
    set -- $x
    is "$(putq "$db" "$2" "length(body) || ' ' || size || ' ' || info")" \
        "$1 $1 recorded in this event" "a put of $1 bytes: its bytes in its object_put event"
    fp=$(putq "$db" "$2" "lower(hex(fp))")
    ok "$([ ! -e "$run/blobs/$fp.lz4" ]; echo $?)" "...and no blob written for it ($fp)"
done
is "$(putq "$db" "$p8" "hex(substr(body, 1, 8))")" "0100000000000000" \
    "...the event's body is the put's bytes (the 8-byte put holds 1)"
is "$(putq "$db" "$pover" "coalesce(length(body), 'none') || ' ' || info")" "none recorded" \
    "a put of 2049 bytes: no body, recorded in the blob store"
fp=$(putq "$db" "$pover" "lower(hex(fp))")
ok "$([ -s "$run/blobs/$fp.lz4" ]; echo $?)" "...its blob written ($fp)"
is "$(nblobs "$run/blobs")" 1 "...the blob store holds that one file"

timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay --verify of the run: exit 0"
like "$(cat "$tmp/out")" "4 matched, 0 mismatched, 0 not deterministic, 0 not replayable" \
    "...every task matched"
like "$(cat "$tmp/out")" "1 recorded puts (2049 bytes) read from $run/blobs and 3 (2156 bytes) from their events, their hashes verified" \
    "...1 put read from the blob store, 3 from their events"
timeout -s KILL 300 "$LUX" replay "$db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay --verify of the pulled file: exit 0"

# a byte of the 100-byte put's body altered
cp "$db" "$tmp/alt.db"
q "$tmp/alt.db" "UPDATE event SET body = substr(body, 1, 49) ||
    CASE WHEN substr(body, 50, 1) = X'00' THEN X'01' ELSE X'00' END || substr(body, 51)
    WHERE kind = 8 AND length(body) = 100"
fp=$(putq "$db" "$p100" "lower(hex(fp))")
timeout -s KILL 300 "$LUX" replay "$tmp/alt.db" --blobs "$tmp/blobs" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a byte of a put's bytes altered in its event: exit 1"
like "$(cat "$tmp/out")" "argument 0: put $p100 (100 bytes): its bytes in the log do not hash to the recorded fingerprint $fp" \
    "...the task that reads it not replayable, naming the put and its fingerprint"
like "$(cat "$tmp/out")" "3 matched, 0 mismatched, 0 not deterministic, 1 not replayable" \
    "...that one only"

# the form written before: the 100-byte put's bytes in a blob, no body
cp "$db" "$tmp/old.db"
mkdir -p "$tmp/old/blobs"
cp "$tmp/blobs/"*.lz4 "$tmp/old/blobs/"
putq "$db" "$p100" "hex(body)" | xxd -r -p | lz4 -q -z -c --content-size >"$tmp/old/blobs/$fp.lz4"
q "$tmp/old.db" "UPDATE event SET body = NULL, info = 'recorded' WHERE kind = 8 AND length(body) = 100"
is "$(putq "$tmp/old.db" "$p100" "coalesce(length(body), 'none') || ' ' || info")" "none recorded" \
    "a log of the form before: the put's event without its bytes"
timeout -s KILL 300 "$LUX" replay "$tmp/old.db" --blobs "$tmp/old/blobs" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "...replays: exit 0"
like "$(cat "$tmp/out")" "2 recorded puts (2149 bytes) read from $tmp/old/blobs and 2 (2056 bytes) from their events" \
    "...the put read from its blob"

# under a record_puts below the limit: that limit holds
LUX_BUILDDIR=$B timeout -s KILL 180 "$B/t/3167-put-run" "$tmp/runs2" 1000 1000 1001 \
    >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "a job of puts of 1000 and 1001 bytes under record_puts 1000 ran"
run=$(sed -n 1p "$tmp/run.out")
pin=$(sed -n 2p "$tmp/run.out") pout=$(sed -n 3p "$tmp/run.out")
"$LUX" pull --dir "$run" "$tmp/run2.db" >/dev/null 2>&1
is "$(putq "$tmp/run2.db" "$pin" "length(body) || ' ' || info")" "1000 recorded in this event" \
    "the put of 1000 bytes: in its event"
is "$(putq "$tmp/run2.db" "$pout" "coalesce(length(body), 'none') || ' ' || info")" \
    "none not recorded: 1001 bytes, over record_puts 1000" "the put of 1001 bytes: not recorded"
is "$(nblobs "$run/blobs")" 0 "...no blob written"
timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "lux replay --verify: exit 1"
like "$(cat "$tmp/out")" "argument 0: put $pout (1001 bytes): not recorded: 1001 bytes, over record_puts 1000" \
    "...the task that reads the put not recorded named, with the reason"
like "$(cat "$tmp/out")" "1 matched, 0 mismatched, 0 not deterministic, 1 not replayable" \
    "...the other matched"

# record_puts none: nothing recorded
LUX_BUILDDIR=$B timeout -s KILL 180 "$B/t/3167-put-run" "$tmp/runs3" -1 8 2049 \
    >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "a job of puts of 8 and 2049 bytes under record_puts none ran"
run=$(sed -n 1p "$tmp/run.out")
p8=$(sed -n 2p "$tmp/run.out") pover=$(sed -n 3p "$tmp/run.out")
"$LUX" pull --dir "$run" "$tmp/run3.db" >/dev/null 2>&1
is "$(putq "$tmp/run3.db" "$p8" "coalesce(length(body), 'none') || ' ' || info")" \
    "none not recorded: 8 bytes, over record_puts 0" "the put of 8 bytes: not recorded, no body"
is "$(putq "$tmp/run3.db" "$pover" "coalesce(length(body), 'none') || ' ' || info")" \
    "none not recorded: 2049 bytes, over record_puts 0" "the put of 2049 bytes: not recorded"
is "$(nblobs "$run/blobs")" 0 "...no blob written"

done_testing
