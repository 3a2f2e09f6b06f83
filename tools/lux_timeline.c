/*  lux_timeline - `lux timeline RUN|OUT.db [--job ID] -o trace.json`: a run's
    history in the Chrome trace event format, which chrome://tracing and
    Perfetto (ui.perfetto.dev) open.

    The format (the "JSON Object Format" of Google's "Trace Event Format"
    document): {"traceEvents": [...], "displayTimeUnit": "ms", "otherData":
    {...}}, each event an object with ph (its phase), ts in microseconds,
    pid and tid. What this file writes:

      process (pid 1, 2, ...)   one per node, in the order the log names
                                them (node_joined first); process_name
                                metadata "node 1a2b3c4d (ENDPOINT)"
      thread (tid)              one per worker process: tid is its OS pid,
                                named "worker PID", or "actor CLASS ID8
                                (worker PID)" when it hosted an actor; tid 0
                                of each node is "events", for what happened
                                on no worker (jobs, puts, checkpoints...)
      ph X (complete slice)     one per task attempt: a task_finished or
                                task_failed event with its start and end
                                (the worker's clock), and one per attempt
                                that a killed worker ended (a task_retried
                                event naming the worker): those end when the
                                node logged the retry and start where the
                                log says the attempt could have started at
                                the earliest (the task's submission, the
                                worker's previous slice, the task's previous
                                retry), marked start_inferred. Named by
                                function ("Class.method" for actor calls),
                                cat "task" (all of them, see the flows),
                                cname "terrible" (red) when it failed;
                                args: kind ("task" or "actor_call"),
                                failed, task_id, attempt, status, job_id,
                                actor_id, the arguments' sizes, output
                                bytes, error, and the event's shard and seq
      ph s / ph f (flow)        one per dependency on another task's output:
                                from the producer's slice that made the
                                object (the last successful attempt ending
                                before the consumer started) to the
                                consumer's last attempt; id unique. Each end
                                has the ts, pid, tid and cat of its slice's
                                start, with bp "e" on the finish: the Trace
                                Event Format binds an "s" and an "f" with
                                bp "e" to the enclosing slice, and Chromium's
                                DevTools engine to the event of the same ts,
                                pid, tid and cat, so both find that slice
                                (the slices of a worker never touch: an
                                inferred start moves 1 ns after the previous
                                slice's end)
      ph i (instant)            failures, retries (on the worker's track when
                                the reason names it), actor restarts, deaths
                                and checkpoints, objects lost and spilled,
                                jobs started and finished (process scope),
                                node deaths (global scope)

    ts is microseconds since the history's first timestamp (otherData.t0_ns
    gives it in ns since the Unix epoch), with three decimals. Every time
    is taken where the thing happened (doc/protocol.md 6.5): a slice's
    start and end on its worker, an instant (a submission, a put, a retry,
    a death...) at its event's t_end, when the node manager or the head's
    monitor made it; never the event's ts, when it reached the head, which
    can be seconds later (a put's bytes being recorded holds the node's
    events behind it), save in a log older than those t_end fields. A
    retry's args name the attempt it starts ("attempt"). Dependencies
    on put objects have no producing task and so no flow; the consumer's
    args list them.
*/
#include "lux_cmd.h"
#include "lux_hist.h"
#include "lux_opt.h"
#include "db/db_event.h"
#include "exec/exec_proto.h"
#include "util/util_err.h"
#include "util/util_hash.h"
#include "util/util_idmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char s_usage[] = "lux timeline RUN|OUT.db [--job ID] -o TRACE.json";

/* The category of every task attempt's slice and of every flow: a flow
   event binds to a slice of its own category in Chromium's engine. */
#define S_CAT "task"

typedef struct {
    util_id_t task;
    char *name;        /* function; "Class.method"; "Class" for a constructor */
    int kind;          /* task_submitted, actor_created or actor_call */
    util_id_t job;     /* its job (zero when the event had none) */
    util_id_t actor;   /* actor events: the actor */
    bool is_actor;     /* actor is set */
    int64_t submitted; /* ts of its event */
    uint8_t *deps;     /* object IDs it reads, 20 bytes each */
    uint32_t ndeps;
    char *args;        /* "8 B, ref OBJ, ..." */
    int64_t arg_bytes; /* bytes of its value arguments */
    int first;         /* its first slice, or -1 */
    uint32_t shard;    /* where its event is */
    uint64_t seq;
} s_spec_t;

typedef struct {
    uint32_t spec;   /* index into specs */
    uint32_t pid;    /* node */
    int64_t tid;     /* worker pid, 0: unknown */
    int64_t start, end;
    int64_t attempt, status, out_bytes;
    bool ok;         /* task_finished */
    bool inferred;   /* a killed worker's attempt: start inferred */
    bool untimed;    /* failed off any worker: the log has one time for it */
    char *error;     /* failure or retry reason, or NULL */
    uint32_t shard;
    uint64_t seq;
    int next;        /* the spec's next slice, or -1 */
} s_slice_t;

