/*  exec_store - the object store's side of the node manager's protocol:
    what clients ask of the store (doc/protocol.md), answered here.

      ALLOC    room in the arena for a value the client writes itself; when
               there is none, the request waits (nm->alloc_waits, in
               arrival order, each on its own) until an unpin, a free or a
               grant given back makes room, or its deadline passes
               (LUX_STORE_WAIT_MS), answered then with the store's state;
      UNALLOC  room granted and not written, given back;
      PUT      values sealed: inline bytes, or arena room granted by ALLOC;
      GET      objects by ID, answered when ready (a spilled put is brought
               back first, waiting for room as an ALLOC does);
      FREE     the owner lets go of its objects.

    The table, pins, eviction and spilling these use are exec_node_obj.c's;
    exec_node.c routes the messages here and calls nm_store_retry after
    each round of messages.
*/
#include "exec_store.h"
#include "exec_peer.h"
#include "exec_xfer.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_ALLOC_WHAT "an ALLOC (a task's output or a put)" /* how the rule 13 log names one */

static void s_restore_retry(nm_t *nm, bool changed);

void
nm_store_on_put(nm_t *nm, nm_client_t *c, zframe_t *body)
{
    util_rd_t r;
    if (!body) {
        nm_complain(nm, "PUT without objects");
        return;
    }
    util_rd_init(&r, zframe_data(body), zframe_size(body));
    uint32_t count = util_rd_u32(&r);
    for (uint32_t i = 0; i < count; i++) {
        exec_obj_t d;
        const uint8_t *fp;
        if (exec_obj_decode(&r, &d) || (d.where != EXEC_W_INLINE && d.where != EXEC_W_ARENA) ||
            !(fp = util_rd_take(&r, 16))) {
            nm_complain(nm, "malformed PUT");
            return;
        }
        nm_obj_t *had = nm_obj_get(nm, &d.id);
        if (had) {
            /* put before (a resend, or the retry of a task whose worker
               died: same ID, same bytes): the room granted for it is not
               needed. One that lost its owner is the retry's now, as if
               it had made it: it lives until the retry frees it, not only
               while the tasks queued for it hold it */
            if (d.where == EXEC_W_ARENA && util_idmap_del(c->allocs, &d.off))
                nm_store_free(nm, d.off);
            if (!had->owner && had->is_put) {
                had->owner = c;
                had->owned = true;
                had->freed = false;
            }
            continue;
        }
        if (d.where == EXEC_W_ARENA) {
            uint64_t *granted = util_idmap_get(c->allocs, &d.off);
            if (!granted || *granted < d.size) {
                nm_complain(nm, "PUT of room that was not granted");
                continue;
            }
            util_idmap_del(c->allocs, &d.off);
        }
        nm_obj_t *o = nm_obj_new(nm, &d.id);
        if (!o) {
            log_error("out of memory for an object");
            if (d.where == EXEC_W_ARENA)
                nm_store_free(nm, d.off);
            continue;
        }
        o->owner = c;
        o->is_put = true;
        if (d.where == EXEC_W_ARENA)
            nm_obj_set_arena(nm, o, d.off, d.size);
        else
            nm_obj_set_inline(nm, o, d.bytes, d.size);
        memcpy(o->fp, fp, 16); /* the client's: hashing is not the node's work */
        nm_log_put(nm, o);
    }
}

static void
s_alloc_reply(nm_t *nm, nm_client_t *c, uint64_t req, int rc, uint64_t off, uint64_t size)
{
    uint8_t rep[20];
    if (!rc) {
        uint64_t *granted = util_idmap_put(c->allocs, &off, NULL);
        if (granted)
            *granted = size;
    }
    util_le64(rep, req);
    util_le32(rep + 8, (uint32_t) rc);
    util_le64(rep + 12, off);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_ALLOC_REP, NET_NO_SHARD, 0)});
    zmsg_addmem(m, rep, sizeof rep);
    if (rc)
        zmsg_addstr(m, lux_errmsg());
    nm_send(nm, c, &m);
}

