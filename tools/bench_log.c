/*  bench_log - benchmarks of the log (lux bench):

    log_append             events/s into one shard, R=1, one client, events
                           shaped like the runtime's task events (submitted
                           with dependencies, arguments and module hash;
                           finished with times, sizes and fingerprints)
    log_append_chain       the same with R=3, measured in the same run, with
                           the ratio to R=1 and CPU per event per replica
    log_subscribe_catchup  events/s delivered to a new subscriber from history
    log_ack_latency        median microseconds from append to acknowledgement
                           at low load, R=1
    sql_lineage            ms for lineage(object) on a log of 1M events
    sql_scan               ms for a group-by over all 1M events
    pull_events            events/s that `lux pull` copies from a running
                           4-shard cluster through the protocol into a new
                           local file, every hash verified (1M events)
    compact_events         events/s that `lux compact` moves from the replica
                           files of a stopped 4-shard cluster into its
                           archives (1M events; archives are lz4 frames),
                           with the bytes per event live and archived
                           (compressed, and the SQLite file inside), and
                           the ms to decompress every archive once
    sql_scan_archived      sql_scan's group-by over the same 1M events once
                           archived, beside the same query before (live)
*/
#include "lux_bench.h"
#include "lux_cmd.h"
#include "db/db_archive.h"
#include "db/db_client.h"
#include "db/db_query.h"
#include "db/db_sub.h"
#include "util/util_err.h"
#include "util/util_hash.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* --- events shaped like the runtime's ------------------------------------------------- */

typedef struct {
    util_id_t job, root, node, module;
    uint64_t next; /* task counter */
    uint8_t deps[2 * DB_DEP_LEN];
    uint8_t args[48];
    uint64_t rng;
} s_gen_t;

static uint64_t
s_rand(s_gen_t *g)
{
    g->rng += 0x9e3779b97f4a7c15ULL;
    return util_mix64(g->rng);
}

static void
s_gen_init(s_gen_t *g, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->rng = seed;
    util_id_random(&g->job);
    util_id_random(&g->root);
    util_id_random(&g->node);
    util_id_random(&g->module);
    for (size_t i = 0; i < sizeof g->args; i++)
        g->args[i] = (uint8_t) s_rand(g);
}

static void
s_task_id(s_gen_t *g, uint64_t n, util_id_t *out)
{
    util_id_child(out, &g->job, &g->root, n);
}

/* Event k of the stream: even k submits task k/2 (depending on up to two
   earlier tasks), odd k finishes it. */
static void
s_gen_event(s_gen_t *g, uint64_t k, db_event_t *e, util_id_t *task)
{
    uint64_t n = k / 2;
    memset(e, 0, sizeof *e);
    s_task_id(g, n, task);
    DB_SET_ID(e, task, DB_F_TASK, task);
    DB_SET_ID(e, node, DB_F_NODE, &g->node);
    DB_SET_INT(e, attempt, DB_F_ATTEMPT, 1);
    if (k % 2 == 0) {
        e->kind = DB_K_task_submitted;
        DB_SET_ID(e, job, DB_F_JOB, &g->job);
        DB_SET_ID(e, parent, DB_F_PARENT, &g->root);
        db_event_set_name(e, "es.rollout");
        DB_SET_INT(e, idx, DB_F_IDX, 1);
        memcpy(e->fp, g->module.b, DB_FP_LEN);
        e->mask |= DB_F_FP;
        int ndeps = n == 0 ? 0 : (int) (s_rand(g) % 3);
        for (int d = 0; d < ndeps; d++) {
            util_id_t dep;
            s_task_id(g, s_rand(g) % n, &dep);
            memcpy(g->deps + d * DB_DEP_LEN, dep.b, UTIL_ID_LEN);
            memset(g->deps + d * DB_DEP_LEN + UTIL_ID_LEN, 0, 4);
        }
        if (ndeps) {
            e->deps = g->deps;
            e->deps_len = (uint32_t) (ndeps * DB_DEP_LEN);
            e->mask |= DB_F_DEPS;
        }
        e->body = g->args;
        e->body_len = 32;
        e->mask |= DB_F_BODY;
    } else {
        int64_t now = util_now_ns();
        e->kind = DB_K_task_finished;
        DB_SET_INT(e, worker, DB_F_WORKER, 4242);
        DB_SET_INT(e, status, DB_F_STATUS, 0);
        DB_SET_INT(e, t_start, DB_F_T_START, now - 50000);
        DB_SET_INT(e, t_end, DB_F_T_END, now);
        DB_SET_INT(e, size, DB_F_SIZE, 64);
        memcpy(e->fp, task->b, DB_FP_LEN);
        e->mask |= DB_F_FP;
    }
}

