/*  exec_node_actor - actors on this node (DESIGN section 8).

    An actor is a worker process of its own, started when its constructor's
    arguments are ready and the resources it asks for are free, and a queue
    of runs: its creation, its method calls in the order they were submitted,
    and checkpoints. Runs are sent in order, up to S_WINDOW at a time, and
    the worker applies them one after another.

    ORDER IS THE LOG'S. A call is numbered (idx 1, 2, ...) when it is sent,
    and its actor_call event is appended then, keyed by the actor, so the
    order of an actor's actor_call events in its shard is the order it
    applied them. A call's results (or its failure) are held on this node
    until that event is acknowledged by the tail (nm->held_calls), so no
    result leaves before the call is on record.

    CHECKPOINTS. After call k with k % checkpoint_every == 0, or when asked
    (lux_actor_checkpoint), a SAVE run makes the class's save function return the state's bytes;
    the object, owned by the actor, is named by an actor_checkpoint event with idx k. The
    previous checkpoint goes, and so do the arguments kept for calls it covers (an actor that
    may restart keeps every ref argument of its calls since its last checkpoint).

    RESTART. When the process dies and restarts are left, the calls it had are kept (limbo), and
    once every numbered call's event is committed the actor's actor_call events after its
    checkpoint are read back from the tail, in log order: a call still live (in limbo) is sent
    again and answers its caller; one whose results were handed out already is re-applied and
    its results dropped. The new process loads the checkpoint (LOAD) or runs the constructor
    (CREATE) first, and new calls come after the replay. An actor_restarted event records the
    checkpoint loaded and the calls replayed. With no restarts left, or when killed, the actor
    is dead: its pending calls and every later one fail with the reason, naming the actor and
    the call. What the actor's process reports (results, held results handed out), its death,
    and the bound on a checkpoint asked for are exec_node_actor_res.c's, above this file;
    lookups by name and the ACTOR requests (kill, checkpoint, lookup) are here.
*/
#include "exec_node_actor.h"
#include "exec_node_int.h"
#include "exec_pool.h"
#include "exec_node_gpu.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "exec_node_sched.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_WINDOW 512 /* runs sent to an actor's process and not reported */
/* ... and the store bytes their arguments (pinned until they report) may
   take: a quarter of the store, one run whatever its size (DESIGN 7 rule
   12; t/3152) */
#define S_SENT_SHARE 4
#define S_LOOKUP_REMOTE_MS 5000 /* a lookup without waiting, in a cluster: the head's answer */

/* A lux_actor_lookup waiting for a name. */
struct nm_lookup {
    nm_client_t *c;
    uint64_t req;
    char *name;
    int64_t deadline_ms; /* INT64_MAX: for ever */
    bool once;           /* asked without waiting: the head's "none" is the answer */
    struct nm_lookup *next;
};

enum { S_OP_KILL = 1, S_OP_LOOKUP = 2, S_OP_CHECKPOINT = 3 };

/* --- small things ----------------------------------------------------------------------- */

nm_task_t *
nm_actor_run_new(nm_t *nm, nm_client_t *owner, const exec_spec_t *s, bool insert, int kind,
                 nm_actor_t *a)
{
    nm_run_t *run = calloc(1, sizeof *run);
    nm_task_t *t = run ? nm_task_new(nm, owner, s, insert) : NULL;
    if (!t) {
        free(run);
        return NULL;
    }
    t->kind = (uint8_t) kind;
    t->actor = a;
    t->run = run;
    return t;
}

static nm_actor_t *
s_find(nm_t *nm, const util_id_t *id)
{
    nm_actor_t **p = util_idmap_get(nm->actors, id->b);
    return p ? *p : NULL;
}

int
nm_actor_collect(void *arg, const void *key, void *value)
{
    nm_actor_all_t *all = arg;
    (void) key;
    if (all->n == all->cap) {
        size_t cap = all->cap ? 2 * all->cap : 16;
        nm_actor_t **v = realloc(all->v, cap * sizeof *v);
        if (!v)
            return 1;
        all->v = v;
        all->cap = cap;
    }
    all->v[all->n++] = *(nm_actor_t **) value;
    return 0;
}

/* The live actor named name, other than except. */
static nm_actor_t *
s_by_name(nm_t *nm, const char *name, size_t n, const nm_actor_t *except)
{
    nm_actor_all_t all = {0};
    nm_actor_t *found = NULL;
    util_idmap_each(nm->actors, nm_actor_collect, &all);
    for (size_t i = 0; i < all.n && !found; i++) {
        nm_actor_t *a = all.v[i];
        if (a != except && a->state != A_DEAD && a->name && strlen(a->name) == n &&
            memcmp(a->name, name, n) == 0)
            found = a;
    }
    free(all.v);
    return found;
}

void
nm_actor_list_append(nm_task_t **head, nm_task_t **last, nm_task_t *t)
{
    t->next = NULL;
    if (*last)
        (*last)->next = t;
    else
        *head = t;
    *last = t;
}

