/*  exec_node_graph - the task graph (DESIGN section 7): tasks, what they
    wait for, and what happens when they end.

    A task is kept in nm->tasks from its submission until it ends. Its
    arguments that are references are counted as uses of their objects (so
    that none is deleted while a queued task needs it); one not made yet
    makes the task a dependent of the task that makes it, and the task joins
    the ready queue when the last comes. An argument that was lost (evicted)
    is rebuilt by running its task again, from its task_submitted event in
    the log, recursively for lost arguments; a rebuilt object is held for
    the task that waits for it (pinned up to half the store, beyond that
    spilled rather than dropped when evicted), and a task that waited has
    its arguments reserved (pinned) until it runs, so that two needed
    objects cannot evict each other's rebuilt copies for ever; a rebuilt
    copy nothing needs any more stays until evicted, for the next rebuild
    that needs it (nm_obj_let_go). The arguments of a run are pinned and
    described for the worker here too, a spilled one brought back (beyond
    the store's size when no running task could free room).

    A task that ends well has its outputs made ready, its waiters answered
    and its dependents woken; a failed task's outputs are errors, and every
    task that needs one fails too, naming the first task that failed.

    Which task runs where and when is the scheduler's (exec_node_sched.c),
    which calls down into this part; actors, cancelling, the pulls of
    arguments from other nodes and the tasks other nodes sent here are
    reached through nm->ops.
*/
#include "exec_node_graph.h"
#include "exec_node_int.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_rmodule.h"
#include "../util/util_prof.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- tasks ------------------------------------------------------------------------------ */

nm_task_t *
nm_task_find(nm_t *nm, const util_id_t *id)
{
    nm_task_t **p = util_idmap_get(nm->tasks, id->b);
    return p ? *p : NULL;
}

void
nm_task_free(nm_task_t *t)
{
    if (!t)
        return;
    free(t->args);
    free(t->counted);
    free(t->res);
    free(t->fn);
    free(t->dependents);
    free(t->waiters);
    if (t->run) {
        free(t->run->fail_msg);
        free(t->run->held_outs);
        free(t->run);
    }
    free(t->cancel_why);
    free(t);
}

void
nm_ready_push(nm_t *nm, nm_task_t *t, bool front)
{
    t->state = TASK_READY;
    t->next = NULL;
    if (front) {
        t->next = nm->ready;
        nm->ready = t;
        if (!nm->ready_last)
            nm->ready_last = t;
    } else {
        if (nm->ready_last)
            nm->ready_last->next = t;
        else
            nm->ready = t;
        nm->ready_last = t;
    }
    nm->nready++;
}

static bool
s_add_dependent(nm_task_t *on, nm_task_t *t, uint32_t idx)
{
    if (on->ndeps == on->capdeps) {
        uint32_t cap = on->capdeps ? 2 * on->capdeps : 4;
        struct nm_dep *d = realloc(on->dependents, cap * sizeof *d);
        if (!d)
            return false;
        on->dependents = d;
        on->capdeps = cap;
    }
    on->dependents[on->ndeps++] = (struct nm_dep) {t, idx};
    return true;
}

bool
nm_task_depend(nm_t *nm, nm_task_t *on, nm_task_t *t, uint32_t idx)
{
    (void) nm;
    return s_add_dependent(on, t, idx);
}

/* Take t out of every dependents list it is on (it is going away early). */
static void
s_forget_dependent(nm_t *nm, nm_task_t *t)
{
    util_rd_t r;
    exec_arg_t a;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a)) {
        if (a.kind != EXEC_ARG_REF)
            continue;
        util_id_t tid;
        exec_ref_task(&a.ref, &tid);
        nm_task_t *on = nm_task_find(nm, &tid);
        if (!on)
            continue;
        uint32_t k = 0;
        for (uint32_t i = 0; i < on->ndeps; i++)
            if (on->dependents[i].task != t)
                on->dependents[k++] = on->dependents[i];
        on->ndeps = k;
    }
}

/* The function name of a task for messages. */
static const char *
s_fn(const nm_task_t *t)
{
    return t->fn ? t->fn : "?";
}

static bool s_reserve(nm_t *nm, nm_task_t *t);

/* Count argument i (object o) as a use of o by t. */
static void
s_count(nm_task_t *t, int i, nm_obj_t *o)
{
    if (t->counted && !(t->counted[i] & NM_ARG_COUNTED)) {
        t->counted[i] |= NM_ARG_COUNTED;
        o->uses++;
    }
}

