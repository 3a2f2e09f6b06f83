"""devtools - a headless Chromium driven over the DevTools protocol, with
Python's standard library alone: t/9153-trace-devtools.py (Chromium's trace
engine on a `lux timeline` output) and tools/timeline-view (the DevTools
Performance panel drawing one, screenshotted) use it.

The protocol is spoken over a WebSocket written here (RFC 6455, text frames
only). Every wait has an end: each read by a socket timeout, Chromium's
start by a bounded poll.
"""
import base64
import json
import os
import socket
import struct
import subprocess
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


class Chromium:
    """A headless Chromium with its debugging port, and a connection to its
    first page: call(method, **params) sends a command and returns its
    result (events that come meanwhile go to self.events)."""

    def __init__(self, chromium, scratch, size=None, new_headless=False):
        self.port = free_port()
        args = [chromium, "--headless=new" if new_headless else "--headless", "--no-sandbox",
                "--disable-gpu", "--no-first-run", "--remote-debugging-port=%d" % self.port,
                "--user-data-dir=%s" % os.path.join(scratch, "profile")]
        if size:
            args.append("--window-size=%d,%d" % size)
        self.log = os.path.join(scratch, "chromium.log")
        self.proc = subprocess.Popen(args + ["about:blank"], stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "w"))
        self.ids = 0
        self.events = []
        page = None
        for _ in range(600):  # 60 s for Chromium to listen
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % self.port,
                                            timeout=5) as r:
                    pages = [p for p in json.load(r) if p.get("type") == "page"]
                if pages:
                    page = pages[0]
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("chromium exited with status %d" % self.proc.returncode)
            time.sleep(0.1)
        if not page:
            self.close()
            raise RuntimeError("chromium did not open its debugging port")
        self.ws = Ws(page["webSocketDebuggerUrl"])

    def call(self, method, **params):
        self.ids += 1
        self.ws.send(json.dumps({"id": self.ids, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.ids:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m["result"]
            self.events.append(m)

    def evaluate(self, expression):
        """The value of a JavaScript expression (awaited) in the page."""
        r = self.call("Runtime.evaluate", expression=expression, awaitPromise=True,
                      returnByValue=True)
        if "exceptionDetails" in r:
            ex = r["exceptionDetails"]
            raise RuntimeError("the page threw: %s" %
                               (ex.get("exception", {}).get("description") or ex.get("text")))
        return r["result"].get("value")

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def click(self, x, y):
        for t in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=t, x=x, y=y, button="left", clickCount=1)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
