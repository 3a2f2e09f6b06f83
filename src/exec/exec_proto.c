/*  exec_proto - bodies of the runtime's messages. All integers
    little-endian, except the return index inside an object ID (big-endian,
    so an ID's hex reads task then index).

    OBJECT (exec_obj_t):
        id 20, where u8 (| 0x80: pinned for the client receiving it),
        size u64, then
            INLINE: size bytes (at most EXEC_INLINE_MAX)
            ARENA:  offset u64
            ERROR:  size bytes of message (at most 4096)
            MISSING: the same (an answer to GET: no such object)
            CANCELLED (5): the same (the task was cancelled, or one it needed)

    ARGUMENT: kind u8; VALUE: length u32 + bytes; REF: object ID 20.

    SPEC (a task as submitted):
        task 16, parent 16, job 16, module 16, fn (u16 length + bytes), nret u8,
        max_attempts u8, cpus_milli u32, resources (u16 length + bytes),
        argc u16, args_len u32, args (argc ARGUMENTs in args_len bytes),
        kind u8 (0 task, 1 actor creation: fn is the class, 2 actor call: fn
        is the method; | 0x80 on a task: a timeout follows), then for kinds 1
        and 2: actor 16, and for 1: max_restarts u16, ckpt_every u32, name
        (u16 + bytes); for a task with 0x80: timeout_ms u32

    RUN (a task handed to a worker):
        task 16, job 16, module 16, fn (u16 + bytes), nret u8, attempt u8, argc u16,
        objs_len u32, argc OBJECTs in objs_len bytes, kind u8 (EXEC_RUN_*),
        then for kinds other than 0: actor 16, idx u64; then ngpus u8 (255:
        the node has no GPUs) and ngpus GPU ids u16 (CUDA_VISIBLE_DEVICES)

    RESULT (a worker's report):
        task 16, attempt u8, status i32, msg (u16 + bytes), t_start i64,
        t_end i64, nret u8, outs_len u32, nret OBJECTs then nret 16-byte
        fingerprints, in outs_len bytes

    Messages (frame 1 unless said):
        NODE_HELLO    kind u8, pid u32, client 16, job 16
        NODE_WELCOME  node 16, job 16, arena (u16 + name), arena_size u64,
                      dir (u16 + path), inline_max u32
        MODULE        hash 16; frame 2: the module's bytes
        SUBMIT        count u32, SPECs
        PUT           count u32, OBJECTs (INLINE, or ARENA for room got by ALLOC)
        ALLOC         req u64, size u64
        ALLOC_REP     req u64, status i32, offset u64
        UNALLOC       offset u64: room granted that the client could not
                      write (/dev/shm full), given back
        GET           count u32, IDs (20 each)
        OBJECTS       count u32, OBJECTs
        FREE          count u32, IDs
        TASKS         count u32, RUNs
        RESULTS       count u32, RESULTs
        BLOCKED       blocked u8, count u32, task IDs (16 each) given back
        ACTOR         op u8 (1 kill, 2 lookup, 3 checkpoint), req u64, actor 16,
                      name (u16 + bytes), timeout_ms u32
        ACTOR_REP     req u64, status i32, actor 16; frame 2: message when status != 0
        CANCEL        req u64, force u8, object ID 20 (lux_cancel)
        CANCEL_REP    req u64, status i32; frame 2: message when status != 0
*/
#include "exec_proto.h"
#include "../util/util_fp.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"

#include <string.h>

void
exec_ref_make(lux_ref_t *ref, const util_id_t *task, uint32_t idx)
{
    memcpy(ref->b, task->b, 16);
    ref->b[16] = (uint8_t) (idx >> 24);
    ref->b[17] = (uint8_t) (idx >> 16);
    ref->b[18] = (uint8_t) (idx >> 8);
    ref->b[19] = (uint8_t) idx;
}

