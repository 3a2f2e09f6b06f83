/*  exec_client - the connection behind lux_t, and the public calls that
    run on it: lux_call, lux_put, lux_get, lux_wait, lux_free, lux_cancel.
    What a task asks of its own task (lux_set...) is exec_client_task.c;
    the actor calls are exec_client_actor.c; both use the plumbing this
    file shares with them (exec_client.h, the part "for ... only").

    Batching: submissions, small puts and frees queue in buffers and go out
    when a buffer holds S_BATCH items, when the oldest has waited
    S_FLUSH_NS, or before the client waits for anything. So a driver making
    a million calls sends a few thousand messages, and one making one call
    and getting its result sends it at once.

    Objects: the node manager tells a client about each object it owns as
    soon as it is ready (small values come inline); for anything else the
    client asks (GET), and the answer for an object in the store comes
    pinned, so the pointer lux_get gives stays valid until lux_free.
*/
#include "exec_client.h"
#include "../net/net_ep.h"
#include "../net/net_wire.h"
#include "../util/util_prof.h"
#include "../util/util_err.h"
#include "../util/util_fp.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>

#define S_BATCH 128
#define S_HANDOVER_MS 10000 /* lux_get of an object known ready: the node's answer */
#define S_FLUSH_NS 100000

/* --- sending ------------------------------------------------------------------------- */

void
exec_client_send_body(lux_t *lx, int type, const void *body, size_t n, const void *body2,
                      size_t n2)
{
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(type, NET_NO_SHARD, 0)});
    if (body)
        zmsg_addmem(m, body, n);
    if (body2)
        zmsg_addmem(m, body2, n2);
    exec_client_send(lx, &m);
}

void
exec_client_send(lux_t *lx, zmsg_t **m)
{
    /* a client does not run ahead of what the node has taken: wait for the
       socket to take it all (the node never blocks, so this ends) */
    if (net_link_send(lx->link, m) == 0 && net_link_pending(lx->link) &&
        net_link_drain(lx->link, 60000))
        log_error("client: %s", lux_errmsg());
}

static void
s_send_batch(lux_t *lx, int type, util_buf_t *b, uint32_t *count)
{
    if (*count == 0)
        return;
    util_le32(b->data, *count);
    exec_client_send_body(lx, type, b->data, b->len, NULL, 0);
    b->len = 0;
    *count = 0;
    if (b->cap > (8u << 20))
        util_buf_free(b);
}

/* Send what is queued, as one write: puts, submissions, frees, and the
   message that goes with them (type, body; none when type is 0), which
   is how a wait asks for what it waits on. */
static void
s_flush_with(lux_t *lx, int type, const void *body, size_t n)
{
    if (!type && !lx->nput && !lx->nsubmit && !lx->nfree)
        return; /* nothing queued: lux_get of what is here stays cheap */
    net_link_hold(lx->link, true);
    s_send_batch(lx, NET_PUT, &lx->put, &lx->nput);
    s_send_batch(lx, NET_SUBMIT, &lx->submit, &lx->nsubmit);
    s_send_batch(lx, NET_FREE, &lx->freeb, &lx->nfree);
    if (type)
        exec_client_send_body(lx, type, body, n, NULL, 0);
    lx->pending_ns = 0;
    if (net_link_hold(lx->link, false) == 0 && net_link_pending(lx->link) &&
        net_link_drain(lx->link, 60000))
        log_error("client: %s", lux_errmsg());
}

void
exec_client_flush(lux_t *lx)
{
    s_flush_with(lx, 0, NULL, 0);
}

/* Start a batch item in b (count header first). */
void
exec_client_batch_start(lux_t *lx, util_buf_t *b, uint32_t count)
{
    if (count == 0) {
        b->len = 0;
        util_buf_put_u32(b, 0);
        if (!lx->pending_ns)
            lx->pending_ns = util_mono_ns();
    }
}

void
exec_client_maybe_flush(lux_t *lx, uint32_t count)
{
    if (count >= S_BATCH || (lx->pending_ns && util_mono_ns() - lx->pending_ns > S_FLUSH_NS))
        exec_client_flush(lx);
}

/* --- objects --------------------------------------------------------------------------- */

exec_cobj_t *
exec_client_obj(lux_t *lx, const lux_ref_t *ref, bool create)
{
    exec_cobj_t *o = util_idmap_get(lx->objs, ref->b);
    if (!o && create)
        o = util_idmap_put(lx->objs, ref->b, NULL); /* zero-filled: PENDING */
    return o;
}

static void
s_obj_clear(exec_cobj_t *o)
{
    free(o->bytes);
    o->bytes = NULL;
}

