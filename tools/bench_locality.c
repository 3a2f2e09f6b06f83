/*  bench_locality - the Ray paper's figure 8a on a small scale, on this
    machine (a tcp head on 127.0.0.1 and nodes A and B on 127.0.0.2 and
    127.0.0.3, the loopback form of t/lib/cluster.sh):

    locality_placement  tasks, one at a time, each depending on one 64 MiB
                        object put on A or B in turn (by a driver of that
                        node) and submitted on the head, which cannot run
                        them (they need resource w, which only A and B
                        have): the global scheduler places each. Mean
                        submit-to-result latency in ms with locality (the
                        node that holds the object), and beside it the same
                        with placement at random between A and B (a second
                        cluster whose head's node manager has
                        LUX_PLACE_RANDOM=1, a switch for benchmarks only,
                        exec_remote.c), where about half the tasks pull
                        their object from the other node first (its bytes
                        random: lz4 cannot shrink them); the ratio
                        random/locality of the means; the medians and
                        90th percentiles of both, and the seed of the
                        random draws (LUX_PLACE_SEED=N repeats them).

    WHY THE MEAN. With two nodes and placement at random, the random run's
    latencies are a mixture of two groups of about 50 each: tasks placed
    on the holder (as fast as with locality) and tasks that pull 64 MiB
    first (tens to hundreds of times slower). Its median is the middle
    one of 100, so it falls in whichever group holds the 50th: a coin
    flip of the draws, and the ratio of medians came out 1.5-3.0 in some
    runs and 61-97x in others from the same code (doc/benchmarks.md).
    The mean weighs every task, the pulled ones by what they cost; the
    90th percentile shows the pulled group whenever more than a tenth of
    the tasks pull. The medians stay beside, for comparison with older
    figures.
*/
#include "lux_bench.h"
#include "lux_node.h"
#include "lux.h"
#include "exec/exec_gsched.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_OBJ ((size_t) 64 << 20)
#define S_STORE_MB 512

/* A tcp head (bench_tcp_head: no resource w) and two nodes with w; 0 or
   a code. */
static int
s_up(bench_ctx_t *ctx, db_cluster_t *c, char ndir[2][PATH_MAX + 32])
{
    char token[PATH_MAX + 32], address[64];
    int rc = bench_tcp_head(ctx, c);
    if (rc)
        return rc;
    lux_token_path(c, token, sizeof token);
    snprintf(address, sizeof address, "127.0.0.1:%d", c->master_port);
    for (int i = 0; i < 2 && !rc; i++) {
        char ip[32];
        snprintf(ndir[i], sizeof ndir[i], "%s-%c", c->dir, 'a' + i);
        snprintf(ip, sizeof ip, "127.0.0.%d", 2 + i);
        lux_join_args_t ja = {.address = address, .dir = ndir[i], .token_file = token,
                              .node_ip = ip, .workers = 2, .store_mb = S_STORE_MB,
                              .resources = "CPU=2,w=2", .timeout_ms = 60000, .quiet = true};
        rc = lux_node_start(&ja);
    }
    return rc;
}

static void
s_down(bench_ctx_t *ctx, db_cluster_t *c, char ndir[2][PATH_MAX + 32])
{
    char cmd[PATH_MAX + 64];
    for (int i = 0; i < 2; i++) {
        if (!ndir[i][0])
            continue;
        if (lux_node_stop(ndir[i], 30000))
            fprintf(stderr, "lux bench: %s\n", lux_errmsg());
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ndir[i]);
        if (system(cmd) != 0)
            fprintf(stderr, "lux bench: could not remove %s\n", ndir[i]);
    }
    bench_cluster_stop(ctx, c);
}

/* n tasks on one cluster: their latencies in ms into ms[]. 0 or a code. */
static int
s_run(const db_cluster_t *c, char ndir[2][PATH_MAX + 32], const uint8_t *buf, int n, double *ms)
{
    lux_t *lx = lux_init(&(lux_config_t) {.address = c->dir});
    lux_t *node[2] = {lux_init(&(lux_config_t) {.address = ndir[0]}),
                      lux_init(&(lux_config_t) {.address = ndir[1]})};
    int rc = lx && node[0] && node[1] ? 0 : util_err_ctx(LUX_EIO, "lux_init of the cluster");
    lux_opts_t o = {.resources = "w=1"};
    lux_val_t v;
    lux_ref_t in, out;
    /* warm: both nodes' workers and the scheduler's table */
    for (int i = 0; !rc && i < 8; i++)
        if ((rc = lux_call_opts(lx, &o, "bench_noop", 0, NULL, 1, &out)) ||
            (rc = lux_get(lx, &out, &v, 60000)))
            break;
        else
            lux_free(lx, 1, &out);
    for (int i = 0; !rc && i < n; i++) {
        lux_t *h = node[i % 2];
        if ((rc = lux_put(h, buf, S_OBJ, &in)))
            break;
        int64_t t0 = util_mono_ns();
        if ((rc = lux_call_opts(lx, &o, "bench_noop", 1, (lux_arg_t[]) {LUX_REF(in)}, 1, &out)) ||
            (rc = lux_get(lx, &out, &v, 300000)))
            break;
        ms[i] = (double) (util_mono_ns() - t0) / 1e6;
        lux_free(lx, 1, &out);
        lux_free(h, 1, &in);
    }
    if (rc)
        rc = util_err_ctx(rc, "locality_placement");
    lux_shutdown(&node[1]);
    lux_shutdown(&node[0]);
    lux_shutdown(&lx);
    return rc;
}

