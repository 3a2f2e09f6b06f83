/*  db_archive - archives of old events (see db_archive.h).

    The archive is a db_store file (the schema, indexes and views of a
    replica's), opened as a writer only by db_archive_compact. Its pages
    are not compressed: see doc/DESIGN.md, "Retention", for the
    measurement that decided it.

    Replica files are changed through a connection of this module's own,
    in WAL mode like the replica's: a meta update, then deletions of at
    most `batch` rows per transaction, so that a running replica's writer
    waits for one short transaction at a time, never for the whole job.
*/
#include "db_archive.h"
#include "db_chain.h"
#include "db_store.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"
#include "../util/util_time.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *
db_archive_path_of(const char *replica_path, char *out, size_t n)
{
    const char *slash = strrchr(replica_path, '/');
    int dirlen = slash ? (int) (slash - replica_path) : 1;
    snprintf(out, n, "%.*s/archive.db", dirlen, slash ? replica_path : ".");
    return out;
}

static db_store_t *
s_open(const char *replica_path, const util_id_t *cluster, uint32_t shard, bool write,
       char *path, size_t n)
{
    db_archive_path_of(replica_path, path, n);
    if (!write && !util_exists(path)) {
        util_err(LUX_ENOTFOUND, "%s: no such archive (the replica file's events start after "
                 "an archived seq)", path);
        return NULL;
    }
    db_store_opts_t so = {.path = path, .cluster = *cluster, .shard = shard, .readonly = !write};
    return db_store_open(&so);
}

int
db_archive_read(const char *replica_path, const util_id_t *cluster, uint32_t shard,
                uint64_t from, uint64_t upto, uint32_t max, size_t max_bytes, util_buf_t *out,
                uint32_t *count)
{
    char path[PATH_MAX];
    *count = 0;
    db_store_t *a = s_open(replica_path, cluster, shard, false, path, sizeof path);
    if (!a)
        return util_exists(path) ? LUX_EIO : LUX_ENOTFOUND;
    int rc = 0;
    if (db_store_last_seq(a) < upto)
        rc = util_err(LUX_ENOTFOUND, "%s ends at seq %llu, before the base %llu of %s", path,
                      (unsigned long long) db_store_last_seq(a), (unsigned long long) upto,
                      replica_path);
    else {
        if (upto - from + 1 < max)
            max = (uint32_t) (upto - from + 1);
        rc = db_store_read(a, from, max, max_bytes, out, count);
    }
    db_store_close(&a);
    return rc;
}

int
db_archive_hash_at(const char *replica_path, const util_id_t *cluster, uint32_t shard,
                   uint64_t seq, uint8_t out[DB_HASH_LEN])
{
    char path[PATH_MAX];
    db_store_t *a = s_open(replica_path, cluster, shard, false, path, sizeof path);
    if (!a)
        return util_exists(path) ? LUX_EIO : LUX_ENOTFOUND;
    int rc = db_store_hash_at(a, seq, out);
    db_store_close(&a);
    return rc;
}

int
db_archive_find(const char *replica_path, const util_id_t *cluster, uint32_t shard,
                const util_id_t *task, int kind, util_buf_t *out, uint64_t *seq)
{
    char path[PATH_MAX];
    db_store_t *a = s_open(replica_path, cluster, shard, false, path, sizeof path);
    if (!a)
        return util_exists(path) ? LUX_EIO : LUX_ENOTFOUND;
    int rc = db_store_find(a, task, kind, out, seq);
    db_store_close(&a);
    return rc;
}

/* Only the archive's events up to the live file's base: rows above it,
   left by a compaction cut short, are the live file's to give. */
typedef struct {
    uint64_t upto;
    int (*cb)(void *arg, const db_event_t *e);
    void *arg;
    bool stopped;
} s_upto_t;

static int
s_upto(void *arg, const db_event_t *e)
{
    s_upto_t *u = arg;
    if (e->seq > u->upto)
        return 0;
    if (u->cb(u->arg, e)) {
        u->stopped = true;
        return 1;
    }
    return 0;
}

int
db_archive_actor_events(const char *replica_path, const util_id_t *cluster, uint32_t shard,
                        const util_id_t *actor, int kind, uint64_t after, uint64_t upto,
                        int (*cb)(void *arg, const db_event_t *e), void *arg, bool *stopped)
{
    char path[PATH_MAX];
    db_store_t *a = s_open(replica_path, cluster, shard, false, path, sizeof path);
    if (!a)
        return util_exists(path) ? LUX_EIO : LUX_ENOTFOUND;
    s_upto_t u = {.upto = upto, .cb = cb, .arg = arg};
    int rc = db_store_actor_events(a, actor, kind, after, s_upto, &u);
    db_store_close(&a);
    *stopped = u.stopped;
    return rc;
}

/* --- compaction ------------------------------------------------------------------------ */

