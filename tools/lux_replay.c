/*  lux_replay - `lux replay RUN|OUT.db [--job ID] [--task ID] [--verify]`:
    run a recorded job's tasks again and compare what they make with what
    the log says they made.

    What it takes from the log: the job's module bytes (its
    module_registered event, whose hash is checked against the one the
    log recorded before anything runs), and each task's submission (its
    function, returns and the body of arguments: values inline, refs by
    object ID). It starts a fresh embedded cluster on that module (in a
    private directory, kept and named at the end) and submits, in log
    order, the tasks the driver submitted (nested tasks are submitted again
    by their replayed parents, and are not compared); a ref argument is the
    replayed output of the task that made it, or a put: its bytes come from
    the blob store beside the log (exec_blob.h), their fingerprint checked
    against the one its object_put event recorded, and are put once on the
    replay's cluster. A task whose put was not recorded (over the cluster's
    record_puts), whose blob is missing or altered, or whose argument is
    the output of a task not replayed, cannot run: it is reported with the
    reason, never skipped in silence. Actor calls are not replayed
    (counted).

    --verify compares each replayed task's outcome in the new log with the
    recorded one: finished with the same fingerprint of its outputs (the
    task_finished event's fp: a hash of every output's fingerprint), or
    failed both times. A mismatch names the task, its function and
    attempt, and the first argument that came from a mismatched task when
    there is one. Exit status 0 only when every task of the job was
    replayed and, with --verify, matched.

    --task ID replays that task and the driver's tasks it depends on.
*/
#include "lux_cmd.h"
#include "lux_hist.h"
#include "lux_opt.h"
#include "lux.h"
#include "db/db_event.h"
#include "db/db_query.h"
#include "exec/exec_blob.h"
#include "exec/exec_module.h"
#include "exec/exec_proto.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_hash.h"
#include "util/util_idmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char s_usage[] =
    "lux replay RUN|OUT.db [--job ID] [--task ID] [--verify] [--workers N] [--blobs DIR]";

#define S_WAIT_MS 120000

typedef struct {
    util_id_t task;
    char *fn;
    uint8_t *body;
    uint32_t body_len;
    uint8_t nret;
    bool top;            /* submitted by the driver */
    bool want;           /* to replay (all, or --task's closure) */
    int64_t attempt;     /* recorded: the last attempt */
    int outcome;         /* recorded: task_finished, task_failed, 0 */
    uint8_t fp[16];      /* recorded fp of task_finished */
    /* the replay */
    bool ran;
    char *why_not;       /* not replayed: why */
    lux_ref_t refs[8];   /* its new refs (up to 8 returns) */
    int new_outcome;
    uint8_t new_fp[16];
    bool mismatch;
    char *first_bad;     /* the first argument from a mismatched task */
    uint8_t *ref_args;   /* the object IDs of its ref arguments, 20 each */
    uint32_t nref_args;
} s_task_t;

typedef struct {
    lux_hist_t *h;
    util_id_t job;
    s_task_t *t;
    size_t n;
    util_idmap_t *by_task; /* task -> index + 1 */
    int64_t calls;         /* actor calls of the job, not replayed */
    char blobs[PATH_MAX];  /* the recorded puts (exec_blob.h) */
    size_t puts;           /* recorded puts read back, their hash checked */
    uint64_t put_bytes;
    sqlite3_stmt *put_st;  /* a put's object_put event */
    util_idmap_t *bad_puts; /* object ID -> char * why it could not be read (once each) */
} s_replay_t;

static int
s_free_why(void *arg, const void *key, void *value)
{
    (void) arg, (void) key;
    free(*(char **) value);
    return 0;
}

/* The replay's copy of put obj (an object ID of the log), from the blob
   store: its object_put event gives its size and fingerprint, the blob its
   bytes (their hash checked). 0 with *out set, or an error with why[n]
   saying what is missing or wrong. */
