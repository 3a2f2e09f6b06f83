/*  lux_bench - the benchmark harness of `lux bench`.

    A benchmark reports one or more results: a name (as in `ray
    microbenchmark` where there is a twin), a value, a unit, and extra
    fields. Printed as a table, or with --json one JSON object per line:
        {"name": "log_append", "value": 312345.6, "unit": "events/s", ...}
    Each benchmark starts a private cluster of its own in a temporary
    directory, unless --dir points at a running one.
*/
#ifndef LUX_BENCH_H_INCLUDED
#define LUX_BENCH_H_INCLUDED

#include "db/db_cluster.h"
#include "lux_cmd.h"

#include <stdbool.h>

typedef struct {
    bool json;        /* one JSON object per result */
    const char *dir;  /* a running cluster to use, or NULL */
    double scale;     /* work multiplier: 1.0, or --quick's 0.05 */
    char tmp[256];    /* parent of private clusters */
    const char **names; /* the benchmarks asked for (nnames 0: all) */
    int nnames;
} bench_ctx_t;

typedef struct {
    const char *name;
    int (*fn)(bench_ctx_t *ctx, const char *name);
    const char *what;
} bench_t;

/* Whether name was asked for: a function that measures several names
   skips the work of those that were not, and reports only those that were. */
bool bench_wants(const bench_ctx_t *ctx, const char *name);

/* Report one result (when it was asked for); extra is NULL or JSON members (", \"k\": v ..."),
   printf-style. */
void bench_report(bench_ctx_t *ctx, const char *name, double value, const char *unit,
                  const char *extra, ...) __attribute__((format(printf, 5, 6)));

/* A private cluster under ctx->tmp (or ctx->dir's, when given and
   shards/replicas are 0). node: its node manager (NULL: the log alone).
   0 or a code; bench_cluster_stop removes it. */
int bench_cluster_start(bench_ctx_t *ctx, db_cluster_t *c, uint32_t shards, uint32_t replicas,
                        const lux_node_args_t *node);
void bench_cluster_stop(bench_ctx_t *ctx, db_cluster_t *c);

/* For a benchmark that measures a cluster it makes (why: what it
   measures): LUX_ENOSYS with a message when --dir was given, else 0. */
int bench_own_cluster(const bench_ctx_t *ctx, const char *why);

/* A tcp head on 127.0.0.1 (its node manager: 1 worker, 64 MiB) with its
   join token, under ctx->tmp, on a free port; nodes join it at
   127.0.0.1:c->master_port (bench_cluster.c). 0 or a code. */
int bench_tcp_head(bench_ctx_t *ctx, db_cluster_t *c);

/* Tests: with LUX_TEST_BENCH_HEAD_GONE=1, stops the head in c->dir just
   after a benchmark started it (it died, as far as the benchmark can tell).
   Always 0. */
int bench_test_head_gone(const db_cluster_t *c);

/* rel (examples/es/es.so, say) of the build tree this lux belongs to, or
   under $LUX_BUILDDIR, into out; 0 or LUX_ENOTFOUND saying so. */
int bench_build_file(char *out, size_t n, const char *rel);

/* Median of n doubles (sorts them). */
double bench_median(double *v, int n);

/* Benchmarks defined elsewhere. */
extern const bench_t bench_log[];
extern const int bench_log_n;
extern const bench_t bench_exec[];
extern const int bench_exec_n;
extern const bench_t bench_cluster[];
extern const int bench_cluster_n;
extern const bench_t bench_replay[];
extern const int bench_replay_n;
extern const bench_t bench_xfer[];
extern const int bench_xfer_n;
extern const bench_t bench_sched[];
extern const int bench_sched_n;
extern const bench_t bench_locality[];
extern const int bench_locality_n;
extern const bench_t bench_es[];
extern const int bench_es_n;

#endif
