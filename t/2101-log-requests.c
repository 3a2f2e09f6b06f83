/* 2101-log-requests: the endpoints of a running cluster answer requests at
   the edges of doc/protocol.md as the page says:
     - a header of another protocol version is answered with ENOSYS, other
       bad headers with EPROTO, on every ROUTER (5.5);
     - PING is answered whatever shard the header names and whatever the
       replica's role (5.2);
     - a request for another shard than the endpoint's is ESHARD (5.4);
     - READ from 0 is EINVAL, READ with max 0 gets the tail's limit (9.1);
     - APPEND_ACK carries one event's (cseq, seq): the newest the head has
       from the client, also when the APPEND was a resend (11.4);
     - the head refuses an event whose key belongs to another shard, and
       one of a kind it does not know, and takes nothing of the APPEND
       (11.1, 11.5, 13). */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_event.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_id.h"

#include <stdio.h>
#include <string.h>

static db_cluster_t s_c;

/* Send m on a new DEALER to ep and return the answer, or NULL when none
   came within 5 s (a bound on a lost answer, not a timing check). */
static zmsg_t *
s_call(const char *ep, zmsg_t *m)
{
    zsock_t *s = net_connect(ZMQ_DEALER, ep, NULL);
    zmsg_t *r = NULL;
    if (!s)
        bail("connect %s: %s", ep, lux_errmsg());
    zmsg_send(&m, s);
    zpoller_t *p = zpoller_new(s, NULL);
    if (zpoller_wait(p, 5000) == s)
        r = zmsg_recv(s);
    zpoller_destroy(&p);
    zsock_destroy(&s);
    return r;
}

/* A message whose header is these 16 (or n) bytes. */
static zmsg_t *
s_raw(const uint8_t *hdr, size_t n)
{
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, hdr, n);
    return m;
}

/* What answer r is: its type (0 for none or an undecodable header), with
   the header in *h; for an ERROR, its code and text. Destroys r. */
static int
s_answer(zmsg_t *r, net_hdr_t *h, int *code, char *text, size_t n)
{
    int type = 0;
    *code = 0;
    text[0] = '\0';
    if (r && net_hdr_decode(h, zmsg_first(r)) == 0) {
        type = h->type;
        if (type == NET_ERROR)
            net_error_decode(zmsg_next(r), code, text, n);
    }
    zmsg_destroy(&r);
    return type;
}

/* The ERROR code that answers m at ep (1 when the answer was no ERROR, 0
   when there was none); its text in text. */
static int
s_error_of(const char *ep, zmsg_t *m, char *text, size_t n)
{
    net_hdr_t h;
    int code;
    int type = s_answer(s_call(ep, m), &h, &code, text, n);
    return type == NET_ERROR ? code : type ? 1 : 0;
}

/* A job ID whose events belong to shard s. */
static void
s_job_in(util_id_t *job, uint32_t s)
{
    do
        util_id_random(job);
    while (util_id_shard(job, s_c.shards) != s);
}

/* An APPEND batch of count records of client, cseq first.., keyed by job
   (no job field when job is NULL), of kind. */
static void
s_append_batch(util_buf_t *b, const util_id_t *client, uint64_t first, uint32_t count,
               const util_id_t *job, int kind)
{
    util_buf_t rec;
    util_buf_init(&rec);
    net_batch_begin(b, first);
    for (uint32_t i = 0; i < count; i++) {
        db_event_t e = {.kind = (uint16_t) kind, .client = *client, .cseq = first + i};
        e.mask |= DB_F_CLIENT;
        if (job)
            DB_SET_ID(&e, job, DB_F_JOB, job);
        db_event_set_info(&e, "2101");
        rec.len = 0;
        db_event_encode(&e, &rec);
        net_batch_add(b, rec.data, rec.len);
    }
    net_batch_end(b, count);
    util_buf_free(&rec);
}

