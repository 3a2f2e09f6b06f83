#!/bin/sh
# 6121-cluster-monitor-stopped: the head's membership monitor does not
# count the time it did not run as the nodes' silence. A head, node 1
# (disk) and node 2, with a dead-node time of 2 s (LUX_NODE_DEAD_MS). The
# head's supervisor, which runs the monitor, is stopped (SIGSTOP) for 5 s,
# and node 2 is killed meanwhile. Before, the monitor's first tick after
# SIGCONT declared dead every node whose beat it had not read yet: node 1
# too, which beat all along, and went (a node told it is dead goes). Now
# node 1 stays alive and serves; node 2, which did die, is still
# declared dead, once the monitor has run 2 s without its beat, and its
# reason says both: the silence counted, and the time the monitor itself
# did not run.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
CL_ON_EXIT='kill -CONT "$sup" 2>/dev/null'
MOD=$(cluster_mod schedmod)

cluster_up -d 2000 CPU=1 CPU=1,disk=1 CPU=1
sup=$(cat "$CL_DIR/head/run/supervisor.pid")
n1=$(cat "$CL_DIR/n1/run/node.joined")
n2=$(cat "$CL_DIR/n2/run/node.joined")
state() { # state NODE: its state in the nodes view
    echo "SELECT 'state ' || state FROM nodes WHERE node_id = '$1'"
}

kill -STOP "$sup"
ok $? "SIGSTOP the head's supervisor (its membership monitor stops)"
cluster_kill_node 2
ok $? "node 2 dies meanwhile (kill -9)"
sleep 5 # the stop: longer than twice the dead-node time
kill -CONT "$sup"
ok $? "SIGCONT the head's supervisor, 5 s later"

cluster_wait_value "$(state "$n2")" "state dead" 60
ok $? "node 2, which died, is declared dead" || diag "$CL_SQL"
why=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT why FROM nodes WHERE node_id = '$n2'" |
    tail -n 1)
like "$why" "no heartbeat for" "... for its silence: $why"
# The reason gives the silence counted and, apart, the time the monitor
# did not run: not "2000 ms" alone after a 5 s stop. Node 2's last beat
# was read before the stop (the stop taken off its silence) or just after
# it (a beat sent as the stop began waited through it): either way, the
# time it gives in all is at least both together.
like "$why" "the monitor itself did not run for" "... and says the monitor itself did not run for part of it"
counted=$(echo "$why" | sed -n 's/^no heartbeat for \([0-9]*\) ms .*/\1/p')
stalled=$(echo "$why" | sed -n 's/.*did not run for \([0-9]*\) ms .*/\1/p')
total=$(echo "$why" | sed -n 's/.*: \([0-9]*\) ms since its last beat was read$/\1/p;s/.* up to \([0-9]*\) ms old$/\1/p')
ok $([ "${stalled:-0}" -ge 4000 ] && [ "$stalled" -le 60000 ]; echo $?) \
    "the time it did not run, ${stalled:-none} ms, is the 5 s stop's"
ok $([ "${counted:-0}" -ge 2000 ] && [ "$counted" -lt 4000 ]; echo $?) \
    "the silence counted, ${counted:-none} ms, is about the dead time, not the stop"
ok $([ -n "$total" ] && [ "$total" -ge $((${counted:-0} + ${stalled:-0})) ] &&
    [ "$total" -le $((${counted:-0} + ${stalled:-0} + 2000)) ]; echo $?) \
    "the time in all, ${total:-none} ms, is both together (up to 2 s more)"
cluster_wait_value "$(state "$n1")" "state alive" 10
ok $? "node 1, which beat all along, is alive, not declared dead on SIGCONT" || diag "$CL_SQL"
out=$("$LUX" run --address "$CL_DIR/head" "$MOD" where 1 disk=1 2>&1)
is "$out" "$CL_DIR/n1" "a task needing disk, submitted at the head, runs on node 1"
n=$(cat "$CL_DIR/head/log/"*.log | grep -c "membership monitor did not run for")
ok $([ "$n" -ge 1 ]; echo $?) "the head's log says the monitor did not run ($n times)"

done_testing
