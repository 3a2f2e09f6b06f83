/* 5201-actor-kill: an actor with a checkpoint every 100 calls takes 10,000
   calls from four callers (the driver and three tasks holding its handle)
   while its process is killed (kill -9) at random points. Every value
   returned, and its final state, must equal those of the same calls to an
   actor that was never killed; each restart re-applies at most 100 calls;
   and the log shows every restart, the checkpoint it loaded and the calls
   it replayed. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "db/db_query.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define M 1000003
#define DRIVER_CALLS 7000
#define TASKS 3
#define TASK_CALLS 1000
#define CHUNK 250

typedef struct {
    int64_t seen[DRIVER_CALLS]; /* sums[0] after each of the driver's calls */
    int64_t tasks[TASKS];       /* each task's digest */
    int64_t state[10];          /* get(): h, n, sums[0..7] */
    int kills;
} run_t;

static int
s_get(lux_t *lx, const lux_ref_t *r, void *out, size_t n)
{
    lux_val_t v;
    int rc = lux_get(lx, r, &v, 60000);
    if (rc)
        return rc;
    if (v.size != n)
        return util_err(LUX_EPROTO, "%zu bytes, not %zu", v.size, n);
    memcpy(out, v.data, n);
    return 0;
}

/* The whole workload on a new actor; kill its process now and then when
   kill is set. 0, or an error (diagnosed). */
static int
s_run(lux_t *lx, run_t *run, bool kill_it, unsigned seed, lux_actor_t *out)
{
    lux_actor_t a;
    int64_t h0 = 11;
    lux_ref_t *refs = calloc(DRIVER_CALLS, sizeof *refs), t[TASKS], r;
    memset(run, 0, sizeof *run);
    srand(seed);
    int rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                              &(lux_actor_opts_t) {.max_restarts = 1000, .checkpoint_every = 100},
                              &a);
    if (rc)
        goto fail;
    *out = a;
    for (int64_t c = 1; c <= TASKS; c++) {
        int64_t n = TASK_CALLS;
        if ((rc = lux_call(lx, "t_acc_caller", 3,
                           (lux_arg_t[]) {LUX_VAL(&a, sizeof a), LUX_VAL(&c, 8), LUX_VAL(&n, 8)}, 1,
                           &t[c - 1])))
            goto fail;
    }
    for (int i = 0; i < DRIVER_CALLS; i++) {
        if (i % CHUNK == 0 && kill_it && i > 0 && rand() % 3 != 0) {
            /* its current process, then a kill after a random moment while
               calls are in flight */
            int64_t pid = 0;
            lux_actor_call(lx, &a, "pid", 0, NULL, 1, &r);
            if ((rc = s_get(lx, &r, &pid, 8)))
                goto fail;
            lux_free(lx, 1, &r);
            usleep((useconds_t) (rand() % 3000));
            if (pid > 0 && kill((pid_t) pid, SIGKILL) == 0)
                run->kills++;
        }
        int64_t caller = 0, x = i * 7 + 3;
        if ((rc = lux_actor_call(lx, &a, "add", 2,
                                 (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&x, 8)}, 1, &refs[i])))
            goto fail;
    }
    for (int i = 0; i < DRIVER_CALLS; i++) {
        int64_t v[2];
        if ((rc = s_get(lx, &refs[i], v, sizeof v)))
            goto fail;
        run->seen[i] = v[1];
    }
    for (int k = 0; k < TASKS; k++)
        if ((rc = s_get(lx, &t[k], &run->tasks[k], 8)))
            goto fail;
    lux_actor_call(lx, &a, "get", 0, NULL, 1, &r);
    if ((rc = s_get(lx, &r, run->state, sizeof run->state)))
        goto fail;
    lux_free(lx, DRIVER_CALLS, refs);
    free(refs);
    return 0;
fail:
    diag("run (%s): %s", kill_it ? "with kills" : "without", lux_errmsg());
    free(refs);
    return rc ? rc : LUX_EIO;
}

int
main(void)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 64 << 20,
                        .workers = 2};
    char dir[PATH_MAX], hex[33], sql[600];
    static run_t quiet, killed;
    lux_actor_t qa, ka;
    lux_t *lx = lux_init(&cfg);
    ok(lx != NULL, "start the embedded default");
    if (!lx)
        bail("lux_init: %s", lux_errmsg());

    int64_t t0 = util_mono_ms();
    is_int(s_run(lx, &quiet, false, 1, &qa), 0, "10,000 calls to an actor never killed");
    diag("%lld ms", (long long) (util_mono_ms() - t0));
    t0 = util_mono_ms();
    unsigned seed = (unsigned) getpid();
    int rc = s_run(lx, &killed, true, seed, &ka);
    is_int(rc, 0, "the same calls to an actor killed (kill -9) %d times (seed %u)", killed.kills,
           seed);
    diag("%lld ms", (long long) (util_mono_ms() - t0));
    ok(killed.kills >= 5, "its process was killed at least 5 times (%d)", killed.kills);

    int differ = 0;
    for (int i = 0; i < DRIVER_CALLS; i++)
        differ += quiet.seen[i] != killed.seen[i];
    is_int(differ, 0, "every value the driver's %d calls returned is the same", DRIVER_CALLS);
    for (int k = 0; k < TASKS; k++)
        is_int(killed.tasks[k], quiet.tasks[k], "every value task caller %d saw is the same",
               k + 1);
    is_int(killed.state[1], quiet.state[1], "the final state: the same number of calls applied (%lld)",
           (long long) killed.state[1]);
    int sums = 0;
    for (int c = 0; c < 8; c++)
        sums += killed.state[2 + c] != quiet.state[2 + c];
    is_int(sums, 0, "the final state: every caller's sum is the same");

    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);

    db_query_t *q = fx_query_open(dir);
    lux_actor_hex(&ka, hex);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM actor_restarts WHERE actor_id = '%s'", hex);
    is_int(fx_count(q, "%s", sql), killed.kills, "lux sql shows a restart for every kill");
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM actor_restarts WHERE actor_id = '%s' AND "
             "(calls_replayed > 100 OR calls_replayed < 0)", hex);
    is_int(fx_count(q, "%s", sql), 0, "no restart re-applied more than 100 calls (the interval)");
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM actor_restarts WHERE actor_id = '%s' AND "
             "checkpoint_call %% 100 = 0 AND (checkpoint_call = 0 OR checkpoint_task_id IN "
             "(SELECT task_id FROM events WHERE kind = 'actor_checkpoint' AND actor_id = '%s' "
             "AND idx = checkpoint_call))", hex, hex);
    is_int(fx_count(q, "%s", sql), killed.kills,
           "each restart names the checkpoint it loaded, one the log has");
    snprintf(sql, sizeof sql,
             "SELECT max(calls_replayed) FROM actor_restarts WHERE actor_id = '%s'", hex);
    diag("most calls replayed by one restart: %lld", (long long) fx_count(q, "%s", sql));
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT call_number, row_number() OVER (ORDER BY seq) AS k "
             "FROM actor_calls WHERE actor_id = '%s') WHERE call_number != k", hex);
    is_int(fx_count(q, "%s", sql), 0, "its calls are numbered in log order, each once");
    snprintf(sql, sizeof sql, "SELECT count(*) FROM actor_calls WHERE actor_id = '%s'", hex);
    int64_t calls = fx_count(q, "%s", sql);
    ok(calls >= DRIVER_CALLS + TASKS * TASK_CALLS, "the log has its %lld calls", (long long) calls);
    db_query_close(&q);
    return done_testing();
}
