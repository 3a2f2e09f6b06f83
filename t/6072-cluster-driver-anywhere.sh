#!/bin/sh
# 6072-cluster-driver-anywhere: `lux run --address HOST:PORT --token-file F`
# (tools/lux_run_remote.c). A head (CPU=1) and node 1 (CPU=1, disk=1) on
# loopback addresses. A driver on the head creates a named counter (it
# lives on the head); a second driver, run through the cluster's address
# with the token (its own node joins as 127.0.0.3, without CPUs), finds
# it by name and calls it: both drivers see each other's calls in one
# count. That driver's tasks run on the cluster's nodes (disk=1: node 1),
# as the tasks view says, and its node leaves when it ends. Without the
# token, or with a key pair that does not match, the driver is refused
# before it runs, saying why.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT
AMOD="${LUX_BUILDDIR:-.}/t/lib/.libs/actormod.so"
SMOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"
export LUX_FAKE_GPUS=none TMPDIR="$TAP_TMP"

cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,disk=1
ok $CL_RC "node 1 joins, with disk=1" || diag "$CL_OUT"
n1=$(cat "$CL_DIR/n1/run/node.joined")

wait_file() { # FILE: 0 once it is there (up to 120 s)
    _i=0
    while [ $_i -lt 1200 ] && [ ! -e "$1" ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    [ -e "$1" ]
}

GO="$TAP_TMP/go"
"$LUX" run --address "$CL_DIR/head" "$AMOD" own shared - 0 2 "$GO" >"$TAP_TMP/own" 2>&1 &
own=$!
wait_file "$GO.ready"
ok $? "the head's driver created the counter and called it twice" || diag "$(cat "$TAP_TMP/own")"

remote() { # lux run through the cluster's address, as from another machine
    "$LUX" run --address "$CL_ADDRESS" --token-file "$CL_TOKEN" --node-ip 127.0.0.3 "$@" 2>&1
}
out=$(remote "$AMOD" use shared 2)
ok $? "a driver through $CL_ADDRESS (with the token) finds the counter and calls it" || diag "$out"
is "$out" "$CL_DIR/head 3
$CL_DIR/head 4" "... the same counter: it counts on from the head's driver's calls"
touch "$GO" "$GO.end"
wait $own
ok $? "the head's driver ends"
is "$(tail -n 2 "$TAP_TMP/own")" "$CL_DIR/head 5
$CL_DIR/head 6" "... and its later calls count on from the other driver's"

out=$(remote "$SMOD" where 3 disk=1)
ok $? "tasks of the remote driver that need disk=1 run" || diag "$out"
is "$(echo "$out" | sort -u)" "$CL_DIR/n1" "... on node 1"
out=$(remote "$SMOD" where 2 -)
ok $? "plain tasks of the remote driver run" || diag "$out"
case "$out" in *lux-driver-*) r=1 ;; *) r=0 ;; esac
ok $r "... on the cluster's nodes, not on the driver's own node (no CPUs): $(echo $out)"
cluster_wait_sql "SELECT count(*) FROM tasks WHERE function = 's_where' AND node_id = '$n1'" \
    "3" 30
ok $? "the tasks view says node 1 ran the three disk tasks" || diag "$CL_SQL"
cluster_wait_sql "SELECT address, state FROM nodes WHERE address = '127.0.0.3'" \
    "127.0.0.3,left
127.0.0.3,left
127.0.0.3,left" 30
ok $? "each remote driver's node joined as 127.0.0.3 and left when it ended" || diag "$CL_SQL"
ok $(ls -d "$TAP_TMP"/lux-driver-* >/dev/null 2>&1 && echo 1 || echo 0) \
    "their directories are gone"

out=$("$LUX" run --address "$CL_ADDRESS" --node-ip 127.0.0.4 "$SMOD" where 1 - 2>&1)
ok $([ $? -ne 0 ]; echo $?) "without the token: refused"
like "$out" "needs the cluster's token" "... saying so: $out"
{ grep -v '^secret ' "$CL_TOKEN"; echo "secret 0000000000000000000000000000000000000000"; } \
    >"$TAP_TMP/bad.token"
chmod 600 "$TAP_TMP/bad.token"
out=$("$LUX" run --address "$CL_ADDRESS" --token-file "$TAP_TMP/bad.token" --node-ip 127.0.0.4 \
    "$SMOD" where 1 - 2>&1)
ok $([ $? -ne 0 ]; echo $?) "with a key pair that does not match: refused"
like "$out" "could not join the cluster at $CL_ADDRESS" "... saying so: $out"

done_testing
