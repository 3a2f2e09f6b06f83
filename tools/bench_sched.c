/*  bench_sched - scheduling across nodes, on this machine (a tcp head on
    127.0.0.1 and a node on 127.0.0.2, t/lib/cluster.sh's loopback form):

    multi_node_tasks_async  empty tasks submitted on the head, all at once,
                            every one needing a resource only the other
                            node has (so spilled there, through the head's
                            global scheduler, its result sent back): tasks
                            per second; the same run's single-node figure
                            (the same tasks without that resource, run on
                            the head) in "single_node", and the ratio
    spillback_latency_us    submit to result, one at a time, of an empty
                            task needing that resource: median in us (the
                            same for a task kept on the head, "local_us");
                            and what each task cost the whole run, load or
                            not: the wake-ups ("wakeups_per_task": a thread
                            that slept woken, voluntary context switches),
                            the preemptions ("preempted_per_task") and the
                            CPU time ("cpu_us_per_task": on a loaded VM it
                            grows with the load, spins and stolen time
                            counted) of the bench and every process it
                            started (the daemons, their workers), summed
                            over their threads from /proc; "local_..." the
                            same kept on the head. LUX_BENCH_PROCS=1 prints
                            them per process too
*/
#include "lux_bench.h"
#include "lux_node.h"
#include "lux.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define S_WORKERS 2

/* A tcp head on 127.0.0.1 with a token, and a node on 127.0.0.2 that has
   resource far=1000; both with S_WORKERS workers. */
static int
s_up(bench_ctx_t *ctx, db_cluster_t *c, char *ndir, size_t n)
{
    lux_node_args_t node = {.workers = S_WORKERS, .store_mb = 64, .resources = "CPU=2"};
    util_id_t id;
    char hex[UTIL_ID_HEX], token[PATH_MAX + 32], address[64];
    int rc = LUX_EEXIST;
    for (int tries = 0; tries < 5 && rc; tries++) {
        db_cluster_defaults(c);
        util_id_random(&id);
        snprintf(c->dir, sizeof c->dir, "%s/s-%.8s", ctx->tmp, util_id_hex(&id, hex));
        c->shards = 1;
        snprintf(c->listen, sizeof c->listen, "tcp://127.0.0.1");
        c->master_port = 20000 + (int) ((getpid() * 11 + tries * 17) % 20000);
        rc = lux_head_start(c, true, 60000, &node);
        if (rc)
            bench_cluster_stop(ctx, c);
    }
    if (rc || (rc = lux_token_write(c)))
        return rc;
    lux_token_path(c, token, sizeof token);
    snprintf(address, sizeof address, "127.0.0.1:%d", c->master_port);
    snprintf(ndir, n, "%s-b", c->dir);
    lux_join_args_t ja = {.address = address, .dir = ndir, .token_file = token,
                          .node_ip = "127.0.0.2", .workers = S_WORKERS, .store_mb = 64,
                          .resources = "CPU=2,far=1000", .timeout_ms = 60000, .quiet = true};
    return lux_node_start(&ja);
}

static void
s_down(bench_ctx_t *ctx, db_cluster_t *c, const char *ndir)
{
    char cmd[PATH_MAX + 32];
    if (ndir[0]) {
        if (lux_node_stop(ndir, 30000))
            fprintf(stderr, "lux bench: %s\n", lux_errmsg());
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ndir);
        if (system(cmd) != 0)
            fprintf(stderr, "lux bench: could not remove %s\n", ndir);
    }
    bench_cluster_stop(ctx, c);
}

/* What the processes of the run (this one and its descendants) have used:
   CPU ns and context switches, summed over their threads. */
#define S_PROCS_MAX 256
typedef struct {
    int n;
    pid_t pid[S_PROCS_MAX];
    char comm[S_PROCS_MAX][20];
    int64_t cpu_ns[S_PROCS_MAX], vol[S_PROCS_MAX], invol[S_PROCS_MAX];
} s_usage_t;

static pid_t
s_ppid(pid_t pid, char *comm, size_t n)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
    FILE *f = fopen(path, "r");
    size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[len] = '\0';
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    int ppid = 0;
    if (!open || !close || sscanf(close + 1, " %*c %d", &ppid) != 1)
        return 0;
    snprintf(comm, n, "%.*s", (int) (close - open - 1), open + 1);
    return (pid_t) ppid;
}

