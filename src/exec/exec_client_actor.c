/*  exec_client_actor - the actor calls of the public API, on the
    connection of exec_client.c: create, call, look up by name, kill and
    checkpoint an actor, and handles passed as values. A creation or a
    call is a task submission like lux_call's, batched the same way. */
#include "exec_client.h"
#include "../net/net_wire.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- actors ------------------------------------------------------------------------------- */

/* Encode argc arguments into lx->scratch. */
static int
s_args(lux_t *lx, const char *what, int argc, const lux_arg_t *argv)
{
    util_buf_t *a = &lx->scratch;
    a->len = 0;
    if (argc < 0 || argc > EXEC_MAX_ARGS || (argc && !argv))
        return util_err(LUX_EINVAL, "%s: %d arguments", what, argc);
    int rc = exec_client_check_values(what, argc, argv);
    if (rc)
        return rc;
    exec_client_frees_first(lx, argc, argv);
    for (int i = 0; i < argc; i++) {
        if (argv[i].ref)
            exec_arg_put_ref(a, argv[i].ref);
        else
            exec_arg_put_value(a, argv[i].data, (uint32_t) argv[i].size);
    }
    return a->oom ? util_err(LUX_ENOMEM, "%s: out of memory", what) : 0;
}

static int
s_submit(lux_t *lx, const char *what, const exec_spec_t *s)
{
    if (net_link_dead(lx->link))
        return exec_client_gone(lx, what);
    exec_client_batch_start(lx, &lx->submit, lx->nsubmit);
    exec_spec_encode(&lx->submit, s);
    if (lx->submit.oom)
        return util_err(LUX_ENOMEM, "%s: out of memory", what);
    lx->nsubmit++;
    exec_client_maybe_flush(lx, lx->nsubmit);
    return 0;
}

static int s_actor_op(lux_t *lx, int op, const lux_actor_t *actor, const char *name,
                      int timeout_ms, lux_actor_t *found);

