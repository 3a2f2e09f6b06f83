/*  exec_node_actor_res - what an actor's process answers (DESIGN section
    8): the results of its runs, and its death.

    A creation or a load that reports makes the actor alive (or dead, with
    the constructor's or the load's error); a checkpoint that reports
    becomes the actor's newest checkpoint object and lets go of the
    arguments kept for the calls it covers (each spilled rather than
    dropped when the store evicts it while kept, DESIGN 7 rule 15); a
    call's results are held on this node until its actor_call event is
    acknowledged by the tail (nm->held_calls), then handed out
    (nm_actor_release), so no result leaves before the call is on record.

    When the process dies, the numbered calls it had wait in limbo for the
    replay, what was never sent stays queued, and the actor restarts while
    restarts are left, or dies. Once its calls' events are committed
    (exec_node_actor.c s_start waits for them), the calls after its
    checkpoint are read back, from the log's files on the head's machine,
    or from the head's node elsewhere (exec_rcalls.c), and queued first.

    A checkpoint asked for (lux_actor_checkpoint) is answered when its
    SAVE reports, or when the process dies first; one still waiting in the
    actor's queue after LUX_ACTOR_CKPT_MS fails, naming what held it
    (nm_actor_ckpt_tick), so that no asker waits for ever.

    Creating actors and sending their runs (the replay's too) in order are
    exec_node_actor.c's, below this part: this file uses the actor's lists
    and states through the plumbing exec_node_actor.h declares for it.
*/
#include "exec_node_actor_res.h"
#include "exec_node_actor.h"
#include "exec_node_int.h"
#include "exec_ractor.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "exec_node_sched.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- results ------------------------------------------------------------------------------ */

/* Take the arena room of outputs from the worker's grants: held calls and
   checkpoints own it from now on. */
static void
s_take_grants(nm_client_t *c, const exec_obj_t *outs, uint8_t n)
{
    for (uint8_t i = 0; i < n; i++)
        if (outs[i].where == EXEC_W_ARENA)
            util_idmap_del(c->allocs, &outs[i].off);
}

static void
s_set_value(nm_t *nm, nm_obj_t *o, const exec_obj_t *out, const uint8_t *fp)
{
    if (out->where == EXEC_W_ARENA)
        nm_obj_set_arena(nm, o, out->off, out->size);
    else
        nm_obj_set_inline(nm, o, out->bytes, out->size);
    memcpy(o->fp, fp, 16);
    o->is_put = true; /* no lineage to rebuild it from: spill it, never drop it */
}

static void
s_booted(nm_t *nm, nm_actor_t *a, nm_task_t *t, int status, const char *msg)
{
    char hex[UTIL_ID_HEX];
    a->boot = NULL;
    bool load = t->kind == T_LOAD;
    if (load)
        nm_task_discard(nm, t);
    else {
        nm_task_release_args(nm, t, false); /* unpinned; kept (uses) for a restart */
        t->state = TASK_WAITING;            /* a restart sends it again */
    }
    if (status) {
        if (load)
            nm_actor_dief(nm, a, status, "loading its checkpoint of call %llu failed: %s",
                          (unsigned long long) a->ckpt_idx, msg);
        else
            nm_actor_dief(nm, a, status, "its constructor failed: %s", msg);
        return;
    }
    nm_actor_state(nm, a, A_ALIVE);
    if (a->restarts)
        log_info("actor %s (%s) restarted (%u of %u) from %s, replaying %llu calls",
                 util_id_hex(&a->id, hex), a->cls, a->restarts, a->max_restarts,
                 load ? "its checkpoint" : "its constructor",
                 (unsigned long long) a->replaying);
    nm_actor_dirty(nm, a);
}

