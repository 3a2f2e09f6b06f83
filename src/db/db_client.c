/*  db_client - the appending client (see db_client.h).

    Per shard: a DEALER to the head's append endpoint, the batch being
    filled, and a FIFO of batches in flight, each kept as the exact bytes
    sent so a resend is byte-identical. Event IDs are dense per shard (cseq
    1, 2, 3...), and a head takes only the next one it expects, so it can
    tell a resent event (cseq at or below the newest it has) from a gap
    left by a batch it refused (it answers EGAP and we resend from the
    oldest in flight). Configurations come from the
    master's PUB (pushed on every change) and from CONFIG_REQ (asked at
    start, on an error reply, and when acknowledgements stop coming).

    A head on this machine is reached by the local link beside its ipc://
    append endpoint (net_link.h) when it has one: the same messages, with
    two thread wake-ups a round trip instead of eight. That holds in this
    process too (the embedded default's node manager and its head): the
    link costs a write and a read a message, where ZeroMQ's inproc socket
    cost each side a ZMQ_EVENTS check of every ZeroMQ socket it polls, two
    system calls each, on every turn of its loop. A link that fails is
    dropped and the next resend connects again.

    GAPS. The usual EGAP follows a batch the head never took (lost with a
    link, refused during a restart): the batches behind it come back
    refused, and one resend from the oldest fixes it, so the first resend
    for a gap goes at once. A head that answers EGAP for good (its table
    of our events is behind what it acknowledged: t/5304 once) would have
    us resend everything in flight the moment each refusal came, and log
    each: 292,000 lines, 31 MB of log in 25 s, a full disk. So resends for
    gaps back off, 10 ms doubling up to 1 s, until something is
    acknowledged (then the next gap is resent at once again), and a
    head's refusals are logged the first, then one line each 10 s with
    the count of those not logged (util_complain).
*/
#include "db_client.h"
#include "db_chain.h"
#include "../net/net_link.h"
#include "../net/net_wire.h"
#include "../util/util_complain.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#define S_RESEND_MS 1000
#define S_SYNC_FULL_MS 20 /* db_client_sync reads every socket at least this often */
#define S_GAP_FIRST_MS 10  /* the second resend for a gap waits this, doubling... */
#define S_GAP_MAX_MS 1000  /* ...up to this, until something is acknowledged */
#define S_REFUSED_LOG_MS 10000 /* a head's refusals: one line per this many ms */

typedef struct s_msg {
    struct s_msg *next;
    uint64_t last_cseq; /* the newest event ID in it */
    uint32_t count;
    bool failed;        /* its head refused it as failed (EIO): see s_on_failed */
    util_buf_t bytes;   /* the batch frame as sent */
} s_msg_t;

typedef struct {
    zsock_t *sk;          /* DEALER to the head, or NULL... */
    net_link_t *link;     /* ...when this link to it is up */
    char head_ep[DB_EP_MAX];
    uint64_t epoch;
    util_buf_t out;       /* the batch being filled */
    uint32_t out_count;
    uint64_t out_last;    /* the newest event ID in it */
    s_msg_t *fly, *fly_last; /* in flight, oldest first */
    uint64_t fly_events;
    int64_t progress_ms;  /* last ack (or first send) */
    int64_t retry_ms;     /* when to send again after an error */
    bool stale;           /* waiting for a new configuration */
    uint32_t failed;      /* batches in flight its head refused as failed (EIO) */
    uint32_t replicas;    /* in its chain, as last configured */
    uint32_t gaps;        /* resends for a gap (EGAP) since something was acknowledged */
    bool gap_due;         /* a resend for a gap is due at retry_ms */
    util_complain_t refusals; /* its head's refusals (ERROR) logged: see GAPS */
    uint64_t cseq;        /* this shard's event IDs are dense: 1, 2, 3... */
    uint64_t acked_seq;
    uint64_t acked_cseq;
} s_shard_t;