/* Hold o, rebuilt, for d's argument k until d runs (DESIGN 7, rule 10):
   pinned while the objects so pinned take at most half the store (each
   counted once however many tasks hold it; one whatever its size);
   beyond, held on disk: evictable, but spilled rather than dropped, so
   that what d waited for is brought back for it, not rebuilt again.
   Unbounded, the pins took the store and its spare region (the long
   form's seed 1195: a put of 6.9 MB refused with 110-120 MB pinned).
   Without memory for the count (nm->holds), o is not held: d waits for it
   as for any output, which a rebuild makes again if evicted. */
static void
s_hold(nm_t *nm, nm_task_t *d, int k, nm_obj_t *o)
{
    nm_obj_hold_t *h = nm_obj_hold(nm, o, true);
    if (!h) {
        log_warn("no memory to hold a rebuilt object for the task that waits for it");
        return;
    }
    if (h->held || !nm->held_bytes || nm->held_bytes + o->size <= nm->store_bytes / 2) {
        nm_obj_pin(nm, o);
        if (h->held++ == 0)
            nm->held_bytes += o->size;
        d->counted[k] |= NM_ARG_HELD;
    } else {
        h->held_disk++;
        d->counted[k] |= NM_ARG_DISK;
    }
}

/* The rebuilt objects t holds (NM_ARG_HELD, NM_ARG_DISK) let go: t has
   them pinned for its run now, or it is going away. */
static void
s_unhold(nm_t *nm, nm_task_t *t)
{
    nm_args_t it;
    exec_arg_t a;
    int i;
    if (!t->counted)
        return;
    nm_args_init(&it, t);
    while (nm_args_next(&it, &a, &i)) {
        uint8_t f = t->counted[i] & (NM_ARG_HELD | NM_ARG_DISK);
        if (!f)
            continue;
        t->counted[i] &= (uint8_t) ~f;
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        nm_obj_hold_t *h = o ? nm_obj_hold(nm, o, false) : NULL;
        if (!o)
            continue;
        if ((f & NM_ARG_DISK) && h && h->held_disk)
            h->held_disk--;
        if ((f & NM_ARG_HELD) && h && h->held && --h->held == 0)
            nm->held_bytes -= o->size;
        nm_obj_hold_done(nm, o);
        if (f & NM_ARG_HELD)
            nm_obj_unpin(nm, o); /* its use is still counted: never deleted here */
    }
}

/* Whether t holds a rebuilt object (it then runs before the others). */
static bool
s_holds(const nm_task_t *t)
{
    for (uint16_t i = 0; t->counted && i < t->argc; i++)
        if (t->counted[i] & (NM_ARG_HELD | NM_ARG_DISK))
            return true;
    return false;
}

/* Walk the arguments of t at submission: count those that exist, wait for
   those still to come (rebuilding lost ones). 0, or a code with why: an
   argument that failed, or one never made. */
int
nm_task_resolve(nm_t *nm, nm_task_t *t, char *why, size_t n)
{
    nm_args_t it;
    exec_arg_t a;
    int i;
    nm_args_init(&it, t);
    while (nm_args_next_ref(&it, &a, &i)) {
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        util_id_t dt_id;
        exec_ref_task(&a.ref, &dt_id);
        if (o && o->state == OBJ_ERROR) {
            snprintf(why, n, "its argument from %.*s", (int) o->size, (const char *) o->bytes);
            return o->cancelled ? LUX_ECANCELLED : LUX_ETASK;
        }
        if (o && o->freed) {
            /* still here for the tasks queued before the free: not for
               this one, or it would run or not by how soon they ended */
            char hex[LUX_REF_LEN * 2 + 1];
            util_hex(hex, a.ref.b, LUX_REF_LEN);
            snprintf(why, n, "its argument %s was made by lux_put and then freed: a put has no "
                     "lineage to be rebuilt from", hex);
            return LUX_ENOTFOUND;
        }
        int brc = 0;
        if ((!o || o->state == OBJ_LOST) && !nm->ops.far_here(nm, &a.ref)) {
            /* another node may hold it: pulled here before t runs, or, when
               t is to be placed first, where it runs (exec_node_far.c) */
            if (t->far_later)
                continue;
            if ((brc = nm->ops.far_fetch(nm, t, &a.ref)) == 0)
                continue;
            snprintf(why, n, "its argument %s", lux_errmsg());
            return brc;
        }
        if (o) {
            s_count(t, i, o);
            if (o->state != OBJ_LOST)
                continue;
        }
        nm_task_t *dt = nm_task_find(nm, &dt_id);
        if (!dt && (brc = nm_rebuild(nm, &a.ref)) == 0)
            dt = nm_task_find(nm, &dt_id);
        if (dt && exec_ref_idx(&a.ref) >= dt->nret)
            dt = NULL; /* a return its task does not have */
        if (!dt && brc) {
            /* the rebuild says why: the root cause, and the chain to it */
            snprintf(why, n, "its argument %s", lux_errmsg());
            return brc == LUX_ETASK ? LUX_ETASK : LUX_ENOTFOUND;
        }
        if (!dt) {
            char hex[LUX_REF_LEN * 2 + 1];
            util_hex(hex, a.ref.b, LUX_REF_LEN);
            snprintf(why, n, "its argument %s was never created (or its lineage is not in the log)",
                     hex);
            return LUX_ENOTFOUND;
        }
        if (!s_add_dependent(dt, t, exec_ref_idx(&a.ref)))
            return util_err(LUX_ENOMEM, "out of memory");
        t->waiting++;
    }
    return 0;
}