typedef struct {
    char *name;      /* "retry t_mix" */
    const char *cat; /* "retry", "failure", ... */
    char scope;      /* 't', 'p' or 'g' */
    uint32_t pid;
    int64_t tid, ts;
    char *args;      /* JSON object text, or NULL */
} s_instant_t;

typedef struct {
    util_id_t id;
    char *addr;      /* its endpoint (node_joined's name), or NULL */
} s_node_t;

typedef struct {
    lux_hist_t *h;
    bool job_only;
    util_id_t job;
    util_idmap_t *by_task; /* task -> uint32 index + 1 into specs */
    s_spec_t *specs;
    size_t nspecs, capspecs;
    s_slice_t *slices;
    size_t nslices, capslices;
    s_instant_t *inst;
    size_t ninst, capinst;
    s_node_t *nodes;
    size_t nnodes;
    util_idmap_t *actor_tid; /* actor -> int64 tid of its worker (latest) */
    int64_t t0;
    bool any;
} s_tl_t;

#define S_GROW(arr, n, cap)                                                                    \
    do {                                                                                       \
        if ((n) == (cap)) {                                                                    \
            size_t c_ = (cap) ? 2 * (cap) : 256;                                               \
            void *p_ = realloc((arr), c_ * sizeof *(arr));                                     \
            if (!p_)                                                                           \
                return util_err(LUX_ENOMEM, "out of memory");                                  \
            (arr) = p_;                                                                        \
            (cap) = c_;                                                                        \
        }                                                                                      \
    } while (0)

static void
s_t0(s_tl_t *tl, int64_t ns)
{
    if (ns > 0 && (!tl->any || ns < tl->t0)) {
        tl->t0 = ns;
        tl->any = true;
    }
}

static uint32_t
s_node_pid(s_tl_t *tl, const void *blob, int n)
{
    if (!blob || n != UTIL_ID_LEN)
        return 1;
    for (size_t i = 0; i < tl->nnodes; i++)
        if (memcmp(tl->nodes[i].id.b, blob, UTIL_ID_LEN) == 0)
            return (uint32_t) i + 1;
    s_node_t *p = realloc(tl->nodes, (tl->nnodes + 1) * sizeof *p);
    if (!p)
        return 1;
    tl->nodes = p;
    memcpy(p[tl->nnodes].id.b, blob, UTIL_ID_LEN);
    p[tl->nnodes].addr = NULL;
    return (uint32_t) ++tl->nnodes;
}

static s_spec_t *
s_spec(s_tl_t *tl, const void *task)
{
    uint32_t *ix = util_idmap_get(tl->by_task, task);
    return ix && *ix ? &tl->specs[*ix - 1] : NULL;
}

static bool
s_job_ok(s_tl_t *tl, const void *job, int n)
{
    return !tl->job_only || (job && n == UTIL_ID_LEN && memcmp(job, tl->job.b, UTIL_ID_LEN) == 0);
}

/* The arguments of a spec's body as "8 B, ref OBJ": a text for people. */
static void
s_describe_args(s_spec_t *sp, int kind, const uint8_t *body, int n)
{
    exec_spec_t s;
    int rc = kind == DB_K_task_submitted ? exec_spec_from_body(&s, body, (size_t) n)
             : kind == DB_K_actor_call   ? exec_call_from_body(&s, body, (size_t) n)
                                         : exec_actor_from_body(&s, body, (size_t) n);
    char *buf = NULL;
    size_t cap = 0;
    FILE *f;
    if (!body || rc || !(f = open_memstream(&buf, &cap)))
        return;
    util_rd_t r;
    exec_arg_t a;
    util_rd_init(&r, s.args, s.args_len);
    for (int i = 0; exec_arg_next(&r, &a); i++) {
        if (a.kind == EXEC_ARG_REF) {
            char hex[2 * LUX_REF_LEN + 1];
            util_hex(hex, a.ref.b, LUX_REF_LEN);
            fprintf(f, "%sref %s", i ? ", " : "", hex);
        } else {
            fprintf(f, "%s%" PRIu32 " B", i ? ", " : "", a.size);
            sp->arg_bytes += a.size;
        }
    }
    fclose(f);
    sp->args = buf;
}

/* --- reading ------------------------------------------------------------------------------ */

static int
s_free_name(void *arg, const void *key, void *value)
{
    free(*(char **) value);
    return 0;
}

