/* 1002-db-store: a shard file: append, read back, persist, truncate, and
   the hash chain's verification catching changed, dropped and reordered
   events. */
#include "tap.h"
#include "lib/tamper.h"
#include "db/db_store.h"
#include "util/util_err.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static util_id_t s_cluster, s_client, s_job;

/* Append n task events to st, hashed onto the chain. */
static void
s_make(void *arg, int i, uint64_t seq, db_event_t *e)
{
    (void) arg;
    e->ts = 1000 + (int64_t) seq;
    e->kind = i % 2 ? DB_K_task_finished : DB_K_task_submitted;
    e->client = s_client;
    e->cseq = seq;
    e->mask |= DB_F_CLIENT;
    util_id_t t;
    util_id_child(&t, &s_job, &s_job, seq / 2);
    DB_SET_ID(e, task, DB_F_TASK, &t);
    DB_SET_ID(e, job, DB_F_JOB, &s_job);
    db_event_set_name(e, "f");
}
static int
s_append(db_store_t *st, int n)
{
    return tamper_store_append(st, n, s_make, NULL);
}

static void
s_sql(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_open(path, &db);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        diag("sql %s: %s", sql, err);
    sqlite3_free(err);
    sqlite3_close(db);
}

static int
s_verify(const char *path, uint64_t *bad)
{
    db_store_opts_t o = {.path = path, .readonly = true};
    db_store_t *st = db_store_open(&o);
    if (!st)
        return -100;
    int rc = db_store_verify(st, bad);
    db_store_close(&st);
    return rc;
}

static int
s_cmp_clients(void *arg, const util_id_t *c, uint64_t cseq, uint64_t seq)
{
    uint64_t *out = arg;
    out[0] = cseq;
    out[1] = seq;
    return 0;
}

