#!/usr/bin/env python3
"""2901-foreign - the Python side of t/2901-protocol-foreign.sh.

Everything here is written from doc/protocol.md, with the standard library
and pyzmq; the frame and record codecs come from tools/lux_subscribe.py,
the reference subscriber written from the same page. Subcommands:

  example DOC            recompute the worked example of DOC section 7.1
  compare WANT GOT S N [SKIP]
                         events in WANT (JSON lines from 2901-append-events
                         or `append`) for shard S (of N shards), but the
                         first SKIP, are those in GOT (lux_subscribe.py
                         --json), field by field
  seqs GOT TOTAL         GOT holds seqs 1..N, each exactly once, N >= TOTAL
  last DIR SHARD         the shard's last seq, once the tail's answer to
                         READ stays the same for half a second
  append DIR             append to every shard by hand (section 11):
                         ACK, idempotent resends, EGAP, ESTATE; print the
                         events appended as JSON lines
  probe DIR              malformed HELLO, HEARTBEAT, JOIN get EPROTO; ERRORs
                         to READs name the READ's request ID; a type at the
                         wrong endpoint is EPROTO whatever the shard
  fake DIR MODE          play chain master and tail of a one-shard cluster
                         in DIR whose tail misbehaves as MODE says (ok,
                         badhash, gap, proto), for the subscriber's error
                         checks; runs until killed (or 30 s)

Exit status 0 when every check holds; 1 with the reasons on stderr.
"""

import json
import os
import re
import signal
import struct
import sys
import time

import zmq

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import lux_subscribe as L  # noqa: E402

KIND_CODE = {v: k for k, v in L.KINDS.items()}
key_hash = L.key_hash


def fail(text):
    sys.stderr.write("2901-foreign: %s\n" % text)
    sys.exit(1)


def shard_of(ev, shards):
    """Section 11.1, through the subscriber's own shard_of."""
    return L.shard_of(L.event_key(ev), shards)


# --- subcommands ----------------------------------------------------------------------

def cmd_example(doc):
    text = open(doc, encoding="utf-8").read()

    def grab(label, raw=False):
        m = re.search(r"^%s\s+([0-9a-f]+)\s*$" % re.escape(label), text, re.M)
        if not m:
            fail("%s: no '%s' line in the worked example" % (doc, label))
        return m.group(1) if raw else bytes.fromhex(m.group(1))

    cluster, shard = grab("cluster"), int(grab("shard", raw=True))
    prev = L.genesis(cluster, shard)
    if prev != grab("genesis"):
        fail("genesis is %s, the page says %s" % (prev.hex(), grab("genesis").hex()))
    for seq in (1, 2):
        rec = grab("seq %d record" % seq)
        h = L.chain_hash(prev, seq, rec)
        if h != grab("seq %d hash" % seq) or h != rec[-16:]:
            fail("seq %d: hash is %s, the page says %s" % (seq, h.hex(), grab("seq %d hash" % seq).hex()))
        L.decode_event(rec)
        prev = h
    # section 11.1: the shard of a key
    m = re.search(r"the key\s+`([0-9a-f]{32})`\s+has\s+H\s+=\s+`0x([0-9a-f]{16})`\s+and goes to"
                  r"\s+shard\s+((?:\d+\s+of\s+\d+,?\s*)+)", text)
    if not m:
        fail("%s: no example of section 11.1 (the key ... has H = ... and goes to shard ...)" % doc)
    key, want = bytes.fromhex(m.group(1)), int(m.group(2), 16)
    if L.key_hash(key) != want:
        fail("H(%s) is 0x%016x, the page says 0x%016x" % (m.group(1), L.key_hash(key), want))
    for s, n in re.findall(r"(\d+)\s+of\s+(\d+)", m.group(3)):
        if L.shard_of(key, int(n)) != int(s):
            fail("key %s goes to shard %d of %s, the page says %s" % (m.group(1), L.shard_of(key, int(n)), n, s))


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def cmd_compare(want_path, got_path, shard, shards, skip=0):
    want = [e for e in load(want_path) if e["shard"] == shard][skip:]
    # the supervisor's signed checkpoints are in the log too (kind 20):
    # not the client's
    got = [e for e in load(got_path) if e.get("kind") != "checkpoint"]
    by_seq = {e["seq"]: e for e in got}
    if not want:
        fail("no events for shard %d in %s" % (shard, want_path))
    if "seq" in want[0]:
        pairs = [(w, by_seq.get(w["seq"])) for w in want]
    else:
        # one client, in order: its events are the last len(want) of GOT
        pairs = list(zip(want, got[-len(want):])) if len(got) >= len(want) else []
    if len(pairs) != len(want):
        fail("shard %d: %d events appended, %d decoded" % (shard, len(want), len(got)))
    meta = {"shard", "seq", "ts", "hash"}
    for w, g in pairs:
        if g is None:
            fail("shard %d: seq %s missing" % (shard, w.get("seq")))
        for k in set(w) | set(g):
            if k in meta:
                continue
            if w.get(k) != g.get(k):
                fail("shard %d seq %d: %s is %r, appended %r" % (shard, g["seq"], k, g.get(k), w.get(k)))
        if g["shard"] != shard or shard_of(g, shards) != shard:
            fail("shard %d seq %d: its key belongs to shard %d" % (shard, g["seq"], shard_of(g, shards)))
        if len(g["hash"]) != 32 or not isinstance(g["ts"], int) or g["ts"] <= 0:
            fail("shard %d seq %d: no ts or hash" % (shard, g["seq"]))