static int
s_read_specs(s_tl_t *tl)
{
    sqlite3_stmt *st = lux_hist_prepare(
        tl->h, "SELECT task, kind, name, job, actor, coalesce(t_end, ts), deps, body, shard, seq"
               " FROM event WHERE kind IN (4, 11, 12) ORDER BY ts, shard, seq");
    if (!st)
        return LUX_ESQL;
    int rc;
    /* actor classes, for "Class.method" */
    util_idmap_t *cls = util_idmap_new(sizeof(char *));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *task = sqlite3_column_blob(st, 0);
        if (!task || sqlite3_column_bytes(st, 0) != UTIL_ID_LEN)
            continue;
        int kind = sqlite3_column_int(st, 1);
        if (!s_job_ok(tl, sqlite3_column_blob(st, 3), sqlite3_column_bytes(st, 3)))
            continue;
        int fresh;
        uint32_t *ix = util_idmap_put(tl->by_task, task, &fresh);
        if (!ix) {
            rc = util_err(LUX_ENOMEM, "out of memory");
            break;
        }
        if (!fresh)
            continue; /* an actor's constructor and its task share the ID */
        if (tl->nspecs == tl->capspecs) {
            size_t c = tl->capspecs ? 2 * tl->capspecs : 256;
            s_spec_t *p = realloc(tl->specs, c * sizeof *p);
            if (!p) {
                rc = util_err(LUX_ENOMEM, "out of memory");
                break;
            }
            tl->specs = p;
            tl->capspecs = c;
        }
        s_spec_t *sp = &tl->specs[tl->nspecs];
        memset(sp, 0, sizeof *sp);
        *ix = (uint32_t) ++tl->nspecs;
        memcpy(sp->task.b, task, UTIL_ID_LEN);
        sp->kind = kind;
        sp->first = -1;
        if (sqlite3_column_bytes(st, 3) == UTIL_ID_LEN)
            memcpy(sp->job.b, sqlite3_column_blob(st, 3), UTIL_ID_LEN);
        if (sqlite3_column_bytes(st, 4) == UTIL_ID_LEN) {
            memcpy(sp->actor.b, sqlite3_column_blob(st, 4), UTIL_ID_LEN);
            sp->is_actor = true;
        }
        sp->submitted = sqlite3_column_int64(st, 5);
        sp->shard = (uint32_t) sqlite3_column_int(st, 8);
        sp->seq = (uint64_t) sqlite3_column_int64(st, 9);
        const char *name = (const char *) sqlite3_column_text(st, 2);
        if (kind == DB_K_actor_created) {
            char **c = util_idmap_put(cls, sp->actor.b, &fresh);
            if (c && fresh)
                *c = strdup(name ? name : "?");
            sp->name = strdup(name ? name : "?");
        } else if (kind == DB_K_actor_call) {
            char **c = util_idmap_get(cls, sp->actor.b);
            char buf[512];
            snprintf(buf, sizeof buf, "%s.%s", c && *c ? *c : "actor", name ? name : "?");
            sp->name = strdup(buf);
        } else {
            sp->name = strdup(name ? name : "?");
        }
        int nd = sqlite3_column_bytes(st, 6);
        if (nd >= DB_DEP_LEN && (sp->deps = malloc((size_t) nd))) {
            memcpy(sp->deps, sqlite3_column_blob(st, 6), (size_t) nd);
            sp->ndeps = (uint32_t) nd / DB_DEP_LEN;
        }
        s_describe_args(sp, kind, sqlite3_column_blob(st, 7), sqlite3_column_bytes(st, 7));
    }
    sqlite3_finalize(st);
    util_idmap_each(cls, s_free_name, NULL);
    util_idmap_destroy(&cls);
    if (rc != SQLITE_DONE && rc < 0)
        return rc;
    if (rc != SQLITE_DONE)
        return util_err(LUX_ESQL, "%s: %s", lux_hist_what(tl->h),
                        sqlite3_errmsg(lux_hist_db(tl->h)));
    return 0;
}

static int
s_add_slice(s_tl_t *tl, s_slice_t *s)
{
    S_GROW(tl->slices, tl->nslices, tl->capslices);
    s_spec_t *sp = &tl->specs[s->spec];
    s->next = -1;
    /* keep the spec's slices in order of their end */
    int *at = &sp->first;
    while (*at >= 0 && tl->slices[*at].end <= s->end)
        at = &tl->slices[*at].next;
    s->next = *at;
    tl->slices[tl->nslices] = *s;
    *at = (int) tl->nslices++;
    return 0;
}

static int
s_add_instant(s_tl_t *tl, const char *name, const char *cat, char scope, uint32_t pid,
              int64_t tid, int64_t ts, char *args)
{
    if (tl->ninst == tl->capinst) {
        size_t c = tl->capinst ? 2 * tl->capinst : 256;
        s_instant_t *p = realloc(tl->inst, c * sizeof *p);
        if (!p) {
            free(args);
            return util_err(LUX_ENOMEM, "out of memory");
        }
        tl->inst = p;
        tl->capinst = c;
    }
    tl->inst[tl->ninst++] = (s_instant_t) {.name = strdup(name), .cat = cat, .scope = scope,
                                           .pid = pid, .tid = tid, .ts = ts, .args = args};
    s_t0(tl, ts);
    return 0;
}

