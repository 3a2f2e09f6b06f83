/*  exec_node - the node manager's actor: its socket, its messages, its
    timers, its start and its stop (see exec_node.h; the state is described
    in exec_node_int.h).

    One ROUTER takes every client and worker (message types in
    net_wire.h, bodies in exec_proto.c). After each message, what the
    round produced goes out together: OBJECTS to each client that has some,
    TASKS to idle workers, events to the log.

    Garbage from a client is logged (at most once a second) and dropped;
    it never stops the node manager.
*/
#include "exec_node.h"
#include "exec_node_int.h"
#include "exec_pool.h"
#include "exec_store.h"
#include "exec_peer.h"
#include "exec_xfer.h"
#include "exec_module.h"
#include "exec_gpu.h"
#include "exec_node_gpu.h"
#include "exec_remote.h"
#include "exec_ractor.h"
#include "exec_rcalls.h"
#include "exec_node_actor.h"
#include "exec_node_actor_res.h"
#include "exec_node_cancel.h"
#include "exec_node_cpu.h"
#include "exec_node_far.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "exec_node_sched.h"
#include "exec_node_stats.h"
#include "../net/net_raw.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_proc.h"
#include "../util/util_time.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sysinfo.h>
#include <unistd.h>


char *
exec_node_endpoint(const db_cluster_t *c, char *out, size_t n)
{
    snprintf(out, n, "%s/node", c->sock_dir);
    return out;
}

uint64_t
exec_node_default_store(void)
{
    struct sysinfo si;
    uint64_t ram = sysinfo(&si) == 0 ? (uint64_t) si.totalram * si.mem_unit : (2ULL << 30);
    uint64_t v = ram / 4;
    return v > (8ULL << 30) ? (8ULL << 30) : v;
}

/* --- clients ------------------------------------------------------------------------- */

/* Collect the values (pointers) of a map, to free them after the walk. */
typedef struct {
    void **v;
    size_t n, cap;
} s_ptrs_t;

static int
s_collect(void *arg, const void *key, void *value)
{
    s_ptrs_t *p = arg;
    (void) key;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        void **v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return 1;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = *(void **) value;
    return 0;
}



static void
s_client_free(nm_t *nm, nm_client_t *c)
{
    util_idmap_destroy(&c->pins);
    util_idmap_destroy(&c->allocs);
    util_buf_free(&c->out);
    if (c->conn)
        c->conn->client = NULL;
    free(c);
}

static int
s_unpin_all(void *arg, const void *key, void *value)
{
    nm_t *nm = ((void **) arg)[0];
    nm_obj_t *o = nm_obj_get(nm, (const lux_ref_t *) key);
    if (o)
        nm_obj_unpin(nm, o);
    return 0;
}


/* A client leaves: drop its pins, disown its objects. Objects it owned
   that nothing else uses are deleted as they become free. */

void
nm_client_gone(nm_t *nm, nm_client_t *c)
{
    void *arg[2] = {nm, c};
    nm_cancel_job(nm, c);        /* a driver's unfinished tasks, unless detached */
    nm_actor_client_gone(nm, c); /* its actors, its lookups */
    if (c->dirty) {
        /* take it off the dirty list */
        for (nm_client_t **p = &nm->dirty; *p; p = &(*p)->next_dirty)
            if (*p == c) {
                *p = c->next_dirty;
                break;
            }
    }
    util_idmap_each(c->pins, s_unpin_all, arg);
    nm_client_drop_grants(nm, c);
    nm_store_alloc_waits_drop(nm, c);
    nm_store_restore_waits_drop(nm, c);
    /* its objects: collected first, deleted after (not during the walk) */
    s_ptrs_t all = {0};
    util_idmap_each(nm->objects, s_collect, &all);
    for (size_t i = 0; i < all.n; i++) {
        nm_obj_t *o = all.v[i];
        if (o->owner != c)
            continue;
        o->owner = NULL;
        o->owned = false;
        if (!o->pins && !o->uses)
            nm_obj_delete(nm, o);
    }
    /* tasks it submitted or waits for run on, for nobody */
    all.n = 0;
    util_idmap_each(nm->tasks, s_collect, &all);
    for (size_t i = 0; i < all.n; i++) {
        nm_task_t *t = all.v[i];
        if (t->owner == c)
            t->owner = NULL;
        uint16_t k = 0;
        for (uint16_t j = 0; j < t->nwaiters; j++)
            if (t->waiters[j] != c)
                t->waiters[k++] = t->waiters[j];
        t->nwaiters = k;
    }
    free(all.v);
    if (c->worker)
        c->worker->client = NULL;
    util_idmap_del(nm->clients, c->id.b);
    s_client_free(nm, c);
}

/* --- connections ----------------------------------------------------------------------- */

static void
s_conn_send(nm_t *nm, nm_conn_t *conn, zmsg_t **m)
{
    net_link_send(conn->link, m); /* what it does not take now is queued */
}

static void
s_reply(nm_t *nm, nm_conn_t *conn, int type, const void *body, size_t n)
{
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(type, NET_NO_SHARD, 0)});
    if (body)
        zmsg_addmem(m, body, n);
    s_conn_send(nm, conn, &m);
}

