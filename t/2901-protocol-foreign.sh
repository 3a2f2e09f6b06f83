#!/bin/sh
# 2901-protocol-foreign: doc/protocol.md is enough to use a cluster from
# another language. tools/lux_subscribe.py and t/2901-foreign.py, written
# from the page with Python and pyzmq only, must:
#   - recompute the page's worked example of the hash chain;
#   - decode every event the C client appended (every field and kind, both
#     shards) and verify each shard's chain, from the genesis and from a
#     later seq;
#   - append by hand (ACK, idempotent resend, EGAP, ESTATE) events that the
#     subscriber then finds in the right shard;
#   - follow a shard live while its tail is killed with -9, and see every
#     seq exactly once;
#   - talk CURVE to a tcp cluster, and be refused without the key;
#   - stop with the right status on a bad hash, a gap and a malformed
#     message from a (fake) tail.
# Needs python3 with pyzmq (Debian: python3-zmq); skips without it.

PY=
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import zmq' >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
    echo "1..0 # SKIP python3-zmq not installed"
    exit 0
fi

: "${LUX_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${LUX_BIN:=$LUX_SRCDIR/lux}"
APPEND="$(dirname "$LUX_BIN")/t/2901-append-events"
SUB="$LUX_SRCDIR/tools/lux_subscribe.py"
FOREIGN="$LUX_SRCDIR/t/2901-foreign.py"
if [ ! -x "$LUX_BIN" ] || [ ! -x "$APPEND" ]; then
    echo "Bail out! $LUX_BIN or $APPEND is missing (run make check)"
    exit 255
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/lux-2901.XXXXXX") || exit 255
CLUSTERS=
PIDS=
FAILED=0
N=0

