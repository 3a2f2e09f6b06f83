/*  exec_xfer_src - the source's side of a pull (doc/DESIGN.md 7.3,
    doc/protocol.md 17.1): NODE_PULL's OPEN pins the object and says its
    size and fingerprint (with a one-time key for the bulk port when the
    puller takes that path), CHUNK reads a part of it (lz4 where a probe
    says it pays), CLOSE or silence unpins it; and the bulk port's
    requests, served from the same table of opened objects. The puller's
    side is exec_xfer.c.
*/
#include "exec_xfer_src.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the source ------------------------------------------------------------------------------ */

/* The head of every NODE_PULL_REP into the node's buffer (emptied
   first): req, rc, id, op. */
static util_buf_t *
s_rep_head(nm_t *nm, uint64_t token, int rc, const uint8_t *id, int op)
{
    util_buf_t *b = &nm->xfer->buf;
    b->len = 0;
    util_buf_put_u64(b, token);
    util_buf_put_u32(b, (uint32_t) rc);
    util_buf_put(b, id, LUX_REF_LEN);
    util_buf_put_u8(b, (uint8_t) op);
    return b;
}

/* A refusal: the head and the message of rc. */
static void
s_pull_reply(nm_t *nm, nm_peer_msg_t *m, uint64_t token, const uint8_t *id, int op, int rc)
{
    util_buf_t *b = s_rep_head(nm, token, rc, id, op);
    util_buf_put_str(b, lux_errmsg(), strlen(lux_errmsg()));
    zmsg_t *out = zmsg_new();
    zmsg_addmem(out, b->data, b->len);
    nm_peer_reply(nm, m, NET_NODE_PULL_REP, &out);
}

static s_open_t *
s_open_find(nm_t *nm, const uint8_t *id, uint64_t token, s_open_t ***prev)
{
    for (s_open_t **q = &nm->xfer->opens; *q; q = &(*q)->next)
        if ((*q)->token == token && memcmp((*q)->id.b, id, LUX_REF_LEN) == 0) {
            if (prev)
                *prev = q;
            return *q;
        }
    return NULL;
}

void
nm_xfer_src_close(nm_t *nm, s_open_t **q)
{
    s_open_t *o = *q;
    nm_obj_t *obj = nm_obj_get(nm, &o->id);
    if (obj)
        nm_obj_unpin(nm, obj);
    if (o->offered)
        exec_bulk_drop(nm->xfer->bulk, o->key.xid); /* before the bytes are let go */
    exec_bulk_key_wipe(&o->key);
    *q = o->next;
    free(o);
}

/* Why this node does not hold ref (o its entry, or NULL), for the puller:
   XF_GONE_* into *why, and the words. Pending when its task is here (run
   again: a rebuild, a retry): the object comes when it ends. */
static const char *
s_gone(nm_t *nm, const nm_obj_t *o, const lux_ref_t *ref, uint8_t *why)
{
    util_id_t tid;
    exec_ref_task(ref, &tid);
    if (o && o->state == OBJ_ERROR) {
        *why = XF_GONE_ERROR;
        return "it is an error: its task failed";
    }
    if (nm_task_find(nm, &tid)) {
        *why = XF_GONE_PENDING;
        return "pending: its task is running again";
    }
    if (o && o->state == OBJ_LOST) {
        *why = XF_GONE_EVICTED;
        return "evicted: dropped to make room, and not being made again here";
    }
    *why = XF_GONE_LOST;
    return o ? "lost: not made here, and its task is not running here"
             : "lost: freed, or never here";
}

/* OPEN: the object's size and fingerprint, pinned until CLOSE; and a
   one-time key for the bulk port when the puller takes that path. */