int
lux_actor_create(lux_t *lx, const char *cls, int argc, const lux_arg_t *argv,
                 const lux_actor_opts_t *opts, lux_actor_t *actor)
{
    exec_module_t *m;
    const exec_fn_t *f;
    int rc;
    if (!lx || !cls || !actor)
        return util_err(LUX_EINVAL, "lux_actor_create: no connection, class or handle");
    if (!(f = exec_client_find_fn(lx, cls, &m)) || f->kind != EXEC_FN_CLASS)
        return util_err(LUX_ENOTFOUND, "lux_actor_create: no actor class '%s' in the module%s",
                        cls, lx->module ? "" : " (lux_init was given no module)");
    if (f->nargs >= 0 && argc != f->nargs)
        return util_err(LUX_EINVAL, "lux_actor_create: %s takes %d arguments, not %d", cls,
                        f->nargs, argc);
    const char *name = opts && opts->name ? opts->name : "";
    if (strlen(name) > EXEC_NAME_MAX)
        return util_err(LUX_EINVAL, "lux_actor_create: name too long");
    if (opts && (opts->max_restarts < 0 || opts->max_restarts > 65535 ||
                 opts->checkpoint_every < 0 || opts->cpus < 0))
        return util_err(LUX_EINVAL, "lux_actor_create: max_restarts, checkpoint_every and "
                        "cpus must not be negative");
    if (!f->save != !f->load)
        return util_err(LUX_EINVAL, "lux_actor_create: class %s has %s but no %s function: "
                        "give both or neither", cls, f->save ? "save" : "load",
                        f->save ? "load" : "save");
    if (opts && opts->checkpoint_every > 0 && (!f->save || !f->load))
        return util_err(LUX_EINVAL, "lux_actor_create: %s has no save and load functions, so "
                        "it cannot checkpoint", cls);
    if (m == exec_module_builtin() && !lx->builtin_sent) {
        if ((rc = exec_client_send_module(lx, m, "/proc/self/exe")))
            return rc;
        lx->builtin_sent = true;
    }
    if ((rc = s_args(lx, "lux_actor_create", argc, argv)))
        return rc;
    exec_spec_t s = {.parent = lx->root, .job = lx->job, .fn = cls,
                     .fn_len = (uint16_t) strlen(cls),
                     .cpus_milli = (uint32_t) ((opts ? opts->cpus : 0) * 1000 + 0.5),
                     .res = opts && opts->resources ? opts->resources : NULL,
                     .res_len = (uint16_t) (opts && opts->resources ? strlen(opts->resources) : 0),
                     .argc = (uint16_t) argc, .args = lx->scratch.data,
                     .args_len = (uint32_t) lx->scratch.len, .kind = EXEC_SPEC_CREATE,
                     .max_restarts = (uint16_t) (opts ? opts->max_restarts : 0),
                     .ckpt_every = (uint32_t) (opts ? opts->checkpoint_every : 0),
                     .name = name, .name_len = (uint16_t) strlen(name)};
    memcpy(s.module, exec_module_hash(m), 16);
    exec_client_next_id(lx, &s.task);
    s.actor = s.task;
    memcpy(actor->b, s.task.b, 16);
    if ((rc = s_submit(lx, "lux_actor_create", &s)) || !*name)
        return rc;
    /* a name is the node's to give: ask it who has the name now, right
       after the creation (sent first). Another live actor: this one was
       refused (the node killed it at once), so say so here rather than in
       every call. No one (it died already, of its arguments, say): its
       calls will tell why, as for an unnamed actor. */
    lux_actor_t holder;
    char mine[UTIL_ID_HEX], theirs[UTIL_ID_HEX];
    rc = s_actor_op(lx, 2, NULL, name, 0, &holder);
    if (rc == LUX_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (memcmp(holder.b, actor->b, 16) != 0)
        return util_err(LUX_EEXIST, "lux_actor_create: the name '%s' is taken by actor %s "
                        "(this one, %s, was not created)", name, lux_actor_hex(&holder, theirs),
                        lux_actor_hex(actor, mine));
    return 0;
}

int
lux_actor_call(lux_t *lx, const lux_actor_t *actor, const char *method, int argc,
               const lux_arg_t *argv, int nret, lux_ref_t *refs)
{
    int rc;
    if (!lx || !actor || !method || !*method || (nret && !refs))
        return util_err(LUX_EINVAL, "lux_actor_call: no connection, actor, method or refs");
    if (nret < 0 || nret > EXEC_MAX_RETURNS)
        return util_err(LUX_EINVAL, "lux_actor_call: %d returns", nret);
    if (strlen(method) > EXEC_NAME_MAX || strchr(method, '.'))
        return util_err(LUX_EINVAL, "lux_actor_call: bad method name '%s'", method);
    if ((rc = s_args(lx, "lux_actor_call", argc, argv)))
        return rc;
    exec_spec_t s = {.parent = lx->root, .job = lx->job, .fn = method,
                     .fn_len = (uint16_t) strlen(method), .nret = (uint8_t) nret,
                     .argc = (uint16_t) argc, .args = lx->scratch.data,
                     .args_len = (uint32_t) lx->scratch.len, .kind = EXEC_SPEC_CALL};
    memcpy(s.actor.b, actor->b, 16);
    exec_client_next_id(lx, &s.task);
    bool self = lx->task && memcmp(lx->self_actor.b, actor->b, 16) == 0;
    if (self && lx->nself + (uint32_t) nret > lx->capself) {
        uint32_t cap = lx->capself ? 2 * lx->capself : 16;
        while (cap < lx->nself + (uint32_t) nret)
            cap *= 2;
        lux_ref_t *p = realloc(lx->self_refs, cap * sizeof *p);
        if (!p)
            return util_err(LUX_ENOMEM, "lux_actor_call: out of memory");
        lx->self_refs = p;
        lx->capself = cap;
    }
    for (int i = 0; i < nret; i++) {
        exec_ref_make(&refs[i], &s.task, (uint32_t) i);
        exec_cobj_t *o = exec_client_obj(lx, &refs[i], true);
        if (o)
            o->mine = true;
        if (self)
            lx->self_refs[lx->nself++] = refs[i];
    }
    return s_submit(lx, "lux_actor_call", &s);
}

/* How long a client waits for the node's answer to an ACTOR request
   beyond the wait it asked for (a lookup's timeout): the node answers a
   kill at once, a checkpoint once saved, or failed when it did not start
   within LUX_ACTOR_CKPT_MS (10 minutes: exec_node_actor.c), and a lookup
   at its deadline; this bound is for a node that does not answer at all,
   so that no wait here is endless (t/3108 on a cluster: a checkpoint
   waited 22 minutes, until killed). LUX_ACTOR_WAIT_MS changes it. */
#define S_ACTOR_WAIT_MS 900000

static int64_t
s_wait_ms(void)
{
    const char *v = getenv("LUX_ACTOR_WAIT_MS");
    int64_t ms = v && *v ? strtoll(v, NULL, 10) : S_ACTOR_WAIT_MS;
    return ms < 100 ? 100 : ms > 86400000 ? 86400000 : ms;
}

/* One ACTOR request and its answer: waited for at most timeout_ms (a
   lookup's; -1: for ever, as asked) plus s_wait_ms(). */
static int
s_actor_op(lux_t *lx, int op, const lux_actor_t *actor, const char *name, int timeout_ms,
           lux_actor_t *found)
{
    static const char *const ops[] = {"", "lux_actor_kill", "lux_actor_lookup",
                                      "lux_actor_checkpoint"};
    char what[UTIL_ID_HEX + 400], hex[UTIL_ID_HEX];
    if (name)
        snprintf(what, sizeof what, "%s of the name '%.200s' (LUX_ACTOR_WAIT_MS past its "
                 "timeout)", ops[op], name);
    else
        snprintf(what, sizeof what, "%s of actor %s (LUX_ACTOR_WAIT_MS)%s", ops[op],
                 lux_actor_hex(actor, hex),
                 op == 3 ? ": its checkpoint, after the calls made before it" : "");
    util_buf_t b;
    uint64_t req = ++lx->actor_req;
    util_buf_init(&b);
    util_buf_put_u8(&b, (uint8_t) op);
    util_buf_put_u64(&b, req);
    static const uint8_t zero[16];
    util_buf_put(&b, actor ? actor->b : zero, 16);
    util_buf_put_str(&b, name ? name : "", name ? strlen(name) : 0);
    util_buf_put_u32(&b, (uint32_t) (timeout_ms < 0 ? UINT32_MAX : (uint32_t) timeout_ms));
    if (b.oom) {
        util_buf_free(&b);
        return util_err(LUX_ENOMEM, "out of memory");
    }
    exec_client_flush(lx); /* what was called before goes first */
    exec_client_send_body(lx, NET_ACTOR, b.data, b.len, NULL, 0);
    util_buf_free(&b);
    uint8_t id[16];
    int64_t bound = timeout_ms < 0 ? -1 : timeout_ms + s_wait_ms();
    int rc = exec_client_await_ms(lx, NET_ACTOR_REP, req, id, sizeof id, what, bound);
    if (found)
        memcpy(found->b, id, sizeof id);
    return rc;
}

int
lux_actor_lookup(lux_t *lx, const char *name, lux_actor_t *actor, int timeout_ms)
{
    if (!lx || !name || !*name || !actor)
        return util_err(LUX_EINVAL, "lux_actor_lookup: no connection, name or handle");
    return s_actor_op(lx, 2, NULL, name, timeout_ms, actor);
}

int
lux_actor_kill(lux_t *lx, const lux_actor_t *actor)
{
    if (!lx || !actor)
        return util_err(LUX_EINVAL, "lux_actor_kill: no connection or actor");
    return s_actor_op(lx, 1, actor, NULL, 0, NULL);
}

int
lux_actor_checkpoint(lux_t *lx, const lux_actor_t *actor)
{
    if (!lx || !actor)
        return util_err(LUX_EINVAL, "lux_actor_checkpoint: no connection or actor");
    return s_actor_op(lx, 3, actor, NULL, 0, NULL);
}

int
lux_actor_from(const lux_val_t *v, lux_actor_t *actor)
{
    if (!v || !actor || v->size != sizeof *actor || !v->data)
        return util_err(LUX_EINVAL, "an actor handle is %zu bytes, this value has %zu",
                        sizeof *actor, v ? v->size : 0);
    memcpy(actor->b, v->data, sizeof *actor);
    return 0;
}

char *
lux_actor_hex(const lux_actor_t *actor, char *out)
{
    util_hex(out, actor->b, sizeof actor->b);
    return out;
}
