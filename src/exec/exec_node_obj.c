/*  exec_node_obj - the node manager's objects and its shared-memory store.

    An object is READY (its value inline on the heap, when it is at most
    EXEC_INLINE_MAX bytes, or in the arena), ERROR (the task that makes it
    failed), SPILLED (a put moved to disk, lz4, to make room; or a rebuilt
    output held for a task that waits beyond rule 10's bound) or LOST (a
    task output dropped to make room; lineage rebuilds it).

    Pins: a client reading an arena object in place (lux_get), and a task
    that will run with it as an argument, pin it. Unpinned READY arena
    objects sit in an LRU list, oldest first; when the arena has no room,
    nm_store_alloc evicts from the front: task outputs are dropped, puts
    (and outputs held on disk for a waiting task, NM_ARG_DISK) spilled. An object is deleted once its owner freed it and nothing pins
    it or waits for it.

    A spill is written off the node's loop (issue 24 item 2: a 1 GiB spill
    held the loop for seconds, heartbeats included): its bytes are copied
    to the heap, which frees their room in the store at once, and a writer
    thread (exec_spill.h) writes the copy; the tick hands finished writes
    back (nm_obj_spill_tick), and only then is the copy freed. Until then
    the copy is the object's: a get or a task brings it back from there;
    a free lets the write finish and removes its file. A write that fails
    (a full disk) keeps the copy, so nothing is lost; the copies held stay
    under the store's size, and past it a spill is written on the loop as
    before (and refused, the put kept in the store, when that fails).
*/
#include "exec_node_obj.h"
#include "exec_node_int.h"
#include "exec_spill.h"
#include "exec_node_log.h"
#include "exec_node_blob.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- LRU -------------------------------------------------------------------------- */

static void
s_lru_unlink(nm_t *nm, nm_obj_t *o)
{
    if (!o->lru_prev && nm->lru_head != o)
        return; /* not in the list */
    if (o->lru_prev)
        o->lru_prev->lru_next = o->lru_next;
    else
        nm->lru_head = o->lru_next;
    if (o->lru_next)
        o->lru_next->lru_prev = o->lru_prev;
    else
        nm->lru_tail = o->lru_prev;
    o->lru_prev = o->lru_next = NULL;
}

static void
s_lru_append(nm_t *nm, nm_obj_t *o)
{
    s_lru_unlink(nm, o);
    if (o->state != OBJ_READY || o->where != EXEC_W_ARENA || o->pins)
        return;
    o->lru_prev = nm->lru_tail;
    if (nm->lru_tail)
        nm->lru_tail->lru_next = o;
    else
        nm->lru_head = o;
    nm->lru_tail = o;
    nm->store_gen++; /* evictable now */
}

/* --- objects ------------------------------------------------------------------------ */

nm_obj_t *
nm_obj_get(nm_t *nm, const lux_ref_t *id)
{
    nm_obj_t **p = util_idmap_get(nm->objects, id->b);
    return p ? *p : NULL;
}

nm_obj_t *
nm_obj_new(nm_t *nm, const lux_ref_t *id)
{
    nm_obj_t *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    nm_obj_t **p = util_idmap_put(nm->objects, id->b, NULL);
    if (!p) {
        free(o);
        return NULL;
    }
    *p = o;
    o->id = *id;
    o->owned = true;
    return o;
}

/* --- what few objects have: the node's side tables --------------------------------- */

nm_obj_hold_t *
nm_obj_hold(nm_t *nm, nm_obj_t *o, bool make)
{
    if (!o->holding && !make)
        return NULL;
    nm_obj_hold_t *h = make ? util_idmap_put(nm->holds, o->id.b, NULL)
                            : util_idmap_get(nm->holds, o->id.b);
    o->holding = h != NULL;
    return h;
}

void
nm_obj_hold_done(nm_t *nm, nm_obj_t *o)
{
    nm_obj_hold_t *h = nm_obj_hold(nm, o, false);
    if (h && !h->held && !h->held_disk && !h->replay) {
        util_idmap_del(nm->holds, o->id.b);
        o->holding = false;
    }
}

uint32_t
nm_obj_held_disk(nm_t *nm, const nm_obj_t *o)
{
    const nm_obj_hold_t *h = o->holding ? util_idmap_get(nm->holds, o->id.b) : NULL;
    return h ? h->held_disk : 0;
}

void
nm_obj_replay_keep(nm_t *nm, nm_obj_t *o, bool keep)
{
    nm_obj_hold_t *h = nm_obj_hold(nm, o, keep);
    if (keep && h)
        h->replay++;
    else if (keep)
        log_warn("no memory to count an actor's call's argument kept for a replay: evicted, "
                 "it is dropped (and rebuilt for a replay)");
    else if (h && h->replay) {
        h->replay--;
        nm_obj_hold_done(nm, o);
    }
}

/* --- spills off the loop ------------------------------------------------------------ */

/* A spilled put's bytes on the heap, while the writer writes them (or
   after it failed to): on nm->spill_jobs until freed, and in nm->spill_of
   while it is its object's copy (nm_obj_t.spilling). */
struct nm_spill_job {
    struct nm_spill_job *next;
    lux_ref_t id;
    uint8_t *buf;
    uint64_t n;
    bool done; /* handed back: the writer is done with buf */
};

static void
s_spill_path(nm_t *nm, const nm_obj_t *o, char *path, size_t n)
{
    char hex[LUX_REF_LEN * 2 + 1];
    util_hex(hex, o->id.b, LUX_REF_LEN);
    snprintf(path, n, "%s/%s.lz4", nm->spill_dir, hex);
}

