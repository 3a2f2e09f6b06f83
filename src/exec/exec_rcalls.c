/*  exec_rcalls - a restarted actor's calls, read from the log on the
    head's machine for a node that is not the head (issue 28, DESIGN 7.4).

    An actor whose process dies is started again from its checkpoint (or
    its constructor), and the calls the log has after that checkpoint are
    re-applied in the log's order (exec_node_actor.c s_prepare_replay). The
    log's SQLite files are on the head's machine only: a node elsewhere
    cannot open them ("unable to open database file"), and its actors died
    at their first restart. Such a node asks the head's node manager
    instead, once its own events of the actor's calls are committed:

        NODE_ACTOR_CALLS      req u64, actor ID [16], after u64 (the call
                              its checkpoint covers; 0: none)
        NODE_ACTOR_CALLS_REP  req u64, actor ID [16], rc i32, why str
                              (rc != 0: the head's reason), count u32,
                              then count times a record blob (u32 length,
                              the actor_call event as db_event.c encodes it)

    The head reads them where it reads them for its own actors
    (nm_log_actor_calls), and answers in one message, at most S_MAX_BYTES
    of records (more fails the restart, naming the size). The node asks
    again every S_RESEND_MS while no answer came (a head killed and started
    again loses what it was asked), and gives up after S_WAIT_MS without
    one: the actor dies, "restart N: reading its calls from the log: the
    head's node (ENDPOINT) did not answer within 30000 ms". An answer to a
    request that is not the actor's current one (an earlier restart's, a
    duplicate of one re-sent) is dropped.

    A home (the node that made an actor held by another node) that is not
    the head asks the same when the holder dies, for all the actor's calls
    (after 0: those its checkpoint covers tell which calls in flight were
    applied), and places the actor again once they come
    (exec_ractor.c nm_ractor_requeue_read); with no answer within the same
    bound the actor dies, naming why. Before, such a home could not read
    them, warned, and placed the actor again with its calls in flight
    only: its state silently lacked every call it had answered since its
    checkpoint (t/6164).
*/
#include "exec_rcalls.h"
#include "exec_peer.h"
#include "exec_node_actor_res.h"
#include "exec_ractor.h"
#include "exec_node_log.h"
#include "../db/db_event.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_RESEND_MS 2000             /* unanswered: asked again this often */
#define S_WAIT_MS 30000              /* unanswered this long: the restart fails */
#define S_MAX_BYTES (256u << 20)     /* the records one answer may carry */

struct nm_rcalls {
    uint64_t req;       /* the last request's number */
    int64_t wait_ms;    /* S_WAIT_MS, or the test hook LUX_TEST_ACTOR_CALLS_MS */
    char *drop;         /* the head: test hook LUX_TEST_ACTOR_CALLS_DROP=FILE, requests
                           dropped unanswered while FILE exists (t/6158) */
    util_buf_t buf;     /* the answer being made (the head) */
    uint32_t count;     /* ... its records */
    int rc;             /* ... why it stopped (the log's reader stops quietly) */
};

/* --- the head: answering ------------------------------------------------------------------ */

static int
s_put_call(void *arg, const db_event_t *e)
{
    nm_t *nm = arg;
    struct nm_rcalls *r = nm->rcalls;
    size_t at = r->buf.len;
    util_buf_put_u32(&r->buf, 0);
    db_event_encode(e, &r->buf);
    if (r->buf.oom)
        return r->rc = util_err(LUX_ENOMEM, "out of memory answering for an actor's calls");
    size_t n = r->buf.len - at - 4;
    if (r->buf.len > S_MAX_BYTES)
        return r->rc = util_err(LUX_EFULL, "its calls after its checkpoint take more than %u "
                                "MiB of the log (%u calls read)", S_MAX_BYTES >> 20, r->count);
    uint8_t le[4] = {(uint8_t) n, (uint8_t) (n >> 8), (uint8_t) (n >> 16), (uint8_t) (n >> 24)};
    memcpy(r->buf.data + at, le, 4);
    r->count++;
    return 0;
}

