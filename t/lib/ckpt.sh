# ckpt.sh - what the tests of a remote actor placed again from its
# checkpoint (t/6073, t/3169) share. Sourced instead of cluster_test.sh:
# a head without the resource disk and two nodes with it (dead after
# 1.5 s: LUX_NODE_DEAD_MS); actormod's "ckpt" counter (checkpoint_every 3,
# add(1) ... add(5), then add(6) ... add(10) once $TAP_TMP/go2 exists).
#
#   ckpt_counts FILE      a run's counts, without its "at DIR" lines
#   ckpt_start ARGS...    the counter's driver (actormod ckpt ctr disk=1 3 5
#                         $TAP_TMP/go2 ARGS) in the background, until its
#                         first five calls and its checkpoint after call 3
#                         are logged (3 checks); sets drv, held (the node
#                         holding the counter), other, aid (its ID)
#   ckpt_kill WANT        kill -9 node $held, let the driver go on, and
#                         check that its counts are WANT and that it ended
#                         on node $other, placed again from the checkpoint
#                         of call 3 (6 checks)
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
CL_ON_EXIT='touch "$TAP_TMP/go1" "$TAP_TMP/go2"'
MOD=$(cluster_mod actormod)

cluster_up -d 1500 CPU=1 CPU=1,disk=1 CPU=1,disk=1

ckpt_counts() { grep -v '^at ' "$1" | tr '\n' ' '; }

ckpt_start() {
    "$LUX" run --address "$CL_DIR/head" "$MOD" ckpt ctr disk=1 3 5 "$TAP_TMP/go2" "$@" \
        >"$TAP_TMP/ctr" 2>&1 &
    drv=$!
    CL_DRIVERS="$CL_DRIVERS $drv"
    cluster_wait_file "$TAP_TMP/go2.ready" 180
    ok $? "the driver made its first five calls${1:+ and its puts}" || diag "$(cat "$TAP_TMP/ctr")"
    held=$(sed -n "s|^at $CL_DIR/n\([12]\)\$|\1|p" "$TAP_TMP/ctr" | head -n 1)
    ok $([ -n "$held" ]; echo $?) "its counter lives on node ${held:-?}" ||
        diag "$(cat "$TAP_TMP/ctr")"
    held=${held:-1}
    other=$((3 - held))
    # the counter's ID, from its creation's record
    cluster_wait_sql "SELECT lower(hex(actor)) FROM event WHERE kind = 11 AND info LIKE 'name=ctr%'" \
        "" 30
    aid=$(echo "$CL_SQL" | tail -n 1)
    # its checkpoint of call 3 is on record before the kill
    cluster_wait_sql "SELECT idx FROM event WHERE kind = 13 AND lower(hex(actor)) = '$aid'" "3" 60
    ok $? "the checkpoint after call 3 is logged" || diag "$CL_SQL"
}

ckpt_kill() {
    cluster_kill_node "$held"
    ok $? "kill -9 node $held, which holds the counter"
    touch "$TAP_TMP/go2"
    cluster_wait_file "$TAP_TMP/go2.done" 180
    ok $? "the later calls are answered" || diag "$(cat "$TAP_TMP/ctr")"
    wait $drv
    ok $? "the driver ends" || diag "$(cat "$TAP_TMP/ctr")"
    is "$(ckpt_counts "$TAP_TMP/ctr")" "$1" "the counts are those of a run without the kill"
    is "$(sed -n 's/^at //p' "$TAP_TMP/ctr" | tail -n 1)" "$CL_DIR/n$other" \
        "... the last answered by node $other, where it was placed again"
    cluster_wait_sql "SELECT restart, checkpoint_call, calls_replayed FROM actor_restarts
        WHERE actor_id = '$aid'" "1,3,2" 30
    ok $? "actor_restarts: restart 1 from the checkpoint of call 3, calls 4-5 re-applied" ||
        diag "$CL_SQL"
}