/* o's heap copy, while o->spilling. */
static struct nm_spill_job *
s_job_of(nm_t *nm, const nm_obj_t *o)
{
    struct nm_spill_job **p = o->spilling ? util_idmap_get(nm->spill_of, o->id.b) : NULL;
    return p ? *p : NULL;
}

/* o's heap copy is not j any more: written, or o's own copy gone. */
static void
s_job_unset(nm_t *nm, nm_obj_t *o)
{
    if (o->spilling)
        util_idmap_del(nm->spill_of, o->id.b);
    o->spilling = false;
}

static void
s_job_free(nm_t *nm, struct nm_spill_job *j)
{
    for (struct nm_spill_job **p = &nm->spill_jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    nm->spill_held -= j->n;
    free(j->buf);
    free(j);
}

/* o's heap copy is not its copy any more (brought back, freed, replaced):
   freed now when the writer is done with it, else when it hands it back
   (s_spilled, which then removes the file written). */
static void
s_spill_detach(nm_t *nm, nm_obj_t *o)
{
    struct nm_spill_job *j = s_job_of(nm, o);
    s_job_unset(nm, o);
    if (j && j->done)
        s_job_free(nm, j);
}

/* The writer handed j back: written (rc 0), failed, or cancelled. */
static void
s_spilled(void *ctx, void *arg, int rc, const char *msg)
{
    nm_t *nm = ctx;
    struct nm_spill_job *j = arg;
    nm_obj_t *o = nm_obj_get(nm, &j->id);
    char path[PATH_MAX + 64];
    j->done = true;
    nm->spill_pending--;
    bool mine = o && s_job_of(nm, o) == j;
    if (mine && o->state == OBJ_SPILLED) {
        if (rc == 0) {
            s_job_unset(nm, o); /* the file is its copy now */
            s_job_free(nm, j);
        } else {
            char hex[LUX_REF_LEN * 2 + 1];
            util_hex(hex, o->id.b, LUX_REF_LEN);
            log_error("object %s: cannot spill it: %s; its %llu bytes stay in the node's memory",
                      hex, msg, (unsigned long long) j->n);
        }
        return;
    }
    if (mine)
        s_job_unset(nm, o);
    /* freed or brought back meanwhile: what was written is no copy of
       anything (unless a later spill of it is on its way) */
    if (rc == 0 && (!o || (!o->spilling && o->state != OBJ_SPILLED))) {
        char hex[LUX_REF_LEN * 2 + 1];
        util_hex(hex, j->id.b, LUX_REF_LEN);
        snprintf(path, sizeof path, "%s/%s.lz4", nm->spill_dir, hex);
        unlink(path);
    }
    s_job_free(nm, j);
}

/* Spill o to path: its bytes copied to the heap for the writer thread, or
   written here when there is no thread, no memory, or the copies held
   would pass the store's size. 0 or the write's code. */
static int
s_spill(nm_t *nm, nm_obj_t *o, const char *path)
{
    const uint8_t *src = exec_arena_base(nm->arena) + o->off;
    struct nm_spill_job *j = NULL;
    if (!nm->spillw && !nm->spill_nothread && !(nm->spillw = exec_spill_writer_new())) {
        log_warn("spills are written on the node's loop: %s", lux_errmsg());
        nm->spill_nothread = true;
    }
    struct nm_spill_job **slot = NULL;
    if (nm->spillw && nm->spill_held + o->size <= nm->store_bytes + nm->spill_credit &&
        (j = calloc(1, sizeof *j)) && (j->buf = malloc(o->size ? o->size : 1)) &&
        (slot = util_idmap_put(nm->spill_of, o->id.b, NULL))) {
        memcpy(j->buf, src, (size_t) o->size);
        j->id = o->id;
        j->n = o->size;
        if (exec_spill_writer_queue(nm->spillw, path, j->buf, (size_t) o->size, j) == 0) {
            j->next = nm->spill_jobs;
            nm->spill_jobs = j;
            nm->spill_held += j->n;
            nm->spill_pending++;
            *slot = j;
            o->spilling = true;
            return 0;
        }
        util_idmap_del(nm->spill_of, o->id.b);
    }
    if (j)
        free(j->buf);
    free(j);
    return exec_spill_write(path, src, (size_t) o->size);
}

void
nm_obj_spill_tick(nm_t *nm)
{
    if (nm->spillw && nm->spill_pending)
        exec_spill_writer_done(nm->spillw, s_spilled, nm);
}

/* At the node's end, after its objects are gone: nothing to tell them. */
static void
s_spilled_close(void *ctx, void *arg, int rc, const char *msg)
{
    (void) ctx;
    (void) rc;
    (void) msg;
    ((struct nm_spill_job *) arg)->done = true;
}

/* A write the node's end did not wait for ended at last (its thread
   calls this, the node being gone): its copy goes. */
static void
s_spill_abandoned(void *arg)
{
    struct nm_spill_job *j = arg;
    free(j->buf);
    free(j);
}

void
nm_obj_spill_close(nm_t *nm)
{
    /* a write in progress may end; one that hangs (a dead disk) is waited
       for LUX_SPILL_STOP_MS (default 10 s, under `lux stop`'s 30 s), then
       left to its thread with its copy */
    const char *e = getenv("LUX_SPILL_STOP_MS");
    int wait_ms = e && atoi(e) > 0 ? atoi(e) : 10000;
    if (exec_spill_writer_destroy(&nm->spillw, s_spilled_close, nm, wait_ms, s_spill_abandoned))
        log_error("the node stops without its last spill: %s", lux_errmsg());
    while (nm->spill_jobs) {
        struct nm_spill_job *j = nm->spill_jobs;
        if (j->done) {
            s_job_free(nm, j);
        } else { /* the abandoned write's: its thread frees it */
            nm->spill_jobs = j->next;
            nm->spill_held -= j->n;
        }
    }
    nm->spill_pending = 0;
}

/* The links of x, on the list of kept inline copies. */
static nm_kept_t *
s_kept_links(nm_t *nm, const nm_obj_t *x)
{
    return util_idmap_get(nm->kept, x->id.b);
}

/* o leaves the list of kept inline copies (if on it). */
static void
s_kept_unlink(nm_t *nm, nm_obj_t *o)
{
    nm_kept_t *k = o->kept ? s_kept_links(nm, o) : NULL;
    if (!k)
        return;
    nm_obj_t *prev = k->prev, *next = k->next;
    if (prev)
        s_kept_links(nm, prev)->next = next;
    else
        nm->kept_head = next;
    if (next)
        s_kept_links(nm, next)->prev = prev;
    else
        nm->kept_tail = prev;
    util_idmap_del(nm->kept, o->id.b);
    o->kept = false;
    nm->kept_bytes -= o->size;
}

/* o joins the list of kept inline copies, newest last; false when there
   is no memory for its links (it is not kept then). */
static bool
s_kept_append(nm_t *nm, nm_obj_t *o)
{
    nm_kept_t *k = util_idmap_put(nm->kept, o->id.b, NULL);
    if (!k)
        return false;
    k->prev = nm->kept_tail;
    k->next = NULL;
    if (nm->kept_tail)
        s_kept_links(nm, nm->kept_tail)->next = o;
    else
        nm->kept_head = o;
    nm->kept_tail = o;
    o->kept = true;
    nm->kept_bytes += o->size;
    return true;
}

/* Drop the value (heap bytes, arena room or spill file), keeping the
   entry. A spilled object's file goes with it, whether the object is
   deleted or given a new value: an output held on disk for a waiting task
   and made again by a rebuild of its task for a lost sibling (t/3156)
   left its file behind for good. */
static void
s_drop_value(nm_t *nm, nm_obj_t *o)
{
    char path[PATH_MAX + 64];
    s_lru_unlink(nm, o);
    s_kept_unlink(nm, o);
    if (o->state == OBJ_SPILLED) { /* one on its way is removed when written */
        s_spill_path(nm, o, path, sizeof path);
        unlink(path);
    }
    if (o->spilling)
        s_spill_detach(nm, o);
    if (o->state == OBJ_READY && o->where == EXEC_W_ARENA)
        nm_store_free(nm, o->off);
    if (o->state == OBJ_READY && o->where == EXEC_W_INLINE)
        nm->inline_bytes -= o->size;
    free(o->bytes);
    o->bytes = NULL;
}

void
nm_obj_set_inline(nm_t *nm, nm_obj_t *o, const void *bytes, uint64_t size)
{
    s_drop_value(nm, o);
    o->bytes = malloc(size ? size : 1);
    if (!o->bytes) {
        nm_obj_set_error(nm, o, "out of memory holding the value");
        return;
    }
    memcpy(o->bytes, bytes, size);
    o->size = size;
    o->where = EXEC_W_INLINE;
    o->state = OBJ_READY;
    nm->inline_bytes += size;
}

void
nm_obj_set_arena(nm_t *nm, nm_obj_t *o, uint64_t off, uint64_t size)
{
    s_drop_value(nm, o);
    o->off = off;
    o->size = size;
    o->where = EXEC_W_ARENA;
    o->state = OBJ_READY;
    s_lru_append(nm, o);
}

/* The copy here stays because its block may be read this moment: readers
   (lux_get in place) and running tasks hold pointers into it by pins that
   name the object, not the block. Taking the new copy freed the block
   under them, and the next allocation there wrote another object's bytes
   under their pointers (long-form seed 1223 of t/3108: a task's output
   read back with the right size and the wrong bytes; t/3163). */
bool
nm_obj_made_again(const nm_obj_t *o, const uint8_t *fp)
{
    if (o->state != OBJ_READY)
        return false;
    if (fp && memcmp(fp, o->fp, 16) != 0) {
        char hex[LUX_REF_LEN * 2 + 1];
        util_hex(hex, o->id.b, LUX_REF_LEN);
        log_warn("object %s was made again with other bytes than the copy here, which "
                 "stays (does the function that makes it depend on more than its "
                 "arguments?)", hex);
    }
    return true;
}

int
nm_obj_fill(nm_t *nm, nm_obj_t *o, const void *bytes, size_t size)
{
    if (nm_obj_made_again(o, NULL))
        return 0;
    if (size <= EXEC_INLINE_MAX) {
        nm_obj_set_inline(nm, o, bytes, size);
    } else {
        uint64_t off;
        int rc = nm_store_alloc(nm, size, &off);
        if (rc)
            return rc;
        memcpy(exec_arena_base(nm->arena) + off, bytes, size);
        nm_obj_set_arena(nm, o, off, size);
    }
    exec_fingerprint(o->fp, bytes, size);
    return 0;
}

void
nm_obj_set_error(nm_t *nm, nm_obj_t *o, const char *msg)
{
    s_drop_value(nm, o);
    size_t n = strlen(msg);
    if (n > 4000)
        n = 4000;
    o->bytes = malloc(n + 1);
    if (o->bytes) {
        memcpy(o->bytes, msg, n);
        o->bytes[n] = '\0';
    }
    o->size = o->bytes ? n : 0;
    o->state = OBJ_ERROR;
}

void
nm_obj_describe(nm_t *nm, const nm_obj_t *o, exec_obj_t *d)
{
    memset(d, 0, sizeof *d);
    d->id = o->id;
    if (o->state == OBJ_ERROR || o->state == OBJ_MISSING) {
        d->where = o->state == OBJ_ERROR ? (o->cancelled ? EXEC_W_CANCELLED : EXEC_W_ERROR)
                                         : EXEC_W_MISSING;
        d->bytes = o->bytes;
        d->size = o->size;
    } else if (o->where == EXEC_W_ARENA) {
        d->where = EXEC_W_ARENA;
        d->off = o->off;
        d->size = o->size;
    } else {
        d->where = EXEC_W_INLINE;
        d->bytes = o->bytes;
        d->size = o->size;
    }
}

void
nm_obj_pin(nm_t *nm, nm_obj_t *o)
{
    if (o->pins++ == 0)
        s_lru_unlink(nm, o);
}

void
nm_obj_unpin(nm_t *nm, nm_obj_t *o)
{
    if (o->pins == 0)
        return;
    if (--o->pins == 0) {
        if (!o->owned && !o->uses)
            nm_obj_let_go(nm, o);
        else
            s_lru_append(nm, o);
    }
}

/* Nothing holds o any more (no owner, use or pin). A rebuilt copy
   ready in the store stays there, evictable, and goes when evicted: the
   next rebuild that needs it finds it (DESIGN 7, rule 11). Without this,
   an intermediate object its owner had freed was rebuilt for one consumer,
   deleted when that consumer ran, and rebuilt again for the next, the
   whole chain under it too: in t/3108's seed 3 cut to 1,500 tasks, 3,997
   of 4,485 rebuilds were such, one object rebuilt 150 times (t/3139).
   Anything else is deleted. */
void
nm_obj_let_go(nm_t *nm, nm_obj_t *o)
{
    if (o->rebuilt && o->state == OBJ_READY && o->where == EXEC_W_ARENA && !o->pins) {
        s_lru_append(nm, o);
        return;
    }
    if (!o->rebuilt || o->state != OBJ_READY || o->where != EXEC_W_INLINE || o->pins ||
        o->size > NM_KEPT_INLINE_MAX) {
        nm_obj_delete(nm, o);
        return;
    }
    /* a small value, on the heap: kept, newest last, within a bound */
    s_kept_unlink(nm, o);
    if (!s_kept_append(nm, o)) {
        nm_obj_delete(nm, o);
        return;
    }
    while (nm->kept_bytes > NM_KEPT_INLINE_MAX && nm->kept_head) {
        nm_obj_t *x = nm->kept_head;
        s_kept_unlink(nm, x);
        if (!x->owned && !x->uses && !x->pins)
            nm_obj_delete(nm, x); /* else it is let go again later */
    }
}

void
nm_obj_delete(nm_t *nm, nm_obj_t *o)
{
    nm_obj_delete_why(nm, o, NULL);
}

/* object_locations lists this node for o (o->listed) until an object_lost
   says it went: logged here on a tcp cluster, where nodes ask the log
   where objects live (a pull's sources, the scheduler's locality), and
   for a pulled copy anywhere. Before, only pulled copies and evictions
   were logged: a put or task output freed by its driver, or its driver
   gone, and a spilled task's output sent back to the node that spilled
   it, stayed listed for ever (t/6110). A LOST object was logged when it
   was evicted. On one machine a free is not logged: a task and its free
   would be three events where they are two, for a view with one node. */
void
nm_obj_delete_why(nm_t *nm, nm_obj_t *o, const char *why)
{
    if (o->listed && (o->copy || nm->remote) &&
        (o->state == OBJ_READY || o->state == OBJ_SPILLED))
        nm_log_object(nm, o, DB_K_object_lost,
                      why      ? why
                      : o->copy ? "its copy here let go: nothing here holds it"
                                : "let go here: freed by its owner, or its owner gone, and "
                                  "nothing here reads it");
    s_drop_value(nm, o); /* a spill file too */
    if (o->holding)
        util_idmap_del(nm->holds, o->id.b);
    util_idmap_del(nm->objects, o->id.b);
    free(o);
}

/* --- telling clients ------------------------------------------------------------------ */

void
nm_send(nm_t *nm, nm_client_t *c, zmsg_t **m)
{
    if (c && c->conn)
        net_link_send(c->conn->link, m); /* what it does not take now is queued */
    else if (c && c->peer && nm->ops.peer_send)
        nm->ops.peer_send(nm, c, m); /* another node, for the tasks it spilled here */
    else
        zmsg_destroy(m);
}

static void
s_client_put_obj(nm_t *nm, nm_client_t *c, const exec_obj_t *d)
{
    if (c->nout == 0)
        util_buf_put_u32(&c->out, 0); /* count, set when sent */
    exec_obj_encode(&c->out, d);
    c->nout++;
    if (!c->dirty) {
        c->dirty = true;
        c->next_dirty = nm->dirty;
        nm->dirty = c;
    }
}

void
nm_client_send_obj(nm_t *nm, nm_client_t *c, const nm_obj_t *o, bool pinned)
{
    exec_obj_t d;
    /* a spilled one would be described by the place it left: a failed
       rebuild keeps its task's outputs held on disk, and answers the
       clients waiting for the task with all its outputs (s_answer_waiters);
       a peer that got such a place would be sent the bytes there now
       (nm_remote_send). A client learns of it when it asks. */
    if (!c || o->state == OBJ_SPILLED)
        return;
    nm_obj_describe(nm, o, &d);
    d.pinned = pinned && d.where == EXEC_W_ARENA;
    s_client_put_obj(nm, c, &d);
}

void
nm_client_send_unavailable(nm_t *nm, nm_client_t *c, const lux_ref_t *id, int code,
                           const char *msg)
{
    if (!c)
        return;
    size_t n = strlen(msg);
    exec_obj_t d = {.id = *id, .where = EXEC_W_UNAVAILABLE, .bytes = (const uint8_t *) msg,
                    .size = n > 4000 ? 4000 : n, .code = code < 0 && code > -256 ? code : LUX_EIO};
    s_client_put_obj(nm, c, &d);
}

void
nm_flush_clients(nm_t *nm)
{
    while (nm->dirty) {
        nm_client_t *c = nm->dirty;
        nm->dirty = c->next_dirty;
        c->dirty = false;
        c->next_dirty = NULL;
        if (c->nout == 0 || c->out.oom) {
            if (c->out.oom)
                log_error("out of memory telling client %d about objects", (int) c->pid);
            c->out.len = 0;
            c->out.oom = false;
            c->nout = 0;
            continue;
        }
        util_le32(c->out.data, c->nout);
        zmsg_t *m = zmsg_new();
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_OBJECTS, NET_NO_SHARD, 0)});
        zmsg_addmem(m, c->out.data, c->out.len);
        nm_send(nm, c, &m);
        c->out.len = 0;
        c->nout = 0;
        if (c->out.cap > (4u << 20))
            util_buf_free(&c->out);
    }
}

