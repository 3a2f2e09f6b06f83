/*  db_query - all shards as one read-only database (see db_query.h).

    Read-only three ways: every file is attached with mode=ro, the
    connection is set query_only once the temporary views exist, and each
    statement is checked with sqlite3_stmt_readonly() before it runs, so the
    user gets "lux sql is read-only" rather than an SQLite message about
    attached files.

    lineage(object) is an eponymous virtual table: its xFilter does a
    breadth-first walk, looking each task up in the shard its ID hashes to
    (the task_submitted event, by the task index), and queues the tasks of
    its dependencies. Each task appears once, at its shortest depth.
*/
#include "db_query.h"
#include "db_archive.h"
#include "db_chain.h"
#include "db_event.h"
#include "db_store.h"

#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"
#include "../util/util_idmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Unions of the per-shard views; `events` is views.sql's over the union
   of raw rows (see views.sql's header). */
static const char *s_views[] = {"event",  "tasks",       "retries", "objects",
                                "task_deps", "actors", "actor_calls", "actor_restarts", "nodes", "jobs",
                                "object_locations"};

struct db_query_t {
    sqlite3 *db;
    uint32_t shards;
    char **files;          /* tail file per shard */
    sqlite3_stmt **lookup; /* per shard: the task_submitted row of a task */
    bool live;             /* a cluster's files (not a pulled file) */
    db_cluster_t cluster;  /* which, when live: opened again when a compaction moved past */
    int64_t *cover;        /* per shard: the highest seq its archive held when attached (0:
                              no archive; -1: a plain archive.db, read in each snapshot) */
};

/* --- which replica is the tail -------------------------------------------------------- */

static int
s_tails(const db_cluster_t *c, uint32_t *tail)
{
    db_chain_t *chains = calloc(c->shards, sizeof *chains);
    if (!chains)
        return util_err(LUX_ENOMEM, "out of memory");
    int rc = db_chain_load_state(c, chains);
    for (uint32_t s = 0; s < c->shards && !rc; s++)
        tail[s] = chains[s].m[chains[s].n - 1].index;
    free(chains);
    return rc;
}

/* --- lineage(object) ---------------------------------------------------------------- */

typedef struct {
    sqlite3_vtab base;
    db_query_t *q;
} s_vtab_t;

typedef struct {
    util_id_t task;
    int depth;
    uint32_t shard;
    char *function;
    int64_t seq;
} s_row_t;

typedef struct {
    sqlite3_vtab_cursor base;
    s_row_t *rows;
    size_t n, cap, at;
} s_cur_t;

enum { L_TASK, L_DEPTH, L_FUNCTION, L_SHARD, L_SEQ, L_ARG };

static int
s_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
          char **err)
{
    int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(task_id TEXT, depth INTEGER, function TEXT,"
                                      " shard INTEGER, seq INTEGER, object HIDDEN)");
    if (rc != SQLITE_OK)
        return rc;
    s_vtab_t *v = sqlite3_malloc(sizeof *v);
    if (!v)
        return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->q = aux;
    *out = &v->base;
    return SQLITE_OK;
}

static int
s_disconnect(sqlite3_vtab *v)
{
    sqlite3_free(v);
    return SQLITE_OK;
}

static int
s_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
    for (int i = 0; i < info->nConstraint; i++) {
        if (info->aConstraint[i].iColumn == L_ARG &&
            info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ) {
            if (!info->aConstraint[i].usable)
                return SQLITE_CONSTRAINT;
            info->aConstraintUsage[i].argvIndex = 1;
            info->aConstraintUsage[i].omit = 1;
            info->idxNum = 1;
            info->estimatedCost = 100;
            return SQLITE_OK;
        }
    }
    /* without an object there is nothing to walk */
    info->idxNum = 0;
    info->estimatedCost = 1e12;
    return SQLITE_OK;
}

static int
s_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
    s_cur_t *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static void
s_cur_reset(s_cur_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->rows[i].function);
    free(c->rows);
    c->rows = NULL;
    c->n = c->cap = c->at = 0;
}

