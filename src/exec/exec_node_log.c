/*  exec_node_log - the node manager's events in the log.

    Events are appended through a db_client and sent in batches by
    nm_log_tick (every 10 ms while any are pending, at once for an actor's
    call or when `held` is long), so tasks never wait for the log.

    WRITE-AHEAD LINEAGE (DESIGN section 4). A task_submitted event that
    names another object (an argument ref) must not reach the log before
    the event recording how that object was made (its task's
    task_submitted, or its object_put) is committed, or the log could refer
    to something it has no lineage for. `unacked` maps the task ID of every
    lineage event appended but not yet acknowledged, or still held, to
    where it went; an event with a dependency in that map waits in `held`,
    a queue released from its front, so an event never overtakes one it
    depends on; except when the dependency is already appended to the
    event's own shard, whose events commit in the order they are appended.
    Entries leave the map as acknowledgements arrive, in order per shard.

    The same lineage can be recorded twice: a task run again submits its
    children again, with the same IDs. The first record is enough for what
    depends on it, so the map keeps the oldest one on its way. Were the
    second to take its place while held, the first one's acknowledgement
    would be missed, and an event held ahead of the second, waiting for
    that lineage, would wait for ever, with every event after it.

    LOOKUPS. Rebuilding a lost object reads its task's task_submitted event
    back from the shard's tail file, read-only (the node manager runs on
    the head's machine); while the log has not acknowledged it, from the
    log client's queue (db_client_queued), or a held event's own copy.
*/
#include "exec_node_log.h"
#include "exec_node_int.h"
#include "exec_peer.h"
#include "exec_node_blob.h"
#include "../db/db_chain.h"
#include "../net/net_ep.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_HELD UINT64_MAX /* the event is held: not appended yet */
#define S_FLUSH_NS 10000000 /* send events at most every 10 ms (but see nm_log_tick) */
#define S_HELD_HURRY 256     /* held events past which released ones go at once */
#define S_CLOSE_MS 10000     /* nm_log_destroy: what is not recorded by then is reported, not waited for */

typedef struct {
    uint32_t shard;
    uint64_t cseq;        /* S_HELD while held */
    uint8_t *rec;         /* a held task_submitted event: its record (owned), for a
                             rebuild that needs it before the log has it (nm_log_lookup);
                             once appended, the log client's queue has it (db_client_queued) */
    size_t len;
} s_pos_t;

typedef struct {
    uint64_t cseq;
    util_id_t task;
} s_ent_t;

/* Appended lineage events of one shard, oldest first. */
typedef struct {
    s_ent_t *v;
    size_t head, len, cap;
} s_fifo_t;

/* A held event: its lineage task (or zero), its dependencies, its record. */
typedef struct s_held {
    struct s_held *next;
    util_id_t task;
    bool lineage;
    uint32_t shard;       /* the event's */
    uint32_t ndeps;
    util_id_t *deps;
    uint8_t *rec;
    size_t len;
    bool pending;         /* an object_put whose blob is being written (exec_node_blob.c):
                             it and what follows wait until s_put_recorded */
    char *info;           /* what became of that blob (s_put_recorded): the event's info
                             when it goes, set then rather than encoded twice */
} s_held_t;

struct nm_log {
    nm_t *nm;              /* the node it belongs to */
    net_sec_t *sec;        /* the cluster key, for tcp clusters */
    int64_t flushed_ns;    /* when events were last sent */
    util_idmap_t *unacked; /* task ID -> s_pos_t */
    s_fifo_t *fifos;       /* per shard */
    s_held_t *held, *held_last;
    uint64_t nheld;
    db_store_t **tails;    /* per shard, opened on first lookup */
    util_buf_t rec;        /* scratch for encoding a held event */
    util_buf_t body;       /* scratch: a task_submitted event's body */
    util_buf_t deps;       /* scratch: its deps (not rec: a held event is encoded there) */
};

/* p's task_submitted record, kept while unacknowledged: a copy of the
   len bytes at rec (e's encoding). */
static void
s_pos_keep(s_pos_t *p, const db_event_t *e, const uint8_t *rec, size_t len)
{
    if (p->rec || e->kind != DB_K_task_submitted)
        return;
    if ((p->rec = malloc(len))) {
        memcpy(p->rec, rec, len);
        p->len = len;
    }
}

/* Forget task's entry in unacked, p (found by the caller: not looked
   up again). */
static void
s_pos_del(struct nm_log *L, const util_id_t *task, s_pos_t *p)
{
    free(p->rec);
    util_idmap_del(L->unacked, task->b);
}

static int
s_pos_free(void *arg, const void *key, void *value)
{
    (void) arg;
    (void) key;
    free(((s_pos_t *) value)->rec);
    return 0;
}