/* One process's threads: sum_exec_runtime (schedstat) and switches. */
static void
s_proc_usage(pid_t pid, int64_t *cpu_ns, int64_t *vol, int64_t *invol)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
    DIR *d = opendir(path);
    struct dirent *e;
    *cpu_ns = *vol = *invol = 0;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        long long v;
        snprintf(path, sizeof path, "/proc/%d/task/%.16s/schedstat", (int) pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fscanf(f, "%lld", &v) == 1)
            *cpu_ns += v;
        if (f)
            fclose(f);
        snprintf(path, sizeof path, "/proc/%d/task/%.16s/status", (int) pid, e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "voluntary_ctxt_switches: %lld", &v) == 1)
                *vol += v;
            else if (sscanf(line, "nonvoluntary_ctxt_switches: %lld", &v) == 1)
                *invol += v;
        fclose(f);
    }
    if (d)
        closedir(d);
}

static void
s_usage(s_usage_t *u)
{
    pid_t self = getpid(), pids[4096], ppids[4096];
    char comms[4096][20];
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < 4096) {
        pid_t pid = (pid_t) atoi(e->d_name);
        if (pid > 0 && (ppids[n] = s_ppid(pid, comms[n], sizeof comms[n])) > 0)
            pids[n++] = pid;
    }
    if (d)
        closedir(d);
    /* this process, then its descendants, a generation at a time */
    u->n = 1;
    u->pid[0] = self;
    snprintf(u->comm[0], sizeof u->comm[0], "bench");
    for (int k = 0; k < u->n; k++)
        for (int i = 0; i < n && u->n < S_PROCS_MAX; i++)
            if (ppids[i] == u->pid[k]) {
                u->pid[u->n] = pids[i];
                memcpy(u->comm[u->n++], comms[i], sizeof comms[i]);
            }
    for (int k = 0; k < u->n; k++)
        s_proc_usage(u->pid[k], &u->cpu_ns[k], &u->vol[k], &u->invol[k]);
}

/* After minus before, per task: CPU us, wake-ups and preemptions, summed;
   per process to stderr with LUX_BENCH_PROCS=1. */
static void
s_usage_diff(const s_usage_t *a, const s_usage_t *b, int tasks, const char *what, double out[3])
{
    const char *procs = getenv("LUX_BENCH_PROCS");
    int64_t cpu = 0, vol = 0, invol = 0;
    for (int k = 0; k < b->n; k++) {
        int64_t c0 = 0, v0 = 0, i0 = 0;
        for (int j = 0; j < a->n; j++)
            if (a->pid[j] == b->pid[k]) {
                c0 = a->cpu_ns[j];
                v0 = a->vol[j];
                i0 = a->invol[j];
            }
        cpu += b->cpu_ns[k] - c0;
        vol += b->vol[k] - v0;
        invol += b->invol[k] - i0;
        if (procs && *procs == '1' && b->cpu_ns[k] - c0 > 0)
            fprintf(stderr,
                    "lux bench: %s: pid %d %s: %.1f us CPU, %.2f wake-ups, %.2f preempted per task\n",
                    what, (int) b->pid[k], b->comm[k], (double) (b->cpu_ns[k] - c0) / 1e3 / tasks,
                    (double) (b->vol[k] - v0) / tasks, (double) (b->invol[k] - i0) / tasks);
    }
    out[0] = (double) cpu / 1e3 / tasks;
    out[1] = (double) vol / tasks;
    out[2] = (double) invol / tasks;
}

/* n empty tasks at once with resources res (NULL: none): tasks/s, or -1. */
static double
s_async(lux_t *lx, int n, const char *res)
{
    lux_ref_t *r = calloc((size_t) n, sizeof *r);
    lux_opts_t o = {.resources = res};
    lux_val_t v;
    if (!r)
        return -1;
    int64_t t0 = util_mono_ns();
    for (int i = 0; i < n; i++)
        if (lux_call_opts(lx, &o, "bench_noop", 0, NULL, 1, &r[i])) {
            free(r);
            return -1;
        }
    for (int i = 0; i < n; i++)
        if (lux_get(lx, &r[i], &v, 120000)) {
            free(r);
            return -1;
        }
    double s = (double) (util_mono_ns() - t0) / 1e9;
    lux_free(lx, n, r);
    free(r);
    return n / s;
}

