#!/bin/sh
# 9002-tcp-wildcard: a head started with --listen tcp://0.0.0.0 (every
# interface) advertises endpoints that peers can connect to: the
# machine's address, never 0.0.0.0; and the cluster works through them
# (the chain links, an appending client, a subscriber).
#
# It runs in a private network namespace of its own (unshare -n), with
# the loopback and one veth interface holding 198.51.100.7 (TEST-NET-2,
# a documentation range): the machine's address there is known, and no
# packet leaves the namespace. Skips where a namespace cannot be made.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

if [ "$1" != "--in-netns" ]; then
    for how in "-n" "-rn"; do
        if unshare $how true 2>/dev/null && unshare $how ip link show lo >/dev/null 2>&1; then
            exec unshare $how sh "$0" --in-netns
        fi
    done
    skip_all "cannot make a network namespace here (unshare -n, iproute2)"
fi
ip link set lo up &&
    ip link add lux0 type veth peer name lux1 &&
    ip addr add 198.51.100.7/24 dev lux0 &&
    ip link set lux0 up && ip link set lux1 up ||
    skip_all "cannot make a veth interface in the namespace"
ADDR=198.51.100.7

LUX=${LUX_BIN:-./lux}
APPEND="$(dirname "$LUX")/t/2901-append-events"
SUB=${LUX_SRCDIR:-.}/tools/lux_subscribe.py
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
trap '"$LUX" stop --dir "$D" >/dev/null 2>&1; tap_cleanup' EXIT

# the namespace is ours: the default master port is free
"$LUX" start --head --log-only --dir "$D" --shards 1 --replicas 2 --listen tcp://0.0.0.0 \
    --heartbeat-ms 50 --dead-ms 400 >"$tmp/start.out" 2>&1
ok $? "a head listening on tcp://0.0.0.0 starts"
like "$(cat "$tmp/start.out")" "chain master at tcp://$ADDR:7379" \
    "lux start names the master by the machine's address"

"$LUX" status --dir "$D" --json >"$tmp/status.json" 2>&1
eps=$(grep -o '"\(append\|chain\|read\|pub\)": "[^"]*"' "$tmp/status.json")
is "$(echo "$eps" | grep -c "\"tcp://$ADDR:[0-9][0-9]*\"")" 8 \
    "all 8 replica endpoints are advertised at $ADDR with their ports"
is "$(echo "$eps" | grep -c '0\.0\.0\.0')" 0 "none at 0.0.0.0"

if [ -x "$APPEND" ]; then
    "$APPEND" --dir "$D" --count 20 --tag wild >"$tmp/app.jsonl" 2>"$tmp/app.err"
    ok $? "20 events appended and acknowledged through the chain's advertised endpoints"
else
    ok 1 "$APPEND is missing (run make check)"
fi

PY=
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import zmq' >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -n "$PY" ]; then
    timeout 60 "$PY" "$SUB" --dir "$D" --shard 0 --count 20 --timeout 20 >"$tmp/sub.out" \
        2>"$tmp/sub.err"
    ok $? "the Python subscriber reads them from the tail's advertised endpoints"
fi

"$LUX" stop --dir "$D" >/dev/null 2>&1
ok $? "the head stops"
done_testing
