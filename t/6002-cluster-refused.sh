#!/bin/sh
# 6002-cluster-refused: a machine without the cluster's keys does not
# join. `lux start --address` without a token, with another cluster's
# token, with a token others may read, or with a key pair that does not
# match, is refused with a message that says why, starts no daemon, and
# leaves no node_joined in the head's log; `lux status --address` with
# another cluster's token gets nothing. (t/6003 checks every tcp endpoint
# of a running cluster by its CURVE handshake.)
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
other=
trap '[ -n "$other" ] && "$LUX" stop --dir "$TAP_TMP/other" >/dev/null 2>&1; cluster_down; tap_cleanup' EXIT

cluster_head --workers 1 --store-mb 32
ok $CL_RC "the head starts on $CL_ADDRESS"
# another cluster, on another port: its token is a valid one, of the wrong cluster
port2=$((CL_PORT + 5)) # the head takes CL_PORT to CL_PORT+4 (+4: the bulk port of pulls)
out=$("$LUX" start --head --dir "$TAP_TMP/other" --listen tcp://127.0.0.1 --port $port2 \
    --log-only 2>&1)
ok $? "another cluster's head starts (port $port2)"
other=1
# --log-only writes no token: make one from its keys as the head would
sh_token() { # the token of the cluster in $1
    printf 'cluster %s\nshards 1\nreplicas 1\nhead x\npublic %s\nsecret %s\n' \
        "$(sed -n 's/^cluster //p' "$1/cluster.conf")" \
        "$(sed -n 's/^ *public-key = "\(.*\)"/\1/p' "$1/keys/cluster.cert")" \
        "$(sed -n 's/^ *secret-key = "\(.*\)"/\1/p' "$1/keys/cluster.cert_secret")"
}
sh_token "$TAP_TMP/other" >"$TAP_TMP/other.token"
chmod 600 "$TAP_TMP/other.token"
like "$(cat "$TAP_TMP/other.token")" "secret " "a token of the other cluster"

out=$("$LUX" start --address "$CL_ADDRESS" --dir "$TAP_TMP/n1" --node-ip 127.0.0.2 2>&1)
ok $([ $? -eq 1 ] && echo 0 || echo 1) "no token: refused"
like "$out" "needs the cluster's token" "and it says so: $out"

out=$("$LUX" start --address "$CL_ADDRESS" --dir "$TAP_TMP/n2" --node-ip 127.0.0.3 \
    --token-file "$TAP_TMP/other.token" 2>&1)
ok $([ $? -eq 1 ] && echo 0 || echo 1) "another cluster's token: refused"
like "$out" "did not answer" "the head's endpoint does not answer a wrong key: $out"
ok $([ ! -f "$TAP_TMP/n2/run/node.pid" ] && echo 0 || echo 1) "no node daemon was started"

cp "$CL_TOKEN" "$TAP_TMP/open.token"
chmod 644 "$TAP_TMP/open.token"
out=$("$LUX" start --address "$CL_ADDRESS" --dir "$TAP_TMP/n3" --node-ip 127.0.0.4 \
    --token-file "$TAP_TMP/open.token" 2>&1)
ok $([ $? -eq 1 ] && echo 0 || echo 1) "a token others may read: refused"
like "$out" "readable by others" "and it says so: $out"

# the cluster's public key with the other cluster's secret key
{ grep -v '^secret ' "$CL_TOKEN"; grep '^secret ' "$TAP_TMP/other.token"; } >"$TAP_TMP/mixed.token"
chmod 600 "$TAP_TMP/mixed.token"
out=$("$LUX" start --address "$CL_ADDRESS" --dir "$TAP_TMP/n4" --node-ip 127.0.0.5 \
    --token-file "$TAP_TMP/mixed.token" 2>&1)
ok $([ $? -eq 1 ] && echo 0 || echo 1) "a key pair that does not match: refused"
like "$out" "not the secret key's" "and it says so: $out"

out=$("$LUX" status --address "$CL_ADDRESS" --token-file "$TAP_TMP/other.token" 2>&1)
ok $([ $? -ne 0 ] && echo 0 || echo 1) "lux status --address with another cluster's token gets nothing"
like "$out" "did not answer" "...and says so: $out"

out=$("$LUX" start --address "$CL_ADDRESS" --dir "$TAP_TMP/n5" --node-ip 127.0.0.6 \
    --token-file "$CL_TOKEN" 2>&1)
ok $? "the cluster's own token joins: $out"
CL_NODES="5"
cnt=$("$LUX" sql --dir "$TAP_TMP/head" --csv "SELECT count(*) AS n FROM nodes" | tail -1)
is "$cnt" 2 "the log holds the head's node and that one, no other"

done_testing
