#!/bin/sh
# actor-calls-2node.sh TREE K: calls/s of an actor on node 1 called from a driver on
# the head (loopback cluster of t/lib/cluster.sh: head CPU=1, node 1
# CPU=1,disk=1; the counter needs disk=1, so it lives on node 1). The
# driver (t/lib/actormod.so "own") makes K calls (warm-up), then K more;
# the second K are timed by the mtimes of the files it makes between
# (GO.ready after the first K, GO.done after the second). TREE is a
# built checkout (lux and t/lib/actormod.la: `make lux
# t/lib/actormod.la`), so that two builds can be compared alternating
# (doc/benchmarks.md, stop 43). COUNT_EVENTS=1 also prints the counts of
# the call's events in the head's log. Run it niced, TMPDIR set.
TREE=$1 K=$2
cd "$TREE" || exit 1
export LUX_SRCDIR=$TREE LUX_BUILDDIR=$TREE LUX_BIN=$TREE/lux
. "$TREE/t/lib/cluster_test.sh"
cluster_up CPU=1 CPU=1,disk=1 >/dev/null
G=$TAP_TMP/go
touch "$G" "$G.end"
"$LUX" run --address "$CL_DIR/head" "$TREE/t/lib/.libs/actormod.so" own c disk=1 0 "$K" "$G" >"$TAP_TMP/out" 2>&1
rc=$?
where=$(sed -n 1p "$TAP_TMP/out")
python3 - "$G" "$K" "$rc" "$where" "$(git -C "$TREE" rev-parse --short HEAD)" <<'PY'
import os, sys
g, k, rc, where, rev = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
try:
    t = (os.stat(g + ".done").st_mtime_ns - os.stat(g + ".ready").st_mtime_ns) / 1e9
    print("%s calls %d seconds %.3f calls_per_s %.0f us_per_call %.0f rc %s first %s" % (rev, k, t, k / t, t / k * 1e6, rc, where))
except Exception as e:
    print("%s failed rc %s %s" % (rev, rc, e))
PY
if [ -n "$COUNT_EVENTS" ]; then
    sleep 2
    "$LUX" sql --dir "$CL_DIR/head" --csv "SELECT kind, count(*) FROM events WHERE kind IN ('object_copied','object_lost','actor_call','task_finished') GROUP BY kind" 2>&1 | tr '\n' ' '; echo
fi
