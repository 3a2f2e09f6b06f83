#!/bin/sh
# 5103-log-full: the embedded log's only replica cannot write (its disk is
# full). The run must not hang: the actor call whose event cannot be
# recorded fails at once, naming the actor, the call and the reason; the
# run ends with an error; and what the log committed before is intact
# (its hash chain verifies, its calls are there to query).
# The disk is a 6 MiB tmpfs in a private mount namespace: it needs root
# (or the right to unshare and mount), and skips without it.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
SIM=${LUX_BUILDDIR:-.}/examples/actors/sim.so
tap_small_disk 6m

# Everything that needs the small disk runs inside the namespace; the
# results come out in files.
unshare -m sh -c "
    mount -t tmpfs -o size=6m tmpfs '$tmp/small' || exit 9
    start=\$(date +%s)
    timeout 60 '$LUX' run --dir '$tmp/small/runs' '$SIM' --episodes 100000 \
        >'$tmp/out' 2>'$tmp/err'
    echo \$? >'$tmp/rc'
    echo \$((\$(date +%s) - start)) >'$tmp/secs'
    D=\$(ls -d '$tmp/small/runs/'*/ | head -1)
    '$LUX' audit --dir \"\$D\" >'$tmp/audit' 2>&1
    echo \$? >'$tmp/audit.rc'
    '$LUX' sql --dir \"\$D\" --csv 'SELECT count(*) FROM actor_calls' >'$tmp/sql' 2>&1
"
err=$(cat "$tmp/err")
rc=$(cat "$tmp/rc")
ok "$([ "$rc" != 0 ] && [ "$rc" != 124 ]; echo $?)" \
    "the run ends with an error before a 60 s watchdog, not a hang (exit $rc)"
echo "# it ended after $(cat "$tmp/secs") s"
like "$err" "(Sim): call " "the failed call names the actor and the call"
like "$err" "the log cannot record the call (it may have been applied)" "and says the log cannot record it"
like "$err" "disk is full" "and why"
is "$(cat "$tmp/audit.rc")" 0 "what was committed verifies (lux audit)"
n=$(tail -1 "$tmp/sql")
ok "$([ "${n:-0}" -gt 10 ] 2>/dev/null; echo $?)" "and its calls are there to query ($n actor_call events)"
done_testing