/* UNALLOC: room granted to the client that it could not write (its
   pages could not be had: /dev/shm is full), given back. */
void
nm_store_on_unalloc(nm_t *nm, nm_client_t *c, zframe_t *body)
{
    if (!body || zframe_size(body) != 8) {
        nm_complain(nm, "malformed UNALLOC");
        return;
    }
    uint64_t off = util_rd64(zframe_data(body));
    if (util_idmap_del(c->allocs, &off))
        nm_store_free(nm, off);
    else
        nm_complain(nm, "UNALLOC of room that was not granted");
}

/* ALLOC: room in the store for a value the client writes in place. When
   the store is full of objects in use, the request waits (see
   nm_alloc_waits) rather than failing at once, while tasks that are
   running may unpin their arguments when they finish; with none, it goes
   beyond the store's size at once, as it would after the wait. */
/* Queue c's ALLOC req of size to be answered when room appears (or its
   wait ends at deadline_ms): true, or false without the memory to. */
static bool
s_alloc_wait(nm_t *nm, nm_client_t *c, uint64_t req, uint64_t size, int64_t deadline_ms)
{
    nm_alloc_wait_t *w = calloc(1, sizeof *w), **p = &nm->alloc_waits;
    if (!w)
        return false;
    w->c = c;
    w->req = req;
    w->size = size;
    w->since_ms = util_mono_ms();
    w->deadline_ms = deadline_ms;
    while (*p)
        p = &(*p)->next;
    *p = w;
    return true;
}

void
nm_store_on_alloc(nm_t *nm, nm_client_t *c, zframe_t *body)
{
    if (!body || zframe_size(body) != 16) {
        nm_complain(nm, "malformed ALLOC");
        return;
    }
    uint64_t req = util_rd64(zframe_data(body)), size = util_rd64(zframe_data(body) + 8), off = 0;
    int rc;
    if (size == 0) {
        rc = util_err(LUX_EINVAL, "ALLOC of 0 bytes");
    } else if ((rc = nm_store_try(nm, size, &off)) == LUX_EFULL && size <= nm->store_bytes &&
               nm->store_wait_ms > 0 && !nm_store_room_may_come(nm, c)) {
        nm->store_over = true; /* nothing to wait for */
        rc = nm_store_try(nm, size, &off);
        nm->store_over = false;
        /* not even beyond it: tasks blocked in gets may yet let go (rule 13) */
        bool noted = false;
        if (rc == LUX_EFULL &&
            !nm_store_room_stuck(nm, c, util_mono_ms(), &noted, S_ALLOC_WHAT, size) &&
            s_alloc_wait(nm, c, req, size, util_mono_ms()))
            return;
    } else if (rc == LUX_EFULL && size <= nm->store_bytes && nm->store_wait_ms > 0) {
        if (s_alloc_wait(nm, c, req, size, util_mono_ms() + nm->store_wait_ms))
            return;
    }
    if (rc == LUX_EFULL)
        rc = nm_store_alloc(nm, size, &off); /* for the message */
    s_alloc_reply(nm, c, req, rc, off, size);
}

/* Try the waiting ALLOCs again when room may have appeared, in arrival
   order but each on its own (a large one does not hold up smaller ones
   that fit); answer the ones past their deadline with the store's state. */