static int
s_put(s_replay_t *r, lux_t *lx, const uint8_t *obj, lux_ref_t *out, char *why, size_t n)
{
    char hex[2 * LUX_REF_LEN + 1];
    char **known = r->bad_puts ? util_idmap_get(r->bad_puts, obj) : NULL;
    if (known) { /* tried before, for another task */
        snprintf(why, n, "%s", *known);
        return LUX_ENOTFOUND;
    }
    util_hex(hex, obj, LUX_REF_LEN);
    if (!r->put_st &&
        !(r->put_st = lux_hist_prepare(r->h, "SELECT size, fp, info FROM event WHERE kind = 8"
                                             " AND task = ?1 AND idx = ?2 LIMIT 1"))) {
        snprintf(why, n, "object %s: %s", hex, lux_errmsg());
        return LUX_ESQL;
    }
    sqlite3_stmt *st = r->put_st;
    sqlite3_reset(st);
    sqlite3_bind_blob(st, 1, obj, UTIL_ID_LEN, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (int64_t) obj[16] << 24 | obj[17] << 16 | obj[18] << 8 | obj[19]);
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_bytes(st, 1) != 16) {
        snprintf(why, n, "object %s is neither a put nor a task's output in this log (another "
                 "job's?)", hex);
        return LUX_ENOTFOUND;
    }
    int64_t size = sqlite3_column_int64(st, 0);
    uint8_t fp[16];
    memcpy(fp, sqlite3_column_blob(st, 1), 16);
    const char *info = (const char *) sqlite3_column_text(st, 2);
    uint8_t *bytes = NULL;
    int rc = exec_blob_read(r->blobs, fp, (size_t) size, &bytes);
    if (rc == LUX_ENOTFOUND && info && strncmp(info, "not recorded", 12) == 0)
        snprintf(why, n, "put %s (%" PRId64 " bytes): %s", hex, size, info);
    else if (rc == LUX_ENOTFOUND)
        snprintf(why, n, "put %s (%" PRId64 " bytes): %s", hex, size, lux_errmsg());
    else if (rc)
        snprintf(why, n, "put %s (%" PRId64 " bytes): %s", hex, size, lux_errmsg());
    else if ((rc = lux_put(lx, bytes, (size_t) size, out)))
        snprintf(why, n, "put %s (%" PRId64 " bytes): lux_put: %s", hex, size, lux_errmsg());
    else {
        r->puts++;
        r->put_bytes += (uint64_t) size;
    }
    free(bytes);
    if (rc && r->bad_puts && (known = util_idmap_put(r->bad_puts, obj, NULL)))
        *known = strdup(why);
    return rc;
}

