/*  db_replica - a chain replica's network thread.

    THE PIPELINE. Events move through a replica as batches:
        head:   APPEND from a client -> dedup by event ID -> seq, ts and
                chain hash assigned -> writer
        others: FORWARD from the predecessor -> gap and hash checks -> writer
    and once the writer reports a batch committed (commit before forward,
    so every replica's log is a prefix of its predecessor's):
        non-tail: FORWARD to the successor
        tail:     PUBLISH to subscribers; the tail's commit is the chain's,
                  so CHAIN_ACK goes to the predecessor
    CHAIN_ACK travels up to the head, which then acknowledges the clients.
    Four counters describe the pipeline, recv >= commit >= fwd, commit >=
    ack: recv_seq (handed to the writer), commit_seq (committed here),
    fwd_seq (sent to the successor), ack_seq (committed at the tail).
    Batches stay in `pending` until acknowledged, so a new successor can be
    sent what it lacks; older events are read back from SQLite.

    EPOCHS. Every message carries the sender's epoch of the chain. The
    links between replicas are checked at both ends, differently:
      - a HELLO or FORWARD (predecessor to us) from another epoch is
        refused with EEPOCH, and one from a newer epoch makes us ask the
        master (we are behind); the predecessor HELLOs again;
      - a SYNC or CHAIN_ACK (successor to us) from another epoch is
        dropped without an answer: the successor sends them only on a
        link it accepted at its epoch, so they are late answers on a link
        of a configuration we have since left, and the link of our
        current epoch is set up afresh by our HELLO.
    An APPEND is accepted whatever the client's epoch while we are the
    head, because safety comes from the chain: a stale head's FORWARD is
    refused by its successor, so nothing it takes is ever acknowledged,
    and refusing appends during every reconfiguration would only stall
    clients.

    IDEMPOTENCE. A client's event IDs are dense per shard (cseq 1, 2, 3...)
    and the head takes them strictly in order: a record at or below the
    newest cseq it has from that client is a resend and is skipped (and
    acknowledged once what it has is committed); a message whose first new
    record is not the next cseq is refused with EGAP, so the client resends
    from its oldest unacknowledged batch. Dropping "anything at or below the
    newest" is only sound because nothing is ever taken out of order.

    LINKS. A predecessor opens a link with HELLO; the successor answers
    SYNC(last seq it has, its hash); the predecessor resends from there.
    A gap in a FORWARD is answered with SYNC too, so links heal themselves.

    JOINING. A replica that is not in the chain (new, restarted, or removed
    while it was alive) catches up from the tail by READ: first it finds the
    newest seq where its hash chain agrees with the tail's and truncates the
    unacknowledged suffix after it, then it fetches until it reaches the
    tail's last seq, then asks the master to JOIN at the tail. The tail
    fixes the join seq: asked by the master, it holds its acknowledgements
    until the joiner is its successor (see the tail's side of a join).

    ERRORS. Garbage on any socket is dropped with an ERROR reply where the
    socket can reply, logged at most once a second per socket, and changes
    nothing. A failed write stops the replica ("FAILED" on the pipe).
*/
#include "db_replica.h"
#include "db_chain.h"
#include "db_reader.h"
#include "db_store.h"
#include "db_writer.h"
#include "../net/net_link.h"
#include "../net/net_pipe.h"
#include "../net/net_wire.h"
#include "../util/util_err.h"
#include "../util/util_idmap.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define S_MAX_PENDING 262144 /* events in flight before the head stops reading appends */
#define S_PROBE 4096         /* events per probe window when rejoining */
#define S_FETCH 8192         /* events per READ when catching up */
#define S_PUB_BEAT_MS 200    /* tail announces its last seq when idle */
#define S_INLINE 64          /* batches this small commit on the network thread when
                                the writer is idle (commit at once when idle) */

typedef struct s_batch {
    struct s_batch *next;
    net_batch_t nb;   /* view of data, what the writer reads */
    util_buf_t data;  /* the batch bytes (header + records) */
} s_batch_t;

typedef struct {
    zframe_t *rid;    /* the client's routing ID on the append socket */
    util_id_t client; /* the event ID to acknowledge: the newest we had */
    uint64_t cseq;    /* from this client when it appended, and... */
    uint64_t seq;     /* ...that event's seq: answer once the tail has it */
} s_waiter_t;

typedef struct {
    uint64_t cseq, seq; /* newest event ID seen from a client, and its seq */
} s_seen_t;

/* A client on a local link (net_link.h) beside the append endpoint. Its
   messages are handled as the append socket's, under a routing ID made
   here: S_LINK_RID_LEN bytes, a zero byte, "lnk" and the link's number.
   ZeroMQ's own routing IDs are five bytes, and one chosen by a peer
   cannot start with a zero byte, so the two never meet. */
#define S_LINK_RID_LEN 12

typedef struct {
    net_link_t *link;
    uint64_t id;
    short events; /* what the loop polls it for */
} s_link_t;

enum { J_IDLE, J_PROBE, J_TRUNC, J_FETCH, J_WAIT };

enum { R_PIPE, R_APPEND, R_CHAIN, R_MASTER, R_N }; /* sockets polled by descriptor */

typedef struct {
    db_cluster_t cluster;
    uint32_t shard, index;
    net_sec_t *sec;
    zsock_t *pipe;
    zloop_t *loop;
    char db_path[PATH_MAX];
    char ep[DB_EP_N][DB_EP_MAX];   /* endpoints bound */
    zsock_t *sk_append, *sk_chain, *sk_pub; /* bound sockets */
    int link_fd;                   /* listening beside the append endpoint, or -1 */
    s_link_t *links;
    size_t nlinks, caplinks;
    uint64_t link_ids;             /* the last link's number */
    zsock_t *sk_master;            /* DEALER to the chain master */
    zsock_t *sk_succ;              /* DEALER to the successor, or NULL */
    zsock_t *sk_tail;              /* DEALER to the tail's read endpoint (joining) */
    zactor_t *writer, *reader;
    db_store_t *store;             /* the write connection: the writer's while it has
                                      work (writer_seq > commit_seq), else ours */
    uint64_t writer_seq;           /* last seq handed to the writer */
    bool truncating;               /* the writer is truncating: the store is its own,
                                      and recv_seq is stale until it answers 'T' */
    db_reader_state_t rstate;      /* shared with the reader */
    db_store_t *rstore;            /* our own read connection */

    int state;                     /* enum db_replica_state */
    db_chain_t cfg;                /* our shard's configuration */
    int pos;                       /* our place in it, -1 when not a member */
    uint32_t succ_index;           /* whom succ points at */
    char succ_ep[DB_EP_MAX];
    bool succ_synced;              /* the successor said SYNC */
    int64_t hello_ms;              /* when HELLO was last sent */
    zframe_t *pred_rid;            /* predecessor's routing ID on `chain` */

    uint64_t recv_seq;             /* see THE PIPELINE */
    uint8_t recv_hash[DB_HASH_LEN];
    uint64_t commit_seq, fwd_seq, ack_seq, pub_seq;
    s_batch_t *pending, *pending_last;
    size_t pending_events;

    util_idmap_t *seen;            /* client -> s_seen_t, for idempotence */
    s_waiter_t *waiters;           /* head: clients to acknowledge */
    size_t nwait, capwait;
    bool append_paused;            /* admission control */

    struct {                       /* tail: holding acknowledgements for a joiner */
        bool on;
        uint32_t index;            /* the joiner */
        uint64_t last;             /* what it said it has */
        uint64_t seq;              /* nothing past this is acknowledged or published */
        uint64_t token;            /* of our latest JOIN_SEQ */
        int64_t ms;                /* when we last heard of the join or asked */
    } hold;
    int join;                      /* joining phase */
    uint64_t join_req;             /* id of the outstanding READ */
    int64_t join_ms;               /* when it was sent */
    uint64_t probe_from;
    int64_t pub_beat_ms;
    int64_t complain_ms;           /* rate limit for garbage logs */
    util_buf_t buf;                /* scratch */
    char failed[300];              /* why it failed (DB_RS_FAILED) */
    char cause[64];                /* ...in a word for clients: "No space left on device" */
    bool writer_watched;           /* the loop reads the writer's replies */
    struct {                       /* sockets polled by descriptor (s_raw_on) */
        zsock_t *sock;
        zloop_reader_fn *fn;
        int fd;
        bool on, dirty;
    } raw[R_N];
} s_rep_t;

static void s_forward(s_rep_t *self);
static int s_load_seen(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq);
static void s_after_commit(s_rep_t *self);
static void s_join_start(s_rep_t *self);
static void s_join_request(s_rep_t *self);
static void s_ack_clients(s_rep_t *self);
static void s_admission(s_rep_t *self);
static int s_on_append(zloop_t *loop, zsock_t *sock, void *arg);
static void s_append_msg(s_rep_t *self, zmsg_t *msg);
static void s_complain(s_rep_t *self, const char *sock, const char *what);
static void s_on_join_hold(s_rep_t *self, const net_hdr_t *h, zframe_t *body);
static void s_hold_end(s_rep_t *self, const char *why);

/* --- sockets polled by descriptor ------------------------------------------------------ */

/* zloop asks ZeroMQ for the events of every socket it polls (a poll and a
   getpid each) once or twice a turn, whatever happened: under one actor
   called at a time that was most of the replica's system calls. The
   pipe, the append, chain and master sockets are polled instead by their
   descriptor, which ZeroMQ makes readable when a socket's state changes;
   their events are read then, and each message is handled until none is
   left. A send on a socket may take such a notice without our knowing, so
   a send marks its socket dirty (s_raw_touch), and every handler of the
   loop ends by reading the events of the dirty ones (s_settle); the
   heartbeat marks them all, so that a notice missed by a mistake here
   costs a heartbeat's delay, not a hang. */

static void
s_raw_touch(s_rep_t *self, zsock_t *sock)
{
    for (int r = 0; r < R_N; r++)
        if (self->raw[r].sock == sock)
            self->raw[r].dirty = true;
}

/* Handle raw socket r's messages until its events say none is left. */
static int
s_raw_drain(s_rep_t *self, int r)
{
    for (;;) {
        self->raw[r].dirty = false;
        if (!self->raw[r].on || !(zsock_events(self->raw[r].sock) & ZMQ_POLLIN))
            return 0;
        if (self->raw[r].fn(self->loop, self->raw[r].sock, self) == -1)
            return -1;
    }
}

