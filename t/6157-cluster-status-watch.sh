#!/bin/sh
# 6157-cluster-status-watch: `lux status --watch[=SECS]`, the live view of
# issue 28: the status again every SECS until Ctrl-C (SIGINT, exit 0), each
# frame ending in a line with the time, the events the log holds and how
# many were appended a second since the frame before, the nodes' table
# with a column of the tasks each finished a second. From the head's
# directory, from a node's, and by --address with the token; --json gives
# one document a frame; a wrong SECS is a usage error; a head that goes
# away while a node watches is said in the frame and the watch goes on.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'for p in $W1 $W2 $W3 $W4; do kill -9 $p 2>/dev/null; done; cluster_down; tap_cleanup' EXIT
export LUX_NODE_DEAD_MS=2000
MOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"

cluster_head --workers 1 --store-mb 32
ok $CL_RC "the head starts" || diag "$CL_OUT"

for bad in abc 0 -1 1e9 2x; do
    run "$LUX" status --dir "$CL_DIR/head" --watch="$bad"
    ok $([ $rc -eq 2 ] && echo 0 || echo 1) "--watch=$bad is a usage error (status $rc)"
done
like "$err" "--watch=SECS: a number of seconds, 0.1 to 86400" "which names the option and its range"

# frames: the count of footers in FILE
frames() { grep -c '^[0-9][0-9]:[0-9][0-9]:[0-9][0-9]: the log holds [0-9]* event' "$1"; }
# wait_frames FILE N: until FILE has N frames (30 s at most)
wait_frames() {
    _i=0
    while [ "$(frames "$1")" -lt "$2" ] && [ $_i -lt 300 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    [ "$(frames "$1")" -ge "$2" ]
}
# stop_watch PID: SIGINT, as Ctrl-C; its status in $rc (127: still running after 10 s)
stop_watch() {
    kill -INT "$1"
    _i=0
    while kill -0 "$1" 2>/dev/null && [ $_i -lt 100 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    if kill -0 "$1" 2>/dev/null; then
        rc=127
    else
        wait "$1"
        rc=$?
    fi
}

"$LUX" status --dir "$CL_DIR/head" --watch=0.3 >"$TAP_TMP/w1" 2>&1 &
W1=$!
wait_frames "$TAP_TMP/w1" 2
ok $? "the head's watch shows a frame every 0.3 s"
first=$(grep -o 'the log holds [0-9]*' "$TAP_TMP/w1" | head -1 | grep -o '[0-9]*$')
# a node joins while it watches: node_joined (and its module events) are appended
cluster_join 1 --workers 1 --store-mb 32
ok $CL_RC "node 1 joins while the head watches" || diag "$CL_OUT"
n1=$(cut -c1-12 "$CL_DIR/n1/run/node.joined")
_i=0
while ! grep -q "^$n1 alive" "$TAP_TMP/w1" && [ $_i -lt 300 ]; do
    sleep 0.1
    _i=$((_i + 1))
done
grep -q "^$n1 alive" "$TAP_TMP/w1"
ok $? "a later frame lists node 1 alive"
grep -q '^node .* queue done/s why$' "$TAP_TMP/w1"
ok $? "the nodes' table has a column of tasks done a second"
out=$("$LUX" run --address "$CL_DIR/n1" "$MOD" where 50 CPU=1 2>&1)
ok $? "50 tasks run on node 1" || diag "$out"
# done/s is the 10th column (no other has a space)
_i=0
while ! awk -v n="$n1" '$1 == n && $10 + 0 > 0 { f = 1 } END { exit !f }' "$TAP_TMP/w1" &&
    [ $_i -lt 300 ]; do
    sleep 0.1
    _i=$((_i + 1))
done
awk -v n="$n1" '$1 == n && $10 + 0 > 0 { f = 1 } END { exit !f }' "$TAP_TMP/w1"
ok $? "a frame shows node 1's tasks done a second" ||
    diag "$(grep -e '^node ' -e "^$n1" "$TAP_TMP/w1" | tail -4)"
awk -v n="$n1" '$1 == n && $10 != "-" && $10 !~ /^[0-9]+$/ { f = 1 } END { exit f }' "$TAP_TMP/w1"
ok $? "its column holds a count or - and nothing else"
n=$(frames "$TAP_TMP/w1")
wait_frames "$TAP_TMP/w1" $((n + 1))
last=$(grep -o 'the log holds [0-9]*' "$TAP_TMP/w1" | tail -1 | grep -o '[0-9]*$')
ok $([ "$last" -gt "$first" ] && echo 0 || echo 1) "the count of events grew: $first, then $last"
grep -q 'the log holds [0-9]* events, [1-9][0-9]* appended a second' "$TAP_TMP/w1"
ok $? "a frame says how many events were appended a second" ||
    diag "$(grep 'the log holds' "$TAP_TMP/w1")"
grep -q 'again every 0.3 s, Ctrl-C ends it' "$TAP_TMP/w1"
ok $? "and how often it repeats, and how to end it"
stop_watch $W1
is "$rc" 0 "Ctrl-C (SIGINT) ends the watch with status 0"
W1=

"$LUX" status --dir "$CL_DIR/n1" --watch=0.2 --json >"$TAP_TMP/w2" 2>&1 &
W2=$!
"$LUX" status --address "$CL_ADDRESS" --token-file "$CL_TOKEN" --watch=0.2 >"$TAP_TMP/w3" 2>&1 &
W3=$!
wait_frames "$TAP_TMP/w3" 3
ok $? "a watch by --address with the token shows frames" || diag "$(cat "$TAP_TMP/w3")"
grep -q "^$n1 alive" "$TAP_TMP/w3"
ok $? "and lists node 1"
_i=0
while [ "$(grep -c '^{"cluster"' "$TAP_TMP/w2")" -lt 3 ] && [ $_i -lt 300 ]; do
    sleep 0.1
    _i=$((_i + 1))
done
docs=$(grep -c '^{"cluster"' "$TAP_TMP/w2")
ok $([ "$docs" -ge 3 ] && echo 0 || echo 1) "--json from a node's directory: one document a frame ($docs)"
stop_watch $W2
is "$rc" 0 "the JSON watch ends with status 0"
W2=
if command -v python3 >/dev/null 2>&1; then
    python3 - "$TAP_TMP/w2" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
dec, i, n = json.JSONDecoder(), 0, 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i == len(text):
        break
    doc, i = dec.raw_decode(text, i)
    assert any(x["state"] == "alive" for x in doc["nodes"]), doc
    n += 1
assert n >= 3, n
PY
    ok $? "each document parses, with the nodes in it"
else
    skip "python3 is not here to parse the documents"
fi
grep -q 'the log holds' "$TAP_TMP/w2"
ok $([ $? -ne 0 ] && echo 0 || echo 1) "no text line among the JSON documents"

# the head goes away while node 1 watches: said, and the watch goes on
"$LUX" status --dir "$CL_DIR/n1" --watch=0.2 >"$TAP_TMP/w4" 2>&1 &
W4=$!
wait_frames "$TAP_TMP/w4" 1
ok $? "node 1's own watch shows a frame"
stop_watch $W3
W3=
out=$("$LUX" stop --dir "$CL_DIR/head" 2>&1)
ok $? "the head stops: $out"
_i=0
while ! grep -q '^lux status: ' "$TAP_TMP/w4" && [ $_i -lt 300 ]; do
    sleep 0.1
    _i=$((_i + 1))
done
grep '^lux status: ' "$TAP_TMP/w4" | head -1 >"$TAP_TMP/why"
ok $([ -s "$TAP_TMP/why" ] && echo 0 || echo 1) "a frame says the head does not answer: $(cat "$TAP_TMP/why")"
kill -0 $W4 2>/dev/null
ok $? "and the watch goes on"
stop_watch $W4
is "$rc" 0 "until Ctrl-C"
W4=
done_testing