/* Append n generated events through a client; events/s. */
static int
s_append(db_client_t *cl, s_gen_t *g, uint64_t n, double *rate)
{
    int64_t t0 = util_mono_ns();
    db_event_t e;
    util_id_t task;
    int rc = 0;
    for (uint64_t k = 0; k < n && !rc; k++) {
        s_gen_event(g, g->next++, &e, &task);
        rc = db_client_append(cl, &e);
    }
    if (!rc)
        rc = db_client_sync(cl, 120000);
    *rate = (double) n / ((double) (util_mono_ns() - t0) / 1e9);
    return rc;
}

typedef struct {
    double rate;          /* events/s */
    double cpu_us;        /* CPU per event per replica, mean over replicas */
    double cpu_max_us;    /* the busiest replica's */
    double rss_mb;        /* peak RSS of the replicas, max */
    double catchup;       /* events/s to a new subscriber */
} s_run_t;

/* Start a one-shard cluster of r replicas, append n events, measure. */
static int
s_run(bench_ctx_t *ctx, uint32_t r, uint64_t n, bool catchup, double *lat, s_run_t *out)
{
    db_cluster_t c;
    int rc, pids[DB_MAX_REPLICAS] = {0};
    int64_t cpu0[DB_MAX_REPLICAS], cpu1[DB_MAX_REPLICAS];
    s_gen_t g;

    memset(out, 0, sizeof *out);
    if ((rc = bench_cluster_start(ctx, &c, 1, r, NULL)))
        return rc;
    db_client_opts_t co = {.cluster = &c};
    db_client_t *cl = db_client_new(&co);
    if (!cl) {
        rc = LUX_EIO;
        goto out;
    }
    s_gen_init(&g, 42);
    if (lat) {
        /* low load: one event at a time, each acknowledged before the next */
        int k = (int) (3000 * ctx->scale) + 20;
        double *v = calloc((size_t) k, sizeof *v);
        db_event_t e;
        util_id_t task;
        for (int i = 0; i < k && !rc; i++) {
            s_gen_event(&g, g.next++, &e, &task);
            int64_t t0 = util_mono_ns();
            rc = db_client_append(cl, &e);
            if (!rc)
                rc = db_client_sync(cl, 10000);
            v[i] = (double) (util_mono_ns() - t0) / 1000.0;
        }
        lat[0] = bench_median(v, k);
        lat[1] = v[(int) (k * 0.99)];
        free(v);
        if (rc)
            goto out;
    }
    if ((rc = lux_head_pids(&c, pids, NULL)))
        goto out;
    for (uint32_t i = 0; i < r; i++)
        cpu0[i] = util_proc_cpu_ns(pids[i]);
    uint64_t before = g.next;
    if ((rc = s_append(cl, &g, n, &out->rate)))
        goto out;
    n = g.next - before;
    double sum = 0;
    for (uint32_t i = 0; i < r; i++) {
        int64_t peak;
        cpu1[i] = util_proc_cpu_ns(pids[i]);
        double us = (double) (cpu1[i] - cpu0[i]) / 1000.0 / (double) n;
        sum += us;
        if (us > out->cpu_max_us)
            out->cpu_max_us = us;
        util_proc_rss(pids[i], &peak);
        if ((double) peak / 1048576.0 > out->rss_mb)
            out->rss_mb = (double) peak / 1048576.0;
    }
    out->cpu_us = sum / r;
    if (catchup) {
        db_sub_t *sub = db_sub_new(&c, NULL, 0, 0);
        net_batch_t b;
        uint64_t target = db_client_acked_seq(cl, 0);
        int64_t t0 = util_mono_ns(), deadline = util_mono_ms() + 120000;
        while (sub && db_sub_last(sub) < target && util_mono_ms() < deadline) {
            /* walk the records as a consumer would */
            if (db_sub_recv(sub, &b, 1000) > 0) {
                net_batch_it_t it;
                uint64_t seq;
                const uint8_t *rec;
                size_t len;
                net_batch_iter(&it, &b);
                while (net_batch_next(&it, &seq, &rec, &len))
                    ;
            }
        }
        if (!sub || db_sub_last(sub) < target)
            rc = util_err(LUX_ETIMEDOUT, "the subscriber got %llu of %llu events",
                          sub ? (unsigned long long) db_sub_last(sub) : 0ULL,
                          (unsigned long long) target);
        else
            out->catchup = (double) target / ((double) (util_mono_ns() - t0) / 1e9);
        db_sub_destroy(&sub);
    }
out:
    db_client_destroy(&cl);
    bench_cluster_stop(ctx, &c);
    return rc;
}