nm_log_t *
nm_log_new(nm_t *nm)
{
    char keys[PATH_MAX + 32];
    nm_log_t *L = calloc(1, sizeof *L);
    if (!L) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    L->nm = nm;
    util_buf_init(&L->rec);
    util_buf_init(&L->body);
    util_buf_init(&L->deps);
    L->unacked = util_idmap_new(sizeof(s_pos_t));
    L->fifos = calloc(nm->cluster.shards, sizeof *L->fifos);
    L->tails = calloc(nm->cluster.shards, sizeof *L->tails);
    if (!L->unacked || !L->fifos || !L->tails) {
        util_err(LUX_ENOMEM, "out of memory");
        nm_log_destroy(&L);
        return NULL;
    }
    if (db_cluster_tcp(&nm->cluster) &&
        !(L->sec = net_sec_load(db_cluster_path(&nm->cluster, keys, sizeof keys, "keys")))) {
        nm_log_destroy(&L);
        return NULL;
    }
    db_client_opts_t o = {.cluster = &nm->cluster, .sec = L->sec, .max_inflight = 262144};
    if (!(nm->log = db_client_new(&o))) {
        util_err_ctx(LUX_EIO, "the node manager cannot reach the log");
        nm_log_destroy(&L);
        return NULL;
    }
    return L;
}

void
nm_log_destroy(nm_log_t **self_p)
{
    nm_log_t *L = *self_p;
    if (!L)
        return;
    nm_t *nm = L->nm;
    if (nm->log) {
        /* what is held goes out as its dependencies commit; not for ever
           if the log stops answering */
        /* one deadline for both steps: the head's stop waits for this */
        int64_t deadline = util_mono_ms() + S_CLOSE_MS;
        nm_blob_destroy(&nm->blobw); /* the blobs being written first: their events wait for them */
        while (L->held && util_mono_ms() < deadline) {
            nm->log_urgent = true; /* each level of held lineage at once... */
            nm_log_tick(nm);
            if (L->held)
                db_client_poll(nm->log, 1); /* ...and wait for its acknowledgement, not spin */
        }
        uint64_t held = L->nheld;
        int64_t left = deadline - util_mono_ms();
        int rc = db_client_sync(nm->log, left > 0 ? (int) left : 1);
        uint64_t sent = db_client_unacked(nm->log);
        if (rc || held) {
            /* say why when the log said (a full disk); a timeout is said */
            char why[UTIL_ERRMSG_MAX + 4] = "";
            if (rc && rc != LUX_ETIMEDOUT)
                snprintf(why, sizeof why, ": %s", lux_errmsg());
            log_error("not flushed: %llu events were not recorded in the log within %d ms "
                      "(%llu sent and not acknowledged, %llu held back until what they "
                      "depend on is recorded)%s",
                      (unsigned long long) (sent + held), S_CLOSE_MS, (unsigned long long) sent,
                      (unsigned long long) held, why);
        }
        db_client_destroy(&nm->log);
    }
    for (uint32_t s = 0; s < nm->cluster.shards; s++) {
        if (L->fifos)
            free(L->fifos[s].v);
        if (L->tails)
            db_store_close(&L->tails[s]);
    }
    while (L->held) {
        s_held_t *h = L->held;
        L->held = h->next;
        free(h->deps);
        free(h->rec);
        free(h->info);
        free(h);
    }
    free(L->fifos);
    free(L->tails);
    if (L->unacked)
        util_idmap_each(L->unacked, s_pos_free, NULL);
    util_idmap_destroy(&L->unacked);
    util_buf_free(&L->rec);
    util_buf_free(&L->body);
    util_buf_free(&L->deps);
    net_sec_destroy(&L->sec);
    free(L);
    *self_p = NULL;
}

/* --- appending ------------------------------------------------------------------------- */

static void
s_fifo_push(s_fifo_t *f, uint64_t cseq, const util_id_t *task)
{
    if (f->head + f->len == f->cap) {
        if (f->head > f->cap / 2) { /* slide down */
            memmove(f->v, f->v + f->head, f->len * sizeof *f->v);
            f->head = 0;
        } else {
            size_t cap = f->cap ? 2 * f->cap : 256;
            s_ent_t *v = realloc(f->v, cap * sizeof *v);
            if (!v)
                return; /* the entry stays in unacked: a dependent waits longer */
            f->v = v;
            f->cap = cap;
        }
    }
    f->v[f->head + f->len++] = (s_ent_t) {cseq, *task};
}

/* Append e now; when it records lineage (of task), remember where. */
static void
s_append(nm_t *nm, db_event_t *e, const util_id_t *task)
{
    struct nm_log *L = nm->lg;
    int rc = db_client_append(nm->log, e);
    if (rc) {
        log_error("log: %s", lux_errmsg());
        /* held, its lineage will not come: what waits for it goes on */
        s_pos_t *p = task ? util_idmap_get(L->unacked, task->b) : NULL;
        if (p && p->cseq == S_HELD)
            s_pos_del(L, task, p);
        return;
    }
    if (!task)
        return;
    uint32_t shard = db_client_shard(nm->log, e);
    int fresh = 0;
    s_pos_t *p = util_idmap_put(L->unacked, task->b, &fresh);
    if (p && (fresh || p->cseq == S_HELD)) { /* else an older record is on its way */
        if (fresh)
            p->rec = NULL;
        p->shard = shard;
        p->cseq = e->cseq;
        s_fifo_push(&L->fifos[shard], e->cseq, task);
    }
}

/* Whether an event for shard must wait for any of its n dependencies:
   one not committed yet, unless it is already appended to the same shard,
   whose events commit in the order they were appended (and are resent in
   that order), so it cannot commit before its dependency.
   For the front of `held` (front), a dependency that is itself held is
   behind it, so it was recorded after this event was; yet this event
   names it, so its lineage had been recorded before: this is a second
   record (a task run again submits its children again), and the first
   is committed. Waiting for it would wait for ever. */
