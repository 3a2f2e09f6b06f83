/*  exec_xfer - objects between nodes (see exec_xfer.h): the puller's side
    (pulls, their sources, admission, chunks in flight, the check, the
    copy's event), the source's side (OPEN pins the object, CHUNK reads
    it, CLOSE or silence unpins it) and the head's locator (NODE_LOCATE
    answered from the log: exec_xfer_loc.c).

    Messages: NODE_LOCATE and its answer (where an object lives, or why
    nobody holds it: being made, not in the log yet, never to be),
    NODE_PULL (OPEN, CHUNK, CLOSE) and its answer (size and fingerprint, a
    bulk key, a chunk; a refusal's text and, for OPEN, the state the source
    found); their layouts are doc/protocol.md 17.1's. req is the puller's
    token for one attempt at one source: an answer with another is dropped.

    The chunks of an object over 64 KiB go over the bulk path
    (exec_bulk.c) when both ends have it: the answer to OPEN, over CURVE,
    hands the puller a one-time key for the source's bulk port. A bulk
    connection that cannot be made, or is refused before any chunk, falls
    back to CHUNK requests over CURVE (logged once per source node).
*/
#include "exec_xfer.h"
#include "exec_xfer_loc.h"
#include "exec_xfer_who.h"
#include "exec_xfer_src.h"
#include "exec_bulk.h"
#include "exec_peer.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "../db/db_query.h"
#include "../util/util_err.h"
#include "../util/util_fp.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <lz4.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

enum { P_LOCATE = 1, P_OPEN, P_QUEUED, P_MOVING, P_DONE };

typedef struct s_req {
    nm_xfer_done_fn *done;
    void *arg;
    struct s_req *next;
} s_req_t;

typedef struct s_pull {
    lux_ref_t id;
    int prio;
    int state;               /* P_* */
    s_req_t *reqs;
    uint64_t token;          /* of the current attempt */
    xfer_src_t src[XFER_SRC_MAX];
    int nsrc, cur;           /* sources, and the one being tried */
    int fpkind;              /* FP_*: what log_fp is */
    uint8_t log_fp[16];
    uint64_t size;           /* the source's answer to OPEN */
    uint8_t fp[16];
    uint8_t *ibytes;         /* an inline object's bytes */
    bool have_block;         /* off is ours, allocated in the store */
    uint64_t off;
    uint64_t next_off, got;  /* chunks asked from next_off; bytes written */
    int inflight;
    int64_t last_ms;         /* when the source last answered (or was asked) */
    int64_t start_ms;        /* when its chunks began to move */
    int64_t wait_until_ms;   /* P_QUEUED: the end of its wait for room; P_LOCATE: of asking */
    int64_t locate_at_ms;    /* P_LOCATE: when to ask again (0: asked) */
    bool bulk;               /* the source offered its bulk port for this attempt ... */
    exec_bulk_key_t bkey;    /* ... with this key ... */
    int bport;               /* ... on this port */
    exec_bulk_pull_t *bh;    /* the bulk connection moving its chunks */
    int rc;                  /* P_DONE: the outcome ... */
    char *why;               /* ... and its message */
    bool absent;             /* every source tried so far said it does not hold it */
    bool stale;              /* so the head is told its sources are stale: make it */
    bool made;               /* s_locate found no holder, but the log records its making */
    bool unseen;             /* so the head is told nobody was listed for locate_ms */
    bool unrecorded;         /* the head said the log has no event of it yet (logged once) */
    int64_t born_ms;         /* when it was first asked for (LUX_XFER_UNRECORDED_MS) */
    int rounds;              /* times the head was asked so (S_MAKE_ROUNDS at most) */
    int64_t making_since_ms; /* when the head first answered "being made" (0: not yet) */
    int64_t madeup_since_ms; /* when the head first said no event of it will come (0: not) */
    int64_t asked_ms;        /* P_LOCATE: when the head was first asked, unanswered (0) */
    uint8_t asked_flags;     /* what that ask said (XFER_LOCATE_*), for its resends */
    int64_t pending_since_ms; /* when a source first said its task makes it again (0: not) */
    int64_t reopen_at_ms;    /* P_OPEN: when to ask that source again (0: asked) */
    struct s_pull *next;
} s_pull_t;

/* How often a pull asks the head to make an object that its sources
   turned out not to hold, before it fails: each round is a rebuild at the
   head, which nm_rebuild bounds too (NM_REBUILD_UNREAD_MAX). */
#define S_MAKE_ROUNDS 8
/* While the head makes it, the puller asks again this often. */
#define S_MAKING_POLL_MS 200
/* An ask of the head's node with no answer is sent again this often: one
   sent to a head that then died (kill -9 with the ask unread, or read and
   not answered) is lost, and the head started again never saw it. The
   pull fails when none was answered for 3 x LUX_XFER_TIMEOUT_MS (30 s,
   the bound of other waits on a silent head, exec_remote.c). */
#define S_LOCATE_RESEND_MS 2000

static int64_t
s_env(const char *name, int64_t dflt, int64_t lo, int64_t hi)
{
    const char *v = getenv(name);
    int64_t x = v && *v ? strtoll(v, NULL, 10) : dflt;
    return x < lo ? lo : x > hi ? hi : x;
}

/* --- the puller ----------------------------------------------------------------------------- */

static s_pull_t *
s_find(nm_t *nm, const lux_ref_t *id)
{
    for (s_pull_t *p = nm->xfer->pulls; p; p = p->next)
        if (memcmp(p->id.b, id->b, LUX_REF_LEN) == 0 && p->state != P_DONE)
            return p;
    return NULL;
}

static s_pull_t *
s_by_token(nm_t *nm, uint64_t token)
{
    for (s_pull_t *p = nm->xfer->pulls; p; p = p->next)
        if (p->token == token && p->state != P_DONE)
            return p;
    return NULL;
}

static int
s_send_pull(nm_t *nm, s_pull_t *p, int op, uint64_t off, uint32_t len)
{
    util_buf_t *b = &nm->xfer->buf;
    b->len = 0;
    util_buf_put_u64(b, p->token);
    util_buf_put(b, p->id.b, LUX_REF_LEN);
    util_buf_put_u8(b, (uint8_t) op);
    util_buf_put_u64(b, off);
    util_buf_put_u32(b, len);
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, b->data, b->len);
    return nm_peer_send(nm, p->src[p->cur].ep, NET_NODE_PULL, &m);
}

static s_fell_t *
s_fell_find(nm_t *nm, const char *ep)
{
    struct nm_xfer *x = nm->xfer;
    for (int i = 0; i < x->nfell; i++)
        if (strcmp(x->fell[i].ep, ep) == 0)
            return &x->fell[i];
    return NULL;
}

/* OPEN, asking for the bulk path unless this node has none or the
   source's bulk port could not be reached lately. */