static int
s_close(sqlite3_vtab_cursor *cur)
{
    s_cur_reset((s_cur_t *) cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
s_push(s_cur_t *c, const util_id_t *task, int depth)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        s_row_t *r = realloc(c->rows, cap * sizeof *r);
        if (!r)
            return SQLITE_NOMEM;
        c->rows = r;
        c->cap = cap;
    }
    memset(&c->rows[c->n], 0, sizeof c->rows[0]);
    c->rows[c->n].task = *task;
    c->rows[c->n].depth = depth;
    c->n++;
    return SQLITE_OK;
}

static int
s_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxs, int argc, sqlite3_value **argv)
{
    s_cur_t *c = (s_cur_t *) cur;
    db_query_t *q = ((s_vtab_t *) cur->pVtab)->q;
    util_idmap_t *seen;
    util_id_t start;
    int rc = SQLITE_OK;

    s_cur_reset(c);
    if (idx != 1 || argc != 1)
        return SQLITE_OK;
    const char *hex = (const char *) sqlite3_value_text(argv[0]);
    char buf[33];
    if (!hex || (strlen(hex) != 40 && strlen(hex) != 32)) {
        cur->pVtab->zErrMsg = sqlite3_mprintf("lineage(): expected an object ID of 40 hex digits "
                                              "(or a task ID of 32), got '%s'",
                                              hex ? hex : "NULL");
        return SQLITE_ERROR;
    }
    snprintf(buf, sizeof buf, "%.32s", hex);
    if (util_id_parse(&start, buf)) {
        cur->pVtab->zErrMsg = sqlite3_mprintf("lineage(): '%s' is not hex", hex);
        return SQLITE_ERROR;
    }
    if (!(seen = util_idmap_new(0)))
        return SQLITE_NOMEM;
    util_idmap_put(seen, &start, NULL);
    if ((rc = s_push(c, &start, 0)))
        goto out;
    /* breadth first: rows are the queue; i walks it */
    for (size_t i = 0; i < c->n && rc == SQLITE_OK; i++) {
        s_row_t *r = &c->rows[i];
        uint32_t s = util_id_shard(&r->task, q->shards);
        sqlite3_stmt *st = q->lookup[s];
        r->shard = s;
        sqlite3_bind_blob(st, 1, r->task.b, UTIL_ID_LEN, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            const char *fn = (const char *) sqlite3_column_text(st, 0);
            r->function = fn ? strdup(fn) : NULL;
            r->seq = sqlite3_column_int64(st, 2);
            const uint8_t *deps = sqlite3_column_blob(st, 1);
            int n = sqlite3_column_bytes(st, 1);
            int depth = r->depth + 1;
            for (int k = 0; deps && k + DB_DEP_LEN <= n; k += DB_DEP_LEN) {
                util_id_t t;
                int fresh;
                memcpy(t.b, deps + k, UTIL_ID_LEN);
                if (!util_idmap_put(seen, &t, &fresh)) {
                    rc = SQLITE_NOMEM;
                    break;
                }
                if (fresh && (rc = s_push(c, &t, depth)))
                    break;
                r = &c->rows[i]; /* s_push may move rows */
            }
        } else {
            r->seq = -1; /* not in the log (a put, or another cluster's) */
        }
        sqlite3_reset(st);
    }
out:
    util_idmap_destroy(&seen);
    return rc;
}

static int
s_next(sqlite3_vtab_cursor *cur)
{
    ((s_cur_t *) cur)->at++;
    return SQLITE_OK;
}

static int
s_eof(sqlite3_vtab_cursor *cur)
{
    s_cur_t *c = (s_cur_t *) cur;
    return c->at >= c->n;
}

static int
s_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    s_cur_t *c = (s_cur_t *) cur;
    s_row_t *r = &c->rows[c->at];
    char hex[UTIL_ID_HEX];
    switch (col) {
    case L_TASK:
        sqlite3_result_text(ctx, util_id_hex(&r->task, hex), -1, SQLITE_TRANSIENT);
        break;
    case L_DEPTH:
        sqlite3_result_int(ctx, r->depth);
        break;
    case L_FUNCTION:
        if (r->function)
            sqlite3_result_text(ctx, r->function, -1, SQLITE_TRANSIENT);
        break;
    case L_SHARD:
        sqlite3_result_int(ctx, (int) r->shard);
        break;
    case L_SEQ:
        if (r->seq >= 0)
            sqlite3_result_int64(ctx, r->seq);
        break;
    }
    return SQLITE_OK;
}

