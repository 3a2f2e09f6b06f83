#!/bin/sh
# 5307-log-only-restart: a head started with --log-only stays a log only
# when it is restarted with a plain `lux start --head` (it started a node
# manager, which appends events of its own to a log meant to hold only
# what its clients append). The supervisor's command line says which it
# runs (lux supervise ... --log-only).
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
trap '"$LUX" stop --dir "$D" >/dev/null 2>&1; tap_cleanup' EXIT

sup_args() { # the supervisor's command line, one argument a line
    tr '\0' '\n' <"/proc/$(cat "$D/run/supervisor.pid")/cmdline"
}

"$LUX" start --head --dir "$D" --shards 1 --replicas 1 --log-only >/dev/null
ok $? "start a head with --log-only"
like "$(sup_args)" "--log-only" "its supervisor runs no node manager"
"$LUX" stop --dir "$D" >/dev/null
ok $? "stop it"
"$LUX" start --head --dir "$D" >"$tmp/out" 2>&1
ok $? "restart it with a plain lux start --head"
like "$(sup_args)" "--log-only" "it is still a log only"
like "$(cat "$tmp/out")" "log only" "and lux start says so"
done_testing
