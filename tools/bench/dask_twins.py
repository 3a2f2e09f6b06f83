#!/usr/bin/env python3
"""dask_twins - Dask distributed twins of `lux bench` benchmarks.

usage: dask_twins.py [--json] [--quick] [--list] [--version] [--scale F]
                     [--repeats N] [--deadline S] [--per-task] [--bytes-object]
                     [NAME...]

Each function below has the name of a `lux bench` benchmark and does the
same work on a Dask LocalCluster of 2 worker processes x 1 thread over TCP
on 127.0.0.1 with default settings. Each benchmark starts its own cluster,
runs a warm-up, then timed repeats, and reports the median as one result,
printed as a table row or (--json) one JSON object per line, the format of
`lux bench --json`:

    {"name": "single_client_tasks_async", "value": 612.3, "unit": "tasks/s",
     "n": 10000, "repeats": 3, "min": ..., "max": ..., "seconds": ...,
     "peak_rss_mb": ...}

peak_rss_mb is the largest sum of the resident set sizes of this process and
all its descendants (scheduler and client here, worker processes, client
processes), sampled every 50 ms by a separate process so that sampling does
not take the GIL of the process that runs the scheduler. MiB (2^20 bytes),
as `lux bench` reports it; GB/s figures use 1 GB = 1e9 bytes.

Every benchmark has a deadline (--deadline, seconds): a repeat that runs
past it is cut short, what was measured is reported with a "note", and no
further repeats run. A watchdog kills this script's own child processes (by
PID) and exits if closing the cluster hangs well past the deadline.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
SYSTEM_PYTHON = "/usr/bin/python3"  # where Debian's python3-distributed lives

# ---------------------------------------------------------------------------
# Process trees and their memory (/proc only, no psutil)


def _ppids():
    """{pid: ppid} for every process we can read."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d, "rb") as f:
                s = f.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: split after the last ')'
        rest = s[s.rfind(b")") + 2:].split()
        if len(rest) > 1:
            out[int(d)] = int(rest[1])
    return out


def proc_tree(root):
    """root and all its descendants (pids), root first."""
    kids = {}
    for pid, ppid in _ppids().items():
        kids.setdefault(ppid, []).append(pid)
    tree, todo = [], [root]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(kids.get(p, ()))
    return tree


def tagged_pids(tag):
    """Processes whose environment holds tag (b"NAME=value"): a marker set
    for a command is inherited by everything it starts, daemons that
    detached from it (new session, parent 1) included."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if tag in f.read().split(b"\0"):
                    out.append(int(d))
        except OSError:
            continue
    return out


def rss_bytes(pid):
    try:
        with open("/proc/%d/statm" % pid, "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


class RssSampler(threading.Thread):
    """Peak of the summed RSS of a process tree (and of the processes that
    carry tag in their environment, when given), sampled every `interval`
    seconds. The tree is re-read from /proc every `rescan` seconds (a full
    /proc walk costs milliseconds); in between only the known processes'
    statm files are read."""

    def __init__(self, root, interval=0.05, rescan=0.5, exclude=(), tag=None):
        super().__init__(daemon=True)
        self.root, self.interval, self.rescan, self.tag = root, interval, rescan, tag
        self.exclude = set(exclude)
        self.lock = threading.Lock()
        self.peak = 0
        self.stopping = threading.Event()

    def run(self):
        pids, scanned = [], 0.0
        while not self.stopping.is_set():
            now = time.monotonic()
            if now - scanned >= self.rescan:
                found = set(proc_tree(self.root))
                if self.tag:
                    found.update(tagged_pids(self.tag))
                pids = [p for p in found if p not in self.exclude]
                scanned = now
            total = sum(rss_bytes(p) for p in pids)
            with self.lock:
                self.peak = max(self.peak, total)
            self.stopping.wait(self.interval)

    def take(self):
        """The peak since the last take(), in bytes; resets it."""
        with self.lock:
            p, self.peak = self.peak, 0
        return p

    def stop(self):
        self.stopping.set()
        self.join(2)


class RssProbe:
    """An RssSampler of this process's tree, run in a child process (this
    very script with --_rss-sampler) so it never competes for our GIL."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--_rss-sampler", str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def take_mb(self):
        try:
            self.proc.stdin.write("take\n")
            self.proc.stdin.flush()
            return int(self.proc.stdout.readline()) / 1048576.0
        except (OSError, ValueError):
            return None

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def _rss_sampler_main(root):
    s = RssSampler(root, exclude={os.getpid()})
    s.start()
    for line in sys.stdin:
        if line.strip() == "take":
            print(s.take(), flush=True)
    s.stop()