/* Read the events of the dirty raw sockets (handling what they hold). */
static int
s_settle(s_rep_t *self)
{
    for (int round = 0; round < 64; round++) {
        bool any = false;
        for (int r = 0; r < R_N; r++)
            if (self->raw[r].on && self->raw[r].dirty) {
                any = true;
                if (s_raw_drain(self, r) == -1)
                    return -1;
            }
        if (!any)
            return 0;
    }
    return 0; /* still dirty: the next handler or heartbeat goes on */
}

static int
s_on_raw(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    s_rep_t *self = arg;
    (void) loop;
    for (int r = 0; r < R_N; r++)
        if (self->raw[r].on && self->raw[r].fd == item->fd && s_raw_drain(self, r) == -1)
            return -1;
    return s_settle(self);
}

/* Poll raw socket r (sock, handled by fn) or stop. */
static void
s_raw_on(s_rep_t *self, int r, bool on)
{
    if (on == self->raw[r].on)
        return;
    zmq_pollitem_t item = {NULL, self->raw[r].fd, ZMQ_POLLIN, 0};
    if (!on) {
        zloop_poller_end(self->loop, &item);
        self->raw[r].on = false;
    } else if (zloop_poller(self->loop, &item, s_on_raw, self) == 0) {
        self->raw[r].on = true;
        self->raw[r].dirty = true; /* what came meanwhile gave no notice */
    } else {
        log_error("cannot poll a socket: %s", zmq_strerror(zmq_errno()));
    }
}

/* The loop's other handlers, each followed by s_settle (defined below). */
static int s_on_link_w(zloop_t *loop, zmq_pollitem_t *item, void *arg);
static int s_on_link_accept_w(zloop_t *loop, zmq_pollitem_t *item, void *arg);
static int s_on_writer_w(zloop_t *loop, zsock_t *sock, void *arg);
static int s_on_succ_w(zloop_t *loop, zsock_t *sock, void *arg);
static int s_on_tail_w(zloop_t *loop, zsock_t *sock, void *arg);
static int s_on_beat_marked_w(zloop_t *loop, int timer_id, void *arg);

static void
s_raw_init(s_rep_t *self, int r, zsock_t *sock, zloop_reader_fn *fn)
{
    self->raw[r].sock = sock;
    self->raw[r].fn = fn;
    self->raw[r].fd = zsock_fd(sock);
    s_raw_on(self, r, true);
}

/* --- local links -------------------------------------------------------------------- */

static s_link_t *
s_link_by_id(s_rep_t *self, uint64_t id)
{
    for (size_t i = 0; i < self->nlinks; i++)
        if (self->links[i].id == id)
            return &self->links[i];
    return NULL;
}

/* The link a routing ID names, or NULL (a ZeroMQ peer's, or a closed link's). */
static s_link_t *
s_link_of(s_rep_t *self, zframe_t *rid)
{
    if (!rid || zframe_size(rid) != S_LINK_RID_LEN || memcmp(zframe_data(rid), "\0lnk", 4) != 0)
        return NULL;
    return s_link_by_id(self, util_rd64(zframe_data(rid) + 4));
}

static int s_on_link(zloop_t *loop, zmq_pollitem_t *item, void *arg);

/* Poll l for what it needs: input unless appends are paused, output
   while some waits. */
static void
s_link_watch(s_rep_t *self, s_link_t *l)
{
    short want = (short) ((self->append_paused ? 0 : ZMQ_POLLIN) |
                          (net_link_pending(l->link) ? ZMQ_POLLOUT : 0));
    if (want == l->events)
        return;
    zmq_pollitem_t item = {NULL, net_link_fd(l->link), want, 0};
    if (l->events)
        zloop_poller_end(self->loop, &item);
    l->events = 0;
    if (want && zloop_poller(self->loop, &item, s_on_link_w, self) == 0) {
        zloop_poller_set_tolerant(self->loop, &item); /* a hang-up is ours to see */
        l->events = want;
    }
}

static void
s_link_close(s_rep_t *self, s_link_t *l)
{
    if (l->events && self->loop) {
        zmq_pollitem_t item = {NULL, net_link_fd(l->link), 0, 0};
        zloop_poller_end(self->loop, &item);
    }
    net_link_destroy(&l->link);
    *l = self->links[--self->nlinks];
}

/* Send m on sock, or on the local link its routing ID names (an answer
   for a link that has closed is dropped: its client resends). */
static void
s_emit(s_rep_t *self, zsock_t *sock, zmsg_t **m_p)
{
    zframe_t *first = zmsg_first(*m_p);
    if (sock != self->sk_append || !first || zframe_size(first) != S_LINK_RID_LEN) {
        zmsg_send(m_p, sock);
        zmsg_destroy(m_p); /* not sent (a socket that does not wait): dropped */
        s_raw_touch(self, sock);
        return;
    }
    s_link_t *l = s_link_of(self, first);
    zframe_t *rid = zmsg_pop(*m_p);
    zframe_destroy(&rid);
    if (!l)
        zmsg_destroy(m_p);
    else if (net_link_send(l->link, m_p))
        s_link_close(self, l);
    else
        s_link_watch(self, l);
}

static int
s_on_link(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    s_rep_t *self = arg;
    s_link_t *l = NULL;
    (void) loop;
    for (size_t i = 0; i < self->nlinks && !l; i++)
        if (net_link_fd(self->links[i].link) == item->fd)
            l = &self->links[i];
    if (!l)
        return 0;
    uint64_t id = l->id;
    uint8_t rid[S_LINK_RID_LEN] = {0, 'l', 'n', 'k'};
    util_le64(rid + 4, id);
    if ((item->revents & ZMQ_POLLOUT) && net_link_write(l->link)) {
        s_link_close(self, l);
        return 0;
    }
    if (item->revents & (ZMQ_POLLIN | ZMQ_POLLERR)) {
        net_link_read(l->link); /* a hang-up shows in net_link_dead below */
        zmsg_t *m;
        while (l && (m = net_link_next(l->link))) {
            zmsg_pushmem(m, rid, sizeof rid);
            s_append_msg(self, m);
            l = s_link_by_id(self, id); /* an answer that failed closed it */
        }
        if (l && net_link_dead(l->link)) {
            s_link_close(self, l);
            l = NULL;
        }
    }
    if (l)
        s_link_watch(self, l);
    return 0;
}

static int
s_on_link_accept(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    s_rep_t *self = arg;
    net_link_t *link;
    int rc;
    (void) loop;
    (void) item;
    while ((rc = net_link_accept(self->link_fd, &link)) != LUX_ETIMEDOUT) {
        if (rc) {
            s_complain(self, "append link", lux_errmsg());
            return 0;
        }
        if (self->nlinks == self->caplinks) {
            size_t cap = self->caplinks ? 2 * self->caplinks : 8;
            s_link_t *a = realloc(self->links, cap * sizeof *a);
            if (!a) {
                net_link_destroy(&link); /* the client goes on over ZeroMQ */
                return 0;
            }
            self->links = a;
            self->caplinks = cap;
        }
        s_link_t *l = &self->links[self->nlinks++];
        *l = (s_link_t) {link, ++self->link_ids, 0};
        s_link_watch(self, l);
    }
    return 0;
}

/* --- small helpers ---------------------------------------------------------------- */

static void
s_complain(s_rep_t *self, const char *sock, const char *what)
{
    int64_t now = util_mono_ms();
    if (now - self->complain_ms >= 1000) {
        log_error("%s endpoint: dropped a bad message: %s", sock, what);
        self->complain_ms = now;
    }
}

/* ERROR, naming the request it answers (doc/protocol.md 5.4): an
   APPEND's first event ID, 0 for anything else */
static void
s_send_error_req(s_rep_t *self, zsock_t *sock, zframe_t **rid_p, int code, const char *text,
                 uint64_t req)
{
    zmsg_t *m = net_error_msg(self->shard, self->cfg.epoch, code, "%s", text);
    net_error_req(m, req);
    if (rid_p && *rid_p)
        zmsg_prepend(m, rid_p);
    s_emit(self, sock, &m);
}

static void
s_send_error(s_rep_t *self, zsock_t *sock, zframe_t **rid_p, int code, const char *text)
{
    zmsg_t *m = net_error_msg(self->shard, self->cfg.epoch, code, "%s", text);
    if (rid_p && *rid_p)
        zmsg_prepend(m, rid_p);
    s_emit(self, sock, &m);
}

/* Send header + one body frame (+ an optional second) on sock, to rid when
   sock is a ROUTER. */
static void
s_send(s_rep_t *self, zsock_t *sock, zframe_t *rid, int type, uint64_t epoch, const void *body,
       size_t n, const void *body2, size_t n2)
{
    zmsg_t *m = zmsg_new();
    if (rid)
        zmsg_append(m, &(zframe_t *) {zframe_dup(rid)});
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(type, self->shard, epoch)});
    if (body)
        zmsg_addmem(m, body, n);
    if (body2)
        zmsg_addmem(m, body2, n2);
    s_emit(self, sock, &m);
}

/* A message whose header names another shard than ours: ESHARD, so that
   a peer with a stale configuration (a tcp port now bound by a replica of
   another shard) asks the master again. */
static void
s_wrong_shard(s_rep_t *self, zsock_t *sock, zframe_t **rid_p, const net_hdr_t *h,
              const char *endpoint)
{
    char text[200];
    snprintf(text, sizeof text, "%s for shard %u at the %s endpoint of shard %u replica %u",
             net_type_name(h->type), h->shard, endpoint, self->shard, self->index);
    s_complain(self, endpoint, text);
    s_send_error(self, sock, rid_p, LUX_ESHARD, text);
}

static bool
s_is_head(const s_rep_t *self)
{
    return self->state == DB_RS_CHAIN && self->pos == 0;
}

static bool
s_is_tail(const s_rep_t *self)
{
    return self->state == DB_RS_CHAIN && self->pos == (int) self->cfg.n - 1;
}