/* APPEND b at ep: ACK -> 0 with *cseq, *seq; ERROR -> its code. */
static int
s_append(const char *ep, uint32_t shard, const util_buf_t *b, const util_id_t *client,
         uint64_t *cseq, uint64_t *seq, char *text, size_t n)
{
    zmsg_t *r = s_call(ep, fx_msg(NET_APPEND, shard, 0, b->data, b->len));
    zframe_t *body = r && zmsg_size(r) == 2 ? zmsg_last(r) : NULL;
    net_hdr_t h;
    int code;
    *cseq = *seq = 0;
    if (body && net_hdr_decode(&h, zmsg_first(r)) == 0 && h.type == NET_APPEND_ACK &&
        zframe_size(body) == 32 && memcmp(zframe_data(body), client->b, 16) == 0) {
        *cseq = util_rd64(zframe_data(body) + 16);
        *seq = util_rd64(zframe_data(body) + 24);
        zmsg_destroy(&r);
        return 0;
    }
    int type = s_answer(r, &h, &code, text, n);
    if (type != NET_ERROR)
        snprintf(text, n, "answered %s", type ? net_type_name(type) : "nothing");
    return type == NET_ERROR ? code : LUX_EPROTO;
}

/* READ at the tail: 0 with the tail's last seq and the batch in *b (its
   bytes in buf), or the ERROR's code. */
static int
s_read(const char *ep, uint32_t shard, uint64_t epoch, uint64_t from, uint32_t max,
       uint64_t *last, util_buf_t *buf, net_batch_t *b, char *text, size_t n)
{
    uint8_t q[24];
    util_le64(q, 77);
    util_le64(q + 8, from);
    util_le32(q + 16, max);
    util_le32(q + 20, 0);
    zmsg_t *r = s_call(ep, fx_msg(NET_READ, shard, epoch, q, sizeof q));
    net_hdr_t h;
    int code;
    if (r && zmsg_size(r) == 3 && net_hdr_decode(&h, zmsg_first(r)) == 0 &&
        h.type == NET_READ_REP) {
        zframe_t *rep = zmsg_next(r), *bf = zmsg_next(r);
        int rc = LUX_EPROTO;
        if (zframe_size(rep) == 16 && util_rd64(zframe_data(rep)) == 77) {
            *last = util_rd64(zframe_data(rep) + 8);
            buf->len = 0;
            util_buf_put(buf, zframe_data(bf), zframe_size(bf));
            rc = net_batch_parse(b, buf->data, buf->len);
        }
        zmsg_destroy(&r);
        return rc;
    }
    int type = s_answer(r, &h, &code, text, n);
    return type == NET_ERROR ? code : LUX_EPROTO;
}

/* The event at seq, read from the tail; false when it is not there. */
static bool
s_event_at(const char *ep, uint32_t shard, uint64_t epoch, uint64_t seq, db_event_t *e,
           util_buf_t *buf)
{
    net_batch_t b;
    net_batch_it_t it;
    uint64_t last, at;
    const uint8_t *rec;
    size_t len;
    char text[256];
    if (s_read(ep, shard, epoch, seq, 1, &last, buf, &b, text, sizeof text) || b.count != 1)
        return false;
    net_batch_iter(&it, &b);
    return net_batch_next(&it, &at, &rec, &len) && at == seq && db_event_decode(e, rec, len) == 0;
}