/* Intern function names: a task keeps its own copy, but they are few and
   short, so this is just strdup; kept apart to change in one place. */
static char *
s_dup_name(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

nm_task_t *
nm_task_new(nm_t *nm, nm_client_t *owner, const exec_spec_t *s, bool insert)
{
    nm_task_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->id = s->task;
    t->parent = s->parent;
    t->job = s->job;
    memcpy(t->module, s->module, 16);
    t->fn = s_dup_name(s->fn, s->fn_len);
    t->args_len = s->args_len;
    t->args = s->args_len ? malloc(s->args_len) : NULL;
    if (!t->fn || (s->args_len && !t->args)) {
        nm_task_free(t);
        return NULL;
    }
    if (s->args_len)
        memcpy(t->args, s->args, s->args_len);
    t->argc = s->argc;
    if (s->args_len && memchr(s->args, EXEC_ARG_REF, s->args_len) &&
        !(t->counted = calloc(t->argc, 1))) {
        nm_task_free(t);
        return NULL;
    }
    t->nret = s->nret;
    t->max_attempts = s->max_attempts ? s->max_attempts : 3;
    t->cpus_milli = s->cpus_milli;
    t->res = s->res_len ? s_dup_name(s->res, s->res_len) : NULL;
    t->attempt = 1;
    t->timeout_ms = s->timeout_ms;
    t->owner = owner;
    t->nested = owner && owner->kind == EXEC_HELLO_WORKER;
    t->state = TASK_WAITING;
    if (!insert)
        return t;
    nm_task_t **p = util_idmap_put(nm->tasks, t->id.b, NULL);
    if (!p) {
        nm_task_free(t);
        return NULL;
    }
    *p = t;
    return t;
}

/* --- rebuilding lost objects ------------------------------------------------------------ */

int
nm_rebuild(nm_t *nm, const lux_ref_t *id)
{
    util_id_t tid;
    exec_spec_t spec;
    util_buf_t buf;
    char why[UTIL_ERRMSG_MAX];
    int rc;

    char hex[LUX_REF_LEN * 2 + 1];
    exec_ref_task(id, &tid);
    if (nm_task_find(nm, &tid))
        return 0; /* on its way */
    util_hex(hex, id->b, LUX_REF_LEN);
    nm_obj_t *o = nm_obj_get(nm, id);
    if (o && o->unread >= NM_REBUILD_UNREAD_MAX)
        return util_err(LUX_ETASK, "%s was rebuilt %u times and each time evicted again before "
                        "the task or reader that needs it could have it: the store (%llu bytes) "
                        "is too small for what is in use at once", hex, (unsigned) o->unread,
                        (unsigned long long) nm->store_bytes);
    util_buf_init(&buf);
    if ((rc = nm_log_lookup(nm, &tid, &spec, &buf))) {
        util_buf_free(&buf);
        if (rc == LUX_ENOTFOUND && nm_log_was_put(nm, id))
            return util_err(LUX_ENOTFOUND, "%s was made by lux_put and then freed (or lost "
                            "with its owner): a put has no lineage to be rebuilt from", hex);
        if (rc == LUX_ENOTFOUND)
            return util_err(LUX_ENOTFOUND, "%s was never created (or its lineage is not in "
                            "the log)", hex);
        snprintf(why, sizeof why, "%s", lux_errmsg());
        return util_err(rc, "%s was lost and the log's record of its task cannot be read: %s",
                        hex, why);
    }
    if (exec_ref_idx(id) >= spec.nret) { /* not an output of the task: nothing to rebuild */
        util_buf_free(&buf);
        return util_err(LUX_ENOTFOUND, "%s was never created: its task has %u returns", hex,
                        spec.nret);
    }
    /* the head rebuilds tasks of drivers on other nodes: their module may
       never have come here (a spilled task brings its module, a rebuild
       does not); before, the rebuilt task failed in the worker, "No such
       file", and the rebuild was asked again and again (t/6156) */
    if ((rc = nm_rmodule_from_log(nm, spec.module))) {
        snprintf(why, sizeof why, "%s", lux_errmsg());
        util_buf_free(&buf);
        return util_err(rc, "%s was lost and its task's module cannot be had here: %s", hex,
                        why);
    }
    nm_task_t *t = nm_task_new(nm, NULL, &spec, true);
    util_buf_free(&buf);
    if (!t)
        return util_err(LUX_ENOMEM, "out of memory rebuilding");
    t->rebuild = true;
    nm->n_rebuilt++;
    if (o)
        o->unread++; /* back to 0 when a task or reader has it */
    char info[128];
    snprintf(info, sizeof info, "rebuild: object %s was lost", hex);
    nm_log_retried(nm, t, info);
    if ((rc = nm_task_resolve(nm, t, why, sizeof why))) {
        char th[UTIL_ID_HEX], fn[EXEC_NAME_MAX + 1];
        util_id_hex(&t->id, th);
        snprintf(fn, sizeof fn, "%s", s_fn(t));
        nm_task_fail(nm, t, rc, why);
        return util_err(LUX_ETASK, "%s was lost and its rebuild failed: task %s (%s) failed: %s",
                        hex, th, fn, why);
    }
    if (t->waiting == 0) {
        (void) s_reserve(nm, t);
        nm_ready_push(nm, t, true);
    }
    return 0;
}

/* --- reserving arguments ---------------------------------------------------------------- */

/* t left the ready queue: its arguments are no longer counted as
   reserved (their pins stay while it runs, or go with nm_task_release_args). */
static void
s_unreserve_count(nm_t *nm, nm_task_t *t)
{
    util_rd_t r;
    exec_arg_t a;
    if (!t->reserved)
        return;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a)) {
        nm_obj_t *o;
        if (a.kind != EXEC_ARG_REF || !(o = nm_obj_get(nm, &a.ref)) || !o->resv)
            continue;
        if (--o->resv == 0 && o->where == EXEC_W_ARENA)
            nm->resv_bytes -= o->size;
    }
    nm->nresv--;
    t->reserved = false;
}