/* A connection closed (or broke): a driver's job ends with it; a worker
   without its connection is of no use, and the reaper retries its task. */
static void
s_conn_close(nm_t *nm, nm_conn_t *conn)
{
    nm_client_t *c = conn->client;
    if (c) {
        c->conn = NULL;
        conn->client = NULL;
        if (c->worker && !c->worker->reaped) { /* a reaped pid may be another's now */
            if (c->worker->state != W_LEAVING) /* else it was told to go already */
                log_warn("worker %d closed its connection; stopping it", (int) c->worker->pid);
            kill(c->worker->pid, SIGKILL);
        } else if (!c->worker) {
            nm_log_job(nm, c, DB_K_job_finished, NULL, "its driver went away", LUX_EDEAD);
            nm_client_gone(nm, c);
        }
    }
    for (nm_conn_t **p = &nm->conns; *p; p = &(*p)->next)
        if (*p == conn) {
            *p = conn->next;
            nm->nconns--;
            break;
        }
    epoll_ctl(nm->epfd, EPOLL_CTL_DEL, net_link_fd(conn->link), NULL);
    net_link_destroy(&conn->link);
    free(conn);
}

static void
s_on_hello(nm_t *nm, nm_conn_t *conn, zframe_t *body)
{
    util_rd_t r;
    if (!body) {
        nm_complain(nm, "NODE_HELLO without a body");
        return;
    }
    util_rd_init(&r, zframe_data(body), zframe_size(body));
    uint8_t kind = util_rd_u8(&r);
    uint32_t pid = util_rd_u32(&r);
    const uint8_t *cid = util_rd_take(&r, 16), *job = util_rd_take(&r, 16);
    size_t nname, ninfo;
    const char *name = util_rd_str(&r, &nname);
    const char *info = (const char *) util_rd_blob(&r, &ninfo);
    int32_t status = (int32_t) util_rd_u32(&r);
    /* optional, after the status: flags u8 (1: a detached driver) */
    uint8_t flags = !r.bad && r.p < r.end ? util_rd_u8(&r) : 0;
    if (r.bad || !cid ||
        (kind != EXEC_HELLO_DRIVER && kind != EXEC_HELLO_WORKER && kind != 3)) {
        nm_complain(nm, "malformed NODE_HELLO");
        return;
    }
    if ((pid_t) pid != net_link_peer_pid(conn->link)) {
        log_warn("refused a hello claiming pid %u from pid %d", pid,
                 (int) net_link_peer_pid(conn->link));
        return;
    }
    nm_client_t *c = conn->client;
    if (c && memcmp(c->id.b, cid, 16) != 0) {
        nm_complain(nm, "NODE_HELLO naming another client than its connection's");
        return;
    }
    if (kind == 3) { /* goodbye: a driver's job ends */
        if (c) {
            char cname[256], cinfo[1024];
            snprintf(cname, sizeof cname, "%.*s", (int) nname, name ? name : "");
            snprintf(cinfo, sizeof cinfo, "%.*s", (int) ninfo, info ? info : "");
            if (c->kind == EXEC_HELLO_DRIVER)
                nm_log_job(nm, c, DB_K_job_finished, cname, cinfo, status);
            nm_client_gone(nm, c);
        }
        s_reply(nm, conn, NET_NODE_WELCOME, NULL, 0);
        return;
    }
    nm_worker_t *w = NULL;
    if (kind == EXEC_HELLO_WORKER && !c) {
        for (w = nm->workers; w; w = w->next)
            if (w->pid == (pid_t) pid && !w->client)
                break;
        if (!w) {
            log_warn("refused a worker this node did not start (pid %u)", pid);
            return;
        }
    }
    if (!c) {
        nm_client_t **old = util_idmap_get(nm->clients, cid);
        if (old) {
            nm_complain(nm, "NODE_HELLO from a client ID already connected");
            return;
        }
        c = calloc(1, sizeof *c);
        nm_client_t **p = c ? util_idmap_put(nm->clients, cid, NULL) : NULL;
        if (!c || !p || !(c->pins = util_idmap_new_keyed(LUX_REF_LEN, 4)) ||
            !(c->allocs = util_idmap_new_keyed(8, 8))) {
            log_error("out of memory for a client");
            if (c)
                s_client_free(nm, c);
            return;
        }
        *p = c;
        c->conn = conn;
        conn->client = c;
        memcpy(c->id.b, cid, 16);
        util_buf_init(&c->out);
    }
    c->kind = kind;
    c->pid = (pid_t) pid;
    c->detached = (flags & 1) != 0;
    memcpy(c->job.b, job, 16);
    if (kind == EXEC_HELLO_WORKER) {
        if (w) {
            w->client = c;
            c->worker = w;
            w->state = W_IDLE;
            log_info("worker %d is ready%s", (int) pid, w->actor ? " (for an actor)" : "");
            if (w->actor)
                nm_actor_hello(nm, w);
        }
    } else {
        char cname[256], cinfo[1024];
        snprintf(cname, sizeof cname, "%.*s", (int) nname, name ? name : "");
        snprintf(cinfo, sizeof cinfo, "%.*s", (int) ninfo, info ? info : "");
        nm_log_job(nm, c, DB_K_job_started, cname, cinfo, 0);
    }
    util_buf_t *b = &nm->scratch;
    b->len = 0;
    util_buf_put(b, nm->node.b, 16);
    util_buf_put(b, c->job.b, 16);
    util_buf_put_str(b, nm->arena_name, strlen(nm->arena_name));
    util_buf_put_u64(b, nm->store_bytes);
    util_buf_put_str(b, nm->cluster.dir, strlen(nm->cluster.dir));
    util_buf_put_u32(b, EXEC_INLINE_MAX);
    s_reply(nm, conn, NET_NODE_WELCOME, b->data, b->len);
    nm_dispatch(nm);
}

