#!/usr/bin/env python3
"""lux_subscribe - follow one shard of a Lux log from another language.

A reference subscriber written from doc/protocol.md alone, with nothing but
the Python standard library and pyzmq: it reads DIR/cluster.conf, asks the
chain master for the shard's chain (CONFIG_REQ), subscribes to the tail's
PUB, catches up with READs at the tail's read endpoint, then follows the
live PUBLISH stream (the Clone pattern, doc/protocol.md section 7). It
decodes every event record, checks the hash chain from the shard's genesis
(or from the hash at --from SEQ), and prints one line or JSON object per
event. When the tail changes, it follows the master's new CONFIG.

usage: lux_subscribe.py --dir DIR --shard S [--from SEQ] [--count N] [--json]
                        [--timeout SEC] [-v]

  --from SEQ   the last seq you already have: print SEQ+1 onward. The chain
               is then anchored at the hash of SEQ, read from the tail
               (trusted, not proven); with 0 (the default) it is proven
               from the genesis.
  --count N    exit 0 after printing N events (default: follow forever).
  --json       one JSON object per line instead of text.
  --timeout S  give up when no chain master or tail has answered for S
               seconds (default 30).

Exit status: 0 done (or stopped by SIGTERM/SIGINT), 2 usage or setup
error, 3 a gap the tail could not fill, 4 a record that does not chain
onto its predecessor (or does not decode), 5 a protocol error, 6 timed out.
"""

import argparse
import hashlib
import json
import os
import signal
import struct
import sys
import time

try:
    import zmq
except ImportError:  # pragma: no cover - the test skips without pyzmq
    sys.stderr.write("lux_subscribe: needs pyzmq (apt-get install python3-zmq)\n")
    sys.exit(2)

# --- constants from doc/protocol.md -------------------------------------------

MAGIC = 0x4C
VERSION = 1
NO_SHARD = 0xFFFFFFFF
HDR = struct.Struct("<BBBBIQ")  # magic, version, type, flags, shard, epoch

T_ERROR, T_READ, T_READ_REP, T_PUBLISH, T_CONFIG, T_CONFIG_REQ = 1, 8, 9, 10, 12, 13
TYPE_NAMES = {
    1: "ERROR", 2: "APPEND", 3: "APPEND_ACK", 4: "FORWARD", 5: "CHAIN_ACK",
    6: "HELLO", 7: "SYNC", 8: "READ", 9: "READ_REP", 10: "PUBLISH",
    11: "HEARTBEAT", 12: "CONFIG", 13: "CONFIG_REQ", 14: "JOIN",
    15: "STATUS_REQ", 16: "STATUS_REP", 17: "PING", 18: "PONG",
}
ERRORS = {
    -1: "ENOMEM", -2: "EINVAL", -3: "EIO", -4: "ECORRUPT", -5: "EPROTO",
    -6: "EEPOCH", -7: "ETIMEDOUT", -8: "ENOTFOUND", -9: "EGAP", -10: "ESTATE",
    -11: "EFULL", -12: "ESQL", -13: "EREADONLY", -14: "EAUTH", -15: "EDEAD",
    -16: "ETASK", -17: "ENOSYS", -18: "EEXIST", -19: "EINTR", -20: "ESHARD",
}
KINDS = {
    1: "job_started", 2: "job_finished", 3: "module_registered",
    4: "task_submitted", 5: "task_finished", 6: "task_failed", 7: "task_retried",
    8: "object_put", 9: "object_lost", 10: "object_spilled",
    11: "actor_created", 12: "actor_call", 13: "actor_checkpoint",
    14: "actor_restarted", 15: "actor_died", 16: "node_joined", 17: "node_died", 24: "node_left",
    18: "note", 20: "checkpoint",
}
# Optional fields: (bit, name, how it is encoded), in encoding order.
FIELDS = [
    (0, "client", "client"),
    (1, "job", "id"), (2, "task", "id"), (3, "parent", "id"),
    (4, "actor", "id"), (5, "node", "id"),
    (6, "idx", "i64"), (7, "worker", "i64"), (8, "attempt", "i64"),
    (9, "status", "i64"), (10, "t_start", "i64"), (11, "t_end", "i64"),
    (12, "size", "i64"),
    (13, "name", "str16"), (14, "info", "str32"), (15, "fp", "fp"),
    (16, "deps", "deps"), (17, "body", "blob32"),
]
ALL_BITS = (1 << 18) - 1
EP_APPEND, EP_CHAIN, EP_READ, EP_PUB = range(4)

