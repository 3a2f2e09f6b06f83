/*  db_sub - Clone-pattern subscriber (see db_sub.h).

    State: `last` is the newest seq delivered. In CATCHUP, READs are in
    flight (at most two: the next is asked for before the previous is
    delivered, so the tail reads while we deliver); live PUBLISH messages
    are kept (up to S_KEEP) to be replayed once caught up. In LIVE, a
    PUBLISH that starts at or before last+1 is delivered from last+1; one
    that starts later is a gap: back to CATCHUP.

    CONFIGURATION. The master pushes each change once, on its PUB; a push
    can be lost (a SUB connects asynchronously and drops past its
    high-water mark), so the subscriber also asks (CONFIG_REQ) at start,
    after an ERROR from the tail, when a READ goes unanswered, when a
    PUBLISH carries a newer epoch than ours, and when a live tail falls
    silent: it announces its last seq every S_PUB_BEAT_MS (200 ms) or
    heartbeat when idle, so several missed announcements mean it is dead,
    removed, or cut off from us (doc/protocol.md 10.2, rule 8).
*/
#include "db_sub.h"
#include "db_chain.h"
#include "db_reader.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#define S_KEEP 256     /* live messages kept while catching up */
#define S_READ 8192    /* events per READ */
#define S_INFLIGHT 3   /* READs in flight: the tail's two read workers and one queued */
#define S_READ_WAIT_MS 2000 /* a READ unanswered this long is lost */

typedef struct {
    uint64_t req, from; /* a READ in flight */
    zmsg_t *reply;      /* its answer, when it came before an older one's */
} s_read_t;

struct db_sub_t {
    db_cluster_t cluster;
    net_sec_t *sec;
    uint32_t shard;
    uint64_t last;
    uint64_t epoch;
    char tail_read[DB_EP_MAX], tail_pub[DB_EP_MAX];
    zsock_t *master, *cfg;  /* DEALER and SUB to the master */
    zsock_t *pub, *rd;      /* SUB and DEALER to the tail */
    bool live;
    s_read_t reads[S_INFLIGHT]; /* oldest first */
    int nreads;
    uint64_t next_from;     /* where the next READ starts */
    uint64_t req;
    zmsg_t *kept[S_KEEP];   /* live messages kept while catching up */
    int nkept;
    zmsg_t *held;           /* the message the last delivery points into */
    int64_t cfg_ms;
    int64_t read_ms;
    int64_t heard_ms;       /* when the tail last sent anything (PUBLISH, answer) */
    int64_t silence_ms;     /* a live tail silent this long is asked about */
    bool drop_pushes;       /* tests: ignore the master's pushes */
    uint64_t n_reads, n_live, n_gaps, n_silences;
};

static void
s_ask_config(db_sub_t *self)
{
    int64_t now = util_mono_ms();
    if (now - self->cfg_ms < 100)
        return;
    self->cfg_ms = now;
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_CONFIG_REQ, self->shard, 0)});
    zmsg_send(&m, self->master); /* fails at once when it cannot go: asked again later */
    zmsg_destroy(&m);
}

static void
s_drop_kept(db_sub_t *self)
{
    for (int i = 0; i < self->nkept; i++)
        zmsg_destroy(&self->kept[i]);
    self->nkept = 0;
}

static void
s_read(db_sub_t *self)
{
    uint8_t b[24];
    if (!self->rd)
        return;
    while (self->nreads < S_INFLIGHT) {
        s_read_t *r = &self->reads[self->nreads++];
        r->req = ++self->req;
        r->from = self->next_from;
        r->reply = NULL;
        util_le64(b, r->req);
        util_le64(b + 8, r->from);
        util_le32(b + 16, S_READ);
        util_le32(b + 20, DB_READ_MAX_BYTES);
        zmsg_t *m = zmsg_new();
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_READ, self->shard, self->epoch)});
        zmsg_addmem(m, b, sizeof b);
        zmsg_send(&m, self->rd);
        self->next_from += S_READ;
    }
    self->read_ms = util_mono_ms();
}

static void
s_forget_reads(db_sub_t *self)
{
    for (int i = 0; i < self->nreads; i++)
        zmsg_destroy(&self->reads[i].reply);
    self->nreads = 0; /* replies to older READs are recognised by req and dropped */
}

static void
s_catchup(db_sub_t *self)
{
    self->live = false;
    s_forget_reads(self);
    self->next_from = self->last + 1;
    s_read(self);
}