int
main(void)
{
    db_status_t st;
    char text[512], ep_master[DB_EP_MAX];

    /* --log-only: no node manager, so the shards hold only our events */
    fx_start(&s_c, 2, 2, "--log-only");
    db_cluster_master_ep(&s_c, ep_master, sizeof ep_master);
    db_client_opts_t co = {.cluster = &s_c};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    for (int i = 0; i < 40; i++) {
        db_event_t e = {.kind = DB_K_note};
        util_id_t job;
        util_id_random(&job);
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        db_event_set_info(&e, "some history");
        if (db_client_append(cl, &e))
            bail("append: %s", lux_errmsg());
    }
    if (db_client_sync(cl, 20000))
        bail("sync: %s", lux_errmsg());
    if (!fx_wait_chain(&s_c, 0, 2, 20000) || !fx_wait_chain(&s_c, 1, 2, 20000) ||
        db_master_status(&s_c, NULL, &st, 2000))
        bail("the chains did not settle: %s", lux_errmsg());
    const db_chain_t *c0 = &st.chains[0];
    const db_member_t *head = &c0->m[0], *tail = &c0->m[c0->n - 1];
    uint64_t e0 = c0->epoch, e1 = st.chains[1].epoch;
    const char *eps[4][2] = {{"the chain master", ep_master},
                             {"the head's append endpoint", head->ep[DB_EP_APPEND]},
                             {"the tail's chain endpoint", tail->ep[DB_EP_CHAIN]},
                             {"the tail's read endpoint", tail->ep[DB_EP_READ]}};

    /* --- bad headers: ENOSYS for another version, EPROTO for the rest ----------------- */
    for (int k = 0; k < 4; k++) {
        uint8_t hdr[NET_HDR_LEN];
        zframe_t *f = net_hdr_frame(NET_PING, 0, e0);
        memcpy(hdr, zframe_data(f), NET_HDR_LEN);
        zframe_destroy(&f);
        hdr[1] = 2;
        int code = s_error_of(eps[k][1], s_raw(hdr, sizeof hdr), text, sizeof text);
        ok(code == LUX_ENOSYS && strstr(text, "version 2"),
           "%s answers a version 2 header with ENOSYS (%d: %s)", eps[k][0], code, text);
        hdr[1] = NET_VERSION;
        hdr[0] = 'X';
        int magic = s_error_of(eps[k][1], s_raw(hdr, sizeof hdr), text, sizeof text);
        hdr[0] = NET_MAGIC;
        int shrt = s_error_of(eps[k][1], s_raw(hdr, 5), text, sizeof text);
        hdr[2] = 200;
        int type = s_error_of(eps[k][1], s_raw(hdr, sizeof hdr), text, sizeof text);
        ok(magic == LUX_EPROTO && shrt == LUX_EPROTO && type == LUX_EPROTO,
           "%s answers a bad magic, a short header and an unknown type with EPROTO (%d %d %d)",
           eps[k][0], magic, shrt, type);
    }

    /* --- PING, whatever the header's shard and the replica's role --------------------- */
    const char *pinged[5][2] = {{"the head's append endpoint", head->ep[DB_EP_APPEND]},
                                {"the head's chain endpoint", head->ep[DB_EP_CHAIN]},
                                {"the tail's append endpoint (not the head)", tail->ep[DB_EP_APPEND]},
                                {"the tail's chain endpoint", tail->ep[DB_EP_CHAIN]},
                                {"the tail's read endpoint", tail->ep[DB_EP_READ]}};
    for (int k = 0; k < 5; k++) {
        int pongs = 0;
        uint32_t shards[] = {0, 1, 7777, NET_NO_SHARD};
        for (int i = 0; i < 4; i++) {
            net_hdr_t h;
            int code;
            int type = s_answer(s_call(pinged[k][1], fx_msg(NET_PING, shards[i], 0, NULL, 0)), &h,
                                &code, text, sizeof text);
            pongs += type == NET_PONG && h.shard == 0;
        }
        is_int(pongs, 4, "%s answers PING for shards 0, 1, 7777 and none with PONG from shard 0",
               pinged[k][0]);
    }
    {
        net_hdr_t h;
        int code;
        int type = s_answer(s_call(ep_master, fx_msg(NET_PING, 3, 9, NULL, 0)), &h, &code, text,
                            sizeof text);
        ok(type == NET_PONG && h.shard == NET_NO_SHARD && h.epoch == 0,
           "the chain master answers PING with PONG (no shard, epoch 0)");
    }

    /* --- another shard's request: ESHARD -------------------------------------------------- */
    uint8_t q[24] = {0};
    util_le64(q + 8, 1);
    util_le32(q + 16, 10);
    int code = s_error_of(tail->ep[DB_EP_READ], fx_msg(NET_READ, 1, e1, q, sizeof q), text,
                          sizeof text);
    ok(code == LUX_ESHARD && strstr(text, "shard 1") && strstr(text, "shard 0"),
       "a READ for shard 1 at shard 0's tail: ESHARD (%d: %s)", code, text);
    util_buf_t b, buf;
    util_buf_init(&b);
    util_buf_init(&buf);
    util_id_t me, job0, job1;
    util_id_random(&me);
    s_job_in(&job0, 0);
    s_job_in(&job1, 1);
    s_append_batch(&b, &me, 1, 1, &job1, DB_K_note);
    code = s_error_of(head->ep[DB_EP_APPEND], fx_msg(NET_APPEND, 1, e1, b.data, b.len), text,
                      sizeof text);
    ok(code == LUX_ESHARD, "an APPEND for shard 1 at shard 0's head: ESHARD (%d: %s)", code, text);
    uint8_t idx[4] = {0};
    code = s_error_of(tail->ep[DB_EP_CHAIN], fx_msg(NET_HELLO, 1, e1, idx, 4), text, sizeof text);
    ok(code == LUX_ESHARD, "a HELLO for shard 1 at shard 0's chain endpoint: ESHARD (%d: %s)",
       code, text);

    /* --- READ from 0, READ of 0 events ---------------------------------------------------- */
    util_le64(q + 8, 0);
    code = s_error_of(tail->ep[DB_EP_READ], fx_msg(NET_READ, 0, e0, q, sizeof q), text,
                      sizeof text);
    ok(code == LUX_EINVAL && strstr(text, "seq 0"), "READ from seq 0: EINVAL (%d: %s)", code,
       text);
    net_batch_t nb;
    uint64_t last = 0;
    code = s_read(tail->ep[DB_EP_READ], 0, e0, 1, 0, &last, &buf, &nb, text, sizeof text);
    ok(code == 0 && last > 0 && nb.first == 1 && nb.count == last,
       "READ from 1 with max 0 returns every event up to the tail's limit (%u of %llu)", nb.count,
       (unsigned long long) last);
    code = s_read(tail->ep[DB_EP_READ], 0, e0, last + 1, 0, &last, &buf, &nb, text, sizeof text);
    ok(code == 0 && nb.first == last + 1 && nb.count == 0,
       "READ from last+1 returns an empty batch starting there");

    /* --- APPEND_ACK: (cseq, seq) of one event, the newest from this client ------------- */
    const char *hep = head->ep[DB_EP_APPEND], *rep = tail->ep[DB_EP_READ];
    uint64_t cseq, seq3, seq5, seq;
    db_event_t e;
    s_append_batch(&b, &me, 1, 3, &job0, DB_K_note);
    code = s_append(hep, 0, &b, &me, &cseq, &seq3, text, sizeof text);
    ok(code == 0 && cseq == 3, "APPEND of cseq 1..3: ACK for cseq 3 at seq %llu",
       (unsigned long long) seq3);
    /* another client's events between ours */
    for (int i = 0; i < 5; i++) {
        db_event_t o = {.kind = DB_K_note};
        DB_SET_ID(&o, job, DB_F_JOB, &job0);
        db_client_append(cl, &o);
    }
    db_client_sync(cl, 20000);
    s_append_batch(&b, &me, 4, 2, &job0, DB_K_note);
    code = s_append(hep, 0, &b, &me, &cseq, &seq5, text, sizeof text);
    ok(code == 0 && cseq == 5 && seq5 > seq3 + 2, "APPEND of cseq 4..5: ACK for cseq 5 at seq %llu",
       (unsigned long long) seq5);
    s_append_batch(&b, &me, 1, 3, &job0, DB_K_note);
    code = s_append(hep, 0, &b, &me, &cseq, &seq, text, sizeof text);
    ok(code == 0 && cseq == 5 && seq == seq5,
       "a resend of cseq 1..3 is acknowledged with the newest event, (5, %llu) (got %llu, %llu)",
       (unsigned long long) seq5, (unsigned long long) cseq, (unsigned long long) seq);
    ok(s_event_at(rep, 0, e0, seq3, &e, &buf) && util_id_eq(&e.client, &me) && e.cseq == 3,
       "seq %llu holds cseq 3", (unsigned long long) seq3);
    ok(s_event_at(rep, 0, e0, seq5, &e, &buf) && util_id_eq(&e.client, &me) && e.cseq == 5,
       "seq %llu holds cseq 5", (unsigned long long) seq5);

    /* --- what the head refuses, and takes nothing of ----------------------------------- */
    util_buf_t two;
    util_buf_init(&two);
    s_append_batch(&two, &me, 6, 2, &job0, DB_K_note);
    /* make record 1 of the two a misrouted one: same bytes but job1 */
    s_append_batch(&b, &me, 7, 1, &job1, DB_K_note);
    net_batch_t pb;
    net_batch_parse(&pb, b.data, b.len);
    util_buf_t mixed;
    util_buf_init(&mixed);
    net_batch_begin(&mixed, 6);
    {
        net_batch_t tb;
        net_batch_it_t it;
        uint64_t s;
        const uint8_t *rec;
        size_t len;
        net_batch_parse(&tb, two.data, two.len);
        net_batch_iter(&it, &tb);
        net_batch_next(&it, &s, &rec, &len);
        net_batch_add(&mixed, rec, len);
        net_batch_iter(&it, &pb);
        net_batch_next(&it, &s, &rec, &len);
        net_batch_add(&mixed, rec, len);
        net_batch_end(&mixed, 2);
    }
    uint64_t before = 0, after = 0;
    s_read(rep, 0, e0, 1, 1, &before, &buf, &nb, text, sizeof text);
    code = s_append(hep, 0, &mixed, &me, &cseq, &seq, text, sizeof text);
    char want[64];
    snprintf(want, sizeof want, "shard %u, not shard 0", util_id_shard(&job1, 2));
    ok(code == LUX_EINVAL && strstr(text, "record 1") && strstr(text, want),
       "an APPEND whose second event's key belongs to shard 1: EINVAL (%d: %s)", code, text);
    /* a note without a job field is keyed by the zero ID (11.1) */
    util_id_t zero = {{0}}, other;
    uint32_t zs = util_id_shard(&zero, 2);
    util_id_random(&other);
    s_append_batch(&b, &other, 1, 1, NULL, DB_K_note);
    code = s_append(st.chains[1 - zs].m[0].ep[DB_EP_APPEND], 1 - zs, &b, &other, &cseq, &seq, text,
                    sizeof text);
    ok(code == LUX_EINVAL, "a note without a job (key: the zero ID, shard %u) at shard %u's head: "
       "EINVAL (%d: %s)", zs, 1 - zs, code, text);
    s_append_batch(&b, &me, 6, 1, &job0, 999);
    code = s_append(hep, 0, &b, &me, &cseq, &seq, text, sizeof text);
    ok(code == LUX_ENOSYS && strstr(text, "kind 999"),
       "an APPEND of an unknown kind: ENOSYS (%d: %s)", code, text);
    s_read(rep, 0, e0, 1, 1, &after, &buf, &nb, text, sizeof text);
    is_int((int64_t) after, (int64_t) before, "nothing of the refused APPENDs was taken");
    code = s_append(hep, 0, &two, &me, &cseq, &seq, text, sizeof text);
    ok(code == 0 && cseq == 7 && seq == after + 2,
       "cseq 6..7 are still the next ones expected, and taken (ACK %llu at seq %llu)",
       (unsigned long long) cseq, (unsigned long long) seq);

    util_buf_free(&b);
    util_buf_free(&two);
    util_buf_free(&mixed);
    util_buf_free(&buf);
    db_status_free(&st);
    db_client_destroy(&cl);
    return done_testing();
}
