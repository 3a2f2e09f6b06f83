#!/bin/sh
# 9002-tcp-wildcard: a head started with --listen tcp://0.0.0.0 (every
# interface) advertises endpoints that peers can connect to: the
# machine's address, never 0.0.0.0; and a client on another machine works
# through them (it appends through the chain, it subscribes at the tail).
#
# The "machines" are two private network namespaces joined by a veth
# pair: the cluster's (unshare -n) holds 198.51.100.7, the client's
# 198.51.100.8 (TEST-NET-2, a documentation range; no packet leaves
# them). The client connects only to what CONFIG tells it: an endpoint
# at 0.0.0.0 would reach the client's own namespace, where nothing
# listens, so its appends would go unacknowledged. Skips where the
# namespaces cannot be made (no unshare, no user namespaces, no veth).
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

if [ "$1" != "--in-netns" ]; then
    for how in "-n" "-rn"; do
        if unshare $how true 2>/dev/null && unshare $how ip link show lo >/dev/null 2>&1; then
            exec unshare $how sh "$0" --in-netns
        fi
    done
    skip_all "cannot make a network namespace here (unshare -n, iproute2)"
fi
ADDR=198.51.100.7   # the cluster's machine
PEER=198.51.100.8   # the client's machine

# The client's namespace is held by a process of its own (no ip netns:
# that needs /run/netns); peer CMD runs CMD in it.
holder=
trap '[ -n "$holder" ] && kill "$holder" 2>/dev/null' EXIT
unshare -n sleep 3600 &
holder=$!
peer() { nsenter -t "$holder" -n "$@"; }
tries=0
self_ns=$(readlink /proc/$$/ns/net)
while ns=$(readlink "/proc/$holder/ns/net" 2>/dev/null) && [ "$ns" = "$self_ns" ]; do
    tries=$((tries + 1))
    [ $tries -lt 100 ] || break
    sleep 0.05
done
[ -n "$ns" ] && [ "$ns" != "$self_ns" ] ||
    skip_all "cannot make a second network namespace (unshare -n)"
ip link set lo up &&
    ip link add lux0 type veth peer name lux1 &&
    ip addr add $ADDR/24 dev lux0 && ip link set lux0 up &&
    ip link set lux1 netns "$holder" &&
    peer ip link set lo up && peer ip addr add $PEER/24 dev lux1 && peer ip link set lux1 up ||
    skip_all "cannot join two network namespaces by a veth pair (ip link, nsenter)"

LUX=${LUX_BIN:-./lux}
APPEND="${LUX_BUILDDIR:-$(dirname "$LUX")}/t/2901-append-events"
SUB=${LUX_SRCDIR:-.}/tools/lux_subscribe.py
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
trap '"$LUX" stop --dir "$D" >/dev/null 2>&1; kill "$holder" 2>/dev/null; tap_cleanup' EXIT

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

# The client's view of the cluster, as on another machine: the same
# cluster.conf and keys, with the head's address to find the master by.
C=$tmp/client
mkdir -p "$C" && cp -R "$D/keys" "$C/keys" &&
    sed "s|^listen .*|listen tcp://$ADDR|" "$D/cluster.conf" >"$C/cluster.conf"
ok $? "a client's copy of the cluster's settings names the master at $ADDR"

if [ -x "$APPEND" ]; then
    peer timeout -s KILL 60 "$APPEND" --dir "$C" --count 20 --tag wild >"$tmp/app.jsonl" \
        2>"$tmp/app.err"
    rc=$?
    ok $rc "20 events appended from $PEER and acknowledged through the advertised endpoints"
    [ $rc -eq 0 ] || sed 's/^/# /' "$tmp/app.err"
else
    ok 1 "$APPEND is missing (run make check)"
fi

PY=
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import zmq' >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -n "$PY" ]; then
    peer timeout -s KILL 60 "$PY" "$SUB" --dir "$C" --shard 0 --count 20 --timeout 20 \
        >"$tmp/sub.out" 2>"$tmp/sub.err"
    ok $? "the Python subscriber at $PEER reads them from the tail's advertised endpoints"
    is "$(wc -l <"$tmp/sub.out")" 20 "it printed the 20 events"
else
    skip "no python3 with zmq: the Python subscriber"
fi

"$LUX" stop --dir "$D" >/dev/null 2>&1
ok $? "the head stops"
done_testing