static void
s_connect(db_sub_t *self, const db_member_t *tail)
{
    zsock_destroy(&self->pub);
    zsock_destroy(&self->rd);
    s_drop_kept(self);
    snprintf(self->tail_read, sizeof self->tail_read, "%s", tail->ep[DB_EP_READ]);
    snprintf(self->tail_pub, sizeof self->tail_pub, "%s", tail->ep[DB_EP_PUB]);
    if (!tail->ep[DB_EP_READ][0])
        return;
    /* subscribe first, then read. The subscription takes effect some time
       after connect returns (the slow joiner), so events published in
       between may be missed; the next PUBLISH or announcement then starts
       past last+1, which is a gap, and we read again */
    self->pub = net_connect(ZMQ_SUB, tail->ep[DB_EP_PUB], self->sec);
    if (self->pub) {
        zsock_set_rcvhwm(self->pub, 100000);
        zsock_set_subscribe(self->pub, "");
    }
    self->rd = net_connect(ZMQ_DEALER, tail->ep[DB_EP_READ], self->sec);
    if (!self->pub || !self->rd) {
        log_error("shard %u: %s", self->shard, lux_errmsg());
        zsock_destroy(&self->pub);
        zsock_destroy(&self->rd);
        self->tail_read[0] = '\0';
        return;
    }
    net_hwm(self->rd, 0);
    self->heard_ms = util_mono_ms(); /* give the new tail its time */
    s_catchup(self);
}

static void
s_on_config(db_sub_t *self, zframe_t *body)
{
    util_id_t cluster;
    uint32_t count;
    db_chain_t *chains = calloc(self->cluster.shards, sizeof *chains);
    if (chains && body &&
        db_chain_decode(zframe_data(body), zframe_size(body), &cluster, chains,
                        self->cluster.shards, &count) == 0 &&
        util_id_eq(&cluster, &self->cluster.id)) {
        for (uint32_t i = 0; i < count; i++) {
            db_chain_t *c = &chains[i];
            if (c->shard != self->shard || c->epoch < self->epoch || c->n == 0)
                continue;
            const db_member_t *tail = &c->m[c->n - 1];
            bool moved = strcmp(tail->ep[DB_EP_READ], self->tail_read) != 0;
            bool newer = c->epoch > self->epoch;
            self->epoch = c->epoch;
            if (moved || !self->rd)
                s_connect(self, tail);
            else if (newer)
                s_catchup(self); /* same tail, new epoch: READs must carry it */
        }
    }
    free(chains);
}

db_sub_t *
db_sub_new(const db_cluster_t *cluster, net_sec_t *sec, uint32_t shard, uint64_t after)
{
    db_sub_t *self = calloc(1, sizeof *self);
    char ep[DB_EP_MAX];
    if (!self)
        return NULL;
    if (shard >= cluster->shards) {
        util_err(LUX_EINVAL, "no shard %u (the cluster has %u)", shard, cluster->shards);
        free(self);
        return NULL;
    }
    self->cluster = *cluster;
    self->sec = sec;
    self->shard = shard;
    self->last = after;
    /* a few announcement periods, as the reference subscriber waits */
    int beat = cluster->heartbeat_ms > 200 ? cluster->heartbeat_ms : 200;
    self->silence_ms = 5 * beat > 1000 ? 5 * beat : 1000;
    self->master = net_connect(ZMQ_DEALER, db_cluster_master_ep(cluster, ep, sizeof ep), sec);
    self->cfg = net_connect(ZMQ_SUB, db_cluster_master_pub(cluster, ep, sizeof ep), sec);
    if (!self->master || !self->cfg) {
        db_sub_destroy(&self);
        return NULL;
    }
    zsock_set_subscribe(self->cfg, "");
    zsock_set_sndtimeo(self->master, 0); /* a master that is gone takes nothing: no wait */
    s_ask_config(self);
    return self;
}

void
db_sub_destroy(db_sub_t **self_p)
{
    db_sub_t *self = *self_p;
    if (!self)
        return;
    s_drop_kept(self);
    s_forget_reads(self);
    zmsg_destroy(&self->held);
    zsock_destroy(&self->master);
    zsock_destroy(&self->cfg);
    zsock_destroy(&self->pub);
    zsock_destroy(&self->rd);
    free(self);
    *self_p = NULL;
}