uint32_t
exec_ref_idx(const lux_ref_t *ref)
{
    return (uint32_t) ref->b[16] << 24 | (uint32_t) ref->b[17] << 16 |
           (uint32_t) ref->b[18] << 8 | ref->b[19];
}

void
exec_ref_task(const lux_ref_t *ref, util_id_t *task)
{
    memcpy(task->b, ref->b, 16);
}

void
exec_fingerprint(uint8_t out[16], const void *p, size_t n)
{
    util_fp(out, p, n);
}

/* --- objects --------------------------------------------------------------------- */

void
exec_obj_encode(util_buf_t *b, const exec_obj_t *o)
{
    util_buf_put(b, o->id.b, LUX_REF_LEN);
    util_buf_put_u8(b, (uint8_t) (o->where | (o->pinned ? EXEC_W_PINNED : 0)));
    util_buf_put_u64(b, o->size);
    if (o->where == EXEC_W_ARENA) {
        util_buf_put_u64(b, o->off);
        return;
    }
    if (o->where == EXEC_W_UNAVAILABLE)
        util_buf_put_u8(b, (uint8_t) -o->code);
    util_buf_put(b, o->bytes, (size_t) o->size);
}

int
exec_obj_decode(util_rd_t *r, exec_obj_t *o)
{
    const uint8_t *id = util_rd_take(r, LUX_REF_LEN);
    if (id)
        memcpy(o->id.b, id, LUX_REF_LEN);
    o->where = util_rd_u8(r);
    o->pinned = (o->where & EXEC_W_PINNED) != 0;
    o->where &= (uint8_t) ~EXEC_W_PINNED;
    o->size = util_rd_u64(r);
    o->bytes = NULL;
    o->off = 0;
    o->code = 0;
    switch (o->where) {
    case EXEC_W_INLINE:
        if (o->size > EXEC_INLINE_MAX)
            r->bad = true;
        else
            o->bytes = util_rd_take(r, (size_t) o->size);
        break;
    case EXEC_W_UNAVAILABLE: /* its code, then the message as for an error */
        o->code = -(int) util_rd_u8(r);
        if (o->code >= 0)
            r->bad = true;
        /* fall through */
    case EXEC_W_ERROR:
    case EXEC_W_MISSING:
    case EXEC_W_CANCELLED:
        if (o->size > 4096)
            r->bad = true;
        else
            o->bytes = util_rd_take(r, (size_t) o->size);
        break;
    case EXEC_W_ARENA:
        o->off = util_rd_u64(r);
        break;
    default:
        r->bad = true;
    }
    return r->bad ? util_err(LUX_EPROTO, "malformed object") : 0;
}

/* --- arguments and specs --------------------------------------------------------- */

void
exec_arg_put_value(util_buf_t *b, const void *data, uint32_t size)
{
    util_buf_put_u8(b, EXEC_ARG_VALUE);
    util_buf_put_blob(b, data, size);
}

void
exec_arg_put_ref(util_buf_t *b, const lux_ref_t *ref)
{
    util_buf_put_u8(b, EXEC_ARG_REF);
    util_buf_put(b, ref->b, LUX_REF_LEN);
}

bool
exec_arg_next(util_rd_t *r, exec_arg_t *a)
{
    if (util_rd_left(r) == 0)
        return false;
    a->kind = util_rd_u8(r);
    if (a->kind == EXEC_ARG_VALUE) {
        size_t n;
        a->data = util_rd_blob(r, &n);
        a->size = (uint32_t) n;
    } else if (a->kind == EXEC_ARG_REF) {
        const uint8_t *p = util_rd_take(r, LUX_REF_LEN);
        if (p)
            memcpy(a->ref.b, p, LUX_REF_LEN);
    } else {
        r->bad = true;
    }
    return !r->bad;
}

static void
s_put_name(util_buf_t *b, const char *s, uint16_t n)
{
    util_buf_put_u16(b, n);
    util_buf_put(b, s, n);
}