struct db_client_t {
    db_cluster_t cluster;
    net_sec_t *sec;
    util_id_t id;
    uint32_t max_inflight, batch;
    int timeout_ms;
    zsock_t *master;      /* DEALER: CONFIG_REQ */
    zsock_t *cfg;         /* SUB to the master's PUB */
    s_shard_t *shards;
    uint64_t unacked;
    uint64_t resends;
    int refused;                       /* a head refused our bytes: a bug, not a failure */
    char refused_msg[UTIL_ERRMSG_MAX];
    char failed_msg[UTIL_ERRMSG_MAX]; /* the newest failure a head reported */
    int64_t cfg_req_ms;
    bool configured;
};

static void
s_msg_free(s_msg_t *m)
{
    util_buf_free(&m->bytes);
    free(m);
}

static bool
s_up(const s_shard_t *sh)
{
    return sh->sk || sh->link;
}

/* Connect to the head at sh->head_ep: a local link when it has one. */
static void
s_connect(db_client_t *self, uint32_t s)
{
    s_shard_t *sh = &self->shards[s];
    const char *ep = sh->head_ep;
    char path[DB_EP_MAX];
    if (!getenv("LUX_NO_LINK") &&
        net_link_path(ep, path, sizeof path) == 0 && (sh->link = net_link_connect(path)))
        return;
    sh->sk = net_connect(ZMQ_DEALER, ep, self->sec);
    if (!sh->sk) {
        log_error("shard %u: %s", s, lux_errmsg());
        sh->head_ep[0] = '\0';
        return;
    }
    net_hwm(sh->sk, 0);
    /* never block in a send: a DEALER with no peer (the head went) would
       block for ever; what is in flight is kept and resent anyway */
    zsock_set_sndtimeo(sh->sk, 0);
}

static void
s_disconnect(s_shard_t *sh)
{
    zsock_destroy(&sh->sk);
    net_link_destroy(&sh->link);
}

static void s_ask_config(db_client_t *self);

/* The link to shard s failed: resend what is in flight soon, over a new
   connection (the head may have moved: ask the master too). */
static void
s_link_down(db_client_t *self, uint32_t s)
{
    s_shard_t *sh = &self->shards[s];
    log_info("shard %u: the link to %s closed; resending over a new connection", s,
             sh->head_ep);
    net_link_destroy(&sh->link);
    sh->stale = true;
    sh->retry_ms = util_mono_ms() + 100;
    s_ask_config(self);
}

static void
s_send_bytes(db_client_t *self, uint32_t s, const util_buf_t *b)
{
    s_shard_t *sh = &self->shards[s];
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_APPEND, s, sh->epoch)});
    zmsg_addmem(m, b->data, b->len);
    if (sh->link) {
        if (net_link_send(sh->link, &m)) /* the message is kept in flight */
            s_link_down(self, s);
    } else if (sh->sk) {
        zmsg_send(&m, sh->sk); /* dropped when it cannot go now: kept in flight */
    }
    zmsg_destroy(&m);
}

static void
s_ask_config(db_client_t *self)
{
    int64_t now = util_mono_ms();
    if (now - self->cfg_req_ms < 50)
        return;
    self->cfg_req_ms = now;
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_CONFIG_REQ, NET_NO_SHARD, 0)});
    /* a master that stopped (its head is stopping) or is stopped takes
       nothing: the send fails at once (SNDTIMEO 0) and we ask again later */
    zmsg_send(&m, self->master);
    zmsg_destroy(&m);
}

/* Send every batch in flight again (after a new head, an error, or
   silence). The head drops what it already has. */
static void
s_resend(db_client_t *self, uint32_t s)
{
    s_shard_t *sh = &self->shards[s];
    if (!s_up(sh) && sh->head_ep[0])
        s_connect(self, s);
    if (!s_up(sh))
        return;
    sh->progress_ms = util_mono_ms();
    sh->stale = false; /* set again if the link fails on the way */
    if (sh->gap_due) {
        sh->gap_due = false;
        sh->gaps++;
    }
    for (s_msg_t *m = sh->fly; m && s_up(sh); m = m->next) {
        s_send_bytes(self, s, &m->bytes);
        self->resends++;
    }
}

/* A head refused its batches as failed (EIO) only until the chain
   changes or it commits again: forget the marks. */
static void
s_unfail(s_shard_t *sh)
{
    for (s_msg_t *m = sh->fly; m; m = m->next)
        m->failed = false;
    sh->failed = 0;
}