static int
s_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = (sqlite3_int64) ((s_cur_t *) cur)->at;
    return SQLITE_OK;
}

static sqlite3_module s_lineage = {
    .xConnect = s_connect,
    .xBestIndex = s_best_index,
    .xDisconnect = s_disconnect,
    .xOpen = s_open,
    .xClose = s_close,
    .xFilter = s_filter,
    .xNext = s_next,
    .xEof = s_eof,
    .xColumn = s_column,
    .xRowid = s_rowid,
};

/* --- open, prepare ----------------------------------------------------------------- */

/* After setup, refuse what could touch files or undo the read-only
   settings: ATTACH (creates files), DETACH, and PRAGMAs that set a value. */
static int
s_authorize(void *arg, int action, const char *a, const char *b, const char *db,
            const char *trigger)
{
    switch (action) {
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
        return SQLITE_DENY;
    case SQLITE_PRAGMA: {
        /* pragmas that take an argument only to say what to read */
        static const char *reads[] = {"table_info", "table_xinfo", "index_list", "index_info",
                                      "index_xinfo", "foreign_key_list", "table_list", NULL};
        if (!b)
            return SQLITE_OK;
        for (int i = 0; reads[i]; i++)
            if (sqlite3_stricmp(a, reads[i]) == 0)
                return SQLITE_OK;
        return SQLITE_DENY;
    }
    }
    return SQLITE_OK;
}

/* Whether sql starts with a verb that writes (the view names shadow the
   tables, so SQLite's own error would be about views, not read-only). */
static bool
s_writes(const char *sql)
{
    static const char *verbs[] = {"INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP",
                                  "ALTER", "VACUUM", "REINDEX", NULL};
    while (*sql == ' ' || *sql == '\t' || *sql == '\n' || *sql == '\r' || *sql == '(')
        sql++;
    for (int i = 0; verbs[i]; i++) {
        size_t n = strlen(verbs[i]);
        if (sqlite3_strnicmp(sql, verbs[i], (int) n) == 0 &&
            (sql[n] == ' ' || sql[n] == '\t' || sql[n] == '\n' || sql[n] == '\0'))
            return true;
    }
    return false;
}

static int
s_exec(db_query_t *self, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(self->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        util_err(LUX_ESQL, "%s", msg ? msg : sqlite3_errmsg(self->db));
        sqlite3_free(msg);
        return LUX_ESQL;
    }
    return 0;
}

/* The highest seq of shard s's attached archive into *seq; 0 or LUX_ESQL. */
static int
s_max_seq(db_query_t *self, uint32_t s, int64_t *seq)
{
    char sql[96];
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "SELECT coalesce(max(seq), 0) FROM a%u.event", s);
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK)
        return LUX_ESQL;
    int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : LUX_ESQL;
    if (!rc)
        *seq = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

/* Shard s's base (the seq up to which its events are archived) as its
   tail's file says now, in the transaction open if any; 0 or LUX_ESQL. */
static int
s_base(db_query_t *self, uint32_t s, int64_t *base)
{
    char sql[128];
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM s%u.meta "
             "WHERE key = 'base_seq'", s);
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK)
        return util_err(LUX_ESQL, "shard %u: %s", s, sqlite3_errmsg(self->db));
    int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : util_err(LUX_ESQL, "shard %u: %s", s,
                                                         sqlite3_errmsg(self->db));
    if (!rc)
        *base = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

/* lux_base(shard, base): base, or an error when the archive attached for
   the shard ends below it (a compaction ended after it was attached). */
static void
s_base_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    db_query_t *self = sqlite3_user_data(ctx);
    (void) argc;
    int64_t s = sqlite3_value_int64(argv[0]), base = sqlite3_value_int64(argv[1]);
    if (s >= 0 && s < (int64_t) self->shards && self->cover[s] >= 0 && base > self->cover[s]) {
        char *msg = sqlite3_mprintf("shard %lld: a compaction archived events up to seq %lld "
                                    "after this reader opened the archive (up to %lld); run the "
                                    "query again", (long long) s, (long long) base,
                                    (long long) self->cover[s]);
        sqlite3_result_error(ctx, msg, -1);
        sqlite3_free(msg);
        return;
    }
    sqlite3_result_int64(ctx, base);
}

