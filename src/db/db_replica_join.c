/*  db_replica_join - joining a chain, from both ends.

    THE JOINER. A replica that is not in the chain (new, restarted, or
    removed while it was alive) catches up from the tail by READ: first it
    finds the newest seq where its hash chain agrees with the tail's and
    truncates the unacknowledged suffix after it, then it fetches until it
    reaches the tail's last seq, then asks the master to JOIN at the tail.
    The decisions (where to read, where to cut, when to ask) are db_join's;
    this part sends the READs, hands the cut to the writer and the fetched
    events to the pipeline.

    THE TAIL. A replica that joins becomes the tail, so it must hold every
    event the tail has acknowledged. The master asks the tail (JOIN_HOLD);
    the tail stops acknowledging and publishing at its ack_seq, the held
    seq, and says so (JOIN_SEQ). The master admits the joiner only if it
    has that seq, and until the tail hears the outcome it acknowledges
    nothing past it: once admitted, the joiner is our successor and its
    CHAIN_ACKs carry the acknowledgements on. So whatever happens to us
    after, every event a client was told of is on the joiner
    (doc/protocol.md 8.4). Reads stop at the held seq too, so no reader
    sees an event that could still be cut. The hold ends with a new epoch,
    or with the master's ERROR answering our latest JOIN_SEQ (the joiner
    cannot join at this epoch); while neither comes, JOIN_SEQ is asked
    again every dead_ms, so a lost message or a restarted master costs
    time, never safety.

    This part owns the join state, the socket to the tail and the hold.
*/
#include "db_replica_int.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <string.h>

/* --- the tail's side of a join ------------------------------------------------------- */

static void
s_hold_ask(db_rep_t *self)
{
    uint8_t b[32];
    util_le32(b, self->index);
    util_le32(b + 4, self->hold.index);
    util_le64(b + 8, self->hold.last);
    util_le64(b + 16, self->hold.seq);
    util_le64(b + 24, ++self->hold.token);
    db_rep_send(self, self->sk_master, NULL, NET_JOIN_SEQ, self->cfg.epoch, b, sizeof b, NULL,
                0);
    self->hold.ms = util_mono_ms();
}

static void
s_hold_end(db_rep_t *self, const char *why)
{
    if (!self->hold.on)
        return;
    log_info("shard %u: no longer holding acknowledgements at seq %llu: %s", self->shard,
             (unsigned long long) self->hold.seq, why);
    self->hold.on = false;
    if (db_rep_is_tail(self))
        db_rep_tail_ack(self);
}

void
db_rep_hold_reset(db_rep_t *self, uint64_t epoch)
{
    if (!self->hold.on)
        return;
    /* the epoch changed: the master decided (or something else did).
       The reader stops serving first (s_apply_config says again whether
       we are the tail): lifting the bound while it still served at the
       old epoch let a READ read past the held seq what this replica
       truncates if the new configuration left it out (db_reader s_bound).
       Its bound stays at ack_seq (db_rep_set_ack) */
    self->hold.on = false;
    atomic_store(&self->rstate.is_tail, 0);
    log_info("shard %u: no longer holding acknowledgements at seq %llu: epoch %llu",
             self->shard, (unsigned long long) self->hold.seq, (unsigned long long) epoch);
}

void
db_rep_on_join_hold(db_rep_t *self, const net_hdr_t *h, zframe_t *body)
{
    if (!body || zframe_size(body) != 12) {
        db_rep_complain(self, "master", "JOIN_HOLD of the wrong size");
        return;
    }
    if (h->epoch != self->cfg.epoch || !db_rep_is_tail(self)) {
        /* a configuration we have not heard of, or left: ask */
        db_rep_ask_config(self);
        return;
    }
    uint32_t index = util_rd32(zframe_data(body));
    uint64_t last = util_rd64(zframe_data(body) + 4);
    if (db_hold_begin(&self->hold, index, last, self->ack_seq)) {
        /* the reader's bound is ack_seq already, which the hold keeps */
        log_info("shard %u: replica %u asks to join at seq %llu; holding acknowledgements at "
                 "seq %llu", self->shard, index, (unsigned long long) last,
                 (unsigned long long) self->hold.seq);
    }
    s_hold_ask(self);
}