/* The head of shard s at epoch refused the batch whose first event ID is
   req as failed (a write error, a full disk): mark that batch, and only
   that one, so that events sent after it (a new run's, once the head
   restarted) are not said to have failed before their own answer. A
   refusal naming no batch we have in flight marks all of them. */
static void
s_on_failed(db_client_t *self, uint32_t s, uint64_t epoch, uint64_t req, const char *text)
{
    s_shard_t *sh = &self->shards[s];
    bool found = false;
    if (epoch < sh->epoch)
        return; /* from a head the chain has replaced since */
    for (s_msg_t *m = sh->fly; m && req && !found; m = m->next)
        if (req <= m->last_cseq && req > m->last_cseq - m->count) {
            found = true;
            sh->failed += !m->failed;
            m->failed = true;
        }
    for (s_msg_t *m = sh->fly; m && !found; m = m->next) {
        sh->failed += !m->failed;
        m->failed = true;
    }
    snprintf(self->failed_msg, sizeof self->failed_msg, "%s", text);
}

static void
s_apply(db_client_t *self, const db_chain_t *c)
{
    if (c->shard >= self->cluster.shards || c->n == 0)
        return;
    s_shard_t *sh = &self->shards[c->shard];
    if (c->epoch < sh->epoch)
        return;
    sh->replicas = c->n;
    const char *ep = c->m[0].ep[DB_EP_APPEND];
    bool moved = strcmp(ep, sh->head_ep) != 0;
    if (moved || c->epoch > sh->epoch) {
        s_unfail(sh); /* that was the old head, or it restarted: it may take them now */
        sh->gaps = 0; /* and a gap it reports is resent at once */
    }
    sh->epoch = c->epoch;
    if (!ep[0])
        return;
    if (moved || !s_up(sh)) {
        s_disconnect(sh);
        snprintf(sh->head_ep, sizeof sh->head_ep, "%s", ep);
        s_connect(self, c->shard);
        if (!s_up(sh))
            return;
        if (sh->fly)
            log_info("shard %u: new head %s, resending %llu events", c->shard, ep,
                     (unsigned long long) sh->fly_events);
        s_resend(self, c->shard);
    } else if (sh->stale) {
        s_resend(self, c->shard);
    }
}

static void
s_on_config(db_client_t *self, zframe_t *body)
{
    util_id_t cluster;
    uint32_t count;
    db_chain_t *chains = calloc(self->cluster.shards, sizeof *chains);
    if (!chains || !body ||
        db_chain_decode(zframe_data(body), zframe_size(body), &cluster, chains,
                        self->cluster.shards, &count) ||
        !util_id_eq(&cluster, &self->cluster.id)) {
        log_warn("ignoring a bad configuration from the master");
        free(chains);
        return;
    }
    for (uint32_t i = 0; i < count; i++)
        s_apply(self, &chains[i]);
    self->configured = true;
    for (uint32_t s = 0; s < self->cluster.shards; s++)
        if (!s_up(&self->shards[s]))
            self->configured = false;
    free(chains);
}

/* Something of shard s was acknowledged: its head takes our events
   again. A resend for a gap waiting on the back-off goes now (as the
   first one did), and the next gap is resent at once. */
static void
s_gap_over(db_client_t *self, uint32_t s)
{
    s_shard_t *sh = &self->shards[s];
    int64_t now = util_mono_ms();
    sh->gaps = 0;
    if (sh->gap_due && sh->retry_ms > now)
        sh->retry_ms = now;
    if (sh->refusals.dropped) {
        log_info("shard %u: acknowledged again; %llu more refusals in the last %.1f s were not "
                 "logged", s, (unsigned long long) sh->refusals.dropped,
                 (double) (now - sh->refusals.last_ms) / 1e3);
        sh->refusals.dropped = 0;
    }
}

/* How long to wait before a resend for a gap, after gaps such resends
   with nothing acknowledged: 0 for the first, then 10, 20, 40 ms... up to
   S_GAP_MAX_MS. */
static int64_t
s_gap_delay(uint32_t gaps)
{
    if (gaps == 0)
        return 0;
    if (gaps > 10)
        return S_GAP_MAX_MS;
    int64_t d = (int64_t) S_GAP_FIRST_MS << (gaps - 1);
    return d < S_GAP_MAX_MS ? d : S_GAP_MAX_MS;
}

