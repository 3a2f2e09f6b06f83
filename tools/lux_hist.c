/*  lux_hist - a run's history as one read-only SQLite connection (see
    lux_hist.h). A directory goes through db_query_open, as `lux sql
    --dir`; a file through db_query_open_pulled, which checks that `lux
    pull` wrote it. */
#include "lux_hist.h"
#include "db/db_cluster.h"
#include "db/db_query.h"
#include "util/util_err.h"
#include "util/util_fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct lux_hist_t {
    db_query_t *q;   /* the cluster's shards, or the pulled file */
    uint32_t shards; /* shards of the history */
    char what[PATH_MAX + 16]; /* "cluster DIR" or "file F" */
};

lux_hist_t *
lux_hist_open(const char *path)
{
    struct stat sb;
    lux_hist_t *self = calloc(1, sizeof *self);
    if (!self) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    if (stat(path, &sb)) {
        util_err(LUX_ENOTFOUND, "%s: no such directory or file", path);
        goto fail;
    }
    if (S_ISDIR(sb.st_mode)) {
        db_cluster_t c;
        snprintf(self->what, sizeof self->what, "cluster %s", path);
        if (db_cluster_load(&c, path)) {
            util_err_ctx(LUX_ENOTFOUND, "%s is not a cluster's or a run's directory", path);
            goto fail;
        }
        if (!(self->q = db_query_open(&c)))
            goto fail;
        self->shards = c.shards;
        return self;
    }
    snprintf(self->what, sizeof self->what, "file %s", path);
    if (!(self->q = db_query_open_pulled(path)))
        goto fail;
    self->shards = db_query_shards(self->q);
    return self;
fail:
    lux_hist_close(&self);
    return NULL;
}

void
lux_hist_close(lux_hist_t **self_p)
{
    lux_hist_t *self = *self_p;
    if (!self)
        return;
    db_query_close(&self->q);
    free(self);
    *self_p = NULL;
}

sqlite3 *
lux_hist_db(lux_hist_t *self)
{
    return db_query_db(self->q);
}

uint32_t
lux_hist_shards(lux_hist_t *self)
{
    return self->shards;
}

const char *
lux_hist_what(lux_hist_t *self)
{
    return self->what;
}

sqlite3_stmt *
lux_hist_prepare(lux_hist_t *self, const char *sql)
{
    sqlite3_stmt *st = NULL;
    sqlite3 *db = lux_hist_db(self);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        util_err(LUX_ESQL, "%s: %s", lux_hist_what(self), sqlite3_errmsg(db));
        return NULL;
    }
    return st;
}

int
lux_hist_snapshot(lux_hist_t *self)
{
    lux_hist_test_gate("open");
    return db_query_begin(self->q);
}

void
lux_hist_test_gate(const char *at)
{
    const char *g = getenv("LUX_TEST_SQL_GATE");
    char path[PATH_MAX], want[32] = "open";
    if (!g || !*g)
        return;
    snprintf(path, sizeof path, "%s/at", g);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(want, sizeof want, f))
            want[0] = 0;
        want[strcspn(want, "\n")] = 0;
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/held", g);
    if (strcmp(want, at) || util_exists(path))
        return;
    if (util_write_file(path, "held\n", 5, 0600))
        return;
    snprintf(path, sizeof path, "%s/go", g);
    for (int i = 0; i < 12000 && !util_exists(path); i++)
        usleep(10000);
}
