/*  db_replica_append - appends at the head: the append endpoint (and the
    local links, whose messages db_replica_link.c hands here).

    An APPEND is checked whole before anything is taken (records that
    decode, of kinds we know, each in the shard of its key, one client,
    consecutive event IDs); then each new record gets its seq, timestamp
    and chain hash and the batch goes down the pipeline
    (db_replica_pipe.c), and the client waits until the tail has its
    newest event. An APPEND is accepted whatever the client's epoch while
    we are the head, because safety comes from the chain: a stale head's
    FORWARD is refused by its successor, so nothing it takes is ever
    acknowledged, and refusing appends during every reconfiguration would
    only stall clients.

    IDEMPOTENCE. A client's event IDs are dense per shard (cseq 1, 2, 3...)
    and the head takes them strictly in order: a record at or below the
    newest cseq it has from that client is a resend and is skipped (and
    acknowledged once what it has is committed); a message whose first new
    record is not the next cseq is refused with EGAP, so the client resends
    from its oldest unacknowledged batch. Dropping "anything at or below the
    newest" is only sound because nothing is ever taken out of order. Every
    replica keeps the table (client -> newest cseq and its seq), so that
    it is right the moment the replica becomes the head.

    ADMISSION. While DB_REP_MAX_PENDING events are in flight the head stops
    reading appends (socket and links), and reads again at half.

    This part owns the client table, the waiting clients and the pause.
*/
#include "db_replica_int.h"
#include "../net/net_req.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static void s_admission(db_rep_t *self);

static void
s_ack_one(db_rep_t *self, zframe_t *rid, const util_id_t *client, uint64_t cseq, uint64_t seq)
{
    uint8_t b[32];
    memcpy(b, client->b, 16);
    util_le64(b + 16, cseq);
    util_le64(b + 24, seq);
    db_rep_send(self, self->sk_append, rid, NET_APPEND_ACK, self->cfg.epoch, b, sizeof b, NULL,
           0);
}