static int
s_on_ack(db_client_t *self, uint32_t s, zframe_t *body)
{
    s_shard_t *sh = &self->shards[s];
    int n = 0;
    if (!body || zframe_size(body) != 32 || memcmp(zframe_data(body), self->id.b, 16) != 0)
        return 0;
    uint64_t cseq = util_rd64(zframe_data(body) + 16), seq = util_rd64(zframe_data(body) + 24);
    s_unfail(sh); /* it commits again */
    while (sh->fly && sh->fly->last_cseq <= cseq) {
        s_msg_t *m = sh->fly;
        sh->fly = m->next;
        if (!sh->fly)
            sh->fly_last = NULL;
        sh->fly_events -= m->count;
        sh->failed -= m->failed;
        self->unacked -= m->count;
        n += (int) m->count;
        s_msg_free(m);
    }
    if (seq > sh->acked_seq)
        sh->acked_seq = seq;
    if (cseq > sh->acked_cseq)
        sh->acked_cseq = cseq;
    sh->progress_ms = util_mono_ms();
    if (n > 0)
        s_gap_over(self, s);
    return n;
}

/* One message (taken); returns events newly acknowledged. */
static int
s_handle_msg(db_client_t *self, zmsg_t *msg, int shard)
{
    zframe_t *hf = msg ? zmsg_pop(msg) : NULL;
    zframe_t *body = msg ? zmsg_pop(msg) : NULL;
    zframe_t *req = msg ? zmsg_first(msg) : NULL; /* an ERROR's: what it answers */
    net_hdr_t h;
    int n = 0;
    int64_t now;
    if (msg && net_hdr_decode(&h, hf) == 0) {
        if (h.type == NET_CONFIG)
            s_on_config(self, body);
        else if (h.type == NET_APPEND_ACK && shard >= 0)
            n = s_on_ack(self, (uint32_t) shard, body);
        else if (h.type == NET_ERROR && shard >= 0) {
            int code;
            char text[UTIL_ERRMSG_MAX];
            s_shard_t *sh = &self->shards[shard];
            net_error_decode(body, &code, text, sizeof text);
            util_complain_lvl(&sh->refusals, UTIL_LOG_INFO, "shard %d: %s", shard, text);
            if ((code == LUX_ECORRUPT || code == LUX_EINVAL || code == LUX_EPROTO ||
                 code == LUX_ENOSYS) &&
                !self->refused) {
                /* resending the same bytes cannot help (a record the head
                   cannot decode, a misrouted key, a kind it does not know):
                   keep them (nothing is dropped) and make sync and append
                   fail with this. ESHARD, EEPOCH, ESTATE: a stale
                   configuration, asked for again below */
                log_error("shard %d refused an append: %s", shard, text);
                self->refused = code;
                snprintf(self->refused_msg, sizeof self->refused_msg, "shard %d refused an "
                         "append: %s", shard, text);
            }
            if (code == LUX_EIO)
                /* the head failed (a write error, a full disk): the
                   master replaces it when the chain has another replica;
                   until something commits, callers of the refused batch
                   can say why not */
                s_on_failed(self, (uint32_t) shard, h.epoch,
                            req && zframe_size(req) == 8 ? util_rd64(zframe_data(req)) : 0, text);
            sh->stale = true;
            now = util_mono_ms();
            if (code != LUX_EGAP) {
                /* wait for a configuration */
                sh->gap_due = false;
                sh->retry_ms = now + 100;
                s_ask_config(self);
            } else if (!sh->gap_due) {
                /* the head refused an earlier batch: resend from the oldest
                   in flight, at once or after the back-off (GAPS); the
                   refusals of the other batches sent before that resend
                   change nothing */
                sh->gap_due = true;
                sh->retry_ms = now + s_gap_delay(sh->gaps);
            }
        }
    }
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return n;
}

/* One message from a socket. */
static int
s_handle(db_client_t *self, zsock_t *sock, int shard)
{
    return s_handle_msg(self, zmsg_recv(sock), shard);
}

