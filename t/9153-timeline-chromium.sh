#!/bin/sh
# 9153-timeline-chromium: a trace lux timeline wrote, opened in Chromium's
# own trace engine (the DevTools Performance panel's, models/trace of the
# DevTools frontend Chromium serves; t/9153-trace-devtools.py drives a
# headless chromium through the DevTools protocol). Skipped where chromium
# is not installed. Of a random task graph's run (t/9112-graph-run, with a
# crash, a failure and retries):
#   - the engine parses the trace without an error;
#   - it makes a complete slice of every task attempt (ph X) in the file,
#     named by function, with the task's args;
#   - a thread for every worker, named "worker PID", and the node's process
#     named.
#   - every flow bound: that engine binds a flow event to the event of the
#     same ts, pid, tid and cat (the Trace Event Format to the enclosing
#     slice, which t/9101 checks), so each dependency's arrow joins its
#     producer's slice to its consumer's, as the file says;
#   - the DevTools Performance panel itself (tools/timeline-view) draws it,
#     and with a dependency's consumer selected through the panel's own
#     objects it makes arrows only of the file's flows, that slice's among
#     them.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
LUX=${LUX_BIN:-./lux}
B=${LUX_BUILDDIR:-.}
S=${LUX_SRCDIR:-.}
CHROMIUM=$(command -v chromium || command -v chromium-browser)
[ -n "$CHROMIUM" ] || skip_all "chromium is not installed"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT

LUX_BUILDDIR=$B timeout -s KILL 300 "$B/t/9112-graph-run" "$tmp/runs" 3 40 \
    >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "a random graph of 40 nodes ran, with a crash and a failure"
run=$(sed -n 1p "$tmp/run.out")
"$LUX" timeline "$run" -o "$tmp/trace.json" 2>"$tmp/err"
ok $? "lux timeline: $(cat "$tmp/err")"
mkdir "$tmp/chromium"
timeout -s KILL 240 python3 "$S/t/9153-trace-devtools.py" "$CHROMIUM" "$tmp/trace.json" \
    "$tmp/chromium" >"$tmp/engine.json" 2>"$tmp/err"
ok $? "chromium's DevTools trace engine parsed it"
[ -s "$tmp/err" ] && head -5 "$tmp/err" | sed 's/^/#   /'
# the Performance panel itself (tools/timeline-view): the trace loaded and
# drawn, a dependency's consumer selected through the panel's objects, and
# the arrows the panel then draws are the file's flows into that slice
timeout -s KILL 420 python3 "$S/tools/timeline-view" --chromium "$CHROMIUM" "$tmp/trace.json" \
    "$tmp/view.png" >"$tmp/view.json" 2>"$tmp/err"
ok $? "tools/timeline-view drew it in the Performance panel"
[ -s "$tmp/err" ] && head -5 "$tmp/err" | sed 's/^/#   /'
python3 - "$tmp/trace.json" "$tmp/engine.json" "$tmp/view.json" >"$tmp/checks" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
ev = trace["traceEvents"] if isinstance(trace, dict) else trace
try:
    got = json.load(open(sys.argv[2]))
except ValueError:
    got = {}
def ok(cond, what):
    print("%d|%s" % (0 if cond else 1, what))
xs = [e for e in ev if e["ph"] == "X"]
ok(got.get("complete_slices") == len(xs),
   "a slice for every task attempt: %s of %d" % (got.get("complete_slices"), len(xs)))
names = set(e["name"] for e in xs)
ok(set(got.get("slice_names", [])) == names, "...named by function: %s" % sorted(names))
ok(all("task_id" in (a or {}) for a in got.get("slice_args", [None])),
   "...with the task's args")
tids = set(e["tid"] for e in xs)
threads = dict((t["tid"], t["name"]) for t in got.get("threads", []))
ok(all(threads.get(t) == "worker %d" % t for t in tids if t > 0),
   "a thread per worker (%d), named by its pid" % len([t for t in tids if t > 0]))
ok(any((p or "").startswith("node ") for p in got.get("process_names", [])),
   "the node's process named: %s" % got.get("process_names"))
starts = dict((e["id"], e) for e in ev if e["ph"] == "s")
ends = dict((e["id"], e) for e in ev if e["ph"] == "f")
at = dict(((e["pid"], e["tid"], e["ts"]), e["args"]["task_id"]) for e in xs)
want = sorted((at.get((s["pid"], s["tid"], s["ts"])), at.get((ends[i]["pid"], ends[i]["tid"], ends[i]["ts"])))
              for i, s in starts.items() if i in ends)
bound = sorted(tuple(f) for f in (got.get("flow_tasks") or []))
ok(len(starts) > 0 and got.get("flows") == len(starts),
   "every flow bound by the engine: %s of %d" % (got.get("flows"), len(starts)))
ok(want and bound == want and all(None not in p for p in want),
   "...each from its producer's slice to its consumer's (%d arrows)" % len(bound))
try:
    view = json.load(open(sys.argv[3]))
except ValueError:
    view = {}
def png(path):
    try:
        return open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    except (OSError, TypeError):
        return False
ok(png(view.get("screenshot")) and png(view.get("flow")),
   "the Performance panel's view as loaded and with a slice selected, saved as PNG")
pairs = set(want)
sel = view.get("selected") or {}
to = (sel.get("to") or {}).get("task_id")
into = set(a for a, b in pairs if b == to)
drawn = set((a.get("from_task"), a.get("to_task")) for a in sel.get("arrows") or [])
ok(to and sel.get("selected_entry", -1) >= 0 and into,
   "...its panel selected task %s, the consumer of %d flows in the file" % (to, len(into)))
ok(drawn and any(p in drawn for p in ((a, to) for a in into)) and drawn <= pairs,
   "...and drew arrows of the file's flows for it: %s" % sorted(drawn))
PY
# a Python error (a trace or an answer without the fields read) ends the
# checks early: its status is a check of its own, or the missing ones
# would pass unseen
ok $? "the engine's and the panel's checks ran ($(grep -c . "$tmp/checks") of 10)"
while IFS='|' read -r st what; do
    if [ "$st" = "#" ]; then echo "# $what"; else ok "$st" "$what"; fi
done <"$tmp/checks"
done_testing