static void
s_on_module(nm_t *nm, nm_client_t *c, zframe_t *body, zframe_t *bytes)
{
    uint8_t hash[16];
    char path[PATH_MAX + 64];
    if (!body || zframe_size(body) != 16 || !bytes) {
        nm_complain(nm, "malformed MODULE");
        return;
    }
    util_blake(hash, 16, zframe_data(bytes), zframe_size(bytes));
    if (memcmp(hash, zframe_data(body), 16) != 0) {
        nm_complain(nm, "MODULE bytes do not match their hash");
        return;
    }
    if (exec_module_store(nm->cluster.dir, hash, zframe_data(bytes), zframe_size(bytes), path,
                          sizeof path)) {
        log_error("cannot keep a module: %s", lux_errmsg());
        return;
    }
    int fresh;
    util_idmap_put(nm->modules, hash, &fresh);
    if (fresh)
        nm_log_module(nm, &c->job, hash, zframe_data(bytes), zframe_size(bytes), path);
}

static void
s_on_submit(nm_t *nm, nm_client_t *c, zframe_t *body)
{
    util_rd_t r;
    if (!body) {
        nm_complain(nm, "SUBMIT without tasks");
        return;
    }
    util_rd_init(&r, zframe_data(body), zframe_size(body));
    uint32_t count = util_rd_u32(&r);
    for (uint32_t i = 0; i < count && !r.bad; i++) {
        exec_spec_t s;
        if (exec_spec_decode(&r, &s)) {
            nm_complain(nm, lux_errmsg());
            return;
        }
        if (nm_submit(nm, c, &s))
            log_error("submit: %s", lux_errmsg());
    }
}

/* --- the socket and the loop ------------------------------------------------------------ */

/* One message from a connection. */
static void
s_on_msg(nm_t *nm, nm_conn_t *conn, zmsg_t *msg)
{
    zframe_t *hf = zmsg_first(msg), *body = zmsg_next(msg), *extra = zmsg_next(msg);
    net_hdr_t h;
    nm_client_t *c = conn->client;
    if (net_hdr_decode(&h, hf)) {
        nm_complain(nm, lux_errmsg());
        return;
    }
    if (h.type == NET_NODE_HELLO) {
        s_on_hello(nm, conn, body);
        return;
    }
    if (h.type == NET_PING) {
        s_reply(nm, conn, NET_PONG, NULL, 0);
        return;
    }
    if (!c) {
        nm_complain(nm, "a message from a client that did not say hello");
        return;
    }
    switch (h.type) {
    case NET_MODULE:
        s_on_module(nm, c, body, extra);
        break;
    case NET_SUBMIT:
        s_on_submit(nm, c, body);
        break;
    case NET_PUT:
        nm_store_on_put(nm, c, body);
        break;
    case NET_ALLOC:
        nm_store_on_alloc(nm, c, body);
        break;
    case NET_UNALLOC:
        nm_store_on_unalloc(nm, c, body);
        break;
    case NET_GET:
        nm_store_on_get(nm, c, body);
        break;
    case NET_FREE:
        nm_store_on_free(nm, c, body);
        break;
    case NET_RESULTS:
        if (body)
            nm_results(nm, c, zframe_data(body), zframe_size(body));
        break;
    case NET_BLOCKED:
        if (body)
            nm_blocked(nm, c, zframe_data(body), zframe_size(body));
        break;
    case NET_CANCEL:
        if (body)
            nm_cancel_op(nm, c, zframe_data(body), zframe_size(body));
        else
            nm_complain(nm, "CANCEL without a body");
        break;
    case NET_ACTOR:
        if (body)
            nm_actor_op(nm, c, zframe_data(body), zframe_size(body));
        else
            nm_complain(nm, "ACTOR without a body");
        break;
    default:
        nm_complain(nm, "a message type the node manager does not take");
    }
}

/* After a round of messages: what they made ready runs, and the answers go. */
static void
s_after(nm_t *nm)
{
    nm_store_retry(nm);
    nm_dispatch(nm);
    nm_actor_pump(nm);    /* numbers calls: their events go in this tick */
    nm_log_tick(nm);
    nm_actor_release(nm); /* results whose events were acknowledged */
    nm_flush_clients(nm);
}

