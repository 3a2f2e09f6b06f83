#!/bin/sh
# 6132-cluster-master-start-stopped: a chain master that does not run at
# its start (stopped or starved) does not take the replicas that started
# with it for restarted or silent ones. A head with one shard of 3
# replicas, heartbeat 100 ms, dead time 1 s: the start grace for a
# replica not heard yet is 5 s (db_master.c). The master is held at its
# start, before its loop runs (LUX_TEST_JOIN_GATE, point "start-"), for
# 7 s, while the replicas start and beat; their beats wait unread. Before,
# the grace was counted on the clock alone (the first stall tick only
# remembered its time), so the first beats read after the hold were each
# taken for a restarted replica's: replicas were removed from the chain
# ("it restarted") and the last one's restart began a new epoch. Now the
# time the master did not run is not counted: the chain stays 0,1,2 at
# its first epoch, and the log says the master did not run.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/master.sh"
G=$tmp/gate
st=
# at exit, before the head stops: let a held master go, and wait for its start
MASTER_ON_EXIT='[ -d "$G" ] && touch "$G/start-go"; [ -n "$st" ] && wait "$st" 2>/dev/null'

mkdir -p "$G"
touch "$G/start-armed"
LUX_TEST_JOIN_GATE=$G "$LUX" start --head --dir "$D" --shards 1 --replicas 3 \
    --heartbeat-ms 100 --dead-ms 1000 --workers 1 >/dev/null 2>"$tmp/start.err" &
st=$!
wait_for "$G/start-held" 120
ok $? "the chain master is held at its start, before its loop runs"
# the replicas beat meanwhile; the master reads none of it. 7 s: past the
# 5 s grace, with room for a replica that is slow to start under load
sleep 7
touch "$G/start-go"
wait "$st"
rc=$?
st=
ok $rc "the head starts once the master runs" || diag "$(cat "$tmp/start.err")"
L=$D/log/supervisor.log
i=0
while [ $i -lt 300 ]; do
    l=$(chain)
    [ "$(echo "$l" | tr ' ' '\n' | grep -c ":serving:")" = 3 ] && break
    sleep 0.1; i=$((i + 1))
done
grep -q "chain master did not run for" "$L"
ok $? "the log says the master did not run" || diag "$(grep -i master "$L" | tail -n 5)"
is "$(grep "removed (" "$L")" "" "no replica was removed from the chain"
is "$(grep "restarted" "$L")" "" "no replica was taken for a restarted one"
like "$l" "epoch 1 chain 0,1,2 " "the chain is 0,1,2 at its first epoch, all serving: $l"
[ -n "$LUX_TEST_VERBOSE" ] && grep -i "master\|removed\|join\|epoch" "$L" | sed 's/^/# /' >&2
done_testing