static int
s_send_open(nm_t *nm, s_pull_t *p)
{
    s_fell_t *f = s_fell_find(nm, p->src[p->cur].ep);
    uint32_t flags = 0;
    if (nm->xfer->bulk && !(f && util_mono_ms() < f->until_ms))
        flags = XF_BULK | (exec_bulk_cipher_here() == EXEC_BULK_AES256GCM ? XF_AES : 0) |
                (nm->xfer->gmac ? XF_GMAC : 0);
    return s_send_pull(nm, p, OP_OPEN, 0, flags);
}

/* The bulk path of p's attempt is over: its connection and its key go. */
static void
s_bulk_forget(nm_t *nm, s_pull_t *p)
{
    exec_bulk_pull_stop(nm->xfer->bulk, &p->bh);
    exec_bulk_key_wipe(&p->bkey);
    p->bulk = false;
}

/* Give back the block of an attempt that did not finish. */
static void
s_drop_block(nm_t *nm, s_pull_t *p)
{
    s_bulk_forget(nm, p);
    if (p->have_block) {
        nm_store_free(nm, p->off);
        p->have_block = false;
        nm->store_gen++;
    }
    free(p->ibytes);
    p->ibytes = NULL;
}

/* The pull ends with rc (its message in lux_errmsg() when rc): the
   requesters are told on the next tick (never from inside nm_xfer_pull). */
static void
s_finish(nm_t *nm, s_pull_t *p, int rc)
{
    s_drop_block(nm, p);
    if (p->state >= P_OPEN && p->cur < p->nsrc && p->state != P_DONE)
        s_send_pull(nm, p, OP_CLOSE, 0, 0); /* the source unpins (or forgets by itself) */
    p->state = P_DONE;
    p->rc = rc;
    free(p->why);
    p->why = rc ? strdup(lux_errmsg()) : NULL;
    if (rc)
        nm->xfer->n_failed++;
}

/* Try the next source, or end the pull with rc (the message set). */
static void
s_next_source(nm_t *nm, s_pull_t *p, int rc)
{
    char hex[2 * LUX_REF_LEN + 1], why[UTIL_ERRMSG_MAX];
    snprintf(why, sizeof why, "%s", lux_errmsg());
    s_drop_block(nm, p);
    p->reopen_at_ms = 0;
    if (p->cur < p->nsrc)
        s_send_pull(nm, p, OP_CLOSE, 0, 0);
    /* the head's node as a source that died or fell silent (killed -9,
       say): started again, it makes the object again from its lineage
       when no node holds it, so it is asked as for a source that does
       not hold it; its asks are resent while it is down and fail after
       3 x LUX_XFER_TIMEOUT_MS of silence (t/6161) */
    char head[DB_EP_MAX];
    bool head_gone = (rc == LUX_EDEAD || rc == LUX_EIO || rc == LUX_ETIMEDOUT) &&
                     p->cur < p->nsrc && !nm_peer_is_head(nm) &&
                     strcmp(p->src[p->cur].ep, nm_peer_head_ep(nm, head, sizeof head)) == 0;
    if (rc != LUX_ENOTFOUND && !head_gone)
        p->absent = false;
    if (p->cur + 1 >= p->nsrc && p->absent && !nm_peer_is_head(nm) &&
        p->rounds < S_MAKE_ROUNDS) {
        /* every listed node said it does not hold it (evicted, freed), or
           the head's node died under it: the log is behind, or the head
           lost it; the head makes it again from its lineage */
        log_info("object %s: no listed node holds it (%s); asking the head to make it again",
                 xfer_hex(&p->id, hex), why);
        p->rounds++;
        p->stale = true;
        p->state = P_LOCATE;
        p->cur = p->nsrc; /* nothing more to close */
        p->wait_until_ms = util_mono_ms() + nm->xfer->locate_ms;
        p->locate_at_ms = util_mono_ms();
        return;
    }
    if (p->cur + 1 < p->nsrc) {
        log_warn("object %s: its source %s failed (%s); trying %s", xfer_hex(&p->id, hex),
                 p->src[p->cur].ep, why, p->src[p->cur + 1].ep);
        p->cur++;
        p->token = ++nm->xfer->next_token;
        p->state = P_OPEN;
        p->inflight = 0;
        p->got = p->next_off = 0;
        p->last_ms = util_mono_ms();
        if (s_send_open(nm, p))
            s_next_source(nm, p, LUX_EIO);
        return;
    }
    if (p->absent && p->rounds >= S_MAKE_ROUNDS && !nm_peer_is_head(nm))
        util_err(rc, "object %s: the head was asked to make it again %d times, and each time "
                 "no node it then listed held it when asked (gone again before it could be "
                 "pulled); the last, node %s: %s", xfer_hex(&p->id, hex), p->rounds,
                 p->cur < p->nsrc ? p->src[p->cur].ep : "?", why);
    else
        util_err(rc, "object %s: pulling it from node %s failed: %s", xfer_hex(&p->id, hex),
                 p->cur < p->nsrc ? p->src[p->cur].ep : "?", why);
    s_finish(nm, p, rc);
}

/* The only source left said the object is pending there, its task running
   again (a rebuild, a retry; its words in lux_errmsg()): that source is
   asked again every S_MAKING_POLL_MS, and the head is not asked to make it
   (it would list that node again, or make what is being made: a round
   spent each time, 8 in 2 s while the task ran, and the pull failed
   "(evicted)": t/6091 seed 93 at load 20; t/6162). Bounded: making_ms in
   all from the first such answer, then p fails saying so. */
static void
s_wait_pending(nm_t *nm, s_pull_t *p)
{
    char hex[2 * LUX_REF_LEN + 1], why[UTIL_ERRMSG_MAX];
    int64_t now = util_mono_ms();
    snprintf(why, sizeof why, "%s", lux_errmsg());
    s_drop_block(nm, p);
    if (!p->pending_since_ms) {
        p->pending_since_ms = now;
        log_info("object %s: its source %s is making it again (%s); waiting for it there",
                 xfer_hex(&p->id, hex), p->src[p->cur].ep, why);
    }
    if (now - p->pending_since_ms >= nm->xfer->making_ms) {
        util_err(LUX_ETIMEDOUT, "object %s: node %s has been making it again for %lld ms "
                 "(LUX_XFER_MAKING_MS %lld) and it is not ready yet: %s", xfer_hex(&p->id, hex),
                 p->src[p->cur].ep, (long long) (now - p->pending_since_ms),
                 (long long) nm->xfer->making_ms, why);
        s_finish(nm, p, LUX_ETIMEDOUT);
        return;
    }
    p->state = P_OPEN;
    p->reopen_at_ms = now + S_MAKING_POLL_MS;
    p->last_ms = now;
}