def cmd_seqs(got_path, total):
    seqs = [e["seq"] for e in load(got_path)]
    top = max(seqs + [total])
    if seqs != list(range(1, top + 1)):
        dup = sorted({s for s in seqs if seqs.count(s) > 1})
        miss = sorted(set(range(1, top + 1)) - set(seqs))
        fail("%d events, want seqs 1..%d once each; duplicates %s, missing %s"
             % (len(seqs), top, dup[:10], miss[:10]))


def cmd_last(d, shard):
    """READ at the tail (sections 8.2, 9) until `last` is stable."""
    cl = L.load_cluster(d)
    ctx = zmq.Context.instance()
    master = ctx.socket(zmq.DEALER)
    master.connect(cl["master"])
    seen, stable, deadline = None, 0, time.monotonic() + 30
    while stable < 5 and time.monotonic() < deadline:
        master.send_multipart([L.header(L.T_CONFIG_REQ, shard, 0)])
        if not master.poll(5000):
            fail("no CONFIG from the chain master")
        epoch, members = L.parse_config(master.recv_multipart()[1])[1][shard]
        rd = ctx.socket(zmq.DEALER)
        rd.setsockopt(zmq.LINGER, 0)
        rd.connect(members[-1][1][2])
        rd.send_multipart([L.header(L.T_READ, shard, epoch), struct.pack("<QQII", 1, 1, 1, 0)])
        last = None
        if rd.poll(2000):
            r = rd.recv_multipart()
            if L.parse_header(r[0])[0] == L.T_READ_REP:
                last = struct.unpack("<QQ", r[1])[1]
        rd.close()
        stable = stable + 1 if last is not None and last == seen else 0
        seen = last if last is not None else seen
        time.sleep(0.1)
    if stable < 5:
        fail("shard %d: the tail's last seq did not settle" % shard)
    print(seen)


# --- append by hand (section 11) ------------------------------------------------------