static bool
s_waits(struct nm_log *L, const util_id_t *deps, uint32_t n, uint32_t shard, bool front)
{
    for (uint32_t i = 0; i < n; i++) {
        const s_pos_t *p = util_idmap_get(L->unacked, deps[i].b);
        if (!p || (front && p->cseq == S_HELD))
            continue;
        if (p->cseq == S_HELD || p->shard != shard)
            return true;
    }
    return false;
}

static s_held_t *s_hold(nm_t *nm, db_event_t *e, const util_id_t *task,
                        const util_id_t *deps, uint32_t ndeps, uint32_t shard);

/* Append e, or hold it while its dependencies are not committed. task: the
   lineage this event records (NULL when none). */
static void
s_emit(nm_t *nm, db_event_t *e, const util_id_t *task, const util_id_t *deps, uint32_t ndeps)
{
    struct nm_log *L = nm->lg;
    uint32_t shard = db_client_shard(nm->log, e);
    if (!L->held && !s_waits(L, deps, ndeps, shard, false)) {
        s_append(nm, e, task);
        return;
    }
    (void) s_hold(nm, e, task, deps, ndeps, shard);
}

/* Put e at the back of `held`: the held event, or NULL when there was no
   memory to hold it (then it is appended now). */
static s_held_t *
s_hold(nm_t *nm, db_event_t *e, const util_id_t *task, const util_id_t *deps, uint32_t ndeps,
       uint32_t shard)
{
    struct nm_log *L = nm->lg;
    s_held_t *h = calloc(1, sizeof *h);
    L->rec.len = 0;
    db_event_encode(e, &L->rec);
    if (!h || L->rec.oom || !(h->rec = malloc(L->rec.len)) ||
        (ndeps && !(h->deps = malloc(ndeps * sizeof *deps)))) {
        log_error("log: out of memory holding an event; appending it now");
        if (h) {
            free(h->rec);
            free(h);
        }
        s_append(nm, e, task);
        return NULL;
    }
    memcpy(h->rec, L->rec.data, L->rec.len);
    h->len = L->rec.len;
    if (ndeps)
        memcpy(h->deps, deps, ndeps * sizeof *deps);
    h->ndeps = ndeps;
    h->shard = shard;
    if (task) {
        h->task = *task;
        h->lineage = true;
        int fresh = 0;
        s_pos_t *p = util_idmap_put(L->unacked, task->b, &fresh);
        if (p && fresh) {
            p->cseq = S_HELD; /* else an older record is on its way: it will do */
            p->rec = NULL;
            s_pos_keep(p, e, h->rec, h->len);
        }
    }
    if (L->held_last)
        L->held_last->next = h;
    else
        L->held = h;
    L->held_last = h;
    L->nheld++;
    return h;
}

void
nm_log_tick(nm_t *nm)
{
    struct nm_log *L = nm->lg;
    int64_t now = util_mono_ns();
    if (!L || !nm->log)
        return;
    if (!nm->log_quiet)
        db_client_poll(nm->log, 0); /* take what was acknowledged */
    /* forget what is committed */
    for (uint32_t s = 0; s < nm->cluster.shards; s++) {
        s_fifo_t *f = &L->fifos[s];
        uint64_t acked = db_client_acked_cseq(nm->log, s);
        while (f->len && f->v[f->head].cseq <= acked) {
            s_pos_t *p = util_idmap_get(L->unacked, f->v[f->head].task.b);
            if (p && p->cseq == f->v[f->head].cseq)
                s_pos_del(L, &f->v[f->head].task, p);
            f->head++;
            f->len--;
        }
        if (f->len == 0)
            f->head = 0;
    }
    /* release held events from the front */
    bool released = false;
    nm_blob_tick(nm); /* puts whose blobs are written: their events may go */
    while (L->held && !L->held->pending &&
           !s_waits(L, L->held->deps, L->held->ndeps, L->held->shard, true)) {
        s_held_t *h = L->held;
        db_event_t e;
        L->held = h->next;
        if (!L->held)
            L->held_last = NULL;
        L->nheld--;
        if (db_event_decode(&e, h->rec, h->len) == 0) {
            if (h->info)
                db_event_set_info(&e, h->info);
            s_append(nm, &e, h->lineage ? &h->task : NULL);
        } else {
            log_error("log: a held event does not decode: %s", lux_errmsg());
        }
        free(h->deps);
        free(h->rec);
        free(h->info);
        free(h);
        released = true;
    }
    /* Group commit from here too: events go at most every S_FLUSH_NS (a
       full batch goes by itself), so a busy node makes one commit per many
       tasks. An actor call's event goes at once (nm->log_urgent): its
       result waits for it. And when many events are held, those just
       released go at once too: they are the next level of a chain of
       lineage, which would otherwise reach the log one level per
       S_FLUSH_NS and, in a job making levels faster than that, fall
       further behind for ever. */
    /* An urgent flush waits while a batch is in flight: its
       acknowledgement wakes the loop, and what gathered meanwhile goes
       then as one commit. A caller waiting on one call at a time finds
       nothing in flight; a stream of calls gets commits as large as the
       log's latency allows, instead of one small commit per turn of the
       loop (which cost the log's writer most of a core). */
    bool urgent = nm->log_urgent && db_client_inflight(nm->log) == 0;
    if (now - L->flushed_ns >= S_FLUSH_NS || urgent ||
        (released && L->nheld >= S_HELD_HURRY)) {
        nm->log_urgent = false;
        L->flushed_ns = now;
        db_client_flush(nm->log);
    }
}

