#!/bin/sh
# 9156-sql-compact-window: a lux sql opened just before a compaction ends
# sees each event exactly once. LUX_TEST_SQL_GATE=DIR holds lux sql
# between opening the log and its first statement (it writes DIR/held and
# waits for DIR/go) while a whole compaction runs; then the held query
# must count every event of the log once:
#   - the first compaction of the log (no archive when lux sql opened);
#   - a later one (lux sql opened the archive as it was before it);
#   - a query held after its statement began (DIR/at: statement) reads
#     the snapshot it began in;
#   - the views of sql/views.sql (events, tasks) as well as `event`.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_cluster
qpid=
trap '[ -n "$qpid" ] && kill -9 $qpid 2>/dev/null; "$LUX" stop --dir "$D" >/dev/null 2>&1;
      tap_cleanup' EXIT

one() { "$LUX" sql --dir "$D" --csv "$1" | sed -n 2p; }
# held NAME BEFORE [AT]: lux sql of $Q held after its open (or at AT)
# while lux compact --before BEFORE runs to its end; its answer into
# $tmp/NAME
held() {
    g=$tmp/gate-$1
    mkdir -p "$g"
    [ -n "$3" ] && echo "$3" >"$g/at"
    LUX_TEST_SQL_GATE=$g "$LUX" sql --dir "$D" --csv "$Q" >"$tmp/$1" 2>"$tmp/$1.err" &
    qpid=$!
    wait_file "$g/held"
    ok $? "$1: lux sql holds after ${3:-its open} (pid $qpid)"
    run "$LUX" compact --dir "$D" --before "$2"
    is "$rc" 0 "$1: a compaction below seq $2 ends meanwhile"
    : >"$g/go"
    wait $qpid
    is "$?" 0 "$1: the held lux sql ends well"
    qpid=
    sed 's/^/#   /' "$tmp/$1.err"
}

run "$LUX" start --head --dir "$D" --shards 2 --replicas 1
is "$rc" 0 "a head with 2 shards"
for i in 1 2 3 4; do obj=$("$HELLO" --dir "$D" 2>"$tmp/err") || break; done
ok $? "hello_log wrote four jobs ($obj)"
"$LUX" stop --dir "$D" >/dev/null
L0=$(one "SELECT max(seq) FROM event WHERE shard = 0")
L1=$(one "SELECT max(seq) FROM event WHERE shard = 1")
T=$(one "SELECT count(*) FROM tasks")
ok "$([ "$L0" -gt 30 ] && [ "$L1" -gt 30 ]; echo $?)" "shard 0 ends at seq $L0, shard 1 at $L1; $T tasks"
# every event once: per shard, seqs 1..L each once, through event and events
Q="SELECT shard, count(*), count(DISTINCT seq), min(seq), max(seq) FROM event GROUP BY shard
   UNION ALL SELECT 10 + shard, count(*), count(DISTINCT seq), min(seq), max(seq) FROM events
   GROUP BY shard UNION ALL SELECT 20, count(*), count(DISTINCT task_id), 0, 0 FROM tasks
   ORDER BY 1"
printf 'shard,count(*),count(DISTINCT seq),min(seq),max(seq)\n0,%s,%s,1,%s\n1,%s,%s,1,%s\n10,%s,%s,1,%s\n11,%s,%s,1,%s\n20,%s,%s,0,0\n' \
    "$L0" "$L0" "$L0" "$L1" "$L1" "$L1" "$L0" "$L0" "$L0" "$L1" "$L1" "$L1" "$T" "$T" >"$tmp/want"
"$LUX" sql --dir "$D" --csv "$Q" >"$tmp/now"
ok "$(cmp -s "$tmp/want" "$tmp/now"; echo $?)" "the query answers every event once before any compaction"
cmp -s "$tmp/want" "$tmp/now" || sed 's/^/#   /' "$tmp/now"

held first $((L0 / 3))
ok "$(cmp -s "$tmp/want" "$tmp/first"; echo $?)" "first compaction: every event once in the held query"
cmp -s "$tmp/want" "$tmp/first" || diff "$tmp/want" "$tmp/first" | sed 's/^/#   /'
held second $((2 * L0 / 3))
ok "$(cmp -s "$tmp/want" "$tmp/second"; echo $?)" "second compaction: every event once in the held query"
cmp -s "$tmp/want" "$tmp/second" || diff "$tmp/want" "$tmp/second" | sed 's/^/#   /'
held third $((5 * L0 / 6)) statement
ok "$(cmp -s "$tmp/want" "$tmp/third"; echo $?)" "held in its statement: every event once"
cmp -s "$tmp/want" "$tmp/third" || diff "$tmp/want" "$tmp/third" | sed 's/^/#   /'
"$LUX" sql --dir "$D" --csv "$Q" >"$tmp/after"
ok "$(cmp -s "$tmp/want" "$tmp/after"; echo $?)" "a lux sql opened after them answers the same"
run "$LUX" audit --dir "$D"
is "$rc" 0 "the log audits"
done_testing
