#!/bin/sh
# 9158-hist-snapshot-fails: lux replay, lineage and timeline, when their
# snapshot of the log fails (lux_hist_snapshot), say why, exit 1 and leave
# nothing allocated behind (valgrind: no block definitely or indirectly
# lost). The failure is a real one: LUX_TEST_SQL_GATE holds the command
# between opening the log and its snapshot while a compaction moves the
# archive on, and the new archive is then overwritten with bytes that are
# not an lz4 frame, so that opening the log again fails. Skips without
# valgrind (tools/install-deps.sh installs it).
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
command -v valgrind >/dev/null 2>&1 || skip_all "no valgrind"
hist_cluster
cpid=
trap '[ -n "$cpid" ] && kill -9 $cpid 2>/dev/null; "$LUX" stop --dir "$D" >/dev/null 2>&1;
      tap_cleanup' EXIT

run "$LUX" start --head --dir "$D" --shards 1 --replicas 1
is "$rc" 0 "a head with 1 shard"
# (a failed job stops the loop: `|| break` alone would leave the loop's
# status 0, and the check could not fail)
jobs=0
for i in 1 2 3 4; do obj=$("$HELLO" --dir "$D" 2>"$tmp/err") && jobs=$((jobs + 1)) || break; done
is "$jobs" 4 "hello_log wrote four jobs (object $obj)"
[ "$jobs" -eq 4 ] || sed 's/^/#   /' "$tmp/err" | tail -3
"$LUX" stop --dir "$D" >/dev/null
run "$LUX" compact --dir "$D" --before 20
is "$rc" 0 "a first compaction: the log has an archive"
A=$D/shard-0/archive.db.lz4

# failing NAME BEFORE CMD...: CMD (a lux command) under valgrind, held
# before its snapshot while a compaction below BEFORE ends and its archive
# is then spoilt; the archive is put back afterwards
failing() {
    name=$1 before=$2
    shift 2
    g=$tmp/gate-$name
    mkdir -p "$g"
    LUX_TEST_SQL_GATE=$g "$B/libtool" --mode=execute valgrind -q --leak-check=full \
        --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
        --error-exitcode=99 "$LUX" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    cpid=$!
    wait_file "$g/held"
    ok $? "$name: held before its snapshot (pid $cpid)"
    run "$LUX" compact --dir "$D" --before "$before"
    is "$rc" 0 "$name: a compaction below seq $before ends meanwhile"
    cp "$A" "$tmp/good.lz4"
    head -c 5000 /dev/urandom >"$A"
    : >"$g/go"
    wait $cpid
    crc=$?
    cpid=
    cp "$tmp/good.lz4" "$A"
    is "$crc" 1 "$name: exits 1 (99: valgrind found a leak)"
    match "$(cat "$tmp/$name.err")" "^lux $name: shard 0: .*archive\.db\.lz4: not an lz4 frame" \
        "$name: says which archive it could not read and why"
    leaks=$(grep -c 'lost in loss record' "$tmp/$name.err")
    is "$leaks" 0 "$name: valgrind finds no block lost"
    [ "$leaks" -eq 0 ] || grep -A6 'lost in loss record' "$tmp/$name.err" | head -30 | sed 's/^/#   /'
}

failing replay 40 replay --verify "$D"
failing lineage 60 lineage "$D" "$obj"
failing timeline 80 timeline "$D" -o "$tmp/trace.json"
run "$LUX" audit --dir "$D"
is "$rc" 0 "the log audits after it all"
done_testing