bool
nm_log_pending(nm_t *nm, const util_id_t *task)
{
    return nm->lg && util_idmap_get(nm->lg->unacked, task->b) != NULL;
}

/* An actor call's event goes before its run does: the run wakes the
   actor's worker, which on a busy core takes the CPU from this loop at
   once, and the log's commit, which the call's result waits for, would
   start only after the worker has run. Sent first, the commit overlaps
   the call. The rule of nm_log_tick holds: nothing while a batch is in
   flight. */
void
nm_log_flush_urgent(nm_t *nm)
{
    struct nm_log *L = nm->lg;
    if (!L || !nm->log || !nm->log_urgent || db_client_inflight(nm->log) != 0)
        return;
    nm->log_urgent = false;
    L->flushed_ns = util_mono_ns();
    db_client_flush(nm->log);
}

const char *
nm_log_failed(nm_t *nm, const util_id_t *task)
{
    if (!task) { /* any shard */
        const char *why = NULL;
        for (uint32_t s = 0; nm->log && !why && s < nm->cluster.shards; s++)
            why = db_client_failed(nm->log, s);
        return why;
    }
    s_pos_t *p = nm->lg ? util_idmap_get(nm->lg->unacked, task->b) : NULL;
    return p && p->cseq != S_HELD ? db_client_failed_event(nm->log, p->shard, p->cseq) : NULL;
}

int64_t
nm_log_due_ms(nm_t *nm)
{
    struct nm_log *L = nm->lg;
    if (!L || db_client_unacked(nm->log) <= db_client_inflight(nm->log))
        return -1;
    int64_t ns = L->flushed_ns + S_FLUSH_NS - util_mono_ns();
    return ns <= 0 ? 0 : (ns + 999999) / 1000000;
}

bool
nm_log_busy(nm_t *nm)
{
    return nm->lg && (nm->lg->held || db_client_unacked(nm->log) > 0);
}

/* --- events -------------------------------------------------------------------------------- */

/* Every event says when it happened, on this machine's clock (t_end; a
   task attempt's are its worker's start and end): it can reach the log
   much later than that -- held behind what it depends on, or behind a
   put whose bytes are being recorded -- and the head's ts is when it
   arrived there. */
static void
s_base(nm_t *nm, db_event_t *e, int kind)
{
    memset(e, 0, sizeof *e);
    e->kind = (uint16_t) kind;
    DB_SET_ID(e, node, DB_F_NODE, &nm->node);
    DB_SET_INT(e, t_end, DB_F_T_END, util_now_ns());
}

/* The refs among t's arguments: into L->deps (20 bytes each, for the
   event) and deps (their tasks, for write-ahead; not t itself: a ref to
   its own output, made up, fails, and the event would wait for itself). */
static uint32_t
s_arg_deps(struct nm_log *L, const nm_task_t *t, db_event_t *e, util_id_t *deps)
{
    util_rd_t r;
    exec_arg_t a;
    uint32_t n = 0;
    L->deps.len = 0;
    util_rd_init(&r, t->args, t->args_len);
    while (exec_arg_next(&r, &a)) {
        if (a.kind != EXEC_ARG_REF)
            continue;
        util_buf_put(&L->deps, a.ref.b, LUX_REF_LEN);
        exec_ref_task(&a.ref, &deps[n]);
        if (memcmp(deps[n].b, t->id.b, sizeof t->id.b) != 0)
            n++;
    }
    if (L->deps.len) {
        e->deps = L->deps.data;
        e->deps_len = (uint32_t) L->deps.len;
        e->mask |= DB_F_DEPS;
    }
    return n;
}

/* The part of t's spec an event's body records (exec_spec_body). */
static exec_spec_t
s_spec_of(const nm_task_t *t)
{
    return (exec_spec_t) {.nret = t->nret, .max_attempts = t->max_attempts,
                          .cpus_milli = t->cpus_milli, .res = t->res,
                          .res_len = (uint16_t) (t->res ? strlen(t->res) : 0), .argc = t->argc,
                          .args = t->args, .args_len = t->args_len};
}

void
nm_log_submitted(nm_t *nm, nm_task_t *t)
{
    struct nm_log *L = nm->lg;
    db_event_t e;
    util_id_t deps[EXEC_MAX_ARGS];

    s_base(nm, &e, DB_K_task_submitted);
    DB_SET_ID(&e, task, DB_F_TASK, &t->id);
    DB_SET_ID(&e, parent, DB_F_PARENT, &t->parent);
    DB_SET_ID(&e, job, DB_F_JOB, &t->job);
    DB_SET_INT(&e, idx, DB_F_IDX, t->nret);
    db_event_set_name(&e, t->fn);
    memcpy(e.fp, t->module, 16);
    e.mask |= DB_F_FP;
    uint32_t ndeps = s_arg_deps(L, t, &e, deps);
    exec_spec_t s = s_spec_of(t);
    L->body.len = 0;
    exec_spec_body(&L->body, &s);
    e.body = L->body.data;
    e.body_len = (uint32_t) L->body.len;
    e.mask |= DB_F_BODY;
    char info[300];
    if (t->cpus_milli != 1000 || t->res) {
        snprintf(info, sizeof info, "CPU=%g%s%s", t->cpus_milli / 1000.0, t->res ? "," : "",
                 t->res ? t->res : "");
        db_event_set_info(&e, info);
    }
    s_emit(nm, &e, &t->id, deps, ndeps);
}

