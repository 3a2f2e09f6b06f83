#!/bin/sh
# 6063-cluster-module-from-head: a node that does not hold a task's
# module asks the node that sent the task (exec_rmodule.c); when that
# node cannot give it, the head is asked, which answers from the log
# (every module a driver brought is recorded there with its bytes).
# Node 1 (disk=1) runs every task; the drivers are on nodes 2 and 3.
#  - Wrong bytes: node 2 answers with one byte changed (test hook
#    LUX_TEST_MODULE_BAD=1): node 1 refuses them naming the hash, gets the
#    module from the head and runs the task (before: the task failed).
#  - The sender killed -9 before the fetch: node 1 holds its asks (test
#    hook LUX_TEST_MODULE_GATE) while node 3, which sent the task, is
#    killed; node 1 asks it, no answer comes, and after 5 s it asks the
#    head and runs the task (before: it gave up after 20 s, the task
#    failed).
#  - The sender dying mid-fetch: node 2 holds its answers (the same hook)
#    and is killed -9 with node 1's ask in hand: node 1 asks the head and
#    runs the task.
# Whether a task ran on node 1 is read from the tasks view (its sender,
# dead, is not told).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)
nmlog() { cat "$CL_DIR/n$1"/log/*.log 2>/dev/null; }
finished_on_n1() { # finished_on_n1 N: the tasks view shows N s_where finished on node 1
    cluster_wait_value "SELECT count(*) FROM tasks WHERE function = 's_where' AND node_id = '$n1' \
        AND status = 'finished'" "$1" 60
}
fresh_n1() { # node 1 loses its copy of the module
    rm -f "$CL_DIR"/n1/modules/*.so
    ok $([ -z "$(ls "$CL_DIR/n1/modules" 2>/dev/null | grep '\.so$')" ]; echo $?) \
        "node 1 holds no module now"
}
gate1=$TAP_TMP/gate1
gate2=$TAP_TMP/gate2
: >"$gate1"
: >"$gate2"

cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"
LUX_TEST_MODULE_GATE=$gate1 cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,disk=1
ok $CL_RC "node 1 joins, with disk=1" || diag "$CL_OUT"
LUX_TEST_MODULE_BAD=1 LUX_TEST_MODULE_GATE=$gate2 cluster_join 2 --workers 1 --store-mb 32 \
    --resources CPU=1
ok $CL_RC "node 2 joins, answering asks for modules with a byte changed" || diag "$CL_OUT"
cluster_join 3 --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "node 3 joins" || diag "$CL_OUT"
n1=$(cat "$CL_DIR/n1/run/node.joined")
fresh_n1

# wrong bytes from the sender
out=$("$LUX" run --address "$CL_DIR/n2" "$MOD" where 1 disk=1 2>&1)
is "$out" "$CL_DIR/n1" "node 2's task needing disk=1 runs on node 1, though node 2 sent bad bytes"
set -- "$CL_DIR"/n2/modules/*.so
good=$1
hash=$(basename "$good" .so)
like "$(nmlog 1 | grep 'do not match')" "$hash" "node 1 refused node 2's bytes, naming the hash"
like "$(nmlog 1)" "$hash: the bytes the node that sent its task sent do not match the hash: \
refused: asking the head" "... and asked the head"
cmp -s "$good" "$CL_DIR/n1/modules/$hash.so"
ok $? "node 1 keeps the module's true bytes"

# sender_dies N LOGN PATTERN WHAT: a driver on node N sends node 1 a task
# of the module; once node LOGN's log says PATTERN (an ask held by the
# gate: the check WHAT), the driver and node N are killed -9
sender_dies() {
    "$LUX" run --address "$CL_DIR/n$1" "$MOD" where 1 disk=1 >"$TAP_TMP/d$1" 2>&1 &
    _d=$!
    CL_DRIVERS="$CL_DRIVERS $_d"
    _n=0
    until nmlog "$2" | grep -q "$3"; do
        _n=$((_n + 1))
        [ $_n -lt 1200 ] || break
        sleep 0.1
    done
    ok $([ $_n -lt 1200 ]; echo $?) "$4" || diag "$(cat "$TAP_TMP/d$1")"
    kill -9 "$_d"
    cluster_kill_node "$1"
    ok $? "node $1 killed -9 before it answers (and its driver)"
}

# the sender killed before the fetch
fresh_n1
rm -f "$gate1"
sender_dies 3 1 "ask for module $hash held" "node 1 holds its ask for the module of node 3's task"
: >"$gate1"
finished_on_n1 2
ok $? "the task runs on node 1 all the same" || diag "$CL_SQL"
like "$(nmlog 1)" "$hash: no answer from the node that sent its task in 5 s (is it dead?): \
asking the head" "... node 1 asked the head when the dead sender did not answer"
cmp -s "$good" "$CL_DIR/n1/modules/$hash.so"
ok $? "... and keeps the module's bytes"

# the sender dying mid-fetch
fresh_n1
rm -f "$gate2"
sender_dies 2 2 "an ask for a module held" "node 2 has node 1's ask for the module in hand"
finished_on_n1 3
ok $? "the task runs on node 1 all the same" || diag "$CL_SQL"
is "$(nmlog 1 | grep -c "$hash: no answer from the node that sent its task")" 2 \
    "... node 1 asked the head when node 2 did not answer"
cmp -s "$good" "$CL_DIR/n1/modules/$hash.so"
ok $? "... and keeps the module's bytes"

done_testing