nm_task_t *
nm_actor_list_pop(nm_task_t **head, nm_task_t **last)
{
    nm_task_t *t = *head;
    if (t) {
        *head = t->next;
        if (!*head)
            *last = NULL;
        t->next = NULL;
    }
    return t;
}

/* Move a to state st, counting the actors waiting to start (nm_actor_tick
   looks at them). */
void
nm_actor_state(nm_t *nm, nm_actor_t *a, int st)
{
    nm->actors_waiting += (st == A_WAITING) - (a->state == A_WAITING);
    a->state = st;
}

void
nm_actor_dirty(nm_t *nm, nm_actor_t *a)
{
    if (a->dirty || a->state == A_DEAD)
        return;
    a->dirty = true;
    a->next_dirty = nm->dirty_actors;
    nm->dirty_actors = a;
}

void
nm_actor_kick(nm_t *nm, nm_actor_t *a)
{
    nm_actor_dirty(nm, a);
}

void
nm_actor_reply(nm_t *nm, nm_client_t *c, uint64_t req, int status, const util_id_t *actor,
               const char *msg)
{
    uint8_t b[28] = {0};
    if (!c)
        return;
    util_le64(b, req);
    util_le32(b + 8, (uint32_t) status);
    if (actor)
        memcpy(b + 12, actor->b, 16);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_ACTOR_REP, NET_NO_SHARD, 0)});
    zmsg_addmem(m, b, sizeof b);
    if (status)
        zmsg_addstr(m, msg ? msg : lux_strerror(status));
    nm_send(nm, c, &m);
}

/* The resources a holds while it lives go back. */
void
nm_actor_give_back(nm_t *nm, nm_actor_t *a)
{
    if (a->holds) {
        nm_res_take(nm, a->needs, -1);
        nm_gpu_give(nm, a->gpus);
        a->gpus = 0;
        a->holds = false;
    }
}

/* An object one use less; gone when nothing holds it. */
void
nm_actor_unuse(nm_t *nm, nm_obj_t *o)
{
    nm_obj_replay_keep(nm, o, false); /* a kept argument: no more spilled for a replay */
    if (o->uses)
        o->uses--;
    if (!o->owned && !o->uses && !o->pins)
        nm_obj_delete(nm, o);
}

/* Keep t's ref arguments for a replay until a checkpoint covers t. */
void
nm_actor_keep(nm_t *nm, nm_actor_t *a, nm_task_t *t)
{
    util_rd_t r;
    exec_arg_t arg;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &arg)) {
        if (arg.kind != EXEC_ARG_REF)
            continue;
        nm_obj_t *o = nm_obj_get(nm, &arg.ref);
        if (!o)
            continue;
        if (a->nkept == a->capkept) {
            size_t cap = a->capkept ? 2 * a->capkept : 16;
            lux_ref_t *k = realloc(a->kept, cap * sizeof *k);
            uint64_t *ki = k ? realloc(a->kept_idx, cap * sizeof *ki) : NULL;
            if (k)
                a->kept = k;
            if (!ki) {
                log_error("actor: out of memory keeping a call's arguments for a replay");
                return;
            }
            a->kept_idx = ki;
            a->capkept = cap;
        }
        nm_obj_replay_keep(nm, o, true); /* spilled, not dropped, when evicted (rule 15) */
        o->uses++;
        a->kept[a->nkept] = arg.ref;
        a->kept_idx[a->nkept++] = t->run->idx;
    }
}

/* Let go of the arguments kept for calls 1..upto. */
void
nm_actor_unkeep(nm_t *nm, nm_actor_t *a, uint64_t upto)
{
    size_t k = 0;
    for (size_t i = 0; i < a->nkept; i++) {
        if (a->kept_idx[i] > upto) {
            a->kept[k] = a->kept[i];
            a->kept_idx[k++] = a->kept_idx[i];
            continue;
        }
        nm_obj_t *o = nm_obj_get(nm, &a->kept[i]);
        if (o)
            nm_actor_unuse(nm, o);
    }
    a->nkept = k;
}

/* A run of the actor that is not a task of its own: a checkpoint (SAVE) or
   a restart from one (LOAD). Not in nm->tasks. */
static nm_task_t *
s_run_new(nm_t *nm, nm_actor_t *a, int kind, nm_client_t *owner)
{
    util_buf_t args;
    exec_spec_t s = {.job = a->job, .parent = a->id, .fn = a->cls,
                     .fn_len = (uint16_t) strlen(a->cls), .nret = kind == T_SAVE ? 1 : 0};
    util_buf_init(&args);
    memcpy(s.module, a->module, 16);
    util_id_random(&s.task);
    if (kind == T_LOAD) {
        exec_arg_put_ref(&args, &a->ckpt);
        s.argc = 1;
        s.args = args.data;
        s.args_len = (uint32_t) args.len;
    }
    nm_task_t *t = args.oom ? NULL : nm_actor_run_new(nm, owner, &s, false, kind, a);
    util_buf_free(&args);
    return t;
}

/* --- death ------------------------------------------------------------------------------ */