/* Shard s's archive beside its tail's file `path`, attached as a<s>, and
   the view s<s>_event: the archive's events up to the file's base, then
   the file's after it (rows at or below the base that a compaction cut
   short left in the file are the archive's). A shard without an archive
   is its file alone. */
static int
s_attach_archive(db_query_t *self, uint32_t s, const char *path)
{
    char apath[PATH_MAX], sql[512];
    long long base = 0;
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "SELECT CAST(value AS INTEGER) FROM s%u.meta WHERE key = 'base_seq'",
             s);
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            base = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (!db_archive_present(path)) {
        if (base)
            return util_err(LUX_ENOTFOUND, "shard %u: %s starts after seq %lld, archived in %s,"
                            " which is missing", s, path, base, apath);
        snprintf(sql, sizeof sql, "CREATE TEMP VIEW s%u_event AS SELECT * FROM s%u.event", s, s);
        return s_exec(self, sql);
    }
    /* archive.db when there is one, else its lz4 frame decompressed into
       an in-memory database (db_archive.c) */
    void *img = NULL;
    size_t len = 0;
    bool plain = util_exists(db_archive_path_of(path, apath, sizeof apath));
again:
    if (!plain) {
        char z[PATH_MAX + 8];
        snprintf(z, sizeof z, "%s.lz4", apath);
        if (db_archive_image(z, &img, &len))
            return util_err_ctx(LUX_EIO, "shard %u", s);
    }
    char *uri = plain ? sqlite3_mprintf("file:%s?mode=ro", apath) : sqlite3_mprintf(":memory:");
    snprintf(sql, sizeof sql, "ATTACH ?1 AS a%u", s);
    int rc = sqlite3_prepare_v2(self->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, uri, -1, sqlite3_free);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
    } else {
        sqlite3_free(uri);
    }
    if (rc == SQLITE_DONE && img) { /* frees img when it fails */
        snprintf(sql, sizeof sql, "a%u", s);
        rc = sqlite3_deserialize(self->db, sql, img, (sqlite3_int64) len, (sqlite3_int64) len,
                                 SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY);
        rc = rc == SQLITE_OK ? SQLITE_DONE : rc;
    } else if (img) {
        sqlite3_free(img);
    }
    if (rc != SQLITE_DONE && plain && !util_exists(apath)) {
        plain = false; /* sealed between the look and the open: the frame has it */
        goto again;
    }
    if (rc != SQLITE_DONE)
        return util_err(LUX_EIO, "shard %u: cannot open %s%s: %s", s, apath, plain ? "" : ".lz4",
                        sqlite3_errmsg(self->db));
    /* The base is read in the query's own snapshot, not once here: a
       compaction running beside (db_archive.h) moves it up and deletes the
       rows below it. The file is attached before its archive, so a
       statement's snapshot of the file is never newer than that of the
       archive, which holds every event up to any base the file shows. */
    self->cover[s] = -1;
    if (img && s_max_seq(self, s, &self->cover[s]))
        return util_err(LUX_ECORRUPT, "shard %u: %s.lz4 holds no event table: %s", s, apath,
                        sqlite3_errmsg(self->db));
    /* lux_base() fails the statement when the base it reads is past what
       the archive held when attached: never an answer with events missing
       (db_query_begin opens it again before it comes to that) */
    snprintf(sql, sizeof sql, "CREATE TEMP VIEW s%u_event AS SELECT * FROM a%u.event WHERE seq <="
             " lux_base(%u, (SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM s%u.meta WHERE"
             " key = 'base_seq')) UNION ALL SELECT * FROM s%u.event WHERE seq > lux_base(%u, (SELECT"
             " coalesce(max(CAST(value AS INTEGER)), 0) FROM s%u.meta WHERE key = 'base_seq'))",
             s, s, s, s, s, s, s);
    return s_exec(self, sql);
}

/* Fill self (zeroed) from the cluster's files: 0, or a code with the
   message set (s_release frees what was made). */
