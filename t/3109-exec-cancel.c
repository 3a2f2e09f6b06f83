/* 3109-exec-cancel: lux_cancel and per-task timeouts on the embedded
   default with 2 workers (t/lib/cancelmod.c's tasks):
   - a queued task (waiting for a resource that a task waiting for a
     file holds) is dropped: lux_get says LUX_ECANCELLED, and so does a
     task that needs it; the task that held the resource is untouched;
   - a running task is interrupted without force: its sleep ends, it sees
     lux_cancelled(), and its worker lives on;
   - a task that ignores the interrupt (pause() for ever) is cancelled
     with force: its worker is killed and replaced, and work goes on;
   - an actor's call cannot be cancelled: LUX_ENOSYS, saying why;
   - a put and an unknown ref: LUX_ENOTFOUND; a finished task: 0, its
     value stays;
   - a task with lux_opts_t.timeout_ms that never returns fails with
     LUX_ECANCELLED naming the timeout;
   - the log has a task_cancelled event for each (status 'cancelled' in
     the tasks view) and no retry of any of them. */
#include "tap.h"
#include "lux.h"
#include "lib/fx.h"
#include "db/db_query.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_mod[1024];

/* Files in dir (tasks that said they run); the pid of the newest in *pid. */
static int
s_running(const char *dir, pid_t *pid)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "running.", 8) == 0) {
            n++;
            if (pid)
                *pid = (pid_t) atoi(e->d_name + 8);
        }
    closedir(d);
    return n;
}

/* Wait (at most 60 s) until n tasks said they run in dir. */
static bool
s_wait_running(const char *dir, int n, pid_t *pid)
{
    for (int i = 0; i < 6000 && s_running(dir, pid) < n; i++)
        usleep(10000);
    return s_running(dir, pid) >= n;
}

static char *
s_dir(const char *name)
{
    static char dirs[8][1024];
    static int k;
    char *d = dirs[k++ % 8];
    snprintf(d, 1024, "%s/%s", tap_tmpdir(), name);
    mkdir(d, 0700);
    return d;
}

