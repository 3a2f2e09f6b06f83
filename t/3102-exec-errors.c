/* 3102-exec-errors: tasks that crash their workers, and what a user can
   get wrong. Each is a clear error (its message names what failed and
   why) and nothing else is lost: tasks submitted before and after it give
   the right results.
   - a task that always kills its worker (t_crash) fails after its
     attempts (3 by default; 1 and 5 asked per task); lux_get returns its
     error, tasks around it succeed, and tasks downstream of it fail with
     its error; the log says which tasks were retried and why;
   - an unknown function, a wrong number of arguments or of returns;
   - a module that does not exist, a directory, a text file, a .so
     without Lux functions;
   - a ref that was never created: lux_get, lux_wait, and as an argument,
     also one naming a real task but a return it does not have;
   - an object larger than the store: lux_put, and lux_set_alloc inside a
     task. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "db/db_query.h"
#include "util/util_err.h"

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M GRAPH_M
#define STORE (8u << 20)

/* Good tasks, and what they must give. */
typedef struct {
    lux_ref_t ref;
    int64_t want;
} s_good_t;

static s_good_t s_good[512];
static int s_ngood;

/* n good tasks: t_mix over a value, every other one also over the
   previous good task's output (a ref). */
static void
s_submit_good(lux_t *lx, int n)
{
    for (int i = 0; i < n && s_ngood < 512; i++) {
        s_good_t *x = &s_good[s_ngood];
        int64_t v = s_ngood * 7919 % M;
        int rc;
        if (s_ngood > 0 && i % 2) {
            s_good_t *p = &s_good[s_ngood - 1];
            rc = lux_call(lx, "t_mix", 2, (lux_arg_t[]) {LUX_VAL(&v, 8), LUX_REF(p->ref)}, 1,
                          &x->ref);
            x->want = ((v + p->want) % M * 3 + 1) % M;
        } else {
            rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&v, 8)}, 1, &x->ref);
            x->want = (v * 3 + 1) % M;
        }
        if (rc)
            bail("submitting a good task: %s", lux_errmsg());
        s_ngood++;
    }
}

/* Every good task so far gives its value: the number that do not. */
static int
s_check_good(lux_t *lx)
{
    int bad = 0;
    for (int i = 0; i < s_ngood; i++) {
        lux_val_t v;
        int64_t got = -1;
        int rc = lux_get(lx, &s_good[i].ref, &v, 60000);
        if (!rc && v.size == 8)
            memcpy(&got, v.data, 8);
        if (rc || got != s_good[i].want) {
            if (!bad++)
                diag("good task %d: %s, got %lld, want %lld", i, rc ? lux_errmsg() : "wrong",
                     (long long) got, (long long) s_good[i].want);
        }
    }
    return bad;
}

/* ok() that got contains each of the NULL-terminated patterns. */
static bool
s_like(const char *got, const char *what, ...)
{
    va_list ap;
    const char *pat;
    bool all = true;
    va_start(ap, what);
    while ((pat = va_arg(ap, const char *)))
        if (!strstr(got, pat)) {
            if (all)
                diag("  got: %s", got);
            diag("  missing: %s", pat);
            all = false;
        }
    va_end(ap);
    return ok(all, "%s", what);
}

/* The task part of a ref, in hex (32 digits). */
static char *
s_task_hex(const lux_ref_t *ref, char *out)
{
    char hex[LUX_REF_LEN * 2 + 1];
    lux_ref_hex(ref, hex);
    snprintf(out, 33, "%.32s", hex);
    return out;
}

/* lux_get that must fail with code; its message into msg. */
static void
s_get_fails(lux_t *lx, const lux_ref_t *ref, int code, char *msg, size_t n, const char *what)
{
    lux_val_t v;
    int rc = lux_get(lx, ref, &v, 20000);
    snprintf(msg, n, "%s", rc ? lux_errmsg() : "(no error)");
    if (!is_int(rc, code, "%s: lux_get returns %s", what, lux_strerror(code)))
        diag("  %s", msg);
}

/* --- a task that always crashes its worker --------------------------------------------------- */