static void
s_on_objects(lux_t *lx, zframe_t *body)
{
    util_rd_t r;
    util_rd_init(&r, zframe_data(body), zframe_size(body));
    uint32_t count = util_rd_u32(&r);
    for (uint32_t i = 0; i < count; i++) {
        exec_obj_t d;
        if (exec_obj_decode(&r, &d)) {
            log_error("client: malformed OBJECTS from the node");
            return;
        }
        exec_cobj_t *o = exec_client_obj(lx, &d.id, false);
        if (!o) {
            /* freed here before it came: if it came pinned, unpin it */
            if (d.pinned) {
                exec_client_batch_start(lx, &lx->freeb, lx->nfree);
                util_buf_put(&lx->freeb, d.id.b, LUX_REF_LEN);
                lx->nfree++;
            }
            continue;
        }
        o->asked = false;
        if (o->state == COBJ_READY && o->where == EXEC_W_INLINE && o->bytes) {
            /* told again (its owner is told, and a GET is answered): values
               never change, and lux_get handed out these bytes already */
            continue;
        }
        if (d.where == EXEC_W_UNAVAILABLE) {
            /* this get's answer, not the object's fate: its state stays */
            if (o->state == COBJ_READY && (o->pinned || o->where == EXEC_W_INLINE))
                continue; /* it came meanwhile */
            s_obj_clear(o);
            o->bytes = malloc(d.size + 1);
            if (o->bytes) {
                memcpy(o->bytes, d.bytes, d.size);
                o->bytes[d.size] = '\0';
            }
            o->unavail = true;
            o->code = (int8_t) d.code;
            continue;
        }
        o->unavail = false;
        o->cancelled = d.where == EXEC_W_CANCELLED;
        if (d.where == EXEC_W_CANCELLED)
            d.where = EXEC_W_ERROR; /* an error whose code is LUX_ECANCELLED */
        if (d.where == EXEC_W_ERROR || d.where == EXEC_W_INLINE || d.where == EXEC_W_MISSING) {
            s_obj_clear(o);
            o->bytes = malloc(d.size + 1);
            if (!o->bytes) {
                o->state = COBJ_ERROR;
                continue;
            }
            memcpy(o->bytes, d.bytes, d.size);
            o->bytes[d.size] = '\0';
            o->size = d.size;
            o->state = d.where == EXEC_W_ERROR     ? COBJ_ERROR
                       : d.where == EXEC_W_MISSING ? COBJ_MISSING
                                                   : COBJ_READY;
            o->where = EXEC_W_INLINE;
        } else {
            s_obj_clear(o);
            o->state = COBJ_READY;
            o->where = EXEC_W_ARENA;
            o->off = d.off;
            o->size = d.size;
            o->pinned = o->pinned || d.pinned;
        }
    }
}

void
exec_client_handle(lux_t *lx, zmsg_t *msg)
{
    zframe_t *hf = zmsg_first(msg), *body = zmsg_next(msg);
    net_hdr_t h;
    if (net_hdr_decode(&h, hf)) {
        log_error("client: %s", lux_errmsg());
        return;
    }
    if (h.type == NET_OBJECTS && body)
        s_on_objects(lx, body);
    else if (h.type == NET_TASKS && lx->later)
        zlist_append(lx->later, zmsg_dup(msg));
}

/* Poll the link for the spin window (util_spin.h), yielding between polls:
   a driver waiting for the answer to a quick call keeps its CPU, so the
   node's answer wakes nothing. A message, or NULL when none came. */
static zmsg_t *
s_spin(lux_t *lx, int64_t t0)
{
    zmsg_t *m = NULL;
    while (util_spin_window(&lx->spin) > 0 && !net_link_dead(lx->link)) {
        net_link_read(lx->link);
        if ((m = net_link_next(lx->link)) || !util_spin_again(&lx->spin, t0))
            break;
    }
    return m;
}

bool
exec_client_poll(lux_t *lx, int timeout_ms)
{
    zmsg_t *m = net_link_next(lx->link);
    if (!m) {
        if (net_link_dead(lx->link))
            return false;
        /* a worker's window never opens: no clock to read */
        bool spins = timeout_ms != 0 && lx->spin.max_ns > 0;
        int64_t t0 = spins ? util_mono_ns() : 0;
        bool fired = spins && (m = s_spin(lx, t0)) != NULL;
        if (!fired && !net_link_dead(lx->link)) {
            struct pollfd pf = {net_link_fd(lx->link), POLLIN, 0};
            fired = poll(&pf, 1, timeout_ms) > 0;
        }
        if (spins)
            util_spin_update(&lx->spin, util_mono_ns() - t0, fired);
        if (!fired)
            return false;
        if (!m) {
            net_link_read(lx->link);
            if (!(m = net_link_next(lx->link)))
                return !net_link_dead(lx->link);
        }
    }
    do {
        exec_client_handle(lx, m);
        zmsg_destroy(&m);
    } while ((m = net_link_next(lx->link)));
    return true;
}

/* LUX_EDEAD for `what`, which waited on the node manager: it is gone
   (its connection closed: killed, crashed, or stopped). */
int
exec_client_gone(lux_t *lx, const char *what)
{
    return util_err(LUX_EDEAD, "%s: the node manager at %s is gone (its connection closed)",
                    what, lx->dir[0] ? lx->dir : "?");
}

/* Whether the node manager is gone and nothing it sent before it went is
   left to handle: a wait that finds this must end (every wait's end when
   the node dies). */
static bool
s_node_gone(lux_t *lx)
{
    return net_link_dead(lx->link) && !exec_client_poll(lx, 0);
}