/* Median submit-to-result of n empty tasks one at a time, us; -1. */
static double
s_latency(lux_t *lx, int n, const char *res)
{
    double *us = calloc((size_t) n, sizeof *us);
    lux_opts_t o = {.resources = res};
    lux_val_t v;
    lux_ref_t r;
    for (int i = 0; us && i < n; i++) {
        int64_t t0 = util_mono_ns();
        if (lux_call_opts(lx, &o, "bench_noop", 0, NULL, 1, &r) || lux_get(lx, &r, &v, 60000)) {
            free(us);
            return -1;
        }
        us[i] = (double) (util_mono_ns() - t0) / 1e3;
        lux_free(lx, 1, &r);
    }
    double m = us ? bench_median(us, n) : -1;
    free(us);
    return m;
}

static int
s_sched(bench_ctx_t *ctx, const char *name)
{
    db_cluster_t c;
    char ndir[PATH_MAX + 32] = "";
    int rc = bench_own_cluster(ctx, "it starts a head and a node of its own");
    if (rc || (rc = s_up(ctx, &c, ndir, sizeof ndir))) {
        if (!rc)
            s_down(ctx, &c, ndir);
        return rc;
    }
    lux_t *lx = lux_init(&(lux_config_t) {.address = c.dir});
    if (!lx) {
        rc = util_err_ctx(LUX_EIO, "lux_init --address %s", c.dir);
        s_down(ctx, &c, ndir);
        return rc;
    }
    /* warm both nodes' workers and the scheduler's table */
    s_async(lx, 50, NULL);
    s_async(lx, 50, "far=1");
    (void) name; /* one cluster for both rows, each measured when asked for */
    if (bench_wants(ctx, "multi_node_tasks_async")) {
        int n = (int) (4000 * ctx->scale);
        n = n < 200 ? 200 : n;
        double local = s_async(lx, n, NULL), far = s_async(lx, n, "far=1");
        if (local < 0 || far < 0)
            rc = util_err_ctx(LUX_EIO, "multi_node_tasks_async");
        else
            bench_report(ctx, "multi_node_tasks_async", far, "tasks/s",
                         ", \"single_node\": %.0f, \"ratio\": %.2f, \"tasks\": %d, "
                         "\"workers_per_node\": %d",
                         local, far / local, n, S_WORKERS);
    }
    if (!rc && bench_wants(ctx, "spillback_latency_us")) {
        int n = (int) (400 * ctx->scale);
        n = n < 50 ? 50 : n;
        static s_usage_t u0, u1, u2;
        double lu[3], fu[3];
        s_usage(&u0);
        double local = s_latency(lx, n, NULL);
        s_usage(&u1);
        double far = s_latency(lx, n, "far=1");
        s_usage(&u2);
        s_usage_diff(&u0, &u1, n, "local", lu);
        s_usage_diff(&u1, &u2, n, "spilled", fu);
        if (local < 0 || far < 0)
            rc = util_err_ctx(LUX_EIO, "spillback_latency_us");
        else
            bench_report(ctx, "spillback_latency_us", far, "us",
                         ", \"local_us\": %.0f, \"runs\": %d, \"wakeups_per_task\": %.2f, "
                         "\"preempted_per_task\": %.2f, \"cpu_us_per_task\": %.1f, "
                         "\"local_wakeups_per_task\": %.2f, \"local_preempted_per_task\": %.2f, "
                         "\"local_cpu_us_per_task\": %.1f",
                         local, n, fu[1], fu[2], fu[0], lu[1], lu[2], lu[0]);
    }
    lux_shutdown(&lx);
    s_down(ctx, &c, ndir);
    return rc;
}

const bench_t bench_sched[] = {
    {"multi_node_tasks_async", s_sched,
     "empty tasks all spilled to the other node (loopback), tasks/s; single_node beside"},
    {"spillback_latency_us", s_sched,
     "submit to result of an empty task only the other node can run, median us"},
};
const int bench_sched_n = sizeof bench_sched / sizeof bench_sched[0];
