/*  lux_replay - `lux replay RUN|OUT.db [--job ID] [--task ID] [--verify]
    [--foreground]`: run a recorded job again and compare what it makes with
    what the log says it made.

    What it takes from the log: the job's module bytes (its
    module_registered event, whose hash is checked against the one the
    log recorded before anything runs), and every submission of the job,
    in log order: tasks (task_submitted: function, returns, arguments:
    values inline, refs by object ID), actors (actor_created: class,
    constructor arguments, max_restarts, checkpoint_every) and actor calls
    (actor_call: method, returns, arguments, in the actor's order). It
    starts a fresh embedded cluster on that module (in a private directory,
    kept and named at the end) and submits again what the driver submitted:
    each task with its recorded arguments, each actor re-created with its
    recorded options, each call made in the recorded order. A ref argument
    is the replayed output of the task or call that made it, or a put: its
    bytes come from its object_put event (a put of at most
    EXEC_BLOB_IN_EVENT_MAX bytes) or from the blob store beside the log
    (exec_blob.h), their fingerprint checked against the one its
    object_put event recorded, and are put once on the replay's cluster. The recording's object and actor
    IDs inside a value argument (a handle, a struct holding a ref) are
    replaced by the replay's. Every call of an actor the driver created,
    its tasks' calls too, is made by the replay's driver in the recorded
    order; the tasks given its handle get a twin of it, which the driver's
    calls reach too, and before each submission the replay's driver waits
    for what the recorded driver had seen end (t_end before the
    submission's time), so that the twin is in the state the tasks found. What tasks and methods submitted themselves (nested
    tasks and calls) they submit again; the replay finds each under the ID
    its replayed parent gives it (IDs are derived from the parent's ID and
    a counter, util_id_child), and compares it too.

    --verify compares each task's and call's outcome with the recorded one:
    finished with the same fingerprint of its outputs (task_finished's fp),
    or failed both times; and each checkpoint of a re-created actor (its
    state's fingerprint at the same call) with the recorded one. A recorded
    restart of an actor (actor_restarted: the checkpoint loaded, the calls
    replayed, so the last call numbered before the process died) is
    re-enacted: once that call's outputs are back, the re-created actor's
    process is killed with SIGKILL and the driver waits for the restart
    before its next call (lux_replay_kill.c); the calls after it are
    compared as any other. A restart that cannot be re-enacted is reported
    and fails the replay. When something does not match, the job is
    replayed a second time: a task whose two replays differ from each other
    as well is reported as not deterministic, the others as mismatched
    (naming the task, its function and attempt, and the first argument that
    came from a task that differs). What could not run (a put not recorded,
    a blob missing or altered, an argument from a task that could not run,
    a nested task its parent did not submit again) is reported with the
    reason, never skipped in silence. Exit status 0 only when everything of
    the job was replayed and, with --verify, matched.

    --task ID replays that task and what it depends on (the driver's tasks
    that made its arguments; for a call, its actor and the calls before
    it). With --foreground it then runs that task once more in this
    process, through the module's function itself (a breakpoint in it
    stops there under gdb), with the bytes of its arguments from the
    replay, and prints each output's fingerprint against the recorded one.
*/
#include "lux_replay.h"
#include "lux_cmd.h"
#include "lux_hist.h"
#include "lux_opt.h"
#include "lux.h"
#include "db/db_event.h"
#include "lux_replay_kill.h"
#include "exec/exec_blob.h"
#include "exec/exec_client.h"
#include "exec/exec_module.h"
#include "exec/exec_proto.h"
#include "util/util_err.h"
#include "util/util_fp.h"
#include "util/util_fs.h"
#include "util/util_hash.h"
#include "util/util_idmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char s_usage[] =
    "lux replay RUN|OUT.db [--job ID] [--task ID [--foreground]] [--verify] [--workers N]\n"
    "                  [--blobs DIR]";


static int
s_free_why(void *arg, const void *key, void *value)
{
    (void) arg, (void) key;
    free(*(char **) value);
    return 0;
}

/* --- a replay ------------------------------------------------------------------------ */

/* The replay's copy of put obj (an object ID of the log): its object_put
   event gives its size and fingerprint, and its bytes in its body (a small
   put, exec_blob.h) or else the blob store (the hash of the bytes checked
   against the fingerprint either way). 0 with *out set, or an error with
   why[n] saying what is missing or wrong. */
static int
s_put(replay_t *r, lux_t *lx, const uint8_t *obj, lux_ref_t *out, char *why, size_t n)
{
    char hex[2 * LUX_REF_LEN + 1];
    char **known = util_idmap_get(r->bad_puts, obj);
    if (known) { /* tried before, for another task */
        snprintf(why, n, "%s", *known);
        return LUX_ENOTFOUND;
    }
    util_hex(hex, obj, LUX_REF_LEN);
    if (!r->put_st &&
        !(r->put_st = lux_hist_prepare(r->h, "SELECT size, fp, info, body FROM event WHERE"
                                             " kind = 8 AND task = ?1 AND idx = ?2 LIMIT 1"))) {
        snprintf(why, n, "object %s: %s", hex, lux_errmsg());
        return LUX_ESQL;
    }
    sqlite3_stmt *st = r->put_st;
    sqlite3_reset(st);
    sqlite3_bind_blob(st, 1, obj, UTIL_ID_LEN, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (int64_t) obj[16] << 24 | obj[17] << 16 | obj[18] << 8 | obj[19]);
    int rc;
    uint8_t *bytes = NULL;
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_bytes(st, 1) != 16) {
        snprintf(why, n, "object %s is neither a put nor a task's output in this log (another "
                 "job's?)", hex);
        rc = LUX_ENOTFOUND;
    } else {
        int64_t size = sqlite3_column_int64(st, 0);
        uint8_t fp[16];
        memcpy(fp, sqlite3_column_blob(st, 1), 16);
        const char *info = (const char *) sqlite3_column_text(st, 2);
        bool in_event = sqlite3_column_type(st, 3) != SQLITE_NULL;
        const void *data = NULL;
        if (in_event) { /* a small put: its bytes are in its event */
            int len = sqlite3_column_bytes(st, 3);
            uint8_t got[16];
            char want[33];
            if (!(data = sqlite3_column_blob(st, 3)))
                data = ""; /* an empty put */
            util_fp(got, data, (size_t) len);
            util_hex(want, fp, 16);
            rc = LUX_ECORRUPT;
            if (len != size)
                snprintf(why, n, "put %s (%" PRId64 " bytes): its event holds %d bytes", hex,
                         size, len);
            else if (memcmp(got, fp, 16) != 0)
                snprintf(why, n, "put %s (%" PRId64 " bytes): its bytes in the log do not hash "
                         "to the recorded fingerprint %s (altered)", hex, size, want);
            else
                rc = 0;
        } else {
            rc = exec_blob_read(r->blobs, fp, (size_t) size, &bytes);
            if (rc == LUX_ENOTFOUND && info && strncmp(info, "not recorded", 12) == 0)
                snprintf(why, n, "put %s (%" PRId64 " bytes): %s", hex, size, info);
            else if (rc)
                snprintf(why, n, "put %s (%" PRId64 " bytes): %s", hex, size, lux_errmsg());
            data = bytes;
        }
        if (!rc && (rc = lux_put(lx, data, (size_t) size, out)))
            snprintf(why, n, "put %s (%" PRId64 " bytes): lux_put: %s", hex, size, lux_errmsg());
        else if (!rc && in_event) {
            r->ev_puts++;
            r->ev_put_bytes += (uint64_t) size;
        } else if (!rc) {
            r->puts++;
            r->put_bytes += (uint64_t) size;
        }
    }
    free(bytes);
    if (rc && (known = util_idmap_put(r->bad_puts, obj, NULL)))
        *known = strdup(why);
    return rc;
}