/* What the link of shard s has, on poll events ev; events acknowledged. */
static int
s_link_events(db_client_t *self, uint32_t s, short ev)
{
    s_shard_t *sh = &self->shards[s];
    zmsg_t *m;
    int n = 0;
    if (!sh->link)
        return 0;
    if ((ev & ZMQ_POLLOUT) && net_link_write(sh->link)) {
        s_link_down(self, s);
        return 0;
    }
    if (!(ev & (ZMQ_POLLIN | ZMQ_POLLERR)))
        return 0;
    net_link_read(sh->link); /* a hang-up shows in net_link_dead below */
    while (sh->link && (m = net_link_next(sh->link)))
        n += s_handle_msg(self, m, (int) s);
    if (sh->link && net_link_dead(sh->link))
        s_link_down(self, s);
    return n;
}

/* What shard s's connection has on poll events ev: what its link read, or
   up to max messages of its socket; events newly acknowledged. */
static int
s_shard_events(db_client_t *self, uint32_t s, short ev, int max)
{
    s_shard_t *sh = &self->shards[s];
    int n = 0;
    if (sh->link)
        return s_link_events(self, s, ev);
    /* the poll says one message is there: ask ZeroMQ before each more */
    for (int k = 0; sh->sk && (ev & ZMQ_POLLIN) && k < max &&
                    (k == 0 || (zsock_events(sh->sk) & ZMQ_POLLIN));
         k++)
        n += s_handle(self, sh->sk, (int) s);
    return n;
}

/* The poll item of shard s's connection, if it has one. */
static bool
s_item(const s_shard_t *sh, zmq_pollitem_t *item)
{
    if (sh->link)
        *item = (zmq_pollitem_t) {NULL, net_link_fd(sh->link),
                                  (short) (ZMQ_POLLIN |
                                           (net_link_pending(sh->link) ? ZMQ_POLLOUT : 0)),
                                  0};
    else if (sh->sk)
        *item = (zmq_pollitem_t) {zsock_resolve(sh->sk), 0, ZMQ_POLLIN, 0};
    return s_up(sh);
}

int
db_client_pollitems(db_client_t *self, zmq_pollitem_t *items, int max)
{
    int k = 0;
    if (k < max)
        items[k++] = (zmq_pollitem_t) {zsock_resolve(self->master), 0, ZMQ_POLLIN, 0};
    if (k < max)
        items[k++] = (zmq_pollitem_t) {zsock_resolve(self->cfg), 0, ZMQ_POLLIN, 0};
    return k + db_client_ack_items(self, items + k, max - k);
}

int
db_client_ack_items(db_client_t *self, zmq_pollitem_t *items, int max)
{
    int k = 0;
    for (uint32_t s = 0; s < self->cluster.shards && k < max; s++)
        if (s_item(&self->shards[s], &items[k]))
            k++;
    return k;
}

int
db_client_poll(db_client_t *self, int timeout_ms)
{
    zmq_pollitem_t items[2 + DB_MAX_SHARDS];
    int shard_of[DB_MAX_SHARDS];
    int n = 0, k = 2;
    int64_t now;

    items[0] = (zmq_pollitem_t) {zsock_resolve(self->master), 0, ZMQ_POLLIN, 0};
    items[1] = (zmq_pollitem_t) {zsock_resolve(self->cfg), 0, ZMQ_POLLIN, 0};
    for (uint32_t s = 0; s < self->cluster.shards; s++)
        if (s_item(&self->shards[s], &items[k]))
            shard_of[k++ - 2] = (int) s;
    if (zmq_poll(items, k, timeout_ms) > 0) {
        /* one configuration message at most: it may replace a shard's
           connection, whose item is then stale (the next poll reads it) */
        if (items[0].revents & ZMQ_POLLIN)
            s_handle(self, self->master, -1);
        else if (items[1].revents & ZMQ_POLLIN)
            s_handle(self, self->cfg, -1);
        else
            for (int i = 2; i < k; i++) /* drain what is there */
                n += s_shard_events(self, (uint32_t) shard_of[i - 2], items[i].revents, 1000);
    }
    now = util_mono_ms();
    for (uint32_t s = 0; s < self->cluster.shards; s++) {
        s_shard_t *sh = &self->shards[s];
        if (!sh->fly)
            continue;
        if (self->refused)
            continue;
        if (sh->stale && now >= sh->retry_ms) {
            s_ask_config(self);
            s_resend(self, s); /* same head, or a new one the config names */
        } else if (!sh->stale && now - sh->progress_ms > S_RESEND_MS) {
            log_info("shard %u: no acknowledgement for %lld ms; asking the master", s,
                     (long long) (now - sh->progress_ms));
            sh->stale = true;
            sh->retry_ms = now + 100;
            s_ask_config(self);
        }
    }
    return n;
}

