/*  exec_node_cancel - cancelling tasks (lux_cancel, Ray's ray.cancel), the
    end of a departed driver's job, and per-task timeouts.

    A task that never returns would otherwise keep its worker for ever: its
    driver gives up and leaves, later drivers find no worker, and killing
    the worker retries the task, which hangs again (issue 25).

    Where a cancelled task is decides what happens to it:
        waiting for arguments, or queued: it fails at once;
        on a worker, without force: the worker gets EXEC_CANCEL_SIGNAL with
            the task's token (exec_proto.h); a running task's blocking
            system call ends with EINTR, lux_cancelled() says 1 and its
            lux_get and lux_wait return LUX_ECANCELLED (cooperative: a task
            that does not look runs on); a task of the batch not started
            yet is skipped. It fails when the worker reports it, whatever
            it returned (cancel_req);
        on a worker, with force: the worker is killed. When the reaper
            finds it gone, nm_worker_gone calls nm_cancel_worker_gone
            first: the cancelled tasks fail, and the others it held go back
            to the queue without being charged an attempt.
    Failing as cancelled is failing with LUX_ECANCELLED: the outputs become
    CANCELLED objects (lux_get returns LUX_ECANCELLED), every task that
    needs one fails the same way, the log gets task_cancelled events (not
    task_failed), and nothing is retried: a cancelled task is out of the
    node's tables.

    A driver that leaves or dies (nm_client_gone) takes its job's
    unfinished tasks with it, with force, unless it said it is detached
    (lux_config_t.detached, in its hello). Actors end with their creator
    already (exec_node_actor.c); their calls are not cancelled one by one.

    A task with a timeout (lux_opts_t.timeout_ms) runs alone in its batch,
    so its start is its dispatch; the tick cancels it with force once it
    has run that long.
*/
#include "exec_node_cancel.h"
#include "exec_node_int.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "exec_node_sched.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Take t off the ready queue (O(queue): one task at a time). */
static void
s_ready_unlink(nm_t *nm, nm_task_t *t)
{
    nm_task_t *prev = NULL;
    for (nm_task_t *x = nm->ready; x; prev = x, x = x->next) {
        if (x != t)
            continue;
        if (prev)
            prev->next = x->next;
        else
            nm->ready = x->next;
        if (nm->ready_last == x)
            nm->ready_last = prev;
        nm->nready--;
        break;
    }
    t->next = NULL;
    t->state = TASK_WAITING;
}

/* Stop t on its worker: mark it, then signal or kill the worker. */
static void
s_stop_running(nm_t *nm, nm_task_t *t, bool force, const char *why)
{
    nm_worker_t *w = t->worker;
    char hex[UTIL_ID_HEX];
    t->cancel_req = true;
    if (!t->cancel_why)
        t->cancel_why = strdup(why);
    if (w->reaped)
        return; /* its end is being handled: nm_cancel_worker_gone */
    util_id_hex(&t->id, hex);
    if (force) {
        log_info("killing worker %d to cancel task %s (%s): %s", (int) w->pid, hex, t->fn, why);
        kill(w->pid, SIGKILL);
        w->state = W_LEAVING; /* nothing more for it, and its end is no surprise */
        return;
    }
    union sigval v = {.sival_int = (int) exec_cancel_token(&t->id)};
    if (sigqueue(w->pid, EXEC_CANCEL_SIGNAL, v) != 0)
        log_warn("cannot signal worker %d to cancel task %s: %s", (int) w->pid, hex,
                 strerror(errno));
}

/* Cancel one task of any state with why; t may be freed on return. */
static void
s_cancel(nm_t *nm, nm_task_t *t, bool force, const char *why)
{
    if (t->doomed)
        return;
    if (t->state == TASK_RUNNING && t->worker) {
        s_stop_running(nm, t, force, why);
        return;
    }
    if (t->state == TASK_READY)
        s_ready_unlink(nm, t);
    nm_task_fail(nm, t, LUX_ECANCELLED, why);
}