/* Wait for the node's answer to request req: a message of type whose
   body is the request ID, a code and n bytes (into out); messages that
   come first are handled. The code (0 or LUX_E*, with the node's text as
   the message), or LUX_EDEAD when the node goes (waiting for `what`). */
int
exec_client_await(lux_t *lx, int type, uint64_t req, uint8_t *out, size_t n, const char *what)
{
    return exec_client_await_ms(lx, type, req, out, n, what, -1);
}

int
exec_client_await_ms(lux_t *lx, int type, uint64_t req, uint8_t *out, size_t n,
                     const char *what, int64_t timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : util_mono_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline == INT64_MAX ? -1 : deadline - util_mono_ms();
        zmsg_t *m = left < 0 && deadline != INT64_MAX
                        ? NULL
                        : net_link_recv(lx->link, left > INT32_MAX ? INT32_MAX : (int) left);
        if (!m && net_link_dead(lx->link))
            return exec_client_gone(lx, what);
        if (!m && deadline != INT64_MAX && util_mono_ms() >= deadline)
            return util_err(LUX_ETIMEDOUT, "no answer from the node manager at %s within "
                            "%lld ms: waited for %s", lx->dir[0] ? lx->dir : "?",
                            (long long) timeout_ms, what);
        if (!m)
            return util_err_ctx(LUX_EDEAD, "waiting for %s", what);
        zframe_t *hf = zmsg_first(m), *body = zmsg_next(m);
        net_hdr_t h;
        if (net_hdr_decode(&h, hf) == 0 && h.type == type && body &&
            zframe_size(body) == 12 + n && util_rd64(zframe_data(body)) == req) {
            int rc = (int32_t) util_rd32(zframe_data(body) + 8);
            memcpy(out, zframe_data(body) + 12, n);
            if (rc) {
                char *why = zmsg_next(m) ? zframe_strdup(zmsg_last(m)) : NULL;
                util_err(rc, "%s", why ? why : lux_strerror(rc));
                free(why);
            }
            zmsg_destroy(&m);
            return rc;
        }
        exec_client_handle(lx, m);
        zmsg_destroy(&m);
    }
}

int
exec_client_alloc(lux_t *lx, uint64_t size, uint64_t *off)
{
    uint8_t b[16];
    uint64_t req = ++lx->alloc_req;
    util_le64(b, req);
    util_le64(b + 8, size);
    exec_client_flush(lx);
    exec_client_send_body(lx, NET_ALLOC, b, sizeof b, NULL, 0);
    uint8_t at[8];
    int rc = exec_client_await(lx, NET_ALLOC_REP, req, at, sizeof at, "room in the object store");
    *off = util_rd64(at);
    return rc;
}

/* Room for size bytes (exec_client_alloc) made ready to write: its pages
   are allocated now, so that a /dev/shm that others filled since the
   store was made is an error here rather than SIGBUS at the first write
   (exec_arena.h exec_arena_ready; the cost the writes would pay, paid in
   one system call, once per part of the store). When they cannot be had
   the room goes back to the node: LUX_EFULL, or the prefault's code. */
int
exec_client_alloc_room(lux_t *lx, uint64_t size, uint64_t *off)
{
    int rc = exec_client_alloc(lx, size, off);
    if (rc == 0 && (rc = exec_arena_ready(lx->arena, *off, (size_t) size))) {
        uint8_t b[8];
        util_le64(b, *off);
        exec_client_send_body(lx, NET_UNALLOC, b, sizeof b, NULL, 0);
    }
    return rc;
}

/* Whether every value argument fits in a message (LUX_VAL_MAX, which is
   EXEC_INLINE_MAX): 0, or LUX_EINVAL naming the first that does not. */
_Static_assert(LUX_VAL_MAX == EXEC_INLINE_MAX, "a value argument travels inline");
int
exec_client_check_values(const char *what, int argc, const lux_arg_t *argv)
{
    for (int i = 0; i < argc; i++)
        if (!argv[i].ref && argv[i].size > LUX_VAL_MAX)
            return util_err(LUX_EINVAL,
                            "%s: argument %d is a value of %zu bytes; values are at most %d "
                            "bytes (LUX_VAL_MAX): pass it with lux_put and a ref",
                            what, i, argv[i].size, LUX_VAL_MAX);
    return 0;
}

/* Frees go out after the calls queued with them (one write: puts, calls,
   frees), which would let a call made after lux_free of its argument
   still find the object, or not, depending on whether a batch was sent
   in between. A ref freed before a call that takes it is freed for that
   call, always: the queued frees go first when the call names one. */
void
exec_client_frees_first(lux_t *lx, int argc, const lux_arg_t *argv)
{
    if (!lx->nfree)
        return;
    for (int i = 0; i < argc; i++) {
        if (!argv[i].ref)
            continue;
        for (uint32_t k = 0; k < lx->nfree; k++)
            if (memcmp(lx->freeb.data + 4 + (size_t) k * LUX_REF_LEN, argv[i].ref->b,
                       LUX_REF_LEN) == 0) {
                exec_client_flush(lx);
                return;
            }
    }
}