db_client_t *
db_client_new(const db_client_opts_t *o)
{
    db_client_t *self = calloc(1, sizeof *self);
    char ep[DB_EP_MAX];
    if (!self)
        return NULL;
    self->cluster = *o->cluster;
    self->sec = o->sec;
    self->max_inflight = o->max_inflight ? o->max_inflight : 65536;
    self->batch = o->batch ? o->batch : 2048;
    self->timeout_ms = o->timeout_ms ? o->timeout_ms : 30000;
    util_id_random(&self->id);
    self->shards = calloc(self->cluster.shards, sizeof *self->shards);
    if (!self->shards)
        goto fail;
    for (uint32_t s = 0; s < self->cluster.shards; s++) {
        util_buf_init(&self->shards[s].out);
        util_complain_init(&self->shards[s].refusals, S_REFUSED_LOG_MS);
    }
    self->master = net_connect(ZMQ_DEALER, db_cluster_master_ep(&self->cluster, ep, sizeof ep),
                               self->sec);
    self->cfg = net_connect(ZMQ_SUB, db_cluster_master_pub(&self->cluster, ep, sizeof ep),
                            self->sec);
    if (!self->master || !self->cfg)
        goto fail;
    zsock_set_sndtimeo(self->master, 0); /* see s_ask_config */
    zsock_set_subscribe(self->cfg, "");
    int64_t deadline = util_mono_ms() + self->timeout_ms;
    while (!self->configured && util_mono_ms() < deadline) {
        self->cfg_req_ms = 0;
        s_ask_config(self);
        db_client_poll(self, 200);
    }
    if (!self->configured) {
        util_err(LUX_ETIMEDOUT, "no configuration from the chain master at %s within %d ms "
                 "(is the cluster running?)", db_cluster_master_ep(&self->cluster, ep, sizeof ep),
                 self->timeout_ms);
        goto fail;
    }
    return self;
fail:
    if (!lux_errmsg()[0])
        util_err(LUX_ENOMEM, "cannot create a log client");
    db_client_destroy(&self);
    return NULL;
}

void
db_client_destroy(db_client_t **self_p)
{
    db_client_t *self = *self_p;
    if (!self)
        return;
    for (uint32_t s = 0; self->shards && s < self->cluster.shards; s++) {
        s_shard_t *sh = &self->shards[s];
        while (sh->fly) {
            s_msg_t *m = sh->fly;
            sh->fly = m->next;
            s_msg_free(m);
        }
        util_buf_free(&sh->out);
        s_disconnect(sh);
    }
    zsock_destroy(&self->master);
    zsock_destroy(&self->cfg);
    free(self->shards);
    free(self);
    *self_p = NULL;
}

static int
s_flush_shard(db_client_t *self, uint32_t s)
{
    s_shard_t *sh = &self->shards[s];
    if (!sh->out_count)
        return 0;
    s_msg_t *m = calloc(1, sizeof *m);
    if (!m)
        return util_err(LUX_ENOMEM, "out of memory");
    net_batch_end(&sh->out, sh->out_count);
    m->bytes = sh->out;
    m->count = sh->out_count;
    m->last_cseq = sh->out_last;
    util_buf_init(&sh->out);
    sh->out_count = 0;
    if (!sh->fly)
        sh->progress_ms = util_mono_ms();
    if (sh->fly_last)
        sh->fly_last->next = m;
    else
        sh->fly = m;
    sh->fly_last = m;
    sh->fly_events += m->count;
    if (s_up(sh) && !sh->stale)
        s_send_bytes(self, s, &m->bytes);
    return 0;
}

int
db_client_flush(db_client_t *self)
{
    int rc = 0;
    for (uint32_t s = 0; s < self->cluster.shards && !rc; s++)
        rc = s_flush_shard(self, s);
    return rc;
}