static int s_args(replay_t *r, lux_t *lx, replay_item_t *t, const exec_spec_t *s, lux_arg_t *args,
                  lux_ref_t *refs, void **own, char *why, size_t n);
static int s_create(replay_t *r, lux_t *lx, replay_item_t *c, bool twin, char *why, size_t n);

/* A value of the recording with the IDs it holds of the recording's
   objects and actors (a struct holding a ref or a handle, as ES's
   EsServer's settings hold the noise table's ref) replaced by the
   replay's: an object made by a replayed task, a put (read from the blob
   store), or an actor's twin. A copy (free()) when anything was replaced,
   else NULL. IDs are 16 random bytes: a match by chance is not a worry. */
static uint8_t *
s_rewrite(replay_t *r, lux_t *lx, const uint8_t *p, size_t n)
{
    uint8_t *out = NULL;
    for (size_t off = 0; off + UTIL_ID_LEN <= n; off++) {
        const uint8_t *q = p + off;
        const uint8_t *with = NULL;
        size_t len = 0;
        uint32_t *ix = util_idmap_get(r->by_actor, q);
        if (ix && r->t[*ix - 1].created) {
            replay_item_t *c = &r->t[*ix - 1];
            char cw[512];
            if (!c->task_created && s_create(r, lx, c, true, cw, sizeof cw))
                fprintf(stderr, "lux replay: a twin of actor %s for the tasks: %s\n", c->fn, cw);
            if (c->task_created)
                with = c->task_actor.b, len = UTIL_ID_LEN;
        } else if (off + LUX_REF_LEN <= n) {
            lux_ref_t *nr = util_idmap_get(r->objs, q);
            if (!nr && util_idmap_get(r->put_ids, q)) {
                char pw[512];
                lux_ref_t pr;
                if (s_put(r, lx, q, &pr, pw, sizeof pw) == 0 &&
                    (nr = util_idmap_put(r->objs, q, NULL)))
                    *nr = pr;
            }
            if (nr)
                with = nr->b, len = LUX_REF_LEN;
        }
        if (!with)
            continue;
        if (!out) {
            if (!(out = malloc(n)))
                return NULL;
            memcpy(out, p, n);
        }
        memcpy(out + off, with, len);
        off += len - 1;
    }
    return out;
}

/* Create the actor of item c (actor_created) on lx: the calls' one (no
   name: the tasks may look it up by name, and their calls must not mix
   with the recorded order), or the twin the tasks are given. 0, or the
   error with why[n]. */
static int
s_create(replay_t *r, lux_t *lx, replay_item_t *c, bool twin, char *why, size_t n)
{
    exec_spec_t s;
    char res[256], name[256];
    if (replay_spec(c, &s)) {
        snprintf(why, n, "the recorded creation of actor %s does not decode", c->fn);
        return LUX_ECORRUPT;
    }
    lux_arg_t *args = calloc(s.argc + 1u, sizeof *args);
    lux_ref_t *refs = calloc(s.argc + 1u, sizeof *refs);
    void **own = calloc(s.argc + 1u, sizeof *own);
    int rc = LUX_ENOMEM;
    snprintf(why, n, "out of memory");
    if (args && refs && own && (rc = s_args(r, lx, c, &s, args, refs, own, why, n)) == 0) {
        snprintf(res, sizeof res, "%.*s", (int) s.res_len, s.res ? s.res : "");
        snprintf(name, sizeof name, "%s", c->name ? c->name : "");
        lux_actor_opts_t ao = {.name = twin && name[0] ? name : NULL,
                               .cpus = s.cpus_milli / 1000.0, .resources = res[0] ? res : NULL,
                               .max_restarts = s.max_restarts,
                               .checkpoint_every = (int) s.ckpt_every};
        rc = lux_actor_create(lx, c->fn, s.argc, args, &ao, twin ? &c->task_actor : &c->new_actor);
        if (rc)
            snprintf(why, n, "refused on submission: %s", lux_errmsg());
        else if (twin)
            c->task_created = true;
        else
            c->created = true;
    }
    for (int i = 0; own && i < s.argc; i++)
        free(own[i]);
    free(own);
    free(args);
    free(refs);
    return rc;
}

/* The arguments of t (spec s) on the replay's cluster, into args (argc of
   them), refs and own (storage for args: free() each). 0, or nonzero with why[n]. */
