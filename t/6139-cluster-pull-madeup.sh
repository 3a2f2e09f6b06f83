#!/bin/sh
# 6139-cluster-pull-madeup: a ref that no one made fails at once with
# LUX_ENOTFOUND and why, while a put whose event is late is still waited
# for (exec_xfer_who.c; issue 28). Since stop 44 a pull of an object the
# log has no event of waits up to LUX_XFER_UNRECORDED_MS (60 s) for it: a
# fresh put's object_put may trail its blob write (t/6130). So a made-up
# ref waited 60 s too. The head now reads who made it from the ref's ID
# (its first 8 bytes: a hash of the job and the driver or task that made
# it) and what the log knows of that maker: nobody it knows (random
# bytes, another cluster's ref), or a driver whose job has ended, is
# "none will come". Node 2 keeps the default 60 s for the others; the
# bounds below are 20 s.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
MB=1048576
GATE=$TAP_TMP/blobgate
CL_ON_EXIT='touch "$GATE" "$TAP_TMP/small.done" "$TAP_TMP/late.done"'

cluster_head --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
LUX_TEST_BLOB_GATE=$GATE cluster_join 1 --workers 1 --store-mb 64 --resources CPU=1
ok $CL_RC "node 1 joins, its blob writer held at a gate" || diag "$CL_OUT"
cluster_join 2 --workers 1 --store-mb 64 --resources CPU=1,tape=1
ok $CL_RC "node 2 joins, with tape=1 (an unrecorded object waited for 60 s)" || diag "$CL_OUT"

# a random ref: on node 2 (a pull asking the head), then on the head
R=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
t0=$(date +%s)
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$R" 10 tape=1 2>&1)
rc=$?
t=$(($(date +%s) - t0))
ok $([ $rc -ne 0 ]; echo $?) "a task on node 2 reading a made-up ref fails" || diag "$out"
like "$out" "object $R: no driver or task of this cluster's log made it" \
    "the error names the object and why: $out"
ok $([ $t -lt 20 ]; echo $?) "promptly ($t s), not after LUX_XFER_UNRECORDED_MS (60 s)"
t0=$(date +%s)
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" echo "$R" 10 - 2>&1)
rc=$?
t=$(($(date +%s) - t0))
ok $([ $rc -ne 0 ]; echo $?) "a task on the head reading it fails too" || diag "$out"
like "$out" "object $R: no driver or task of this cluster's log made it" \
    "the head's own pull says why: $out"
ok $([ $t -lt 20 ]; echo $?) "promptly ($t s)"

# a ref a live driver could still make: waited for; once its driver has
# ended, none will come
cluster_hold hold $((100 * 1024)) 2 small
ok $? "a driver on node 2 puts 100 KiB ($REF)" || diag "$(cat "$TAP_TMP/small.out")"
S=$REF
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'object_put'
    AND task_id = '$(echo "$S" | cut -c1-32)'" 1 60
ok $? "its event is in the log" || diag "$CL_SQL"
# the same driver's ID with a counter it never reached
N=$(echo "$S" | cut -c1-16)00000000ffff000000000000
"$LUX" run --address "$CL_DIR/head" "$MOD" echo "$N" 10 tape=1 >"$TAP_TMP/N.out" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
cluster_wait_line "object $N: the log has no record of it yet" "$CL_DIR"/n2/log/node.log 60
ok $? "node 2 waits for a ref its live driver may yet make"
sleep 3
ok $(kill -0 $drv 2>/dev/null; echo $?) "3 s later its task still waits" ||
    diag "$(cat "$TAP_TMP/N.out")"
touch "$TAP_TMP/small.done"
cluster_wait_value "SELECT count(*) FROM events WHERE kind = 'job_finished'
    AND job_id = (SELECT job_id FROM events WHERE kind = 'object_put'
                  AND task_id = '$(echo "$S" | cut -c1-32)')" 1 60
ok $? "its driver ends: job_finished" || diag "$CL_SQL"
t0=$(date +%s)
wait $drv
rc=$?
t=$(($(date +%s) - t0))
ok $([ $rc -ne 0 ]; echo $?) "the task fails" || diag "$(cat "$TAP_TMP/N.out")"
J=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT job_id FROM events WHERE kind = 'object_put'
    AND task_id = '$(echo "$S" | cut -c1-32)'" | tail -n 1)
like "$(cat "$TAP_TMP/N.out")" "object $N: the driver that made it (job $J) has ended" \
    "the error says its driver has ended: $(cat "$TAP_TMP/N.out")"
ok $([ $t -lt 20 ]; echo $?) "within $t s of the job's end, not 60 s after its first ask"

# a put whose event is late (its blob held): waited for, and read
cluster_hold hold $((4 * MB)) 1 late
ok $? "a driver on node 1 puts 4 MiB ($REF)" || diag "$(cat "$TAP_TMP/late.out")"
L=$REF
cluster_wait_file "$GATE.waiting" 60
ok $? "its bytes wait at the blob writer's gate: its object_put is not in the log"
"$LUX" run --address "$CL_DIR/head" "$MOD" echo "$L" $((4 * MB)) tape=1 >"$TAP_TMP/L.out" 2>&1 &
drv=$!
CL_DRIVERS="$CL_DRIVERS $drv"
cluster_wait_line "object $L: the log has no record of it yet" "$CL_DIR"/n2/log/node.log 60
ok $? "node 2 pulls it and waits for the log to record it"
sleep 3
ok $(kill -0 $drv 2>/dev/null; echo $?) "3 s later its task still waits" ||
    diag "$(cat "$TAP_TMP/L.out")"
touch "$GATE"
wait $drv
ok $? "the gate opens; the task's driver returns" || diag "$(cat "$TAP_TMP/L.out")"
is "$(cat "$TAP_TMP/L.out")" "echo ok (4194304 bytes) $CL_DIR/n2" \
    "the task ran on node 2 with node 1's put, byte for byte"
done_testing