void
nm_store_retry(nm_t *nm)
{
    if (nm->restore_waits)
        s_restore_retry(nm, nm->store_gen != nm->waits_gen);
    if (!nm->alloc_waits) {
        nm->waits_gen = nm->store_gen;
        return;
    }
    bool changed = nm->store_gen != nm->waits_gen;
    int64_t now = util_mono_ms();
    nm->waits_gen = nm->store_gen;
    for (nm_alloc_wait_t **p = &nm->alloc_waits; *p;) {
        nm_alloc_wait_t *w = *p;
        uint64_t off = 0;
        int rc = changed ? nm_store_try(nm, w->size, &off) : LUX_EFULL;
        if (rc == LUX_EFULL && now < w->deadline_ms && nm_store_room_may_come(nm, w->c)) {
            p = &w->next;
            continue;
        }
        if (rc == LUX_EFULL) { /* its wait is over: beyond the store's size, if need be */
            nm->store_over = true;
            rc = nm_store_try(nm, w->size, &off);
            nm->store_over = false;
        }
        if (rc == LUX_EFULL &&
            !nm_store_room_stuck(nm, w->c, w->since_ms, &w->noted, S_ALLOC_WHAT, w->size)) {
            /* not even there, while tasks blocked in gets hold the store
               and what they wait for runs: on, until they let go, nothing
               has run for the wait, or the wait's bound (DESIGN 7, rule 13) */
            p = &w->next;
            continue;
        }
        if (rc == LUX_EFULL) {
            nm_store_alloc(nm, w->size, &off);
            if (now - w->since_ms >= nm->store_wait_max_ms)
                util_err_ctx(LUX_EFULL, "waited %lld ms, the most (LUX_STORE_WAIT_MAX_MS) while "
                             "tasks blocked in gets hold the store",
                             (long long) (now - w->since_ms));
            else
                util_err_ctx(LUX_EFULL, "waited %lld ms", (long long) (now - w->since_ms));
        }
        s_alloc_reply(nm, w->c, w->req, rc, off, w->size);
        *p = w->next;
        free(w);
    }
    nm->waits_gen = nm->store_gen;
}

void
nm_store_alloc_waits_drop(nm_t *nm, nm_client_t *c)
{
    for (nm_alloc_wait_t **p = &nm->alloc_waits; *p;) {
        nm_alloc_wait_t *w = *p;
        if (c && w->c != c) {
            p = &w->next;
            continue;
        }
        *p = w->next;
        free(w);
    }
}

/* Answer a GET of one object: now (pinned when in the arena), or when it
   exists. A spilled object the store has no room for yet waits for room
   until deadline_ms (0: a new wait), as an ALLOC does. */
static void s_get_one(nm_t *nm, nm_client_t *c, const lux_ref_t *idp, int64_t deadline_ms,
                      int prio);

/* A pull for client c's GET ended (exec_xfer.h): the object is here, or
   no node has it (then it is looked for here, as before), or the pull
   failed (c learns why). */