static void
s_fail(s_rep_t *self, int code, const char *text)
{
    if (self->state == DB_RS_FAILED)
        return;
    log_error("shard %u replica %u failed: %s (%s)", self->shard, self->index, text,
              lux_strerror(code));
    self->state = DB_RS_FAILED;
    snprintf(self->failed, sizeof self->failed, "%s", text);
    /* a full disk is the common cause, and SQLite says it vaguely ("database
       or disk is full"): ask the file system */
    struct statvfs vfs;
    bool full = strstr(text, "disk is full") ||
                (statvfs(self->db_path, &vfs) == 0 && vfs.f_bavail * vfs.f_frsize < (64u << 10));
    snprintf(self->cause, sizeof self->cause, "%s", full ? strerror(ENOSPC) : lux_strerror(code));
    atomic_store(&self->rstate.is_tail, 0);
    zstr_sendx(self->pipe, "FAILED", text, NULL);
    s_raw_touch(self, self->pipe);
}

/* --- the pending batches ------------------------------------------------------------ */

static s_batch_t *
s_batch_new(uint64_t first)
{
    s_batch_t *b = calloc(1, sizeof *b);
    if (b) {
        util_buf_init(&b->data);
        net_batch_begin(&b->data, first);
    }
    return b;
}

static void
s_batch_free(s_batch_t *b)
{
    util_buf_free(&b->data);
    free(b);
}

static int s_on_writer(zloop_t *loop, zsock_t *sock, void *arg);

/* The loop reads the writer's socket only while it has work: every socket
   it polls costs each turn a ZMQ_EVENTS check (a poll and a getpid), and
   small batches commit on this thread, the writer idle. */
static void
s_writer_watch(s_rep_t *self, bool on)
{
    if (on == self->writer_watched)
        return;
    if (!on)
        zloop_reader_end(self->loop, (zsock_t *) self->writer);
    else if (zloop_reader(self->loop, (zsock_t *) self->writer, s_on_writer_w, self) != 0) {
        s_fail(self, LUX_ENOMEM, "cannot watch the writer");
        return;
    }
    self->writer_watched = on;
}

/* Close the batch and hand it to the writer. */
static void
s_submit(s_rep_t *self, s_batch_t *b, uint32_t count)
{
    net_batch_end(&b->data, count);
    b->nb.first = util_rd64(b->data.data);
    b->nb.count = count;
    b->nb.recs = b->data.data + NET_BATCH_HDR;
    b->nb.len = b->data.len - NET_BATCH_HDR;
    if (self->pending_last)
        self->pending_last->next = b;
    else
        self->pending = b;
    self->pending_last = b;
    self->pending_events += count;
    if (self->writer_seq <= self->commit_seq && !self->truncating && count <= S_INLINE) {
        /* the writer is idle: commit now, on this thread (no hop) */
        int rc = db_store_begin(self->store);
        if (!rc)
            rc = db_writer_put(self->store, &b->nb);
        if (!rc)
            rc = db_store_commit(self->store);
        if (rc) {
            db_store_rollback(self->store);
            s_fail(self, rc, lux_errmsg());
            return;
        }
        self->commit_seq = db_store_last_seq(self->store);
        s_after_commit(self);
        return;
    }
    self->writer_seq = b->nb.first + count - 1;
    s_writer_watch(self, true);
    db_writer_write(self->writer, &b->nb);
}

/* Free batches the tail has committed (and, at the tail, published). */
static void
s_release(s_rep_t *self, uint64_t upto)
{
    while (self->pending) {
        s_batch_t *b = self->pending;
        if (b->nb.first + b->nb.count - 1 > upto || b->nb.first + b->nb.count - 1 > self->commit_seq)
            break;
        self->pending = b->next;
        if (!self->pending)
            self->pending_last = NULL;
        self->pending_events -= b->nb.count;
        s_batch_free(b);
    }
}

/* Send records of b from seq `from` on as one message of type on sock. */
static void
s_send_from(s_rep_t *self, zsock_t *sock, zframe_t *rid, int type, const net_batch_t *b,
            uint64_t from, uint64_t upto)
{
    if (from <= b->first && upto >= b->first + b->count - 1) {
        util_buf_t hdr;
        util_buf_init(&hdr);
        net_batch_begin(&hdr, b->first);
        net_batch_end(&hdr, b->count);
        zmsg_t *m = zmsg_new();
        if (rid)
            zmsg_append(m, &(zframe_t *) {zframe_dup(rid)});
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(type, self->shard, self->cfg.epoch)});
        zframe_t *f = zframe_new(NULL, NET_BATCH_HDR + b->len);
        memcpy(zframe_data(f), hdr.data, NET_BATCH_HDR);
        memcpy(zframe_data(f) + NET_BATCH_HDR, b->recs, b->len);
        zmsg_append(m, &f);
        zmsg_send(&m, sock);
        s_raw_touch(self, sock);
        util_buf_free(&hdr);
        return;
    }
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t n;
    uint32_t count = 0;
    net_batch_begin(&self->buf, from);
    net_batch_iter(&it, b);
    while (net_batch_next(&it, &seq, &rec, &n)) {
        if (seq < from || seq > upto)
            continue;
        net_batch_add(&self->buf, rec, n);
        count++;
    }
    net_batch_end(&self->buf, count);
    s_send(self, sock, rid, type, self->cfg.epoch, self->buf.data, self->buf.len, NULL,
           0);
}

/* --- after a commit -------------------------------------------------------------------- */

static void
s_publish(s_rep_t *self)
{
    for (s_batch_t *b = self->pending; b; b = b->next) {
        uint64_t last = b->nb.first + b->nb.count - 1;
        if (last <= self->pub_seq)
            continue;
        if (b->nb.first > self->commit_seq)
            break;
        s_send_from(self, self->sk_pub, NULL, NET_PUBLISH, &b->nb, self->pub_seq + 1,
                    self->commit_seq);
        self->pub_seq = last < self->commit_seq ? last : self->commit_seq;
    }
    self->pub_beat_ms = util_mono_ms();
}

/* The tail committed up to ack_seq: tell the clients or the predecessor. */
static void
s_tell_acked(s_rep_t *self)
{
    if (s_is_head(self)) {
        s_ack_clients(self);
    } else if (self->pred_rid) {
        uint8_t b[8];
        util_le64(b, self->ack_seq);
        s_send(self, self->sk_chain, self->pred_rid, NET_CHAIN_ACK, self->cfg.epoch, b, 8,
               NULL, 0);
    }
}

/* ...and release what it covers. */
static void
s_acked(s_rep_t *self)
{
    s_release(self, self->ack_seq);
    s_tell_acked(self);
}

/* As the tail: what is committed here is the chain's (unless we hold
   for a joiner): acknowledge, publish, release. The waiting client (or
   predecessor) is the latency that counts, so it hears first, and
   subscribers a few microseconds later; batches are released once
   published. */
static void
s_tail_ack(s_rep_t *self)
{
    if (self->hold.on)
        return;
    self->ack_seq = self->commit_seq;
    s_tell_acked(self);
    s_publish(self);
    s_release(self, self->ack_seq);
}

static void
s_after_commit(s_rep_t *self)
{
    if (self->state == DB_RS_JOINING) {
        self->ack_seq = self->commit_seq;
        s_release(self, self->ack_seq);
        if (self->join == J_IDLE)
            s_join_start(self);
        else if (self->join == J_FETCH && !self->join_req)
            s_join_request(self);
        return;
    }
    if (self->state != DB_RS_CHAIN)
        return;
    if (s_is_tail(self)) {
        s_tail_ack(self);
    } else if (self->succ_synced) {
        s_forward(self);
    }
}

static int
s_on_writer(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_rep_t *self = arg;
    uint64_t seq = 0;
    int code = 0;
    char text[UTIL_ERRMSG_MAX];
    char cmd = db_writer_reply(self->writer, &seq, &code, text, sizeof text);
    if (cmd == 'C') {
        self->commit_seq = seq;
        s_after_commit(self);
        if (self->writer_seq <= self->commit_seq && !self->truncating &&
            self->state != DB_RS_FAILED)
            s_writer_watch(self, false); /* all it had is committed */
    } else if (cmd == 'T') {
        self->truncating = false;
        if (code) {
            s_fail(self, code, text);
        } else {
            self->recv_seq = self->commit_seq = self->ack_seq = self->writer_seq = seq;
            if (db_store_hash_at(self->rstore, seq, self->recv_hash))
                s_fail(self, LUX_EIO, lux_errmsg());
            /* the truncated events' IDs must not count as seen: rebuild from
               the store (the writer is idle: the store is ours now) */
            util_idmap_destroy(&self->seen);
            if (!(self->seen = util_idmap_new(sizeof(s_seen_t))) ||
                db_store_clients(self->store, s_load_seen, self))
                s_fail(self, LUX_ENOMEM, "cannot rebuild the client table");
            /* the configuration may have changed meanwhile (a new tail):
               start over from a probe, which agrees at once when it has not */
            if (self->state == DB_RS_JOINING) {
                self->join = J_IDLE;
                s_join_start(self);
            }
        }
    } else if (cmd == 'E') {
        s_fail(self, code, text);
    }
    return 0;
}

/* --- forwarding to the successor ---------------------------------------------------- */

/* Send the successor everything committed here that it does not have:
   pending batches where they reach, SQLite for what is older. */
static void
s_forward(s_rep_t *self)
{
    uint64_t from = self->fwd_seq + 1;
    while (from <= self->commit_seq) {
        s_batch_t *b = self->pending;
        while (b && b->nb.first + b->nb.count - 1 < from)
            b = b->next;
        if (b && b->nb.first <= from) {
            uint64_t last = b->nb.first + b->nb.count - 1;
            uint64_t upto = last < self->commit_seq ? last : self->commit_seq;
            s_send_from(self, self->sk_succ, NULL, NET_FORWARD, &b->nb, from, upto);
            from = upto + 1;
            continue;
        }
        /* older than anything pending: read it back */
        uint64_t stop = b ? b->nb.first - 1 : self->commit_seq;
        uint32_t max = stop - from + 1 > S_FETCH ? S_FETCH : (uint32_t) (stop - from + 1), got = 0;
        net_batch_begin(&self->buf, from);
        int rc = db_store_refresh(self->rstore);
        if (!rc)
            rc = db_store_read(self->rstore, from, max, DB_READ_MAX_BYTES, &self->buf, &got);
        if (rc || got == 0) {
            log_error("shard %u: cannot resend seq %llu to replica %u: %s", self->shard,
                      (unsigned long long) from, self->succ_index,
                      rc ? lux_errmsg() : "not in the file");
            break;
        }
        net_batch_end(&self->buf, got);
        s_send(self, self->sk_succ, NULL, NET_FORWARD, self->cfg.epoch, self->buf.data,
               self->buf.len, NULL, 0);
        from += got;
    }
    self->fwd_seq = from - 1;
}

