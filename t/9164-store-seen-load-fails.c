/* 9164-store-seen-load-fails: a store whose client table (client_seen)
   cannot be read whole does not open for writing: the error names the
   file and the table, and nothing committed is lost.

   The replica decides by that table what a resent event is
   (db_replica_append.c, IDEMPOTENCE). Before a384dc3 a read of its rows
   that failed part way ended the load as if the table ended there: the
   store opened with a table that missed clients, and the replica took
   their resends for new events (a second copy in the log) or refused them
   with LUX_EGAP for ever. db_seen.c now fails the load, and the open.

   A store of 1,000 clients (two events each, so client_seen spans several
   pages), closed; the last leaf page of client_seen overwritten with
   garbage, so that its first rows read and then a step fails
   (SQLITE_CORRUPT). Then:
   - db_store_open for writing fails, naming the file, client_seen and
     the cause, and changed no event, seen_seq or row of client_seen;
   - read-only (no client table needed), the store has every event and its
     hash chain verifies;
   - the page put back, the store opens, its table gives every client's
     newest event, and it takes appends. (This test is a 9xxx number
     because the session that wrote it was given those.) */
#include "tap.h"
#include "lib/tamper.h"
#include "db/db_store.h"
#include "util/util_err.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_CLIENTS 1000

static tamper_client_t s_cl[S_CLIENTS];

static void
s_make(void *arg, int i, uint64_t seq, db_event_t *e)
{
    (void) arg;
    tamper_client_make(&s_cl[i % S_CLIENTS], i, seq, e);
}

/* One integer from sql on the file, through a connection of its own. */
static long long
s_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    long long v = -1;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        bail("%s: %s", path, sqlite3_errmsg(db));
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        bail("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

/* Rows of client_seen read before a step fails; the failing step's code
   in *rc (SQLITE_DONE: none failed). */
static int
s_rows(const char *path, int *rc)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    int n = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT client, cseq, seq FROM client_seen", -1, &q, NULL) !=
            SQLITE_OK)
        bail("%s: %s", path, sqlite3_errmsg(db));
    while ((*rc = sqlite3_step(q)) == SQLITE_ROW)
        n++;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

static void
s_page(const char *path, long pgno, long psz, unsigned char *buf, bool write)
{
    FILE *fp = fopen(path, write ? "r+b" : "rb");
    if (!fp || fseek(fp, (pgno - 1) * psz, SEEK_SET) ||
        (write ? fwrite(buf, 1, (size_t) psz, fp) : fread(buf, 1, (size_t) psz, fp)) !=
            (size_t) psz ||
        fclose(fp))
        bail("%s: page %ld: cannot %s it", path, pgno, write ? "write" : "read");
}

static long
s_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long) sb.st_size : 0;
}

int
main(void)
{
    char path[600], wal[620];
    util_id_t cluster;
    util_id_random(&cluster);
    snprintf(path, sizeof path, "%s/r.db", tap_tmpdir());
    snprintf(wal, sizeof wal, "%s-wal", path);
    for (int i = 0; i < S_CLIENTS; i++)
        util_id_random(&s_cl[i].id);

    db_store_opts_t o = {.path = path, .cluster = cluster, .shard = 0};
    db_store_t *st = db_store_open(&o);
    if (!st)
        bail("open: %s", lux_errmsg());
    if (tamper_store_append(st, 2 * S_CLIENTS, s_make, NULL) ||
        tamper_store_append(st, S_CLIENTS, s_make, NULL)) /* each client's third */
        bail("append: %s", lux_errmsg());
    uint64_t last = db_store_last_seq(st);
    db_store_close(&st); /* writes client_seen: behind */
    if (s_int(path, "PRAGMA wal_checkpoint(TRUNCATE)") != 0 || s_size(wal) != 0)
        bail("the WAL is not empty after a checkpoint");

    long psz = s_int(path, "PRAGMA page_size");
    long root = s_int(path, "SELECT rootpage FROM sqlite_master WHERE name = 'client_seen'");
    long rows = s_int(path, "SELECT count(*) FROM client_seen");
    unsigned char *page = malloc((size_t) psz), *saved = malloc((size_t) psz);
    if (!page || !saved || psz <= 0 || root <= 1)
        bail("page size %ld, client_seen at page %ld", psz, root);
    s_page(path, root, psz, page, false);
    if (page[0] != 0x02) /* an interior index page: client_seen spans leaves */
        bail("client_seen's root page %ld is of type %d, not interior", root, page[0]);
    long leaf = (long) page[8] << 24 | (long) page[9] << 16 | (long) page[10] << 8 | page[11];
    s_page(path, leaf, psz, saved, false);
    memset(page, 0xa5, (size_t) psz);
    s_page(path, leaf, psz, page, true);
    int step;
    int read = s_rows(path, &step);
    ok(rows == S_CLIENTS && read > 0 && read < S_CLIENTS && step == SQLITE_CORRUPT,
       "client_seen (%ld rows) with its last leaf (page %ld of %ld bytes) overwritten: %d rows "
       "read, then SQLite's code %d", rows, leaf, psz, read, step);

    long seen_seq = s_int(path, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'seen_seq'");
    st = db_store_open(&o);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", st ? "it opened" : lux_errmsg());
    ok(!st, "the store does not open for writing: %s", msg);
    ok(!st && strstr(msg, path) && strstr(msg, "client_seen") && strstr(msg, "malformed"),
       "the error names the file, client_seen and the cause");
    db_store_close(&st);
    /* (a writable open rewrites the schema's views and kinds: not compared) */
    int step2, read2 = s_rows(path, &step2);
    long events = s_int(path, "SELECT count(*) FROM event");
    long seen2 = s_int(path, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'seen_seq'");
    ok(read2 == read && step2 == step && events == (long) last && seen2 == seen_seq &&
       seen_seq == (long) last, "the failed open changed no event, seen_seq or row of client_seen "
       "(%ld events, seen_seq %ld, %d rows then code %d)", events, seen2, read2, step2);

    db_store_opts_t ro = {.path = path, .cluster = cluster, .shard = 0, .readonly = true};
    st = db_store_open(&ro);
    uint64_t bad = 0;
    int rc = st ? db_store_verify(st, &bad) : -1;
    ok(st && rc == 0 && db_store_last_seq(st) == last,
       "read-only, the store has its %llu events and its chain verifies: %s",
       (unsigned long long) (st ? db_store_last_seq(st) : 0), rc ? lux_errmsg() : "ok");
    db_store_close(&st);

    s_page(path, leaf, psz, saved, true);
    st = db_store_open(&o);
    ok(st != NULL, "the page put back, the store opens: %s", st ? "ok" : lux_errmsg());
    if (!st)
        return done_testing();
    int exact = 0;
    for (int i = 0; i < S_CLIENTS; i++) {
        uint64_t cseq, seq;
        tamper_client_seen(st, &s_cl[i].id, &cseq, &seq);
        exact += cseq == 3 && seq == 2 * S_CLIENTS + (uint64_t) i + 1;
    }
    is_int(exact, S_CLIENTS, "its table gives each client's newest event (cseq 3)");
    rc = tamper_store_append(st, S_CLIENTS, s_make, NULL);
    ok(rc == 0 && db_store_last_seq(st) == last + S_CLIENTS, "and it takes appends: %s",
       rc ? lux_errmsg() : "ok");
    db_store_close(&st);
    free(page);
    free(saved);
    return done_testing();
}