static void
s_saved(nm_t *nm, nm_actor_t *a, nm_task_t *t, nm_client_t *c, int status, const char *msg,
        const exec_obj_t *outs, const uint8_t *fps)
{
    char hex[UTIL_ID_HEX];
    if (t->run->idx > a->saved_idx)
        a->saved_idx = t->run->idx;
    if (status) {
        log_warn("actor %s (%s): checkpoint after call %llu failed: %s",
                 util_id_hex(&a->id, hex), a->cls, (unsigned long long) t->run->idx, msg);
    } else if (!a->has_ckpt || t->run->idx > a->ckpt_idx) {
        lux_ref_t id;
        exec_ref_make(&id, &t->id, 0);
        nm_obj_t *o = nm_obj_new(nm, &id);
        if (!o) {
            status = util_err(LUX_ENOMEM, "out of memory holding a checkpoint");
            msg = lux_errmsg();
        } else {
            s_take_grants(c, outs, 1);
            s_set_value(nm, o, &outs[0], fps);
            o->owner = NULL; /* the actor's */
            nm_log_actor_checkpoint(nm, a, t, o);
            if (a->has_ckpt) {
                nm_obj_t *old = nm_obj_get(nm, &a->ckpt);
                if (old) {
                    old->owned = false;
                    nm_actor_unuse(nm, old);
                }
            }
            a->ckpt = id;
            a->ckpt_idx = t->run->idx;
            a->has_ckpt = true;
            nm_actor_unkeep(nm, a, t->run->idx);
            nm_ractor_saved(nm, a, o); /* its home on another node keeps it too */
        }
    }
    if (t->owner)
        nm_actor_reply(nm, t->owner, t->run->op_req, status, &a->id, status ? msg : NULL);
    nm_task_discard(nm, t);
}

static void
s_called(nm_t *nm, nm_actor_t *a, nm_task_t *t, nm_client_t *c, const exec_result_t *r,
         int status, const char *msg, const exec_obj_t *outs, const uint8_t *fps)
{
    nm_task_release_args(nm, t, false); /* unpinned; uses stay until it is done */
    if (t->run->replay && t->run->dup) {
        /* the same call, sent again by its caller's node (exec_ractor.c
           s_merge): these results are its */
        nm_task_t *d = t->run->dup;
        t->run->dup = NULL;
        if (a->replaying)
            a->replaying--;
        nm_task_discard(nm, t);
        t = d;
    }
    if (a->max_restarts && !t->run->replay && t->run->idx > a->ckpt_idx)
        nm_actor_keep(nm, a, t);
    if (t->run->replay) {
        /* its results were handed out before: these go */
        if (!status)
            for (uint8_t i = 0; i < t->nret; i++)
                if (outs[i].where == EXEC_W_ARENA) {
                    util_idmap_del(c->allocs, &outs[i].off);
                    nm_store_free(nm, outs[i].off);
                }
        if (a->replaying)
            a->replaying--;
        nm_task_discard(nm, t);
        return;
    }
    if (status) {
        t->run->fail_status = status;
        t->run->fail_msg = strdup(msg);
    } else {
        uint64_t total = 0;
        uint8_t fp[16];
        util_blake_t h;
        s_take_grants(c, outs, t->nret);
        if (r->outs_len && !(t->run->held_outs = malloc(r->outs_len))) {
            for (uint8_t i = 0; i < t->nret; i++)
                if (outs[i].where == EXEC_W_ARENA)
                    nm_store_free(nm, outs[i].off);
            t->run->fail_status = LUX_ENOMEM;
            t->run->fail_msg = strdup("out of memory holding its results");
        } else {
            if (r->outs_len)
                memcpy(t->run->held_outs, r->outs, r->outs_len);
            t->run->held_len = r->outs_len;
            util_blake_init(&h, 16);
            for (uint8_t i = 0; i < t->nret; i++) {
                util_blake_update(&h, fps + 16 * i, 16);
                total += outs[i].size;
            }
            util_blake_final(&h, fp, 16);
            nm->n_finished++;
            nm_task_ended(nm, t); /* a call another node sent starts no lull */
            nm_log_finished(nm, t, a->worker, r, total, fp);
        }
    }
    t->run->held = true;
    nm_actor_list_append(&nm->held_calls, &nm->held_last, t);
}

