/*  exec_node_sched - the local scheduler (DESIGN section 7) and the worker
    pool.

    A task waits until every argument is ready, then queues; queued tasks go
    to idle workers in batches (a worker runs its batch in order and reports
    results as it goes), taking the CPUs and custom resources they ask for
    while they run. A worker that blocks in lux_get inside a task gives its
    CPUs back and hands back the tasks it has not started, and an extra
    worker is started if none is idle, so nested tasks cannot deadlock:
    extra workers are capped (4 per pool worker, plus 8) only while one is
    busy or starting, for when every worker is blocked nothing else would
    run what they wait for. Tasks submitted by tasks queue ahead of drivers'
    work, and tasks handed back go behind it: what a blocked task waits for
    runs first, so few tasks block at once. Extra workers leave when idle
    for a while and nothing is blocked.

    A worker that dies is replaced; its running task is retried up to its
    max_attempts, then fails with a message saying how its workers died; the
    tasks it had not started go back to the queue. When it died holding
    several unreported tasks, which one ran is not known: none is charged,
    and each runs again alone (a suspect) to find out. A failed task's outputs
    are errors, and every task that needs one fails too, naming the first
    task that failed.

    Lost outputs are rebuilt by running their task again, from its
    task_submitted event in the log, recursively for lost arguments.
*/
#include "exec_node_sched.h"
#include "exec_node_int.h"
#include "exec_pool.h"
#include "exec_node_gpu.h"
#include "exec_remote.h"
#include "exec_node.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_proc.h"
#include "../util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_BATCH_MAX 256

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

static void
s_ready_push(nm_t *nm, nm_task_t *t, bool front)
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

/* The rebuilt objects t holds (NM_ARG_HELD) let go: t has them pinned for
   its run now, or it is going away. */
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
        if (!(t->counted[i] & NM_ARG_HELD))
            continue;
        t->counted[i] &= (uint8_t) ~NM_ARG_HELD;
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        if (o)
            nm_obj_unpin(nm, o); /* its use is still counted: never deleted here */
    }
}

/* Whether t holds a rebuilt object (it then runs before the others). */
static bool
s_holds(const nm_task_t *t)
{
    for (uint16_t i = 0; t->counted && i < t->argc; i++)
        if (t->counted[i] & NM_ARG_HELD)
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

static nm_task_t *
s_task_new(nm_t *nm, nm_client_t *owner, const exec_spec_t *s)
{
    return nm_task_new(nm, owner, s, true);
}

/* Tasks waiting here to run: the ready queue and what workers hold
   and have not started (a worker's batch). */
static uint64_t
s_queue_len(nm_t *nm)
{
    uint64_t n = nm->nready;
    for (nm_worker_t *w = nm->workers; w; w = w->next)
        if (w->queued > 1)
            n += w->queued - 1;
    return n;
}

/* Whether one of t's arguments is held only on other nodes (not here,
   not made here). */
static bool
s_has_far(nm_t *nm, nm_task_t *t)
{
    util_rd_t r;
    exec_arg_t a;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a))
        if (a.kind == EXEC_ARG_REF && !nm->ops.far_here(nm, &a.ref))
            return true;
    return false;
}

int
nm_submit(nm_t *nm, nm_client_t *c, const exec_spec_t *s)
{
    char why[600];
    if (s->kind != EXEC_SPEC_TASK)
        return nm->ops.actor_submit(nm, c, s);
    lux_ref_t out0;
    exec_ref_make(&out0, &s->task, 0);
    if (nm_task_find(nm, &s->task) || (s->nret && nm_obj_get(nm, &out0)))
        return 0; /* submitted before: a client resending is not a new task */
    nm_task_t *t = s_task_new(nm, c, s);
    if (!t)
        return util_err(LUX_ENOMEM, "out of memory holding a task");
    nm->n_submitted++;
    int64_t needs[16];
    bool can = nm_res_needs(nm, t, needs, why, sizeof why);
    /* one this node can never run goes to another (dispatch spills it):
       its arguments held elsewhere are pulled there, not here */
    bool mine = nm_remote_on(nm) && !(c && c->peer) && !t->nested;
    t->far_later = (!can && nm_remote_on(nm) && !(c && c->peer)) || (mine && s_has_far(nm, t));
    int rc = nm_task_resolve(nm, t, why, sizeof why);
    if (!c || !c->peer) /* a task another node spilled here: its submission is that node's */
        nm_log_submitted(nm, t);
    if (!rc && !can && !nm_remote_on(nm)) {
        nm_res_needs(nm, t, needs, why, sizeof why);
        rc = LUX_EINVAL; /* else another node may have it: dispatch spills it */
    }
    if (rc) {
        nm_task_fail(nm, t, rc, why);
        return 0;
    }
    /* bottom-up (DESIGN 7.2): kept here when this node can run it, none
       of its arguments is held elsewhere and its queue is short; else
       the global scheduler places it */
    if (t->waiting == 0 && can && mine &&
        (t->far_later || s_queue_len(nm) >= (uint64_t) nm->spill_queue * (uint64_t) nm->target_workers) &&
        nm_remote_place(nm, t, t->far_later))
        return 0;
    if (t->waiting == 0)
        s_ready_push(nm, t, t->nested);
    return 0;
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
    nm_task_t *t = s_task_new(nm, NULL, &spec);
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
        s_ready_push(nm, t, true);
    }
    return 0;
}

