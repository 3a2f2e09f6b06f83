/*  bench_cluster - benchmarks of a cluster of several machines, on this
    one (nodes on 127.0.0.2, 127.0.0.3, ...: t/lib/cluster.sh's loopback
    form): cluster_join_ms, from `lux start --address` to the node
    joined (its node manager serving, the head holding its first
    heartbeat). The multi-node rows of issue 28 (object transfer,
    spillback, locality) wait for the global scheduler and transfers.
*/
#include "lux_bench.h"
#include "lux_node.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
bench_tcp_head(bench_ctx_t *ctx, db_cluster_t *c)
{
    lux_node_args_t node = {.workers = 1, .store_mb = 64};
    util_id_t id;
    char hex[UTIL_ID_HEX];
    int rc = LUX_EEXIST;
    for (int tries = 0; tries < 5 && rc; tries++) {
        db_cluster_defaults(c);
        util_id_random(&id);
        snprintf(c->dir, sizeof c->dir, "%s/c-%.8s", ctx->tmp, util_id_hex(&id, hex));
        c->shards = 1;
        snprintf(c->listen, sizeof c->listen, "tcp://127.0.0.1");
        c->master_port = 20000 + (int) ((getpid() * 7 + tries * 13) % 20000);
        rc = lux_head_start(c, true, 60000, &node);
        if (rc)
            bench_cluster_stop(ctx, c);
    }
    return rc ? rc : (rc = lux_token_write(c)) ? rc : bench_test_head_gone(c);
}

static int
s_join(bench_ctx_t *ctx, const char *name)
{
    db_cluster_t c;
    char token[PATH_MAX + 32], address[64], ndir[PATH_MAX + 32], ip[32], cmd[PATH_MAX + 32];
    int rc = bench_own_cluster(ctx, "it starts a head and nodes of its own");
    if (rc || (rc = bench_tcp_head(ctx, &c)))
        return rc;
    lux_token_path(&c, token, sizeof token);
    snprintf(address, sizeof address, "127.0.0.1:%d", c.master_port);
    int n = (int) (10 * ctx->scale);
    n = n < 3 ? 3 : n;
    double *ms = calloc((size_t) n, sizeof *ms);
    for (int i = 0; i < n && !rc && ms; i++) {
        snprintf(ndir, sizeof ndir, "%s-n%d", c.dir, i);
        snprintf(ip, sizeof ip, "127.0.0.%d", 2 + i % 250);
        lux_join_args_t ja = {.address = address, .dir = ndir, .token_file = token,
                              .node_ip = ip, .workers = 1, .store_mb = 64,
                              .resources = "CPU=1", .timeout_ms = 60000, .quiet = true};
        int64_t t0 = util_mono_ns();
        rc = lux_node_start(&ja);
        ms[i] = (double) (util_mono_ns() - t0) / 1e6;
        if (!rc && lux_node_stop(ndir, 30000))
            fprintf(stderr, "lux bench: %s\n", lux_errmsg());
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ndir);
        if (system(cmd) != 0)
            fprintf(stderr, "lux bench: could not remove %s\n", ndir);
    }
    if (!rc && ms) {
        double lo = ms[0], hi = ms[0];
        for (int i = 1; i < n; i++)
            lo = ms[i] < lo ? ms[i] : lo, hi = ms[i] > hi ? ms[i] : hi;
        bench_report(ctx, name, bench_median(ms, n), "ms",
                     ", \"runs\": %d, \"min\": %.1f, \"max\": %.1f, \"workers\": 1, "
                     "\"store_mb\": 64",
                     n, lo, hi);
    }
    free(ms);
    bench_cluster_stop(ctx, &c);
    return rc;
}

const bench_t bench_cluster[] = {
    {"cluster_join_ms", s_join, "lux start --address to the node joined (loopback), ms"},
};
const int bench_cluster_n = sizeof bench_cluster / sizeof bench_cluster[0];