def kill_pids(pids, why, who="dask_twins"):
    """Last resort: SIGTERM, then SIGKILL, the given pids (the caller's own
    children and their descendants, found with proc_tree)."""
    if not pids:
        return
    print("%s: %s; killing pids %s" % (who, why, " ".join(map(str, pids))), file=sys.stderr)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        end = time.monotonic() + 3
        while time.monotonic() < end and any(os.path.exists("/proc/%d" % p) for p in pids):
            for p in pids:
                try:
                    os.waitpid(p, os.WNOHANG)
                except OSError:
                    pass
            time.sleep(0.05)


# ---------------------------------------------------------------------------
# The work: module-level so that workers and client processes can load it


def noop(*args):
    return None


def inc(x):
    return x + 1


def add(a, b):
    return a + b


class Nop:
    """The actor: one method that does nothing."""

    def call(self):
        return None


# ---------------------------------------------------------------------------
# Benchmarks

BENCHES = []  # (name, function, unit, what)


def bench(name, unit, what):
    def reg(fn):
        BENCHES.append((name, fn, unit, what))
        return fn
    return reg


class Ctx:
    def __init__(self, args):
        self.json = args.json
        self.scale = args.scale or (0.05 if args.quick else 1.0)
        self.repeats = args.repeats or (2 if args.quick else 3)
        self.deadline_s = args.deadline or (120.0 if args.quick else 600.0)
        self.per_task = args.per_task
        self.bytes_object = args.bytes_object
        self.deadline = None  # monotonic time, set per benchmark

    def n(self, full, least=1):
        return max(least, int(round(full * self.scale)))

    def left(self):
        return self.deadline - time.monotonic()

    def expired(self):
        return time.monotonic() >= self.deadline


def start_cluster():
    """The peers file's set-up: 2 worker processes x 1 thread, TCP on
    127.0.0.1, everything else left at its default."""
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True)
    try:
        return cluster, Client(cluster)
    except BaseException:
        stop_cluster(cluster, None)
        raise


def stop_cluster(cluster, client):
    for what in (client, cluster):
        if what is None:
            continue
        try:
            what.close(timeout=30)
        except Exception as e:  # closing must not hide the result
            print("dask_twins: closing %s: %s" % (type(what).__name__, e), file=sys.stderr)


class Cluster:
    """with Cluster() as c: a LocalCluster and its Client, closed on exit."""

    def __enter__(self):
        self.cluster, self.client = None, None
        try:
            self.cluster, self.client = start_cluster()
        except BaseException:
            stop_cluster(self.cluster, self.client)
            raise
        return self.client

    def __exit__(self, *exc):
        stop_cluster(self.cluster, self.client)
        return False


def workers(c):
    """The workers' addresses, sorted."""
    return sorted(c.scheduler_info()["workers"])


def repeats(ctx, one, warm):
    """Run one() (a timed repeat returning a dict with at least "value" and
    "seconds", and "note" when the deadline cut it short) ctx.repeats times,
    stopping early at the deadline. Returns the list of results; when the
    warm-up (whose result is warm) left no time for any, the warm-up's,
    with a note."""
    out = []
    for _ in range(ctx.repeats):
        if ctx.expired():
            break
        r = one()
        out.append(r)
        if r.get("note"):
            break
    if not out:
        note = "deadline: no timed repeat ran; this is the warm-up's figure"
        if warm.get("note"):
            note += " (%s)" % warm["note"]
        out.append(dict(warm, note=note))
    return out