/* t is ready after waiting for an argument (made, or rebuilt after an
   eviction): pin its arguments now, while they are all here, so that
   what it waited for cannot be evicted again before it runs (a rebuild
   and an eviction could otherwise follow each other for ever, the task
   never running). Objects reserved so take at most half of the store
   (an object counted once however many tasks wait for it; at least one
   task, whatever its size); the store takes them back when it has no room
   for an output (nm_unreserve_all). A reserved task runs before the
   others, to let go of what it holds. Whether t was reserved. */
static bool
s_reserve(nm_t *nm, nm_task_t *t)
{
    nm_args_t it;
    exec_arg_t a;
    int i;
    uint64_t bytes = 0;
    if (t->pinned || !t->counted)
        return false;
    nm_args_init(&it, t);
    while (nm_args_next_ref(&it, &a, &i)) {
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        if (!o || o->state != OBJ_READY)
            return false; /* spilled or lost again already: dispatch brings it back */
        if (o->where == EXEC_W_ARENA && !o->resv)
            bytes += o->size;
    }
    if (nm->nresv && nm->resv_bytes + bytes > nm->store_bytes / 2)
        return false;
    nm_args_init(&it, t);
    while (nm_args_next_ref(&it, &a, &i)) {
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        nm_obj_pin(nm, o);
        if (o->resv++ == 0 && o->where == EXEC_W_ARENA)
            nm->resv_bytes += o->size;
    }
    t->pinned = true;
    t->reserved = true;
    nm->nresv++;
    return true;
}

bool
nm_unreserve_all(nm_t *nm)
{
    bool any = false;
    if (!nm->nresv)
        return false;
    for (nm_task_t *t = nm->ready; t; t = t->next) {
        if (t->reserved) {
            nm_task_release_args(nm, t, false); /* its uses stay: nothing is deleted */
            any = true;
        }
    }
    return any;
}

/* The store bytes t's arguments take when it runs: those in the store
   or spilled (a lost one's size is not known until it is rebuilt). */
uint64_t
nm_task_arg_bytes(nm_t *nm, const nm_task_t *t)
{
    util_rd_t r;
    exec_arg_t arg;
    uint64_t n = 0;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &arg)) {
        if (arg.kind != EXEC_ARG_REF)
            continue;
        nm_obj_t *o = nm_obj_get(nm, &arg.ref);
        if (o && (o->state == OBJ_SPILLED || (o->state == OBJ_READY &&
                                              o->where == EXEC_W_ARENA)))
            n += o->size;
    }
    return n;
}