void
nm_log_finished(nm_t *nm, nm_task_t *t, nm_worker_t *w, const exec_result_t *r,
                uint64_t out_bytes, const uint8_t fp[16])
{
    db_event_t e;
    char msg[600];
    s_base(nm, &e, r->status == LUX_ECANCELLED ? DB_K_task_cancelled
                   : r->status                 ? DB_K_task_failed
                                               : DB_K_task_finished);
    DB_SET_ID(&e, task, DB_F_TASK, &t->id);
    DB_SET_INT(&e, attempt, DB_F_ATTEMPT, r->attempt);
    DB_SET_INT(&e, status, DB_F_STATUS, r->status);
    DB_SET_INT(&e, t_start, DB_F_T_START, r->t_start);
    DB_SET_INT(&e, t_end, DB_F_T_END, r->t_end);
    DB_SET_INT(&e, size, DB_F_SIZE, (int64_t) out_bytes);
    if (w)
        DB_SET_INT(&e, worker, DB_F_WORKER, w->pid);
    if (t->kind == T_CALL) /* its outputs: an actor call has no task_submitted to say */
        DB_SET_INT(&e, idx, DB_F_IDX, t->nret);
    if (fp) {
        memcpy(e.fp, fp, 16);
        e.mask |= DB_F_FP;
    }
    if (r->status) {
        snprintf(msg, sizeof msg, "%.*s", (int) r->msg_len, r->msg ? r->msg : "");
        db_event_set_info(&e, msg);
    }
    s_emit(nm, &e, NULL, NULL, 0);
}

void
nm_log_retried(nm_t *nm, nm_task_t *t, const char *why)
{
    db_event_t e;
    s_base(nm, &e, DB_K_task_retried);
    DB_SET_ID(&e, task, DB_F_TASK, &t->id);
    DB_SET_INT(&e, attempt, DB_F_ATTEMPT, t->attempt);
    db_event_set_info(&e, why);
    s_emit(nm, &e, NULL, NULL, 0);
}

static void s_put_recorded(nm_t *nm, void *held, const char *info);

void
nm_log_put(nm_t *nm, nm_obj_t *o)
{
    db_event_t e;
    util_id_t task;
    exec_ref_task(&o->id, &task);
    o->listed = true; /* object_locations lists it here: its going is logged (nm_obj_delete) */
    s_base(nm, &e, DB_K_object_put);
    DB_SET_ID(&e, task, DB_F_TASK, &task);
    if (o->owner)
        DB_SET_ID(&e, job, DB_F_JOB, &o->owner->job);
    DB_SET_INT(&e, idx, DB_F_IDX, exec_ref_idx(&o->id));
    DB_SET_INT(&e, size, DB_F_SIZE, (int64_t) o->size);
    memcpy(e.fp, o->fp, 16);
    e.mask |= DB_F_FP;
    /* the bytes, for lux replay: in this event when small; else written
       by the blob writer while the event waits in `held`, and what comes
       after it too, so that the log's order stays the order things
       happened */
    const void *bytes = nm_blob_in_event(nm, o);
    if (bytes) {
        e.body = bytes;
        e.body_len = (uint32_t) o->size;
        e.mask |= DB_F_BODY;
        db_event_set_info(&e, "recorded in this event");
        s_emit(nm, &e, &task, NULL, 0);
        return;
    }
    char info[300];
    nm_blob_job_t *job = nm_blob_record(nm, o, info, sizeof info);
    db_event_set_info(&e, info);
    if (!job) {
        s_emit(nm, &e, &task, NULL, 0);
        return;
    }
    s_held_t *h = s_hold(nm, &e, &task, NULL, 0, db_client_shard(nm->log, &e));
    if (h)
        h->pending = true;
    nm_blob_start(nm, job, s_put_recorded, h);
}

/* The blob writer is done with a put (nm_blob_start): its held
   object_put event `held` may go, with info, which is set when it goes:
   decoding and encoding the event again here cost the node's loop 2,100
   instructions a put (callgrind, doc/benchmarks.md, 2026-11-29). */
static void
s_put_recorded(nm_t *nm, void *held, const char *info)
{
    s_held_t *h = held;
    (void) nm;
    if (!h)
        return; /* appended at once for want of memory: its info stays */
    h->pending = false;
    free(h->info);
    if (!(h->info = strdup(info)))
        log_error("log: out of memory recording what became of a put's blob (%s)", info);
}

void
nm_log_object(nm_t *nm, nm_obj_t *o, int kind, const char *info)
{
    db_event_t e;
    util_id_t task;
    exec_ref_task(&o->id, &task);
    s_base(nm, &e, kind);
    DB_SET_ID(&e, task, DB_F_TASK, &task);
    DB_SET_INT(&e, idx, DB_F_IDX, exec_ref_idx(&o->id));
    DB_SET_INT(&e, size, DB_F_SIZE, (int64_t) o->size);
    if (info)
        db_event_set_info(&e, info);
    s_emit(nm, &e, NULL, NULL, 0);
}