static int
s_args(replay_t *r, lux_t *lx, replay_item_t *t, const exec_spec_t *s, lux_arg_t *args,
       lux_ref_t *refs, void **own, char *why, size_t n)
{
    char hex[2 * LUX_REF_LEN + 1];
    util_rd_t rd;
    exec_arg_t a;
    int k = 0;
    if (!t->ref_args && !(t->ref_args = malloc((size_t) (s->argc + 1u) * LUX_REF_LEN))) {
        snprintf(why, n, "out of memory");
        return LUX_ENOMEM;
    }
    t->nref_args = 0;
    util_rd_init(&rd, s->args, s->args_len);
    while (k < s->argc && exec_arg_next(&rd, &a)) {
        if (a.kind == EXEC_ARG_REF) {
            lux_ref_t *nr = util_idmap_get(r->objs, a.ref.b);
            memcpy(t->ref_args + (size_t) t->nref_args++ * LUX_REF_LEN, a.ref.b, LUX_REF_LEN);
            if (!nr && !util_idmap_get(r->by_task, a.ref.b)) {
                /* a put: its recorded bytes, put once for every task that reads it */
                char pw[512] = "out of memory";
                lux_ref_t pr;
                if (s_put(r, lx, a.ref.b, &pr, pw, sizeof pw) == 0 &&
                    (nr = util_idmap_put(r->objs, a.ref.b, NULL)))
                    *nr = pr;
                else if (!nr) {
                    snprintf(why, n, "argument %d: %s", k, pw);
                    return LUX_ENOTFOUND;
                }
            }
            if (!nr) {
                util_hex(hex, a.ref.b, LUX_REF_LEN);
                snprintf(why, n, "argument %d is object %s, from a task that was not "
                         "replayed", k, hex);
                return LUX_ENOTFOUND;
            }
            refs[k] = *nr;
            args[k] = LUX_REF(refs[k]);
        } else {
            /* IDs inside it (an actor's handle, a ref in a struct): the replay's */
            own[k] = s_rewrite(r, lx, a.data, a.size);
            args[k] = own[k] ? LUX_VAL(own[k], a.size) : LUX_VAL(a.data, a.size);
        }
        k++;
    }
    if (k != s->argc) {
        snprintf(why, n, "its recorded arguments do not decode");
        return LUX_ECORRUPT;
    }
    return 0;
}

/* Submit the driver's item t on lx, as recorded. */
static void
s_submit(replay_t *r, lux_t *lx, replay_item_t *t)
{
    exec_spec_t s;
    char why[700] = "";
    if (replay_spec(t, &s)) {
        snprintf(why, sizeof why, "its recorded submission does not decode");
        goto out;
    }
    if (t->nret > REPLAY_MAX_RET) {
        snprintf(why, sizeof why, "more than %d returns", REPLAY_MAX_RET);
        goto out;
    }
    if (t->kind != DB_K_actor_created && t->nret == 0) {
        snprintf(why, sizeof why, "no returns: nothing to follow it by");
        goto out;
    }
    if (t->kind == DB_K_actor_created) {
        if (s_create(r, lx, t, false, why, sizeof why) == 0)
            t->sent = true;
        /* its tasks' twin, at once: the driver's calls go to it too */
        if (t->sent && t->task_calls && s_create(r, lx, t, true, why, sizeof why))
            fprintf(stderr, "lux replay: a twin of actor %s for the tasks: %s\n", t->fn, why);
        why[0] = 0;
        goto out;
    }
    lux_arg_t *args = calloc(s.argc + 1u, sizeof *args);
    lux_ref_t *refs = calloc(s.argc + 1u, sizeof *refs);
    void **own = calloc(s.argc + 1u, sizeof *own);
    if (!args || !refs || !own)
        snprintf(why, sizeof why, "out of memory");
    else if (s_args(r, lx, t, &s, args, refs, own, why, sizeof why) == 0) {
        char res[256];
        snprintf(res, sizeof res, "%.*s", (int) s.res_len, s.res ? s.res : "");
        int rc;
        if (t->kind == DB_K_actor_call) {
            uint32_t *ix = util_idmap_get(r->by_actor, t->actor.b);
            if (!ix || !r->t[*ix - 1].created) {
                snprintf(why, sizeof why, "its actor %s was not re-created",
                         util_id_hex(&t->actor, res));
                rc = 0;
            } else {
                rc = lux_actor_call(lx, &r->t[*ix - 1].new_actor, t->fn, s.argc, args, t->nret,
                                    t->refs);
                /* the driver's calls reach the tasks' twin too, as they reached
                   the actor its tasks called (their outputs are not compared) */
                if (!rc && t->top && r->t[*ix - 1].task_created &&
                    lux_actor_call(lx, &r->t[*ix - 1].task_actor, t->fn, s.argc, args, t->nret,
                                   t->mirror) == 0)
                    t->mirrored = true;
            }
        } else {
            lux_opts_t o = {.cpus = s.cpus_milli / 1000.0, .resources = res[0] ? res : NULL,
                            .max_attempts = s.max_attempts, .timeout_ms = (int) s.timeout_ms};
            rc = lux_call_opts(lx, &o, t->fn, s.argc, args, t->nret, t->refs);
        }
        if (rc)
            snprintf(why, sizeof why, "refused on submission: %s", lux_errmsg());
        else if (!why[0]) {
            t->sent = true;
            for (uint8_t i = 0; i < t->nret; i++) {
                uint8_t obj[LUX_REF_LEN];
                memcpy(obj, t->task.b, UTIL_ID_LEN);
                obj[16] = obj[17] = obj[18] = 0;
                obj[19] = i;
                lux_ref_t *slot = util_idmap_put(r->objs, obj, NULL);
                if (slot)
                    *slot = t->refs[i];
            }
            if (t->nret) {
                exec_ref_task(&t->refs[0], &t->new_id);
                t->mapped = true;
            }
        }
    }
    for (int i = 0; own && i < s.argc; i++)
        free(own[i]);
    free(own);
    free(args);
    free(refs);
out:
    if (why[0] && !t->why_not)
        t->why_not = strdup(why);
}

/* The new ID of item i, when known: the driver's from its submission, a
   nested one's from its replayed parent's (util_id_child of the job and
   the parent, with the counter of its recorded ID). */
static bool
s_map(replay_t *r, size_t i, const util_id_t *newjob)
{
    replay_item_t *t = &r->t[i];
    if (t->mapped || t->drive)
        return t->mapped;
    uint32_t *ix = util_idmap_get(r->by_task, t->parent.b);
    if (!ix || *ix - 1 == i || !s_map(r, *ix - 1, newjob))
        return false;
    uint64_t counter = 0;
    for (int k = 8; k < 16; k++)
        counter = counter << 8 | t->task.b[k];
    util_id_child(&t->new_id, newjob, &r->t[*ix - 1].new_id, counter);
    t->mapped = true;
    return true;
}

static bool
s_same(int oa, const uint8_t *fa, int ob, const uint8_t *fb)
{
    return oa == ob && (oa != DB_K_task_finished || memcmp(fa, fb, 16) == 0);
}

static const char *
s_outcome_name(int o)
{
    return o == DB_K_task_finished ? "finished" : o == DB_K_task_failed ? "failed" : "no outcome";
}