/* A connection is readable or writable (revents). */
static void
s_on_conn(nm_t *nm, nm_conn_t *conn, short revents)
{
    if (revents & ZMQ_POLLOUT)
        net_link_write(conn->link);
    if (revents & (ZMQ_POLLIN | ZMQ_POLLERR)) {
        net_link_read(conn->link);
        zmsg_t *m;
        while ((m = net_link_next(conn->link))) {
            s_on_msg(nm, conn, m);
            zmsg_destroy(&m);
        }
    }
    if (net_link_dead(conn->link))
        s_conn_close(nm, conn);
}

void
nm_conn_drain(nm_t *nm, nm_conn_t *conn)
{
    s_on_conn(nm, conn, ZMQ_POLLIN);
}

static void
s_accept(nm_t *nm)
{
    for (int i = 0; i < 64; i++) {
        net_link_t *link;
        int rc = net_link_accept(nm->listen_fd, &link);
        if (rc == LUX_ETIMEDOUT)
            break;
        if (rc) {
            log_warn("%s", lux_errmsg());
            continue;
        }
        nm_conn_t *conn = calloc(1, sizeof *conn);
        if (!conn) {
            net_link_destroy(&link);
            log_error("out of memory for a connection");
            break;
        }
        conn->nm = nm;
        conn->link = link;
        conn->ep_events = EPOLLIN;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = conn};
        if (epoll_ctl(nm->epfd, EPOLL_CTL_ADD, net_link_fd(link), &ev) != 0) {
            log_error("cannot watch a connection: %s", strerror(errno));
            net_link_destroy(&link);
            free(conn);
            continue;
        }
        conn->next = nm->conns;
        nm->conns = conn;
        nm->nconns++;
    }
}

/* Drivers on this machine that died without saying goodbye (kill -9): their
   job ends in the log, and what they held is let go. */
static void
s_reap_drivers(nm_t *nm)
{
    s_ptrs_t all = {0};
    util_idmap_each(nm->clients, s_collect, &all);
    for (size_t i = 0; i < all.n; i++) {
        nm_client_t *c = all.v[i];
        if (c->kind != EXEC_HELLO_DRIVER || c->pid <= 0 || util_proc_alive(c->pid))
            continue;
        log_warn("driver %d died without ending its job; letting go of what it held",
                 (int) c->pid);
        nm_log_job(nm, c, DB_K_job_finished, NULL, "its driver died", LUX_EDEAD);
        nm_client_gone(nm, c);
    }
    free(all.v);
}

/* Every S_TICK_MS: workers that died, dead drivers, waiting ALLOCs. */
static void
s_tick(nm_t *nm)
{
    nm_reap_workers(nm);
    if (util_mono_ms() - nm->reaped_drivers_ms >= 1000) {
        nm->reaped_drivers_ms = util_mono_ms();
        s_reap_drivers(nm);
    }
    nm_actor_tick(nm);
    nm_actor_ckpt_tick(nm); /* checkpoints asked for that wait too long */
    nm_cancel_tick(nm); /* tasks past their timeout */
    nm_peer_tick(nm);
    nm_xfer_tick(nm);   /* pulls waiting for room or past their time */
    nm_obj_spill_tick(nm); /* spills written: their heap copies go */
    nm_remote_tick(nm); /* tasks sent to nodes that died */
}

#define S_TICK_MS 2
#define S_IDLE_TICK_MS 50   /* the tick of an idle node */
#define S_IDLE_AFTER_MS 500 /* ...one that saw nothing for this long */
#define S_BUSY_TICK_MS 10   /* the tick while workers run tasks (s_busy) */

/* Something the tick retries or times out: allocations, GETs and tasks
   waiting for room, actors waiting for resources, lookups of names with a
   deadline. */
static bool
s_waits_on_time(nm_t *nm)
{
    return nm->alloc_waits || nm->restore_waits || nm->room_waits || nm->actors_waiting ||
           nm->actor_room_waits || nm->spill_pending || nm->lookups;
}

/* Nothing happened for S_IDLE_AFTER_MS and nothing waits on time: the
   tick may stretch (an idle head then costs about 1% of a core, not 3%).
   Not sooner: a core left idle that long sleeps deeper, and the first
   request after a pause of tens of ms (a 1 GB get after the put that
   filled it) took 200 us longer to be answered. Whatever wakes the loop
   brings an idle tick back to S_TICK_MS. */
static bool
s_idle(nm_t *nm, int64_t quiet_ms)
{
    return quiet_ms >= S_IDLE_AFTER_MS && !s_waits_on_time(nm) && !(nm->log && nm_log_busy(nm));
}

/* Work is out on workers and nothing waits on time but the log's timed
   flush, which the poll's wait honours (nm_log_due_ms): the workers have
   the cores, and a tick every 2 ms took one from them 500 times a second
   for nothing (perf sched on ES: a switch and 15-35 us each). What the
   node waits for then (results, acknowledgements) wakes it. */
static bool
s_busy(nm_t *nm)
{
    return nm->n_submitted > nm->n_finished + nm->n_failed && !s_waits_on_time(nm);
}