void
nm_log_copied(nm_t *nm, nm_obj_t *o, const util_id_t *from)
{
    db_event_t e;
    util_id_t task;
    char info[80], hex[UTIL_ID_HEX];
    exec_ref_task(&o->id, &task);
    o->listed = true; /* as for a put */
    s_base(nm, &e, DB_K_object_copied);
    DB_SET_ID(&e, task, DB_F_TASK, &task);
    DB_SET_INT(&e, idx, DB_F_IDX, exec_ref_idx(&o->id));
    DB_SET_INT(&e, size, DB_F_SIZE, (int64_t) o->size);
    memcpy(e.fp, o->fp, 16);
    e.mask |= DB_F_FP;
    snprintf(info, sizeof info, "from %s", util_id_hex(from, hex));
    db_event_set_info(&e, info);
    s_emit(nm, &e, NULL, NULL, 0);
}

void
nm_log_job(nm_t *nm, nm_client_t *c, int kind, const char *name, const char *info, int status)
{
    db_event_t e;
    s_base(nm, &e, kind);
    DB_SET_ID(&e, job, DB_F_JOB, &c->job);
    DB_SET_INT(&e, worker, DB_F_WORKER, c->pid);
    if (name)
        db_event_set_name(&e, name);
    if (info)
        db_event_set_info(&e, info);
    if (kind == DB_K_job_finished)
        DB_SET_INT(&e, status, DB_F_STATUS, status);
    if (kind == DB_K_job_started) {
        /* names no lineage, so it need not wait behind a put held for its
           blob: appended now, the head knows the driver before its first
           put's event lands (what it made is waited for, not taken for
           made up: exec_xfer_who.c). Its end stays in order, after its
           puts. */
        s_append(nm, &e, NULL);
        return;
    }
    s_emit(nm, &e, NULL, NULL, 0);
}

void
nm_log_module(nm_t *nm, const util_id_t *job, const uint8_t hash[16], const uint8_t *bytes,
              size_t n, const char *name)
{
    db_event_t e;
    s_base(nm, &e, DB_K_module_registered);
    DB_SET_ID(&e, job, DB_F_JOB, job);
    memcpy(e.fp, hash, 16);
    e.mask |= DB_F_FP;
    DB_SET_INT(&e, size, DB_F_SIZE, (int64_t) n);
    db_event_set_name(&e, name);
    e.body = bytes;
    e.body_len = (uint32_t) n;
    e.mask |= DB_F_BODY;
    s_emit(nm, &e, NULL, NULL, 0);
}

void
nm_log_node(nm_t *nm)
{
    db_event_t e;
    char info[512];
    size_t k = 0;
    info[0] = '\0';
    for (int i = 0; i < nm->nres; i++)
        k += (size_t) snprintf(info + k, sizeof info - k, "%s%s=%g", i ? "," : "",
                               nm->res[i].name, nm->res[i].total / 1000.0);
    s_base(nm, &e, DB_K_node_joined);
    db_event_set_name(&e, nm->address[0] ? nm->address : nm->endpoint);
    db_event_set_info(&e, info);
    DB_SET_INT(&e, size, DB_F_SIZE, (int64_t) nm->store_bytes);
    if (nm_peer_port(nm)) /* where other nodes reach it (exec_peer.h) */
        DB_SET_INT(&e, idx, DB_F_IDX, nm_peer_port(nm));
    s_emit(nm, &e, NULL, NULL, 0);
}

/* --- lookups --------------------------------------------------------------------------- */

/* The tail's file of shard s, opened read-only (the node manager runs on
   the head's machine). */
static int
s_tail(nm_t *nm, uint32_t s)
{
    struct nm_log *L = nm->lg;
    if (L->tails[s])
        return 0;
    db_chain_t *chains = calloc(nm->cluster.shards, sizeof *chains);
    char path[PATH_MAX];
    if (!chains)
        return util_err(LUX_ENOMEM, "out of memory");
    db_chain_load_state(&nm->cluster, chains);
    db_cluster_replica_db(&nm->cluster, s, chains[s].m[chains[s].n - 1].index, path,
                          sizeof path);
    free(chains);
    db_store_opts_t o = {.path = path, .readonly = true};
    if (!(L->tails[s] = db_store_open(&o)))
        return util_err_ctx(LUX_EIO, "reading the log");
    return 0;
}

int
nm_log_actor_calls(nm_t *nm, const util_id_t *actor, uint64_t after,
                   int (*cb)(void *arg, const db_event_t *e), void *arg)
{
    uint32_t s = util_id_shard(actor, nm->cluster.shards);
    int rc = s_tail(nm, s);
    if (rc)
        return rc;
    if ((rc = db_store_actor_events(nm->lg->tails[s], actor, DB_K_actor_call, after, cb, arg)))
        db_store_close(&nm->lg->tails[s]); /* the tail may have changed: open it again next time */
    return rc;
}

/* The kind of our record of task that the log has not acknowledged (held
   here, or in the log client's queue), or -1. `unacked` is keyed by task
   ID, and a put's object_put is recorded under its own ID's task part, so
   the record there may be a put's, not a task_submitted (t/3182). */