/* Drop one of the actor's runs that will not report, failing a call. */
void
nm_actor_drop_run(nm_t *nm, nm_actor_t *a, nm_task_t *t, int status, const char *why)
{
    t->next = NULL;
    if (t == a->create)
        return; /* a->create goes with the actor */
    if (t->kind == T_CALL && !t->run->replay) {
        nm_task_fail(nm, t, status, why); /* off every list, logged, freed */
        return;
    }
    if (t->run && t->run->dup) { /* the same call, sent again by its caller's node */
        nm_task_t *d = t->run->dup;
        t->run->dup = NULL;
        d->next = NULL;
        nm_task_fail(nm, d, status, why);
    }
    if (t->kind == T_SAVE && t->owner)
        nm_actor_reply(nm, t->owner, t->run->op_req, status, &a->id, why);
    if (t == a->boot)
        a->boot = NULL;
    nm_task_discard(nm, t);
}

void
nm_actor_dief(nm_t *nm, nm_actor_t *a, int status, const char *fmt, ...)
{
    char hex[UTIL_ID_HEX], why[700], msg[800];
    va_list ap;
    if (a->state == A_DEAD)
        return;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    util_id_hex(&a->id, hex);
    if (a->owner_gone)
        log_info("actor %s (%s) ends: %s", hex, a->cls, why);
    else
        log_warn("actor %s (%s) died: %s", hex, a->cls, why);
    nm_actor_state(nm, a, A_DEAD);
    free(a->death);
    a->death = strdup(why);
    a->death_status = status ? status : LUX_EDEAD;
    if (!a->remote || a->home)
        nm_log_actor_died(nm, a);
    if (a->remote && nm->ops.ractor_died)
        nm->ops.ractor_died(nm, a); /* the node that holds it lets it go */
    nm_actor_give_back(nm, a);
    if (a->worker) {
        /* its process goes, reaped as an extra worker with nothing to do */
        nm_worker_t *w = a->worker;
        a->worker = NULL;
        w->actor = NULL;
        w->extra = true;
        w->state = W_LEAVING;
        if (!w->reaped)
            kill(w->pid, SIGKILL);
    }
    snprintf(msg, sizeof msg, "the actor is dead: %s", why);
    /* one at a time from the lists: failing a call fails what waits for
       it, which may be another of its calls (taken off its list then) */
    for (;;) {
        nm_task_t *t = nm_actor_list_pop(&a->sent, &a->sent_last);
        if (!t) {
            if ((t = a->limbo))
                a->limbo = t->next;
            else if (!(t = nm_actor_list_pop(&a->queue, &a->queue_last)))
                break;
        }
        nm_actor_drop_run(nm, a, t, a->death_status, msg);
    }
    a->nsent = 0;
    a->sent_bytes = 0;
    if (a->boot && a->boot != a->create)
        nm_task_discard(nm, a->boot);
    a->boot = NULL;
    if (a->create) {
        nm_task_t **p = util_idmap_get(nm->tasks, a->create->id.b);
        if (p && *p == a->create)
            util_idmap_del(nm->tasks, a->create->id.b);
        nm_task_discard(nm, a->create);
        a->create = NULL;
    }
    nm_actor_unkeep(nm, a, UINT64_MAX);
    if (a->has_ckpt) {
        nm_obj_t *o = nm_obj_get(nm, &a->ckpt);
        a->has_ckpt = false;
        if (o) {
            o->owned = false;
            nm_actor_unuse(nm, o);
        }
    }
}

/* --- creation and calls -------------------------------------------------------------------- */

static void s_answer_lookups(nm_t *nm, nm_actor_t *a);

static int
s_create(nm_t *nm, nm_client_t *c, const exec_spec_t *s)
{
    char why[600], hex[UTIL_ID_HEX];
    nm_actor_t *stub = s_find(nm, &s->actor), *a;
    if (stub && (!stub->remote || stub->home))
        return 0; /* resent */
    if (stub) /* a handle of an actor thought elsewhere: it is made here now */
        util_idmap_del(nm->actors, s->actor.b);
    if (!(a = nm_actor_new(nm, &s->actor))) {
        nm_actor_t **p = stub ? util_idmap_put(nm->actors, s->actor.b, NULL) : NULL;
        if (p)
            *p = stub;
        return util_err(LUX_ENOMEM, "out of memory holding an actor");
    }
    if (stub) /* only made with other nodes (nm->ops.ractor_stub) */
        nm->ops.ractor_forget(nm, stub, a); /* its calls are a's */
    a->job = s->job;
    memcpy(a->module, s->module, 16);
    a->cls = strndup(s->fn, s->fn_len);
    a->name = s->name_len ? strndup(s->name, s->name_len) : NULL;
    a->owner = c;
    a->max_restarts = s->max_restarts;
    a->ckpt_every = s->ckpt_every;
    nm_actor_state(nm, a, A_WAITING);
    nm_task_t *t = a->cls ? nm_actor_run_new(nm, c, s, true, T_CREATE, a) : NULL;
    if (!t) {
        nm_actor_state(nm, a, A_DEAD);
        a->death = strdup("out of memory creating it");
        a->death_status = LUX_ENOMEM;
        return util_err(LUX_ENOMEM, "out of memory holding an actor");
    }
    t->nret = 0;
    a->create = t;
    if (nm->ops.ractor_elsewhere && nm->ops.ractor_elsewhere(nm, a, t)) {
        nm_actor_state(nm, a, A_ALIVE); /* another node holds it: its events are that node's */
        return 0;
    }
    log_info("actor %s (%s%s%s) created", util_id_hex(&a->id, hex), a->cls,
             a->name ? ", named " : "", a->name ? a->name : "");
    nm_log_actor_created(nm, a);
    nm_actor_t *other = a->name ? s_by_name(nm, a->name, strlen(a->name), a) : NULL;
    if (other) {
        char oh[UTIL_ID_HEX];
        nm_actor_dief(nm, a, LUX_EEXIST, "the name '%s' is taken by actor %s", a->name,
                      util_id_hex(&other->id, oh));
        return 0;
    }
    int rc = nm_task_resolve(nm, t, why, sizeof why);
    if (rc) {
        nm_actor_dief(nm, a, rc, "its constructor's arguments: %s", why);
        return 0;
    }
    if (!nm_res_needs(nm, t, a->needs, why, sizeof why)) {
        nm_actor_dief(nm, a, LUX_EINVAL, "%s", why);
        return 0;
    }
    s_answer_lookups(nm, a);
    nm_actor_dirty(nm, a);
    return 0;
}