READ_MAX = 8192          # events asked for per READ
KEEP_MAX = 4096          # live messages kept while catching up
EXIT_USAGE, EXIT_GAP, EXIT_CHAIN, EXIT_PROTO, EXIT_TIMEOUT = 2, 3, 4, 5, 6


class Fatal(Exception):
    """Stop with a message and an exit status."""

    def __init__(self, status, text):
        super().__init__(text)
        self.status = status


# --- codecs -------------------------------------------------------------------

def header(mtype, shard, epoch):
    return HDR.pack(MAGIC, VERSION, mtype, 0, shard, epoch)


def parse_header(frame):
    """(type, shard, epoch) of a header frame; Fatal on anything malformed."""
    if len(frame) != HDR.size:
        raise Fatal(EXIT_PROTO, "header frame of %d bytes, not 16" % len(frame))
    magic, version, mtype, _flags, shard, epoch = HDR.unpack(frame)
    if magic != MAGIC:
        raise Fatal(EXIT_PROTO, "bad magic 0x%02x" % magic)
    if version != VERSION:
        raise Fatal(EXIT_PROTO, "protocol version %d; this reader speaks %d" % (version, VERSION))
    return mtype, shard, epoch


def parse_batch(body):
    """(first, [record bytes]) of a batch; Fatal when lengths do not add up."""
    if len(body) < 12:
        raise Fatal(EXIT_PROTO, "batch of %d bytes is shorter than its header" % len(body))
    first, count = struct.unpack_from("<QI", body, 0)
    off, recs = 12, []
    for i in range(count):
        if off + 4 > len(body):
            raise Fatal(EXIT_PROTO, "batch from seq %d: record %d of %d is truncated" % (first, i, count))
        (n,) = struct.unpack_from("<I", body, off)
        off += 4
        if off + n > len(body):
            raise Fatal(EXIT_PROTO, "batch from seq %d: record %d of %d is truncated" % (first, i, count))
        recs.append(bytes(body[off:off + n]))
        off += n
    if off != len(body):
        raise Fatal(EXIT_PROTO, "batch from seq %d: %d bytes after %d records" % (first, len(body) - off, count))
    if count and first == 0:
        raise Fatal(EXIT_PROTO, "batch starts at seq 0")
    return first, recs


def error_text(frames):
    """'EEPOCH: text' from an ERROR message's body frame."""
    body = frames[1] if len(frames) > 1 else b""
    if len(body) < 4:
        return -5, "EPROTO: (ERROR without a body)"
    (code,) = struct.unpack_from("<i", body, 0)
    text = body[4:].decode("utf-8", "replace")
    return code, "%s: %s" % (ERRORS.get(code, "error %d" % code), text)