static int
s_unacked_kind(nm_t *nm, const util_id_t *task)
{
    struct nm_log *L = nm->lg;
    const s_pos_t *p = util_idmap_get(L->unacked, task->b);
    util_buf_t buf;
    db_event_t e;
    int kind = -1;
    if (!p)
        return -1;
    if (p->rec)
        return DB_K_task_submitted; /* s_pos_keep keeps only those */
    if (p->cseq == S_HELD) {
        for (const s_held_t *h = L->held; h; h = h->next)
            if (h->lineage && util_id_eq(&h->task, task))
                return db_event_decode(&e, h->rec, h->len) == 0 ? (int) e.kind : -1;
        return -1;
    }
    util_buf_init(&buf);
    if (db_client_queued(nm->log, p->shard, p->cseq, &buf) == 0 &&
        db_event_decode(&e, buf.data, buf.len) == 0)
        kind = (int) e.kind;
    util_buf_free(&buf);
    return kind;
}

int
nm_log_lookup(nm_t *nm, const util_id_t *task, exec_spec_t *spec, util_buf_t *buf)
{
    struct nm_log *L = nm->lg;
    uint32_t s = util_id_shard(task, nm->cluster.shards);
    uint64_t seq;
    db_event_t e;
    int rc;

    /* what we recorded and the log has not acknowledged yet: our copy of
       a held record, else the record in the log client's queue. Looking
       in the file instead failed such a rebuild for good, "never
       created", when the log was more than a few seconds behind (t/3153:
       the long form under ASan, seeds 1010 and 1011) */
    s_pos_t *p = util_idmap_get(L->unacked, task->b);
    buf->len = 0;
    if (p && !p->rec && s_unacked_kind(nm, task) == DB_K_object_put)
        return util_err(LUX_ENOTFOUND, "a put, not a task"); /* nm_log_was_put says so */
    if (p && p->rec) {
        util_buf_put(buf, p->rec, p->len);
        if (buf->oom)
            return util_err(LUX_ENOMEM, "out of memory");
        goto found;
    }
    if (p && p->cseq != S_HELD) {
        if ((rc = db_client_queued(nm->log, p->shard, p->cseq, buf)) == 0)
            goto found;
        if (rc == LUX_ENOMEM)
            return rc;
        buf->len = 0; /* acknowledged meanwhile: the file has it */
    }
    /* what we appended must be there before we look */
    if (p) {
        int64_t deadline = util_mono_ms() + 5000;
        while (util_idmap_get(L->unacked, task->b) && util_mono_ms() < deadline) {
            nm_log_tick(nm);
            db_client_poll(nm->log, 5);
        }
    }
    if ((rc = s_tail(nm, s)))
        return rc;
    buf->len = 0;
    if ((rc = db_store_find(L->tails[s], task, DB_K_task_submitted, buf, &seq))) {
        /* the tail may have changed: look again next time */
        db_store_close(&L->tails[s]);
        return rc;
    }
found:
    if ((rc = db_event_decode(&e, buf->data, buf->len)))
        return rc;
    memset(spec, 0, sizeof *spec);
    spec->task = e.task;
    spec->parent = e.parent;
    spec->job = e.job;
    memcpy(spec->module, e.fp, 16);
    spec->fn = e.name;
    spec->fn_len = (uint16_t) e.name_len;
    spec->nret = (uint8_t) e.idx;
    if (!(e.mask & DB_F_BODY) || exec_spec_from_body(spec, e.body, e.body_len))
        return util_err(LUX_ECORRUPT, "the log's record of a task to rebuild is malformed");
    return 0;
}

bool
nm_log_lineage_missing(nm_t *nm, const lux_ref_t *id)
{
    util_id_t tid;
    exec_spec_t spec;
    util_buf_t buf;
    exec_ref_task(id, &tid);
    util_buf_init(&buf);
    int rc = nm_log_lookup(nm, &tid, &spec, &buf);
    util_buf_free(&buf);
    return rc == LUX_ENOTFOUND && !nm_log_was_put(nm, id);
}

bool
nm_log_was_put(nm_t *nm, const lux_ref_t *id)
{
    struct nm_log *L = nm->lg;
    util_id_t task;
    util_buf_t buf;
    uint64_t seq;
    exec_ref_task(id, &task);
    if (s_unacked_kind(nm, &task) == DB_K_object_put)
        return true; /* not in the log's file yet */
    uint32_t s = util_id_shard(&task, nm->cluster.shards);
    if (s_tail(nm, s))
        return false;
    util_buf_init(&buf);
    int rc = db_store_find(L->tails[s], &task, DB_K_object_put, &buf, &seq);
    util_buf_free(&buf);
    if (rc && rc != LUX_ENOTFOUND)
        db_store_close(&L->tails[s]); /* the tail may have changed: open it again next time */
    return rc == 0;
}

/* --- actors ------------------------------------------------------------------------------ */

