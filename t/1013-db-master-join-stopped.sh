#!/bin/sh
# 1013-db-master-join-stopped: the chain master judges a joiner's silence
# without the time it did not run itself. A head with one shard of 3
# replicas, heartbeat 100 ms, dead time 1 s. Replica 1 is killed; its
# restarted process catches up and asks to join, and the master, holding
# the tail's JOIN_SEQ before judging it (LUX_TEST_JOIN_GATE, point
# "seq-"), is stopped there (SIGSTOP of the head's supervisor) for 3 s.
# The joiner beat all along; its beats wait unread. Before, the master
# compared its last beat with the clock as it was after SIGCONT, found it
# "silent" for 3 s and refused the join (the joiner asked again and was
# admitted later); now the time the master did not run is not counted and
# the joiner is admitted at once.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/master.sh"
G=$tmp/gate
MASTER_ON_EXIT='[ -d "$G" ] && touch "$G/seq-go"'

mkdir -p "$G"
master_start LUX_TEST_JOIN_GATE="$G"
like "$(chain)" "chain 0,1,2 0:serving" "the chain is 0,1,2, all serving"

touch "$G/seq-armed"
r1=$(pid_of replica 1)
kill -KILL "$r1"
ok $? "kill -9 replica 1 (pid $r1): it restarts and rejoins"
wait_for "$G/seq-held" 120
ok $? "the tail's JOIN_SEQ for it reached the master, which holds it unjudged" ||
    diag "$(grep -i 'join\|removed' "$D/log/supervisor.log" | tail -n 5)"
kill -STOP "$sup"
ok $? "SIGSTOP the head's supervisor (pid $sup) there"
touch "$G/seq-go"
sleep 3 # three dead times
kill -CONT "$sup"
ok $? "SIGCONT it, 3 s later"

wait_for "replica 1 joined at the tail" 60
ok $? "replica 1 joins" || diag "$(grep -i 'join\|removed' "$D/log/supervisor.log" | tail -n 5)"
is "$(grep "replica 1 cannot join" "$D/log/supervisor.log")" "" "its join was not refused"
n=$(grep -c "replica 1 joined at the tail" "$D/log/supervisor.log")
is "$n" 1 "it joined once, at its first JOIN_SEQ"
grep -q "chain master did not run for" "$D/log/supervisor.log"
ok $? "the log says the master did not run"
is "$(grep "replica [02] removed (" "$D/log/supervisor.log")" "" "replicas 0 and 2 were not removed"
i=0
while [ $i -lt 300 ]; do
    l=$(chain)
    [ "$(echo "$l" | tr ' ' '\n' | grep -c ":serving:")" = 3 ] && break
    sleep 0.1; i=$((i + 1))
done
like "$l" "chain 0,2,1 " "the chain is 0,2,1, replica 1 at the tail, all serving: $l"
[ -n "$LUX_TEST_VERBOSE" ] && grep -i "master\|removed\|join" "$D/log/supervisor.log" | sed 's/^/# /' >&2
done_testing