/* --- IDs --------------------------------------------------------------------------------- */

void
exec_client_next_id(lux_t *lx, util_id_t *id)
{
    util_id_child(id, &lx->job, &lx->root, ++lx->counter);
}

char *
lux_ref_hex(const lux_ref_t *ref, char *out)
{
    util_hex(out, ref->b, LUX_REF_LEN);
    return out;
}

int
lux_ref_parse(lux_ref_t *ref, const char *hex)
{
    return util_unhex(ref->b, LUX_REF_LEN, hex);
}

/* --- connecting ---------------------------------------------------------------------------- */

lux_t *
exec_client_connect(const char *endpoint, int kind, const char *name, const char *info)
{
    lux_t *lx = calloc(1, sizeof *lx);
    if (!lx) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    bool detached = (kind & EXEC_CONNECT_DETACHED) != 0;
    kind &= ~EXEC_CONNECT_DETACHED;
    lx->kind = kind;
    util_spin_init(&lx->spin, kind == EXEC_HELLO_DRIVER
                                  ? util_spin_max_env("LUX_SPIN_US", UTIL_SPIN_DEFAULT_NS)
                                  : 0);
    util_id_random(&lx->id);
    util_buf_init(&lx->submit);
    util_buf_init(&lx->put);
    util_buf_init(&lx->freeb);
    util_buf_init(&lx->scratch);
    if (!(lx->objs = util_idmap_new_keyed(LUX_REF_LEN, sizeof(exec_cobj_t))))
        goto fail;
    if (!(lx->link = net_link_connect(endpoint))) {
        util_err_ctx(LUX_ENOTFOUND, "no node manager");
        goto fail;
    }
    /* hello: kind, pid, our ID, job (a fresh one for a driver) */
    if (kind == EXEC_HELLO_DRIVER)
        util_id_random(&lx->job);
    util_buf_t *b = &lx->scratch;
    b->len = 0;
    util_buf_put_u8(b, (uint8_t) kind);
    util_buf_put_u32(b, (uint32_t) getpid());
    util_buf_put(b, lx->id.b, 16);
    util_buf_put(b, lx->job.b, 16);
    util_buf_put_str(b, name ? name : "", name ? strlen(name) : 0);
    util_buf_put_blob(b, info ? info : "", info ? strlen(info) : 0);
    util_buf_put_u32(b, 0);
    util_buf_put_u8(b, detached ? 1 : 0); /* flags */
    exec_client_send_body(lx, NET_NODE_HELLO, b->data, b->len, NULL, 0);
    zmsg_t *m = net_link_recv(lx->link, 10000);
    if (!m) {
        util_err_ctx(LUX_ETIMEDOUT, "the node manager at %s did not welcome us", endpoint);
        goto fail;
    }
    zframe_t *hf = zmsg_first(m), *body = zmsg_next(m);
    net_hdr_t h;
    util_rd_t r;
    if (net_hdr_decode(&h, hf) || h.type != NET_NODE_WELCOME || !body) {
        zmsg_destroy(&m);
        util_err(LUX_EPROTO, "the node manager at %s did not welcome us", endpoint);
        goto fail;
    }
    util_rd_init(&r, zframe_data(body), zframe_size(body));
    const uint8_t *node = util_rd_take(&r, 16), *job = util_rd_take(&r, 16);
    size_t nlen, dlen;
    const char *aname = util_rd_str(&r, &nlen);
    uint64_t asize = util_rd_u64(&r);
    const char *dir = util_rd_str(&r, &dlen);
    util_rd_u32(&r);
    if (r.bad || nlen >= sizeof lx->arena_name || dlen >= sizeof lx->dir) {
        zmsg_destroy(&m);
        util_err(LUX_EPROTO, "a malformed welcome from the node manager");
        goto fail;
    }
    memcpy(lx->node.b, node, 16);
    memcpy(lx->job.b, job, 16);
    memcpy(lx->arena_name, aname, nlen);
    memcpy(lx->dir, dir, dlen);
    zmsg_destroy(&m);
    if (!(lx->arena = exec_arena_open(lx->arena_name, true)))
        goto fail;
    exec_arena_set_store(lx->arena, asize); /* the spare region follows */
    /* a driver's root: a fixed child of its job, so IDs are deterministic */
    util_id_t zero = {{0}};
    util_id_child(&lx->root, &lx->job, &zero, 0);
    return lx;
fail:
    exec_client_close(&lx, 0);
    return NULL;
}

static int
s_free_value(void *arg, const void *key, void *value)
{
    s_obj_clear(value);
    return 0;
}