void
db_rep_ack_clients(db_rep_t *self)
{
    size_t k = 0;
    for (size_t i = 0; i < self->nwait; i++) {
        db_rep_waiter_t *w = &self->waiters[i];
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
s_admission(db_rep_t *self)
{
    if (!self->append_paused && self->pending_events >= DB_REP_MAX_PENDING) {
        net_raw_on(self->raw, self->raw_append, false);
        self->append_paused = true;
    } else if (self->append_paused && self->pending_events < DB_REP_MAX_PENDING / 2) {
        net_raw_on(self->raw, self->raw_append, true);
        self->append_paused = false;
    } else {
        return;
    }
    db_rep_links_watch(self);
}

static void
s_wait(db_rep_t *self, zframe_t **rid_p, const util_id_t *client, uint64_t cseq, uint64_t seq)
{
    if (seq <= self->ack_seq) {
        s_ack_one(self, *rid_p, client, cseq, seq);
        return;
    }
    if (self->nwait == self->capwait) {
        size_t cap = self->capwait ? 2 * self->capwait : 64;
        db_rep_waiter_t *w = realloc(self->waiters, cap * sizeof *w);
        if (!w)
            return; /* the client will time out and resend: safe */
        self->waiters = w;
        self->capwait = cap;
    }
    self->waiters[self->nwait++] = (db_rep_waiter_t) {*rid_p, *client, cseq, seq};
    *rid_p = NULL;
}

/* Check every record of an APPEND before taking any: records that decode,
   of kinds we know, each in the shard of its key, one client, strictly
   increasing cseq. 0 or a code with text. The head is the log's gate:
   replicas behind it carry whatever it took, kinds they do not know
   included (doc/protocol.md 13). */
static int
s_check_append(const db_rep_t *self, const net_batch_t *in, util_id_t *client, uint64_t *first,
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

/* Test hook: LUX_TEST_APPEND_GATE=DIR makes a head that has not failed
   drop every APPEND, unanswered, while DIR/hold exists, and add a line to
   DIR/dropped for each: a head that has not answered yet (just
   restarted, or slow), held open as long as a test needs (t/5304). */
static bool
s_append_gate(db_rep_t *self)
{
    char path[PATH_MAX];
    if (!self->append_gate[0])
        return false;
    snprintf(path, sizeof path, "%s/hold", self->append_gate);
    if (!util_exists(path))
        return false;
    snprintf(path, sizeof path, "%s/dropped", self->append_gate);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "shard %u replica %u: an APPEND dropped\n", self->shard, self->index);
        fclose(f);
    }
    return true;
}

static void
s_append(db_rep_t *self, zframe_t **rid_p, const net_hdr_t *h, zframe_t *body)
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
        db_rep_send_error(self, self->sk_append, rid_p, LUX_EIO, text, s_append_req(body));
        return;
    }
    if (s_append_gate(self))
        return;
    if (!db_rep_is_head(self)) {
        snprintf(text, sizeof text, "shard %u replica %u is not the head at epoch %llu (%s)",
                 self->shard, self->index, (unsigned long long) self->cfg.epoch,
                 db_replica_state_name(self->state));
        db_rep_send_error(self, self->sk_append, rid_p, LUX_ESTATE, text, s_append_req(body));
        return;
    }
    if (!body || net_batch_parse(&in, zframe_data(body), zframe_size(body))) {
        snprintf(text, sizeof text, "APPEND: %s", body ? lux_errmsg() : "no batch");
        db_rep_complain(self, "append", text);
        db_rep_send_error(self, self->sk_append, rid_p, LUX_EPROTO, text, 0);
        return;
    }
    uint64_t first = 0;
    if ((rc = s_check_append(self, &in, &client, &first, text, sizeof text))) {
        db_rep_complain(self, "append", text);
        db_rep_send_error(self, self->sk_append, rid_p, rc, text, s_append_req(body));
        return;
    }
    db_rep_seen_t *seen = util_idmap_put(self->seen, &client, NULL);
    if (!seen) {
        db_rep_send_error(self, self->sk_append, rid_p, LUX_ENOMEM, "out of memory", first);
        return;
    }
    if (first > seen->cseq + 1) {
        /* we refused an earlier batch of this client: take nothing out of
           order, or a resend of it would later look like a duplicate */
        snprintf(text, sizeof text, "shard %u: expected event %llu from this client, got %llu",
                 self->shard, (unsigned long long) seen->cseq + 1, (unsigned long long) first);
        db_rep_send_error(self, self->sk_append, rid_p, LUX_EGAP, text, first);
        return;
    }
    /* the records are ours to change: set ts and the hash in place */
    net_batch_it_t it;
    uint64_t ignore;
    const uint8_t *rec;
    size_t len;
    db_rep_batch_t *b = NULL;
    uint32_t taken = 0, i = 0;
    uint64_t oom_seq = 0;
    int64_t now = util_now_ns();
    net_batch_iter(&it, &in);
    for (; net_batch_next(&it, &ignore, &rec, &len); i++) {
        uint8_t *r = (uint8_t *) rec;
        uint64_t cseq = util_rd64(r + 14 + 16); /* DB_F_CLIENT is the first field */
        if (cseq <= seen->cseq)
            continue; /* applied before: resent after a failure */
        uint64_t seq = self->recv_seq + 1;
        util_le64(r + DB_REC_TS_OFF, (uint64_t) now);
        db_event_chain(r + len - DB_HASH_LEN, self->recv_hash, seq, r, len);
        if (!db_rep_batch_take(self, &b, seq, r, len)) {
            /* the batch as it was before this record (the test hook too,
               once: t/3172): the records taken go down the chain, the
               rest is refused (below) */
            oom_seq = seq;
            break;
        }
        memcpy(self->recv_hash, r + len - DB_HASH_LEN, DB_HASH_LEN);
        self->recv_seq = seq;
        seen->cseq = cseq;
        seen->seq = seq;
        taken++;
    }
    if (b && taken)
        db_rep_submit(self, b, taken);
    else if (b)
        db_rep_batch_free(b);
    if (oom_seq) {
        /* nothing of it or after it was taken (its seq, the chain hash and
           the client's table are where they were): the client resends
           from its newest event not acknowledged, once a configuration
           says where (db_client: any refusal), and what was taken is
           skipped as a resend. Before, the record was counted as taken
           and not sent: a gap in every replica's file */
        snprintf(text, sizeof text, "shard %u replica %u (the head): out of memory taking seq "
                 "%llu (record %u of an APPEND from event %llu, %u taken before it); the rest "
                 "is refused, resend it%s", self->shard, self->index,
                 (unsigned long long) oom_seq, i, (unsigned long long) first, taken,
                 self->take_fail_seq == oom_seq ? " (test hook LUX_TEST_TAKE_FAIL)" : "");
        if (self->take_fail_seq == oom_seq)
            self->take_fail_seq = 0;
        log_error("%s", text);
        db_rep_send_error(self, self->sk_append, rid_p, LUX_ENOMEM, text, first);
        s_admission(self);
        return;
    }
    /* acknowledge the newest event we have from this client, which is the
       APPEND's last one unless the whole APPEND was a resend of older
       ones: (cseq, seq) is always one event's pair (doc/protocol.md 11.4) */
    s_wait(self, rid_p, &client, seen->cseq, seen->seq);
    s_admission(self);
}

