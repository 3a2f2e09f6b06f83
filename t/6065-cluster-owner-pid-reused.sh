#!/bin/sh
# 6065-cluster-owner-pid-reused: a driver's own node (lux run --address,
# LUX_NODE_OWNER_PID) leaves when its driver is gone. Before, the node
# watched the pid alone: once the driver died and another process took
# its pid, the node ran on for ever. Now the pid and the process's start
# time (field 22 of /proc/PID/stat) name the driver (tools/lux_node.c).
#  - A node told "PID:START" where PID is alive but started at another
#    time (the pid reused before the node looked) does not stay.
#  - The real thing (root: /proc/sys/kernel/ns_last_pid): a node owned by
#    a process of this test is stopped (SIGSTOP), the owner killed -9 and
#    its pid given to a new process, the node let go (SIGCONT): it leaves,
#    naming the reused pid; the nodes view says it left.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
nlog() { cat "$CL_DIR/n$1"/log/*.log 2>/dev/null; }
gone() { # gone PID: wait up to 60 s for PID to end; 0 when it did
    _n=0
    while kill -0 "$1" 2>/dev/null && [ $_n -lt 600 ]; do
        sleep 0.1
        _n=$((_n + 1))
    done
    ! kill -0 "$1" 2>/dev/null
}

cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts" || diag "$CL_OUT"

# a live pid, the wrong start time
sleep 1000 &
a=$!
CL_DRIVERS="$CL_DRIVERS $a"
LUX_NODE_OWNER_PID="$a:1" cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1
p1=$(cluster_node_pid 1)
if [ -n "$p1" ]; then gone "$p1"; else true; fi
ok $? "a node whose owner's pid ($a) is alive but started at another time does not stay" ||
    diag "$CL_OUT"
like "$(nlog 1)" "the driver (pid $a) whose node this is is gone already (its pid names \
another process now): leaving" "... and says why"

# the pid reused while the node looked away
why=
[ "$(id -u)" -eq 0 ] && [ -w /proc/sys/kernel/ns_last_pid ] ||
    why="needs root to choose a pid (/proc/sys/kernel/ns_last_pid)"
if [ -n "$why" ]; then
    for i in 1 2 3 4 5 6 7; do skip "$why"; done
    done_testing
    exit 0
fi
LUX_NODE_OWNER_PID=$a cluster_join 2 --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "node 2 joins, owned by pid $a" || diag "$CL_OUT"
p2=$(cluster_node_pid 2)
id2=$(cat "$CL_DIR/n2/run/node.joined" 2>/dev/null)
kill -STOP "$p2"
ok $? "node 2's daemon (pid $p2) stopped"
kill -9 "$a"
wait "$a" 2>/dev/null
b=
for try in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    echo $((a - 1)) >/proc/sys/kernel/ns_last_pid
    sleep 1000 &
    if [ $! -eq "$a" ]; then
        b=$!
        break
    fi
    kill -9 $! # another process took the pid first: again
    wait $! 2>/dev/null
done
CL_DRIVERS="$CL_DRIVERS $b"
ok $([ -n "$b" ]; echo $?) "the owner killed -9, its pid $a given to another process"
kill -CONT "$p2"
gone "$p2"
ok $? "node 2 leaves all the same" || diag "$(nlog 2 | tail -5)"
like "$(nlog 2)" "the driver (pid $a, started at tick" "... naming the driver"
like "$(nlog 2)" "its pid now names another process" "... and the reused pid"
cluster_wait_sql "SELECT state FROM nodes WHERE node_id = '$id2'" "left" 30
ok $? "the nodes view says node 2 left" || diag "$CL_SQL"

done_testing