/* A JSON object text of key/value strings (NULL values left out); owned. */
static char *
s_args(const char *k1, const char *v1, const char *k2, const char *v2, const char *k3,
       const char *v3)
{
    char *buf = NULL;
    size_t cap = 0;
    FILE *f = open_memstream(&buf, &cap);
    if (!f)
        return NULL;
    const char *k[] = {k1, k2, k3}, *v[] = {v1, v2, v3};
    int n = 0;
    fputc('{', f);
    for (int i = 0; i < 3; i++) {
        if (!k[i] || !v[i])
            continue;
        fprintf(f, "%s", n++ ? ", " : "");
        lux_json_str(f, k[i]);
        fputs(": ", f);
        lux_json_str(f, v[i]);
    }
    fputc('}', f);
    fclose(f);
    return buf;
}

/* args (s_args' object, freed) with "attempt": N added: a retry names the
   attempt it starts, a number (the same as the killed one's when the
   reason says "(not counted)"). */
static char *
s_args_attempt(char *args, int64_t attempt)
{
    char *out = NULL;
    size_t n = args ? strlen(args) : 0;
    if (n >= 2 && asprintf(&out, "%.*s%s\"attempt\": %" PRId64 "}", (int) n - 1, args,
                           n > 2 ? ", " : "", attempt) < 0)
        out = NULL;
    free(args);
    return out;
}

/* The worker a retry's reason names ("worker 1234 ..."), or 0. */
static int64_t
s_reason_worker(const char *why)
{
    const char *p = why ? strstr(why, "worker ") : NULL;
    if (!p)
        return 0;
    char *end;
    long long v = strtoll(p + 7, &end, 10);
    return end != p + 7 && v > 0 ? (int64_t) v : 0;
}

/* Attempts (task_finished, task_failed, task_retried) and the other
   instants, in log order. */
