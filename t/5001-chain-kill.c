/* 5001-chain-kill: kill -9 the head, a middle and the tail of a 3-replica
   chain while a client streams appends and a subscriber follows, then check
   what DESIGN section 5 promises:
     - every acknowledged event is on the tail, exactly once;
     - every replica's log is a prefix of its predecessor's;
     - the subscriber saw every seq exactly once, in order, each record
       chaining onto the one before;
     - every replica's hash chain verifies. */
#include "tap.h"
#include "lib/chainlog.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "db/db_sub.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_cluster_t s_c;
static db_client_t *s_cl;
static db_sub_t *s_sub;
static util_id_t s_job;
static uint64_t s_appended;
static fx_chain_t s_ck; /* what the subscriber saw: gaps, repeats, broken links */

static void
s_append_some(int n)
{
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &s_job);
        DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) s_appended);
        db_event_set_info(&e, "a streamed event");
        if (db_client_append(s_cl, &e))
            bail("append: %s", lux_errmsg());
        s_appended++;
    }
    db_client_flush(s_cl);
    db_client_poll(s_cl, 0);
}

static void
s_follow(int timeout_ms)
{
    fx_chain_follow(s_sub, &s_ck, 0, timeout_ms, 60000, NULL, NULL);
}

/* Keep streaming and following for ms. */
static void
s_run_for(int ms)
{
    int64_t end = util_mono_ms() + ms;
    while (util_mono_ms() < end) {
        s_append_some(20);
        s_follow(0);
        db_client_poll(s_cl, 2);
    }
}

static void
s_kill(int pos, const char *what)
{
    uint32_t index;
    pid_t pid = fx_pid_at(&s_c, 0, pos, &index);
    ok(pid > 0, "found the %s (replica %u, pid %d)", what, index, (int) pid);
    if (pid <= 0)
        return;
    uint64_t before = s_appended;
    kill(pid, SIGKILL);
    /* stream through the failure, the reconfiguration and the rejoin */
    s_run_for(300);
    int64_t t0 = util_mono_ms();
    bool whole = false;
    while (!whole && util_mono_ms() - t0 < 30000) {
        s_run_for(100);
        whole = fx_wait_chain(&s_c, 0, 3, 1);
    }
    ok(whole, "after killing the %s the chain is whole again in %lld ms (%llu appended meanwhile)",
       what, (long long) (util_mono_ms() - t0), (unsigned long long) (s_appended - before));
    pid_t again = fx_pid_at(&s_c, 0, -1, &index);
    ok(again > 0, "the restarted replica rejoined (the tail is now replica %u)", index);
}

int
main(void)
{
    util_id_random(&s_job);
    fx_start(&s_c, 1, 3, NULL);
    db_client_opts_t co = {.cluster = &s_c, .batch = 64, .max_inflight = 4096};
    s_cl = db_client_new(&co);
    if (!s_cl)
        bail("client: %s", lux_errmsg());
    s_sub = db_sub_new(&s_c, NULL, 0, 0);
    if (!s_sub)
        bail("subscriber: %s", lux_errmsg());
    /* the subscriber's chain starts at the shard's genesis */
    fx_chain_init(&s_ck, &s_c, 0);

    s_run_for(500);
    ok(s_appended > 0, "streaming (%llu events so far)", (unsigned long long) s_appended);
    s_kill(0, "head");
    s_kill(1, "middle");
    s_kill(-1, "tail");
    s_run_for(300);

    is_int(db_client_sync(s_cl, 30000), 0, "every append is acknowledged in the end");
    uint64_t acked_cseq = db_client_acked_cseq(s_cl, 0);
    uint64_t acked_seq = db_client_acked_seq(s_cl, 0);
    ok(acked_cseq == s_appended, "the client's newest acknowledged event is its last (%llu of %llu)",
       (unsigned long long) acked_cseq, (unsigned long long) s_appended);
    diag("resends after failures: %llu", (unsigned long long) db_client_resends(s_cl));
    int64_t t0 = util_mono_ms();
    while (s_ck.next <= acked_seq && util_mono_ms() - t0 < 20000)
        s_follow(100);
    ok(s_ck.next > acked_seq, "the subscriber reached seq %llu (it is at %llu)",
       (unsigned long long) acked_seq, (unsigned long long) s_ck.next - 1);
    ok(s_ck.bad == 0, "the subscriber saw every seq exactly once, in order, chained (%s)",
       s_ck.bad ? s_ck.why : "no gap, no repeat");
    uint64_t reads, live, gaps;
    db_sub_stats(s_sub, &reads, &live, &gaps);
    diag("subscriber: %llu from reads, %llu live, %llu gaps filled", (unsigned long long) reads,
         (unsigned long long) live, (unsigned long long) gaps);
    db_sub_destroy(&s_sub);
    db_client_destroy(&s_cl);
    fx_stop(&s_c);

    /* the files, with the cluster stopped */
    db_chain_t chain[1];
    db_chain_load_state(&s_c, chain);
    is_int(chain[0].n, 3, "the final chain has three members");
    uint64_t last[3];
    uint8_t hash[3][DB_HASH_LEN];
    char path[3][600];
    for (uint32_t k = 0; k < chain[0].n; k++) {
        bool verified;
        db_cluster_replica_db(&s_c, 0, chain[0].m[k].index, path[k], sizeof path[k]);
        last[k] = chainlog_file_last(path[k], 0, hash[k], NULL, &verified);
        ok(verified, "replica %u (position %u): %llu events, hash chain verified",
           chain[0].m[k].index, k, (unsigned long long) last[k]);
    }
    for (uint32_t k = 1; k < chain[0].n; k++) {
        uint8_t h[DB_HASH_LEN], at[DB_HASH_LEN];
        bool verified;
        chainlog_file_last(path[k - 1], last[k], h, at, &verified);
        ok(last[k - 1] >= last[k] && memcmp(at, hash[k], DB_HASH_LEN) == 0,
           "replica at position %u is a prefix of its predecessor (%llu <= %llu, same hash)", k,
           (unsigned long long) last[k], (unsigned long long) last[k - 1]);
    }
    /* every acknowledged event on the tail exactly once */
    sqlite3 *db;
    sqlite3_stmt *st;
    sqlite3_open_v2(path[chain[0].n - 1], &db, SQLITE_OPEN_READONLY, NULL);
    sqlite3_prepare_v2(db, "SELECT count(*), count(DISTINCT idx), min(idx), max(idx) FROM event "
                           "WHERE job = ?1 AND kind = ?2", -1, &st, NULL);
    sqlite3_bind_blob(st, 1, s_job.b, 16, NULL);
    sqlite3_bind_int(st, 2, DB_K_note);
    if (sqlite3_step(st) == SQLITE_ROW) {
        int64_t n = sqlite3_column_int64(st, 0), distinct = sqlite3_column_int64(st, 1);
        int64_t lo = sqlite3_column_int64(st, 2), hi = sqlite3_column_int64(st, 3);
        ok(n == (int64_t) s_appended && distinct == n && lo == 0 && hi == (int64_t) s_appended - 1,
           "the tail holds each of the %llu acknowledged events exactly once (%lld rows, %lld "
           "distinct, %lld..%lld)",
           (unsigned long long) s_appended, (long long) n, (long long) distinct, (long long) lo,
           (long long) hi);
    } else {
        ok(false, "query the tail: %s", sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return done_testing();
}
