#!/bin/sh
# 6056-cluster-noreturn: work with no return values sent to another node
# ends on the node that sent it. A head and node 2 without the resource
# disk, node 1 with it. Three tasks of no return values needing disk=1,
# submitted on the head, run on node 1; three calls with no return values
# of a counter placed on node 1 (created on the head, its home), then
# three more through a handle on node 2. Each node that sent work counts
# it finished (`lux status --json`: finished + failed = submitted) while
# its driver still lives: before, the node that ran them never said so,
# and the sender held them as running for ever (and ran them again when
# that node died).
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'touch "$TAP_TMP/go" "$TAP_TMP/go2" "$TAP_TMP/f.done"; cluster_down; tap_cleanup' EXIT
SMOD="${LUX_BUILDDIR:-.}/t/lib/.libs/schedmod.so"
AMOD="${LUX_BUILDDIR:-.}/t/lib/.libs/actormod.so"
export LUX_FAKE_GPUS=none

cluster_up CPU=1 CPU=1,disk=1 CPU=1

# settled DIR MIN: wait (up to 60 s) until the node in DIR, by its
# heartbeat, was given at least MIN tasks and calls and finished them
# all (none failed); its counts (submitted, finished, failed) in $counts
settled() {
    _end=$(($(date +%s) + 60))
    while :; do
        counts=$("$LUX" status --dir "$CL_DIR/head" --json 2>&1 | tr '{' '\n' |
            grep "\"dir\": \"$1\"" | sed -n \
            's/.*"submitted": \([0-9]*\), "finished": \([0-9]*\), "failed": \([0-9]*\).*/\1 \2 \3/p')
        set -- "$1" "$2" $counts
        [ $# -eq 5 ] && [ "$3" -ge "$2" ] && [ "$3" -eq "$4" ] && return 0
        [ "$(date +%s)" -ge $_end ] && return 1
        sleep 0.2
    done
}

"$LUX" run --address "$CL_DIR/head" "$SMOD" marks 3 disk=1 "$TAP_TMP/f" >"$TAP_TMP/marks" 2>&1 &
drv=$!
cluster_wait_file "$TAP_TMP/f"
is "$(cat "$TAP_TMP/marks")" "$CL_DIR/n1" "tasks of no return values go to node 1"
ok $([ -e "$CL_DIR/n1/marked" ]; echo $?) "... and ran there"
settled "$CL_DIR/head" 4
ok $? "the head counts them finished (submitted, finished, failed: $counts)"
touch "$TAP_TMP/f.done"
wait $drv

"$LUX" run --address "$CL_DIR/head" "$AMOD" bumps ctr disk=1 3 "$TAP_TMP/go" \
    >"$TAP_TMP/bumps" 2>&1 &
cluster_wait_file "$TAP_TMP/go.ready"
is "$(cat "$TAP_TMP/bumps")" "$CL_DIR/n1 3" "three calls of no return values on node 1's counter"
settled "$CL_DIR/head" 8
ok $? "the head, the counter's home, counts them finished ($counts)"
"$LUX" run --address "$CL_DIR/n2" "$AMOD" bump ctr 3 "$TAP_TMP/go2" >"$TAP_TMP/bump" 2>&1 &
cluster_wait_file "$TAP_TMP/go2.ready"
is "$(cat "$TAP_TMP/bump")" "$CL_DIR/n1 6" "three more through node 2's handle"
settled "$CL_DIR/n2" 4
ok $? "node 2 counts them finished ($counts)"
touch "$TAP_TMP/go" "$TAP_TMP/go2"
wait
done_testing