static void
s_reply(nm_t *nm, nm_client_t *c, uint64_t req, int rc, const char *msg)
{
    uint8_t b[12];
    util_le64(b, req);
    util_le32(b + 8, (uint32_t) rc);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_CANCEL_REP, NET_NO_SHARD, 0)});
    zmsg_addmem(m, b, sizeof b);
    if (rc)
        zmsg_addstr(m, msg);
    nm_send(nm, c, &m);
}

void
nm_cancel_op(nm_t *nm, nm_client_t *c, const uint8_t *p, size_t n)
{
    util_rd_t r;
    util_rd_init(&r, p, n);
    uint64_t req = util_rd_u64(&r);
    uint8_t force = util_rd_u8(&r);
    const uint8_t *id = util_rd_take(&r, LUX_REF_LEN);
    if (r.bad || !id) {
        log_warn("a malformed CANCEL from pid %d", (int) c->pid);
        return;
    }
    lux_ref_t ref;
    util_id_t tid;
    char hex[LUX_REF_LEN * 2 + 1], msg[512], why[256];
    memcpy(ref.b, id, LUX_REF_LEN);
    util_hex(hex, ref.b, LUX_REF_LEN);
    exec_ref_task(&ref, &tid);
    nm_task_t *t = nm_task_find(nm, &tid);
    int rc = 0;
    msg[0] = '\0';
    if (!t) {
        nm_obj_t *o = nm_obj_get(nm, &ref);
        if (o && o->is_put)
            rc = util_err(LUX_ENOTFOUND, "lux_cancel: object %s was put, no task makes it", hex);
        else if (!o)
            rc = util_err(LUX_ENOTFOUND,
                          "lux_cancel: no task of this node makes object %s (never made, or "
                          "finished and freed)",
                          hex);
        /* else it finished or failed already: its result stays */
    } else if (t->kind != T_TASK || t->actor) {
        char ah[UTIL_ID_HEX];
        rc = util_err(LUX_ENOSYS,
                      "lux_cancel: object %s is the result of a call to actor %s (%s.%s): "
                      "cancelling an actor's call is not supported (lux_actor_kill ends the "
                      "actor and fails its calls)",
                      hex, t->actor ? util_id_hex(&t->actor->id, ah) : "?",
                      t->actor ? t->actor->cls : "?", t->fn ? t->fn : "?");
    } else if (exec_ref_idx(&ref) >= t->nret) {
        rc = util_err(LUX_ENOTFOUND, "lux_cancel: task %s has %u returns, object %s is not one",
                      util_id_hex(&tid, why), t->nret, hex);
    } else {
        snprintf(why, sizeof why, "cancelled by lux_cancel from pid %d%s", (int) c->pid,
                 force ? " with force" : "");
        s_cancel(nm, t, force != 0, why);
    }
    if (rc)
        snprintf(msg, sizeof msg, "%s", lux_errmsg());
    s_reply(nm, c, req, rc, msg);
}

/* --- a driver's job ends ---------------------------------------------------------------- */

typedef struct {
    const util_id_t *job;
    util_id_t *ids;
    size_t n, cap;
} s_job_t;

static int
s_of_job(void *arg, const void *key, void *value)
{
    s_job_t *j = arg;
    nm_task_t *t = *(nm_task_t **) value;
    (void) key;
    if (t->kind != T_TASK || t->actor || t->rebuild || !util_id_eq(&t->job, j->job))
        return 0;
    if (j->n == j->cap) {
        size_t cap = j->cap ? 2 * j->cap : 64;
        util_id_t *p = realloc(j->ids, cap * sizeof *p);
        if (!p)
            return 1;
        j->ids = p;
        j->cap = cap;
    }
    j->ids[j->n++] = t->id;
    return 0;
}