int
nm_actor_submit(nm_t *nm, nm_client_t *c, const exec_spec_t *s)
{
    char why[600], hex[UTIL_ID_HEX];
    if (s->kind == EXEC_SPEC_CREATE)
        return s_create(nm, c, s);
    if (nm_task_find(nm, &s->task))
        return 0; /* resent */
    nm_actor_t *a = s_find(nm, &s->actor);
    if (!a && nm->ops.ractor_stub)
        a = nm->ops.ractor_stub(nm, &s->actor); /* another node may hold it (NULL: none) */
    exec_spec_t s2 = *s;
    if (a)
        memcpy(s2.module, a->module, 16);
    nm_task_t *t = nm_actor_run_new(nm, c, &s2, true, T_CALL, a);
    if (!t)
        return util_err(LUX_ENOMEM, "out of memory holding an actor call");
    nm->n_submitted++;
    if (!a) {
        snprintf(why, sizeof why, "no actor %s was created on this node",
                 util_id_hex(&s->actor, hex));
        nm_task_fail(nm, t, LUX_ENOTFOUND, why);
        return 0;
    }
    if (a->state == A_DEAD) {
        snprintf(why, sizeof why, "the actor is dead: %s", a->death ? a->death : "?");
        nm_task_fail(nm, t, a->death_status, why);
        return 0;
    }
    int rc = nm_task_resolve(nm, t, why, sizeof why);
    if (rc) {
        nm_task_fail(nm, t, rc, why);
        return 0;
    }
    nm_actor_list_append(&a->queue, &a->queue_last, t);
    nm_actor_dirty(nm, a);
    return 0;
}

/* --- sending ------------------------------------------------------------------------------ */

static int
s_run_kind(const nm_task_t *t)
{
    switch (t->kind) {
    case T_CREATE:
        return EXEC_RUN_CREATE;
    case T_SAVE:
        return EXEC_RUN_SAVE;
    case T_LOAD:
        return EXEC_RUN_LOAD;
    default:
        return EXEC_RUN_CALL;
    }
}

typedef struct {
    nm_t *nm;
    util_buf_t *b;
    uint32_t count;
    exec_obj_t *objs;
    size_t cap;
} s_batch_t;

/* Pin t's arguments: 0, 1 (t waits: for an argument that was lost, or
   for room to bring back a spilled one), or a code. A spilled argument
   waits for room as a task's does, then goes beyond the store's size
   (DESIGN 7 rule 9): a replayed call that took "no room yet" for a
   failure killed its actor (t/3108 seed 3, t/3136). The actor's runs
   wait behind t; nm_actor_tick tries again. */
static int
s_args(nm_t *nm, nm_actor_t *a, nm_task_t *t, s_batch_t *bt)
{
    if (t->argc > bt->cap) {
        exec_obj_t *o = realloc(bt->objs, 2 * t->argc * sizeof *o);
        if (!o)
            return util_err(LUX_ENOMEM, "out of memory");
        bt->objs = o;
        bt->cap = 2 * (size_t) t->argc;
    }
    int rc = nm_task_run_args(nm, t, bt->objs);
    if (rc == 1)
        t->state = TASK_WAITING;
    if (rc == 2) {
        if (!nm_task_room_wait(nm, t))
            return LUX_EFULL;
        a->room_wait = true;
        nm->actor_room_waits = true;
        return 1;
    }
    if (rc == 0)
        t->room_since_ms = 0;
    return rc;
}