static void
s_touch(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

int
main(void)
{
    const char *b = getenv("LUX_BUILDDIR");
    snprintf(s_mod, sizeof s_mod, "%s/t/lib/.libs/cancelmod.so", b && *b ? b : ".");
    lux_config_t cfg = {.module = s_mod, .dir = tap_tmpdir(), .workers = 2,
                        .store_bytes = 64 << 20, .resources = "CPU=2,slot=1"};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    lux_val_t v;
    int rc;

    /* --- a queued task, and one that needs it ------------------------------------------- */
    /* the node has one "slot": a task holding it keeps the next one that
       asks for it queued, whatever the workers do */
    char gate[1100];
    const char *gd = s_dir("gates");
    snprintf(gate, sizeof gate, "%s/open", tap_tmpdir());
    lux_arg_t ga[2] = {LUX_VAL(gate, strlen(gate)), LUX_VAL(gd, strlen(gd))};
    lux_opts_t slot = {.resources = "slot=1"};
    lux_ref_t g, q, d;
    ok(lux_call_opts(lx, &slot, "c_gate", 2, ga, 1, &g) == 0, "a task waits for a file");
    lux_wait(lx, 1, &g, 1, 0, NULL); /* sends it */
    ok(s_wait_running(gd, 1, NULL), "holding the node's one slot");
    int64_t x = 42;
    ok(lux_call_opts(lx, &slot, "c_echo", 1, (lux_arg_t[]) {LUX_VAL(&x, sizeof x)}, 1, &q) == 0 &&
           lux_call(lx, "c_echo", 1, (lux_arg_t[]) {LUX_REF(q)}, 1, &d) == 0,
       "a task queued for the slot, and one that needs it");
    rc = lux_cancel(lx, &q, 0);
    is_int(rc, 0, "lux_cancel of the queued task (%s)", rc ? lux_errmsg() : "");
    rc = lux_get(lx, &q, &v, 60000);
    is_int(rc, LUX_ECANCELLED, "lux_get of it says LUX_ECANCELLED");
    ok(strstr(lux_errmsg(), "cancelled by lux_cancel") != NULL, "naming lux_cancel (%s)",
       lux_errmsg());
    rc = lux_get(lx, &d, &v, 60000);
    is_int(rc, LUX_ECANCELLED, "the task that needs it is cancelled too (%s)", lux_errmsg());
    is_str(lux_strerror(LUX_ECANCELLED), "cancelled", "lux_strerror(LUX_ECANCELLED)");
    s_touch(gate);
    rc = lux_get(lx, &g, &v, 60000);
    is_int(rc, 0, "the task that held the slot finishes as before");

    /* --- a running task, interrupted ---------------------------------------------------- */
    const char *nd = s_dir("nap");
    lux_ref_t nap;
    pid_t npid = 0;
    ok(lux_call(lx, "c_nap", 1, (lux_arg_t[]) {LUX_VAL(nd, strlen(nd))}, 1, &nap) == 0,
       "a task that sleeps until cancelled");
    lux_wait(lx, 1, &nap, 1, 0, NULL);
    bool up = s_wait_running(nd, 1, &npid);
    ok(up, "runs (worker %d)", (int) npid);
    is_int(lux_cancel(lx, &nap, 0), 0, "lux_cancel without force");
    rc = lux_get(lx, &nap, &v, 60000);
    is_int(rc, LUX_ECANCELLED, "lux_get of it says LUX_ECANCELLED (%s)", lux_errmsg());
    ok(npid > 0 && util_proc_alive(npid), "its worker %d was interrupted, not killed",
       (int) npid);

    /* --- a task that ignores the interrupt, cancelled with force ------------------------- */
    const char *pd = s_dir("pause");
    lux_ref_t pz, one;
    pid_t ppid = 0;
    ok(lux_call(lx, "c_pause", 1, (lux_arg_t[]) {LUX_VAL(pd, strlen(pd))}, 1, &pz) == 0,
       "a task that pause()s for ever");
    lux_wait(lx, 1, &pz, 1, 0, NULL);
    up = s_wait_running(pd, 1, &ppid);
    ok(up, "runs (worker %d)", (int) ppid);
    is_int(lux_cancel(lx, &pz, 1), 0, "lux_cancel with force");
    rc = lux_get(lx, &pz, &v, 60000);
    is_int(rc, LUX_ECANCELLED, "lux_get of it says LUX_ECANCELLED (%s)", lux_errmsg());
    ok(strstr(lux_errmsg(), "was stopped") != NULL, "saying its worker was stopped");
    for (int i = 0; i < 6000 && util_proc_alive(ppid); i++)
        usleep(10000);
    ok(!util_proc_alive(ppid), "its worker %d was killed", (int) ppid);
    rc = lux_call(lx, "c_one", 0, NULL, 1, &one);
    if (!rc)
        rc = lux_get(lx, &one, &v, 60000);
    ok(rc == 0 && v.size == 8 && *(const int64_t *) v.data == 1,
       "a task runs after it (the worker was replaced)");
    is_int(lux_cancel(lx, &one, 1), 0, "lux_cancel of a finished task: 0");
    ok(lux_get(lx, &one, &v, 0) == 0 && *(const int64_t *) v.data == 1, "and its value stays");

    /* --- what cannot be cancelled --------------------------------------------------------- */
    lux_ref_t put, bogus;
    lux_put(lx, &x, sizeof x, &put);
    rc = lux_cancel(lx, &put, 0);
    is_int(rc, LUX_ENOTFOUND, "lux_cancel of a put: LUX_ENOTFOUND");
    ok(strstr(lux_errmsg(), "put") != NULL, "saying it was put (%s)", lux_errmsg());
    memset(&bogus, 0x77, sizeof bogus);
    is_int(lux_cancel(lx, &bogus, 0), LUX_ENOTFOUND, "lux_cancel of a ref never made: LUX_ENOTFOUND");
    char gate2[1100];
    snprintf(gate2, sizeof gate2, "%s/open2", tap_tmpdir());
    const char *ad = s_dir("actor");
    lux_actor_t act;
    lux_ref_t c1, c2;
    lux_arg_t aa[2] = {LUX_VAL(gate2, strlen(gate2)), LUX_VAL(ad, strlen(ad))};
    ok(lux_actor_create(lx, "Gate", 0, NULL, NULL, &act) == 0 &&
           lux_actor_call(lx, &act, "wait", 2, aa, 1, &c1) == 0 &&
           lux_actor_call(lx, &act, "wait", 2, aa, 1, &c2) == 0,
       "an actor with two calls waiting for a file");
    lux_wait(lx, 2, (lux_ref_t[]) {c1, c2}, 2, 0, NULL);
    ok(s_wait_running(ad, 1, NULL), "the first runs");
    rc = lux_cancel(lx, &c2, 0);
    is_int(rc, LUX_ENOSYS, "lux_cancel of an actor's call: LUX_ENOSYS");
    ok(strstr(lux_errmsg(), "lux_actor_kill") != NULL, "saying what to do instead (%s)",
       lux_errmsg());
    s_touch(gate2);
    ok(lux_get_many(lx, 2, (lux_ref_t[]) {c1, c2}, (lux_val_t[2]) {{0}}, 60000) == 0,
       "both calls finish");

    /* --- a timeout ------------------------------------------------------------------------- */
    const char *td = s_dir("timeout");
    lux_ref_t tz;
    lux_opts_t o = {.timeout_ms = 300};
    ok(lux_call_opts(lx, &o, "c_pause", 1, (lux_arg_t[]) {LUX_VAL(td, strlen(td))}, 1, &tz) == 0,
       "a task that never returns, with a timeout of 300 ms");
    rc = lux_get(lx, &tz, &v, 60000);
    is_int(rc, LUX_ECANCELLED, "lux_get of it says LUX_ECANCELLED");
    ok(strstr(lux_errmsg(), "timeout of 300 ms") != NULL, "naming the timeout (%s)",
       lux_errmsg());
    rc = lux_call(lx, "c_one", 0, NULL, 1, &one);
    if (!rc)
        rc = lux_get(lx, &one, &v, 60000);
    is_int(rc, 0, "a task runs after it");

    /* --- the log ---------------------------------------------------------------------------- */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);
    db_query_t *qy = fx_query_open(dir);
    is_int(fx_count(qy, "SELECT count(*) FROM tasks WHERE status = 'cancelled'"), 5,
           "the tasks view shows the 5 cancelled tasks as 'cancelled'");
    is_int(fx_count(qy, "SELECT count(*) FROM events WHERE kind = 'task_cancelled'"), 5,
           "each has one task_cancelled event");
    is_int(fx_count(qy, "SELECT count(*) FROM events e JOIN tasks t ON e.task_id = t.task_id "
                        "WHERE t.status = 'cancelled' AND e.kind = 'task_retried'"),
           0, "none was retried");
    is_int(fx_count(qy, "SELECT count(*) FROM tasks WHERE status = 'cancelled' AND error LIKE "
                        "'%%timeout of 300 ms%%'"),
           1, "the timed-out one's error names its timeout");
    db_query_close(&qy);
    return done_testing();
}