uint32_t
db_client_shard(const db_client_t *self, const db_event_t *e)
{
    return util_id_shard(db_event_key(e), self->cluster.shards);
}

int
db_client_append(db_client_t *self, db_event_t *e)
{
    uint32_t s = db_client_shard(self, e);
    s_shard_t *sh = &self->shards[s];
    int64_t deadline = 0;

    if (self->refused)
        return util_err(self->refused, "%s", self->refused_msg);
    while (sh->fly_events + sh->out_count >= self->max_inflight) {
        if (!deadline)
            deadline = util_mono_ms() + self->timeout_ms;
        int64_t left = deadline - util_mono_ms();
        if (left <= 0)
            return util_err(LUX_ETIMEDOUT, "shard %u: %llu events unacknowledged for %d ms", s,
                            (unsigned long long) sh->fly_events, self->timeout_ms);
        db_client_poll(self, left < 100 ? (int) left : 100);
    }
    e->client = self->id;
    e->cseq = ++sh->cseq;
    e->mask |= DB_F_CLIENT;
    e->ts = 0;
    memset(e->hash, 0, DB_HASH_LEN);
    if (sh->out_count == 0)
        net_batch_begin(&sh->out, e->cseq); /* an APPEND's `first` is its first cseq */
    size_t at = sh->out.len;
    util_buf_put_u32(&sh->out, 0);
    db_event_encode(e, &sh->out);
    if (sh->out.oom)
        return util_err(LUX_ENOMEM, "out of memory");
    util_le32(sh->out.data + at, (uint32_t) (sh->out.len - at - 4));
    sh->out_count++;
    sh->out_last = e->cseq;
    self->unacked++;
    if (sh->out_count >= self->batch || sh->out.len >= (1u << 20)) {
        int rc = s_flush_shard(self, s);
        if (rc)
            return rc;
    }
    /* keep acknowledgements flowing without a syscall per event */
    if ((e->cseq & 255) == 0)
        db_client_poll(self, 0);
    return 0;
}

/* The record at index i of the count records of the batch bytes b (its
   header first): into out. */
static int
s_batch_rec(const util_buf_t *b, uint32_t count, uint64_t i, util_buf_t *out)
{
    util_rd_t r;
    util_rd_init(&r, b->data + NET_BATCH_HDR, b->len - NET_BATCH_HDR);
    for (uint64_t k = 0; k < count; k++) {
        uint32_t n = util_rd_u32(&r);
        const uint8_t *p = util_rd_take(&r, n);
        if (!p)
            break;
        if (k == i) {
            util_buf_put(out, p, n);
            return out->oom ? util_err(LUX_ENOMEM, "out of memory") : 0;
        }
    }
    return util_err(LUX_ENOTFOUND, "event %llu is not queued", (unsigned long long) i);
}

int
db_client_queued(const db_client_t *self, uint32_t shard, uint64_t cseq, util_buf_t *out)
{
    if (shard >= self->cluster.shards)
        return util_err(LUX_ENOTFOUND, "no shard %u", shard);
    const s_shard_t *sh = &self->shards[shard];
    for (const s_msg_t *m = sh->fly; m; m = m->next)
        if (cseq <= m->last_cseq) {
            if (cseq <= m->last_cseq - m->count)
                break; /* acknowledged */
            return s_batch_rec(&m->bytes, m->count, cseq - (m->last_cseq - m->count + 1), out);
        }
    if (sh->out_count && cseq <= sh->out_last && cseq > sh->out_last - sh->out_count)
        return s_batch_rec(&sh->out, sh->out_count, cseq - (sh->out_last - sh->out_count + 1), out);
    return util_err(LUX_ENOTFOUND, "shard %u: event %llu is not queued here", shard,
                    (unsigned long long) cseq);
}

/* Wait up to timeout_ms on the sockets of the shards with events in
   flight only, and take one message from each that has one: the common
   wait of db_client_sync, without the configuration sockets (ZeroMQ
   checks each socket polled with two system calls, before and after the
   sleep). db_client_poll still runs every S_SYNC_FULL_MS for those, and
   for resends. false when no shard has one to wait on (every shard with
   events in flight waits for a resend): nothing waited. */