static void
s_start_sources(nm_t *nm, s_pull_t *p)
{
    p->cur = 0;
    p->absent = true;
    p->reopen_at_ms = 0;
    p->token = ++nm->xfer->next_token;
    p->state = P_OPEN;
    p->last_ms = p->start_ms = util_mono_ms();
    if (s_send_open(nm, p))
        s_next_source(nm, p, LUX_EIO);
}

/* Where the log says p lives, into p (the head's own pulls): as
   nm_xfer_locate. */
static int
s_locate(nm_t *nm, s_pull_t *p)
{
    xfer_loc_t l = {.self = false};
    int rc = nm_xfer_locate(nm, &p->id, &l);
    p->nsrc = rc ? 0 : l.nsrc;
    memcpy(p->src, l.src, sizeof p->src);
    p->fpkind = l.fpkind;
    memcpy(p->log_fp, l.log_fp, 16);
    p->made = l.made;
    return rc;
}

/* The log has no event of p at all (the head said so, or found so on
   the head): a fresh put whose object_put waits in its node's log queue
   until its bytes are recorded in blobs/ (exec_node_blob.c), or a task's
   events on their way. p is asked for again, up to unrecorded_ms since it
   was first asked for: true; else false with the message (p fails). */
static bool
s_unrecorded(nm_t *nm, s_pull_t *p)
{
    struct nm_xfer *x = nm->xfer;
    char hex[2 * LUX_REF_LEN + 1];
    int64_t now = util_mono_ms(), waited = now - p->born_ms;
    if (waited >= x->unrecorded_ms) {
        util_err(LUX_ENOTFOUND, "object %s: the log has no record of it %lld ms after it was "
                 "first asked for (LUX_XFER_UNRECORDED_MS %lld): it was never made, or the "
                 "event of its making has not reached the log", xfer_hex(&p->id, hex),
                 (long long) waited, (long long) x->unrecorded_ms);
        return false;
    }
    if (!p->unrecorded)
        log_info("object %s: the log has no record of it yet (a put's event waits until its "
                 "bytes are recorded; a task's may be on its way): asking again for up to "
                 "%lld ms more", xfer_hex(&p->id, hex), (long long) (x->unrecorded_ms - waited));
    p->unrecorded = true;
    p->wait_until_ms = now + x->locate_ms;
    p->locate_at_ms = now + S_MAKING_POLL_MS;
    return true;
}

/* The log has no event of p and none will come (why[len]: nobody it
   knows made it, or its maker has ended; exec_xfer_who.c). Asked once
   more after XFER_MADEUP_MS, in case what the head read then was a
   moment behind (one node's events land on several shards): true; when
   it still says so, false with the message (p fails). */
static bool
s_madeup(nm_t *nm, s_pull_t *p, const char *why, size_t len)
{
    char hex[2 * LUX_REF_LEN + 1];
    int64_t now = util_mono_ms();
    if (!p->madeup_since_ms)
        p->madeup_since_ms = now;
    if (now - p->madeup_since_ms >= XFER_MADEUP_MS) {
        util_err(LUX_ENOTFOUND, "object %s: %.*s", xfer_hex(&p->id, hex), (int) len, why);
        return false;
    }
    p->wait_until_ms = now + nm->xfer->locate_ms;
    p->locate_at_ms = p->madeup_since_ms + XFER_MADEUP_MS;
    return true;
}

/* Ask the head where p lives (or look, on the head). */
static void
s_ask_location(nm_t *nm, s_pull_t *p)
{
    char hex[2 * LUX_REF_LEN + 1];
    p->locate_at_ms = 0;
    p->token = ++nm->xfer->next_token;
    p->last_ms = util_mono_ms();
    if (nm_peer_is_head(nm)) {
        char why[UTIL_ERRMSG_MAX];
        int rc = s_locate(nm, p);
        bool madeup = rc == LUX_ENOTFOUND && !p->made && !nm_xfer_recorded(nm, &p->id) &&
                      nm_xfer_madeup(nm, &p->id, why, sizeof why);
        if (!madeup)
            p->madeup_since_ms = 0;
        if (rc == 0) {
            s_start_sources(nm, p);
        } else if (madeup) {
            if (!s_madeup(nm, p, why, strlen(why)))
                s_finish(nm, p, LUX_ENOTFOUND);
        } else if (rc == LUX_ENOTFOUND && !p->made && util_mono_ms() < p->wait_until_ms) {
            p->locate_at_ms = util_mono_ms() + 100; /* its event may be on its way */
        } else if (rc == LUX_ENOTFOUND && !p->made && !nm_xfer_recorded(nm, &p->id)) {
            if (!s_unrecorded(nm, p)) /* nothing to rebuild it from: waited for */
                s_finish(nm, p, LUX_ENOTFOUND);
        } else if (rc == LUX_ENOTFOUND && nm_log_lineage_missing(nm, &p->id)) {
            if (!s_unrecorded(nm, p)) /* its lineage on its way: exec_xfer_loc.c s_answer */
                s_finish(nm, p, LUX_ENOTFOUND);
        } else {
            /* made, and no live node holds it: the caller rebuilds it
               here (exec_node_far.c), without waiting for nothing */
            if (rc == LUX_ENOTFOUND)
                util_err(rc, "object %s: no live node holds it, as far as the log says",
                         xfer_hex(&p->id, hex));
            s_finish(nm, p, rc);
        }
        return;
    }
    char ep[DB_EP_MAX];
    util_buf_t *b = &nm->xfer->buf;
    b->len = 0;
    util_buf_put_u64(b, p->token);
    util_buf_put(b, p->id.b, LUX_REF_LEN);
    p->asked_flags = (p->stale ? XFER_LOCATE_STALE : 0) | (p->unseen ? XFER_LOCATE_UNSEEN : 0);
    util_buf_put_u8(b, p->asked_flags);
    p->stale = p->unseen = false;
    if (!p->asked_ms)
        p->asked_ms = p->last_ms;
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, b->data, b->len);
    if (nm_peer_send(nm, nm_peer_head_ep(nm, ep, sizeof ep), NET_NODE_LOCATE, &m))
        s_finish(nm, p, LUX_EIO);
}