def summarise(samples, **extra):
    """A result's value and extra fields from the repeats."""
    vals = [s["value"] for s in samples if s.get("value") is not None]
    res = dict(extra)
    notes = [s["note"] for s in samples if s.get("note")]
    if not vals:
        res["value"] = None
        ks = [s["tasks_per_s"] for s in samples if "tasks_per_s" in s]
        if ks:
            res["tasks_per_s"] = ks[0]
        res["note"] = "; ".join(notes) or "no repeat finished before the deadline"
        return res
    res["value"] = statistics.median(vals)
    res["repeats"] = len(vals)
    res["min"] = min(vals)
    res["max"] = max(vals)
    res["seconds"] = statistics.median(s["seconds"] for s in samples if s.get("value") is not None)
    for k in ("tasks_per_s",):
        ks = [s[k] for s in samples if k in s]
        if ks:
            res[k] = statistics.median(ks)
    if notes:
        res["note"] = "; ".join(notes)
    return res


def rate(done, n, seconds, what="ops"):
    r = {"value": done / seconds if seconds > 0 else None, "seconds": seconds}
    if done < n:
        r["note"] = "deadline: %d of %d %s done in this repeat" % (done, n, what)
    return r


def sync_loop(ctx, n, op, what="ops"):
    """n calls of op() one after another, cut at the deadline."""
    done = 0
    t = time.perf_counter()
    while done < n and not ctx.expired():
        op()
        done += 1
    return rate(done, n, time.perf_counter() - t, what)


def wait_all(ctx, futures):
    """Wait for futures until the deadline; how many are done."""
    from distributed import wait
    try:
        wait(futures, timeout=max(ctx.left(), 0.001))
    except Exception:  # distributed's TimeoutError
        pass
    return sum(1 for f in futures if f.done())


# --- start-up ------------------------------------------------------------------


@bench("embedded_start_ms", "ms",
       "ms from nothing to a ready cluster and a first no-op task's result")
def embedded_start_ms(ctx):
    # Each repeat starts a new cluster from nothing (the interpreter and the
    # distributed modules are already loaded: the warm-up imported them, as a
    # Lux client has its library loaded) and submits one no-op.
    def one():
        t = time.perf_counter()
        cluster = client = None
        try:
            cluster, client = start_cluster()
            client.submit(noop, pure=False).result()
            ms = (time.perf_counter() - t) * 1e3
        finally:
            stop_cluster(cluster, client)
        return {"value": ms, "seconds": ms / 1e3}

    w = one()  # warm-up: imports, first spawn, page cache
    res = summarise(repeats(ctx, one, w), n=1)
    if not ctx.expired():
        res["fresh_process_ms"] = fresh_process_ms()
    return res


FRESH = """
import time, sys
t = time.perf_counter()
from distributed import Client, LocalCluster
def noop():
    return None
if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cl, Client(cl) as c:
        c.submit(noop, pure=False).result()
        print((time.perf_counter() - t) * 1e3, flush=True)
"""