static double
s_mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n ? s / n : -1;
}

/* The p-th percentile (nearest rank) of v[0..n), sorted ascending. */
static double
s_pct(const double *v, int n, int p)
{
    int k = (n * p + 99) / 100;
    return n ? v[k < 1 ? 0 : k - 1] : -1;
}

static int
s_locality(bench_ctx_t *ctx, const char *name)
{
    (void) name;
    int rc = bench_own_cluster(ctx, "it starts a head and two nodes of its own");
    if (rc)
        return rc;
    int n = (int) (100 * ctx->scale);
    n = n < 10 ? 10 : n;
    double *ms[2] = {calloc((size_t) n, sizeof(double)), calloc((size_t) n, sizeof(double))};
    uint8_t *buf = malloc(S_OBJ);
    if (!ms[0] || !ms[1] || !buf)
        rc = util_err(LUX_ENOMEM, "out of memory");
    /* bytes lz4 cannot shrink (a pull compresses chunks that pay) */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; buf && i + 8 <= S_OBJ; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(buf + i, &x, 8);
    }
    /* the random placement's seed: given (LUX_PLACE_SEED) or drawn here,
       and reported, so that the run can be repeated */
    const char *sd = getenv("LUX_PLACE_SEED");
    gs_rand_t g;
    uint64_t seed = gs_rand_seed(&g, sd ? strtoull(sd, NULL, 10) : 0);
    char seedtext[32];
    snprintf(seedtext, sizeof seedtext, "%llu", (unsigned long long) seed);
    /* 0: the scheduler as built (locality); 1: at random */
    for (int k = 0; k < 2 && !rc; k++) {
        db_cluster_t c;
        char ndir[2][PATH_MAX + 32] = {"", ""};
        if (k) { /* read by the head's node manager */
            setenv("LUX_PLACE_RANDOM", "1", 1);
            setenv("LUX_PLACE_SEED", seedtext, 1);
        }
        rc = s_up(ctx, &c, ndir);
        unsetenv("LUX_PLACE_RANDOM");
        if (sd)
            setenv("LUX_PLACE_SEED", sd, 1);
        else
            unsetenv("LUX_PLACE_SEED");
        if (!rc)
            rc = s_run(&c, ndir, buf, n, ms[k]);
        s_down(ctx, &c, ndir);
    }
    if (!rc) {
        double mean[2] = {s_mean(ms[0], n), s_mean(ms[1], n)};
        double med[2] = {bench_median(ms[0], n), bench_median(ms[1], n)}; /* sorts */
        double p90[2] = {s_pct(ms[0], n, 90), s_pct(ms[1], n, 90)};
        bench_report(ctx, "locality_placement", mean[0], "ms",
                     ", \"random_mean_ms\": %.1f, \"ratio\": %.1f, \"median_ms\": %.2f, "
                     "\"random_median_ms\": %.1f, \"median_ratio\": %.1f, \"p90_ms\": %.1f, "
                     "\"random_p90_ms\": %.1f, \"tasks\": %d, \"object_mib\": %zu, "
                     "\"seed\": %s",
                     mean[1], mean[0] > 0 ? mean[1] / mean[0] : 0, med[0], med[1],
                     med[0] > 0 ? med[1] / med[0] : 0, p90[0], p90[1], n, S_OBJ >> 20,
                     seedtext);
    }
    free(ms[0]);
    free(ms[1]);
    free(buf);
    return rc;
}

const bench_t bench_locality[] = {
    {"locality_placement", s_locality,
     "tasks on a 64 MiB object held on one of two nodes: mean ms with locality, random beside"},
};
const int bench_locality_n = sizeof bench_locality / sizeof bench_locality[0];
