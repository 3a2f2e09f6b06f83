/*  lux_hist - a run's history as one read-only SQLite connection (see
    lux_hist.h). A directory goes through db_query, as `lux sql --dir`; a
    file must be one `lux pull` wrote: its meta table says so (format
    lux-pull-1) and how many shards it holds. */
#include "lux_hist.h"
#include "db/db_cluster.h"
#include "db/db_query.h"
#include "util/util_err.h"
#include "util/util_fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct lux_hist_t {
    db_query_t *q;   /* a cluster's directory, or NULL */
    sqlite3 *file;   /* a pulled file, or NULL */
    uint32_t shards; /* shards of the history */
    char what[PATH_MAX + 16]; /* "cluster DIR" or "file F" */
};

/* The value of a meta key of a pulled file into out; false when absent. */
static bool
s_meta(sqlite3 *db, const char *key, char *out, size_t n)
{
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        snprintf(out, n, "%s", (const char *) sqlite3_column_text(st, 0));
        found = true;
    }
    sqlite3_finalize(st);
    return found;
}

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
    char *uri = sqlite3_mprintf("file:%s?mode=ro", path);
    int rc = sqlite3_open_v2(uri, &self->file, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    sqlite3_free(uri);
    char v[64];
    if (rc != SQLITE_OK) {
        util_err(LUX_EIO, "%s: cannot open: %s", path,
                 self->file ? sqlite3_errmsg(self->file) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(self->file, 5000);
    if (!s_meta(self->file, "format", v, sizeof v) || strcmp(v, "lux-pull-1") != 0) {
        util_err(LUX_ECORRUPT, "%s is not a file `lux pull` wrote (no lux-pull-1 in its meta "
                 "table); give a run's directory or a pulled file", path);
        goto fail;
    }
    if (!s_meta(self->file, "shards", v, sizeof v) || atoi(v) < 1) {
        util_err(LUX_ECORRUPT, "%s: its meta table has no shard count", path);
        goto fail;
    }
    self->shards = (uint32_t) atoi(v);
    if (sqlite3_exec(self->file, "PRAGMA query_only = 1", NULL, NULL, NULL) != SQLITE_OK) {
        util_err(LUX_ESQL, "%s: %s", path, sqlite3_errmsg(self->file));
        goto fail;
    }
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
    if (self->file)
        sqlite3_close(self->file);
    free(self);
    *self_p = NULL;
}

sqlite3 *
lux_hist_db(lux_hist_t *self)
{
    return self->q ? db_query_db(self->q) : self->file;
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
