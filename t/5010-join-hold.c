/* 5010-join-hold: events acknowledged by a lone tail while the master
   admits a joiner are not lost when that tail dies (issue 26).

   A 2-replica chain loses a member (kill -9); the survivor is the lone
   head and tail, and the killed replica, restarted by the supervisor,
   catches up and asks to join. The master is stopped (LUX_TEST_JOIN_GATE)
   at the moment it is about to admit the joiner; meanwhile a client
   appends, the lone tail commits, then the tail is killed -9 and the
   master goes on. The joiner becomes the only member. Before the fix the
   master admitted the joiner at the tail's last heartbeat while the tail
   went on acknowledging: the events acknowledged in between were on no
   surviving replica, and the client got EGAP for ever after. Now:
     - nothing appended during the admission is acknowledged before the
       joiner is in the chain (the tail holds at the join seq);
     - the client's every event ends up acknowledged (no EGAP loop), and
       every replica holds each of its events exactly once, up to the
       tail's last seq, with hash chains that verify. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static db_cluster_t s_c;
static db_client_t *s_cl;
static util_id_t s_job;
static uint64_t s_appended;
static char s_gate[PATH_MAX];

static void
s_append(int n)
{
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &s_job);
        DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) s_appended);
        if (db_client_append(s_cl, &e))
            bail("append: %s", lux_errmsg());
        s_appended++;
    }
    db_client_flush(s_cl);
}

/* The last seq in a replica's file (0 when it cannot be opened). */
static uint64_t
s_last(uint32_t index)
{
    char path[PATH_MAX];
    db_cluster_replica_db(&s_c, 0, index, path, sizeof path);
    db_store_opts_t o = {.path = path, .readonly = true};
    db_store_t *st = db_store_open(&o);
    uint64_t last = st ? db_store_last_seq(st) : 0;
    db_store_close(&st);
    return last;
}

/* Our events in a replica's file: how many rows, how many distinct cseqs,
   the newest cseq; and whether its chain verifies. */
static void
s_ours(uint32_t index, int64_t *rows, int64_t *distinct, int64_t *maxc, bool *verified)
{
    char path[PATH_MAX], sql[512];
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    char hex[UTIL_ID_HEX];
    *rows = *distinct = *maxc = -1;
    db_cluster_replica_db(&s_c, 0, index, path, sizeof path);
    db_store_opts_t o = {.path = path, .readonly = true};
    db_store_t *st = db_store_open(&o);
    uint64_t bad = 0;
    *verified = st && db_store_verify(st, &bad) == 0;
    if (!*verified)
        diag("replica %u: %s", index, lux_errmsg());
    db_store_close(&st);
    snprintf(sql, sizeof sql, "SELECT count(*), count(DISTINCT cseq), max(cseq) FROM event "
             "WHERE hex(client) = upper('%s')", util_id_hex(db_client_id(s_cl), hex));
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
        *rows = sqlite3_column_int64(q, 0);
        *distinct = sqlite3_column_int64(q, 1);
        *maxc = sqlite3_column_int64(q, 2);
    } else {
        diag("replica %u: %s", index, db ? sqlite3_errmsg(db) : "cannot open");
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static void
s_open_gate(void)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/go", s_gate);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

int
main(void)
{
    char path[PATH_MAX + 8];
    util_id_random(&s_job);
    snprintf(s_gate, sizeof s_gate, "%s/gate", tap_tmpdir());
    if (util_mkdirs(s_gate, 0700))
        bail("%s", lux_errmsg());
    setenv("LUX_TEST_JOIN_GATE", s_gate, 1);
    fx_start(&s_c, 1, 2, "--log-only");
    tap_atexit(s_open_gate); /* never leave the master waiting */
    db_client_opts_t co = {.cluster = &s_c, .timeout_ms = 60000};
    if (!(s_cl = db_client_new(&co)))
        bail("client: %s", lux_errmsg());
    s_append(100);
    is_int(db_client_sync(s_cl, 30000), 0, "100 events appended to the whole chain");

    /* kill the tail: the head is then alone, and the killed replica,
       restarted, catches up and asks to join */
    uint32_t joiner, lone;
    pid_t pid = fx_pid_at(&s_c, 0, 0, &lone), tpid = fx_pid_at(&s_c, 0, -1, &joiner);
    if (pid <= 0 || tpid <= 0 || lone == joiner)
        bail("no chain of two");
    snprintf(path, sizeof path, "%s/armed", s_gate);
    FILE *f = fopen(path, "w");
    if (!f)
        bail("%s: %s", path, strerror(errno));
    fclose(f);
    kill(tpid, SIGKILL);
    diag("replica %u (pid %d) killed; replica %u (pid %d) is left alone", joiner, (int) tpid,
         lone, (int) pid);

    /* the master is about to admit the joiner */
    snprintf(path, sizeof path, "%s/held", s_gate);
    int64_t t0 = util_mono_ms();
    while (!util_exists(path) && util_mono_ms() - t0 < 60000)
        db_client_poll(s_cl, 20);
    ok(util_exists(path), "the master is about to admit replica %u", joiner);
    uint64_t acked0 = db_client_acked_cseq(s_cl, 0);

    /* the lone tail commits more; the test waits until they are in its
       file, and for any acknowledgement on its way (the tail sends them
       as it commits) */
    uint64_t before = s_last(lone);
    s_append(200);
    t0 = util_mono_ms();
    while (s_last(lone) < before + 200 && util_mono_ms() - t0 < 30000)
        db_client_poll(s_cl, 10);
    ok(s_last(lone) >= before + 200, "the lone tail committed 200 more events (seq %llu)",
       (unsigned long long) s_last(lone));
    for (int i = 0; i < 20; i++)
        db_client_poll(s_cl, 10);
    uint64_t acked1 = db_client_acked_cseq(s_cl, 0);
    is_int((int64_t) acked1, (int64_t) acked0,
           "nothing appended while the joiner is being admitted was acknowledged (acked "
           "cseq %llu, before %llu, appended %llu)", (unsigned long long) acked1,
           (unsigned long long) acked0, (unsigned long long) s_appended);

    /* the tail dies; the master admits the joiner, then removes the tail */
    kill(pid, SIGKILL);
    s_open_gate();
    int rc = db_client_sync(s_cl, 60000);
    is_int(rc, 0, "every event is acknowledged after the tail died (no EGAP loop): %llu of %llu",
           (unsigned long long) db_client_acked_cseq(s_cl, 0), (unsigned long long) s_appended);
    ok(fx_wait_chain(&s_c, 0, 2, 90000), "the killed tail rejoined");
    s_append(50);
    is_int(db_client_sync(s_cl, 30000), 0, "the whole chain acknowledges appends again");

    /* every replica: each of our events once, chains verify */
    for (uint32_t r = 0; r < 2; r++) {
        int64_t rows, distinct, maxc;
        bool verified;
        t0 = util_mono_ms();
        do {
            s_ours(r, &rows, &distinct, &maxc, &verified);
        } while (rows != (int64_t) s_appended && util_mono_ms() - t0 < 20000 && !usleep(50000));
        ok(verified, "replica %u: its hash chain verifies", r);
        ok(rows == (int64_t) s_appended && distinct == rows && maxc == rows,
           "replica %u holds each of the %llu events exactly once (rows %lld, distinct %lld, "
           "newest cseq %lld)", r, (unsigned long long) s_appended, (long long) rows,
           (long long) distinct, (long long) maxc);
    }
    db_client_destroy(&s_cl);
    snprintf(path, sizeof path, "%s/held", s_gate);
    return done_testing();
}
