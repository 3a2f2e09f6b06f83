/* 3172-db-head-take-fail: a head that cannot grow an APPEND's batch (out
   of memory) for one of its records takes those before it, refuses the
   rest with an error naming the shard, the replica and the seq, and takes
   them from the client's resend: every event once in every replica's
   file, nothing lost, nothing twice (issue 24 leftovers, stop 44).

   s_append (db_replica_append.c) did not look whether net_batch_add
   could grow the batch: a record it could not add was counted as taken
   (its seq, the chain hash, the client's table moved on) but never sent
   down the chain, and the records after it were dropped too (a buffer
   whose allocation failed takes nothing more).

   One shard, 3 replicas, the test hook LUX_TEST_TAKE_FAIL=0:40 (replica
   0, the head, cannot take seq 40, once). Events are appended 6 at a
   time, each group synced, so seq 40 is inside an APPEND. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_query.h"
#include "util/util_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_N 60

/* Whether replica index's log has a line holding both a and b, looking
   for tries x 100 ms (the log is written as it goes). */
static bool
s_logged(const db_cluster_t *c, uint32_t index, const char *a, const char *b, int tries)
{
    char path[700], line[1200];
    snprintf(path, sizeof path, "%s/log/replica-0-%u.log", c->dir, index);
    for (int i = 0; i < tries; i++) {
        FILE *f = fopen(path, "r");
        bool seen = false;
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, a) && strstr(line, b)) {
                seen = true;
                diag("%s", line);
                break;
            }
        if (f)
            fclose(f);
        if (seen)
            return true;
        if (i + 1 < tries)
            usleep(100 * 1000);
    }
    return false;
}

int
main(void)
{
    db_cluster_t c;
    setenv("LUX_TEST_TAKE_FAIL", "0:40", 1);
    fx_start(&c, 1, 3, NULL);
    unsetenv("LUX_TEST_TAKE_FAIL");
    ok(fx_wait_chain(&c, 0, 3, 30000), "a chain of 3 replicas");
    /* the chain forms before the supervisor's first events land: a start
       read at 0 was passed by them later (the file ended at 61) */
    uint64_t before = 0;
    for (int k = 0; k < 300 && (before = fx_last_seq(&c, 0, 0)) == 0; k++)
        usleep(100 * 1000);
    ok(before > 0 && before < 30, "the log starts below seq 30 (at %llu)",
       (unsigned long long) before);
    db_client_t *cl = fx_client(&c, 0, 0);
    util_id_t job;
    util_id_random(&job);
    int synced = 0, rc = 0;
    for (int i = 0; i < S_N && !rc; i += 6) {
        for (int k = i; k < i + 6 && !rc; k++) {
            db_event_t e = {.kind = DB_K_note};
            DB_SET_ID(&e, job, DB_F_JOB, &job);
            DB_SET_INT(&e, idx, DB_F_IDX, k);
            db_event_set_info(&e, "six at a time");
            rc = db_client_append(cl, &e);
        }
        rc = rc ? rc : db_client_sync(cl, 30000);
        if (rc)
            diag("append %d-%d: %s", i, i + 5, lux_errmsg());
        else
            synced += 6;
    }
    is_int(synced, S_N, "%d events appended 6 at a time, each group synced", S_N);
    ok(s_logged(&c, 0, "shard 0 replica 0 (the head)", "out of memory taking seq 40", 100),
       "the head said it could not take seq 40, naming its shard and replica");

    /* every replica has every event, once, on one chain: each file ends
       where the head's does, S_N events after the start (or further, by
       a signed checkpoint the supervisor wrote meanwhile: counted apart) */
    db_query_t *q = fx_query_open(c.dir);
    int64_t ckpts = fx_count(q, "SELECT count(*) FROM events WHERE kind = 'checkpoint' AND "
                                "seq > %llu", (unsigned long long) before);
    db_query_close(&q);
    uint64_t last[3], want = before + S_N + (uint64_t) (ckpts > 0 ? ckpts : 0);
    for (uint32_t i = 0; i < 3; i++) {
        for (int k = 0; k < 100 && (last[i] = fx_last_seq(&c, 0, i)) < want; k++)
            usleep(100 * 1000);
        is_int((int64_t) last[i], (int64_t) want,
               "replica %u's file ends at seq %llu, %d after the start (and %lld checkpoints)",
               i, (unsigned long long) want, S_N, (long long) ckpts);
    }
    q = fx_query_open(c.dir);
    is_int(fx_count(q, "SELECT count(*) FROM events WHERE kind = 'note' AND info = 'six at a time'"),
           S_N, "the log has %d notes", S_N);
    is_int(fx_count(q, "SELECT count(DISTINCT idx) FROM events WHERE kind = 'note' AND "
                    "info = 'six at a time'"),
           S_N, "each once");
    db_query_close(&q);
    bool bad = false;
    for (uint32_t i = 0; i < 3; i++) {
        char failed[40];
        snprintf(failed, sizeof failed, "replica %u failed", i);
        bad = s_logged(&c, i, failed, "", 1) || s_logged(&c, i, "does not chain", "", 1) || bad;
    }
    ok(!bad, "no replica failed, none saw a record off the chain");
    db_client_destroy(&cl);
    fx_stop(&c);
    return done_testing();
}