static int
s_open_live(db_query_t *self, const db_cluster_t *c)
{
    uint32_t *tail = calloc(c->shards, sizeof *tail);
    char *sql = NULL;
    size_t cap = 0;
    FILE *f = NULL;

    self->live = true;
    self->cluster = *c;
    self->shards = c->shards;
    self->files = calloc(c->shards, sizeof *self->files);
    self->lookup = calloc(c->shards, sizeof *self->lookup);
    self->cover = calloc(c->shards, sizeof *self->cover);
    if (!tail || !self->files || !self->lookup || !self->cover) {
        util_err(LUX_ENOMEM, "out of memory");
        goto fail;
    }
    if (s_tails(c, tail))
        goto fail;
    if (sqlite3_open_v2(":memory:", &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL)) {
        util_err(LUX_ESQL, "cannot open SQLite");
        goto fail;
    }
    sqlite3_busy_timeout(self->db, 5000);
    /* deterministic: the same in a whole statement (cover changes only
       between statements), so SQLite computes it once, not per row */
    if (sqlite3_create_function(self->db, "lux_base", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                self, s_base_fn, NULL, NULL) != SQLITE_OK) {
        util_err(LUX_ESQL, "cannot register lux_base(): %s", sqlite3_errmsg(self->db));
        goto fail;
    }
    /* an archive per shard at most, beside the tail's file */
    uint32_t narch = 0;
    for (uint32_t s = 0; s < c->shards; s++) {
        char path[PATH_MAX];
        db_cluster_replica_db(c, s, tail[s], path, sizeof path);
        narch += db_archive_present(path);
    }
    sqlite3_limit(self->db, SQLITE_LIMIT_ATTACHED, (int) (c->shards + narch) + 2);
    if (c->shards + narch + 2 > (uint32_t) sqlite3_limit(self->db, SQLITE_LIMIT_ATTACHED, -1)) {
        util_err(LUX_ENOSYS, "%u shards: this SQLite attaches at most %d databases", c->shards,
                 sqlite3_limit(self->db, SQLITE_LIMIT_ATTACHED, -1));
        goto fail;
    }
    for (uint32_t s = 0; s < c->shards; s++) {
        char path[PATH_MAX], stmt[PATH_MAX + 64];
        db_cluster_replica_db(c, s, tail[s], path, sizeof path);
        if (!util_exists(path)) {
            util_err(LUX_ENOTFOUND, "shard %u: the tail's file %s is missing", s, path);
            goto fail;
        }
        self->files[s] = strdup(path);
        char *uri = sqlite3_mprintf("file:%s?mode=ro", path);
        snprintf(stmt, sizeof stmt, "ATTACH %s AS s%u", "?", s);
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(self->db, stmt, -1, &st, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_text(st, 1, uri, -1, sqlite3_free);
            rc = sqlite3_step(st);
            sqlite3_finalize(st);
        } else {
            sqlite3_free(uri);
        }
        if (rc != SQLITE_DONE) {
            util_err(LUX_EIO, "shard %u: cannot open %s: %s", s, path, sqlite3_errmsg(self->db));
            goto fail;
        }
        if (narch && s_attach_archive(self, s, path))
            goto fail;
        if (narch)
            snprintf(stmt, sizeof stmt, "SELECT name, deps, seq FROM s%u_event WHERE task = ?1"
                     " AND kind = %d ORDER BY seq LIMIT 1", s, DB_K_task_submitted);
        else
        snprintf(stmt, sizeof stmt, "SELECT name, deps, seq FROM s%u.event WHERE task = ?1 AND kind = %d"
                 " ORDER BY seq LIMIT 1", s, DB_K_task_submitted);
        if (sqlite3_prepare_v3(self->db, stmt, -1, SQLITE_PREPARE_PERSISTENT, &self->lookup[s],
                               NULL) != SQLITE_OK) {
            util_err(LUX_ECORRUPT, "shard %u: %s is not a Lux log file: %s", s, path,
                     sqlite3_errmsg(self->db));
            goto fail;
        }
    }
    /* spanning views */
    f = open_memstream(&sql, &cap);
    if (narch) {
        /* archive and live as one log: `event` over every shard's
           s<S>_event, and the views of views.sql over it */
        char *views = db_query_shardify(true, NULL);
        if (!views) {
            util_err(LUX_ENOMEM, "out of memory");
            goto fail;
        }
        fprintf(f, "CREATE TEMP VIEW event AS ");
        for (uint32_t s = 0; s < c->shards; s++)
            fprintf(f, "%sSELECT %u AS shard, * FROM s%u_event", s ? " UNION ALL " : "", s, s);
        fprintf(f, ";\nCREATE TEMP VIEW event_kind AS SELECT * FROM s0.event_kind;\n%s", views);
        free(views);
        fclose(f);
        f = NULL;
        if (s_exec(self, sql))
            goto fail;
        goto made;
    }
    for (size_t v = 0; v < sizeof s_views / sizeof s_views[0]; v++) {
        /* a copy's node dies on the node's shard, not the object's: each
           shard's object_locations sees only its own shard's deaths, so the
           union drops the copies of every node any shard says ended */
        bool locs = strcmp(s_views[v], "object_locations") == 0;
        fprintf(f, "CREATE TEMP VIEW %s AS %s", s_views[v], locs ? "SELECT * FROM (" : "");
        for (uint32_t s = 0; s < c->shards; s++)
            fprintf(f, "%sSELECT %u AS shard, * FROM s%u.%s", s ? " UNION ALL " : "", s, s,
                    s_views[v]);
        if (locs)
            fprintf(f, ") WHERE node_id IS NULL OR node_id NOT IN (SELECT node_id FROM nodes"
                       " WHERE state <> 'alive')");
        fprintf(f, ";\n");
    }
    fprintf(f, "CREATE TEMP VIEW event_kind AS SELECT * FROM s0.event_kind;\n");
    fclose(f);
    f = NULL;
    char *events = db_query_shardify(true, "events");
    if (!events) {
        util_err(LUX_ENOMEM, "out of memory");
        goto fail;
    }
    int erc = s_exec(self, sql) || s_exec(self, events);
    free(events);
    if (erc)
        goto fail;
made:
    if (sqlite3_create_module(self->db, "lineage", &s_lineage, self) != SQLITE_OK) {
        util_err(LUX_ESQL, "cannot register lineage(): %s", sqlite3_errmsg(self->db));
        goto fail;
    }
    /* a GROUP BY or ORDER BY over a million events sorts them: with the
       default 2 MB of cache the sorter spills to temporary files, and it
       sorts on one thread. 64 MB (taken only as needed) and a helper
       thread per core took sql_scan from 870 to 770 ms (medians of 5) */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char pragma[96];
    snprintf(pragma, sizeof pragma, "PRAGMA cache_size = -65536; PRAGMA threads = %ld",
             cores > 1 ? (cores < 8 ? cores : 8) : 1);
    if (s_exec(self, pragma) || s_exec(self, "PRAGMA query_only = 1"))
        goto fail;
    sqlite3_set_authorizer(self->db, s_authorize, NULL);
    free(sql);
    free(tail);
    return 0;
fail:
    if (f)
        fclose(f);
    free(sql);
    free(tail);
    return util_errmsg()[0] ? LUX_EIO : util_err(LUX_ENOMEM, "out of memory");
}