void
nm_log_actor_created(nm_t *nm, nm_actor_t *a)
{
    struct nm_log *L = nm->lg;
    db_event_t e;
    util_id_t deps[EXEC_MAX_ARGS];
    char info[400];
    nm_task_t *t = a->create;
    s_base(nm, &e, DB_K_actor_created);
    DB_SET_ID(&e, actor, DB_F_ACTOR, &a->id);
    DB_SET_ID(&e, task, DB_F_TASK, &t->id);
    DB_SET_ID(&e, parent, DB_F_PARENT, &t->parent);
    DB_SET_ID(&e, job, DB_F_JOB, &t->job);
    DB_SET_INT(&e, attempt, DB_F_ATTEMPT, a->max_restarts);
    DB_SET_INT(&e, idx, DB_F_IDX, a->ckpt_every);
    db_event_set_name(&e, a->cls);
    memcpy(e.fp, a->module, 16);
    e.mask |= DB_F_FP;
    uint32_t ndeps = s_arg_deps(L, t, &e, deps);
    exec_spec_t s = s_spec_of(t);
    s.max_restarts = (uint16_t) a->max_restarts;
    s.ckpt_every = a->ckpt_every;
    L->body.len = 0;
    exec_actor_body(&L->body, &s);
    e.body = L->body.data;
    e.body_len = (uint32_t) L->body.len;
    e.mask |= DB_F_BODY;
    snprintf(info, sizeof info, "%s%s%smax_restarts=%u checkpoint_every=%u CPU=%g%s%s",
             a->name ? "name=" : "", a->name ? a->name : "", a->name ? " " : "",
             a->max_restarts, a->ckpt_every, t->cpus_milli / 1000.0, t->res ? "," : "",
             t->res ? t->res : "");
    db_event_set_info(&e, info);
    s_emit(nm, &e, NULL, deps, ndeps);
}

void
nm_log_actor_call(nm_t *nm, nm_actor_t *a, nm_task_t *t)
{
    struct nm_log *L = nm->lg;
    db_event_t e;
    util_id_t deps[EXEC_MAX_ARGS];
    s_base(nm, &e, DB_K_actor_call);
    DB_SET_ID(&e, actor, DB_F_ACTOR, &a->id);
    DB_SET_ID(&e, task, DB_F_TASK, &t->id);
    DB_SET_ID(&e, parent, DB_F_PARENT, &t->parent);
    DB_SET_ID(&e, job, DB_F_JOB, &t->job);
    DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) t->run->idx);
    db_event_set_name(&e, t->fn);
    uint32_t ndeps = s_arg_deps(L, t, &e, deps);
    exec_spec_t s = s_spec_of(t);
    L->body.len = 0;
    exec_call_body(&L->body, &s);
    e.body = L->body.data;
    e.body_len = (uint32_t) L->body.len;
    e.mask |= DB_F_BODY;
    /* the lineage of the call's results; they wait for it */
    s_emit(nm, &e, &t->id, deps, ndeps);
    nm->log_urgent = true;
}

void
nm_log_actor_checkpoint(nm_t *nm, nm_actor_t *a, nm_task_t *save, nm_obj_t *o)
{
    db_event_t e;
    char hex[LUX_REF_LEN * 2 + 1], info[128];
    s_base(nm, &e, DB_K_actor_checkpoint);
    DB_SET_ID(&e, actor, DB_F_ACTOR, &a->id);
    DB_SET_ID(&e, task, DB_F_TASK, &save->id);
    DB_SET_ID(&e, job, DB_F_JOB, &a->job);
    DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) save->run->idx);
    DB_SET_INT(&e, size, DB_F_SIZE, (int64_t) o->size);
    memcpy(e.fp, o->fp, 16);
    e.mask |= DB_F_FP;
    util_hex(hex, o->id.b, LUX_REF_LEN);
    snprintf(info, sizeof info, "object %s", hex);
    db_event_set_info(&e, info);
    s_emit(nm, &e, NULL, NULL, 0);
}

void
nm_log_actor_restarted(nm_t *nm, nm_actor_t *a, uint64_t calls)
{
    db_event_t e;
    char info[300];
    s_base(nm, &e, DB_K_actor_restarted);
    DB_SET_ID(&e, actor, DB_F_ACTOR, &a->id);
    DB_SET_ID(&e, job, DB_F_JOB, &a->job);
    DB_SET_INT(&e, attempt, DB_F_ATTEMPT, a->restarts);
    DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) (a->has_ckpt ? a->ckpt_idx : 0));
    DB_SET_INT(&e, size, DB_F_SIZE, (int64_t) calls);
    if (a->has_ckpt) {
        util_id_t ck;
        exec_ref_task(&a->ckpt, &ck);
        DB_SET_ID(&e, task, DB_F_TASK, &ck);
        snprintf(info, sizeof info,
                 "restart %u of %u: loads the checkpoint of call %llu, replays calls %llu..%llu",
                 a->restarts, a->max_restarts, (unsigned long long) a->ckpt_idx,
                 (unsigned long long) a->ckpt_idx + 1, (unsigned long long) (a->ckpt_idx + calls));
    } else {
        snprintf(info, sizeof info,
                 "restart %u of %u: runs the constructor, replays calls 1..%llu", a->restarts,
                 a->max_restarts, (unsigned long long) calls);
    }
    db_event_set_info(&e, info);
    s_emit(nm, &e, NULL, NULL, 0);
}

void
nm_log_actor_died(nm_t *nm, nm_actor_t *a)
{
    db_event_t e;
    s_base(nm, &e, DB_K_actor_died);
    DB_SET_ID(&e, actor, DB_F_ACTOR, &a->id);
    DB_SET_ID(&e, job, DB_F_JOB, &a->job);
    DB_SET_INT(&e, status, DB_F_STATUS, a->death_status);
    DB_SET_INT(&e, attempt, DB_F_ATTEMPT, a->restarts);
    DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) a->next_idx);
    db_event_set_info(&e, a->death ? a->death : "");
    s_emit(nm, &e, NULL, NULL, 0);
}
