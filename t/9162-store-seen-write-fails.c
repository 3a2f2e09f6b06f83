/* 9162-store-seen-write-fails: a commit whose write of the client table
   (client_seen, meta seen_seq) fails leaves the table as the file's events
   say. SQLite rolls a whole transaction back by itself when a statement in
   it fails with SQLITE_IOERR or SQLITE_FULL (sqlite3_get_autocommit says
   so): before, db_store_commit ignored a failed client_seen upsert, and the
   seen_seq write after it then ran alone in autocommit mode and was
   committed, past the rows of client_seen it had not written. The store,
   once its caller rolled back, read the table again from the file: seen_seq
   said it was exact up to events that were never committed, so the events
   committed since client_seen was last written were not read back. A
   replica then expected, from the client, an event the client had long had
   acknowledged, and refused every resend with LUX_EGAP, for ever (a restart
   changes nothing: the file says the same).

   Each round: a store, three commits of one client (the first writes
   client_seen, the second does not: not due), another connection's write
   (so that the store's cache is empty and the next commit reads its pages
   from the file), 200 ms (the write of client_seen is due), a commit whose
   k-th read, or k-th write, fails (t/lib/faultvfs, that one call only),
   k = 1, 2, ... until the commit goes through untouched. After each: the
   store's table (what the replica decides resends by), and once closed and
   reopened the file's, give the client's newest event as the last committed
   one, and meta seen_seq is not past the file's last event. (This test is a
   9xxx number because the session that wrote it was given those.) */
#include "tap.h"
#include "lib/faultvfs.h"
#include "lib/tamper.h"
#include "db/db_store.h"
#include "util/util_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_ROUNDS 24 /* per kind of fault: more than a commit makes calls */

static util_id_t s_cluster;
static tamper_client_t s_cl; /* the log client writing the events */

static uint64_t s_got_cseq, s_got_seq;

/* Run sql on the file through a connection of its own; meta seen_seq
   when asked (-1: none). */
