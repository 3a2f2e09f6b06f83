#!/bin/sh
# 5022-node-stop-headless: `lux stop` of a node whose head was killed -9
# ends in a few seconds and loses nothing. A head and one node; a driver
# on the node runs tasks there; the head's supervisor (its chain master,
# membership monitor and node manager) is killed -9, its log replicas
# left serving, as they do. Then `lux stop --dir NODE`:
# - exits 0 within 8 s (before: 12-30 s, and once past lux stop's 30 s);
# - the node's process and its workers are gone;
# - the node's log says it could not tell the head it left, and why,
#   and nothing of its events unrecorded;
# - the driver's tasks are in the log (lux sql on the head's files).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod schedmod)

cluster_up CPU=1 CPU=1
out=$("$LUX" run --address "$CL_DIR/n1" "$MOD" where 3 - 2>&1)
ok $? "a driver on node 1 runs 3 tasks" || diag "$out"

node=$(cluster_node_pid 1)
workers=$(pgrep -P "$node" 2>/dev/null | tr '\n' ' ')
sup=$(cat "$CL_DIR/head/run/supervisor.pid")
kill -9 "$sup"
ok $? "kill -9 the head's supervisor (pid $sup: its master, monitor and node manager)"
i=0
while kill -0 "$sup" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done

t0=$(date +%s%3N)
out=$("$LUX" stop --dir "$CL_DIR/n1" 2>&1)
rc=$?
ms=$(($(date +%s%3N) - t0))
is "$rc" 0 "lux stop of node 1 (pid $node) exits 0 ($out)"
ok "$([ "$ms" -le 8000 ]; echo $?)" "... within 8 s (${ms} ms)" ||
    diag "$(tail -n 20 "$CL_DIR/n1/log/node.log")"
alive() { # a process that runs (a zombie has ended: its parent may be init)
    _s=$(ps -o stat= -p "$1" 2>/dev/null)
    [ -n "$_s" ] && [ "${_s#Z}" = "$_s" ]
}
left=
for p in $node $workers; do alive "$p" && left="$left $p"; done
is "$left" "" "the node's process and its workers ($workers) are gone"
CL_NODES=

log=$(cat "$CL_DIR/n1/log/node.log" 2>/dev/null)
like "$log" "the head is gone" "the node's log says it could not tell the head" ||
    diag "$(tail -n 20 "$CL_DIR/n1/log/node.log")"
ok "$(echo "$log" | grep -q 'not flushed'; echo $((1 - $?)))" "... and nothing unrecorded" ||
    diag "$(grep 'not flushed' "$CL_DIR/n1/log/node.log")"
cluster_wait_value "SELECT count(*) FROM tasks WHERE function = 's_where' AND status = 'finished'" 3 10
ok $? "the driver's 3 tasks are in the log, finished ($CL_SQL)"
done_testing
