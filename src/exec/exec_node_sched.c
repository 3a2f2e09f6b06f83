/*  exec_node_sched - the local scheduler (DESIGN section 7): where and when
    the task graph's ready tasks run.

    A submitted task is kept here, or, when this node cannot run it or its
    queue is long, offered to the global scheduler (exec_remote.c). Queued
    tasks go to idle workers in batches (a worker runs its batch in order
    and reports results as it goes), taking the CPUs and custom resources
    they ask for while they run. A worker that blocks in lux_get inside a
    task gives its CPUs back and hands back the tasks it has not started,
    and an extra worker is started if none is idle, so nested tasks cannot
    deadlock: extra workers are capped (4 per pool worker, plus 8) only
    while one is busy or starting, for when every worker is blocked nothing
    else would run what they wait for. Tasks submitted by tasks queue ahead
    of drivers' work, and tasks handed back go behind it: what a blocked
    task waits for runs first, so few tasks block at once. Extra workers
    leave when idle for a while and nothing is blocked.

    A worker that dies is replaced; its running task is retried up to its
    max_attempts, then fails with a message saying how its workers died; the
    tasks it had not started go back to the queue. When it died holding
    several unreported tasks, which one ran is not known: none is charged,
    and each runs again alone (a suspect) to find out.

    The tasks themselves, their dependencies, failures and rebuilds are the
    task graph's (exec_node_graph.c, below this part).
*/
#include "exec_node_sched.h"
#include "exec_node_graph.h"
#include "exec_node_int.h"
#include "exec_pool.h"
#include "exec_node_gpu.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "../util/util_prof.h"
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

/* --- other nodes ------------------------------------------------------------------------- */

/* Whether other nodes can be reached (exec_remote.c opened: nm->remote). */
static bool
s_remote_on(const nm_t *nm)
{
    return nm->remote != NULL;
}

/* Offer t to the global scheduler (self: this node is one of the places
   weighed), through exec_remote.c above this part: whether it took t. */
static bool
s_remote_place(nm_t *nm, nm_task_t *t, bool self)
{
    return nm->ops.remote_place && nm->ops.remote_place(nm, t, self);
}

/* --- submitting ------------------------------------------------------------------------- */

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
    if (!c || !c->peer)
        util_prof_stamp("h_submit", s->task.b);
    nm_task_t *t = nm_task_new(nm, c, s, true);
    if (!t)
        return util_err(LUX_ENOMEM, "out of memory holding a task");
    nm->n_submitted++;
    int64_t needs[16];
    bool can = nm_res_needs(nm, t, needs, why, sizeof why);
    /* one this node can never run goes to another (dispatch spills it):
       its arguments held elsewhere are pulled there, not here */
    bool mine = s_remote_on(nm) && !(c && c->peer) && !t->nested;
    t->far_later = (!can && s_remote_on(nm) && !(c && c->peer)) || (mine && s_has_far(nm, t));
    int rc = nm_task_resolve(nm, t, why, sizeof why);
    if (!c || !c->peer) /* a task another node spilled here: its submission is that node's */
        nm_log_submitted(nm, t);
    if (!rc && !can && !s_remote_on(nm)) {
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
        s_remote_place(nm, t, t->far_later))
        return 0;
    if (t->waiting == 0)
        nm_ready_push(nm, t, t->nested);
    return 0;
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
        nm_ready_push(nm, stack[i], true);
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
            nm_ready_push(nm, running, true);
        }
    }
    nm_pool_worker_free(nm, w);
}

/* --- dispatch --------------------------------------------------------------------------- */

/* t has a spilled argument the store has no room to bring back yet:
   whether it may wait (its wait ends with a try beyond the store's size,
   s_room_over); with LUX_STORE_WAIT_MS 0 it may not. A task waits in the
   ready queue, an actor's run in its actor's queue (exec_node_actor.c). */