/* Add t (arguments pinned into bt->objs) to the batch, and to what was sent. */
static void
s_add(nm_actor_t *a, nm_task_t *t, s_batch_t *bt)
{
    if (bt->count == 0) {
        bt->b->len = 0;
        util_buf_put_u32(bt->b, 0);
    }
    exec_run_t run = {.task = t->id, .job = t->job, .fn = t->fn,
                      .fn_len = (uint16_t) strlen(t->fn), .nret = t->nret,
                      .attempt = t->attempt, .argc = t->argc, .kind = (uint8_t) s_run_kind(t),
                      .actor = a->id, .idx = t->run->idx};
    memcpy(run.module, a->module, 16);
    nm_gpu_run(bt->nm, a->gpus, &run);
    exec_run_encode(bt->b, &run, bt->objs);
    t->state = TASK_RUNNING;
    nm_actor_list_append(&a->sent, &a->sent_last, t);
    a->nsent++;
    t->run->sent_bytes = 0;
    for (int i = 0; i < t->argc; i++)
        if ((bt->objs[i].where & ~EXEC_W_PINNED) == EXEC_W_ARENA)
            t->run->sent_bytes += bt->objs[i].size;
    a->sent_bytes += t->run->sent_bytes;
    bt->count++;
}

static void
s_send(nm_t *nm, nm_actor_t *a, s_batch_t *bt)
{
    if (!bt->count || !a->worker || !a->worker->client) {
        bt->count = 0;
        return;
    }
    nm_log_flush_urgent(nm); /* the calls' events first: their commit overlaps the runs */
    util_le32(bt->b->data, bt->count);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_TASKS, NET_NO_SHARD, 0)});
    zmsg_addmem(m, bt->b->data, bt->b->len);
    a->worker->client->job = a->job;
    nm_send(nm, a->worker->client, &m);
    bt->count = 0;
}

/* Start its process, when its constructor's arguments are ready, its
   calls are on record (a restart) and the resources it asks for are free. */
static void
s_start(nm_t *nm, nm_actor_t *a)
{
    if (!a->create || a->create->waiting)
        return;
    if (a->log_wait) {
        if (nm_log_pending(nm, &a->last_call))
            return; /* nm_actor_tick looks again */
        nm->ops.actor_replay(nm, a); /* its calls read: log_wait ends, or it died */
        if (a->log_wait || a->state != A_WAITING)
            return; /* the head has the log: nm_actor_tick asks again, or it died */
    }
    if (!nm_res_fits(nm, a->needs))
        return;
    nm_res_take(nm, a->needs, 1);
    a->gpus = nm_gpu_take(nm, a->needs);
    a->holds = true;
    if (nm_spawn_actor_worker(nm, a)) {
        nm_actor_dief(nm, a, LUX_EIO, "cannot start its process: %s", lux_errmsg());
        return;
    }
    nm_actor_state(nm, a, A_STARTING);
}

/* Its process said hello: send what makes it the actor. */
static void
s_boot(nm_t *nm, nm_actor_t *a)
{
    s_batch_t bt = {.nm = nm, .b = &nm->scratch};
    if (!a->worker || !a->worker->client)
        return;
    if (!a->boot) {
        a->boot = a->has_ckpt ? s_run_new(nm, a, T_LOAD, NULL) : a->create;
        if (!a->boot) {
            nm_actor_dief(nm, a, LUX_ENOMEM, "out of memory restarting it");
            return;
        }
        if (a->boot->kind == T_LOAD) {
            char why[600];
            int rc = nm_task_resolve(nm, a->boot, why, sizeof why);
            if (rc) {
                nm_actor_dief(nm, a, rc, "its checkpoint (call %llu) cannot be read: %s",
                              (unsigned long long) a->ckpt_idx, why);
                return;
            }
        }
    }
    if (a->boot->waiting || a->boot->state == TASK_RUNNING)
        return;
    int rc = s_args(nm, a, a->boot, &bt);
    if (rc == 0) {
        s_add(a, a->boot, &bt);
        s_send(nm, a, &bt);
    } else if (rc != 1) {
        nm_actor_dief(nm, a, rc, "%s its state: %s",
                      a->boot->kind == T_LOAD ? "loading" : "creating", lux_errmsg());
    }
    free(bt.objs);
}