bool
db_rep_join_error(db_rep_t *self, const net_hdr_t *h, zmsg_t *msg, int code, const char *text)
{
    zframe_t *req = zmsg_first(msg);
    if (self->hold.on && req && zframe_size(req) == 8 &&
        util_rd64(zframe_data(req)) == self->hold.token && h->epoch == self->cfg.epoch) {
        /* the master's answer to our latest JOIN_SEQ: no join at this
           epoch (an admission would have changed the epoch) */
        s_hold_end(self, text);
        return true;
    }
    if (code == LUX_EGAP && self->state == DB_RS_JOINING && self->join.phase == DB_J_WAIT) {
        /* the tail had more than we fetched: fetch again, then ask */
        log_info("chain master: %s", text);
        self->join.phase = DB_J_FETCH;
        db_rep_join_request(self);
        return true;
    }
    return false;
}

/* --- joining: catch up from the tail, then join at its end ------------------------------ */

static int s_on_tail(zloop_t *loop, zsock_t *sock, void *arg);
DB_REP_SETTLING(s_on_tail, zsock_t *)

void
db_rep_join_stop(db_rep_t *self)
{
    if (self->sk_tail) {
        zloop_reader_end(self->loop, self->sk_tail);
        zsock_destroy(&self->sk_tail);
    }
    self->join.phase = DB_J_IDLE;
    self->join.req = 0;
}

void
db_rep_join_start(db_rep_t *self)
{
    const db_member_t *tail;
    if (self->state != DB_RS_JOINING || self->cfg.n == 0)
        return;
    if (self->recv_seq != self->commit_seq)
        return; /* the writer is still busy; db_rep_join_go is called again */
    if (self->truncating)
        return; /* the writer is truncating; its 'T' reply calls again */
    tail = &self->cfg.m[self->cfg.n - 1];
    if (!tail->ep[DB_EP_READ][0])
        return; /* its endpoints are not known yet: next heartbeat */
    db_rep_join_stop(self);
    self->sk_tail = net_connect(ZMQ_DEALER, tail->ep[DB_EP_READ], self->sec);
    if (!self->sk_tail) {
        log_error("shard %u: %s", self->shard, lux_errmsg());
        return;
    }
    net_hwm(self->sk_tail, 0);
    zloop_reader(self->loop, self->sk_tail, s_on_tail_w, self);
    db_join_begin(&self->join, self->recv_seq);
    log_info("shard %u: catching up from the tail (replica %u), we have seq %llu", self->shard,
             tail->index, (unsigned long long) self->recv_seq);
    db_rep_join_request(self);
}

void
db_rep_join_request(db_rep_t *self)
{
    uint8_t b[24];
    static uint64_t s_req;
    uint64_t from;
    uint32_t count;
    if (!self->sk_tail || !db_join_read(&self->join, self->recv_seq, &from, &count))
        return;
    if (self->join.phase == DB_J_FETCH && self->pending_events >= DB_REP_MAX_PENDING / 4)
        return; /* let the writer catch up first */
    self->join.req = ++s_req;
    util_le64(b, self->join.req);
    util_le64(b + 8, from);
    util_le32(b + 16, count);
    util_le32(b + 20, DB_READ_MAX_BYTES);
    db_rep_send(self, self->sk_tail, NULL, NET_READ, self->cfg.epoch, b, sizeof b, NULL, 0);
    self->join.ms = util_mono_ms();
}

void
db_rep_join_go(db_rep_t *self)
{
    if (self->join.phase == DB_J_IDLE)
        db_rep_join_start(self);
    else if (self->join.phase == DB_J_FETCH && !self->join.req)
        db_rep_join_request(self);
}

void
db_rep_truncated(db_rep_t *self)
{
    /* the configuration may have changed meanwhile (a new tail): start
       over from a probe, which agrees at once when it has not */
    if (self->state == DB_RS_JOINING) {
        self->join.phase = DB_J_IDLE;
        db_rep_join_start(self);
    }
}

static int
s_hash_at(void *arg, uint64_t seq, uint8_t *hash)
{
    db_rep_t *self = arg;
    return db_store_hash_at(self->rstore, seq, hash);
}

