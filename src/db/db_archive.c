/*  db_archive - archives of old events (see db_archive.h).

    The archive is a db_store file (the schema, indexes and views of a
    replica's), opened as a writer only by db_archive_compact. At rest it
    is compressed: DIR/shard-S/archive.db.lz4, one lz4 frame (the standard
    frame format, content size and checksum included, so `lz4 -d` gives
    the SQLite file back) of the whole file. lz4 of the file made archives
    3.15 times smaller than the plain file in the measurement of
    doc/benchmarks.md; a page-compressing SQLite layer would have kept
    random access but every reader would have to load it, and archives are
    read rarely (old lineage, a replay, a scan): a reader decompresses the
    frame into memory and opens that image read-only (db_store's image
    option; db_query attaches it the same way).

    A compaction expands the frame into archive.db (through a temporary
    file and a rename), appends to it, and seals it again (the frame
    written beside, renamed over the old one, then archive.db removed),
    all before any replica's base moves. A plain archive.db, when there is
    one, is never older than the frame (it is the frame's bytes plus what
    was appended), so readers take it first: an archive written before
    archives were compressed is read as it is and sealed by the next
    compaction; a compaction killed anywhere leaves one of the two whole.

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

#include <errno.h>
#include <limits.h>
#include <lz4frame.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *
db_archive_path_of(const char *replica_path, char *out, size_t n)
{
    const char *slash = strrchr(replica_path, '/');
    int dirlen = slash ? (int) (slash - replica_path) : 1;
    snprintf(out, n, "%.*s/archive.db", dirlen, slash ? replica_path : ".");
    return out;
}

static char *
s_lz4_path(const char *apath, char *out, size_t n)
{
    snprintf(out, n, "%s.lz4", apath);
    return out;
}

bool
db_archive_present(const char *replica_path)
{
    char a[PATH_MAX], z[PATH_MAX + 8];
    db_archive_path_of(replica_path, a, sizeof a);
    return util_exists(a) || util_exists(s_lz4_path(a, z, sizeof z));
}

int
db_archive_image(const char *zpath, void **image, size_t *len)
{
    size_t n = 0;
    char *z = util_read_file(zpath, &n);
    *image = NULL;
    *len = 0;
    if (!z)
        return util_err_ctx(LUX_EIO, "the archive %s", zpath);
    LZ4F_dctx *d = NULL;
    LZ4F_frameInfo_t fi;
    size_t in = n, rc = LZ4F_createDecompressionContext(&d, LZ4F_VERSION);
    unsigned char *img = NULL;
    int err = 0;
    if (!LZ4F_isError(rc))
        rc = LZ4F_getFrameInfo(d, &fi, z, &in);
    /* the size it says (ours do), else a guess that grows (`lz4` without
       --content-size) */
    uint64_t cap = LZ4F_isError(rc) ? 0 : fi.contentSize ? fi.contentSize : 4 * (uint64_t) n;
    if (LZ4F_isError(rc) || cap > (1ull << 40))
        err = util_err(LUX_ECORRUPT, "%s: not an lz4 frame: %s", zpath,
                       LZ4F_isError(rc) ? LZ4F_getErrorName(rc) : "too large");
    else if (!(img = sqlite3_malloc64(cap + 1)))
        err = util_err(LUX_ENOMEM, "%s: out of memory for %llu bytes", zpath,
                       (unsigned long long) cap);
    size_t at = in, out = 0;
    while (!err && rc != 0) {
        if (out == cap && !fi.contentSize) {
            unsigned char *p = sqlite3_realloc64(img, 2 * cap + 1);
            if (!p) {
                err = util_err(LUX_ENOMEM, "%s: out of memory", zpath);
                break;
            }
            img = p;
            cap *= 2;
        }
        size_t src = n - at, dst = cap - out;
        rc = LZ4F_decompress(d, img + out, &dst, z + at, &src, NULL);
        if (LZ4F_isError(rc))
            err = util_err(LUX_ECORRUPT, "%s: lz4: %s", zpath, LZ4F_getErrorName(rc));
        else if (rc != 0 && src == 0 && dst == 0)
            err = util_err(LUX_ECORRUPT, "%s: the lz4 frame is cut short", zpath);
        at += src;
        out += dst;
    } /* rc 0: the frame's end, its checksum verified */
    if (!err && fi.contentSize && out != fi.contentSize)
        err = util_err(LUX_ECORRUPT, "%s: the lz4 frame gives %zu bytes of %llu", zpath, out,
                       (unsigned long long) fi.contentSize);
    LZ4F_freeDecompressionContext(d);
    free(z);
    if (err) {
        sqlite3_free(img);
        return err;
    }
    if (out > 19)
        img[18] = img[19] = 1; /* read as a rollback-journal file, not WAL */
    *image = img;
    *len = out;
    return 0;
}

/* The archive beside replica_path: archive.db when there is one (the
   writer's, or a reader's of an uncompressed one), else its lz4 frame,
   read into memory. NULL with path set to archive.db's when neither is. */