static void
s_pulled(nm_t *nm, void *arg, const lux_ref_t *id, int rc)
{
    nm_client_t *c = arg;
    /* no node has it: the head's node may rebuild it from the log (a
       node's cannot read the log's files: DESIGN 7.2) */
    if (rc == 0 || (rc == LUX_ENOTFOUND && nm_peer_is_head(nm))) {
        s_get_one(nm, c, id, -1, NM_XFER_GET); /* -1: not pulled again */
        return;
    }
    char msg[UTIL_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", lux_errmsg());
    if (rc == LUX_ENOTFOUND) {
        nm_obj_t err = {.id = *id, .state = OBJ_MISSING, .bytes = (uint8_t *) msg,
                        .size = strlen(msg)};
        nm_client_send_obj(nm, c, &err, false);
    } else {
        /* the pull failed (a source died, a chunk failed to open): this
           get ends; the object has not failed, the next get pulls again */
        nm_client_send_unavailable(nm, c, id, rc, msg);
    }
}

/* prio: NM_XFER_GET for a lux_get, NM_XFER_WAIT for a lux_wait (a pull
   from another node is admitted in that order). */
static void
s_get_one(nm_t *nm, nm_client_t *c, const lux_ref_t *idp, int64_t deadline_ms, int prio)
{
    bool pulled = deadline_ms < 0; /* s_pulled's: looked for on other nodes already */
    if (pulled)
        deadline_ms = 0;
    lux_ref_t id = *idp;
    nm_obj_t *o = nm_obj_get(nm, &id);
    if (o && o->state == OBJ_SPILLED) {
        int64_t now = util_mono_ms();
        /* beyond the store's size once its wait is over, or at once when
           no running task could free room (DESIGN 7, rule 9); decided
           before the try, so that only a try allowed beyond it fails */
        bool waited = deadline_ms && now >= deadline_ms;
        bool over = nm->store_wait_ms > 0 && (waited || !nm_store_room_may_come(nm, c));
        nm->store_over = over;
        int rc = nm_obj_restore(nm, o);
        nm->store_over = false;
        if (rc == LUX_EFULL && nm->store_wait_ms > 0 && !over) {
            nm_restore_wait_t *w = calloc(1, sizeof *w), **p = &nm->restore_waits;
            if (w) {
                w->c = c;
                w->id = id;
                w->deadline_ms = deadline_ms ? deadline_ms : now + nm->store_wait_ms;
                while (*p)
                    p = &(*p)->next;
                *p = w;
                return;
            }
        }
        if (rc && o->state == OBJ_SPILLED) {
            /* not brought back (no room even beyond the store's size, a
               read error): this get ends with the error; the object stays
               spilled for the next */
            char msg[UTIL_ERRMSG_MAX + 96], hex[LUX_REF_LEN * 2 + 1];
            util_hex(hex, id.b, LUX_REF_LEN);
            if (rc == LUX_EFULL && !over)
                snprintf(msg, sizeof msg, "spilled object %s: no room to bring it back "
                         "(LUX_STORE_WAIT_MS is 0): %s", hex, lux_errmsg());
            else if (rc == LUX_EFULL)
                snprintf(msg, sizeof msg, "spilled object %s: no room to bring it back, even "
                         "beyond the store's size%s: %s", hex, waited ? " after the wait" :
                         " (no running task could free any)", lux_errmsg());
            else
                snprintf(msg, sizeof msg, "spilled object %s: %s", hex, lux_errmsg());
            nm_client_send_unavailable(nm, c, &id, rc, msg);
            return;
        }
    }
    if (o && (o->state == OBJ_READY || o->state == OBJ_ERROR)) {
        bool pin = o->state == OBJ_READY && o->where == EXEC_W_ARENA;
        if (pin)
            nm_client_pin(nm, c, o);
        nm_client_send_obj(nm, c, o, pin);
        return;
    }
    /* not here yet: wait for its task, rebuilding it if it was lost */
    util_id_t tid;
    exec_ref_task(&id, &tid);
    nm_task_t *t = nm_task_find(nm, &tid);
    int brc = 0;
    /* on a cluster, another node may hold it: pulled here (exec_xfer.c).
       Pulled already, and not here: its copy came and went before this
       get was told (let go by a task that shared the pull, killed or
       failed first): pulled again, unless this is the head's node, which
       rebuilds it from the log below. A node's cannot read the log's
       files: it looked for the lineage there and failed the get, "the
       log's record of its task cannot be read" (t/6091 seed 33; t/6154). */
    if (!t && (!pulled || !nm_peer_is_head(nm)) && nm_xfer_on(nm) &&
        nm_xfer_pull(nm, &id, prio, s_pulled, c) == 0)
        return;
    if (!t && (brc = nm_rebuild(nm, &id)) == 0)
        t = nm_task_find(nm, &tid);
    if (t && exec_ref_idx(&id) >= t->nret)
        t = NULL; /* a return its task does not have: it would never come */
    if (!t) {
        /* an object the log does not know (LUX_ENOTFOUND at the
           client), or one whose rebuild failed (LUX_ETASK): the
           rebuild's message names the cause */
        nm_obj_t err = {.id = id};
        char hex[LUX_REF_LEN * 2 + 1], msg[UTIL_ERRMSG_MAX + 16];
        util_hex(hex, id.b, LUX_REF_LEN);
        if (brc)
            snprintf(msg, sizeof msg, "object %s", lux_errmsg());
        else
            snprintf(msg, sizeof msg, "object %s was never created, or was freed and has "
                     "no lineage in the log", hex);
        err.state = brc == LUX_ETASK ? OBJ_ERROR : OBJ_MISSING;
        err.bytes = (uint8_t *) msg;
        err.size = strlen(msg);
        nm_client_send_obj(nm, c, &err, false);
        return;
    }
    if (t->nwaiters == t->capwaiters) {
        uint16_t cap = t->capwaiters ? (uint16_t) (2 * t->capwaiters) : 4;
        nm_client_t **w = realloc(t->waiters, cap * sizeof *w);
        if (!w)
            return;
        t->waiters = w;
        t->capwaiters = cap;
    }
    t->waiters[t->nwaiters++] = c;
}

/* GET: each object now, or when it exists. */
void
nm_store_on_get(nm_t *nm, nm_client_t *c, zframe_t *body)
{
    util_rd_t r;
    if (!body) {
        nm_complain(nm, "GET without IDs");
        return;
    }
    util_rd_init(&r, zframe_data(body), zframe_size(body));
    uint32_t count = util_rd_u32(&r);
    int prio = count & EXEC_GET_WAIT ? NM_XFER_WAIT : NM_XFER_GET;
    count &= ~EXEC_GET_WAIT;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *p = util_rd_take(&r, LUX_REF_LEN);
        lux_ref_t id;
        if (!p) {
            nm_complain(nm, "malformed GET");
            return;
        }
        memcpy(id.b, p, LUX_REF_LEN);
        s_get_one(nm, c, &id, 0, prio);
    }
}