static lux_ref_t s_crash[3], s_down1, s_down2[2];
static const int s_crash_attempts[3] = {3, 1, 5};

static void
s_crashes(lux_t *lx)
{
    char msg[1200], hex[33], what[128];
    int64_t five = 5;
    s_submit_good(lx, 30);
    ok(lux_call(lx, "t_crash", 0, NULL, 1, &s_crash[0]) == 0, "submit t_crash (3 attempts)");
    s_submit_good(lx, 30);
    lux_opts_t one = {.max_attempts = 1}, five_at = {.max_attempts = 5};
    ok(lux_call_opts(lx, &one, "t_crash", 0, NULL, 1, &s_crash[1]) == 0,
       "submit t_crash with max_attempts 1");
    s_submit_good(lx, 30);
    ok(lux_call_opts(lx, &five_at, "t_crash", 0, NULL, 1, &s_crash[2]) == 0,
       "submit t_crash with max_attempts 5");
    /* downstream: directly, and through another task (two returns) */
    ok(lux_call(lx, "t_mix", 2, (lux_arg_t[]) {LUX_VAL(&five, 8), LUX_REF(s_crash[0])}, 1,
                &s_down1) == 0 &&
           lux_call(lx, "t_split", 2, (lux_arg_t[]) {LUX_REF(s_down1), LUX_VAL(&five, 8)}, 2,
                    s_down2) == 0,
       "submit tasks downstream of the first t_crash");
    s_submit_good(lx, 30);

    for (int i = 0; i < 3; i++) {
        snprintf(what, sizeof what, "t_crash with %d attempt%s", s_crash_attempts[i],
                 s_crash_attempts[i] == 1 ? "" : "s");
        s_get_fails(lx, &s_crash[i], LUX_ETASK, msg, sizeof msg, what);
        char n[32];
        snprintf(n, sizeof n, "%d attempt", s_crash_attempts[i]);
        s_like(msg, "  its message names the task, its function and how it died",
               s_task_hex(&s_crash[i], hex), "(t_crash)", "worker died", "signal 9", n, NULL);
    }
    s_get_fails(lx, &s_down1, LUX_ETASK, msg, sizeof msg, "a task downstream of t_crash");
    s_like(msg, "  its message names the t_crash task it failed with",
           s_task_hex(&s_crash[0], hex), "(t_crash)", "worker died", NULL);
    s_get_fails(lx, &s_down2[1], LUX_ETASK, msg, sizeof msg, "a task two steps downstream");
    s_like(msg, "  its message names the t_crash task too", s_task_hex(&s_crash[0], hex),
           "(t_crash)", NULL);
    is_int(s_check_good(lx), 0, "the %d good tasks around them give the right values",
           s_ngood);
}

/* --- bad input ------------------------------------------------------------------------------- */