static void
s_serve_open(nm_t *nm, nm_peer_msg_t *m, uint64_t token, const uint8_t *id, uint32_t flags)
{
    char hex[2 * LUX_REF_LEN + 1];
    lux_ref_t ref;
    memcpy(ref.b, id, LUX_REF_LEN);
    nm_obj_t *o = nm_obj_get(nm, &ref);
    int rc = 0;
    if (o && o->state == OBJ_SPILLED && (rc = nm_obj_restore(nm, o))) {
        util_err(rc, "node %s: object %s is spilled and could not be brought back: %s",
                 nm->address, xfer_hex(&ref, hex), lux_errmsg());
    } else if (!o || o->state != OBJ_READY) {
        /* the refusal says the state found, as words and as a code after
           them: a puller waits for a pending one (exec_xfer.c) */
        uint8_t why;
        const char *words = s_gone(nm, o, &ref, &why);
        util_err(LUX_ENOTFOUND, "node %s does not hold object %s (%s)", nm->address,
                 xfer_hex(&ref, hex), words);
        util_buf_t *b = s_rep_head(nm, token, LUX_ENOTFOUND, id, OP_OPEN);
        util_buf_put_str(b, lux_errmsg(), strlen(lux_errmsg()));
        util_buf_put_u8(b, why);
        zmsg_t *out = zmsg_new();
        zmsg_addmem(out, b->data, b->len);
        nm_peer_reply(nm, m, NET_NODE_PULL_REP, &out);
        return;
    }
    if (rc) {
        s_pull_reply(nm, m, token, id, OP_OPEN, rc);
        return;
    }
    s_open_t *op = calloc(1, sizeof *op);
    if (!op) {
        s_pull_reply(nm, m, token, id, OP_OPEN, util_err(LUX_ENOMEM, "out of memory"));
        return;
    }
    op->id = ref;
    op->token = token;
    op->last_ms = util_mono_ms();
    op->next = nm->xfer->opens;
    nm->xfer->opens = op;
    nm_obj_pin(nm, o);
    s_open_t **hq;
    if (s_open_find(nm, id, 0, &hq))
        nm_xfer_src_close(nm, hq); /* the hold for this asker: the OPEN pins it now */
    o->unread = 0; /* a reader has it (nm_rebuild's bound counts rebuilds nobody read) */
    util_buf_t *hb = s_rep_head(nm, token, 0, id, OP_OPEN);
    zmsg_t *out = zmsg_new();
    util_buf_put_u64(hb, o->size);
    util_buf_put(hb, o->fp, 16);
    exec_bulk_t *bulk = nm->xfer->bulk;
    size_t key_at = 0;
    if ((flags & XF_BULK) && exec_bulk_port(bulk) && o->size > EXEC_INLINE_MAX &&
        o->where == EXEC_W_ARENA) {
        int here = exec_bulk_cipher_here();
        exec_bulk_key_new(&op->key, (flags & XF_GMAC) && nm->xfer->gmac ? EXEC_BULK_GMAC
                                    : (flags & XF_AES) && here == EXEC_BULK_AES256GCM
                                        ? EXEC_BULK_AES256GCM : EXEC_BULK_CHACHA20);
        op->offered = true;
        util_buf_put_u8(hb, 1);
        util_buf_put_u8(hb, (uint8_t) op->key.cipher);
        util_buf_put_u16(hb, (uint16_t) exec_bulk_port(bulk));
        util_buf_put_u64(hb, op->key.xid);
        key_at = hb->len;
        util_buf_put(hb, op->key.key, EXEC_BULK_KEY);
    }
    zmsg_addmem(out, hb->data, hb->len);
    if (key_at)
        sodium_memzero(hb->data + key_at, EXEC_BULK_KEY); /* the buffer's copy */
    if (o->size <= EXEC_INLINE_MAX)
        zmsg_addmem(out, o->where == EXEC_W_ARENA ? exec_arena_base(nm->arena) + o->off
                                                  : o->bytes,
                    o->size);
    nm_peer_reply(nm, m, NET_NODE_PULL_REP, &out);
}

void
nm_xfer_src_hold(nm_t *nm, const lux_ref_t *id)
{
    nm_obj_t *o = nm_obj_get(nm, id);
    if (!o || o->state != OBJ_READY)
        return;
    s_open_t *h = calloc(1, sizeof *h); /* one an answer, let go by one OPEN */
    if (!h)
        return; /* not held: evictable, as before */
    h->id = *id;
    h->last_ms = util_mono_ms();
    h->next = nm->xfer->opens;
    nm->xfer->opens = h;
    nm_obj_pin(nm, o);
}