static int
s_sql(sqlite3 *db, const char *path, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = util_err(LUX_ESQL, "%s: %s", path, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

/* Step 1: the tail's events up to n appended to the archive, each hash
   checked on the way. */
static int
s_archive(db_store_t *tail, db_store_t *arch, uint64_t n, uint64_t *moved)
{
    util_buf_t buf;
    uint8_t prev[DB_HASH_LEN], h[DB_HASH_LEN];
    int rc = 0;
    util_buf_init(&buf);
    memcpy(prev, db_store_last_hash(arch), DB_HASH_LEN);
    while (!rc && db_store_last_seq(arch) < n) {
        uint64_t from = db_store_last_seq(arch) + 1;
        uint32_t want = n - from + 1 < 16384 ? (uint32_t) (n - from + 1) : 16384, got = 0;
        buf.len = 0;
        if ((rc = db_store_read(tail, from, want, 8u << 20, &buf, &got)))
            break;
        if (got == 0) {
            rc = util_err(LUX_EGAP, "%s: no seq %llu to archive", db_store_path(tail),
                          (unsigned long long) from);
            break;
        }
        if ((rc = db_store_begin(arch)))
            break;
        size_t off = 0;
        for (uint32_t k = 0; k < got && !rc; k++) {
            uint32_t len = util_rd32(buf.data + off);
            const uint8_t *rec = buf.data + off + 4;
            uint64_t seq = from + k;
            db_event_chain(h, prev, seq, rec, len);
            if (len < DB_HASH_LEN || memcmp(h, rec + len - DB_HASH_LEN, DB_HASH_LEN) != 0)
                rc = util_err(LUX_ECORRUPT, "%s: seq %llu: hash chain broken: not archived",
                              db_store_path(tail), (unsigned long long) seq);
            else
                rc = db_store_put(arch, seq, rec, len);
            memcpy(prev, h, DB_HASH_LEN);
            off += 4 + len;
        }
        if (!rc)
            rc = db_store_commit(arch);
        if (rc)
            db_store_rollback(arch);
        else
            *moved += got;
    }
    util_buf_free(&buf);
    return rc;
}

/* Steps 2 and 3 on one replica file: its base up to n (hash h), then its
   rows at or below the base deleted, batch rows per transaction. */
static int
s_trim(const char *path, uint64_t n, const uint8_t h[DB_HASH_LEN], const db_archive_opts_t *o,
       uint64_t *deleted)
{
    uint32_t batch = o->batch ? o->batch : 4096;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char sql[256], hex[2 * DB_HASH_LEN + 1];
    int rc = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        rc = util_err(LUX_EIO, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return rc;
    }
    sqlite3_busy_timeout(db, 10000);
    util_hex(hex, h, DB_HASH_LEN);
    /* the base only moves up, and only over events the file holds (a
       member that joined since may be catching up from below n) */
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE; INSERT OR REPLACE INTO meta SELECT 'base_seq', '%llu' WHERE"
             " %llu > coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key ="
             " 'base_seq'), 0) AND %llu <= coalesce((SELECT max(seq) FROM event), 0);",
             (unsigned long long) n, (unsigned long long) n, (unsigned long long) n);
    if ((rc = s_sql(db, path, sql)))
        goto out;
    if (sqlite3_changes(db) > 0) {
        snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta VALUES ('base_hash', '%s')", hex);
        if ((rc = s_sql(db, path, sql))) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            goto out;
        }
    }
    if ((rc = s_sql(db, path, "COMMIT")))
        goto out;
    if (o->hold)
        o->hold("base");
    /* Rows at or below the base, and at or below seen_seq: the client
       table in the file is exact up to there, and a writer that restarts
       rebuilds it from the rows after it (db_store.c s_load_clients), so
       those stay until a later compaction, after the writer moved on. */
    if (sqlite3_prepare_v2(db, "DELETE FROM event WHERE seq IN (SELECT seq FROM event WHERE seq"
                               " <= min((SELECT CAST(value AS INTEGER) FROM meta WHERE key ="
                               " 'base_seq'), coalesce((SELECT CAST(value AS INTEGER) FROM meta"
                               " WHERE key = 'seen_seq'), 0)) ORDER BY seq LIMIT ?1)", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = util_err(LUX_ESQL, "%s: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    for (;;) {
        sqlite3_bind_int(st, 1, (int) batch);
        int step = sqlite3_step(st);
        sqlite3_reset(st);
        if (step != SQLITE_DONE) {
            rc = util_err(LUX_ESQL, "%s: deleting archived rows: %s", path, sqlite3_errmsg(db));
            break;
        }
        int k = sqlite3_changes(db);
        *deleted += (uint64_t) k;
        if (k < (int) batch)
            break;
        if (o->hold)
            o->hold("delete");
    }
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* The last seq with ts < before_ns in the tail's file (0: none). */
static uint64_t
s_seq_before(const char *path, int64_t before_ns)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    uint64_t seq = 0;
    char *uri = sqlite3_mprintf("file:%s?mode=ro", path);
    if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT max(seq) FROM event WHERE ts < ?1", -1, &st, NULL) ==
            SQLITE_OK) {
        sqlite3_bind_int64(st, 1, before_ns);
        if (sqlite3_step(st) == SQLITE_ROW)
            seq = (uint64_t) sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    sqlite3_free(uri);
    return seq;
}

static int
s_shard(const db_cluster_t *c, uint32_t s, const db_chain_t *chain, const db_archive_opts_t *o,
        db_archive_stats_t *stats)
{
    char tpath[PATH_MAX], apath[PATH_MAX];
    uint32_t tail = chain->m[chain->n - 1].index;
    db_cluster_replica_db(c, s, tail, tpath, sizeof tpath);
    /* never beyond what every member holds */
    uint64_t n = UINT64_MAX;
    for (uint32_t k = 0; k < chain->n; k++) {
        char p[PATH_MAX];
        db_cluster_replica_db(c, s, chain->m[k].index, p, sizeof p);
        db_store_opts_t so = {.path = p, .cluster = c->id, .shard = s, .readonly = true};
        db_store_t *st = db_store_open(&so);
        if (!st)
            return util_err_ctx(LUX_EIO, "shard %u", s);
        if (db_store_last_seq(st) < n)
            n = db_store_last_seq(st);
        db_store_close(&st);
    }
    if (o->before_seq && o->before_seq - 1 < n)
        n = o->before_seq - 1;
    if (o->before_ns) {
        uint64_t t = s_seq_before(tpath, o->before_ns);
        if (t < n)
            n = t;
    }
    db_store_opts_t so = {.path = tpath, .cluster = c->id, .shard = s, .readonly = true};
    db_store_t *t = db_store_open(&so);
    db_store_t *a = t ? s_open(tpath, &c->id, s, true, apath, sizeof apath) : NULL;
    int rc = 0;
    if (!t || !a)
        rc = util_err_ctx(LUX_EIO, "shard %u", s);
    else if (db_store_last_seq(a) < n)
        rc = s_archive(t, a, n, &stats->moved);
    uint8_t h[DB_HASH_LEN];
    /* the archive may be ahead of n (an earlier, further compaction) */
    if (!rc && n > 0 && n <= db_store_last_seq(a))
        rc = db_store_hash_at(a, n, h);
    db_store_close(&t);
    db_store_close(&a);
    if (rc || n == 0 || o->stop_after_archive)
        return rc;
    if (o->hold)
        o->hold("archive");
    for (uint32_t i = 0; i < c->replicas && !rc; i++) {
        char p[PATH_MAX];
        db_cluster_replica_db(c, s, i, p, sizeof p);
        if (util_exists(p))
            rc = s_trim(p, n, h, o, &stats->deleted);
    }
    return rc;
}

int
db_archive_compact(const db_cluster_t *c, const db_archive_opts_t *o, db_archive_stats_t *stats)
{
    memset(stats, 0, sizeof *stats);
    int64_t t0 = util_mono_ns();
    db_chain_t *chains = calloc(c->shards, sizeof *chains);
    if (!chains)
        return util_err(LUX_ENOMEM, "out of memory");
    int rc = db_chain_load_state(c, chains);
    for (uint32_t s = 0; s < c->shards && !rc; s++) {
        if (chains[s].n == 0)
            rc = util_err(LUX_ENOTFOUND, "shard %u: no chain in master.state", s);
        else
            rc = s_shard(c, s, &chains[s], o, stats);
    }
    free(chains);
    stats->seconds = (double) (util_mono_ns() - t0) / 1e9;
    return rc;
}

int
db_archive_verify(const db_cluster_t *c, uint32_t shard, const char *replica_path,
                  uint64_t *bad_seq, uint64_t *events)
{
    char apath[PATH_MAX];
    uint8_t base_hash[DB_HASH_LEN], h[DB_HASH_LEN];
    *bad_seq = 0;
    if (events)
        *events = 0;
    db_store_opts_t so = {.path = replica_path, .cluster = c->id, .shard = shard,
                          .readonly = true};
    db_store_t *r = db_store_open(&so);
    if (!r)
        return LUX_EIO;
    uint64_t base = db_store_base(r, base_hash);
    db_store_close(&r);
    db_archive_path_of(replica_path, apath, sizeof apath);
    if (!util_exists(apath)) {
        if (base == 0)
            return 0;
        *bad_seq = base;
        return util_err(LUX_ECORRUPT, "%s: its events start after seq %llu, archived in %s, "
                        "which is missing", replica_path, (unsigned long long) base, apath);
    }
    db_store_t *a = s_open(replica_path, &c->id, shard, false, apath, sizeof apath);
    if (!a)
        return LUX_EIO;
    int rc = db_store_verify(a, bad_seq);
    if (events)
        *events = db_store_last_seq(a);
    if (!rc && base > db_store_last_seq(a)) {
        *bad_seq = base;
        rc = util_err(LUX_ECORRUPT, "%s ends at seq %llu, before the base %llu of %s", apath,
                      (unsigned long long) db_store_last_seq(a), (unsigned long long) base,
                      replica_path);
    }
    if (!rc && base && (db_store_hash_at(a, base, h) || memcmp(h, base_hash, DB_HASH_LEN))) {
        *bad_seq = base;
        rc = util_err(LUX_ECORRUPT, "%s: seq %llu: the hash there is not the base hash of %s: "
                      "the archive and the live file are not one chain", apath,
                      (unsigned long long) base, replica_path);
    }
    db_store_close(&a);
    return rc;
}
