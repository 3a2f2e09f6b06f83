#!/bin/sh
# 1012-db-master-stopped: the chain master does not count the time it did
# not run as the replicas' silence. A head with one shard of 3 replicas,
# heartbeat 100 ms, dead time 1 s. The head's supervisor, which runs the
# master, is stopped (SIGSTOP) for 4 s. Before, the master's first timer
# tick after SIGCONT came before it read the beats waiting in its socket
# and removed every replica but one from the chain, silent for 4 s; now
# the chain stays 0,1,2 in the same epoch and appends are acknowledged by
# all three. Then the master is stopped again while replica 1 is killed
# (kill -9): it must still be removed from the chain once the master runs
# again (here when its restarted process beats, since the supervisor
# restarts it within 200 ms), and replicas 0 and 2 must stay.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

HELLO=${LUX_BUILDDIR:-.}/examples/hello/hello.so
. "${LUX_SRCDIR:-.}/t/lib/master.sh"

seq_of() { # seq_of INDEX: replica INDEX's last seq in the chain line
    chain | tr ' ' '\n' | grep "^$1:" | cut -d: -f3
}

master_start
before=$(chain)
like "$before" "chain 0,1,2 0:serving" "the chain is 0,1,2, all serving: $before"

kill -STOP "$sup"
ok $? "SIGSTOP the head's supervisor (pid $sup), which runs the chain master"
sleep 4 # four times the dead time
kill -CONT "$sup"
ok $? "SIGCONT it, 4 s later"
wait_for "chain master did not run for" 20
ok $? "the log says the master did not run" || diag "$(grep -i 'master' "$D/log/supervisor.log" | tail -n 5)"
sleep 3 # three dead times of the master running: a replica it took for silent is gone by now
n=$(grep -c "removed (" "$D/log/supervisor.log")
is "$n" 0 "no replica was removed" || diag "$(grep "removed (" "$D/log/supervisor.log")"
after=$(chain)
is "$(echo "$after" | cut -d" " -f1-4)" "$(echo "$before" | cut -d" " -f1-4)" "the chain and its epoch are unchanged: $after"

s0=$(seq_of 2)
out=$(timeout -s KILL 120 "$LUX" run --address "$D" "$HELLO" 3 2>&1)
ok $? "a driver runs tasks on the head" || diag "$out"
i=0
while [ $i -lt 300 ]; do
    l=$(chain)
    a=$(echo "$l" | tr ' ' '\n' | grep -c ":serving:$(seq_of 2)\$")
    [ "$a" = 3 ] && [ "$(seq_of 2)" -gt "$s0" ] && break
    sleep 0.1; i=$((i + 1))
done
is "$a" 3 "its events are in all three replicas, up to the same seq ($s0 before): $l"

r1=$(pid_of replica 1)
kill -STOP "$sup"
ok $? "SIGSTOP the supervisor again"
kill -KILL "$r1"
ok $? "kill -9 replica 1 (pid $r1) meanwhile"
sleep 4
kill -CONT "$sup"
ok $? "SIGCONT it, 4 s later"
wait_for "replica 1 removed (" 20
ok $? "replica 1, which died, is removed from the chain" ||
    diag "$(grep -i 'master\|removed' "$D/log/supervisor.log" | tail -n 5)"
n=$(grep -c "replica [02] removed (" "$D/log/supervisor.log")
is "$n" 0 "replicas 0 and 2 were not removed" || diag "$(grep "removed (" "$D/log/supervisor.log")"
[ -n "$LUX_TEST_VERBOSE" ] && grep -i "master\|removed\|replica" "$D/log/supervisor.log" | sed 's/^/# /' >&2
done_testing