static void
s_on_locate_rep(nm_t *nm, nm_peer_msg_t *m)
{
    util_rd_t r;
    if (!nm_peer_body(nm, m, &r))
        return;
    uint64_t token = util_rd_u64(&r);
    int rc = (int) util_rd_u32(&r);
    util_rd_take(&r, LUX_REF_LEN);
    uint8_t fpkind = util_rd_u8(&r);
    const uint8_t *fp = util_rd_take(&r, 16);
    uint8_t n = util_rd_u8(&r);
    s_pull_t *p = s_by_token(nm, token);
    if (r.bad || !fp || !p || p->state != P_LOCATE)
        return; /* stale, or garbage */
    p->asked_ms = 0; /* answered */
    char hex[2 * LUX_REF_LEN + 1];
    p->nsrc = 0;
    for (uint8_t i = 0; i < n && p->nsrc < XFER_SRC_MAX; i++) {
        const uint8_t *node = util_rd_take(&r, 16);
        size_t len;
        const char *ep = util_rd_str(&r, &len);
        if (r.bad || !node || !ep || len >= DB_EP_MAX)
            break;
        memcpy(p->src[p->nsrc].node.b, node, 16);
        snprintf(p->src[p->nsrc].ep, DB_EP_MAX, "%.*s", (int) len, ep);
        p->nsrc++;
    }
    p->fpkind = fpkind <= FP_OF_ONE ? fpkind : FP_NONE;
    memcpy(p->log_fp, fp, 16);
    /* ENOTFOUND: whether the head is making it, or why it cannot */
    size_t len = 0;
    const char *text = rc && rc != LUX_ENOTFOUND ? util_rd_str(&r, &len) : NULL;
    uint8_t making = rc == LUX_ENOTFOUND && util_rd_left(&r) > 0 ? util_rd_u8(&r) : 0;
    if (rc == LUX_ENOTFOUND && util_rd_left(&r) > 0 && !r.bad)
        text = util_rd_str(&r, &len);
    if (r.bad || (text && len == 0))
        text = NULL;
    if (making != XFER_MADEUP)
        p->madeup_since_ms = 0;
    if (rc == 0 && p->nsrc) {
        s_start_sources(nm, p);
    } else if (making == XFER_MADEUP) {
        static const char none[] = "the log has no event of it, and none will come";
        if (!s_madeup(nm, p, text ? text : none, text ? len : strlen(none)))
            s_finish(nm, p, LUX_ENOTFOUND);
    } else if (making == XFER_UNRECORDED) {
        if (p->rounds > 0)
            p->rounds--; /* the head made nothing: not one of its rounds */
        if (!s_unrecorded(nm, p))
            s_finish(nm, p, LUX_ENOTFOUND);
    } else if (making && p->making_since_ms &&
               util_mono_ms() - p->making_since_ms >= nm->xfer->making_ms) {
        /* a rebuild that never ends, or whose output keeps going (evicted
           again before the pull came) before the log lists it: the head
           would make it again and again, and the puller ask for ever */
        util_err(LUX_ETIMEDOUT, "object %s: the head has been making it again for %lld ms "
                 "(LUX_XFER_MAKING_MS %lld) and no node holds it yet: its rebuild did not "
                 "finish, or its output did not stay until pulled",
                 xfer_hex(&p->id, hex), (long long) (util_mono_ms() - p->making_since_ms),
                 (long long) nm->xfer->making_ms);
        s_finish(nm, p, LUX_ETIMEDOUT);
    } else if (making) {
        /* rebuilt at the head from its lineage: asked again until it is
           there (or the head says why not, or falls silent, or it takes
           longer than making_ms in all since the head first said so) */
        if (!p->making_since_ms)
            p->making_since_ms = util_mono_ms();
        p->wait_until_ms = util_mono_ms() + nm->xfer->locate_ms;
        p->locate_at_ms = util_mono_ms() + S_MAKING_POLL_MS;
    } else if ((rc == 0 || rc == LUX_ENOTFOUND) && !text && util_mono_ms() < p->wait_until_ms) {
        p->locate_at_ms = util_mono_ms() + 100; /* its event may be on its way */
    } else if ((rc == 0 || rc == LUX_ENOTFOUND) && !text && p->rounds < S_MAKE_ROUNDS) {
        /* no live node holds it, for longer than its event could take:
           the head lists who holds it now, or makes it again from its
           lineage (or says why not, or that the log has nothing of it) */
        p->rounds++;
        p->unseen = true;
        p->wait_until_ms = util_mono_ms() + nm->xfer->locate_ms;
        p->locate_at_ms = util_mono_ms();
    } else {
        if (text && rc == LUX_ENOTFOUND)
            util_err(rc, "object %s: no live node holds it, and the head cannot make it "
                     "again: %.*s", xfer_hex(&p->id, hex), (int) len, text);
        else if (text)
            util_err(rc, "object %s: the head could not say where it lives: %.*s",
                     xfer_hex(&p->id, hex), (int) len, text);
        else
            util_err(LUX_ENOTFOUND, "object %s: no live node holds it, as far as the log says",
                     xfer_hex(&p->id, hex));
        s_finish(nm, p, text ? rc : LUX_ENOTFOUND);
    }
}

static void s_pump(nm_t *nm, s_pull_t *p);

/* p's bulk connection could not be made or was refused before any
   chunk (the message in lux_errmsg()): its chunks come over CURVE
   instead. Logged once per source node; one that could not be reached
   (rc LUX_EIO) is not offered the bulk path again for S_FELL_MS. */
static void
s_fall_back(nm_t *nm, s_pull_t *p, int rc)
{
    struct nm_xfer *x = nm->xfer;
    const char *ep = p->src[p->cur].ep;
    s_fell_t *f = s_fell_find(nm, ep);
    if (!f) {
        log_warn("node %s: its bulk port was not used (%s); pulling over its CURVE endpoint "
                 "(logged once per node)", ep, lux_errmsg());
        if (x->nfell == S_FELL_MAX)
            x->nfell--; /* forget the last remembered */
        f = &x->fell[x->nfell++];
        snprintf(f->ep, sizeof f->ep, "%s", ep);
        f->until_ms = 0;
    }
    if (rc == LUX_EIO || rc == LUX_ETIMEDOUT)
        f->until_ms = util_mono_ms() + S_FELL_MS;
    s_bulk_forget(nm, p);
    p->got = p->next_off = 0;
    p->inflight = 0;
    p->last_ms = util_mono_ms();
    s_pump(nm, p);
}

/* Start p's bulk connection: 0, or a code (the caller falls back). */
static int
s_bulk_start(nm_t *nm, s_pull_t *p)
{
    struct nm_xfer *x = nm->xfer;
    char host[DB_EP_MAX];
    const char *h = strncmp(p->src[p->cur].ep, "tcp://", 6) == 0 ? p->src[p->cur].ep + 6 : "";
    snprintf(host, sizeof host, "%s", h);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    if (host[0] == '[') { /* an IPv6 address */
        memmove(host, host + 1, strlen(host));
        char *end = strchr(host, ']');
        if (end)
            *end = '\0';
    }
    p->bh = exec_bulk_pull_start(x->bulk, host, p->bport, &p->bkey, p->id.b,
                                 exec_arena_base(nm->arena) + p->off, p->size, x->chunk,
                                 x->window, p);
    return p->bh ? 0 : LUX_EIO;
}

/* Ask for chunks until the window is full (the bulk connection's source
   streams them by itself). */
