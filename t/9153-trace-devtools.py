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
part of Chromium and runs offline. The DevTools protocol is spoken over a
WebSocket written here (RFC 6455, text frames only), so nothing beyond
Python's standard library is needed. Every wait has an end: the whole run
is bounded by the caller's timeout, each read by a socket timeout.
"""
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Ws:
    """A minimal WebSocket client: the handshake, masked text frames out,
    text frames in (continuations joined, pings answered)."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.s = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key))
        self.s.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise RuntimeError("the DevTools socket closed during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError("handshake refused: %r" % head[:200])
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the DevTools socket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            hdr = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 1 << 16:
            hdr = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            hdr = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.s.sendall(hdr + mask + body)

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 9:  # ping
                continue
            if op == 8:
                raise RuntimeError("the DevTools socket was closed by Chromium")
            msg += payload
            if b0 & 0x80:
                return msg.decode()


def main():
    chromium, trace_path, scratch = sys.argv[1:4]
    with open(trace_path) as f:
        trace = json.load(f)
    port = free_port()
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--remote-debugging-port=%d" % port, "--user-data-dir=%s" % os.path.join(scratch, "profile"),
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(scratch, "chromium.log"), "w"))
    try:
        page = None
        for _ in range(600):  # 60 s for Chromium to listen
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=5) as r:
                    pages = [p for p in json.load(r) if p.get("type") == "page"]
                if pages:
                    page = pages[0]
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                raise RuntimeError("chromium exited with status %d" % proc.returncode)
            time.sleep(0.1)
        if not page:
            raise RuntimeError("chromium did not open its debugging port")
        ws = Ws(page["webSocketDebuggerUrl"])
        ids = [0]

        def call(method, **params):
            ids[0] += 1
            ws.send(json.dumps({"id": ids[0], "method": method, "params": params}))
            while True:
                m = json.loads(ws.recv())
                if m.get("id") == ids[0]:
                    if "error" in m:
                        raise RuntimeError("%s: %s" % (method, m["error"]))
                    return m["result"]

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
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # said on stderr; the shell test fails on the status
        print("9153-trace-devtools: %s" % e, file=sys.stderr)
        sys.exit(1)