static int
s_holds_one(void *arg, const void *key, void *value)
{
    nm_task_holds_t *h = ((void **) arg)[1];
    nm_t *nm = ((void **) arg)[0];
    nm_task_t *t = *(nm_task_t **) value;
    (void) key;
    if (t->worker)
        return 0;
    if (t->reserved) {
        h->reserved++;
        h->reserved_bytes += nm_task_arg_bytes(nm, t);
        return 0;
    }
    if (!s_holds(t))
        return 0;
    nm_args_t it;
    exec_arg_t a;
    int i;
    h->held++;
    nm_args_init(&it, t);
    while (nm_args_next(&it, &a, &i)) {
        nm_obj_t *o = (t->counted[i] & NM_ARG_HELD) ? nm_obj_get(nm, &a.ref) : NULL;
        if (o && o->state == OBJ_READY && o->where == EXEC_W_ARENA)
            h->held_bytes += o->size;
    }
    return 0;
}

void
nm_task_holds(nm_t *nm, nm_task_holds_t *h)
{
    void *arg[2] = {nm, h};
    memset(h, 0, sizeof *h);
    util_idmap_each(nm->tasks, s_holds_one, arg);
}

/* --- finishing -------------------------------------------------------------------------- */

/* Let go of a task's arguments: unpin them if it was handed to a worker,
   and drop its uses; an object nobody owns or uses any more goes. */
void
nm_task_release_args(nm_t *nm, nm_task_t *t, bool uses)
{
    util_rd_t r;
    exec_arg_t a;
    int i = -1;
    s_unreserve_count(nm, t);
    if (uses)
        s_unhold(nm, t); /* going away: what it held for its run goes too */
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a)) {
        i++;
        if (a.kind != EXEC_ARG_REF)
            continue;
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        if (!o)
            continue;
        if (uses && t->counted && (t->counted[i] & NM_ARG_COUNTED)) {
            t->counted[i] = 0;
            o->uses--;
        }
        /* unpinning deletes it when nothing holds it any more */
        if (t->pinned && o->pins)
            nm_obj_unpin(nm, o);
        else if (!o->owned && !o->uses && !o->pins)
            nm_obj_let_go(nm, o);
    }
    t->pinned = false;
}

/* Answer clients that asked (GET) for t's outputs before they existed. */
static void
s_answer_waiters(nm_t *nm, nm_task_t *t)
{
    for (uint16_t i = 0; i < t->nwaiters; i++) {
        lux_ref_t id;
        for (uint8_t k = 0; k < t->nret; k++) {
            exec_ref_make(&id, &t->id, k);
            nm_obj_t *o = nm_obj_get(nm, &id);
            if (!o)
                continue;
            bool pin = o->state == OBJ_READY && o->where == EXEC_W_ARENA;
            if (pin)
                nm_client_pin(nm, t->waiters[i], o);
            nm_client_send_obj(nm, t->waiters[i], o, pin);
        }
    }
}

/* t's outputs that nobody owns (rebuilt for nobody, or freed by their
   owner before they were made) and nothing needs once its waiters have
   them: deleted; those rebuilt for another node's pull stay (evictable)
   for it to come. */
static void
s_drop_unneeded(nm_t *nm, nm_task_t *t)
{
    for (uint8_t i = 0; i < t->nret && !t->keep_outputs; i++) {
        lux_ref_t id;
        exec_ref_make(&id, &t->id, i);
        nm_obj_t *o = nm_obj_get(nm, &id);
        if (o && !o->owned && !o->pins && !o->uses)
            nm_obj_let_go(nm, o);
    }
}

/* t finished well (outputs set): wake its dependents, answer, free it. */
static void
s_done(nm_t *nm, nm_task_t *t)
{
    for (uint32_t i = 0; i < t->ndeps; i++) {
        nm_task_t *d = t->dependents[i].task;
        lux_ref_t id;
        exec_ref_make(&id, &t->id, t->dependents[i].idx);
        nm_obj_t *o = nm_obj_get(nm, &id);
        if (o) {
            /* count the use on d's first uncounted argument naming it
               (one lost at d's submission was counted then) */
            util_rd_t r;
            exec_arg_t a;
            int k = -1;
            bool counted = false, held = false;
            /* rebuilt for d: held for d until d runs, so that nothing
               evicts it first, or only to disk (d may still wait for
               another argument: two needed objects evicting each other's
               rebuilt copies was a loop without end, DESIGN 7 rule 10) */
            bool hold = t->rebuild && !nm->test_unheld && o->state == OBJ_READY &&
                        o->where == EXEC_W_ARENA && d->counted;
            util_rd_init(&r, d->args, d->args_len);
            while (exec_arg_next(&r, &a) && d->counted && !(counted && (held || !hold))) {
                k++;
                if (a.kind != EXEC_ARG_REF || memcmp(a.ref.b, id.b, LUX_REF_LEN) != 0)
                    continue;
                if (!counted && !(d->counted[k] & NM_ARG_COUNTED)) {
                    s_count(d, k, o);
                    counted = true;
                }
                if (hold && !held && !(d->counted[k] & (NM_ARG_HELD | NM_ARG_DISK))) {
                    s_hold(nm, d, k, o);
                    held = true;
                }
            }
        }
        if (--d->waiting == 0)
            nm_task_wake(nm, d);
    }
    s_answer_waiters(nm, t);
    nm_task_release_args(nm, t, true);
    if (!t->ndeps) /* its dependents keep them */
        s_drop_unneeded(nm, t);
    util_idmap_del(nm->tasks, t->id.b);
    nm_task_free(t);
}