static int
s_read_events(s_tl_t *tl)
{
    sqlite3_stmt *st = lux_hist_prepare(
        tl->h, "SELECT shard, seq, ts, kind, task, node, actor, job, worker, attempt, status,"
               " t_start, t_end, size, name, info, idx FROM event"
               " WHERE kind NOT IN (4, 12) ORDER BY ts, shard, seq");
    if (!st)
        return LUX_ESQL;
    int rc;
    char hex[2 * LUX_REF_LEN + 1], buf[600];
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint32_t shard = (uint32_t) sqlite3_column_int(st, 0);
        uint64_t seq = (uint64_t) sqlite3_column_int64(st, 1);
        int64_t ts = sqlite3_column_int64(st, 2);
        int kind = sqlite3_column_int(st, 3);
        const void *task = sqlite3_column_bytes(st, 4) == UTIL_ID_LEN
                               ? sqlite3_column_blob(st, 4) : NULL;
        uint32_t pid = s_node_pid(tl, sqlite3_column_blob(st, 5), sqlite3_column_bytes(st, 5));
        const void *actor = sqlite3_column_bytes(st, 6) == UTIL_ID_LEN
                                ? sqlite3_column_blob(st, 6) : NULL;
        const void *job = sqlite3_column_blob(st, 7);
        int jobn = sqlite3_column_bytes(st, 7);
        int64_t worker = sqlite3_column_int64(st, 8), attempt = sqlite3_column_int64(st, 9);
        int64_t status = sqlite3_column_int64(st, 10), t_start = sqlite3_column_int64(st, 11);
        int64_t t_end = sqlite3_column_int64(st, 12), size = sqlite3_column_int64(st, 13);
        const char *name = (const char *) sqlite3_column_text(st, 14);
        const char *info = (const char *) sqlite3_column_text(st, 15);
        int64_t idx = sqlite3_column_int64(st, 16);
        s_spec_t *sp = task ? s_spec(tl, task) : NULL;
        /* when it happened: t_end where it happened (an attempt's end on
           its worker); the head's ts only in a log written before events
           said (ts is when the event reached the head, which can be
           seconds later) */
        if (kind != DB_K_task_finished && kind != DB_K_task_failed && t_end > 0)
            ts = t_end;
        int r = 0;

        switch (kind) {
        case DB_K_task_finished:
        case DB_K_task_failed:
            if (!sp)
                break; /* another job's (or a task whose submission is not here) */
            if (t_start > 0 && t_end >= t_start) {
                /* a task whose last worker died fails with no worker and
                   no times of its own: its attempt is inferred as the
                   killed workers' are */
                bool lost = worker <= 0 && t_end == t_start && status == LUX_EDEAD;
                s_slice_t s = {.spec = (uint32_t) (sp - tl->specs), .pid = pid, .tid = worker,
                               .start = t_start, .end = t_end, .attempt = attempt,
                               .status = status, .out_bytes = size,
                               .ok = kind == DB_K_task_finished, .inferred = lost,
                               .untimed = worker <= 0 && t_end == t_start && !lost,
                               .error = info && kind == DB_K_task_failed ? strdup(info) : NULL,
                               .shard = shard, .seq = seq};
                r = s_add_slice(tl, &s);
                s_t0(tl, t_start);
                if (sp->is_actor && worker > 0) {
                    int64_t *t = util_idmap_put(tl->actor_tid, sp->actor.b, NULL);
                    if (t)
                        *t = worker;
                }
            }
            if (!r && kind == DB_K_task_failed) {
                snprintf(buf, sizeof buf, "failed %s", sp->name);
                util_id_hex(&sp->task, hex);
                r = s_add_instant(tl, buf, "failure", 't', pid, worker > 0 ? worker : 0,
                                  t_end > 0 ? t_end : ts, s_args("task_id", hex, "error", info,
                                                                 NULL, NULL));
            }
            break;
        case DB_K_task_retried: {
            if (!sp)
                break;
            int64_t w = s_reason_worker(info);
            util_id_hex(&sp->task, hex);
            snprintf(buf, sizeof buf, "retry %s", sp->name);
            r = s_add_instant(tl, buf, "retry", 't', pid, w, ts,
                              s_args_attempt(s_args("task_id", hex, "reason", info, NULL, NULL),
                                             attempt));
            if (!r && w > 0) {
                /* the attempt the dead worker ended: counted ones moved
                   attempt on, "(not counted)" ones did not */
                bool counted = !info || !strstr(info, "not counted");
                s_slice_t s = {.spec = (uint32_t) (sp - tl->specs), .pid = pid, .tid = w,
                               .start = 0, .end = ts, .attempt = counted ? attempt - 1 : attempt,
                               .status = LUX_EDEAD, .inferred = true,
                               .error = info ? strdup(info) : NULL, .shard = shard,
                               .seq = seq};
                r = s_add_slice(tl, &s);
            }
            break;
        }
        case DB_K_node_joined: {
            if (!tl->nodes[pid - 1].addr && name)
                tl->nodes[pid - 1].addr = strdup(name);
            r = s_add_instant(tl, "node joined", "node", 'p', pid, 0, ts,
                              s_args("address", name, "resources", info, NULL, NULL));
            break;
        }
        case DB_K_node_died:
            r = s_add_instant(tl, "node died", "node", 'g', pid, 0, ts,
                              s_args("why", info, NULL, NULL, NULL, NULL));
            break;
        default: {
            if (tl->job_only && !sp && !s_job_ok(tl, job, jobn))
                break;
            const char *kn = db_kind_name(kind);
            char kbuf[32], ibuf[64];
            if (!kn) {
                snprintf(kbuf, sizeof kbuf, "kind#%d", kind);
                kn = kbuf;
            }
            char scope = kind == DB_K_job_started || kind == DB_K_job_finished ? 'p' : 't';
            int64_t tid = 0;
            if (actor && kind != DB_K_actor_created) {
                int64_t *t = util_idmap_get(tl->actor_tid, actor);
                tid = t ? *t : 0;
            }
            const char *cat = kind >= DB_K_actor_created && kind <= DB_K_actor_died ? "actor"
                              : kind >= DB_K_object_put && kind <= DB_K_object_spilled
                                  ? "object"
                                  : "job";
            if (kind >= DB_K_object_put && kind <= DB_K_object_spilled && task) {
                uint8_t ref[LUX_REF_LEN];
                memcpy(ref, task, UTIL_ID_LEN);
                uint32_t i = (uint32_t) idx;
                ref[16] = (uint8_t) (i >> 24);
                ref[17] = (uint8_t) (i >> 16);
                ref[18] = (uint8_t) (i >> 8);
                ref[19] = (uint8_t) i;
                util_hex(hex, ref, LUX_REF_LEN);
            } else if (actor) {
                util_hex(hex, actor, UTIL_ID_LEN);
            } else if (job && jobn == UTIL_ID_LEN) {
                util_hex(hex, job, UTIL_ID_LEN);
            } else {
                hex[0] = 0;
            }
            snprintf(ibuf, sizeof ibuf, "%" PRId64, kind == DB_K_actor_restarted ? attempt : size);
            snprintf(buf, sizeof buf, "%s%s%s", kn, name && *name ? " " : "", name ? name : "");
            r = s_add_instant(tl, buf, cat, scope, pid, tid, ts,
                              s_args(actor ? "actor_id" : task ? "object_id" : "job_id",
                                     hex[0] ? hex : NULL, "info", info,
                                     kind == DB_K_actor_restarted ? "restart" : "size", ibuf));
            break;
        }
        }
        if (r) {
            sqlite3_finalize(st);
            return r;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return util_err(LUX_ESQL, "%s: %s", lux_hist_what(tl->h),
                        sqlite3_errmsg(lux_hist_db(tl->h)));
    return 0;
}

/* Start each killed worker's attempt at the latest of: its task's
   submission, its task's previous slice's end, and the end of the slice
   before it on the same worker; then part the slices of a worker that
   touch. */
static int
s_cmp_track(const void *a, const void *b)
{
    const s_slice_t *x = *(s_slice_t *const *) a, *y = *(s_slice_t *const *) b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int
s_infer_starts(s_tl_t *tl)
{
    s_slice_t **v = malloc((tl->nslices + 1) * sizeof *v);
    if (!v)
        return util_err(LUX_ENOMEM, "out of memory");
    for (size_t i = 0; i < tl->nslices; i++)
        v[i] = &tl->slices[i];
    qsort(v, tl->nslices, sizeof *v, s_cmp_track);
    for (size_t i = 0; i < tl->nslices; i++) {
        s_slice_t *s = v[i];
        if (!s->inferred)
            continue;
        int64_t start = tl->specs[s->spec].submitted;
        if (i > 0 && v[i - 1]->pid == s->pid && v[i - 1]->tid == s->tid &&
            v[i - 1]->end > start)
            start = v[i - 1]->end;
        for (int k = tl->specs[s->spec].first; k >= 0; k = tl->slices[k].next)
            if (&tl->slices[k] != s && tl->slices[k].end <= s->end && tl->slices[k].end > start)
                start = tl->slices[k].end;
        s->start = start < s->end ? start : s->end;
    }
    /* No two slices of a worker touch: a flow bound at a slice's start
       must have one enclosing slice. An inferred start (the previous
       slice's end at the earliest) or one within a microsecond of the
       previous end moves to 1 ns after it. */
    for (size_t i = 1; i < tl->nslices; i++) {
        s_slice_t *s = v[i], *prev = v[i - 1];
        if (s->tid > 0 && prev->pid == s->pid && prev->tid == s->tid &&
            prev->end >= s->start && prev->end + 1 < s->end &&
            (s->inferred || prev->end - s->start < 1000))
            s->start = prev->end + 1;
    }
    free(v);
    return 0;
}

/* --- writing ------------------------------------------------------------------------------ */

static double
s_us(s_tl_t *tl, int64_t ns)
{
    return (double) (ns - tl->t0) / 1000.0;
}

static void
s_comma(FILE *f, bool *first)
{
    fputs(*first ? "\n  " : ",\n  ", f);
    *first = false;
}

static int
s_write(s_tl_t *tl, FILE *f, const char *src)
{
    bool first = true;
    char hex[2 * LUX_REF_LEN + 1];
    fputs("{\"traceEvents\": [", f);
    /* processes and threads */
    for (size_t i = 0; i < tl->nnodes; i++) {
        char name[256];
        util_id_hex(&tl->nodes[i].id, hex);
        snprintf(name, sizeof name, "node %.8s%s%s%s", hex, tl->nodes[i].addr ? " (" : "",
                 tl->nodes[i].addr ? tl->nodes[i].addr : "", tl->nodes[i].addr ? ")" : "");
        s_comma(f, &first);
        fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %zu, \"tid\": 0, "
                   "\"args\": {\"name\": ", i + 1);
        lux_json_str(f, name);
        fputs("}}", f);
        s_comma(f, &first);
        fprintf(f, "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %zu, \"tid\": 0, "
                   "\"args\": {\"sort_index\": %zu}}", i + 1, i + 1);
        s_comma(f, &first);
        fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %zu, \"tid\": 0, "
                   "\"args\": {\"name\": \"events\"}}", i + 1);
    }
    /* one name per (node, worker): the first slice on it names it */
    util_idmap_t *named = util_idmap_new_keyed(12, 1);
    for (size_t i = 0; named && i < tl->nslices; i++) {
        s_slice_t *s = &tl->slices[i];
        if (s->tid <= 0)
            continue;
        uint8_t key[12];
        memcpy(key, &s->pid, 4);
        memcpy(key + 4, &s->tid, 8);
        int fresh;
        uint8_t *v = util_idmap_put(named, key, &fresh);
        s_spec_t *sp = &tl->specs[s->spec];
        if (!v || (!fresh && (*v || !sp->is_actor)))
            continue;
        *v = sp->is_actor;
        char name[200];
        if (sp->is_actor) {
            const char *dot = strchr(sp->name, '.');
            util_id_hex(&sp->actor, hex);
            snprintf(name, sizeof name, "actor %.*s %.8s (worker %" PRId64 ")",
                     dot ? (int) (dot - sp->name) : (int) strlen(sp->name), sp->name, hex,
                     s->tid);
        } else {
            snprintf(name, sizeof name, "worker %" PRId64, s->tid);
        }
        s_comma(f, &first);
        fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %" PRIu32
                   ", \"tid\": %" PRId64 ", \"args\": {\"name\": ", s->pid, s->tid);
        lux_json_str(f, name);
        fputs("}}", f);
    }
    util_idmap_destroy(&named);
    /* slices */
    for (size_t i = 0; i < tl->nslices; i++) {
        s_slice_t *s = &tl->slices[i];
        s_spec_t *sp = &tl->specs[s->spec];
        s_comma(f, &first);
        /* a failed attempt red in chrome://tracing (a reserved color name) */
        fprintf(f, "{\"ph\": \"X\", %s\"name\": ", s->ok ? "" : "\"cname\": \"terrible\", ");
        lux_json_str(f, sp->name);
        fprintf(f, ", \"cat\": \"" S_CAT "\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %" PRIu32
                   ", \"tid\": %" PRId64 ", \"args\": {\"kind\": \"%s\", \"failed\": %s, "
                   "\"task_id\": \"%s\", \"attempt\": %" PRId64 ", \"status\": %" PRId64,
                s_us(tl, s->start), (double) (s->end - s->start) / 1000.0, s->pid,
                s->tid > 0 ? s->tid : 0, sp->is_actor ? "actor_call" : "task",
                s->ok ? "false" : "true", util_id_hex(&sp->task, hex), s->attempt, s->status);
        if (!util_id_is_zero(&sp->job))
            fprintf(f, ", \"job_id\": \"%s\"", util_id_hex(&sp->job, hex));
        if (sp->is_actor)
            fprintf(f, ", \"actor_id\": \"%s\"", util_id_hex(&sp->actor, hex));
        fputs(", \"args\": ", f);
        lux_json_str(f, sp->args ? sp->args : "");
        fprintf(f, ", \"arg_bytes\": %" PRId64, sp->arg_bytes);
        if (s->ok)
            fprintf(f, ", \"output_bytes\": %" PRId64, s->out_bytes);
        if (s->error) {
            fputs(", \"error\": ", f);
            lux_json_str(f, s->error);
        }
        if (s->inferred)
            fputs(", \"start_inferred\": true", f);
        if (s->untimed)
            fputs(", \"ran\": \"not on a worker, or its worker and times are not in the log\"", f);
        fprintf(f, ", \"shard\": %" PRIu32 ", \"seq\": %" PRIu64 "}}", s->shard, s->seq);
    }
    /* flows along dependencies */
    uint64_t flow = 0;
    for (size_t c = 0; c < tl->nspecs; c++) {
        s_spec_t *cs = &tl->specs[c];
        if (cs->first < 0)
            continue;
        int to = cs->first;
        while (tl->slices[to].next >= 0)
            to = tl->slices[to].next;
        s_slice_t *ts = &tl->slices[to];
        for (uint32_t d = 0; d < cs->ndeps; d++) {
            s_spec_t *ps = s_spec(tl, cs->deps + (size_t) d * DB_DEP_LEN);
            if (!ps || ps->first < 0 || ps == cs)
                continue;
            /* the producer's slice: the last success ending before the
               consumer's start, else its first success, else its last */
            int from = -1, ok_first = -1, last = -1;
            for (int k = ps->first; k >= 0; k = tl->slices[k].next) {
                s_slice_t *p = &tl->slices[k];
                last = k;
                if (p->ok && ok_first < 0)
                    ok_first = k;
                if (p->ok && p->end <= ts->start)
                    from = k;
            }
            if (from < 0)
                from = ok_first >= 0 ? ok_first : last;
            s_slice_t *fs = &tl->slices[from];
            util_hex(hex, cs->deps + (size_t) d * DB_DEP_LEN, LUX_REF_LEN);
            flow++;
            s_comma(f, &first);
            fprintf(f, "{\"ph\": \"s\", \"name\": \"dependency\", \"cat\": \"" S_CAT "\", "
                       "\"id\": %" PRIu64 ", \"ts\": %.3f, \"pid\": %" PRIu32 ", \"tid\": %" PRId64
                       ", \"args\": {\"object_id\": \"%s\"}}",
                    flow, s_us(tl, fs->start), fs->pid, fs->tid > 0 ? fs->tid : 0, hex);
            s_comma(f, &first);
            fprintf(f, "{\"ph\": \"f\", \"bp\": \"e\", \"name\": \"dependency\", "
                       "\"cat\": \"" S_CAT "\", \"id\": %" PRIu64 ", \"ts\": %.3f, \"pid\": %" PRIu32
                       ", \"tid\": %" PRId64 ", \"args\": {\"object_id\": \"%s\"}}",
                    flow, s_us(tl, ts->start), ts->pid, ts->tid > 0 ? ts->tid : 0, hex);
        }
    }
    /* instants */
    for (size_t i = 0; i < tl->ninst; i++) {
        s_instant_t *in = &tl->inst[i];
        s_comma(f, &first);
        fprintf(f, "{\"ph\": \"i\", \"s\": \"%c\", \"name\": ", in->scope);
        lux_json_str(f, in->name);
        fprintf(f, ", \"cat\": \"%s\", \"ts\": %.3f, \"pid\": %" PRIu32 ", \"tid\": %" PRId64
                   ", \"args\": %s}",
                in->cat, s_us(tl, in->ts), in->pid, in->tid > 0 ? in->tid : 0,
                in->args ? in->args : "{}");
    }
    fputs("\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"source\": ", f);
    lux_json_str(f, src);
    fprintf(f, ", \"t0_ns\": \"%" PRId64 "\", \"slices\": \"%zu\", \"flows\": \"%" PRIu64 "\", "
               "\"instants\": \"%zu\"}}\n",
            tl->t0, tl->nslices, flow, tl->ninst);
    return ferror(f) ? util_err(LUX_EIO, "writing the trace failed") : 0;
}

