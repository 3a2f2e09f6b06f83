/*  db_store - one replica of one shard of the log, in SQLite.

    Layout: the tables and views of sql/base.sql, schema.sql and views.sql (their
    text is compiled in from sql/ by tools/sql2c.sh). A `meta` table records
    the cluster ID, the shard and the schema version, so a file is never
    mistaken for another shard's.

    Speed (README, "The log"): WAL mode, synchronous=NORMAL unless asked for
    FULL, 8 KiB pages, one prepared INSERT bound field by field, the caller's
    transactions (group commit), and, when external_checkpoint is set, no
    automatic checkpoint on the writing connection: a reader thread runs
    passive checkpoints instead, which takes the copy-back of the WAL off the
    writer's thread (measured: about 1.5x the insert rate on this machine).

    Errors: a damaged row found by a read or a verification is LUX_ECORRUPT
    naming the seq; SQLite failures are LUX_ESQL or LUX_EIO with SQLite's
    message and the file's path.
*/
#include "db_store.h"
#include "db_vfs.h"
#include "db_archive.h"
#include "db_seen.h"
#include "db_sqlerr.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_SCHEMA_VERSION "1"

struct db_store_t {
    sqlite3 *db;                     /* the connection */
    char *path;                      /* the file */
    bool readonly;                   /* opened read-only */
    util_id_t cluster;               /* from meta */
    uint32_t shard;                  /* from meta */
    uint8_t genesis[DB_HASH_LEN];    /* hash(0) */
    uint64_t last_seq;               /* newest seq, committed or in the open txn */
    uint8_t last_hash[DB_HASH_LEN];  /* its hash */
    uint64_t saved_seq;              /* last_seq at begin, for rollback */
    uint8_t saved_hash[DB_HASH_LEN]; /* last_hash at begin */
    bool in_txn;                     /* between begin and commit/rollback */
    sqlite3_stmt *ins;               /* INSERT INTO event */
    sqlite3_stmt *rd;                /* range read */
    sqlite3_stmt *hash_at;           /* hash of one seq */
    sqlite3_stmt *find;              /* an event by task and kind */
    sqlite3_stmt *actor_ev;          /* an actor's events of a kind, after an idx */
    sqlite3_stmt *begin, *commit, *rollback;
    db_seen_t *seen;                 /* newest event ID of each client (db_seen.c) */
    uint64_t base_seq;               /* events up to here are in the archive (db_archive.c) */
    uint8_t base_hash[DB_HASH_LEN];  /* the hash at base_seq */
    uint64_t wal_frames;             /* the WAL's frames after the last commit (watched) */
    _Atomic uint64_t *wal_watch;     /* ...also stored here (db_store_watch_wal) */
};

static pthread_once_t s_once = PTHREAD_ONCE_INIT;
static bool s_vfs_ok; /* db_vfs registered: the writer's WAL writes gathered */
static int s_commit(db_store_t *self, bool seen_now);

static void
s_sqlite_setup(void)
{
    /* Each connection is used by one thread at a time: skip SQLite's per-connection
       mutexes. Fails harmlessly if the process already initialised SQLite. */
    sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    s_vfs_ok = db_vfs_register() == SQLITE_OK;
}

static int
s_sqlerr(db_store_t *self, const char *what)
{
    return db_sqlerr(self->db, self->path, what);
}