int
main(void)
{
    char path[512], copy[600], cmd[1300];
    uint64_t bad;
    util_id_random(&s_cluster);
    util_id_random(&s_client);
    util_id_random(&s_job);
    snprintf(path, sizeof path, "%s/shard.db", tap_tmpdir());

    db_store_opts_t o = {.path = path, .cluster = s_cluster, .shard = 3};
    db_store_t *st = db_store_open(&o);
    ok(st != NULL, "create a store");
    if (!st)
        bail("%s", lux_errmsg());
    is_int((int64_t) db_store_last_seq(st), 0, "empty");
    ok(memcmp(db_store_last_hash(st), db_store_genesis(st), DB_HASH_LEN) == 0,
       "empty store's last hash is the genesis");
    is_int(s_append(st, 1000), 0, "append 1000 events in one transaction");
    is_int(s_append(st, 1), 0, "and one more");
    is_int((int64_t) db_store_last_seq(st), 1001, "last seq");

    /* a gap is refused and rolled back */
    db_store_begin(st);
    util_buf_t b;
    util_buf_init(&b);
    db_event_t e = {.kind = DB_K_note};
    db_event_encode(&e, &b);
    is_int(db_store_put(st, 1005, b.data, b.len), LUX_EGAP, "a seq gap is refused");
    ok(strstr(lux_errmsg(), "1001 -> 1005") != NULL, "naming it: %s", lux_errmsg());
    db_store_rollback(st);
    b.len = 0;
    util_buf_put(&b, "garbage-garbage-garbage-garbage-garbage", 39);
    db_store_begin(st);
    is_int(db_store_put(st, 1002, b.data, b.len), LUX_ECORRUPT, "a garbage record is refused");
    db_store_rollback(st);
    is_int((int64_t) db_store_last_seq(st), 1001, "nothing changed");

    /* range read returns the same canonical records */
    util_buf_t out;
    util_buf_init(&out);
    uint32_t count;
    is_int(db_store_read(st, 10, 100, 1 << 20, &out, &count), 0, "read 10..109");
    is_int(count, 100, "100 records");
    util_rd_t r;
    util_rd_init(&r, out.data, out.len);
    uint8_t prev[DB_HASH_LEN], h[DB_HASH_LEN];
    db_store_hash_at(st, 9, prev);
    int chained = 0;
    for (uint32_t i = 0; i < count; i++) {
        size_t n = util_rd_u32(&r);
        const uint8_t *rec = util_rd_take(&r, n);
        db_event_chain(h, prev, 10 + i, rec, n);
        chained += memcmp(h, rec + n - DB_HASH_LEN, DB_HASH_LEN) == 0;
        memcpy(prev, h, DB_HASH_LEN);
    }
    is_int(chained, 100, "every record read back chains onto the previous");
    out.len = 0;
    db_store_read(st, 990, 100, 1 << 20, &out, &count);
    is_int(count, 12, "a read past the end stops at the end");
    out.len = 0;
    db_store_read(st, 1, 100000, 1000, &out, &count);
    ok(count > 0 && count < 100, "max_bytes bounds a read (%u records)", count);
    uint64_t cl[2] = {0, 0};
    db_store_clients(st, s_cmp_clients, cl);
    ok(cl[0] == 1001 && cl[1] == 1001, "the client table holds the newest event ID");
    db_store_close(&st);
    ok(st == NULL, "close nulls the pointer");

    /* reopen: persisted; wrong identity refused */
    st = db_store_open(&o);
    ok(st && db_store_last_seq(st) == 1001, "reopened with 1001 events");
    db_store_close(&st);
    db_store_opts_t o2 = o;
    o2.shard = 4;
    ok(db_store_open(&o2) == NULL && strstr(lux_errmsg(), "holds shard 3"),
       "opening as another shard is refused: %s", lux_errmsg());
    util_id_random(&o2.cluster);
    o2.shard = 3;
    ok(db_store_open(&o2) == NULL && strstr(lux_errmsg(), "belongs to cluster"),
       "opening as another cluster is refused");
    snprintf(copy, sizeof copy, "%s/notlux.db", tap_tmpdir());
    s_sql(copy, "CREATE TABLE x(y)");
    db_store_opts_t o3 = {.path = copy, .readonly = true};
    ok(db_store_open(&o3) == NULL && strstr(lux_errmsg(), "not a Lux log file"),
       "a SQLite file that is not a log is refused: %s", lux_errmsg());
    snprintf(copy, sizeof copy, "%s/missing.db", tap_tmpdir());
    o3.path = copy;
    ok(db_store_open(&o3) == NULL, "a missing file is an error when read-only");

    /* verification */
    is_int(s_verify(path, &bad), 0, "the chain verifies");
#define TAMPER(label, sql, want_seq)                                                    \
    do {                                                                                \
        snprintf(copy, sizeof copy, "%s/tamper.db", tap_tmpdir());                      \
        snprintf(cmd, sizeof cmd, "cp '%s' '%s' && rm -f '%s-wal' '%s-shm'", path, copy, \
                 copy, copy);                                                           \
        if (system(cmd) != 0)                                                           \
            bail("cp failed");                                                          \
        s_sql(copy, sql);                                                               \
        int rc_ = s_verify(copy, &bad);                                                 \
        ok(rc_ == LUX_ECORRUPT && bad == (want_seq), label ": detected at seq %llu (%s)", \
           (unsigned long long) bad, lux_errmsg());                                     \
    } while (0)
    TAMPER("a changed field", "UPDATE event SET name = 'g' WHERE seq = 500", 500);
    TAMPER("a changed timestamp", "UPDATE event SET ts = ts + 1 WHERE seq = 77", 77);
    TAMPER("an added field", "UPDATE event SET info = 'x' WHERE seq = 3", 3);
    TAMPER("a dropped event", "DELETE FROM event WHERE seq = 600", 600);
    TAMPER("a dropped last event", "DELETE FROM event WHERE seq = 1000; "
                                   "UPDATE event SET seq = 1000 WHERE seq = 1001", 1000);
    TAMPER("two swapped events",
           "UPDATE event SET seq = -1 WHERE seq = 700; UPDATE event SET seq = 700 WHERE seq = 701;"
           " UPDATE event SET seq = 701 WHERE seq = -1",
           700);
    TAMPER("a changed hash", "UPDATE event SET hash = zeroblob(16) WHERE seq = 900", 900);

    /* truncation of an unacknowledged suffix */
    st = db_store_open(&o);
    is_int(db_store_truncate(st, 800), 0, "truncate after 800");
    is_int((int64_t) db_store_last_seq(st), 800, "last seq is 800");
    db_store_clients(st, s_cmp_clients, cl);
    ok(cl[0] == 800 && cl[1] == 800, "the client table was rebuilt (cseq %llu)",
       (unsigned long long) cl[0]);
    is_int(s_append(st, 10), 0, "appends continue after truncation");
    is_int(db_store_verify(st, &bad), 0, "and the chain verifies");

    /* the same past seq 99999: the truncation's SQL was formatted into a
       buffer that cut its COMMIT to "COMM" at six digits (issue 26) */
    is_int(s_append(st, 100100 - (int) db_store_last_seq(st)), 0, "append up to seq 100100");
    int trc = db_store_truncate(st, 100050);
    is_int(trc, 0, "truncate after seq 100050 (%s)", trc ? lux_errmsg() : "ok");
    is_int((int64_t) db_store_last_seq(st), 100050, "last seq is 100050");
    db_store_clients(st, s_cmp_clients, cl);
    ok(cl[0] == 100050 && cl[1] == 100050, "the client table was rebuilt (cseq %llu)",
       (unsigned long long) cl[0]);
    is_int(s_append(st, 10), 0, "appends continue after truncation");
    is_int(db_store_verify(st, &bad), 0, "and the chain verifies");
    db_store_close(&st);
    st = db_store_open(&o);
    is_int((int64_t) (st ? db_store_last_seq(st) : 0), 100060, "reopened: last seq is 100060");
    db_store_close(&st);
    util_buf_free(&b);
    util_buf_free(&out);
    return done_testing();
}