static const char *
s_get_name(util_rd_t *r, uint16_t *n)
{
    size_t len;
    const char *s = util_rd_str(r, &len);
    if (len > EXEC_NAME_MAX)
        r->bad = true;
    *n = (uint16_t) len;
    return s;
}

void
exec_spec_encode(util_buf_t *b, const exec_spec_t *s)
{
    util_buf_put(b, s->task.b, 16);
    util_buf_put(b, s->parent.b, 16);
    util_buf_put(b, s->job.b, 16);
    util_buf_put(b, s->module, 16);
    s_put_name(b, s->fn, s->fn_len);
    util_buf_put_u8(b, s->nret);
    util_buf_put_u8(b, s->max_attempts);
    util_buf_put_u32(b, s->cpus_milli);
    s_put_name(b, s->res, s->res_len);
    util_buf_put_u16(b, s->argc);
    util_buf_put_u32(b, s->args_len);
    util_buf_put(b, s->args, s->args_len);
    bool timed = s->kind == EXEC_SPEC_TASK && s->timeout_ms;
    util_buf_put_u8(b, (uint8_t) (s->kind | (timed ? 0x80 : 0)));
    if (timed)
        util_buf_put_u32(b, s->timeout_ms);
    if (s->kind != EXEC_SPEC_TASK)
        util_buf_put(b, s->actor.b, 16);
    if (s->kind == EXEC_SPEC_CREATE) {
        util_buf_put_u16(b, s->max_restarts);
        util_buf_put_u32(b, s->ckpt_every);
        s_put_name(b, s->name, s->name_len);
    }
}

int
exec_spec_decode(util_rd_t *r, exec_spec_t *s)
{
    const uint8_t *p;
    if ((p = util_rd_take(r, 16)))
        memcpy(s->task.b, p, 16);
    if ((p = util_rd_take(r, 16)))
        memcpy(s->parent.b, p, 16);
    if ((p = util_rd_take(r, 16)))
        memcpy(s->job.b, p, 16);
    if ((p = util_rd_take(r, 16)))
        memcpy(s->module, p, 16);
    s->fn = s_get_name(r, &s->fn_len);
    s->nret = util_rd_u8(r);
    s->max_attempts = util_rd_u8(r);
    s->cpus_milli = util_rd_u32(r);
    s->res = s_get_name(r, &s->res_len);
    s->argc = util_rd_u16(r);
    s->args_len = util_rd_u32(r);
    s->args = util_rd_take(r, s->args_len);
    s->kind = util_rd_u8(r);
    s->timeout_ms = 0;
    if (s->kind == (EXEC_SPEC_TASK | 0x80)) {
        s->kind = EXEC_SPEC_TASK;
        s->timeout_ms = util_rd_u32(r);
    }
    memset(&s->actor, 0, sizeof s->actor);
    s->max_restarts = 0;
    s->ckpt_every = 0;
    s->name = NULL;
    s->name_len = 0;
    if (s->kind != EXEC_SPEC_TASK && (p = util_rd_take(r, 16)))
        memcpy(s->actor.b, p, 16);
    if (s->kind == EXEC_SPEC_CREATE) {
        s->max_restarts = util_rd_u16(r);
        s->ckpt_every = util_rd_u32(r);
        s->name = s_get_name(r, &s->name_len);
    }
    if (r->bad || s->kind > EXEC_SPEC_CALL)
        return util_err(LUX_EPROTO, "malformed task");
    if (s->nret > EXEC_MAX_RETURNS || s->argc > EXEC_MAX_ARGS || s->fn_len == 0)
        return util_err(LUX_EPROTO, "task with %u returns, %u arguments, function of %u bytes",
                        s->nret, s->argc, s->fn_len);
    /* the arguments must be exactly argc well-formed entries */
    util_rd_t a;
    exec_arg_t arg;
    uint16_t n = 0;
    util_rd_init(&a, s->args, s->args_len);
    while (exec_arg_next(&a, &arg))
        n++;
    if (a.bad || n != s->argc)
        return util_err(LUX_EPROTO, "task arguments malformed (%u of %u)", n, s->argc);
    return 0;
}

