#!/bin/sh
# 5302-stop-stuck-log: `lux stop` of a head whose log cannot acknowledge
# (its only replica stopped with SIGSTOP) while a driver runs actor calls.
# The stop must finish (it did not: the node thread blocked for ever in a
# send to the chain master, which had already stopped), the head's
# processes must be gone, and lux stop must say what could not be flushed
# to the log. Processes are found by pid (lux status) and only those this
# test started are signalled.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
PS=${LUX_BUILDDIR:-.}/examples/actors/ps.so
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
sup= rep= drv=
cleanup() {
    for p in $rep $sup $drv; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    tap_cleanup
}
trap cleanup EXIT

gone() { # gone PID: no such process, or a zombie not reaped yet
    ! [ -d "/proc/$1" ] || grep -q ') Z' "/proc/$1/stat" 2>/dev/null
}

pid_of() { # pid_of KIND: the pid lux status --json gives the first such component
    "$LUX" status --dir "$D" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((c["pid"] for c in d["components"] if c["kind"] == sys.argv[1]), ""))' "$1"
}

"$LUX" start --head --dir "$D" --shards 1 --replicas 1 --heartbeat-ms 50 --dead-ms 400 \
    --workers 2 >/dev/null 2>"$tmp/start.err"
ok $? "start a head with one replica"
sup=$(pid_of supervisor)
rep=$(pid_of replica)
"$LUX" run --address "$D" "$PS" --workers 2 --steps 1000000 >"$tmp/drv.out" 2>"$tmp/drv.err" &
drv=$!
# wait for the driver's first report: its actors run, the log takes events
i=0
while [ $i -lt 600 ] && ! grep -q version "$tmp/drv.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
ok "$(grep -q version "$tmp/drv.out"; echo $?)" "the driver runs (pid $drv)"

kill -STOP "$rep"
ok $? "the log's only replica (pid $rep) is stopped with SIGSTOP"
# the node manager notices the missing acknowledgements (its own log says so)
i=0
while [ $i -lt 300 ] && ! grep -q "no acknowledgement" "$D/log/supervisor.log"; do
    sleep 0.1; i=$((i + 1))
done

timeout -s KILL 120 "$LUX" stop --dir "$D" >"$tmp/stop.out" 2>"$tmp/stop.err"
rc=$?
ok "$([ "$rc" != 124 ] && [ "$rc" != 137 ]; echo $?)" "lux stop finishes (exit $rc, not a 120 s watchdog)"
is "$rc" 0 "and stops the head"
like "$(cat "$tmp/stop.err")" "not flushed" "and says what it could not flush to the log"
like "$(cat "$tmp/stop.err")" "events" "counting the events"
gone "$sup"
ok $? "the supervisor (pid $sup) is gone"
kill -CONT "$rep" 2>/dev/null
i=0
while [ $i -lt 100 ] && ! gone "$rep"; do sleep 0.1; i=$((i + 1)); done
gone "$rep"
ok $? "the stopped replica (pid $rep) is gone too"
i=0
while [ $i -lt 600 ] && kill -0 "$drv" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -0 "$drv" 2>/dev/null
ok "$([ $? != 0 ]; echo $?)" "the driver ends once its head is stopped"
[ -n "$LUX_TEST_VERBOSE" ] && sed 's/^/# /' "$tmp/stop.err" "$tmp/drv.err" >&2
done_testing