/* Try the GETs waiting for room to restore a spilled object again, when
   room may have appeared, nothing running could free any (then beyond
   the store's size) or one's deadline passed. */
static void
s_restore_retry(nm_t *nm, bool changed)
{
    int64_t now = util_mono_ms();
    nm_restore_wait_t *list = nm->restore_waits;
    nm->restore_waits = NULL;
    while (list) {
        nm_restore_wait_t *w = list;
        list = w->next;
        if (!changed && now < w->deadline_ms && nm_store_room_may_come(nm, w->c)) {
            w->next = nm->restore_waits; /* order matters little: a few at most */
            nm->restore_waits = w;
            continue;
        }
        s_get_one(nm, w->c, &w->id, w->deadline_ms, NM_XFER_GET); /* may wait again */
        free(w);
    }
}

void
nm_store_restore_waits_drop(nm_t *nm, nm_client_t *c)
{
    nm_xfer_forget(nm, s_pulled, c); /* its GETs of objects on their way here */
    for (nm_restore_wait_t **p = &nm->restore_waits; *p;) {
        nm_restore_wait_t *w = *p;
        if (c && w->c != c) {
            p = &w->next;
            continue;
        }
        *p = w->next;
        free(w);
    }
}

void
nm_store_on_free(nm_t *nm, nm_client_t *c, zframe_t *body)
{
    util_rd_t r;
    if (!body)
        return;
    util_rd_init(&r, zframe_data(body), zframe_size(body));
    uint32_t count = util_rd_u32(&r);
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *p = util_rd_take(&r, LUX_REF_LEN);
        lux_ref_t id;
        if (!p)
            return;
        memcpy(id.b, p, LUX_REF_LEN);
        nm_client_unpin(nm, c, &id);
        nm_obj_t *o = nm_obj_get(nm, &id);
        if (o && o->owner == c) {
            o->owned = false;
            o->owner = NULL;
            o->freed = o->is_put;
            if (!o->pins && !o->uses)
                nm_obj_delete(nm, o);
        } else if (!o) {
            /* an output of a task not finished yet: made unowned, so it
               goes once made and handed to whoever waits for it */
            util_id_t tid;
            exec_ref_task(&id, &tid);
            nm_task_t *t = nm_task_find(nm, &tid);
            uint32_t idx = exec_ref_idx(&id);
            if (t && t->owner == c && idx < t->nret)
                t->freed |= (uint64_t) 1 << idx;
        }
    }
}