void
exec_spec_body(util_buf_t *b, const exec_spec_t *s)
{
    util_buf_put_u8(b, s->max_attempts);
    util_buf_put_u32(b, s->cpus_milli);
    s_put_name(b, s->res, s->res_len);
    util_buf_put_u16(b, s->argc);
    util_buf_put(b, s->args, s->args_len);
}

int
exec_spec_from_body(exec_spec_t *s, const uint8_t *body, size_t n)
{
    util_rd_t r, a;
    exec_arg_t arg;
    uint16_t count = 0;
    util_rd_init(&r, body, n);
    s->max_attempts = util_rd_u8(&r);
    s->cpus_milli = util_rd_u32(&r);
    s->res = s_get_name(&r, &s->res_len);
    s->argc = util_rd_u16(&r);
    if (r.bad)
        return util_err(LUX_ECORRUPT, "task body malformed");
    s->args = r.p;
    s->args_len = (uint32_t) util_rd_left(&r);
    util_rd_init(&a, s->args, s->args_len);
    while (exec_arg_next(&a, &arg))
        count++;
    if (a.bad || count != s->argc)
        return util_err(LUX_ECORRUPT, "task body arguments malformed");
    return 0;
}

void
exec_call_body(util_buf_t *b, const exec_spec_t *s)
{
    util_buf_put_u8(b, s->nret);
    exec_spec_body(b, s);
}

int
exec_call_from_body(exec_spec_t *s, const uint8_t *body, size_t n)
{
    if (n < 1)
        return util_err(LUX_ECORRUPT, "call body empty");
    s->nret = body[0];
    if (s->nret > EXEC_MAX_RETURNS)
        return util_err(LUX_ECORRUPT, "call body: %u returns", s->nret);
    return exec_spec_from_body(s, body + 1, n - 1);
}

void
exec_actor_body(util_buf_t *b, const exec_spec_t *s)
{
    util_buf_put_u16(b, s->max_restarts);
    util_buf_put_u32(b, s->ckpt_every);
    exec_spec_body(b, s);
}

int
exec_actor_from_body(exec_spec_t *s, const uint8_t *body, size_t n)
{
    util_rd_t r;
    util_rd_init(&r, body, n);
    s->max_restarts = util_rd_u16(&r);
    s->ckpt_every = util_rd_u32(&r);
    if (r.bad)
        return util_err(LUX_ECORRUPT, "actor body malformed");
    return exec_spec_from_body(s, r.p, util_rd_left(&r));
}

/* --- runs and results ------------------------------------------------------------- */

void
exec_run_encode(util_buf_t *b, const exec_run_t *t, const exec_obj_t *args)
{
    util_buf_put(b, t->task.b, 16);
    util_buf_put(b, t->job.b, 16);
    util_buf_put(b, t->module, 16);
    s_put_name(b, t->fn, t->fn_len);
    util_buf_put_u8(b, t->nret);
    util_buf_put_u8(b, t->attempt);
    util_buf_put_u16(b, t->argc);
    size_t at = b->len;
    util_buf_put_u32(b, 0);
    for (uint16_t i = 0; i < t->argc; i++)
        exec_obj_encode(b, &args[i]);
    if (!b->oom)
        util_le32(b->data + at, (uint32_t) (b->len - at - 4));
    util_buf_put_u8(b, t->kind);
    if (t->kind != EXEC_RUN_TASK) {
        util_buf_put(b, t->actor.b, 16);
        util_buf_put_u64(b, t->idx);
    }
    util_buf_put_u8(b, t->ngpus);
    for (int i = 0; t->ngpus != EXEC_GPUS_NONE && i < t->ngpus && i < EXEC_RUN_GPUS; i++)
        util_buf_put_u16(b, t->gpus[i]);
}

