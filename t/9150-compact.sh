#!/bin/sh
# 9150-compact: lux compact moves old events into each shard's archive and
# the log reads, pulls and audits as before:
#   - a cluster (2 shards x 2 replicas) runs hello_log five times and stops;
#     every view, the README's queries and lineage() are recorded;
#   - a compaction cut short after its first step (the events copied into
#     the archives, the replica files untouched) changes no answer and
#     audits; a second one below a further seq finishes the job: the
#     replica files hold only the newer events, every answer is the same,
#     lux audit verifies archive and live files as one chain per shard;
#   - the cluster starts again on the compacted files and takes more jobs:
#     lux pull (through the protocol, from seq 1: the tail reads its
#     archive) copies every event and the file audits;
#   - archives are lz4 frames (archive.db.lz4, no archive.db left at rest),
#     which `lz4 -t` verifies and which hold the SQLite file in under half
#     its bytes; an archive in the old form (a plain archive.db) is read as
#     it is (same answers, lux audit) and sealed by the next compaction; a
#     frame with a byte flipped fails lux audit and lux sql naming it;
#   - an archived event altered: lux audit fails naming the archive;
#   - usage errors exit 2.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_cluster

LZ4=$(command -v lz4)
run() { # run CMD...: status in $rc, stdout in $out, stderr in $err
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
one() { "$LUX" sql --dir "$1" --csv "$2" | sed -n 2p; }

# every answer, into file $1
answers() {
    for v in events tasks retries objects task_deps actors actor_calls actor_restarts nodes jobs; do
        echo "== $v"
        "$LUX" sql --dir "$D" --csv "SELECT * FROM $v ORDER BY shard, seq"
    done >"$1"
    {
        echo "== README"
        "$LUX" sql --dir "$D" --csv \
            "SELECT function, count(*), avg(duration_ms) FROM tasks GROUP BY function ORDER BY 1"
        "$LUX" sql --dir "$D" --csv "SELECT task_id, attempt, reason FROM retries ORDER BY 1, 2"
        "$LUX" sql --dir "$D" --csv "SELECT * FROM lineage('$obj')"
        "$LUX" sql --dir "$D" --csv "SELECT kind, count(*) FROM events GROUP BY kind ORDER BY 1"
        "$LUX" sql --dir "$D" --csv \
            "SELECT method, count(*) FROM actor_calls GROUP BY method ORDER BY 1"
        "$LUX" sql --dir "$D" --csv "SELECT count(*), sum(retries) FROM tasks"
    } >>"$1"
}

run "$LUX" start --head --dir "$D" --shards 2 --replicas 2 --heartbeat-ms 50 --dead-ms 400
is "$rc" 0 "a head with 2 shards x 2 replicas"
for i in 1 2 3 4 5; do obj=$("$HELLO" --dir "$D" 2>"$tmp/err") || break; done
ok $? "hello_log wrote five jobs ($obj)"
"$LUX" stop --dir "$D" >/dev/null
n=$(one "$D" "SELECT count(*) FROM event")
last0=$(one "$D" "SELECT max(seq) FROM event WHERE shard = 0")
answers "$tmp/before"
ok "$([ "$(grep -c . "$tmp/before")" -gt 40 ]; echo $?)" "$n events, the answers recorded"

# cut short after the archive step
half=$((last0 / 3))
LUX_COMPACT_STOP_AFTER_ARCHIVE=1 run "$LUX" compact --dir "$D" --before "$half"
is "$rc" 0 "a compaction stopped after its first step"
ok "$([ -f "$D/shard-0/archive.db.lz4" ] && [ -f "$D/shard-1/archive.db.lz4" ]; echo $?)" \
    "...each shard has its archive, an lz4 frame"
ok "$([ ! -e "$D/shard-0/archive.db" ] && [ ! -e "$D/shard-1/archive.db" ]; echo $?)" \
    "...and no uncompressed archive.db left"
answers "$tmp/cut"
ok "$(cmp -s "$tmp/before" "$tmp/cut"; echo $?)" "...every answer the same"
cmp -s "$tmp/before" "$tmp/cut" || diff "$tmp/before" "$tmp/cut" | head -5 | sed 's/^/#   /'
run "$LUX" audit --dir "$D"
is "$rc" 0 "...the log audits"

# a second compaction, further on, finishes the job
two=$((last0 * 2 / 3))
run "$LUX" compact --dir "$D" --before "$two"
is "$rc" 0 "lux compact --before $two"
like "$out" "events of 2 shards of" "...says what it moved"
tail0=$(awk '$1 == "shard" && $2 == 0 { print $NF }' "$D/master.state")
live=$(sqlite3 "$D/shard-0/replica-$tail0.db" "SELECT min(seq) FROM event")
is "$live" "$two" "...shard 0's tail file starts at seq $two"
if [ -n "$LZ4" ]; then
    "$LZ4" -q -t "$D/shard-0/archive.db.lz4"
    ok $? "...its archive is a whole lz4 frame (lz4 -t)"
    "$LZ4" -q -d -c "$D/shard-0/archive.db.lz4" >"$tmp/a0.db"
    is "$(sqlite3 "$tmp/a0.db" "SELECT min(seq) || '..' || max(seq) FROM event")" \
        "1..$((two - 1))" "...that holds the SQLite file of 1..$((two - 1))"
    zb=$(wc -c <"$D/shard-0/archive.db.lz4")
    pb=$(wc -c <"$tmp/a0.db")
    ok "$([ $((zb * 2)) -lt "$pb" ]; echo $?)" "...in under half its bytes ($zb of $pb)"
else
    for k in 1 2 3; do ok 0 "# SKIP the lz4 program is not installed"; done
fi
answers "$tmp/after"
ok "$(cmp -s "$tmp/before" "$tmp/after"; echo $?)" \
    "every view, the README's queries and lineage() give the same answers"
cmp -s "$tmp/before" "$tmp/after" || diff "$tmp/before" "$tmp/after" | head -5 | sed 's/^/#   /'
run "$LUX" audit --dir "$D"
is "$rc" 0 "lux audit of archive and live files"
like "$out" "its archive's $((two - 1)) events verified from the genesis" \
    "...verifies each archive and the files continuing it"
[ "$rc" -ne 0 ] && echo "$out" | grep PROBLEM | head -3 | sed 's/^/#   /'

# an archive of the old form (archive.db, uncompressed) is read as it is
if [ -n "$LZ4" ]; then
    "$LZ4" -q -d -c "$D/shard-1/archive.db.lz4" >"$D/shard-1/archive.db" &&
        rm "$D/shard-1/archive.db.lz4"
    answers "$tmp/old"
    ok "$(cmp -s "$tmp/before" "$tmp/old"; echo $?)" "an archive in the old form (archive.db): the same answers"
    run "$LUX" audit --dir "$D"
    is "$rc" 0 "...and lux audit verifies it"
else
    for k in 1 2; do ok 0 "# SKIP the lz4 program is not installed"; done
fi

# the cluster runs again on the compacted files; a pull reads the archives
run "$LUX" start --head --dir "$D"
is "$rc" 0 "the head starts again on the compacted files"
[ "$rc" -ne 0 ] && echo "# $err"
"$HELLO" --dir "$D" >/dev/null 2>"$tmp/err"
ok $? "...and takes another job"
n2=$(one "$D" "SELECT count(*) FROM event")
run "$LUX" pull --address "$D" "$tmp/out.db"
is "$rc" 0 "lux pull through the protocol, from seq 1"
# the head's node may append more meanwhile (its membership events): at least n2
pulled=$(echo "$out" | sed -n 's/^pulled \([0-9]*\) new events.*/\1/p')
ok "$([ "${pulled:-0}" -ge "$n2" ] &&
    [ "$(sqlite3 "$tmp/out.db" "SELECT count(*), min(seq) FROM event GROUP BY shard" |
        awk -F'|' '{ n += $1; if ($2 != 1) bad = 1 } END { print bad ? -1 : n }')" = "$pulled" ]
    echo $?)" "...every event ($pulled, >= $n2), each shard from seq 1: the tails read their archives"