/* Deliver the part of batch b (inside message m) after `last`, if it
   starts at or before last+1. Takes m when it delivers. Returns count
   delivered, 0 if there is nothing new, -1 on a gap. */
static int
s_deliver(db_sub_t *self, zmsg_t **m_p, const net_batch_t *b, net_batch_t *out)
{
    if (b->count == 0)
        return b->first > self->last + 1 ? -1 : 0;
    uint64_t end = b->first + b->count - 1;
    if (end <= self->last)
        return 0;
    if (b->first > self->last + 1)
        return -1;
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t n;
    net_batch_iter(&it, b);
    while (it.seq <= self->last && net_batch_next(&it, &seq, &rec, &n))
        ;
    out->first = self->last + 1;
    out->count = (uint32_t) (end - self->last);
    out->recs = it.r.p;
    out->len = (size_t) (it.r.end - it.r.p);
    self->last = end;
    zmsg_destroy(&self->held);
    self->held = *m_p;
    *m_p = NULL;
    return (int) out->count;
}

/* A PUBLISH message m. Returns events delivered, 0 if none. */
static int
s_on_publish(db_sub_t *self, zmsg_t **m_p, net_batch_t *out)
{
    zframe_t *hf = zmsg_first(*m_p), *body = zmsg_next(*m_p);
    net_hdr_t h;
    net_batch_t b;
    if (net_hdr_decode(&h, hf) || h.type != NET_PUBLISH || h.shard != self->shard || !body ||
        net_batch_parse(&b, zframe_data(body), zframe_size(body)))
        return 0;
    self->heard_ms = util_mono_ms();
    if (h.epoch > self->epoch)
        s_ask_config(self); /* the chain changed and we have not heard */
    if (!self->live) {
        if (b.count && self->nkept < S_KEEP)
            self->kept[self->nkept++] = *m_p, *m_p = NULL;
        return 0;
    }
    int n = s_deliver(self, m_p, &b, out);
    if (n < 0) {
        self->n_gaps++;
        if (b.count && self->nkept < S_KEEP)
            self->kept[self->nkept++] = *m_p, *m_p = NULL;
        s_catchup(self);
        return 0;
    }
    self->n_live += (uint64_t) n;
    return n;
}

/* Once caught up: deliver kept live messages in order. */
static int
s_replay_kept(db_sub_t *self, net_batch_t *out)
{
    while (self->nkept) {
        zmsg_t *m = self->kept[0];
        memmove(self->kept, self->kept + 1, (size_t) (self->nkept - 1) * sizeof self->kept[0]);
        self->nkept--;
        int n = s_on_publish(self, &m, out);
        zmsg_destroy(&m);
        if (n > 0 || !self->live)
            return n;
    }
    return 0;
}

static int
s_on_read(db_sub_t *self, zmsg_t **m_p, net_batch_t *out)
{
    zframe_t *hf = zmsg_first(*m_p), *rep = zmsg_next(*m_p), *body = zmsg_next(*m_p);
    net_hdr_t h;
    net_batch_t b;
    if (net_hdr_decode(&h, hf))
        return 0;
    self->heard_ms = util_mono_ms();
    if (h.type == NET_ERROR) {
        int code;
        char text[256];
        net_error_decode(rep, &code, text, sizeof text);
        log_info("shard %u: %s", self->shard, text);
        s_forget_reads(self);
        s_ask_config(self);
        return 0;
    }
    if (h.type != NET_READ_REP || !rep || zframe_size(rep) != 16 || !body ||
        net_batch_parse(&b, zframe_data(body), zframe_size(body)))
        return 0;
    uint64_t req = util_rd64(zframe_data(rep)), tail_last = util_rd64(zframe_data(rep) + 8);
    for (int i = 1; i < self->nreads; i++)
        if (self->reads[i].req == req && !self->reads[i].reply) {
            /* the tail reads chunks side by side and this one came first:
               keep it until the older ones are delivered */
            self->reads[i].reply = *m_p;
            *m_p = NULL;
            return 0;
        }
    if (self->nreads == 0 || self->reads[0].req != req)
        return 0; /* an answer to a READ we gave up on */
    memmove(&self->reads[0], &self->reads[1], (size_t) (self->nreads - 1) * sizeof self->reads[0]);
    self->nreads--;
    self->reads[self->nreads].reply = NULL;
    int n = s_deliver(self, m_p, &b, out);
    if (n < 0) { /* cannot happen with a sane tail; start the catch-up again */
        s_catchup(self);
        return 0;
    }
    if (n > 0)
        self->n_reads += (uint64_t) n;
    if (self->last >= tail_last || b.count < S_READ) {
        /* caught up as of this READ: what follows comes live */
        if (self->last >= tail_last) {
            s_forget_reads(self);
            self->live = true;
        } else {
            s_forget_reads(self);
            self->next_from = self->last + 1;
            s_read(self);
        }
    } else {
        s_read(self);
    }
    return n;
}