int
exec_run_decode(util_rd_t *r, exec_run_t *t)
{
    const uint8_t *p;
    if ((p = util_rd_take(r, 16)))
        memcpy(t->task.b, p, 16);
    if ((p = util_rd_take(r, 16)))
        memcpy(t->job.b, p, 16);
    if ((p = util_rd_take(r, 16)))
        memcpy(t->module, p, 16);
    t->fn = s_get_name(r, &t->fn_len);
    t->nret = util_rd_u8(r);
    t->attempt = util_rd_u8(r);
    t->argc = util_rd_u16(r);
    t->objs_len = util_rd_u32(r);
    t->objs = util_rd_take(r, t->objs_len);
    t->kind = util_rd_u8(r);
    memset(&t->actor, 0, sizeof t->actor);
    t->idx = 0;
    if (t->kind != EXEC_RUN_TASK) {
        if ((p = util_rd_take(r, 16)))
            memcpy(t->actor.b, p, 16);
        t->idx = util_rd_u64(r);
    }
    t->ngpus = util_rd_u8(r);
    if (t->ngpus != EXEC_GPUS_NONE && t->ngpus > EXEC_RUN_GPUS)
        return util_err(LUX_EPROTO, "malformed task to run: %u GPUs", t->ngpus);
    for (int i = 0; t->ngpus != EXEC_GPUS_NONE && i < t->ngpus; i++)
        t->gpus[i] = util_rd_u16(r);
    if (r->bad || t->nret > EXEC_MAX_RETURNS || t->argc > EXEC_MAX_ARGS ||
        t->kind > EXEC_RUN_LOAD)
        return util_err(LUX_EPROTO, "malformed task to run");
    return 0;
}

void
exec_result_encode(util_buf_t *b, const exec_result_t *r, const exec_obj_t *outs,
                   const uint8_t (*fps)[16])
{
    util_buf_put(b, r->task.b, 16);
    util_buf_put_u8(b, r->attempt);
    util_buf_put_u32(b, (uint32_t) r->status);
    s_put_name(b, r->msg, r->msg_len);
    util_buf_put_u64(b, (uint64_t) r->t_start);
    util_buf_put_u64(b, (uint64_t) r->t_end);
    util_buf_put_u8(b, r->nret);
    size_t at = b->len;
    util_buf_put_u32(b, 0);
    for (uint8_t i = 0; i < r->nret; i++)
        exec_obj_encode(b, &outs[i]);
    for (uint8_t i = 0; i < r->nret; i++)
        util_buf_put(b, fps[i], 16);
    if (!b->oom)
        util_le32(b->data + at, (uint32_t) (b->len - at - 4));
}

int
exec_result_decode(util_rd_t *r, exec_result_t *res)
{
    const uint8_t *p;
    size_t len;
    if ((p = util_rd_take(r, 16)))
        memcpy(res->task.b, p, 16);
    res->attempt = util_rd_u8(r);
    res->status = (int32_t) util_rd_u32(r);
    res->msg = util_rd_str(r, &len);
    res->msg_len = (uint16_t) len;
    res->t_start = (int64_t) util_rd_u64(r);
    res->t_end = (int64_t) util_rd_u64(r);
    res->nret = util_rd_u8(r);
    res->outs_len = util_rd_u32(r);
    res->outs = util_rd_take(r, res->outs_len);
    if (r->bad || res->nret > EXEC_MAX_RETURNS)
        return util_err(LUX_EPROTO, "malformed result");
    return 0;
}

uint32_t
exec_cancel_token(const util_id_t *task)
{
    uint8_t h[16];
    util_fp(h, task->b, 16);
    return (uint32_t) h[0] | (uint32_t) h[1] << 8 | (uint32_t) h[2] << 16 | (uint32_t) h[3] << 24;
}
