/*  db_replica_pipe - a replica's pipeline: how events move through it,
    and the chain endpoint where its predecessor's arrive.

    THE PIPELINE. Events move through a replica as batches:
        head:   APPEND from a client -> dedup by event ID -> seq, ts and
                chain hash assigned -> writer (db_replica_append.c)
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

    LINKS. A predecessor opens a link with HELLO; the successor answers
    SYNC(last seq it has, its hash); the predecessor resends from there.
    A gap in a FORWARD is answered with SYNC too, so links heal themselves.
    A successor whose hash at its last seq is not ours has forked: the
    side that disagrees with the tail leaves and rejoins (s_sync_forked).

    This part owns the pending batches, the pipeline's counters, the
    writer's work and the links to predecessor and successor.
*/
#include "db_replica_int.h"
#include "../net/net_req.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <string.h>

db_rep_batch_t *
db_rep_batch_new(uint64_t first)
{
    db_rep_batch_t *b = calloc(1, sizeof *b);
    if (b) {
        util_buf_init(&b->data);
        net_batch_begin(&b->data, first);
    }
    return b;
}

void
db_rep_batch_free(db_rep_batch_t *b)
{
    util_buf_free(&b->data);
    free(b);
}

static int s_on_writer(zloop_t *loop, zsock_t *sock, void *arg);
static void s_forward(db_rep_t *self);
static int s_on_succ(zloop_t *loop, zsock_t *sock, void *arg);
DB_REP_SETTLING(s_on_writer, zsock_t *)
DB_REP_SETTLING(s_on_succ, zsock_t *)

/* The loop reads the writer's socket only while it has work: every socket
   it polls costs each turn a ZMQ_EVENTS check (a poll and a getpid), and
   small batches commit on this thread, the writer idle. */
void
db_rep_writer_watch(db_rep_t *self, bool on)
{
    if (on == self->writer_watched)
        return;
    if (!on)
        zloop_reader_end(self->loop, (zsock_t *) self->writer);
    else if (zloop_reader(self->loop, (zsock_t *) self->writer, s_on_writer_w, self) != 0) {
        db_rep_fail(self, LUX_ENOMEM, "cannot watch the writer");
        return;
    }
    self->writer_watched = on;
}

/* Close the batch and hand it to the writer. */
void
db_rep_submit(db_rep_t *self, db_rep_batch_t *b, uint32_t count)
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
    if (self->writer_seq <= self->commit_seq && !self->truncating && count <= DB_REP_INLINE &&
        db_store_wal_frames(self->store) < DB_WAL_CAP) {
        /* the writer is idle: commit now, on this thread (no hop); past
           the WAL's cap the writer commits, then copies it back */
        int rc = db_store_begin(self->store);
        if (!rc)
            rc = db_writer_put(self->store, &b->nb);
        if (!rc)
            rc = db_store_commit(self->store);
        if (rc) {
            db_store_rollback(self->store);
            db_rep_fail(self, rc, lux_errmsg());
            return;
        }
        self->commit_seq = db_store_last_seq(self->store);
        db_rep_after_commit(self);
        return;
    }
    self->writer_seq = b->nb.first + count - 1;
    db_rep_writer_watch(self, true);
    db_writer_write(self->writer, &b->nb);
}

/* Free batches the tail has committed (and, at the tail, published). */
static void
s_release(db_rep_t *self, uint64_t upto)
{
    while (self->pending) {
        db_rep_batch_t *b = self->pending;
        if (b->nb.first + b->nb.count - 1 > upto || b->nb.first + b->nb.count - 1 > self->commit_seq)
            break;
        self->pending = b->next;
        if (!self->pending)
            self->pending_last = NULL;
        self->pending_events -= b->nb.count;
        db_rep_batch_free(b);
    }
}

/* Send records of b from seq `from` on as one message of type on sock. */
static void
s_send_from(db_rep_t *self, zsock_t *sock, zframe_t *rid, int type, const net_batch_t *b,
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
        db_rep_touch(self, sock);
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
    db_rep_send(self, sock, rid, type, self->cfg.epoch, self->buf.data, self->buf.len, NULL,
           0);
}

