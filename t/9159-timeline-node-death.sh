#!/bin/sh
# 9159-timeline-node-death: lux timeline marks a node's death (issue 29:
# "instants for ... node deaths") on a real cluster: a head and two nodes
# (the head declares a node dead after 1.5 s: LUX_NODE_DEAD_MS), node 1's
# daemon and workers killed with kill -9 by their pids; once the log holds
# its node_died, the trace of the head's log has a process per node, each
# named by the node's ID, and a "node died" instant of global scope on the
# dead node's process, naming why; no instant of a death on the others.
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"

cluster_up -d 1500 CPU=1 CPU=1 CPU=1
pid=$(cluster_node_pid 1)
cluster_kill_node 1
ok $? "kill -9 node 1's daemon ($pid) and its workers"
cluster_wait_sql "SELECT count(*) FROM nodes WHERE state = 'dead'" 1 120
ok $? "the log holds node 1's death: $CL_SQL"
dead=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT node_id FROM nodes WHERE state = 'dead'" | sed -n 2p)
run "$LUX" timeline "$CL_DIR/head" -o "$TAP_TMP/trace.json"
is "$rc" 0 "lux timeline of the head's log: $err"
python3 - "$TAP_TMP/trace.json" "$dead" >"$TAP_TMP/checks" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
ev = trace["traceEvents"] if isinstance(trace, dict) else trace
dead = sys.argv[2]
def ok(cond, what):
    print("%d|%s" % (0 if cond else 1, what))
procs = dict((e["pid"], e["args"]["name"]) for e in ev
             if e.get("ph") == "M" and e.get("name") == "process_name")
ok(len([n for n in procs.values() if n.startswith("node ")]) == 3,
   "a process per node: %s" % sorted(procs.values()))
deaths = [e for e in ev if e.get("ph") == "i" and e.get("name") == "node died"]
ok(len(deaths) == 1, "one 'node died' instant (%d)" % len(deaths))
d = deaths[0] if deaths else {}
ok(procs.get(d.get("pid"), "").startswith("node " + dead[:8]),
   "...on the dead node's process (%s; node %s)" % (procs.get(d.get("pid")), dead))
ok(d.get("s") == "g" and isinstance(d.get("ts"), (int, float)),
   "...of global scope, at a time (%s)" % d.get("ts"))
ok(any("why" in k or "reason" in k or "info" in k for k in (d.get("args") or {})),
   "...saying why: %s" % json.dumps(d.get("args")))
PY
# a Python error (a trace without the fields read) ends the checks early:
# its status is a check of its own, or the missing ones would pass unseen
ok $? "the trace's checks ran ($(grep -c . "$TAP_TMP/checks") of 5)"
while IFS='|' read -r st what; do ok "$st" "$what"; done <"$TAP_TMP/checks"
done_testing