static void
s_hello(s_rep_t *self)
{
    uint8_t b[4];
    util_le32(b, self->index);
    s_send(self, self->sk_succ, NULL, NET_HELLO, self->cfg.epoch, b, 4, NULL, 0);
    self->hello_ms = util_mono_ms();
}

/* --- accepting records -------------------------------------------------------------- */

static void
s_note_seen(s_rep_t *self, const db_event_t *e, uint64_t seq)
{
    s_seen_t *s = util_idmap_put(self->seen, &e->client, NULL);
    if (s && e->cseq > s->cseq) {
        s->cseq = e->cseq;
        s->seq = seq;
    }
}

/* Take the records of a batch that continue our log (from a predecessor or
   the tail), checking each record's chain hash. Returns the number taken,
   or a negative code; *gap set when the batch starts after recv_seq + 1. */
static int
s_take_batch(s_rep_t *self, const net_batch_t *in, bool *gap, char *why, size_t whylen)
{
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t n;
    uint32_t taken = 0;
    s_batch_t *b = NULL;
    uint8_t h[DB_HASH_LEN];

    *gap = in->count && in->first > self->recv_seq + 1;
    if (*gap)
        return 0;
    net_batch_iter(&it, in);
    while (net_batch_next(&it, &seq, &rec, &n)) {
        db_event_t e;
        if (seq <= self->recv_seq)
            continue;
        if (db_event_decode(&e, rec, n)) {
            snprintf(why, whylen, "seq %llu: %s", (unsigned long long) seq, lux_errmsg());
            break;
        }
        db_event_chain(h, self->recv_hash, seq, rec, n);
        if (memcmp(h, e.hash, DB_HASH_LEN) != 0) {
            snprintf(why, whylen, "seq %llu: hash does not chain onto seq %llu",
                     (unsigned long long) seq, (unsigned long long) self->recv_seq);
            break;
        }
        if (!b && !(b = s_batch_new(seq)))
            break;
        net_batch_add(&b->data, rec, n);
        if (e.mask & DB_F_CLIENT)
            s_note_seen(self, &e, seq);
        self->recv_seq = seq;
        memcpy(self->recv_hash, h, DB_HASH_LEN);
        taken++;
    }
    if (b && !b->data.oom)
        s_submit(self, b, taken);
    else if (b)
        s_fail(self, LUX_ENOMEM, "out of memory taking a batch");
    return (int) taken;
}

/* --- the chain socket: our predecessor ----------------------------------------------- */

static void
s_on_hello(s_rep_t *self, zframe_t **rid_p, const net_hdr_t *h, zframe_t *body)
{
    char text[200];
    uint8_t b[8 + DB_HASH_LEN];
    uint32_t from = body && zframe_size(body) == 4 ? util_rd32(zframe_data(body)) : UINT32_MAX;

    if (!body || zframe_size(body) != 4) {
        snprintf(text, sizeof text, "shard %u replica %u: HELLO of %zu bytes, not a u32 replica"
                 " index", self->shard, self->index, body ? zframe_size(body) : 0);
        s_complain(self, "chain", text);
        s_send_error(self, self->sk_chain, rid_p, LUX_EPROTO, text);
        return;
    }
    if (h->epoch != self->cfg.epoch) {
        snprintf(text, sizeof text, "shard %u replica %u: HELLO at epoch %llu, we are at %llu",
                 self->shard, self->index, (unsigned long long) h->epoch,
                 (unsigned long long) self->cfg.epoch);
        s_send_error(self, self->sk_chain, rid_p, LUX_EEPOCH, text);
        if (h->epoch > self->cfg.epoch) /* we are behind: ask */
            s_send(self, self->sk_master, NULL, NET_CONFIG_REQ, 0, NULL, 0, NULL, 0);
        return;
    }
    if (self->state != DB_RS_CHAIN || self->pos <= 0 ||
        self->cfg.m[self->pos - 1].index != from) {
        snprintf(text, sizeof text, "shard %u replica %u: HELLO from replica %u, which is not our "
                 "predecessor at epoch %llu", self->shard, self->index, from,
                 (unsigned long long) self->cfg.epoch);
        s_send_error(self, self->sk_chain, rid_p, LUX_ESTATE, text);
        return;
    }
    zframe_destroy(&self->pred_rid);
    self->pred_rid = *rid_p;
    *rid_p = NULL;
    util_le64(b, self->recv_seq);
    memcpy(b + 8, self->recv_hash, DB_HASH_LEN);
    s_send(self, self->sk_chain, self->pred_rid, NET_SYNC, self->cfg.epoch, b, sizeof b,
           NULL, 0);
    log_info("shard %u: linked to predecessor replica %u at seq %llu (epoch %llu)", self->shard,
             from, (unsigned long long) self->recv_seq, (unsigned long long) self->cfg.epoch);
    /* tell it what the tail has, in case acknowledgements were lost */
    if (self->ack_seq) {
        util_le64(b, self->ack_seq);
        s_send(self, self->sk_chain, self->pred_rid, NET_CHAIN_ACK, self->cfg.epoch, b, 8,
               NULL, 0);
    }
}

static void
s_on_forward(s_rep_t *self, zframe_t **rid_p, const net_hdr_t *h, zframe_t *body)
{
    char text[300] = "";
    net_batch_t in;
    bool gap;

    if (h->epoch != self->cfg.epoch || self->state != DB_RS_CHAIN || !self->pred_rid ||
        !zframe_eq(*rid_p, self->pred_rid)) {
        snprintf(text, sizeof text, "shard %u replica %u: FORWARD refused: %s", self->shard,
                 self->index, h->epoch != self->cfg.epoch ? "wrong epoch" : "not from our predecessor");
        s_send_error(self, self->sk_chain, rid_p, h->epoch != self->cfg.epoch ? LUX_EEPOCH : LUX_ESTATE,
                     text);
        return;
    }
    if (!body || net_batch_parse(&in, zframe_data(body), zframe_size(body))) {
        snprintf(text, sizeof text, "FORWARD: %s", body ? lux_errmsg() : "no batch");
        s_complain(self, "chain", text);
        s_send_error(self, self->sk_chain, rid_p, LUX_EPROTO, text);
        return;
    }
    int taken = s_take_batch(self, &in, &gap, text, sizeof text);
    if (gap || text[0]) {
        uint8_t b[8 + DB_HASH_LEN];
        if (text[0])
            log_error("shard %u: FORWARD from predecessor refused: %s", self->shard, text);
        util_le64(b, self->recv_seq);
        memcpy(b + 8, self->recv_hash, DB_HASH_LEN);
        s_send(self, self->sk_chain, self->pred_rid, NET_SYNC, self->cfg.epoch, b,
               sizeof b, NULL, 0);
    }
    (void) taken;
}

static int
s_on_chain(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_rep_t *self = arg;
    zmsg_t *msg = zmsg_recv(sock);
    zframe_t *rid = msg ? zmsg_pop(msg) : NULL;
    zframe_t *hf = msg ? zmsg_pop(msg) : NULL;
    zframe_t *body = msg ? zmsg_pop(msg) : NULL;
    net_hdr_t h;
    int rc;

    if (!msg)
        return 0;
    if ((rc = net_hdr_decode(&h, hf))) {
        char text[256];
        snprintf(text, sizeof text, "%s", lux_errmsg());
        s_complain(self, "chain", text);
        s_send_error(self, sock, &rid, rc, text);
    } else if (h.type == NET_PING) {
        s_send(self, sock, rid, NET_PONG, self->cfg.epoch, NULL, 0, NULL, 0);
    } else if (h.type == NET_ERROR && self->pred_rid && zframe_eq(rid, self->pred_rid) &&
               h.epoch == self->cfg.epoch && self->state == DB_RS_CHAIN) {
        /* our predecessor found our log forked from its own (s_sync_forked) */
        int code;
        char text[256];
        net_error_decode(body, &code, text, sizeof text);
        if (code == LUX_ECORRUPT)
            s_fail(self, code, text);
        else
            log_warn("shard %u: predecessor: %s", self->shard, text);
    } else if (h.type != NET_HELLO && h.type != NET_FORWARD) {
        if (h.type != NET_ERROR) {
            char text[128];
            snprintf(text, sizeof text, "unexpected %s on the chain endpoint",
                     net_type_name(h.type));
            s_complain(self, "chain", text);
            s_send_error(self, sock, &rid, LUX_EPROTO, text);
        }
    } else if (h.shard != self->shard) {
        s_wrong_shard(self, sock, &rid, &h, "chain");
    } else if (h.type == NET_HELLO) {
        s_on_hello(self, &rid, &h, body);
    } else {
        s_on_forward(self, &rid, &h, body);
    }
    zframe_destroy(&rid);
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return 0;
}

/* --- the successor's answers ------------------------------------------------------------ */

/* The successor's log must be a prefix of ours: its hash at its last seq
   must be ours there. When it is not, one of the two logs holds events
   the other does not, and forwarding would either be refused for ever
   (hashes that do not chain) or, worse, continue a fork. The tail's log
   is the committed one, so when the successor is the tail we are the
   one that forked: we fail, and rejoin truncated to what agrees with
   it. Otherwise the successor is told (ERROR ECORRUPT on the link it
   accepted) and fails, and it rejoins the same way; either way only
   events the tail does not hold are cut. True when they differ. */