static db_store_t *
s_open(const char *replica_path, const util_id_t *cluster, uint32_t shard, bool write,
       char *path, size_t n)
{
    char z[PATH_MAX + 8];
    db_archive_path_of(replica_path, path, n);
    db_store_opts_t so = {.path = path, .cluster = *cluster, .shard = shard, .readonly = !write};
    if (write || util_exists(path)) {
        db_store_t *a = db_store_open(&so);
        if (a || write || util_exists(path))
            return a;
        /* sealed between the look and the open: the frame has it */
    }
    if (!util_exists(s_lz4_path(path, z, sizeof z))) {
        util_err(LUX_ENOTFOUND, "%s: no such archive (the replica file's events start after "
                 "an archived seq)", path);
        return NULL;
    }
    if (db_archive_image(z, &so.image, &so.image_len))
        return NULL;
    so.path = z;
    return db_store_open(&so);
}

/* Whether replica_path's archive is missing (LUX_ENOTFOUND) or failed. */
static int
s_missing(const char *replica_path)
{
    return db_archive_present(replica_path) ? LUX_EIO : LUX_ENOTFOUND;
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
        return s_missing(replica_path);
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
        return s_missing(replica_path);
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
        return s_missing(replica_path);
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
        return s_missing(replica_path);
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

/* archive.db from its frame, when only the frame is there: expanded into
   a temporary file renamed over (a kill leaves the frame, and a stale
   temporary the next expansion replaces). */
static int
s_expand(const char *apath)
{
    char z[PATH_MAX + 8];
    void *img;
    size_t len;
    if (util_exists(apath) || !util_exists(s_lz4_path(apath, z, sizeof z)))
        return 0;
    int rc = db_archive_image(z, &img, &len);
    if (rc)
        return rc;
    if (len > 19) /* the writer's file, in WAL mode as it was sealed */
        ((unsigned char *) img)[18] = ((unsigned char *) img)[19] = 2;
    rc = util_write_file(apath, img, len, 0644);
    sqlite3_free(img);
    return rc ? util_err_ctx(rc, "expanding %s", z) : 0;
}

/* archive.db into its frame (content size and checksum in it), written
   beside and renamed over the old frame; then archive.db goes. The writer
   has closed it: SQLite moved its WAL into the file at that close. */
static int
s_seal(const char *apath)
{
    char z[PATH_MAX + 8], side[PATH_MAX + 8];
    size_t n = 0;
    s_lz4_path(apath, z, sizeof z);
    snprintf(side, sizeof side, "%s-wal", apath);
    if (util_exists(side)) { /* not moved in: another connection holds it */
        sqlite3 *db = NULL;
        int ok = sqlite3_open_v2(apath, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
                 sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) ==
                     SQLITE_OK;
        sqlite3_close(db);
        if (!ok)
            return util_err(LUX_EIO, "%s: cannot move its WAL into it before sealing", apath);
    }
    char *raw = util_read_file(apath, &n);
    if (!raw)
        return util_err_ctx(LUX_EIO, "sealing the archive");
    LZ4F_preferences_t pref;
    memset(&pref, 0, sizeof pref);
    pref.frameInfo.contentSize = n;
    pref.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    pref.frameInfo.blockSizeID = LZ4F_max4MB;
    size_t cap = LZ4F_compressFrameBound(n, &pref);
    void *out = malloc(cap);
    size_t zn = out ? LZ4F_compressFrame(out, cap, raw, n, &pref) : 0;
    int rc = 0;
    if (!out)
        rc = util_err(LUX_ENOMEM, "%s: out of memory sealing it", apath);
    else if (LZ4F_isError(zn))
        rc = util_err(LUX_EIO, "%s: lz4: %s", apath, LZ4F_getErrorName(zn));
    else
        rc = util_write_file(z, out, zn, 0644);
    free(out);
    free(raw);
    /* a reader that has it open keeps reading it (and its -shm, which
       the last connection to close removes) */
    if (!rc && unlink(apath) && errno != ENOENT)
        rc = util_err(LUX_EIO, "%s: sealed, but cannot remove it: %s", apath, strerror(errno));
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
    int rc = s_expand(db_archive_path_of(tpath, apath, sizeof apath));
    db_store_t *t = rc ? NULL : db_store_open(&so);
    db_store_t *a = t ? s_open(tpath, &c->id, s, true, apath, sizeof apath) : NULL;
    if (!t || !a)
        rc = util_err_ctx(rc ? rc : LUX_EIO, "shard %u", s);
    else if (db_store_last_seq(a) < n)
        rc = s_archive(t, a, n, &stats->moved);
    uint8_t h[DB_HASH_LEN];
    /* the archive may be ahead of n (an earlier, further compaction) */
    if (!rc && n > 0 && n <= db_store_last_seq(a))
        rc = db_store_hash_at(a, n, h);
    db_store_close(&t);
    db_store_close(&a);
    if (!rc && util_exists(apath) && (rc = s_seal(apath)))
        rc = util_err_ctx(rc, "shard %u", s);
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
    if (!db_archive_present(replica_path)) {
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