static int
s_bench_append(bench_ctx_t *ctx, const char *name)
{
    uint64_t n = (uint64_t) (1000000 * ctx->scale);
    s_run_t r1, r3;
    double lat[2];
    int rc;
    if ((rc = bench_own_cluster(ctx, "it measures one-shard clusters of its own")))
        return rc;
    if ((rc = s_run(ctx, 1, n, true, lat, &r1)))
        return rc;
    if ((rc = s_run(ctx, 3, n, false, NULL, &r3)))
        return rc;
    bench_report(ctx, "log_append", r1.rate, "events/s",
                 ", \"events\": %llu, \"replicas\": 1, \"cpu_us_per_event\": %.3f,"
                 " \"replica_peak_rss_mb\": %.1f",
                 (unsigned long long) n, r1.cpu_us, r1.rss_mb);
    bench_report(ctx, "log_append_chain", r3.rate, "events/s",
                 ", \"events\": %llu, \"replicas\": 3, \"ratio_to_r1\": %.3f,"
                 " \"cpu_us_per_event_per_replica\": %.3f, \"cpu_us_busiest_replica\": %.3f,"
                 " \"cpu_ratio_to_r1\": %.3f, \"replica_peak_rss_mb\": %.1f",
                 (unsigned long long) n, r3.rate / r1.rate, r3.cpu_us, r3.cpu_max_us,
                 r3.cpu_us / r1.cpu_us, r3.rss_mb);
    bench_report(ctx, "log_subscribe_catchup", r1.catchup, "events/s",
                 ", \"events\": %llu", (unsigned long long) n);
    bench_report(ctx, "log_ack_latency", lat[0], "us", ", \"p99_us\": %.1f, \"replicas\": 1",
                 lat[1]);
    return 0;
}

/* --- SQL over a log of a million events ------------------------------------------------- */

/* A job of `layers` layers of `width` tasks; each task reads the output of
   one task of the layer before (a pipeline with random crossings) and the
   job's one shared input (task 0), so every lineage is layers deep. */
static int
s_fill_layers(db_client_t *cl, s_gen_t *g, uint32_t layers, uint32_t width, util_id_t *last)
{
    db_event_t e;
    util_id_t task, dep;
    int rc = 0;
    uint64_t n = 1;
    for (uint32_t l = 0; l < layers && !rc; l++) {
        for (uint32_t w = 0; w < width && !rc; w++, n++) {
            memset(&e, 0, sizeof e);
            s_task_id(g, n, &task);
            e.kind = DB_K_task_submitted;
            DB_SET_ID(&e, task, DB_F_TASK, &task);
            DB_SET_ID(&e, job, DB_F_JOB, &g->job);
            DB_SET_ID(&e, parent, DB_F_PARENT, &g->root);
            db_event_set_name(&e, l == 0 ? "es.init" : "es.step");
            s_task_id(g, 0, &dep);
            memcpy(g->deps, dep.b, UTIL_ID_LEN);
            memset(g->deps + UTIL_ID_LEN, 0, 4);
            uint32_t ndeps = 1;
            if (l > 0) {
                s_task_id(g, 1 + (uint64_t) (l - 1) * width + s_rand(g) % width, &dep);
                memcpy(g->deps + DB_DEP_LEN, dep.b, UTIL_ID_LEN);
                memset(g->deps + DB_DEP_LEN + UTIL_ID_LEN, 0, 4);
                ndeps = 2;
            }
            e.deps = g->deps;
            e.deps_len = ndeps * DB_DEP_LEN;
            e.mask |= DB_F_DEPS;
            e.body = g->args;
            e.body_len = 32;
            e.mask |= DB_F_BODY;
            if ((rc = db_client_append(cl, &e)))
                break;
            db_event_t f;
            util_id_t t2;
            s_gen_event(g, 2 * n + 1, &f, &t2);
            f.task = task;
            rc = db_client_append(cl, &f);
            *last = task;
        }
    }
    if (!rc)
        rc = db_client_sync(cl, 300000);
    return rc;
}