def fresh_process_ms():
    """Once: ms from starting a new Python process to the first result, the
    import of distributed included (embedded_start_ms has it loaded)."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", FRESH], stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        ms = (time.perf_counter() - t) * 1e3
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None
    return round(ms, 1) if line.strip() else None


# --- tasks -----------------------------------------------------------------------


@bench("single_client_tasks_sync", "tasks/s",
       "submit one no-op task and wait for its result, repeated")
def single_client_tasks_sync(ctx):
    n = ctx.n(500)
    with Cluster() as c:
        op = lambda: c.submit(noop, pure=False).result()
        w = sync_loop(ctx, max(1, n // 5), op)
        return summarise(repeats(ctx, lambda: sync_loop(ctx, n, op, "tasks"), w), n=n)


def async_tasks(ctx, c, n):
    t = time.perf_counter()
    futs = c.map(noop, range(n), pure=False)
    done = wait_all(ctx, futs)
    if done == n:
        c.gather(futs)
    else:
        c.cancel(futs)
    return rate(done, n, time.perf_counter() - t, "tasks")


@bench("single_client_tasks_async", "tasks/s",
       "submit N no-op tasks (client.map), then wait for all (gather)")
def single_client_tasks_async(ctx):
    n = ctx.n(10000)
    with Cluster() as c:
        w = async_tasks(ctx, c, max(1, n // 5))
        return summarise(repeats(ctx, lambda: async_tasks(ctx, c, n), w), n=n)


# --- several clients, each in a process of its own ----------------------------------
#
# A Client in a thread of this process would share the GIL with the other
# clients and with the scheduler (LocalCluster runs it in this process), so
# the clients would mostly measure the GIL. Client processes, like Ray's
# client actors in its multi_client benchmarks, each have a GIL and an event
# loop of their own and talk to the scheduler over TCP as any remote client.

N_CLIENTS = 4


def _client_main(address, worker, cmds, results):
    """A client process: connect, then obey commands from cmds."""
    from distributed import Client
    client = Client(address)
    actor = None
    results.put(("ready", os.getpid()))
    try:
        while True:
            cmd = cmds.get()
            if cmd[0] == "stop":
                break
            if cmd[0] == "actor":
                actor = client.submit(Nop, actor=True, workers=[worker], pure=False).result()
                results.put(("ok",))
                continue
            _, what, n, deadline = cmd
            t0 = time.monotonic()
            if what == "tasks":
                futs = client.map(noop, range(n), pure=False)
                try:
                    from distributed import wait
                    wait(futs, timeout=max(deadline - time.monotonic(), 0.001))
                except Exception:
                    pass
                done = sum(1 for f in futs if f.done())
                if done < n:
                    client.cancel(futs)
            else:
                done = actor_batches([actor], n, deadline)
            results.put(("done", t0, time.monotonic(), done))
    finally:
        client.close()


ACTOR_WINDOW = 1000


def actor_batches(actors, n, deadline):
    """n calls spread round-robin over actors, in batches of ACTOR_WINDOW:
    make a batch of calls, wait for all their results, next batch (Ray's
    actor benchmarks do the same, 1000 at a time; with all calls in flight
    at once Dask opens a connection per call and slows down). How many
    calls finished before the deadline."""
    done = 0
    while done < n:
        futs = [actors[i % len(actors)].call()
                for i in range(done, min(n, done + ACTOR_WINDOW))]
        for f in futs:
            left = deadline - time.monotonic()
            if left <= 0:
                return done
            try:
                f.result(timeout=left)
            except Exception:
                return done
            done += 1
    return done


class ClientProcs:
    """N_CLIENTS client processes connected to the cluster of client c."""

    def __init__(self, c, workers):
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        self.results = ctx.Queue()
        self.cmds = [ctx.Queue() for _ in range(N_CLIENTS)]
        self.procs = [ctx.Process(target=_client_main, daemon=True,
                                  args=(c.scheduler.address, workers[i % len(workers)],
                                        self.cmds[i], self.results))
                      for i in range(N_CLIENTS)]
        for p in self.procs:
            p.start()
        for _ in self.procs:
            self.results.get(timeout=120)

    def all(self, cmd, timeout):
        for q in self.cmds:
            q.put(cmd)
        return [self.results.get(timeout=timeout) for _ in self.procs]

    def run(self, ctx, what, n_each):
        """Every client does n_each operations at once; the rate over the
        span from the first start to the last end."""
        r = self.all(("run", what, n_each, ctx.deadline), ctx.left() + 60)
        span = max(x[2] for x in r) - min(x[1] for x in r)
        return rate(sum(x[3] for x in r), n_each * len(r), span,
                    "tasks" if what == "tasks" else "calls")

    def close(self):
        for q in self.cmds:
            q.put(("stop",))
        for p in self.procs:
            p.join(30)
            if p.is_alive():
                p.kill()
                p.join()


@bench("multi_client_tasks_async", "tasks/s",
       "%d client processes, each submitting N/%d no-op tasks then waiting for all"
       % (N_CLIENTS, N_CLIENTS))
def multi_client_tasks_async(ctx):
    n_each = ctx.n(10000) // N_CLIENTS or 1
    with Cluster() as c:
        cp = ClientProcs(c, workers(c))
        try:
            w = cp.run(ctx, "tasks", max(1, n_each // 5))
            res = repeats(ctx, lambda: cp.run(ctx, "tasks", n_each), w)
        finally:
            cp.close()
        return summarise(res, n=n_each * N_CLIENTS, clients=N_CLIENTS)


# --- objects ----------------------------------------------------------------------


@bench("single_client_put_calls", "ops/s",
       "client.scatter of a 100 B bytes object (through the scheduler)")
def single_client_put_calls(ctx):
    # direct=False (the default here) was faster than direct=True for small
    # objects on this machine (about 640 vs 510 ops/s). hash=False gives each
    # put a key of its own, as each put in Lux makes a new object; the
    # returned future is dropped, so the object is released, as in Ray's loop.
    n = ctx.n(2000)
    payload = os.urandom(100)
    with Cluster() as c:
        op = lambda: c.scatter(payload, direct=False, hash=False)
        w = sync_loop(ctx, max(1, n // 5), op)
        return summarise(repeats(ctx, lambda: sync_loop(ctx, n, op), w), n=n, bytes=100,
                         object="bytes", direct=False)


@bench("single_client_get_calls", "ops/s",
       "client.gather of a 100 B object already on a worker")
def single_client_get_calls(ctx):
    n = ctx.n(2000)
    with Cluster() as c:
        fut = c.scatter(os.urandom(100), hash=False)
        op = lambda: c.gather(fut, direct=False)
        w = sync_loop(ctx, max(1, n // 5), op)
        return summarise(repeats(ctx, lambda: sync_loop(ctx, n, op), w), n=n, bytes=100,
                         object="bytes", direct=False)


def big_object(ctx, nbytes):
    """A numpy uint8 array of random bytes (Dask sends its buffer without
    copying it through pickle), or with --bytes-object a bytes object (which
    pickle copies, 2-4x slower). Random, because Dask compresses messages
    with lz4 when that pays, and random data, like float weights, does not
    compress: the transfer is what is measured."""
    try:
        import numpy as np
    except ImportError:
        raise RuntimeError("numpy is not installed (Debian: python3-numpy)") from None
    data = np.random.default_rng(5).bytes(nbytes)
    if ctx.bytes_object:
        return data, "bytes"
    return np.frombuffer(data, dtype=np.uint8), "numpy.ndarray uint8"


def forget(c, key, timeout=10):
    """Wait (untimed) until the scheduler has released key."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and key in c.who_has():
        time.sleep(0.05)