void
nm_task_outputs_ready(nm_t *nm, nm_task_t *t)
{
    if (t->remote)
        util_prof_stamp("h_ready", t->id.b);
    if (nm->ops.remote_ended) /* one of none another node sent: it is told */
        nm->ops.remote_ended(nm, t, 0, NULL);
    for (uint8_t i = 0; i < t->nret; i++) {
        lux_ref_t id;
        exec_ref_make(&id, &t->id, i);
        nm_obj_t *o = nm_obj_get(nm, &id);
        if (!o)
            continue;
        nm_obj_ready(nm, o);
    }
    s_done(nm, t); /* outputs made for nobody go there */
}

/* Make an output object of t (or take the lost one being rebuilt). */
nm_obj_t *
nm_task_output(nm_t *nm, nm_task_t *t, uint8_t i)
{
    lux_ref_t id;
    exec_ref_make(&id, &t->id, i);
    nm_obj_t *o = nm_obj_get(nm, &id);
    if (!o) {
        o = nm_obj_new(nm, &id);
        if (!o)
            return NULL;
        /* a rebuilt output nobody owns lives while needed, and so does one
           its owner freed before it was made */
        o->owned = t->owner != NULL && !(t->freed >> i & 1);
        o->owner = o->owned ? t->owner : NULL;
    }
    o->rebuilt = t->rebuild && !o->owned; /* kept when let go (nm_obj_let_go) */
    o->lineage = t->lineage;
    return o;
}

void
nm_task_ended(nm_t *nm, const nm_task_t *t)
{
    if (!t->owner || !t->owner->peer)
        nm->work_ended_ns = util_mono_ns();
}

/* Fail one task (already off the ready queue and its worker): its outputs
   become errors carrying text, its failure is logged, and it is freed. */
static void
s_fail_one(nm_t *nm, nm_task_t *t, int status, const char *msg, const char *text)
{
    if (t->actor && nm->ops.actor_failing(nm, t, status, text))
        return;
    s_forget_dependent(nm, t); /* it may still be on others' lists */
    nm->n_failed++;
    nm_task_ended(nm, t);
    exec_result_t r = {.task = t->id, .attempt = t->attempt, .status = status, .msg = msg,
                       .msg_len = (uint16_t) strlen(msg)};
    r.t_start = r.t_end = util_now_ns();
    if (!t->remote) /* one spilled elsewhere failed there: the event is that node's */
        nm_log_finished(nm, t, t->worker, &r, 0, NULL);
    for (uint8_t i = 0; i < t->nret; i++) {
        nm_obj_t *o = nm_task_output(nm, t, i);
        /* a failed rebuild's output still here stays, and readers' with it
           (rule 14); so does one held on disk for a waiting task, whose
           spilled copy is as good (rule 10), and its file with it */
        if (!o || o->state == OBJ_SPILLED || nm_obj_made_again(o, NULL))
            continue;
        nm_obj_set_error(nm, o, text);
        o->cancelled = status == LUX_ECANCELLED; /* lux_get says LUX_ECANCELLED */
        nm_obj_ready(nm, o);
    }
    if (nm->ops.remote_ended) /* one another node sent here: it is told */
        nm->ops.remote_ended(nm, t, status, text);
    s_answer_waiters(nm, t);
    nm_task_release_args(nm, t, true);
    s_drop_unneeded(nm, t);
    util_idmap_del(nm->tasks, t->id.b);
    nm_task_free(t);
}

/* Fail t, and every task that waits, directly or not, for one of its
   outputs: all are found first (marked doomed), then failed one by one,
   so no list is walked after what it points to is freed. Each dependent's
   error names t. */