void
nm_actor_result(nm_t *nm, nm_worker_t *w, const exec_result_t *r)
{
    nm_actor_t *a = w->actor;
    nm_task_t *t = a ? a->sent : NULL;
    nm_client_t *c = w->client;
    char hex[UTIL_ID_HEX], msg[600];
    if (!t || memcmp(t->id.b, r->task.b, 16) != 0) {
        log_warn("actor worker %d reported %s, which it was not running next", (int) w->pid,
                 util_id_hex(&r->task, hex));
        return;
    }
    nm_actor_list_pop(&a->sent, &a->sent_last);
    nm_actor_sent_gone(a, t);
    exec_obj_t outs[EXEC_MAX_RETURNS];
    const uint8_t *fps = NULL;
    int status = r->status;
    msg[0] = '\0';
    if (status) {
        snprintf(msg, sizeof msg, "%.*s", (int) r->msg_len, r->msg ? r->msg : "");
        if (!msg[0])
            snprintf(msg, sizeof msg, "it returned %s", lux_strerror(status));
    } else if (nm_result_outputs(nm, c, t, r, outs, &fps)) {
        status = LUX_EPROTO;
        snprintf(msg, sizeof msg, "its worker reported malformed outputs");
    }
    switch (t->kind) {
    case T_CREATE:
    case T_LOAD:
        s_booted(nm, a, t, status, msg);
        return;
    case T_SAVE:
        s_saved(nm, a, t, c, status, msg, outs, fps);
        break;
    default:
        s_called(nm, a, t, c, r, status, msg, outs, fps);
    }
    nm_actor_dirty(nm, a);
}

/* A held call's outputs, decoded into outs; their fingerprints. */
static const uint8_t *
s_held_outs(const nm_task_t *t, exec_obj_t *outs)
{
    util_rd_t rd;
    util_rd_init(&rd, t->run->held_outs, t->run->held_len);
    for (uint8_t i = 0; i < t->nret; i++)
        exec_obj_decode(&rd, &outs[i]);
    return util_rd_take(&rd, (size_t) t->nret * 16);
}

/* Results of one call whose event is committed: out they go. */
static void
s_release(nm_t *nm, nm_task_t *t)
{
    t->run->held = false;
    if (t->run->fail_status) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", t->run->fail_msg ? t->run->fail_msg : "?");
        nm_task_fail(nm, t, t->run->fail_status, msg);
        return;
    }
    exec_obj_t outs[EXEC_MAX_RETURNS];
    const uint8_t *fps = s_held_outs(t, outs);
    for (uint8_t i = 0; i < t->nret; i++) {
        nm_obj_t *o = nm_task_output(nm, t, i);
        if (!o || nm_obj_made_again(o, fps + 16 * i)) { /* a replay's: the copy stays */
            if (outs[i].where == EXEC_W_ARENA)
                nm_store_free(nm, outs[i].off);
            continue;
        }
        s_set_value(nm, o, &outs[i], fps + 16 * i);
        o->listed = true; /* its task_finished lists it (object_locations) */
    }
    nm_task_outputs_ready(nm, t);
}


/* A held call whose event the log cannot take: its results go, it fails. */
static void
s_release_failed(nm_t *nm, nm_task_t *t, const char *why)
{
    char msg[700];
    t->run->held = false;
    if (!t->run->fail_status && t->run->held_outs) {
        exec_obj_t outs[EXEC_MAX_RETURNS];
        s_held_outs(t, outs);
        for (uint8_t i = 0; i < t->nret; i++)
            if (outs[i].where == EXEC_W_ARENA)
                nm_store_free(nm, outs[i].off);
    }
    snprintf(msg, sizeof msg, "the log cannot record the call (it may have been applied): %s",
             why);
    nm_task_fail(nm, t, LUX_EIO, msg);
}

void
nm_actor_release(nm_t *nm)
{
    /* events are acknowledged in order per shard: the list is released
       from its front */
    while (nm->held_calls && !nm_log_pending(nm, &nm->held_calls->id))
        s_release(nm, nm_actor_list_pop(&nm->held_calls, &nm->held_last));
    /* A call whose event's shard failed (a write error, a full disk)
       fails with that reason, instead of its caller waiting for ever: the
       event may still commit if another replica takes over, so the
       caller is told the call may have been applied. */
    if (!nm->held_calls || !nm_log_failed(nm, NULL))
        return; /* the common case, without a walk of the held calls */
    for (nm_task_t *t = nm->held_calls, *next; t; t = next) {
        next = t->next;
        const char *why = nm_log_failed(nm, &t->id);
        if (why && nm_actor_list_unlink(&nm->held_calls, &nm->held_last, t))
            s_release_failed(nm, t, why);
    }
}


/* --- checkpoints asked for: their wait in the queue is bounded ------------------------------ */