void
nm_cancel_job(nm_t *nm, nm_client_t *c)
{
    if (c->kind != EXEC_HELLO_DRIVER || c->detached)
        return;
    s_job_t j = {.job = &c->job};
    util_idmap_each(nm->tasks, s_of_job, &j);
    if (!j.n) {
        free(j.ids);
        return;
    }
    /* the queued ones leave the ready queue in one walk (a job may have
       queued a million), then each fails: found again by ID, since a
       failure also fails the tasks that need it */
    nm_task_t **pp = &nm->ready;
    nm->ready_last = NULL;
    while (*pp) {
        nm_task_t *t = *pp;
        if (t->kind == T_TASK && !t->rebuild && util_id_eq(&t->job, &c->job)) {
            *pp = t->next;
            t->next = NULL;
            t->state = TASK_WAITING;
            nm->nready--;
            continue;
        }
        nm->ready_last = t;
        pp = &t->next;
    }
    char why[256], jh[UTIL_ID_HEX];
    snprintf(why, sizeof why,
             "cancelled: the driver (pid %d) of job %s is gone, and the job is not detached",
             (int) c->pid, util_id_hex(&c->job, jh));
    log_info("driver %d is gone: cancelling the %zu unfinished tasks of job %s", (int) c->pid,
             j.n, jh);
    for (size_t i = 0; i < j.n; i++) {
        nm_task_t *t = nm_task_find(nm, &j.ids[i]);
        if (t)
            s_cancel(nm, t, true, why);
    }
    free(j.ids);
}

/* --- workers ------------------------------------------------------------------------------ */

void
nm_cancel_worker_gone(nm_t *nm, nm_worker_t *w)
{
    bool any = false;
    for (nm_task_t *t = w->queue; t; t = t->next)
        any = any || t->cancel_req;
    if (!any)
        return;
    /* take the whole queue: the worker held nothing else */
    nm_task_t *t = w->queue;
    w->queue = w->queue_last = NULL;
    w->queued = 0;
    while (t) {
        nm_task_t *next = t->next;
        t->next = NULL;
        if (t->cancel_req) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s (its worker %d was stopped)",
                     t->cancel_why ? t->cancel_why : "cancelled", (int) w->pid);
            nm_task_fail(nm, t, LUX_ECANCELLED, msg); /* logs w's pid: still set */
        } else {
            char msg[300];
            t->worker = NULL;
            nm_task_release_args(nm, t, false);
            snprintf(msg, sizeof msg,
                     "worker %d was stopped to cancel another task of its batch; attempt %u "
                     "of %u (not counted)",
                     (int) w->pid, t->attempt, t->max_attempts);
            nm_log_retried(nm, t, msg);
            nm_task_wake(nm, t);
        }
        t = next;
    }
}

bool
nm_cancel_result(nm_t *nm, nm_task_t *t)
{
    if (!t->cancel_req)
        return false;
    nm_task_fail(nm, t, LUX_ECANCELLED, t->cancel_why ? t->cancel_why : "cancelled");
    return true;
}

/* --- timeouts ----------------------------------------------------------------------------- */

void
nm_cancel_started(nm_t *nm, nm_task_t *t)
{
    (void) nm;
    t->deadline_ms = t->timeout_ms ? util_mono_ms() + t->timeout_ms : 0;
}

/* A task with a timeout runs alone in its batch (nm_dispatch), so only
   the head of each worker's queue is looked at: a walk of the workers,
   nothing per task. */
void
nm_cancel_tick(nm_t *nm)
{
    int64_t now = 0;
    for (nm_worker_t *w = nm->workers; w; w = w->next) {
        nm_task_t *t = w->queue;
        if (w->actor || w->reaped || !t || !t->deadline_ms || t->cancel_req)
            continue;
        if (!now)
            now = util_mono_ms();
        if (now < t->deadline_ms)
            continue;
        char why[256];
        snprintf(why, sizeof why,
                 "cancelled: it ran past its timeout of %u ms (lux_opts_t.timeout_ms)",
                 t->timeout_ms);
        s_stop_running(nm, t, true, why);
    }
}

void
nm_cancel_open(nm_t *nm)
{
    nm->ops.cancel_started = nm_cancel_started;
    nm->ops.cancel_result = nm_cancel_result;
    nm->ops.cancel_worker_gone = nm_cancel_worker_gone;
}