static bool
s_wait_acks(db_client_t *self, int timeout_ms)
{
    zmq_pollitem_t items[DB_MAX_SHARDS];
    int shard_of[DB_MAX_SHARDS];
    int k = 0;
    for (uint32_t s = 0; s < self->cluster.shards; s++)
        if (self->shards[s].fly && !self->shards[s].stale && s_item(&self->shards[s], &items[k]))
            shard_of[k++] = (int) s;
    if (k == 0)
        return false;
    if (zmq_poll(items, k, timeout_ms) > 0)
        for (int i = 0; i < k; i++)
            s_shard_events(self, (uint32_t) shard_of[i], items[i].revents, 1);
    return true;
}

int
db_client_sync(db_client_t *self, int timeout_ms)
{
    int64_t deadline = util_mono_ms() + timeout_ms, full_ms = 0;
    int rc = db_client_flush(self);
    if (rc)
        return rc;
    while (self->unacked) {
        if (self->refused)
            return util_err(self->refused, "%s", self->refused_msg);
        for (uint32_t s = 0; s < self->cluster.shards; s++)
            if (self->shards[s].fly_events && db_client_failed(self, s))
                /* no other replica can take its place */
                return util_err(LUX_EIO, "%llu events not recorded: %s",
                                (unsigned long long) self->shards[s].fly_events,
                                db_client_failed(self, s));
        int64_t now = util_mono_ms(), left = deadline - now;
        if (left <= 0)
            return util_err(LUX_ETIMEDOUT, "%llu events unacknowledged after %d ms",
                            (unsigned long long) self->unacked, timeout_ms);
        if (now - full_ms >= S_SYNC_FULL_MS) {
            /* configurations, errors' retries, resends */
            full_ms = now;
            db_client_poll(self, 0);
            continue;
        }
        int wait = left < S_SYNC_FULL_MS ? (int) left : S_SYNC_FULL_MS;
        if (!s_wait_acks(self, wait)) {
            /* every shard waits for a resend (a back-off, a configuration):
               wait on every socket until the first is due, rather than spin */
            for (uint32_t s = 0; s < self->cluster.shards; s++) {
                const s_shard_t *sh = &self->shards[s];
                if (sh->fly && sh->stale && sh->retry_ms - now < wait)
                    wait = sh->retry_ms > now ? (int) (sh->retry_ms - now) : 0;
            }
            full_ms = now;
            db_client_poll(self, wait);
        }
    }
    return 0;
}

const char *
db_client_failed(const db_client_t *self, uint32_t shard)
{
    /* with another replica in the chain, the master puts it at the head
       and what is in flight is resent there: nothing to say yet */
    if (shard >= self->cluster.shards || !self->shards[shard].failed ||
        self->shards[shard].replicas != 1)
        return NULL;
    return self->failed_msg;
}

const char *
db_client_failed_event(const db_client_t *self, uint32_t shard, uint64_t cseq)
{
    if (!db_client_failed(self, shard))
        return NULL;
    for (const s_msg_t *m = self->shards[shard].fly; m; m = m->next)
        if (cseq <= m->last_cseq)
            return cseq > m->last_cseq - m->count && m->failed ? self->failed_msg : NULL;
    return NULL;
}

uint64_t
db_client_unacked(const db_client_t *self)
{
    return self->unacked;
}

uint64_t
db_client_inflight(const db_client_t *self)
{
    uint64_t n = 0;
    for (uint32_t s = 0; s < self->cluster.shards; s++)
        n += self->shards[s].fly_events;
    return n;
}

uint64_t
db_client_acked_seq(const db_client_t *self, uint32_t shard)
{
    return shard < self->cluster.shards ? self->shards[shard].acked_seq : 0;
}

uint64_t
db_client_acked_cseq(const db_client_t *self, uint32_t shard)
{
    return shard < self->cluster.shards ? self->shards[shard].acked_cseq : 0;
}

const util_id_t *
db_client_id(const db_client_t *self)
{
    return &self->id;
}

uint64_t
db_client_resends(const db_client_t *self)
{
    return self->resends;
}

bool
db_client_linked(const db_client_t *self, uint32_t shard)
{
    return shard < self->cluster.shards && self->shards[shard].link != NULL;
}