/* --foreground: run task t once more in this process, on the replay's
   cluster lx (its arguments' bytes from there), through the module's
   function itself, and print what it compares. 0 when it gives what was
   recorded, 1 when not, or an error. */
static int
s_foreground(replay_t *r, lux_t *lx, replay_item_t *t)
{
    exec_spec_t s;
    uint8_t *bytes, hash[16], fps[REPLAY_MAX_RET][16], fp[16];
    size_t nb;
    char hex[2 * LUX_REF_LEN + 1];
    int rc;
    if (replay_spec(t, &s))
        return util_err(LUX_ECORRUPT, "task %s: its recorded submission does not decode",
                        util_id_hex(&t->task, hex));
    if ((rc = exec_module_read(r->mod, &bytes, &nb, hash)))
        return rc;
    free(bytes);
    exec_module_t *m = exec_module_load(r->mod, hash);
    const exec_fn_t *f = m ? exec_module_fn(m, t->fn, strlen(t->fn)) : NULL;
    if (!f || f->kind != EXEC_FN_TASK)
        return util_err(LUX_ENOTFOUND, "--foreground: the module has no function %s", t->fn);
    lux_val_t *args = calloc(s.argc + 1u, sizeof *args);
    void **own = calloc(s.argc + 1u, sizeof *own);
    exec_obj_t outs[REPLAY_MAX_RET];
    uint8_t set[REPLAY_MAX_RET] = {0}, *outs_own[REPLAY_MAX_RET] = {0};
    if (!args || !own) {
        free(args);
        free(own);
        return util_err(LUX_ENOMEM, "out of memory");
    }
    printf("--foreground: task %s, %s of %d arguments, attempt %" PRId64 " recorded, in this "
           "process (pid %d; under gdb: break %s)\n",
           util_id_hex(&t->task, hex), t->fn, s.argc, t->attempt, (int) getpid(), t->fn);
    util_rd_t rd;
    exec_arg_t a;
    int k = 0;
    util_rd_init(&rd, s.args, s.args_len);
    while (k < s.argc && exec_arg_next(&rd, &a)) {
        const void *data = a.data;
        size_t size = a.size;
        uint8_t *rw = a.kind == EXEC_ARG_REF ? NULL : s_rewrite(r, lx, a.data, a.size);
        if (rw)
            data = rw; /* the IDs it holds: the replay's */
        if (a.kind == EXEC_ARG_REF) {
            lux_ref_t *nr = util_idmap_get(r->objs, a.ref.b);
            lux_val_t v;
            util_hex(hex, a.ref.b, LUX_REF_LEN);
            if (!nr || (rc = lux_get(lx, nr, &v, REPLAY_WAIT_MS))) {
                rc = util_err(LUX_ENOTFOUND, "--foreground: argument %d, object %s: %s", k, hex,
                              nr ? lux_errmsg() : "not made by the replay");
                goto out;
            }
            data = v.data;
            size = v.size;
        }
        uint8_t afp[16];
        char ahex[33];
        exec_fingerprint(afp, data, size);
        util_hex(ahex, afp, 16);
        printf("  argument %d: %s, %zu bytes, fingerprint %s\n", k,
               a.kind == EXEC_ARG_REF ? hex : "a value", size, ahex);
        /* in place, 16-aligned, as a worker gives them */
        if (!(own[k] = aligned_alloc(16, (size + 16) & ~(size_t) 15))) {
            free(rw);
            rc = util_err(LUX_ENOMEM, "out of memory");
            goto out;
        }
        if (size)
            memcpy(own[k], data, size);
        free(rw);
        args[k].data = own[k];
        args[k].size = size;
        k++;
    }
    exec_task_ctx_t ctx = {.task = t->new_id, .attempt = 1, .argc = s.argc, .argv = args,
                           .nret = t->nret, .outs = outs, .outs_set = set,
                           .outs_own = outs_own};
    memset(outs, 0, sizeof outs);
    lx->task = &ctx;
    rc = f->fn(lx, s.argc, args); /* the function itself */
    exec_client_flush(lx);
    lx->task = NULL;
    int outcome = rc || ctx.status ? DB_K_task_failed : DB_K_task_finished;
    if (outcome == DB_K_task_failed)
        printf("  it failed: %s\n",
               ctx.err[0] ? ctx.err : lux_strerror(ctx.status ? ctx.status : rc));
    else {
        util_blake_t h;
        util_blake_init(&h, 16);
        for (int i = 0; i < t->nret; i++) {
            const void *p = !set[i] ? (const void *) ""
                            : outs[i].where == EXEC_W_ARENA
                                ? (const void *) (exec_arena_base(lx->arena) + outs[i].off)
                                : (const void *) outs[i].bytes;
            size_t n = set[i] ? (size_t) outs[i].size : 0;
            exec_fingerprint(fps[i], p, n);
            util_blake_update(&h, fps[i], 16);
            util_hex(hex, fps[i], 16);
            printf("  output %d: %zu bytes, fingerprint %s\n", i, n, hex);
        }
        util_blake_final(&h, fp, 16);
    }
    char rf[33] = "-", nf[33] = "-";
    if (t->outcome == DB_K_task_finished)
        util_hex(rf, t->fp, 16);
    if (outcome == DB_K_task_finished)
        util_hex(nf, fp, 16);
    bool same = s_same(t->outcome, t->fp, outcome, fp);
    printf("--foreground: recorded %s %s, this process %s %s: %s\n", s_outcome_name(t->outcome),
           rf, s_outcome_name(outcome), nf, same ? "the same" : "DIFFERENT");
    rc = same ? 0 : 1;
out:
    for (int i = 0; i < REPLAY_MAX_RET; i++)
        free(outs_own[i]);
    for (int i = 0; i < s.argc; i++)
        free(own[i]);
    free(own);
    free(args);
    return rc;
}

/* Re-enact the recorded restarts of actor (NULL: of every actor) whose
   process died after a call numbered below idx (the next call the driver
   makes to it): wait for that call's outputs, kill the re-created actor's
   process with SIGKILL and wait for its restart (lux_replay_kill.c). */
