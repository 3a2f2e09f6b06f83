/*  tamper - forgeries of a stopped cluster's files for the audit tests
    (see tamper.h). */
#include "tamper.h"
#include "tap.h"
#include "db/db_store.h"
#include "util/util_err.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
tamper_sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        bail("%s: failed", cmd);
}

char *
tamper_copy(const char *src, const char *name, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", tap_tmpdir(), name);
    tamper_sh("rm -rf '%s' && cp -a '%s' '%s'", out, src, out);
    return out;
}

char *
tamper_db(const char *dir, uint32_t shard, uint32_t index, char *out, size_t n)
{
    snprintf(out, n, "%s/shard-%u/replica-%u.db", dir, shard, index);
    return out;
}

void
tamper_exec(const char *path, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    sqlite3 *db;
    char *err = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_exec(db, sql, NULL, NULL, &err))
        bail("%s: %s: %s", path, sql, err ? err : sqlite3_errmsg(db));
    sqlite3_close(db);
}

uint64_t
tamper_last(const char *path)
{
    db_store_opts_t o = {.path = path, .readonly = true};
    db_store_t *st = db_store_open(&o);
    uint64_t last = st ? db_store_last_seq(st) : 0;
    db_store_close(&st);
    return last;
}

bool
tamper_edit_ts(void *arg, uint64_t seq, const uint8_t *rec, size_t n, util_buf_t *out)
{
    if (seq != *(const uint64_t *) arg)
        return false;
    util_buf_put(out, rec, n);
    util_le64(out->data + DB_REC_TS_OFF, util_rd64(rec + DB_REC_TS_OFF) + 1);
    return true;
}

void
tamper_forge(const char *path, const util_id_t *cluster, uint32_t shard, tamper_edit_fn *edit,
             void *arg)
{
    db_store_opts_t o = {.path = path, .cluster = *cluster, .shard = shard, .readonly = true};
    db_store_t *st = db_store_open(&o);
    util_buf_t all, one;
    uint32_t got = 0;
    util_buf_init(&all);
    util_buf_init(&one);
    if (!st || db_store_read(st, 1, UINT32_MAX, SIZE_MAX, &all, &got) || all.oom)
        bail("read %s: %s", path, lux_errmsg());
    db_store_close(&st);
    char side[PATH_MAX + 16];
    snprintf(side, sizeof side, "%s.forged", path);
    unlink(side);
    o.path = side;
    o.readonly = false;
    if (!(st = db_store_open(&o)) || db_store_begin(st))
        bail("create %s: %s", side, lux_errmsg());
    uint8_t prev[DB_HASH_LEN];
    memcpy(prev, db_store_genesis(st), DB_HASH_LEN);
    size_t off = 0;
    for (uint64_t s = 1; s <= got; s++) {
        uint32_t n = util_rd32(all.data + off);
        uint8_t *rec = all.data + off + 4;
        one.len = 0;
        if (edit(arg, s, rec, n, &one)) {
            if (one.oom || one.len < DB_REC_MIN)
                bail("forge %s: the edit of seq %llu made no record", path,
                     (unsigned long long) s);
            rec = one.data;
            n = (uint32_t) one.len;
        }
        db_event_chain(rec + n - DB_HASH_LEN, prev, s, rec, n);
        memcpy(prev, rec + n - DB_HASH_LEN, DB_HASH_LEN);
        if (db_store_put(st, s, rec, n))
            bail("put %s: %s", side, lux_errmsg());
        off += 4 + util_rd32(all.data + off);
    }
    if (db_store_commit(st))
        bail("commit %s: %s", side, lux_errmsg());
    uint64_t bad;
    if (db_store_verify(st, &bad))
        bail("the forged file does not verify at seq %llu", (unsigned long long) bad);
    db_store_close(&st);
    util_buf_free(&all);
    util_buf_free(&one);
    tamper_sh("rm -f '%s-wal' '%s-shm' && mv '%s' '%s'", path, path, side, path);
}

/* The newest checkpoint event of the replica file: its seq and idx;
   false when it holds none. */
bool
tamper_newest_ckpt(const char *path, uint64_t *at, uint64_t *signs)
{
    sqlite3 *db;
    sqlite3_stmt *st = NULL;
    bool found = false;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 5000);
        if (sqlite3_prepare_v2(db, "SELECT seq, idx FROM event WHERE kind = 20 ORDER BY seq"
                               " DESC LIMIT 1", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            *at = (uint64_t) sqlite3_column_int64(st, 0);
            *signs = (uint64_t) sqlite3_column_int64(st, 1);
            found = true;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return found;
}

int
tamper_store_append(db_store_t *st, int n, tamper_make_fn *make, void *arg)
{
    util_buf_t b;
    util_buf_init(&b);
    int rc = db_store_begin(st);
    for (int i = 0; rc == 0 && i < n; i++) {
        uint64_t seq = db_store_last_seq(st) + 1;
        db_event_t e;
        memset(&e, 0, sizeof e);
        make(arg, i, seq, &e);
        b.len = 0;
        db_event_encode(&e, &b);
        if (b.oom) {
            rc = LUX_ENOMEM;
            break;
        }
        db_event_chain(b.data + b.len - DB_HASH_LEN, db_store_last_hash(st), seq, b.data, b.len);
        rc = db_store_put(st, seq, b.data, b.len);
    }
    if (rc == 0)
        rc = db_store_commit(st);
    else
        db_store_rollback(st);
    util_buf_free(&b);
    return rc;
}

void
tamper_client_make(void *arg, int i, uint64_t seq, db_event_t *e)
{
    tamper_client_t *c = arg;
    (void) i;
    e->ts = (int64_t) seq;
    e->kind = DB_K_note;
    e->client = c->id;
    e->cseq = ++c->cseq;
    e->mask |= DB_F_CLIENT;
}

typedef struct {
    const util_id_t *client;
    uint64_t cseq, seq;
} s_seen_t;

static int
s_seen_one(void *arg, const util_id_t *c, uint64_t cseq, uint64_t seq)
{
    s_seen_t *s = arg;
    if (util_id_eq(c, s->client)) {
        s->cseq = cseq;
        s->seq = seq;
    }
    return 0;
}

void
tamper_client_seen(db_store_t *st, const util_id_t *client, uint64_t *cseq, uint64_t *seq)
{
    s_seen_t s = {.client = client};
    db_store_clients(st, s_seen_one, &s);
    *cseq = s.cseq;
    *seq = s.seq;
}