static void
s_bad_calls(lux_t *lx)
{
    char msg[1200], hex[LUX_REF_LEN * 2 + 1];
    lux_ref_t r[2], fake, fake_idx, bad_arg;
    lux_val_t v;
    int64_t one = 1;
    int rc;

    s_submit_good(lx, 20);
    rc = lux_call(lx, "t_nope", 0, NULL, 1, r);
    is_int(rc, LUX_ENOTFOUND, "an unknown function: LUX_ENOTFOUND");
    s_like(lux_errmsg(), "  naming the function", "t_nope", "no function", NULL);
    rc = lux_call(lx, "t_split", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 2, r);
    is_int(rc, LUX_EINVAL, "too few arguments: LUX_EINVAL");
    s_like(lux_errmsg(), "  saying how many it takes", "t_split", "takes 2 arguments", "not 1",
           NULL);
    rc = lux_call(lx, "t_crash", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, r);
    is_int(rc, LUX_EINVAL, "too many arguments: LUX_EINVAL");
    s_like(lux_errmsg(), "  saying how many it takes", "t_crash", "takes 0 arguments", NULL);
    rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 2, r);
    is_int(rc, LUX_EINVAL, "a wrong number of returns: LUX_EINVAL");
    s_like(lux_errmsg(), "  saying how many it returns", "t_mix", "returns 1", "not 2", NULL);
    s_submit_good(lx, 20);

    /* refs never created */
    lux_ref_parse(&fake, "0123456789abcdef0123456789abcdef00000000");
    s_get_fails(lx, &fake, LUX_ENOTFOUND, msg, sizeof msg, "a made-up ref");
    s_like(msg, "  its message names it and says it was never created",
           lux_ref_hex(&fake, hex), "never created", NULL);
    int ready = 0;
    is_int(lux_wait(lx, 1, &fake, 1, 20000, &ready), 1, "lux_wait on it returns at once");
    fake_idx = s_good[0].ref;
    fake_idx.b[LUX_REF_LEN - 1] = 7; /* t_mix has one return: index 7 was never made */
    s_get_fails(lx, &fake_idx, LUX_ENOTFOUND, msg, sizeof msg,
                "a ref naming a real task but a return it does not have");
    s_like(msg, "  its message names it", lux_ref_hex(&fake_idx, hex), "never created", NULL);
    /* refs may come from other clients: the node finds it out, and the
       task fails (lux.h) */
    rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(fake)}, 1, &bad_arg);
    is_int(rc, 0, "a call given a made-up ref is submitted");
    s_get_fails(lx, &bad_arg, LUX_ETASK, msg, sizeof msg, "  and fails");
    s_like(msg, "  its message names the ref", lux_ref_hex(&fake, hex), "never created", NULL);
    s_submit_good(lx, 20);

    /* objects larger than the store */
    size_t big = STORE + 4096;
    char *p = calloc(1, big);
    rc = lux_put(lx, p, big, r);
    free(p);
    is_int(rc, LUX_EFULL, "lux_put of more than the store: LUX_EFULL");
    s_like(lux_errmsg(), "  saying how large each is", "lux_put of 8392704 bytes",
           "larger than the object store (8388608 bytes)", NULL);
    int64_t seed = 3, size = STORE + 1;
    rc = lux_call(lx, "t_big", 2, (lux_arg_t[]) {LUX_VAL(&seed, 8), LUX_VAL(&size, 8)}, 1, r);
    is_int(rc, 0, "submit a task that asks lux_set_alloc for more than the store");
    s_get_fails(lx, r, LUX_ETASK, msg, sizeof msg, "  it fails");
    s_like(msg, "  saying why", "(t_big)", "no room for 8388609 bytes",
           "larger than the object store", NULL);
    /* one that fits still does */
    size = STORE / 2;
    rc = lux_call(lx, "t_big", 2, (lux_arg_t[]) {LUX_VAL(&seed, 8), LUX_VAL(&size, 8)}, 1, r);
    rc = rc ? rc : lux_get(lx, r, &v, 60000);
    ok(rc == 0 && v.size == (size_t) size, "and one of half the store is made (%s)",
       rc ? lux_errmsg() : "ok");
    lux_free(lx, 1, r);

    /* two puts read in place (pinned by this reader) take 10 of the store's
       and its spare region's 16 MiB, in blocks that leave no 4 MiB one: an
       output that needs 4 MiB fails, and its error says who holds the
       store (the long form's seed 1095 failed so with 62 objects pinned
       and only 3 tasks running: which pins was the question) */
    size_t fsz = 5u << 20;
    char *fill = malloc(fsz);
    lux_ref_t pr[2];
    lux_val_t pv;
    for (int i = 0; i < 2; i++) {
        memset(fill, 'a' + i, fsz);
        rc = lux_put(lx, fill, fsz, &pr[i]);
        rc = rc ? rc : lux_get(lx, &pr[i], &pv, 20000);
        ok(rc == 0 && pv.size == fsz, "put and read in place 5 MiB object %d of 2 (%s)", i + 1,
           rc ? lux_errmsg() : "ok");
    }
    free(fill);
    size = 4 << 20;
    rc = lux_call(lx, "t_big", 2, (lux_arg_t[]) {LUX_VAL(&seed, 8), LUX_VAL(&size, 8)}, 1, r);
    is_int(rc, 0, "submit a task with a 4 MiB output while they are read");
    s_get_fails(lx, r, LUX_ETASK, msg, sizeof msg, "  it fails: no room");
    s_like(msg, "  counting the readers' pins in its error", "no room for 4194304 bytes",
           "pins of readers: 2, 10485760 bytes", "puts being recorded for replay: ",
           "running 1 (0 B), blocked 0 (0 B), actor calls 0 (0 B)",
           "waiting with rebuilt ones held 0 (0 B), reserved 0 (0 B)", NULL);
    lux_free(lx, 2, pr);
    lux_free(lx, 1, r);
    s_submit_good(lx, 20);
}

