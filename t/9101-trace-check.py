#!/usr/bin/env python3
"""9101-trace-check - a helper of t/9101-history.sh: checks a trace that
`lux timeline` wrote against the Chrome trace event format (Google's "Trace
Event Format" document: the JSON Object Format, phases X, i, s, f and M) and
against the run's log.

usage: 9101-trace-check.py [--any-run] TRACE.json ATTEMPTS.csv DEPS.csv
  ATTEMPTS.csv: shard,seq of every event that is a task attempt
  DEPS.csv:     task_id,object_id of every dependency on a task that ran
  --any-run:    the checks that hold for every run (t/9157: the ES, the
                parameter server and a random graph), without those of
                t/9101's run (flows, retries, failures, a killed worker, an
                actor Acc restarted)
Prints TAP lines (no plan: the shell test counts them) and exits 0.
"""
import csv
import json
import sys

n = 0


def ok(cond, what, diag=None):
    global n
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what))
    if not cond and diag:
        for line in str(diag).splitlines()[:10]:
            print("#   " + line)


any_run = sys.argv[1:2] == ["--any-run"]
trace_path, attempts_path, deps_path = sys.argv[1 + any_run:4 + any_run]
try:
    with open(trace_path) as f:
        doc = json.load(f)
    parsed = True
except ValueError as e:
    parsed = False
    doc = {}
    ok(False, "the trace is JSON", e)
if parsed:
    ok(True, "the trace is JSON")
events = doc.get("traceEvents") if isinstance(doc, dict) else None
ok(isinstance(events, list) and len(events) > 0,
   "the JSON Object Format: traceEvents is a non-empty array")
events = events or []
ok(doc.get("displayTimeUnit") in ("ms", "ns"), "displayTimeUnit is ms or ns")

bad = []
for e in events:
    ph = e.get("ph")
    if ph not in ("X", "i", "s", "f", "M"):
        bad.append("unknown phase: %r" % e)
        continue
    if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
        bad.append("pid and tid must be integers: %r" % e)
    if not isinstance(e.get("name"), str):
        bad.append("no name: %r" % e)
    if ph == "M":
        if e["name"] not in ("process_name", "thread_name", "process_sort_index",
                             "thread_sort_index") or not isinstance(e.get("args"), dict):
            bad.append("bad metadata: %r" % e)
        continue
    if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0:
        bad.append("ts must be a number of microseconds: %r" % e)
    if ph == "X" and (not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0):
        bad.append("a complete event needs dur >= 0: %r" % e)
    if ph == "i" and e.get("s") not in ("t", "p", "g"):
        bad.append("an instant's scope is t, p or g: %r" % e)
    if ph in ("s", "f") and "id" not in e:
        bad.append("a flow event needs an id: %r" % e)
ok(not bad, "every event has the fields its phase needs (%d events)" % len(events),
   "\n".join(bad))

slices = [e for e in events if e.get("ph") == "X"]
by_track = {}
for s in slices:
    by_track.setdefault((s["pid"], s["tid"]), []).append(s)


def enclosing(e):
    """The one slice of e's track that encloses it (edges included), or
    None when none or several do: the binding must be unambiguous."""
    found = [s for s in by_track.get((e["pid"], e["tid"]), [])
             if s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
    return found[0] if len(found) == 1 else None


# every attempt in the log is a slice
want = set()
with open(attempts_path) as f:
    for row in csv.DictReader(f):
        want.add((int(row["shard"]), int(row["seq"])))
have = set()
for s in slices:
    a = s.get("args", {})
    if "shard" in a and "seq" in a:
        have.add((a["shard"], a["seq"]))
missing = sorted(want - have)
ok(want and not missing, "every task attempt in the log is a slice (%d attempts)" % len(want),
   "missing (shard, seq): %s" % missing)
ok(all(isinstance(s.get("args", {}).get("task_id"), str) and
       isinstance(s["args"].get("attempt"), int) and "arg_bytes" in s["args"] for s in slices),
   "every slice names its task, its attempt and its arguments' bytes")

# flows: pairs, each end bound to a slice
flows = {}
for e in events:
    if e.get("ph") in ("s", "f"):
        flows.setdefault(e["id"], []).append(e)
pairs_bad = [k for k, v in flows.items()
             if sorted(x["ph"] for x in v) != ["f", "s"]]
ok((flows or any_run) and not pairs_bad, "every flow id has one start and one finish (%d flows)" % len(flows),
   "unpaired: %s" % pairs_bad[:5])
unbound = []
edges = set()
for k, v in flows.items():
    if len(v) != 2:
        continue
    st = [x for x in v if x["ph"] == "s"][0]
    fi = [x for x in v if x["ph"] == "f"][0]
    a, b = enclosing(st), enclosing(fi)
    if a is None or b is None or fi.get("bp") != "e" or st["ts"] > fi["ts"] + 1e-3 and \
            not a["args"].get("start_inferred"):
        unbound.append((st, fi))
        continue
    edges.add((b["args"]["task_id"], st["args"]["object_id"]))
    if not st["args"]["object_id"].startswith(a["args"]["task_id"]):
        unbound.append(("the start is not on the object's task", st, a["args"]["task_id"]))
ok(not unbound, "every flow starts inside its producer's slice and ends inside its consumer's",
   unbound[:3])

want_edges = set()
with open(deps_path) as f:
    for row in csv.DictReader(f):
        want_edges.add((row["task_id"], row["object_id"]))
missing = sorted(want_edges - edges)
ok((want_edges or any_run) and not missing,
   "every dependency on a task that ran is a flow (%d dependencies)" % len(want_edges),
   "missing (consumer, object): %s" % missing)

procs = [e for e in events if e.get("ph") == "M" and e["name"] == "process_name"]
threads = [e for e in events if e.get("ph") == "M" and e["name"] == "thread_name"]
if any_run:
    ok(len(procs) >= 1 and any(t["args"]["name"].startswith("worker ") for t in threads),
       "a process per node, named tracks for workers")
    print("# checked %d" % n)
    sys.exit(0)
cats = {}
for e in events:
    if e.get("ph") == "i":
        cats[e.get("cat")] = cats.get(e.get("cat"), 0) + 1
ok(cats.get("retry", 0) > 0 and cats.get("failure", 0) > 0,
   "instants for retries (%d) and failures (%d)" % (cats.get("retry", 0), cats.get("failure", 0)))
names = [e["name"] for e in events if e.get("ph") == "i"]
ok(any(x.startswith("actor_restarted") for x in names) and
   any(x.startswith("actor_checkpoint") for x in names),
   "instants for the actor's restart and checkpoints")
ok(any(s["args"].get("start_inferred") and s["args"].get("status", 0) != 0 for s in slices),
   "the attempts killed workers ended are slices, marked failed")
ok(len(procs) >= 1 and any(t["args"]["name"].startswith("worker ") for t in threads) and
   any(t["args"]["name"].startswith("actor Acc") for t in threads),
   "a process per node, named tracks for workers and the actor")
print("# checked %d" % n)