/* Tell the owner that o is ready (or failed). Clients that asked for it
   before it existed wait on its task (nm_task_t.waiters), not on it. */
void
nm_obj_ready(nm_t *nm, nm_obj_t *o)
{
    if (o->owned && o->owner)
        nm_client_send_obj(nm, o->owner, o, false);
}

/* --- client pins ------------------------------------------------------------------------ */

void
nm_client_pin(nm_t *nm, nm_client_t *c, nm_obj_t *o)
{
    uint32_t *n = util_idmap_put(c->pins, o->id.b, NULL);
    if (!n)
        return;
    o->unread = 0; /* a reader has it */
    if ((*n)++ == 0)
        nm_obj_pin(nm, o);
}

void
nm_client_unpin(nm_t *nm, nm_client_t *c, const lux_ref_t *id)
{
    uint32_t *n = util_idmap_get(c->pins, id->b);
    if (!n)
        return;
    util_idmap_del(c->pins, id->b);
    nm_obj_t *o = nm_obj_get(nm, id);
    if (o)
        nm_obj_unpin(nm, o);
}

/* --- the arena ------------------------------------------------------------------------------ */

/* Make room by evicting the least recently used unpinned object. false
   when nothing can be evicted. */
static bool
s_evict_one(nm_t *nm)
{
    nm_obj_t *o = nm->lru_head;
    char path[PATH_MAX + 64];
    if (!o)
        return false;
    s_lru_unlink(nm, o);
    /* a put has no lineage; a rebuilt output held for a waiting task
       beyond rule 10's bound (held_disk) is brought back for it, far
       cheaper than rebuilt, and cannot be evicted and rebuilt in turn
       for ever (DESIGN 7, rule 10); so is an argument an actor's restart
       replays (rule 15): each restart rebuilt it, and its lineage, again */
    const nm_obj_hold_t *h = o->holding ? util_idmap_get(nm->holds, o->id.b) : NULL;
    bool spill = o->is_put || (h && (h->held_disk || h->replay));
    int rc = 0;
    if (spill) {
        s_spill_path(nm, o, path, sizeof path);
        rc = s_spill(nm, o, path);
    }
    if (rc && o->is_put) {
        /* cannot spill: keep it, it is a put and has no lineage; a
           request refused for want of room says why (t/5105) */
        snprintf(nm->spill_why, sizeof nm->spill_why, "%s", lux_errmsg());
        log_error("cannot spill object: %s", nm->spill_why);
        s_lru_append(nm, o); /* evictable again later (was: never again) */
        return false;
    }
    if (rc) /* a rebuilt one: dropped as any output, rebuilt if needed */
        log_warn("cannot spill an object held for a task that waits or an actor's replay, so "
                 "it is dropped: %s", lux_errmsg());
    if (spill && !rc) {
        nm_store_free(nm, o->off);
        o->state = OBJ_SPILLED;
        nm->n_spilled++;
        nm_log_object(nm, o, DB_K_object_spilled, path);
    } else {
        nm_store_free(nm, o->off);
        o->state = OBJ_LOST;
        nm->n_evicted++;
        nm_log_object(nm, o, DB_K_object_lost, "evicted to make room");
        if (o->rebuilt && !o->owned && !o->uses)
            nm_obj_delete(nm, o); /* a rebuilt copy nothing needed: gone */
    }
    return true;
}