@bench("single_client_put_gigabytes", "GB/s",
       "client.scatter(direct=True) of a 1 GB numpy uint8 array")
def single_client_put_gigabytes(ctx):
    # direct=True sends the array straight to a worker; through the
    # scheduler it was 2-3x slower here.
    nbytes = ctx.n(10**9)
    arr, kind = big_object(ctx, nbytes)

    def one(c):
        t = time.perf_counter()
        f = c.scatter(arr, direct=True, hash=False)
        s = time.perf_counter() - t
        key = f.key
        del f
        forget(c, key)
        return {"value": nbytes / 1e9 / s, "seconds": s}

    with Cluster() as c:
        w = one(c)
        return summarise(repeats(ctx, lambda: one(c), w), n=1, bytes=nbytes, object=kind,
                         direct=True)


@bench("single_client_get_gigabytes", "GB/s",
       "client.gather(direct=True) of a 1 GB numpy uint8 array held by a worker")
def single_client_get_gigabytes(ctx):
    nbytes = ctx.n(10**9)
    with Cluster() as c:
        data, kind = big_object(ctx, nbytes)
        fut = c.scatter(data, direct=True, hash=False)
        del data

        def one():
            t = time.perf_counter()
            x = c.gather(fut, direct=True)
            s = time.perf_counter() - t
            assert len(x) == nbytes
            del x
            return {"value": nbytes / 1e9 / s, "seconds": s}

        w = one()
        return summarise(repeats(ctx, one, w), n=1, bytes=nbytes, object=kind, direct=True)


@bench("single_client_wait_1k_refs", "rounds/s",
       "as Ray's: submit 1000 no-op tasks, then wait for one at a time until none is left")