static void
s_pump(nm_t *nm, s_pull_t *p)
{
    struct nm_xfer *x = nm->xfer;
    if (p->bulk) {
        int rc;
        if (!p->bh && (rc = s_bulk_start(nm, p)))
            s_fall_back(nm, p, rc);
        return;
    }
    while (p->state == P_MOVING && p->inflight < x->window && p->next_off < p->size) {
        uint64_t len = p->size - p->next_off < x->chunk ? p->size - p->next_off : x->chunk;
        if (s_send_pull(nm, p, OP_CHUNK, p->next_off, (uint32_t) len)) {
            s_next_source(nm, p, LUX_EIO);
            return;
        }
        p->next_off += len;
        p->inflight++;
    }
}

/* The bytes are all here: check them, make the object, log the copy.
   done: their fingerprint, made as they came (the bulk path), or NULL:
   they are hashed here. */
static void
s_complete(nm_t *nm, s_pull_t *p, const uint8_t *done)
{
    char hex[2 * LUX_REF_LEN + 1];
    uint8_t fp[16], one[16];
    const uint8_t *bytes = p->ibytes ? p->ibytes : exec_arena_base(nm->arena) + p->off;
    int64_t t0 = util_mono_ns();
    if (done)
        memcpy(fp, done, 16);
    else
        util_fp(fp, bytes, p->size);
    int64_t fp_ns = util_mono_ns() - t0;
    util_blake(one, 16, fp, 16);
    if (memcmp(fp, p->fp, 16) != 0 ||
        (p->fpkind == FP_EXACT && memcmp(fp, p->log_fp, 16) != 0) ||
        (p->fpkind == FP_OF_ONE && memcmp(one, p->log_fp, 16) != 0)) {
        util_err(LUX_ECORRUPT, "the %llu bytes that came are not the object%s (their "
                 "fingerprint differs)", (unsigned long long) p->size,
                 memcmp(fp, p->fp, 16) ? " the source announced" : " the log records");
        log_error("object %s from %s: %s", xfer_hex(&p->id, hex), p->src[p->cur].ep,
                  lux_errmsg());
        s_next_source(nm, p, LUX_ECORRUPT);
        return;
    }
    nm_obj_t *o = nm_obj_get(nm, &p->id);
    if (o && (o->state == OBJ_READY || o->state == OBJ_ERROR)) {
        s_finish(nm, p, 0); /* it came here meanwhile (made again by a rebuild) */
        return;
    }
    if (!o && !(o = nm_obj_new(nm, &p->id))) {
        s_finish(nm, p, util_err(LUX_ENOMEM, "out of memory"));
        return;
    }
    o->owned = false; /* a copy: nobody's; it goes when its readers let it go */
    o->owner = NULL;
    o->copy = true;   /* and its going is logged (nm_obj_delete) */
    o->is_put = false; /* dropped, not spilled, when room is needed: it can be pulled again */
    if (p->ibytes) {
        nm_obj_set_inline(nm, o, p->ibytes, p->size);
    } else {
        nm_obj_set_arena(nm, o, p->off, p->size);
        p->have_block = false; /* the object's now */
    }
    memcpy(o->fp, fp, 16);
    nm_log_copied(nm, o, &p->src[p->cur].node);
    int64_t ms = util_mono_ms() - p->start_ms;
    log_info("pulled object %s (%llu bytes) from %s in %lld ms (its check %.1f ms%s), %s%s%s%s",
             xfer_hex(&p->id, hex), (unsigned long long) p->size, p->src[p->cur].ep,
             (long long) ms, (double) fp_ns / 1e6, done ? ", hashed as it came" : "",
             p->ibytes ? "with its OPEN"
             : p->bulk ? "over the bulk path" : "over CURVE", p->bulk && !p->ibytes ? " (" : "",
             p->bulk && !p->ibytes ? exec_bulk_cipher_name(p->bkey.cipher) : "",
             p->bulk && !p->ibytes ? ")" : "");
    nm->xfer->n_done++;
    nm->xfer->bytes += p->size;
    s_send_pull(nm, p, OP_CLOSE, 0, 0);
    p->cur = p->nsrc; /* nothing more to close */
    s_finish(nm, p, 0);
}

/* Room for p in the store: 0 (the block is p's), LUX_EFULL (not now:
   *now false), or an error that ends the pull now (*now true). */
static int
s_admit_one(nm_t *nm, s_pull_t *p, bool *now)
{
    *now = false;
    if (p->size <= EXEC_INLINE_MAX)
        return 0; /* its bytes came with the OPEN */
    int rc = nm_store_try(nm, p->size, &p->off);
    if (rc)
        return rc;
    p->have_block = true;
    /* the block's pages before any chunk is written there: the store
       file is sparse, and a write into a page /dev/shm has no room for
       kills this process with SIGBUS (or fails the bulk receive with
       EFAULT); a store that has the block but not the pages fails the
       pull, naming the object and the room */
    struct statvfs vfs; /* the room before: a failed prefault keeps what it took */
    unsigned long long room =
        statvfs("/dev/shm", &vfs) == 0 ? (unsigned long long) vfs.f_bavail * vfs.f_frsize : 0;
    if ((rc = exec_arena_ready(nm->arena, p->off, (size_t) p->size))) {
        char hex[2 * LUX_REF_LEN + 1], why[UTIL_ERRMSG_MAX];
        snprintf(why, sizeof why, "%s", lux_errmsg());
        rc = util_err(rc, "object %s: no room for its %llu bytes: the store has a block for "
                      "them but not the pages: /dev/shm had %llu bytes free (%s)",
                      xfer_hex(&p->id, hex), (unsigned long long) p->size, room, why);
        log_warn("%s", lux_errmsg());
        s_drop_block(nm, p);
        *now = true;
        return rc;
    }
    return 0;
}

/* Start the queued pulls that fit, by priority, while fewer than
   XFER_ACTIVE_MAX move. */
static void
s_admit(nm_t *nm)
{
    struct nm_xfer *x = nm->xfer;
    int moving = 0;
    for (s_pull_t *p = x->pulls; p; p = p->next)
        moving += p->state == P_MOVING;
    for (int prio = NM_XFER_GET; prio <= NM_XFER_ARG && moving < XFER_ACTIVE_MAX; prio++)
        for (s_pull_t *p = x->pulls; p && moving < XFER_ACTIVE_MAX; p = p->next) {
            if (p->state != P_QUEUED || p->prio != prio)
                continue;
            bool now;
            int rc = s_admit_one(nm, p, &now);
            if (rc == LUX_EFULL && !now) {
                if (util_mono_ms() < p->wait_until_ms)
                    return; /* a lower priority does not pass it */
                char hex[2 * LUX_REF_LEN + 1];
                util_err(LUX_EFULL, "object %s: waited %lld ms for room for its %llu bytes "
                         "in this node's store", xfer_hex(&p->id, hex),
                         (long long) nm->store_wait_ms, (unsigned long long) p->size);
                s_finish(nm, p, LUX_EFULL);
                continue;
            }
            if (rc) {
                s_finish(nm, p, rc);
                continue;
            }
            if (p->size <= EXEC_INLINE_MAX) {
                s_complete(nm, p, NULL);
                continue;
            }
            p->state = P_MOVING;
            p->last_ms = p->start_ms = util_mono_ms();
            moving++;
            char hex[2 * LUX_REF_LEN + 1];
            log_info("pulling object %s (%llu bytes) from %s", xfer_hex(&p->id, hex),
                     (unsigned long long) p->size, p->src[p->cur].ep);
            s_pump(nm, p);
        }
}