bool
nm_obj_evict(nm_t *nm, nm_obj_t *o)
{
    if (o->state != OBJ_READY || o->where != EXEC_W_ARENA || o->pins)
        return false; /* not in the LRU list: not evictable */
    s_lru_unlink(nm, o); /* first in line, then evicted as any */
    o->lru_next = nm->lru_head;
    if (nm->lru_head)
        nm->lru_head->lru_prev = o;
    else
        nm->lru_tail = o;
    nm->lru_head = o;
    return s_evict_one(nm);
}

typedef struct {
    nm_t *nm;
    uint64_t pinned, pinned_bytes, arena_bytes, granted;
    uint64_t read, read_bytes; /* pins of readers (lux_get in place), per reader */
    uint64_t spilled, spilled_bytes; /* on disk (or on their way there), out of the store */
    uint64_t disk, disk_bytes; /* of those, outputs held on disk for tasks that wait
                                  (rule 10), each brought back at its task's dispatch */
} s_census_t;

static int
s_census(void *arg, const void *key, void *value)
{
    s_census_t *c = arg;
    nm_obj_t *o = *(nm_obj_t **) value;
    if (o->state == OBJ_READY && o->where == EXEC_W_ARENA) {
        c->arena_bytes += o->size;
        if (o->pins) {
            c->pinned++;
            c->pinned_bytes += o->size;
        }
    } else if (o->state == OBJ_SPILLED) {
        c->spilled++;
        c->spilled_bytes += o->size;
        if (nm_obj_held_disk(c->nm, o)) {
            c->disk++;
            c->disk_bytes += o->size;
        }
    }
    return 0;
}