def decode_event(rec):
    """The fields of one canonical record (doc/protocol.md section 5)."""
    if len(rec) < 30:
        raise Fatal(EXIT_CHAIN, "record of %d bytes is shorter than 30" % len(rec))
    end = len(rec) - 16
    ts, kind, mask = struct.unpack_from("<qHI", rec, 0)
    if mask & ~ALL_BITS:
        raise Fatal(EXIT_PROTO, "record has field bits this reader does not know: 0x%x" % (mask & ~ALL_BITS))
    ev = {"ts": ts, "kind": KINDS.get(kind, "kind#%d" % kind)}
    off = 14

    def take(n):
        nonlocal off
        if off + n > end:
            raise Fatal(EXIT_CHAIN, "record of %d bytes is truncated (kind %s)" % (len(rec), ev["kind"]))
        b = rec[off:off + n]
        off += n
        return b

    for bit, name, how in FIELDS:
        if not mask & (1 << bit):
            continue
        if how == "client":
            ev["client"] = take(16).hex()
            ev["cseq"] = struct.unpack("<Q", take(8))[0]
        elif how == "id" or how == "fp":
            ev[name] = take(16).hex()
        elif how == "i64":
            ev[name] = struct.unpack("<q", take(8))[0]
        elif how in ("str16", "str32"):
            n = struct.unpack("<H" if how == "str16" else "<I", take(2 if how == "str16" else 4))[0]
            raw = take(n)
            try:
                ev[name] = raw.decode("utf-8")
            except UnicodeDecodeError:
                ev[name + "_hex"] = raw.hex()
        elif how == "deps":
            n = struct.unpack("<I", take(4))[0]
            if n % 20:
                raise Fatal(EXIT_CHAIN, "deps of %d bytes is not a multiple of 20" % n)
            raw = take(n)
            ev["deps"] = [raw[i:i + 20].hex() for i in range(0, n, 20)]
        else:  # blob32
            n = struct.unpack("<I", take(4))[0]
            ev[name] = take(n).hex()
    if off != end:
        raise Fatal(EXIT_CHAIN, "record has %d trailing bytes" % (end - off))
    ev["hash"] = rec[end:].hex()
    return ev


# --- which shard (doc/protocol.md 11.1) ----------------------------------------

M64 = (1 << 64) - 1
# the field whose value chooses an event's shard, by kind (section 6.3)
KEY_OF = {1: "job", 2: "job", 3: "job", 4: "task", 5: "task", 6: "task", 7: "task",
          8: "task", 9: "task", 10: "task", 11: "actor", 12: "actor", 13: "actor",
          14: "actor", 15: "actor", 16: "node", 17: "node", 18: "job"}


def mix(x):
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def key_hash(key):
    """H of a 16-byte key: two little-endian words, whatever the host."""
    h = 0x897E7DF0071B0858
    for w in struct.unpack("<QQ", key):
        h = ((h ^ mix(w)) * 0x9E3779B97F4A7C15) & M64
        h ^= h >> 29
    return mix(h)


def shard_of(key, shards):
    """The shard of a 16-byte key in a cluster of `shards` shards."""
    return 0 if shards <= 1 else key_hash(key) % shards


def event_key(ev):
    """The key of a decoded event (the zero ID when its key field is
    absent); None for a kind this reader does not know."""
    code = {v: k for k, v in KINDS.items()}.get(ev["kind"])
    if code is None:
        return None
    return bytes.fromhex(ev.get(KEY_OF[code], "00" * 16))


def chain_hash(prev, seq, rec):
    h = hashlib.blake2b(digest_size=16)
    h.update(prev)
    h.update(struct.pack("<Q", seq))
    h.update(rec[:-16])
    return h.digest()


def genesis(cluster, shard):
    return hashlib.blake2b(b"lux-genesis-v1" + cluster + struct.pack("<I", shard), digest_size=16).digest()


def parse_config(body):
    """(cluster ID, {shard: (epoch, [(index, [4 endpoints])])}) of a CONFIG body."""
    try:
        cluster = bytes(body[:16])
        (count,) = struct.unpack_from("<I", body, 16)
        off, chains = 20, {}
        for _ in range(count):
            shard, epoch, n = struct.unpack_from("<IQB", body, off)
            off += 13
            members = []
            for _ in range(n):
                (index,) = struct.unpack_from("<I", body, off)
                off += 4
                eps = []
                for _ in range(4):
                    (ln,) = struct.unpack_from("<H", body, off)
                    off += 2
                    if off + ln > len(body):
                        raise struct.error("endpoint past the end")
                    eps.append(bytes(body[off:off + ln]).decode("utf-8"))
                    off += ln
                members.append((index, eps))
            chains[shard] = (epoch, members)
    except (struct.error, UnicodeDecodeError) as e:
        raise Fatal(EXIT_PROTO, "malformed CONFIG of %d bytes (%s)" % (len(body), e))
    if off != len(body) or len(cluster) != 16:
        raise Fatal(EXIT_PROTO, "malformed CONFIG of %d bytes" % len(body))
    return cluster, chains