static void
nm_xfer_src_on_pull_rep(nm_t *nm, nm_peer_msg_t *m)
{
    struct nm_xfer *x = nm->xfer;
    util_rd_t r;
    if (!nm_peer_body(nm, m, &r))
        return;
    zframe_t *data = zmsg_next(m->msg);
    uint64_t token = util_rd_u64(&r);
    int rc = (int) util_rd_u32(&r);
    util_rd_take(&r, LUX_REF_LEN);
    uint8_t op = util_rd_u8(&r);
    s_pull_t *p = s_by_token(nm, token);
    if (r.bad || !p)
        return; /* stale: an attempt given up, or garbage */
    p->last_ms = util_mono_ms();
    if (rc) {
        size_t len = 0;
        const char *text = util_rd_str(&r, &len);
        uint8_t gone = util_rd_left(&r) >= 1 ? util_rd_u8(&r) : 0; /* XF_GONE_* */
        util_err(rc, "%.*s", (int) len, text ? text : "it refused");
        if (op == OP_OPEN && p->state == P_OPEN && rc == LUX_ENOTFOUND && !r.bad &&
            gone == XF_GONE_PENDING && p->cur + 1 >= p->nsrc)
            s_wait_pending(nm, p);
        else
            s_next_source(nm, p, rc);
        return;
    }
    if (op == OP_OPEN && p->state == P_OPEN) {
        p->size = util_rd_u64(&r);
        const uint8_t *fp = util_rd_take(&r, 16);
        if (r.bad || !fp || (p->size <= EXEC_INLINE_MAX && (!data || zframe_size(data) != p->size))) {
            util_err(LUX_EPROTO, "its answer to OPEN is malformed");
            s_next_source(nm, p, LUX_EPROTO);
            return;
        }
        memcpy(p->fp, fp, 16);
        s_bulk_forget(nm, p);
        if (util_rd_left(&r) >= 1 + 1 + 2 + 8 + EXEC_BULK_KEY && util_rd_u8(&r) == 1) {
            int cipher = util_rd_u8(&r);
            int port = util_rd_u16(&r);
            uint64_t xid = util_rd_u64(&r);
            uint8_t *key = (uint8_t *) util_rd_take(&r, EXEC_BULK_KEY);
            if (key && nm->xfer->bulk && port > 0 &&
                (cipher == EXEC_BULK_CHACHA20 || (cipher == EXEC_BULK_GMAC && nm->xfer->gmac) ||
                 (cipher == EXEC_BULK_AES256GCM &&
                  exec_bulk_cipher_here() == EXEC_BULK_AES256GCM))) {
                p->bulk = true;
                p->bport = port;
                p->bkey.cipher = cipher;
                p->bkey.xid = xid;
                memcpy(p->bkey.key, key, EXEC_BULK_KEY);
            }
            if (key)
                sodium_memzero(key, EXEC_BULK_KEY); /* the message's copy */
        }
        if (p->size <= EXEC_INLINE_MAX) {
            free(p->ibytes);
            if (!(p->ibytes = malloc(p->size ? p->size : 1))) {
                s_finish(nm, p, util_err(LUX_ENOMEM, "out of memory"));
                return;
            }
            memcpy(p->ibytes, zframe_data(data), p->size);
        }
        p->state = P_QUEUED;
        p->wait_until_ms = util_mono_ms() + nm->store_wait_ms;
        s_admit(nm);
        if (p->state == P_QUEUED) { /* why a get is slow; a test's cue */
            char hex[2 * LUX_REF_LEN + 1];
            log_info("object %s (%llu bytes) waits for room, priority %s", xfer_hex(&p->id, hex),
                     (unsigned long long) p->size, (const char *[]) {"get", "wait", "arg"}[p->prio]);
        }
        return;
    }
    if (op != OP_CHUNK || p->state != P_MOVING)
        return;
    uint64_t off = util_rd_u64(&r);
    uint32_t len = util_rd_u32(&r);
    uint8_t codec = util_rd_u8(&r);
    p->inflight--;
    if (r.bad || !data || off + len > p->size || len == 0) {
        util_err(LUX_EPROTO, "a chunk that does not fit the object");
        s_next_source(nm, p, LUX_EPROTO);
        return;
    }
    uint8_t *dst = exec_arena_base(nm->arena) + p->off + off;
    if (codec == 1) {
        int n = LZ4_decompress_safe((const char *) zframe_data(data), (char *) dst,
                                    (int) zframe_size(data), (int) len);
        if (n != (int) len) {
            util_err(LUX_ECORRUPT, "a compressed chunk at %llu does not decompress",
                     (unsigned long long) off);
            s_next_source(nm, p, LUX_ECORRUPT);
            return;
        }
        x->n_lz4++;
    } else if (codec == 0 && zframe_size(data) == len) {
        memcpy(dst, zframe_data(data), len);
    } else {
        util_err(LUX_EPROTO, "a chunk of a codec it does not know (%u)", codec);
        s_next_source(nm, p, LUX_EPROTO);
        return;
    }
    p->got += len;
    if (p->got == p->size)
        s_complete(nm, p, NULL);
    else
        s_pump(nm, p);
}

/* --- the bulk path's callbacks (exec_bulk.h) ------------------------------------------------ */

/* Bytes came: the source lives, and once a chunk is in, a stall is the
   source's failure, not a bulk port to fall back from. */
static void
s_bulk_moved(void *arg, void *who, uint64_t got)
{
    (void) arg;
    s_pull_t *p = who;
    p->last_ms = util_mono_ms();
    p->got = got;
}

static void
s_bulk_ended(void *arg, void *who, int rc, bool fallback, const uint8_t *fp)
{
    nm_t *nm = arg;
    s_pull_t *p = who;
    p->bh = NULL; /* gone already */
    if (rc == 0) {
        p->got = p->size;
        s_complete(nm, p, fp);
    } else if (fallback) {
        s_fall_back(nm, p, rc);
    } else {
        s_next_source(nm, p, rc);
    }
}

/* --- the node's side ------------------------------------------------------------------------- */