static bool
s_sync_forked(s_rep_t *self, uint64_t last, const uint8_t *theirs)
{
    uint8_t mine[DB_HASH_LEN];
    char text[300];
    if (last == 0)
        return false; /* an empty log is everyone's prefix */
    if (last == self->recv_seq)
        memcpy(mine, self->recv_hash, DB_HASH_LEN);
    else if (db_store_refresh(self->rstore) || db_store_hash_at(self->rstore, last, mine)) {
        log_error("shard %u: cannot read our hash at seq %llu to check the successor: %s",
                  self->shard, (unsigned long long) last, lux_errmsg());
        return true; /* not synced: the next HELLO asks again */
    }
    if (memcmp(mine, theirs, DB_HASH_LEN) == 0)
        return false;
    bool succ_is_tail = self->pos + 2 == (int) self->cfg.n;
    snprintf(text, sizeof text, "shard %u: the log of replica %u forked from replica %u's at or "
             "before seq %llu (their hashes there differ)", self->shard,
             succ_is_tail ? self->index : self->succ_index,
             succ_is_tail ? self->succ_index : self->index, (unsigned long long) last);
    if (succ_is_tail) {
        s_fail(self, LUX_ECORRUPT, text);
    } else {
        log_error("%s: the successor leaves the chain to rejoin", text);
        zmsg_t *m = net_error_msg(self->shard, self->cfg.epoch, LUX_ECORRUPT, "%s", text);
        s_emit(self, self->sk_succ, &m);
        self->succ_synced = false;
    }
    return true;
}

static int
s_on_succ(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_rep_t *self = arg;
    zmsg_t *msg = zmsg_recv(sock);
    zframe_t *hf = msg ? zmsg_pop(msg) : NULL;
    zframe_t *body = msg ? zmsg_pop(msg) : NULL;
    net_hdr_t h;

    if (!msg)
        return 0;
    if (net_hdr_decode(&h, hf)) {
        s_complain(self, "successor", lux_errmsg());
    } else if (h.type == NET_ERROR) {
        int code;
        char text[256];
        net_error_decode(body, &code, text, sizeof text);
        log_info("shard %u: successor replica %u: %s", self->shard, self->succ_index, text);
        if (code == LUX_EEPOCH)
            s_send(self, self->sk_master, NULL, NET_CONFIG_REQ, 0, NULL, 0, NULL, 0);
        self->succ_synced = false; /* HELLO again from the heartbeat */
    } else if (h.epoch != self->cfg.epoch) {
        /* a SYNC or CHAIN_ACK on a link of another configuration (a late
           answer to what we sent before our epoch changed): dropped, the
           HELLO of our epoch sets the link up again (see EPOCHS) */
    } else if (h.type == NET_SYNC && body && zframe_size(body) == 8 + DB_HASH_LEN) {
        uint64_t last = util_rd64(zframe_data(body));
        if (last <= self->commit_seq && s_sync_forked(self, last, zframe_data(body) + 8)) {
            /* handled: one of us leaves the chain */
        } else if (last > self->commit_seq) {
            log_error("shard %u: successor replica %u has seq %llu, beyond our %llu: not "
                      "forwarding (its log is not a prefix of ours)",
                      self->shard, self->succ_index, (unsigned long long) last,
                      (unsigned long long) self->commit_seq);
        } else {
            self->fwd_seq = last;
            self->succ_synced = true;
            s_forward(self);
        }
    } else if (h.type == NET_CHAIN_ACK && body && zframe_size(body) == 8) {
        uint64_t acked = util_rd64(zframe_data(body));
        if (acked > self->ack_seq && acked <= self->commit_seq) {
            self->ack_seq = acked;
            s_acked(self);
        }
    } else {
        s_complain(self, "successor", "unexpected message");
    }
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return 0;
}

/* --- the append socket: clients, while we are the head ------------------------------- */

static void
s_ack_one(s_rep_t *self, zframe_t *rid, const util_id_t *client, uint64_t cseq, uint64_t seq)
{
    uint8_t b[32];
    memcpy(b, client->b, 16);
    util_le64(b + 16, cseq);
    util_le64(b + 24, seq);
    s_send(self, self->sk_append, rid, NET_APPEND_ACK, self->cfg.epoch, b, sizeof b, NULL,
           0);
}

static void
s_ack_clients(s_rep_t *self)
{
    size_t k = 0;
    for (size_t i = 0; i < self->nwait; i++) {
        s_waiter_t *w = &self->waiters[i];
        if (w->seq <= self->ack_seq) {
            s_ack_one(self, w->rid, &w->client, w->cseq, w->seq);
            zframe_destroy(&w->rid);
        } else {
            self->waiters[k++] = *w;
        }
    }
    self->nwait = k;
    s_admission(self);
}

static void
s_admission(s_rep_t *self)
{
    if (!self->append_paused && self->pending_events >= S_MAX_PENDING) {
        s_raw_on(self, R_APPEND, false);
        self->append_paused = true;
    } else if (self->append_paused && self->pending_events < S_MAX_PENDING / 2) {
        s_raw_on(self, R_APPEND, true);
        self->append_paused = false;
    } else {
        return;
    }
    for (size_t i = 0; i < self->nlinks; i++)
        s_link_watch(self, &self->links[i]);
}

static void
s_wait(s_rep_t *self, zframe_t **rid_p, const util_id_t *client, uint64_t cseq, uint64_t seq)
{
    if (seq <= self->ack_seq) {
        s_ack_one(self, *rid_p, client, cseq, seq);
        return;
    }
    if (self->nwait == self->capwait) {
        size_t cap = self->capwait ? 2 * self->capwait : 64;
        s_waiter_t *w = realloc(self->waiters, cap * sizeof *w);
        if (!w)
            return; /* the client will time out and resend: safe */
        self->waiters = w;
        self->capwait = cap;
    }
    self->waiters[self->nwait++] = (s_waiter_t) {*rid_p, *client, cseq, seq};
    *rid_p = NULL;
}

/* Check every record of an APPEND before taking any: records that decode,
   of kinds we know, each in the shard of its key, one client, strictly
   increasing cseq. 0 or a code with text. The head is the log's gate:
   replicas behind it carry whatever it took, kinds they do not know
   included (doc/protocol.md 13). */
static int
s_check_append(const s_rep_t *self, const net_batch_t *in, util_id_t *client, uint64_t *first,
               char *text, size_t n)
{
    net_batch_it_t it;
    uint64_t seq, prev = 0;
    const uint8_t *rec;
    size_t len;
    uint32_t i = 0;
    net_batch_iter(&it, in);
    while (net_batch_next(&it, &seq, &rec, &len)) {
        db_event_t e;
        if (db_event_decode(&e, rec, len)) {
            snprintf(text, n, "record %u: %s", i, lux_errmsg());
            return LUX_ECORRUPT;
        }
        if (!db_kind_name(e.kind)) {
            /* we cannot tell its key, so not its shard: a newer client
               than this head (upgrade the replicas first) */
            snprintf(text, n, "record %u: kind %u is unknown to shard %u replica %u (a newer "
                     "client than this replica?)", i, e.kind, self->shard, self->index);
            return LUX_ENOSYS;
        }
        uint32_t home = util_id_shard(db_event_key(&e), self->cluster.shards);
        if (home != self->shard) {
            char hex[UTIL_ID_HEX];
            snprintf(text, n, "record %u: a %s event belongs to the shard of its key (%s), "
                     "shard %u, not shard %u", i, db_kind_name(e.kind),
                     util_id_hex(db_event_key(&e), hex), home, self->shard);
            return LUX_EINVAL;
        }
        if (!(e.mask & DB_F_CLIENT) || e.cseq == 0) {
            snprintf(text, n, "record %u has no event ID (client, cseq)", i);
            return LUX_EINVAL;
        }
        if (i == 0) {
            *client = e.client;
            *first = e.cseq;
        } else if (!util_id_eq(client, &e.client) || e.cseq != prev + 1) {
            snprintf(text, n, "record %u: one client per APPEND, consecutive event IDs", i);
            return LUX_EINVAL;
        }
        prev = e.cseq;
        i++;
    }
    if (in->count == 0) {
        snprintf(text, n, "empty APPEND");
        return LUX_EINVAL;
    }
    return 0;
}

/* The first event ID (cseq) of an APPEND's body, which its ERROR names;
   0 when it has none that decodes. Only on the error path. */
static uint64_t
s_append_req(zframe_t *body)
{
    net_batch_t in;
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t len;
    db_event_t e;
    if (!body || net_batch_parse(&in, zframe_data(body), zframe_size(body)))
        return 0;
    net_batch_iter(&it, &in);
    if (!net_batch_next(&it, &seq, &rec, &len) || db_event_decode(&e, rec, len) ||
        !(e.mask & DB_F_CLIENT))
        return 0;
    return e.cseq;
}