def single_client_wait_1k_refs(ctx):
    from distributed import wait
    n = ctx.n(3)  # a round takes Dask about 12 s here

    def op(c):
        not_ready = c.map(noop, range(1000), pure=False)
        while not_ready:
            done, rest = wait(not_ready, return_when="FIRST_COMPLETED",
                              timeout=max(ctx.left(), 1))
            if not done:
                raise TimeoutError("nothing finished before the deadline")
            # take one, as ray.wait(num_returns=1) does
            one = next(iter(done))
            not_ready = [f for f in not_ready if f is not one]

    with Cluster() as c:
        w = sync_loop(ctx, 1, lambda: op(c), "rounds")
        return summarise(repeats(ctx, lambda: sync_loop(ctx, n, lambda: op(c), "rounds"), w),
                         n=n, refs=1000)


# --- actors ---------------------------------------------------------------------------


def make_actor(c, worker):
    return c.submit(Nop, actor=True, workers=[worker], pure=False).result()


@bench("1_1_actor_calls_sync", "calls/s",
       "one client calls one actor's no-op method and waits, repeated")
def actor_1_1_sync(ctx):
    n = ctx.n(1000)
    with Cluster() as c:
        a = make_actor(c, workers(c)[0])
        op = lambda: a.call().result()
        w = sync_loop(ctx, max(1, n // 5), op)
        return summarise(repeats(ctx, lambda: sync_loop(ctx, n, op, "calls"), w), n=n)


def actor_calls_async(ctx, actors, n):
    t = time.perf_counter()
    done = actor_batches(actors, n, ctx.deadline)
    return rate(done, n, time.perf_counter() - t, "calls")


@bench("1_1_actor_calls_async", "calls/s",
       "one client makes N calls to one actor, 1000 in flight at a time")
def actor_1_1_async(ctx):
    n = ctx.n(5000)
    with Cluster() as c:
        a = [make_actor(c, workers(c)[0])]
        w = actor_calls_async(ctx, a, max(1, n // 5))
        return summarise(repeats(ctx, lambda: actor_calls_async(ctx, a, n), w), n=n,
                         window=ACTOR_WINDOW)


@bench("n_n_actor_calls_async", "calls/s",
       "%d client processes, each making N/%d calls to an actor of its own, 1000 at a time"
       % (N_CLIENTS, N_CLIENTS))
def actor_n_n_async(ctx):
    # the actors alternate between the two workers (workers=), so both
    # workers serve calls; the client processes are those of
    # multi_client_tasks_async
    n_each = ctx.n(5000) // N_CLIENTS or 1
    with Cluster() as c:
        cp = ClientProcs(c, workers(c))
        try:
            cp.all(("actor",), 120)
            w = cp.run(ctx, "actor", max(1, n_each // 5))
            res = repeats(ctx, lambda: cp.run(ctx, "actor", n_each), w)
        finally:
            cp.close()
        return summarise(res, n=n_each * N_CLIENTS, clients=N_CLIENTS, actors=N_CLIENTS,
                         window=ACTOR_WINDOW)


@bench("1_n_actor_calls_async", "calls/s",
       "one client makes N calls round-robin over %d actors, 1000 at a time" % N_CLIENTS)
def actor_1_n_async(ctx):
    n = ctx.n(5000)
    with Cluster() as c:
        ws = workers(c)
        actors = [make_actor(c, ws[i % len(ws)]) for i in range(N_CLIENTS)]
        w = actor_calls_async(ctx, actors, max(1, n // 5))
        return summarise(repeats(ctx, lambda: actor_calls_async(ctx, actors, n), w), n=n,
                         actors=N_CLIENTS, window=ACTOR_WINDOW)


# --- DAGs -----------------------------------------------------------------------------
#
# By default a DAG goes to the scheduler as one graph (client.get of a dict
# of tasks, what dask.delayed and dask collections do): 2-3x faster than one
# client.submit per task for the tree. --per-task submits each task with
# client.submit, passing the previous futures, as a Ray-style program would.


def dag_run(ctx, c, dsk, out_key, futs_final, ntasks):
    """Run a DAG; the result dict (seconds, tasks/s) or a note."""
    t = time.perf_counter()
    if futs_final is None:
        final = c.get(dsk, out_key, sync=False)
    else:
        final = futs_final()
    done = wait_all(ctx, [final])
    s = time.perf_counter() - t
    if not done:
        c.cancel([final])
        return {"value": None, "seconds": s,
                "note": "deadline: the DAG had not finished after %.1f s" % s}
    final.result()
    return {"value": s, "seconds": s, "tasks_per_s": ntasks / s}


def chain(ctx, c, n):
    import uuid
    if ctx.per_task:
        def submit():
            f = c.submit(inc, 0, pure=False)
            for _ in range(n - 1):
                f = c.submit(inc, f, pure=False)
            return f
        return dag_run(ctx, c, None, None, submit, n)
    p = "chain-" + uuid.uuid4().hex
    dsk = {"%s-0" % p: (inc, 0)}
    for i in range(1, n):
        dsk["%s-%d" % (p, i)] = (inc, "%s-%d" % (p, i - 1))
    return dag_run(ctx, c, dsk, "%s-%d" % (p, n - 1), None, n)


def tree(ctx, c, leaves):
    """Pairwise reduction: leaves tasks, then leaves-1 adds (an odd one out
    moves up a level)."""
    import uuid
    if ctx.per_task:
        def submit():
            level = [c.submit(inc, i, pure=False) for i in range(leaves)]
            while len(level) > 1:
                nxt = [c.submit(add, level[i], level[i + 1], pure=False)
                       for i in range(0, len(level) - 1, 2)]
                if len(level) % 2:
                    nxt.append(level[-1])
                level = nxt
            return level[0]
        return dag_run(ctx, c, None, None, submit, 2 * leaves - 1)
    p = "tree-" + uuid.uuid4().hex
    dsk, level, k = {}, [], 0
    for i in range(leaves):
        key = "%s-l%d" % (p, i)
        dsk[key] = (inc, i)
        level.append(key)
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level) - 1, 2):
            key = "%s-n%d" % (p, k)
            k += 1
            dsk[key] = (add, level[i], level[i + 1])
            nxt.append(key)
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return dag_run(ctx, c, dsk, level[0], None, 2 * leaves - 1)


@bench("dag_chain_2000", "s",
       "seconds for a chain of 2000 tasks, each taking the previous result")
def dag_chain_2000(ctx):
    n = ctx.n(2000, 2)
    with Cluster() as c:
        # the warm-up is a smaller DAG: only its tasks/s could stand in
        w = dict(chain(ctx, c, max(2, n // 5)), value=None)
        return summarise(repeats(ctx, lambda: chain(ctx, c, n), w), n=n,
                         submission="per_task" if ctx.per_task else "graph")


@bench("dag_tree_10000", "s",
       "seconds for a pairwise tree reduction of 10,000 leaves (19,999 tasks)")
def dag_tree_10000(ctx):
    leaves = ctx.n(10000, 2)
    with Cluster() as c:
        w = dict(tree(ctx, c, max(2, leaves // 5)), value=None)
        return summarise(repeats(ctx, lambda: tree(ctx, c, leaves), w), n=2 * leaves - 1,
                         leaves=leaves, submission="per_task" if ctx.per_task else "graph")


# ---------------------------------------------------------------------------
# Running and reporting


def fmt(v):
    if isinstance(v, float):
        return "%.4g" % v
    return str(v)


def report(ctx, name, unit, res):
    value = res.pop("value")
    rec = {"name": name, "value": round(value, 6) if value is not None else None, "unit": unit}
    for k, v in res.items():
        rec[k] = round(v, 6) if isinstance(v, float) else v
    if ctx.json:
        print(json.dumps(rec), flush=True)
    else:
        extra = ", ".join("%s: %s" % (k, fmt(v)) for k, v in rec.items()
                          if k not in ("name", "value", "unit"))
        print("%-28s %14s %-10s %s" % (name, fmt(value) if value is not None else "-", unit,
                                        extra), flush=True)


def run_one(ctx, probe, name, fn, unit):
    me = os.getpid()
    before = set(proc_tree(me))
    ctx.deadline = time.monotonic() + ctx.deadline_s
    done = threading.Event()

    def watchdog():
        # the soft deadline did not stop it: something hangs (closing, most
        # likely). Kill what this benchmark started and give up.
        if done.wait(ctx.deadline_s + 120):
            return
        kids = [p for p in proc_tree(me) if p not in before]
        kill_pids(kids, "%s hung past its deadline" % name)
        print(json.dumps({"name": name, "value": None, "unit": unit,
                          "note": "hung past the deadline; processes killed"}), flush=True)
        os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    probe.take_mb()
    ok = True
    try:
        res = fn(ctx)
    except Exception as e:
        print("dask_twins: %s: %s: %s" % (name, type(e).__name__, e), file=sys.stderr)
        res, ok = {"value": None, "note": "failed: %s" % type(e).__name__}, False
    peak = probe.take_mb()
    done.set()
    if peak is not None:
        res["peak_rss_mb"] = round(peak, 1)
    report(ctx, name, unit, res)
    # what the benchmark started should be gone after closing; give stragglers
    # a moment, then kill them (only processes that did not exist before)
    end = time.monotonic() + 10
    while True:
        left = [p for p in proc_tree(me) if p not in before]
        if not left or time.monotonic() > end:
            break
        time.sleep(0.1)
    kill_pids(left, "%s left processes behind" % name)
    return ok


def have_distributed():
    try:
        import distributed  # noqa: F401
        return True
    except ImportError:
        return False


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--_rss-sampler":
        return _rss_sampler_main(int(sys.argv[2]))
    ap = argparse.ArgumentParser(
        prog="dask_twins.py",
        description="Dask twins of lux bench benchmarks (LocalCluster, 2 worker "
        "processes x 1 thread, TCP on 127.0.0.1).")
    ap.add_argument("--json", action="store_true", help="one JSON object per result")
    ap.add_argument("--quick", action="store_true",
                    help="about 5%% of the work, 2 repeats: a smoke test, not a measurement")
    ap.add_argument("--list", action="store_true", help="list the benchmarks")
    ap.add_argument("--version", action="store_true", help="print Dask's and Python's versions")
    ap.add_argument("--scale", type=float,
                    help="multiply the work by this (default 1; --quick is 0.05)")
    ap.add_argument("--repeats", type=int, help="timed repeats after the warm-up (default 3)")
    ap.add_argument("--deadline", type=float,
                    help="seconds allowed per benchmark (default 600, 120 with --quick)")
    ap.add_argument("--per-task", action="store_true",
                    help="DAG benchmarks: one client.submit per task instead of one graph")
    ap.add_argument("--bytes-object", action="store_true",
                    help="gigabytes benchmarks: a bytes object instead of a numpy array")
    ap.add_argument("names", nargs="*", metavar="NAME")
    args = ap.parse_args()

    known = {b[0] for b in BENCHES}
    if args.list:
        print("benchmarks:")
        for name, _, unit, what in BENCHES:
            print("  %-28s %s (%s)" % (name, what, unit))
        return 0
    bad = [n for n in args.names if n not in known]
    if bad:
        ap.error("no benchmark named %s (see --list)" % ", ".join(bad))

    if not have_distributed():
        # pyenv or a venv may shadow Debian's python3, which has the package
        if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON)
                and os.access(SYSTEM_PYTHON, os.X_OK)
                and subprocess.call([SYSTEM_PYTHON, "-c", "import distributed"],
                                    stderr=subprocess.DEVNULL) == 0):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
        print("dask_twins: Dask distributed is not installed (%s); on Debian: "
              "apt-get install python3-distributed python3-numpy" % sys.executable,
              file=sys.stderr)
        return 2
    if args.version:
        import dask
        import distributed
        print("dask %s, distributed %s, python %s" % (dask.__version__, distributed.__version__,
                                                     sys.version.split()[0]))
        return 0

    ctx = Ctx(args)
    # multiprocessing starts a resource tracker process at its first spawn
    # and keeps it for the life of this process: start it now, so that it
    # is not taken for a process a benchmark left behind
    from multiprocessing import resource_tracker
    resource_tracker.ensure_running()
    probe = RssProbe()
    failed = 0
    try:
        for name, fn, unit, _ in BENCHES:
            if args.names and name not in args.names:
                continue
            failed += not run_one(ctx, probe, name, fn, unit)
    except KeyboardInterrupt:
        kids = [p for p in proc_tree(os.getpid()) if p != probe.proc.pid]
        kill_pids(kids, "interrupted")
        failed += 1
    finally:
        probe.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