def encode(ev):
    """The record of an event dict (section 6), ts and hash zero."""
    mask, out = 0, b""
    for bit, name, how in L.FIELDS:
        if name not in ev:
            continue
        mask |= 1 << bit
        v = ev[name]
        if how == "client":
            out += bytes.fromhex(v) + struct.pack("<Q", ev["cseq"])
        elif how in ("id", "fp"):
            out += bytes.fromhex(v)
        elif how == "i64":
            out += struct.pack("<q", v)
        elif how == "str16":
            b = v.encode()
            out += struct.pack("<H", len(b)) + b
        elif how == "str32":
            b = v.encode()
            out += struct.pack("<I", len(b)) + b
        elif how == "deps":
            b = b"".join(bytes.fromhex(d) for d in v)
            out += struct.pack("<I", len(b)) + b
        else:
            b = bytes.fromhex(v)
            out += struct.pack("<I", len(b)) + b
    return struct.pack("<qHI", 0, KIND_CODE[ev["kind"]], mask) + out + bytes(16)


def batch(first, recs):
    return struct.pack("<QI", first, len(recs)) + b"".join(struct.pack("<I", len(r)) + r for r in recs)


def cmd_append(d):
    cl = L.load_cluster(d)
    ctx = zmq.Context.instance()
    master = ctx.socket(zmq.DEALER)
    master.connect(cl["master"])

    def chain(shard):
        """The shard's (epoch, members), asked afresh (section 8.2)."""
        master.send_multipart([L.header(L.T_CONFIG_REQ, shard, 0)])
        if not master.poll(5000):
            fail("no CONFIG from the chain master")
        cluster, chains = L.parse_config(master.recv_multipart()[1])
        if cluster != cl["cluster"] or shard not in chains:
            fail("CONFIG for another cluster, or without shard %d" % shard)
        return chains[shard]

    def call(shard, pick, recs, first):
        """APPEND recs to the member pick(members) names; its answer as
        ("ACK", cseq, seq), ("ERROR", code) or ("SILENT",) when there was
        none within 2 s (a head that loses its role drops what waits for
        acknowledgement: section 11.5), with the replica's index."""
        epoch, members = chain(shard)
        if pick(members) is None:
            return ("NO SUCH MEMBER",), -1
        index, eps = pick(members)
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(eps[0])
        s.send_multipart([L.header(2, shard, epoch), batch(first, recs)])
        if not s.poll(2000):
            s.close()
            return ("SILENT",), index
        r = s.recv_multipart()
        s.close()
        t, hs, _ = L.parse_header(r[0])
        if t == 3:
            if len(r[1]) != 32 or r[1][:16] != client or hs != shard:
                fail("shard %d: malformed APPEND_ACK %s" % (shard, r[1].hex()))
            return ("ACK",) + struct.unpack("<QQ", r[1][16:]), index
        if t == L.T_ERROR:
            # frame 2 names the request: the APPEND's first event ID (5.4)
            if len(r) < 3 or len(r[2]) != 8 or struct.unpack("<Q", r[2])[0] != first:
                fail("shard %d: an ERROR to the APPEND of cseq %d does not name it: %s"
                     % (shard, first, [f.hex() for f in r[2:]]))
            return ("ERROR", L.error_text(r)[0]), index
        fail("shard %d: %s answered an APPEND" % (shard, L.TYPE_NAMES.get(t, t)))

    def expect(what, shard, pick, recs, first, ok):
        """Call until ok(answer); a chain that changes under us (ESTATE
        from a former head, ACK from a new one, silence) gets 20 s."""
        deadline = time.monotonic() + 20
        while True:
            got, index = call(shard, pick, recs, first)
            if ok(got):
                return got
            if time.monotonic() > deadline:
                fail("shard %d: %s: replica %d answered %s" % (shard, what, index, got))
            time.sleep(0.2)

    def head(members):
        return members[0]

    def not_head(members):
        return members[-1] if len(members) > 1 else None

    client = os.urandom(16)
    printed = []
    for shard in range(cl["shards"]):
        job = os.urandom(16)
        while cl["shards"] > 1 and key_hash(job) % cl["shards"] != shard:
            job = os.urandom(16)
        evs = []
        for i in range(4):
            ev = {"shard": shard, "kind": "note" if i % 2 else "job_started", "client": client.hex(),
                  "cseq": i + 1, "job": job.hex(), "info": "foreign \u00e9v\u00e9nement %d" % i}
            if i == 2:
                ev.update({"idx": -3, "name": "", "body": "00ff00", "deps": ["ab" * 20]})
            evs.append(ev)
        recs = [encode(e) for e in evs]
        got = expect("APPEND of cseq 1..3", shard, head, recs[:3], 1,
                     lambda a: a[0] == "ACK" and a[1] == 3)
        seq3 = got[2]
        expect("the same APPEND again", shard, head, recs[:3], 1, lambda a: a == got)
        expect("cseq 5 after 3 (EGAP expected)", shard, head, [encode(dict(evs[3], cseq=5))], 5,
               lambda a: a == ("ERROR", -9))
        if chain(shard)[1][1:]:
            expect("APPEND at a replica that is not the head (ESTATE expected)", shard, not_head,
                   recs[3:], 4, lambda a: a == ("ERROR", -10))
        expect("cseq 4", shard, head, recs[3:], 4, lambda a: a == ("ACK", 4, seq3 + 1))
        # a resend of events older than the newest is acknowledged with the
        # newest event's (cseq, seq): section 11.4
        expect("cseq 1..3 again, after 4", shard, head, recs[:3], 1,
               lambda a: a == ("ACK", 4, seq3 + 1))
        for i, ev in enumerate(evs):
            ev["seq"] = seq3 - 2 + i
            printed.append(ev)
    for ev in printed:
        print(json.dumps(ev, ensure_ascii=False))