/* CHUNK: len bytes at off, lz4-compressed when a probe says it pays. */
static void
s_serve_chunk(nm_t *nm, nm_peer_msg_t *m, uint64_t token, const uint8_t *id, uint64_t off,
              uint32_t len)
{
    struct nm_xfer *x = nm->xfer;
    char hex[2 * LUX_REF_LEN + 1];
    lux_ref_t ref;
    memcpy(ref.b, id, LUX_REF_LEN);
    s_open_t *op = s_open_find(nm, id, token, NULL);
    nm_obj_t *o = op ? nm_obj_get(nm, &ref) : NULL;
    if (!o || o->state != OBJ_READY || o->where != EXEC_W_ARENA || off + len > o->size ||
        len == 0) {
        int rc = util_err(op ? LUX_EINVAL : LUX_ENOTFOUND,
                          "node %s: object %s %s", nm->address, xfer_hex(&ref, hex),
                          op ? "has no such chunk" : "was not opened (or was closed: "
                          "its bulk connection ended, or nothing asked for it a while)");
        s_pull_reply(nm, m, token, id, OP_CHUNK, rc);
        return;
    }
    op->last_ms = util_mono_ms();
    const uint8_t *src = exec_arena_base(nm->arena) + o->off + off;
    size_t bound = (size_t) LZ4_compressBound((int) len);
    if (x->zcap < bound) {
        uint8_t *z = realloc(x->zbuf, bound);
        if (z) {
            x->zbuf = z;
            x->zcap = bound;
        }
    }
    size_t zn = x->zbuf ? exec_bulk_lz4(src, len, x->zbuf, x->zcap) : 0; /* 0 also without room */
    uint8_t codec = zn > 0;
    util_buf_t *b = s_rep_head(nm, token, 0, id, OP_CHUNK);
    zmsg_t *out = zmsg_new();
    util_buf_put_u64(b, off);
    util_buf_put_u32(b, len);
    util_buf_put_u8(b, codec);
    zmsg_addmem(out, b->data, b->len);
    zmsg_addmem(out, codec ? x->zbuf : src, codec ? zn : len);
    nm_peer_reply(nm, m, NET_NODE_PULL_REP, &out);
}

void
nm_xfer_src_on_pull(nm_t *nm, nm_peer_msg_t *m)
{
    util_rd_t r;
    if (!nm_peer_body(nm, m, &r))
        return;
    uint64_t token = util_rd_u64(&r);
    const uint8_t *id = util_rd_take(&r, LUX_REF_LEN);
    uint8_t op = util_rd_u8(&r);
    uint64_t off = util_rd_u64(&r);
    uint32_t len = util_rd_u32(&r);
    if (r.bad || !id || op < OP_OPEN || op > OP_CLOSE) {
        nm_complain(nm, "malformed NODE_PULL");
        return;
    }
    if (op == OP_OPEN) {
        s_serve_open(nm, m, token, id, len);
    } else if (op == OP_CHUNK) {
        s_serve_chunk(nm, m, token, id, off, len);
    } else {
        s_open_t **q;
        if (s_open_find(nm, id, token, &q))
            nm_xfer_src_close(nm, q);
    }
}

/* --- the bulk path: the source's callbacks (exec_bulk.h) ---------------------------------- */

int
nm_xfer_src_bulk_serve(void *arg, uint64_t xid, const uint8_t id[LUX_REF_LEN], exec_bulk_key_t *key,
             const uint8_t **bytes, uint64_t *size)
{
    nm_t *nm = arg;
    s_open_t *op = nm->xfer->opens;
    while (op && !(op->offered && op->key.xid == xid))
        op = op->next;
    if (!op)
        return util_err(LUX_ENOTFOUND, "transfer %016llx is not one this node handed out (or "
                        "it ended)", (unsigned long long) xid);
    if (op->served)
        return util_err(LUX_EINVAL, "transfer %016llx is being served already (a replayed "
                        "request?)", (unsigned long long) xid);
    *key = op->key;
    if (!id)
        return 0;
    char hex[2 * LUX_REF_LEN + 1];
    nm_obj_t *o = nm_obj_get(nm, &op->id);
    if (memcmp(id, op->id.b, LUX_REF_LEN) != 0)
        return util_err(LUX_EINVAL, "its request names another object than transfer %016llx's",
                        (unsigned long long) xid);
    if (!o || o->state != OBJ_READY || o->where != EXEC_W_ARENA)
        return util_err(LUX_ENOTFOUND, "object %s of transfer %016llx is not in the store",
                        xfer_hex(&op->id, hex), (unsigned long long) xid);
    *bytes = exec_arena_base(nm->arena) + o->off;
    *size = o->size;
    op->served = true;
    op->last_ms = util_mono_ms();
    return 0;
}

void
nm_xfer_src_bulk_sent(void *arg, uint64_t xid)
{
    nm_t *nm = arg;
    for (s_open_t *op = nm->xfer->opens; op; op = op->next)
        if (op->offered && op->key.xid == xid)
            op->last_ms = util_mono_ms();
}


void
nm_xfer_src_bulk_over(void *arg, uint64_t xid)
{
    nm_t *nm = arg;
    for (s_open_t **q = &nm->xfer->opens; *q; q = &(*q)->next)
        if ((*q)->offered && (*q)->served && (*q)->key.xid == xid) {
            nm_xfer_src_close(nm, q); /* unpinned now, not after S_OPEN_IDLE_MS */
            return;
        }
}