/* --- after a commit -------------------------------------------------------------------- */

static void
s_publish(db_rep_t *self)
{
    for (db_rep_batch_t *b = self->pending; b; b = b->next) {
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

/* What the chain committed goes up to seq: the reader serves up to it
   and no further (as the tail). The writer commits before this thread
   hears of it, so the file holds more than the chain committed for a
   while; a READ that served those events, followed by a join hold (it
   holds at ack_seq) and the removal of this tail, handed a subscriber
   events this replica then truncated (issue 26, t/5017). A hold keeps
   ack_seq at the held seq, so it bounds the reader too. */
void
db_rep_set_ack(db_rep_t *self, uint64_t seq)
{
    self->ack_seq = seq;
    atomic_store(&self->rstate.upto, seq);
}

/* The tail committed up to ack_seq: tell the clients or the predecessor. */
static void
s_tell_acked(db_rep_t *self)
{
    if (db_rep_is_head(self)) {
        db_rep_ack_clients(self);
    } else if (self->pred_rid) {
        uint8_t b[8];
        util_le64(b, self->ack_seq);
        db_rep_send(self, self->sk_chain, self->pred_rid, NET_CHAIN_ACK, self->cfg.epoch, b, 8,
               NULL, 0);
    }
}

/* ...and release what it covers. */
static void
s_acked(db_rep_t *self)
{
    s_release(self, self->ack_seq);
    s_tell_acked(self);
}

/* As the tail: what is committed here is the chain's (unless we hold
   for a joiner): acknowledge, publish, release. The waiting client (or
   predecessor) is the latency that counts, so it hears first, and
   subscribers a few microseconds later; batches are released once
   published. */
void
db_rep_tail_ack(db_rep_t *self)
{
    uint64_t upto = db_hold_ack_upto(&self->hold, self->ack_seq, self->commit_seq);
    if (upto <= self->ack_seq)
        return;
    db_rep_set_ack(self, upto);
    s_tell_acked(self);
    s_publish(self);
    s_release(self, self->ack_seq);
}

void
db_rep_after_commit(db_rep_t *self)
{
    if (self->state == DB_RS_JOINING) {
        db_rep_set_ack(self, self->commit_seq);
        s_release(self, self->ack_seq);
        db_rep_join_go(self);
        return;
    }
    if (self->state != DB_RS_CHAIN)
        return;
    if (db_rep_is_tail(self)) {
        db_rep_tail_ack(self);
    } else if (self->succ_synced) {
        s_forward(self);
    }
}

static int
s_on_writer(zloop_t *loop, zsock_t *sock, void *arg)
{
    db_rep_t *self = arg;
    uint64_t seq = 0;
    int code = 0;
    char text[UTIL_ERRMSG_MAX];
    char cmd = db_writer_reply(self->writer, &seq, &code, text, sizeof text);
    if (cmd == 'C') {
        self->commit_seq = seq;
        db_rep_after_commit(self);
        if (self->writer_seq <= self->commit_seq && !self->truncating &&
            self->state != DB_RS_FAILED)
            db_rep_writer_watch(self, false); /* all it had is committed */
    } else if (cmd == 'T') {
        self->truncating = false;
        if (code) {
            db_rep_fail(self, code, text);
        } else {
            self->recv_seq = self->commit_seq = self->writer_seq = seq;
            db_rep_set_ack(self, seq);
            if (db_store_hash_at(self->rstore, seq, self->recv_hash))
                db_rep_fail(self, LUX_EIO, lux_errmsg());
            /* the truncated events' IDs must not count as seen: rebuild from
               the store (the writer is idle: the store is ours now) */
            if ((code = db_rep_seen_load(self, self->store)))
                db_rep_fail(self, code, lux_errmsg()); /* names why: memory, a read */
            db_rep_truncated(self);
        }
    } else if (cmd == 'E') {
        db_rep_fail(self, code, text);
    }
    return 0;
}

/* --- forwarding to the successor ---------------------------------------------------- */

/* Send the successor everything committed here that it does not have:
   pending batches where they reach, SQLite for what is older. */
static void
s_forward(db_rep_t *self)
{
    uint64_t from = self->fwd_seq + 1;
    while (from <= self->commit_seq) {
        db_rep_batch_t *b = self->pending;
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
        uint32_t max = stop - from + 1 > DB_REP_FETCH ? DB_REP_FETCH : (uint32_t) (stop - from + 1), got = 0;
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
        db_rep_send(self, self->sk_succ, NULL, NET_FORWARD, self->cfg.epoch, self->buf.data,
               self->buf.len, NULL, 0);
        from += got;
    }
    self->fwd_seq = from - 1;
}

void
db_rep_hello(db_rep_t *self)
{
    uint8_t b[4];
    util_le32(b, self->index);
    db_rep_send(self, self->sk_succ, NULL, NET_HELLO, self->cfg.epoch, b, 4, NULL, 0);
    self->hello_ms = util_mono_ms();
}

/* --- accepting records -------------------------------------------------------------- */

bool
db_rep_batch_take(db_rep_t *self, db_rep_batch_t **bp, uint64_t seq, const uint8_t *rec,
                  size_t n)
{
    bool hook = self->take_fail_seq && seq == self->take_fail_seq;
    if (!*bp && (hook || !(*bp = db_rep_batch_new(seq))))
        return false;
    util_buf_t *d = &(*bp)->data;
    size_t mark = d->len;
    if (!hook)
        net_batch_add(d, rec, n);
    if (hook || d->oom) {
        d->len = mark;
        d->oom = false;
        return false;
    }
    return true;
}

/* Take the records of a batch that continue our log (from a predecessor or
   the tail), checking each record's chain hash. Returns the number taken,
   or a negative code; *gap set when the batch starts after recv_seq + 1. */
int
db_rep_take_batch(db_rep_t *self, const net_batch_t *in, bool *gap, char *why, size_t whylen)
{
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t n;
    uint32_t taken = 0;
    db_rep_batch_t *b = NULL;
    uint8_t h[DB_HASH_LEN];
    bool unseen = false; /* a client's event the client table could not take */
    uint64_t oom_seq = 0; /* the record the batch could not be made or grown for */

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
        if (!db_rep_batch_take(self, &b, seq, rec, n)) { /* the test hook too (t/1015) */
            oom_seq = seq;
            break;
        }
        if ((e.mask & DB_F_CLIENT) && (unseen = db_rep_note_seen(self, &e, seq) != 0))
            break;
        self->recv_seq = seq;
        memcpy(self->recv_hash, h, DB_HASH_LEN);
        taken++;
    }
    if (oom_seq || unseen) {
        /* records it cannot take: nothing of the batch is submitted, and
           the replica fails, the same way for the first record as for a
           later one (the first went unsaid before: the batch was dropped
           and the replica went on as if it had taken nothing). And a
           replica that goes on without its client's event in the table
           takes the client's resends for new events (duplicates in the log) */
        char text[300];
        if (unseen)
            snprintf(text, sizeof text, "%s", lux_errmsg());
        else
            snprintf(text, sizeof text, "shard %u replica %u: out of memory taking seq %llu "
                     "(a batch from seq %llu, %u taken before it)%s", self->shard, self->index,
                     (unsigned long long) oom_seq, (unsigned long long) in->first, taken,
                     self->take_fail_seq == oom_seq ? " (test hook LUX_TEST_TAKE_FAIL)" : "");
        db_rep_fail(self, LUX_ENOMEM, text);
        if (b)
            db_rep_batch_free(b);
        return (int) taken;
    }
    if (b)
        db_rep_submit(self, b, taken);
    return (int) taken;
}

/* --- the chain socket: our predecessor ----------------------------------------------- */

static void
s_on_hello(db_rep_t *self, zframe_t **rid_p, const net_hdr_t *h, zframe_t *body)
{
    char text[200];
    uint8_t b[8 + DB_HASH_LEN];
    uint32_t from = body && zframe_size(body) == 4 ? util_rd32(zframe_data(body)) : UINT32_MAX;

    if (!body || zframe_size(body) != 4) {
        snprintf(text, sizeof text, "shard %u replica %u: HELLO of %zu bytes, not a u32 replica"
                 " index", self->shard, self->index, body ? zframe_size(body) : 0);
        db_rep_complain(self, "chain", text);
        db_rep_send_error(self, self->sk_chain, rid_p, LUX_EPROTO, text, 0);
        return;
    }
    if (h->epoch != self->cfg.epoch) {
        snprintf(text, sizeof text, "shard %u replica %u: HELLO at epoch %llu, we are at %llu",
                 self->shard, self->index, (unsigned long long) h->epoch,
                 (unsigned long long) self->cfg.epoch);
        db_rep_send_error(self, self->sk_chain, rid_p, LUX_EEPOCH, text, 0);
        if (h->epoch > self->cfg.epoch) /* we are behind: ask */
            db_rep_ask_config(self);
        return;
    }
    if (self->state != DB_RS_CHAIN || self->pos <= 0 ||
        self->cfg.m[self->pos - 1].index != from) {
        snprintf(text, sizeof text, "shard %u replica %u: HELLO from replica %u, which is not our "
                 "predecessor at epoch %llu", self->shard, self->index, from,
                 (unsigned long long) self->cfg.epoch);
        db_rep_send_error(self, self->sk_chain, rid_p, LUX_ESTATE, text, 0);
        return;
    }
    zframe_destroy(&self->pred_rid);
    self->pred_rid = *rid_p;
    *rid_p = NULL;
    util_le64(b, self->recv_seq);
    memcpy(b + 8, self->recv_hash, DB_HASH_LEN);
    db_rep_send(self, self->sk_chain, self->pred_rid, NET_SYNC, self->cfg.epoch, b, sizeof b,
           NULL, 0);
    log_info("shard %u: linked to predecessor replica %u at seq %llu (epoch %llu)", self->shard,
             from, (unsigned long long) self->recv_seq, (unsigned long long) self->cfg.epoch);
    /* tell it what the tail has, in case acknowledgements were lost */
    if (self->ack_seq) {
        util_le64(b, self->ack_seq);
        db_rep_send(self, self->sk_chain, self->pred_rid, NET_CHAIN_ACK, self->cfg.epoch, b, 8,
               NULL, 0);
    }
}

static void
s_on_forward(db_rep_t *self, zframe_t **rid_p, const net_hdr_t *h, zframe_t *body)
{
    char text[300] = "";
    net_batch_t in;
    bool gap;

    if (h->epoch != self->cfg.epoch || self->state != DB_RS_CHAIN || !self->pred_rid ||
        !zframe_eq(*rid_p, self->pred_rid)) {
        snprintf(text, sizeof text, "shard %u replica %u: FORWARD refused: %s", self->shard,
                 self->index, h->epoch != self->cfg.epoch ? "wrong epoch" : "not from our predecessor");
        db_rep_send_error(self, self->sk_chain, rid_p, h->epoch != self->cfg.epoch ? LUX_EEPOCH : LUX_ESTATE,
                     text, 0);
        return;
    }
    if (!body || net_batch_parse(&in, zframe_data(body), zframe_size(body))) {
        snprintf(text, sizeof text, "FORWARD: %s", body ? lux_errmsg() : "no batch");
        db_rep_complain(self, "chain", text);
        db_rep_send_error(self, self->sk_chain, rid_p, LUX_EPROTO, text, 0);
        return;
    }
    int taken = db_rep_take_batch(self, &in, &gap, text, sizeof text);
    if (gap || text[0]) {
        uint8_t b[8 + DB_HASH_LEN];
        if (text[0])
            log_error("shard %u: FORWARD from predecessor refused: %s", self->shard, text);
        util_le64(b, self->recv_seq);
        memcpy(b + 8, self->recv_hash, DB_HASH_LEN);
        db_rep_send(self, self->sk_chain, self->pred_rid, NET_SYNC, self->cfg.epoch, b,
               sizeof b, NULL, 0);
    }
    (void) taken;
}

int
db_rep_on_chain(zloop_t *loop, zsock_t *sock, void *arg)
{
    db_rep_t *self = arg;
    net_req_t r;
    (void) loop;
    int rc = net_req_recv(&r, sock, &self->complain, "chain endpoint", self->shard,
                          self->cfg.epoch);
    zframe_t *body = r.body;
    net_hdr_t h = r.h;

    if (rc) {
        db_rep_touch(self, sock); /* an ERROR went out */
    } else if (h.type == NET_PING) {
        db_rep_send(self, sock, r.rid, NET_PONG, self->cfg.epoch, NULL, 0, NULL, 0);
    } else if (h.type == NET_ERROR && self->pred_rid && zframe_eq(r.rid, self->pred_rid) &&
               h.epoch == self->cfg.epoch && self->state == DB_RS_CHAIN) {
        /* our predecessor found our log forked from its own (s_sync_forked) */
        int code;
        char text[256];
        net_error_decode(body, &code, text, sizeof text);
        if (code == LUX_ECORRUPT)
            db_rep_fail(self, code, text);
        else
            log_warn("shard %u: predecessor: %s", self->shard, text);
    } else if (h.type != NET_HELLO && h.type != NET_FORWARD) {
        if (h.type != NET_ERROR) {
            char text[128];
            snprintf(text, sizeof text, "unexpected %s on the chain endpoint",
                     net_type_name(h.type));
            db_rep_complain(self, "chain", text);
            db_rep_send_error(self, sock, &r.rid, LUX_EPROTO, text, 0);
        }
    } else if (h.shard != self->shard) {
        db_rep_wrong_shard(self, sock, &r.rid, &h, "chain");
    } else if (h.type == NET_HELLO) {
        s_on_hello(self, &r.rid, &h, body);
    } else {
        s_on_forward(self, &r.rid, &h, body);
    }
    net_req_done(&r);
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
s_sync_forked(db_rep_t *self, uint64_t last, const uint8_t *theirs)
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
        db_rep_fail(self, LUX_ECORRUPT, text);
    } else {
        log_error("%s: the successor leaves the chain to rejoin", text);
        zmsg_t *m = net_error_msg(self->shard, self->cfg.epoch, LUX_ECORRUPT, "%s", text);
        db_rep_emit(self, self->sk_succ, &m);
        self->succ_synced = false;
    }
    return true;
}