void
nm_task_fail(nm_t *nm, nm_task_t *t, int status, const char *msg)
{
    char hex[UTIL_ID_HEX], text[1024], why[1200];
    nm_task_t **all = malloc(16 * sizeof *all);
    size_t n = 0, cap = 16;

    util_id_hex(&t->id, hex);
    if (t->actor) {
        char ah[UTIL_ID_HEX];
        util_id_hex(&t->actor->id, ah);
        if (t->run && t->run->idx)
            snprintf(text, sizeof text, "actor %s (%s): call %llu (%s) failed: %s", ah,
                     t->actor->cls, (unsigned long long) t->run->idx, s_fn(t), msg);
        else
            snprintf(text, sizeof text, "actor %s (%s): call %s (%s) failed: %s", ah,
                     t->actor->cls, hex, s_fn(t), msg);
    } else {
        snprintf(text, sizeof text, "task %s (%s) failed: %s", hex, s_fn(t), msg);
    }
    snprintf(why, sizeof why, "its argument from %s", text);
    if (!all) {
        s_fail_one(nm, t, status, msg, text);
        return;
    }
    /* breadth first over everything waiting on t, each once */
    t->doomed = true;
    all[n++] = t;
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < all[i]->ndeps; k++) {
            nm_task_t *d = all[i]->dependents[k].task;
            if (!d || d->doomed)
                continue;
            if (n == cap) {
                nm_task_t **p = realloc(all, 2 * cap * sizeof *p);
                if (!p)
                    continue; /* out of memory: it fails when its own turn comes */
                all = p;
                cap *= 2;
            }
            d->doomed = true;
            all[n++] = d;
        }
    }
    for (size_t i = 0; i < n; i++) {
        nm_task_t *x = all[i];
        if (i == 0) {
            s_fail_one(nm, x, status, msg, text);
        } else {
            char xt[1400], xh[UTIL_ID_HEX];
            util_id_hex(&x->id, xh);
            snprintf(xt, sizeof xt, "task %s (%s) failed: %s", xh, s_fn(x), why);
            /* what needs a cancelled task is cancelled too (exec_node_cancel.c) */
            s_fail_one(nm, x, status == LUX_ECANCELLED ? LUX_ECANCELLED : LUX_ETASK, why, xt);
        }
    }
    free(all);
}

/* --- the arguments of a run ------------------------------------------------------------- */

/* Whether t's spilled arguments may go beyond the store's size: t has
   waited its LUX_STORE_WAIT_MS for room, or no running task could free
   any (a store full of the driver's pins and of blocked tasks' waits for
   nothing). Never with a wait of 0: no wait, nor anything beyond. */
static int
s_room_over(nm_t *nm, const nm_task_t *t)
{
    if (nm->store_wait_ms <= 0)
        return 0;
    if (t->room_since_ms && util_mono_ms() - t->room_since_ms >= nm->store_wait_ms)
        return 1;
    return !nm_store_room_may_come(nm, NULL);
}

/* Resolve t's arguments into descriptors for the worker and pin the
   objects (a reserved task's are pinned already). 0; 1 when an argument
   was evicted since t was queued (t now waits for its rebuild); 2 when a
   spilled argument has no room to come back yet (t waits in the queue);
   or a code (an argument that cannot be brought back). */