# --- the cluster directory ------------------------------------------------------

def load_cluster(d):
    conf = {}
    try:
        with open(os.path.join(d, "cluster.conf"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("#"):
                    continue
                parts = line.rstrip("\n").split(None, 1)
                if len(parts) == 2:
                    conf[parts[0]] = parts[1]
    except OSError as e:
        raise Fatal(EXIT_USAGE, "%s: no cluster here (%s)" % (d, e.strerror))
    for key in ("cluster", "shards", "replicas", "sock_dir"):
        if key not in conf:
            raise Fatal(EXIT_USAGE, "%s/cluster.conf lacks %s" % (d, key))
    listen = conf.get("listen", "ipc")
    if listen.startswith("tcp://"):
        port = int(conf.get("master_port", "7379"))
        host = listen[6:]
        if host in ("*", "0.0.0.0"):
            host = "127.0.0.1"  # the master listens on every interface, this one too
        elif host in ("[::]", "[*]"):
            host = "[::1]"
        master, master_pub = "tcp://%s:%d" % (host, port), "tcp://%s:%d" % (host, port + 1)
    else:
        master = "ipc://%s/master" % conf["sock_dir"]
        master_pub = "ipc://%s/master-pub" % conf["sock_dir"]
    return {
        "cluster": bytes.fromhex(conf["cluster"]),
        "shards": int(conf["shards"]),
        "heartbeat_ms": int(conf.get("heartbeat_ms", "100")),
        "master": master,
        "master_pub": master_pub,
        "curve": load_curve(d) if listen.startswith("tcp://") else None,
    }


def load_curve(d):
    """The cluster's key pair (Z85) from keys/cluster.cert_secret."""
    keys = {}
    path = os.path.join(d, "keys", "cluster.cert_secret")
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.strip().split("=", 1)
                if len(parts) == 2 and parts[0].strip() in ("public-key", "secret-key"):
                    keys[parts[0].strip()] = parts[1].strip().strip('"').encode()
    except OSError as e:
        raise Fatal(EXIT_USAGE, "%s: %s (tcp endpoints need the cluster key)" % (path, e.strerror))
    if len(keys.get("public-key", b"")) != 40 or len(keys.get("secret-key", b"")) != 40:
        raise Fatal(EXIT_USAGE, "%s: no CURVE key pair in it" % path)
    return keys["public-key"], keys["secret-key"]


# --- the subscriber ---------------------------------------------------------------

def now_ms():
    return time.monotonic() * 1000.0


class Subscriber:
    def __init__(self, cl, shard, after, count, as_json, timeout_s, verbose):
        self.cl = cl
        self.shard = shard
        self.last = after               # newest seq delivered (or the anchor)
        self.anchored = after == 0      # do we know the hash at `last`?
        self.prev = genesis(cl["cluster"], shard) if after == 0 else None
        self.left = count               # events still to print, None: forever
        self.as_json = as_json
        self.timeout_ms = timeout_s * 1000.0
        self.verbose = verbose
        self.ctx = zmq.Context.instance()
        self.master = self.socket(zmq.DEALER, cl["master"])
        self.cfg = self.socket(zmq.SUB, cl["master_pub"])
        self.cfg.setsockopt(zmq.SUBSCRIBE, header(T_CONFIG, 0, 0)[:3])
        self.epoch = 0                  # the chain's epoch we act on
        self.tail = None                # (index, read ep, pub ep)
        self.pub = self.rd = None
        self.live = False
        self.kept = []                  # PUBLISH batches seen while catching up
        self.req = 0                    # id of the READ in flight, 0 when none
        self.next_req = 0
        self.read_from = 0
        self.read_ms = 0.0
        self.retry_ms = 0.0             # when to send a READ again after an ERROR
        self.cfg_ms = -1e9              # when CONFIG_REQ was last sent
        self.heard_ms = now_ms()        # when the master or the tail last answered
        self.pub_ms = now_ms()          # when the tail last published (even empty)
        # the tail announces its last seq at least every ~200 ms (or every
        # heartbeat when that is longer): a few missed announcements mean it
        # is gone or we are cut off, so ask the master
        self.silence_ms = max(1000.0, 5.0 * max(200, cl["heartbeat_ms"]))
        self.ask_config()

    def log(self, text, always=False):
        if always or self.verbose:
            sys.stderr.write("lux_subscribe: shard %d: %s\n" % (self.shard, text))
            sys.stderr.flush()

    def socket(self, kind, ep):
        s = self.ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        if self.cl["curve"] and ep.startswith("tcp://"):
            public, secret = self.cl["curve"]
            s.curve_publickey = public
            s.curve_secretkey = secret
            s.curve_serverkey = public  # every server uses the cluster's pair
        if kind == zmq.SUB:
            s.setsockopt(zmq.RCVHWM, 100000)
        s.connect(ep)
        return s

    # --- configuration -------------------------------------------------------

    def ask_config(self):
        if now_ms() - self.cfg_ms < 100:
            return
        self.cfg_ms = now_ms()
        self.master.send_multipart([header(T_CONFIG_REQ, self.shard, 0)])

    def on_config(self, frames):
        mtype, _shard, _epoch = parse_header(frames[0])
        if mtype == T_ERROR:
            self.log("chain master: %s" % error_text(frames)[1], always=True)
            return
        if mtype != T_CONFIG or len(frames) < 2:
            return
        cluster, chains = parse_config(frames[1])
        if cluster != self.cl["cluster"]:
            raise Fatal(EXIT_PROTO, "the chain master serves cluster %s, cluster.conf says %s"
                        % (cluster.hex(), self.cl["cluster"].hex()))
        self.heard_ms = now_ms()
        if self.shard not in chains:
            return
        epoch, members = chains[self.shard]
        if epoch < self.epoch or not members:
            return
        index, eps = members[-1]
        tail = (index, eps[EP_READ], eps[EP_PUB])
        newer = epoch > self.epoch
        self.epoch = epoch
        if not tail[1] or not tail[2]:
            self.log("epoch %d: the tail has not reported its endpoints yet" % epoch)
            return
        if tail != self.tail or self.rd is None:
            self.log("epoch %d: tail is replica %d, read %s, pub %s" % (epoch, index, tail[1], tail[2]),
                     always=True)
            self.connect(tail)
        elif newer:
            self.log("epoch %d: same tail, catching up again" % epoch)
            self.catch_up()

    def connect(self, tail):
        for s in (self.pub, self.rd):
            if s is not None:
                s.close()
        self.tail = tail
        # subscribe first, then read: what is published after the
        # subscription takes effect arrives live; what came before is read
        self.pub = self.socket(zmq.SUB, tail[2])
        self.pub.setsockopt(zmq.SUBSCRIBE, header(T_PUBLISH, 0, 0)[:3])
        self.rd = self.socket(zmq.DEALER, tail[1])
        self.pub_ms = now_ms()
        self.kept = []
        self.catch_up()

    # --- catching up -----------------------------------------------------------

    def catch_up(self):
        self.live = False
        self.req = 0  # a late answer to an older READ is recognised and dropped
        self.send_read()

    def send_read(self):
        if self.rd is None:
            return
        self.next_req += 1
        self.req = self.next_req
        # without the hash at `last`, read `last` itself to anchor the chain
        self.read_from = self.last + 1 if self.anchored else self.last
        body = struct.pack("<QQII", self.req, self.read_from, READ_MAX, 0)
        self.rd.send_multipart([header(T_READ, self.shard, self.epoch), body])
        self.read_ms = now_ms()
        self.log("READ %d from seq %d at epoch %d" % (self.req, self.read_from, self.epoch))

    def on_read_reply(self, frames):
        mtype, shard, _epoch = parse_header(frames[0])
        if mtype == T_ERROR:
            code, text = error_text(frames)
            if code in (-5, -17, -2):
                # EPROTO, ENOSYS, EINVAL: the tail could not parse what we
                # sent, speaks another version, or finds our READ invalid
                raise Fatal(EXIT_PROTO, "the tail refused our READ: %s" % text)
            # EEPOCH / ESTATE / ESHARD: not the tail of this shard at our
            # epoch (any more); others are the tail's trouble: ask the
            # master and try again
            self.log("READ refused: %s" % text)
            self.req = 0
            self.retry_ms = now_ms() + 200
            self.ask_config()
            return
        if mtype != T_READ_REP or shard != self.shard:
            raise Fatal(EXIT_PROTO, "expected READ_REP for shard %d, got %s for shard %d"
                        % (self.shard, TYPE_NAMES.get(mtype, mtype), shard))
        if len(frames) != 3 or len(frames[1]) != 16:
            raise Fatal(EXIT_PROTO, "READ_REP with %d frames" % len(frames))
        req, tail_last = struct.unpack("<QQ", frames[1])
        if req != self.req or self.req == 0:
            return  # an answer to a READ we gave up on
        self.req = 0
        self.heard_ms = now_ms()
        first, recs = parse_batch(frames[2])
        if recs and first != self.read_from:
            raise Fatal(EXIT_GAP, "READ from seq %d was answered from seq %d" % (self.read_from, first))
        if not recs and tail_last >= self.read_from:
            raise Fatal(EXIT_GAP, "the tail says its last seq is %d but returned nothing from %d"
                        % (tail_last, self.read_from))
        self.take(first, recs)
        if not self.anchored:
            # the tail does not have seq `last` yet: wait for it
            self.retry_ms = now_ms() + 200
            return
        if self.last >= tail_last:
            self.log("caught up at seq %d (tail has %d); live" % (self.last, tail_last))
            self.live = True
            self.replay_kept()
        else:
            self.send_read()

    # --- live ------------------------------------------------------------------------

    def on_publish(self, frames):
        mtype, shard, epoch = parse_header(frames[0])
        if mtype != T_PUBLISH or shard != self.shard or len(frames) != 2:
            return
        self.pub_ms = now_ms()
        self.heard_ms = self.pub_ms
        if epoch > self.epoch:
            self.ask_config()  # a configuration we have not seen yet
        first, recs = parse_batch(frames[1])
        if not self.live:
            if recs:
                self.kept.append((first, recs))
                del self.kept[:-KEEP_MAX]
            return
        self.live_batch(first, recs)

    def live_batch(self, first, recs):
        """Deliver a live batch; on a gap, keep it and catch up."""
        if first > self.last + 1:
            # an empty batch announces first-1 as the tail's last seq
            self.log("gap: have seq %d, the tail %s seq %d; reading"
                     % (self.last, "publishes from" if recs else "announces", first - (0 if recs else 1)))
            if recs:
                self.kept.append((first, recs))
            self.catch_up()
            return False
        self.take(first, recs)
        return True

    def replay_kept(self):
        kept, self.kept = self.kept, []
        for i, (first, recs) in enumerate(kept):
            if not self.live_batch(first, recs):
                self.kept = kept[i + 1:] + self.kept
                return

    # --- delivery ----------------------------------------------------------------------

    def take(self, first, recs):
        """Check and print the records of a batch after `last`."""
        for i, rec in enumerate(recs):
            seq = first + i
            if not self.anchored:
                if seq == self.last:
                    if len(rec) < 30:
                        raise Fatal(EXIT_CHAIN, "seq %d: record of %d bytes" % (seq, len(rec)))
                    self.prev = rec[-16:]
                    self.anchored = True
                    self.log("anchored at seq %d, hash %s" % (seq, self.prev.hex()))
                continue
            if seq <= self.last:
                continue  # we have it: a duplicate is dropped
            if seq != self.last + 1:
                raise Fatal(EXIT_GAP, "seq %d follows seq %d" % (seq, self.last))
            ev = decode_event(rec)
            want = chain_hash(self.prev, seq, rec)
            if want != rec[-16:]:
                raise Fatal(EXIT_CHAIN, "seq %d: hash %s does not chain onto seq %d (expected %s)"
                            % (seq, rec[-16:].hex(), self.last, want.hex()))
            self.prev = want
            self.last = seq
            self.emit(seq, ev)
            if self.left is not None:
                self.left -= 1
                if self.left <= 0:
                    raise SystemExit(0)

    def emit(self, seq, ev):
        if self.as_json:
            out = {"shard": self.shard, "seq": seq}
            out.update(ev)
            line = json.dumps(out, ensure_ascii=False)
        else:
            parts = ["%d:%d" % (self.shard, seq), ev["kind"]]
            for k, v in ev.items():
                if k == "kind":
                    continue
                if isinstance(v, str) and k in ("name", "info"):
                    v = json.dumps(v, ensure_ascii=False)
                elif isinstance(v, list):
                    v = ",".join(v)
                parts.append("%s=%s" % (k, v))
            line = " ".join(parts)
        # bytes, so that the output is UTF-8 whatever the locale says
        sys.stdout.buffer.write(line.encode("utf-8", "backslashreplace") + b"\n")
        sys.stdout.flush()

    # --- the loop ------------------------------------------------------------------------

    def run(self):
        while True:
            poller = zmq.Poller()
            socks = [s for s in (self.master, self.cfg, self.rd, self.pub) if s is not None]
            for s in socks:
                poller.register(s, zmq.POLLIN)
            for s, _ in poller.poll(100):
                frames = s.recv_multipart()
                if not frames:
                    continue
                if s is self.master or s is self.cfg:
                    self.on_config(frames)
                    break  # the tail's sockets may have changed
                if s is self.rd:
                    self.on_read_reply(frames)
                elif s is self.pub:
                    self.on_publish(frames)
            self.tick()

    def tick(self):
        t = now_ms()
        if self.rd is None:
            self.ask_config()  # no tail known yet
        elif not self.live:
            if self.req == 0 and t >= self.retry_ms:
                self.send_read()
            elif self.req and t - self.read_ms > 2000:
                self.log("READ %d unanswered for 2 s; asking the master" % self.req)
                self.ask_config()
                self.send_read()
        elif t - self.pub_ms > self.silence_ms:
            self.log("the tail has been silent for %d ms; asking the master" % (t - self.pub_ms))
            self.pub_ms = t
            self.ask_config()
            self.catch_up()  # answered only if it is still the tail
        if t - self.heard_ms > self.timeout_ms:
            what = "chain master" if self.rd is None else "tail (%s)" % self.tail[1]
            raise Fatal(EXIT_TIMEOUT, "no answer from the %s for %d s" % (what, self.timeout_ms / 1000))


def main():
    ap = argparse.ArgumentParser(description="Follow one shard of a Lux log (reference subscriber).")
    ap.add_argument("--dir", required=True, help="the cluster directory (holds cluster.conf)")
    ap.add_argument("--shard", type=int, required=True)
    ap.add_argument("--from", dest="after", type=int, default=0, metavar="SEQ",
                    help="the last seq you have; print SEQ+1 onward")
    ap.add_argument("--count", type=int, default=None, help="exit after N events")
    ap.add_argument("--json", action="store_true", help="one JSON object per event")
    ap.add_argument("--timeout", type=float, default=30.0, metavar="SEC")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        cl = load_cluster(a.dir)
        if not 0 <= a.shard < cl["shards"]:
            raise Fatal(EXIT_USAGE, "no shard %d (the cluster has %d)" % (a.shard, cl["shards"]))
        if a.after < 0 or (a.count is not None and a.count < 1):
            raise Fatal(EXIT_USAGE, "--from must be >= 0 and --count >= 1")
        Subscriber(cl, a.shard, a.after, a.count, a.json, a.timeout, a.verbose).run()
    except Fatal as e:
        sys.stderr.write("lux_subscribe: shard %d: %s\n" % (a.shard, e))
        return e.status
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