static void
s_reenact(replay_t *r, lux_t *lx, const util_id_t *actor, int64_t idx)
{
    for (size_t k = 0; k < r->nrs; k++) {
        replay_restart_t *x = &r->rs[k];
        if (x->done || x->why_not || x->after >= idx || (actor && !util_id_eq(&x->actor, actor)))
            continue;
        uint32_t *ix = util_idmap_get(r->by_actor, x->actor.b);
        replay_item_t *a = ix ? &r->t[*ix - 1] : NULL, *c = NULL;
        char why[600] = "";
        if (a && !a->want)
            continue; /* --task: not in scope */
        for (size_t i = 0; a && i < r->n && !c; i++)
            if (r->t[i].kind == DB_K_actor_call && r->t[i].idx == x->after &&
                util_id_eq(&r->t[i].actor, &x->actor))
                c = &r->t[i];
        if (!a || !a->top)
            snprintf(why, sizeof why, "its actor was %s: the replay's driver cannot reach it",
                     a ? "created by a task" : "not created by this job");
        else if (!a->created)
            snprintf(why, sizeof why, "its actor was not re-created");
        else if (x->after == 0)
            snprintf(why, sizeof why, "its process died before its first call");
        else if (c && !c->want)
            continue; /* --task: the calls before the restart only */
        else if (!c || !c->sent || !c->mapped)
            snprintf(why, sizeof why, "call %" PRId64 " was not replayed", x->after);
        else {
            lux_val_t v;
            lux_get(lx, &c->refs[0], &v, REPLAY_WAIT_MS); /* a failure is an outcome too */
            if (lux_replay_kill(lux_dir(lx), c->new_id.b, a->new_actor.b, REPLAY_WAIT_MS, &x->pid,
                                why, sizeof why) == 0)
                x->done = true;
        }
        if (!x->done)
            x->why_not = strdup(why[0] ? why : "?");
    }
}

/* One replay: a fresh cluster, the driver's items submitted in order, every
   output waited for; then the outcomes read from its log into round. */
static int
s_round(replay_t *r, int round)
{
    lux_config_t cfg = {.module = r->mod, .dir = r->runs, .workers = r->workers,
                        .record_puts = -1};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        return LUX_EIO;
    util_idmap_clear(r->objs);
    r->puts = r->ev_puts = 0;
    r->put_bytes = r->ev_put_bytes = 0;
    for (size_t i = 0; i < r->n; i++) {
        replay_item_t *t = &r->t[i];
        t->sent = t->mapped = t->created = t->task_created = t->waited = t->mirrored = false;
    }
    for (size_t k = 0; k < r->nrs; k++)
        r->rs[k].done = false;
    for (size_t i = 0; i < r->n; i++) {
        replay_item_t *t = &r->t[i];
        if (!t->drive || !t->want)
            continue;
        /* what the recorded driver had seen done before it submitted this, the
           replay's waits for too: a call that the recorded driver made after
           its tasks had pushed to the actor finds the twin in that state */
        for (size_t k = 0; k < i; k++) {
            replay_item_t *y = &r->t[k];
            if (!y->sent || y->waited || !y->done_ts || y->done_ts >= t->ts)
                continue;
            lux_val_t v;
            for (uint8_t j = 0; j < y->nret; j++) {
                lux_get(lx, &y->refs[j], &v, REPLAY_WAIT_MS); /* a failure is an outcome too */
                if (y->mirrored) /* and the twin had it too */
                    lux_get(lx, &y->mirror[j], &v, REPLAY_WAIT_MS);
            }
            y->waited = true;
        }
        if (t->kind == DB_K_actor_call)
            s_reenact(r, lx, &t->actor, t->idx);
        s_submit(r, lx, t);
    }
    s_reenact(r, lx, NULL, INT64_MAX);
    for (size_t i = 0; i < r->n; i++) {
        lux_val_t v;
        for (uint8_t k = 0; r->t[i].sent && k < r->t[i].nret; k++)
            lux_get(lx, &r->t[i].refs[k], &v, REPLAY_WAIT_MS); /* a failure is an outcome too */
    }
    if (r->fg && round == 0) {
        fflush(stdout);
        r->fg_status = s_foreground(r, lx, &r->t[r->fg - 1]);
        fflush(stdout);
    }
    char hex[UTIL_ID_HEX];
    util_id_t newjob;
    util_id_parse(&newjob, lux_job_id(lx, hex));
    snprintf(r->newdir[round], sizeof r->newdir[round], "%s", lux_dir(lx));
    lux_shutdown(&lx);

    lux_hist_t *h = lux_hist_open(r->newdir[round]);
    if (!h)
        return util_err_ctx(LUX_EIO, "the replay's log in %s", r->newdir[round]);
    sqlite3_stmt *cr = lux_hist_prepare(h, "SELECT task FROM event WHERE kind = 11 AND actor = ?1");
    sqlite3_stmt *sub = lux_hist_prepare(h, "SELECT 1 FROM event WHERE kind IN (4, 12) AND"
                                            " task = ?1 LIMIT 1");
    sqlite3_stmt *st = lux_hist_prepare(h, "SELECT kind, fp FROM event WHERE task = ?1 AND"
                                           " kind IN (5, 6) ORDER BY shard, seq");
    sqlite3_stmt *ck = lux_hist_prepare(h, "SELECT fp FROM event WHERE kind = 13 AND"
                                           " actor = ?1 AND idx = ?2 LIMIT 1");
    if (!cr || !sub || !st || !ck) {
        sqlite3_finalize(cr);
        sqlite3_finalize(sub);
        sqlite3_finalize(st);
        sqlite3_finalize(ck);
        lux_hist_close(&h);
        return LUX_ESQL;
    }
    /* a re-created actor's creation task: the parent of what its constructor submits */
    for (size_t i = 0; i < r->n; i++) {
        replay_item_t *t = &r->t[i];
        if (t->kind != DB_K_actor_created || !t->created)
            continue;
        sqlite3_bind_blob(cr, 1, t->new_actor.b, UTIL_ID_LEN, SQLITE_STATIC);
        if (sqlite3_step(cr) == SQLITE_ROW && sqlite3_column_bytes(cr, 0) == UTIL_ID_LEN) {
            memcpy(t->new_id.b, sqlite3_column_blob(cr, 0), UTIL_ID_LEN);
            t->mapped = true;
        }
        sqlite3_reset(cr);
    }
    for (size_t i = 0; i < r->n; i++) {
        replay_item_t *t = &r->t[i];
        t->new_outcome[round] = 0;
        if (t->kind == DB_K_actor_created || !replay_in_scope(r, i) || t->why_not)
            continue;
        if (!s_map(r, i, &newjob)) {
            uint32_t *ix = util_idmap_get(r->by_task, t->parent.b);
            char why[200];
            snprintf(why, sizeof why, "its parent %s (%s) was not replayed",
                     util_id_hex(&t->parent, hex), ix ? r->t[*ix - 1].fn : "?");
            t->why_not = strdup(why);
            continue;
        }
        sqlite3_bind_blob(st, 1, t->new_id.b, UTIL_ID_LEN, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            t->new_outcome[round] = sqlite3_column_int(st, 0);
            if (sqlite3_column_bytes(st, 1) == 16)
                memcpy(t->new_fp[round], sqlite3_column_blob(st, 1), 16);
        }
        sqlite3_reset(st);
        if (t->new_outcome[round] || round > 0)
            continue;
        /* no outcome: not submitted again, or never finished */
        sqlite3_bind_blob(sub, 1, t->new_id.b, UTIL_ID_LEN, SQLITE_STATIC);
        bool submitted = sqlite3_step(sub) == SQLITE_ROW;
        sqlite3_reset(sub);
        if (!submitted && !t->drive) {
            uint32_t *ix = util_idmap_get(r->by_task, t->parent.b);
            char why[200];
            snprintf(why, sizeof why, "its replayed parent %s (%s) did not submit it again",
                     util_id_hex(&t->parent, hex), ix ? r->t[*ix - 1].fn : "?");
            t->why_not = strdup(why);
        }
    }
    /* checkpoints, by actor and call */
    for (size_t c = 0; c < r->nck; c++) {
        replay_ckpt_t *k = &r->ck[c];
        uint32_t *ix = util_idmap_get(r->by_actor, k->actor.b);
        if (!ix || !r->t[*ix - 1].created)
            continue;
        sqlite3_bind_blob(ck, 1, r->t[*ix - 1].new_actor.b, UTIL_ID_LEN, SQLITE_STATIC);
        sqlite3_bind_int64(ck, 2, k->idx);
        if (round == 0 && sqlite3_step(ck) == SQLITE_ROW && sqlite3_column_bytes(ck, 0) == 16) {
            k->found = true;
            memcpy(k->new_fp, sqlite3_column_blob(ck, 0), 16);
        }
        sqlite3_reset(ck);
    }
    sqlite3_finalize(cr);
    sqlite3_finalize(sub);
    sqlite3_finalize(st);
    sqlite3_finalize(ck);
    lux_hist_close(&h);
    return 0;
}