/* Send queued runs while the window has room, in order. */
static void
s_calls(nm_t *nm, nm_actor_t *a)
{
    s_batch_t bt = {.nm = nm, .b = &nm->scratch};
    while (a->queue && a->nsent < S_WINDOW && a->state == A_ALIVE && !a->killed) {
        nm_task_t *t = a->queue;
        if (t->waiting)
            break; /* its arguments come first: nothing overtakes it */
        if (a->nsent && a->sent_bytes + nm_task_arg_bytes(nm, t) > nm->store_bytes / S_SENT_SHARE)
            break; /* sent when runs ahead of it report (S_SENT_SHARE) */
        if (t->kind == T_CALL && !t->run->idx && a->ckpt_every &&
            a->next_idx >= a->saved_idx + a->ckpt_every)
            break; /* the checkpoint before it first: a restart re-applies at
                      most checkpoint_every calls */
        nm_actor_list_pop(&a->queue, &a->queue_last);
        if (t->kind == T_SAVE && !t->run->idx)
            t->run->idx = a->next_idx; /* on demand: after the calls numbered so far */
        int rc = s_args(nm, a, t, &bt);
        if (rc == 1) {
            t->next = a->queue;
            a->queue = t;
            if (!a->queue_last)
                a->queue_last = t;
            break;
        }
        if (rc) {
            if (t->run->replay) {
                nm_actor_list_append(&a->queue, &a->queue_last, t); /* nm_actor_dief drops it */
                nm_actor_dief(nm, a, rc, "cannot replay its call %llu: %s",
                              (unsigned long long) t->run->idx, lux_errmsg());
                break;
            }
            nm_actor_drop_run(nm, a, t, rc, lux_errmsg());
            continue;
        }
        if (t->kind == T_CALL && !t->run->idx) {
            t->run->idx = ++a->next_idx;
            a->last_call = t->id;
            nm_log_actor_call(nm, a, t);
        }
        s_add(a, t, &bt);
        if (t->kind == T_CALL && a->ckpt_every && t->run->idx % a->ckpt_every == 0 &&
            t->run->idx > a->ckpt_idx) {
            nm_task_t *sv = s_run_new(nm, a, T_SAVE, NULL);
            if (sv) {
                sv->run->idx = t->run->idx;
                s_add(a, sv, &bt);
            }
        }
        if (bt.count >= 256)
            s_send(nm, a, &bt);
    }
    s_send(nm, a, &bt);
    free(bt.objs);
}

void
nm_actor_pump(nm_t *nm)
{
    while (nm->dirty_actors) {
        nm_actor_t *a = nm->dirty_actors;
        nm->dirty_actors = a->next_dirty;
        a->next_dirty = NULL;
        a->dirty = false;
        if (a->doom && a->state != A_DEAD) {
            char *why = a->doom;
            a->doom = NULL;
            nm_actor_dief(nm, a, a->doom_status, "%s", why);
            free(why);
        }
        if (a->remote && a->state != A_DEAD) {
            nm->ops.ractor_pump(nm, a); /* its calls go to the node that holds it */
            continue;
        }
        switch (a->state) {
        case A_WAITING:
            s_start(nm, a);
            break;
        case A_STARTING:
            s_boot(nm, a);
            break;
        case A_ALIVE:
            s_calls(nm, a);
            break;
        default:
            break;
        }
    }
}

void
nm_actor_hello(nm_t *nm, nm_worker_t *w)
{
    if (w->actor)
        nm_actor_dirty(nm, w->actor);
}

/* --- runs leaving an actor ----------------------------------------------------------------- */

/* Unlink t from a list (head/last; last may be NULL); whether it was on it. */
bool
nm_actor_list_unlink(nm_task_t **head, nm_task_t **last, nm_task_t *t)
{
    nm_task_t *prev = NULL;
    for (nm_task_t *x = *head; x; prev = x, x = x->next) {
        if (x != t)
            continue;
        if (prev)
            prev->next = x->next;
        else
            *head = x->next;
        if (last && *last == x)
            *last = prev;
        x->next = NULL;
        return true;
    }
    return false;
}

bool
nm_actor_failing(nm_t *nm, nm_task_t *t, int status, const char *text)
{
    nm_actor_t *a = t->actor;
    if (!a)
        return false;
    if (!nm_actor_list_unlink(&a->queue, &a->queue_last, t) &&
        !nm_actor_list_unlink(&a->limbo, NULL, t) &&
        nm_actor_list_unlink(&a->sent, &a->sent_last, t))
        nm_actor_sent_gone(a, t);
    /* a call that waited for its arguments held back the runs queued
       after it (calls, a checkpoint asked for): they go now */
    nm_actor_dirty(nm, a);
    if (t == a->create) {
        a->create = NULL;
        if (!a->doom && a->state != A_DEAD && (a->doom = strdup(text)))
            a->doom_status = status;
        nm_actor_dirty(nm, a);
        return false; /* failed as a task: its failure is logged */
    }
    if (t->run->replay) {
        char why[900];
        snprintf(why, sizeof why, "cannot replay its call %llu: %s", (unsigned long long) t->run->idx,
                 text);
        if (t->run->dup) { /* the call its caller's node sent again fails with the actor */
            nm_actor_list_append(&a->queue, &a->queue_last, t->run->dup);
            t->run->dup = NULL;
        }
        if (!a->doom && a->state != A_DEAD && (a->doom = strdup(why)))
            a->doom_status = status;
        nm_actor_dirty(nm, a);
        nm_task_discard(nm, t);
        return true;
    }
    return false;
}

void
nm_actor_unlink(nm_t *nm, nm_task_t *t)
{
    nm_actor_t *a = t->actor;
    (void) nm;
    if (a && !nm_actor_list_unlink(&a->queue, &a->queue_last, t) &&
        nm_actor_list_unlink(&a->sent, &a->sent_last, t))
        nm_actor_sent_gone(a, t);
}

void
nm_actor_die(nm_t *nm, nm_actor_t *a, int status, const char *why)
{
    nm_actor_dief(nm, a, status, "%s", why);
}

