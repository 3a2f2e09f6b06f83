/*  bench_exec - benchmarks of the runtime (lux bench), named after `ray
    microbenchmark`'s where there is a twin:

    memcpy_gigabytes             this machine's memcpy of 1 GB (for the ratios)
    embedded_start_ms            lux_init (embedded default) to a first task's result
    single_client_tasks_sync     one no-op task at a time, call then get
    single_client_tasks_async    a million no-op tasks, then their results;
                                 with the peak RSS of the driver and the workers
    multi_client_tasks_async     four driver processes doing the same at once
    single_client_put_calls      puts of a small (8 B) object
    single_client_get_calls      gets of a small object
    single_client_put_gigabytes  puts of a 1 GB object
    single_client_get_gigabytes  gets of a fresh 1 GB object (in place: no copy)
    single_client_wait_1k_refs   rounds of: 1000 no-op tasks, wait for all
    dag_chain_2000               a chain of 2000 dependent tasks
    dag_tree_10000               a pairwise tree reduction of 10,000 leaves
    queued_tasks_memory          node manager memory holding a million queued tasks
    idle_head_cpu                CPU an idle `lux start` head (2 shards, its node
                                 manager and 2 idle workers) takes, % of one core
    1_1_actor_calls_sync         one actor, one call at a time, call then get
    1_1_actor_calls_async        one actor, 100,000 calls, then their results
    1_n_actor_calls_async        one driver calling 4 actors in turn
    n_n_actor_calls_async        one caller task per core, each calling an actor of its own
    actor_restart_replay         calls re-applied per second when an actor with
                                 20,000 calls and no checkpoint is killed
                                 (every call is logged: these are logged calls)
    head_r1_actor_calls_sync     1_1_actor_calls_sync against a `lux start` head
    head_r3_actor_calls_sync     of one shard with 1 and with 3 replicas, the
                                 driver attached by --address (in one run)
    who_madeup_ms                a task reading a made-up ref, submitted on a
                                 tcp head whose log holds 2 million tasks and
                                 run on a node (resource w): ms to its
                                 LUX_ENOTFOUND. The head reads who made the
                                 ref (exec_xfer_who.c) on its loop, to place
                                 the task and for each of the node's asks;
                                 with the slowest no-op task that another
                                 driver ran on the head meanwhile (the loop's
                                 stall), and before

    The main job's (es_cartpole_*) are in bench_es.c. Each runs on a
    private embedded cluster under the benchmark's scratch
    directory (queued_tasks_memory, idle_head_cpu and head_r*_actor_calls_sync
    on a private `lux start` head, so the node manager is a process of its
    own to measure).
*/
#include "lux_bench.h"
#include "lux_cmd.h"
#include "lux.h"
#include "db/db_client.h"
#include "net/net_ep.h"
#include "exec/exec_client.h"
#include "lux_node.h"
#include "util/util_buf.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- the functions the benchmarks run (built into lux, so its workers have them) --- */

static int
bench_noop(lux_t *lx, int argc, const lux_val_t *argv)
{
    return 0;
}
LUX_FUNCTION(bench_noop, -1, 1)

/* The sum of its int64 arguments (an argument of another size counts 1). */
static int
bench_sum(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t sum = 0, v;
    for (int i = 0; i < argc; i++) {
        if (argv[i].size == 8) {
            memcpy(&v, argv[i].data, 8);
            sum += v;
        } else {
            sum += 1;
        }
    }
    return lux_set(lx, 0, &sum, sizeof sum);
}
LUX_FUNCTION(bench_sum, -1, 1)

/* Wait until the file named by its argument exists (at most a minute). */
static int
bench_gate(lux_t *lx, int argc, const lux_val_t *argv)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.*s", (int) argv[0].size, (const char *) argv[0].data);
    for (int i = 0; i < 6000 && !util_exists(path); i++)
        usleep(10000);
    return 0;
}
LUX_FUNCTION(bench_gate, 1, 1)

/* --- helpers ------------------------------------------------------------------------ */

/* A client of the cluster at --dir, or of an embedded default of our own. */
static lux_t *
s_init(bench_ctx_t *ctx)
{
    lux_config_t cfg = {.dir = ctx->tmp};
    if (ctx->dir)
        cfg = (lux_config_t) {.address = ctx->dir};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        util_err_ctx(LUX_EIO, "lux_init");
    return lx;
}

static double
s_secs(int64_t t0)
{
    return (double) (util_mono_ns() - t0) / 1e9;
}