void
exec_client_close(lux_t **lx_p, int status)
{
    lux_t *lx = *lx_p;
    if (!lx)
        return;
    if (lx->link && lx->arena) {
        exec_client_flush(lx);
        if (lx->kind == EXEC_HELLO_DRIVER) {
            /* goodbye: the job ends; wait for the node to say it heard */
            util_buf_t *b = &lx->scratch;
            b->len = 0;
            util_buf_put_u8(b, 3);
            util_buf_put_u32(b, (uint32_t) getpid());
            util_buf_put(b, lx->id.b, 16);
            util_buf_put(b, lx->job.b, 16);
            util_buf_put_str(b, "", 0);
            util_buf_put_blob(b, status ? "failed" : "ok", status ? 6 : 2);
            util_buf_put_u32(b, (uint32_t) status);
            exec_client_send_body(lx, NET_NODE_HELLO, b->data, b->len, NULL, 0);
            int64_t deadline = util_mono_ms() + 5000;
            while (util_mono_ms() < deadline) {
                zmsg_t *m = net_link_recv(lx->link, 200);
                if (!m && net_link_dead(lx->link))
                    break;
                if (!m)
                    continue;
                net_hdr_t h;
                bool done = net_hdr_decode(&h, zmsg_first(m)) == 0 && h.type == NET_NODE_WELCOME;
                zmsg_destroy(&m);
                if (done)
                    break;
            }
        }
    }
    if (lx->objs) {
        util_idmap_each(lx->objs, s_free_value, NULL);
        util_idmap_destroy(&lx->objs);
    }
    net_link_destroy(&lx->link);
    exec_arena_destroy(&lx->arena);
    util_buf_free(&lx->submit);
    util_buf_free(&lx->put);
    util_buf_free(&lx->freeb);
    util_buf_free(&lx->scratch);
    free(lx->self_refs);
    if (lx->later) {
        zmsg_t *m;
        while ((m = zlist_pop(lx->later)))
            zmsg_destroy(&m);
        zlist_destroy(&lx->later);
    }
    free(lx);
    *lx_p = NULL;
}

/* --- calls ------------------------------------------------------------------------------------ */

/* Find fn: in the client's module, else among the functions built into
   this program (whose module is the program's own executable). */
const exec_fn_t *
exec_client_find_fn(lux_t *lx, const char *fn, exec_module_t **m)
{
    const exec_fn_t *f = NULL;
    size_t len = strlen(fn);
    if (lx->module && (f = exec_module_fn(lx->module, fn, len))) {
        *m = lx->module;
        return f;
    }
    *m = exec_module_builtin();
    return exec_module_fn(*m, fn, len);
}

/* Send a module's bytes to the node (once): it keeps them and logs them. */
int
exec_client_send_module(lux_t *lx, exec_module_t *m, const char *path)
{
    uint8_t *bytes, hash[16];
    size_t n;
    int rc = exec_module_read(path, &bytes, &n, hash);
    if (rc)
        return rc;
    exec_client_flush(lx);
    exec_client_send_body(lx, NET_MODULE, exec_module_hash(m), 16, bytes, n);
    free(bytes);
    return 0;
}

int
lux_call_opts(lux_t *lx, const lux_opts_t *opts, const char *fn, int argc, const lux_arg_t *argv,
              int nret, lux_ref_t *refs)
{
    exec_module_t *m;
    const exec_fn_t *f;
    if (!lx || !fn)
        return util_err(LUX_EINVAL, "lux_call: no connection or no function name");
    if (!(f = exec_client_find_fn(lx, fn, &m)) || f->kind != EXEC_FN_TASK)
        return util_err(LUX_ENOTFOUND, "lux_call: no function '%s' in the module%s%s", fn,
                        lx->module ? "" : " (lux_init was given no module)",
                        f ? " (it is an actor class or method: see lux_actor_create)" : "");
    if (nret != f->nret || nret < 0 || nret > EXEC_MAX_RETURNS)
        return util_err(LUX_EINVAL, "lux_call: %s returns %d values, not %d", fn, f->nret, nret);
    if ((f->nargs >= 0 && argc != f->nargs) || argc < 0 || argc > EXEC_MAX_ARGS)
        return util_err(LUX_EINVAL, "lux_call: %s takes %d arguments, not %d", fn, f->nargs,
                        argc);
    if (strlen(fn) > EXEC_NAME_MAX)
        return util_err(LUX_EINVAL, "lux_call: function name too long");
    if (net_link_dead(lx->link))
        return exec_client_gone(lx, "lux_call");
    if (m == exec_module_builtin() && !lx->builtin_sent) {
        int rc = exec_client_send_module(lx, m, "/proc/self/exe");
        if (rc)
            return rc;
        lx->builtin_sent = true;
    }
    int vrc = exec_client_check_values("lux_call", argc, argv);
    if (vrc)
        return vrc;
    exec_client_frees_first(lx, argc, argv);
    /* the arguments, encoded */
    util_buf_t *a = &lx->scratch;
    a->len = 0;
    for (int i = 0; i < argc; i++) {
        if (argv[i].ref)
            exec_arg_put_ref(a, argv[i].ref);
        else
            exec_arg_put_value(a, argv[i].data, (uint32_t) argv[i].size);
    }
    if (a->oom)
        return util_err(LUX_ENOMEM, "lux_call: out of memory");
    exec_spec_t s = {.parent = lx->root, .job = lx->job, .fn = fn,
                     .fn_len = (uint16_t) strlen(fn), .nret = (uint8_t) nret,
                     .max_attempts = (uint8_t) (opts && opts->max_attempts > 0
                                                    ? (opts->max_attempts > 255 ? 255
                                                                                : opts->max_attempts)
                                                    : 3),
                     .cpus_milli = (uint32_t) ((opts && opts->cpus > 0 ? opts->cpus : 1.0) * 1000 + 0.5),
                     .res = opts && opts->resources ? opts->resources : NULL,
                     .res_len = (uint16_t) (opts && opts->resources ? strlen(opts->resources) : 0),
                     .argc = (uint16_t) argc, .args = a->data, .args_len = (uint32_t) a->len,
                     .timeout_ms = (uint32_t) (opts && opts->timeout_ms > 0 ? opts->timeout_ms : 0)};
    memcpy(s.module, exec_module_hash(m), 16);
    exec_client_next_id(lx, &s.task);
    util_prof_stamp("d_call", s.task.b);
    exec_client_batch_start(lx, &lx->submit, lx->nsubmit);
    exec_spec_encode(&lx->submit, &s);
    if (lx->submit.oom)
        return util_err(LUX_ENOMEM, "lux_call: out of memory");
    lx->nsubmit++;
    for (int i = 0; i < nret; i++) {
        exec_ref_make(&refs[i], &s.task, (uint32_t) i);
        exec_cobj_t *o = exec_client_obj(lx, &refs[i], true);
        if (o)
            o->mine = true;
    }
    exec_client_maybe_flush(lx, lx->nsubmit);
    return 0;
}

