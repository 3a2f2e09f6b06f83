#!/bin/sh
# 6062-cluster-place-lost: a spilled task or an actor's creation whose
# answer from the global scheduler is lost while the head's membership
# monitor keeps answering does not wait for ever. Node 2 asks the head
# where its work needing disk=1 goes (only node 1 has it: NODE_PLACE);
# the head drops answers (test hook LUX_TEST_PLACE_DROP=6,1,1: all six to
# the first task that asks, the first one to each of the next two).
# Node 2 asks again every second (LUX_PLACE_RESEND_MS=1000; 5 s by
# default) and the head answers a repeated ask as it did the first time.
#  - The first task: all 6 asks answered into the void: it fails with
#    LUX_EDEAD naming the head and the 6 asks (before: it waited until the
#    driver's own 120 s get gave up, "not ready within").
#  - The next task: its first answer lost, its second ask answered: it
#    runs on node 1, and the head says it answered the same again.
#  - An actor needing disk=1, its first answer lost: made on node 1, its
#    calls answered.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
AMOD=$(cluster_mod actormod)
run2() { "$LUX" run --address "$CL_DIR/n2" "$@" 2>&1; }
# the node manager's log of machine DIR
nmlog() { cat "$1"/log/*.log 2>/dev/null; }

LUX_TEST_PLACE_DROP=6,1,1 cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts, dropping answers to NODE_PLACE" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,disk=1
ok $CL_RC "node 1 joins, with disk=1" || diag "$CL_OUT"
LUX_PLACE_RESEND_MS=1000 cluster_join 2 --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "node 2 joins, asking again after 1 s" || diag "$CL_OUT"

# bounded: the driver's own get gives up after 120 s
out=$(run2 "$MOD" where 1 disk=1)
rc=$?
ok $([ $rc -ne 0 ]; echo $?) "a task whose 6 asks are all unanswered fails" || diag "$out"
like "$out" "global scheduler" "... saying the global scheduler did not answer: $out"
like "$out" "127.0.0.1" "... naming the head it asked"
like "$out" "asked 6 times" "... and how often"
case "$out" in *"not ready within"*) late=1 ;; *) late=0 ;; esac
ok $late "... before the driver's own timeout"

out=$(run2 "$MOD" where 1 disk=1)
is "$out" "$CL_DIR/n1" "the next task, its first answer lost, runs on node 1"
is "$(nmlog "$CL_DIR/head" | grep -c 'given the same answer')" 6 \
    "... the head answered its second ask as its first (as it did the first task's 5)"

go=$TAP_TMP/go
run2 "$AMOD" own ctr disk=1 0 1 "$go" >"$TAP_TMP/act" &
act=$!
CL_DRIVERS="$CL_DRIVERS $act"
cluster_wait_file "$go.ready"
ok $? "an actor needing disk=1, its first answer lost, is made and answers" ||
    diag "$(cat "$TAP_TMP/act")"
: >"$go"
cluster_wait_file "$go.done"
ok $? "... and answers again"
: >"$go.end"
wait $act
ok $? "... its driver ends well" || diag "$(cat "$TAP_TMP/act")"
is "$(nmlog "$CL_DIR/n2" | grep -c 'asking again ([2-6] of 6)')" 7 \
    "node 2 asked again 5 times for the first, once for each of the others" ||
    diag "$(nmlog "$CL_DIR/n2" | grep 'asking again')"

done_testing