/* The children of parent (from /proc): up to max pids in out, their count. */
static int
s_children(pid_t parent, int *out, int max)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max) {
        int pid = atoi(e->d_name);
        char path[64], buf[512];
        if (pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        int ppid = 0;
        if (fgets(buf, sizeof buf, f)) {
            char *rp = strrchr(buf, ')');
            if (rp)
                sscanf(rp + 2, "%*c %d", &ppid);
        }
        fclose(f);
        if (ppid == parent)
            out[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

/* Peak RSS (MB) of this process, and the largest of our worker children. */
static void
s_rss(double *self_mb, double *worker_mb)
{
    int64_t peak;
    int kids[256];
    util_proc_rss(getpid(), &peak);
    *self_mb = (double) peak / 1048576.0;
    *worker_mb = 0;
    int n = s_children(getpid(), kids, 256);
    for (int i = 0; i < n; i++) {
        util_proc_rss(kids[i], &peak);
        if ((double) peak / 1048576.0 > *worker_mb)
            *worker_mb = (double) peak / 1048576.0;
    }
}

/* With LUX_BENCH_PROFILE set: CPU per task of each thread of this process
   (named by util_log_name) and of its children, between two calls. */
typedef struct {
    char name[32];
    int tid;
    long ticks;
} s_cpu_t;

static int
s_cpu_snap(s_cpu_t *v, int max)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max) {
        int tid = atoi(e->d_name);
        char path[64], buf[512];
        if (!tid)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        if (fgets(buf, sizeof buf, f)) {
            char *l = strchr(buf, '('), *r = strrchr(buf, ')');
            unsigned long ut = 0, st = 0;
            if (l && r) {
                snprintf(v[n].name, sizeof v[n].name, "%.*s", (int) (r - l - 1), l + 1);
                sscanf(r + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
                v[n].tid = tid;
                v[n].ticks = (long) (ut + st);
                n++;
            }
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static void
s_cpu_report(const s_cpu_t *a, int na, long tasks)
{
    s_cpu_t b[128];
    int nb = s_cpu_snap(b, 128);
    long hz = sysconf(_SC_CLK_TCK);
    for (int i = 0; i < nb; i++)
        for (int k = 0; k < na; k++)
            if (a[k].tid == b[i].tid && b[i].ticks > a[k].ticks)
                fprintf(stderr, "  %-16s %6.2f us/task\n", b[i].name,
                        (double) (b[i].ticks - a[k].ticks) * 1e6 / hz / tasks);
}

/* n no-op calls, then all their results; calls/s: tasks (k = 0), or
   methods spread over the k actors as. */
static int
s_calls(lux_t *lx, const lux_actor_t *as, int k, int n, double *rate)
{
    lux_ref_t *refs = malloc((size_t) n * sizeof *refs);
    lux_val_t *vals = malloc((size_t) n * sizeof *vals);
    int rc = 0;
    if (!refs || !vals) {
        free(refs);
        free(vals);
        return util_err(LUX_ENOMEM, "out of memory");
    }
    int64_t t0 = util_mono_ns();
    for (int i = 0; i < n && !rc; i++)
        rc = k ? lux_actor_call(lx, &as[i % k], "noop", 0, NULL, 1, &refs[i])
               : lux_call(lx, "bench_noop", 0, NULL, 1, &refs[i]);
    if (!rc)
        rc = lux_get_many(lx, n, refs, vals, 600000);
    *rate = n / s_secs(t0);
    lux_free(lx, n, refs);
    free(refs);
    free(vals);
    return rc;
}

/* n no-op tasks, then all their results; tasks/s. */
static int
s_async(lux_t *lx, int n, double *rate)
{
    return s_calls(lx, NULL, 0, n, rate);
}

/* An actor for the benchmarks: a counter. */
static void *
bench_ctr_create(lux_t *lx, int argc, const lux_val_t *argv)
{
    return calloc(1, sizeof(int64_t));
}

static void
bench_ctr_destroy(void *self)
{
    free(self);
}
LUX_ACTOR(BenchCtr, 0, bench_ctr_create, bench_ctr_destroy, NULL, NULL)

/* noop(): nothing (an empty value), as Ray's benchmark methods. */
static int
BenchCtr_noop(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    ++*(int64_t *) self;
    return 0;
}
LUX_METHOD(BenchCtr, noop, 0, 1)

/* pid(): its process. */
static int
BenchCtr_pid(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    int64_t pid = getpid();
    return lux_set(lx, 0, &pid, 8);
}
LUX_METHOD(BenchCtr, pid, 0, 1)

/* count(): calls applied. */
static int
BenchCtr_count(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    return lux_set(lx, 0, self, 8);
}
LUX_METHOD(BenchCtr, count, 0, 1)

/* A caller task: n noop calls on the actor (argument 0) in batches of
   1000, then their results. */
static int
bench_actor_caller(lux_t *lx, int argc, const lux_val_t *argv)
{
    lux_actor_t a;
    int64_t n;
    if (lux_actor_from(&argv[0], &a) || argv[1].size != 8)
        return lux_raise(lx, "bench_actor_caller: (handle, n)");
    memcpy(&n, argv[1].data, 8);
    lux_ref_t refs[1000];
    lux_val_t vals[1000];
    for (int64_t done = 0; done < n;) {
        int k = n - done < 1000 ? (int) (n - done) : 1000;
        for (int i = 0; i < k; i++)
            if (lux_actor_call(lx, &a, "noop", 0, NULL, 1, &refs[i]))
                return lux_raise(lx, "bench_actor_caller: %s", lux_errmsg());
        if (lux_get_many(lx, k, refs, vals, 600000))
            return lux_raise(lx, "bench_actor_caller: %s", lux_errmsg());
        lux_free(lx, k, refs);
        done += k;
    }
    return lux_set(lx, 0, &n, 8);
}
LUX_FUNCTION(bench_actor_caller, 2, 1)

/* --- memcpy ---------------------------------------------------------------------------- */

static int
s_memcpy(bench_ctx_t *ctx, const char *name)
{
    size_t n = (size_t) (1e9 * (ctx->scale < 1 ? 0.1 : 1.0));
    char *a = malloc(n), *b = malloc(n);
    double v[5];
    if (!a || !b) {
        free(a);
        free(b);
        return util_err(LUX_ENOMEM, "cannot allocate 2 x %zu bytes", n);
    }
    memset(a, 1, n);
    memset(b, 2, n);
    for (int r = 0; r < 5; r++) {
        int64_t t0 = util_mono_ns();
        memcpy(b, a, n);
        v[r] = (double) n / 1e9 / s_secs(t0);
        a[r] = b[n - 1 - r]; /* keep the copy observable */
    }
    double med = bench_median(v, 5); /* sorts v */
    bench_report(ctx, "memcpy_gigabytes", med, "GB/s",
                 ", \"bytes\": %zu, \"min\": %.2f, \"max\": %.2f", n, v[0], v[4]);
    free(a);
    free(b);
    return 0;
}

/* --- start-up ---------------------------------------------------------------------------- */

static int
s_start(bench_ctx_t *ctx, const char *name)
{
    double v[5];
    int rounds = 5;
    int rc = bench_own_cluster(ctx, "it times the start of an embedded cluster");
    if (rc)
        return rc;
    for (int r = 0; r < rounds; r++) {
        int64_t t0 = util_mono_ns();
        lux_t *lx = s_init(ctx);
        if (!lx)
            return LUX_EIO;
        lux_ref_t ref;
        lux_val_t val;
        rc = lux_call(lx, "bench_noop", 0, NULL, 1, &ref);
        if (!rc)
            rc = lux_get(lx, &ref, &val, 30000);
        v[r] = (double) (util_mono_ns() - t0) / 1e6;
        lux_shutdown(&lx);
        if (rc)
            return rc;
    }
    double med = bench_median(v, rounds); /* sorts v */
    bench_report(ctx, "embedded_start_ms", med, "ms",
                 ", \"rounds\": %d, \"min\": %.1f, \"max\": %.1f", rounds, v[0], v[rounds - 1]);
    return 0;
}

/* --- tasks ------------------------------------------------------------------------------- */

static int
s_tasks(bench_ctx_t *ctx, const char *name)
{
    lux_t *lx = s_init(ctx);
    int rc = 0;
    double v[3], rate;
    if (!lx)
        return LUX_EIO;
    /* warm up: every worker has loaded the module */
    if ((rc = s_async(lx, 2000, &rate)))
        goto out;
    int n = (int) (5000 * ctx->scale) + 50;
    for (int r = 0; r < 3 && !rc && bench_wants(ctx, "single_client_tasks_sync"); r++) {
        int64_t t0 = util_mono_ns();
        for (int i = 0; i < n && !rc; i++) {
            lux_ref_t ref;
            lux_val_t val;
            rc = lux_call(lx, "bench_noop", 0, NULL, 1, &ref);
            if (!rc)
                rc = lux_get(lx, &ref, &val, 30000);
            lux_free(lx, 1, &ref);
        }
        v[r] = n / s_secs(t0);
    }
    if (rc)
        goto out;
    if (bench_wants(ctx, "single_client_tasks_sync")) {
        double med = bench_median(v, 3); /* sorts v */
        bench_report(ctx, "single_client_tasks_sync", med, "tasks/s",
                     ", \"tasks\": %d, \"min\": %.0f, \"max\": %.0f", n, v[0], v[2]);
    }
    if (!bench_wants(ctx, "single_client_tasks_async"))
        goto wait;
    n = (int) (1000000 * ctx->scale);
    /* peak RSS from here: not an earlier benchmark's in this process */
    FILE *cr = fopen("/proc/self/clear_refs", "we");
    if (cr) {
        fputs("5", cr);
        fclose(cr);
    }
    s_cpu_t cpu0[128];
    int ncpu = s_cpu_snap(cpu0, 128);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_CHILDREN, &ru0);
    int64_t wcpu0 = 0;
    if ((rc = s_async(lx, n, &rate)))
        goto out;
    if (getenv("LUX_BENCH_PROFILE")) {
        fprintf(stderr, "CPU per task, by thread of the driver process:\n");
        s_cpu_report(cpu0, ncpu, n);
        (void) ru1;
        (void) wcpu0;
    }
    double driver_mb, worker_mb;
    s_rss(&driver_mb, &worker_mb);
    bench_report(ctx, "single_client_tasks_async", rate, "tasks/s",
                 ", \"tasks\": %d, \"driver_peak_rss_mb\": %.1f, \"worker_peak_rss_mb\": %.1f,"
                 " \"note\": \"embedded: the driver process hosts the node manager and the log\"",
                 n, driver_mb, worker_mb);
wait:
    if (!bench_wants(ctx, "single_client_wait_1k_refs"))
        goto out;
    /* as Ray's: submit 1000 tasks, then wait for one at a time until none
       is left (1000 waits, on 1000, 999, ... refs) */
    int rounds = (int) (20 * ctx->scale) + 3;
    lux_ref_t refs[1000], all[1000];
    int ready[1000];
    int64_t t0 = util_mono_ns();
    for (int r = 0; r < rounds && !rc; r++) {
        for (int i = 0; i < 1000 && !rc; i++)
            rc = lux_call(lx, "bench_noop", 0, NULL, 1, &refs[i]);
        memcpy(all, refs, sizeof all);
        for (int left = 1000; left > 0 && !rc;) {
            if (lux_wait(lx, left, refs, 1, 60000, ready) < 1) {
                rc = util_err(LUX_ETIMEDOUT, "lux_wait: nothing ready within 60 s");
                break;
            }
            for (int i = 0; i < left; i++)
                if (ready[i]) { /* take one, as ray.wait(num_returns=1) does */
                    refs[i] = refs[--left];
                    break;
                }
        }
        lux_free(lx, 1000, all);
    }
    if (!rc)
        bench_report(ctx, "single_client_wait_1k_refs", rounds / s_secs(t0), "rounds/s",
                     ", \"rounds\": %d, \"note\": \"each round: submit 1000 no-op tasks,"
                     " then wait for one at a time until none is left, as Ray's\"",
                     rounds);
out:
    lux_shutdown(&lx);
    return rc;
}

/* --- many clients: driver processes ---------------------------------------------------- */

int
cmd_bench_client(int argc, char **argv)
{
    if (argc != 3)
        return lux_usage("bench-client", "lux bench-client ADDRESS TASKS", "internal");
    lux_config_t cfg = {.address = argv[1]};
    lux_t *lx = lux_init(&cfg);
    double rate;
    if (!lx)
        return lux_fail("bench-client", "%s", lux_errmsg());
    int rc = s_async(lx, atoi(argv[2]), &rate);
    lux_shutdown(&lx);
    if (rc)
        return lux_fail("bench-client", "%s", lux_errmsg());
    return 0;
}

static int
s_multi(bench_ctx_t *ctx, const char *name)
{
    lux_t *lx = s_init(ctx);
    char exe[PATH_MAX], ntasks[32];
    int clients = 4, rc = 0;
    double rate;
    if (!lx)
        return LUX_EIO;
    if ((rc = s_async(lx, 2000, &rate)) || (rc = util_self_exe(exe, sizeof exe)))
        goto out;
    int per = (int) (250000 * ctx->scale) + 100;
    snprintf(ntasks, sizeof ntasks, "%d", per);
    pid_t pids[4];
    int64_t t0 = util_mono_ns();
    for (int k = 0; k < clients; k++) {
        char *args[] = {exe, "bench-client", (char *) lux_dir(lx), ntasks, NULL};
        pids[k] = util_spawn(args, NULL);
    }
    for (int k = 0; k < clients; k++) {
        int status = 0;
        if (pids[k] < 0 || waitpid(pids[k], &status, 0) != pids[k] || !WIFEXITED(status) ||
            WEXITSTATUS(status))
            rc = util_err(LUX_EIO, "a client process failed (status %d)", status);
    }
    if (!rc)
        bench_report(ctx, "multi_client_tasks_async", (double) clients * per / s_secs(t0),
                     "tasks/s", ", \"clients\": %d, \"tasks\": %d, \"note\": \"driver processes "
                     "on one node, counting their start-up\"",
                     clients, clients * per);
out:
    lux_shutdown(&lx);
    return rc;
}

/* --- objects ------------------------------------------------------------------------------- */

static int
s_objects(bench_ctx_t *ctx, const char *name)
{
    lux_t *lx = s_init(ctx);
    int rc = 0;
    if (!lx)
        return LUX_EIO;
    if (!bench_wants(ctx, "single_client_put_calls") &&
        !bench_wants(ctx, "single_client_get_calls"))
        goto gigabytes;
    int n = (int) (200000 * ctx->scale) + 100;
    lux_ref_t *refs = malloc((size_t) n * sizeof *refs);
    int64_t zero = 0;
    int64_t t0 = util_mono_ns();
    for (int i = 0; i < n && !rc; i++)
        rc = lux_put(lx, &zero, sizeof zero, &refs[i]);
    double put_rate = n / s_secs(t0);
    lux_val_t val;
    t0 = util_mono_ns();
    for (int i = 0; i < n && !rc; i++)
        rc = lux_get(lx, &refs[0], &val, 10000);
    double get_rate = n / s_secs(t0);
    lux_free(lx, n, refs);
    free(refs);
    if (rc)
        goto out;
    bench_report(ctx, "single_client_put_calls", put_rate, "ops/s", ", \"bytes\": 8, \"n\": %d", n);
    bench_report(ctx, "single_client_get_calls", get_rate, "ops/s", ", \"bytes\": 8, \"n\": %d", n);

gigabytes:
    if (!bench_wants(ctx, "single_client_put_gigabytes") &&
        !bench_wants(ctx, "single_client_get_gigabytes"))
        goto out;
    size_t big = (size_t) (1e9 * (ctx->scale < 1 ? 0.1 : 1.0));
    char *buf = malloc(big);
    if (!buf) {
        rc = util_err(LUX_ENOMEM, "cannot allocate %zu bytes", big);
        goto out;
    }
    memset(buf, 3, big);
    double pv[5], gv[5], small_us[5];
    lux_ref_t ref;
    /* warm-up: the store's pages get touched once (reported: the first
       touch of fresh shared pages is the kernel's, and costs) */
    t0 = util_mono_ns();
    if ((rc = lux_put(lx, buf, big, &ref)))
        goto out_buf;
    double cold = (double) big / 1e9 / s_secs(t0);
    lux_free(lx, 1, &ref);
    for (int r = 0; r < 5 && !rc; r++) {
        t0 = util_mono_ns();
        rc = lux_put(lx, buf, big, &ref);
        pv[r] = (double) big / 1e9 / s_secs(t0);
        if (rc)
            break;
        t0 = util_mono_ns();
        rc = lux_get(lx, &ref, &val, 30000);
        gv[r] = (double) big / 1e9 / s_secs(t0);
        if (!rc && (val.size != big || ((const char *) val.data)[big / 2] != 3))
            rc = util_err(LUX_ECORRUPT, "read back the wrong bytes");
        lux_free(lx, 1, &ref);
        /* the same for 1 MB, to see the cost does not depend on size */
        if (!rc && !(rc = lux_put(lx, buf, 1 << 20, &ref))) {
            t0 = util_mono_ns();
            rc = lux_get(lx, &ref, &val, 30000);
            small_us[r] = (double) (util_mono_ns() - t0) / 1e3;
            lux_free(lx, 1, &ref);
        }
    }
    if (!rc) {
        double gm = bench_median(gv, 5), pm = bench_median(pv, 5);
        bench_report(ctx, "single_client_put_gigabytes", pm, "GB/s",
                     ", \"bytes\": %zu, \"min\": %.2f, \"max\": %.2f, \"first_put\": %.2f,"
                     " \"note\": \"copy and fingerprint into store pages touched before; "
                     "first_put is onto fresh pages\"", big, pv[0], pv[4], cold);
        bench_report(ctx, "single_client_get_gigabytes", gm, "GB/s",
                     ", \"bytes\": %zu, \"us_per_get\": %.1f, \"us_per_get_1mb\": %.1f,"
                     " \"note\": \"read in place in the shared store: the cost does not depend"
                     " on the size\"",
                     big, (double) big / 1e9 / gm * 1e6, bench_median(small_us, 5));
    }
out_buf:
    free(buf);
out:
    lux_shutdown(&lx);
    return rc;
}

/* --- DAGs ------------------------------------------------------------------------------------ */

static int
s_dags(bench_ctx_t *ctx, const char *name)
{
    lux_t *lx = s_init(ctx);
    int rc = 0;
    double rate;
    if (!lx)
        return LUX_EIO;
    if ((rc = s_async(lx, 2000, &rate)))
        goto out;
    int n = (int) (2000 * ctx->scale) + 20;
    lux_ref_t prev, next;
    lux_val_t val;
    int64_t one = 1, t0 = util_mono_ns();
    rc = lux_call(lx, "bench_sum", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, &prev);
    for (int i = 1; i < n && !rc; i++) {
        rc = lux_call(lx, "bench_sum", 2, (lux_arg_t[]) {LUX_REF(prev), LUX_VAL(&one, 8)}, 1,
                      &next);
        lux_free(lx, 1, &prev);
        prev = next;
    }
    if (!rc)
        rc = lux_get(lx, &prev, &val, 120000);
    double chain = s_secs(t0);
    if (!rc && *(const int64_t *) val.data != n)
        rc = util_err(LUX_ECORRUPT, "the chain summed to %lld, not %d",
                      (long long) *(const int64_t *) val.data, n);
    lux_free(lx, 1, &prev);
    if (rc)
        goto out;
    bench_report(ctx, "dag_chain_2000", chain, "s", ", \"tasks\": %d, \"tasks_per_s\": %.0f", n,
                 n / chain);
    int leaves = (int) (10000 * ctx->scale) + 10, m = leaves, tasks = leaves;
    lux_ref_t *level = malloc((size_t) leaves * sizeof *level);
    t0 = util_mono_ns();
    for (int i = 0; i < leaves && !rc; i++)
        rc = lux_call(lx, "bench_sum", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, &level[i]);
    while (m > 1 && !rc) {
        int k = 0;
        for (int i = 0; i + 1 < m && !rc; i += 2, k++) {
            lux_ref_t out;
            rc = lux_call(lx, "bench_sum", 2, (lux_arg_t[]) {LUX_REF(level[i]), LUX_REF(level[i + 1])},
                          1, &out);
            lux_free(lx, 2, &level[i]);
            level[k] = out;
            tasks++;
        }
        if (m % 2)
            level[k++] = level[m - 1];
        m = k;
    }
    if (!rc)
        rc = lux_get(lx, &level[0], &val, 120000);
    double tree = s_secs(t0);
    if (!rc && *(const int64_t *) val.data != leaves)
        rc = util_err(LUX_ECORRUPT, "the tree summed to %lld, not %d",
                      (long long) *(const int64_t *) val.data, leaves);
    lux_free(lx, 1, &level[0]);
    free(level);
    if (!rc)
        bench_report(ctx, "dag_tree_10000", tree, "s",
                     ", \"leaves\": %d, \"tasks\": %d, \"tasks_per_s\": %.0f", leaves, tasks,
                     tasks / tree);
out:
    lux_shutdown(&lx);
    return rc;
}

/* --- a million queued tasks ------------------------------------------------------------------ */

static int
s_queued(bench_ctx_t *ctx, const char *name)
{
    db_cluster_t c;
    int rc;
    if ((rc = bench_own_cluster(ctx, "it measures the node manager of a head of its own")))
        return rc;
    if ((rc = bench_cluster_start(ctx, &c, 2, 1, &(lux_node_args_t) {0})))
        return rc;
    lux_config_t cfg = {.address = c.dir};
    lux_t *lx = lux_init(&cfg);
    char gate[PATH_MAX + 16];
    int n = (int) (1000000 * ctx->scale) + 100;
    lux_ref_t gref, *refs = malloc((size_t) n * sizeof *refs);
    if (!lx || !refs) {
        rc = LUX_EIO;
        goto out;
    }
    snprintf(gate, sizeof gate, "%s/gate", c.dir);
    pid_t nm = lux_head_pid(c.dir);
    if ((rc = lux_call(lx, "bench_gate", 1, (lux_arg_t[]) {LUX_VAL(gate, strlen(gate))}, 1,
                       &gref)))
        goto out;
    usleep(200000);
    int64_t before = util_proc_rss(nm, NULL);
    for (int i = 0; i < n && !rc; i++)
        rc = lux_call(lx, "bench_noop", 1, (lux_arg_t[]) {LUX_REF(gref)}, 1, &refs[i]);
    exec_client_flush(lx);
    /* wait until the node manager has them all (its memory stops growing) */
    int64_t rss = before, last = -1;
    for (int i = 0; i < 600 && rss != last; i++) {
        last = rss;
        usleep(100000);
        rss = util_proc_rss(nm, NULL);
    }
    lux_val_t *vals = malloc((size_t) n * sizeof *vals);
    if (util_write_file(gate, "go", 2, 0600) == 0 && !rc && vals)
        rc = lux_get_many(lx, n, refs, vals, 600000);
    free(vals);
    if (!rc)
        bench_report(ctx, "queued_tasks_memory", (double) (rss - before) / 1048576.0, "MB",
                     ", \"tasks\": %d, \"bytes_per_task\": %.0f, \"process\": \"the head's "
                     "supervisor (node manager, chain master, log client)\"",
                     n, (double) (rss - before) / n);
out:
    free(refs);
    lux_shutdown(&lx);
    bench_cluster_stop(ctx, &c);
    return rc;
}

/* --- actors ---------------------------------------------------------------------------- */

static int
s_actors(bench_ctx_t *ctx, const char *name)
{
    lux_t *lx = s_init(ctx);
    lux_actor_t as[8];
    int rc = 0;
    double v[3], rate;
    if (!lx)
        return LUX_EIO;
    for (int i = 0; i < 8 && !rc; i++)
        rc = lux_actor_create(lx, "BenchCtr", 0, NULL, NULL, &as[i]);
    if (rc || (rc = s_calls(lx, as, 8, 8000, &rate))) /* warm up: all started */
        goto out;
    if (bench_wants(ctx, "1_1_actor_calls_sync")) {
        int n = (int) (5000 * ctx->scale) + 50;
        for (int r = 0; r < 3 && !rc; r++) {
            int64_t t0 = util_mono_ns();
            for (int i = 0; i < n && !rc; i++) {
                lux_ref_t ref;
                lux_val_t val;
                rc = lux_actor_call(lx, &as[0], "noop", 0, NULL, 1, &ref);
                if (!rc)
                    rc = lux_get(lx, &ref, &val, 30000);
                lux_free(lx, 1, &ref);
            }
            v[r] = n / s_secs(t0);
        }
        if (rc)
            goto out;
        double med = bench_median(v, 3);
        bench_report(ctx, "1_1_actor_calls_sync", med, "calls/s",
                     ", \"calls\": %d, \"min\": %.0f, \"max\": %.0f, \"logged\": true", n, v[0],
                     v[2]);
    }
    /* one driver, async: to one actor, then to 4 in turn */
    static const struct { const char *name; int actors; } async[] = {
        {"1_1_actor_calls_async", 1}, {"1_n_actor_calls_async", 4}};
    for (int k = 0; k < 2; k++) {
        if (!bench_wants(ctx, async[k].name))
            continue;
        int n = (int) (100000 * ctx->scale) + 100;
        for (int r = 0; r < 3 && !rc; r++)
            rc = s_calls(lx, as, async[k].actors, n, &v[r]);
        if (rc)
            goto out;
        double med = bench_median(v, 3);
        bench_report(ctx, async[k].name, med, "calls/s",
                     ", \"calls\": %d, \"actors\": %d, \"min\": %.0f, \"max\": %.0f, "
                     "\"logged\": true", n, async[k].actors, v[0], v[2]);
    }
    if (bench_wants(ctx, "n_n_actor_calls_async")) {
        int callers = (int) sysconf(_SC_NPROCESSORS_ONLN);
        if (callers > 8)
            callers = 8;
        if (callers < 2)
            callers = 2;
        int64_t per = (int64_t) (50000 * ctx->scale) + 100;
        for (int r = 0; r < 3 && !rc; r++) {
            lux_ref_t refs[8];
            lux_val_t vals[8];
            int64_t t0 = util_mono_ns();
            for (int i = 0; i < callers && !rc; i++)
                rc = lux_call(lx, "bench_actor_caller", 2,
                              (lux_arg_t[]) {LUX_VAL(&as[i], sizeof as[i]), LUX_VAL(&per, 8)}, 1,
                              &refs[i]);
            if (!rc)
                rc = lux_get_many(lx, callers, refs, vals, 600000);
            v[r] = (double) (per * callers) / s_secs(t0);
            lux_free(lx, callers, refs);
        }
        if (rc)
            goto out;
        double med = bench_median(v, 3);
        bench_report(ctx, "n_n_actor_calls_async", med, "calls/s",
                     ", \"callers\": %d, \"calls_per_caller\": %lld, \"min\": %.0f, "
                     "\"max\": %.0f, \"note\": \"callers are tasks on the node's workers\"",
                     callers, (long long) per, v[0], v[2]);
    }
    if (bench_wants(ctx, "actor_restart_replay")) {
        /* an actor that may restart, with no checkpoint: a restart
           re-applies every call from the log */
        int n = (int) (20000 * ctx->scale) + 100;
        for (int r = 0; r < 3 && !rc; r++) {
            lux_actor_t a;
            lux_ref_t ref;
            lux_val_t val;
            int64_t pid = 0, count = 0;
            rc = lux_actor_create(lx, "BenchCtr", 0, NULL,
                                  &(lux_actor_opts_t) {.max_restarts = 1}, &a);
            if (!rc)
                rc = s_calls(lx, &a, 1, n, &rate);
            if (!rc && !(rc = lux_actor_call(lx, &a, "pid", 0, NULL, 1, &ref)) &&
                !(rc = lux_get(lx, &ref, &val, 30000)) && val.size == 8)
                memcpy(&pid, val.data, 8);
            if (rc || pid <= 0)
                goto out;
            int64_t t0 = util_mono_ns();
            kill((pid_t) pid, SIGKILL); /* its process: one this benchmark's cluster started */
            if ((rc = lux_actor_call(lx, &a, "count", 0, NULL, 1, &ref)) ||
                (rc = lux_get(lx, &ref, &val, 120000)))
                goto out;
            double secs = s_secs(t0);
            if (val.size == 8)
                memcpy(&count, val.data, 8);
            if (count != n) {
                rc = util_err(LUX_ECORRUPT, "actor_restart_replay: %lld calls after the replay, "
                              "not %d", (long long) count, n);
                goto out;
            }
            v[r] = (n + 1) / secs; /* its calls and the pid() call */
            lux_actor_kill(lx, &a);
        }
        if (rc)
            goto out;
        double med = bench_median(v, 3);
        bench_report(ctx, "actor_restart_replay", med, "calls/s",
                     ", \"calls\": %d, \"min\": %.0f, \"max\": %.0f, \"note\": \"from the kill "
                     "to the first new call's result, including the new process's start\"",
                     n + 1, v[0], v[2]);
    }
out:
    lux_shutdown(&lx);
    return rc;
}

/* A synchronous actor call against a `lux start` head whose one shard has
   R = 1 and then R = 3 replicas, in one run: an actor call's result waits
   for its actor_call event to be committed at the tail, so a chain adds
   its hops to every call (issue 25 measured 20 episodes of sim.so at 3.4 s
   embedded against 20.5 s on a 3-replica head). Each head is its own, the
   driver attached to it by --address as `lux run --address` is. */
static int
s_head_actors(bench_ctx_t *ctx, const char *name)
{
    static const uint32_t reps[2] = {1, 3};
    static const char *const names[2] = {"head_r1_actor_calls_sync", "head_r3_actor_calls_sync"};
    int rc;
    (void) name;
    if ((rc = bench_own_cluster(ctx, "it measures heads of its own")))
        return rc;
    for (int k = 0; k < 2 && !rc; k++) {
        if (!bench_wants(ctx, names[k]))
            continue;
        db_cluster_t c;
        if ((rc = bench_cluster_start(ctx, &c, 1, reps[k], &(lux_node_args_t) {0})))
            break;
        lux_t *lx = lux_init(&(lux_config_t) {.address = c.dir});
        lux_actor_t a;
        double v[3] = {0}, warm;
        int n = (int) (3000 * ctx->scale) + 50;
        if (!lx)
            rc = util_err_ctx(LUX_EIO, "lux_init --address %s", c.dir);
        else if (!(rc = lux_actor_create(lx, "BenchCtr", 0, NULL, NULL, &a)))
            rc = s_calls(lx, &a, 1, 1000, &warm); /* started, and warm */
        for (int r = 0; r < 3 && !rc; r++) {
            int64_t t0 = util_mono_ns();
            for (int i = 0; i < n && !rc; i++) {
                lux_ref_t ref;
                lux_val_t val;
                rc = lux_actor_call(lx, &a, "noop", 0, NULL, 1, &ref);
                if (!rc)
                    rc = lux_get(lx, &ref, &val, 30000);
                lux_free(lx, 1, &ref);
            }
            v[r] = n / s_secs(t0);
        }
        lux_shutdown(&lx);
        bench_cluster_stop(ctx, &c);
        if (rc)
            break;
        double med = bench_median(v, 3); /* sorts v */
        bench_report(ctx, names[k], med, "calls/s",
                     ", \"calls\": %d, \"replicas\": %u, \"shards\": 1, \"min\": %.0f, "
                     "\"max\": %.0f, \"logged\": true",
                     n, reps[k], v[0], v[2]);
    }
    return rc;
}

/* --- who made a ref, on a big log --------------------------------------------------- */

/* n task_submitted events of one job (tasks of its driver, as the
   runtime logs them) appended to the head's log by a client of it. */
static int
s_who_fill(db_cluster_t *c, uint64_t n)
{
    char keys[PATH_MAX + 32];
    net_sec_t *sec = net_sec_load(db_cluster_path(c, keys, sizeof keys, "keys"));
    db_client_opts_t co = {.cluster = c, .sec = sec};
    db_client_t *cl = sec ? db_client_new(&co) : NULL;
    if (!cl) {
        net_sec_destroy(&sec);
        return util_err_ctx(LUX_EIO, "a client of the log");
    }
    util_id_t job, root, zero = {{0}}, task;
    util_id_random(&job);
    util_id_child(&root, &job, &zero, 0);
    int rc = 0;
    for (uint64_t k = 1; k <= n && !rc; k++) {
        db_event_t e;
        memset(&e, 0, sizeof e);
        e.kind = DB_K_task_submitted;
        util_id_child(&task, &job, &root, k);
        DB_SET_ID(&e, task, DB_F_TASK, &task);
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        DB_SET_ID(&e, parent, DB_F_PARENT, &root);
        DB_SET_INT(&e, attempt, DB_F_ATTEMPT, 1);
        db_event_set_name(&e, "bench_noop");
        rc = db_client_append(cl, &e);
    }
    if (!rc)
        rc = db_client_sync(cl, 300000);
    db_client_destroy(&cl);
    net_sec_destroy(&sec);
    return rc;
}

/* The prober (a process of its own): no-op tasks one at a time until
   the file `stop` exists, each task's start and latency (ns, the
   monotonic clock every process shares) written to `out`. */
static int
s_who_probe(const char *dir, const char *ready, const char *stop, const char *out)
{
    lux_t *lx = lux_init(&(lux_config_t) {.address = dir});
    if (!lx)
        return 1;
    FILE *f = fopen(out, "w");
    int rc = 0;
    for (int i = 0; !rc && f; i++) {
        if (i == 200) /* warm: every worker has the module */
            fclose(fopen(ready, "w"));
        if (i >= 200 && (i % 16 == 0) && util_exists(stop))
            break;
        lux_ref_t ref;
        lux_val_t val;
        int64_t t0 = util_mono_ns();
        rc = lux_call(lx, "bench_noop", 0, NULL, 1, &ref);
        if (!rc)
            rc = lux_get(lx, &ref, &val, 300000);
        lux_free(lx, 1, &ref);
        if (i >= 200)
            fprintf(f, "%lld %lld\n", (long long) t0, (long long) (util_mono_ns() - t0));
    }
    if (f)
        fclose(f);
    lux_shutdown(&lx);
    return rc || !f;
}

static int
s_who(bench_ctx_t *ctx, const char *name)
{
    db_cluster_t c;
    int rc;
    uint64_t n = (uint64_t) (2000000 * ctx->scale);
    char ready[PATH_MAX], stop[PATH_MAX], out[PATH_MAX];
    int64_t g0 = 0, g1 = 0;
    int grc = 0;
    (void) name;
    char token[PATH_MAX + 32], address[64], ndir[PATH_MAX + 32] = "";
    if ((rc = bench_own_cluster(ctx, "it fills a head's log of its own")))
        return rc;
    if ((rc = bench_tcp_head(ctx, &c)))
        goto out;
    lux_token_path(&c, token, sizeof token);
    snprintf(address, sizeof address, "127.0.0.1:%d", c.master_port);
    snprintf(ndir, sizeof ndir, "%s-a", c.dir);
    lux_join_args_t ja = {.address = address, .dir = ndir, .token_file = token,
                          .node_ip = "127.0.0.2", .workers = 1, .store_mb = 64,
                          .resources = "CPU=1,w=1", .timeout_ms = 60000, .quiet = true};
    if ((rc = lux_node_start(&ja))) {
        ndir[0] = 0;
        goto out;
    }
    int64_t t0 = util_mono_ns();
    if ((rc = s_who_fill(&c, n)))
        goto out;
    double fill_s = s_secs(t0);
    snprintf(ready, sizeof ready, "%s/who.ready", ctx->tmp);
    snprintf(stop, sizeof stop, "%s/who.stop", ctx->tmp);
    snprintf(out, sizeof out, "%s/who.probe", ctx->tmp);
    unlink(ready);
    unlink(stop);
    pid_t pid = fork();
    if (pid == 0)
        _exit(s_who_probe(c.dir, ready, stop, out));
    lux_t *lx = pid > 0 ? lux_init(&(lux_config_t) {.address = c.dir}) : NULL;
    for (int i = 0; lx && i < 6000 && !util_exists(ready); i++)
        usleep(10000);
    if (!lx || !util_exists(ready)) {
        rc = util_err(LUX_EIO, "the prober did not start");
        if (pid > 0)
            kill(pid, SIGKILL);
        goto join;
    }
    sleep(2); /* the prober's tasks before */
    lux_ref_t madeup;
    lux_val_t val;
    util_id_t r0, r1;
    util_id_random(&r0);
    util_id_random(&r1);
    memcpy(madeup.b, r0.b, 16);
    memcpy(madeup.b + 16, r1.b, 4);
    /* a task reading it, run on the node: placed by the head, which asks
       the log who made the ref, as for each of the node's asks */
    lux_arg_t arg = LUX_REF(madeup);
    lux_ref_t ref;
    lux_opts_t o = {.resources = "w=1"};
    g0 = util_mono_ns();
    grc = lux_call_opts(lx, &o, "bench_noop", 1, &arg, 1, &ref);
    if (!grc) {
        grc = lux_get(lx, &ref, &val, 300000);
        lux_free(lx, 1, &ref);
    }
    g1 = util_mono_ns();
    sleep(1);
    fclose(fopen(stop, "w"));
join:;
    int st = 0;
    if (pid > 0)
        waitpid(pid, &st, 0);
    lux_shutdown(&lx);
    if (rc)
        goto out;
    /* the task fails: its argument was made by no one */
    if (grc == 0 || !strstr(lux_errmsg(), "no driver or task of this cluster's log made it") ||
        !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char why[UTIL_ERRMSG_MAX];
        snprintf(why, sizeof why, "%s", lux_errmsg());
        rc = util_err(LUX_EIO, "the task reading a made-up ref ended %d (%s), the prober %d",
                      grc, why, st);
        goto out;
    }
    /* the slowest no-op task that overlapped the get, and before it */
    double during = 0, before = 0;
    long nd = 0, nb = 0;
    FILE *f = fopen(out, "r");
    long long ts, lat;
    while (f && fscanf(f, "%lld %lld", &ts, &lat) == 2) {
        double ms = (double) lat / 1e6;
        if (ts + lat < g0) {
            before = ms > before ? ms : before;
            nb++;
        } else if (ts < g1) {
            during = ms > during ? ms : during;
            nd++;
        }
    }
    if (f)
        fclose(f);
    bench_report(ctx, "who_madeup_ms", (double) (g1 - g0) / 1e6, "ms",
                 ", \"tasks_in_log\": %llu, \"fill_s\": %.1f, \"slowest_noop_during_ms\": %.1f,"
                 " \"noops_during\": %ld, \"slowest_noop_before_ms\": %.1f, \"noops_before\": %ld",
                 (unsigned long long) n, fill_s, during, nd, before, nb);
out:
    if (ndir[0]) {
        char cmd[PATH_MAX + 64];
        if (lux_node_stop(ndir, 30000))
            fprintf(stderr, "lux bench: %s\n", lux_errmsg());
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ndir);
        if (system(cmd) != 0)
            fprintf(stderr, "lux bench: could not remove %s\n", ndir);
    }
    bench_cluster_stop(ctx, &c);
    return rc;
}

/* An idle head: nothing submitted, 5 s after it settled. Every process of
   the head (the supervisor with its node manager and chain master, the
   replicas, the idle workers) is summed. */
static int
s_idle(bench_ctx_t *ctx, const char *name)
{
    db_cluster_t c;
    int rc, pids[16] = {0}, n = 0;
    if ((rc = bench_own_cluster(ctx, "it measures a head of its own, idle")) ||
        (rc = bench_cluster_start(ctx, &c, 2, 1, &(lux_node_args_t) {0})))
        return rc;
    usleep(2000000); /* the workers start, the first heartbeats go round */
    /* the supervisor (node manager, chain master) started every other
       process of the head: the replicas and the workers */
    int sup = lux_head_pid(c.dir);
    if (sup > 0) {
        pids[n++] = sup;
        n += s_children(sup, pids + n, 16 - n);
    }
    int64_t cpu0 = 0, cpu1 = 0, t0 = util_mono_ns();
    for (int i = 0; i < n; i++)
        cpu0 += util_proc_cpu_ns(pids[i]);
    usleep((useconds_t) (5000000 * (ctx->scale < 1 ? 0.2 : 1)));
    for (int i = 0; i < n; i++)
        cpu1 += util_proc_cpu_ns(pids[i]);
    double pct = 100.0 * (double) (cpu1 - cpu0) / (double) (util_mono_ns() - t0);
    if (sup <= 0)
        rc = util_err(LUX_ENOTFOUND, "no head running in %s", c.dir);
    else
        bench_report(ctx, "idle_head_cpu", pct, "%",
                     ", \"processes\": %d, \"seconds\": %.1f, \"shards\": 2", n,
                     (double) (util_mono_ns() - t0) / 1e9);
    bench_cluster_stop(ctx, &c);
    return rc;
}

const bench_t bench_exec[] = {
    {"memcpy_gigabytes", s_memcpy, "this machine's memcpy bandwidth, GB/s"},
    {"embedded_start_ms", s_start, "lux_init to the first task's result, ms"},
    {"single_client_tasks_sync", s_tasks, "no-op tasks one at a time, tasks/s"},
    {"single_client_tasks_async", s_tasks, "a million no-op tasks, tasks/s"},
    {"single_client_wait_1k_refs", s_tasks, "rounds of 1000 tasks and a wait, /s"},
    {"multi_client_tasks_async", s_multi, "four drivers at once, tasks/s"},
    {"single_client_put_calls", s_objects, "small puts, ops/s"},
    {"single_client_get_calls", s_objects, "small gets, ops/s"},
    {"single_client_put_gigabytes", s_objects, "1 GB puts, GB/s"},
    {"single_client_get_gigabytes", s_objects, "1 GB gets in place, GB/s"},
    {"dag_chain_2000", s_dags, "a chain of 2000 tasks, s"},
    {"dag_tree_10000", s_dags, "a tree reduction of 10,000 leaves, s"},
    {"queued_tasks_memory", s_queued, "node manager memory for a million queued tasks, MB"},
    {"idle_head_cpu", s_idle, "CPU of an idle head, all its processes, % of a core"},
    {"head_r1_actor_calls_sync", s_head_actors, "sync actor calls on a head, R=1, calls/s"},
    {"head_r3_actor_calls_sync", s_head_actors, "sync actor calls on a head, R=3, calls/s"},
    {"who_madeup_ms", s_who, "a made-up ref's get on a head with 2M tasks logged, ms"},
    {"1_1_actor_calls_sync", s_actors, "one actor, one call at a time, calls/s"},
    {"1_1_actor_calls_async", s_actors, "one actor, 100,000 calls, calls/s"},
    {"1_n_actor_calls_async", s_actors, "one driver, 4 actors, calls/s"},
    {"n_n_actor_calls_async", s_actors, "a caller task per core, an actor each, calls/s"},
    {"actor_restart_replay", s_actors, "calls re-applied per second after a restart"},
};
const int bench_exec_n = sizeof bench_exec / sizeof bench_exec[0];