[ "$rc" -ne 0 ] && echo "# $err"
run "$LUX" audit "$tmp/out.db"
is "$rc" 0 "...and the pulled file audits"
# the events so far (the head's node may append more meanwhile: node_died
# of the nodes of earlier runs, its own beats' events)
upto="(shard = 0 AND seq <= $(one "$D" "SELECT max(seq) FROM event WHERE shard = 0")) OR
      (shard = 1 AND seq <= $(one "$D" "SELECT max(seq) FROM event WHERE shard = 1"))"
n3=$(one "$D" "SELECT count(*) FROM event WHERE $upto")
run "$LUX" compact --dir "$D" --before 1000000
is "$rc" 0 "compact of the running cluster, every event (t/9151 tests it under appends)"
is "$(one "$D" "SELECT count(*) FROM event WHERE $upto")" "$n3" "...every event still there"
"$LUX" stop --dir "$D" >/dev/null
ok "$([ -f "$D/shard-1/archive.db.lz4" ] && [ ! -e "$D/shard-1/archive.db" ]; echo $?)" \
    "...and the old form's archive sealed into its frame"

# a frame with a byte flipped: its checksum (or its blocks) refuse it
cp "$D/shard-0/archive.db.lz4" "$tmp/good.lz4"
python3 - "$D/shard-0/archive.db.lz4" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x55
open(p, "wb").write(bytes(b))
PY
run "$LUX" audit --dir "$D"
is "$rc" 1 "an archive's frame with a byte flipped: lux audit fails"
like "$out$err" "shard-0/archive.db.lz4" "...naming the archive"
run "$LUX" sql --dir "$D" "SELECT count(*) FROM events"
is "$rc" 1 "...and lux sql fails"
like "$err" "archive.db.lz4: lz4: " "...saying lz4 refused it"
cp "$tmp/good.lz4" "$D/shard-0/archive.db.lz4"

# an archived event altered (and the frame made again, without its size)
if [ -n "$LZ4" ]; then
    "$LZ4" -q -d -c "$D/shard-1/archive.db.lz4" >"$tmp/a1.db"
    sqlite3 "$tmp/a1.db" "UPDATE event SET info = 'forged' WHERE seq = 3"
    "$LZ4" -q -f "$tmp/a1.db" "$D/shard-1/archive.db.lz4"
    run "$LUX" audit --dir "$D"
    is "$rc" 1 "an archived event altered: lux audit fails"
    like "$out" "archive: seq 3" "...naming the archive's seq"
else
    for k in 1 2; do ok 0 "# SKIP the lz4 program is not installed"; done
fi

# errors
run "$LUX" compact --dir "$D"
is "$rc" 2 "compact without --before: status 2"
run "$LUX" compact --dir "$D" --before soon
is "$rc" 2 "compact --before soon: status 2"
run "$LUX" compact --dir "$tmp/nothing" --before 5
is "$rc" 1 "compact of a directory with no cluster: status 1"

done_testing