# --- malformed and misdirected messages get EPROTO, naming the request -----------------------

def cmd_probe(d):
    cl = L.load_cluster(d)
    ctx = zmq.Context.instance()

    def ask(ep, frames):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(ep)
        s.send_multipart(frames)
        r = s.recv_multipart() if s.poll(5000) else None
        s.close()
        return r

    def expect_error(what, ep, frames, code, req=0):
        r = ask(ep, frames)
        if r is None:
            fail("%s: no answer (an ERROR %d expected)" % (what, code))
        t, _, _ = L.parse_header(r[0])
        got = L.error_text(r)[0] if t == L.T_ERROR else None
        rq = struct.unpack("<Q", r[2])[0] if len(r) >= 3 and len(r[2]) == 8 else None
        if t != L.T_ERROR or got != code or rq != req:
            fail("%s: %s %s (request %s) where ERROR %d (request %d) was expected"
                 % (what, L.TYPE_NAMES.get(t, t), got, rq, code, req))

    r = ask(cl["master"], [L.header(L.T_CONFIG_REQ, 0, 0)])
    if r is None:
        fail("no CONFIG from the chain master")
    _, chains = L.parse_config(r[1])
    epoch, members = chains[0]
    tail_eps, head_eps = members[-1][1], members[0][1]
    expect_error("HELLO without a body", head_eps[1], [L.header(6, 0, epoch)], -5)
    expect_error("HEARTBEAT of 3 bytes at the master", cl["master"],
                 [L.header(11, 0xffffffff, 0), b"abc"], -5)
    expect_error("JOIN of 3 bytes at the master", cl["master"], [L.header(14, 0, 0), b"abc"], -5)
    read = struct.pack("<QQII", 0x1234, 1, 10, 0)
    expect_error("READ from an epoch to come", tail_eps[2],
                 [L.header(L.T_READ, 0, epoch + 1000), read], -6, 0x1234)
    expect_error("READ from seq 0", tail_eps[2],
                 [L.header(L.T_READ, 0, epoch), struct.pack("<QQII", 77, 0, 10, 0)], -2, 77)
    # a known type at the wrong endpoint and a bad shard: the type wins
    for name, ep in (("append", head_eps[0]), ("chain", head_eps[1]), ("read", tail_eps[2])):
        expect_error("CONFIG_REQ for shard 999 at the %s endpoint" % name, ep,
                     [L.header(L.T_CONFIG_REQ, 999, epoch)], -5)