int
lux_call(lux_t *lx, const char *fn, int argc, const lux_arg_t *argv, int nret, lux_ref_t *refs)
{
    return lux_call_opts(lx, NULL, fn, argc, argv, nret, refs);
}

int
lux_put(lux_t *lx, const void *data, size_t size, lux_ref_t *ref)
{
    util_id_t id;
    exec_obj_t d;
    if (!lx || (!data && size))
        return util_err(LUX_EINVAL, "lux_put: no connection or no data");
    exec_client_next_id(lx, &id);
    exec_ref_make(ref, &id, 0);
    exec_cobj_t *o = exec_client_obj(lx, ref, true);
    if (!o)
        return util_err(LUX_ENOMEM, "lux_put: out of memory");
    o->mine = true;
    memset(&d, 0, sizeof d);
    d.id = *ref;
    d.size = size;
    if (size <= EXEC_INLINE_MAX) {
        o->bytes = malloc(size + 1);
        if (!o->bytes)
            return util_err(LUX_ENOMEM, "lux_put: out of memory");
        memcpy(o->bytes, data, size);
        o->size = size;
        o->where = EXEC_W_INLINE;
        o->state = COBJ_READY;
        d.where = EXEC_W_INLINE;
        d.bytes = data;
        uint8_t fp[16];
        exec_fingerprint(fp, data, size);
        exec_client_batch_start(lx, &lx->put, lx->nput);
        exec_obj_encode(&lx->put, &d);
        util_buf_put(&lx->put, fp, 16);
        lx->nput++;
        exec_client_maybe_flush(lx, lx->nput);
        return 0;
    }
    uint64_t off;
    int rc = exec_client_alloc_room(lx, size, &off);
    if (rc) {
        util_idmap_del(lx->objs, ref->b);
        return util_err_ctx(rc, "lux_put of %zu bytes", size);
    }
    uint8_t fp[16];
    util_fp_copy(fp, exec_arena_base(lx->arena) + off, data, size);
    d.where = EXEC_W_ARENA;
    d.off = off;
    exec_client_batch_start(lx, &lx->put, lx->nput);
    exec_obj_encode(&lx->put, &d);
    util_buf_put(&lx->put, fp, 16);
    lx->nput++;
    exec_client_flush(lx);
    o->where = EXEC_W_ARENA;
    o->off = off;
    o->size = size;
    o->state = COBJ_READY;
    return 0;
}

/* --- waiting ------------------------------------------------------------------------------ */

/* An earlier get or wait of o could not be served (no room to bring back
   a spilled copy, a pull from another node failed): a new one asks the
   node again rather than repeat that answer. */
static void
s_ask_again(exec_cobj_t *o)
{
    if (!o->unavail)
        return;
    s_obj_clear(o);
    o->unavail = false;
    o->asked = false;
}

/* Whether o is as ready as we need: READY and readable (inline, or pinned
   in the store), or failed. Asks the node when it must. */
static bool
s_have(lux_t *lx, const lux_ref_t *ref, exec_cobj_t *o, bool readable)
{
    if (o->state == COBJ_ERROR || o->state == COBJ_MISSING || o->unavail)
        return true;
    if (o->state == COBJ_READY && (!readable || o->where == EXEC_W_INLINE || o->pinned))
        return true;
    if (!o->asked && (o->state == COBJ_READY || readable || !o->mine)) {
        /* in the store but not pinned for us, or someone else's (the
           node tells only the owner when it is made): ask */
        uint8_t b[4 + LUX_REF_LEN];
        /* for a wait: pulled from another node after gets (EXEC_GET_WAIT) */
        util_le32(b, 1 | (readable ? 0 : EXEC_GET_WAIT));
        memcpy(b + 4, ref->b, LUX_REF_LEN);
        s_flush_with(lx, NET_GET, b, sizeof b); /* one write with what was queued */
        o->asked = true;
    }
    return false;
}