static int
s_grant_sum(void *arg, const void *key, void *value)
{
    (void) key;
    ((s_census_t *) arg)->granted += *(uint64_t *) value;
    return 0;
}

static int
s_census_read(void *arg, const void *key, void *value)
{
    s_census_t *c = arg;
    nm_obj_t *o = nm_obj_get(c->nm, (const lux_ref_t *) key);
    (void) value;
    if (o && o->state == OBJ_READY && o->where == EXEC_W_ARENA) {
        c->read++;
        c->read_bytes += o->size;
    }
    return 0;
}

static int
s_census_grants(void *arg, const void *key, void *value)
{
    nm_client_t *c = *(nm_client_t **) value;
    (void) key;
    util_idmap_each(c->allocs, s_grant_sum, arg);
    util_idmap_each(c->pins, s_census_read, arg);
    return 0;
}

int
nm_store_try(nm_t *nm, uint64_t size, uint64_t *off)
{
    if (size > nm->store_bytes)
        return LUX_EFULL;
    for (;;) {
        int rc = exec_arena_alloc(nm->arena, (size_t) size, off);
        /* evict in LRU order until a block is free that is big enough
           (not only enough bytes: a fragmented store evicts more); when
           nothing is left to evict, the arguments reserved for tasks not
           yet running go back to the LRU list first */
        if (rc != LUX_EFULL)
            return rc;
        if (!s_evict_one(nm) && !nm->ops.unreserve_all(nm))
            break;
    }
    /* What is left holds pins (objects being read, arguments of running
       tasks) or is granted: when the bytes are there all the same, only
       cut into blocks too small, the object goes to the spare region,
       whose pages it gives back when it goes. Fragmentation then never
       fails nor delays an allocation; only the store's size does. */
    uint64_t rounded = (size + 63) / 64 * 64;
    bool over = exec_arena_used(nm->arena) + rounded > nm->store_bytes;
    if (over && !nm->store_over)
        return LUX_EFULL;
    /* A request that has waited its LUX_STORE_WAIT_MS for bytes the pins
       of running tasks hold (store_over) goes there too, beyond the
       store's size, up to the spare region's: those tasks may be waiting,
       through nested gets, for the very task that asks, and nothing else
       would ever free them (DESIGN 7, rule 8). */
    int rc = exec_arena_alloc_spare(nm->arena, (size_t) size, off);
    if (rc == 0) {
        nm->n_spare++;
        if (over && !nm->n_over++)
            log_warn("the object store (%llu bytes) is full of objects in use: %llu bytes "
                     "placed beyond its size after a wait (and so from now on, when needed)",
                     (unsigned long long) nm->store_bytes, (unsigned long long) size);
    }
    return rc;
}