/* The tail's answer while probing: read on, or truncate after the newest
   seq where our chains agree. */
static void
s_join_probe(db_rep_t *self, const net_batch_t *in, uint64_t tail_last)
{
    uint64_t agree;
    if (db_join_probe(&self->join, in, tail_last, self->recv_seq, s_hash_at, self, &agree) ==
        DB_JOIN_READ) {
        db_rep_join_request(self);
        return;
    }
    self->truncating = true;
    db_rep_writer_watch(self, true);
    db_writer_truncate(self->writer, agree);
}

/* ...while fetching: take what continues our log, then read on or ask
   the master to join. */
static void
s_join_fetched(db_rep_t *self, const net_batch_t *in, uint64_t tail_last)
{
    bool gap;
    char why[256] = "";
    db_rep_take_batch(self, in, &gap, why, sizeof why);
    if (gap || why[0])
        log_error("shard %u: catching up: %s", self->shard, why[0] ? why : "gap");
    if (db_join_fetched(&self->join, gap || why[0], self->recv_seq, tail_last) ==
        DB_JOIN_READ) {
        db_rep_join_request(self);
        return;
    }
    uint8_t b[12];
    util_le32(b, self->index);
    util_le64(b + 4, self->recv_seq);
    db_rep_send(self, self->sk_master, NULL, NET_JOIN, self->cfg.epoch, b, sizeof b, NULL, 0);
    self->join.ms = util_mono_ms();
    log_info("shard %u: caught up at seq %llu; asking to join", self->shard,
             (unsigned long long) self->recv_seq);
}

static int
s_on_tail(zloop_t *loop, zsock_t *sock, void *arg)
{
    db_rep_t *self = arg;
    zmsg_t *msg = zmsg_recv(sock);
    zframe_t *hf = msg ? zmsg_pop(msg) : NULL;
    zframe_t *rep = msg ? zmsg_pop(msg) : NULL;
    zframe_t *body = msg ? zmsg_pop(msg) : NULL;
    net_hdr_t h;
    net_batch_t in;
    (void) loop;

    if (!msg)
        return 0;
    if (net_hdr_decode(&h, hf)) {
        db_rep_complain(self, "tail read", lux_errmsg());
    } else if (h.type == NET_ERROR) {
        int code;
        char text[256];
        net_error_decode(rep, &code, text, sizeof text);
        log_info("shard %u: catching up: %s", self->shard, text);
        self->join.req = 0; /* retried from the heartbeat, after a config request */
        db_rep_ask_config(self);
    } else if (h.type == NET_READ_REP && rep && zframe_size(rep) == 16 && body &&
               net_batch_parse(&in, zframe_data(body), zframe_size(body)) == 0 &&
               util_rd64(zframe_data(rep)) == self->join.req) {
        uint64_t tail_last = util_rd64(zframe_data(rep) + 8);
        self->join.req = 0;
        if (self->join.phase == DB_J_PROBE)
            s_join_probe(self, &in, tail_last);
        else if (self->join.phase == DB_J_FETCH)
            s_join_fetched(self, &in, tail_last);
    }
    zframe_destroy(&hf);
    zframe_destroy(&rep);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return 0;
}

void
db_rep_join_beat(db_rep_t *self, int64_t now)
{
    if (self->state == DB_RS_JOINING) {
        if (!self->sk_tail || self->join.phase == DB_J_IDLE)
            db_rep_join_start(self);
        else if (self->join.req && now - self->join.ms > 2000) {
            self->join.req = 0; /* lost: ask again */
            db_rep_join_request(self);
        } else if (!self->join.req &&
                   (self->join.phase == DB_J_PROBE || self->join.phase == DB_J_FETCH))
            db_rep_join_request(self);
        else if (self->join.phase == DB_J_WAIT &&
                 now - self->join.ms > 5 * self->cluster.heartbeat_ms) {
            self->join.phase = DB_J_FETCH; /* not admitted yet: more may have come */
            db_rep_join_request(self);
        }
    }
    if (self->hold.on && now - self->hold.ms >= self->cluster.dead_ms)
        s_hold_ask(self); /* no answer yet: ask again (see THE TAIL) */
}