# --- a misbehaving tail ---------------------------------------------------------------------

def cmd_fake(d, mode):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    cluster = os.urandom(16)
    sock = os.path.join(d, "sock")
    os.makedirs(sock, mode=0o700, exist_ok=True)
    with open(os.path.join(d, "cluster.conf"), "w", encoding="utf-8") as f:
        f.write("cluster %s\nshards 1\nreplicas 1\nheartbeat_ms 50\ndead_ms 400\n"
                "listen ipc\nsock_dir %s\n" % (cluster.hex(), sock))
    eps = ["ipc://%s/r0.0-%s" % (sock, n) for n in ("append", "chain", "read", "pub")]
    epoch = 7
    # five chained notes
    recs, prev = [], L.genesis(cluster, 0)
    for seq in range(1, 6):
        r = encode({"kind": "note", "info": "fake %d" % seq})
        r = r[:-16] + L.chain_hash(prev, seq, r)
        prev = r[-16:]
        recs.append(r)
    if mode == "badhash":  # seq 3 altered after it was hashed
        recs[2] = recs[2].replace(b"fake 3", b"fake X")
    ctx = zmq.Context.instance()
    master = ctx.socket(zmq.ROUTER)
    master.bind("ipc://%s/master" % sock)
    mpub = ctx.socket(zmq.PUB)
    mpub.bind("ipc://%s/master-pub" % sock)
    rd = ctx.socket(zmq.ROUTER)
    rd.bind(eps[2])
    pub = ctx.socket(zmq.PUB)
    pub.bind(eps[3])
    config = cluster + struct.pack("<IIQB", 1, 0, epoch, 1) + struct.pack("<I", 0)
    for ep in eps:
        config += struct.pack("<H", len(ep)) + ep.encode()
    poller = zmq.Poller()
    poller.register(master, zmq.POLLIN)
    poller.register(rd, zmq.POLLIN)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for s, _ in poller.poll(100):
            f = s.recv_multipart()
            if s is master:
                master.send_multipart([f[0], L.header(L.T_CONFIG, 0, epoch), config])
                continue
            req, frm, mx, _ = struct.unpack("<QQII", f[2])
            if mode == "gap":
                mx = 2  # so that a second READ follows, which skips a seq
            start = 4 if mode == "gap" and frm == 3 else frm
            body = batch(start, recs[start - 1:start - 1 + mx]) if 1 <= start <= 5 else batch(frm or 1, [])
            head = L.header(L.T_READ_REP, 0, epoch)
            rd.send_multipart([f[0], head[:-1] if mode == "proto" else head,
                               struct.pack("<QQ", req, 5), body])
        pub.send_multipart([L.header(L.T_PUBLISH, 0, epoch), batch(6, [])])


def main():
    a = sys.argv[1:]
    if a[:1] == ["example"] and len(a) == 2:
        cmd_example(a[1])
    elif a[:1] == ["compare"] and len(a) in (5, 6):
        cmd_compare(a[1], a[2], int(a[3]), int(a[4]), int(a[5]) if len(a) == 6 else 0)
    elif a[:1] == ["seqs"] and len(a) == 3:
        cmd_seqs(a[1], int(a[2]))
    elif a[:1] == ["last"] and len(a) == 3:
        cmd_last(a[1], int(a[2]))
    elif a[:1] == ["append"] and len(a) == 2:
        cmd_append(a[1])
    elif a[:1] == ["probe"] and len(a) == 2:
        cmd_probe(a[1])
    elif a[:1] == ["fake"] and len(a) == 3:
        cmd_fake(a[1], a[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