/* The answer to the oldest READ, if it came early. */
static int
s_early_read(db_sub_t *self, net_batch_t *out)
{
    if (self->live || self->nreads == 0 || !self->reads[0].reply)
        return 0;
    zmsg_t *m = self->reads[0].reply;
    self->reads[0].reply = NULL;
    int n = s_on_read(self, &m, out);
    zmsg_destroy(&m);
    return n;
}

int
db_sub_recv(db_sub_t *self, net_batch_t *out, int timeout_ms)
{
    int64_t deadline = util_mono_ms() + timeout_ms;
    for (;;) {
        int n;
        if ((n = s_early_read(self, out)) > 0)
            return n;
        if (self->live && self->nkept && (n = s_replay_kept(self, out)) > 0)
            return n;
        zmq_pollitem_t items[4];
        zsock_t *socks[4];
        int k = 0;
        socks[k++] = self->master;
        socks[k++] = self->cfg;
        if (self->rd)
            socks[k++] = self->rd;
        if (self->pub)
            socks[k++] = self->pub;
        for (int i = 0; i < k; i++)
            items[i] = (zmq_pollitem_t) {zsock_resolve(socks[i]), 0, ZMQ_POLLIN, 0};
        int64_t left = deadline - util_mono_ms();
        if (left < 0)
            left = 0;
        if (zmq_poll(items, k, left > 200 ? 200 : left) < 0)
            return util_err(LUX_EINTR, "interrupted");
        for (int i = 0; i < k; i++) {
            if (!(items[i].revents & ZMQ_POLLIN))
                continue;
            zmsg_t *m = zmsg_recv(socks[i]);
            if (!m)
                continue;
            n = 0;
            if (socks[i] == self->master || socks[i] == self->cfg) {
                zframe_t *hf = zmsg_first(m);
                net_hdr_t h;
                if (net_hdr_decode(&h, hf) == 0 && h.type == NET_CONFIG &&
                    !(socks[i] == self->cfg && self->drop_pushes))
                    s_on_config(self, zmsg_next(m));
                zmsg_destroy(&m);
                break; /* sockets may have changed */
            } else if (socks[i] == self->rd) {
                n = s_on_read(self, &m, out);
            } else {
                n = s_on_publish(self, &m, out);
            }
            zmsg_destroy(&m);
            if (n > 0)
                return n;
            if (self->live && self->nkept && (n = s_replay_kept(self, out)) > 0)
                return n;
        }
        int64_t now = util_mono_ms();
        if (!self->rd || (!self->live && self->nreads && now - self->read_ms > S_READ_WAIT_MS)) {
            s_ask_config(self); /* no tail known, or it stopped answering */
            if (self->rd && now - self->read_ms > S_READ_WAIT_MS)
                s_catchup(self);
        } else if (self->live && now - self->heard_ms > self->silence_ms) {
            /* not even an announcement: a dead or removed tail, and the
               push that names the new one may be lost. Ask, and read
               again here meanwhile (answered only if it is still the
               tail); the answer moves us */
            log_info("shard %u: the tail has been silent for %lld ms; asking the master",
                     self->shard, (long long) (now - self->heard_ms));
            self->n_silences++;
            self->heard_ms = now;
            s_ask_config(self);
            s_catchup(self);
        }
        if (!self->live && self->rd && self->nreads == 0 && now - self->read_ms > 200)
            s_catchup(self);
        if (now >= deadline)
            return 0;
    }
}

uint64_t
db_sub_last(const db_sub_t *self)
{
    return self->last;
}

void
db_sub_stats(const db_sub_t *self, uint64_t *from_reads, uint64_t *live, uint64_t *gaps)
{
    *from_reads = self->n_reads;
    *live = self->n_live;
    *gaps = self->n_gaps;
}

uint64_t
db_sub_silences(const db_sub_t *self)
{
    return self->n_silences;
}

void
db_sub_drop_pushes(db_sub_t *self, bool drop)
{
    self->drop_pushes = drop;
}