static int
s_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

/* lux_init with a module that is not one fails before it starts a
   cluster: no run directory, no process (the children of this process
   are the first cluster's workers). */
static void
s_bad_module(const char *path, const char *what, const char *why)
{
    pid_t before[64], after[64];
    int nb = fx_children(before, 64), runs = s_entries(tap_tmpdir());
    lux_config_t cfg = {.module = path, .dir = tap_tmpdir(), .workers = 1,
                        .store_bytes = 1 << 20};
    lux_t *lx = lux_init(&cfg);
    ok(lx == NULL, "lux_init with %s fails", what);
    if (lx) {
        lux_shutdown(&lx);
        return;
    }
    s_like(lux_errmsg(), "  naming the module and why", path, why, NULL);
    int na = fx_children(after, 64);
    is_int(na, nb, "  and leaves no worker behind");
    is_int(s_entries(tap_tmpdir()), runs, "  and starts no cluster (no run directory)");
}

int
main(void)
{
    char path[PATH_MAX], dir[PATH_MAX];
    lux_t *lx = graph_embedded(2, STORE, "start the embedded default (2 workers, 8 MB store)");

    s_crashes(lx);
    s_bad_calls(lx);

    s_bad_module("/nonexistent/lux/nomod.so", "a module that does not exist",
                 "No such file");
    s_bad_module(tap_tmpdir(), "a directory", "");
    snprintf(path, sizeof path, "%s/text.so", tap_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("this is not a shared object\n", f);
    fclose(f);
    s_bad_module(path, "a text file", "");
    snprintf(path, sizeof path, "%s/t/lib/.libs/notmod.so",
             getenv("LUX_BUILDDIR") ? getenv("LUX_BUILDDIR") : ".");
    s_bad_module(path, "a .so without Lux functions", "registers no functions");

    s_submit_good(lx, 20);
    is_int(s_check_good(lx), 0, "all %d good tasks, before and after the bad input, are right",
           s_ngood);
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);

    /* the log */
    db_query_t *q = fx_query_open(dir);
    char hex[33];
    for (int i = 0; i < 3; i++) {
        s_task_hex(&s_crash[i], hex);
        int a = s_crash_attempts[i];
        is_int(fx_count(q, "SELECT attempts FROM tasks WHERE task_id = '%s' AND status = 'failed'",
                     hex),
               a, "log: t_crash %d failed after %d attempts", i, a);
        is_int(fx_count(q, "SELECT count(*) FROM retries WHERE task_id = '%s' AND reason LIKE "
                        "'worker %% died (signal 9); attempt %% of %d'", hex, a),
               a - 1, "log: and was retried %d times, each saying its worker died", a - 1);
    }
    /* tasks batched with t_crash went back uncharged (their worker died
       holding several: which one ran is not known) */
    is_int(fx_count(q, "SELECT count(*) FROM retries WHERE function != 't_crash' AND reason NOT "
                    "LIKE 'worker %% died (signal 9) holding %% tasks, this one perhaps running;"
                    " it runs again alone, attempt 1 of 3 (not counted)'"),
           0, "log: no other task was charged an attempt: each retry says so");
    is_int(fx_count(q, "SELECT count(*) FROM tasks WHERE function = 't_mix' AND status = 'finished'"
                    " AND attempts = 1"), s_ngood,
           "log: every good task finished at its first attempt");
    s_task_hex(&s_crash[0], hex);
    is_int(fx_count(q, "SELECT count(*) FROM tasks WHERE status = 'failed' AND error LIKE '%%%s%%'",
                 hex), 2, "log: the two tasks downstream failed naming t_crash");
    db_query_close(&q);
    return done_testing();
}