/* A checkpoint asked for (lux_actor_checkpoint) that waits in the actor's
   queue this long, unsent, fails saying what holds it (LUX_ACTOR_CKPT_MS):
   once sent, the actor's process answers (s_saved) or its death does
   (nm_actor_drop_run); unsent, nothing did while what held the queue did
   not move (t/3108 on a cluster: a driver waited 22 minutes; t/6160). */
#define S_CKPT_WAIT_MS 600000
#define S_CKPT_SCAN_MS 250 /* how often those waits are looked at */

/* What keeps a's queue from reaching sv (a checkpoint asked for), into
   why[n]. */
static void
s_held_by(const nm_actor_t *a, const nm_task_t *sv, char *why, size_t n)
{
    const nm_task_t *t = a->queue;
    if (a->state == A_WAITING && a->log_wait)
        snprintf(why, n, "it is restarting, and waits for the log to record the calls it "
                 "had before its process died");
    else if (a->state == A_WAITING && a->create && a->create->waiting)
        snprintf(why, n, "its creation waits for %u of its arguments%s", a->create->waiting,
                 a->create->nfar ? " (pulled from other nodes)" : "");
    else if (a->state == A_WAITING)
        snprintf(why, n, "it waits for the resources it asks for to start its process");
    else if (a->state == A_STARTING)
        snprintf(why, n, "its process is starting%s",
                 a->boot && a->boot->waiting
                     ? (a->boot->kind == T_LOAD ? ", its checkpoint to load not here yet"
                                                : ", its constructor's arguments not here yet")
                     : "");
    else if (t && t != sv && t->waiting)
        snprintf(why, n, "a call before it (%s%s) waits for %u of its arguments%s", t->fn,
                 t->run->replay ? ", re-applied after a restart" : "", t->waiting,
                 t->nfar ? " (pulled from other nodes)" : "");
    else if (a->room_wait)
        snprintf(why, n, "a run before it waits for room in this node's store");
    else
        snprintf(why, n, "its queue did not move (%u runs sent to its process and not "
                 "reported, %llu bytes of their arguments pinned)", a->nsent,
                 (unsigned long long) a->sent_bytes);
}

/* Fail the checkpoints asked for that waited in their actor's queue for
   LUX_ACTOR_CKPT_MS, unsent, naming what held them. */
void
nm_actor_ckpt_tick(nm_t *nm)
{
    int64_t now = util_mono_ms();
    if (nm->ckpt_asks <= 0 || !nm->actors || now - nm->ckpt_scan_ms < S_CKPT_SCAN_MS)
        return;
    nm->ckpt_scan_ms = now;
    const char *v = getenv("LUX_ACTOR_CKPT_MS");
    int64_t bound = v && *v ? strtoll(v, NULL, 10) : S_CKPT_WAIT_MS;
    if (bound < 100)
        bound = 100;
    char hex[UTIL_ID_HEX], held[600], why[900];
    int left = 0;
    nm_actor_all_t all = {0};
    util_idmap_each(nm->actors, nm_actor_collect, &all);
    for (size_t i = 0; i < all.n; i++) {
        nm_actor_t *a = all.v[i];
        for (nm_task_t *t = a->queue, *next; t; t = next) {
            next = t->next;
            if (t->kind != T_SAVE || !t->run->asked_ms)
                continue;
            if (now - t->run->asked_ms < bound) {
                left++;
                continue;
            }
            s_held_by(a, t, held, sizeof held);
            snprintf(why, sizeof why, "lux_actor_checkpoint: actor %s (%s): its checkpoint "
                     "waited %lld ms in its queue, not started (LUX_ACTOR_CKPT_MS %lld): %s; "
                     "the calls before it go on", util_id_hex(&a->id, hex), a->cls,
                     (long long) (now - t->run->asked_ms), (long long) bound, held);
            log_warn("%s", why);
            nm_actor_list_unlink(&a->queue, &a->queue_last, t);
            if (t->owner)
                nm_actor_reply(nm, t->owner, t->run->op_req, LUX_ETIMEDOUT, &a->id, why);
            nm_task_discard(nm, t);
            nm_actor_dirty(nm, a); /* what waited behind it may go */
        }
    }
    free(all.v);
    nm->ckpt_asks = left;
}

/* --- its process died --------------------------------------------------------------------- */