/* In a worker, waiting inside a task: tell the node once, giving back the
   tasks not started, so their CPU can run what we wait for; then the
   worker reports the tasks it finished before this one (on_blocked), as
   what we wait for may need them. */
static void
s_block(lux_t *lx, bool blocked)
{
    if (lx->kind != EXEC_HELLO_WORKER || !lx->task || lx->blocked == blocked)
        return;
    util_buf_t *b = &lx->scratch;
    b->len = 0;
    util_buf_put_u8(b, blocked);
    size_t at = b->len;
    util_buf_put_u32(b, 0);
    uint32_t n = blocked && lx->giveback ? lx->giveback(lx, b) : 0;
    util_le32(b->data + at, n);
    exec_client_flush(lx);
    exec_client_send_body(lx, NET_BLOCKED, b->data, b->len, NULL, 0);
    lx->blocked = blocked;
    if (blocked && lx->on_blocked)
        lx->on_blocked(lx);
}

/* Whether ref is the result of a call the running method made to its own
   actor, which runs only after the method returns. */
static bool
s_self_ref(const lux_t *lx, const lux_ref_t *ref)
{
    for (uint32_t i = 0; i < lx->nself; i++)
        if (memcmp(lx->self_refs[i].b, ref->b, LUX_REF_LEN) == 0)
            return true;
    return false;
}

/* LUX_EDEADLK for waiting (in `what`) for such a ref. */
static int
s_self_wait(lux_t *lx, const char *what, const lux_ref_t *ref)
{
    char hex[LUX_REF_LEN * 2 + 1], act[UTIL_ID_HEX];
    s_block(lx, false);
    return util_err(LUX_EDEADLK,
                    "%s: object %s is the result of a call this method made to its own actor "
                    "%s, which runs only after the method returns: waiting for it would never "
                    "end",
                    what, lux_ref_hex(ref, hex), util_id_hex(&lx->self_actor, act));
}

/* lux_get_many without the flush at its end. What was queued (calls,
   frees) goes with the first GET, in one write, or before any wait.
   The deadline is taken when a get first has to wait: a get of what is
   here already reads no clock (a clock_gettime was a third of such a
   get's cost, t/3177; doc/benchmarks.md, 2026-11-29, stop 46). */
static int
s_get_many(lux_t *lx, int n, const lux_ref_t *refs, lux_val_t *out, int timeout_ms)
{
    int64_t deadline = INT64_MAX;
    bool timed = timeout_ms < 0; /* the deadline is set (none: never) */
    int rc = 0;
    for (int i = 0; i < n; i++) {
        exec_cobj_t *o = exec_client_obj(lx, &refs[i], true);
        bool handover = false;
        if (!o)
            return util_err(LUX_ENOMEM, "lux_get: out of memory");
        s_ask_again(o);
        while (!s_have(lx, &refs[i], o, true)) {
            if (!timed) {
                deadline = util_mono_ms() + timeout_ms;
                timed = true;
            }
            int64_t left = deadline - util_mono_ms();
            if (left <= 0 && o->state == COBJ_READY && !handover) {
                /* known ready, only the node's handing over of it left
                   (pinning it in the store for us): that is not waiting
                   for the object, so even a timeout of 0 allows it */
                handover = true;
                deadline = util_mono_ms() + S_HANDOVER_MS;
                left = S_HANDOVER_MS;
            }
            if (zsys_interrupted) {
                /* a worker told to stop (SIGTERM, also when its node
                   manager dies): the task ends rather than wait for ever */
                s_block(lx, false);
                return util_err(LUX_EINTR, "lux_get: interrupted (the worker was told to stop)");
            }
            if (lx->cancelled && lx->cancelled(lx)) {
                s_block(lx, false);
                return util_err(LUX_ECANCELLED, "lux_get: the task was cancelled (lux_cancel)");
            }
            if (left <= 0) {
                s_block(lx, false);
                char hex[LUX_REF_LEN * 2 + 1];
                return util_err(LUX_ETIMEDOUT, "lux_get: object %s not ready within %d ms",
                                lux_ref_hex(&refs[i], hex), timeout_ms);
            }
            if (s_self_ref(lx, &refs[i]))
                return s_self_wait(lx, "lux_get", &refs[i]);
            if (s_node_gone(lx)) {
                if (s_have(lx, &refs[i], o, true))
                    break; /* it came in the node's last words */
                return exec_client_gone(lx, "lux_get");
            }
            exec_client_flush(lx); /* nothing waits unsent while we wait */
            /* a worker tells the node it waits only when what it waits on
               is not there already; a driver just waits */
            if (lx->kind != EXEC_HELLO_WORKER || !exec_client_poll(lx, 0)) {
                s_block(lx, true);
                exec_client_poll(lx, left > 1000 ? 1000 : (int) left);
            }
            o = exec_client_obj(lx, &refs[i], true);
        }
        if (o->state == COBJ_ERROR || o->state == COBJ_MISSING || o->unavail) {
            if (!rc)
                rc = util_err(o->unavail                 ? o->code
                              : o->state == COBJ_MISSING ? LUX_ENOTFOUND
                              : o->cancelled             ? LUX_ECANCELLED
                                                         : LUX_ETASK,
                              "%s",
                              o->bytes ? (char *) o->bytes : "task failed");
            out[i].data = NULL;
            out[i].size = 0;
            continue;
        }
        out[i].data = o->where == EXEC_W_INLINE ? (const void *) o->bytes
                                                : exec_arena_base(lx->arena) + o->off;
        out[i].size = (size_t) o->size;
        if (util_prof_on()) {
            util_id_t tid;
            exec_ref_task(&refs[i], &tid);
            util_prof_stamp("d_got", tid.b);
        }
    }
    s_block(lx, false);
    return rc;
}