static void
s_on_calls(nm_t *nm, nm_peer_msg_t *m)
{
    struct nm_rcalls *r = nm->rcalls;
    util_rd_t rd;
    if (!nm_peer_body(nm, m, &rd))
        return;
    uint64_t req = util_rd_u64(&rd);
    const uint8_t *idp = util_rd_take(&rd, 16);
    uint64_t after = util_rd_u64(&rd);
    if (rd.bad || !idp) {
        nm_complain(nm, "malformed NODE_ACTOR_CALLS");
        return;
    }
    if (r->drop && access(r->drop, F_OK) == 0)
        return;
    util_id_t id;
    memcpy(id.b, idp, 16);
    util_buf_t head;
    util_buf_init(&head);
    util_buf_put_u64(&head, req);
    util_buf_put(&head, id.b, 16);
    r->buf.len = 0;
    r->count = 0;
    r->rc = 0;
    int rc = nm_peer_is_head(nm) ? nm_log_actor_calls(nm, &id, after, s_put_call, nm)
                                 : util_err(LUX_EINVAL, "only the head reads actors' calls");
    if (!rc)
        rc = r->rc; /* its message stands */
    const char *why = rc ? lux_errmsg() : "";
    util_buf_put_u32(&head, (uint32_t) rc);
    util_buf_put_str(&head, why, strlen(why) < 600 ? strlen(why) : 600);
    util_buf_put_u32(&head, rc ? 0 : r->count);
    if (head.oom) {
        util_buf_free(&head);
        return; /* asked again */
    }
    zmsg_t *out = zmsg_new();
    zmsg_addmem(out, head.data, head.len);
    if (!rc)
        zmsg_addmem(out, r->buf.data, r->buf.len);
    nm_peer_reply(nm, m, NET_NODE_ACTOR_CALLS_REP, &out);
    util_buf_free(&head);
    if (r->buf.cap > (1u << 20)) { /* a large answer's room is not kept */
        util_buf_free(&r->buf);
        util_buf_init(&r->buf);
    }
}

/* --- a node: asking, and the answer ------------------------------------------------------- */

/* The records of an answer, for nm_actor_replay_read: rc and why, or each
   record decoded. */
typedef struct {
    int rc;
    const char *why;
    size_t why_len;
    util_rd_t recs;
    uint32_t count;
} s_answer_t;

static int
s_each(void *arg, nm_t *nm, nm_actor_t *a, nm_calls_cb *cb, void *cbarg)
{
    (void) nm, (void) a;
    s_answer_t *x = arg;
    if (x->rc)
        return util_err(x->rc, "the head's node: %.*s", (int) x->why_len, x->why ? x->why : "");
    for (uint32_t i = 0; i < x->count; i++) {
        size_t n = 0;
        const uint8_t *p = util_rd_blob(&x->recs, &n);
        db_event_t e;
        int rc;
        if (x->recs.bad || !p)
            return util_err(LUX_EPROTO, "the head's answer holds %u calls, not %u", i, x->count);
        if ((rc = db_event_decode(&e, p, n)))
            return util_err_ctx(rc, "the head's answer, call %u of %u", i + 1, x->count);
        if (e.kind != DB_K_actor_call)
            return util_err(LUX_EPROTO, "the head's answer, call %u of %u: a %s event", i + 1,
                            x->count, db_kind_name(e.kind) ? db_kind_name(e.kind) : "unknown");
        if (cb(cbarg, &e))
            return 0; /* the callback said why (its rc) */
    }
    return 0;
}

/* The answer (or why there is none) to whom asked: a restart here, or a
   home placing a again (exec_ractor.c). */
static void
s_deliver(nm_t *nm, nm_actor_t *a, nm_calls_read *read, void *arg)
{
    if (a->requeue_wait)
        nm_ractor_requeue_read(nm, a, read, arg);
    else
        nm_actor_replay_read(nm, a, read, arg);
}

