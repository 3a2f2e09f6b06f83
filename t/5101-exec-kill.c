/* 5101-exec-kill: random task graphs (t/lib/graph: chains, fan-out and
   fan-in, nested tasks, values and refs, two returns, blobs) on the
   embedded default with a small object store, while a thread of this test
   kills its workers with SIGKILL at random moments. The embedded default's
   node manager runs in this process, so its workers are this process's
   children: they are found in /proc by their parent pid (and their
   command line, `lux worker ...`) and killed by pid; nothing else is.
   Every output must equal the sequential computation, and the log must
   show the retries the kills caused. Each round also runs a task that
   always kills its own worker (t_crash, the default 3 attempts) ahead of
   the graph, so batched with its tasks, and one downstream of it: both
   fail with a clear error naming t_crash, and nothing else fails.
   Nothing here waits on a clock that a slow machine could miss: kills
   come per tasks done, the graph's gets wait while it makes progress
   (graph_check), and the other waits are bounds for a hang only. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "db/db_query.h"
#include "util/util_err.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 4
#define NODES 1000

static atomic_int s_stop;
static atomic_int s_kills;
static uint64_t s_rng = 5101;

/* After every 1 to 8 tasks of the graph that finish (graph_ticks), and
   a random 0-40 ms more, SIGKILL one of this process's workers, at
   random. Paced by the work done, not by a clock: on a loaded machine,
   where a worker takes ten times as long to start, kills every 30-250 ms
   (as this test first did) left no worker alive long enough to finish a
   nested task, which waits for its children and so for an extra worker
   to start, and a round needed 700 kills instead of 50 and missed its
   deadline. A kill per few tasks done keeps each round's work and kills
   the same on any machine, and a kill still lands at any moment of a
   task: while it runs, waits for its children, or starts. */
static void *
s_killer(void *arg)
{
    (void) arg;
    while (!atomic_load(&s_stop)) {
        int64_t due = graph_ticks() + 1 + (int64_t) (graph_rand(&s_rng) % 8);
        while (!atomic_load(&s_stop) && graph_ticks() < due)
            usleep(5000);
        usleep((useconds_t) (graph_rand(&s_rng) % 40000));
        pid_t kids[256];
        int n = fx_children(kids, 256);
        if (n == 0 || atomic_load(&s_stop))
            continue;
        pid_t victim = kids[graph_rand(&s_rng) % (uint64_t) n];
        if (fx_is_worker(victim) && kill(victim, SIGKILL) == 0)
            atomic_fetch_add(&s_kills, 1);
    }
    return NULL;
}

/* Whether msg holds every one of the NULL-terminated patterns; diag if not. */
static bool
s_has(const char *msg, ...)
{
    va_list ap;
    const char *pat;
    bool all = true;
    va_start(ap, msg);
    while ((pat = va_arg(ap, const char *)))
        if (!strstr(msg, pat)) {
            diag("missing '%s' in: %s", pat, msg);
            all = false;
        }
    va_end(ap);
    return all;
}

/* lux_get of ref fails with LUX_ETASK and a message holding every pattern. */
static bool
s_fails_with(lux_t *lx, const lux_ref_t *ref, const char *pat1, const char *pat2)
{
    lux_val_t v;
    int rc = lux_get(lx, ref, &v, 300000); /* only a hang takes this long */
    if (rc != LUX_ETASK) {
        diag("lux_get returned %d (%s), not LUX_ETASK", rc, rc ? lux_errmsg() : "a value");
        return false;
    }
    return s_has(lux_errmsg(), "(t_crash) failed", pat1, pat2, NULL);
}