/* Free what s_open_live or db_query_open_pulled made (not self). */
static void
s_release(db_query_t *self)
{
    for (uint32_t s = 0; s < self->shards; s++) {
        if (self->lookup)
            sqlite3_finalize(self->lookup[s]);
        if (self->files)
            free(self->files[s]);
    }
    free(self->lookup);
    free(self->files);
    free(self->cover);
    /* a statement a caller still holds keeps the old connection until it
       is finalized */
    sqlite3_close_v2(self->db);
}

db_query_t *
db_query_open(const db_cluster_t *c)
{
    db_query_t *self = calloc(1, sizeof *self);
    if (!self) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    if (s_open_live(self, c)) {
        db_query_close(&self);
        return NULL;
    }
    return self;
}

void
db_query_close(db_query_t **self_p)
{
    db_query_t *self = *self_p;
    if (!self)
        return;
    s_release(self);
    free(self);
    *self_p = NULL;
}

/* The log opened again, as it is now (the archives a compaction extended,
   a first archive, another tail); self unchanged when that fails. */
static int
s_reopen(db_query_t *self)
{
    db_query_t old = *self;
    memset(self, 0, sizeof *self);
    int rc = s_open_live(self, &old.cluster);
    if (rc) {
        s_release(self);
        *self = old;
        return rc;
    }
    s_release(&old);
    return 0;
}

