# master.sh - what the chain master tests (t/1012, t/1013, t/6132) share: a head
# with one shard of 3 replicas, heartbeat 100 ms, dead time 1 s, whose
# supervisor (it runs the master) they stop with SIGSTOP; the chain as
# `lux status --json` shows it, a component's pid, and a wait on a file
# or on a line of the supervisor's log. Sourced after t/lib/tap.sh; sets
# LUX, tmp (the scratch directory) and D (the head's directory), and at
# exit continues the supervisor ($sup), runs $MASTER_ON_EXIT, stops the
# head and removes the scratch directory.
#
#   master_start [ENV=VALUE...]   start the head (check 1), sup its supervisor
#   chain                         "epoch E chain C" and "I:STATE:LAST_SEQ" a replica
#   pid_of KIND [INDEX]           a component's pid
#   wait_for FILE|TEXT SECS       until FILE exists, or the supervisor's log has TEXT

LUX=${LUX_BIN:-./lux}
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
sup=
MASTER_ON_EXIT=:
trap '[ -n "$sup" ] && kill -CONT "$sup" 2>/dev/null; eval "$MASTER_ON_EXIT"
      timeout -s KILL 60 "$LUX" stop --dir "$D" >/dev/null 2>&1; tap_cleanup' EXIT

master_start() { # master_start [ENV=VALUE...]: the head, started with those in its environment
    env "$@" "$LUX" start --head --dir "$D" --shards 1 --replicas 3 --heartbeat-ms 100 \
        --dead-ms 1000 --workers 1 >/dev/null 2>"$tmp/start.err"
    ok $? "start a head with one shard of 3 replicas (dead time 1 s)" || diag "$(cat "$tmp/start.err")"
    sup=$(pid_of supervisor)
}

chain() { # chain: "epoch E chain C" and each replica's "I:STATE:LAST_SEQ"
    "$LUX" status --dir "$D" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = [c for c in d["components"] if c["kind"] == "replica"]
print("epoch %s chain %s" % (r[0].get("epoch"), r[0].get("chain")),
      " ".join("%s:%s:%s" % (c["index"], c.get("state"), c.get("last_seq")) for c in r))'
}

pid_of() { # pid_of KIND [INDEX]: the pid lux status --json gives
    "$LUX" status --dir "$D" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((c["pid"] for c in d["components"] if c["kind"] == sys.argv[1] and
            (len(sys.argv) < 3 or c.get("index") == int(sys.argv[2]))), ""))' "$@"
}

wait_for() { # wait_for FILE|TEXT SECS: until FILE exists, or the supervisor's log has TEXT
    _i=0
    while [ $_i -lt $(($2 * 10)) ]; do
        case $1 in
        /*) [ -e "$1" ] && return 0 ;;
        *) grep -q "$1" "$D/log/supervisor.log" && return 0 ;;
        esac
        sleep 0.1; _i=$((_i + 1))
    done
    return 1
}