static double
s_time_query(db_query_t *q, const char *sql, int runs, long *rows)
{
    double v[16];
    for (int r = 0; r < runs; r++) {
        sqlite3_stmt *st;
        int64_t t0 = util_mono_ns();
        *rows = 0;
        if (db_query_prepare(q, sql, &st, NULL))
            return -1;
        while (sqlite3_step(st) == SQLITE_ROW)
            (*rows)++;
        sqlite3_finalize(st);
        v[r] = (double) (util_mono_ns() - t0) / 1e6;
    }
    return bench_median(v, runs);
}

static int
s_bench_sql(bench_ctx_t *ctx, const char *name)
{
    db_cluster_t c;
    s_gen_t g;
    util_id_t last;
    char sql[256], hex[UTIL_ID_HEX];
    long rows, lin_rows;
    int rc;
    uint32_t layers = 100, width = (uint32_t) (5000 * ctx->scale) + 1;

    if ((rc = bench_own_cluster(ctx, "it builds a log of its own")))
        return rc;
    if ((rc = bench_cluster_start(ctx, &c, 4, 1, NULL)))
        return rc;
    db_client_opts_t co = {.cluster = &c};
    db_client_t *cl = db_client_new(&co);
    db_query_t *q = NULL;
    if (!cl) {
        rc = LUX_EIO;
        goto out;
    }
    s_gen_init(&g, 7);
    if ((rc = s_fill_layers(cl, &g, layers, width, &last)))
        goto out;
    if (!(q = db_query_open(&c))) {
        rc = LUX_EIO;
        goto out;
    }
    uint64_t events = 2ULL * layers * width;
    snprintf(sql, sizeof sql, "SELECT * FROM lineage('%s00000000')", util_id_hex(&last, hex));
    double lin = s_time_query(q, sql, 9, &lin_rows);
    double scan = s_time_query(q, "SELECT kind, count(*) FROM events GROUP BY kind", 5, &rows);
    if (lin < 0 || scan < 0) {
        rc = LUX_ESQL;
        goto out;
    }
    bench_report(ctx, "sql_lineage", lin, "ms",
                 ", \"events\": %llu, \"shards\": 4, \"tasks_in_lineage\": %ld",
                 (unsigned long long) events, lin_rows);
    bench_report(ctx, "sql_scan", scan, "ms",
                 ", \"events\": %llu, \"shards\": 4, \"query\": \"SELECT kind, count(*) FROM events"
                 " GROUP BY kind\"",
                 (unsigned long long) events);
out:
    db_query_close(&q);
    db_client_destroy(&cl);
    bench_cluster_stop(ctx, &c);
    return rc;
}

/* --- lux pull ---------------------------------------------------------------------------- */

/* How many events of a pulled file are not checkpoint events (*mine) and
   are (*ckpts); 0 or LUX_ESQL naming the file. */
