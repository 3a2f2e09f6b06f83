#!/bin/sh
# 5304-head-disk-full: the disk under a running head fills up (a 64 MiB
# tmpfs, filled by a file this test writes after a first run). Nothing may
# hang in silence, as it did (replicas restarting every few seconds,
# appenders getting neither an acknowledgement nor an error, lux run
# printing nothing):
# - a driver's actor calls fail with "the log at DIR cannot write: No
#   space left on device", and the run ends with an error;
# - lux status shows the replica failed (not "silent") and says the disk
#   is full;
# - once the file is removed, the head recovers by itself: the replica
#   serves again and a new run succeeds;
# - lux stop finishes.
# The replica's reader runs no checkpoint (LUX_TEST_CKPT_OFF), as one that
# gets no CPU: the run after the disk had room again failed once in CI
# with the disk full again, its WAL grown while the reader waited for a
# CPU; the writer's cap on the WAL (db_writer.c, 33 MB) is what leaves it
# room now (without the cap, that run filled the disk every time here).
# The tmpfs is mounted in a private mount namespace: it needs root (or
# the right to unshare and mount), and skips without it.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
SIM=${LUX_BUILDDIR:-.}/examples/actors/sim.so
tap_small_disk 64m

# Everything that needs the small disk runs inside the namespace; what
# each step printed and its status come out in files under $tmp/r.
mkdir -p "$tmp/r"
D=$tmp/small/c
R=$tmp/r
G=$tmp/gate
mkdir -p "$G"
unshare -m sh -c "
    mount -t tmpfs -o size=64m tmpfs '$tmp/small' || exit 9
    LUX_TEST_CKPT_OFF=1 LUX_TEST_APPEND_GATE='$G' '$LUX' start --head --dir '$D' --shards 1 --replicas 1 --heartbeat-ms 50 --dead-ms 400 \
        --workers 2 >'$R/start.out' 2>&1
    echo \$? >'$R/start.rc'
    # a first run while there is room: its module is kept in the head's directory
    timeout -s KILL 120 '$LUX' run --address '$D' '$SIM' --episodes 2 >'$R/run0.out' 2>&1
    echo \$? >'$R/run0.rc'
    # fill the disk: the log has no room left
    dd if=/dev/zero of='$tmp/small/filler' bs=64k >/dev/null 2>&1
    timeout -s KILL 120 '$LUX' run --address '$D' '$SIM' --episodes 100000 \
        >'$R/run.out' 2>'$R/run.err'
    echo \$? >'$R/run.rc'
    # the replica's beat says it failed within a heartbeat or so of the
    # error its appends got (bounded wait: a status taken at once read
    # the beat before, 'serving', once)
    end=\$((\$(date +%s) + 30))
    while [ \$(date +%s) -lt \$end ] && ! '$LUX' status --dir '$D' 2>/dev/null | grep -q ' failed '; do
        sleep 0.1
    done
    '$LUX' status --dir '$D' >'$R/status.out' 2>&1
    # room again: the head recovers by itself (bounded wait for a serving
    # replica), but the restarted replica answers no append until the
    # test lets it (LUX_TEST_APPEND_GATE: G/hold), as one just restarted
    # has not yet: the new run's calls wait for it, they do not fail with
    # the old run's error (a failure was sticky until the first answer)
    touch '$G/hold'
    rm -f '$tmp/small/filler'
    end=\$((\$(date +%s) + 90))
    while [ \$(date +%s) -lt \$end ] && ! '$LUX' status --dir '$D' 2>/dev/null | grep -q ' serving '; do
        sleep 0.2
    done
    '$LUX' status --dir '$D' >'$R/status2.out' 2>&1
    timeout -s KILL 120 '$LUX' run --address '$D' '$SIM' --episodes 3 \
        >'$R/run2.out' 2>'$R/run2.err' &
    run2=\$!
    # it fails at once if it fails: give it 20 s (bounded) to show it
    end=\$((\$(date +%s) + 20))
    while [ \$(date +%s) -lt \$end ] && kill -0 \$run2 2>/dev/null; do
        sleep 0.2
    done
    kill -0 \$run2 2>/dev/null && echo alive >'$R/held.alive'
    rm -f '$G/hold'
    wait \$run2
    echo \$? >'$R/run2.rc'
    timeout -s KILL 120 '$LUX' stop --dir '$D' >'$R/stop.out' 2>&1
    echo \$? >'$R/stop.rc'
    cp -r '$D/log' '$R/log' 2>/dev/null # for a failure's diagnosis (LUX_KEEP=1)
    # whatever is left of the head (nothing, when stop worked) goes with the namespace
    p=\$(cat '$D/run/supervisor.pid' 2>/dev/null)
    [ -n \"\$p\" ] && kill -0 \"\$p\" 2>/dev/null && kill -KILL \"\$p\"
"
is "$(cat "$R/start.rc")" 0 "start a head with one replica on a 64 MiB tmpfs"
is "$(cat "$R/run0.rc")" 0 "a run while there is room succeeds"
rc=$(cat "$R/run.rc")
ok "$([ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ]; echo $?)" \
    "with the disk full, the run ends with an error before a 120 s watchdog (exit $rc)"
err=$(cat "$R/run.err")
like "$err" "the log at $D cannot write: No space left on device" "naming the log and the cause"
st=$(cat "$R/status.out")
like "$st" " failed " "lux status shows the replica failed"
like "$st" "is full" "and says the disk is full"
like "$(cat "$R/status2.out")" " serving " "with room again, the replica serves again by itself"
ok "$([ -s "$G/dropped" ]; echo $?)" "the restarted replica held appends unanswered (test gate)"
is "$(cat "$R/held.alive" 2>/dev/null)" alive \
    "a new run's calls wait for the restarted replica's answer instead of failing with the old error"
is "$(cat "$R/run2.rc")" 0 "and a new run succeeds"
ok "$(grep -q "cannot write" "$R/run2.err"; [ $? = 1 ]; echo $?)" "without the old run's error"
is "$(cat "$R/stop.rc")" 0 "lux stop finishes"
if [ -n "$LUX_TEST_VERBOSE" ]; then
    for f in "$R"/*; do echo "# == $f"; sed 's/^/# /' "$f"; done >&2
fi
done_testing