static long long
s_other(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    long long v = -1;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        bail("%s: %s", path, sqlite3_errmsg(db));
    sqlite3_busy_timeout(db, 5000);
    if (sql && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        bail("%s: %s", sql, sqlite3_errmsg(db));
    if (!sql) {
        if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'seen_seq'", -1, &q, NULL) !=
            SQLITE_OK)
            bail("meta: %s", sqlite3_errmsg(db));
        if (sqlite3_step(q) == SQLITE_ROW)
            v = atoll((const char *) sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
    }
    sqlite3_close(db);
    return v;
}

typedef struct {
    char path[512];
    db_store_t *st;
    uint64_t cseq; /* the client's next cseq - 1 in this store */
} s_store_t;

static s_store_t s_st[S_ROUNDS];

/* the rounds' stores, each with 15 events of the client committed */
static void
s_setup(const char *kind)
{
    for (int i = 0; i < S_ROUNDS; i++) {
        s_store_t *r = &s_st[i];
        snprintf(r->path, sizeof r->path, "%s/%s%d.db", tap_tmpdir(), kind, i);
        db_store_opts_t o = {.path = r->path, .cluster = s_cluster, .shard = 0};
        if (!(r->st = db_store_open(&o)))
            bail("%s", lux_errmsg());
        s_cl.cseq = 0;
        if (tamper_store_append(r->st, 10, tamper_client_make, &s_cl))
            bail("append: %s", lux_errmsg());
        r->cseq = s_cl.cseq;
    }
    usleep(250 * 1000); /* the next commits write client_seen */
    for (int i = 0; i < S_ROUNDS; i++) {
        s_store_t *r = &s_st[i];
        s_cl.cseq = r->cseq;
        if (tamper_store_append(r->st, 3, tamper_client_make, &s_cl) || /* writes client_seen */
            tamper_store_append(r->st, 2, tamper_client_make, &s_cl))   /* does not: not due */
            bail("append: %s", lux_errmsg());
        r->cseq = s_cl.cseq;
        /* another connection's commit: the store's next transaction reads
           its pages (client_seen's and meta's) from the file */
        s_other(r->path, "INSERT OR REPLACE INTO meta VALUES ('t9162', 'x')");
    }
    usleep(250 * 1000); /* the failing commits' write of client_seen is due */
}

/* k-th read (reads) or write of the commit fails; false once k is past
   every call of the commit (it went through, nothing fired). */
static bool
s_round(const char *kind, bool reads, long k)
{
    s_store_t *r = &s_st[k - 1];
    db_store_t *st = r->st;
    uint64_t last_seq = db_store_last_seq(st), last_cseq = r->cseq;

    /* as db_replica_pipe.c: begin, puts, commit; rollback on an error */
    s_cl.cseq = r->cseq;
    int rc = db_store_begin(st);
    util_buf_t b;
    util_buf_init(&b);
    for (int i = 0; !rc && i < 5; i++) {
        uint64_t seq = db_store_last_seq(st) + 1;
        db_event_t e;
        memset(&e, 0, sizeof e);
        tamper_client_make(&s_cl, i, seq, &e);
        b.len = 0;
        db_event_encode(&e, &b);
        db_event_chain(b.data + b.len - DB_HASH_LEN, db_store_last_hash(st), seq, b.data, b.len);
        rc = db_store_put(st, seq, b.data, b.len);
    }
    util_buf_free(&b);
    if (rc)
        bail("put: %s", lux_errmsg());
    faultvfs_arm_once(k, reads);
    rc = db_store_commit(st);
    bool fired = faultvfs_disarm();
    if (!fired) {
        ok(rc == 0, "%s: commit with no fault: %s", kind, rc ? lux_errmsg() : "committed");
        db_store_close(&st);
        r->st = NULL;
        return false;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc ? lux_errmsg() : "");
    if (rc)
        db_store_rollback(st);
    else
        last_seq = db_store_last_seq(st), last_cseq = s_cl.cseq; /* a fault SQLite got over */
    diag("%s %ld: commit %s", kind, k, rc ? msg : "went through");
    if (reads && k == 1)
        ok(rc != 0 && strstr(msg, "client_seen"),
           "%s %ld: the failed client_seen write fails the commit, saying so: %s", kind, k,
           rc ? msg : "it did not fail");
    tamper_client_seen(st, &s_cl.id, &s_got_cseq, &s_got_seq);
    ok(s_got_cseq == last_cseq && s_got_seq == last_seq,
       "%s %ld: after the commit, the store's newest event of the client is the last committed "
       "one: (cseq %llu, seq %llu), want (%llu, %llu)",
       kind, k, (unsigned long long) s_got_cseq, (unsigned long long) s_got_seq,
       (unsigned long long) last_cseq, (unsigned long long) last_seq);
    db_store_close(&st); /* writes client_seen */
    r->st = NULL;
    long long seen = s_other(r->path, NULL);
    ok(seen >= 0 && (uint64_t) seen <= last_seq,
       "%s %ld: meta seen_seq %lld is not past the file's last event %llu", kind, k, seen,
       (unsigned long long) last_seq);
    db_store_opts_t o = {.path = r->path, .cluster = s_cluster, .shard = 0};
    if (!(st = db_store_open(&o)))
        bail("reopen: %s", lux_errmsg());
    tamper_client_seen(st, &s_cl.id, &s_got_cseq, &s_got_seq);
    ok(s_got_cseq == last_cseq && s_got_seq == last_seq,
       "%s %ld: reopened, the file's newest event of the client is the last committed one: "
       "(cseq %llu, seq %llu), want (%llu, %llu)",
       kind, k, (unsigned long long) s_got_cseq, (unsigned long long) s_got_seq,
       (unsigned long long) last_cseq, (unsigned long long) last_seq);
    db_store_close(&st);
    return true;
}

static void
s_kind(const char *kind, bool reads)
{
    s_setup(kind);
    long k = 1;
    while (k <= S_ROUNDS && s_round(kind, reads, k))
        k++;
    ok(k <= S_ROUNDS, "%s: a fault at each of the commit's %ld calls tried", kind, k - 1);
    for (int i = 0; i < S_ROUNDS; i++)
        db_store_close(&s_st[i].st);
}

int
main(void)
{
    if (faultvfs_install() != 0)
        bail("faultvfs_install failed");
    util_id_random(&s_cluster);
    util_id_random(&s_cl.id);
    s_kind("read", true);
    s_kind("write", false);
    return done_testing();
}