/* One message of the append socket or a link: routing ID, header, body. */
void
db_rep_append_msg(db_rep_t *self, zmsg_t *msg)
{
    zsock_t *sock = self->sk_append;
    net_req_t r;
    int rc = net_req_take(&r, &msg);
    net_hdr_t h = r.h;

    if (rc) {
        char text[256];
        snprintf(text, sizeof text, "%s", lux_errmsg());
        db_rep_complain(self, "append", text);
        db_rep_send_error(self, sock, &r.rid, rc, text, 0);
    } else if (h.type == NET_PING) {
        /* liveness: answered whatever shard the header names */
        db_rep_send(self, sock, r.rid, NET_PONG, self->cfg.epoch, NULL, 0, NULL, 0);
    } else if (h.type != NET_APPEND) {
        /* the type is checked before the shard, as at every endpoint:
           a message for another endpoint is EPROTO whatever shard it names */
        char text[128];
        snprintf(text, sizeof text, "unexpected %s on the append endpoint", net_type_name(h.type));
        db_rep_complain(self, "append", text);
        db_rep_send_error(self, sock, &r.rid, LUX_EPROTO, text, 0);
    } else if (h.shard != self->shard) {
        db_rep_wrong_shard(self, sock, &r.rid, &h, "append");
    } else {
        s_append(self, &r.rid, &h, r.body);
    }
    net_req_done(&r);
}

int
db_rep_on_append(zloop_t *loop, zsock_t *sock, void *arg)
{
    zmsg_t *msg = zmsg_recv(sock);
    (void) loop;
    if (msg)
        db_rep_append_msg(arg, msg);
    return 0;
}

/* --- the client table ------------------------------------------------------------------ */

int
db_rep_note_seen(db_rep_t *self, const db_event_t *e, uint64_t seq)
{
    db_rep_seen_t *s = util_idmap_put(self->seen, &e->client, NULL);
    if (!s) /* a table missing a client would take its resends for new events */
        return util_err(LUX_ENOMEM, "shard %u: out of memory noting seq %llu in the client "
                        "table (%zu clients)", self->shard, (unsigned long long) seq,
                        util_idmap_size(self->seen));
    if (e->cseq > s->cseq) {
        s->cseq = e->cseq;
        s->seq = seq;
    }
    return 0;
}

static int
s_load_seen(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq)
{
    db_rep_t *self = arg;
    db_rep_seen_t *s = util_idmap_put(self->seen, client, NULL);
    if (!s) /* a table missing a client would take its resends for new events */
        return util_err(LUX_ENOMEM, "shard %u: out of memory loading the client table "
                        "(%zu clients loaded)", self->shard, util_idmap_size(self->seen));
    s->cseq = cseq;
    s->seq = seq;
    return 0;
}

int
db_rep_seen_load(db_rep_t *self, db_store_t *store)
{
    util_idmap_destroy(&self->seen);
    if (!(self->seen = util_idmap_new(sizeof(db_rep_seen_t))))
        return util_err(LUX_ENOMEM, "out of memory for the client table");
    return db_store_clients(store, s_load_seen, self);
}

void
db_rep_waiters_drop(db_rep_t *self)
{
    for (size_t i = 0; i < self->nwait; i++)
        zframe_destroy(&self->waiters[i].rid);
    self->nwait = 0;
}

void
db_rep_append_free(db_rep_t *self)
{
    db_rep_waiters_drop(self);
    free(self->waiters);
    self->waiters = NULL;
    self->capwait = 0;
    util_idmap_destroy(&self->seen);
}
