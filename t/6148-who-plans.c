/* 6148-who-plans: every statement the head runs to tell who made a ref
   and where an object is (src/exec/exec_xfer_who.c, exec_xfer_loc.c; all
   but who's step 3, a scan of the task events by design), on
   the log's views as the head reads them (db_query), searches an index:
   none scans the events. On 2 million tasks the jobs' statements (kind =
   1, which SQLite did not see implies event_rare's condition) scanned the
   log for 1 s, and the locator's, with node_joined as its outer loop, for
   1.1 s, each on the head's loop, for every ref asked (doc/benchmarks.md,
   stop 46). Checked on a log of 2 shards as it is written, then with an
   archive (a compaction: the views union the archive and the file). */
#include "tap.h"
#include "lib/tamper.h"
#include "db/db_archive.h"
#include "db/db_cluster.h"
#include "db/db_query.h"
#include "db/db_store.h"
#include "exec/exec_xfer_loc.h"
#include "exec/exec_xfer_who.h"
#include "util/util_err.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static util_id_t s_job, s_root, s_node;
static uint64_t s_cseq;
static util_id_t s_client;

/* Event i: a job's start, a node's join, then tasks and their ends and
   puts, the node's death at the end. */
static void
s_make(void *arg, int i, uint64_t seq, db_event_t *e)
{
    int n = *(int *) arg;
    util_id_t task;
    e->ts = (int64_t) seq;
    e->client = s_client;
    e->cseq = ++s_cseq;
    e->mask |= DB_F_CLIENT;
    util_id_child(&task, &s_job, &s_root, (uint64_t) i / 3 + 1);
    if (i == 0) {
        e->kind = DB_K_job_started;
        DB_SET_ID(e, job, DB_F_JOB, &s_job);
        DB_SET_ID(e, node, DB_F_NODE, &s_node);
    } else if (i == 1) {
        e->kind = DB_K_node_joined;
        DB_SET_ID(e, node, DB_F_NODE, &s_node);
        DB_SET_INT(e, idx, DB_F_IDX, 1);
        db_event_set_name(e, "127.0.0.1");
    } else if (i == n - 1) {
        e->kind = DB_K_node_died;
        DB_SET_ID(e, node, DB_F_NODE, &s_node);
    } else if (i % 3 == 0) {
        e->kind = DB_K_task_submitted;
        DB_SET_ID(e, job, DB_F_JOB, &s_job);
        DB_SET_ID(e, task, DB_F_TASK, &task);
        DB_SET_ID(e, parent, DB_F_PARENT, &s_root);
        DB_SET_ID(e, node, DB_F_NODE, &s_node);
        DB_SET_INT(e, idx, DB_F_IDX, 1);
    } else if (i % 3 == 1) {
        e->kind = DB_K_task_finished;
        DB_SET_ID(e, task, DB_F_TASK, &task);
        DB_SET_ID(e, node, DB_F_NODE, &s_node);
    } else {
        util_id_t put;
        util_id_child(&put, &s_job, &task, 1);
        e->kind = DB_K_object_put;
        DB_SET_ID(e, job, DB_F_JOB, &s_job);
        DB_SET_ID(e, task, DB_F_TASK, &put);
        DB_SET_ID(e, node, DB_F_NODE, &s_node);
        DB_SET_INT(e, idx, DB_F_IDX, 0);
        DB_SET_INT(e, size, DB_F_SIZE, 100);
    }
}

/* The plan of sql on q: its lines in out; whether none scans a file's
   table of events. */
static bool
s_searches(db_query_t *q, const char *sql, char *out, size_t n)
{
    char *x = malloc(strlen(sql) + 32);
    sqlite3_stmt *st;
    bool good = true;
    out[0] = 0;
    sprintf(x, "EXPLAIN QUERY PLAN %s", sql);
    if (db_query_prepare(q, x, &st, NULL))
        bail("plan of %s: %s", sql, lux_errmsg());
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *d = (const char *) sqlite3_column_text(st, 3);
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s; ", d);
        /* a file's table (s0.event, a1.event: db_query attaches each file
           so); "SCAN event" after "CO-ROUTINE event" reads the union's
           rows the searches above it found */
        if (strncmp(d, "SCAN ", 5) == 0 && (d[5] == 's' || d[5] == 'a') &&
            strchr("0123456789", d[6]) && strstr(d, ".event"))
            good = false;
    }
    sqlite3_finalize(st);
    free(x);
    return good;
}

static void
s_check_all(const char *dir, const char *when)
{
    db_cluster_t c;
    char plan[4096];
    if (db_cluster_load(&c, dir))
        bail("load: %s", lux_errmsg());
    db_query_t *q = db_query_open(&c);
    if (!q)
        bail("query: %s", lux_errmsg());
    const char *(*lists[2])(int) = {nm_xfer_who_sql, nm_xfer_loc_sql};
    const char *names[2] = {"who", "locator"};
    for (int l = 0; l < 2; l++) {
        const char *sql;
        for (int i = 0; (sql = lists[l](i)); i++) {
            bool good = s_searches(q, sql, plan, sizeof plan);
            ok(good, "%s: the %s's statement %d searches an index", when, names[l], i);
            if (!good)
                diag("%s\n  plan: %s", sql, plan);
        }
    }
    db_query_close(&q);
}

int
main(void)
{
    util_id_t zero = {{0}};
    util_id_random(&s_job);
    util_id_random(&s_node);
    util_id_random(&s_client);
    util_id_child(&s_root, &s_job, &zero, 0);

    db_cluster_t c;
    db_cluster_defaults(&c);
    snprintf(c.dir, sizeof c.dir, "%s/c", tap_tmpdir());
    c.shards = 2;
    c.replicas = 1;
    if (db_cluster_create(&c))
        bail("create: %s", lux_errmsg());
    int n = 3000;
    for (uint32_t s = 0; s < c.shards; s++) {
        char path[PATH_MAX];
        db_cluster_replica_db(&c, s, 0, path, sizeof path);
        db_store_opts_t o = {.path = path, .cluster = c.id, .shard = s};
        db_store_t *st = db_store_open(&o);
        if (!st || tamper_store_append(st, n, s_make, &n))
            bail("append: %s", lux_errmsg());
        db_store_close(&st);
    }
    s_check_all(c.dir, "the files");
    db_archive_opts_t ao = {.before_seq = 2000};
    db_archive_stats_t as;
    if (db_archive_compact(&c, &ao, &as) || as.moved == 0)
        bail("compact: %s", lux_errmsg());
    s_check_all(c.dir, "with archives");
    return done_testing();
}