static int
s_load(s_replay_t *r)
{
    sqlite3_stmt *st = lux_hist_prepare(
        r->h, "SELECT task, parent, name, idx, body FROM event WHERE kind = 4 AND job = ?1"
              " ORDER BY ts, shard, seq");
    if (!st)
        return LUX_ESQL;
    sqlite3_bind_blob(st, 1, r->job.b, UTIL_ID_LEN, SQLITE_STATIC);
    size_t cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_bytes(st, 0) != UTIL_ID_LEN)
            continue;
        if (r->n == cap) {
            cap = cap ? 2 * cap : 64;
            s_task_t *p = realloc(r->t, cap * sizeof *p);
            if (!p) {
                rc = util_err(LUX_ENOMEM, "out of memory");
                break;
            }
            r->t = p;
        }
        s_task_t *t = &r->t[r->n];
        memset(t, 0, sizeof *t);
        memcpy(t->task.b, sqlite3_column_blob(st, 0), UTIL_ID_LEN);
        const char *fn = (const char *) sqlite3_column_text(st, 2);
        t->fn = strdup(fn ? fn : "");
        t->nret = (uint8_t) sqlite3_column_int(st, 3);
        t->body_len = (uint32_t) sqlite3_column_bytes(st, 4);
        if (t->body_len && (t->body = malloc(t->body_len)))
            memcpy(t->body, sqlite3_column_blob(st, 4), t->body_len);
        /* parent: a task of this job, or the driver */
        t->top = true;
        if (sqlite3_column_bytes(st, 1) == UTIL_ID_LEN &&
            util_idmap_get(r->by_task, sqlite3_column_blob(st, 1)))
            t->top = false;
        uint32_t *ix = util_idmap_put(r->by_task, t->task.b, NULL);
        if (ix)
            *ix = (uint32_t) ++r->n;
    }
    sqlite3_finalize(st);
    if (rc)
        return rc;
    /* recorded outcomes */
    st = lux_hist_prepare(r->h, "SELECT kind, attempt, fp FROM event WHERE task = ?1 AND"
                                " kind IN (5, 6) ORDER BY shard, seq");
    if (!st)
        return LUX_ESQL;
    for (size_t i = 0; i < r->n; i++) {
        sqlite3_bind_blob(st, 1, r->t[i].task.b, UTIL_ID_LEN, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            r->t[i].outcome = sqlite3_column_int(st, 0);
            r->t[i].attempt = sqlite3_column_int64(st, 1);
            if (sqlite3_column_bytes(st, 2) == 16)
                memcpy(r->t[i].fp, sqlite3_column_blob(st, 2), 16);
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    st = lux_hist_prepare(r->h, "SELECT count(*) FROM event WHERE kind = 12 AND job = ?1");
    if (st) {
        sqlite3_bind_blob(st, 1, r->job.b, UTIL_ID_LEN, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            r->calls = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return 0;
}

/* Mark task i and the driver's tasks it depends on as wanted. */
static void
s_want(s_replay_t *r, size_t i)
{
    s_task_t *t = &r->t[i];
    if (t->want)
        return;
    t->want = true;
    exec_spec_t s;
    if (!t->body || exec_spec_from_body(&s, t->body, t->body_len))
        return;
    util_rd_t rd;
    exec_arg_t a;
    util_rd_init(&rd, s.args, s.args_len);
    while (exec_arg_next(&rd, &a)) {
        if (a.kind != EXEC_ARG_REF)
            continue;
        uint32_t *ix = util_idmap_get(r->by_task, a.ref.b);
        if (ix && r->t[*ix - 1].top)
            s_want(r, *ix - 1);
    }
}

/* Submit task t on lx; outputs of replayed tasks by old object ID in objs. */
static void
s_submit(s_replay_t *r, lux_t *lx, s_task_t *t, util_idmap_t *objs)
{
    exec_spec_t s;
    char why[300], hex[2 * LUX_REF_LEN + 1];
    if (!t->body || exec_spec_from_body(&s, t->body, t->body_len)) {
        t->why_not = strdup("its recorded submission does not decode");
        return;
    }
    if (t->nret > 8) {
        t->why_not = strdup("more than 8 returns");
        return;
    }
    lux_arg_t *args = calloc(s.argc + 1u, sizeof *args);
    lux_ref_t *refs = calloc(s.argc + 1u, sizeof *refs);
    t->ref_args = malloc((size_t) (s.argc + 1u) * LUX_REF_LEN);
    util_rd_t rd;
    exec_arg_t a;
    int n = 0;
    util_rd_init(&rd, s.args, s.args_len);
    why[0] = 0;
    while (args && refs && t->ref_args && n < s.argc && exec_arg_next(&rd, &a)) {
        if (a.kind == EXEC_ARG_REF) {
            lux_ref_t *nr = util_idmap_get(objs, a.ref.b);
            memcpy(t->ref_args + (size_t) t->nref_args++ * LUX_REF_LEN, a.ref.b, LUX_REF_LEN);
            if (!nr && !util_idmap_get(r->by_task, a.ref.b)) {
                /* a put: its recorded bytes, put once for every task that reads it */
                char pw[512] = "out of memory";
                lux_ref_t pr;
                if (s_put(r, lx, a.ref.b, &pr, pw, sizeof pw) == 0 &&
                    (nr = util_idmap_put(objs, a.ref.b, NULL)))
                    *nr = pr;
                else if (!nr) {
                    snprintf(why, sizeof why, "argument %d: %s", n, pw);
                    break;
                }
            }
            if (!nr) {
                util_hex(hex, a.ref.b, LUX_REF_LEN);
                snprintf(why, sizeof why, "argument %d is object %s, from a task that was "
                         "not replayed", n, hex);
                break;
            }
            refs[n] = *nr;
            args[n] = LUX_REF(refs[n]);
        } else {
            args[n] = LUX_VAL(a.data, a.size);
        }
        n++;
    }
    if (!why[0] && n != s.argc)
        snprintf(why, sizeof why, "its recorded arguments do not decode");
    if (!why[0]) {
        char res[256];
        snprintf(res, sizeof res, "%.*s", (int) s.res_len, s.res ? s.res : "");
        lux_opts_t o = {.cpus = s.cpus_milli / 1000.0, .resources = res[0] ? res : NULL,
                        .max_attempts = s.max_attempts};
        if (lux_call_opts(lx, &o, t->fn, n, args, t->nret, t->refs))
            snprintf(why, sizeof why, "lux_call refused it: %s", lux_errmsg());
        else {
            t->ran = true;
            for (uint8_t i = 0; i < t->nret; i++) {
                uint8_t obj[LUX_REF_LEN];
                memcpy(obj, t->task.b, UTIL_ID_LEN);
                obj[16] = obj[17] = obj[18] = 0;
                obj[19] = i;
                lux_ref_t *slot = util_idmap_put(objs, obj, NULL);
                if (slot)
                    *slot = t->refs[i];
            }
        }
    }
    if (why[0])
        t->why_not = strdup(why);
    free(args);
    free(refs);
}

/* The replayed outcomes, from the new run's log. */
static int
s_outcomes(s_replay_t *r, const char *dir)
{
    db_cluster_t c;
    db_query_t *q;
    sqlite3_stmt *st;
    if (db_cluster_load(&c, dir) || !(q = db_query_open(&c)))
        return util_err_ctx(LUX_EIO, "the replay's log in %s", dir);
    if (db_query_prepare(q, "SELECT kind, fp FROM event WHERE task = ?1 AND kind IN (5, 6)"
                            " ORDER BY shard, seq", &st, NULL)) {
        db_query_close(&q);
        return LUX_ESQL;
    }
    for (size_t i = 0; i < r->n; i++) {
        s_task_t *t = &r->t[i];
        if (!t->ran)
            continue;
        sqlite3_bind_blob(st, 1, t->refs[0].b, UTIL_ID_LEN, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            t->new_outcome = sqlite3_column_int(st, 0);
            if (sqlite3_column_bytes(st, 1) == 16)
                memcpy(t->new_fp, sqlite3_column_blob(st, 1), 16);
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    db_query_close(&q);
    return 0;
}

int
cmd_replay(int argc, char **argv)
{
    const char *src = NULL, *job = NULL, *task = NULL, *blobs = NULL;
    bool verify = false;
    unsigned long workers = 2;
    static const struct option opts[] = {
        {"job", required_argument, 0, 'j'},   {"task", required_argument, 0, 't'},
        {"verify", no_argument, 0, 'v'},      {"workers", required_argument, 0, 'w'},
        {"blobs", required_argument, 0, 'b'}, {0}};
    lux_opt_t p = {
        .cmd = "replay", .usage = s_usage, .opts = opts,
        .help = "Runs a recorded job's tasks again on a fresh embedded cluster, with the module\n"
                "bytes, arguments and puts the log and its blob store hold; --verify compares\n"
                "each task's outputs' fingerprint with the recorded one. A task whose inputs\n"
                "were not recorded (a put over record_puts) is reported as not replayable.\n"
                "--blobs DIR: the recorded puts (default: RUN/blobs, or blobs/ beside OUT.db).\n"
                "Exit status 0 only when every task was replayed and, with --verify, matched.\n"
                "See lux(1).\n"};
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
    s_replay_t r = {0};
    util_id_t tid;
    if (job && (strlen(job) != 32 || util_id_parse(&r.job, job)))
        return lux_opt_usage(&p, "--job takes a job ID of 32 hex digits, not '%s'",
                         job);
    if (task && (strlen(task) != 32 || util_id_parse(&tid, task)))
        return lux_opt_usage(&p, "--task takes a task ID of 32 hex digits, not '%s'",
                         task);
    if (!(r.h = lux_hist_open(src)))
        return lux_fail("replay", "%s", lux_errmsg());
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
    char tmp[PATH_MAX] = "", mod[PATH_MAX + 16], runs[PATH_MAX + 16], newdir[PATH_MAX] = "";
    lux_t *lx = NULL;
    util_idmap_t *objs = NULL;
    sqlite3_stmt *st = NULL;
    char hex[UTIL_ID_HEX], hex2[UTIL_ID_HEX];

    if (!(r.by_task = util_idmap_new(sizeof(uint32_t))) ||
        !(objs = util_idmap_new_keyed(LUX_REF_LEN, sizeof(lux_ref_t))) ||
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
    snprintf(mod, sizeof mod, "%s/module.so", tmp);
    snprintf(runs, sizeof runs, "%s/runs", tmp);
    if ((rc = util_write_file(mod, sqlite3_column_blob(st, 0),
                              (size_t) sqlite3_column_bytes(st, 0), 0700)))
        goto out;
    uint8_t *bytes, hash[16];
    size_t nb;
    if ((rc = exec_module_read(mod, &bytes, &nb, hash)))
        goto out;
    free(bytes);
    if (memcmp(hash, sqlite3_column_blob(st, 1), 16) != 0) {
        util_hex(hex, hash, 16);
        util_hex(hex2, sqlite3_column_blob(st, 1), 16);
        rc = util_err(LUX_ECORRUPT, "job %s: the module bytes in the log hash to %s, not to the "
                      "recorded %s: they were altered", util_id_hex(&r.job, hex2), hex, hex2);
        goto out;
    }
    printf("job %s: module %s, %zu bytes, its hash verified\n", util_id_hex(&r.job, hex),
           (const char *) sqlite3_column_text(st, 2), nb);
    sqlite3_finalize(st);
    st = NULL;
    if ((rc = s_load(&r)))
        goto out;
    if (task) {
        uint32_t *ix = util_idmap_get(r.by_task, tid.b);
        if (!ix) {
            rc = util_err(LUX_ENOTFOUND, "task %s is not a task of job %s", task, hex);
            goto out;
        }
        s_want(&r, *ix - 1);
        r.t[*ix - 1].top = true;
    } else {
        for (size_t i = 0; i < r.n; i++)
            if (r.t[i].top)
                r.t[i].want = true;
    }
    /* run */
    lux_config_t cfg = {.module = mod, .dir = runs, .workers = (int) workers};
    if (!(lx = lux_init(&cfg))) {
        rc = LUX_EIO;
        goto out;
    }
    size_t ran = 0, skipped = 0, nested = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (!r.t[i].want) {
            nested += !r.t[i].top;
            continue;
        }
        s_submit(&r, lx, &r.t[i], objs);
        ran += r.t[i].ran;
        skipped += !r.t[i].ran;
    }
    for (size_t i = 0; i < r.n; i++) {
        lux_val_t v;
        for (uint8_t k = 0; r.t[i].ran && k < r.t[i].nret; k++)
            lux_get(lx, &r.t[i].refs[k], &v, S_WAIT_MS); /* a failure is an outcome too */
    }
    snprintf(newdir, sizeof newdir, "%s", lux_dir(lx));
    lux_shutdown(&lx);
    if ((rc = s_outcomes(&r, newdir)))
        goto out;
    /* compare */
    size_t matched = 0, mismatched = 0;
    for (size_t i = 0; i < r.n; i++) {
        s_task_t *x = &r.t[i];
        if (!x->ran)
            continue;
        bool same = x->outcome == x->new_outcome &&
                    (x->outcome != DB_K_task_finished || memcmp(x->fp, x->new_fp, 16) == 0);
        if (same) {
            matched++;
            continue;
        }
        x->mismatch = true;
        mismatched++;
    }
    for (size_t i = 0; i < r.n; i++) {
        s_task_t *x = &r.t[i];
        if (x->why_not) {
            printf("  not replayed  %s %s: %s\n", util_id_hex(&x->task, hex), x->fn, x->why_not);
            continue;
        }
        if (!verify || !x->mismatch)
            continue;
        char rf[33] = "-", nf[33] = "-";
        if (x->outcome == DB_K_task_finished)
            util_hex(rf, x->fp, 16);
        if (x->new_outcome == DB_K_task_finished)
            util_hex(nf, x->new_fp, 16);
        printf("  MISMATCH      %s %s (attempt %" PRId64 "): recorded %s %s, replayed %s %s",
               util_id_hex(&x->task, hex), x->fn, x->attempt,
               x->outcome == DB_K_task_finished ? "finished" : x->outcome ? "failed" : "pending",
               rf, x->new_outcome == DB_K_task_finished ? "finished" : "failed", nf);
        for (uint32_t k = 0; k < x->nref_args; k++) {
            uint32_t *ix = util_idmap_get(r.by_task, x->ref_args + (size_t) k * LUX_REF_LEN);
            if (ix && r.t[*ix - 1].mismatch) {
                util_hex(rf, x->ref_args + (size_t) k * LUX_REF_LEN, 16);
                printf("; its input from task %s (%s) differs", rf, r.t[*ix - 1].fn);
                break;
            }
        }
        printf("\n");
    }
    printf("replayed %zu task%s of job %s%s: ", ran, ran == 1 ? "" : "s",
           util_id_hex(&r.job, hex2), task ? " (--task)" : "");
    if (verify)
        printf("%zu matched, %zu mismatched, ", matched, mismatched);
    printf("%zu not replayable; %zu recorded puts (%" PRIu64 " bytes) read from %s, "
           "their hashes verified; %zu nested tasks ran again under their parents, not compared; "
           "%" PRId64 " actor calls not replayed\nthe replay's log: %s\n",
           skipped, r.puts, r.put_bytes, r.blobs, nested, r.calls, newdir);
    status = (ran > 0 && skipped == 0 && (!verify || mismatched == 0)) ? 0 : 1;
out:
    sqlite3_finalize(st);
    sqlite3_finalize(r.put_st);
    if (lx)
        lux_shutdown(&lx);
    for (size_t i = 0; i < r.n; i++) {
        free(r.t[i].fn);
        free(r.t[i].body);
        free(r.t[i].why_not);
        free(r.t[i].first_bad);
        free(r.t[i].ref_args);
    }
    free(r.t);
    util_idmap_destroy(&r.by_task);
    util_idmap_destroy(&objs);
    if (r.bad_puts)
        util_idmap_each(r.bad_puts, s_free_why, NULL);
    util_idmap_destroy(&r.bad_puts);
    lux_hist_close(&r.h);
    if (tmp[0])
        unlink(mod);
    return rc ? lux_fail("replay", "%s", lux_errmsg()) : status;
}