int
nm_task_run_args(nm_t *nm, nm_task_t *t, exec_obj_t *objs)
{
    util_rd_t r;
    exec_arg_t a;
    int i = 0, rc = 0, over = -1; /* -1: not decided yet */
    bool lost = false, room = false, reserved = t->reserved;
    s_unreserve_count(nm, t);
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a)) {
        memset(&objs[i], 0, sizeof objs[i]);
        if (a.kind == EXEC_ARG_VALUE) {
            objs[i].where = EXEC_W_INLINE;
            objs[i].bytes = a.data;
            objs[i].size = a.size;
            i++;
            continue;
        }
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        if (reserved) {
            /* pinned while it waited: here and ready, whatever happened */
            nm_obj_describe(nm, o, &objs[i]);
            i++;
            continue;
        }
        /* a spilled argument may go beyond the store's size (nm_store_try)
           once t has waited its time for room, or at once when no running
           task could free any (DESIGN 7, rule 9); decided once, before the
           try, so that only a try allowed beyond it fails t */
        bool spilled = o && o->state == OBJ_SPILLED;
        if (spilled && over < 0)
            over = s_room_over(nm, t);
        nm->store_over = spilled && over > 0;
        if (spilled)
            rc = nm_obj_restore(nm, o);
        nm->store_over = false;
        if (spilled && rc) {
            /* not even beyond the store: t waits on while a task runs
               that may free room (tasks blocked in gets hold the store,
               and what they wait for runs: t/3154), and fails only when
               none has run for LUX_STORE_WAIT_MS (DESIGN 7, rule 13) */
            int64_t since = t->room_since_ms ? t->room_since_ms : util_mono_ms();
            if (rc == LUX_EFULL && over > 0 &&
                !nm_store_room_stuck(nm, NULL, since, &t->room_noted, "a task's spilled argument",
                                     o->size))
                over = 0;
            else if (rc == LUX_EFULL && over > 0 &&
                     util_mono_ms() - since >= nm->store_wait_max_ms)
                rc = util_err_ctx(rc, "no room to bring back a spilled argument, even beyond "
                                  "the store's size, after a wait of %lld ms, the most "
                                  "(LUX_STORE_WAIT_MAX_MS) while tasks blocked in gets hold "
                                  "the store", (long long) (util_mono_ms() - since));
            else if (rc == LUX_EFULL && over > 0)
                rc = util_err_ctx(rc, "no room to bring back a spilled argument, even beyond "
                                  "the store's size, and no running task has freed any for "
                                  "%lld ms", (long long) nm->store_wait_ms);
            if (rc != LUX_EFULL || over > 0)
                break;
            rc = 0;
            room = true; /* no room to bring it back now: t waits for some */
            i++;
            continue;
        }
        if ((!o || o->state == OBJ_LOST) && !nm->ops.far_here(nm, &a.ref)) {
            /* a copy pulled here, evicted while t waited: pulled again */
            if (t->counted && (t->counted[i] & NM_ARG_COUNTED)) {
                t->counted[i] &= (uint8_t) ~NM_ARG_COUNTED; /* counted again when back */
                if (o)
                    o->uses--;
            }
            if ((rc = nm->ops.far_fetch(nm, t, &a.ref))) {
                char m[UTIL_ERRMSG_MAX];
                snprintf(m, sizeof m, "%s", lux_errmsg());
                rc = util_err(rc, "its argument %s", m);
                break;
            }
            lost = true;
            i++;
            continue;
        }
        if (!o || o->state == OBJ_LOST) {
            /* evicted while t waited: rebuild it, and wait again */
            util_id_t dt_id;
            exec_ref_task(&a.ref, &dt_id);
            nm_task_t *dt = nm_task_find(nm, &dt_id);
            if (!dt && (rc = nm_rebuild(nm, &a.ref)) == 0)
                dt = nm_task_find(nm, &dt_id);
            if (!dt) {
                if (!rc) {
                    rc = util_err(LUX_ENOTFOUND, "an argument was lost and cannot be rebuilt");
                } else {
                    char m[UTIL_ERRMSG_MAX];
                    snprintf(m, sizeof m, "%s", lux_errmsg());
                    rc = util_err(rc, "its argument %s", m);
                }
                break;
            }
            if (!s_add_dependent(dt, t, exec_ref_idx(&a.ref))) {
                rc = util_err(LUX_ENOMEM, "out of memory");
                break;
            }
            t->waiting++;
            lost = true;
            i++;
            continue; /* note every lost one now, so t waits for all */
        }
        if (o->state != OBJ_READY) {
            rc = util_err(LUX_ESTATE, "an argument is not ready");
            break;
        }
        nm_obj_pin(nm, o);
        nm_obj_describe(nm, o, &objs[i]);
        i++;
    }
    if (!rc && (lost || room))
        rc = lost ? 1 : 2; /* a lost one first: t waits for its rebuild */
    if (rc) {
        /* unpin exactly what this call pinned: the first i arguments */
        util_rd_t r2;
        exec_arg_t a2;
        util_rd_init(&r2, t->args, t->args_len);
        for (int k = 0; k < i && exec_arg_next(&r2, &a2); k++) {
            if (a2.kind != EXEC_ARG_REF)
                continue;
            nm_obj_t *o = nm_obj_get(nm, &a2.ref);
            if (o && o->state == OBJ_READY && objs[k].where != 0)
                nm_obj_unpin(nm, o);
        }
    }
    t->pinned = rc == 0; /* every argument is pinned: nm_task_release_args unpins */
    if (rc == 0) {
        s_unhold(nm, t); /* pinned for its run now */
        util_rd_init(&r, t->args, t->args_len);
        while (exec_arg_next(&r, &a)) {
            nm_obj_t *o;
            if (a.kind == EXEC_ARG_REF && (o = nm_obj_get(nm, &a.ref)))
                o->unread = 0; /* a task has it */
        }
    }
    return rc;
}

/* --- waking and dropping a task --------------------------------------------------------- */

void
nm_task_wake(nm_t *nm, nm_task_t *t)
{
    if (t->actor) {
        nm->ops.actor_kick(nm, t->actor);
    } else {
        bool reserved = s_reserve(nm, t);
        /* one holding rebuilt objects runs first, to let go of them */
        nm_ready_push(nm, t, t->nested || reserved || s_holds(t));
    }
}

void
nm_task_discard(nm_t *nm, nm_task_t *t)
{
    s_forget_dependent(nm, t);
    nm_task_release_args(nm, t, true);
    nm_task_free(t);
}