static int
s_exec(db_store_t *self, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(self->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = s_sqlerr(self, msg ? msg : sql);
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

static int
s_prepare(db_store_t *self, sqlite3_stmt **st, const char *sql)
{
    if (sqlite3_prepare_v3(self->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return s_sqlerr(self, "prepare");
    return 0;
}

/* Read a meta value into out; 0, or LUX_ENOTFOUND. */
static int
s_meta_get(db_store_t *self, const char *key, char *out, size_t n)
{
    sqlite3_stmt *st;
    int rc = LUX_ENOTFOUND;
    if (sqlite3_prepare_v2(self->db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) !=
        SQLITE_OK)
        return s_sqlerr(self, "not a Lux log file (no meta table)");
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(out, n, "%s", (const char *) sqlite3_column_text(st, 0));
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

static int
s_meta_put(db_store_t *self, const char *key, const char *value)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(self->db, "INSERT OR REPLACE INTO meta VALUES (?, ?)", -1, &st, NULL) !=
        SQLITE_OK)
        return s_sqlerr(self, "meta");
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = s_sqlerr(self, "meta");
    sqlite3_finalize(st);
    return rc;
}

/* Create the schema in a new file, or check an existing file's identity. */
static int
s_setup(db_store_t *self, const db_store_opts_t *o)
{
    char val[128], hex[UTIL_ID_HEX];
    int rc;

    if (!self->readonly && !o->reader) {
        int empty = 1;
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(self->db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) !=
            SQLITE_OK)
            return s_sqlerr(self, "not a SQLite database");
        if (sqlite3_step(st) == SQLITE_ROW)
            empty = sqlite3_column_int(st, 0) == 0;
        sqlite3_finalize(st);
        /* A one-event commit writes two pages (the row and the task index)
           into the WAL: with 4 KiB pages it took 20 us on the replica's
           thread against 26 us with 8 KiB (src/db/db_replica.c), and it is
           on every acknowledgement's path */
        if (empty && (rc = s_exec(self, "PRAGMA page_size = 4096")))
            return rc;
        if ((rc = s_exec(self, "PRAGMA journal_mode = WAL")))
            return rc;
        if ((rc = s_exec(self, "BEGIN IMMEDIATE")))
            return rc;
        if ((rc = s_exec(self, db_sql_base)) || (rc = s_exec(self, db_sql_schema)) ||
            (rc = s_exec(self, db_sql_views)))
            goto fail;
        for (int k = 1; k < DB_K_MAX; k++) {
            char sql[128];
            if (!db_kind_name(k))
                continue; /* a gap in the codes */
            snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO event_kind VALUES (%d, '%s')", k,
                     db_kind_name(k));
            if ((rc = s_exec(self, sql)))
                goto fail;
        }
        if (s_meta_get(self, "cluster", val, sizeof val) == LUX_ENOTFOUND) {
            char sh[16];
            snprintf(sh, sizeof sh, "%u", o->shard);
            if ((rc = s_meta_put(self, "cluster", util_id_hex(&o->cluster, hex))) ||
                (rc = s_meta_put(self, "shard", sh)) ||
                (rc = s_meta_put(self, "schema_version", S_SCHEMA_VERSION)))
                goto fail;
        }
        if ((rc = s_exec(self, "COMMIT")))
            return rc;
    }
    if ((rc = s_meta_get(self, "cluster", val, sizeof val)))
        return util_err(LUX_ECORRUPT, "%s: not a Lux log file (no cluster in meta)", self->path);
    if (util_id_parse(&self->cluster, val))
        return util_err(LUX_ECORRUPT, "%s: bad cluster ID '%s' in meta", self->path, val);
    if ((rc = s_meta_get(self, "shard", val, sizeof val)))
        return util_err(LUX_ECORRUPT, "%s: not a Lux log file (no shard in meta)", self->path);
    self->shard = (uint32_t) strtoul(val, NULL, 10);
    if (!util_id_is_zero(&o->cluster) && !util_id_eq(&o->cluster, &self->cluster))
        return util_err(LUX_EINVAL, "%s: belongs to cluster %s, not %s", self->path, val,
                        util_id_hex(&o->cluster, hex));
    if (!util_id_is_zero(&o->cluster) && o->shard != self->shard)
        return util_err(LUX_EINVAL, "%s: holds shard %u, not %u", self->path, self->shard,
                        o->shard);
    db_event_genesis(self->genesis, &self->cluster, self->shard);
    memcpy(self->base_hash, self->genesis, DB_HASH_LEN);
    return 0;
fail:
    s_exec(self, "ROLLBACK");
    return rc;
}

/* The writing connection waits for the lock only while a FULL checkpoint
   (db_store_checkpoint) copies the last frames back: about a millisecond
   under one call at a time, 5-10 ms under n:n calls. SQLite's own handler
   would sleep at least 1 ms, then 2, then 5: this one naps 20 us at
   first, and gives up after about 5 s. */
static int
s_busy_writer(void *arg, int n)
{
    (void) arg;
    if (n >= 250 + 5000)
        return 0;
    usleep(n < 250 ? 20 : 1000);
    return 1;
}

db_store_t *
db_store_open(const db_store_opts_t *o)
{
    db_store_t *self = calloc(1, sizeof *self);
    int flags = SQLITE_OPEN_NOMUTEX |
                (o->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    char pragma[128];

    pthread_once(&s_once, s_sqlite_setup);
    if (!self || !(self->path = strdup(o->path))) {
        free(self);
        sqlite3_free(o->image);
        util_err(LUX_ENOMEM, "%s: out of memory", o->path);
        return NULL;
    }
    self->readonly = o->readonly;
    /* the writer's WAL writes go one per commit (db_vfs.c) */
    const char *vfs = !o->readonly && !o->reader && s_vfs_ok ? DB_VFS_NAME : NULL;
    if (o->image) {
        void *b = o->image;
        bool ok = o->readonly && sqlite3_open_v2(":memory:", &self->db, SQLITE_OPEN_READWRITE |
                                                 SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK;
        if (!ok)
            sqlite3_free(b);
        else /* frees b when it fails */
            ok = sqlite3_deserialize(self->db, "main", b, (sqlite3_int64) o->image_len,
                                     (sqlite3_int64) o->image_len, SQLITE_DESERIALIZE_FREEONCLOSE |
                                     SQLITE_DESERIALIZE_READONLY) == SQLITE_OK;
        if (!ok) {
            util_err(LUX_EIO, "%s: cannot open its image: %s", o->path,
                     self->db ? sqlite3_errmsg(self->db) : "not read-only");
            goto fail;
        }
    } else if (sqlite3_open_v2(o->path, &self->db, flags, vfs) != SQLITE_OK) {
        util_err(LUX_EIO, "%s: %s", o->path,
                 self->db ? sqlite3_errmsg(self->db) : "cannot open");
        goto fail;
    }
    if (o->readonly || o->reader)
        sqlite3_busy_timeout(self->db, 5000);
    else
        sqlite3_busy_handler(self->db, s_busy_writer, NULL);
    sqlite3_extended_result_codes(self->db, 1);
    if (s_exec(self, "PRAGMA cache_size = -32768"))
        goto fail;
    if (!o->readonly) {
        snprintf(pragma, sizeof pragma, "PRAGMA synchronous = %s; PRAGMA wal_autocheckpoint = %d",
                 o->sync_full ? "FULL" : "NORMAL", o->external_checkpoint ? 0 : 1000);
        if (s_exec(self, pragma))
            goto fail;
    }
    if (s_setup(self, o))
        goto fail;
    if (!o->readonly &&
        s_prepare(self, &self->ins,
                  "INSERT INTO event (seq, ts, kind, client, cseq, job, task, parent, actor, node,"
                  " idx, worker, attempt, status, t_start, t_end, size, name, info, fp, deps,"
                  " body, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
                  " ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)"))
        goto fail;
    if (!o->readonly && !o->reader &&
        (s_prepare(self, &self->begin, "BEGIN") || s_prepare(self, &self->commit, "COMMIT") ||
         s_prepare(self, &self->rollback, "ROLLBACK")))
        goto fail;
    if (s_prepare(self, &self->rd,
                  "SELECT seq, ts, kind, client, cseq, job, task, parent, actor, node, idx,"
                  " worker, attempt, status, t_start, t_end, size, name, info, fp, deps, body,"
                  " hash FROM event WHERE seq >= ?1 ORDER BY seq LIMIT ?2") ||
        s_prepare(self, &self->hash_at, "SELECT hash FROM event WHERE seq = ?1"))
        goto fail;
    if (db_store_refresh(self) || !(self->seen = db_seen_new(self->db, self->path)))
        goto fail;
    if (!o->readonly && !o->reader && db_seen_load(self->seen))
        goto fail;
    return self;
fail:
    db_store_close(&self);
    return NULL;
}

void
db_store_close(db_store_t **self_p)
{
    db_store_t *self = *self_p;
    if (!self)
        return;
    if (self->in_txn)
        db_store_rollback(self);
    if (self->begin && self->seen && db_seen_behind(self->seen, self->last_seq)) {
        /* write the client table now, so the next open replays nothing */
        if (db_store_begin(self) == 0 && s_commit(self, true) != 0)
            db_store_rollback(self);
    }
    sqlite3_finalize(self->begin);
    sqlite3_finalize(self->commit);
    sqlite3_finalize(self->rollback);
    sqlite3_finalize(self->ins);
    sqlite3_finalize(self->rd);
    sqlite3_finalize(self->hash_at);
    sqlite3_finalize(self->find);
    sqlite3_finalize(self->actor_ev);
    db_seen_destroy(&self->seen);
    if (self->db && sqlite3_close(self->db) != SQLITE_OK)
        log_warn("%s: close: %s", self->path, sqlite3_errmsg(self->db));
    free(self->path);
    free(self);
    *self_p = NULL;
}

/* meta base_seq and base_hash: where the archive ends (db_archive.c) */
static int
s_load_base(db_store_t *self)
{
    char val[64];
    self->base_seq = 0;
    memcpy(self->base_hash, self->genesis, DB_HASH_LEN);
    if (s_meta_get(self, "base_seq", val, sizeof val) != 0)
        return 0;
    self->base_seq = strtoull(val, NULL, 10);
    if (s_meta_get(self, "base_hash", val, sizeof val) != 0 || strlen(val) != 2 * DB_HASH_LEN ||
        util_unhex(self->base_hash, DB_HASH_LEN, val) != 0)
        return util_err(LUX_ECORRUPT, "%s: meta base_seq %llu without a valid base_hash",
                        self->path, (unsigned long long) self->base_seq);
    return 0;
}

uint64_t
db_store_base(db_store_t *self, uint8_t hash[DB_HASH_LEN])
{
    if (hash)
        memcpy(hash, self->base_hash, DB_HASH_LEN);
    return self->base_seq;
}

int
db_store_refresh(db_store_t *self)
{
    sqlite3_stmt *st;
    int rc = s_load_base(self);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(self->db, "SELECT seq, hash FROM event ORDER BY seq DESC LIMIT 1", -1,
                           &st, NULL) != SQLITE_OK)
        return s_sqlerr(self, "last event");
    self->last_seq = self->base_seq; /* every event archived: the archive's last */
    memcpy(self->last_hash, self->base_hash, DB_HASH_LEN);
    switch (sqlite3_step(st)) {
    case SQLITE_ROW:
        self->last_seq = (uint64_t) sqlite3_column_int64(st, 0);
        if (sqlite3_column_bytes(st, 1) != DB_HASH_LEN)
            rc = util_err(LUX_ECORRUPT, "%s: seq %llu has a hash of %d bytes", self->path,
                          (unsigned long long) self->last_seq, sqlite3_column_bytes(st, 1));
        else
            memcpy(self->last_hash, sqlite3_column_blob(st, 1), DB_HASH_LEN);
        break;
    case SQLITE_DONE:
        break;
    default:
        rc = s_sqlerr(self, "last event");
    }
    sqlite3_finalize(st);
    return rc;
}

uint64_t
db_store_last_seq(db_store_t *self)
{
    return self->last_seq;
}

const uint8_t *
db_store_last_hash(db_store_t *self)
{
    return self->last_hash;
}

const uint8_t *
db_store_genesis(db_store_t *self)
{
    return self->genesis;
}

const util_id_t *
db_store_cluster(db_store_t *self)
{
    return &self->cluster;
}

uint32_t
db_store_shard(db_store_t *self)
{
    return self->shard;
}

const char *
db_store_path(db_store_t *self)
{
    return self->path;
}

int
db_store_begin(db_store_t *self)
{
    int rc;
    if (self->readonly)
        return util_err(LUX_EREADONLY, "%s: opened read-only", self->path);
    if (!self->begin)
        return util_err(LUX_ESTATE, "%s: not opened for writing", self->path);
    rc = sqlite3_step(self->begin);
    sqlite3_reset(self->begin);
    if (rc != SQLITE_DONE)
        return s_sqlerr(self, "begin");
    self->in_txn = true;
    self->saved_seq = self->last_seq;
    memcpy(self->saved_hash, self->last_hash, DB_HASH_LEN);
    db_seen_begin(self->seen);
    return 0;
}

static void
s_bind_id(sqlite3_stmt *st, int col, const db_event_t *e, uint32_t bit, const util_id_t *id)
{
    if (e->mask & bit)
        sqlite3_bind_blob(st, col, id->b, UTIL_ID_LEN, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

static void
s_bind_int(sqlite3_stmt *st, int col, const db_event_t *e, uint32_t bit, int64_t v)
{
    if (e->mask & bit)
        sqlite3_bind_int64(st, col, v);
    else
        sqlite3_bind_null(st, col);
}

/* Text and blobs: present-but-empty must stay distinct from NULL, and
   SQLite binds NULL for a NULL pointer, so empty values point at "". */
static void
s_bind_bytes(sqlite3_stmt *st, int col, const db_event_t *e, uint32_t bit, const void *p,
             uint32_t n, bool text)
{
    if (!(e->mask & bit))
        sqlite3_bind_null(st, col);
    else if (text)
        sqlite3_bind_text(st, col, n ? (const char *) p : "", (int) n, SQLITE_STATIC);
    else
        sqlite3_bind_blob(st, col, n ? p : "", (int) n, SQLITE_STATIC);
}

void
db_store_bind_event(sqlite3_stmt *st, uint64_t seq, const db_event_t *e)
{
    sqlite3_bind_int64(st, 1, (int64_t) seq);
    sqlite3_bind_int64(st, 2, e->ts);
    sqlite3_bind_int(st, 3, e->kind);
    s_bind_id(st, 4, e, DB_F_CLIENT, &e->client);
    s_bind_int(st, 5, e, DB_F_CLIENT, (int64_t) e->cseq);
    s_bind_id(st, 6, e, DB_F_JOB, &e->job);
    s_bind_id(st, 7, e, DB_F_TASK, &e->task);
    s_bind_id(st, 8, e, DB_F_PARENT, &e->parent);
    s_bind_id(st, 9, e, DB_F_ACTOR, &e->actor);
    s_bind_id(st, 10, e, DB_F_NODE, &e->node);
    s_bind_int(st, 11, e, DB_F_IDX, e->idx);
    s_bind_int(st, 12, e, DB_F_WORKER, e->worker);
    s_bind_int(st, 13, e, DB_F_ATTEMPT, e->attempt);
    s_bind_int(st, 14, e, DB_F_STATUS, e->status);
    s_bind_int(st, 15, e, DB_F_T_START, e->t_start);
    s_bind_int(st, 16, e, DB_F_T_END, e->t_end);
    s_bind_int(st, 17, e, DB_F_SIZE, e->size);
    s_bind_bytes(st, 18, e, DB_F_NAME, e->name, e->name_len, true);
    s_bind_bytes(st, 19, e, DB_F_INFO, e->info, e->info_len, true);
    s_bind_bytes(st, 20, e, DB_F_FP, e->fp, DB_FP_LEN, false);
    s_bind_bytes(st, 21, e, DB_F_DEPS, e->deps, e->deps_len, false);
    s_bind_bytes(st, 22, e, DB_F_BODY, e->body, e->body_len, false);
    sqlite3_bind_blob(st, 23, e->hash, DB_HASH_LEN, SQLITE_STATIC);
}

int
db_store_put(db_store_t *self, uint64_t seq, const uint8_t *rec, size_t n)
{
    db_event_t e;
    sqlite3_stmt *st = self->ins;
    int rc;

    if (seq != self->last_seq + 1)
        return util_err(LUX_EGAP, "%s: seq gap %llu -> %llu", self->path,
                        (unsigned long long) self->last_seq, (unsigned long long) seq);
    if ((rc = db_event_decode(&e, rec, n)))
        return util_err_ctx(rc, "%s: seq %llu", self->path, (unsigned long long) seq);
    db_store_bind_event(st, seq, &e);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return s_sqlerr(self, "insert");
    if ((e.mask & DB_F_CLIENT) && (rc = db_seen_note(self->seen, &e.client, e.cseq, seq)))
        return rc;
    self->last_seq = seq;
    memcpy(self->last_hash, e.hash, DB_HASH_LEN);
    return 0;
}

/* Commit the open transaction; with seen_now, write the client table in
   it whether or not it is due. */
static int
s_commit(db_store_t *self, bool seen_now)
{
    int rc = db_seen_commit(self->seen, self->last_seq, seen_now);
    if (rc)
        return rc;
    /* a step that failed (a full disk) may have rolled it back: COMMIT
       would then fail with a message that hides why (db_seen.c, t/9162) */
    if (sqlite3_get_autocommit(self->db))
        return util_err(LUX_EIO, "%s: commit: the transaction is rolled back (an earlier step"
                        " failed)", self->path);
    rc = sqlite3_step(self->commit);
    sqlite3_reset(self->commit);
    if (rc != SQLITE_DONE)
        return s_sqlerr(self, "commit");
    self->in_txn = false;
    return 0;
}

int
db_store_commit(db_store_t *self)
{
    return s_commit(self, false);
}

void
db_store_rollback(db_store_t *self)
{
    if (sqlite3_get_autocommit(self->db) == 0)
        sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
    self->in_txn = false;
    self->last_seq = self->saved_seq;
    memcpy(self->last_hash, self->saved_hash, DB_HASH_LEN);
    db_seen_rollback(self->seen);
}

/* The row's columns are read through sqlite3_column_value, one API call
   per column: the sqlite3_value_* calls on it skip the statement checks
   that each sqlite3_column_* call repeats (a catch-up read makes some
   sixty of them per event). The connection is NOMUTEX in MULTITHREAD
   mode, where an unprotected value is as good as a protected one. */

/* Copy an ID column into id; false when it is not NULL and not 16 bytes. */
static bool
s_col_id(sqlite3_stmt *st, int col, db_event_t *e, uint32_t bit, util_id_t *id)
{
    sqlite3_value *v = sqlite3_column_value(st, col);
    if (sqlite3_value_type(v) == SQLITE_NULL)
        return true;
    const void *p = sqlite3_value_blob(v);
    if (!p || sqlite3_value_bytes(v) != UTIL_ID_LEN)
        return false;
    memcpy(id->b, p, UTIL_ID_LEN);
    e->mask |= bit;
    return true;
}

static void
s_col_int(sqlite3_stmt *st, int col, db_event_t *e, uint32_t bit, int64_t *out)
{
    sqlite3_value *v = sqlite3_column_value(st, col);
    if (sqlite3_value_type(v) != SQLITE_NULL) {
        *out = sqlite3_value_int64(v);
        e->mask |= bit;
    }
}

static const void *
s_col_bytes(sqlite3_stmt *st, int col, db_event_t *e, uint32_t bit, uint32_t *n, bool text)
{
    sqlite3_value *v = sqlite3_column_value(st, col);
    const void *p;
    if (sqlite3_value_type(v) == SQLITE_NULL)
        return NULL;
    p = text ? (const void *) sqlite3_value_text(v) : sqlite3_value_blob(v);
    *n = (uint32_t) sqlite3_value_bytes(v);
    e->mask |= bit;
    return p ? p : "";
}

static int
s_row(db_store_t *self, sqlite3_stmt *st, db_event_t *e)
{
    return db_store_row_event(st, e, self->path);
}

int
db_store_row_event(sqlite3_stmt *st, db_event_t *e, const char *where)
{
    int64_t cseq = 0;
    uint32_t n;
    const void *fp, *hash;

    memset(e, 0, sizeof *e);
    e->seq = (uint64_t) sqlite3_column_int64(st, 0);
    e->ts = sqlite3_column_int64(st, 1);
    e->kind = (uint16_t) sqlite3_column_int(st, 2);
    if (!s_col_id(st, 3, e, DB_F_CLIENT, &e->client) || !s_col_id(st, 5, e, DB_F_JOB, &e->job) ||
        !s_col_id(st, 6, e, DB_F_TASK, &e->task) ||
        !s_col_id(st, 7, e, DB_F_PARENT, &e->parent) ||
        !s_col_id(st, 8, e, DB_F_ACTOR, &e->actor) || !s_col_id(st, 9, e, DB_F_NODE, &e->node))
        return util_err(LUX_ECORRUPT, "%s: seq %llu: an ID column is not 16 bytes", where,
                        (unsigned long long) e->seq);
    s_col_int(st, 4, e, 0, &cseq);
    e->cseq = (uint64_t) cseq;
    s_col_int(st, 10, e, DB_F_IDX, &e->idx);
    s_col_int(st, 11, e, DB_F_WORKER, &e->worker);
    s_col_int(st, 12, e, DB_F_ATTEMPT, &e->attempt);
    s_col_int(st, 13, e, DB_F_STATUS, &e->status);
    s_col_int(st, 14, e, DB_F_T_START, &e->t_start);
    s_col_int(st, 15, e, DB_F_T_END, &e->t_end);
    s_col_int(st, 16, e, DB_F_SIZE, &e->size);
    e->name = s_col_bytes(st, 17, e, DB_F_NAME, &e->name_len, true);
    e->info = s_col_bytes(st, 18, e, DB_F_INFO, &e->info_len, true);
    fp = s_col_bytes(st, 19, e, DB_F_FP, &n, false);
    if (fp) {
        if (n != DB_FP_LEN)
            return util_err(LUX_ECORRUPT, "%s: seq %llu: fp is %u bytes", where,
                            (unsigned long long) e->seq, n);
        memcpy(e->fp, fp, DB_FP_LEN);
    }
    e->deps = s_col_bytes(st, 20, e, DB_F_DEPS, &e->deps_len, false);
    e->body = s_col_bytes(st, 21, e, DB_F_BODY, &e->body_len, false);
    sqlite3_value *hv = sqlite3_column_value(st, 22);
    hash = sqlite3_value_blob(hv);
    if (!hash || sqlite3_value_bytes(hv) != DB_HASH_LEN)
        return util_err(LUX_ECORRUPT, "%s: seq %llu: hash is not %d bytes", where,
                        (unsigned long long) e->seq, DB_HASH_LEN);
    memcpy(e->hash, hash, DB_HASH_LEN);
    if (e->deps && e->deps_len % DB_DEP_LEN)
        return util_err(LUX_ECORRUPT, "%s: seq %llu: deps of %u bytes", where,
                        (unsigned long long) e->seq, e->deps_len);
    return 0;
}

/* Whether a compaction (db_archive.c, another process) has moved the base
   up to `from` or past it since this handle read it: rows this handle
   looks for at or below the new base are gone from the file, into the
   archive. Called when a lookup misses, after the miss: the file's rows
   are deleted only after its base moved and the archive holds them. */
static bool
s_base_moved(db_store_t *self, uint64_t from)
{
    uint64_t old = self->base_seq;
    if (s_load_base(self)) {
        self->base_seq = old;
        return false;
    }
    return self->base_seq > old && from <= self->base_seq;
}

int
db_store_read(db_store_t *self, uint64_t from, uint32_t max, size_t max_bytes, util_buf_t *out,
              uint32_t *count)
{
    sqlite3_stmt *st = self->rd;
    size_t start = out->len;
    uint32_t got = 0;
    int rc = 0, step;
    db_event_t e;

    *count = 0;
    if (from == 0)
        from = 1;
again:
    if (from <= self->base_seq) /* archived: read there, up to the base */
        return db_archive_read(self->path, &self->cluster, self->shard, from, self->base_seq,
                               max, max_bytes, out, count);
    sqlite3_bind_int64(st, 1, (int64_t) from);
    sqlite3_bind_int64(st, 2, max);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = s_row(self, st, &e)))
            break;
        if (got == 0 && e.seq != from && s_base_moved(self, from)) {
            /* a compaction beside us moved the rows from `from` on into
               the archive since this handle last read its base */
            sqlite3_reset(st);
            out->len = start;
            goto again;
        }
        if (e.seq != from + got) {
            rc = util_err(LUX_ECORRUPT, "%s: seq %llu missing (next row is %llu)", self->path,
                          (unsigned long long) (from + got), (unsigned long long) e.seq);
            break;
        }
        size_t at = out->len;
        util_buf_put_u32(out, 0);
        db_event_encode(&e, out);
        if (out->oom) {
            rc = util_err(LUX_ENOMEM, "%s: out of memory reading seq %llu", self->path,
                          (unsigned long long) e.seq);
            break;
        }
        util_le32(out->data + at, (uint32_t) (out->len - at - 4));
        got++;
        if (out->len - start >= max_bytes)
            break;
    }
    if (!rc && step != SQLITE_ROW && step != SQLITE_DONE)
        rc = s_sqlerr(self, "read");
    sqlite3_reset(st);
    if (!rc && got == 0 && step == SQLITE_DONE && s_base_moved(self, from))
        goto again; /* every row from `from` on archived since */
    *count = got;
    return rc;
}

int
db_store_find(db_store_t *self, const util_id_t *task, int kind, util_buf_t *out, uint64_t *seq)
{
    db_event_t e;
    int rc, step;
    if (!self->find &&
        (rc = s_prepare(self, &self->find,
                        "SELECT seq, ts, kind, client, cseq, job, task, parent, actor, node, idx,"
                        " worker, attempt, status, t_start, t_end, size, name, info, fp, deps,"
                        " body, hash FROM event WHERE task = ?1 AND kind = ?2 ORDER BY seq"
                        " LIMIT 1")))
        return rc;
    sqlite3_bind_blob(self->find, 1, task->b, UTIL_ID_LEN, SQLITE_STATIC);
    sqlite3_bind_int(self->find, 2, kind);
    step = sqlite3_step(self->find);
    if (step == SQLITE_ROW) {
        if (!(rc = s_row(self, self->find, &e))) {
            db_event_encode(&e, out);
            *seq = e.seq;
            if (out->oom)
                rc = util_err(LUX_ENOMEM, "out of memory");
        }
    } else if (step == SQLITE_DONE) {
        rc = LUX_ENOTFOUND;
    } else {
        rc = s_sqlerr(self, "find");
    }
    sqlite3_reset(self->find);
    if (rc == LUX_ENOTFOUND) {
        /* not in the file: in the archive, when the base (read after the miss, so that
           rows a compaction deleted meanwhile are there) says some events went there */
        uint64_t old = self->base_seq;
        if (s_load_base(self))
            self->base_seq = old;
        if (self->base_seq > 0)
            rc = db_archive_find(self->path, &self->cluster, self->shard, task, kind, out, seq);
        if (rc == LUX_ENOTFOUND)
            util_err(LUX_ENOTFOUND, "%s: no event of kind %s for that task", self->path,
                     db_kind_name(kind));
    }
    return rc;
}

int
db_store_actor_events(db_store_t *self, const util_id_t *actor, int kind, uint64_t after,
                      int (*cb)(void *arg, const db_event_t *e), void *arg)
{
    db_event_t e;
    int rc = 0, step;
    if (!self->actor_ev &&
        (rc = s_prepare(self, &self->actor_ev,
                        "SELECT seq, ts, kind, client, cseq, job, task, parent, actor, node, idx,"
                        " worker, attempt, status, t_start, t_end, size, name, info, fp, deps,"
                        " body, hash FROM event WHERE actor = ?1 AND kind = ?2 AND idx > ?3"
                        " AND seq > ?4 ORDER BY seq")))
        return rc;
    /* One read transaction: the base read in it says where the file's
       events start in the same snapshot the query sees; the archive holds
       every event up to that base (it is written before the base moves). */
    bool txn = !self->in_txn && sqlite3_get_autocommit(self->db);
    if (txn && (rc = s_exec(self, "BEGIN")))
        return rc;
    uint64_t old = self->base_seq;
    if (s_load_base(self))
        self->base_seq = old;
    bool stopped = false;
    if (self->base_seq > 0)
        rc = db_archive_actor_events(self->path, &self->cluster, self->shard, actor, kind, after,
                                     self->base_seq, cb, arg, &stopped);
    if (!rc && !stopped) {
        sqlite3_bind_blob(self->actor_ev, 1, actor->b, UTIL_ID_LEN, SQLITE_STATIC);
        sqlite3_bind_int(self->actor_ev, 2, kind);
        sqlite3_bind_int64(self->actor_ev, 3, (int64_t) after);
        sqlite3_bind_int64(self->actor_ev, 4, (int64_t) self->base_seq);
        while ((step = sqlite3_step(self->actor_ev)) == SQLITE_ROW) {
            if ((rc = s_row(self, self->actor_ev, &e)) || cb(arg, &e))
                break;
        }
        if (step != SQLITE_ROW && step != SQLITE_DONE)
            rc = s_sqlerr(self, "actor events");
        sqlite3_reset(self->actor_ev);
    }
    if (txn)
        sqlite3_exec(self->db, "COMMIT", NULL, NULL, NULL);
    return rc;
}

int
db_store_hash_at(db_store_t *self, uint64_t seq, uint8_t out[DB_HASH_LEN])
{
    int rc = LUX_ENOTFOUND;
    if (seq == 0) {
        memcpy(out, self->genesis, DB_HASH_LEN);
        return 0;
    }
    if (seq == self->base_seq && seq) {
        memcpy(out, self->base_hash, DB_HASH_LEN);
        return 0;
    }
    if (seq < self->base_seq)
        return db_archive_hash_at(self->path, &self->cluster, self->shard, seq, out);
    sqlite3_bind_int64(self->hash_at, 1, (int64_t) seq);
    switch (sqlite3_step(self->hash_at)) {
    case SQLITE_ROW:
        if (sqlite3_column_bytes(self->hash_at, 0) == DB_HASH_LEN) {
            memcpy(out, sqlite3_column_blob(self->hash_at, 0), DB_HASH_LEN);
            rc = 0;
        } else {
            rc = util_err(LUX_ECORRUPT, "%s: seq %llu: bad hash", self->path,
                          (unsigned long long) seq);
        }
        break;
    case SQLITE_DONE:
        sqlite3_reset(self->hash_at);
        if (s_base_moved(self, seq)) { /* archived since this handle read its base */
            if (seq == self->base_seq) {
                memcpy(out, self->base_hash, DB_HASH_LEN);
                return 0;
            }
            return db_archive_hash_at(self->path, &self->cluster, self->shard, seq, out);
        }
        util_err(LUX_ENOTFOUND, "%s: no seq %llu", self->path, (unsigned long long) seq);
        break;
    default:
        rc = s_sqlerr(self, "hash");
    }
    sqlite3_reset(self->hash_at);
    return rc;
}

/* The steps of a truncation, each with the seq bound as ?1, never formatted
   into the text: a fixed buffer once cut the text's last COMMIT to "COMM"
   (seqs of six digits) or "CO" (seven), so that every truncation from seq
   100000 on failed, and the replica with it, at every restart (issue 26). */
static const char *const s_truncate_sql[] = {
    /* the clients whose events are cut, the oldest event ID cut of each,
       and the seq of the event before it (found below) */
    "CREATE TEMP TABLE IF NOT EXISTS cut (client BLOB PRIMARY KEY, cseq INTEGER, seq INTEGER)"
    " WITHOUT ROWID",
    "DELETE FROM temp.cut",
    "INSERT INTO temp.cut SELECT client, min(cseq), NULL FROM event WHERE seq > ?1"
    " AND client IS NOT NULL GROUP BY client",
    /* Event IDs are dense per client and taken in order (db_replica.c,
       IDEMPOTENCE), so a cut client's newest remaining event is the one
       before its oldest cut. Its seq is in client_seen when that was last
       written before the cut (the usual case: what is cut is recent);
       otherwise a scan back from the cut finds it, stopping at the first
       match. Other clients' rows are untouched: they hold events before
       the cut, and db_seen_load reads back those after seen_seq. */
    "UPDATE temp.cut SET seq = (SELECT s.seq FROM client_seen s WHERE s.client = cut.client"
    " AND s.cseq = cut.cseq - 1 AND s.seq <= ?1) WHERE cseq > 1",
    "UPDATE temp.cut SET seq = (SELECT e.seq FROM event e WHERE e.seq <= ?1"
    " AND e.client = cut.client AND e.cseq = cut.cseq - 1 ORDER BY e.seq DESC LIMIT 1)"
    " WHERE cseq > 1 AND seq IS NULL",
    "DELETE FROM event WHERE seq > ?1",
    "DELETE FROM client_seen WHERE client IN (SELECT client FROM temp.cut)",
    "INSERT INTO client_seen SELECT client, cseq - 1, seq FROM temp.cut"
    " WHERE cseq > 1 AND seq IS NOT NULL",
    /* client_seen is exact up to the older of the cut and what it held */
    "UPDATE meta SET value = CAST(min(CAST(value AS INTEGER), ?1) AS TEXT) WHERE key = 'seen_seq'",
    "DELETE FROM temp.cut",
};

int
db_store_truncate(db_store_t *self, uint64_t after)
{
    char what[64];
    int rc;
    if (after >= self->last_seq)
        return 0;
    log_warn("%s: truncating unacknowledged events %llu..%llu", self->path,
             (unsigned long long) after + 1, (unsigned long long) self->last_seq);
    snprintf(what, sizeof what, "truncating after seq %llu", (unsigned long long) after);
    if ((rc = s_exec(self, "BEGIN IMMEDIATE")))
        return rc;
    for (size_t i = 0; i < sizeof s_truncate_sql / sizeof *s_truncate_sql && !rc; i++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(self->db, s_truncate_sql[i], -1, &st, NULL) != SQLITE_OK) {
            rc = s_sqlerr(self, what);
            break;
        }
        if (sqlite3_bind_parameter_count(st) > 0)
            sqlite3_bind_int64(st, 1, (int64_t) after);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = s_sqlerr(self, what);
        sqlite3_finalize(st);
    }
    if (!rc)
        rc = s_exec(self, "COMMIT");
    if (rc) {
        sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    if ((rc = db_store_refresh(self)))
        return rc;
    return db_seen_load(self->seen);
}

int
db_store_clients(db_store_t *self,
                 int (*fn)(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq),
                 void *arg)
{
    return db_seen_each(self->seen, fn, arg);
}

int
db_store_verify(db_store_t *self, uint64_t *bad_seq)
{
    sqlite3_stmt *st;
    uint8_t prev[DB_HASH_LEN], h[DB_HASH_LEN];
    uint64_t want = self->base_seq + 1;
    util_buf_t b;
    db_event_t e;
    int rc = 0, step;

    /* from the archive's end (rows at or below it may remain from a
       compaction cut short: they are the archive's) */
    *bad_seq = 0;
    if (sqlite3_prepare_v2(self->db,
                           "SELECT seq, ts, kind, client, cseq, job, task, parent, actor, node,"
                           " idx, worker, attempt, status, t_start, t_end, size, name, info, fp,"
                           " deps, body, hash FROM event WHERE seq > ?1 ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return s_sqlerr(self, "verify");
    sqlite3_bind_int64(st, 1, (int64_t) self->base_seq);
    memcpy(prev, self->base_hash, DB_HASH_LEN);
    util_buf_init(&b);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = s_row(self, st, &e))) {
            *bad_seq = (uint64_t) sqlite3_column_int64(st, 0);
            break;
        }
        if (e.seq != want) {
            *bad_seq = want;
            rc = util_err(LUX_ECORRUPT,
                          "%s: seq %llu is missing (the next event is seq %llu): dropped event",
                          self->path, (unsigned long long) want, (unsigned long long) e.seq);
            break;
        }
        b.len = 0;
        db_event_encode(&e, &b);
        if (b.oom) {
            rc = util_err(LUX_ENOMEM, "%s: out of memory", self->path);
            break;
        }
        db_event_chain(h, prev, e.seq, b.data, b.len);
        if (memcmp(h, e.hash, DB_HASH_LEN) != 0) {
            *bad_seq = e.seq;
            rc = util_err(LUX_ECORRUPT,
                          "%s: seq %llu: hash chain broken: the event was changed, moved or"
                          " inserted, or one before it was",
                          self->path, (unsigned long long) e.seq);
            break;
        }
        memcpy(prev, h, DB_HASH_LEN);
        want++;
    }
    if (!rc && step != SQLITE_DONE)
        rc = s_sqlerr(self, "verify");
    util_buf_free(&b);
    sqlite3_finalize(st);
    return rc;
}