static void
s_append(s_rep_t *self, zframe_t **rid_p, const net_hdr_t *h, zframe_t *body)
{
    char text[UTIL_ERRMSG_MAX];
    net_batch_t in;
    util_id_t client;
    int rc;

    if (self->state == DB_RS_FAILED) {
        /* said as an I/O error, so that a client whose shard has no other
           replica tells its callers why nothing commits */
        snprintf(text, sizeof text, "the log at %s cannot write: %s (shard %u replica %u "
                 "failed: %s)", self->cluster.dir, self->cause, self->shard, self->index,
                 self->failed);
        s_send_error_req(self, self->sk_append, rid_p, LUX_EIO, text, s_append_req(body));
        return;
    }
    if (!s_is_head(self)) {
        snprintf(text, sizeof text, "shard %u replica %u is not the head at epoch %llu (%s)",
                 self->shard, self->index, (unsigned long long) self->cfg.epoch,
                 db_replica_state_name(self->state));
        s_send_error_req(self, self->sk_append, rid_p, LUX_ESTATE, text, s_append_req(body));
        return;
    }
    if (!body || net_batch_parse(&in, zframe_data(body), zframe_size(body))) {
        snprintf(text, sizeof text, "APPEND: %s", body ? lux_errmsg() : "no batch");
        s_complain(self, "append", text);
        s_send_error_req(self, self->sk_append, rid_p, LUX_EPROTO, text, 0);
        return;
    }
    uint64_t first = 0;
    if ((rc = s_check_append(self, &in, &client, &first, text, sizeof text))) {
        s_complain(self, "append", text);
        s_send_error_req(self, self->sk_append, rid_p, rc, text, s_append_req(body));
        return;
    }
    s_seen_t *seen = util_idmap_put(self->seen, &client, NULL);
    if (!seen) {
        s_send_error_req(self, self->sk_append, rid_p, LUX_ENOMEM, "out of memory", first);
        return;
    }
    if (first > seen->cseq + 1) {
        /* we refused an earlier batch of this client: take nothing out of
           order, or a resend of it would later look like a duplicate */
        snprintf(text, sizeof text, "shard %u: expected event %llu from this client, got %llu",
                 self->shard, (unsigned long long) seen->cseq + 1, (unsigned long long) first);
        s_send_error_req(self, self->sk_append, rid_p, LUX_EGAP, text, first);
        return;
    }
    /* the records are ours to change: set ts and the hash in place */
    net_batch_it_t it;
    uint64_t ignore;
    const uint8_t *rec;
    size_t len;
    s_batch_t *b = NULL;
    uint32_t taken = 0;
    int64_t now = util_now_ns();
    net_batch_iter(&it, &in);
    while (net_batch_next(&it, &ignore, &rec, &len)) {
        uint8_t *r = (uint8_t *) rec;
        uint64_t cseq = util_rd64(r + 14 + 16); /* DB_F_CLIENT is the first field */
        if (cseq <= seen->cseq)
            continue; /* applied before: resent after a failure */
        uint64_t seq = self->recv_seq + 1;
        util_le64(r + DB_REC_TS_OFF, (uint64_t) now);
        db_event_chain(r + len - DB_HASH_LEN, self->recv_hash, seq, r, len);
        if (!b && !(b = s_batch_new(seq))) {
            s_send_error_req(self, self->sk_append, rid_p, LUX_ENOMEM, "out of memory", first);
            return;
        }
        net_batch_add(&b->data, r, len);
        memcpy(self->recv_hash, r + len - DB_HASH_LEN, DB_HASH_LEN);
        self->recv_seq = seq;
        seen->cseq = cseq;
        seen->seq = seq;
        taken++;
    }
    if (b)
        s_submit(self, b, taken);
    /* acknowledge the newest event we have from this client, which is the
       APPEND's last one unless the whole APPEND was a resend of older
       ones: (cseq, seq) is always one event's pair (doc/protocol.md 11.4) */
    s_wait(self, rid_p, &client, seen->cseq, seen->seq);
    s_admission(self);
}

/* One message of the append socket or a link: routing ID, header, body. */
static void
s_append_msg(s_rep_t *self, zmsg_t *msg)
{
    zsock_t *sock = self->sk_append;
    zframe_t *rid = zmsg_pop(msg);
    zframe_t *hf = zmsg_pop(msg);
    zframe_t *body = zmsg_pop(msg);
    net_hdr_t h;
    int rc;

    if ((rc = net_hdr_decode(&h, hf))) {
        char text[256];
        snprintf(text, sizeof text, "%s", lux_errmsg());
        s_complain(self, "append", text);
        s_send_error(self, sock, &rid, rc, text);
    } else if (h.type == NET_PING) {
        /* liveness: answered whatever shard the header names */
        s_send(self, sock, rid, NET_PONG, self->cfg.epoch, NULL, 0, NULL, 0);
    } else if (h.type != NET_APPEND) {
        /* the type is checked before the shard, as at every endpoint:
           a message for another endpoint is EPROTO whatever shard it names */
        char text[128];
        snprintf(text, sizeof text, "unexpected %s on the append endpoint", net_type_name(h.type));
        s_complain(self, "append", text);
        s_send_error(self, sock, &rid, LUX_EPROTO, text);
    } else if (h.shard != self->shard) {
        s_wrong_shard(self, sock, &rid, &h, "append");
    } else {
        s_append(self, &rid, &h, body);
    }
    zframe_destroy(&rid);
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
}

static int
s_on_append(zloop_t *loop, zsock_t *sock, void *arg)
{
    zmsg_t *msg = zmsg_recv(sock);
    (void) loop;
    if (msg)
        s_append_msg(arg, msg);
    return 0;
}

/* --- configuration ---------------------------------------------------------------------- */

/* Leave the chain (we were removed while alive): forget what was in
   flight; what the tail did not commit will be truncated when we rejoin. */
static void
s_leave(s_rep_t *self)
{
    for (size_t i = 0; i < self->nwait; i++)
        zframe_destroy(&self->waiters[i].rid);
    self->nwait = 0;
    zframe_destroy(&self->pred_rid);
    if (self->sk_succ) {
        if (self->loop)
            zloop_reader_end(self->loop, self->sk_succ);
        zsock_destroy(&self->sk_succ);
    }
    self->succ_synced = false;
    atomic_store(&self->rstate.is_tail, 0);
}

static void
s_apply_config(s_rep_t *self, const db_chain_t *c)
{
    int pos = db_chain_find(c, self->index);
    bool was_member = self->state == DB_RS_CHAIN;
    bool same_tail = self->cfg.n && c->n &&
                     self->cfg.m[self->cfg.n - 1].index == c->m[c->n - 1].index &&
                     strcmp(self->cfg.m[self->cfg.n - 1].ep[DB_EP_READ],
                            c->m[c->n - 1].ep[DB_EP_READ]) == 0;

    if (self->state == DB_RS_FAILED || c->epoch < self->cfg.epoch ||
        (c->epoch == self->cfg.epoch && self->state != DB_RS_STARTING && self->cfg.n))
        return;
    log_info("shard %u: epoch %llu -> %llu, position %d of %u", self->shard,
             (unsigned long long) self->cfg.epoch, (unsigned long long) c->epoch, pos, c->n);
    bool was_tail = s_is_tail(self);
    if (self->hold.on) {
        /* the epoch changed: the master decided (or something else did) */
        self->hold.on = false;
        atomic_store(&self->rstate.upto, UINT64_MAX);
        log_info("shard %u: no longer holding acknowledgements at seq %llu: epoch %llu",
                 self->shard, (unsigned long long) self->hold.seq, (unsigned long long) c->epoch);
    }
    self->cfg = *c;
    self->pos = pos;
    if (pos < 0) {
        if (was_member) {
            log_warn("shard %u: replica %u was removed from the chain at epoch %llu; rejoining",
                     self->shard, self->index, (unsigned long long) c->epoch);
            s_leave(self);
        }
        if (self->state != DB_RS_JOINING || !same_tail) {
            self->state = DB_RS_JOINING;
            self->join = J_IDLE;
            s_join_start(self);
        }
        return;
    }
    if (self->state == DB_RS_JOINING && self->sk_tail) {
        zloop_reader_end(self->loop, self->sk_tail);
        zsock_destroy(&self->sk_tail);
    }
    self->state = DB_RS_CHAIN;
    self->join = J_IDLE;
    self->join_req = 0;
    zframe_destroy(&self->pred_rid); /* the predecessor says HELLO at this epoch */

    if (pos < (int) c->n - 1) {
        const db_member_t *m = &c->m[pos + 1];
        if (!self->sk_succ || self->succ_index != m->index || strcmp(self->succ_ep, m->ep[DB_EP_CHAIN])) {
            if (self->sk_succ) {
                zloop_reader_end(self->loop, self->sk_succ);
                zsock_destroy(&self->sk_succ);
            }
            self->succ_index = m->index;
            snprintf(self->succ_ep, sizeof self->succ_ep, "%s", m->ep[DB_EP_CHAIN]);
            if (m->ep[DB_EP_CHAIN][0]) {
                self->sk_succ = net_connect(ZMQ_DEALER, m->ep[DB_EP_CHAIN], self->sec);
                if (self->sk_succ) {
                    net_hwm(self->sk_succ, 0);
                    zloop_reader(self->loop, self->sk_succ, s_on_succ_w, self);
                } else {
                    log_error("shard %u: %s", self->shard, lux_errmsg());
                }
            }
        }
        self->succ_synced = false;
        if (self->sk_succ)
            s_hello(self);
        atomic_store(&self->rstate.is_tail, 0);
    } else {
        if (self->sk_succ) {
            zloop_reader_end(self->loop, self->sk_succ);
            zsock_destroy(&self->sk_succ);
        }
        self->succ_synced = false;
        /* as the tail, everything committed here is committed; a tail
           that stays the tail publishes what it held back */
        if (!was_tail)
            self->pub_seq = self->commit_seq;
        atomic_store(&self->rstate.is_tail, 1);
        s_tail_ack(self);
    }
    atomic_store(&self->rstate.epoch, c->epoch);
    if (pos == 0)
        s_ack_clients(self);
}

static int
s_on_master(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_rep_t *self = arg;
    zmsg_t *msg = zmsg_recv(sock);
    zframe_t *hf = msg ? zmsg_pop(msg) : NULL;
    zframe_t *body = msg ? zmsg_pop(msg) : NULL;
    net_hdr_t h;
    util_id_t cluster;
    uint32_t count = 0;

    if (!msg)
        return 0;
    if (net_hdr_decode(&h, hf)) {
        s_complain(self, "master", lux_errmsg());
    } else if (h.type == NET_CONFIG && body) {
        /* the master sends just our shard's chain; a full CONFIG is fine too */
        size_t max = self->cluster.shards;
        db_chain_t *all = calloc(max, sizeof *all);
        if (all && db_chain_decode(zframe_data(body), zframe_size(body), &cluster, all,
                                   (uint32_t) max, &count) == 0 &&
            util_id_eq(&cluster, &self->cluster.id)) {
            for (uint32_t i = 0; i < count; i++)
                if (all[i].shard == self->shard)
                    s_apply_config(self, &all[i]);
        } else {
            s_complain(self, "master", "bad CONFIG");
        }
        free(all);
    } else if (h.type == NET_JOIN_HOLD) {
        s_on_join_hold(self, &h, body);
    } else if (h.type == NET_ERROR) {
        int code;
        char text[256];
        zframe_t *req = zmsg_first(msg);
        net_error_decode(body, &code, text, sizeof text);
        if (self->hold.on && req && zframe_size(req) == 8 &&
            util_rd64(zframe_data(req)) == self->hold.token && h.epoch == self->cfg.epoch) {
            /* the master's answer to our latest JOIN_SEQ: no join at this
               epoch (an admission would have changed the epoch) */
            s_hold_end(self, text);
        } else if (code == LUX_EGAP && self->state == DB_RS_JOINING && self->join == J_WAIT) {
            /* the tail had more than we fetched: fetch again, then ask */
            log_info("chain master: %s", text);
            self->join = J_FETCH;
            s_join_request(self);
        } else {
            log_warn("chain master: %s", text);
        }
    }
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return 0;
}

