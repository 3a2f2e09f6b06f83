#!/usr/bin/env python3
"""9160-trace-order - a helper of t/9160-timeline-one-clock.sh: checks that
a trace `lux timeline` wrote draws what happened in the order it happened,
on one clock (issue 29: the log's event times, taken at the head when an
append arrived, lagged the workers' task times by seconds, so puts, a
retry and a killed attempt were drawn after the retried attempt ran).

usage: 9160-trace-order.py NAME TRACE.json
  NAME: the run's name, for the check lines.
Prints TAP lines (no plan: the shell test counts them) and exits 0.

What it checks, each an order that causality fixes whatever the load:
  - the run has a killed worker's attempt (a slice marked start_inferred
    whose status is not 0) and a retry: without them the rest tests little;
  - each retry comes at or after the end of the attempt it follows (the
    killed one, on the same task) and at or before the start of every
    later attempt of its task: the node logs the retry before it sends the
    task again;
  - each put comes before the start of every task attempt that reads it
    (a ref argument): a task is submitted only once its caller's put has
    returned;
  - each task attempt of a job starts after the job's job_started.
A tolerance of 1 us covers the trace's rounding to three decimals.
"""
import json
import sys

n = 0
EPS = 0.001 + 1e-6  # the trace's microseconds carry three decimals


def ok(cond, what, diag=None):
    global n
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what))
    if not cond and diag:
        for line in diag[:8]:
            print("#   " + line)


name, path = sys.argv[1:3]
with open(path) as f:
    events = json.load(f)["traceEvents"]
slices = [e for e in events if e.get("ph") == "X"]
inst = [e for e in events if e.get("ph") == "i"]
by_task = {}
for s in slices:
    by_task.setdefault(s["args"]["task_id"], []).append(s)


def end(s):
    return s["ts"] + s["dur"]


def show(e):
    a = e.get("args", {})
    return "%s at %.3f us%s (attempt %s)" % (
        e["name"], e["ts"], " to %.3f" % end(e) if e["ph"] == "X" else "",
        a.get("attempt", "-"))


killed = [s for s in slices if s["args"].get("start_inferred") and s["args"]["status"] != 0]
retries = [e for e in inst if e.get("cat") == "retry"]
ok(killed and retries, "%s: the run has killed attempts (%d) and retries (%d)" %
   (name, len(killed), len(retries)))

bad = []
for r in retries:
    tid, a = r["args"]["task_id"], r["args"].get("attempt")
    if not isinstance(a, int):
        bad.append("retry %s names no attempt: %r" % (tid, r["args"]))
        continue
    # the attempts before the retry (numbered below the one it starts) end
    # before it; those it starts (the first not inferred: a killed one that
    # "(not counted)" keeps its number) start after it
    for s in by_task.get(tid, []):
        sa = s["args"]["attempt"]
        if sa < a and end(s) > r["ts"] + EPS:
            bad.append("retry %s (attempt %d) at %.3f us: %s ends after it"
                       % (tid, a, r["ts"], show(s)))
        if sa >= a and not s["args"].get("start_inferred") and s["ts"] < r["ts"] - EPS:
            bad.append("retry %s (attempt %d) at %.3f us: %s started before it"
                       % (tid, a, r["ts"], show(s)))
ok(retries and not bad,
   "%s: each retry comes after the attempt it ends and before the attempts after it (%d)"
   % (name, len(retries)), bad)

bad = []
for k in killed:
    tid = k["args"]["task_id"]
    # its task's next attempts: numbered above it, or with its number and
    # not inferred (a retry "(not counted)" keeps the number)
    later = [s for s in by_task[tid] if s is not k and (
        s["args"]["attempt"] > k["args"]["attempt"] or
        s["args"]["attempt"] == k["args"]["attempt"] and not s["args"].get("start_inferred"))]
    for s in later:
        if s["ts"] < end(k) - EPS:
            bad.append("killed %s ends at %.3f us after %s started"
                       % (tid, end(k), show(s)))
ok(killed and not bad,
   "%s: each killed attempt ends before its task's next attempt starts (%d)"
   % (name, len(killed)), bad)

puts = {}
for e in inst:
    if e["name"].startswith("object_put"):
        puts[e["args"].get("object_id")] = e
bad = []
reads = 0
for s in slices:
    for part in s["args"].get("args", "").split(", "):
        if not part.startswith("ref "):
            continue
        p = puts.get(part[4:])
        if p is None:
            continue
        reads += 1
        if s["ts"] < p["ts"] - EPS:
            bad.append("put %s at %.3f us, read by %s %s" %
                       (part[4:], p["ts"], s["args"]["task_id"], show(s)))
ok(reads > 0 and not bad,
   "%s: each put comes before every task attempt reading it (%d puts, %d reads)"
   % (name, len(puts), reads), bad)

started = {}
for e in inst:
    if e["name"].startswith("job_started"):
        started[e["args"].get("job_id")] = e["ts"]
bad = []
for s in slices:
    j = s["args"].get("job_id")
    if j in started and s["ts"] < started[j] - EPS:
        bad.append("job %s started at %.3f us, after %s %s" %
                   (j, started[j], s["args"]["task_id"], show(s)))
ok(started and not bad,
   "%s: each task attempt starts after its job started (%d jobs)" % (name, len(started)), bad)
