#!/usr/bin/env python3
"""9153-trace-devtools - a helper of t/9153-timeline-chromium.sh: opens a
trace that `lux timeline` wrote in Chromium's own trace viewer engine, the
one behind the DevTools Performance panel (models/trace/trace.js of the
DevTools frontend that Chromium serves on its remote debugging port), in a
headless Chromium, and prints what that engine made of it as one JSON
object on stdout.

usage: 9153-trace-devtools.py CHROMIUM TRACE.json SCRATCH_DIR

chrome://tracing cannot be opened headless (the page load is refused), and
the Perfetto UI is a web site (no network here); the DevTools engine is
part of Chromium and runs offline. tools/devtools.py speaks the DevTools
protocol with Python's standard library alone. Every wait has an end: the
whole run is bounded by the caller's timeout, each read by a socket
timeout.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import devtools  # noqa: E402 (tools/devtools.py: the headless Chromium and its protocol)


def main():
    chromium, trace_path, scratch = sys.argv[1:4]
    with open(trace_path) as f:
        trace = json.load(f)
    cr = devtools.Chromium(chromium, scratch)
    try:
        call = cr.call
        port = cr.port
        # a page of the debugging server's origin, so that the DevTools
        # frontend's modules import from it
        call("Page.enable")
        call("Page.navigate", url="http://127.0.0.1:%d/json/version" % port)
        for _ in range(300):
            r = call("Runtime.evaluate", expression="document.readyState", returnByValue=True)
            if r["result"].get("value") == "complete":
                break
            time.sleep(0.1)
        script = """(async () => {
  const T = await import('/devtools/models/trace/trace.js');
  const events = %s;
  const model = T.TraceModel.Model.createWithAllHandlers();
  await model.parse(events);
  const pt = model.parsedTrace();
  const d = pt.data;
  const threads = [];
  const slices = [];
  for (const [pid, p] of d.Renderer.processes) {
    for (const [tid, t] of p.threads) {
      const entries = t.entries || [];
      threads.push({pid: pid, tid: tid, name: t.name || null, entries: entries.length});
      for (const e of entries)
        if (e.ph === 'X')
          slices.push(e);
    }
  }
  return JSON.stringify({
    generic: d.Meta.traceIsGeneric,
    tree_nodes: d.Renderer.entryToNode.size,
    parsed: true,
    handlers: Object.keys(d).length,
    trace_events: events.length,
    complete_slices: slices.length,
    slice_names: Array.from(new Set(slices.map(e => e.name))).slice(0, 50),
    flows: (d.Flows && d.Flows.flows) ? d.Flows.flows.length : null,
    flow_events: (d.Flows && d.Flows.flows) ? d.Flows.flows.reduce((n, f) => n + f.length, 0) : null,
    flow_tasks: (d.Flows && d.Flows.flows) ?
        d.Flows.flows.map(f => f.map(e => (e.args && e.args.task_id) || null)) : null,
    threads: threads,
    process_names: Array.from(d.Meta.processNames ? d.Meta.processNames.values() : []).map(
        e => e.args && e.args.name),
    slice_args: slices.slice(0, 3).map(e => e.args),
    bounds_us: [pt.data.Meta.traceBounds.min, pt.data.Meta.traceBounds.max],
  });
})()""" % json.dumps(trace["traceEvents"] if isinstance(trace, dict) else trace)
        r = call("Runtime.evaluate", expression=script, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            ex = r["exceptionDetails"]
            raise RuntimeError("the DevTools trace engine threw: %s" %
                               (ex.get("exception", {}).get("description") or ex.get("text")))
        print(r["result"]["value"])
    finally:
        cr.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # said on stderr; the shell test fails on the status
        print("9153-trace-devtools: %s" % e, file=sys.stderr)
        sys.exit(1)