void
nm_actor_worker_gone(nm_t *nm, nm_worker_t *w, const char *why)
{
    nm_actor_t *a = w->actor;
    char hex[UTIL_ID_HEX];
    w->actor = NULL;
    if (!a || a->worker != w)
        return;
    a->worker = NULL;
    nm_actor_give_back(nm, a);
    if (a->state == A_DEAD)
        return;
    log_warn("actor %s (%s): its process %d %s", util_id_hex(&a->id, hex), a->cls, (int) w->pid,
             why);
    /* numbered live calls wait for the replay; what was never sent stays
       queued; re-applied calls, checkpoints and loads go */
    nm_task_t *lists[2] = {a->sent, a->queue};
    nm_task_t *limbo = NULL, *limbo_last = NULL, *queue = NULL, *queue_last = NULL;
    a->sent = a->sent_last = a->queue = a->queue_last = NULL;
    a->nsent = 0;
    a->sent_bytes = 0;
    for (int i = 0; i < 2; i++)
        for (nm_task_t *t = lists[i], *next; t; t = next) {
            next = t->next;
            t->next = NULL;
            if (t == a->create) {
                nm_task_release_args(nm, t, false);
                t->state = TASK_WAITING;
            } else if (t->kind == T_CALL && !t->run->replay && t->run->idx) {
                nm_task_release_args(nm, t, false);
                t->state = TASK_WAITING;
                nm_actor_list_append(&limbo, &limbo_last, t);
            } else if (t->kind == T_CALL && !t->run->replay) {
                nm_actor_list_append(&queue, &queue_last, t);
            } else if (t->kind == T_CALL && t->run->dup) {
                /* a replay whose call its caller's node sent again: that
                   one, numbered as it, waits for the next replay */
                nm_task_t *d = t->run->dup;
                t->run->dup = NULL;
                d->state = TASK_WAITING;
                nm_actor_list_append(&limbo, &limbo_last, d);
                nm_actor_drop_run(nm, a, t, LUX_EDEAD, "the actor's process died before it was done");
            } else {
                nm_actor_drop_run(nm, a, t, LUX_EDEAD,
                                  "the actor's process died before it was done");
            }
        }
    if (limbo_last) {
        limbo_last->next = a->limbo;
        a->limbo = limbo;
    }
    a->queue = queue;
    a->queue_last = queue_last;
    if (a->boot && a->boot != a->create)
        nm_task_discard(nm, a->boot);
    a->boot = NULL;
    a->replaying = 0;
    if (a->killed) {
        nm_actor_dief(nm, a, LUX_EDEAD, "it was killed (lux_actor_kill)");
        return;
    }
    if (a->restarts >= a->max_restarts) {
        nm_actor_dief(nm, a, LUX_EDEAD,
                      "its process %s, and it has no restarts left (max_restarts %u)", why,
                      a->max_restarts);
        return;
    }
    a->restarts++;
    nm_actor_state(nm, a, A_WAITING);
    a->log_wait = true; /* then the replay is read and the restart logged */
    a->calls_req = 0;   /* a request of an earlier restart is not answered for this one */
    nm_actor_dirty(nm, a);
}


/* --- the replay of a restart ------------------------------------------------------------- */

/* Reading the actor's calls after its checkpoint back from the log, to
   queue them in front: the live ones (limbo) to answer, the others to
   re-apply. */
typedef struct {
    nm_t *nm;
    nm_actor_t *a;
    nm_task_t *head, *last;
    uint64_t n, last_idx;
    int rc;
    char why[700];
} s_replay_t;