int
nm_xfer_fd(nm_t *nm)
{
    return nm->xfer ? exec_bulk_fd(nm->xfer->bulk) : -1;
}

void
nm_xfer_fired(nm_t *nm)
{
    if (nm->xfer && nm->xfer->bulk)
        exec_bulk_fired(nm->xfer->bulk);
}

nm_xfer_t *
nm_xfer_new(nm_t *nm)
{
    nm_xfer_t *x = calloc(1, sizeof *x);
    if (!x) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    x->nm = nm;
    util_buf_init(&x->buf);
    x->chunk = (uint32_t) s_env("LUX_XFER_CHUNK", S_CHUNK_DEFAULT, 4096, 64 << 20);
    x->window = (int) s_env("LUX_XFER_WINDOW", S_WINDOW_DEFAULT, 1, 256);
    x->timeout_ms = s_env("LUX_XFER_TIMEOUT_MS", S_TIMEOUT_DEFAULT, 100, 3600000);
    x->open_idle_ms = s_env("LUX_XFER_OPEN_IDLE_MS", S_OPEN_IDLE_MS, 100, 86400000);
    x->locate_ms = s_env("LUX_XFER_LOCATE_MS", S_LOCATE_MS, 100, 3600000);
    x->making_ms = s_env("LUX_XFER_MAKING_MS", S_MAKING_MS, 100, 86400000);
    x->unrecorded_ms = s_env("LUX_XFER_UNRECORDED_MS", S_UNRECORDED_MS, 100, 86400000);
    const char *drop = getenv("LUX_TEST_PULL_DROP");
    x->drop_file = drop && *drop ? strdup(drop) : NULL;
    const char *remake = getenv("LUX_TEST_PULL_REMAKE");
    x->remake_file = remake && *remake ? strdup(remake) : NULL;
    const char *evict = getenv("LUX_TEST_LOCATE_EVICT");
    x->evict_file = evict && *evict ? strdup(evict) : NULL;
    if (nm_peer_on(nm, NET_NODE_LOCATE, nm_xfer_on_locate) ||
        nm_peer_on(nm, NET_NODE_LOCATE_REP, s_on_locate_rep) ||
        nm_peer_on(nm, NET_NODE_PULL, nm_xfer_src_on_pull) ||
        nm_peer_on(nm, NET_NODE_PULL_REP, nm_xfer_src_on_pull_rep)) {
        nm_xfer_destroy(&x);
        return NULL;
    }
    /* the bulk port: on the address the node's endpoint binds (the
       head's listen host, a node's own address), never elsewhere */
    const char *bc = getenv("LUX_BULK_CIPHER");
    if (bc && *bc && strcmp(bc, "gmac") != 0 && strcmp(bc, "aead") != 0) {
        util_err(LUX_EINVAL, "LUX_BULK_CIPHER=%s: not a bulk cipher setting (\"aead\", the "
                 "default: objects' bytes sealed; \"gmac\": integrity only, where both ends "
                 "allow it)", bc);
        nm_xfer_destroy(&x);
        return NULL;
    }
    if ((x->gmac = bc && strcmp(bc, "gmac") == 0) && !exec_bulk_gmac_here()) {
        log_warn("LUX_BULK_CIPHER=gmac: this node cannot (it needs AES-NI and lux built with "
                 "OpenSSL's libcrypto); its bulk transfers stay sealed");
        x->gmac = false;
    }
    if (x->gmac)
        log_info("LUX_BULK_CIPHER=gmac: integrity only where the puller allows it too; "
                 "GMAC's GHASH by %s", exec_bulk_gmac_how());
    if (s_env("LUX_XFER_BULK", 1, 0, 1)) {
        static const exec_bulk_fns_t fns = {nm_xfer_src_bulk_serve, nm_xfer_src_bulk_sent,
                                            nm_xfer_src_bulk_over, s_bulk_moved,
                                            s_bulk_ended};
        const char *host = nm_peer_is_head(nm) ? nm->cluster.listen + 6 : nm->address;
        if (!(x->bulk = exec_bulk_new(host, nm->cluster.master_port + EXEC_BULK_PORT_OFFSET,
                                      nm->address, &fns, nm))) {
            util_err_ctx(LUX_EIO, "the bulk port");
            nm_xfer_destroy(&x);
            return NULL;
        }
    }
    return x;
}

static void
s_pull_free(s_pull_t *p)
{
    while (p->reqs) {
        s_req_t *q = p->reqs;
        p->reqs = q->next;
        free(q);
    }
    exec_bulk_key_wipe(&p->bkey);
    free(p->ibytes);
    free(p->why);
    free(p);
}

void
nm_xfer_destroy(nm_xfer_t **self_p)
{
    nm_xfer_t *x = *self_p;
    if (!x)
        return;
    nm_t *nm = x->nm;
    while (x->pulls) {
        s_pull_t *p = x->pulls;
        x->pulls = p->next;
        s_drop_block(nm, p);
        s_pull_free(p); /* its requesters go with the node */
    }
    while (x->opens)
        nm_xfer_src_close(nm, &x->opens);
    exec_bulk_destroy(&x->bulk);
    db_query_close(&x->q);
    util_buf_free(&x->buf);
    free(x->zbuf);
    free(x->drop_file);
    free(x->remake_file);
    free(x->evict_file);
    free(x);
    *self_p = NULL;
}

bool
nm_xfer_on(nm_t *nm)
{
    return nm->xfer != NULL;
}

int
nm_xfer_pull(nm_t *nm, const lux_ref_t *id, int prio, nm_xfer_done_fn *done, void *arg)
{
    struct nm_xfer *x = nm->xfer;
    if (!x)
        return util_err(LUX_EINVAL, "this node has no tcp endpoint: objects do not move "
                        "between the nodes of an ipc cluster");
    s_req_t *q = calloc(1, sizeof *q);
    if (!q)
        return util_err(LUX_ENOMEM, "out of memory");
    q->done = done;
    q->arg = arg;
    s_pull_t *p = s_find(nm, id);
    if (p) { /* already on its way: wait for that transfer */
        q->next = p->reqs;
        p->reqs = q;
        if (prio < p->prio)
            p->prio = prio;
        return 0;
    }
    if (!(p = calloc(1, sizeof *p))) {
        free(q);
        return util_err(LUX_ENOMEM, "out of memory");
    }
    p->id = *id;
    p->prio = prio;
    p->reqs = q;
    p->state = P_LOCATE;
    p->born_ms = util_mono_ms();
    p->wait_until_ms = util_mono_ms() + nm->xfer->locate_ms;
    p->locate_at_ms = util_mono_ms(); /* asked on the next tick: done never runs in here */
    p->next = x->pulls;
    x->pulls = p;
    return 0;
}