/* --- the tail's side of a join ------------------------------------------------------- */

/* A replica that joins becomes the tail, so it must hold every event the
   tail has acknowledged. The master asks the tail (JOIN_HOLD); the tail
   stops acknowledging and publishing at its ack_seq, the held seq, and
   says so (JOIN_SEQ). The master admits the joiner only if it has that
   seq, and until the tail hears the outcome it acknowledges nothing past
   it: once admitted, the joiner is our successor and its CHAIN_ACKs carry
   the acknowledgements on. So whatever happens to us after, every event
   a client was told of is on the joiner (doc/protocol.md 8.4). Reads
   stop at the held seq too, so no reader sees an event that could still
   be cut. The hold ends with a new epoch, or with the master's ERROR
   answering our latest JOIN_SEQ (the joiner cannot join at this epoch);
   while neither comes, JOIN_SEQ is asked again every dead_ms, so a lost
   message or a restarted master costs time, never safety. */

static void
s_hold_ask(s_rep_t *self)
{
    uint8_t b[32];
    util_le32(b, self->index);
    util_le32(b + 4, self->hold.index);
    util_le64(b + 8, self->hold.last);
    util_le64(b + 16, self->hold.seq);
    util_le64(b + 24, ++self->hold.token);
    s_send(self, self->sk_master, NULL, NET_JOIN_SEQ, self->cfg.epoch, b, sizeof b, NULL, 0);
    self->hold.ms = util_mono_ms();
}

static void
s_hold_end(s_rep_t *self, const char *why)
{
    if (!self->hold.on)
        return;
    log_info("shard %u: no longer holding acknowledgements at seq %llu: %s", self->shard,
             (unsigned long long) self->hold.seq, why);
    self->hold.on = false;
    atomic_store(&self->rstate.upto, UINT64_MAX);
    if (s_is_tail(self))
        s_tail_ack(self);
}

static void
s_on_join_hold(s_rep_t *self, const net_hdr_t *h, zframe_t *body)
{
    if (!body || zframe_size(body) != 12) {
        s_complain(self, "master", "JOIN_HOLD of the wrong size");
        return;
    }
    if (h->epoch != self->cfg.epoch || !s_is_tail(self)) {
        /* a configuration we have not heard of, or left: ask */
        s_send(self, self->sk_master, NULL, NET_CONFIG_REQ, 0, NULL, 0, NULL, 0);
        return;
    }
    uint32_t index = util_rd32(zframe_data(body));
    uint64_t last = util_rd64(zframe_data(body) + 4);
    if (!self->hold.on) {
        self->hold.on = true;
        self->hold.seq = self->ack_seq;
        atomic_store(&self->rstate.upto, self->hold.seq);
        log_info("shard %u: replica %u asks to join at seq %llu; holding acknowledgements at "
                 "seq %llu", self->shard, index, (unsigned long long) last,
                 (unsigned long long) self->hold.seq);
    }
    self->hold.index = index;
    self->hold.last = last;
    s_hold_ask(self);
}

/* --- joining: catch up from the tail, then join at its end ------------------------------ */

static int s_on_tail(zloop_t *loop, zsock_t *sock, void *arg);

static void
s_join_start(s_rep_t *self)
{
    const db_member_t *tail;
    if (self->state != DB_RS_JOINING || self->cfg.n == 0)
        return;
    if (self->recv_seq != self->commit_seq)
        return; /* the writer is still busy; s_after_commit calls again */
    if (self->truncating)
        return; /* the writer is truncating; its 'T' reply calls again */
    tail = &self->cfg.m[self->cfg.n - 1];
    if (!tail->ep[DB_EP_READ][0])
        return; /* its endpoints are not known yet: next heartbeat */
    if (self->sk_tail) {
        zloop_reader_end(self->loop, self->sk_tail);
        zsock_destroy(&self->sk_tail);
    }
    self->sk_tail = net_connect(ZMQ_DEALER, tail->ep[DB_EP_READ], self->sec);
    if (!self->sk_tail) {
        log_error("shard %u: %s", self->shard, lux_errmsg());
        return;
    }
    net_hwm(self->sk_tail, 0);
    zloop_reader(self->loop, self->sk_tail, s_on_tail_w, self);
    self->join = self->recv_seq ? J_PROBE : J_FETCH;
    self->probe_from = self->recv_seq > S_PROBE ? self->recv_seq - S_PROBE + 1 : 1;
    log_info("shard %u: catching up from the tail (replica %u), we have seq %llu", self->shard,
             tail->index, (unsigned long long) self->recv_seq);
    s_join_request(self);
}

static void
s_join_request(s_rep_t *self)
{
    uint8_t b[24];
    static uint64_t s_req;
    if (!self->sk_tail || (self->join != J_PROBE && self->join != J_FETCH))
        return;
    if (self->join == J_FETCH && self->pending_events >= S_MAX_PENDING / 4)
        return; /* let the writer catch up first */
    self->join_req = ++s_req;
    util_le64(b, self->join_req);
    util_le64(b + 8, self->join == J_PROBE ? self->probe_from : self->recv_seq + 1);
    util_le32(b + 16, self->join == J_PROBE ? S_PROBE : S_FETCH);
    util_le32(b + 20, DB_READ_MAX_BYTES);
    s_send(self, self->sk_tail, NULL, NET_READ, self->cfg.epoch, b, sizeof b, NULL, 0);
    self->join_ms = util_mono_ms();
}

/* Find the newest seq of the window where our chain agrees with the
   tail's; truncate after it, or probe further back. */
static void
s_join_probe(s_rep_t *self, const net_batch_t *in, uint64_t tail_last)
{
    net_batch_it_t it;
    uint64_t seq, agree = 0;
    const uint8_t *rec;
    size_t n;
    bool found = false;
    uint64_t top = self->recv_seq < tail_last ? self->recv_seq : tail_last;
    uint8_t mine[DB_HASH_LEN];

    net_batch_iter(&it, in);
    while (net_batch_next(&it, &seq, &rec, &n)) {
        if (seq > top)
            break;
        if (db_store_hash_at(self->rstore, seq, mine) == 0 &&
            memcmp(mine, rec + n - DB_HASH_LEN, DB_HASH_LEN) == 0) {
            agree = seq;
            found = true;
        }
    }
    if (!found && in->count && in->first > 1 && top >= in->first) {
        /* nothing agrees in this window: look further back */
        self->probe_from = in->first > S_PROBE ? in->first - S_PROBE : 1;
        s_join_request(self);
        return;
    }
    if (!found && in->count == 0 && tail_last > 0 && self->probe_from > tail_last) {
        /* the tail is shorter than our window */
        self->probe_from = tail_last > S_PROBE ? tail_last - S_PROBE + 1 : 1;
        s_join_request(self);
        return;
    }
    if (agree == self->recv_seq) {
        self->join = J_FETCH;
        s_join_request(self);
        return;
    }
    self->join = J_TRUNC;
    self->join_req = 0;
    self->truncating = true;
    s_writer_watch(self, true);
    db_writer_truncate(self->writer, agree);
}

static int
s_on_tail(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_rep_t *self = arg;
    zmsg_t *msg = zmsg_recv(sock);
    zframe_t *hf = msg ? zmsg_pop(msg) : NULL;
    zframe_t *rep = msg ? zmsg_pop(msg) : NULL;
    zframe_t *body = msg ? zmsg_pop(msg) : NULL;
    net_hdr_t h;
    net_batch_t in;

    if (!msg)
        return 0;
    if (net_hdr_decode(&h, hf)) {
        s_complain(self, "tail read", lux_errmsg());
    } else if (h.type == NET_ERROR) {
        int code;
        char text[256];
        net_error_decode(rep, &code, text, sizeof text);
        log_info("shard %u: catching up: %s", self->shard, text);
        self->join_req = 0; /* retried from the heartbeat, after a config request */
        s_send(self, self->sk_master, NULL, NET_CONFIG_REQ, 0, NULL, 0, NULL, 0);
    } else if (h.type == NET_READ_REP && rep && zframe_size(rep) == 16 && body &&
               net_batch_parse(&in, zframe_data(body), zframe_size(body)) == 0 &&
               util_rd64(zframe_data(rep)) == self->join_req) {
        uint64_t tail_last = util_rd64(zframe_data(rep) + 8);
        self->join_req = 0;
        if (self->join == J_PROBE) {
            s_join_probe(self, &in, tail_last);
        } else if (self->join == J_FETCH) {
            bool gap;
            char why[256] = "";
            s_take_batch(self, &in, &gap, why, sizeof why);
            if (gap || why[0]) {
                log_error("shard %u: catching up: %s", self->shard, why[0] ? why : "gap");
                self->join = J_PROBE; /* start over, carefully */
                self->probe_from = self->recv_seq > S_PROBE ? self->recv_seq - S_PROBE + 1 : 1;
                s_join_request(self);
            } else if (self->recv_seq >= tail_last) {
                uint8_t b[12];
                util_le32(b, self->index);
                util_le64(b + 4, self->recv_seq);
                s_send(self, self->sk_master, NULL, NET_JOIN, self->cfg.epoch, b,
                       sizeof b, NULL, 0);
                self->join = J_WAIT;
                self->join_ms = util_mono_ms();
                log_info("shard %u: caught up at seq %llu; asking to join", self->shard,
                         (unsigned long long) self->recv_seq);
            } else {
                s_join_request(self);
            }
        }
    }
    zframe_destroy(&hf);
    zframe_destroy(&rep);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return 0;
}

/* --- heartbeat, pipe ------------------------------------------------------------------- */