#define S_CTX_ROOM 200 /* bytes a "no room" error leaves for its callers' context
                          (a task's "task ID (fn) failed: ", lux_set's "return I of N
                          bytes: "...) within UTIL_ERRMSG_MAX */
#define S_WHY_MIN 96   /* ... and the least it gives the spill's error */

/* src, a spill's error ("spill PATH: write: WHY"), into dst of n bytes:
   whole when it fits, else with the middle of its path cut out for
   "...", the text after the path (the disk's error) kept whole. */
static void
s_elide_path(char *dst, size_t n, const char *src)
{
    size_t len = strlen(src);
    if (len < n) {
        memcpy(dst, src, len + 1);
        return;
    }
    const char *path = strchr(src, '/');
    const char *end = path ? strstr(path, ": ") : NULL;
    size_t head = path ? (size_t) (path - src) : 0;
    size_t cut = len - (n - 1) + 3; /* what goes, "..." included */
    size_t plen = path && end ? (size_t) (end - path) : 0;
    if (plen < cut + 16) { /* no path to cut, or too little of it: the end goes */
        snprintf(dst, n, "%s", src);
        return;
    }
    size_t keep = plen - cut, front = keep / 3, back = keep - front;
    snprintf(dst, n, "%.*s%.*s...%.*s%s", (int) head, src, (int) front, path, (int) back,
             end - back, end);
}

int
nm_store_alloc(nm_t *nm, uint64_t size, uint64_t *off)
{
    if (size > nm->store_bytes)
        return util_err(LUX_EFULL, "an object of %llu bytes is larger than the object store "
                        "(%llu bytes)", (unsigned long long) size,
                        (unsigned long long) nm->store_bytes);
    nm->spill_why[0] = '\0';
    int rc = nm_store_try(nm, size, off);
    if (rc != LUX_EFULL)
        return rc; /* 0, or what the arena said */
    s_census_t c = {.nm = nm};
    uint64_t blobs, blob_bytes;
    util_idmap_each(nm->objects, s_census, &c);
    util_idmap_each(nm->clients, s_census_grants, &c);
    nm_blob_census(nm, &blobs, &blob_bytes);
    char tasks[256] = "", disk[128] = "";
    if (nm->ops.task_census)
        nm->ops.task_census(nm, tasks, sizeof tasks);
    /* out of the store, but each needs its room again when read or run:
       rule 10's held copies are brought back at their tasks' dispatch
       (said only when there are some: the message has UTIL_ERRMSG_MAX
       bytes, and a spill's error comes last) */
    if (c.spilled)
        snprintf(disk, sizeof disk, "; spilled: %llu objects (%llu B), %llu of them held on "
                 "disk for tasks that wait (%llu B)", (unsigned long long) c.spilled,
                 (unsigned long long) c.spilled_bytes, (unsigned long long) c.disk,
                 (unsigned long long) c.disk_bytes);
    char msg[UTIL_ERRMSG_MAX], why[UTIL_ERRMSG_MAX];
    int n = snprintf(msg, sizeof msg, "the object store (%llu bytes) has no room for %llu bytes:"
                    " %llu bytes are in use: %llu in %llu objects being read or used by"
                    " tasks (pins of readers: %llu, %llu bytes; puts being recorded for"
                    " replay: %llu, %llu bytes; the rest of tasks),"
                    " %llu granted to tasks and not yet filled, %llu in the spare"
                    " region (whose free bytes are %llu); the largest free block outside it is %llu"
                    " bytes%s%s%s",
                    (unsigned long long) nm->store_bytes, (unsigned long long) size,
                    (unsigned long long) exec_arena_used(nm->arena),
                    (unsigned long long) c.pinned_bytes, (unsigned long long) c.pinned,
                    (unsigned long long) c.read, (unsigned long long) c.read_bytes,
                    (unsigned long long) blobs, (unsigned long long) blob_bytes,
                    (unsigned long long) c.granted,
                    (unsigned long long) exec_arena_spare_used(nm->arena),
                    (unsigned long long) (exec_arena_size(nm->arena) - nm->store_bytes -
                                          exec_arena_spare_used(nm->arena)),
                    (unsigned long long) exec_arena_largest_free(nm->arena), disk, tasks,
                    nm->spill_why[0] ? "; puts that would make room cannot be spilled: " : "");
    if (!nm->spill_why[0])
        return util_err(LUX_EFULL, "%s", msg);
    /* the spill's error comes last and names a file, whose path may be
       long (--dir): its middle gives way, so that the census and the
       disk's error fit, with room left for a caller's context */
    size_t room = n > 0 && (size_t) n + S_CTX_ROOM < sizeof msg ? sizeof msg - S_CTX_ROOM - (size_t) n
                                                                : 0;
    s_elide_path(why, room < S_WHY_MIN ? S_WHY_MIN : room, nm->spill_why);
    return util_err(LUX_EFULL, "%s%s", msg, why);
}

/* Whether c has an ALLOC waiting for room. */
static bool
s_alloc_waiting(nm_t *nm, const nm_client_t *c)
{
    for (nm_alloc_wait_t *w = nm->alloc_waits; w; w = w->next)
        if (w->c == c)
            return true;
    return false;
}

/* A task other than c's is running (a pool worker busy, or an actor's
   call out, neither blocked in a get nor itself waiting for room), whose
   end unpins its arguments and gives back what it was granted. Otherwise
   what holds the store is readers' pins (a driver keeping what it read),
   blocked tasks and tasks not yet running, which no wait frees: they may
   well be waiting for c itself (DESIGN 7, rule 9). Two tasks whose
   outputs each wait for the other's end (seed 5's last two waits of
   10 s) wait for nothing either. */
bool
nm_store_room_may_come(nm_t *nm, const nm_client_t *c)
{
    for (nm_worker_t *w = nm->workers; w; w = w->next) {
        if (w->client == c || w->reaped || w->call_blocked || !w->client ||
            s_alloc_waiting(nm, w->client))
            continue;
        if (w->actor ? w->actor->sent != NULL : w->state == W_BUSY) {
            nm->room_may_ms = util_mono_ms();
            return true;
        }
    }
    return false;
}

bool
nm_store_room_stuck(nm_t *nm, const nm_client_t *c, int64_t since_ms, bool *noted,
                    const char *what, uint64_t size)
{
    /* with no task blocked in a get, what holds the store is readers,
       running tasks that have had their wait, and tasks not yet running:
       the request has had its chance (rule 9) */
    bool blocked = false;
    for (nm_worker_t *w = nm->workers; w && !blocked; w = w->next)
        blocked = !w->reaped && w->client && w->client != c &&
                  (w->state == W_BLOCKED || w->call_blocked);
    if (!blocked)
        return true;
    /* however long tasks run: one that never ends (a server's loop) must
       not hold the request for ever either */
    int64_t now = util_mono_ms();
    if (now - since_ms >= nm->store_wait_max_ms)
        return true;
    /* blocked ones let go when what they wait for ends: while something
       runs, or ran lately (one may have just been woken), wait on */
    if (!nm_store_room_may_come(nm, c) && now - nm->room_may_ms >= nm->store_wait_ms)
        return true;
    if (!*noted && now - since_ms >= nm->store_wait_ms) {
        *noted = true;
        util_complain_lvl(&nm->room_note, UTIL_LOG_WARN,
                          "%s of %llu bytes waits for room past LUX_STORE_WAIT_MS (%lld ms): "
                          "tasks blocked in gets hold the store while others run (DESIGN 7, "
                          "rule 13); it fails after LUX_STORE_WAIT_MAX_MS (%lld ms) in all",
                          what, (unsigned long long) size, (long long) nm->store_wait_ms,
                          (long long) nm->store_wait_max_ms);
    }
    return false;
}

void
nm_store_free(nm_t *nm, uint64_t off)
{
    exec_arena_free(nm->arena, off);
    nm->store_gen++;
}

static int
s_free_grant(void *arg, const void *key, void *value)
{
    uint64_t off;
    (void) value;
    memcpy(&off, key, 8);
    nm_store_free(arg, off);
    return 0;
}

void
nm_client_drop_grants(nm_t *nm, nm_client_t *c)
{
    if (!c->allocs || util_idmap_size(c->allocs) == 0)
        return;
    util_idmap_each(c->allocs, s_free_grant, nm);
    util_idmap_clear(c->allocs);
}

/* o's spill file (its path into path[np]) read into dst, o->size bytes:
   0 with *same telling whether they match o's fingerprint, or the read's
   error. The file is outside our memory: what comes back must be the
   object that went out (a file replaced by another of the same size
   would otherwise be handed out as it). */
static int
s_read_spilled(nm_t *nm, const nm_obj_t *o, uint8_t *dst, char *path, size_t np, bool *same)
{
    uint8_t fp[16];
    int rc;
    s_spill_path(nm, o, path, np);
    if ((rc = exec_spill_read(path, dst, (size_t) o->size)))
        return rc;
    exec_fingerprint(fp, dst, (size_t) o->size);
    *same = memcmp(fp, o->fp, 16) == 0;
    return 0;
}

/* Read o's spilled file into the store at off (o's bytes checked against
   its fingerprint; a mismatch makes o an error for good), and remove it. */
static int
s_restore_file(nm_t *nm, nm_obj_t *o, uint64_t off)
{
    char path[PATH_MAX + 64], hex[LUX_REF_LEN * 2 + 1];
    bool same = false;
    int rc = s_read_spilled(nm, o, exec_arena_base(nm->arena) + off, path, sizeof path, &same);
    if (rc)
        return util_err_ctx(rc, "restoring a spilled object");
    if (!same) {
        char msg[PATH_MAX + 200];
        util_hex(hex, o->id.b, LUX_REF_LEN);
        snprintf(msg, sizeof msg, "object %s: its spilled copy %s does not match the object's "
                 "fingerprint (the file was changed or damaged); the object is lost", hex, path);
        log_error("%s", msg);
        nm_log_object(nm, o, DB_K_object_lost, "its spilled copy does not match its fingerprint");
        unlink(path);
        nm_obj_set_error(nm, o, msg);
        return util_err(LUX_ECORRUPT, "%s", msg);
    }
    unlink(path);
    return 0;
}

int
nm_obj_copy_spilled(nm_t *nm, const nm_obj_t *o, uint8_t **out)
{
    char path[PATH_MAX + 64], hex[LUX_REF_LEN * 2 + 1];
    *out = NULL;
    util_hex(hex, o->id.b, LUX_REF_LEN);
    uint8_t *buf = malloc(o->size ? (size_t) o->size : 1);
    if (!buf)
        return util_err(LUX_ENOMEM, "object %s: no memory for a copy of its %llu spilled bytes",
                        hex, (unsigned long long) o->size);
    struct nm_spill_job *j = s_job_of(nm, o);
    if (j) { /* its write on its way (or failed): the heap copy is its copy */
        memcpy(buf, j->buf, (size_t) o->size);
        *out = buf;
        return 0;
    }
    bool same = false;
    int rc = s_read_spilled(nm, o, buf, path, sizeof path, &same);
    if (rc || !same) {
        free(buf);
        return rc ? util_err_ctx(rc, "object %s: reading its spilled copy", hex)
                  : util_err(LUX_ECORRUPT, "object %s: its spilled copy %s does not match the "
                             "object's fingerprint (the file was changed or damaged)", hex, path);
    }
    *out = buf;
    return 0;
}

int
nm_obj_restore(nm_t *nm, nm_obj_t *o)
{
    uint64_t off;
    int rc;
    if (o->state != OBJ_SPILLED)
        return 0;
    /* the object is not in the LRU list, so making room never evicts it;
       a copy of it on the heap (its write on its way, or failed on a full
       disk) goes once it is back, so the puts evicted for it may be held
       there beyond the store's size by as much: else a disk full held its
       puts out of the store for good (t/5105) */
    nm->spill_credit = o->spilling ? o->size : 0;
    rc = nm_store_alloc(nm, o->size, &off);
    nm->spill_credit = 0;
    if (rc)
        return rc;
    nm_obj_spill_tick(nm); /* a write done: the file is the copy (t/3123 checks it) */
    /* the block's pages first: writing a page /dev/shm has no room for
       would kill this process with SIGBUS (exec_arena.h) */
    if ((rc = exec_arena_ready(nm->arena, off, (size_t) o->size)))
        rc = util_err_ctx(rc, "restoring a spilled object");
    else if (!o->spilling)
        rc = s_restore_file(nm, o, off);
    if (rc) {
        nm_store_free(nm, off);
        return rc;
    }
    if (o->spilling) {
        /* its copy on the heap: the write is on its way (or failed) */
        memcpy(exec_arena_base(nm->arena) + off, s_job_of(nm, o)->buf, (size_t) o->size);
        s_spill_detach(nm, o);
    }
    o->off = off;
    o->where = EXEC_W_ARENA;
    o->state = OBJ_READY;
    s_lru_append(nm, o);
    return 0;
}
