/*  exec_node_blob - the node manager's half of recording puts for replay.

    Each new put is kept in the cluster's blob store (exec_blob.h) when it
    is no larger than the cluster's record_puts, before its object_put
    event is appended; the event's info says what became of its bytes
    (recorded, there already, over the limit, or the error), so that
    `lux replay` can say why a put it needs is missing.

    The write (lz4, write, fsync) is done by a thread of its own, in the
    order the puts came, never on the node's loop: a 256 MiB put took
    seconds there under load, during which the node answered nothing, its
    daemon's heartbeat included, and the head declared it dead. The
    object is pinned (or its few inline bytes copied) until its write is
    done; its object_put event waits in the log's `held` queue, and the
    events after it wait behind it (exec_node_log.c), so the log's order
    stays the order of what happened; the loop finishes done writes on
    each log tick (nm_blob_tick).

    A small put (EXEC_BLOB_IN_EVENT_MAX, 2 KiB) needs none of this: its
    bytes go in its object_put event's body (nm_blob_in_event), as an
    argument value goes in its task's, and the event is appended at once.
    Recording an 8-byte put through the writer cost the node 1.26 times
    the instructions of a put before recording (42,404 against 33,771,
    doc/benchmarks.md, 2026-11-29): a job, a copy, the event encoded and
    held, the hand-over to the thread and back, for bytes the event
    carries for nothing.
*/
#include "exec_node_blob.h"
#include "exec_node_int.h"
#include "exec_blob.h"
#include "exec_spill.h"
#include "../util/util_err.h"
#include "../util/util_log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct nm_blob_job {
    struct nm_blob_job *next;
    nm_obj_t *o;          /* pinned while its arena bytes are written, or NULL */
    uint8_t *copy;        /* inline bytes, copied (owned), or NULL */
    const void *data;     /* what is written: in the arena, or copy */
    size_t n;
    uint8_t fp[16];
    nm_blob_done_fn *done; /* told when written, with ... */
    void *held;           /* ... its object_put event, waiting (exec_node_log.c) */
    int rc, fresh;        /* the writer's outcome */
    char err[UTIL_ERRMSG_MAX];
};

/* The writer: jobs in `todo` are written in order and moved to `done`. */
struct nm_blobw {
    nm_t *nm;                        /* the node it belongs to */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nm_blob_job_t *todo, *todo_last; /* to write, oldest first */
    nm_blob_job_t *done, *done_last; /* written, oldest first */
    bool stop;                       /* end once todo is empty */
    char dir[PATH_MAX + 8];          /* the blob store */
};

static void *
s_writer(void *arg)
{
    struct nm_blobw *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->todo && !b->stop)
            pthread_cond_wait(&b->cv, &b->mu);
        nm_blob_job_t *j = b->todo;
        if (!j)
            break; /* stopped, and nothing left */
        pthread_mutex_unlock(&b->mu);
        exec_test_gate(EXEC_GATE_BLOB);
        j->rc = exec_blob_write(b->dir, j->fp, j->data, j->n, &j->fresh);
        if (j->rc)
            snprintf(j->err, sizeof j->err, "%s", lux_errmsg());
        pthread_mutex_lock(&b->mu);
        b->todo = j->next;
        if (!b->todo)
            b->todo_last = NULL;
        j->next = NULL;
        if (b->done_last)
            b->done_last->next = j;
        else
            b->done = j;
        b->done_last = j;
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

const void *
nm_blob_in_event(nm_t *nm, const nm_obj_t *o)
{
    uint64_t lim = nm->cluster.record_puts;
    if (lim == 0 || o->size > lim || o->size > EXEC_BLOB_IN_EVENT_MAX)
        return NULL;
    if (o->where == EXEC_W_ARENA)
        return exec_arena_base(nm->arena) + o->off;
    return o->bytes ? (const void *) o->bytes : "";
}