/* Wait up to wait_ms for one of the items: poll without blocking for the
   spin window first (util_spin.h), yielding between polls so that a
   thread sharing this CPU (the log's, a worker about to answer) runs,
   then sleep for the rest. Replies to a synchronous caller come within
   tens of microseconds, and a CPU that halts while one is on its way
   makes it cost a wake-up on each side (about 25 us each on the VM Lux is
   measured on); long waits bring the window to 0. In a lull (no task or
   call out, one just ended) the wait polls for the longest window: the
   results just sent are what the drivers wait for, their next requests
   come soon, and no worker computes then (ES on 2 workers: about 1% less
   training time; doc/DESIGN.md 12). */
static int
s_wait(nm_t *nm, zmq_pollitem_t *items, size_t k, struct pollfd *pfds, int64_t wait_ms)
{
    int64_t t0 = util_mono_ns();
    int fired = 0;
    bool idle = nm->n_submitted == nm->n_finished + nm->n_failed;
    int64_t window = util_spin_lull_window(&nm->spin, idle, t0 - nm->work_ended_ns);
    if (window > 0)
        while ((fired = net_poll(items, (int) k, pfds, 0)) == 0 && util_spin_again_for(window, t0))
            ;
    if (fired == 0) {
        int64_t left = wait_ms - (util_mono_ns() - t0) / 1000000;
        fired = net_poll(items, (int) k, pfds, left > 0 ? (long) left : 0);
    }
    if (fired >= 0 && window == util_spin_window(&nm->spin))
        util_spin_update(&nm->spin, util_mono_ns() - t0, fired > 0);
    return fired;
}

/* One message of the command pipe (a net_raw handler): -1 on $TERM (or a
   pipe that cannot be read), STATS answered with the node's state
   (exec_node_stats.c), anything else ignored. */
static int
s_on_pipe(zloop_t *loop, zsock_t *pipe, void *arg)
{
    (void) loop;
    zmsg_t *m = zmsg_recv(pipe);
    char *cmd = m ? zmsg_popstr(m) : NULL;
    int rc = !cmd || strcmp(cmd, "$TERM") == 0 ? -1 : 0;
    if (cmd && strcmp(cmd, "STATS") == 0)
        nm_stats_send(arg);
    free(cmd);
    zmsg_destroy(&m);
    return rc;
}

/* The loop: the command pipe, the listening socket, the connections and
   the log's sockets, so an acknowledgement wakes it (an actor call's
   result waits for one). Not a zloop: the log's sockets change with its
   chains, and the few items are listed here on each turn, which costs
   less than zloop's bookkeeping. The connections, one per worker and
   driver, are in an epoll set, itself one item of the poll: poll(2) over
   every connection cost a fifth of the node's time under one actor
   called at a time (the kernel visits each socket twice per poll).
   Polled with net_poll: one poll(2) a turn, where zmq_poll made two. */