bool
nm_task_room_wait(nm_t *nm, nm_task_t *t)
{
    if (!t->room_since_ms) {
        t->room_since_ms = util_mono_ms();
        t->room_noted = false;
    }
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
            if (!s_remote_place(nm, first, false)) /* another node may have it (exec_remote.c) */
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
            if (rc == 2 && !nm_task_room_wait(nm, t))
                rc = LUX_EFULL;
            if (rc == 2) {
                /* to the back of the queue, until room appears; the
                   others may run meanwhile (once round the queue) */
                nm_ready_push(nm, t, false);
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
            util_prof_stamp("b_dispatch", t->id.b);
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
    if (nm->ops.remote_flush) /* the tasks spilled in this pass, one message per node */
        nm->ops.remote_flush(nm);
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
    util_prof_stamp("b_result", r->task.b);
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
        char msg[UTIL_ERRMSG_MAX]; /* a "no room" census fits (t/3170) */
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
        if (nm_obj_made_again(o, fps + 16 * i)) { /* a rebuild's: the copy here stays */
            if (outs[i].where == EXEC_W_ARENA) {
                util_idmap_del(c->allocs, &outs[i].off);
                nm_store_free(nm, outs[i].off);
            }
            util_blake_update(&h, fps + 16 * i, 16);
            total += outs[i].size;
            continue;
        }
        if (outs[i].where == EXEC_W_ARENA) {
            util_idmap_del(c->allocs, &outs[i].off);
            nm_obj_set_arena(nm, o, outs[i].off, outs[i].size);
        } else {
            nm_obj_set_inline(nm, o, outs[i].bytes, outs[i].size);
        }
        memcpy(o->fp, fps + 16 * i, 16);
        o->listed = t->kind == T_TASK; /* its task_finished lists it (object_locations) */
        util_blake_update(&h, o->fp, 16);
        total += outs[i].size;
    }
    util_blake_final(&h, fp, 16);
    nm->n_finished++;
    nm_task_ended(nm, t);
    nm_log_finished(nm, t, w, r, total, fp);
    nm_task_outputs_ready(nm, t);
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
                nm_ready_push(nm, t, false);
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

/* --- what tasks hold ------------------------------------------------------------------- */

typedef struct {
    uint32_t n;
    uint64_t bytes;
} s_hold_t;

/* The store bytes of the arguments of the workers' tasks, by what the
   tasks are doing: why a store full of pins is full. An argument two
   tasks share counts twice. */
static void
s_task_census(nm_t *nm, char *out, size_t n)
{
    s_hold_t run = {0}, blocked = {0}, sent = {0}, queued = {0};
    uint32_t workers = 0;
    for (nm_worker_t *w = nm->workers; w; w = w->next) {
        if (w->reaped)
            continue;
        workers++;
        if (w->actor) {
            sent.n += w->actor->nsent;
            sent.bytes += w->actor->sent_bytes;
            continue;
        }
        for (nm_task_t *t = w->queue; t; t = t->next) {
            s_hold_t *h = t != w->queue ? &queued : w->state == W_BLOCKED ? &blocked : &run;
            h->n++;
            h->bytes += nm_task_arg_bytes(nm, t);
        }
    }
    nm_task_holds_t h;
    nm_task_holds(nm, &h);
    snprintf(out, n, "; args of tasks (%u workers): running %u (%llu B), blocked %u (%llu B), "
             "actor calls %u (%llu B), queued %u (%llu B), waiting with rebuilt ones held %u "
             "(%llu B), reserved %u (%llu B)", workers, run.n, (unsigned long long) run.bytes,
             blocked.n, (unsigned long long) blocked.bytes, sent.n,
             (unsigned long long) sent.bytes, queued.n, (unsigned long long) queued.bytes, h.held,
             (unsigned long long) h.held_bytes, h.reserved,
             (unsigned long long) h.reserved_bytes);
}

/* --- setup ------------------------------------------------------------------------------ */

void
nm_sched_open(nm_t *nm)
{
    nm->ops.unreserve_all = nm_unreserve_all;
    nm->ops.worker_gone = nm_worker_gone;
    nm->ops.task_census = s_task_census;
}