int
lux_get_many(lux_t *lx, int n, const lux_ref_t *refs, lux_val_t *out, int timeout_ms)
{
    if (!lx || n < 0)
        return util_err(LUX_EINVAL, "lux_get: no connection");
    int rc = s_get_many(lx, n, refs, out, timeout_ms);
    exec_client_flush(lx);
    return rc;
}

int
lux_get(lux_t *lx, const lux_ref_t *ref, lux_val_t *out, int timeout_ms)
{
    return lux_get_many(lx, 1, ref, out, timeout_ms);
}

int
lux_wait(lux_t *lx, int n, const lux_ref_t *refs, int k, int timeout_ms, int *ready)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : util_mono_ms() + timeout_ms;
    int count = 0;
    if (!lx || n < 0)
        return util_err(LUX_EINVAL, "lux_wait: no connection");
    if (k > n)
        k = n;
    exec_client_flush(lx);
    for (int i = 0; i < n; i++) {
        exec_cobj_t *o = exec_client_obj(lx, &refs[i], false);
        if (o)
            s_ask_again(o);
    }
    for (;;) {
        count = 0;
        for (int i = 0; i < n; i++) {
            exec_cobj_t *o = exec_client_obj(lx, &refs[i], true);
            bool r = o && s_have(lx, &refs[i], o, false);
            if (ready)
                ready[i] = r;
            count += r;
        }
        if (count >= k || zsys_interrupted) /* interrupted: see lux_get_many */
            break;
        int64_t left = deadline - util_mono_ms();
        if (left <= 0)
            break;
        if (lx->cancelled && lx->cancelled(lx)) {
            s_block(lx, false);
            return util_err(LUX_ECANCELLED, "lux_wait: the task was cancelled (lux_cancel)");
        }
        /* fewer than k ready, and too many of the rest can only come
           after the method returns */
        if (lx->nself) {
            int others = 0, self = -1;
            for (int i = 0; i < n; i++) {
                exec_cobj_t *o = exec_client_obj(lx, &refs[i], false);
                if (o && s_have(lx, &refs[i], o, false))
                    continue;
                if (!s_self_ref(lx, &refs[i]))
                    others++;
                else if (self < 0)
                    self = i;
            }
            if (self >= 0 && count + others < k)
                return s_self_wait(lx, "lux_wait", &refs[self]);
        }
        if (net_link_dead(lx->link) && !exec_client_poll(lx, 0))
            return exec_client_gone(lx, "lux_wait"); /* what it sent before is counted above */
        if (!exec_client_poll(lx, 0)) {
            s_block(lx, true);
            exec_client_poll(lx, left > 1000 ? 1000 : (int) left);
        }
    }
    s_block(lx, false);
    return count;
}

void
lux_free(lux_t *lx, int n, const lux_ref_t *refs)
{
    if (!lx)
        return;
    for (int i = 0; i < n; i++) {
        exec_cobj_t *o = exec_client_obj(lx, &refs[i], false);
        if (o) {
            s_obj_clear(o);
            util_idmap_del(lx->objs, refs[i].b);
        }
        exec_client_batch_start(lx, &lx->freeb, lx->nfree);
        util_buf_put(&lx->freeb, refs[i].b, LUX_REF_LEN);
        lx->nfree++;
    }
    exec_client_maybe_flush(lx, lx->nfree);
}

/* --- cancelling ------------------------------------------------------------------------------ */

int
lux_cancel(lux_t *lx, const lux_ref_t *ref, int force)
{
    if (!lx || !ref)
        return util_err(LUX_EINVAL, "lux_cancel: no connection or ref");
    uint8_t b[8 + 1 + LUX_REF_LEN], none[1];
    uint64_t req = ++lx->actor_req; /* one counter for the requests the node answers */
    util_le64(b, req);
    b[8] = force ? 1 : 0;
    memcpy(b + 9, ref->b, LUX_REF_LEN);
    exec_client_flush(lx); /* the call it cancels goes first */
    exec_client_send_body(lx, NET_CANCEL, b, sizeof b, NULL, 0);
    return exec_client_await(lx, NET_CANCEL_REP, req, none, 0, "the node manager's answer to lux_cancel");
}

int
lux_cancelled(lux_t *lx)
{
    return lx && lx->task && lx->cancelled && lx->cancelled(lx) ? 1 : 0;
}