nm_actor_t *
nm_actor_new(nm_t *nm, const util_id_t *id)
{
    nm_actor_t *a = calloc(1, sizeof *a);
    nm_actor_t **p = a ? util_idmap_put(nm->actors, id->b, NULL) : NULL;
    if (!p) {
        free(a);
        return NULL;
    }
    *p = a;
    a->id = *id;
    return a;
}

void
nm_actor_destroy(nm_actor_t **a_p)
{
    nm_actor_t *a = *a_p;
    if (!a)
        return;
    *a_p = NULL;
    free(a->kept);
    free(a->kept_idx);
    free(a->cls);
    free(a->name);
    free(a->death);
    free(a->doom);
    free(a);
}

/* --- lookups by name ---------------------------------------------------------------------- */

/* Take the lookup at *p off the list and free it; *p is then the next one. */
static void
s_lookup_drop(struct nm_lookup **p)
{
    struct nm_lookup *l = *p;
    *p = l->next;
    free(l->name);
    free(l);
}

/* Answer the lookup at *p that no actor of its name will answer (the head
   said none, or its deadline passed), then drop it. */
static void
s_lookup_none(nm_t *nm, struct nm_lookup **p, bool timed_out)
{
    struct nm_lookup *l = *p;
    char why[400];
    if (timed_out) {
        snprintf(why, sizeof why, "no actor named '%s' appeared in time", l->name);
        nm_actor_reply(nm, l->c, l->req, LUX_ETIMEDOUT, NULL, why);
    } else {
        snprintf(why, sizeof why, "no actor is named '%s'", l->name);
        nm_actor_reply(nm, l->c, l->req, LUX_ENOTFOUND, NULL, why);
    }
    s_lookup_drop(p);
}

void
nm_actor_found(nm_t *nm, nm_actor_t *a)
{
    s_answer_lookups(nm, a);
}

void
nm_actor_missed(nm_t *nm, const char *name)
{
    for (struct nm_lookup **p = &nm->lookups; *p;) {
        if ((*p)->once && strcmp((*p)->name, name) == 0)
            s_lookup_none(nm, p, false);
        else
            p = &(*p)->next;
    }
}

/* --- requests ------------------------------------------------------------------------------ */

static void
s_answer_lookups(nm_t *nm, nm_actor_t *a)
{
    if (!a->name)
        return;
    for (struct nm_lookup **p = &nm->lookups; *p;) {
        struct nm_lookup *l = *p;
        if (strcmp(l->name, a->name) == 0) {
            nm_actor_reply(nm, l->c, l->req, 0, &a->id, NULL);
            s_lookup_drop(p);
        } else {
            p = &l->next;
        }
    }
}

void
nm_actor_op(nm_t *nm, nm_client_t *c, const uint8_t *p, size_t n)
{
    util_rd_t r;
    char hex[UTIL_ID_HEX], why[800];
    size_t nlen = 0;
    util_id_t id;
    util_rd_init(&r, p, n);
    uint8_t op = util_rd_u8(&r);
    uint64_t req = util_rd_u64(&r);
    const uint8_t *idp = util_rd_take(&r, 16);
    const char *name = util_rd_str(&r, &nlen);
    uint32_t timeout = util_rd_u32(&r);
    if (r.bad || !idp) {
        log_warn("a malformed ACTOR request from pid %d", (int) c->pid);
        return;
    }
    memcpy(id.b, idp, 16);
    nm_actor_t *a = op == S_OP_LOOKUP ? NULL : s_find(nm, &id);
    if (op != S_OP_LOOKUP && op != S_OP_KILL && op != S_OP_CHECKPOINT) {
        nm_actor_reply(nm, c, req, LUX_EINVAL, NULL, "unknown actor request");
        return;
    }
    if (op != S_OP_LOOKUP && !a) {
        snprintf(why, sizeof why, "no actor %s on this node", util_id_hex(&id, hex));
        nm_actor_reply(nm, c, req, LUX_ENOTFOUND, &id, why);
        return;
    }
    switch (op) {
    case S_OP_KILL:
        if (a->state != A_DEAD) {
            a->killed = true;
            if (a->worker)
                kill(a->worker->pid, SIGKILL); /* the reaper finds it; no restart */
            else
                nm_actor_dief(nm, a, LUX_EDEAD, "it was killed (lux_actor_kill)");
        }
        nm_actor_reply(nm, c, req, 0, &id, NULL);
        return;
    case S_OP_CHECKPOINT:
        if (a->remote && a->state != A_DEAD) {
            snprintf(why, sizeof why, "actor %s lives on another node: lux_actor_checkpoint "
                     "is asked on that node (its checkpoint_every works anywhere)",
                     util_id_hex(&id, hex));
            nm_actor_reply(nm, c, req, LUX_EINVAL, &id, why);
            return;
        }
        if (a->state == A_DEAD) {
            snprintf(why, sizeof why, "actor %s (%s) is dead: %s", util_id_hex(&id, hex),
                     a->cls, a->death ? a->death : "?");
            nm_actor_reply(nm, c, req, LUX_EDEAD, &id, why);
            return;
        }
        nm_task_t *t = s_run_new(nm, a, T_SAVE, c);
        if (!t) {
            nm_actor_reply(nm, c, req, LUX_ENOMEM, &id, "out of memory");
            return;
        }
        t->run->op_req = req; /* answered when saved, or failed when queued too long */
        t->run->asked_ms = util_mono_ms(); /* (nm_actor_ckpt_tick) */
        nm->ckpt_asks++;
        nm_actor_list_append(&a->queue, &a->queue_last, t);
        nm_actor_dirty(nm, a);
        return;
    default:
        break;
    }
    /* lookup */
    if (!name || nlen == 0) {
        nm_actor_reply(nm, c, req, LUX_EINVAL, NULL, "lux_actor_lookup: no name");
        return;
    }
    if ((a = s_by_name(nm, name, nlen, NULL))) {
        nm_actor_reply(nm, c, req, 0, &a->id, NULL);
        return;
    }
    bool once = timeout == 0;
    if (once && nm->ops.ractor_lookup) /* other nodes' actors */
        timeout = S_LOOKUP_REMOTE_MS; /* the head is asked: its answer is waited for */
    if (timeout == 0) {
        snprintf(why, sizeof why, "no actor is named '%.*s'", (int) nlen, name);
        nm_actor_reply(nm, c, req, LUX_ENOTFOUND, NULL, why);
        return;
    }
    struct nm_lookup *l = calloc(1, sizeof *l);
    if (!l || !(l->name = strndup(name, nlen))) {
        free(l);
        nm_actor_reply(nm, c, req, LUX_ENOMEM, NULL, "out of memory");
        return;
    }
    l->c = c;
    l->req = req;
    l->once = once;
    l->deadline_ms = timeout == UINT32_MAX ? INT64_MAX : util_mono_ms() + timeout;
    l->next = nm->lookups;
    nm->lookups = l;
    if (nm->ops.ractor_lookup) /* the head knows the other nodes' actors */
        nm->ops.ractor_lookup(nm, l->name, l->deadline_ms);
}