static void
s_destroy(replay_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->t[i].fn);
        free(r->t[i].name);
        free(r->t[i].body);
        free(r->t[i].why_not);
        free(r->t[i].ref_args);
    }
    free(r->t);
    free(r->ck);
    for (size_t k = 0; k < r->nrs; k++)
        free(r->rs[k].why_not);
    free(r->rs);
    sqlite3_finalize(r->put_st);
    util_idmap_destroy(&r->by_task);
    util_idmap_destroy(&r->by_actor);
    util_idmap_destroy(&r->objs);
    util_idmap_destroy(&r->put_ids);
    if (r->bad_puts)
        util_idmap_each(r->bad_puts, s_free_why, NULL);
    util_idmap_destroy(&r->bad_puts);
    lux_hist_close(&r->h);
}

int
cmd_replay(int argc, char **argv)
{
    const char *src = NULL, *job = NULL, *task = NULL, *blobs = NULL;
    bool verify = false, foreground = false;
    unsigned long workers = 2;
    static const struct option opts[] = {
        {"job", required_argument, 0, 'j'},   {"task", required_argument, 0, 't'},
        {"verify", no_argument, 0, 'v'},      {"workers", required_argument, 0, 'w'},
        {"blobs", required_argument, 0, 'b'}, {"foreground", no_argument, 0, 'f'},
        {0}};
    lux_opt_t p = {
        .cmd = "replay", .usage = s_usage, .opts = opts,
        .help = "Runs a recorded job again on a fresh embedded cluster, with the module bytes,\n"
                "arguments and puts the log and its blob store hold: its tasks, its actors\n"
                "(re-created, their calls made in the recorded order) and what they submitted.\n"
                "--verify compares each task's and call's outputs' fingerprint, and each\n"
                "checkpoint's, with the recorded one; a mismatch is replayed twice to tell a\n"
                "function that is not deterministic. What could not run (a put over\n"
                "record_puts, a blob missing or altered) is reported as not replayable.\n"
                "--task ID replays one task and what it depends on; --foreground then runs it\n"
                "again in this process (gdb-friendly). --blobs DIR: the recorded puts over\n"
                "2 KiB (default: RUN/blobs, or blobs/ beside OUT.db; a smaller one is in its\n"
                "event). Exit status 0 only when\n"
                "everything was replayed and, with --verify, matched. See lux(1).\n"};
    int o;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        switch (o) {
        case 'j':
            job = optarg;
            break;
        case 't':
            task = optarg;
            break;
        case 'v':
            verify = true;
            break;
        case 'f':
            foreground = true;
            break;
        case 'b':
            blobs = optarg;
            break;
        case 'w':
            if (!lux_opt_uint(&p, "--workers", 256, false, &workers))
                return 2;
            break;
        default:
            return p.status;
        }
    }
    if (!lux_opt_args(&p, argc, argv, 1, 1, "RUN or OUT.db"))
        return p.status;
    src = argv[optind];
    replay_t r = {.workers = (int) workers};
    util_id_t tid;
    if (job && (strlen(job) != 32 || util_id_parse(&r.job, job)))
        return lux_opt_usage(&p, "--job takes a job ID of 32 hex digits, not '%s'", job);
    if (task && (strlen(task) != 32 || util_id_parse(&tid, task)))
        return lux_opt_usage(&p, "--task takes a task ID of 32 hex digits, not '%s'", task);
    if (foreground && !task)
        return lux_opt_usage(&p, "--foreground runs one task: name it with --task ID");
    if (!(r.h = lux_hist_open(src)) || lux_hist_snapshot(r.h)) {
        lux_hist_close(&r.h); /* NULL when it did not open */
        return lux_fail("replay", "%s", lux_errmsg());
    }
    struct stat sb;
    if (blobs)
        snprintf(r.blobs, sizeof r.blobs, "%s", blobs);
    else if (stat(src, &sb) == 0 && S_ISDIR(sb.st_mode))
        snprintf(r.blobs, sizeof r.blobs, "%s/blobs", src);
    else {
        const char *slash = strrchr(src, '/');
        snprintf(r.blobs, sizeof r.blobs, "%.*sblobs", slash ? (int) (slash - src + 1) : 0, src);
    }
    int rc = 0, status = 1;
    char tmp[PATH_MAX] = "";
    sqlite3_stmt *st = NULL;
    char hex[UTIL_ID_HEX], hex2[UTIL_ID_HEX];

    if (!(r.by_task = util_idmap_new(sizeof(uint32_t))) ||
        !(r.by_actor = util_idmap_new(sizeof(uint32_t))) ||
        !(r.objs = util_idmap_new_keyed(LUX_REF_LEN, sizeof(lux_ref_t))) ||
        !(r.put_ids = util_idmap_new(1)) ||
        !(r.bad_puts = util_idmap_new_keyed(LUX_REF_LEN, sizeof(char *)))) {
        rc = util_err(LUX_ENOMEM, "out of memory");
        goto out;
    }
    /* the job */
    if (!job) {
        if (!(st = lux_hist_prepare(r.h, "SELECT job, count(*) OVER () FROM event WHERE"
                                          " kind = 1 ORDER BY ts LIMIT 1"))) {
            rc = LUX_ESQL;
            goto out;
        }
        if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_bytes(st, 0) != UTIL_ID_LEN) {
            rc = util_err(LUX_ENOTFOUND, "%s records no job", lux_hist_what(r.h));
            goto out;
        }
        if (sqlite3_column_int(st, 1) > 1) {
            rc = util_err(LUX_EINVAL, "%s records %d jobs: name one with --job (lux sql ... "
                          "\"SELECT job_id, entry FROM jobs\")", lux_hist_what(r.h),
                          sqlite3_column_int(st, 1));
            goto out;
        }
        memcpy(r.job.b, sqlite3_column_blob(st, 0), UTIL_ID_LEN);
        sqlite3_finalize(st);
        st = NULL;
    }
    /* the module, checked against its recorded hash */
    if (!(st = lux_hist_prepare(r.h, "SELECT body, fp, name FROM event WHERE kind = 3 AND"
                                      " job = ?1 ORDER BY shard, seq LIMIT 1"))) {
        rc = LUX_ESQL;
        goto out;
    }
    sqlite3_bind_blob(st, 1, r.job.b, UTIL_ID_LEN, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_bytes(st, 1) != 16 ||
        sqlite3_column_bytes(st, 0) == 0) {
        rc = util_err(LUX_ENOTFOUND, "job %s: no module bytes are recorded in %s",
                      util_id_hex(&r.job, hex), lux_hist_what(r.h));
        goto out;
    }
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/lux-replay-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmp)) {
        rc = util_err(LUX_EIO, "cannot make a directory for the replay in %s", tmp);
        tmp[0] = 0;
        goto out;
    }
    snprintf(r.mod, sizeof r.mod, "%s/module.so", tmp);
    snprintf(r.runs, sizeof r.runs, "%s/runs", tmp);
    if ((rc = util_write_file(r.mod, sqlite3_column_blob(st, 0),
                              (size_t) sqlite3_column_bytes(st, 0), 0700)))
        goto out;
    uint8_t *bytes, hash[16];
    size_t nb;
    if ((rc = exec_module_read(r.mod, &bytes, &nb, hash)))
        goto out;
    free(bytes);
    if (memcmp(hash, sqlite3_column_blob(st, 1), 16) != 0) {
        char rec[33];
        util_hex(hex, hash, 16);
        util_hex(rec, sqlite3_column_blob(st, 1), 16); /* not hex2: it takes the job's ID */
        rc = util_err(LUX_ECORRUPT, "job %s: the module bytes in the log hash to %s, not to the "
                      "recorded %s: they were altered", util_id_hex(&r.job, hex2), hex, rec);
        goto out;
    }
    printf("job %s: module %s, %zu bytes, its hash verified\n", util_id_hex(&r.job, hex),
           (const char *) sqlite3_column_text(st, 2), nb);
    sqlite3_finalize(st);
    st = NULL;
    if ((rc = replay_load(&r)))
        goto out;
    size_t focus = 0;
    if (task) {
        uint32_t *ix = util_idmap_get(r.by_task, tid.b);
        if (!ix || r.t[*ix - 1].kind == DB_K_actor_created) {
            rc = util_err(LUX_ENOTFOUND, "task %s is not a task or actor call of job %s", task,
                          hex);
            goto out;
        }
        focus = *ix - 1;
        if (!r.t[focus].drive) {
            rc = util_err(LUX_EINVAL, "task %s (%s) was submitted by task %s, not by the "
                          "driver: replay its parent with --task", task, r.t[focus].fn,
                          util_id_hex(&r.t[focus].parent, hex2));
            goto out;
        }
        if (foreground && r.t[focus].kind != DB_K_task_submitted) {
            rc = util_err(LUX_EINVAL, "--foreground runs a task, and %s is an actor call (%s): "
                          "its actor's state lives in its own process", task, r.t[focus].fn);
            goto out;
        }
        replay_want(&r, focus);
        if (foreground)
            r.fg = focus + 1;
    } else {
        for (size_t i = 0; i < r.n; i++)
            if (r.t[i].drive)
                r.t[i].want = true;
    }
    /* run; once more when something does not match, to tell the undeterministic */
    if ((rc = s_round(&r, 0)))
        goto out;
    size_t matched = 0, mismatched = 0, nondet = 0, skipped = 0, ran = 0, calls = 0,
           nested = 0, actors = 0, ck_match = 0, ck_bad = 0;
    for (size_t i = 0; i < r.n; i++) {
        replay_item_t *x = &r.t[i];
        x->verdict = V_NONE;
        if (!replay_in_scope(&r, i))
            continue;
        if (x->kind == DB_K_actor_created) {
            actors += x->created;
            if (x->top && !x->created && x->why_not)
                skipped++, x->verdict = V_NOT_RUN;
            continue;
        }
        if (x->why_not) {
            x->verdict = V_NOT_RUN;
            skipped++;
            continue;
        }
        ran++;
        calls += x->kind == DB_K_actor_call;
        nested += !x->top;
        x->verdict = s_same(x->outcome, x->fp, x->new_outcome[0], x->new_fp[0]) ? V_MATCH
                                                                                : V_MISMATCH;
    }
    for (size_t c = 0; c < r.nck; c++) {
        uint32_t *ix = util_idmap_get(r.by_actor, r.ck[c].actor.b);
        if (!ix || !replay_in_scope(&r, *ix - 1) || !r.t[*ix - 1].created)
            continue;
        if (r.ck[c].found && memcmp(r.ck[c].fp, r.ck[c].new_fp, 16) == 0)
            ck_match++;
        else
            ck_bad++;
    }
    bool any_bad = false;
    for (size_t i = 0; i < r.n; i++)
        any_bad |= r.t[i].verdict == V_MISMATCH;
    if (verify && any_bad) {
        if ((rc = s_round(&r, 1)))
            goto out;
        for (size_t i = 0; i < r.n; i++) {
            replay_item_t *x = &r.t[i];
            if (x->verdict == V_MISMATCH &&
                !s_same(x->new_outcome[0], x->new_fp[0], x->new_outcome[1], x->new_fp[1]))
                x->verdict = V_NONDET;
        }
    }
    for (size_t i = 0; i < r.n; i++) {
        replay_item_t *x = &r.t[i];
        matched += x->verdict == V_MATCH;
        mismatched += x->verdict == V_MISMATCH;
        nondet += x->verdict == V_NONDET;
        if (x->verdict == V_NOT_RUN) {
            printf("  not replayed  %s %s: %s\n", util_id_hex(&x->task, hex), x->fn,
                   x->why_not ? x->why_not : "?");
            continue;
        }
        if (!verify || (x->verdict != V_MISMATCH && x->verdict != V_NONDET))
            continue;
        char rf[33] = "-", nf[33] = "-", nf2[33] = "-";
        if (x->outcome == DB_K_task_finished)
            util_hex(rf, x->fp, 16);
        if (x->new_outcome[0] == DB_K_task_finished)
            util_hex(nf, x->new_fp[0], 16);
        if (x->new_outcome[1] == DB_K_task_finished)
            util_hex(nf2, x->new_fp[1], 16);
        if (x->verdict == V_NONDET) {
            printf("  NOT DETERMINISTIC %s %s%s: the same inputs gave %s %s and %s %s on two "
                   "replays (recorded %s %s)\n",
                   util_id_hex(&x->task, hex), x->fn, x->kind == DB_K_actor_call ? " (call)" : "",
                   s_outcome_name(x->new_outcome[0]), nf, s_outcome_name(x->new_outcome[1]),
                   nf2, s_outcome_name(x->outcome), rf);
            continue;
        }
        printf("  MISMATCH      %s %s%s (attempt %" PRId64 "): recorded %s %s, replayed %s %s",
               util_id_hex(&x->task, hex), x->fn, x->kind == DB_K_actor_call ? " (call)" : "",
               x->attempt, s_outcome_name(x->outcome), rf, s_outcome_name(x->new_outcome[0]), nf);
        for (uint32_t k = 0; k < x->nref_args; k++) {
            uint32_t *ix = util_idmap_get(r.by_task, x->ref_args + (size_t) k * LUX_REF_LEN);
            if (ix && (r.t[*ix - 1].verdict == V_MISMATCH || r.t[*ix - 1].verdict == V_NONDET)) {
                util_hex(rf, x->ref_args + (size_t) k * LUX_REF_LEN, 16);
                printf("; its input from task %s (%s) differs", rf, r.t[*ix - 1].fn);
                break;
            }
        }
        printf("\n");
    }
    for (size_t c = 0; verify && c < r.nck; c++) {
        uint32_t *ix = util_idmap_get(r.by_actor, r.ck[c].actor.b);
        if (!ix || !replay_in_scope(&r, *ix - 1) || !r.t[*ix - 1].created ||
            (r.ck[c].found && memcmp(r.ck[c].fp, r.ck[c].new_fp, 16) == 0))
            continue;
        char rf[33], nf[33] = "none";
        util_hex(rf, r.ck[c].fp, 16);
        if (r.ck[c].found)
            util_hex(nf, r.ck[c].new_fp, 16);
        printf("  CHECKPOINT MISMATCH actor %s (%s) after call %" PRId64 ": recorded state %s, "
               "replayed %s\n", util_id_hex(&r.ck[c].actor, hex), r.t[*ix - 1].fn, r.ck[c].idx,
               rf, nf);
    }
    size_t rs_done = 0, rs_bad = 0;
    for (size_t k = 0; k < r.nrs; k++) {
        replay_restart_t *x = &r.rs[k];
        uint32_t *ix = util_idmap_get(r.by_actor, x->actor.b);
        rs_done += x->done;
        rs_bad += x->why_not != NULL;
        if (x->done)
            printf("  restarted     actor %s (%s): its process %d killed after call %" PRId64
                   " (recorded: restarted from the checkpoint of call %" PRId64 ")\n",
                   util_id_hex(&x->actor, hex), ix ? r.t[*ix - 1].fn : "?", (int) x->pid,
                   x->after, x->ckpt);
        else if (x->why_not)
            printf("  restart not re-enacted  actor %s (%s) after call %" PRId64 ": %s\n",
                   util_id_hex(&x->actor, hex), ix ? r.t[*ix - 1].fn : "?", x->after,
                   x->why_not);
    }
    printf("replayed %zu tasks of job %s%s (%zu actor calls, %zu nested): ", ran,
           util_id_hex(&r.job, hex2), task ? " (--task)" : "", calls, nested);
    if (verify)
        printf("%zu matched, %zu mismatched, %zu not deterministic, ", matched, mismatched,
               nondet);
    printf("%zu not replayable; %zu actors re-created", skipped, actors);
    if (verify)
        printf(", %zu of %zu checkpoints matched", ck_match, ck_match + ck_bad);
    printf("; %zu of %zu recorded actor restarts re-enacted (the actor's process killed with "
           "SIGKILL after the same call); %zu recorded puts (%" PRIu64 " bytes) read from %s "
           "and %zu (%" PRIu64 " bytes) from their events, their hashes verified\n"
           "the replay's log: %s\n",
           rs_done, rs_done + rs_bad, r.puts, r.put_bytes, r.blobs, r.ev_puts, r.ev_put_bytes,
           r.newdir[0]);
    if (r.newdir[1][0])
        printf("the second replay's log: %s\n", r.newdir[1]);
    status = (ran > 0 && skipped == 0 && rs_bad == 0 &&
              (!verify || (mismatched == 0 && nondet == 0 && ck_bad == 0)))
                 ? 0
                 : 1;
    if (r.fg && r.fg_status < 0) {
        rc = r.fg_status;
        goto out;
    }
    if (r.fg && r.fg_status)
        status = 1;
out:
    sqlite3_finalize(st);
    if (tmp[0])
        unlink(r.mod);
    s_destroy(&r);
    return rc ? lux_fail("replay", "%s", lux_errmsg()) : status;
}