static int
s_on_succ(zloop_t *loop, zsock_t *sock, void *arg)
{
    db_rep_t *self = arg;
    zmsg_t *msg = zmsg_recv(sock);
    zframe_t *hf = msg ? zmsg_pop(msg) : NULL;
    zframe_t *body = msg ? zmsg_pop(msg) : NULL;
    net_hdr_t h;

    if (!msg)
        return 0;
    if (net_hdr_decode(&h, hf)) {
        db_rep_complain(self, "successor", lux_errmsg());
    } else if (h.type == NET_ERROR) {
        int code;
        char text[256];
        net_error_decode(body, &code, text, sizeof text);
        log_info("shard %u: successor replica %u: %s", self->shard, self->succ_index, text);
        if (code == LUX_EEPOCH)
            db_rep_ask_config(self);
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
            db_rep_set_ack(self, acked);
            s_acked(self);
        }
    } else {
        db_rep_complain(self, "successor", "unexpected message");
    }
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return 0;
}

/* --- the successor's socket ------------------------------------------------------------ */

void
db_rep_succ_close(db_rep_t *self)
{
    if (self->sk_succ) {
        if (self->loop)
            zloop_reader_end(self->loop, self->sk_succ);
        zsock_destroy(&self->sk_succ);
    }
    self->succ_synced = false;
}

void
db_rep_succ_open(db_rep_t *self, const db_member_t *m)
{
    if (!self->sk_succ || self->succ_index != m->index ||
        strcmp(self->succ_ep, m->ep[DB_EP_CHAIN])) {
        db_rep_succ_close(self);
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
        db_rep_hello(self);
}

/* The writer must be gone: it reads the pending batches. */
void
db_rep_pipe_free(db_rep_t *self)
{
    while (self->pending) {
        db_rep_batch_t *b = self->pending;
        self->pending = b->next;
        db_rep_batch_free(b);
    }
    self->pending_last = NULL;
}