/* A FULL checkpoint syncs the WAL while it holds the writer off: with
   every frame written since the last sync still in the page cache, that
   took 10-60 ms under n:n actor calls. Syncing the file first, through a
   descriptor of our own and without a lock, leaves it only the last few
   frames. A failure here is no loss: SQLite syncs anyway. */
static void
s_presync_wal(db_store_t *self)
{
    char wal[PATH_MAX];
    if (snprintf(wal, sizeof wal, "%s-wal", self->path) >= (int) sizeof wal)
        return;
    int fd = open(wal, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void) fdatasync(fd);
        close(fd);
    }
}

int
db_store_checkpoint(db_store_t *self, bool full, int *copied)
{
    int log = 0, done = 0, rc;
    if (full) {
        s_presync_wal(self);
        sqlite3_busy_handler(self->db, NULL, NULL); /* a busy lock: give up at once */
    }
    rc = sqlite3_wal_checkpoint_v2(self->db, NULL,
                                   full ? SQLITE_CHECKPOINT_FULL : SQLITE_CHECKPOINT_PASSIVE,
                                   &log, &done);
    if (full)
        sqlite3_busy_timeout(self->db, 5000);
    if (copied)
        *copied = done > 0 ? done : 0;
    if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        return s_sqlerr(self, "checkpoint");
    return rc == SQLITE_BUSY;
}

static int
s_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    db_store_t *self = arg;
    (void) db;
    (void) name;
    self->wal_frames = (uint64_t) pages;
    atomic_store(self->wal_watch, (uint64_t) pages);
    return SQLITE_OK;
}

void
db_store_watch_wal(db_store_t *self, _Atomic uint64_t *pages)
{
    self->wal_watch = pages;
    sqlite3_wal_hook(self->db, s_wal_hook, self);
}

uint64_t
db_store_wal_frames(const db_store_t *self)
{
    return self->wal_frames;
}