static int
s_on_beat(zloop_t *loop, int timer_id, void *arg)
{
    s_rep_t *self = arg;
    db_beat_t beat;
    int64_t now = util_mono_ms();

    memset(&beat, 0, sizeof beat);
    beat.shard = self->shard;
    beat.index = self->index;
    beat.pid = (uint32_t) getpid();
    beat.epoch = self->cfg.epoch;
    beat.last = self->commit_seq;
    beat.state = (uint8_t) self->state;
    for (int e = 0; e < DB_EP_N; e++)
        snprintf(beat.ep[e], DB_EP_MAX, "%s", self->ep[e]);
    snprintf(beat.path, sizeof beat.path, "%s", self->db_path);
    self->buf.len = 0;
    db_beat_encode(&self->buf, &beat);
    s_send(self, self->sk_master, NULL, NET_HEARTBEAT, self->cfg.epoch, self->buf.data,
           self->buf.len, NULL, 0);
    if (self->state == DB_RS_FAILED)
        return 0; /* beats say so (lux status: failed, not silent); nothing more */

    if (self->state == DB_RS_CHAIN && self->sk_succ && !self->succ_synced &&
        now - self->hello_ms >= 3 * self->cluster.heartbeat_ms)
        s_hello(self);
    if (self->state == DB_RS_JOINING) {
        if (!self->sk_tail || self->join == J_IDLE)
            s_join_start(self);
        else if (self->join_req && now - self->join_ms > 2000) {
            self->join_req = 0; /* lost: ask again */
            s_join_request(self);
        } else if (!self->join_req && (self->join == J_PROBE || self->join == J_FETCH))
            s_join_request(self);
        else if (self->join == J_WAIT && now - self->join_ms > 5 * self->cluster.heartbeat_ms) {
            self->join = J_FETCH; /* not admitted yet: more may have come */
            s_join_request(self);
        }
    }
    if (self->hold.on && now - self->hold.ms >= self->cluster.dead_ms)
        s_hold_ask(self); /* no answer yet: ask again (see the tail's side of a join) */
    if (s_is_tail(self) && !self->hold.on && now - self->pub_beat_ms >= S_PUB_BEAT_MS) {
        uint8_t b[NET_BATCH_HDR];
        util_le64(b, self->commit_seq + 1);
        util_le32(b + 8, 0);
        s_send(self, self->sk_pub, NULL, NET_PUBLISH, self->cfg.epoch, b, sizeof b, NULL, 0);
        self->pub_beat_ms = now;
    }
    return 0;
}


/* --- the handlers as the loop calls them ----------------------------------------------- */

/* The heartbeat; it also has every raw socket's events read. */
static int
s_on_beat_marked(zloop_t *loop, int timer_id, void *arg)
{
    s_rep_t *self = arg;
    for (int r = 0; r < R_N; r++)
        self->raw[r].dirty = true;
    return s_on_beat(loop, timer_id, arg);
}

/* NAME_w: the handler NAME, then s_settle. */
#define S_SETTLING(name, what)                                                  \
    static int name##_w(zloop_t *loop, what x, void *arg)                     \
    {                                                                           \
        int rc = name(loop, x, arg);                                            \
        return s_settle(arg) == -1 ? -1 : rc;                                   \
    }
S_SETTLING(s_on_link, zmq_pollitem_t *)
S_SETTLING(s_on_link_accept, zmq_pollitem_t *)
S_SETTLING(s_on_writer, zsock_t *)
S_SETTLING(s_on_succ, zsock_t *)
S_SETTLING(s_on_tail, zsock_t *)
S_SETTLING(s_on_beat_marked, int)
#undef S_SETTLING


/* --- setup and teardown ------------------------------------------------------------------ */

static int
s_load_seen(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq)
{
    s_rep_t *self = arg;
    s_seen_t *s = util_idmap_put(self->seen, client, NULL);
    if (s) {
        s->cseq = cseq;
        s->seq = seq;
    }
    return 0;
}

static int
s_bind_all(s_rep_t *self)
{
    char ep[DB_EP_MAX];
    zsock_t **socks[DB_EP_N] = {&self->sk_append, &self->sk_chain, NULL, &self->sk_pub};
    int types[DB_EP_N] = {ZMQ_ROUTER, ZMQ_ROUTER, 0, ZMQ_PUB};
    for (int k = 0; k < DB_EP_N; k++) {
        if (!socks[k])
            continue;
        db_cluster_replica_ep(&self->cluster, self->shard, self->index, k, ep, sizeof ep);
        *socks[k] = net_bind(types[k], ep, self->sec, self->ep[k], DB_EP_MAX);
        if (!*socks[k])
            return LUX_EIO;
        net_hwm(*socks[k], k == DB_EP_PUB ? 10000 : 0);
    }
    return 0;
}

static int
s_setup(s_rep_t *self)
{
    char ep[DB_EP_MAX];
    db_store_opts_t so = {.path = self->db_path, .cluster = self->cluster.id,
                          .shard = self->shard, .sync_full = self->cluster.sync_full,
                          .external_checkpoint = true};
    db_store_t *store = db_store_open(&so);
    if (!store)
        return LUX_EIO;
    self->recv_seq = self->commit_seq = self->fwd_seq = self->ack_seq = self->pub_seq =
        db_store_last_seq(store);
    memcpy(self->recv_hash, db_store_last_hash(store), DB_HASH_LEN);
    self->store = store;
    db_store_watch_wal(store, &self->rstate.wal_pages);
    if (!(self->writer = db_writer_new(store)))
        return util_err(LUX_EIO, "cannot start the writer thread");
    so.reader = true;
    if (!(self->rstore = db_store_open(&so)))
        return LUX_EIO;
    if (!(self->seen = util_idmap_new(sizeof(s_seen_t))))
        return util_err(LUX_ENOMEM, "out of memory");
    db_store_clients(self->rstore, s_load_seen, self);
    db_reader_opts_t ro = {.db_path = self->db_path, .cluster = &self->cluster.id,
                           .shard = self->shard, .sec = self->sec, .state = &self->rstate,
                           .bound = self->ep[DB_EP_READ], .bound_len = DB_EP_MAX};
    db_cluster_replica_ep(&self->cluster, self->shard, self->index, DB_EP_READ, ep, sizeof ep);
    ro.ep = ep;
    if (!(self->reader = db_reader_new(&ro)))
        return LUX_EIO;
    if (s_bind_all(self))
        return LUX_EIO;
    db_cluster_master_ep(&self->cluster, ep, sizeof ep);
    if (!(self->sk_master = net_connect(ZMQ_DEALER, ep, self->sec)))
        return LUX_EIO;
    /* the master may be down for a while (the chain serves on): a beat it
       cannot take is dropped, never waited on */
    zsock_set_sndtimeo(self->sk_master, 0);
    return 0;
}

static void
s_teardown(s_rep_t *self)
{
    s_leave(self);
    /* the writer commits what was queued before it stops, reading the
       pending batches: destroy it first, then free them */
    zactor_destroy(&self->writer);
    db_store_close(&self->store);
    while (self->pending) {
        s_batch_t *b = self->pending;
        self->pending = b->next;
        s_batch_free(b);
    }
    free(self->waiters);
    zactor_destroy(&self->reader);
    for (int k = 0; k < DB_EP_N; k++)
        if (self->ep[k][0])
            net_forget(self->ep[k]);
    while (self->nlinks)
        s_link_close(self, &self->links[0]);
    free(self->links);
    if (self->link_fd >= 0) {
        char path[DB_EP_MAX];
        close(self->link_fd);
        if (net_link_path(self->ep[DB_EP_APPEND], path, sizeof path) == 0)
            unlink(path);
    }
    zsock_destroy(&self->sk_append);
    zsock_destroy(&self->sk_chain);
    zsock_destroy(&self->sk_pub);
    zsock_destroy(&self->sk_master);
    zsock_destroy(&self->sk_tail);
    db_store_close(&self->rstore);
    util_idmap_destroy(&self->seen);
    util_buf_free(&self->buf);
}

static void
s_actor(zsock_t *pipe, void *arg)
{
    s_rep_t *self = arg;
    self->pipe = pipe;
    util_log_name("replica %u.%u", self->shard, self->index);
    util_buf_init(&self->buf);
    self->pos = -1;
    self->link_fd = -1;
    atomic_store(&self->rstate.upto, UINT64_MAX);
    if (s_setup(self)) {
        snprintf(self->db_path, sizeof self->db_path, "!%s", lux_errmsg());
        s_teardown(self);
        zsock_signal(pipe, 1);
        return;
    }
    zsock_signal(pipe, 0);
    self->loop = zloop_new();
    s_raw_init(self, R_PIPE, pipe, net_pipe_on_term);
    s_raw_init(self, R_APPEND, self->sk_append, s_on_append);
    char path[DB_EP_MAX];
    if (net_link_path(self->ep[DB_EP_APPEND], path, sizeof path) == 0) {
        /* a link beside the append endpoint; without one, local clients
           append over ZeroMQ as remote ones do, only slower */
        int fd = net_link_listen(path);
        zmq_pollitem_t item = {NULL, fd, ZMQ_POLLIN, 0};
        if (fd < 0)
            log_warn("no append link: %s", lux_errmsg());
        else if (zloop_poller(self->loop, &item, s_on_link_accept_w, self) == 0)
            self->link_fd = fd;
        else
            close(fd);
    }
    s_raw_init(self, R_CHAIN, self->sk_chain, s_on_chain);
    s_raw_init(self, R_MASTER, self->sk_master, s_on_master);
    s_writer_watch(self, true);
    zloop_timer(self->loop, (size_t) self->cluster.heartbeat_ms, 0, s_on_beat_marked_w, self);
    s_on_beat_marked_w(self->loop, 0, self);
    log_info("serving %s (last seq %llu)", self->db_path, (unsigned long long) self->commit_seq);
    zloop_start(self->loop);
    zloop_destroy(&self->loop);
    s_teardown(self);
    free(self);
}

zactor_t *
db_replica_new(const db_replica_opts_t *o)
{
    s_rep_t *self = calloc(1, sizeof *self);
    zactor_t *a;
    if (!self) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    self->cluster = *o->cluster;
    self->shard = o->shard;
    self->index = o->index;
    self->sec = o->sec;
    db_cluster_replica_db(&self->cluster, o->shard, o->index, self->db_path,
                          sizeof self->db_path);
    /* On success the actor owns self and frees it when it stops. On a
       failed setup it signals and returns without freeing, leaving the
       message in db_path for us. */
    a = zactor_new(s_actor, self);
    if (!a) {
        free(self);
        util_err(LUX_ENOMEM, "cannot start a thread");
    } else if (self->db_path[0] == '!') {
        util_err(LUX_EIO, "shard %u replica %u: %s", o->shard, o->index, self->db_path + 1);
        zactor_destroy(&a);
        free(self);
    }
    return a;
}