static void
s_loop(nm_t *nm)
{
    enum { EP_MAX = 64 };
    enum { PEER_MAX = 33 }; /* the node's endpoint and its connections (exec_peer.c) */
    zmq_pollitem_t items[3 + 2 + DB_MAX_SHARDS + PEER_MAX + 1];
    struct pollfd pfds[3 + 2 + DB_MAX_SHARDS + PEER_MAX + 1];
    struct epoll_event evs[EP_MAX];
    int64_t tick = S_TICK_MS, next_tick = util_mono_ms() + tick;
    int64_t active_ms = util_mono_ms(); /* when the poll last saw something */
    /* The pipe is polled by its descriptor (net_raw.h): its events are
       read when that fires, and once at the start (the signal sent before
       the loop may have taken a change's notice, so a new set is dirty),
       all its messages then: nothing else is sent or read on it, so
       nothing else takes a notice. Checking its events on every turn
       cost two system calls a turn. */
    net_raw_t *raw = net_raw_new(NULL, nm);
    if (!raw || net_raw_add(raw, nm->pipe, s_on_pipe) != 0) {
        log_error("node: cannot poll its command pipe: %s", raw ? lux_errmsg() : "out of memory");
        net_raw_destroy(&raw);
        return;
    }
    int pipe_fd = net_raw_fd(raw, 0);
    for (;;) {
        /* writable too while bytes wait for the peer */
        for (nm_conn_t *c = nm->conns; c; c = c->next) {
            uint32_t want = EPOLLIN | (net_link_pending(c->link) ? EPOLLOUT : 0);
            if (want != c->ep_events) {
                struct epoll_event ev = {.events = want, .data.ptr = c};
                if (epoll_ctl(nm->epfd, EPOLL_CTL_MOD, net_link_fd(c->link), &ev) == 0)
                    c->ep_events = want;
            }
        }
        size_t k = 0;
        items[k++] = (zmq_pollitem_t) {NULL, pipe_fd, ZMQ_POLLIN, 0};
        items[k++] = (zmq_pollitem_t) {NULL, nm->listen_fd, ZMQ_POLLIN, 0};
        items[k++] = (zmq_pollitem_t) {NULL, nm->epfd, ZMQ_POLLIN, 0};
        size_t log_at = k;
        if (nm->log)
            k += (size_t) db_client_ack_items(nm->log, items + k,
                                              (int) (sizeof items / sizeof items[0] - k -
                                                     PEER_MAX - 1));
        size_t peer_at = k;
        k += nm_peer_items(nm, items + k, PEER_MAX);
        size_t bulk_at = k; /* the bulk path's sockets, one epoll set (exec_bulk.c) */
        if (nm_xfer_fd(nm) >= 0)
            items[k++] = (zmq_pollitem_t) {NULL, nm_xfer_fd(nm), ZMQ_POLLIN, 0};
        int64_t wait = next_tick - util_mono_ms(), due = nm->log ? nm_log_due_ms(nm) : -1;
        if (due >= 0 && due < wait)
            wait = due;
        bool pipe_check = net_raw_dirty(raw);
        int fired = pipe_check || wait <= 0 ? net_poll(items, (int) k, pfds, 0)
                                            : s_wait(nm, items, k, pfds, wait);
        if (fired < 0 && zmq_errno() != EINTR)
            break;
        if (fired > 0) {
            active_ms = util_mono_ms();
            if (tick == S_IDLE_TICK_MS) { /* back to the short tick */
                tick = S_TICK_MS;
                if (next_tick > util_mono_ms() + tick)
                    next_tick = util_mono_ms() + tick;
            }
        }
        if ((pipe_check || (items[0].revents & ZMQ_POLLIN)) && net_raw_fired(raw, pipe_fd) == -1)
            break; /* $TERM */
        if (items[1].revents)
            s_accept(nm);
        if (items[2].revents) {
            /* a connection's handling closes only that connection, so
               the others in evs stay valid */
            int n = epoll_wait(nm->epfd, evs, EP_MAX, 0);
            for (int i = 0; i < n; i++) {
                uint32_t e = evs[i].events;
                short r = (short) ((e & EPOLLIN ? ZMQ_POLLIN : 0) | (e & EPOLLOUT ? ZMQ_POLLOUT : 0) |
                                   (e & (EPOLLERR | EPOLLHUP) ? ZMQ_POLLERR : 0));
                s_on_conn(nm, evs[i].data.ptr, r);
            }
        }
        /* the log's client is read when acknowledgements came, and on
           each tick (configurations, resends): not on every turn, which
           cost as many system calls again as the poll itself */
        nm->log_quiet = true;
        for (size_t i = log_at; i < peer_at; i++)
            if (items[i].revents)
                nm->log_quiet = false;
        nm_peer_fired(nm, items + peer_at, bulk_at - peer_at); /* other nodes' messages */
        if (bulk_at < k && items[bulk_at].revents)
            nm_xfer_fired(nm); /* object chunks between nodes */
        if (util_mono_ms() >= next_tick) {
            s_tick(nm);
            nm->log_quiet = false;
            tick = s_idle(nm, util_mono_ms() - active_ms) ? S_IDLE_TICK_MS
                   : s_busy(nm)                            ? S_BUSY_TICK_MS
                                                           : S_TICK_MS;
            next_tick = util_mono_ms() + tick;
        }
        s_after(nm);
        nm->log_quiet = false;
    }
    net_raw_destroy(&raw);
}

/* --- start and stop ----------------------------------------------------------------------- */

static int
s_find_lux(nm_t *nm)
{
    const char *env = getenv("LUX_BIN");
    char self[PATH_MAX];
    if (env && *env && util_exists(env)) {
        snprintf(nm->lux_bin, sizeof nm->lux_bin, "%s", env);
        return 0;
    }
    if (util_self_exe(self, sizeof self) == 0) {
        const char *base = strrchr(self, '/');
        if (base && strcmp(base + 1, "lux") == 0) {
            snprintf(nm->lux_bin, sizeof nm->lux_bin, "%s", self);
            return 0;
        }
    }
    snprintf(nm->lux_bin, sizeof nm->lux_bin, "%s/lux", LUX_BUILDDIR);
    if (util_exists(nm->lux_bin))
        return 0;
    snprintf(nm->lux_bin, sizeof nm->lux_bin, "%s/lux", LUX_BINDIR);
    if (util_exists(nm->lux_bin))
        return 0;
    return util_err(LUX_ENOTFOUND, "cannot find the lux program to start workers (set LUX_BIN)");
}

#define S_ROOM_NOTE_MS 10000 /* "waits for room past LUX_STORE_WAIT_MS": one line per this, at most */

