#!/bin/sh
# 6162-cluster-pull-pending: a pull whose only source says it does not
# hold the object because its task is running there again (pending)
# waits for that source, and has the object when the task ends; a task
# that does not end fails the pull after LUX_XFER_MAKING_MS, the error
# saying the source is making it. Before, the source said "(evicted)" for
# every state but ready, error and spilled, and the puller took it for an
# eviction: it asked the head to make the object, the head found its task
# on its way and said "being made", then listed itself again (the log
# still listed it: the eviction's object_lost waited in the head's log
# queue), the next OPEN was refused again, and the 8 rounds the puller
# allows were spent in about 2 s while the task ran: the pull failed "node
# ... does not hold object ... (evicted)" (t/6091 seeds 21, 93 and 130 at
# load 20: a nested task's get, a spilled task's argument).
#
# The state is forced: LUX_TEST_PULL_REMAKE=FILE (exec_xfer_loc.c) makes
# the head evict the object a NODE_LOCATE asks for and make it again from
# its lineage before answering, once, when FILE exists; schedmod's s_big, the
# object's task, does not end while head/big.slow exists and head/big.go
# does not; and LUX_TEST_APPEND_GATE (the head's replicas drop every
# APPEND while gate/hold exists) holds the log where it listed the head,
# as a busy head's log queue did.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
G="$TAP_TMP/gate"
mkdir -p "$G"
CL_ON_EXIT='rm -f "$G/hold"; touch "$TAP_TMP/x.done" "$TAP_TMP/y.done" "$CL_DIR/head/big.go"'

LUX_TEST_PULL_REMAKE="$TAP_TMP/remake" LUX_TEST_APPEND_GATE="$G" \
    cluster_head --workers 1 --store-mb 64 --resources CPU=1,head=1
ok $CL_RC "the head starts, with LUX_TEST_PULL_REMAKE and LUX_TEST_APPEND_GATE" ||
    diag "$CL_OUT"
LUX_LOG=info cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 1 joins (LUX_LOG=info)" || diag "$CL_OUT"
LUX_XFER_MAKING_MS=3000 cluster_join 2 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 2 joins, with LUX_XFER_MAKING_MS=3000" || diag "$CL_OUT"

# matches GOT ERE DESCRIPTION
matches() {
    if printf '%s\n' "$1" | grep -Eq -- "$2"; then ok 0 "$3"; else
        ok 1 "$3"
        printf '#   got: %s\n#   expected to match: %s\n' "$1" "$2"
        return 1
    fi
}

# made NAME: a driver on the head has s_big make 4 MiB there and waits
# for it without reading it (nothing pinned: the head may evict it); its
# ref in $REF once the log lists the head for it
made() {
    "$LUX" run --address "$CL_DIR/head" "$MOD" waited $((4 * MB)) head=1 "$TAP_TMP/$1" \
        >"$TAP_TMP/$1.out" 2>&1 &
    CL_DRIVERS="$CL_DRIVERS $!"
    cluster_wait_file "$TAP_TMP/$1" 120 || return 1
    REF=$(cat "$TAP_TMP/$1")
    cluster_wait_sql "SELECT count(*) FROM object_locations WHERE object_id = '$REF'" 1 60
}
made x
ok $? "a driver on the head makes 4 MiB there (a task's output, not read)" ||
    diag "$(cat "$TAP_TMP/x.out") $CL_SQL"
X=$REF
made y
ok $? "... and another 4 MiB" || diag "$(cat "$TAP_TMP/y.out") $CL_SQL"
Y=$REF

# pull_pending I HEX: node I's driver gets HEX while the head evicts it as
# it is asked where it lives and runs its task again, which does not end, with the
# log held; its pid in $getpid, its output in $TAP_TMP/get.I
pull_pending() {
    rm -f "$CL_DIR/head/big.go"
    touch "$CL_DIR/head/big.slow" "$TAP_TMP/remake" "$G/hold"
    "$LUX" run --address "$CL_DIR/n$1" "$MOD" get $((4 * MB)) "$2" >"$TAP_TMP/get.$1" 2>&1 &
    getpid=$!
    CL_DRIVERS="$CL_DRIVERS $getpid"
}

# 1: the task ends after 8 s (before, the pull failed within about 2 s)
pull_pending 1 "$X"
_i=0
while [ $_i -lt 40 ] && kill -0 "$getpid" 2>/dev/null; do
    sleep 0.2
    _i=$((_i + 1))
done
ok "$(kill -0 "$getpid" 2>/dev/null; echo $?)" \
    "node 1's get waits 8 s while the head makes it again" || diag "$(cat "$TAP_TMP/get.1")"
ok "$([ ! -e "$TAP_TMP/remake" ]; echo $?)" "... the head evicted it as it was asked where it lives (the hook ran)"
rm -f "$G/hold"
touch "$CL_DIR/head/big.go"
wait "$getpid"
is "$(cat "$TAP_TMP/get.1")" "get ok (4194304 bytes)" \
    "once its task ends, node 1 has it, byte for byte"
matches "$(cat "$CL_DIR/n1/log/node.log")" "object $X: its source tcp://[^ ]+ is making it again \(node [^ ]+ does not hold object $X \(pending: its task is running again\)\); waiting for it there" \
    "node 1 logged the source's words and that it waits there"

# 2: the task does not end: node 2 (LUX_XFER_MAKING_MS=3000) fails the pull
pull_pending 2 "$Y"
t0=$(date +%s)
wait "$getpid"
t1=$(date +%s)
out=$(cat "$TAP_TMP/get.2")
matches "$out" "error: .*object $Y: node tcp://[^ ]+ has been making it again for [0-9]+ ms \\(LUX_XFER_MAKING_MS 3000\\) and it is not ready yet: node [^ ]+ does not hold object $Y \\(pending: its task is running again\\)" \
    "node 2's get of a task that does not end fails, saying the source makes it and how long it waited"
ok "$([ $((t1 - t0)) -lt 90 ]; echo $?)" "it failed in $((t1 - t0)) s (3 s bound; at most 90 s under load)"
rm -f "$G/hold"
touch "$CL_DIR/head/big.go"

done_testing