static int
s_count_pulled(const char *path, int64_t *mine, int64_t *ckpts)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = LUX_ESQL;
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT coalesce(sum(kind != %d), 0), coalesce(sum(kind = %d), 0)"
             " FROM event", DB_K_checkpoint, DB_K_checkpoint);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        *mine = sqlite3_column_int64(st, 0);
        *ckpts = sqlite3_column_int64(st, 1);
        rc = 0;
    } else {
        util_err(LUX_ESQL, "%s: cannot count its events: %s", path,
                 db ? sqlite3_errmsg(db) : "out of memory");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

static int
s_bench_pull(bench_ctx_t *ctx, const char *name)
{
    db_cluster_t c;
    s_gen_t g;
    double rate;
    int rc;
    uint64_t n = (uint64_t) (1000000 * ctx->scale);
    char out[PATH_MAX + 32];

    if ((rc = bench_own_cluster(ctx, "it fills a cluster of its own")))
        return rc;
    if ((rc = bench_cluster_start(ctx, &c, 4, 1, NULL)))
        return rc;
    db_client_opts_t co = {.cluster = &c};
    db_client_t *cl = db_client_new(&co);
    if (!cl) {
        rc = LUX_EIO;
        goto out;
    }
    s_gen_init(&g, 11);
    if ((rc = s_append(cl, &g, n, &rate)))
        goto out;
    snprintf(out, sizeof out, "%s/pull.db", c.dir);
    lux_pull_opts_t o = {.dir = c.dir, .address = true, .out = out};
    lux_pull_stats_t st, again;
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    rc = lux_pull_run(&o, &st);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    if (rc || (rc = lux_pull_run(&o, &again)))
        goto out;
    /* the CPU this process spent pulling (the cluster runs in others):
       steadier than the rate on a loaded machine */
    double cpu_us = ((double) (c1.tv_sec - c0.tv_sec) * 1e9 + (double) (c1.tv_nsec - c0.tv_nsec)) /
                    1e3 / (double) (st.verified ? st.verified : 1);
    /* the log holds the supervisor's signed checkpoint events too (one
       every 100,000 events or 10 s, the second pull may find the latest):
       the file must hold every event appended and those, nothing else */
    int64_t mine = -1, ckpts = -1;
    if ((rc = s_count_pulled(out, &mine, &ckpts)))
        goto out;
    if (mine != (int64_t) n || st.verified + again.verified != n + (uint64_t) ckpts) {
        rc = util_err(LUX_EPROTO, "lux pull copied %llu events (and %llu more at once): %lld "
                      "of the %llu appended and %lld checkpoint events",
                      (unsigned long long) st.verified, (unsigned long long) again.verified,
                      (long long) mine, (unsigned long long) n, (long long) ckpts);
        goto out;
    }
    struct stat sb;
    int64_t bytes = stat(out, &sb) == 0 ? (int64_t) sb.st_size : 0;
    bench_report(ctx, "pull_events", (double) st.verified / st.seconds, "events/s",
                 ", \"events\": %llu, \"shards\": 4, \"seconds\": %.3f,"
                 " \"cpu_us_per_event\": %.2f, \"file_bytes_per_event\": %.1f, \"second_pull_ms\": %.1f,"
                 " \"second_pull_events\": %llu, \"checkpoint_events\": %lld",
                 (unsigned long long) st.verified, st.seconds, cpu_us,
                 bytes > 0 ? (double) bytes / (double) st.verified : 0.0, again.seconds * 1000,
                 (unsigned long long) again.verified, (long long) ckpts);
out:
    db_client_destroy(&cl);
    bench_cluster_stop(ctx, &c);
    return rc;
}

/* --- compaction --------------------------------------------------------------------------- */

/* Sum of the sizes of DIR/shard-S/NAME over the shards (and their -wal) */
static int64_t
s_files_bytes(const db_cluster_t *c, const char *name)
{
    int64_t total = 0;
    for (uint32_t s = 0; s < c->shards; s++) {
        char path[PATH_MAX + 64];
        struct stat sb;
        snprintf(path, sizeof path, "%s/shard-%u/%s", c->dir, s, name);
        if (stat(path, &sb) == 0)
            total += sb.st_size;
        snprintf(path, sizeof path, "%s/shard-%u/%s-wal", c->dir, s, name);
        if (stat(path, &sb) == 0)
            total += sb.st_size;
    }
    return total;
}

/* The archives' frames read back as a reader does (db_archive_image: the
   file read, decompressed, its checksum verified): the bytes of SQLite
   file they hold, and the ms it took for all of them (what every reader's
   open of the archives adds). */
static int
s_lz4_frames(const db_cluster_t *c, int64_t *plain_bytes, double *ms)
{
    int rc = 0;
    int64_t t0 = util_mono_ns();
    *plain_bytes = 0;
    for (uint32_t s = 0; s < c->shards && !rc; s++) {
        char path[PATH_MAX + 64];
        void *img = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/shard-%u/archive.db.lz4", c->dir, s);
        if (!(rc = db_archive_image(path, &img, &len)))
            *plain_bytes += (int64_t) len;
        sqlite3_free(img);
    }
    *ms = (double) (util_mono_ns() - t0) / 1e6;
    return rc;
}

static int
s_bench_compact(bench_ctx_t *ctx, const char *name)
{
    db_cluster_t c;
    s_gen_t g;
    util_id_t last;
    long rows;
    int rc;
    uint32_t layers = 100, width = (uint32_t) (5000 * ctx->scale) + 1;
    db_query_t *q = NULL;

    if ((rc = bench_own_cluster(ctx, "it builds and compacts a log of its own")))
        return rc;
    if ((rc = bench_cluster_start(ctx, &c, 4, 1, NULL)))
        return rc;
    db_client_opts_t co = {.cluster = &c};
    db_client_t *cl = db_client_new(&co);
    if (!cl) {
        rc = LUX_EIO;
        goto out;
    }
    s_gen_init(&g, 7);
    rc = s_fill_layers(cl, &g, layers, width, &last);
    db_client_destroy(&cl);
    /* stopped: the files are whole (WAL copied back), their sizes final */
    if (rc || (rc = lux_head_stop(c.dir, 60000)))
        goto out;
    uint64_t events = 2ULL * layers * width;
    int64_t live = s_files_bytes(&c, "replica-0.db");
    const char *scan_sql = "SELECT kind, count(*) FROM events GROUP BY kind";
    if (!(q = db_query_open(&c))) {
        rc = LUX_EIO;
        goto out;
    }
    double scan_live = s_time_query(q, scan_sql, 5, &rows);
    db_query_close(&q);
    db_archive_opts_t ao = {.before_seq = UINT64_MAX};
    db_archive_stats_t st;
    if ((rc = db_archive_compact(&c, &ao, &st)))
        goto out;
    /* and the supervisor's signed checkpoints (kind 20, one per shard at
       its stop): at least the events appended */
    if (st.moved < events) {
        rc = util_err(LUX_EPROTO, "lux compact moved %llu events of %llu",
                      (unsigned long long) st.moved, (unsigned long long) events);
        goto out;
    }
    int64_t arch = s_files_bytes(&c, "archive.db.lz4"), left = s_files_bytes(&c, "replica-0.db");
    if (!(q = db_query_open(&c))) {
        rc = LUX_EIO;
        goto out;
    }
    double scan_arch = s_time_query(q, scan_sql, 5, &rows);
    db_query_close(&q);
    int64_t plain = 0;
    double dms = 0;
    if ((rc = s_lz4_frames(&c, &plain, &dms)))
        goto out;
    if (scan_live < 0 || scan_arch < 0) {
        rc = LUX_ESQL;
        goto out;
    }
    double ev = (double) events;
    bench_report(ctx, "compact_events", (double) st.moved / st.seconds, "events/s",
                 ", \"events\": %llu, \"shards\": 4, \"seconds\": %.3f, \"rows_deleted\": %llu,"
                 " \"live_bytes_per_event\": %.1f, \"archive_bytes_per_event\": %.1f,"
                 " \"live_file_bytes_after_per_event\": %.1f,"
                 " \"archive_uncompressed_bytes_per_event\": %.1f,"
                 " \"archive_decompress_ms\": %.1f, \"checkpoint_events\": %llu",
                 (unsigned long long) st.moved, st.seconds, (unsigned long long) st.deleted,
                 (double) live / ev, (double) arch / ev, (double) left / ev, (double) plain / ev,
                 dms, (unsigned long long) (st.moved - events));
    bench_report(ctx, "sql_scan_archived", scan_arch, "ms",
                 ", \"events\": %llu, \"shards\": 4, \"sql_scan_live_ms\": %.1f,"
                 " \"query\": \"%s\"",
                 (unsigned long long) events, scan_live, scan_sql);
out:
    db_query_close(&q);
    db_client_destroy(&cl);
    if (!ctx->dir) { /* stopped already: only the directory to remove */
        char cmd[PATH_MAX + 32];
        lux_head_stop(c.dir, 30000);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", c.dir);
        if (system(cmd) != 0)
            fprintf(stderr, "lux bench: could not remove %s\n", c.dir);
    }
    return rc;
}

const bench_t bench_log[] = {
    {"log_append", s_bench_append, "events/s into one shard, R=1"},
    {"log_append_chain", s_bench_append, "the same with R=3, and the ratio to R=1"},
    {"log_subscribe_catchup", s_bench_append, "events/s to a new subscriber from history"},
    {"log_ack_latency", s_bench_append, "median us from append to acknowledgement, R=1"},
    {"sql_lineage", s_bench_sql, "ms for lineage(object) on a 1M-event log"},
    {"sql_scan", s_bench_sql, "ms for a group-by over a 1M-event log"},
    {"pull_events", s_bench_pull, "events/s lux pull copies and verifies into a local file"},
    {"compact_events", s_bench_compact, "events/s lux compact moves into the archives (1M)"},
    {"sql_scan_archived", s_bench_compact, "ms for the sql_scan group-by over 1M archived events"},
};
const int bench_log_n = sizeof bench_log / sizeof bench_log[0];