void
nm_xfer_forget(nm_t *nm, nm_xfer_done_fn *done, void *arg)
{
    if (!nm->xfer)
        return;
    for (s_pull_t *p = nm->xfer->pulls; p; p = p->next)
        for (s_req_t **q = &p->reqs; *q;) {
            if ((*q)->done == done && (!arg || (*q)->arg == arg)) {
                s_req_t *d = *q;
                *q = d->next;
                free(d);
            } else {
                q = &(*q)->next;
            }
        }
}

/* Test hook LUX_TEST_PULL_DROP=FILE: the copy a pull brought goes (as
   one let go by the only task that held it, killed or failed at once)
   before its requesters are told, once, when FILE exists (it is removed;
   t/6154). */
static void
s_test_drop(nm_t *nm, s_pull_t *p)
{
    const char *f = nm->xfer->drop_file;
    struct stat st;
    if (p->rc || !f || stat(f, &st) != 0 || unlink(f) != 0)
        return;
    nm_obj_t *o = nm_obj_get(nm, &p->id);
    char hex[2 * LUX_REF_LEN + 1];
    if (o && o->copy && !o->pins && !o->uses) {
        log_warn("object %s: its pulled copy dropped before its requesters are told "
                 "(LUX_TEST_PULL_DROP)", xfer_hex(&p->id, hex));
        nm_obj_delete(nm, o);
    }
}

void
nm_xfer_tick(nm_t *nm)
{
    struct nm_xfer *x = nm->xfer;
    if (!x)
        return;
    int64_t now = util_mono_ms();
    char hex[2 * LUX_REF_LEN + 1];
    for (s_pull_t *p = x->pulls; p; p = p->next) {
        if (p->state == P_LOCATE && p->locate_at_ms && now >= p->locate_at_ms)
            s_ask_location(nm, p);
        else if (p->state == P_LOCATE && !p->locate_at_ms && !p->asked_ms &&
                 now - p->last_ms > x->timeout_ms) /* not an ask of another node's */
            s_finish(nm, p, util_err(LUX_ETIMEDOUT, "object %s: the head's node did not say "
                                     "where it lives within %lld ms", xfer_hex(&p->id, hex),
                                     (long long) x->timeout_ms));
        else if (p->state == P_LOCATE && !p->locate_at_ms && p->asked_ms &&
                 now - p->asked_ms > 3 * x->timeout_ms)
            s_finish(nm, p, util_err(LUX_ETIMEDOUT, "object %s: the head's node did not say "
                                     "where it lives within %lld ms (asked every %d ms)",
                                     xfer_hex(&p->id, hex), (long long) (now - p->asked_ms),
                                     S_LOCATE_RESEND_MS));
        else if (p->state == P_LOCATE && !p->locate_at_ms && p->asked_ms &&
                 now - p->last_ms > S_LOCATE_RESEND_MS) {
            /* lost with a head that died, or the head is slow: asked again
               (a late answer to the ask before is stale: its token is old) */
            log_info("object %s: the head's node has not answered where it lives for %lld ms: "
                     "asking again", xfer_hex(&p->id, hex), (long long) (now - p->asked_ms));
            p->stale = p->asked_flags & XFER_LOCATE_STALE;
            p->unseen = p->asked_flags & XFER_LOCATE_UNSEEN;
            s_ask_location(nm, p);
        } else if (p->state == P_OPEN && p->reopen_at_ms) {
            if (now >= p->reopen_at_ms) { /* its source makes it: asked again */
                p->reopen_at_ms = 0;
                p->token = ++x->next_token;
                p->last_ms = now;
                if (s_send_open(nm, p))
                    s_next_source(nm, p, LUX_EIO);
            }
        } else if (p->state == P_MOVING && p->bh && p->got == 0 && now - p->last_ms > x->timeout_ms) {
            util_err(LUX_ETIMEDOUT, "no chunk came on its bulk connection in %lld ms",
                     (long long) (now - p->last_ms));
            s_fall_back(nm, p, LUX_ETIMEDOUT);
        } else if ((p->state == P_OPEN || p->state == P_MOVING) && now - p->last_ms > x->timeout_ms) {
            util_err(LUX_EDEAD, "it sent nothing for %lld ms (dead, or cut off)",
                     (long long) (now - p->last_ms));
            s_next_source(nm, p, LUX_EDEAD);
        }
    }
    exec_bulk_tick(x->bulk);
    s_admit(nm);
    /* the finished: each requester told once, then the pull goes */
    for (s_pull_t **pp = &x->pulls; *pp;) {
        s_pull_t *p = *pp;
        if (p->state != P_DONE) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        s_test_drop(nm, p);
        while (p->reqs) {
            s_req_t *q = p->reqs;
            p->reqs = q->next;
            if (p->rc)
                util_err(p->rc, "%s", p->why ? p->why : "the pull failed");
            q->done(nm, q->arg, &p->id, p->rc);
            free(q);
        }
        s_pull_free(p);
    }
    /* objects served to pullers that went silent, and holds for askers
       that did not come */
    for (s_open_t **q = &x->opens; *q;) {
        if (now - (*q)->last_ms > ((*q)->token ? x->open_idle_ms : x->timeout_ms)) {
            if (!(*q)->token)
                log_info("object %s: held %lld ms for an asker that did not OPEN it",
                         xfer_hex(&(*q)->id, hex), (long long) (now - (*q)->last_ms));
            nm_xfer_src_close(nm, q);
        } else
            q = &(*q)->next;
    }
}

int
nm_xfer_where(nm_t *nm, const lux_ref_t *id, util_id_t *nodes, int max, uint64_t *size)
{
    if (!nm->xfer || !nm_peer_is_head(nm))
        return 0;
    xfer_loc_t l = {.self = true};
    int rc = nm_xfer_locate(nm, id, &l);
    if (rc == LUX_ENOTFOUND && !l.made && max > 0 && !nm_xfer_recorded(nm, id)) {
        /* its event not logged yet (a put's waits for its blob): where
           its maker is, it is made; else the task placed now pulls it
           across (a 64 MiB object, locality_placement; t/6140) */
        xfer_by_t b;
        if (nm_xfer_who(nm, id, &b) || b.by == XFER_BY_UNKNOWN || b.ended || !b.has_node)
            return 0;
        nodes[0] = b.node;
        *size = 1;
        return 1;
    }
    if (rc)
        return 0;
    int n = l.nsrc < max ? l.nsrc : max;
    for (int i = 0; i < n; i++)
        nodes[i] = l.src[i].node;
    *size = l.size ? l.size : 1; /* an output of a task of several: its size is not logged */
    return n;
}

void
nm_xfer_counts(nm_t *nm, uint64_t *done, uint64_t *failed, uint64_t *bytes)
{
    struct nm_xfer *x = nm->xfer;
    *done = x ? x->n_done : 0;
    *failed = x ? x->n_failed : 0;
    *bytes = x ? x->bytes : 0;
}