static void
s_free(s_tl_t *tl)
{
    for (size_t i = 0; i < tl->nspecs; i++) {
        free(tl->specs[i].name);
        free(tl->specs[i].deps);
        free(tl->specs[i].args);
    }
    for (size_t i = 0; i < tl->nslices; i++)
        free(tl->slices[i].error);
    for (size_t i = 0; i < tl->ninst; i++) {
        free(tl->inst[i].name);
        free(tl->inst[i].args);
    }
    for (size_t i = 0; i < tl->nnodes; i++)
        free(tl->nodes[i].addr);
    free(tl->specs);
    free(tl->slices);
    free(tl->inst);
    free(tl->nodes);
    util_idmap_destroy(&tl->by_task);
    util_idmap_destroy(&tl->actor_tid);
    lux_hist_close(&tl->h);
}

int
cmd_timeline(int argc, char **argv)
{
    const char *src = NULL, *out = NULL, *job = NULL;
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"job", required_argument, 0, 'j'}, {0}};
    lux_opt_t p = {.cmd = "timeline", .usage = s_usage, .opts = opts, .shorts = "o:",
                   .help = "Writes the run's tasks as a trace that chrome://tracing and Perfetto "
                           "open: a process\nper node, a track per worker, a slice per task "
                           "attempt (named by function, with\nits IDs and its arguments' sizes), "
                           "flow arrows along dependencies, and instants\nfor failures, retries, "
                           "actor restarts and checkpoints, and node deaths.\nRUN is a run's or a "
                           "cluster's directory; OUT.db a file `lux pull` wrote.\n-o - writes to "
                           "standard output. See lux(1).\n"};
    int o;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        if (o == 'o')
            out = optarg;
        else if (o == 'j')
            job = optarg;
        else
            return p.status;
    }
    if (!lux_opt_args(&p, argc, argv, 1, 1, "a RUN directory or OUT.db"))
        return 2;
    src = argv[optind];
    if (!out)
        return lux_opt_usage(&p, "-o TRACE.json is required");
    s_tl_t tl = {0};
    if (job && (strlen(job) != 32 || util_id_parse(&tl.job, job)))
        return lux_opt_usage(&p, "--job takes a job ID of 32 hex digits, not '%s'",
                         job);
    tl.job_only = job != NULL;
    if (!(tl.h = lux_hist_open(src)) || lux_hist_snapshot(tl.h)) {
        lux_hist_close(&tl.h); /* NULL when it did not open */
        return lux_fail("timeline", "%s", lux_errmsg());
    }
    int rc = 0;
    if (!(tl.by_task = util_idmap_new(sizeof(uint32_t))) ||
        !(tl.actor_tid = util_idmap_new(sizeof(int64_t))))
        rc = util_err(LUX_ENOMEM, "out of memory");
    if (!rc)
        rc = s_read_specs(&tl);
    if (!rc)
        rc = s_read_events(&tl);
    if (!rc)
        rc = s_infer_starts(&tl);
    if (!rc && tl.nnodes == 0)
        s_node_pid(&tl, (const uint8_t[UTIL_ID_LEN]) {0}, UTIL_ID_LEN);
    if (!rc) {
        FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
        if (!f)
            rc = util_err(LUX_EIO, "%s: cannot write: %s", out, strerror(errno));
        else {
            rc = s_write(&tl, f, lux_hist_what(tl.h));
            if (f != stdout && fclose(f) && !rc)
                rc = util_err(LUX_EIO, "%s: cannot write: %s", out, strerror(errno));
        }
        if (!rc && f != stdout)
            fprintf(stderr, "lux timeline: %zu task attempts, %zu instants, %zu nodes -> %s\n",
                    tl.nslices, tl.ninst, tl.nnodes, out);
    }
    s_free(&tl);
    return rc ? lux_fail("timeline", "%s", lux_errmsg()) : 0;
}