/* Whether a shard's base, read now (in the transaction open, if any), is
   past the archive attached for it: *stale true then. 0 or a code. */
static int
s_stale(db_query_t *self, bool *stale)
{
    *stale = false;
    for (uint32_t s = 0; s < self->shards && !*stale; s++) {
        int64_t base = 0, cover = self->cover[s];
        int rc = s_base(self, s, &base);
        if (!rc && cover < 0 && s_max_seq(self, s, &cover))
            rc = util_err(LUX_ESQL, "shard %u: its archive: %s", s, sqlite3_errmsg(self->db));
        if (rc)
            return rc;
        *stale = base > cover;
    }
    return 0;
}

int
db_query_begin(db_query_t *self)
{
    if (!self->live)
        return 0; /* a pulled file: nothing moves under it */
    db_query_end(self); /* one that was still open */
    for (int tries = 0; tries < 100; tries++) {
        bool stale;
        int rc = s_exec(self, "BEGIN");
        if (!rc && !(rc = s_stale(self, &stale)) && !stale)
            return 0; /* every file read in this snapshot: bases fixed */
        db_query_end(self);
        if (rc || (rc = s_reopen(self)))
            return rc;
    }
    return util_err(LUX_ESTATE, "the log's archives kept moving while it was opened (100 times)");
}

int
db_query_end(db_query_t *self)
{
    if (sqlite3_get_autocommit(self->db))
        return 0;
    return s_exec(self, "COMMIT");
}

int
db_query_prepare(db_query_t *self, const char *sql, sqlite3_stmt **st, const char **tail)
{
    *st = NULL;
    bool stale = false;
    /* outside db_query_begin: the archives as they are now, so that only a
       compaction ending between here and the statement's first read can
       fail it (lux_base) */
    if (self->live && sqlite3_get_autocommit(self->db) &&
        (s_stale(self, &stale) || (stale && s_reopen(self))))
        return LUX_EIO;
    if (s_writes(sql))
        return util_err(LUX_EREADONLY, "lux sql is read-only: this statement would change the "
                        "log, which nothing but the cluster writes");
    if (sqlite3_prepare_v2(self->db, sql, -1, st, tail) != SQLITE_OK) {
        if (sqlite3_errcode(self->db) == SQLITE_AUTH)
            return util_err(LUX_EREADONLY, "lux sql is read-only: ATTACH, DETACH and PRAGMAs "
                            "that set a value are not allowed");
        return util_err(LUX_ESQL, "%s", sqlite3_errmsg(self->db));
    }
    if (*st && !sqlite3_stmt_readonly(*st)) {
        sqlite3_finalize(*st);
        *st = NULL;
        return util_err(LUX_EREADONLY, "lux sql is read-only: this statement would change the "
                        "log, which nothing but the cluster writes");
    }
    return 0;
}

sqlite3 *
db_query_db(db_query_t *self)
{
    return self->db;
}

const char *
db_query_file(db_query_t *self, uint32_t shard)
{
    return shard < self->shards ? self->files[shard] : NULL;
}

/* --- the views over an event table with a shard column ---------------------------------- */

