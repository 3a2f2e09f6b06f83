/* 1004-db-vfs: the writer's VFS (src/db/db_vfs.c) gathers WAL writes and
   sends them at the commit frame. A reader on the default VFS must see
   every commit whole, at once, and nothing of a transaction rolled back:
   small and large transactions, pages spilled by a tiny cache and
   rewritten in the same transaction, WAL restarts after checkpoints, and
   a reopen at the end. */
#include "tap.h"
#include "db/db_vfs.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlite3 *s_w, *s_r;
static int64_t s_count, s_sum_n, s_sum_len;

static int
s_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        diag("%s: %s", sql, err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    return rc;
}

/* Does db see exactly what was committed? */
static bool
s_sees(sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT count(*), total(n), total(length(v)) FROM t", -1, &st,
                           NULL) != SQLITE_OK)
        return false;
    bool same = false;
    if (sqlite3_step(st) == SQLITE_ROW)
        same = sqlite3_column_int64(st, 0) == s_count &&
               (int64_t) sqlite3_column_double(st, 1) == s_sum_n &&
               (int64_t) sqlite3_column_double(st, 2) == s_sum_len;
    if (!same)
        diag("sees %lld rows, n %.0f, bytes %.0f; committed %lld, %lld, %lld",
             (long long) sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1),
             sqlite3_column_double(st, 2), (long long) s_count, (long long) s_sum_n,
             (long long) s_sum_len);
    sqlite3_finalize(st);
    return same;
}

/* One transaction of rows inserts, and an update of about a 13th of
   the table when update: committed, or rolled back. */
static int
s_txn(int i, int rows, bool update, bool commit)
{
    static unsigned char blob[4096];
    sqlite3_stmt *ins;
    int64_t count = 0, sum_n = 0, sum_len = 0;
    if (s_exec(s_w, "BEGIN"))
        return -1;
    if (sqlite3_prepare_v2(s_w, "INSERT INTO t (v, n) VALUES (?1, ?2)", -1, &ins, NULL))
        return -1;
    for (int r = 0; r < rows; r++) {
        int len = 200 + (i * 131 + r * 17) % 2900;
        memset(blob, (i + r) & 0xff, (size_t) len);
        sqlite3_bind_blob(ins, 1, blob, len, SQLITE_STATIC);
        sqlite3_bind_int(ins, 2, r);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            sqlite3_finalize(ins);
            return -1;
        }
        sqlite3_reset(ins);
        count++;
        sum_n += r;
        sum_len += len;
    }
    sqlite3_finalize(ins);
    if (update) {
        char sql[128];
        sqlite3_stmt *q;
        snprintf(sql, sizeof sql, "SELECT count(*) FROM t WHERE k %% 13 = %d", i % 13);
        if (sqlite3_prepare_v2(s_w, sql, -1, &q, NULL) || sqlite3_step(q) != SQLITE_ROW)
            return -1;
        sum_n += sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        snprintf(sql, sizeof sql, "UPDATE t SET n = n + 1 WHERE k %% 13 = %d", i % 13);
        if (s_exec(s_w, sql))
            return -1;
    }
    if (s_exec(s_w, commit ? "COMMIT" : "ROLLBACK"))
        return -1;
    if (commit) {
        s_count += count;
        s_sum_n += sum_n;
        s_sum_len += sum_len;
    }
    return 0;
}

int
main(void)
{
    char path[512];
    plan(10);
    is_int(db_vfs_register(), SQLITE_OK, "the VFS registers");
    is_int(db_vfs_register(), SQLITE_OK, "and again, harmlessly");
    snprintf(path, sizeof path, "%s/vfs.db", tap_tmpdir());
    if (sqlite3_open_v2(path, &s_w, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, DB_VFS_NAME) ||
        sqlite3_open_v2(path, &s_r, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        bail("cannot open %s", path);
    /* a tiny cache spills pages into the WAL mid-transaction, and SQLite
       rewrites those frames when it changes the pages again */
    ok(s_exec(s_w, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                   " PRAGMA cache_size = 10; CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB,"
                   " n INTEGER)") == 0,
       "a WAL database through the VFS");

    int bad = 0, failed = 0, rolled = 0;
    for (int i = 0; i < 600 && !failed; i++) {
        int rows = i % 50 == 0 ? 300 : 1 + i % 7;
        if (s_txn(i, rows, i % 10 == 3, true))
            failed++;
        else if (!s_sees(s_r))
            bad++;
        if (i % 97 == 0 && s_txn(i, 200, true, false) == 0 && !s_sees(s_r))
            rolled++;
        if (i % 100 == 99 && s_exec(s_w, "PRAGMA wal_checkpoint(RESTART)"))
            failed++;
    }
    is_int(failed, 0, "600 transactions of 1 to 300 rows commit, with WAL restarts");
    is_int(bad, 0, "after each, a reader on the default VFS sees exactly what was committed");
    is_int(rolled, 0, "and nothing of large transactions rolled back");

    sqlite3_stmt *st;
    const char *res = "?";
    char got[64] = "";
    if (sqlite3_prepare_v2(s_r, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && (res = (const char *) sqlite3_column_text(st, 0)))
        snprintf(got, sizeof got, "%s", res);
    sqlite3_finalize(st);
    is_str(got, "ok", "the database is sound");
    ok(s_count > 5000 && s_sees(s_w), "the writer sees the same (%lld rows)",
       (long long) s_count);

    is_int(sqlite3_close(s_w), SQLITE_OK, "the writer closes");
    sqlite3_close(s_r);
    s_r = NULL;
    if (sqlite3_open_v2(path, &s_r, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        bail("cannot open %s again", path);
    ok(s_sees(s_r), "reopened, it holds every commit");
    sqlite3_close(s_r);
    return done_testing();
}