/* --- reserving arguments ------------------------------------------------------------------ */

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
    util_rd_t r;
    exec_arg_t a;
    uint64_t bytes = 0;
    if (t->pinned || !t->counted)
        return false;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a)) {
        if (a.kind != EXEC_ARG_REF)
            continue;
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        if (!o || o->state != OBJ_READY)
            return false; /* spilled or lost again already: dispatch brings it back */
        if (o->where == EXEC_W_ARENA && !o->resv)
            bytes += o->size;
    }
    if (nm->nresv && nm->resv_bytes + bytes > nm->store_bytes / 2)
        return false;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a)) {
        if (a.kind != EXEC_ARG_REF)
            continue;
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

/* --- finishing ---------------------------------------------------------------------------- */

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
        else if (!o->owned && !o->uses && !o->pins && !o->nwaiters)
            nm_obj_delete(nm, o);
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
   them: deleted. */
static void
s_drop_unneeded(nm_t *nm, nm_task_t *t)
{
    for (uint8_t i = 0; i < t->nret; i++) {
        lux_ref_t id;
        exec_ref_make(&id, &t->id, i);
        nm_obj_t *o = nm_obj_get(nm, &id);
        if (o && !o->owned && !o->pins && !o->uses && !o->nwaiters)
            nm_obj_delete(nm, o);
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
            /* rebuilt for d: held (pinned) for d until d runs, so that
               nothing evicts it first (d may still wait for another
               argument: two needed objects evicting each other's rebuilt
               copies was a loop without end, DESIGN 7 rule 10) */
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
                if (hold && !held && !(d->counted[k] & NM_ARG_HELD)) {
                    nm_obj_pin(nm, o);
                    d->counted[k] |= NM_ARG_HELD;
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
    o->lineage = t->lineage;
    return o;
}

/* t ended: a lull begins (the loop's next wait polls for the longest
   window, exec_node.c s_wait), for the driver that gets t's outputs is
   likely to ask again within tens of microseconds. Not when t came from
   another node (exec_remote.c): its next comes over the network, hundreds
   of microseconds later, and polling meanwhile took the CPU that trip
   needs (spillback_latency_us about 3x longer on 2 loaded cores). */
static void
s_work_ended(nm_t *nm, const nm_task_t *t)
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
    s_work_ended(nm, t);
    exec_result_t r = {.task = t->id, .attempt = t->attempt, .status = status, .msg = msg,
                       .msg_len = (uint16_t) strlen(msg)};
    r.t_start = r.t_end = util_now_ns();
    if (!t->remote) /* one spilled elsewhere failed there: the event is that node's */
        nm_log_finished(nm, t, t->worker, &r, 0, NULL);
    for (uint8_t i = 0; i < t->nret; i++) {
        nm_obj_t *o = nm_task_output(nm, t, i);
        if (!o)
            continue;
        nm_obj_set_error(nm, o, text);
        o->cancelled = status == LUX_ECANCELLED; /* lux_get says LUX_ECANCELLED */
        nm_obj_ready(nm, o);
    }
    nm_remote_ended(nm, t, status, text);
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

/* --- workers ---------------------------------------------------------------------------- */

void
nm_worker_gone(nm_t *nm, nm_worker_t *w, const char *why)
{
    if (w->actor) {
        nm->ops.actor_worker_gone(nm, w, why);
        nm_pool_worker_free(nm, w);
        return;
    }
    nm->ops.cancel_worker_gone(nm, w); /* the tasks it was stopped for fail, not retried */
    nm_task_t *running = w->queue, *rest = running ? running->next : NULL;
    if (w->state == W_LEAVING && !running)
        log_info("worker %d %s", (int) w->pid, why);
    else
        log_warn("worker %d %s", (int) w->pid, why);
    /* give back what it held */
    nm_res_take(nm, w->held, -1);
    memset(w->held, 0, sizeof w->held);
    nm_gpu_give(nm, w->gpus);
    w->gpus = 0;
    /* The running task is known only when it was alone in the worker's
       queue: a worker reports results in batches, so the first unreported
       task of a longer queue may have finished long before the death.
       Then no task is charged an attempt (an innocent one would fail in
       place of one that kills its worker): they all go back marked
       suspect, and a suspect runs alone (nm_dispatch). */
    uint32_t held = w->queued;
    if (running && rest) {
        rest = running;
        running = NULL;
    }
    /* the tasks it had not started go back, in order, at the front */
    nm_task_t *stack[S_BATCH_MAX];
    int n = 0;
    for (nm_task_t *t = rest; t && n < S_BATCH_MAX; t = t->next)
        stack[n++] = t;
    for (int i = n - 1; i >= 0; i--) {
        stack[i]->worker = NULL;
        nm_task_release_args(nm, stack[i], false);
        if (!running) {
            char msg[300];
            stack[i]->suspect = true;
            snprintf(msg, sizeof msg, "worker %d %s holding %u tasks, this one perhaps running;"
                     " it runs again alone, attempt %u of %u (not counted)", (int) w->pid, why,
                     held, stack[i]->attempt, stack[i]->max_attempts);
            nm_log_retried(nm, stack[i], msg);
        }
        s_ready_push(nm, stack[i], true);
    }
    if (running) {
        running->worker = NULL;
        nm_task_release_args(nm, running, false);
        if (running->attempt >= running->max_attempts) {
            char msg[300];
            snprintf(msg, sizeof msg, "its worker died on each of %u attempts (the last %s)",
                     running->attempt, why);
            nm_task_fail(nm, running, LUX_EDEAD, msg);
        } else {
            running->attempt++;
            nm->n_retried++;
            char msg[300];
            snprintf(msg, sizeof msg, "worker %d %s; attempt %u of %u", (int) w->pid, why,
                     running->attempt, running->max_attempts);
            nm_log_retried(nm, running, msg);
            s_ready_push(nm, running, true);
        }
    }
    nm_pool_worker_free(nm, w);
}

/* --- dispatch --------------------------------------------------------------------------- */


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
            if (rc == LUX_EFULL && over > 0)
                rc = util_err_ctx(rc, "no room to bring back a spilled argument, even beyond "
                                  "the store's size%s", t->room_since_ms ? " after the wait"
                                  : " (no running task could free any)");
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

/* t has a spilled argument the store has no room to bring back yet:
   whether it may wait (its wait ends with a try beyond the store's size,
   s_room_over); with LUX_STORE_WAIT_MS 0 it may not. */
static bool
s_room_wait(nm_t *nm, nm_task_t *t)
{
    if (!t->room_since_ms)
        t->room_since_ms = util_mono_ms();
    if (nm->store_wait_ms > 0)
        return true;
    util_err_ctx(LUX_EFULL, "no room to bring back a spilled argument (LUX_STORE_WAIT_MS is 0)");
    return false;
}

/* Whether two tasks' resources (NULL: none but CPU) are the same. */
static bool
s_same_res(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

void
nm_dispatch(nm_t *nm)
{
    exec_obj_t *objs = NULL;
    size_t cap = 0;
    nm_task_t *deferred = NULL; /* the first task put back for want of room */
    bool no_room = false;
    nm->room_waits = false;
    while (nm->ready && !no_room) {
        int64_t needs[16];
        char why[256];
        nm_task_t *first = nm->ready;
        if (!nm_res_needs(nm, first, needs, why, sizeof why)) {
            nm->ready = first->next;
            if (!nm->ready)
                nm->ready_last = NULL;
            nm->nready--;
            first->next = NULL;
            if (!nm_remote_spill(nm, first)) /* another node may have it (exec_remote.c) */
                nm_task_fail(nm, first, LUX_EINVAL, why);
            continue;
        }
        nm_worker_t *w = nm_pool_idle(nm);
        if (!w)
            break;
        if (!nm_res_fits(nm, needs))
            break; /* wait for resources to come back */
        uint64_t gpus = nm_gpu_take(nm, needs); /* which GPUs (a batch of one) */
        int idle = 0;
        for (nm_worker_t *x = nm->workers; x; x = x->next)
            idle += x->state == W_IDLE && x->client != NULL;
        uint64_t batch = nm->nready / (uint64_t) (idle ? idle : 1);
        if (batch < 1)
            batch = 1;
        if (batch > S_BATCH_MAX)
            batch = S_BATCH_MAX;
        /* only tasks asking for the same as the first share a batch (the
           worker runs them one after the other, holding what one needs):
           the same CPUs and resources, none of GPUs (a batch of one) */
        util_buf_t *b = &nm->scratch;
        b->len = 0;
        util_buf_put_u32(b, 0);
        uint32_t count = 0;
        /* arguments in the store stay pinned while a batch waits on its
           worker: a batch pins at most its share of the store (past the
           first task), so the store keeps room for what tasks make */
        uint64_t pinned = 0, budget = nm->store_bytes / (4 * (uint64_t) nm->target_workers);
        while (nm->ready && count < batch && (count == 0 || pinned < budget)) {
            nm_task_t *t = nm->ready;
            if (count && (t->cpus_milli != first->cpus_milli || gpus ||
                          !s_same_res(t->res, first->res) ||
                          t->suspect || first->suspect || t->timeout_ms || first->timeout_ms))
                break;
            nm->ready = t->next;
            if (!nm->ready)
                nm->ready_last = NULL;
            nm->nready--;
            t->next = NULL;
            if (t->argc > cap) {
                cap = t->argc * 2;
                objs = realloc(objs, cap * sizeof *objs);
            }
            int rc = nm_task_run_args(nm, t, objs);
            if (rc == 1) {
                t->state = TASK_WAITING; /* for the rebuild of an argument */
                continue;
            }
            if (rc == 2 && !s_room_wait(nm, t))
                rc = LUX_EFULL;
            if (rc == 2) {
                /* to the back of the queue, until room appears; the
                   others may run meanwhile (once round the queue) */
                s_ready_push(nm, t, false);
                nm->room_waits = true; /* the tick tries again, and ends the wait */
                if (deferred == t) {
                    no_room = true;
                    break;
                }
                if (!deferred)
                    deferred = t;
                continue;
            }
            if (rc) {
                nm_task_fail(nm, t, rc, lux_errmsg());
                continue;
            }
            t->room_since_ms = 0;
            w->client->job = t->job; /* what its puts and nested tasks belong to */
            exec_run_t run = {.task = t->id, .job = t->job, .fn = t->fn,
                              .fn_len = (uint16_t) strlen(t->fn),
                              .nret = t->nret, .attempt = t->attempt, .argc = t->argc};
            memcpy(run.module, t->module, 16);
            nm_gpu_run(nm, gpus, &run);
            exec_run_encode(b, &run, objs);
            for (uint16_t k = 0; k < t->argc; k++)
                if (objs[k].where == EXEC_W_ARENA)
                    pinned += objs[k].size;
            t->state = TASK_RUNNING;
            t->worker = w;
            if (t->timeout_ms) /* alone in its batch: it starts now */
                nm->ops.cancel_started(nm, t);
            if (w->queue_last)
                w->queue_last->next = t;
            else
                w->queue = t;
            w->queue_last = t;
            w->queued++;
            count++;
        }
        if (count == 0) {
            nm_gpu_give(nm, gpus);
            continue;
        }
        util_le32(b->data, count);
        nm_res_take(nm, needs, 1);
        memcpy(w->held, needs, sizeof w->held);
        w->gpus = gpus;
        w->state = W_BUSY;
        zmsg_t *m = zmsg_new();
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_TASKS, NET_NO_SHARD, 0)});
        zmsg_addmem(m, b->data, b->len);
        nm_send(nm, w->client, &m);
    }
    free(objs);
    /* everyone blocked or busy and work waiting: one more worker; past the
       cap when none is busy or starting, for then every one is blocked
       and they would wait for ever. Actors' workers run only their calls:
       they count for neither. */
    if (nm->ready && !nm_pool_idle(nm)) {
        int blocked = 0, starting = 0, busy = 0, n = 0;
        for (nm_worker_t *x = nm->workers; x; x = x->next) {
            if (x->actor)
                continue;
            n++;
            blocked += x->state == W_BLOCKED;
            starting += x->state == W_STARTING;
            busy += x->state == W_BUSY;
        }
        if (blocked > starting &&
            (n < 4 * nm->target_workers + 8 || (busy == 0 && starting == 0)))
            nm_spawn_worker(nm, NM_SPAWN_EXTRA);
    }
    if (!nm->ready)
        nm_pool_retire_extras(nm);
    nm_remote_flush(nm); /* the tasks spilled in this pass, one message per node */
}

/* --- results ---------------------------------------------------------------------------- */

static void
s_worker_pop(nm_t *nm, nm_worker_t *w, nm_task_t *t)
{
    nm_task_t *prev = NULL;
    for (nm_task_t *x = w->queue; x; prev = x, x = x->next) {
        if (x != t)
            continue;
        if (prev)
            prev->next = x->next;
        else
            w->queue = x->next;
        if (w->queue_last == x)
            w->queue_last = prev;
        w->queued--;
        break;
    }
    t->next = NULL;
    t->worker = NULL;
    if (!w->queue) {
        nm_res_take(nm, w->held, -1);
        memset(w->held, 0, sizeof w->held);
        if (w->state == W_BUSY) {
            w->state = W_IDLE;
            w->idle_ms = util_mono_ms();
        }
        nm_gpu_done(nm, w);
    }
}

int
nm_result_outputs(nm_t *nm, nm_client_t *c, nm_task_t *t, const exec_result_t *r,
                  exec_obj_t *outs, const uint8_t **fps)
{
    util_rd_t rd;
    util_rd_init(&rd, r->outs, r->outs_len);
    for (uint8_t i = 0; i < r->nret; i++)
        if (exec_obj_decode(&rd, &outs[i]))
            break;
    *fps = util_rd_take(&rd, (size_t) r->nret * 16);
    bool bad = rd.bad || r->nret != t->nret;
    for (uint8_t i = 0; !bad && i < r->nret; i++) {
        if (outs[i].where == EXEC_W_ARENA) {
            /* room it was granted, and the value fits in it */
            uint64_t *granted = util_idmap_get(c->allocs, &outs[i].off);
            bad = !granted || *granted < outs[i].size;
        } else if (outs[i].where != EXEC_W_INLINE) {
            bad = true;
        }
    }
    return bad ? LUX_EPROTO : 0;
}

/* One result of worker w; its outputs are in the exec_result_t. */
static void
s_result(nm_t *nm, nm_worker_t *w, const exec_result_t *r)
{
    nm_task_t *t = nm_task_find(nm, &r->task);
    nm_client_t *c = w->client;
    if (!t || t->worker != w || t->attempt != r->attempt) {
        char hex[UTIL_ID_HEX];
        log_warn("worker %d reported task %s it was not running", (int) w->pid,
                 util_id_hex(&r->task, hex));
        return;
    }
    s_worker_pop(nm, w, t);
    if (nm->ops.cancel_result(nm, t))
        return; /* cancelled while it ran: it fails so, whatever it returned */
    if (r->status != 0) {
        char msg[600];
        snprintf(msg, sizeof msg, "%.*s", (int) r->msg_len, r->msg ? r->msg : "");
        if (!msg[0])
            snprintf(msg, sizeof msg, "it returned %s", lux_strerror(r->status));
        nm_task_fail(nm, t, r->status, msg);
        return;
    }
    /* the outputs */
    exec_obj_t outs[EXEC_MAX_RETURNS];
    const uint8_t *fps;
    uint64_t total = 0;
    if (nm_result_outputs(nm, c, t, r, outs, &fps)) {
        nm_task_fail(nm, t, LUX_EPROTO, "its worker reported malformed outputs");
        return;
    }
    uint8_t fp[16] = {0};
    util_blake_t h;
    util_blake_init(&h, 16);
    for (uint8_t i = 0; i < r->nret; i++) {
        nm_obj_t *o = nm_task_output(nm, t, i);
        if (!o)
            continue;
        if (outs[i].where == EXEC_W_ARENA) {
            util_idmap_del(c->allocs, &outs[i].off);
            nm_obj_set_arena(nm, o, outs[i].off, outs[i].size);
        } else {
            nm_obj_set_inline(nm, o, outs[i].bytes, outs[i].size);
        }
        memcpy(o->fp, fps + 16 * i, 16);
        util_blake_update(&h, o->fp, 16);
        total += outs[i].size;
    }
    util_blake_final(&h, fp, 16);
    nm->n_finished++;
    s_work_ended(nm, t);
    nm_log_finished(nm, t, w, r, total, fp);
    nm_task_outputs_ready(nm, t);
}

void
nm_task_outputs_ready(nm_t *nm, nm_task_t *t)
{
    nm_remote_ended(nm, t, 0, NULL); /* one of none another node sent: it is told */
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

void
nm_results(nm_t *nm, nm_client_t *c, const uint8_t *p, size_t n)
{
    util_rd_t rd;
    nm_worker_t *w = c->worker;
    if (!w) {
        log_warn("RESULTS from a client that is not a worker (pid %d)", (int) c->pid);
        return;
    }
    util_rd_init(&rd, p, n);
    uint32_t count = util_rd_u32(&rd);
    for (uint32_t i = 0; i < count && !rd.bad; i++) {
        exec_result_t r;
        if (exec_result_decode(&rd, &r)) {
            log_error("worker %d: %s", (int) w->pid, lux_errmsg());
            break;
        }
        if (w->actor)
            nm->ops.actor_result(nm, w, &r);
        else
            s_result(nm, w, &r);
        if (!c->worker)
            return; /* it went away while we answered */
    }
    /* Room granted and not sealed is abandoned: a worker sends RESULTS
       between tasks, or while a task is blocked, after telling us so
       (exec_worker.c), and one connection keeps order; so unless it is
       blocked, every ALLOC that came before this message was made by a
       task that has finished (a failed one, or a return set twice). A
       blocked task's room is still being written: it stays. */
    if (w->state != W_BLOCKED && !w->call_blocked)
        nm_client_drop_grants(nm, c);
}

void
nm_blocked(nm_t *nm, nm_client_t *c, const uint8_t *p, size_t n)
{
    util_rd_t rd;
    nm_worker_t *w = c->worker;
    if (!w)
        return;
    util_rd_init(&rd, p, n);
    uint8_t blocked = util_rd_u8(&rd);
    uint32_t count = util_rd_u32(&rd);
    if (rd.bad)
        return;
    if (w->actor) {
        /* an actor holds no pool CPU to lend, and its calls stay; but the
           results it reports while the call waits leave that call's room */
        w->call_blocked = blocked != 0;
        return;
    }
    if (blocked && w->state == W_BUSY) {
        /* give the CPUs back, and the tasks it has not started; not its
           GPUs, whose memory its task keeps (exec_node_gpu.c) */
        memcpy(w->lent, w->held, sizeof w->lent);
        if (nm->gpu_res >= 0)
            w->lent[nm->gpu_res] = 0;
        nm_res_take(nm, w->lent, -1);
        for (int i = 0; i < 16; i++)
            w->held[i] -= w->lent[i];
        w->state = W_BLOCKED;
        /* behind what is queued: the tasks it waits for are there, and
           these may block too */
        for (uint32_t i = 0; i < count; i++) {
            const uint8_t *id = util_rd_take(&rd, 16);
            if (!id)
                break;
            util_id_t tid;
            memcpy(tid.b, id, 16);
            nm_task_t *t = nm_task_find(nm, &tid);
            if (t && t->worker == w && t != w->queue) {
                s_worker_pop(nm, w, t);
                nm_task_release_args(nm, t, false);
                s_ready_push(nm, t, false);
            }
        }
    } else if (!blocked && w->state == W_BLOCKED) {
        nm_res_take(nm, w->lent, 1); /* may go below zero for a while: that is fine */
        for (int i = 0; i < 16; i++)
            w->held[i] += w->lent[i];
        memset(w->lent, 0, sizeof w->lent);
        w->state = w->queue ? W_BUSY : W_IDLE;
        w->idle_ms = util_mono_ms();
    }
}

/* --- what the actors use ------------------------------------------------------------------ */

void
nm_task_wake(nm_t *nm, nm_task_t *t)
{
    if (t->actor) {
        nm->ops.actor_kick(nm, t->actor);
    } else {
        bool reserved = s_reserve(nm, t);
        /* one holding rebuilt objects runs first, to let go of them */
        s_ready_push(nm, t, t->nested || reserved || s_holds(t));
    }
}

void
nm_task_discard(nm_t *nm, nm_task_t *t)
{
    s_forget_dependent(nm, t);
    nm_task_release_args(nm, t, true);
    nm_task_free(t);
}

void
nm_sched_open(nm_t *nm)
{
    nm->ops.unreserve_all = nm_unreserve_all;
    nm->ops.worker_gone = nm_worker_gone;
}