cleanup() {
    for pid in $PIDS; do kill "$pid" 2>/dev/null; done
    for pid in $PIDS; do wait "$pid" 2>/dev/null; done
    for dir in $CLUSTERS; do "$LUX_BIN" stop --dir "$dir" >/dev/null 2>&1; done
    if [ "$FAILED" = 0 ] && [ -z "$LUX_KEEP" ]; then rm -rf "$T"; else echo "# kept $T" >&2; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ok() { # ok STATUS DESCRIPTION [FILE whose tail explains a failure]
    N=$((N + 1))
    if [ "$1" = 0 ]; then
        echo "ok $N - $2"
    else
        echo "not ok $N - $2"
        FAILED=$((FAILED + 1))
        [ -n "$3" ] && [ -f "$3" ] && tail -n 5 "$3" | sed 's/^/#   /'
    fi
}

# started PID / finished PID: the background processes cleanup may kill
started() { PIDS="$PIDS $1"; }
finished() {
    wait "$1"
    set -- $? "$1"
    PIDS=$(echo "$PIDS" | tr ' ' '\n' | grep -v "^$2\$" | tr '\n' ' ')
    return "$1"
}

# count FILE SHARD: lines of FILE (JSON events) for SHARD
count() { grep -c "^{\"shard\": $2," "$1"; }

# tail_of DIR SHARD: "pid index" of the shard's tail
tail_of() {
    "$LUX_BIN" status --dir "$1" --json | "$PY" -c '
import json, sys
for c in json.load(sys.stdin)["components"]:
    if c["kind"] == "replica" and c["shard"] == int(sys.argv[1]) and c["role"] in ("tail", "head+tail"):
        print(c["pid"], c["index"])' "$2"
}

echo "1..19"
start=$(date +%s)

# --- the page's own example ----------------------------------------------------------
"$PY" "$FOREIGN" example "$LUX_SRCDIR/doc/protocol.md" 2>"$T/example.err"
ok $? "the worked example of doc/protocol.md 7.1 recomputes" "$T/example.err"

# --- a cluster, and known events from the C client ---------------------------------
# --log-only: no node manager, so the shards hold only the events appended here
D=$T/c
"$LUX_BIN" start --head --log-only --dir "$D" --shards 2 --replicas 3 --heartbeat-ms 50 --dead-ms 400 \
    >"$T/start.out" 2>&1
rc=$?
[ $rc = 0 ] && CLUSTERS="$D"
ok $rc "a cluster of 2 shards x 3 replicas starts" "$T/start.out"
[ $rc = 0 ] || exit 1

"$APPEND" --dir "$D" --count 60 --tag one >"$T/one.jsonl" 2>"$T/one.err"
ok $? "the C client appends 60 events of every shape" "$T/one.err"

for s in 0 1; do
    n=$(count "$T/one.jsonl" $s)
    timeout 60 "$PY" "$SUB" --dir "$D" --shard $s --count "$n" --json --timeout 20 \
        >"$T/sub$s.jsonl" 2>"$T/sub$s.err" &&
        "$PY" "$FOREIGN" seqs "$T/sub$s.jsonl" "$n" 2>>"$T/sub$s.err" &&
        "$PY" "$FOREIGN" compare "$T/one.jsonl" "$T/sub$s.jsonl" $s 2 2>>"$T/sub$s.err"
    ok $? "shard $s: the subscriber decodes all $n events, fields equal, chain verified from the genesis" \
        "$T/sub$s.err"
done

n0=$(count "$T/one.jsonl" 0)
k=$((n0 / 2))
timeout 60 "$PY" "$SUB" --dir "$D" --shard 0 --from $k --count $((n0 - k)) --json --timeout 20 \
    >"$T/from.jsonl" 2>"$T/from.err" &&
    [ "$(sed -n '1s/.*"seq": \([0-9]*\),.*/\1/p' "$T/from.jsonl")" = $((k + 1)) ] &&
    "$PY" "$FOREIGN" compare "$T/one.jsonl" "$T/from.jsonl" 0 2 $k 2>>"$T/from.err"
ok $? "shard 0: --from $k starts at seq $((k + 1)), anchored on the hash of seq $k" "$T/from.err"

# --- appending by hand ------------------------------------------------------------------
"$PY" "$FOREIGN" append "$D" >"$T/foreign.jsonl" 2>"$T/foreign.err"
ok $? "a hand-made APPEND is acknowledged; a resend is idempotent; EGAP and ESTATE as documented" \
    "$T/foreign.err"
"$PY" "$FOREIGN" probe "$D" 2>"$T/probe.err"
ok $? "malformed HELLO, HEARTBEAT and JOIN get EPROTO; an ERROR names the READ or APPEND it answers" \
    "$T/probe.err"

rc=0
for s in 0 1; do
    first=$(grep "^{\"shard\": $s," "$T/foreign.jsonl" | head -n 1 | sed 's/.*"seq": \([0-9]*\).*/\1/')
    timeout 60 "$PY" "$SUB" --dir "$D" --shard $s --from $((first - 1)) --count 4 --json --timeout 20 \
        >"$T/fsub$s.jsonl" 2>>"$T/fsub.err" &&
        "$PY" "$FOREIGN" compare "$T/foreign.jsonl" "$T/fsub$s.jsonl" $s 2 2>>"$T/fsub.err" || rc=1
done
ok $rc "the hand-made events are in the shards of their keys, exactly as appended" "$T/fsub.err"

# --- following live while the tail is killed ------------------------------------------
"$PY" "$SUB" --dir "$D" --shard 0 --json --timeout 30 >"$T/live.jsonl" 2>"$T/live.err" &
SUBPID=$!
started $SUBPID
"$APPEND" --dir "$D" --count 400 --tag two --spread-ms 3000 >"$T/two.jsonl" 2>"$T/two.err" &
APID=$!
started $APID
sleep 1.5
set -- $(tail_of "$D" 0)
old_pid=$1 old_index=$2
rc=1
if [ -n "$old_pid" ] && [ "$old_pid" != 0 ]; then kill -9 "$old_pid" && rc=0; fi
ok $rc "shard 0's tail (replica $old_index, pid $old_pid) killed with -9 while events flow"
finished $APID
ok $? "the C client's 400 events are all acknowledged across the tail change" "$T/two.err"

# everything is acknowledged: the tail's last seq is the shard's
total=$("$PY" "$FOREIGN" last "$D" 0 2>>"$T/live.err")
[ -n "$total" ] || total=$((n0 + 4 + $(count "$T/two.jsonl" 0)))
i=0
while [ "$(wc -l <"$T/live.jsonl")" -lt $total ] && kill -0 $SUBPID 2>/dev/null && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
done
kill -0 $SUBPID 2>/dev/null
alive=$?
kill $SUBPID 2>/dev/null
finished $SUBPID
[ $alive = 0 ] && "$PY" "$FOREIGN" seqs "$T/live.jsonl" $total 2>>"$T/live.err"
ok $? "the live subscriber saw seqs 1..$total (the tail's last) exactly once, chain verified" \
    "$T/live.err"

# it must have moved away from the killed tail, not only read at the end
grep -q "tail is replica" "$T/live.err" &&
    [ "$(grep -c "tail is replica" "$T/live.err")" -ge 2 ] &&
    "$PY" "$FOREIGN" compare "$T/two.jsonl" "$T/live.jsonl" 0 2 2>>"$T/live.err"
ok $? "it followed the new tail ($(grep -c "tail is replica" "$T/live.err") tails) and decoded the live events" \
    "$T/live.err"

# --- CURVE on tcp -------------------------------------------------------------------------
# a free pair of ports (the master's and its PUB's); another program may
# take them before lux does, so try a few
D2=$T/tcp
rc=1
for try in 1 2 3; do
    port=$("$PY" -c '
import random, socket
for _ in range(200):
    p = random.randrange(20000, 60000, 2)
    try:
        for q in (p, p + 1):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass')
    rm -rf "$D2"
    if "$LUX_BIN" start --head --log-only --dir "$D2" --shards 1 --replicas 2 --listen tcp://127.0.0.1 \
        --port "$port" --heartbeat-ms 50 --dead-ms 400 >"$T/tcp.out" 2>&1; then
        CLUSTERS="$CLUSTERS $D2"
        rc=0
        break
    fi
done
[ $rc = 0 ] &&
    "$APPEND" --dir "$D2" --count 12 --tag tcp >"$T/tcp.jsonl" 2>>"$T/tcp.out" &&
    timeout 60 "$PY" "$SUB" --dir "$D2" --shard 0 --count 12 --json --timeout 20 \
        >"$T/tcpsub.jsonl" 2>>"$T/tcp.out" &&
    "$PY" "$FOREIGN" compare "$T/tcp.jsonl" "$T/tcpsub.jsonl" 0 1 2>>"$T/tcp.out"
ok $? "over tcp with the cluster's CURVE key pair: 12 events decoded" "$T/tcp.out"

mkdir -p "$T/nokey/keys" && cp "$D2/cluster.conf" "$T/nokey/" &&
    "$PY" -c '
import sys, zmq
pub, sec = zmq.curve_keypair()
open(sys.argv[1], "w").write("curve\n    public-key = \"%s\"\n    secret-key = \"%s\"\n"
                             % (pub.decode(), sec.decode()))' "$T/nokey/keys/cluster.cert_secret"
"$PY" "$SUB" --dir "$T/nokey" --shard 0 --count 1 --timeout 2 >"$T/nokey.jsonl" 2>"$T/nokey.out"
[ $? = 6 ] && [ ! -s "$T/nokey.jsonl" ]
ok $? "with another key pair nothing is answered (timeout, status 6)" "$T/nokey.out"

# --- a misbehaving tail --------------------------------------------------------------------
for m in ok:0 badhash:4 gap:3 proto:5; do
    mode=${m%:*} want=${m#*:}
    mkdir -p "$T/fake-$mode"
    "$PY" "$FOREIGN" fake "$T/fake-$mode" "$mode" 2>"$T/fake-$mode.err" &
    FPID=$!
    started $FPID
    j=0
    while [ ! -S "$T/fake-$mode/sock/r0.0-pub" ] && [ $j -lt 100 ]; do sleep 0.05; j=$((j + 1)); done
    "$PY" "$SUB" --dir "$T/fake-$mode" --shard 0 --count 5 --timeout 5 >"$T/fake-$mode.out" \
        2>>"$T/fake-$mode.err"
    got=$?
    kill $FPID 2>/dev/null
    finished $FPID
    [ $got = "$want" ]
    ok $? "a fake tail ($mode): the subscriber exits with status $want (got $got)" "$T/fake-$mode.err"
done

echo "# $(($(date +%s) - start)) s"
[ $FAILED = 0 ]