char *
db_query_shardify(bool temp, const char *view)
{
    const char *p = db_sql_views, *end = NULL;
    if (view) {
        char head[64];
        snprintf(head, sizeof head, "\nCREATE VIEW %s AS\n", view);
        if (!(p = strstr(db_sql_views, head)) || !(end = strstr(p, ";\n")))
            return NULL;
        p++;
        end += 2;
    }
    char *out = NULL;
    size_t cap = 0;
    FILE *f = open_memstream(&out, &cap);
    if (!f)
        return NULL;
    while (end ? p < end : *p != 0) {
        char a[32], b[32];
        int n = 0;
        if (strncmp(p, "/*shard,", 8) == 0 && sscanf(p, "/*shard,%31[a-z]*/%n", a, &n) == 1 &&
            n) {
            fprintf(f, "%s.shard, ", a);
            p += n;
        } else if (strncmp(p, "/*shard,*/", 10) == 0) {
            fputs("shard, ", f);
            p += 10;
        } else if (strncmp(p, "/*same shard ", 13) == 0 &&
                   sscanf(p, "/*same shard %31[a-z] %31[a-z]*/%n", a, b, &n) == 2 && n) {
            fprintf(f, "%s.shard = %s.shard AND ", a, b);
            p += n;
        } else if (temp && strncmp(p, "CREATE VIEW ", 12) == 0) {
            fputs("CREATE TEMP VIEW ", f);
            p += 12;
        } else if (temp && strncmp(p, "DROP VIEW IF EXISTS ", 20) == 0) {
            fputs("DROP VIEW IF EXISTS temp.", f); /* never an attached file's */
            p += 20;
        } else {
            fputc(*p++, f);
        }
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* --- a pulled file ------------------------------------------------------------------------ */

db_query_t *
db_query_open_pulled(const char *path)
{
    db_query_t *self = calloc(1, sizeof *self);
    sqlite3_stmt *st = NULL;
    char fmt[32] = "";
    if (!self) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    if (!util_exists(path)) {
        util_err(LUX_ENOTFOUND, "%s: no such file", path);
        goto fail;
    }
    if (sqlite3_open_v2(":memory:", &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL)) {
        util_err(LUX_ESQL, "cannot open SQLite");
        goto fail;
    }
    sqlite3_busy_timeout(self->db, 5000);
    char *uri = sqlite3_mprintf("file:%s?mode=ro", path);
    int rc = sqlite3_prepare_v2(self->db, "ATTACH ?1 AS p", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, uri, -1, sqlite3_free);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        st = NULL;
    } else {
        sqlite3_free(uri);
    }
    if (rc != SQLITE_DONE) {
        util_err(LUX_EIO, "%s: cannot open: %s", path, sqlite3_errmsg(self->db));
        goto fail;
    }
    /* what lux pull wrote says what it is and how many shards it holds */
    if (sqlite3_prepare_v2(self->db,
                           "SELECT (SELECT value FROM p.meta WHERE key = 'format'),"
                           " (SELECT value FROM p.meta WHERE key = 'shards')",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        util_err(LUX_ECORRUPT, "%s is not a file `lux pull` wrote: %s", path,
                 sqlite3_errmsg(self->db));
        goto fail;
    }
    if (sqlite3_column_text(st, 0))
        snprintf(fmt, sizeof fmt, "%s", (const char *) sqlite3_column_text(st, 0));
    int shards = sqlite3_column_int(st, 1);
    sqlite3_finalize(st);
    st = NULL;
    if (strcmp(fmt, "lux-pull-1") != 0 || shards < 1 || shards > DB_MAX_SHARDS) {
        util_err(LUX_ECORRUPT, "%s is not a file `lux pull` wrote (its meta table says format "
                 "'%s', %d shards)", path, fmt, shards);
        goto fail;
    }
    self->shards = (uint32_t) shards;
    self->files = calloc(self->shards, sizeof *self->files);
    self->lookup = calloc(self->shards, sizeof *self->lookup);
    if (!self->files || !self->lookup) {
        util_err(LUX_ENOMEM, "out of memory");
        goto fail;
    }
    for (uint32_t s = 0; s < self->shards; s++) {
        char stmt[200];
        self->files[s] = strdup(path);
        snprintf(stmt, sizeof stmt, "SELECT name, deps, seq FROM p.event WHERE task = ?1 AND "
                 "kind = %d AND shard = %u ORDER BY seq LIMIT 1", DB_K_task_submitted, s);
        if (sqlite3_prepare_v3(self->db, stmt, -1, SQLITE_PREPARE_PERSISTENT, &self->lookup[s],
                               NULL) != SQLITE_OK) {
            util_err(LUX_ECORRUPT, "%s: %s", path, sqlite3_errmsg(self->db));
            goto fail;
        }
    }
    if (sqlite3_create_module(self->db, "lineage", &s_lineage, self) != SQLITE_OK) {
        util_err(LUX_ESQL, "cannot register lineage(): %s", sqlite3_errmsg(self->db));
        goto fail;
    }
    if (s_exec(self, "PRAGMA cache_size = -65536; PRAGMA query_only = 1"))
        goto fail;
    sqlite3_set_authorizer(self->db, s_authorize, NULL);
    return self;
fail:
    sqlite3_finalize(st);
    db_query_close(&self);
    return NULL;
}

uint32_t
db_query_shards(db_query_t *self)
{
    return self->shards;
}