static void
s_on_calls_rep(nm_t *nm, nm_peer_msg_t *m)
{
    util_rd_t rd;
    if (!nm_peer_body(nm, m, &rd))
        return;
    s_answer_t x = {0};
    uint64_t req = util_rd_u64(&rd);
    const uint8_t *idp = util_rd_take(&rd, 16);
    x.rc = (int) util_rd_u32(&rd);
    x.why = util_rd_str(&rd, &x.why_len);
    x.count = util_rd_u32(&rd);
    if (rd.bad || !idp || x.rc > 0) {
        nm_complain(nm, "malformed NODE_ACTOR_CALLS_REP");
        return;
    }
    util_id_t id;
    memcpy(id.b, idp, 16);
    nm_actor_t **p = util_idmap_get(nm->actors, id.b);
    nm_actor_t *a = p ? *p : NULL;
    if (!a || !(a->log_wait || a->requeue_wait) || a->calls_req != req)
        return; /* not asked now: an earlier restart's, or a second answer */
    zframe_t *f = zmsg_first(m->msg);
    f = f ? zmsg_next(m->msg) : NULL; /* the records, after the body */
    util_rd_init(&x.recs, f ? zframe_data(f) : NULL, f ? zframe_size(f) : 0);
    if (!x.rc && x.count && !f) {
        x.rc = LUX_EPROTO;
        x.why = "an answer without its records";
        x.why_len = strlen(x.why);
    }
    s_deliver(nm, a, s_each, &x);
}

/* Why a waits: its calls asked of the head (again), or the wait over. */
static int
s_no_answer(void *arg, nm_t *nm, nm_actor_t *a, nm_calls_cb *cb, void *cbarg)
{
    (void) nm, (void) a, (void) cb, (void) cbarg;
    return util_err(LUX_ETIMEDOUT, "%s", (const char *) arg);
}

void
nm_rcalls_ask(nm_t *nm, nm_actor_t *a)
{
    struct nm_rcalls *r = nm->rcalls;
    int64_t now = util_mono_ms();
    char ep[DB_EP_MAX], why[300], hex[UTIL_ID_HEX];
    nm_peer_head_ep(nm, ep, sizeof ep);
    if (a->calls_req && now - a->calls_first_ms >= r->wait_ms) {
        snprintf(why, sizeof why, "the head's node (%s) did not answer within %lld ms", ep,
                 (long long) r->wait_ms);
        s_deliver(nm, a, s_no_answer, why);
        return;
    }
    if (a->calls_req && now - a->calls_asked_ms < S_RESEND_MS)
        return;
    if (!a->calls_req)
        a->calls_first_ms = now;
    a->calls_req = ++r->req;
    a->calls_asked_ms = now;
    util_buf_t b;
    util_buf_init(&b);
    util_buf_put_u64(&b, a->calls_req);
    util_buf_put(&b, a->id.b, 16);
    util_buf_put_u64(&b, a->requeue_wait ? 0 : a->ckpt_idx); /* a home: all (s_requeue) */
    if (b.oom) {
        util_buf_free(&b);
        return; /* asked again at the next tick */
    }
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, b.data, b.len);
    util_buf_free(&b);
    if (nm_peer_send(nm, ep, NET_NODE_ACTOR_CALLS, &m))
        log_warn("actor %s: cannot ask the head's node (%s) for its calls: %s",
                 util_id_hex(&a->id, hex), ep, lux_errmsg());
}

/* --- setup ------------------------------------------------------------------------------ */

nm_rcalls_t *
nm_rcalls_new(nm_t *nm)
{
    nm_rcalls_t *r = calloc(1, sizeof *r);
    if (!r) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    util_buf_init(&r->buf);
    const char *w = getenv("LUX_TEST_ACTOR_CALLS_MS"); /* test hooks: t/6158 */
    r->wait_ms = w && atoi(w) > 0 ? atoi(w) : S_WAIT_MS;
    const char *d = getenv("LUX_TEST_ACTOR_CALLS_DROP");
    if (d && *d && !(r->drop = strdup(d))) {
        free(r);
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    if (nm_peer_on(nm, NET_NODE_ACTOR_CALLS, s_on_calls) ||
        nm_peer_on(nm, NET_NODE_ACTOR_CALLS_REP, s_on_calls_rep)) {
        nm_rcalls_destroy(&r);
        return NULL;
    }
    if (!nm_peer_is_head(nm))
        nm->ops.ractor_calls = nm_rcalls_ask;
    return r;
}

void
nm_rcalls_destroy(nm_rcalls_t **self_p)
{
    nm_rcalls_t *r = *self_p;
    if (!r)
        return;
    util_buf_free(&r->buf);
    free(r->drop);
    free(r);
    *self_p = NULL;
}