static int
s_setup(nm_t *nm, const exec_node_opts_t *o)
{
    char hex[UTIL_ID_HEX];
    int rc;
    util_id_random(&nm->node);
    util_buf_init(&nm->scratch);
    util_complain_init(&nm->complain, UTIL_COMPLAIN_MS);
    util_spin_init(&nm->spin, util_spin_max_env("LUX_SPIN_US", UTIL_SPIN_DEFAULT_NS));
    if ((rc = nm_parse_resources(nm, o->resources)) || (rc = nm_gpu_setup(nm)) ||
        (rc = s_find_lux(nm)))
        return rc;
    nm->target_workers = o->workers > 0 ? o->workers : (int) (nm->res[0].total / 1000);
    if (nm->target_workers < 1)
        nm->target_workers = 1;
    nm->objects = util_idmap_new_keyed(LUX_REF_LEN, sizeof(nm_obj_t *));
    nm->tasks = util_idmap_new(sizeof(nm_task_t *));
    nm->clients = util_idmap_new(sizeof(nm_client_t *));
    nm->modules = util_idmap_new(0);
    nm->actors = util_idmap_new(sizeof(nm_actor_t *));
    nm->kept = util_idmap_new_keyed(LUX_REF_LEN, sizeof(nm_kept_t));
    nm->spill_of = util_idmap_new_keyed(LUX_REF_LEN, sizeof(struct nm_spill_job *));
    nm->holds = util_idmap_new_keyed(LUX_REF_LEN, sizeof(nm_obj_hold_t));
    /* the calls lower parts make up to higher ones (nm->ops) */
    nm_actor_open(nm);
    nm_cancel_open(nm);
    nm_far_open(nm);
    nm_sched_open(nm);
    nm->ops.client_gone = nm_client_gone;
    nm->ops.conn_drain = nm_conn_drain;
    nm->ops.obj_pin = nm_obj_pin;
    nm->ops.obj_unpin = nm_obj_unpin;
    if (!nm->objects || !nm->tasks || !nm->clients || !nm->modules || !nm->actors ||
        !nm->kept || !nm->spill_of || !nm->holds)
        return util_err(LUX_ENOMEM, "out of memory");
    nm->store_bytes = o->store_bytes ? o->store_bytes : exec_node_default_store();
    const char *sq = getenv("LUX_SPILL_QUEUE"); /* ready tasks per worker: a long queue */
    nm->spill_queue = sq && atoi(sq) > 0 ? atoi(sq) : 8;
    const char *wait = getenv("LUX_STORE_WAIT_MS");
    nm->store_wait_ms = wait && *wait ? strtoll(wait, NULL, 10) : 10000;
    /* rule 13's wait on tasks blocked in gets ends too, even while some
       other task runs for ever (a server loop): this long in all */
    const char *wait_max = getenv("LUX_STORE_WAIT_MAX_MS");
    nm->store_wait_max_ms = wait_max && *wait_max ? strtoll(wait_max, NULL, 10)
                                                  : 10 * nm->store_wait_ms;
    if (nm->store_wait_max_ms < nm->store_wait_ms)
        nm->store_wait_max_ms = nm->store_wait_ms;
    util_complain_init(&nm->room_note, S_ROOM_NOTE_MS);
    const char *unheld = getenv("LUX_TEST_REBUILD_UNHELD"); /* a test's hook: t/3132 */
    nm->test_unheld = unheld && strcmp(unheld, "1") == 0;
    /* named with our pid, so that a store left by a node manager that was
       killed is found and removed: here, by the next one to start, and by
       `lux stop` (exec_arena_sweep) */
    char prefix[32];
    snprintf(prefix, sizeof prefix, "lux-%d-", (int) getuid());
    exec_arena_sweep(prefix);
    snprintf(nm->arena_name, sizeof nm->arena_name, "%s%d-%.16s", prefix, (int) getpid(),
             util_id_hex(&nm->node, hex));
    /* with as much spare address space again, where an object goes when
       the store has its bytes but pins have cut them into blocks too
       small (nm_store_try) */
    if (!(nm->arena = exec_arena_create_spare(nm->arena_name, (size_t) nm->store_bytes,
                                              (size_t) nm->store_bytes)))
        return util_err_ctx(LUX_EIO, "object store");
    const char *warm = getenv("LUX_STORE_WARM"); /* the first pull's pages, before it */
    if (warm && *warm == '1' && exec_arena_warm_start(nm->arena))
        log_warn("%s; the store is not warmed", lux_errmsg());
    snprintf(nm->spill_dir, sizeof nm->spill_dir, "%s/spill", nm->cluster.dir);
    if ((rc = util_private_dir(nm->spill_dir)))
        return rc;
    exec_node_endpoint(&nm->cluster, nm->endpoint, sizeof nm->endpoint);
    if ((nm->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return util_err(LUX_EIO, "epoll_create1: %s", strerror(errno));
    if ((nm->listen_fd = net_link_listen(nm->endpoint)) < 0)
        return nm->listen_fd;
    /* the parts over other nodes, with an endpoint (a tcp cluster), each
       registering its messages there; then the log's side */
    if (nm_peer_wanted(nm) &&
        (!(nm->peer = nm_peer_new(nm)) || !(nm->xfer = nm_xfer_new(nm)) ||
         !(nm->remote = nm_remote_new(nm)) || !(nm->ractor = nm_ractor_new(nm)) ||
         !(nm->rcalls = nm_rcalls_new(nm))))
        return LUX_EIO; /* the message says what and why */
    if (!(nm->lg = nm_log_new(nm)))
        return LUX_EIO;
    nm_log_node(nm); /* with the endpoint's port */
    nm_cpu_setup(nm);
    for (int i = 0; i < nm->target_workers; i++)
        if ((rc = nm_spawn_worker(nm, NM_SPAWN_POOL)))
            return rc;
    return 0;
}

static void
s_teardown(nm_t *nm)
{
    s_ptrs_t all = {0};
    /* workers first: they map the arena and may still report */
    for (nm_worker_t *w = nm->workers; w; w = w->next)
        kill(w->pid, SIGTERM);
    for (nm_worker_t *w = nm->workers; w; w = w->next)
        util_proc_stop(w->pid, SIGTERM, 3000);
    while (nm->workers) {
        nm_worker_t *w = nm->workers;
        nm->workers = w->next;
        free(w);
    }
    nm_xfer_destroy(&nm->xfer);
    nm_log_destroy(&nm->lg);
    nm_actor_close(nm);
    nm_store_alloc_waits_drop(nm, NULL);
    nm_store_restore_waits_drop(nm, NULL);
    if (nm->tasks) {
        util_idmap_each(nm->tasks, s_collect, &all);
        for (size_t i = 0; i < all.n; i++)
            nm_task_free(all.v[i]);
        util_idmap_destroy(&nm->tasks);
    }
    all.n = 0;
    if (nm->objects) {
        util_idmap_each(nm->objects, s_collect, &all);
        for (size_t i = 0; i < all.n; i++) {
            nm_obj_t *o = all.v[i];
            free(o->bytes);
            free(o);
        }
        util_idmap_destroy(&nm->objects);
    }
    util_idmap_destroy(&nm->kept);
    util_idmap_destroy(&nm->holds);
    nm_obj_spill_close(nm);
    util_idmap_destroy(&nm->spill_of);
    all.n = 0;
    if (nm->clients) {
        util_idmap_each(nm->clients, s_collect, &all);
        for (size_t i = 0; i < all.n; i++)
            s_client_free(nm, all.v[i]);
        util_idmap_destroy(&nm->clients);
    }
    free(all.v);
    util_idmap_destroy(&nm->modules);
    while (nm->conns) { /* quietly: the clients were freed above */
        nm_conn_t *conn = nm->conns;
        nm->conns = conn->next;
        net_link_destroy(&conn->link);
        free(conn);
    }
    if (nm->listen_fd >= 0) {
        close(nm->listen_fd);
        unlink(nm->endpoint);
    }
    if (nm->epfd >= 0)
        close(nm->epfd);
    nm_rcalls_destroy(&nm->rcalls);
    nm_ractor_destroy(&nm->ractor); /* before what it uses of exec_remote.c */
    nm_remote_destroy(&nm->remote);
    nm_peer_destroy(&nm->peer);
    exec_arena_destroy(&nm->arena);
    util_buf_free(&nm->scratch);
}

typedef struct {
    exec_node_opts_t opts;
    char res[256];
    char address[DB_EP_MAX];
    char err[UTIL_ERRMSG_MAX];
} s_start_t;

static void
s_actor(zsock_t *pipe, void *arg)
{
    s_start_t *st = arg;
    nm_t *nm = calloc(1, sizeof *nm);
    util_log_name("node");
    if (!nm) {
        snprintf(st->err, sizeof st->err, "out of memory");
        zsock_signal(pipe, 1);
        return;
    }
    nm->pipe = pipe;
    nm->listen_fd = -1;
    nm->epfd = -1;
    nm->cluster = *st->opts.cluster;
    snprintf(nm->address, sizeof nm->address, "%s", st->address);
    if (s_setup(nm, &st->opts)) {
        snprintf(st->err, sizeof st->err, "%s", lux_errmsg());
        s_teardown(nm);
        free(nm);
        zsock_signal(pipe, 1);
        return;
    }
    zsock_signal(pipe, 0);
    log_info("node manager at %s: %d workers, store %llu MiB", nm->endpoint, nm->target_workers,
             (unsigned long long) (nm->store_bytes >> 20));
    s_loop(nm);
    s_teardown(nm);
    free(nm);
}

zactor_t *
exec_node_new(const exec_node_opts_t *o)
{
    s_start_t st;
    memset(&st, 0, sizeof st);
    st.opts = *o;
    if (o->resources)
        snprintf(st.res, sizeof st.res, "%s", o->resources);
    /* GPUs: what the user said, else what this machine has (exec_gpu.h) */
    int gpus[EXEC_GPU_MAX], ngpu;
    if (!(o->resources && strstr(o->resources, "GPU=")) &&
        (ngpu = exec_gpu_detect(gpus, EXEC_GPU_MAX)) > 0) {
        size_t k = strlen(st.res);
        snprintf(st.res + k, sizeof st.res - k, "%sGPU=%d", k ? "," : "", ngpu);
    }
    if (st.res[0])
        st.opts.resources = st.res;
    if (o->address)
        snprintf(st.address, sizeof st.address, "%s", o->address);
    /* zactor_new waits for the actor's signal: st lives until then */
    zactor_t *a = zactor_new(s_actor, &st);
    if (a && st.err[0]) {
        util_err(LUX_EIO, "node manager: %s", st.err);
        zactor_destroy(&a);
    }
    return a;
}
