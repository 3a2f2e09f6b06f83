#!/bin/sh
# 9013-cluster-conf: a cluster.conf that is not what lux start wrote is an
# error naming the file and the line (a line that is not "key value", a
# value out of its key's range, a key given twice) or the key missing,
# never a silent default; a file as earlier versions wrote it, with a key
# this version does not know, still reads.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
trap '"$LUX" stop --dir "$D" >/dev/null 2>&1; tap_cleanup' EXIT

run "$LUX" start --head --dir "$D" --shards 1 --log-only
is "$rc" 0 "a cluster to spoil ($err)"
run "$LUX" stop --dir "$D"
cp "$D/cluster.conf" "$tmp/good"
id=$(sed -n 's/^cluster //p' "$tmp/good")
sock=$(sed -n 's/^sock_dir //p' "$tmp/good")

conf() { # conf LINES...: DIR/cluster.conf made of these lines
    printf '%s\n' "$@" >"$D/cluster.conf"
}

# as earlier versions wrote it, plus a key from a later one
conf "# Lux cluster settings, written by lux start; see lux(1)." "cluster $id" "shards 1" \
    "replicas 1" "sync normal" "heartbeat_ms 100" "dead_ms 1000" "listen ipc" \
    "master_port 7379" "sock_dir $sock" "" "a_later_setting 5"
run "$LUX" status --dir "$D"
is "$rc" 0 "a file as lux start wrote it, with an unknown key, reads ($err)"

bad() { # bad LINE-NUMBER WHAT DESCRIPTION (DIR/cluster.conf already written)
    run "$LUX" status --dir "$D"
    is "$rc" 1 "$3: status exits 1"
    like "$err" "$D/cluster.conf:$1: $2" "$3: the file, the line and what is wrong"
}

conf "cluster $id" "shards" "replicas 1" "sock_dir $sock"
bad 2 "not a 'key value' line: 'shards'" "a key without a value"
conf "cluster $id" "shards 1" "Replicas: 1" "sock_dir $sock"
bad 3 "not a 'key value' line" "a line that is not 'key value'"
conf "# settings" "cluster $id" "shards abc" "replicas 1" "sock_dir $sock"
bad 3 "shards: 'abc' is not a number from 1 to 256" "a number that is not one"
conf "cluster $id" "shards 1" "replicas 0" "sock_dir $sock"
bad 3 "replicas: '0' is not a number from 1 to 7" "a number out of range"
conf "cluster $id" "shards 1" "replicas 1" "sync fast" "sock_dir $sock"
bad 4 "sync: 'fast' is not normal or full" "a sync that is neither"
conf "cluster 12345" "shards 1" "replicas 1" "sock_dir $sock"
bad 1 "cluster: '12345' is not a cluster ID" "a cluster ID cut short"
conf "cluster $id" "shards 1" "replicas 1" "shards 2" "sock_dir $sock"
bad 4 "shards given twice (first on line 2)" "a key given twice"
conf "cluster $id" "shards 1" "replicas 1"
run "$LUX" status --dir "$D"
is "$rc" 1 "a missing sock_dir: status exits 1"
like "$err" "$D/cluster.conf: no sock_dir line" "naming the key"

cp "$tmp/good" "$D/cluster.conf"
run "$LUX" start --head --dir "$D"
is "$rc" 0 "the file put back, the cluster starts again ($err)"

done_testing