nm_blob_job_t *
nm_blob_record(nm_t *nm, nm_obj_t *o, char *info, size_t n)
{
    uint64_t lim = nm->cluster.record_puts;
    if (lim == 0 || o->size > lim) { /* 0: none, not even an empty one */
        snprintf(info, n, "not recorded: %" PRIu64 " bytes, over record_puts %" PRIu64,
                 o->size, lim);
        return NULL;
    }
    nm_blob_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(info, n, "not recorded: out of memory");
        return NULL;
    }
    j->n = (size_t) o->size;
    memcpy(j->fp, o->fp, 16);
    if (o->where == EXEC_W_ARENA) {
        j->o = o;
        j->data = exec_arena_base(nm->arena) + o->off;
    } else {
        j->copy = malloc(j->n ? j->n : 1);
        if (!j->copy) {
            free(j);
            snprintf(info, n, "not recorded: out of memory");
            return NULL;
        }
        memcpy(j->copy, o->bytes, j->n);
        j->data = j->copy;
    }
    snprintf(info, n, "being recorded"); /* until its write is done */
    return j;
}

nm_blobw_t *
nm_blob_new(nm_t *nm)
{
    nm_blobw_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->nm = nm;
    snprintf(b->dir, sizeof b->dir, "%s/blobs", nm->cluster.dir);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    if (pthread_create(&b->thread, NULL, s_writer, b)) {
        pthread_mutex_destroy(&b->mu);
        pthread_cond_destroy(&b->cv);
        free(b);
        return NULL;
    }
    return b;
}

/* The writer, made on first use. */
static nm_blobw_t *
s_writer_get(nm_t *nm)
{
    if (!nm->blobw)
        nm->blobw = nm_blob_new(nm);
    return nm->blobw;
}

/* j written (or not): its event goes with what became of it. */
static void
s_finish(nm_t *nm, nm_blob_job_t *j)
{
    char info[UTIL_ERRMSG_MAX + 32];
    if (j->rc) {
        snprintf(info, sizeof info, "not recorded: %s", j->err);
        log_error("a put of %zu bytes was not recorded for replay: %s", j->n, j->err);
    }
    j->done(nm, j->held,
            j->rc ? info : j->fresh ? "recorded" : "recorded (the same bytes were before)");
    if (j->o) /* deleted now if its owner freed it meanwhile */
        nm->ops.obj_unpin(nm, j->o);
    free(j->copy);
    free(j);
}

void
nm_blob_start(nm_t *nm, nm_blob_job_t *j, nm_blob_done_fn *done, void *held)
{
    struct nm_blobw *b = s_writer_get(nm);
    j->done = done;
    j->held = held;
    if (j->o)
        nm->ops.obj_pin(nm, j->o);
    if (!b) {
        /* no thread: written here, as before there was one */
        char dir[PATH_MAX + 8];
        snprintf(dir, sizeof dir, "%s/blobs", nm->cluster.dir);
        exec_test_gate(EXEC_GATE_BLOB);
        if ((j->rc = exec_blob_write(dir, j->fp, j->data, j->n, &j->fresh)))
            snprintf(j->err, sizeof j->err, "%s", lux_errmsg());
        s_finish(nm, j);
        return;
    }
    pthread_mutex_lock(&b->mu);
    if (b->todo_last)
        b->todo_last->next = j;
    else
        b->todo = j;
    b->todo_last = j;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void
nm_blob_tick(nm_t *nm)
{
    struct nm_blobw *b = nm->blobw;
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    nm_blob_job_t *list = b->done;
    b->done = b->done_last = NULL;
    pthread_mutex_unlock(&b->mu);
    while (list) {
        nm_blob_job_t *j = list;
        list = j->next;
        s_finish(nm, j);
    }
}

void
nm_blob_census(nm_t *nm, uint64_t *n, uint64_t *bytes)
{
    struct nm_blobw *b = nm->blobw;
    *n = *bytes = 0;
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    for (int l = 0; l < 2; l++)
        for (nm_blob_job_t *j = l ? b->done : b->todo; j; j = j->next)
            if (j->o) {
                (*n)++;
                *bytes += j->n;
            }
    pthread_mutex_unlock(&b->mu);
}

void
nm_blob_destroy(nm_blobw_t **self_p)
{
    nm_blobw_t *b = *self_p;
    if (!b)
        return;
    nm_t *nm = b->nm;
    pthread_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL); /* what was queued is written first */
    nm_blob_tick(nm); /* reaches b at nm->blobw: self_p is &nm->blobw */
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
    *self_p = NULL;
}
