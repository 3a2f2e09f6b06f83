#!/bin/sh
# 6159-cluster-actor-replay-once: a call of a third node in flight when the
# node holding its actor dies is applied once after the actor is made
# again elsewhere. A head and two nodes, dead after 5 s; node 1 alone has
# w; a counter needing w is homed on the head (its driver there, one add:
# count 1). A driver on node 2 (a handle) calls addslow(1), add after 2 s;
# node 1 logs the call and hands it to the counter, and is killed -9 1 s
# later, the call in flight, then started again once the head logged it
# dead. The home makes the counter there again and re-applies the calls
# the log has after its checkpoint (none: from its constructor), that
# call included (its result
# dropped: the home thinks it answered); node 2's handle finds the dead
# node and sends its call again. The count after it must be 2, and the
# home's next add must answer 3; and node 1 must count every call it took
# as ended (the re-applied ones were counted submitted and never finished:
# it never looked idle).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
GO="$TAP_TMP/go"
CL_ON_EXIT='touch "$GO" "$GO.end"'
export LUX_NODE_DEAD_MS=5000

cluster_up CPU=1 CPU=1,w=1 CPU=1

"$LUX" run --address "$CL_DIR/head" "$MOD" own ctr w=1 1 1 "$GO" >"$TAP_TMP/own" 2>&1 &
own=$!
CL_DRIVERS="$CL_DRIVERS $own"
cluster_wait_file "$GO".ready 120
like "$(cat "$TAP_TMP/own")" "$CL_DIR/n1 1" "a counter needing w, homed on the head, held by node 1, counts 1" ||
    diag "$(cat "$TAP_TMP/own")"
"$LUX" run --address "$CL_DIR/n2" "$MOD" slow ctr "$TAP_TMP/s" >"$TAP_TMP/slow" 2>&1 &
slow=$!
CL_DRIVERS="$CL_DRIVERS $slow"
cluster_wait_file "$TAP_TMP/s.called" 60
ok $? "a driver on node 2 calls addslow(1)" || diag "$(cat "$TAP_TMP/slow")"
cluster_wait_value "SELECT count(*) FROM actor_calls WHERE method = 'addslow'" 1 30
ok $? "... node 1 logs it" || diag "$CL_SQL"
sleep 0.5
id1=$(cat "$CL_DIR/n1/run/node.joined")
cluster_kill_node 1
ok $? "kill -9 node 1 while the counter applies it"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'node_died' AND node_id = '$id1'" 1 60
ok $? "the head logs node 1 dead (node_died)"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,w=1
ok $CL_RC "node 1 starts again in its directory" || diag "$CL_OUT"
wait $slow
ok $? "node 2's call is answered" || diag "$(cat "$TAP_TMP/slow")"
is "$(cat "$TAP_TMP/slow")" "$CL_DIR/n1 2" "... applied once: the count is 2, from the new node 1"
touch "$GO"
cluster_wait_file "$GO".done 120
is "$(tail -n 1 "$TAP_TMP/own")" "$CL_DIR/n1 3" "the home's next add answers 3" ||
    diag "$(cat "$TAP_TMP/own")"
touch "$GO".end
wait $own
ok $? "the counter's driver on the head ends well" || diag "$(cat "$TAP_TMP/own")"
# node 1's counts, as its heartbeat gives them to the head: "SUBMITTED DONE"
counts() {
    "$LUX" status --dir "$CL_DIR/head" --json 2>/dev/null | tr '{' '\n' |
        grep "\"dir\": \"$CL_DIR/n1\"" | grep '"state": "alive"' | awk '{
            s = $0; sub(/.*"submitted": /, "", s); sub(/[^0-9].*/, "", s)
            f = $0; sub(/.*"finished": /, "", f); sub(/[^0-9].*/, "", f)
            x = $0; sub(/.*"failed": /, "", x); sub(/[^0-9].*/, "", x)
            print s, f + x }'
}
i=0
while c=$(counts) && [ "$(echo "$c" | awk '{ print ($1 != "" && $1 == $2) }')" != 1 ] && [ $i -lt 150 ]; do
    sleep 0.2
    i=$((i + 1))
done
ok $(echo "$c" | awk '{ exit !($1 != "" && $1 == $2) }'; echo $?) \
    "node 1 counts every call it took finished or failed (submitted, ended: $c)" ||
    diag "$("$LUX" status --dir "$CL_DIR/head" --json | tr '{' '\n' | grep "$CL_DIR/n1\"")"
done_testing