static int
s_replay_cb(void *arg, const db_event_t *e)
{
    s_replay_t *x = arg;
    nm_actor_t *a = x->a;
    if ((uint64_t) e->idx <= x->last_idx) {
        x->rc = LUX_ECORRUPT;
        snprintf(x->why, sizeof x->why, "the log has its call %lld after call %llu",
                 (long long) e->idx, (unsigned long long) x->last_idx);
        return 1;
    }
    x->last_idx = (uint64_t) e->idx;
    nm_task_t *t = NULL;
    for (nm_task_t **p = &a->limbo; *p; p = &(*p)->next)
        if (memcmp((*p)->id.b, e->task.b, 16) == 0) {
            t = *p;
            *p = t->next;
            break;
        }
    if (!t) {
        exec_spec_t s = {.task = e->task, .parent = e->parent, .job = e->job, .fn = e->name,
                         .fn_len = (uint16_t) e->name_len, .kind = EXEC_SPEC_CALL,
                         .actor = a->id};
        memcpy(s.module, a->module, 16);
        if (!(e->mask & DB_F_BODY) || exec_call_from_body(&s, e->body, e->body_len)) {
            x->rc = LUX_ECORRUPT;
            snprintf(x->why, sizeof x->why, "the log's record of its call %lld is malformed",
                     (long long) e->idx);
            return 1;
        }
        if (!(t = nm_actor_run_new(x->nm, NULL, &s, false, T_CALL, a))) {
            x->rc = LUX_ENOMEM;
            snprintf(x->why, sizeof x->why, "out of memory replaying its calls");
            return 1;
        }
        t->run->idx = (uint64_t) e->idx;
        t->run->replay = true;
        char why[600];
        int rc = nm_task_resolve(x->nm, t, why, sizeof why);
        if (rc) {
            nm_task_discard(x->nm, t);
            x->rc = rc;
            snprintf(x->why, sizeof x->why, "cannot replay its call %lld: %s", (long long) e->idx,
                     why);
            return 1;
        }
    }
    nm_actor_list_append(&x->head, &x->last, t);
    x->n++;
    return 0;
}

/* Read a's calls after its checkpoint from the log's files here (the
   head's machine). */
static int
s_read_here(void *arg, nm_t *nm, nm_actor_t *a, nm_calls_cb *cb, void *cbarg)
{
    (void) arg;
    return nm_log_actor_calls(nm, &a->id, a->ckpt_idx, cb, cbarg);
}

/* read: calls cb with each of a's calls after its checkpoint, in the log's
   order; 0, or a code with the message (lux_errmsg). */
static int
s_prepare_replay(nm_t *nm, nm_actor_t *a, nm_calls_read *read, void *rarg)
{
    s_replay_t x = {.nm = nm, .a = a, .last_idx = a->ckpt_idx};
    int rc = 0;
    if (a->next_idx > a->ckpt_idx && (rc = read(rarg, nm, a, s_replay_cb, &x)) && !x.rc) {
        x.rc = rc;
        snprintf(x.why, sizeof x.why, "reading its calls from the log: %s", lux_errmsg());
    }
    if (!x.rc && x.last_idx != a->next_idx) {
        x.rc = LUX_ECORRUPT;
        snprintf(x.why, sizeof x.why, "the log has its calls up to %llu, it made %llu",
                 (unsigned long long) x.last_idx, (unsigned long long) a->next_idx);
    }
    /* the replay goes first, then what was never sent */
    if (x.last) {
        x.last->next = a->queue;
        if (!a->queue)
            a->queue_last = x.last;
        a->queue = x.head;
    }
    if (x.rc) {
        nm_actor_dief(nm, a, x.rc, "restart %u: %s", a->restarts, x.why);
        return x.rc;
    }
    a->replaying = x.n;
    nm_log_actor_restarted(nm, a, x.n);
    return 0;
}

void
nm_actor_replay_read(nm_t *nm, nm_actor_t *a, nm_calls_read *read, void *arg)
{
    if (a->state != A_WAITING || !a->log_wait)
        return;
    a->log_wait = false;
    a->calls_req = 0;
    if (s_prepare_replay(nm, a, read, arg) == 0)
        nm_actor_dirty(nm, a); /* then its process starts (s_start) */
}

void
nm_actor_replay(nm_t *nm, nm_actor_t *a)
{
    if (a->next_idx > a->ckpt_idx && nm->ops.ractor_calls) {
        nm->ops.ractor_calls(nm, a); /* the head has the log: asked (again) */
        return;                      /* nm_actor_replay_read when it answers */
    }
    a->log_wait = false;
    a->calls_req = 0;
    s_prepare_replay(nm, a, s_read_here, NULL);
}

/* --- setup ------------------------------------------------------------------------------- */

void
nm_actor_open(nm_t *nm)
{
    nm->ops.actor_submit = nm_actor_submit;
    nm->ops.actor_kick = nm_actor_kick;
    nm->ops.actor_failing = nm_actor_failing;
    nm->ops.actor_result = nm_actor_result;
    nm->ops.actor_worker_gone = nm_actor_worker_gone;
    nm->ops.actor_replay = nm_actor_replay;
}