int
main(void)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 16 << 20,
                        .workers = 2};
    /* a task may be killed several times: it gets more attempts than the
       default, so that no unlucky one runs out (each kill charges one
       task at most) */
    lux_opts_t opts = {.max_attempts = 20};
    char why[600], dir[PATH_MAX];
    pthread_t killer;
    graph_t g;

    graph_ticks_start();  /* the killer's pace */
    fx_lux_unwrapped();   /* workers start in 0.06 s, not 0.5 s, at load 11 */
    lux_t *lx = lux_init(&cfg);
    ok(lx != NULL, "start the embedded default: 2 workers, a 16 MB object store");
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    for (int round = 0; round < ROUNDS; round++) {
        int before = atomic_load(&s_kills);
        atomic_store(&s_stop, 0);
        if (pthread_create(&killer, NULL, s_killer, NULL))
            bail("pthread_create failed");
        lux_ref_t crash, down;
        int64_t five = 5;
        if (lux_call(lx, "t_crash", 0, NULL, 1, &crash) ||
            lux_call(lx, "t_mix", 2, (lux_arg_t[]) {LUX_VAL(&five, 8), LUX_REF(crash)}, 1, &down))
            bail("lux_call: %s", lux_errmsg());
        int rc = graph_submit_opts(lx, &g, NODES, 5101 + (uint64_t) round, 1000000, &opts);
        if (rc)
            diag("%s", lux_errmsg());
        int bad = rc ? -1 : graph_check(lx, &g, why, sizeof why);
        bool crashed = s_fails_with(lx, &crash, "worker died on each of 3 attempts", "signal 9");
        bool downed = s_fails_with(lx, &down, "its argument from task", "worker died");
        atomic_store(&s_stop, 1);
        pthread_join(killer, NULL);
        int kills = atomic_load(&s_kills) - before;
        is_int(bad, 0, "round %d: %d tasks and puts, %d workers killed: every output equals "
               "the sequential computation%s%s", round, NODES, kills, bad ? ": " : "", why);
        ok(crashed, "  t_crash failed after its 3 attempts, saying its worker died each time");
        ok(downed, "  the task downstream of it failed, naming it");
        lux_free(lx, 1, &crash);
        lux_free(lx, 1, &down);
        diag("puts %d, big puts %d, mix %d, split %d, big %d, check %d, nested %d",
             g.counts[G_PUT], g.counts[G_BIGPUT], g.counts[G_MIX], g.counts[G_SPLIT],
             g.counts[G_BIG], g.counts[G_CHECK], g.counts[G_NESTED]);
        /* what the graph left in the store goes, as a driver would */
        for (int i = 0; i < g.n; i++)
            if (!g.nodes[i].blob)
                lux_free(lx, g.nodes[i].nout, g.nodes[i].ref);
        graph_free(&g);
    }
    int kills = atomic_load(&s_kills);
    ok(kills >= ROUNDS, "workers were killed along the way (%d)", kills);

    /* the cluster still works, with its full pool of workers */
    int64_t x = 41;
    lux_ref_t r;
    lux_val_t v;
    int64_t got = -1;
    int rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&x, 8)}, 1, &r);
    if (!rc && !(rc = lux_get(lx, &r, &v, 300000)) && v.size == 8)
        memcpy(&got, v.data, 8);
    is_int(got, 124, "after the kills a task still runs (%s)", rc ? lux_errmsg() : "ok");
    pid_t kids[256];
    int n = -1;
    for (int i = 0; i < 2400 && (n = fx_children(kids, 256)) != 2; i++)
        usleep(50000); /* the extra workers leave when idle; 2 min: a hang */
    is_int(n, 2, "the pool is whole again: 2 workers, none extra");
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);
    is_int(fx_children(kids, 256), 0, "lux_shutdown leaves no worker behind");

    db_query_t *q = fx_query_open(dir);
    int64_t died = fx_count(q, "SELECT count(*) FROM retries WHERE reason LIKE "
                              "'worker %% died (signal 9)%%'");
    ok(died > 0, "log: %lld task_retried events say a worker died of signal 9", (long long) died);
    int64_t charged = fx_count(q, "SELECT count(*) FROM retries WHERE reason LIKE "
                                 "'worker %% died (signal 9); attempt %% of 20'");
    /* workers t_crash killed are named in its own retries (charged, or
       not when it was batched with others), except at its last attempt,
       which it ran alone */
    int64_t workers = fx_count(q, "SELECT count(DISTINCT substr(reason, 1, instr(reason, ' died')))"
                                 " FROM retries WHERE reason LIKE 'worker %% died%%' AND "
                                 "substr(reason, 1, instr(reason, ' died')) NOT IN (SELECT "
                                 "substr(reason, 1, instr(reason, ' died')) FROM retries WHERE "
                                 "function = 't_crash')");
    ok(workers > 0 && workers <= kills, "log: they name %lld of the %d workers this test killed",
       (long long) workers, kills);
    diag("%lld retries charged to the task that ran alone in its worker", (long long) charged);
    ok(fx_count(q, "SELECT count(*) FROM events WHERE kind = 'task_retried'") >= died,
       "log: and task_retried events (%lld, with rebuilds)",
       (long long) fx_count(q, "SELECT count(*) FROM events WHERE kind = 'task_retried'"));
    is_int(fx_count(q, "SELECT count(*) FROM tasks WHERE function = 't_crash' AND status = "
                      "'failed' AND attempts = 3"), ROUNDS,
           "log: each t_crash failed, after 3 attempts");
    is_int(fx_count(q, "SELECT count(*) FROM tasks WHERE status = 'failed' AND function != "
                      "'t_crash' AND error NOT LIKE '%%its argument from task %% (t_crash)%%'"), 0,
           "log: no other task failed, but those downstream of t_crash");
    is_int(fx_count(q, "SELECT count(*) FROM tasks WHERE status = 'pending'"), 0,
           "log: no task was left unfinished");
    db_query_close(&q);
    return done_testing();
}