void
nm_actor_tick(nm_t *nm)
{
    int64_t now = util_mono_ms();
    for (struct nm_lookup **p = &nm->lookups; *p;) {
        if (now >= (*p)->deadline_ms)
            s_lookup_none(nm, p, !(*p)->once);
        else
            p = &(*p)->next;
    }
    /* actors waiting for resources or for their calls' events, or whose
       next run waits for room (s_args) */
    if (!nm->actors_waiting && !nm->actor_room_waits)
        return;
    nm->actor_room_waits = false;
    nm_actor_all_t all = {0};
    util_idmap_each(nm->actors, nm_actor_collect, &all);
    for (size_t i = 0; i < all.n; i++)
        if (all.v[i]->state == A_WAITING || all.v[i]->room_wait) {
            all.v[i]->room_wait = false;
            nm_actor_dirty(nm, all.v[i]);
        }
    free(all.v);
}

void
nm_actor_client_gone(nm_t *nm, nm_client_t *c)
{
    char pid[32];
    for (struct nm_lookup **p = &nm->lookups; *p;) {
        if ((*p)->c == c)
            s_lookup_drop(p);
        else
            p = &(*p)->next;
    }
    if (!nm->actors)
        return;
    snprintf(pid, sizeof pid, "%d", (int) c->pid);
    nm_actor_all_t all = {0};
    util_idmap_each(nm->actors, nm_actor_collect, &all);
    for (size_t i = 0; i < all.n; i++) {
        nm_actor_t *a = all.v[i];
        for (int k = 0; k < 2; k++)
            for (nm_task_t *t = k ? a->queue : a->sent; t; t = t->next)
                if (t->kind == T_SAVE && t->owner == c)
                    t->owner = NULL;
        if (a->owner != c)
            continue;
        a->owner = NULL;
        if (a->worker && a->worker->client == c)
            continue; /* its own process */
        a->owner_gone = true;
        nm_actor_dief(nm, a, LUX_EDEAD, "its creator (%s %s) went away",
                      c->kind == EXEC_HELLO_WORKER ? "worker" : "driver", pid);
    }
    free(all.v);
}

void
nm_actor_close(nm_t *nm)
{
    nm_actor_all_t all = {0};
    if (!nm->actors)
        return;
    util_idmap_each(nm->actors, nm_actor_collect, &all);
    for (size_t i = 0; i < all.n; i++) {
        nm_actor_t *a = all.v[i];
        /* runs not in nm->tasks are freed here; the others with nm->tasks */
        for (int k = 0; k < 2; k++)
            for (nm_task_t *t = k ? a->queue : a->sent, *next; t; t = next) {
                next = t->next;
                if (t->run->replay || t->kind == T_SAVE || t->kind == T_LOAD) {
                    if (t == a->boot)
                        a->boot = NULL;
                    nm_task_free(t);
                }
            }
        if (a->boot && a->boot->kind == T_LOAD)
            nm_task_free(a->boot);
        nm_actor_destroy(&a);
    }
    free(all.v);
    util_idmap_destroy(&nm->actors);
    while (nm->lookups)
        s_lookup_drop(&nm->lookups);
}
